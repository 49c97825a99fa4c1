"""`gpuctl node probe`: NVML through a fake module at its one boundary
(gpuctl.collect.nvml, the only importer of pynvml), Xids from recorded kernel-log
lines, and the document against docs/probe.md and `diagnose node`.

The fake NVML raises the real nvidia-ml-py exception classes. It reaches the CLI by
standing in for the `pynvml` module in sys.modules (the boundary itself), never
through an environment hook; the no-driver path is also run for real, since this
machine has no NVIDIA driver."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pynvml
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, SCENARIOS, captured_at, snapshot_of
from gpuctl.cli.node_probe import SCHEMA, build_probe_doc, problems
from gpuctl.collect.kernel_log import MAX_LINE_CHARS, MAX_LINES, parse_log_time, read_kernel_log, xids_from_lines
from gpuctl.collect.nvml import NvmlUnavailable, cuda_version, probe_gpus
from gpuctl.errors import SourceError

MiB = 1024 * 1024
XID79_SCENARIO = SCENARIOS / "node-xid-79"

# Recorded kernel lines (the upstream source, GPUD kmsg.go test data) with journalctl / dmesg prefixes.
KERNEL_LINES = [
    "2026-11-20T02:50:00+0000 gpu-a100-5 kernel: nvidia-nvlink: Nvlink Core is being initialized",
    "2026-11-20T02:58:11+0000 gpu-a100-5 kernel: NVRM: Xid (PCI:0000:07:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "[Fri Nov 20 02:59:00 2026] NVRM: Xid (0000:03:00): 14, Channel 00000001",
    "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).",
    "2026-11-20T03:00:01.123456+01:00 gpu-a100-5 kernel: NVRM: Xid (PCI:0000:07:00): 79, GPU has fallen off the bus.",
    "[  812.331] NVRM: GPU 0000:03:00.0: GPU has fallen off the bus.",
    "Nov 20 03:01:02 gpu-a100-5 kernel: NVRM: The NVIDIA GPU 0000:18:00.0 (PCI ID: 10de:20b2) installed in this system has fallen off the bus and is not responding to commands.",
    "2026-11-20T03:02:00+0000 gpu-a100-5 kernel: eth0: link up",
]


# ------------------------------------------------------------------ the fake NVML module


def _err(cls):
    def raiser(*_args):
        raise cls()
    return raiser


def fake_nvml(healthy: bool = False) -> types.ModuleType:
    """pynvml's API for two GPUs: GPU 0 an A100 with uncorrectable ECC errors and a
    row remap pending (retired-page calls NotSupported, as on Ampere); GPU 1 a T4
    where MIG and recovery action are NotSupported, the driver lacks
    nvmlDeviceGetRemappedRows (FunctionNotFound) and the temperature read finds the
    GPU lost. The module lacks nvmlDeviceGetCurrentClocksEventReasons and
    nvmlSystemGetCudaDriverVersion_v2 (an older binding): the deprecated names serve."""
    m = types.ModuleType("pynvml")
    for name in dir(pynvml):   # the real constants and exception classes
        if name.startswith(("NVML_", "NVMLError")):
            setattr(m, name, getattr(pynvml, name))
    m.calls = []
    a100 = {
        "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-5f0c2c3d-1111-2222-3333-444455556666", "bus": b"00000000:07:00.0",
        "mem": 81920 * MiB, "persistence": 1, "mig": [0, 0], "ecc_mode": [1, 1],
        "ecc": {(0, 0): 5, (1, 0): 0 if healthy else 2, (0, 1): 12, (1, 1): 0 if healthy else 2},
        "retired": pynvml.NVMLError_NotSupported, "retired_pending": pynvml.NVMLError_NotSupported,
        "rows": (0, 0, 0, 0) if healthy else (0, 2, 1, 0), "recovery": (0, 0 if healthy else 1),
        "throttle": 0x1 | 0x4, "temp": 34,
    }
    t4 = {
        "name": "Tesla T4", "uuid": "GPU-0a1b2c3d-aaaa-bbbb-cccc-ddddeeeeffff", "bus": b"00000000:03:00.0",
        "mem": 15360 * MiB, "persistence": 0, "mig": pynvml.NVMLError_NotSupported, "ecc_mode": [1, 1],
        "ecc": {(0, 0): 0, (1, 0): 0, (0, 1): 0, (1, 1): 0},
        "retired": [], "retired_pending": 0, "rows": pynvml.NVMLError_FunctionNotFound,
        "recovery": (pynvml.NVML_ERROR_NOT_SUPPORTED, 0), "throttle": 0,
        "temp": pynvml.NVMLError_Unknown if healthy else pynvml.NVMLError_GpuIsLost,
    }
    gpus = [a100, t4]

    def val(v):
        if isinstance(v, type) and issubclass(v, BaseException):
            raise v()
        return v

    def gpu(h):
        assert isinstance(h, tuple) and h[0] == "handle", h
        return gpus[h[1]]

    def record(fn):
        def wrapped(*args):
            m.calls.append(fn.__name__)
            return fn(*args)
        wrapped.__name__ = fn.__name__
        setattr(m, fn.__name__, wrapped)
        return wrapped

    @record
    def nvmlInit():
        pass

    @record
    def nvmlShutdown():
        pass

    @record
    def nvmlSystemGetDriverVersion():
        return "550.90.07"

    @record
    def nvmlSystemGetCudaDriverVersion():
        return 12040

    @record
    def nvmlSystemGetNVMLVersion():
        return "12.550.90.07"

    @record
    def nvmlDeviceGetCount():
        return len(gpus)

    @record
    def nvmlDeviceGetHandleByIndex(i):
        return ("handle", i)

    @record
    def nvmlDeviceGetName(h):
        return gpu(h)["name"]

    @record
    def nvmlDeviceGetUUID(h):
        return gpu(h)["uuid"]

    @record
    def nvmlDeviceGetPciInfo(h):
        return types.SimpleNamespace(busIdLegacy=b"", busId=gpu(h)["bus"], domain=0, bus=0, device=0)

    @record
    def nvmlDeviceGetMemoryInfo(h):
        return types.SimpleNamespace(total=gpu(h)["mem"], free=0, used=0)

    @record
    def nvmlDeviceGetPersistenceMode(h):
        return gpu(h)["persistence"]

    @record
    def nvmlDeviceGetMigMode(h):
        return val(gpu(h)["mig"])

    @record
    def nvmlDeviceGetEccMode(h):
        return gpu(h)["ecc_mode"]

    @record
    def nvmlDeviceGetTotalEccErrors(h, error_type, counter_type):
        return gpu(h)["ecc"][(error_type, counter_type)]

    @record
    def nvmlDeviceGetRetiredPages(h, cause):
        assert cause in (0, 1)
        return val(gpu(h)["retired"])

    @record
    def nvmlDeviceGetRetiredPagesPendingStatus(h):
        return val(gpu(h)["retired_pending"])

    @record
    def nvmlDeviceGetRemappedRows(h):
        return val(gpu(h)["rows"])

    @record
    def nvmlDeviceGetFieldValues(h, ids):
        assert ids == [pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION]
        ret, value = gpu(h)["recovery"]
        return [types.SimpleNamespace(fieldId=ids[0], scopeId=0, timestamp=0, latencyUsec=0, valueType=1,
                                      nvmlReturn=ret, value=types.SimpleNamespace(uiVal=value))]

    @record
    def nvmlDeviceGetCurrentClocksThrottleReasons(h):
        return gpu(h)["throttle"]

    @record
    def nvmlDeviceGetTemperature(h, sensor):
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return val(gpu(h)["temp"])

    m.gpus = gpus
    return m


# ------------------------------------------------------------------ NVML


def test_probe_reads_every_field_and_records_what_is_unsupported():
    nv = fake_nvml()
    doc = probe_gpus(nvml=nv)
    assert (doc["driverVersion"], doc["cudaDriverVersion"], doc["nvmlVersion"]) == ("550.90.07", "12.4", "12.550.90.07")
    a100, t4 = doc["gpus"]
    assert a100 == {
        "index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-5f0c2c3d-1111-2222-3333-444455556666",
        "pciBusId": "00000000:07:00.0", "memoryTotalMiB": 81920, "persistenceMode": True,
        "migMode": {"current": "disabled", "pending": "disabled"},
        "ecc": {"mode": {"current": "enabled", "pending": "enabled"},
                "volatile": {"corrected": 5, "uncorrected": 2}, "aggregate": {"corrected": 12, "uncorrected": 2}},
        "retiredPages": None,
        "remappedRows": {"corrected": 0, "uncorrected": 2, "pending": True, "failure": False},
        "recoveryAction": "GPU_RESET", "throttleReasons": ["GpuIdle", "SwPowerCap"], "temperatureC": 34,
    }
    assert t4["name"] == "Tesla T4" and t4["memoryTotalMiB"] == 15360 and t4["persistenceMode"] is False
    assert t4["migMode"] is None and t4["remappedRows"] is None and t4["recoveryAction"] is None
    assert t4["retiredPages"] == {"singleBit": 0, "doubleBit": 0, "pending": False}
    assert t4["throttleReasons"] == [] and t4["temperatureC"] is None
    assert doc["unsupported"] == [
        "nvmlDeviceGetRetiredPages", "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetMigMode",
        "nvmlDeviceGetRemappedRows", "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)",
    ]
    assert doc["errors"] == [{"gpuIndex": 1, "call": "nvmlDeviceGetTemperature",
                              "error": "NVML_ERROR_GPU_IS_LOST: GPU is lost"}]
    assert nv.calls[0] == "nvmlInit" and nv.calls[-1] == "nvmlShutdown" and nv.calls.count("nvmlShutdown") == 1


def test_functions_missing_from_an_older_binding_are_unsupported_not_fatal():
    nv = fake_nvml(healthy=True)
    del nv.nvmlDeviceGetMigMode
    del nv.nvmlDeviceGetCurrentClocksThrottleReasons       # neither the new nor the deprecated name
    del nv.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION             # a binding older than the field
    del nv.nvmlSystemGetCudaDriverVersion
    doc = probe_gpus(nvml=nv)
    assert all(g["migMode"] is None and g["throttleReasons"] is None and g["recoveryAction"] is None for g in doc["gpus"])
    assert doc["cudaDriverVersion"] is None and doc["driverVersion"] == "550.90.07"
    for name in ("nvmlDeviceGetMigMode", "nvmlDeviceGetCurrentClocksEventReasons",
                 "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)", "nvmlSystemGetCudaDriverVersion_v2"):
        assert doc["unsupported"].count(name) == 1, name
    assert doc["errors"][0]["error"].startswith("NVML_ERROR_UNKNOWN")


def test_a_failing_handle_keeps_the_gpu_with_nulls_and_the_probe_goes_on():
    nv = fake_nvml(healthy=True)
    real = nv.nvmlDeviceGetHandleByIndex

    def handle(i):
        if i == 0:
            raise pynvml.NVMLError_GpuIsLost()
        return real(i)

    nv.nvmlDeviceGetHandleByIndex = handle
    doc = probe_gpus(nvml=nv)
    assert doc["gpus"][0]["index"] == 0 and doc["gpus"][0]["name"] is None and doc["gpus"][1]["name"] == "Tesla T4"
    assert {"gpuIndex": 0, "call": "nvmlDeviceGetHandleByIndex", "error": "NVML_ERROR_GPU_IS_LOST: GPU is lost"} in doc["errors"]


def test_shutdown_follows_init_even_when_the_probe_is_interrupted():
    nv = fake_nvml()

    def interrupted():
        raise KeyboardInterrupt

    nv.nvmlDeviceGetCount = interrupted
    with pytest.raises(KeyboardInterrupt):
        probe_gpus(nvml=nv)
    assert nv.calls[-1] == "nvmlShutdown"


@pytest.mark.parametrize("exc, reason", [
    (pynvml.NVMLError_LibraryNotFound, "no NVIDIA driver: NVML library not found"),
    (pynvml.NVMLError_DriverNotLoaded, "NVIDIA driver not loaded"),
    (pynvml.NVMLError_LibRmVersionMismatch, "driver/library version mismatch"),
    (pynvml.NVMLError_NoPermission, "no permission to use NVML"),
    (pynvml.NVMLError_Unknown, "NVML could not be initialised"),
])
def test_init_failure_raises_nvml_unavailable_naming_the_error(exc, reason):
    nv = fake_nvml()
    nv.nvmlInit = _err(exc)
    with pytest.raises(NvmlUnavailable) as info:
        probe_gpus(nvml=nv)
    e = info.value
    assert e.reason == reason and e.exit_code == 4
    assert re.search(r"NVML_ERROR_[A-Z_]+: ", e.error), e.error
    assert "nvmlShutdown" not in nv.calls


@pytest.mark.parametrize("value, text", [(12040, "12.4"), (11080, "11.8"), (12090, "12.9"), (13000, "13.0"), (0, None), (True, None)])
def test_cuda_driver_version_arithmetic(value, text):
    assert cuda_version(value) == text


# ------------------------------------------------------------------ kernel log


def test_recorded_xid_lines_map_to_gpus_by_pci_bus_id(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()
    try:
        gpus = probe_gpus(nvml=fake_nvml())["gpus"]
        xids = xids_from_lines(KERNEL_LINES, gpus)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    got = [(x["xid"], x["pciBusId"], x["gpuIndex"], x["time"]) for x in xids]
    assert got == [
        (79, "0000:07:00", 0, "2026-11-20T02:58:11Z"),
        (14, "0000:03:00", 1, "2026-11-20T02:59:00Z"),      # dmesg -T, read as local time (UTC here)
        (119, "0000:9b:00", None, None),                   # no GPU at 9b:00 in the fake, no wall-clock prefix
        (79, "0000:07:00", 0, "2026-11-20T02:00:01Z"),      # short-iso-precise with a +01:00 offset
        (79, "0000:03:00", 1, None),                       # "NVRM: GPU …: GPU has fallen off the bus."
        (79, "0000:18:00", None, None),                    # "The NVIDIA GPU … has fallen off the bus"
    ]
    assert xids[0]["line"] == "NVRM: Xid (PCI:0000:07:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    assert xids[2]["line"].startswith("NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s")


@pytest.mark.parametrize("line, when", [
    ("2026-11-20T02:58:11+0000 gpu-a100-5 kernel: NVRM: x", "2026-11-20T02:58:11Z"),
    ("2026-11-20T02:58:11-05:00 h kernel: x", "2026-11-20T07:58:11Z"),
    ("2026-11-20T02:58:11Z h kernel: x", "2026-11-20T02:58:11Z"),
    ("2026-11-20T02:58:11,123456+00:00 x", "2026-11-20T02:58:11Z"),
    ("2026-13-40T02:58:11+0000 h kernel: x", None),
    ("[ 1234.567890] NVRM: x", None),
    ("Nov 20 02:58:11 h kernel: x", None),
    ("[Fri Nov 99 02:58:11 2026] x", None),
])
def test_log_times(line, when):
    assert parse_log_time(line) == when


def test_kernel_log_file_is_bounded_and_decoded_with_replacement(tmp_path):
    f = tmp_path / "kern.log"
    body = [f"line {i}".encode() for i in range(MAX_LINES + 10)]
    body[-3] = b"NVRM: Xid (PCI:0000:07:00): 48, bad \xff\xfe bytes"
    body[-2] = b"x" * (MAX_LINE_CHARS * 3)
    f.write_bytes(b"\r\n".join(body) + b"\r\n")
    lines, source = read_kernel_log(str(f))
    assert source == f"file {f}"
    assert len(lines) == MAX_LINES and lines[0] == "line 10" and lines[-1] == f"line {MAX_LINES + 9}"
    assert len(lines[-2]) == MAX_LINE_CHARS and "\ufffd" in lines[-3] and not any("\r" in ln for ln in lines)
    assert [x["xid"] for x in xids_from_lines(lines, [])] == [48]


def test_an_unreadable_kernel_log_file_is_a_source_error(tmp_path):
    with pytest.raises(SourceError) as info:
        read_kernel_log(str(tmp_path / "missing.log"))
    assert info.value.exit_code == 4 and "missing.log" in info.value.line()


def test_reading_this_machines_kernel_log_never_fails():
    lines, source = read_kernel_log(None, timeout=5)
    assert isinstance(lines, list) and len(lines) <= MAX_LINES
    assert source in ("journalctl -k", "dmesg -T", "dmesg") or source.startswith("unavailable (")


def test_no_journalctl_and_no_dmesg_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert read_kernel_log(None) == ([], "unavailable (journalctl -k: not installed; dmesg -T: not installed)")


_nvrmish = st.one_of(
    st.text(max_size=300),
    st.builds(lambda a, b, c: f"{a}NVRM: Xid ({b}): {c}", st.text(max_size=40),
              st.text(alphabet="PCI:0123456789abcdefABCDEF.x ", max_size=30), st.text(max_size=60)),
    st.builds(lambda a, b: f"{a}NVRM: GPU {b}: GPU has fallen off the bus.", st.text(max_size=30),
              st.text(alphabet="0123456789abcdef:.", max_size=24)),
    st.builds(lambda a, b: f"{a} h kernel: NVRM: The NVIDIA GPU {b} fallen off the bus", st.text(max_size=40),
              st.text(max_size=24)),
)
_gpus = st.lists(st.one_of(
    st.none(), st.integers(), st.text(max_size=10),
    st.fixed_dictionaries({"index": st.one_of(st.integers(), st.none(), st.text(max_size=3), st.booleans()),
                           "pciBusId": st.one_of(st.text(max_size=24), st.none(), st.integers(),
                                                 st.sampled_from(["00000000:07:00.0", "0000:03:00"]))}),
), max_size=4)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.one_of(_nvrmish, st.binary(max_size=80), st.none(), st.integers()), max_size=12), gpus=_gpus)
def test_xids_from_lines_never_raises(lines, gpus):
    out = xids_from_lines(lines, gpus)
    for x in out:
        assert set(x) == {"xid", "pciBusId", "gpuIndex", "time", "line"}
        assert isinstance(x["xid"], int) and re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}", x["pciBusId"])
        assert x["gpuIndex"] is None or isinstance(x["gpuIndex"], int)
        json.dumps(x)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_parse_log_time_never_raises(line):
    t = parse_log_time(line)
    assert t is None or re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", t)


# ------------------------------------------------------------------ the document


def _doc_example() -> dict:
    text = (ROOT / "docs" / "probe.md").read_text()
    block = re.search(r"```json\n(.*?)```", text, re.S).group(1)
    return json.loads(block)


def _same_shape(example, actual, where="doc"):
    """Every field of docs/probe.md's example is present, with the same nesting and
    type; a value may be null (the call was unsupported)."""
    if actual is None:
        return
    if isinstance(example, dict):
        assert isinstance(actual, dict), where
        assert set(actual) == set(example), f"{where}: {sorted(set(actual) ^ set(example))}"
        for k, v in example.items():
            _same_shape(v, actual[k], f"{where}.{k}")
    elif isinstance(example, list):
        assert isinstance(actual, list), where
        for i, item in enumerate(actual):
            if example:
                _same_shape(example[0], item, f"{where}[{i}]")
    else:
        assert type(actual) is type(example), f"{where}: {actual!r} is not like {example!r}"


def _write_log(tmp_path: Path) -> Path:
    f = tmp_path / "kern.log"
    f.write_text("\n".join(KERNEL_LINES) + "\n")
    return f


def test_document_has_every_field_of_docs_probe_md(tmp_path):
    doc = build_probe_doc("gpu-a100-5", nvml=fake_nvml(), kernel_log=str(_write_log(tmp_path)))
    example = _doc_example()
    assert list(doc) == list(example), "top-level fields, in the documented order"
    _same_shape(example, doc)
    assert doc["schema"] == SCHEMA == example["schema"] and doc["node"] == "gpu-a100-5"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", doc["capturedAt"])
    assert doc["kernelLogSource"].startswith("file ") and len(doc["xids"]) == 6
    assert all(isinstance(e, dict) and set(e) == {"gpuIndex", "call", "error"} for e in doc["errors"])
    json.dumps(doc)


def test_problems_decide_the_exit_code():
    sick = build_probe_doc("n", nvml=fake_nvml(), kernel_log=[])
    found = problems(sick)
    assert any("uncorrectable ECC" in p for p in found) and any("row remapping pending" in p for p in found)
    assert any("GPU_RESET" in p for p in found)
    healthy = build_probe_doc("n", nvml=fake_nvml(healthy=True), kernel_log=["NVRM: Xid (0000:03:00): 14, Channel 00000001"])
    assert problems(healthy) == []        # Xid 14 is informational
    healthy["xids"] = xids_from_lines([KERNEL_LINES[1]], healthy["gpus"])
    assert problems(healthy) == ["Xid 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS) on GPU 0: "
                                 "drain and reboot the node (full power cycle); replace the card if it recurs"]


def test_probe_document_is_read_by_diagnose_node(cli, tmp_path, monkeypatch):
    """-o json round-trips: `diagnose node --probe FILE` sees the fake A100's uncorrectable ECC."""
    snap = snapshot_of(XID79_SCENARIO)
    monkeypatch.setenv("GPUCTL_NOW", captured_at(snap))
    doc = build_probe_doc("gpu-a100-5", nvml=fake_nvml(), kernel_log=str(_write_log(tmp_path)))
    probe = tmp_path / "gpu-a100-5.json"
    probe.write_text(json.dumps(doc))
    r = cli("diagnose", "node", "gpu-a100-5", "--snapshot", str(snap), "--probe", str(probe), "-o", "json")
    assert r.code == 1, r.err
    codes = [f["code"] for f in r.json()["findings"]]
    assert "ecc-uncorrectable" in codes and "xid-error" in codes
    without = cli("diagnose", "node", "gpu-a100-5", "--snapshot", str(snap), "-o", "json")
    assert "ecc-uncorrectable" not in [f["code"] for f in without.json()["findings"]]


# ------------------------------------------------------------------ the command


def nvml_error() -> str:
    """'' where the real NVML starts on this machine, else why it does not."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        return f"nvmlInit: {e}"
    pynvml.nvmlShutdown()
    return ""


def _driver_present() -> bool:
    return not nvml_error()


@pytest.mark.skipif(_driver_present(), reason="an NVIDIA driver is installed here")
def test_without_a_driver_node_probe_exits_4_with_one_line(cli):
    for argv in (["node", "probe"], ["node", "probe", "-o", "json"]):
        r = cli(*argv)
        assert r.code == 4 and r.out == ""
        assert r.err.count("\n") == 1 and "Traceback" not in r.err
        assert r.err.startswith("gpuctl: error: no NVIDIA driver on this machine: NVML library not found (nvmlInit: "
                                "NVML_ERROR_LIBRARY_NOT_FOUND: NVML Shared Library Not Found)"), r.err


def test_the_real_binding_without_a_library_raises_nvml_unavailable():
    if _driver_present():
        pytest.skip("an NVIDIA driver is installed here")
    with pytest.raises(NvmlUnavailable) as info:
        probe_gpus()
    assert info.value.no_driver and info.value.reason == "no NVIDIA driver: NVML library not found"


@pytest.fixture
def fake_pynvml(monkeypatch):
    """The fake stands in for the pynvml module itself: the boundary, no env hook."""
    def install(nv):
        monkeypatch.setitem(sys.modules, "pynvml", nv)
        return nv
    return install


@pytest.mark.parametrize("exc, start", [
    (pynvml.NVMLError_LibraryNotFound, "gpuctl: error: no NVIDIA driver on this machine: NVML library not found ("),
    (pynvml.NVMLError_LibRmVersionMismatch, "gpuctl: error: driver/library version mismatch (nvmlInit: NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    (pynvml.NVMLError_DriverNotLoaded, "gpuctl: error: NVIDIA driver not loaded ("),
])
def test_nvml_init_failures_exit_4_with_one_line(cli, fake_pynvml, exc, start):
    nv = fake_pynvml(fake_nvml())
    nv.nvmlInit = _err(exc)
    r = cli("node", "probe", "--kernel-log", "/nonexistent")
    assert r.code == 4 and r.out == "" and r.err.count("\n") == 1 and r.err.startswith(start), r.err


def test_node_probe_json_is_the_document(cli, fake_pynvml, tmp_path):
    fake_pynvml(fake_nvml())
    r = cli("node", "probe", "--node", "gpu-a100-5", "--kernel-log", str(_write_log(tmp_path)), "-o", "json")
    assert r.code == 1, r.err          # uncorrectable ECC, remap pending, Xid 79
    doc = r.json()
    _same_shape(_doc_example(), doc)
    assert doc["node"] == "gpu-a100-5" and [x["gpuIndex"] for x in doc["xids"]][:2] == [0, 1]


def test_node_probe_yaml_and_node_name_from_the_downward_api(cli, fake_pynvml, tmp_path, monkeypatch):
    import yaml

    fake_pynvml(fake_nvml(healthy=True))
    monkeypatch.setenv("NODE_NAME", "gpu-t4-1")
    r = cli("node", "probe", "--kernel-log", str(tmp_path / "empty.log"), "-o", "yaml")
    assert r.code == 4 and "empty.log" in r.err            # a missing --kernel-log file is named
    (tmp_path / "empty.log").write_text("")
    r = cli("node", "probe", "--kernel-log", str(tmp_path / "empty.log"), "-o", "yaml")
    assert r.code == 0, r.err
    doc = yaml.safe_load(r.out)
    assert doc["schema"] == SCHEMA and doc["node"] == "gpu-t4-1" and doc["xids"] == []


def test_node_probe_table(cli, fake_pynvml, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    nv = fake_pynvml(fake_nvml())
    nv.gpus[1]["name"] = "Tesla T4 [bold red]x[/]\x1b]0;owned\x07\x1b[2J"
    r = cli("node", "probe", "--node", "gpu-a100-5", "--kernel-log", str(_write_log(tmp_path)), "--no-color")
    assert r.code == 1, r.err
    out = r.out
    for text in ("gpu-a100-5", "driver 550.90.07", "CUDA 12.4", "NVIDIA A100-SXM4-80GB", "80 GiB", "2/2",
                 "0c 2u pending", "GpuIdle, SwPowerCap", "34 C", "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
                 "GSP_RPC_TIMEOUT", "Needs attention", "nvmlDeviceGetMigMode", "GPU is lost"):
        assert text in out, text
    assert "\x1b" not in out and "\x07" not in out and "[bold red]x[/]" in out
    assert "(2 lines)" in out         # the two Xid 79 lines of GPU 0 are one problem


def test_node_probe_table_of_identical_healthy_gpus(cli, fake_pynvml, tmp_path):
    nv = fake_pynvml(fake_nvml(healthy=True))
    nv.gpus[1].update(nv.gpus[0], temp=41, bus=b"00000000:08:00.0")
    (tmp_path / "empty.log").write_text("")
    r = cli("node", "probe", "--node", "gpu-a100-5", "--kernel-log", str(tmp_path / "empty.log"))
    assert r.code == 0, r.err
    assert "2x NVIDIA A100-SXM4-80GB, 80 GiB each" in r.out and "41 C" in r.out
    assert "No GPU health problem found." in r.out and "Xid line(s)" in r.out and "Needs attention" not in r.out


def test_help_stays_free_of_pynvml():
    code = ("import sys; from gpuctl.cli.app import main; main(['--help']); main(['node', 'probe', '--help']); "
            "sys.stdout.flush(); print('pynvml' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert r.stdout.strip().endswith("False")


def test_only_the_nvml_module_imports_pynvml():
    importers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "gpuctl").rglob("*.py")
                       if re.search(r"^\s*(import pynvml|from pynvml)", p.read_text(), re.M))
    assert importers == ["gpuctl/collect/nvml.py"]
