"""Real-world cases for GPU sharing: MIG (strategies, MIG manager, plugin permissions on
MIG nodes), time-slicing and MPS (renames, replicas, requests above one, shared memory),
and DRA (DeviceClasses, ResourceClaims, API versions). Run
``python tests/realworld/build_sharing.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (crashloop, Case, container, cpu_node, event, gpu_node, obj, pod, running, taint, waiting, pending)  # noqa: E402
T_START = "2026-11-19T09:00:00Z"
T_FAIL = "2026-11-20T02:41:10Z"

# ------------------------------------------------------------------ local helpers


def node_info(n: dict, kubelet: str, os_image: str, kernel: str, runtime: str = "containerd://1.7.20") -> dict:
    n["status"]["nodeInfo"].update({"kubeletVersion": kubelet, "osImage": os_image, "kernelVersion": kernel,
                                    "containerRuntimeVersion": runtime})
    return n


def daemon_pod(name: str, namespace: str, node: str, ds: str, labels: dict, ctr: str, image: str,
               statuses: Optional[list] = None, phase: str = "Running", env: Optional[dict] = None) -> dict:
    """A DaemonSet pod (device plugin, GFD, MIG manager, DRA kubelet plugin) bound to ``node``."""
    c = container(ctr, image=image, env=env)
    return pod(name, namespace, phase=phase, node=node, containers=[c], labels=labels, owner=("DaemonSet", ds),
               statuses=statuses, tolerations=[{"operator": "Exists"}])


def rejected(name: str, ns: str, node: str, limits: dict, message: str, image: str,
             owner: Optional[tuple[str, str]] = None, cname: str = "main") -> dict:
    """A pod the kubelet refused at admission: Failed, reason UnexpectedAdmissionError."""
    c = container(cname, image=image, limits=limits)
    return pod(name, ns, phase="Failed", node=node, containers=[c], owner=owner,
               reason="UnexpectedAdmissionError", message=message, created=T_FAIL, statuses=[],
               conditions=[{"type": "PodScheduled", "status": "True", "lastTransitionTime": T_FAIL}])


def crashlooping(name: str, ns: str, node: str, limits: dict, cname: str, image: str, restarts: int,
                 owner: Optional[tuple[str, str]] = None, exit_code: int = 1) -> dict:
    c = container(cname, image=image, limits=limits)
    st = waiting(cname, "CrashLoopBackOff",
                 f"back-off 5m0s restarting failed container={cname} pod={name}_{ns}(uid-{ns}-{name})",
                 restarts=restarts, last_exit={"reason": "Error", "exitCode": exit_code}, image=image)
    return pod(name, ns, phase="Running", node=node, containers=[c], owner=owner, statuses=[st],
               conditions=[{"type": "PodScheduled", "status": "True"},
                           {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}])


def sharing_labels(strategy: str, replicas: int, product: str) -> dict:
    """What GFD writes on a node whose device-plugin config shares GPUs (renameByDefault=false
    keeps nvidia.com/gpu and appends -SHARED to the product)."""
    return {"nvidia.com/gpu.sharing-strategy": strategy, "nvidia.com/gpu.replicas": str(replicas),
            "nvidia.com/gpu.product": f"{product}-SHARED"}


# ================================================================== MIG


def toolkit_1740_mixed_mig_plugin_caps() -> Case:
    """A non-privileged device plugin with MIG_STRATEGY=mixed on toolkit 1.18+ cannot read MIG
    device memory (nvidia-cap1/cap2 not in its device cgroup): the plugin crash-loops and
    the node advertises no MIG profile, so a MIG pod reads like a profile shortage."""
    frag = "error getting device memory info: Insufficient Permissions"
    node = "gpu-a100-01"
    ns = "gpu-operator"
    plugin_img = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    c = Case("nvidia-container-toolkit-1740-mixed-mig-plugin-lacks-caps",
             source="https://github.com/NVIDIA/nvidia-container-toolkit/issues/1740",
             fragment=frag,
             where="log of the crash-looping device-plugin container (previous run) on the MIG node; the "
                   "workload pod's FailedScheduling event is its symptom",
             expect="device-plugin-not-running", trap=True,
             also_ok={"nvml-init-failed": "the plugin dies on an NVML query refused with Insufficient Permissions "
                                          "(NO_PERMISSION), which the nvml-init-failed runbook covers"},
             must_not=["unknown-resource-name", "insufficient-gpu"],
             resolution="Not a MIG profile shortage: with nvidia-container-toolkit 1.18+ (also 1.19.0) a "
                        "non-privileged device plugin with MIG_STRATEGY=mixed is not given nvidia-cap1/nvidia-cap2 "
                        "in its device cgroup, fails reading MIG device memory and exits, so the node advertises no "
                        "nvidia.com/mig-* resource. The reporter's repro matrix isolates it: privileged plugin, "
                        "toolkit legacy mode, toolkit 1.17.x or MIG_STRATEGY=none all work.",
             target={"pod": "inference/embed-1g-6b9d7c5f4-q2x7m"}, k8s="v1.32",
             notes="The thread quotes only the plugin error; the pending workload and the scheduler message are "
                   "the cluster that agrees with it (one A100 node whose plugin does not serve).")
    mig_labels = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-1g.10gb",
                  "nvidia.com/mig.config.state": "success", "nvidia.com/mig.capable": "true",
                  "nvidia.com/gpu.deploy.device-plugin": "true"}
    n = gpu_node(node, gpus=0, product="NVIDIA-A100-SXM4-80GB", labels=mig_labels, kubelet="v1.32.3",
                 driver="570.124.06", cuda="12.8", taints=[taint("nvidia.com/gpu", "true")])
    n["metadata"]["labels"]["nvidia.com/gpu.count"] = "8"
    c.add(node_info(n, "v1.32.3", "Ubuntu 22.04.5 LTS", "5.15.0-134-generic", "containerd://2.0.4"))
    c.add(cpu_node("cpu-01", kubelet="v1.32.3"), cpu_node("cpu-02", kubelet="v1.32.3"))
    dp = "nvidia-device-plugin-daemonset-7k2xq"
    c.add(daemon_pod(dp, ns, node, "nvidia-device-plugin-daemonset", {"app": "nvidia-device-plugin-daemonset"},
                     "nvidia-device-plugin", plugin_img, statuses=[crashloop("nvidia-device-plugin", plugin_img, 14)],
                     env={"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}))
    c.add(daemon_pod("nvidia-container-toolkit-daemonset-p8r4n", ns, node, "nvidia-container-toolkit-daemonset",
                     {"app": "nvidia-container-toolkit-daemonset"}, "nvidia-container-toolkit-ctr",
                     "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0-ubuntu20.04"))
    c.log(ns, dp, "nvidia-device-plugin", "\n".join([
        "I1120 02:51:02.114021       1 main.go:235] \"Starting NVIDIA Device Plugin\" version=<\n\t3c4a2b1e\n\tcommit: 3c4a2b1e\n >",
        "I1120 02:51:02.114101       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins",
        "I1120 02:51:02.114196       1 main.go:245] Starting OS watcher.",
        "I1120 02:51:02.114571       1 main.go:260] Starting Plugins.",
        "I1120 02:51:02.114597       1 main.go:317] Loading configuration.",
        "I1120 02:51:02.115412       1 main.go:342] Updating config with default resource matching patterns.",
        "I1120 02:51:02.161806       1 factory.go:112] Detected NVML platform: found NVML library",
        f"E1120 02:51:02.412377       1 main.go:177] error starting plugins: unable to add default resources to "
        f"config: error visiting devices: error visiting device: error visiting device: {frag}",
        ""]), previous=True)
    p = pod("embed-1g-6b9d7c5f4-q2x7m", "inference", owner=("ReplicaSet", "embed-1g-6b9d7c5f4"),
            containers=[container("server", image="vllm/vllm-openai:v0.8.5",
                                  limits={"nvidia.com/mig-1g.10gb": "1", "cpu": "4", "memory": "16Gi"})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    pending(c, p, "0/3 nodes are available: 3 Insufficient nvidia.com/mig-1g.10gb. preemption: 0/3 nodes are "
                  "available: 3 No preemption victims found for incoming pod.", count=27)
    return c


def operator_322_webhook_strips_gfd_permissions() -> Case:
    """GFD on a DGX A100 with mixed MIG fails with NVML Insufficient Permissions; the cause is a
    third-party admission webhook the user also applied to the operator's namespace."""
    frag = ("Unexpected error: Error generating NVML labels: Error generating common labels: Error getting device: "
            "nvml: Insufficient Permissions")
    node = "dgxa100"
    ns = "gpu-operator-resources"
    gfd_img = "nvcr.io/nvidia/gpu-feature-discovery:v0.5.0"
    dp_img = "nvcr.io/nvidia/k8s-device-plugin:v0.11.0-ubi8"
    c = Case("gpu-operator-322-admission-webhook-breaks-gfd-on-mig",
             source="https://github.com/NVIDIA/gpu-operator/issues/322",
             fragment=frag,
             where="log of the crash-looping gpu-feature-discovery container on the DGX node (previous run)",
             expect="nvml-init-failed", trap=False,
             also_ok={"device-plugin-not-running": "the node advertises no GPU or MIG resource and its plugin "
                                                   "pod is not Ready; that is the symptom the user saw"},
             must_not=["unknown-resource-name", "mig-profile-unavailable"],
             resolution="NVML was refused inside the operator's pods: klueska noted the error only appears when "
                        "the container lacks NVIDIA_MIG_MONITOR_DEVICES=all/privileges, and the reporter found he "
                        "was running gpu-admission-webhook (restricting which GPUs pods see) in the operator "
                        "namespace too; excluding that namespace made the gpu-feature-discovery error go away.",
             target={"node": node}, k8s="v1.23 (microk8s)",
             notes="The node objects and the plugin pod state are the cluster that agrees with the thread "
                   "(GPU Operator v1.10.0, mixed strategy, DGX A100-80GB).")
    mig_labels = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "coqui-dgxa100-0-layout",
                  "nvidia.com/mig.config.state": "success", "nvidia.com/gpu.deploy.device-plugin": "true",
                  "nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}
    n = gpu_node(node, gpus=0, product="NVIDIA-A100-SXM4-80GB", labels=mig_labels, kubelet="v1.23.4",
                 driver="470.103.01", cuda="11.4", cpu="256", memory="2Ti")
    c.add(node_info(n, "v1.23.4-2+9e6a1a9cfb6f67", "Ubuntu 20.04.4 LTS", "5.4.0-104-generic",
                    "containerd://1.5.9"))
    gfd = "gpu-feature-discovery-6f6bx"
    c.add(daemon_pod(gfd, ns, node, "gpu-feature-discovery", {"app": "gpu-feature-discovery"},
                     "gpu-feature-discovery", gfd_img, statuses=[crashloop("gpu-feature-discovery", gfd_img, 31)],
                     env={"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}))
    c.log(ns, gfd, "gpu-feature-discovery", "\n".join([
        "gpu-feature-discovery: 2022/03/13 12:09:51 Running gpu-feature-discovery in version v0.5.0",
        "gpu-feature-discovery: 2022/03/13 12:09:51 Loaded configuration:",
        "gpu-feature-discovery: 2022/03/13 12:09:51 Start running",
        f"gpu-feature-discovery: 2022/03/13 12:09:51 {frag}", ""]), previous=True)
    dp = "nvidia-device-plugin-daemonset-nrgmz"
    c.add(daemon_pod(dp, ns, node, "nvidia-device-plugin-daemonset", {"app": "nvidia-device-plugin-daemonset"},
                     "nvidia-device-plugin-ctr", dp_img, statuses=[crashloop("nvidia-device-plugin-ctr", dp_img, 29)],
                     env={"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}))
    c.add(obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "gpu-admission-webhook",
              labels={"app": "gpu-admission-webhook"}))
    return c


def operator_603_mig_invalid_until_reboot() -> Case:
    """MIG mode switched on but the change pends until the GPU is reset: no MIG devices exist,
    GFD (single strategy) labels the product -MIG-INVALID with count 0, and a whole-GPU pod
    reads it as a shortage."""
    frag = "NVIDIA-A100-80GB-PCIe-MIG-INVALID"
    node = "kind-worker"
    c = Case("gpu-operator-603-mig-enabled-no-instances-until-reboot",
             source="https://github.com/NVIDIA/gpu-operator/issues/603",
             fragment=frag,
             where="node label nvidia.com/gpu.product written by gpu-feature-discovery (with nvidia.com/gpu.count=0); "
                   "the pod's FailedScheduling event is its symptom",
             expect="mig-profile-unavailable", trap=True,
             must_not=["insufficient-gpu", "unknown-resource-name", "gpu-fragmentation"],
             resolution="Not a GPU shortage: MIG mode was switched on but the mode change only takes effect after "
                        "a GPU reset/reboot, so no MIG devices existed, GFD labelled the A100 -MIG-INVALID with "
                        "count 0 and the plugin advertised nothing; the reporter confirmed the MIG config state went "
                        "from failed to success after the reboot, and the MIG devices appeared.",
             target={"pod": "default/cuda-vectoradd"}, k8s="v1.27 (kind)",
             notes="GPU Operator v23.9.0, single strategy, one A100 PCIe 80GB in a kind node.")
    lab = {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.10gb",
           "nvidia.com/mig.config.state": "failed", "nvidia.com/mig.capable": "true",
           "nvidia.com/gpu.machine": "kind", "nvidia.com/gpu.family": "ampere",
           "nvidia.com/gpu.product": frag, "nvidia.com/gpu.count": "0", "nvidia.com/gpu.memory": "0",
           "nvidia.com/gpu.replicas": "0"}
    n = gpu_node(node, gpus=0, product=frag, labels=lab, kubelet="v1.27.3", driver="535.104.12", cuda="12.2",
                 cpu="32", memory="251Gi", extra_capacity={"nvidia.com/gpu": "0"})
    c.add(node_info(n, "v1.27.3", "Debian GNU/Linux 11 (bullseye)", "6.2.0-35-generic", "containerd://1.7.1"))
    c.add(node_info(cpu_node("kind-control-plane", kubelet="v1.27.3",
                             taints=[taint("node-role.kubernetes.io/control-plane")]),
                    "v1.27.3", "Debian GNU/Linux 11 (bullseye)", "6.2.0-35-generic", "containerd://1.7.1"))
    ns = "gpu-operator"
    c.add(daemon_pod("nvidia-device-plugin-daemonset-8vq4k", ns, node, "nvidia-device-plugin-daemonset",
                     {"app": "nvidia-device-plugin-daemonset"}, "nvidia-device-plugin",
                     "nvcr.io/nvidia/k8s-device-plugin:v0.14.2-ubi8"))
    mm = "nvidia-mig-manager-t7x5c"
    c.add(daemon_pod(mm, ns, node, "nvidia-mig-manager", {"app": "nvidia-mig-manager"}, "nvidia-mig-manager",
                     "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.5.4-ubuntu20.04"))
    c.log(ns, mm, "nvidia-mig-manager", "\n".join([
        'time="2023-10-26T09:12:40Z" level=info msg="Updating to MIG config: all-1g.10gb"',
        "Applying the MIG mode change from the selected config to the node (and double checking it took effect)",
        "If the -r option was passed, the node will be automatically rebooted if this is not successful",
        'time="2023-10-26T09:12:41Z" level=debug msg="    Current MIG mode: Disabled"',
        'time="2023-10-26T09:12:41Z" level=debug msg="    Updating MIG mode: Enabled"',
        'time="2023-10-26T09:12:43Z" level=debug msg="    Mode change pending: true"',
        'time="2023-10-26T09:12:43Z" level=debug msg="At least one mode change pending"',
        "Changing the 'nvidia.com/mig.config.state' node label to 'failed'", ""]))
    p = pod("cuda-vectoradd", "default",
            containers=[container("cuda-vectoradd", image="nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04",
                                  limits={"nvidia.com/gpu": "1"})],
            spec={"restartPolicy": "OnFailure"})
    pending(c, p, "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
                  "{node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: 1 No preemption "
                  "victims found for incoming pod, 1 Preemption is not helpful for scheduling..", count=14)
    return c


def operator_351_mig_profile_name_mismatch() -> Case:
    frag = "Unsupported MIG Device specified 7g.80gb, expected 7g.79gb instead"
    node = "g660018773"
    c = Case("gpu-operator-351-mig-manager-rejects-7g-80gb",
             source="https://github.com/NVIDIA/gpu-operator/issues/351",
             fragment=frag,
             where="log of the nvidia-mig-manager container on the node labelled nvidia.com/mig.config=all-7g.80gb; "
                   "the MIG workload's FailedScheduling event is its symptom",
             expect="mig-profile-unavailable",
             must_not=["unknown-resource-name", "insufficient-gpu", "device-plugin-not-running"],
             resolution="The MIG manager refused the stock all-7g.80gb layout because driver 510.47.03 reports the "
                        "full-GPU profile of the A100-SXM4-80GB as 7g.79gb, so mig.config.state went to failed and no "
                        "nvidia.com/mig-7g.80gb was advertised; a custom ConfigMap naming 7g.79gb applied fine (the "
                        "device still shows as 7g.80gb on the node).",
             target={"pod": "research/llm-train-0"}, k8s="v1.22",
             notes="GPU Operator v1.10.1, mixed strategy, 8x A100-SXM4-80GB. The layout change never happened, so "
                   "the node still exposes whole GPUs and the MIG-manager left no MIG resource.")
    lab = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-7g.80gb",
           "nvidia.com/mig.config.state": "failed", "nvidia.com/mig.capable": "true"}
    n = gpu_node(node, gpus=8, product="NVIDIA-A100-SXM4-80GB", labels=lab, kubelet="v1.22.9", driver="510.47.03",
                 cuda="11.6")
    c.add(node_info(n, "v1.22.9", "CentOS Linux 7 (Core)", "3.10.0-1160.62.1.el7.x86_64", "containerd://1.5.11"))
    ns = "gpu-operator"
    c.add(daemon_pod("nvidia-device-plugin-daemonset-4wz8m", ns, node, "nvidia-device-plugin-daemonset",
                     {"app": "nvidia-device-plugin-daemonset"}, "nvidia-device-plugin",
                     "nvcr.io/nvidia/k8s-device-plugin:v0.11.0-ubi8"))
    mm = "nvidia-mig-manager-zq9kd"
    c.add(daemon_pod(mm, ns, node, "nvidia-mig-manager", {"app": "nvidia-mig-manager"}, "nvidia-mig-manager",
                     "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.3.0-ubuntu20.04"))
    c.log(ns, mm, "nvidia-mig-manager", "\n".join([
        'time="2022-05-11T16:53:16Z" level=info msg="Updating to MIG config: all-7g.80gb"',
        "Getting current value of the 'nvidia.com/gpu.deploy.device-plugin' node label",
        "Current value of 'nvidia.com/gpu.deploy.device-plugin=true'",
        "Asserting that the requested configuration is present in the configuration file",
        'time="2022-05-11T16:53:16Z" level=debug msg="Parsing config file..."',
        'time="2022-05-11T16:53:16Z" level=debug msg="Selecting specific MIG config..."',
        f'time="2022-05-11T16:53:17Z" level=fatal msg="{frag}"',
        "Unable to validate the selected MIG configuration",
        "Restarting all GPU clients previouly shutdown by reenabling their component-specific nodeSelector labels",
        "Changing the 'nvidia.com/mig.config.state' node label to 'failed'", ""]))
    p = pod("llm-train-0", "research", owner=("StatefulSet", "llm-train"),
            containers=[container("trainer", image="nvcr.io/nvidia/pytorch:22.04-py3",
                                  limits={"nvidia.com/mig-7g.80gb": "1", "cpu": "8", "memory": "64Gi"})])
    pending(c, p, "0/1 nodes are available: 1 Insufficient nvidia.com/mig-7g.80gb.", count=8)
    return c


# ================================================================== time-slicing and MPS


def device_plugin_323_time_slicing_oom() -> Case:
    """Time-slicing gives no memory isolation: a neighbour on the same T4 holds the memory."""
    frag = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 14.76 GiB total capacity; "
            "4.37 GiB already allocated; 14.75 MiB free; 4.43 GiB reserved in total by PyTorch)")
    node = "gpu-t4-node-1"
    c = Case("k8s-device-plugin-323-time-slicing-neighbour-holds-memory",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/323",
             fragment=frag,
             where="log of the crash-looping application container (previous run)",
             expect="gpu-memory-exhausted", trap=True,
             must_not=["container-oom-killed", "xid-error", "gpu-unhealthy"],
             resolution="With time-slicing the replicas share one T4's 15 GiB with no memory isolation; the other "
                        "service on the same GPU holds about 9 GiB, so this one fails once it grows past what is "
                        "left (14.75 MiB free while it holds only 4.37 GiB). The maintainers' answer: time-slicing "
                        "does not partition memory; limit each application's memory use or use MIG.",
             target={"pod": "apps/question-answering-7c9f6d8b5-x4kzt"}, k8s="v1.24",
             notes="Trap: the reporter read it as the device plugin capping the app's GPU memory and asked how to "
                   "raise it; the message's own numbers (4.37 GiB held of 14.76, 14.75 MiB free) show another "
                   "process holds the rest. The second service (image recognition, about 9 GiB) is placed on the "
                   "same node and GPU.")
    lab = sharing_labels("time-slicing", 4, "Tesla-T4")
    c.add(gpu_node(node, gpus=4, product="Tesla-T4", labels=lab, kubelet="v1.24.2", driver="515.48.07",
                   cuda="11.7", cpu="8", memory="32Gi"))
    c.add(daemon_pod("nvidia-device-plugin-daemonset-r8d2k", "kube-system", node, "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr",
                     "nvcr.io/nvidia/k8s-device-plugin:v0.12.0"))
    name = "question-answering-7c9f6d8b5-x4kzt"
    img = "registry.example.com/haystack-qa:1.5.0-gpu"
    c.add(crashlooping(name, "apps", node, {"nvidia.com/gpu": "1"}, "qa", img, restarts=17,
                       owner=("ReplicaSet", "question-answering-7c9f6d8b5")))
    c.add(event("Pod", name, "apps", "BackOff", f"Back-off restarting failed container qa in pod "
                f"{name}_apps(uid-apps-{name})", count=40, source="kubelet"))
    c.log("apps", name, "qa", "\n".join([
        "INFO - haystack.modeling.utils -  Using devices: CUDA:0",
        "INFO - haystack.modeling.utils -  Number of GPUs: 1",
        "Traceback (most recent call last):",
        '  File "/app/serve.py", line 88, in answer',
        "    prediction = pipe.run(query=query, params={\"Retriever\": {\"top_k\": 10}})",
        frag, ""]), previous=True)
    other = pod("image-recognition-5d4b8f7c9-m7wq2", "apps", phase="Running", node=node,
                owner=("ReplicaSet", "image-recognition-5d4b8f7c9"),
                containers=[container("vision", image="registry.example.com/image-recognition:2.1.0-gpu",
                                      limits={"nvidia.com/gpu": "1"})])
    c.add(other)
    return c


def device_plugin_929_mps_request_over_one() -> Case:
    frag = "invalid request: maximum request size for shared resources is 1; found 10"
    msg = ('Pod was rejected: Allocate failed due to request for "nvidia.com/gpu": ' + frag + ", which is unexpected")
    node = "gpu-node-03"
    c = Case("k8s-device-plugin-929-mps-request-more-than-one-replica",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/929",
             fragment=frag,
             where="pod status message (reason UnexpectedAdmissionError) and the kubelet's UnexpectedAdmissionError "
                   "event",
             expect="unexpected-admission-error",
             also_ok={"sharing-resource-mismatch": "its runbook lists exactly this admission failure of a shared "
                                                   "resource requested above 1"},
             must_not=["gpu-unhealthy", "insufficient-gpu", "unknown-resource-name"],
             resolution="The node shares its GPUs with MPS (replicas: 10) and the pod asked for 10 nvidia.com/gpu "
                        "to get a whole GPU. With MPS the plugin always fails requests above 1 "
                        "(failRequestsGreaterThanOne is forced true), so the kubelet rejects the pod at admission; "
                        "request 1 shared replica, or run whole-GPU pods on nodes without sharing.",
             target={"pod": "ml/trainer-0"}, k8s="v1.28")
    lab = sharing_labels("mps", 10, "NVIDIA-A100-SXM4-80GB")
    c.add(gpu_node(node, gpus=80, product="NVIDIA-A100-SXM4-80GB", labels={**lab, "nvidia.com/gpu.count": "8"},
                   kubelet="v1.28.9", driver="550.54.15", cuda="12.4"))
    ns = "gpu-operator"
    c.add(daemon_pod("nvidia-device-plugin-daemonset-x2c9v", ns, node, "nvidia-device-plugin-daemonset",
                     {"app": "nvidia-device-plugin-daemonset"}, "nvidia-device-plugin",
                     "nvcr.io/nvidia/k8s-device-plugin:v0.16.1-ubi8"))
    c.add(daemon_pod("nvidia-device-plugin-mps-control-daemon-l5m8t", ns, node,
                     "nvidia-device-plugin-mps-control-daemon", {"app": "nvidia-device-plugin-mps-control-daemon"},
                     "mps-control-daemon-ctr", "nvcr.io/nvidia/k8s-device-plugin:v0.16.1-ubi8"))
    c.add(rejected("trainer-0", "ml", node, {"nvidia.com/gpu": "10"}, msg, image="nvcr.io/nvidia/pytorch:24.07-py3",
                   owner=("StatefulSet", "trainer")))
    c.add(event("Pod", "trainer-0", "ml", "UnexpectedAdmissionError",
                'Allocate failed due to request for "nvidia.com/gpu": ' + frag + ", which is unexpected",
                source="kubelet"))
    c.add(event("Pod", "trainer-0", "ml", "Scheduled", f"Successfully assigned ml/trainer-0 to {node}",
                type_="Normal", at=T_FAIL))
    return c


def gke_timesharing_request_over_one() -> Case:
    frag = "at most 1 nvidia.com/gpu can be requested on GPU nodes"
    msg = ("Pod Allocate failed due to rpc error: code = Unknown desc = [invalid request for sharing GPU "
           "(time-sharing), at most 1 nvidia.com/gpu can be requested on GPU nodes], which is unexpected")
    node = "gke-ml-pool-ts-l4-4f2a9c1d-7xq2"
    c = Case("gke-docs-timesharing-gpus-at-most-one-gpu",
             source="https://cloud.google.com/kubernetes-engine/docs/concepts/timesharing-gpus?authuser=8&hl=zh-cn",
             fragment=frag,
             where="pod status message (phase Failed, reason UnexpectedAdmissionError)",
             expect="unexpected-admission-error",
             also_ok={"sharing-resource-mismatch": "the request does not fit the node's sharing mode (a time-shared "
                                                   "GPU serves at most 1 per container)"},
             must_not=["gpu-unhealthy", "insufficient-gpu", "unknown-resource-name"],
             resolution="GKE's documentation: on time-sharing GPU nodes a container can request at most one "
                        "nvidia.com/gpu; a larger request is refused by the GKE device plugin at admission with this "
                        "status. Request 1, or use a node pool without time-sharing for multi-GPU containers.",
             target={"pod": "default/multi-gpu-job-8xk2p"}, k8s="v1.30 (GKE)")
    n = gpu_node(node, gpus=0, gfd=False, kubelet="v1.30.5-gke.1014001", cpu="24", memory="96Gi",
                 labels={"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-accelerator-count": "2",
                         "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
                         "cloud.google.com/gke-max-shared-clients-per-gpu": "3",
                         "cloud.google.com/gke-nodepool": "ml-pool-ts",
                         "node.kubernetes.io/instance-type": "g2-standard-24"},
                 extra_capacity={"nvidia.com/gpu": "6"}, taints=[taint("nvidia.com/gpu", "present")])
    c.add(node_info(n, "v1.30.5-gke.1014001", "Container-Optimized OS from Google", "6.1.100+"))
    c.add(daemon_pod("nvidia-gpu-device-plugin-small-cos-9qz7d", "kube-system", node,
                     "nvidia-gpu-device-plugin-small-cos", {"k8s-app": "nvidia-gpu-device-plugin"},
                     "nvidia-gpu-device-plugin", "gke.gcr.io/nvidia-gpu-device-plugin@sha256:4d5c"))
    p = rejected("multi-gpu-job-8xk2p", "default", node, {"nvidia.com/gpu": "2"}, msg,
                 image="nvidia/cuda:12.2.0-runtime-ubuntu22.04", owner=("Job", "multi-gpu-job"))
    p["spec"]["tolerations"].append({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
    p["spec"]["nodeSelector"] = {"cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
                                 "cloud.google.com/gke-max-shared-clients-per-gpu": "3"}
    c.add(p, event("Pod", "multi-gpu-job-8xk2p", "default", "UnexpectedAdmissionError",
                   msg.replace("Pod Allocate", "Allocate"), source="kubelet"))
    return c


def device_plugin_634_mps_daemon_not_deployed() -> Case:
    frag = "error checking MPS daemon health"
    node = "gpu-worker-1"
    ns = "kube-system"
    img = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0-rc.2"
    c = Case("k8s-device-plugin-634-mps-control-daemon-not-deployed",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/634",
             fragment=frag,
             where="log of the device-plugin container on the GPU node (it retries every 30s and serves nothing); "
                   "the workload's FailedScheduling event is its symptom",
             expect="device-plugin-not-running",
             must_not=["unknown-resource-name", "insufficient-gpu", "gpu-memory-exhausted"],
             resolution="The plugin was configured for MPS sharing but deployed without the MPS control-daemon "
                        "DaemonSet (and GFD) that the Helm chart adds; with no MPS daemon to check, the plugin never "
                        "starts and the node advertises no GPU. A maintainer (elezar): MPS in the device plugin needs "
                        "GFD and the extra component that manages the MPS control daemon; deploy with Helm.",
             target={"pod": "default/gpu-pod"}, k8s="v1.28",
             notes="The thread's logs are screenshots; the title carries the message. The log lines around it are "
                   "the v0.15 plugin's wording for this failure.")
    c.add(gpu_node(node, gpus=0, product="NVIDIA-A10", gfd=False, kubelet="v1.28.8",
                   labels={"nvidia.com/gpu.present": "true", "nvidia.com/device-plugin.config": "mps-config"},
                   extra_capacity={"nvidia.com/gpu": "0"}))
    c.add(cpu_node("master-1", kubelet="v1.28.8", taints=[taint("node-role.kubernetes.io/control-plane")]))
    dp = "nvidia-device-plugin-daemonset-9fx2w"
    c.add(daemon_pod(dp, ns, node, "nvidia-device-plugin-daemonset", {"name": "nvidia-device-plugin-ds"},
                     "nvidia-device-plugin-ctr", img, statuses=[running("nvidia-device-plugin-ctr", image=img)]))
    c.log(ns, dp, "nvidia-device-plugin-ctr", "\n".join([
        "I0411 06:04:56.479370       1 main.go:279] Retrieving plugins.",
        "I0411 06:04:56.480927       1 factory.go:104] Detected NVML platform: found NVML library",
        "I0411 06:04:56.480999       1 factory.go:104] Detected non-Tegra platform: /sys/devices/soc0/family file not found",
        f"E0411 06:04:56.558122       1 main.go:301] Failed to start plugin: error waiting for MPS daemon: {frag}: "
        "failed to send command to MPS daemon: exit status 1",
        "I0411 06:04:56.558152       1 main.go:208] Failed to start one or more plugins. Retrying in 30s...",
        "I0411 06:05:26.587365       1 main.go:315] Stopping plugins.",
        "I0411 06:05:26.587496       1 main.go:200] Starting Plugins.",
        f"E0411 06:05:26.661845       1 main.go:301] Failed to start plugin: error waiting for MPS daemon: {frag}: "
        "failed to send command to MPS daemon: exit status 1",
        "I0411 06:05:26.661870       1 main.go:208] Failed to start one or more plugins. Retrying in 30s...", ""]))
    p = pod("gpu-pod", "default",
            containers=[container("cuda-container", image="nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1",
                                  limits={"nvidia.com/gpu": "1"})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    pending(c, p, "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
                  "{node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: 1 No preemption "
                  "victims found for incoming pod, 1 Preemption is not helpful for scheduling.", count=21)
    return c


# ================================================================== DRA


def dra_338_deviceclass_missing() -> Case:
    frag = "request gpu: device class gpu.nvidia.com does not exist"
    msg = ("0/2 nodes are available: request gpu: device class gpu.nvidia.com does not exist. no new claims to "
           "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    c = Case("dra-driver-nvidia-gpu-338-gpu-deviceclass-not-installed",
             source="https://github.com/kubernetes-sigs/dra-driver-nvidia-gpu/issues/338",
             fragment=frag,
             where="FailedScheduling event and PodScheduled condition of the pod",
             expect="dra-claim-unallocatable",
             must_not=["unknown-resource-name", "insufficient-gpu", "device-plugin-not-running"],
             resolution="The ResourceClaimTemplate asks for DeviceClass gpu.nvidia.com, but the driver was "
                        "installed with only its ComputeDomain part (resources.gpus disabled), so the cluster has only "
                        "compute-domain-daemon.nvidia.com and compute-domain-default-channel.nvidia.com and no GPU "
                        "ResourceSlices; the reporter names the class mismatch, and the thread's later comments show "
                        "the same state with resources.gpus.enabled=false.",
             target={"pod": "gpu-test1/gpu-pod"}, k8s="v1.32 (EKS)")
    kubelet = "v1.32.3-eks-473151a"
    for i, name in enumerate(("ip-10-1-12-34.us-west-2.compute.internal", "ip-10-1-45-67.us-west-2.compute.internal")):
        n = gpu_node(name, gpus=0, gfd=True, product="NVIDIA-A10G", kubelet=kubelet, driver="570.133.20", cuda="12.8",
                     cpu="32", memory="128Gi", taints=[taint("nvidia.com/gpu", "true")],
                     labels={"node.kubernetes.io/instance-type": "g5.8xlarge", "nvidia.com/gpu.count": "1"})
        c.add(node_info(n, kubelet, "Amazon Linux 2023.7.20250414", "6.1.132-147.221.amzn2023.x86_64"))
        c.add(obj("resource.k8s.io/v1beta1", "ResourceSlice", f"{name.split('.')[0]}-compute-domain.nvidia.com-z9c{i}",
                  spec={"driver": "compute-domain.nvidia.com", "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "channel-0", "basic": {"attributes": {"type": {"string": "channel"}}}},
                                    {"name": "daemon-0", "basic": {"attributes": {"type": {"string": "daemon"}}}}]}))
        c.add(daemon_pod(f"nvidia-dra-driver-gpu-kubelet-plugin-{'ab'[i]}7x2q", "nvidia-dra-driver-gpu", name,
                         "nvidia-dra-driver-gpu-kubelet-plugin", {"app.kubernetes.io/name": "nvidia-dra-driver-gpu"},
                         "compute-domains", "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.0-rc.2"))
    for dc in ("compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"):
        kind = dc.split(".")[0].replace("compute-domain-", "")
        c.add(obj("resource.k8s.io/v1beta1", "DeviceClass", dc,
                  spec={"selectors": [{"cel": {"expression": "device.driver == 'compute-domain.nvidia.com' && "
                                                             f"device.attributes['compute-domain.nvidia.com'].type == "
                                                             f"'{'daemon' if kind == 'daemon' else 'channel'}'"}}]}))
    tmpl_spec = {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}}
    c.add(obj("resource.k8s.io/v1beta1", "ResourceClaimTemplate", "single-gpu", "gpu-test1", spec=tmpl_spec))
    claim = "gpu-pod-gpu0-5xq8d"
    c.add(obj("resource.k8s.io/v1beta1", "ResourceClaim", claim, "gpu-test1", spec=tmpl_spec["spec"], status={},
              annotations={"resource.kubernetes.io/pod-claim-name": "gpu0"}, owner=("v1", "Pod", "gpu-pod")))
    p = pod("gpu-pod", "gpu-test1", labels={"app": "pod"},
            containers=[container("ctr0", image="ubuntu:22.04",
                                  command=["bash", "-c"])],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            spec={"resourceClaims": [{"name": "gpu0", "resourceClaimTemplateName": "single-gpu"}]})
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu0"}]
    p["status"]["resourceClaimStatuses"] = [{"name": "gpu0", "resourceClaimName": claim}]
    pending(c, p, msg, count=19)
    return c


# ================================================================== requests the node cannot combine


def device_plugin_71_two_containers_two_gpus() -> Case:
    frag = "Insufficient nvidia.com/gpu"
    node = "gpu-node-01"
    c = Case("k8s-device-plugin-71-two-gpu-containers-need-two-gpus",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/71",
             fragment=frag,
             where="FailedScheduling event and PodScheduled condition of the pod",
             expect="insufficient-gpu",
             must_not=["unknown-resource-name", "device-plugin-not-running", "gpu-fragmentation"],
             resolution="Two containers each limit nvidia.com/gpu: 1, so the pod asks for 2 GPUs in total and the "
                        "only GPU node has one; a maintainer (flx42): \"Your pod is effectively requesting 2 GPUs. "
                        "GPUs are assigned per-container, and are not shared.\"",
             target={"pod": "kube-system/gpu-pod"}, k8s="v1.11",
             notes="The thread gives the pod spec (tolerates nvidia.com/gpu=true, requires the node label "
                   "nvidia.com/gpu=true); the node count and the message's other clauses are the cluster that "
                   "agrees with it.")
    c.add(gpu_node(node, gpus=1, product="Tesla-V100-SXM2-16GB", gfd=False, kubelet="v1.11.2",
                   labels={"nvidia.com/gpu": "true"}, taints=[taint("nvidia.com/gpu", "true")]))
    c.add(cpu_node("worker-01", kubelet="v1.11.2"), cpu_node("worker-02", kubelet="v1.11.2"))
    c.add(daemon_pod("nvidia-device-plugin-daemonset-2xk7s", "kube-system", node, "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr", "nvidia/k8s-device-plugin:1.11"))
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu", "operator": "In", "values": ["true"]}]}]}}}
    p = pod("gpu-pod", "kube-system",
            containers=[container("cuda-container", image="nvidia/cuda:9.0-devel", limits={"nvidia.com/gpu": "1"}),
                        container("digits-container", image="nvidia/digits:6.0", limits={"nvidia.com/gpu": "1"})],
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            affinity=aff)
    pending(c, p, f"0/3 nodes are available: 1 {frag}, 2 node(s) didn't match node selector.", count=9)
    return c


CASES = [toolkit_1740_mixed_mig_plugin_caps, operator_322_webhook_strips_gfd_permissions,
         operator_603_mig_invalid_until_reboot, operator_351_mig_profile_name_mismatch,
         device_plugin_323_time_slicing_oom, device_plugin_929_mps_request_over_one,
         gke_timesharing_request_over_one, device_plugin_634_mps_daemon_not_deployed, dra_338_deviceclass_missing,
         device_plugin_71_two_containers_two_gpus]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
