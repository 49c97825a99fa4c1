"""Real-world cases about inter-pod constraints (pod affinity / anti-affinity, existing
pods' anti-affinity, topology spread) keeping a GPU pod, or a pod on a GPU cluster, off
nodes; and about pods that ask for a GPU plus another resource where one of the two is
what is short. Run ``python tests/realworld/build_constraints.py`` to rewrite their
snapshots."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (Case, container, device_plugin_pod, gpu_node, pod,  # noqa: E402
                 bound, scheduler_said)


# ------------------------------------------------------------------ local helpers


# ------------------------------------------------------------------ pod anti-affinity


def hami_1933() -> Case:
    """HAMi's scheduler Deployment carries a required pod anti-affinity against its own
    pods (hostname); on a one-node GPU cluster the surge pod of a rolling update has
    nowhere to go while the old pod still runs."""
    msg = ("0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: 0/1 nodes are "
           "available: 1 node(s) didn't match pod anti-affinity rules.")
    c = Case("hami-1933-scheduler-rollout-hard-anti-affinity-single-node",
             source="https://github.com/Project-HAMi/HAMi/issues/1933",
             fragment="0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
             where="event FailedScheduling on the new hami-scheduler pod of the rolling update (and its "
                   "PodScheduled condition)",
             expect="pod-topology-constraint",
             resolution="On a single-node cluster the hami-scheduler Deployment cannot finish a rolling update: "
                        "the chart set a requiredDuringSchedulingIgnoredDuringExecution podAntiAffinity "
                        "(topologyKey kubernetes.io/hostname) against the scheduler's own pods, so the surge pod "
                        "is rejected by the node the old pod still occupies. Fixed by PR #1934, which made the "
                        "scheduler anti-affinity preferred. The cause is the pod's own anti-affinity, not "
                        "resources.",
             target={"pod": "kube-system/hami-scheduler-7f9c6d5b84-lq2vz"},
             must_not=["insufficient-gpu", "insufficient-cpu", "insufficient-memory", "node-unschedulable"],
             k8s="not stated in the thread (HAMi 2.x, 2026)")
    node = "gpu-node-1"
    c.add(gpu_node(node, gpus=2, product="NVIDIA-L40S", kubelet="v1.32.4", cpu="64", memory="512Gi",
                   labels={"gpu": "on", "node-role.kubernetes.io/control-plane": ""},
                   extra_capacity={"nvidia.com/gpumem": "92160", "nvidia.com/gpucores": "200"}))
    c.add(device_plugin_pod(node, namespace="kube-system", name="hami-device-plugin-x7k2m",
                            image="projecthami/hami:v2.6.1",
                            labels={"app.kubernetes.io/component": "hami-device-plugin",
                                    "app.kubernetes.io/name": "hami"}))
    sched_labels = {"app.kubernetes.io/component": "hami-scheduler", "app.kubernetes.io/name": "hami",
                    "app.kubernetes.io/instance": "hami"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "hami-scheduler"}},
        "topologyKey": "kubernetes.io/hostname"}]}}

    def sched_containers(tag: str) -> list:
        return [container("kube-scheduler", image="registry.k8s.io/kube-scheduler:v1.32.4",
                          requests={"cpu": "100m", "memory": "128Mi"}),
                container("vgpu-scheduler-extender", image=f"projecthami/hami:{tag}",
                          requests={"cpu": "100m", "memory": "128Mi"})]

    old = bound("hami-scheduler-5d8b7f6c9-8hk4t", "kube-system", node, containers=sched_containers("v2.6.0"),
                labels={**sched_labels, "pod-template-hash": "5d8b7f6c9"},
                owner=("ReplicaSet", "hami-scheduler-5d8b7f6c9"), affinity=anti, created="2026-11-12T06:00:00Z")
    c.add(old)
    new = pod("hami-scheduler-7f9c6d5b84-lq2vz", "kube-system", containers=sched_containers("v2.6.1"),
              labels={**sched_labels, "pod-template-hash": "7f9c6d5b84"},
              owner=("ReplicaSet", "hami-scheduler-7f9c6d5b84"), affinity=anti,
              tolerations=[{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                            "effect": "NoSchedule"}],
              created="2026-11-20T02:55:00Z")
    scheduler_said(c, new, msg, count=6)
    c.add(new)
    return c


# ------------------------------------------------------------------ GPU plus another resource


def hami_1429() -> Case:
    """A pod asks nvidia.com/gpu plus HAMi's gpumem/gpucores; the default scheduler took
    it (HAMi's webhook did not hand it to hami-scheduler), and on the GPU node, which
    has the GPUs, the two HAMi resources are what is missing."""
    msg = ("0/2 nodes are available: 1 Insufficient nvidia.com/gpucores, 1 Insufficient nvidia.com/gpumem, 1 node(s) "
           "had untolerated taint {node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: 1 No "
           "preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling..")
    c = Case("hami-1429-vgpu-pod-taken-by-default-scheduler-gpumem-gpucores",
             source="https://github.com/Project-HAMi/HAMi/issues/1429",
             fragment="0/2 nodes are available: 1 Insufficient nvidia.com/gpucores, 1 Insufficient nvidia.com/gpumem, "
                      "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.",
             where="event FailedScheduling from default-scheduler on the test pod (and its PodScheduled condition)",
             expect="sharing-resource-mismatch",
             also_ok={"insufficient-resource": "on the only schedulable node the GPUs fit and the two HAMi resources "
                                               "are what the default scheduler finds short; naming them is the "
                                               "scheduler's own reading, one step short of why"},
             resolution="The pod requests nvidia.com/gpu: 2 together with HAMi's nvidia.com/gpumem: 3000 and "
                        "nvidia.com/gpucores: 30. The HAMi maintainer pointed out that the pod was handled by "
                        "default-scheduler, not hami-scheduler, i.e. HAMi is not installed properly (its webhook "
                        "did not set schedulerName). gpumem/gpucores are HAMi-accounted resources that no node "
                        "advertises, so on the only schedulable (GPU) node the GPUs fit and the other two "
                        "resources are what is short; the control-plane node is tainted. Not a GPU shortage.",
             target={"pod": "default/gpu-pod"},
             must_not=["insufficient-gpu", "unknown-resource-name", "gpu-fragmentation",
                       "device-plugin-not-running"],
             k8s="not stated in the thread (HAMi, 2025)",
             notes="Expected code decided here: sharing-resource-mismatch (the pod's request does not match how the "
                   "cluster shares GPUs: HAMi's resources need HAMi's scheduler), since no code names 'the wrong "
                   "scheduler' and the thread's answer is exactly that.")
    c.add(gpu_node("k8s-master", gpus=0, gfd=False, kubelet="v1.28.15", cpu="8", memory="32Gi",
                   labels={"node-role.kubernetes.io/control-plane": ""},
                   taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]))
    # HAMi's device plugin advertises each physical GPU as deviceSplitCount (10) vGPUs under nvidia.com/gpu
    c.add(gpu_node("k8s-gpu-worker", gpus=20, product="NVIDIA-A10G", kubelet="v1.28.15", cpu="32",
                   memory="128Gi", labels={"gpu": "on", "nvidia.com/gpu.count": "2"}))
    c.add(device_plugin_pod("k8s-gpu-worker", namespace="kube-system", name="hami-device-plugin-5rjz8",
                            image="projecthami/hami:v2.6.1",
                            labels={"app.kubernetes.io/component": "hami-device-plugin",
                                    "app.kubernetes.io/name": "hami"}))
    p = pod("gpu-pod", "default",
            containers=[container("gpu-test", image="nvidia/cuda:11.0.3-base",
                                  limits={"nvidia.com/gpu": "2", "nvidia.com/gpumem": "3000",
                                          "nvidia.com/gpucores": "30"},
                                  command=["bash", "-c", "sleep 86400"])],
            created="2026-11-20T02:05:00Z")
    scheduler_said(c, p, msg, count=11)
    c.add(p)
    return c


CASES = [hami_1933, hami_1429]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
