"""Real-world device-plugin cases: a well-known GPU resource name that nothing
advertises (no plugin, a plugin that cannot start or register, a plugin kept off the
node), other vendors and sharing layers, and node health seen from the plugin's side.
Run ``python tests/realworld/build_deviceplugin.py`` to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (crashloop, Case, NOW, container, event, gpu_node, pod, taint, pending, plain_node)  # noqa: E402
T_START = "2026-11-19T09:00:00Z"


# ------------------------------------------------------------------ local helpers

def daemon_pod(name: str, namespace: str, node: str, ds: str, labels: dict, ctr: str, image: str,
               statuses: Optional[list] = None, init: Optional[list] = None, init_statuses: Optional[list] = None,
               phase: str = "Running", env: Optional[dict] = None) -> dict:
    """A DaemonSet pod of a device plugin (any vendor) bound to ``node``."""
    c = container(ctr, image=image, env=env)
    inits = [container(n, image=i) for n, i in (init or [])]
    return pod(name, namespace, phase=phase, node=node, containers=[c], init_containers=inits or None, labels=labels,
               owner=("DaemonSet", ds), statuses=statuses, init_statuses=init_statuses,
               tolerations=[{"operator": "Exists"}])


def init_running(name: str, image: str) -> dict:
    return {"name": name, "ready": False, "restartCount": 0, "image": image,
            "state": {"running": {"startedAt": T_START}}}


def init_waiting(name: str, image: str) -> dict:
    return {"name": name, "ready": False, "restartCount": 0, "image": image,
            "state": {"waiting": {"reason": "PodInitializing"}}}


def gpu_workload(name: str, namespace: str, resource: str = "nvidia.com/gpu", count: int = 1,
                 image: str = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1",
                 extra_limits: Optional[dict] = None, **kw) -> dict:
    lim = {resource: str(count), **(extra_limits or {})}
    return pod(name, namespace, containers=[container("main", image=image, limits=lim)], **kw)


# ================================================================== capability 1:
# a well-known GPU resource name that nothing advertises


def nvml_not_loaded_default_runtime() -> Case:
    c = Case("k8s-device-plugin-23-nvml-library-not-loaded-default-runtime",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/23",
             fragment="Failed to start nvml with error:  could not load NVML library",
             where="log of the device-plugin container (kube-system/nvidia-device-plugin-daemonset-*, "
                   "nvidia-device-plugin-ctr; previous run, the container crash-loops)",
             expect="nvml-init-failed",
             resolution="nvidia-docker2 was installed but nvidia was not Docker's default runtime, so the plugin "
                        "container never saw libnvidia-ml and the node advertised no nvidia.com/gpu; the maintainer "
                        "(flx42) pointed at setting the default runtime and the user confirmed it solved the problem.",
             target={"pod": "default/gpu-pod"},
             must_not=["unknown-resource-name"], k8s="v1.8",
             notes="Plugin 1.8 wording predates 'Failed to initialize NVML:'; the node has no GFD labels "
                   "(2018), only the plugin pod on it says it is a GPU node.")
    kubelet = "v1.8.6"
    c.add(plain_node("k8s-master", kubelet, taints=[taint("node-role.kubernetes.io/master")],
                     runtime="docker://17.3.2"),
          plain_node("gpu-node-1", kubelet, runtime="docker://17.3.2", kernel="4.4.0-104-generic",
                     os_image="Ubuntu 16.04.3 LTS"))
    img = "nvidia/k8s-device-plugin:1.8"
    dp = "nvidia-device-plugin-daemonset-2xkqz"
    c.add(daemon_pod(dp, "kube-system", "gpu-node-1", "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr", img,
                     statuses=[crashloop("nvidia-device-plugin-ctr", img, restarts=14)]))
    c.log("kube-system", dp, "nvidia-device-plugin-ctr",
          "2018/01/19 06:12:40 Loading NVML\n"
          "2018/01/19 06:12:40 Failed to start nvml with error:  could not load NVML library\n", previous=True)
    c.log("kube-system", dp, "nvidia-device-plugin-ctr", "")
    pending(c, gpu_workload("gpu-pod", "default", image="nvidia/cuda"),
            "0/2 nodes are available: 1 PodToleratesNodeTaints, 2 Insufficient nvidia.com/gpu.", count=37)
    return c


def rocm_talos_no_kfd() -> Case:
    msg = ("0/9 nodes are available: 3 node(s) had taint {node-role.kubernetes.io/master: }, "
           "that the pod didn't tolerate, 6 Insufficient amd.com/gpu.")
    c = Case("rocm-k8s-device-plugin-23-talos-no-rocm-kernel-driver",
             source="https://github.com/ROCm/k8s-device-plugin/issues/23",
             fragment=msg,
             where="pod status condition PodScheduled and FailedScheduling event of the AMD GPU pod; the node "
                   "labeller's log (kube-system/amdgpu-node-labeller-*) on the Ryzen node",
             expect="device-plugin-not-running", trap=True,
             resolution="On Talos /dev/kfd is not present: the Helm chart only deploys the device plugin (and "
                        "labeller), it does not install the ROCm kernel driver, and Talos is not a supported "
                        "distribution (maintainer y2kenny). With no kfd the plugin never registers amd.com/gpu, "
                        "so the 'Insufficient amd.com/gpu' is a plugin that has nothing to serve, not a full node.",
             target={"pod": "default/rocm-test"},
             must_not=["unknown-resource-name"], k8s="v1.22 (Talos, kernel 5.15, amd-gpu-helm-0.2.0)")
    kubelet, kernel, osimg = "v1.22.3", "5.15.0-talos", "Talos (v0.13.2)"
    for i in range(1, 4):
        c.add(plain_node(f"talos-cp-{i}", kubelet, taints=[taint("node-role.kubernetes.io/master")],
                         kernel=kernel, os_image=osimg))
    workers = [f"talos-worker-{i}" for i in range(1, 7)]
    for w in workers:
        c.add(plain_node(w, kubelet, kernel=kernel, os_image=osimg))
    img = "rocm/k8s-device-plugin:1.18.0"
    plugin_log = ("I1108 22:14:02.101908       1 main.go:305] AMD GPU device plugin for Kubernetes\n"
                  "I1108 22:14:02.101961       1 main.go:305] ./k8s-device-plugin version v1.18.0\n"
                  "I1108 22:14:02.101971       1 manager.go:42] Starting device plugin manager\n"
                  "I1108 22:14:02.101980       1 manager.go:46] Registering for system signal notifications\n"
                  "I1108 22:14:02.102133       1 manager.go:52] Registering for notifications of filesystem "
                  "changes in device plugin directory\n"
                  "I1108 22:14:02.102206       1 manager.go:60] Starting Discovery on new plugins\n"
                  "I1108 22:14:02.102210       1 manager.go:66] Handling incoming signals\n")
    for i, w in enumerate(workers):
        name = f"amdgpu-device-plugin-daemonset-{'bcdfghjk'[i]}7x2{i}"
        c.add(daemon_pod(name, "kube-system", w, "amdgpu-device-plugin-daemonset", {"name": "amdgpu-dp-ds"},
                         "amdgpu-dp-cntr", img))
        c.log("kube-system", name, "amdgpu-dp-cntr", plugin_log)
    lab = "amdgpu-node-labeller-q8w2m"
    c.add(daemon_pod(lab, "kube-system", "talos-worker-6", "amdgpu-node-labeller", {"name": "amdgpu-nl"},
                     "amdgpu-node-labeller", "rocm/k8s-device-plugin:labeller-1.18.0"))
    c.log("kube-system", lab, "amdgpu-node-labeller",
          '{"level":"error","ts":1636410993.0903304,"logger":"amdgpu-node-labeller","msg":"Fail to glob topology '
          'properties","stacktrace":"github.com/RadeonOpenCompute/k8s-device-plugin/vendor/github.com/go-logr/zapr.'
          '(*zapLogger).Error\\n\\t/go/src/github.com/RadeonOpenCompute/k8s-device-plugin/vendor/github.com/go-logr/'
          'zapr/zapr.go:132\\nmain.glob..func5\\n\\t/go/src/github.com/RadeonOpenCompute/k8s-device-plugin/cmd/'
          'k8s-node-labeller/main.go:158\\nmain.generateLabels\\n\\t/go/src/github.com/RadeonOpenCompute/'
          'k8s-device-plugin/cmd/k8s-node-labeller/main.go:249\\nmain.main\\n\\t/go/src/github.com/RadeonOpenCompute/'
          'k8s-device-plugin/cmd/k8s-node-labeller/main.go:288\\nruntime.main\\n\\t/usr/local/go/src/runtime/'
          'proc.go:204"}\n')
    pending(c, gpu_workload("rocm-test", "default", resource="amd.com/gpu", image="rocm/rocm-terminal"), msg,
            count=22)
    return c


def gke_plugin_not_installed() -> Case:
    msg = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    c = Case("container-engine-accelerators-196-gke-device-plugin-not-installed",
             source="https://github.com/GoogleCloudPlatform/container-engine-accelerators/issues/196",
             fragment="Insufficient nvidia.com/gpu",
             where="pod status condition PodScheduled and FailedScheduling event",
             expect="device-plugin-not-running", trap=True,
             resolution="The GPU node pool (n1-standard-4 + Tesla T4, COS) came up and the driver-installer "
                        "DaemonSet ran, but no device plugin served the node; the user had to install the NVIDIA "
                        "device plugin DaemonSet (cluster/addons/device-plugins/nvidia-gpu) by hand, after which "
                        "the pods scheduled. Nothing was short of GPUs.",
             target={"pod": "ml/inference-7d9c6b5f4-xk2lp"},
             must_not=["unknown-resource-name"], k8s="v1.18.17-gke.700")
    kubelet = "v1.18.17-gke.700"
    gke = {"cloud.google.com/gke-os-distribution": "cos"}
    for i in range(3):
        c.add(plain_node(f"gke-prod-default-pool-5c1d7e2a-{'abc'[i]}x0{i}", kubelet, cpu="4", memory="15Gi",
                         labels={**gke, "cloud.google.com/gke-nodepool": "default-pool",
                                 "node.kubernetes.io/instance-type": "e2-standard-4"},
                         os_image="Container-Optimized OS from Google", kernel="5.4.109+",
                         runtime="docker://19.3.14"))
    gpu = "gke-prod-gpu-pool-8e4f2b1c-q7rd"
    c.add(plain_node(gpu, kubelet, cpu="4", memory="15Gi",
                     labels={**gke, "cloud.google.com/gke-nodepool": "gpu-pool",
                             "cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                             "node.kubernetes.io/instance-type": "n1-standard-4"},
                     taints=[taint("nvidia.com/gpu", "present")],
                     os_image="Container-Optimized OS from Google", kernel="5.4.109+", runtime="docker://19.3.14"))
    c.add(daemon_pod("nvidia-driver-installer-kz8wq", "kube-system", gpu, "nvidia-driver-installer",
                     {"k8s-app": "nvidia-driver-installer", "name": "nvidia-driver-installer"}, "pause",
                     "gcr.io/google-containers/pause:2.0",
                     init=[("nvidia-driver-installer", "cos-nvidia-installer:fixed")],
                     init_statuses=[{"name": "nvidia-driver-installer", "ready": True, "restartCount": 0,
                                     "image": "cos-nvidia-installer:fixed",
                                     "state": {"terminated": {"reason": "Completed", "exitCode": 0,
                                                              "startedAt": T_START, "finishedAt": T_START}}}]))
    p = gpu_workload("inference-7d9c6b5f4-xk2lp", "ml", image="gcr.io/prod/inference:2021.05",
                     owner=("ReplicaSet", "inference-7d9c6b5f4"),
                     tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    pending(c, p, msg, count=41)
    return c


def kfp_gke_pool_without_driver() -> Case:
    msg = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    c = Case("kubeflow-pipelines-2561-gke-gpu-pool-without-driver",
             source="https://github.com/kubeflow/pipelines/issues/2561",
             fragment=msg,
             where="pod status condition PodScheduled of the pipeline step pod (shown by the KFP UI as "
                   "'Unschedulable: ...') and its FailedScheduling event",
             expect="device-plugin-not-running", trap=True,
             resolution="The Kubeflow 0.7 GKE deployment created a GPU node pool but no NVIDIA driver was "
                        "installed on its nodes, so GKE's device plugin advertised no nvidia.com/gpu; after "
                        "installing the NVIDIA driver (GKE's driver-installer DaemonSet) the step ran (user's EDIT).",
             target={"pod": "kubeflow/gpu-pipeline-x7k2q-3288481021"},
             must_not=["unknown-resource-name"], k8s="v1.14.8-gke.12")
    kubelet = "v1.14.8-gke.12"
    cos = {"cloud.google.com/gke-os-distribution": "cos"}
    for i in range(2):
        c.add(plain_node(f"gke-kubeflow-default-pool-d2f1a3b4-{'mn'[i]}v4{i}", kubelet, cpu="8", memory="30Gi",
                         labels={**cos, "cloud.google.com/gke-nodepool": "default-pool",
                                 "node.kubernetes.io/instance-type": "n1-standard-8"},
                         os_image="Container-Optimized OS from Google", kernel="4.14.138+",
                         runtime="docker://18.9.7"))
    for i in range(2):
        node = f"gke-kubeflow-gpu-pool-7a9e0c12-{'pq'[i]}h2{i}"
        c.add(plain_node(node, kubelet, cpu="8", memory="30Gi",
                         labels={**cos, "cloud.google.com/gke-nodepool": "gpu-pool",
                                 "cloud.google.com/gke-accelerator": "nvidia-tesla-k80",
                                 "node.kubernetes.io/instance-type": "n1-standard-8"},
                         taints=[taint("nvidia.com/gpu", "present")], os_image="Container-Optimized OS from Google",
                         kernel="4.14.138+", runtime="docker://18.9.7"))
        c.add(daemon_pod(f"nvidia-gpu-device-plugin-{'rs'[i]}9k4{i}", "kube-system", node, "nvidia-gpu-device-plugin",
                         {"k8s-app": "nvidia-gpu-device-plugin"}, "nvidia-gpu-device-plugin",
                         "k8s.gcr.io/nvidia-gpu-device-plugin@sha256:"
                         "4b036e8844920336fa48f36edeb7d4398f426d6a934ba022848deed2edbf09aa"))
    p = gpu_workload("gpu-pipeline-x7k2q-3288481021", "kubeflow", image="tensorflow/tensorflow:1.15.0-gpu-py3",
                     labels={"workflows.argoproj.io/workflow": "gpu-pipeline-x7k2q"},
                     tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    pending(c, p, msg, count=12)
    return c


def _nap_node(name: str, machine: str, accel: str, kubelet: str) -> dict:
    return plain_node(name, kubelet, cpu="4", memory="16Gi",
                      labels={"cloud.google.com/gke-os-distribution": "cos",
                              "cloud.google.com/gke-nodepool": f"nap-{machine}-gpu1-{accel[-2:]}k3v",
                              "cloud.google.com/gke-provisioning": "standard",
                              "cloud.google.com/gke-accelerator": accel,
                              "node.kubernetes.io/instance-type": machine},
                      taints=[taint("nvidia.com/gpu", "present")], os_image="Container-Optimized OS from Google",
                      kernel="6.1.90+", runtime="containerd://1.7.19")


def _gke_plugin_stuck(c: Case, node: str, name: str) -> None:
    inst = "gke.gcr.io/cos-nvidia-installer:fixed"
    plug = "gke.gcr.io/nvidia-gpu-device-plugin:v1.0.25-gke.56"
    c.add(daemon_pod(name, "kube-system", node, "nvidia-gpu-device-plugin-small-cos",
                     {"k8s-app": "nvidia-gpu-device-plugin"}, "nvidia-gpu-device-plugin", plug, phase="Pending",
                     init=[("nvidia-driver-installer", inst), ("nvidia-gpu-device-plugin-partition-gpus", plug)],
                     init_statuses=[init_running("nvidia-driver-installer", inst),
                                    init_waiting("nvidia-gpu-device-plugin-partition-gpus", plug)],
                     statuses=[{"name": "nvidia-gpu-device-plugin", "ready": False, "restartCount": 0, "image": plug,
                                "state": {"waiting": {"reason": "PodInitializing"}}}]))
    c.log("kube-system", name, "nvidia-driver-installer",
          "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
          "                                 Dload  Upload   Total   Spent    Left  Speed\n"
          "100   598  100   598    0     0   273k      0 --:--:-- --:--:-- --:--:--  291k\n"
          "GPU driver auto installation is disabled.\n"
          "Waiting for GPU driver libraries to be available.\n")


def gke_nap_t4_driver_autoinstall_disabled() -> Case:
    msg = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node "
           "affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming "
           "pod, 2 Preemption is not helpful for scheduling.")
    c = Case("container-engine-accelerators-402-nap-t4-driver-autoinstall-disabled",
             source="https://github.com/GoogleCloudPlatform/container-engine-accelerators/issues/402",
             fragment="GPU driver auto installation is disabled.",
             where="log of the init container nvidia-driver-installer of the nvidia-gpu-device-plugin pod on the "
                   "node-auto-provisioned GPU node (kube-system)",
             expect="device-plugin-not-running", trap=True,
             resolution="Node auto-provisioning created the T4 node without GPU driver auto-installation; the "
                        "device plugin pod's nvidia-driver-installer init container waits forever for driver "
                        "libraries, so the kubelet never registers nvidia.com/gpu and the job that triggered the "
                        "node cannot land on it (the reporter's analysis, confirmed by the L4 report #407).",
             target={"pod": "batch/t4-infer-8wq5n"},
             must_not=["unknown-resource-name"], k8s="v1.29.7-gke.1008000")
    kubelet = "v1.29.7-gke.1008000"
    for i in range(2):
        c.add(plain_node(f"gke-batch-default-pool-1f2e3d4c-{'ab'[i]}9x{i}", kubelet, cpu="4", memory="16Gi",
                         labels={"cloud.google.com/gke-nodepool": "default-pool",
                                 "node.kubernetes.io/instance-type": "e2-standard-4"},
                         os_image="Container-Optimized OS from Google", kernel="6.1.90+"))
    node = "gke-batch-nap-n1-standard-4-gpu1--6c0a9d2e-t4mz"
    c.add(_nap_node(node, "n1-standard-4", "nvidia-tesla-t4", kubelet))
    _gke_plugin_stuck(c, node, "nvidia-gpu-device-plugin-small-cos-hzvds")
    p = gpu_workload("t4-infer-8wq5n", "batch", image="us-docker.pkg.dev/batch/infer:1.4",
                     owner=("Job", "t4-infer"), node_selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
                     tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    pending(c, p, msg, count=9)
    c.add(event("Pod", "t4-infer-8wq5n", "batch", "TriggeredScaleUp",
                "pod triggered scale-up: [{https://www.googleapis.com/compute/v1/projects/batch/zones/us-central1-a/"
                "instanceGroups/gke-batch-nap-n1-standard-4-gpu1--6c0a9d2e-grp 0->1 (max: 1000)}]",
                type_="Normal", source="cluster-autoscaler", at="2026-11-20T02:31:00Z"))
    return c


# ================================================================== capability 2:
# other vendors and sharing layers


def bottlerocket_time_slicing_renamed() -> Case:
    frag = 'Resource "nvidia.com/gpu" was requested but not registered'
    c = Case("bottlerocket-4250-time-slicing-advertises-gpu-shared",
             source="https://github.com/bottlerocket-os/bottlerocket/issues/4250",
             fragment=frag,
             where="Karpenter NodeClaim status condition (Initialized=False) of the node launched for the pod; the "
                   "pod's FailedScheduling event",
             expect="sharing-resource-mismatch", trap=True,
             resolution="The node was fine and its device plugin registered: with time-slicing configured the "
                        "node advertises only nvidia.com/gpu.shared, while the pod (and so Karpenter) asked for "
                        "nvidia.com/gpu, which the default scheduler cannot find (the reporter's own finding in "
                        "the thread, on Bottlerocket 1.26.2 aws-k8s-1.30-nvidia).",
             target={"pod": "inference/llm-worker-5f7d8c9b6-m2kq8"},
             must_not=["unknown-resource-name", "device-plugin-not-running"], k8s="v1.30 (EKS, Karpenter)")
    kubelet = "v1.30.4-eks-a737599"
    br = "Bottlerocket OS 1.26.2 (aws-k8s-1.30-nvidia)"
    for i in range(28):
        c.add(plain_node(f"ip-10-0-{40 + i}-{11 + i}.ec2.internal", kubelet, cpu="8", memory="32Gi",
                         labels={"karpenter.sh/nodepool": "general", "node.kubernetes.io/instance-type": "m6i.2xlarge"},
                         os_image="Amazon Linux 2023.5.20240916", kernel="6.1.109-118.189.amzn2023.x86_64"))
    gpu = "ip-10-0-131-207.ec2.internal"
    c.add(plain_node(gpu, kubelet, cpu="8", memory="32Gi", os_image=br, kernel="6.1.112",
                     capacity={"nvidia.com/gpu.shared": "4"},
                     labels={"karpenter.sh/nodepool": "gpu", "karpenter.sh/nodeclaim": "gpu-x8k2p",
                             "node.kubernetes.io/instance-type": "g5.2xlarge",
                             "karpenter.k8s.aws/instance-gpu-name": "a10g",
                             "karpenter.k8s.aws/instance-gpu-count": "1",
                             "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
                             "karpenter.k8s.aws/instance-gpu-memory": "24576"},
                     taints=[taint("nvidia.com/gpu", "true")]))
    c.add({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
           "metadata": {"name": "gpu-x8k2p", "uid": "uid-cluster-gpu-x8k2p", "creationTimestamp": T_START,
                        "labels": {"karpenter.sh/nodepool": "gpu"}},
           "spec": {"resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "4Gi"}},
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "bottlerocket-gpu"}},
           "status": {"nodeName": gpu, "providerID": "aws:///us-east-1a/i-0a1b2c3d4e5f60718",
                      "capacity": {"nvidia.com/gpu": "1", "cpu": "8", "memory": "32Gi"},
                      "conditions": [{"type": "Launched", "status": "True", "reason": "Launched",
                                      "lastTransitionTime": T_START},
                                     {"type": "Registered", "status": "True", "reason": "Registered",
                                      "lastTransitionTime": T_START},
                                     {"type": "Initialized", "status": "False", "reason": "ResourceNotRegistered",
                                      "message": frag, "lastTransitionTime": NOW},
                                     {"type": "Ready", "status": "False", "reason": "UnhealthyDependents",
                                      "message": "Initialized=False", "lastTransitionTime": NOW}]}})
    p = gpu_workload("llm-worker-5f7d8c9b6-m2kq8", "inference", image="vllm/vllm-openai:v0.6.3",
                     extra_limits={"memory": "4Gi", "cpu": "1"}, owner=("ReplicaSet", "llm-worker-5f7d8c9b6"),
                     node_selector={"karpenter.sh/nodepool": "gpu"},
                     tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    pending(c, p, "0/29 nodes are available: 1 Insufficient nvidia.com/gpu, 28 node(s) didn't match Pod's node "
                  "affinity/selector. preemption: 0/29 nodes are available: 1 No preemption victims found for "
                  "incoming pod, 28 Preemption is not helpful for scheduling.", count=33)
    c.add(event("Pod", "llm-worker-5f7d8c9b6-m2kq8", "inference", "Nominated",
                f"Pod should schedule on: nodeclaim/gpu-x8k2p, node/{gpu}", type_="Normal", source="karpenter"))
    return c


def hami_metax_plugin_missing() -> Case:
    msg = ("0/1 nodes are available: 1 Insufficient metax-tech.com/gpu. preemption: 0/1 nodes are available: "
           "1 No preemption victims found for incoming pod.")
    c = Case("hami-1135-metax-gpu-device-plugin-not-deployed",
             source="https://github.com/Project-HAMi/HAMi/issues/1135",
             fragment="0/1 nodes are available: 1 Insufficient metax-tech.com/gpu.",
             where="FailedScheduling event and PodScheduled condition of the MetaX test pod",
             expect="device-plugin-not-running", trap=True,
             resolution="HAMi's own device plugin only serves NVIDIA cards (it crash-looped on the MetaX node and "
                        "the user removed gpu=on); metax-tech.com/gpu is advertised by MetaX's device plugin, which "
                        "comes with the MetaX GPU Operator. The maintainer's answer: confirm the MetaX GPU Operator "
                        "(its plugin) is deployed. Nothing serves the resource; it is not short and not misspelt.",
             target={"pod": "default/metax-gpu-pod"},
             must_not=["unknown-resource-name"], k8s="v1.30.4 (HAMi 2.6.0)")
    c.add(plain_node("metax-node-1", "v1.30.4", cpu="64", memory="256Gi",
                     labels={"node-role.kubernetes.io/control-plane": ""}, kernel="5.15.0-119-generic"))
    c.add(pod("hami-scheduler-6b8d9f7c5-p2wxl", "kube-system", phase="Running", node="metax-node-1",
              containers=[container("kube-scheduler", image="registry.k8s.io/kube-scheduler:v1.30.4"),
                          container("vgpu-scheduler-extender", image="projecthami/hami:v2.6.0")],
              labels={"app.kubernetes.io/component": "hami-scheduler", "app.kubernetes.io/name": "hami"},
              owner=("ReplicaSet", "hami-scheduler-6b8d9f7c5")))
    pending(c, gpu_workload("metax-gpu-pod", "default", resource="metax-tech.com/gpu",
                            image="cr.metax-tech.com/public-library/maca-c500:2.24.0.6-ubuntu20.04-amd64"),
            msg, count=18)
    return c


def neuron_device_not_core() -> Case:
    msg = "0/1 nodes are available: 1 Insufficient aws.amazon.com/neuron."
    c = Case("aws-neuron-sdk-392-one-inferentia-device-per-pod",
             source="https://github.com/aws-neuron/aws-neuron-sdk/issues/392",
             fragment=msg,
             where="pod status condition PodScheduled and FailedScheduling event of the second deployment's pod",
             expect="insufficient-gpu",
             resolution="The inf1.xlarge node has one Inferentia device (4 NeuronCores) and the Neuron device plugin "
                        "then allocated whole devices only, not cores (maintainer aws-owinop): the first container "
                        "holds the node's only aws.amazon.com/neuron, so the second one genuinely does not fit. The "
                        "name is right and the plugin works; the accelerator is taken.",
             target={"pod": "default/model-b-6c8f7d9b54-tq4zn"},
             must_not=["unknown-resource-name", "device-plugin-not-running"], k8s="v1.21 (EKS)")
    node = "ip-192-168-28-141.ec2.internal"
    c.add(plain_node(node, "v1.21.5-eks-9017834", cpu="4", memory="8Gi", capacity={"aws.amazon.com/neuron": "1"},
                     labels={"node.kubernetes.io/instance-type": "inf1.xlarge",
                             "eks.amazonaws.com/nodegroup": "inf1-ng"},
                     os_image="Amazon Linux 2", kernel="5.4.162-86.275.amzn2.x86_64", runtime="docker://20.10.7"))
    img = "790709498068.dkr.ecr.us-west-2.amazonaws.com/neuron-device-plugin:1.7.3.0"
    c.add(daemon_pod("neuron-device-plugin-daemonset-8vlrd", "kube-system", node, "neuron-device-plugin-daemonset",
                     {"name": "neuron-device-plugin-ds"}, "k8s-neuron-device-plugin-ctr", img))
    lim = {"aws.amazon.com/neuron": "1", "cpu": "4", "memory": "4Gi"}
    req = {"cpu": "2", "memory": "1Gi"}
    c.add(pod("model-a-5b9d8c7f6d-x2p8r", "default", phase="Running", node=node,
              containers=[container("model-a", image="123456789012.dkr.ecr.us-east-1.amazonaws.com/model-a:inf1",
                                    limits=lim, requests=req)], owner=("ReplicaSet", "model-a-5b9d8c7f6d")))
    p = pod("model-b-6c8f7d9b54-tq4zn", "default",
            containers=[container("model-b", image="123456789012.dkr.ecr.us-east-1.amazonaws.com/model-b:inf1",
                                  limits=lim, requests=req)], owner=("ReplicaSet", "model-b-6c8f7d9b54"))
    pending(c, p, msg, count=16)
    return c


# ================================================================== capability 3:
# node health from every side


def gke_nap_l4_plugin_init_stuck() -> Case:
    c = Case("container-engine-accelerators-407-nap-l4-device-plugin-init-stuck",
             source="https://github.com/GoogleCloudPlatform/container-engine-accelerators/issues/407",
             fragment="Waiting for GPU driver libraries to be available.",
             where="log of the init container nvidia-driver-installer of kube-system/nvidia-gpu-device-plugin-small-"
                   "cos-4fpl4 (Init:0/2) on the node",
             expect="device-plugin-not-running",
             resolution="On node-auto-provisioned L4 nodes GPU driver auto-installation is disabled; the GKE device "
                        "plugin pod stays in Init waiting for driver libraries, and only after it finishes would the "
                        "node have allocatable nvidia.com/gpu (the reporter's analysis; same cause as #402).",
             target={"node": "gke-ml-nap-g2-standard-4-gpu1-l4-5b7e21c0-9qzt"}, k8s="v1.30.3-gke.1639000")
    node = "gke-ml-nap-g2-standard-4-gpu1-l4-5b7e21c0-9qzt"
    c.add(_nap_node(node, "g2-standard-4", "nvidia-l4", "v1.30.3-gke.1639000"))
    _gke_plugin_stuck(c, node, "nvidia-gpu-device-plugin-small-cos-4fpl4")
    return c


def plugin_needs_newer_driver() -> Case:
    frag = "nvidia-device-plugin: symbol lookup error: nvidia-device-plugin: undefined symbol: nvmlDeviceGetPciInfo_v3"
    c = Case("k8s-device-plugin-66-plugin-1-11-needs-newer-driver",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/66",
             fragment=frag,
             where="log of the crash-looping device-plugin container on the node (previous run)",
             expect="nvml-init-failed", trap=True,
             also_ok={"device-plugin-not-running": "the plugin pod crash-loops and the node advertises no GPU; "
                                                   "naming the plugin as down is right, the NVML cause is deeper"},
             resolution="Plugin image 1.11 calls an NVML symbol that the node's CUDA 8-era driver library lacks: "
                        "'we now require a more recent CUDA' (maintainer flx42); use k8s-device-plugin:1.10 or "
                        "upgrade the driver. Not a broken image.",
             target={"node": "gpu-worker-3"}, k8s="v1.11")
    c.add(plain_node("gpu-worker-3", "v1.11.2", cpu="32", memory="128Gi", runtime="docker://18.6.0",
                     os_image="Ubuntu 16.04.5 LTS", kernel="4.4.0-131-generic"))
    img = "nvidia/k8s-device-plugin:1.11"
    dp = "nvidia-device-plugin-daemonset-m9t4c"
    c.add(daemon_pod(dp, "kube-system", "gpu-worker-3", "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr", img,
                     statuses=[crashloop("nvidia-device-plugin-ctr", img, restarts=31, exit_code=127)]))
    c.log("kube-system", dp, "nvidia-device-plugin-ctr", frag + "\n", previous=True)
    c.log("kube-system", dp, "nvidia-device-plugin-ctr", "")
    return c


def old_gpu_marked_unhealthy() -> Case:
    frag = "is too old to support healtchecking with error: %!s(MISSING). Marking it unhealthy"
    c = Case("k8s-device-plugin-33-old-gpu-marked-unhealthy",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/33",
             fragment=frag,
             where="log of the device-plugin DaemonSet pod on the GPU node (kube-system)",
             expect="gpu-unhealthy", trap=True,
             resolution="The GeForce GTX 760 cannot register for NVML health events; the plugin therefore marks "
                        "it unhealthy and the node offers no schedulable nvidia.com/gpu, hence 'Insufficient'. "
                        "The thread's workaround is to turn off the Xid health checks "
                        "(DP_DISABLE_HEALTHCHECKS=xids); later plugins skip such devices instead (PR #1562). No "
                        "GPU is busy and none is faulty.",
             target={"pod": "default/gpu-pod"},
             must_not=["unknown-resource-name"], k8s="v1.9")
    c.add(plain_node("gpu", "v1.9.3", cpu="8", memory="32Gi", runtime="docker://17.12.0-ce",
                     os_image="Ubuntu 16.04.4 LTS", kernel="4.4.0-116-generic",
                     capacity={"nvidia.com/gpu": "0"}))
    img = "nvidia/k8s-device-plugin:1.9"
    dp = "nvidia-device-plugin-daemonset-7lq2v"
    c.add(daemon_pod(dp, "kube-system", "gpu", "nvidia-device-plugin-daemonset", {"name": "nvidia-device-plugin-ds"},
                     "nvidia-device-plugin-ctr", img))
    c.log("kube-system", dp, "nvidia-device-plugin-ctr",
          "2018/02/27 16:43:49 Loading NVML\n"
          "2018/02/27 16:43:49 Fetching devices.\n"
          "2018/02/27 16:43:49 Starting FS watcher.\n"
          "2018/02/27 16:43:49 Starting OS watcher.\n"
          "2018/02/27 16:43:50 Starting to serve on /var/lib/kubelet/device-plugins/nvidia.sock\n"
          "2018/02/27 16:43:50 Registered device plugin with Kubelet\n"
          "2018/02/27 16:43:50 Warning: GPU with UUID GPU-edae6d5d-6698-fb8d-2c6b-2a791224f089 " + frag + "\n")
    pending(c, gpu_workload("gpu-pod", "default", image="nvidia/cuda"),
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.", count=25)
    return c


def intel_inotify_instances() -> Case:
    frag = "Failed to serve gpu.intel.com/i915: too many open files"
    c = Case("intel-device-plugins-2075-gpu-plugin-inotify-instances",
             source="https://github.com/intel/intel-device-plugins-for-kubernetes/issues/2075",
             fragment=frag,
             where="log of the crash-looping intel-gpu-plugin container on the node (previous run)",
             expect="device-plugin-not-running",
             resolution="The plugin could not create its socket watcher because the node ran out of inotify "
                        "instances after a kernel upgrade; the reporter fixed it with "
                        "fs.inotify.max_user_instances=256 and the maintainer (tkatila) called it a system "
                        "configuration issue, not a plugin bug. Until then the node advertises no gpu.intel.com/i915.",
             target={"node": "nuc-01"},
             must_not=["unknown-resource-name"], k8s="v1.33")
    c.add(plain_node("nuc-01", "v1.33.1", cpu="8", memory="32Gi", kernel="6.11.0-26-generic",
                     os_image="Ubuntu 24.04.2 LTS",
                     labels={"intel.feature.node.kubernetes.io/gpu": "true",
                             "gpu.intel.com/device-id.0300-46a6.present": "true",
                             "gpu.intel.com/device-id.0300-46a6.count": "1",
                             "feature.node.kubernetes.io/pci-0300_8086.present": "true"}))
    img = "intel/intel-gpu-plugin:0.32.1"
    dp = "intel-gpu-plugin-gpudeviceplugin-sample-5xk8d"
    c.add(daemon_pod(dp, "inteldeviceplugins-system", "nuc-01", "intel-gpu-plugin-gpudeviceplugin-sample",
                     {"app": "intel-gpu-plugin"}, "intel-gpu-plugin", img,
                     statuses=[crashloop("intel-gpu-plugin", img, restarts=48)]))
    c.log("inteldeviceplugins-system", dp, "intel-gpu-plugin",
          "I0621 08:02:11.287037       1 gpu_plugin.go:799] GPU device plugin started with none preferred allocation "
          "policy\n"
          "I0621 08:02:11.287510       1 gpu_plugin.go:518] GPU (i915/xe) resource share count = 1\n"
          "I0621 08:02:11.385290       1 gpu_plugin.go:540] GPU scan update: 0->1 'i915' resources found\n"
          "I0621 08:02:12.387952       1 server.go:285] Start server for i915 at: "
          "/var/lib/kubelet/device-plugins/gpu.intel.com-i915.sock\n"
          "E0621 08:02:12.392516       1 manager.go:146] " + frag + "\n", previous=True)
    return c


def mig_monitor_devices_permissions() -> Case:
    frag = ("error starting plugins: unable to add default resources to config: error visiting devices: error "
            "visiting device: error visiting device: error getting device memory info: Insufficient Pemmissions")
    c = Case("k8s-device-plugin-399-mig-node-plugin-needs-mig-monitor-devices",
             source="https://github.com/NVIDIA/k8s-device-plugin/issues/399",
             fragment=frag,
             where="log of the crash-looping device-plugin container on the MIG-enabled node (previous run)",
             expect="device-plugin-not-running",
             also_ok={"nvml-init-failed": "the failing call is an NVML query refused with NO_PERMISSION, which the "
                                          "nvml-init-failed runbook lists"},
             resolution="On a MIG-enabled node the plugin needs NVIDIA_MIG_MONITOR_DEVICES=all in its environment to "
                        "read MIG device memory; without it it exits and the node advertises no GPU or MIG "
                        "resource. Setting the variable solved it (maintainer klueska, confirmed by the user).",
             target={"node": "a100-node-2"}, k8s="v1.26")
    c.add(gpu_node("a100-node-2", gpus=0, product="NVIDIA-A100-SXM4-40GB", kubelet="v1.26.3",
                   labels={"nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "mixed",
                           "nvidia.com/mig.capable": "true"}))
    img = "registry.local/k8s-device-plugin:devel-8a2f3c1"
    dp = "nvidia-device-plugin-daemonset-w5rz9"
    c.add(daemon_pod(dp, "kube-system", "a100-node-2", "nvidia-device-plugin-daemonset",
                     {"name": "nvidia-device-plugin-ds"}, "nvidia-device-plugin-ctr", img,
                     statuses=[crashloop("nvidia-device-plugin-ctr", img, restarts=9)]))
    c.log("kube-system", dp, "nvidia-device-plugin-ctr",
          "I0418 03:21:07.110482       1 main.go:256] Starting FS watcher.\n"
          "I0418 03:21:07.110577       1 main.go:263] Starting OS watcher.\n"
          "I0418 03:21:07.110901       1 main.go:278] Starting Plugins.\n"
          "I0418 03:21:07.110916       1 main.go:335] Loading configuration.\n"
          "I0418 03:21:07.111309       1 main.go:343] Updating config with default resource matching patterns.\n"
          "E0418 03:21:07.203644       1 main.go:128] " + frag + "\n", previous=True)
    return c


CASES = [
    # capability 1: a well-known name nothing advertises
    nvml_not_loaded_default_runtime, rocm_talos_no_kfd, gke_plugin_not_installed, kfp_gke_pool_without_driver,
    gke_nap_t4_driver_autoinstall_disabled,
    # capability 2: other vendors and sharing layers
    bottlerocket_time_slicing_renamed, hami_metax_plugin_missing, neuron_device_not_core,
    # capability 3: node health
    gke_nap_l4_plugin_init_stuck, plugin_needs_newer_driver, old_gpu_marked_unhealthy, intel_inotify_instances,
    mig_monitor_devices_permissions,
]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
