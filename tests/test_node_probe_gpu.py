"""``gpuctl node probe`` with the real nvidia-ml-py on a real GPU, and what such runs
recorded.

Two parts:

- **On a GPU machine** (skipped with the reason where ``nvmlInit`` fails): gpuctl runs
  as a user runs it, in its own process with the real ``pynvml``. Each value it prints
  is compared with what NVML gives when asked directly here, and with ``nvidia-smi``'s
  answer where that binary is on the PATH. No test double is involved.
- **Everywhere**: the documents such runs printed are kept in
  ``tests/testdata/real-gpu/`` (its README says where and how each was recorded).
  They must keep docs/probe.md's shape, and ``label-nodes`` and ``diagnose node``
  must read them right: the SKU is detected from the real NVML product name and
  memory size, and a healthy real GPU gives no finding.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest

from conftest import ROOT
from test_node_probe import _doc_example, _same_shape, nvml_error

sys.path.insert(0, str(ROOT / "tests" / "realworld"))
from kit import gpu_node, write_snapshot  # noqa: E402
from gpuctl.cli.node_probe import SCHEMA, problems  # noqa: E402
from gpuctl.knowledge.catalog import match_product, sku_by_id  # noqa: E402

RECORDED = ROOT / "tests" / "testdata" / "real-gpu"

# Every call gpuctl.collect.nvml makes, as it names them in `unsupported` and `errors`.
CALLS = {
    "nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetNVMLVersion", "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetEccMode",
    "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRetiredPages", "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows", "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)",
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetTemperature",
}


_WHY = nvml_error()
NO_GPU = f"no NVIDIA GPU here ({_WHY})" if _WHY else ""
needs_gpu = pytest.mark.skipif(bool(NO_GPU), reason=NO_GPU or "-")


def _gpuctl(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               NO_COLOR="1", COLUMNS="200")
    env.pop("GPUCTL_NOW", None)
    return subprocess.run([sys.executable, "-m", "gpuctl", *argv], capture_output=True, text=True, env=env,
                          input=stdin, timeout=120, cwd=ROOT)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _direct() -> dict:
    """What NVML says when asked directly, without gpuctl."""
    pynvml.nvmlInit()
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpus.append({"name": _text(pynvml.nvmlDeviceGetName(h)), "uuid": _text(pynvml.nvmlDeviceGetUUID(h)),
                         "pciBusId": _text(pynvml.nvmlDeviceGetPciInfo(h).busId),
                         "memoryTotalMiB": pynvml.nvmlDeviceGetMemoryInfo(h).total // (1024 * 1024)})
        return {"driverVersion": _text(pynvml.nvmlSystemGetDriverVersion()), "gpus": gpus}
    finally:
        pynvml.nvmlShutdown()


def _nvidia_smi() -> list[dict] | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    fields = ["index", "uuid", "name", "pci.bus_id", "driver_version", "memory.total", "ecc.mode.current",
              "mig.mode.current", "persistence_mode"]
    out = subprocess.run([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [dict(zip(fields, (c.strip() for c in line.split(",")))) for line in out.splitlines() if line.strip()]


def _check_document(doc: dict) -> None:
    """What any real probe document must be, whatever the GPU."""
    assert doc["schema"] == SCHEMA
    _same_shape(_doc_example(), doc)
    assert doc["driverVersion"] and doc["cudaDriverVersion"] and doc["gpus"]
    assert set(doc["unsupported"]) <= CALLS, set(doc["unsupported"]) - CALLS
    for e in doc["errors"]:   # NVML may refuse a call on a sick GPU; gpuctl's own use of the binding must not break
        assert e["call"] in CALLS and e["error"].startswith("NVML_ERROR_"), e
    for i, g in enumerate(doc["gpus"]):
        assert g["index"] == i and g["uuid"].startswith(("GPU-", "MIG-")) and g["name"], g
        assert g["memoryTotalMiB"] > 1024, g
        assert g["temperatureC"] is None or 0 < g["temperatureC"] < 120, g


# ------------------------------------------------------------------ on a GPU machine

@needs_gpu
def test_node_probe_agrees_with_nvml_and_nvidia_smi(tmp_path):
    empty = tmp_path / "kern.log"
    empty.write_text("")
    r = _gpuctl("node", "probe", "--node", "gpu-real-1", "--kernel-log", str(empty), "-o", "json")
    assert r.returncode in (0, 1) and r.stderr == "", (r.returncode, r.stderr)
    doc = json.loads(r.stdout)
    _check_document(doc)
    assert doc["node"] == "gpu-real-1" and doc["xids"] == []
    assert r.returncode == (1 if problems(doc) else 0), problems(doc)

    direct = _direct()
    assert doc["driverVersion"] == direct["driverVersion"]
    assert [{k: g[k] for k in ("name", "uuid", "pciBusId", "memoryTotalMiB")} for g in doc["gpus"]] == direct["gpus"]

    smi = _nvidia_smi()
    if smi is None:
        return
    assert [g["uuid"] for g in doc["gpus"]] == [s["uuid"] for s in smi]
    assert [g["name"] for g in doc["gpus"]] == [s["name"] for s in smi]
    assert {s["driver_version"] for s in smi} == {doc["driverVersion"]}
    for g, s in zip(doc["gpus"], smi):
        assert g["pciBusId"].lower() == s["pci.bus_id"].lower()
        assert abs(g["memoryTotalMiB"] - int(s["memory.total"])) <= 1      # MiB, as nvidia-smi rounds them
        if g["ecc"] and g["ecc"]["mode"] and s["ecc.mode.current"] not in ("[N/A]", "N/A"):
            assert g["ecc"]["mode"]["current"] == s["ecc.mode.current"].lower()
        if g["migMode"] and s["mig.mode.current"] not in ("[N/A]", "N/A"):
            assert g["migMode"]["current"] == s["mig.mode.current"].lower()
        if g["persistenceMode"] is not None:
            assert g["persistenceMode"] == (s["persistence_mode"] == "Enabled")


@needs_gpu
def test_node_probe_table_and_yaml_on_a_real_gpu(tmp_path):
    import yaml

    empty = tmp_path / "kern.log"
    empty.write_text("")
    as_json = _gpuctl("node", "probe", "--kernel-log", str(empty), "-o", "json")
    doc = json.loads(as_json.stdout)
    table = _gpuctl("node", "probe", "--kernel-log", str(empty), "--no-color")
    assert table.returncode == as_json.returncode and table.stderr == "", table.stderr
    for g in doc["gpus"]:
        assert g["name"] in table.stdout
    assert f"driver {doc['driverVersion']}" in table.stdout and "\x1b" not in table.stdout
    as_yaml = yaml.safe_load(_gpuctl("node", "probe", "--kernel-log", "-", "-o", "yaml", stdin="").stdout)
    assert [g["uuid"] for g in as_yaml["gpus"]] == [g["uuid"] for g in doc["gpus"]]


@needs_gpu
def test_node_probe_reads_this_machines_kernel_log():
    """No --kernel-log: journalctl -k or dmesg, whichever this machine lets it read."""
    r = _gpuctl("node", "probe", "-o", "json")
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    _check_document(doc)
    assert all(x["xid"] > 0 for x in doc["xids"])


@needs_gpu
def test_the_sku_of_this_machines_gpus_is_known():
    for g in _direct()["gpus"]:
        sku = match_product(g["name"], g["memoryTotalMiB"])
        assert sku is not None, f"{g['name']} ({g['memoryTotalMiB']} MiB) is in no knowledge/skus.yaml entry"


# ------------------------------------------------------------------ what real runs recorded

def _recorded() -> list[Path]:
    return sorted(RECORDED.glob("*.probe.json"))


def test_recorded_real_probes_are_present():
    assert _recorded(), f"no recorded probe in {RECORDED}"
    readme = (RECORDED / "README.md").read_text()
    for p in _recorded():
        assert p.name in readme, f"{p.name}: README.md does not say where it was recorded"


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.name)
def test_recorded_real_probe_keeps_the_documented_shape(path):
    doc = json.loads(path.read_text())
    _check_document(doc)
    assert not problems(doc), problems(doc)      # recorded on healthy machines


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.name)
def test_label_nodes_detects_the_sku_from_a_real_probe(cli, tmp_path, path):
    doc = json.loads(path.read_text())
    node = doc["node"]
    snap = write_snapshot(tmp_path, gpu_node(node, gpus=len(doc["gpus"]), gfd=False))
    r = cli("label-nodes", node, "--snapshot", str(snap), "--probe", str(path), "-o", "json")
    assert r.code == 0, r.err
    (plan,) = r.json()["nodes"]
    assert plan["source"] == "probe" and plan["status"] == "ok", plan
    sku = sku_by_id(plan["sku"])
    assert sku is not None and sku.memory_gib * 1024 >= doc["gpus"][0]["memoryTotalMiB"] * 0.9, plan
    assert plan["set"]["gpu-type"] == sku.type and plan["set"]["gpu-memory"] == f"{sku.memory_gib}Gi", plan


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.name)
def test_diagnose_node_reads_a_healthy_real_probe_and_finds_nothing_in_it(cli, tmp_path, monkeypatch, path):
    """The node as GPU feature discovery would label it for this GPU and driver: the
    probe is read (the Xid, ECC and driver checks name it) and adds no finding."""
    doc = json.loads(path.read_text())
    node = doc["node"]
    snap = write_snapshot(tmp_path, gpu_node(node, gpus=len(doc["gpus"]), product=doc["gpus"][0]["name"].replace(" ", "-"),
                                             driver=doc["driverVersion"], cuda=doc["cudaDriverVersion"]))
    monkeypatch.setenv("GPUCTL_NOW", doc["capturedAt"])
    with_probe = cli("diagnose", "node", node, "--snapshot", str(snap), "--probe", str(path), "-o", "json")
    without = cli("diagnose", "node", node, "--snapshot", str(snap), "-o", "json")
    checks = {c["name"]: c for c in with_probe.json()["checks"]}
    assert "probe" in checks["xid"]["detail"] and checks["ecc"]["status"] == "passed", checks
    assert f"driver {doc['driverVersion']} / CUDA {doc['cudaDriverVersion']} (probe)" in checks["driver-drift"]["detail"]
    assert checks["gpu-count"]["status"] == "passed", checks["gpu-count"]
    assert with_probe.code == without.code
    assert ([f["code"] for f in with_probe.json()["findings"]] == [f["code"] for f in without.json()["findings"]])


def test_the_table_of_a_recorded_probe_is_what_the_gpu_machine_printed():
    """gpuctl.render.probe on the recorded document, at the recorded width, gives the
    exact text `gpuctl node probe` printed there (probe-table.txt, NO_COLOR, COLUMNS=160)."""
    from io import StringIO

    from rich.console import Console

    from gpuctl.render.probe import render_probe
    from gpuctl.render.stream import TrimmedWriter

    doc = json.loads((RECORDED / "gpu-h200-1.probe.json").read_text())
    out = StringIO()
    console = Console(file=TrimmedWriter(out), width=160, no_color=True, highlight=False, soft_wrap=False)
    render_probe(doc, console, problems(doc))
    assert out.getvalue() == (RECORDED / "probe-table.txt").read_text()
