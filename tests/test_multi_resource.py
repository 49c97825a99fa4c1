"""Multi-resource requests (checks/pending.py, the combination step of node-fit): a pod
asks for a GPU resource and another device resource, each is free somewhere, no node
has both. The diagnosis says per node which resource fails and names the combination
that exists nowhere."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import container, event, gpu_node, pod, unschedulable, write_snapshot  # noqa: E402

RDMA = "rdma/hca_shared_devices_a"


def _target(msg, limits):
    c = container(gpus=0, requests={"cpu": "4"})
    c["resources"]["limits"] = dict(limits)
    c["resources"]["requests"] = {**c["resources"]["requests"], **limits}
    return pod("t", "ml", containers=[c], conditions=[unschedulable(msg)])


def _holder(name, node, gpus):
    return pod(name, "ml", gpus=gpus, phase="Running", node=node)


def _diagnose(cli, tmp_path, *objs):
    snap = write_snapshot(tmp_path, *objs)
    return cli("diagnose", "pod", "t", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()


def test_gpus_free_only_where_the_rdma_device_is_not(cli, tmp_path):
    msg = f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient {RDMA}."
    rdma_node = gpu_node("ib-1", gpus=8, extra_capacity={RDMA: "1k"})
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), gpu_node("gpu-2"), rdma_node, _holder("big", "ib-1", 8),
                    _target(msg, {"nvidia.com/gpu": "1", RDMA: "1"}), event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert [f["code"] for f in doc["findings"]].count("insufficient-gpu") == 1
    assert top["code"] == "insufficient-gpu", [f["code"] for f in doc["findings"]]
    assert top["summary"] == (f"No node has 1 nvidia.com/gpu + 1 {RDMA} free: on the 1 node that advertises "
                              "all of them nvidia.com/gpu is short")
    assert top["evidence"][0] == f"node/ib-1: nvidia.com/gpu 0 free; {RDMA} 1000 free"
    assert top["evidence"][1] == f"nvidia.com/gpu is free on gpu-1, gpu-2, which lack {RDMA}"


def test_no_node_advertises_both_resources(cli, tmp_path):
    msg = f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient {RDMA}."
    cpu_rdma = gpu_node("ib-1", gpus=0, gfd=False, extra_capacity={RDMA: "1k"})
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), gpu_node("gpu-2"), cpu_rdma,
                    _target(msg, {"nvidia.com/gpu": "1", RDMA: "1"}), event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert top["code"] == "insufficient-resource", [f["code"] for f in doc["findings"]]
    assert top["summary"].startswith(f"No node advertises both nvidia.com/gpu and {RDMA}")
    assert f"node/gpu-1: nvidia.com/gpu 8 free; {RDMA} not advertised" in top["evidence"]
    assert any(e.startswith(f"{RDMA} is free on ib-1, which lack nvidia.com/gpu") for e in top["evidence"])
    assert "unknown-resource-name" not in [f["code"] for f in doc["findings"]]


def test_the_nodes_with_both_have_no_free_gpu(cli, tmp_path):
    msg = f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient {RDMA}."
    ib = [gpu_node(f"ib-{i}", gpus=8, extra_capacity={RDMA: "1k"}) for i in (1, 2)]
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), *ib, _holder("a", "ib-1", 8), _holder("b", "ib-2", 8),
                    _target(msg, {"nvidia.com/gpu": "2", RDMA: "1"}), event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert top["code"] == "insufficient-gpu", [f["code"] for f in doc["findings"]]
    assert top["summary"] == (f"No node has 2 nvidia.com/gpu + 1 {RDMA} free: on the 2 nodes that advertise "
                              "all of them nvidia.com/gpu is short")
    assert any(e.startswith("nvidia.com/gpu is free on gpu-1, which lack " + RDMA) for e in top["evidence"])


def test_a_node_with_both_free_is_no_combination_problem(cli, tmp_path):
    msg = "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: ib}."
    ib = gpu_node("ib-1", gpus=8, extra_capacity={RDMA: "1k"}, taints=[{"key": "dedicated", "value": "ib", "effect": "NoSchedule"}])
    doc = _diagnose(cli, tmp_path, ib, _target(msg, {"nvidia.com/gpu": "1", RDMA: "1"}),
                    event("Pod", "t", "ml", "FailedScheduling", msg))
    codes = [f["code"] for f in doc["findings"]]
    assert codes[0] == "untolerated-taint" and "insufficient-resource" not in codes


def test_a_mig_profile_short_where_the_nic_is(cli, tmp_path):
    mig = "nvidia.com/mig-1g.10gb"
    msg = f"0/2 nodes are available: 1 Insufficient {mig}, 1 Insufficient {RDMA}."
    both = gpu_node("ib-1", gpus=0, extra_capacity={mig: "7", RDMA: "1k"})
    plain = gpu_node("mig-1", gpus=0, extra_capacity={mig: "7"})
    holder = pod("h", "ml", phase="Running", node="ib-1", containers=[container(gpus=7, resource=mig)])
    doc = _diagnose(cli, tmp_path, both, plain, holder, _target(msg, {mig: "1", RDMA: "1"}),
                    event("Pod", "t", "ml", "FailedScheduling", msg))
    assert doc["findings"][0]["code"] == "mig-profile-unavailable", [f["code"] for f in doc["findings"]]
    assert "on the 1 node that advertises all of them" in doc["findings"][0]["summary"]
