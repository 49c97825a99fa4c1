"""State taints are not preferences (issue 14, capability 11): a taint that means "not
ready yet", "being removed" or "quarantined" is never fixed by tolerating it."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import write_snapshot, event, gpu_node, pod, taint, unschedulable  # noqa: E402


def _diagnose(cli, tmp_path, node_taint):
    shown = f"{{{node_taint['key']}: {node_taint.get('value', '')}}}"
    msg = f"0/1 nodes are available: 1 node(s) had untolerated taint {shown}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    snap = write_snapshot(tmp_path, gpu_node("gpu-1", gpus=8, taints=[node_taint]),
                          pod("train", "ml", gpus=4, conditions=[unschedulable(msg)]),
                          event("Pod", "train", "ml", "FailedScheduling", msg, count=3))
    return cli("diagnose", "pod", "train", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()


def test_every_state_taint_has_a_source_and_a_known_code():
    from gpuctl.findings import CODES
    from gpuctl.knowledge.state_taints import state_taints

    rows = state_taints()
    assert len(rows) >= 5
    for t in rows:
        assert (t.key or t.prefix) and t.code in CODES and t.set_by and t.fix and t.source


@pytest.mark.parametrize("key, value, effect, code", [
    ("readiness.k8s.io/gpu-driver-ready", None, "NoSchedule", "node-not-ready"),
    ("karpenter.sh/unregistered", None, "NoExecute", "node-not-ready"),
    ("karpenter.sh/disrupted", None, "NoSchedule", "node-unschedulable"),
    ("ToBeDeletedByClusterAutoscaler", "1700000000", "NoSchedule", "node-unschedulable"),
])
def test_a_state_taint_is_never_tolerated(cli, tmp_path, key, value, effect, code):
    doc = _diagnose(cli, tmp_path, taint(key, value, effect))
    top = doc["findings"][0]
    assert top["code"] == code, [f["code"] for f in doc["findings"]]
    assert "untolerated-taint" not in [f["code"] for f in doc["findings"]]
    commands = [c for f in doc["findings"] for fx in f["fixes"] for c in fx["commands"]]
    assert not any("tolerations" in c for c in commands), "never offer to tolerate a state taint"
    assert not any("uncordon" in c for c in commands), "the node is not cordoned"
    assert top["fixes"][0]["summary"].startswith("Do not tolerate it:")
    assert any(key in e and "set by" in e for e in top["evidence"])


def test_an_ordinary_taint_is_still_a_preference(cli, tmp_path):
    doc = _diagnose(cli, tmp_path, taint("dedicated", "ml-team"))
    assert doc["findings"][0]["code"] == "untolerated-taint"
