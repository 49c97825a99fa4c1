"""Real-world scheduling cases (scheduler messages, taints, device plugins). Run
``python tests/realworld/build_scheduling.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import Case, cpu_node, device_plugin_pod, event, gpu_node, pod, taint, unschedulable  # noqa: E402


def validator_custom_taint() -> Case:
    flat = "0/10 nodes are available: 1 node(s) had taint {workload: aiml}, that the pod didn't tolerate, 9 Insufficient nvidia.com/gpu."
    c = Case("gpu-operator-156-validator-custom-taint",
             source="https://github.com/NVIDIA/gpu-operator/issues/156",
             fragment="1 node(s) had taint {workload: aiml}, that the pod didn't tolerate, 9 Insufficient nvidia.com/gpu.",
             where="pod status condition PodScheduled (the validator pod)",
             expect="untolerated-taint",
             resolution="The only GPU node carries the custom taint workload=aiml; the ClusterPolicy passed the "
                        "toleration to the operands but not to the device-plugin validator, so the validator pod "
                        "cannot land there (the other 9 nodes have no GPUs). The cause is the untolerated taint.",
             target={"pod": "gpu-operator-resources/nvidia-device-plugin-validation"},
             must_not=["unknown-resource-name", "device-plugin-not-running"], k8s="v1.18 (OpenShift 4.5)")
    nodes = [gpu_node("gpu-worker-0", gpus=1, product="Tesla-T4", taints=[taint("workload", "aiml")],
                      kubelet="v1.18.3")]
    nodes += [cpu_node(f"worker-{i}", kubelet="v1.18.3") for i in range(9)]
    c.add(*nodes)
    c.add(device_plugin_pod("gpu-worker-0", namespace="gpu-operator-resources",
                            labels={"app": "nvidia-device-plugin-daemonset"}))
    c.add(pod("nvidia-device-plugin-validation", "gpu-operator-resources", gpus=1,
              conditions=[unschedulable(flat)]))
    c.add(event("Pod", "nvidia-device-plugin-validation", "gpu-operator-resources", "FailedScheduling", flat, count=12))
    return c


CASES = [validator_custom_taint]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
