"""Application-class Xids need no hardware action: `diagnose node` keeps them out of
the xid-error finding (they are the application's error, the GPU is fine), unless a
health controller recommends a hardware action for the event; a controller's
"Recommended Action=NONE" (NVSentinel) is honoured for any non-critical Xid."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import cond, gpu_node, write_snapshot  # noqa: E402

from gpuctl.knowledge.gpu_health import (  # noqa: E402
    application_class, controller_action, needs_no_hardware_action, xid_info, xids,
)


@pytest.mark.parametrize("n", [13, 31, 43, 45, 68])
def test_application_xids_are_application_class(n):
    assert application_class(n)
    assert needs_no_hardware_action(n)


@pytest.mark.parametrize("n", [48, 79, 119, 94, 63, 92, 64, 74])
def test_hardware_and_memory_xids_are_not(n):
    assert not application_class(n)
    assert not needs_no_hardware_action(n)


def test_no_critical_xid_is_application_class():
    assert not [x.xid for x in xids() if x.application_class and x.severity == "critical"]
    assert all(x.application_class for x in xids() if x.immediate == "RESTART_APP" and x.xid != 94)


@pytest.mark.parametrize("text,want", [
    ("Detected XID 31 for GPU 4 Please consult the documentation for details of this XID. Recommended Action=NONE;", "NONE"),
    ("ErrorCode:119 PCI:0000:97:00 GPU:GPU-41 GSP_RPC_TIMEOUT; Resolution: RESET_GPU Recommended Action=COMPONENT_RESET;",
     "COMPONENT_RESET"),
    ("RecommendedAction: restart_bm", "RESTART_BM"),
    ("suggested_actions: NONE", "NONE"),
    ("Xid 79 GPU has fallen off the bus", None),
    (None, None),
    ("x" * 100000 + " Recommended Action=NONE", None),   # only the start of a huge message is read
], ids=["nvsentinel-none", "nvsentinel-reset", "lower-case", "suggested", "no-action", "none", "huge"])
def test_controller_action(text, want):
    assert controller_action(text) == want


def test_the_controllers_word_beats_the_catalog():
    assert needs_no_hardware_action(31, "COMPONENT_RESET") is False   # the controller wants a reset
    assert needs_no_hardware_action(8, "NONE") is True
    assert needs_no_hardware_action(63, "NONE") is True               # non-critical, controller says nothing to do
    assert needs_no_hardware_action(79, "NONE") is False              # a critical Xid stays a finding
    assert xid_info(31).application_class


def _node(tmp_path, message, ctype="GpuMemWatch"):
    c = cond(ctype, "True", f"{ctype}IsNotHealthy", message)
    return write_snapshot(tmp_path, gpu_node("gpu-1", gpus=8, conditions=[c]))


def _diagnose(cli, snap):
    return cli("diagnose", "node", "gpu-1", "--snapshot", str(snap), "-o", "json").json()


def test_nvsentinel_xid31_with_no_action_is_no_xid_error(cli, tmp_path):
    snap = _node(tmp_path, "ErrorCode:DCGM_FR_XID_ERROR GPU:4 PCI:0000:c4:00.0 GPU_UUID:GPU-d1 Detected XID 31 for GPU 4 "
                           "Please consult the documentation for details of this XID. Recommended Action=NONE;")
    doc = _diagnose(cli, snap)
    codes = [f["code"] for f in doc["findings"]]
    assert "xid-error" not in codes and "gpu-unhealthy" not in codes, codes
    detail = next(c["detail"] for c in doc["checks"] if c["name"] == "xid")
    assert "Xid 31" in detail and "no hardware action" in detail and "NONE" in detail


def test_an_application_xid_without_a_controller_word_follows_the_catalog(cli, tmp_path):
    snap = _node(tmp_path, "Detected XID 13 for GPU 0 (Graphics Engine Exception)", ctype="GpuXidWatch")
    doc = _diagnose(cli, snap)
    assert "xid-error" not in [f["code"] for f in doc["findings"]]
    detail = next(c["detail"] for c in doc["checks"] if c["name"] == "xid")
    assert "Xid 13" in detail and "restart the application" in detail


def test_a_hardware_action_keeps_an_application_xid_a_finding(cli, tmp_path):
    snap = _node(tmp_path, "Detected XID 31 for GPU 4 repeatedly. Recommended Action=COMPONENT_RESET;")
    doc = _diagnose(cli, snap)
    assert "xid-error" in [f["code"] for f in doc["findings"]]


def test_a_hardware_xid_is_still_a_finding_even_next_to_an_application_one(cli, tmp_path):
    c1 = cond("GpuMemWatch", "True", "GpuMemWatchIsNotHealthy", "Detected XID 31 for GPU 4. Recommended Action=NONE;")
    c2 = cond("SysLogsXIDError", "True", "SysLogsXIDErrorIsNotHealthy",
              "ErrorCode:79 PCI:0000:97:00 GPU:GPU-41 Xid 79 GPU has fallen off the bus; Recommended Action=RESTART_BM;")
    snap = write_snapshot(tmp_path, gpu_node("gpu-1", gpus=8, conditions=[c1, c2]))
    doc = _diagnose(cli, snap)
    xe = [f for f in doc["findings"] if f["code"] == "xid-error"]
    assert xe and "Xid 79" in xe[0]["summary"] and xe[0]["severity"] == "critical"
