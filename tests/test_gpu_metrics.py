"""parse_dcgm: DCGM exporter text (every spelling seen in the wild) -> per-GPU records.

The fixtures follow dcgm-exporter's own render template
(internal/pkg/rendermetrics/render_metrics.go: gpu, UUID|uuid, pci_bus_id, device,
modelName, [GPU_I_PROFILE, GPU_I_ID], Hostname, then labels and attributes such as
DCGM_FI_DRIVER_VERSION, err_code/err_msg and the pod attribution) and the metric
names of etc/default-counters.csv and etc/1.x-compatibility-metrics.csv
(dcgm-exporter's default counters, NVIDIA/dcgm-exporter etc/default-counters.csv).
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuctl.model.gpu_metrics import MAX_LINE_CHARS, GpuMetrics, MetricsError, NodeGpuMetrics, parse_dcgm

H100_0 = 'gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:18:00.0",device="nvidia0",' \
         'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-h100-0"'
H100_1 = 'gpu="1",UUID="GPU-8b1d0c4e-1f6a-4a2b-9d8e-0c7f5e3a2b11",pci_bus_id="00000000:2A:00.0",device="nvidia1",' \
         'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-h100-0"'
DRIVER = 'DCGM_FI_DRIVER_VERSION="550.54.15"'
POD1 = 'container="trainer",namespace="ml",pod="llama-0"'
NOPOD = 'container="",namespace="",pod=""'

# dcgm-exporter 4.x (tags 4.5.3-4.8.2: `Hostname`), operator's dcp-metrics-included.csv plus
# the ECC and Xid-count lines a customised CSV turns on.
EXPORTER_4X = f"""\
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{{{H100_0},{DRIVER},{POD1}}} 1980
DCGM_FI_DEV_SM_CLOCK{{{H100_1},{DRIVER},{NOPOD}}} 345
# HELP DCGM_FI_DEV_MEMORY_TEMP Memory temperature (in C).
# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
DCGM_FI_DEV_MEMORY_TEMP{{{H100_0},{DRIVER},{POD1}}} 9223372036854775794
DCGM_FI_DEV_MEMORY_TEMP{{{H100_1},{DRIVER},{NOPOD}}} 41
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{{{H100_0},{DRIVER},{POD1}}} 67
DCGM_FI_DEV_GPU_TEMP{{{H100_1},{DRIVER},{NOPOD}}} 33
# HELP DCGM_FI_DEV_PCIE_REPLAY_COUNTER Total number of PCIe retries.
# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter
DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{H100_0},{DRIVER},{POD1}}} 0
DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{H100_1},{DRIVER},{NOPOD}}} 12
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{{{H100_0},{DRIVER},err_code="0",err_msg="No Error",{POD1}}} 0
DCGM_FI_DEV_XID_ERRORS{{{H100_1},{DRIVER},err_code="79",err_msg="GPU has fallen off the bus",{NOPOD}}} 79
# HELP DCGM_FI_DEV_ECC_SBE_VOL_TOTAL Total number of single-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{H100_0},{DRIVER},{POD1}}} 3
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{H100_1},{DRIVER},{NOPOD}}} 0
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{H100_0},{DRIVER},{POD1}}} 0
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{H100_1},{DRIVER},{NOPOD}}} 2
# HELP DCGM_FI_DEV_ECC_DBE_AGG_TOTAL Total number of double-bit persistent ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_AGG_TOTAL counter
DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{{{H100_0},{DRIVER},{POD1}}} 1
DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{{{H100_1},{DRIVER},{NOPOD}}} 5
# HELP DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS Number of remapped rows for uncorrectable errors
# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{H100_0},{DRIVER},{POD1}}} 0
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{H100_1},{DRIVER},{NOPOD}}} 1
# HELP DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS Number of remapped rows for correctable errors
# TYPE DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{{{H100_0},{DRIVER},{POD1}}} 4
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{{{H100_1},{DRIVER},{NOPOD}}} 0
# HELP DCGM_FI_DEV_ROW_REMAP_FAILURE Whether remapping of rows has failed
# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge
DCGM_FI_DEV_ROW_REMAP_FAILURE{{{H100_0},{DRIVER},{POD1}}} 0
DCGM_FI_DEV_ROW_REMAP_FAILURE{{{H100_1},{DRIVER},{NOPOD}}} 1
# HELP DCGM_EXP_XID_ERRORS_COUNT Count of XID Errors within user-specified time window (see xid-count-window-size flag).
# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge
DCGM_EXP_XID_ERRORS_COUNT{{{H100_1},{DRIVER},{NOPOD},window_size_in_ms="300000",xid="79"}} 2
DCGM_EXP_XID_ERRORS_COUNT{{{H100_1},{DRIVER},{NOPOD},window_size_in_ms="300000",xid="48"}} 1
# HELP DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL Total number of NVLink bandwidth counters for all lanes.
# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{{{H100_0},{DRIVER},{POD1}}} 0
"""


def test_exporter_4x_output_per_gpu_records():
    m = parse_dcgm(EXPORTER_4X, "gpu-h100-0")
    assert isinstance(m, NodeGpuMetrics)
    assert m.hostname_label == "Hostname"
    assert m.driver_version == "550.54.15"
    assert m.other_nodes == set()
    assert [g.gpu for g in m.gpus] == ["0", "1"]
    g0, g1 = m.gpus
    assert isinstance(g0, GpuMetrics)
    assert g0.uuid == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
    assert g0.pci_bus_id == "00000000:18:00.0"
    assert g0.model == "NVIDIA H100 80GB HBM3"
    assert g0.hostname == "gpu-h100-0"
    assert g0.device == "nvidia0"
    assert g0.xid_last == 0 and g0.xid_counts == {}
    assert g0.temperature_c == 67.0
    assert g0.memory_temperature_c is None          # DCGM blank (NOT_SUPPORTED), not 9.2e18 degrees
    assert g0.ecc_sbe_volatile == 3.0 and g0.ecc_dbe_volatile == 0.0
    assert g0.ecc_sbe_aggregate is None and g0.ecc_dbe_aggregate == 1.0
    assert g0.remapped_rows_correctable == 4.0 and g0.row_remap_failure == 0.0
    assert g0.pcie_replay == 0.0                    # `# TYPE ... counter` without _total is still found
    assert g0.retired_sbe is None and g0.retired_dbe is None and g0.retired_pending is None
    assert g1.xid_last == 79
    assert g1.xid_counts == {79: 2.0, 48: 1.0}
    assert g1.ecc_dbe_volatile == 2.0 and g1.ecc_dbe_aggregate == 5.0
    assert g1.remapped_rows_uncorrectable == 1.0 and g1.row_remap_failure == 1.0
    assert g1.memory_temperature_c == 41.0 and g1.pcie_replay == 12.0
    assert m.gpu("GPU-8b1d0c4e-1f6a-4a2b-9d8e-0c7f5e3a2b11") is g1
    assert m.gpu("00000000:2A:00.0") is g1


def test_head_lowercase_hostname_label():
    text = EXPORTER_4X.replace('Hostname="', 'hostname="')
    m = parse_dcgm(text, "gpu-h100-0")
    assert m.hostname_label == "hostname"
    assert [g.gpu for g in m.gpus] == ["0", "1"]
    assert m.gpus[1].xid_last == 79 and m.gpus[0].hostname == "gpu-h100-0"


def test_node_filter_matches_short_hostname_of_fqdn_node():
    m = parse_dcgm(EXPORTER_4X, "gpu-h100-0.ec2.internal")
    assert len(m.gpus) == 2 and not m.other_nodes
    m = parse_dcgm(EXPORTER_4X, "gpu-h100-1")
    assert m.gpus == [] and m.other_nodes == {"gpu-h100-0"}


def test_readme_quickstart_layout_without_hostname():
    # NVIDIA/dcgm-exporter README: `curl localhost:9400/metrics`, spaces after the commas
    text = (
        "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
        "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
        "# HELP DCGM_FI_DEV_MEMORY_TEMP Memory temperature (in C).\n"
        "# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge\n"
        'DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139\n'
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794\n'
    )
    m = parse_dcgm(text, "any-node")   # no hostname label: kept whatever the node
    assert len(m.gpus) == 1
    g = m.gpus[0]
    assert g.uuid == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52" and g.memory_temperature_c is None
    assert m.hostname_label is None and m.driver_version is None


def test_1x_compatibility_names_and_old_namespace_labels():
    # --use-old-namespace: lowercase `uuid`, pod_name/pod_namespace/container_name
    labels = ('gpu="3",uuid="GPU-0f0e0d0c-0b0a-0908-0706-050403020100",pci_bus_id="00000000:3B:00.0",'
              'device="nvidia3",modelName="Tesla V100-SXM2-32GB",Hostname="v100-node",'
              'container_name="",pod_name="",pod_namespace=""')
    text = "\n".join([
        "# HELP dcgm_xid_errors Value of the last XID error encountered.",
        "# TYPE dcgm_xid_errors gauge",
        f"dcgm_xid_errors{{{labels}}} 48",
        "# TYPE dcgm_gpu_temp gauge",
        f"dcgm_gpu_temp{{{labels}}} 71",
        "# TYPE dcgm_memory_temp gauge",
        f"dcgm_memory_temp{{{labels}}} 65",
        "# TYPE dcgm_pcie_replay_counter counter",
        f"dcgm_pcie_replay_counter{{{labels}}} 7",
        "# TYPE dcgm_ecc_dbe_volatile_total counter",
        f"dcgm_ecc_dbe_volatile_total{{{labels}}} 1",
        "# TYPE dcgm_ecc_sbe_aggregate_total counter",
        f"dcgm_ecc_sbe_aggregate_total{{{labels}}} 9",
        "# TYPE dcgm_retired_pages_dbe counter",
        f"dcgm_retired_pages_dbe{{{labels}}} 2",
        "# TYPE dcgm_retired_pages_pending counter",
        f"dcgm_retired_pages_pending{{{labels}}} 1",
        "# TYPE dcgm_retired_pages_sbe counter",
        f"dcgm_retired_pages_sbe{{{labels}}} 0",
        "",
    ])
    m = parse_dcgm(text, "v100-node")
    (g,) = m.gpus
    assert g.gpu == "3" and g.uuid == "GPU-0f0e0d0c-0b0a-0908-0706-050403020100"
    assert g.model == "Tesla V100-SXM2-32GB"
    assert (g.xid_last, g.temperature_c, g.memory_temperature_c, g.pcie_replay) == (48, 71.0, 65.0, 7.0)
    assert (g.ecc_dbe_volatile, g.ecc_sbe_aggregate) == (1.0, 9.0)
    assert (g.retired_sbe, g.retired_dbe, g.retired_pending) == (0.0, 2.0, 1.0)


def test_mig_series_fold_into_parent_gpu():
    # A800 in MIG mode: every instance repeats the parent's device-level fields
    parent = ('gpu="0",UUID="GPU-1f027ee8-6e1e-2b8c-0108-3d370e5f0418",pci_bus_id="00000000:0F:00.0",'
              'device="nvidia0",modelName="NVIDIA A800-SXM4-80GB"')
    tail = 'Hostname="hpc-64-35",DCGM_FI_DRIVER_VERSION="535.129.03",DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter"'
    lines = ["# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
             "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for gid, xid in (("3", 0), ("5", 31), ("9", 0)):
        lines.append(f'DCGM_FI_DEV_XID_ERRORS{{{parent},GPU_I_PROFILE="2g.20gb",GPU_I_ID="{gid}",{tail}}} {xid}')
    lines.append("# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter")
    for gid in ("3", "5", "9"):
        lines.append(f'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{parent},GPU_I_PROFILE="2g.20gb",GPU_I_ID="{gid}",{tail}}} 2')
    lines.append('DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-4e75c9ab-0ed7-8a57-75f5-23761b9f053f",device="nvidia1",'
                 f'modelName="NVIDIA A800-SXM4-80GB",{tail}}} 35')
    m = parse_dcgm("\n".join(lines) + "\n", "hpc-64-35")
    assert [g.gpu for g in m.gpus] == ["0", "1"]
    g0 = m.gpus[0]
    assert g0.mig_instances == ["2g.20gb/3", "2g.20gb/5", "2g.20gb/9"]
    assert g0.xid_last == 31
    assert g0.remapped_rows_uncorrectable == 2.0   # the same device count, not 3 x 2
    assert m.driver_version == "535.129.03"
    assert m.gpus[1].mig_instances == [] and m.gpus[1].temperature_c == 35.0


def _prom_line(name: str, node: str, key: str, gpu: str, value: str, instance: str) -> str:
    return (f'{name}{{{key}="{node}",UUID="GPU-{node}-{gpu}",container="",device="nvidia{gpu}",'
            f'endpoint="gpu-metrics",gpu="{gpu}",instance="{instance}:9400",job="nvidia-dcgm-exporter",'
            f'modelName="NVIDIA A100-SXM4-80GB",namespace="",pci_bus_id="00000000:0{gpu}:00.0",pod="",'
            f'service="nvidia-dcgm-exporter"}} {value}')


def test_multi_node_prometheus_result():
    # A Prometheus answer rendered back to lines: sorted labels, target labels added,
    # two nodes, one exporter at 4.8.x (`Hostname`) and one at HEAD (`hostname`).
    text = "\n".join([
        _prom_line("DCGM_FI_DEV_XID_ERRORS", "node-a", "Hostname", "0", "0", "10.0.1.4"),
        _prom_line("DCGM_FI_DEV_XID_ERRORS", "node-a", "Hostname", "1", "94", "10.0.1.4"),
        _prom_line("DCGM_FI_DEV_XID_ERRORS", "node-b", "hostname", "0", "79", "10.0.2.9"),
        _prom_line("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "node-b", "hostname", "0", "4", "10.0.2.9"),
        _prom_line("DCGM_FI_DEV_GPU_TEMP", "node-a", "Hostname", "0", "55", "10.0.1.4"),
    ]) + "\n"
    a = parse_dcgm(text, "node-a")
    assert [(g.hostname, g.gpu, g.xid_last) for g in a.gpus] == [("node-a", "0", 0), ("node-a", "1", 94)]
    assert a.gpus[0].temperature_c == 55.0
    assert a.other_nodes == {"node-b"} and a.hostname_label == "Hostname"
    b = parse_dcgm(text, "node-b")
    assert [(g.gpu, g.xid_last, g.ecc_dbe_volatile) for g in b.gpus] == [("0", 79, 4.0)]
    assert b.other_nodes == {"node-a"} and b.hostname_label == "hostname"
    both = parse_dcgm(text)
    assert [(g.hostname, g.gpu) for g in both.gpus] == [("node-a", "0"), ("node-a", "1"), ("node-b", "0")]
    assert both.other_nodes == set()


def test_values_that_are_not_counts_read_as_absent():
    lab = 'gpu="0",UUID="GPU-x"'
    text = "\n".join([
        f"DCGM_FI_DEV_GPU_TEMP{{{lab}}} NaN",
        f"DCGM_FI_DEV_MEMORY_TEMP{{{lab}}} +Inf",
        f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{lab}}} 9.223372036854776e+18",
        f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{lab}}} 140737488355330",     # DCGM_FP64_BLANK + 2
        f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{lab}}} 2147483634",        # DCGM_INT32_BLANK + 2
        f"DCGM_FI_DEV_RETIRED_PENDING{{{lab}}} 1e3",
        f'DCGM_EXP_XID_ERRORS_COUNT{{{lab},xid="not-a-number"}} 1',
    ])
    (g,) = parse_dcgm(text).gpus
    assert g.temperature_c is None and g.memory_temperature_c is None
    assert g.ecc_dbe_volatile is None and g.ecc_sbe_volatile is None and g.pcie_replay is None
    assert g.retired_pending == 1000.0 and g.xid_counts == {}


def test_series_without_gpu_identity_and_other_exporters_are_ignored():
    text = "\n".join([
        "# TYPE go_gc_duration_seconds summary",
        'go_gc_duration_seconds{quantile="0.5"} 3.1e-05',
        "go_gc_duration_seconds_sum 0.01",
        "go_gc_duration_seconds_count 12",
        'DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT{nvswitch="0",Hostname="n"} 40',
        'DCGM_FI_DEV_XID_ERRORS{Hostname="n"} 13',
        'node_cpu_seconds_total{cpu="0",mode="idle"} 1234.5',
    ]) + "\n"
    m = parse_dcgm(text, "n")
    assert m.gpus == []


def test_empty_and_comment_only_text():
    assert parse_dcgm("").gpus == []
    assert parse_dcgm("# just a comment\n\n   \n# HELP x whatever\n").gpus == []


@pytest.mark.parametrize("text, line_no", [
    ("<!DOCTYPE html>\n<html><body>Bad Gateway</body></html>\n", 1),
    ('{"status":"success","data":{"resultType":"vector","result":[]}}', 1),
    ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu="0",gpu="1"} 40\n', 2),
    ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40\n\nDCGM_FI_DEV_GPU_TEMP{gpu="0} 40\n', 3),
    ("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} forty\n", 1),
    ("# TYPE DCGM_FI_DEV_GPU_TEMP\n", 1),
    ("ok_metric 1\n" + "x" * (MAX_LINE_CHARS + 1) + " 1\n", 2),
])
def test_garbage_raises_metrics_error_naming_the_line(text, line_no):
    with pytest.raises(MetricsError) as exc:
        parse_dcgm(text, "n")
    assert exc.value.line_no == line_no
    assert str(exc.value).startswith(f"line {line_no}: ")


def test_non_text_input_is_a_metrics_error():
    with pytest.raises(MetricsError):
        parse_dcgm(b"DCGM_FI_DEV_GPU_TEMP 1\n")  # type: ignore[arg-type]


# ---------------------------------------------------------------- properties

_PROMISH = st.text(alphabet=st.sampled_from(list('DCGM_FI_DEV_XIDgpuUUIDHostname{}=",# \t\n\\01789.e+-:')), max_size=400)


def _returns_or_metrics_error(text: str, node):
    try:
        result = parse_dcgm(text, node)
    except MetricsError:
        return
    assert isinstance(result, NodeGpuMetrics)
    for g in result.gpus:
        assert isinstance(g.gpu, str)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=2000), node=st.one_of(st.none(), st.text(max_size=20)))
def test_arbitrary_text_returns_or_raises_metrics_error(text, node):
    _returns_or_metrics_error(text, node)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_PROMISH, node=st.sampled_from([None, "n", "gpu-h100-0"]))
def test_prometheus_like_text_returns_or_raises_metrics_error(text, node):
    _returns_or_metrics_error(text, node)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from(EXPORTER_4X.splitlines()), max_size=40),
       cut=st.integers(min_value=0, max_value=4000), junk=st.text(max_size=30))
def test_mangled_exporter_output_returns_or_raises_metrics_error(lines, cut, junk):
    text = "\n".join(lines)
    _returns_or_metrics_error(text[:cut] + junk + text[cut:], "gpu-h100-0")


def _big_exporter_text(target: int) -> str:
    chunks, size, gpu = [], 0, 0
    while size < target:
        block = EXPORTER_4X.replace('gpu="0"', f'gpu="{gpu}"').replace('gpu="1"', f'gpu="{gpu + 1}"')
        chunks.append(block)
        size += len(block)
        gpu += 2
    return "".join(chunks)


def test_five_megabyte_inputs_finish():
    five_mb = 5 * 2**20
    started = time.monotonic()
    m = parse_dcgm(_big_exporter_text(five_mb), "gpu-h100-0")
    assert len(m.gpus) > 1000
    # hostile: lines just under the cap, full of escaped quotes and backslashes
    # (the library's slowest paths), then one 5 MB line
    evil_line = 'x{a="' + '\\"' * (MAX_LINE_CHARS // 2 - 8) + '"} 1'
    evil = "\n".join([evil_line] * (five_mb // len(evil_line)))
    assert len(evil) > 4 * 2**20
    assert parse_dcgm(evil).gpus == []
    for one_line in ("{" * five_mb, "# TYPE x" + " " * five_mb + "gauge"):
        with pytest.raises(MetricsError):
            parse_dcgm(one_line)
    assert time.monotonic() - started < 60
