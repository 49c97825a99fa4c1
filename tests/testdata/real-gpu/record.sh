#!/bin/sh
# Records what tests/testdata/real-gpu/ keeps, on a machine with an NVIDIA GPU, and runs
# the real-GPU tests there. Run from the repository root:
#
#   sh tests/testdata/real-gpu/record.sh OUTDIR [NODE-NAME]
#
# NODE-NAME defaults to gpu-<model>-1 (gpu-h100-1 on an H100), from nvidia-smi.
# gpuctl and its test needs must be importable (pip install -e ".[test]", or wheels on
# PYTHONPATH). Writes into OUTDIR: NODE-NAME.probe.json (the fixture), the table, the
# run with this machine's kernel log, nvidia-smi's own view, the versions, and the
# pytest log of tests/test_node_probe_gpu.py and tests/test_node_probe.py. With
# OLD_NVML_SITE set (a folder holding an older nvidia-ml-py), the probe runs once more
# with that binding, as gpuctl's oldest supported one; with IMAGE_NVML_SITE set (gpuctl's
# needs without nvidia-ml-py), once more with the binding the machine itself has.
set -u
out=${1:?OUTDIR}
node=${2:-gpu-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed "s/^NVIDIA //" | cut -d" " -f1 | tr A-Z a-z)-1}
mkdir -p "$out"
: >"$out/empty.log"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -r)"
  python3 -c 'import sys, pynvml, importlib.metadata as m; print("python:", sys.version.split()[0]); print("nvidia-ml-py:", m.version("nvidia-ml-py"))'
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,ecc.mode.current,mig.mode.current,persistence_mode --format=csv
} >"$out/versions.txt" 2>&1
nvidia-smi >"$out/nvidia-smi.txt" 2>&1

python3 -m gpuctl node probe --node "$node" --kernel-log "$out/empty.log" -o json >"$out/$node.probe.json" 2>>"$out/versions.txt"
echo "node probe -o json: exit $?" >>"$out/versions.txt"
NO_COLOR=1 COLUMNS=160 python3 -m gpuctl node probe --node "$node" --kernel-log "$out/empty.log" >"$out/probe-table.txt" 2>&1
echo "node probe (table): exit $?" >>"$out/versions.txt"
python3 -m gpuctl node probe --node "$node" -o json >"$out/probe-kernel-log.json" 2>&1
echo "node probe, this machine's kernel log: exit $?" >>"$out/versions.txt"
if [ -n "${OLD_NVML_SITE:-}" ]; then
  PYTHONPATH="$OLD_NVML_SITE:${PYTHONPATH:-}" python3 -c 'import importlib.metadata as m; print("old nvidia-ml-py:", m.version("nvidia-ml-py"))' >>"$out/versions.txt" 2>&1
  PYTHONPATH="$OLD_NVML_SITE:${PYTHONPATH:-}" python3 -m gpuctl node probe --node "$node" --kernel-log "$out/empty.log" -o json >"$out/probe-old-nvml.json" 2>&1
  echo "node probe, old nvidia-ml-py: exit $?" >>"$out/versions.txt"
fi
if [ -n "${IMAGE_NVML_SITE:-}" ]; then
  PYTHONPATH="$IMAGE_NVML_SITE:." python3 -c 'import importlib.metadata as m; print("machine nvidia-ml-py:", m.version("nvidia-ml-py"))' >>"$out/versions.txt" 2>&1
  PYTHONPATH="$IMAGE_NVML_SITE:." python3 -m gpuctl node probe --node "$node" --kernel-log "$out/empty.log" -o json >"$out/probe-machine-nvml.json" 2>&1
  echo "node probe, the machine's nvidia-ml-py: exit $?" >>"$out/versions.txt"
fi
python3 -m pytest -o addopts="" -p no:cacheprovider -q -rs tests/test_node_probe_gpu.py tests/test_node_probe.py >"$out/pytest.log" 2>&1
echo "pytest: exit $?" >>"$out/versions.txt"
rm -f "$out/empty.log"
cat "$out/versions.txt"
tail -5 "$out/pytest.log"
