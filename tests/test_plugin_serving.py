"""A well-known GPU resource name is never a typo (issue 14, capability 2): when no node
advertises it, gpuctl says why its device plugin is not serving it, offline and live."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import write_snapshot, cpu_node, device_plugin_pod, gpu_node, pod, taint, unschedulable, waiting  # noqa: E402

INSUFFICIENT = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def _snap(tmp_path, *objs, logs=()):
    return write_snapshot(tmp_path, *objs, logs=logs)


def plugin_daemonset(tolerations=None, node_selector=None, desired=0):
    spec = {"containers": [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "kube-system", "uid": "ds-1"},
            "spec": {"selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
                     "template": {"metadata": {"labels": {"name": "nvidia-device-plugin-ds"}}, "spec": spec}},
            "status": {"desiredNumberScheduled": desired, "currentNumberScheduled": desired, "numberReady": desired}}


def _diagnose(cli, snap, *extra):
    return cli("diagnose", "pod", "train", "-n", "ml", "--snapshot", str(snap), "-o", "json", *extra).json()


def test_no_plugin_at_all_is_not_a_typo(cli, tmp_path):
    snap = _snap(tmp_path, gpu_node("gpu-1", gpus=0, gfd=False), cpu_node("cpu-1"),
                 pod("train", "ml", gpus=1, conditions=[unschedulable(INSUFFICIENT)]))
    doc = _diagnose(cli, snap)
    top = doc["findings"][0]
    assert top["code"] == "device-plugin-not-running"
    assert "unknown-resource-name" not in [f["code"] for f in doc["findings"]]
    assert any("a well-known name, not a typo" in e for e in top["evidence"])
    assert any("helm upgrade -i nvdp" in c for fx in top["fixes"] for c in fx["commands"])


def test_a_daemonset_kept_off_by_a_taint_is_named(cli, tmp_path, serve):
    nodes = [gpu_node(f"gpu-{i}", gpus=0, gfd=False, taints=[taint("sku", "gpu")]) for i in (1, 2)]
    ds = plugin_daemonset(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    snap = _snap(tmp_path, *nodes, ds, pod("train", "ml", gpus=1, tolerations=[{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], conditions=[unschedulable(INSUFFICIENT)]))
    for doc in (_diagnose(cli, snap), None):
        if doc is None:
            _, kc = serve(snap)
            doc = cli("diagnose", "pod", "train", "-n", "ml", "--kubeconfig", kc, "-o", "json").json()
        top = doc["findings"][0]
        assert top["code"] == "device-plugin-not-running", [f["code"] for f in doc["findings"]]
        assert "DaemonSet does not run on the GPU nodes" in top["summary"]
        assert any("taint sku=gpu:NoSchedule not tolerated" in e for e in top["evidence"])
        assert any("desired 0" in e for e in top["evidence"])


def test_a_plugin_that_cannot_load_nvml_is_nvml_init_failed(cli, tmp_path):
    dp = device_plugin_pod("gpu-1", statuses=[waiting("nvidia-device-plugin-ctr", "CrashLoopBackOff", restarts=12,
                                                       last_exit={"reason": "Error", "exitCode": 1})])
    log = ("I0101 00:00:00.000000       1 main.go:256] Retreiving plugins.\n"
           "E0101 00:00:00.000000       1 factory.go:68] Failed to initialize NVML: could not load NVML library.\n")
    snap = _snap(tmp_path, gpu_node("gpu-1", gpus=0, gfd=False), dp,
                 pod("train", "ml", gpus=1, conditions=[unschedulable(INSUFFICIENT)]),
                 logs=[("kube-system", dp["metadata"]["name"], "nvidia-device-plugin-ctr", log, True)])
    top = _diagnose(cli, snap)["findings"][0]
    assert top["code"] == "nvml-init-failed", top
    assert any("could not load NVML library" in e for e in top["evidence"])


@pytest.mark.parametrize("resource", ["amd.com/gpu", "gpu.intel.com/i915", "habana.ai/gaudi"])
def test_other_vendors_names_are_not_typos_either(cli, tmp_path, resource):
    snap = _snap(tmp_path, cpu_node("cpu-1"), pod("train", "ml", gpus=1, resource=resource))
    doc = _diagnose(cli, snap)
    assert doc["findings"][0]["code"] == "device-plugin-not-running"
    assert resource in doc["findings"][0]["summary"]


def test_a_made_up_name_is_still_a_typo(cli, tmp_path):
    snap = _snap(tmp_path, gpu_node("gpu-1", gpus=8), pod("train", "ml", gpus=1, resource="nvidia.com/gpus"))
    top = _diagnose(cli, snap)["findings"][0]
    assert top["code"] == "unknown-resource-name" and "nvidia.com/gpu?" in top["summary"]


def test_an_admission_reject_says_whether_the_owner_replaced_it(cli, tmp_path, serve):
    """Kubelet admission failures (capability 8): a rejected Job pod and its Running
    successor: the finding says the owner already replaced it, offline and live."""
    msg = ("Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
           "Requested: 1, Available: 0, which is unexpected")
    labels = {"job-name": "train", "batch.kubernetes.io/job-name": "train"}
    rejected = pod("train-a", "ml", gpus=1, phase="Failed", node="gpu-1", labels=labels, owner=("Job", "train"),
                   reason="UnexpectedAdmissionError", message=msg, statuses=[], created="2026-11-19T09:00:00Z")
    newer = pod("train-b", "ml", gpus=1, phase="Running", node="gpu-1", labels=labels, owner=("Job", "train"),
                created="2026-11-19T09:01:00Z")
    snap = _snap(tmp_path, gpu_node("gpu-1", gpus=8), rejected, newer)
    _, kc = serve(snap)
    for where in (["--snapshot", str(snap)], ["--kubeconfig", kc]):
        doc = cli("diagnose", "pod", "train-a", "-n", "ml", *where, "-o", "json").json()
        top = doc["findings"][0]
        assert top["code"] == "unexpected-admission-error"
        assert "already replaced it: train-b is Running" in top["summary"], (where, top["summary"])
    alone = _snap(tmp_path / "alone", gpu_node("gpu-1", gpus=8), rejected)
    top = cli("diagnose", "pod", "train-a", "-n", "ml", "--snapshot", str(alone), "-o", "json").json()["findings"][0]
    assert any("has not replaced it" in e for e in top["evidence"])
