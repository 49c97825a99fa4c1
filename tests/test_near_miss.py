"""Near misses (gpuctl/model/matching.py near_miss, near_label): a selector or affinity
value that differs from a node's only by case, punctuation or a suffix is quoted in
the evidence, the way an expert points at the typo."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import event, gpu_node, pod, unschedulable, write_snapshot  # noqa: E402

from gpuctl.model.matching import near_label, near_miss  # noqa: E402


@pytest.mark.parametrize("want,have,why", [
    ("a100", "A100", "only by case"),
    ("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB ", "only by surrounding spaces"),
    ("nvidia_a100", "nvidia-a100", "only by punctuation"),
    ("NVIDIA-A100", "NVIDIA-A100-SXM4-80GB", "only by the suffix '-SXM4-80GB'"),
    ("Tesla-T4-SHARED", "Tesla-T4", "only by the suffix '-SHARED' the node lacks"),
    ("A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", "only by the prefix 'NVIDIA-'"),
])
def test_near_misses_are_named(want, have, why):
    assert near_miss(want, have) == why


@pytest.mark.parametrize("want,have", [("A100", "A100"), ("A100", "H100"), ("a", "ab"), ("", "x"), ("true", "false")])
def test_equal_or_simply_different_values_are_no_near_miss(want, have):
    assert near_miss(want, have) is None


def test_a_label_key_that_differs_only_by_punctuation():
    labels = {"nvidia.com/gpu-product": "NVIDIA-A100-SXM4-80GB"}
    assert near_label("nvidia.com/gpu.product", None, labels) == (
        "has the label nvidia.com/gpu-product=NVIDIA-A100-SXM4-80GB, whose key differs from nvidia.com/gpu.product "
        "only by punctuation")
    assert near_label("accelerator", None, labels) is None


def _diagnose(cli, tmp_path, *objs):
    snap = write_snapshot(tmp_path, *objs)
    return cli("diagnose", "pod", "t", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()


def test_a_selector_value_that_differs_by_case_is_quoted(cli, tmp_path):
    msg = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    nodes = [gpu_node(f"gpu-{i}", labels={"gpu-type": "A100"}) for i in (1, 2)]
    t = pod("t", "ml", gpus=1, node_selector={"gpu-type": "a100"}, conditions=[unschedulable(msg)])
    doc = _diagnose(cli, tmp_path, *nodes, t, event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert top["code"] == "node-selector-mismatch"
    assert "node/gpu-1 label gpu-type=A100, which differs from the wanted a100 only by case (near miss)" in top["evidence"]


def test_an_affinity_value_that_is_a_short_form_is_quoted(cli, tmp_path):
    msg = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100"]}]}]}}}
    t = pod("t", "ml", gpus=1, affinity=aff, conditions=[unschedulable(msg)])
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1", product="NVIDIA-H100-80GB-HBM3"), t,
                    event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert top["code"] == "node-affinity-mismatch"
    assert any("near miss: it has nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, which differs from NVIDIA-H100 "
               "only by the suffix '-80GB-HBM3'" in e for e in top["evidence"]), top["evidence"]
