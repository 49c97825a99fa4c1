"""The reasoning issue 14 added, one small cluster per rule (tests/realworld/ holds the
real cases): each test fails when the rule is lost."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import (write_snapshot, container, cpu_node, event, gpu_node, pod, quota, running, unschedulable, waiting)  # noqa: E402


def _diagnose(cli, tmp_path, *objs, target=("pod", "ml", "p"), logs=(), metrics=None):
    snap = write_snapshot(tmp_path, *objs, logs=logs, metrics=metrics)
    kind, ns, name = target
    argv = ["diagnose", "node", name] if kind == "node" else ["diagnose", "pod", name, "-n", ns]
    return cli(*argv, "--snapshot", str(snap), "-o", "json").json()


def _codes(doc):
    return [f["code"] for f in doc["findings"]]


CRASHING = [waiting("main", "CrashLoopBackOff", restarts=7, last_exit={"reason": "Error", "exitCode": 1})]


def test_a_pod_that_selects_gpu_nodes_but_requests_no_gpu(cli, tmp_path):
    p = pod("p", "ml", phase="Running", node="gpu-1", node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            statuses=CRASHING)
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), p, logs=[("ml", "p", "main", "Traceback\nValueError: bad device\n", True)])
    assert _codes(doc)[0] == "gpu-not-requested"
    crash = next(f for f in doc["findings"] if f["code"] == "crash-loop")
    assert crash["symptomOf"] == "gpu-not-requested"


def test_a_crash_on_a_gpu_with_a_critical_xid_is_the_xids_symptom(cli, tmp_path):
    p = pod("p", "ml", gpus=1, phase="Running", node="gpu-1", statuses=CRASHING)
    dcgm = ('DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-aaaa",Hostname="gpu-1",pod="p",namespace="ml"} 79\n'
            'DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-bbbb",Hostname="gpu-1"} 0\n')
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), p, logs=[("ml", "p", "main", "CUDA error: unspecified launch failure\n", True)],
                    metrics={"gpu-1": dcgm})
    assert _codes(doc)[0] == "xid-error"
    assert next(f for f in doc["findings"] if f["code"] == "crash-loop")["symptomOf"] == "xid-error"


def test_an_xid_on_another_pods_gpu_does_not_explain_this_crash(cli, tmp_path):
    p = pod("p", "ml", gpus=1, phase="Running", node="gpu-1", statuses=CRASHING)
    dcgm = ('DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-aaaa",Hostname="gpu-1",pod="other",namespace="ml"} 79\n'
            'DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-bbbb",Hostname="gpu-1",pod="p",namespace="ml"} 0\n')
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), p, logs=[("ml", "p", "main", "IndexError: out of range\n", True)],
                    metrics={"gpu-1": dcgm})
    crash = next(f for f in doc["findings"] if f["code"] == "crash-loop")
    assert crash.get("symptomOf") is None and _codes(doc)[0] == "crash-loop"


def test_no_runtime_class_is_no_nvidia_runtime_not_an_old_driver(cli, tmp_path):
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
    p = pod("p", "ml", gpus=1, phase="Running", node="gpu-1", statuses=CRASHING, owner=("ReplicaSet", "p-rs"))
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1", driver="550.90.07", cuda="12.4"), rc, p,
                    logs=[("ml", "p", "main", "CUDA error: CUDA driver version is insufficient for CUDA runtime version\n", True)])
    assert _codes(doc)[0] == "nvidia-runtime-error", _codes(doc)
    assert "driver-cuda-mismatch" not in _codes(doc)


def test_must_specify_quota_is_quota_exceeded(cli, tmp_path):
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml", "uid": "uid-ml-train"},
           "spec": {"template": {"spec": {"containers": [container()]}}}, "status": {}}
    msg = 'Error creating: pods "train-x" is forbidden: failed quota: compute: must specify requests.cpu,requests.memory'
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), job, event("Job", "train", "ml", "FailedCreate", msg, source="job-controller"),
                    target=("pod", "ml", "job/train"))
    assert _codes(doc) == ["quota-exceeded"]
    assert "freeing quota will not help" in doc["findings"][0]["summary"]


def test_a_quota_whose_status_does_not_track_a_limit_refuses_every_pod(cli, tmp_path):
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml", "uid": "uid-ml-train"},
           "spec": {"template": {"spec": {"containers": [container(gpus=1)]}}}, "status": {}}
    q = quota("gpu", "ml", hard={"requests.cpu": "8", "requests.example.com/gpu": "1"}, used={"requests.cpu": "0"})
    q["status"]["hard"] = {"requests.cpu": "8"}   # the status never picked up the second entry
    msg = 'Error creating: pods "train-x" is forbidden: status unknown for quota: gpu'
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), job, q, event("Job", "train", "ml", "FailedCreate", msg, source="job-controller"),
                    target=("pod", "ml", "job/train"))
    assert _codes(doc) == ["quota-exceeded"]
    top = doc["findings"][0]
    assert "does not track requests.example.com/gpu" in top["summary"], top["summary"]
    assert any("limits requests.example.com/gpu in spec.hard" in e for e in top["evidence"])


def test_cuda_calling_the_driver_insufficient_in_a_pod_without_a_gpu(cli, tmp_path):
    p = pod("p", "ml", phase="Running", node="gpu-1", statuses=CRASHING, containers=[container(gpus=0)])
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1", driver="550.90.07", cuda="12.4"), p,
                    logs=[("ml", "p", "main", "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n", True)])
    assert _codes(doc)[0] == "gpu-not-requested", _codes(doc)
    assert "driver-cuda-mismatch" not in _codes(doc)
    # the same line in a pod that does request a GPU is still read as the driver's
    gpu = pod("p", "ml", gpus=1, phase="Running", node="gpu-1", statuses=CRASHING)
    old = _diagnose(cli, tmp_path / "gpu", gpu_node("gpu-1", driver="470.57.02", cuda="11.4"), gpu,
                    logs=[("ml", "p", "main", "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n", True)])
    assert "gpu-not-requested" not in _codes(old)


def _hami_pod(scheduler):
    c = container(gpus=0)
    c["resources"]["limits"] = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"}
    return pod("p", "ml", containers=[c], spec={"schedulerName": scheduler})


def test_hami_resources_on_the_default_scheduler_are_a_sharing_mismatch(cli, tmp_path):
    msg = "0/1 nodes are available: 1 Insufficient nvidia.com/gpumem."
    p = _hami_pod("default-scheduler")
    p["status"]["conditions"] = [unschedulable(msg)]
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1", gpus=10), p, event("Pod", "p", "ml", "FailedScheduling", msg))
    assert _codes(doc)[0] == "sharing-resource-mismatch", _codes(doc)
    assert "only hami-scheduler can place" in doc["findings"][0]["summary"]
    assert not {"device-plugin-not-running", "unknown-resource-name"} & set(_codes(doc))


def test_hami_resources_are_not_a_node_resource_for_hami_scheduler(cli, tmp_path):
    # hami-scheduler's extender accounts gpumem: the fit matrix does not ask nodes for it
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1", gpus=10), _hami_pod("hami-scheduler"))
    assert not {"sharing-resource-mismatch", "device-plugin-not-running", "unknown-resource-name",
                "insufficient-resource"} & set(_codes(doc)), _codes(doc)


def test_a_cluster_of_cpu_only_instances_has_no_gpu_to_give(cli, tmp_path):
    msg = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    nodes = [cpu_node(f"n{i}", labels={"node.kubernetes.io/instance-type": "m5.xlarge"}) for i in (1, 2)]
    p = pod("p", "ml", gpus=1, conditions=[unschedulable(msg)])
    doc = _diagnose(cli, tmp_path, *nodes, p, event("Pod", "p", "ml", "FailedScheduling", msg))
    assert _codes(doc)[0] == "insufficient-gpu", _codes(doc)
    assert doc["findings"][0]["summary"].startswith("No node in the cluster has a GPU: its 2 nodes are CPU-only")
    assert "device-plugin-not-running" not in _codes(doc)
    # an unknown instance type (bare metal, a GPU family) may have GPUs: the plugin is the question then
    metal = [cpu_node("n1", labels={"node.kubernetes.io/instance-type": "g5.xlarge"})]
    doc = _diagnose(cli, tmp_path / "g5", *metal, p, event("Pod", "p", "ml", "FailedScheduling", msg))
    assert _codes(doc)[0] == "device-plugin-not-running", _codes(doc)


def test_out_of_memory_on_a_gpu_with_uncorrectable_ecc_is_hardware_first(cli, tmp_path):
    p = pod("p", "ml", gpus=1, phase="Running", node="gpu-1", statuses=CRASHING)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
    dcgm = ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0",UUID="GPU-aaaa",Hostname="gpu-1",pod="p",namespace="ml"} 4\n')
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), p, logs=[("ml", "p", "main", oom, True)], metrics={"gpu-1": dcgm})
    assert _codes(doc)[0] == "ecc-uncorrectable", _codes(doc)
    oom_finding = next(f for f in doc["findings"] if f["code"] == "gpu-memory-exhausted")
    assert oom_finding["symptomOf"] == "ecc-uncorrectable"
    clean = _diagnose(cli, tmp_path / "clean", gpu_node("gpu-1"), p, logs=[("ml", "p", "main", oom, True)])
    assert _codes(clean)[0] == "gpu-memory-exhausted", _codes(clean)


def test_a_kai_pod_in_a_top_level_queue(cli, tmp_path):
    queue = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "qa"}, "spec": {}}
    leaf = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team"}, "spec": {"parentQueue": "qa"}}
    p = pod("p", "ml", labels={"kai.scheduler/queue": "qa"}, spec={"schedulerName": "kai-scheduler"},
            conditions=[unschedulable("Unable to schedule pod")])
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), queue, leaf, p)
    assert _codes(doc)[0] == "queue-not-admitted"
    assert "top-level queue" in doc["findings"][0]["summary"]


def test_a_pool_named_on_purpose_is_the_pools_capacity(cli, tmp_path):
    full = gpu_node("h100-1", gpus=8, product="NVIDIA-H100-80GB-HBM3", labels={"pool": "h100"})
    free = gpu_node("a100-1", gpus=8, labels={"pool": "a100"})
    holder = pod("holder", "ml", gpus=8, phase="Running", node="h100-1")
    msg = "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector."
    p = pod("p", "ml", gpus=4, node_selector={"pool": "h100"}, conditions=[unschedulable(msg)])
    doc = _diagnose(cli, tmp_path, full, free, holder, p)
    assert _codes(doc)[0] == "insufficient-gpu" and "node-selector-mismatch" not in _codes(doc)
    assert any("names a pool on purpose" in e and "a100-1" in e for e in doc["findings"][0]["evidence"])


def test_a_mig_layout_that_did_not_apply(cli, tmp_path):
    n = gpu_node("gpu-1", gpus=0, labels={"nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": "failed",
                                          "nvidia.com/mig.capable": "true"})
    doc = _diagnose(cli, tmp_path, n, pod("p", "ml", gpus=1))
    assert _codes(doc)[0] == "mig-profile-unavailable"
    assert "did not apply" in doc["findings"][0]["summary"]


def test_a_shortage_the_autoscaler_declined_is_its_symptom(cli, tmp_path):
    holder = pod("holder", "ml", gpus=8, phase="Running", node="gpu-1")
    p = pod("p", "ml", gpus=4, conditions=[unschedulable("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")])
    no = event("Pod", "p", "ml", "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached",
               type_="Normal", source="cluster-autoscaler")
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), holder, p, no)
    assert _codes(doc)[0] == "autoscaler-no-scale-up"
    assert next(f for f in doc["findings"] if f["code"] == "insufficient-gpu")["symptomOf"] == "autoscaler-no-scale-up"


def test_an_init_container_killed_for_memory(cli, tmp_path):
    init = [waiting("wait-ready", "CrashLoopBackOff", restarts=4, last_exit={"reason": "OOMKilled", "exitCode": 137})]
    p = pod("p", "ml", gpus=1, phase="Pending", node="gpu-1", init_containers=[container("wait-ready", limits={"memory": "256Mi"})],
            init_statuses=init, statuses=[])
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), p)
    assert _codes(doc)[0] == "container-oom-killed"
    assert doc["findings"][0]["summary"].startswith("Init container wait-ready")


def test_a_kernel_xid_posted_on_the_node(cli, tmp_path):
    xid = event("Node", "gpu-1", None, "NVRMXid", "NVRM: Xid (PCI:0000:61:00): 79, pid=1, GPU has fallen off the bus.",
                source="kernel-monitor")
    doc = _diagnose(cli, tmp_path, gpu_node("gpu-1"), running("x"), xid, target=("node", "", "gpu-1"))
    assert "xid-error" in _codes(doc)
