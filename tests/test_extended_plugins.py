"""Well-known non-GPU device resources (AWS EFA, and the plugins of RDMA, SR-IOV,
Neuron) are data with sources: a pod that requests vpc.amazonaws.com/efa while no node
advertises it is told that the EFA device plugin is down on the EFA nodes, never that
the name is a typo; their plugin pods are never taken for a GPU device plugin."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import container, cpu_node, pod, unschedulable, waiting, write_snapshot  # noqa: E402

from gpuctl.knowledge import catalog  # noqa: E402

EFA = "vpc.amazonaws.com/efa"
INSUFFICIENT = f"0/2 nodes are available: 2 Insufficient {EFA}."


def efa_node(name):
    return cpu_node(name, cpu="96", memory="384Gi", labels={"vpc.amazonaws.com/efa.present": "true",
                                                          "node.kubernetes.io/instance-type": "hpc6a.48xlarge"})


def efa_plugin_pod(node, i, statuses=None):
    c = container("aws-efa-k8s-device-plugin", image="602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.3.3")
    return pod(f"aws-efa-k8s-device-plugin-daemonset-{i}", "kube-system", phase="Running", node=node, containers=[c],
               labels={"name": "aws-efa-k8s-device-plugin"}, owner=("DaemonSet", "aws-efa-k8s-device-plugin-daemonset"),
               statuses=statuses)


def crashloop_status():
    return [waiting("aws-efa-k8s-device-plugin", "CrashLoopBackOff", restarts=9, last_exit={"reason": "Error", "exitCode": 1})]


def worker():
    c = container("worker", image="ghcr.io/flux-framework/flux-restful:latest", requests={EFA: "1", "cpu": "90"})
    c["resources"]["limits"] = {EFA: "1"}
    return pod("worker-0", "hpc", containers=[c], conditions=[unschedulable(INSUFFICIENT)])


def test_efa_is_well_known_data_with_a_source():
    assert catalog.well_known_gpu_resource(EFA)
    kinds = catalog.serving_kinds(EFA)
    assert [k.name for k in kinds] == ["aws-efa-k8s-device-plugin"]
    assert kinds[0].source and kinds[0].node_label == "vpc.amazonaws.com/efa.present=true"
    assert catalog.served_resource_vendor(EFA) == "aws-efa"


@pytest.mark.parametrize("resource,plugin", [
    ("aws.amazon.com/neuroncore", "aws-neuron-device-plugin"),
    ("rdma/hca_shared_devices_a", "rdma-shared-device-plugin"),
    ("intel.com/intel_sriov_netdevice", "sriov-network-device-plugin"),
])
def test_other_plugins_serve_their_resources(resource, plugin):
    assert [k.name for k in catalog.serving_kinds(resource)] == [plugin]


def test_gpu_resources_still_resolve_to_gpu_plugins_only():
    kinds = catalog.serving_kinds("nvidia.com/gpu")
    assert kinds and all(k.vendor == "nvidia" for k in kinds)
    others = {k.label_selector for k in catalog.other_device_plugins()}
    assert not others & {k.label_selector for k in catalog.device_plugin_selectors()}


def test_operator_named_families_are_not_never_a_typo():
    # rdma/<name> and SR-IOV pools are named by the operator: a misspelt one is a typo
    assert not catalog.well_known_gpu_resource("rdma/hca_shared_devices_a")
    assert not catalog.well_known_gpu_resource("intel.com/intel_sriov_netdevice")


def test_an_efa_plugin_pod_is_not_a_gpu_device_plugin():
    p = efa_plugin_pod("n1", 0)
    assert not catalog.labels_mark_device_plugin(p["metadata"]["labels"], "kube-system")


def _diagnose(cli, snap):
    return cli("diagnose", "pod", "worker-0", "-n", "hpc", "--snapshot", str(snap), "-o", "json").json()


def test_efa_plugin_crash_looping_is_device_plugin_not_running(cli, tmp_path):
    snap = write_snapshot(tmp_path, efa_node("efa-1"), efa_node("efa-2"),
                          efa_plugin_pod("efa-1", 0, crashloop_status()), efa_plugin_pod("efa-2", 1, crashloop_status()),
                          worker())
    doc = _diagnose(cli, snap)
    codes = [f["code"] for f in doc["findings"]]
    assert codes[0] == "device-plugin-not-running", codes
    assert "unknown-resource-name" not in codes
    top = doc["findings"][0]
    assert any("2 node(s) labelled vpc.amazonaws.com/efa.present=true" in e and "2 of them not ready" in e
               for e in top["evidence"]), top["evidence"]
    assert any("CrashLoopBackOff" in e for e in top["evidence"])
    assert any("aws-efa-k8s-device-plugin-daemonset-0" in c for fx in top["fixes"] for c in fx["commands"])


def test_efa_without_any_plugin_says_so(cli, tmp_path):
    snap = write_snapshot(tmp_path, efa_node("efa-1"), worker())
    doc = _diagnose(cli, snap)
    codes = [f["code"] for f in doc["findings"]]
    assert codes[0] == "device-plugin-not-running" and "unknown-resource-name" not in codes, codes
    assert any("no device-plugin pod or DaemonSet" in e for e in doc["findings"][0]["evidence"])


def test_efa_live_matches_offline(cli, tmp_path, serve):
    snap = write_snapshot(tmp_path, efa_node("efa-1"), efa_plugin_pod("efa-1", 0, crashloop_status()), worker())
    _, kc = serve(snap)
    doc = cli("diagnose", "pod", "worker-0", "-n", "hpc", "--kubeconfig", kc, "-o", "json").json()
    assert doc["findings"][0]["code"] == "device-plugin-not-running", [f["code"] for f in doc["findings"]]
    assert any("CrashLoopBackOff" in e for e in doc["findings"][0]["evidence"])


def test_a_misspelt_efa_name_is_still_a_typo(cli, tmp_path):
    w = worker()
    w["spec"]["containers"][0]["resources"] = {"limits": {"vpc.amazonaws.com/efaa": "1"}}
    snap = write_snapshot(tmp_path, efa_node("efa-1"), w)
    codes = [f["code"] for f in _diagnose(cli, snap)["findings"]]
    assert codes[0] == "unknown-resource-name", codes


# labels_mark_device_plugin looks selectors up by their first label (it runs for every
# pod of a 150,000-pod save or snapshot read); it must answer as testing each in turn.
def _marks_by_testing_each(labels, namespace):
    return bool(labels) and any(all(labels.get(k) == v for k, v in pairs)
                                and (not namespaces or "*" in namespaces or namespace in namespaces)
                                for pairs, namespaces in catalog._compiled_selectors())


def _selector_words():
    sels = catalog._compiled_selectors()
    keys = sorted({k for pairs, _ in sels for k, _ in pairs}) + ["pod-template-hash", "x"]
    values = sorted({v for pairs, _ in sels for _, v in pairs}) + ["", "y"]
    namespaces = sorted({n for _, ns in sels for n in ns}) + ["default", "ml"]
    return keys, values, namespaces


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_device_plugin_labels_are_recognised_as_testing_each_selector(data):
    keys, values, namespaces = _selector_words()
    labels = data.draw(st.dictionaries(st.sampled_from(keys), st.sampled_from(values), max_size=5))
    namespace = data.draw(st.one_of(st.none(), st.sampled_from(namespaces)))
    assert catalog.labels_mark_device_plugin(labels, namespace) == _marks_by_testing_each(labels, namespace)
    for pairs, ns in catalog._compiled_selectors():      # every selector itself, in one of its namespaces
        labels = dict(pairs)
        namespace = sorted(ns - {"*"})[0] if ns - {"*"} else "anywhere"
        assert catalog.labels_mark_device_plugin(labels, namespace)
