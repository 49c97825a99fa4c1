"""Real-world cloud cases (issue 14): GPU node pools on GKE, EKS and AKS whose driver or
device plugin never came up, GPU pools the autoscaler (Cluster Autoscaler, GKE node
auto-provisioning, Karpenter) would not or could not grow (cloud quota, backoff after a
failed scale-up, NodePool limits), and the taints providers put on GPU nodes. Run
``python tests/realworld/build_cloud.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (NOW, Case, container, event, gpu_node, pod, running, taint, waiting, bound, pending, plain_node)  # noqa: E402
T_START = "2026-11-19T09:00:00Z"

# ------------------------------------------------------------------ local helpers


def zoned(node: dict, zone: str) -> dict:
    lab = node["metadata"]["labels"]
    lab["topology.kubernetes.io/zone"] = zone
    lab["topology.kubernetes.io/region"] = zone.rsplit("-", 1)[0]
    return node


def daemon_pod(name: str, namespace: str, node: str, ds: str, labels: dict, ctr: str, image: str,
               statuses: Optional[list] = None, init: Optional[list] = None, init_statuses: Optional[list] = None,
               phase: str = "Running") -> dict:
    """A DaemonSet pod (device plugin, driver installer) bound to ``node``."""
    c = container(ctr, image=image)
    inits = [container(n, image=i) for n, i in (init or [])]
    return pod(name, namespace, phase=phase, node=node, containers=[c], init_containers=inits or None, labels=labels,
               owner=("DaemonSet", ds), statuses=statuses, init_statuses=init_statuses,
               tolerations=[{"operator": "Exists"}])


def autoscaler_said(c: Case, ns: str, name: str, reason: str, message: str, count: int = 1, at: str = NOW,
                    type_: str = "Normal", source: str = "cluster-autoscaler") -> None:
    c.add(event("Pod", name, ns, reason, message, type_=type_, count=count, source=source, at=at))


def gke_node(name: str, kubelet: str, pool: str, machine: str, accel: Optional[str] = None,
             cpu: str = "4", memory: str = "15Gi", os_image: str = "Container-Optimized OS from Google",
             kernel: str = "5.15.120+", runtime: str = "containerd://1.7.10", extra: Optional[dict] = None) -> dict:
    lab = {"cloud.google.com/gke-nodepool": pool, "cloud.google.com/gke-os-distribution": "cos",
           "node.kubernetes.io/instance-type": machine, **(extra or {})}
    taints = []
    if accel:
        lab["cloud.google.com/gke-accelerator"] = accel
        taints = [taint("nvidia.com/gpu", "present")]
    return plain_node(name, kubelet, labels=lab, taints=taints, cpu=cpu, memory=memory, os_image=os_image,
                      kernel=kernel, runtime=runtime)


GPU_TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


# ================================================================== capability 1:
# GPU node pools whose driver or device plugin never came up


def cos_installer_crashloop() -> Case:
    """GKE 1.13: the driver-installer DaemonSet's init container crash-loops; the pool shows 0 GPUs."""
    frag = ("Back-off 20s restarting failed container=nvidia-driver-installer pod=nvidia-driver-installer-z7ht8_"
            "kube-system(b362cd39-f621-11e9-8e02-42010a8000d2)")
    c = Case("cos-gpu-installer-45-driver-installer-init-crashloop",
             source="https://github.com/GoogleCloudPlatform/cos-gpu-installer/issues/45",
             fragment=frag,
             where="BackOff event from the kubelet on the nvidia-driver-installer pod (kube-system); shown on the "
                   "GKE console's Init containers section",
             expect="device-plugin-not-running",
             must_not=["unknown-resource-name", "insufficient-gpu"],
             resolution="The nvidia-driver-installer init container failed with 'permission denied' and "
                        "crash-looped, so no driver was installed and the GPU pool's capacity stayed at zero. The GKE "
                        "maintainer traced it to a change in the nvidia-driver-installer DaemonSet's mounts (a "
                        "regression on the Google side), not to the user's cluster. The node has its T4 but "
                        "advertises no nvidia.com/gpu.",
             target={"node": "gke-gpu-cluster-gpu-pool-3c1b5f2a-7q9d"}, k8s="v1.13.10-gke.0 (Oct 2019)",
             notes="One GPU node (the pool created by the 'GPU Accelerated Computing' template) and its "
                   "driver-installer pod; GKE's own device plugin pod waits for the driver. The event's "
                   "CrashLoopBackOff suffix in the thread is the console's rendering; the kubelet event text is "
                   "'Back-off 20s restarting failed container=... pod=...'.")
    kubelet = "v1.13.10-gke.0"
    for i in range(2):
        c.add(zoned(gke_node(f"gke-gpu-cluster-default-pool-9a2e4d71-{'ab'[i]}k2{i}", kubelet, "default-pool",
                             "n1-standard-4", kernel="4.14.138+", runtime="docker://18.9.7"), "us-central1-f"))
    node = "gke-gpu-cluster-gpu-pool-3c1b5f2a-7q9d"
    c.add(zoned(gke_node(node, kubelet, "gpu-pool", "n1-standard-8", accel="nvidia-tesla-t4", cpu="8", memory="30Gi",
                         kernel="4.14.138+", runtime="docker://18.9.7"), "us-central1-f"))
    inst = "gcr.io/cos-cloud/cos-gpu-installer@sha256:8d86a652759f80595cafed7d3dcde3dc53f57f9bc1e33b27bc3cfa7afea8d483"
    c.add(daemon_pod("nvidia-driver-installer-z7ht8", "kube-system", node, "nvidia-driver-installer",
                     {"k8s-app": "nvidia-driver-installer", "name": "nvidia-driver-installer"}, "pause",
                     "gcr.io/google-containers/pause:2.0", phase="Pending",
                     init=[("nvidia-driver-installer", inst)],
                     init_statuses=[waiting("nvidia-driver-installer", "CrashLoopBackOff",
                                            "back-off 20s restarting failed container=nvidia-driver-installer "
                                            "pod=nvidia-driver-installer-z7ht8_kube-system(b362cd39-f621-11e9-8e02-"
                                            "42010a8000d2)", restarts=4, image=inst,
                                            last_exit={"reason": "Error", "exitCode": 1})],
                     statuses=[{"name": "pause", "ready": False, "restartCount": 0,
                                "image": "gcr.io/google-containers/pause:2.0",
                                "state": {"waiting": {"reason": "PodInitializing"}}}]))
    c.add(event("Pod", "nvidia-driver-installer-z7ht8", "kube-system", "BackOff", frag, count=9, source="kubelet"))
    c.add(daemon_pod("nvidia-gpu-device-plugin-8xk2m", "kube-system", node, "nvidia-gpu-device-plugin",
                     {"k8s-app": "nvidia-gpu-device-plugin"}, "nvidia-gpu-device-plugin",
                     "k8s.gcr.io/nvidia-gpu-device-plugin@sha256:"
                     "4b036e8844920336fa48f36edeb7d4398f426d6a934ba022848deed2edbf09aa",
                     statuses=[running("nvidia-gpu-device-plugin", ready=True,
                                       image="k8s.gcr.io/nvidia-gpu-device-plugin")]))
    return c


def eks_g7_proprietary_kmod() -> Case:
    """EKS AL2023 NVIDIA AMI on g7: the proprietary kmod is loaded for a GPU only the open kmod supports."""
    msg = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s). "
           "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
           "2 Preemption is not helpful for scheduling.")
    c = Case("amazon-eks-ami-2768-g7-proprietary-kmod-no-gpus",
             source="https://github.com/awslabs/amazon-eks-ami/issues/2768",
             fragment="Insufficient nvidia.com/gpu",
             where="pod status condition PodScheduled and FailedScheduling event of the GPU pod",
             expect="device-plugin-not-running", trap=True,
             must_not=["unknown-resource-name", "insufficient-gpu", "untolerated-taint"],
             resolution="On g7 instances the AMI's nvidia-kmod-load.sh loads the proprietary NVIDIA kernel module "
                        "because the GPU's PCI ID (10de:2c3a) is missing from the open-module supported-devices "
                        "list; the Blackwell GPU needs the open module, so the driver never initialises, the device "
                        "plugin registers 0 GPUs and the node never advertises nvidia.com/gpu. 'Insufficient "
                        "nvidia.com/gpu' is the symptom; the fix is the AMI's device list (reporter's root-cause "
                        "analysis, issue closed).",
             target={"pod": "inference/vllm-7f9c8d6b5-q2wxl"}, k8s="v1.36 (EKS, AL2023 NVIDIA AMI v20260709)",
             notes="Karpenter launched the g7 node (its karpenter.k8s.aws instance-gpu labels say one NVIDIA GPU). "
                   "The scheduler message is the 1.36 wording for this cluster (the thread quotes only "
                   "'Insufficient nvidia.com/gpu'); the plugin log is the plugin's wording for a node whose driver "
                   "sees no device (constructed, not from the thread).")
    kubelet = "v1.36.1-eks-3025e55"
    for i in range(2):
        c.add(plain_node(f"ip-10-0-{10 + i}-21.ec2.internal", kubelet, cpu="8", memory="32Gi",
                         labels={"karpenter.sh/nodepool": "system", "node.kubernetes.io/instance-type": "m7i.2xlarge",
                                 "karpenter.sh/capacity-type": "on-demand"},
                         taints=[taint("CriticalAddonsOnly", "true")],
                         os_image="Amazon Linux 2023.8.20260707", kernel="6.12.33-45.114.amzn2023.x86_64"))
    node = "ip-10-0-42-117.ec2.internal"
    c.add(plain_node(node, kubelet, cpu="8", memory="64Gi",
                     labels={"karpenter.sh/nodepool": "gpu", "karpenter.sh/nodeclaim": "gpu-r8m2x",
                             "karpenter.sh/capacity-type": "on-demand",
                             "node.kubernetes.io/instance-type": "g7.2xlarge",
                             "karpenter.k8s.aws/instance-family": "g7",
                             "karpenter.k8s.aws/instance-gpu-count": "1",
                             "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
                             "karpenter.k8s.aws/instance-gpu-name": "rtx-pro-4500"},
                     taints=[taint("nvidia.com/gpu", effect="NoSchedule")],
                     os_image="Amazon Linux 2023.8.20260707", kernel="6.12.33-45.114.amzn2023.x86_64"))
    plug = "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"
    dp = daemon_pod("nvidia-device-plugin-5m7qk", "kube-system", node, "nvidia-device-plugin",
                    {"app.kubernetes.io/name": "nvidia-device-plugin"}, "nvidia-device-plugin-ctr", plug,
                    statuses=[running("nvidia-device-plugin-ctr", image=plug)])
    c.add(dp)
    c.log("kube-system", "nvidia-device-plugin-5m7qk", "nvidia-device-plugin-ctr",
          'I0716 08:12:03.114021       1 main.go:356] Retrieving plugins.\n'
          'I0716 08:12:03.171530       1 server.go:168] No devices found. Waiting indefinitely.\n')
    p = pod("vllm-7f9c8d6b5-q2wxl", "inference", owner=("ReplicaSet", "vllm-7f9c8d6b5"), labels={"app": "vllm"},
            containers=[container("vllm", image="vllm/vllm-openai:v0.11.0", gpus=1,
                                  requests={"cpu": "4", "memory": "24Gi"})],
            tolerations=GPU_TOL)
    pending(c, p, msg, count=31)
    c.add(event("Pod", "vllm-7f9c8d6b5-q2wxl", "inference", "Nominated",
                f"Pod should schedule on: nodeclaim/gpu-r8m2x, node/{node}", type_="Normal", source="karpenter",
                at="2026-11-19T09:05:00Z"))
    return c


def eks_1697_nvml_not_loaded() -> Case:
    """EKS GPU AMI release that loaded the wrong NVIDIA kernel module: the plugin finds no NVML."""
    frag = ("Detected non-NVML platform: could not load NVML library: libnvidia-ml.so.1: cannot open shared object "
            "file: No such file or directory")
    c = Case("amazon-eks-ami-1697-wrong-kmod-plugin-no-nvml",
             source="https://github.com/awslabs/amazon-eks-ami/issues/1697",
             fragment=frag,
             where="log of the nvidia-device-plugin-ctr container (kube-system) on the g4dn node",
             expect="nvml-init-failed",
             also_ok={"device-plugin-not-running": "the same node advertises no nvidia.com/gpu because the plugin "
                                                   "crash-loops; naming the plugin is right, only less deep"},
             must_not=["unknown-resource-name", "insufficient-gpu"],
             resolution="The amazon-eks-gpu-node-1.29 AMI releases of late Feb / early Mar 2024 loaded the wrong "
                        "NVIDIA kernel module for some instance types, so the driver never came up; nvidia-smi could "
                        "not talk to the driver and the device plugin, finding no NVML, exited ('Incompatible "
                        "platform detected'). The plugin's hint about the container toolkit is beside the point: the "
                        "AMI was fixed in a later release (maintainers retitled the issue to the kernel-module cause).",
             target={"node": "ip-10-20-40-96.us-east-2.compute.internal"},
             k8s="v1.29 (EKS, amazon-eks-gpu-node-1.29-v20240307)",
             notes="k8s-device-plugin v0.14.5 with failOnInitError=true on a g4dn.2xlarge, as in the thread's "
                   "comment; the first four plugin log lines are the thread's, the last two are the same plugin "
                   "build's next lines as quoted in amazon-eks-ami#1618.")
    kubelet = "v1.29.0-eks-5e0fdde"
    node = "ip-10-20-40-96.us-east-2.compute.internal"
    c.add(plain_node("ip-10-20-12-5.us-east-2.compute.internal", kubelet, cpu="4", memory="16Gi",
                     labels={"eks.amazonaws.com/nodegroup": "core", "node.kubernetes.io/instance-type": "m5.xlarge"},
                     os_image="Amazon Linux 2", kernel="5.10.209-198.858.amzn2.x86_64",
                     runtime="containerd://1.7.11"))
    c.add(plain_node(node, kubelet, cpu="8", memory="32Gi",
                     labels={"eks.amazonaws.com/nodegroup": "gpu", "node.kubernetes.io/instance-type": "g4dn.2xlarge",
                             "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"},
                     os_image="Amazon Linux 2", kernel="5.10.209-198.858.amzn2.x86_64",
                     runtime="containerd://1.7.11"))
    plug = "nvcr.io/nvidia/k8s-device-plugin:v0.14.5"
    c.add(daemon_pod("nvidia-device-plugin-daemonset-7vq9d", "kube-system", node, "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr", plug,
                     statuses=[waiting("nvidia-device-plugin-ctr", "CrashLoopBackOff",
                                       "back-off 5m0s restarting failed container=nvidia-device-plugin-ctr "
                                       "pod=nvidia-device-plugin-daemonset-7vq9d_kube-system(3f1e2a4b-8c7d-4e5f-"
                                       "9a0b-1c2d3e4f5a6b)", restarts=38, image=plug,
                                       last_exit={"reason": "Error", "exitCode": 1})]))
    c.log("kube-system", "nvidia-device-plugin-daemonset-7vq9d", "nvidia-device-plugin-ctr",
          "I0314 17:11:50.667852       1 main.go:256] Retreiving plugins.\n"
          "W0314 17:11:50.668199       1 factory.go:31] No valid resources detected, creating a null CDI handler\n"
          "I0314 17:11:50.668243       1 factory.go:107] Detected non-NVML platform: could not load NVML library: "
          "libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"
          "I0314 17:11:50.668272       1 factory.go:107] Detected non-Tegra platform: /sys/devices/soc0/family file "
          "not found\n"
          "E0314 17:11:50.668282       1 factory.go:115] Incompatible platform detected\n"
          "E0314 17:11:50.668287       1 factory.go:116] If this is a GPU node, did you configure the NVIDIA "
          "Container Toolkit?\n", previous=True)
    p = pod("cuda-infer-0", "ml", owner=("StatefulSet", "cuda-infer"),
            containers=[container("infer", image="nvcr.io/nvidia/tritonserver:24.02-py3", gpus=1)])
    pending(c, p, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
                  "2 No preemption victims found for incoming pod.", count=14)
    return c


def gke_plugin_hostpath_not_a_directory() -> Case:
    """GKE: the device plugin pod cannot mount the driver's install dir, which nothing has created."""
    frag = ('MountVolume.SetUp failed for volume "nvidia" : hostPath type check failed: /home/kubernetes/bin/nvidia '
            'is not a directory')
    c = Case("container-engine-accelerators-213-plugin-hostpath-driver-dir-missing",
             source="https://github.com/GoogleCloudPlatform/container-engine-accelerators/pull/213",
             fragment=frag,
             where="FailedMount event from the kubelet on the nvidia-gpu-device-plugin pod (kube-system), which stays "
                   "ContainerCreating",
             expect="device-plugin-not-running", trap=True,
             must_not=["volume-binding", "unknown-resource-name"],
             resolution="On a new GKE cluster with GPUs the nvidia-gpu-device-plugin DaemonSet pods stay "
                        "ContainerCreating: their hostPath volume expects /home/kubernetes/bin/nvidia, the directory "
                        "the NVIDIA driver installation creates, and it does not exist on the fresh node. The PR "
                        "(approved by a maintainer) makes the plugin create it when missing. The mount error is not a "
                        "storage problem: the plugin never starts, so the node never advertises nvidia.com/gpu and "
                        "GPU pods stay Pending.",
             target={"pod": "default/cuda-test-7c9d8b6f5-2xkpl"}, k8s="v1.21 (GKE, Jan 2022)",
             notes="One GPU node (T4) and two CPU nodes; the GPU pod's scheduler message is the 1.21 wording for "
                   "this cluster (constructed), the FailedMount event is the PR's text.")
    kubelet = "v1.21.6-gke.1500"
    for i in range(2):
        c.add(zoned(gke_node(f"gke-ml-default-pool-4b2c9e1d-{'fg'[i]}h3{i}", kubelet, "default-pool", "e2-standard-4",
                             cpu="4", memory="16Gi", kernel="5.4.144+"), "us-central1-a"))
    node = "gke-ml-gpu-pool-1a7e3f9c-w2zr"
    c.add(zoned(gke_node(node, kubelet, "gpu-pool", "n1-standard-8", accel="nvidia-tesla-t4", cpu="8", memory="30Gi",
                         kernel="5.4.144+"), "us-central1-a"))
    plug = "k8s.gcr.io/nvidia-gpu-device-plugin@sha256:4b036e8844920336fa48f36edeb7d4398f426d6a934ba022848deed2edbf09aa"
    name = "nvidia-gpu-device-plugin-6w7k5"
    c.add(daemon_pod(name, "kube-system", node, "nvidia-gpu-device-plugin", {"k8s-app": "nvidia-gpu-device-plugin"},
                     "nvidia-gpu-device-plugin", plug, phase="Pending",
                     statuses=[{"name": "nvidia-gpu-device-plugin", "ready": False, "restartCount": 0, "image": plug,
                                "state": {"waiting": {"reason": "ContainerCreating"}}}]))
    c.add(event("Pod", name, "kube-system", "FailedMount", frag, count=15, source="kubelet"))
    c.add(event("Pod", name, "kube-system", "FailedMount",
                "Unable to attach or mount volumes: unmounted volumes=[nvidia], unattached volumes=[device-plugin dev "
                "nvidia pod-resources kube-api-access-8xq2n]: timed out waiting for the condition", count=6,
                source="kubelet"))
    p = pod("cuda-test-7c9d8b6f5-2xkpl", "default", owner=("ReplicaSet", "cuda-test-7c9d8b6f5"), tolerations=GPU_TOL,
            containers=[container("cuda", image="nvidia/cuda:11.4.2-base-ubuntu20.04", gpus=1)])
    pending(c, p, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", count=20)
    return c


def aks_5871_grid_driver_library_mismatch() -> Case:
    """AKS NV-series A10 vGPU node image: GRID kernel module 570 with 580 userspace libraries."""
    frag = ('failed to create the automatic CDI modifier: failed to generate CDI spec for mode "auto": failed to '
            'construct device spec generators: failed to initialize NVML: Driver/library version mismatch')
    msg = ('failed to create containerd task: failed to create shim task: OCI runtime create failed: could not apply '
           'required modification to OCI specification: error modifying OCI spec: ' + frag)
    c = Case("aks-5871-nv-a10-grid-driver-library-mismatch",
             source="https://github.com/Azure/AKS/issues/5871",
             fragment=frag,
             where="the GPU container's lastState.terminated message (StartError) and the kubelet's Failed event",
             expect="nvidia-runtime-error",
             also_ok={"nvml-init-failed": "the same mismatch keeps the node's device plugin from initialising NVML; "
                                          "a finding on the plugin names the same node-side driver fault"},
             must_not=["driver-cuda-mismatch", "gpu-not-requested", "image-pull-failed"],
             resolution="The AKS node image provisioned Standard_NV36ads_A10_v5 (A10 vGPU) nodes with a stale "
                        "aks-gpu-grid installer: the loaded GRID kernel module is 570.211.01 while the userspace "
                        "libraries are 580.159, so NVML fails with a driver/library version mismatch and the toolkit "
                        "cannot start GPU containers. The reporter traced it in cluster-provision.log; closed as a "
                        "duplicate of the node-image bug (#5869). The fix is a corrected node image, not the pod.",
             target={"pod": "inference/whisper-api-6d8f9c7b5-r2x8k"}, k8s="v1.33 (AKS, node image 202607.02.0)",
             notes="The GPU pod was admitted (the device plugin had advertised the GPU before); its container fails "
                   "at start with the thread's error (the thread wraps it over five lines; it is one line in the "
                   "kubelet's message). Node names and the pod are illustrative.")
    kubelet = "v1.33.2"
    aks = {"kubernetes.azure.com/os-sku": "Ubuntu", "kubernetes.azure.com/node-image-version":
           "AKSUbuntu-2204gen2containerd-202607.02.0"}
    c.add(plain_node("aks-system-31415926-vmss000000", kubelet, cpu="4", memory="16Gi",
                     labels={**aks, "kubernetes.azure.com/agentpool": "system",
                             "node.kubernetes.io/instance-type": "Standard_D4s_v5"},
                     os_image="Ubuntu 22.04.5 LTS", kernel="5.15.0-1089-azure", runtime="containerd://1.7.27-1"))
    node = "aks-a10pool-27182818-vmss000003"
    c.add(gpu_node(node, gpus=1, product="NVIDIA-A10G", kubelet=kubelet, cpu="36",
                   memory="440Gi", gfd=False,
                   labels={**aks, "kubernetes.azure.com/agentpool": "a10pool", "kubernetes.azure.com/accelerator": "nvidia",
                           "node.kubernetes.io/instance-type": "Standard_NV36ads_A10_v5"},
                   taints=[taint("sku", "gpu")]))
    c.objects[-1]["status"]["nodeInfo"].update({"osImage": "Ubuntu 22.04.5 LTS", "kernelVersion": "5.15.0-1089-azure",
                                                "containerRuntimeVersion": "containerd://1.7.27-1"})
    plug = "mcr.microsoft.com/oss/v2/nvidia/k8s-device-plugin:v0.17.2"
    c.add(daemon_pod("nvidia-device-plugin-daemonset-k9w2d", "kube-system", node, "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr", plug,
                     statuses=[running("nvidia-device-plugin-ctr", image=plug)]))
    img = "acrprod.azurecr.io/whisper-api:3.2.1"
    st = waiting("whisper", "CrashLoopBackOff", "back-off 2m40s restarting failed container=whisper "
                 "pod=whisper-api-6d8f9c7b5-r2x8k_inference(6b1f0e2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b)", restarts=5,
                 image=img, last_exit={"reason": "StartError", "exitCode": 128, "message": msg})
    p = pod("whisper-api-6d8f9c7b5-r2x8k", "inference", phase="Running", node=node,
            owner=("ReplicaSet", "whisper-api-6d8f9c7b5"), labels={"app": "whisper-api"},
            tolerations=[{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
            containers=[container("whisper", image=img, gpus=1, requests={"cpu": "4", "memory": "16Gi"})],
            statuses=[st])
    p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
    c.add(p)
    c.add(event("Pod", "whisper-api-6d8f9c7b5-r2x8k", "inference", "Failed", "Error: " + msg, count=6,
                source="kubelet"))
    return c


# ================================================================== capability 2:
# GPU pools the autoscaler would not or could not grow


def karpenter_5975_limits() -> Case:
    """Karpenter: 'no instance type satisfied resources' while the Provisioner's GPU limit was used up."""
    frag = "no instance type satisfied resources"
    kmsg = ('Failed to schedule pod, incompatible with provisioner "gpu", no instance type satisfied resources '
            '{"cpu":"7185m","memory":"28912Mi","nvidia.com/gpu":"1","pods":"6"} and requirements '
            'karpenter.sh/capacity-type In [on-demand], karpenter.sh/provisioner-name In [gpu], '
            'kubernetes.io/arch In [amd64], node.kubernetes.io/instance-type In [g5.12xlarge g5.2xlarge g5.4xlarge]')
    sched = ("0/6 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 4 Insufficient "
             "nvidia.com/gpu. preemption: 0/6 nodes are available: 2 Preemption is not helpful for scheduling, "
             "4 No preemption victims found for incoming pod.")
    c = Case("karpenter-provider-aws-5975-gpu-limit-reads-as-no-instance-type",
             source="https://github.com/aws/karpenter-provider-aws/issues/5975",
             fragment=frag,
             where="FailedScheduling event from karpenter on the pod (and the provisioner's 'Could not schedule "
                   "pod' log line)",
             expect="autoscaler-no-scale-up", trap=True,
             must_not=["unknown-resource-name", "device-plugin-not-running"],
             resolution="Karpenter said no instance type satisfied the pod, which reads like missing capacity or a "
                        "requirements mismatch; the maintainer asked whether the Provisioner's limits "
                        "(nvidia.com/gpu: 16) were near, and the reporter confirmed: the limit was used up, and "
                        "after significantly raising the limits the error did not come back. The cause is the "
                        "provisioner's GPU limit, not instance availability.",
             target={"pod": "training/finetune-worker-5"}, k8s="v1.28 (EKS, Karpenter v0.3x Provisioner, Apr 2024)",
             notes="Four g5.12xlarge nodes (4 A10G each = 16 GPUs, the Provisioner limit) are full; two CPU nodes "
                   "are excluded by the pod's selector. The Karpenter event text around the thread's phrase follows "
                   "Karpenter's v0.3x wording (constructed for this cluster).")
    kubelet = "v1.28.5-eks-5e0fdde"
    for i in range(2):
        c.add(plain_node(f"ip-10-1-{i}-10.ec2.internal", kubelet, cpu="4", memory="16Gi",
                         labels={"eks.amazonaws.com/nodegroup": "core",
                                 "node.kubernetes.io/instance-type": "m5.xlarge"},
                         os_image="Amazon Linux 2", kernel="5.10.210-201.852.amzn2.x86_64"))
    for i in range(4):
        name = f"ip-10-1-{20 + i}-33.ec2.internal"
        c.add(gpu_node(name, gpus=4, product="NVIDIA-A10G", kubelet=kubelet, cpu="48", memory="192Gi",
                       driver="535.161.07", cuda="12.2",
                       labels={"karpenter.sh/provisioner-name": "gpu", "karpenter.sh/capacity-type": "on-demand",
                               "node.kubernetes.io/instance-type": "g5.12xlarge",
                               "karpenter.k8s.aws/instance-gpu-count": "4",
                               "karpenter.k8s.aws/instance-gpu-name": "a10g",
                               "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"},
                       taints=[taint("nvidia.com/gpu", "true")]))
        c.add(daemon_pod(f"nvidia-device-plugin-daemonset-{i}x7kq", "kube-system", name,
                         "nvidia-device-plugin-daemonset", {"name": "nvidia-device-plugin-ds"},
                         "nvidia-device-plugin-ctr", "nvcr.io/nvidia/k8s-device-plugin:v0.14.5",
                         statuses=[running("nvidia-device-plugin-ctr",
                                           image="nvcr.io/nvidia/k8s-device-plugin:v0.14.5")]))
        c.add(bound(f"finetune-worker-{i}", "training", name, gpus=4, owner=("StatefulSet", "finetune-worker"),
                    labels={"app": "finetune-worker"}, requests={"cpu": "40", "memory": "160Gi"}))
    p = pod("finetune-worker-5", "training", owner=("StatefulSet", "finetune-worker"), labels={"app": "finetune-worker"},
            node_selector={"karpenter.sh/provisioner-name": "gpu"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            containers=[container("trainer", image="nvcr.io/nvidia/pytorch:24.03-py3", gpus=1,
                                  requests={"cpu": "7", "memory": "28Gi"})])
    pending(c, p, sched, count=40)
    c.add(event("Pod", "finetune-worker-5", "training", "FailedScheduling", kmsg, count=37, source="karpenter"))
    c.log("karpenter", "karpenter-6d5b8f7c9-h2x4p", "controller",
          '{"level":"ERROR","time":"2024-04-15T10:02:11.412Z","logger":"controller.provisioner","message":"Could not '
          'schedule pod, incompatible with provisioner \\"gpu\\", no instance type satisfied resources '
          '{\\"cpu\\":\\"7185m\\",\\"memory\\":\\"28912Mi\\",\\"nvidia.com/gpu\\":\\"1\\",\\"pods\\":\\"6\\"} and '
          'requirements karpenter.sh/capacity-type In [on-demand], karpenter.sh/provisioner-name In [gpu], '
          'kubernetes.io/arch In [amd64], node.kubernetes.io/instance-type In [g5.12xlarge g5.2xlarge g5.4xlarge]",'
          '"commit":"1072d3b","pod":"training/finetune-worker-5"}\n')
    c.add(pod("karpenter-6d5b8f7c9-h2x4p", "karpenter", phase="Running", node="ip-10-1-0-10.ec2.internal",
              owner=("ReplicaSet", "karpenter-6d5b8f7c9"), labels={"app.kubernetes.io/name": "karpenter"},
              containers=[container("controller", image="public.ecr.aws/karpenter/controller:v0.31.4",
                                    requests={"cpu": "1", "memory": "1Gi"})]))
    return c


def cortex_1685_backoff_quota() -> Case:
    """GKE: 'it wouldn't fit if a new node is added: 1 in backoff after failed scale-up' is a cloud quota."""
    ca = "pod didn't trigger scale-up (it wouldn't fit if a new node is added): 1 in backoff after failed scale-up"
    sched = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    c = Case("cortex-1685-gke-gpu-pool-backoff-is-quota",
             source="https://github.com/cortexlabs/cortex/issues/1685",
             fragment=ca,
             where="NotTriggerScaleUp event from cluster-autoscaler on the API's GPU pod",
             expect="autoscaler-no-scale-up", trap=True,
             must_not=["unknown-resource-name", "device-plugin-not-running", "insufficient-cpu",
                       "insufficient-memory"],
             resolution="When the GCP project's CPU or GPU quota is exceeded, the GKE GPU node pool cannot grow: "
                        "the failed scale-up puts the pool in backoff and the pod's only event is this one, which "
                        "reads as if the pod were too big for a new node. The maintainers' fix was to validate the "
                        "project's CPU and GPU quota when the cluster is created.",
             target={"pod": "default/api-iris-classifier-5d8c7f9b6-xq2lm"}, k8s="v1.17 (GKE, Dec 2020)",
             notes="The GPU pool (n1-standard-4 + T4, min 0) has no node; the operator pool's two nodes have no "
                   "GPU. The scheduler message is the 1.17 wording for this cluster; the thread quotes only the "
                   "autoscaler's event.")
    kubelet = "v1.17.14-gke.400"
    for i in range(2):
        c.add(zoned(gke_node(f"gke-cortex-operator-7b2a1c3d-{'mn'[i]}x4{i}", kubelet, "operator", "n1-standard-2",
                             cpu="2", memory="7.5Gi", kernel="4.19.150+", runtime="docker://19.3.6"),
                    "us-central1-a"))
    p = pod("api-iris-classifier-5d8c7f9b6-xq2lm", "default", owner=("ReplicaSet", "api-iris-classifier-5d8c7f9b6"),
            labels={"apiName": "iris-classifier"}, tolerations=GPU_TOL,
            containers=[container("api", image="quay.io/cortexlabs/python-predictor-gpu:0.25.0", gpus=1,
                                  requests={"cpu": "200m", "memory": "512Mi"})])
    pending(c, p, sched, count=18)
    autoscaler_said(c, "default", "api-iris-classifier-5d8c7f9b6-xq2lm", "NotTriggerScaleUp", ca, count=16)
    return c


def hf_126_autopilot_quota() -> Case:
    """GKE Autopilot: the L4 scale-up failed on the project's GPU quota."""
    msg = ("Node scale up in zones us-central1-c associated with this pod failed: GCE quota exceeded. "
           "Pod is at risk of not being scheduled.")
    sched = ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes "
             "are available: 2 Preemption is not helpful for scheduling.")
    c = Case("google-cloud-containers-126-autopilot-l4-gce-quota",
             source="https://github.com/huggingface/Google-Cloud-Containers/issues/126",
             fragment=msg,
             where="FailedScaleUp event from cluster-autoscaler on the TGI pod (GKE Autopilot)",
             expect="autoscaler-no-scale-up",
             must_not=["node-selector-mismatch", "node-affinity-mismatch", "unknown-resource-name"],
             resolution="The Gemma TGI pod asks Autopilot for an NVIDIA L4 node; the scale-up failed on the project's "
                        "GCE quota. The maintainer answered that the problem is the GPU quota (NVIDIA L4 in the "
                        "region), not the deployment, and to raise it (to at least 2) or use a Standard cluster "
                        "with a single-L4 node pool within the current quota.",
             target={"pod": "default/tgi-gemma-deployment-6b9c7d8f5-k4x2p"}, k8s="v1.30 (GKE Autopilot, Dec 2024)",
             notes="Autopilot: the two existing nodes are general-purpose; the GPU node would be created for the "
                   "pod from its cloud.google.com/gke-accelerator selector. The scheduler condition is the 1.30 "
                   "wording for this cluster (not from the thread).")
    kubelet = "v1.30.5-gke.1699000"
    for i in range(2):
        c.add(zoned(gke_node(f"gk3-gemma-cluster-pool-2-5e1f9a0b-{'rt'[i]}q7{i}", kubelet, "pool-2", "e2-standard-4",
                             cpu="4", memory="16Gi", kernel="6.1.100+",
                             extra={"cloud.google.com/gke-provisioning": "standard"}), "us-central1-c"))
    p = pod("tgi-gemma-deployment-6b9c7d8f5-k4x2p", "default", owner=("ReplicaSet", "tgi-gemma-deployment-6b9c7d8f5"),
            labels={"app": "gemma-server"},
            node_selector={"cloud.google.com/gke-accelerator": "nvidia-l4"},
            tolerations=GPU_TOL,
            containers=[container("inference-server",
                                  image="us-docker.pkg.dev/deeplearning-platform-release/gcr.io/"
                                        "huggingface-text-generation-inference-cu121.2-2.ubuntu2204.py310",
                                  gpus=1, requests={"cpu": "2", "memory": "10Gi", "ephemeral-storage": "10Gi"})])
    pending(c, p, sched, count=25)
    autoscaler_said(c, "default", "tgi-gemma-deployment-6b9c7d8f5-k4x2p", "FailedScaleUp", msg, count=6,
                    type_="Warning")
    return c


def twoi2c_2185_backoff() -> Case:
    """GKE: the user pool was in backoff after a failed scale-up; the other clauses are other pools."""
    ca = ("pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had taint "
          "{k8s.dask.org_dedicated: worker}, that the pod didn't tolerate, 1 in backoff after failed scale-up")
    sched = "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector."
    c = Case("2i2c-infrastructure-2185-user-pool-in-backoff",
             source="https://github.com/2i2c-org/infrastructure/issues/2185",
             fragment=ca,
             where="NotTriggerScaleUp event from cluster-autoscaler on the JupyterHub user pod (shown in the spawn log)",
             expect="autoscaler-no-scale-up", trap=True,
             must_not=["node-selector-mismatch", "node-affinity-mismatch", "untolerated-taint"],
             resolution="The only node group the user pod may use (the user pool) was 'in backoff after failed "
                        "scale-up', so no node was added and the spawn timed out; the selector and taint clauses are "
                        "the core and dask pools, rightly excluded. Investigation found it intermittent: a new "
                        "scale-up later went fast and smooth. The cause is the failed scale-up/backoff on the cloud "
                        "side, not the pod's selector or tolerations.",
             target={"pod": "aup/jupyter-shaolintl"}, k8s="v1.24 (GKE, Feb 2023)",
             notes="Three node groups: core (1 node), user (1 node, full), dask-worker (tainted, at zero). The pod "
                   "requests no GPU; it is a cloud autoscaling case.")
    kubelet = "v1.24.8-gke.2000"
    z = "us-central1-b"
    c.add(zoned(gke_node("gke-pilot-hubs-cluster-core-pool-2f4e8a1b-k7x2", kubelet, "core-pool", "n2-highmem-4",
                         cpu="4", memory="32Gi", extra={"hub.jupyter.org/node-purpose": "core"}), z))
    user = "gke-pilot-hubs-cluster-nb-user-05c3d9e1-q8wz"
    c.add(zoned(gke_node(user, kubelet, "nb-user", "n2-highmem-4", cpu="4", memory="32Gi",
                         extra={"hub.jupyter.org/node-purpose": "user"}), z))
    c.add(zoned(gke_node("gke-pilot-hubs-cluster-dask-worker-8a1b2c3d-m2n4", kubelet, "dask-worker", "n2-highmem-16",
                         cpu="16", memory="128Gi", extra={"k8s.dask.org/node-purpose": "worker"}), z))
    c.objects[-1]["spec"]["taints"] = [taint("k8s.dask.org_dedicated", "worker")]
    for i in range(3):
        c.add(bound(f"jupyter-user{i}", "aup", user, requests={"cpu": "500m", "memory": "9Gi"},
                    labels={"component": "singleuser-server"}, image="quay.io/2i2c/aup-image:2023.01"))
    p = pod("jupyter-shaolintl", "aup", labels={"component": "singleuser-server"},
            node_selector={"hub.jupyter.org/node-purpose": "user"},
            spec={"schedulerName": "default-scheduler"},
            containers=[container("notebook", image="quay.io/2i2c/aup-image:2023.01",
                                  requests={"cpu": "500m", "memory": "9Gi"})])
    pending(c, p, sched, count=3, source="default-scheduler")
    autoscaler_said(c, "aup", "jupyter-shaolintl", "NotTriggerScaleUp", ca, count=2)
    return c


CASES = [cos_installer_crashloop, eks_g7_proprietary_kmod, eks_1697_nvml_not_loaded,
         gke_plugin_hostpath_not_a_directory, aks_5871_grid_driver_library_mismatch,
         karpenter_5975_limits, cortex_1685_backoff_quota, hf_126_autopilot_quota, twoi2c_2185_backoff]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
