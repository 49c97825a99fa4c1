"""Real-world hardware cases: CUDA/NCCL crashes explained (or not) by Xid and ECC
evidence, kubelet device-admission failures, and node GPU health. Run
``python tests/realworld/build_hardware.py`` to rewrite their snapshots.

Where a case needs DCGM exporter metrics, the snapshot carries ``metrics/<node>.prom``
and a Running ``nvidia-dcgm-exporter`` pod on that node (the local API server only
answers the pod proxy for such a pod). Kernel ``NVRM`` lines appear as
node-problem-detector events on the Node (source ``kernel-monitor``), the place the
brief names for them; what each snapshot adds beyond the thread is said in its
``notes``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (backoff_event, kernel_event, HERE, Case, container, device_plugin_pod, event, gpu_node, job, pod, terminated,  # noqa: E402
                 waiting, gpu_uuid, suffix, plugin_log)

T_FAIL = "2026-11-20T02:41:07Z"     # when the GPU fault / rejection happened
T_BOOT = "2026-11-20T02:20:00Z"     # node reboot / kubelet restart in the admission cases


# ------------------------------------------------------------------ local helpers


class HwCase(Case):
    """A Case that can also carry DCGM exporter metrics (``metrics/<node>.prom``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metrics: dict[str, str] = {}

    def prom(self, node: str, text: str) -> "HwCase":
        self.metrics[node] = text
        return self

    def write(self, root: Path = HERE) -> Path:
        d = super().write(root)
        for node, text in self.metrics.items():
            f = d / "snapshot" / "metrics" / f"{node}.prom"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
        return d


PCI = ["00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
       "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0"]

_HELP = {
    "DCGM_FI_DEV_GPU_TEMP": ("GPU temperature (in C).", "gauge"),
    "DCGM_FI_DEV_XID_ERRORS": ("Value of the last XID error encountered.", "gauge"),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("Number of remapped rows for uncorrectable errors", "counter"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("Whether remapping of rows has failed", "gauge"),
    "DCGM_FI_DEV_RETIRED_PENDING": ("Number of pages pending retirement.", "gauge"),
}


def dcgm(node: str, n: int, model: str, driver: str, xid: Optional[dict[int, int]] = None,
         extra: Optional[dict[str, dict[int, int]]] = None,
         pods: Optional[dict[int, tuple[str, str, str]]] = None, pci: Optional[list[str]] = None) -> str:
    """dcgm-exporter text for ``n`` GPUs of ``node``: temperature, last Xid and any
    ``extra`` metric; ``pods`` maps a GPU index to (namespace, pod, container), the
    attribution labels dcgm-exporter adds in Kubernetes mode."""
    metrics: dict[str, dict[int, int]] = {"DCGM_FI_DEV_GPU_TEMP": {i: 38 + i for i in range(n)},
                                          "DCGM_FI_DEV_XID_ERRORS": {i: (xid or {}).get(i, 0) for i in range(n)}}
    for name, values in (extra or {}).items():
        metrics[name] = {i: values.get(i, 0) for i in range(n)}
    pci = pci or PCI
    lines = []
    for name, values in metrics.items():
        help_, type_ = _HELP[name]
        lines += [f"# HELP {name} {help_}", f"# TYPE {name} {type_}"]
        for i in range(n):
            labels = (f'gpu="{i}",UUID="{gpu_uuid(node, i)}",pci_bus_id="{pci[i]}",device="nvidia{i}",'
                      f'modelName="{model}",Hostname="{node}",DCGM_FI_DRIVER_VERSION="{driver}"')
            if pods and i in pods:
                ns, p, c = pods[i]
                labels += f',container="{c}",namespace="{ns}",pod="{p}"'
            lines.append(f"{name}{{{labels}}} {values[i]}")
    return "\n".join(lines) + "\n"


def dcgm_exporter(node: str, ns: str = "gpu-operator",
                  image: str = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04") -> dict:
    c = container("nvidia-dcgm-exporter", image=image)
    c["ports"] = [{"containerPort": 9400, "name": "metrics", "protocol": "TCP"}]
    p = pod(f"nvidia-dcgm-exporter-{suffix(node, 'dcgm')}", ns, phase="Running", node=node, containers=[c],
            labels={"app": "nvidia-dcgm-exporter"}, owner=("DaemonSet", "nvidia-dcgm-exporter"),
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    p["status"]["podIP"] = "10.244.7.23"
    return p


def operator_plugin(node: str, image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0-ubi8",
                    ns: str = "gpu-operator") -> dict:
    """The GPU Operator's device-plugin pod on ``node`` (container ``nvidia-device-plugin``)."""
    c = container("nvidia-device-plugin", image=image)
    return pod(f"nvidia-device-plugin-daemonset-{suffix(node, 'dp')}", ns, phase="Running", node=node,
               containers=[c], labels={"app": "nvidia-device-plugin-daemonset"},
               owner=("DaemonSet", "nvidia-device-plugin-daemonset"),
               tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])


def xid_unhealthy(stamp: str, xid: int, uuid: str, handle: str = "0x7f8b442818e9") -> list[str]:
    """The v0.14+ plugin's lines for a critical Xid (internal/rm/health.go, internal/plugin/server.go)."""
    return [f"{stamp}.889979       1 health.go:167] Processing event {{Device:{{Handle:{handle}}} EventType:8 "
            f"EventData:{xid} GpuInstanceId:4294967295 ComputeInstanceId:4294967295}}",
            f"{stamp}.890218       1 health.go:193] XidCriticalError: Xid={xid} on Device={uuid}; marking device as unhealthy.",
            f"{stamp}.890900       1 server.go:275] 'nvidia.com/gpu' device marked unhealthy: {uuid}"]


def deployment(name: str, ns: str, rs_hash: str, replicas: int, template: dict, labels: dict) -> list[dict]:
    """A Deployment and its current ReplicaSet (``<name>-<rs_hash>``)."""
    rs_name = f"{name}-{rs_hash}"
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": labels}
    tmpl = {"metadata": {"labels": labels}, "spec": template}
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
         "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": tmpl},
         "status": {"replicas": replicas, "observedGeneration": 1}}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": rs_name, "namespace": ns, "uid": f"uid-{ns}-{rs_name}",
                       "creationTimestamp": "2026-11-01T00:00:00Z", "labels": {**labels, "pod-template-hash": rs_hash},
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                            "uid": f"uid-{ns}-{name}", "controller": True}]},
          "spec": {"replicas": replicas, "selector": {"matchLabels": {**labels, "pod-template-hash": rs_hash}},
                   "template": tmpl},
          "status": {"replicas": replicas}}
    return [d, rs]


def rejected(name: str, ns: str, node: str, gpus: int, message: str, owner: Optional[tuple[str, str]] = None,
             labels: Optional[dict] = None, image: str = "nvcr.io/nvidia/pytorch:24.05-py3",
             created: str = T_FAIL, statuses: Optional[list] = None, cname: str = "main") -> dict:
    """A pod the kubelet refused at admission: Failed, reason UnexpectedAdmissionError."""
    c = container(cname, image=image, gpus=gpus)
    return pod(name, ns, phase="Failed", node=node, containers=[c], owner=owner, labels=labels,
               reason="UnexpectedAdmissionError", message=message, created=created,
               statuses=statuses if statuses is not None else [],
               conditions=[{"type": "PodScheduled", "status": "True", "lastTransitionTime": created}])


def admission_event(pod_name: str, ns: str, message: str, count: int = 1) -> dict:
    return event("Pod", pod_name, ns, "UnexpectedAdmissionError", message, count=count, source="kubelet")


def crashlooping(name: str, ns: str, node: str, gpus: int, cname: str, image: str, restarts: int = 5,
                 exit_code: int = 1, owner: Optional[tuple[str, str]] = None, labels: Optional[dict] = None,
                 restart_policy: str = "Always", env: Optional[dict] = None) -> dict:
    c = container(cname, image=image, gpus=gpus, env=env)
    st = waiting(cname, "CrashLoopBackOff",
                 f"back-off 5m0s restarting failed container={cname} pod={name}_{ns}(uid-{ns}-{name})",
                 restarts=restarts, last_exit={"reason": "Error", "exitCode": exit_code}, image=image)
    return pod(name, ns, phase="Running", node=node, containers=[c], owner=owner, labels=labels, statuses=[st],
               spec={"restartPolicy": restart_policy},
               conditions=[{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False",
                                                                        "reason": "ContainersNotReady"}])


def reboot_event(node: str) -> dict:
    return event("Node", node, None, "Rebooted", f"Node {node} has been rebooted, boot id: "
                 "6f1c2b9e-3d4a-4f0e-9a7b-2c5d8e1f0a34", source="kubelet", at=T_BOOT)


def gke_node(name: str, gpus: int, accel: str, machine: str, kubelet: str) -> dict:
    n = gpu_node(name, gpus=gpus, gfd=False, kubelet=kubelet, labels={
        "cloud.google.com/gke-accelerator": accel, "cloud.google.com/gke-accelerator-count": str(gpus),
        "cloud.google.com/gke-gpu": "true", "cloud.google.com/gke-gpu-driver-version": "default",
        "cloud.google.com/gke-nodepool": "l4-pool", "node.kubernetes.io/instance-type": machine,
        "cloud.google.com/machine-family": machine.split("-")[0]},
        taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    n["status"]["nodeInfo"]["osImage"] = "Container-Optimized OS from Google"
    return n


def gke_plugin(node: str) -> dict:
    c = container("nvidia-gpu-device-plugin", image="gke.gcr.io/nvidia-gpu-device-plugin@sha256:"
                  "4b036e8844920336fa48f36edeb7d4398f426d6a934ba022848deed2edbf09aa")
    return pod(f"nvidia-gpu-device-plugin-small-cos-{suffix(node, 'gke')}", "kube-system", phase="Running", node=node,
               containers=[c], labels={"k8s-app": "nvidia-gpu-device-plugin",
                                       "addonmanager.kubernetes.io/mode": "Reconcile"},
               owner=("DaemonSet", "nvidia-gpu-device-plugin-small-cos"), created=T_BOOT,
               tolerations=[{"operator": "Exists"}])


# ================================================================== hardware faults explain crashes


def deepfacelab_89_ecc_tensorflow() -> Case:
    node, ns, name = "gpu-ws-4090", "jupyter", "jupyter-chwshuang"
    frag = "CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered"
    full = ("F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of handling error "
            "Internal: failed initializing StreamExecutor for CUDA device ordinal 0: Internal: failed call to "
            "cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered")
    c = HwCase("deepfacelab-linux-89-ecc-uncorrectable-tensorflow",
               source="https://github.com/nagadit/DeepFaceLab_Linux/issues/89",
               fragment=frag,
               where="log of container notebook (previous instance) of a crash-looping Jupyter pod",
               expect="ecc-uncorrectable",
               must_not=["driver-cuda-mismatch", "gpu-not-requested"],
               resolution="The reporter found it was a hardware problem: after moving to another machine and "
                          "redeploying Jupyter the same code ran.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.28",
               notes="A one-GPU RTX 4090 workstation node without DCGM exporter: the application's error is the "
                     "only evidence, and with a single GPU on the node it can only be GPU 0. TensorFlow's fatal log "
                     "aborts the process (exit 134).")
    c.add(gpu_node(node, gpus=1, gfd=False, kubelet="v1.28.6", cpu="32", memory="128Gi"))
    dp = device_plugin_pod(node, name=f"nvidia-device-plugin-daemonset-{suffix(node, 'static')}", image="nvcr.io/nvidia/k8s-device-plugin:v0.14.5")
    c.add(dp)
    c.log("kube-system", dp["metadata"]["name"], "nvidia-device-plugin-ctr",
          plugin_log("I1101 07:12:40", "v0.14.5", []))
    img = "tensorflow/tensorflow:2.13.0-gpu-jupyter"
    c.add(crashlooping(name, ns, node, 1, "notebook", img, restarts=4, exit_code=134))
    c.add(backoff_event(name, ns, "notebook"))
    c.log(ns, name, "notebook", previous=True, text=(
        "2026-11-20 02:41:05.118231: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is "
        "optimized to use available CPU instructions in performance-critical operations.\n"
        f"{full}\n"
        "Aborted (core dumped)\n"))
    return c


def mineru_426_bad_card() -> Case:
    node, ns, name = "gpu-ws-01", "docs", "magic-pdf-5b8d7c9f6-q4m2z"
    frag = "RuntimeError: CUDA error: unspecified launch failure"
    c = HwCase("mineru-426-unspecified-launch-failure-bad-card",
               source="https://github.com/opendatalab/MinerU/issues/426",
               fragment=frag,
               where="log of container magic-pdf (previous instance) of a CrashLoopBackOff pod",
               expect="xid-error", trap=True,
               also_ok={"gpu-unhealthy": "the device plugin marked the only GPU unhealthy after the same Xid; "
                                         "a finding on that GPU names the faulty card too"},
               must_not=["gpu-memory-exhausted"],
               resolution="The maintainer first suspected too little GPU memory; the reporter noted that after the "
                          "error the GPU stayed unusable until the server was rebooted, then swapped in an identical "
                          "card and the error was gone: the card was broken.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.29",
               notes="The thread runs MinerU on one 11 GB card outside Kubernetes. The snapshot adds what the "
                     "device plugin would log for a GPU that stays unusable until a reboot (Xid 79, marked "
                     "unhealthy; allocatable 0 of 1). Product label assumed RTX 2080 Ti (the thread says 11 GB).")
    uuid = gpu_uuid(node, 0)
    c.add(gpu_node(node, gpus=1, allocatable=0, product="NVIDIA-GeForce-RTX-2080-Ti", driver="535.183.01",
                   cuda="12.2", kubelet="v1.29.6", cpu="16", memory="64Gi",
                   labels={"nvidia.com/gpu.memory": "11264"}))
    dp = device_plugin_pod(node, name=f"nvidia-device-plugin-daemonset-{suffix(node, 'static')}", image="nvcr.io/nvidia/k8s-device-plugin:v0.15.0")
    c.add(dp)
    c.log("kube-system", dp["metadata"]["name"], "nvidia-device-plugin-ctr",
          plugin_log("I1102 09:30:12", "v0.15.0", xid_unhealthy("I1120 02:41:07", 79, uuid)))
    labels = {"app": "magic-pdf"}
    img = "registry.local/mineru/magic-pdf:0.6.2"
    c.add(*deployment("magic-pdf", ns, "5b8d7c9f6", 1, {"containers": [container("magic-pdf", image=img, gpus=1)]},
                      labels))
    c.add(crashlooping(name, ns, node, 1, "magic-pdf", img, restarts=7,
                       owner=("ReplicaSet", "magic-pdf-5b8d7c9f6"), labels={**labels, "pod-template-hash": "5b8d7c9f6"}))
    c.add(backoff_event(name, ns, "magic-pdf"))
    c.log(ns, name, "magic-pdf", previous=True, text=(
        "2026-11-20 02:41:06.512 | INFO     | magic_pdf.model.pdf_extract_kit:__init__:171 - DocAnalysis init done!\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.10/site-packages/transformers/generation/stopping_criteria.py", line 496, in __call__\n'
        "    is_done = torch.isin(input_ids[:, -1], self.eos_token_id.to(input_ids.device))\n"
        f"{frag}\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"))
    return c


def vllm_7896_bad_node() -> Case:
    nodes = ["gpu-node-1", "gpu-node-2"]
    ns, name = "ray", "vllm-cluster-gpu-workers-worker-7k2qp"
    frag = "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    c = HwCase("vllm-7896-nccl-unhandled-cuda-error-bad-node",
               source="https://github.com/vllm-project/vllm/issues/7896",
               fragment=frag,
               where="log of container ray-worker (previous instance) of a KubeRay worker pod",
               expect="xid-error", trap=True,
               also_ok={"gpu-unhealthy": "the plugin marked the faulty GPU of this node unhealthy; a finding on "
                                         "it points at the same bad node"},
               resolution="The reporter resolved it by removing the bad instance node from the Ray cluster; the NCCL "
                          "debugging docs did not help. The NCCL/CUDA error was the symptom of one faulty node.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.29",
               notes="The thread does not say what was wrong with the node. The snapshot gives the bad node the "
                     "common fault behind 'unhandled cuda error' at start-up: Xid 79 on GPU 5 in DCGM metrics "
                     "(attributed to this worker pod) and in the device-plugin log; the other node is clean.")
    for i, n in enumerate(nodes):
        bad = i == 1
        c.add(gpu_node(n, gpus=8, allocatable=7 if bad else 8, product="NVIDIA-A100-SXM4-40GB", kubelet="v1.29.6",
                       driver="550.90.07"))
        dp = operator_plugin(n)
        c.add(dp, dcgm_exporter(n))
        tail = xid_unhealthy("I1120 02:41:07", 79, gpu_uuid(n, 5)) if bad else []
        c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1115 11:20:33", "v0.15.0", tail))
        c.prom(n, dcgm(n, 8, "NVIDIA A100-SXM4-40GB", "550.90.07", xid={5: 79} if bad else {},
                       pods={k: (ns, name if bad else "vllm-cluster-head-2xw9d", "ray-worker" if bad else "ray-head")
                             for k in range(8)}))
    img = "vllm/vllm-openai:v0.5.5"
    owner = [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "vllm-cluster", "uid": "uid-ray-vllm-cluster",
              "controller": True}]
    head = pod("vllm-cluster-head-2xw9d", ns, phase="Running", node=nodes[0],
               containers=[container("ray-head", image=img, gpus=8)], labels={"ray.io/cluster": "vllm-cluster",
                                                                              "ray.io/node-type": "head"})
    head["metadata"]["ownerReferences"] = owner
    w = crashlooping(name, ns, nodes[1], 8, "ray-worker", img, restarts=3,
                     labels={"ray.io/cluster": "vllm-cluster", "ray.io/node-type": "worker"})
    w["metadata"]["ownerReferences"] = owner
    c.add(head, w, backoff_event(name, ns, "ray-worker", count=5))
    c.log(ns, name, "ray-worker", previous=True, text=(
        "INFO 11-20 02:41:02 utils.py:841] Found nccl from library libnccl.so.2\n"
        "INFO 11-20 02:41:02 pynccl.py:63] vLLM is using nccl==2.20.5\n"
        "ERROR 11-20 02:41:07 worker_base.py:382] Error executing method init_device. This might cause deadlock in distributed execution.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/pynccl.py", line 89, in __init__\n'
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(\n"
        f"{frag}\n"))
    return c


def pytorch_42077_app_kernel() -> Case:
    node, ns, name = "gpu-v100-02", "vision", "seg-train-7xkqp"
    frag = "cuda runtime error (700) : an illegal memory access was encountered"
    c = HwCase("pytorch-42077-illegal-memory-access-app-kernel",
               source="https://github.com/pytorch/pytorch/issues/42077",
               fragment=frag,
               where="log of container train (previous instance) of a crash-looping Job pod",
               expect="crash-loop", trap=True,
               must_not=["xid-error", "ecc-uncorrectable", "gpu-unhealthy", "gpu-memory-exhausted"],
               resolution="With CUDA_LAUNCH_BLOCKING=1 the reporter found the real fault: a .so compiled from a "
                          "problematic .cu file in the codebase they used. Memory was not exhausted (about 5 GB of "
                          "16 GB per GPU). An application bug, not the GPU.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.18",
               notes="The snapshot adds the kernel's side of an illegal address in a user kernel: DCGM's last Xid "
                     "on the pod's GPU is 31 (MMU fault, an application Xid the device plugin ignores); nothing "
                     "is marked unhealthy.")
    c.add(gpu_node(node, gpus=4, product="Tesla-V100-SXM2-16GB", kubelet="v1.18.6", driver="450.51.06", cuda="11.0"))
    dp = device_plugin_pod(node, name=f"nvidia-device-plugin-daemonset-{suffix(node, 'static')}", image="nvcr.io/nvidia/k8s-device-plugin:v0.6.0")
    c.add(dp, dcgm_exporter(node, image="nvcr.io/nvidia/k8s/dcgm-exporter:2.0.13-2.1.0-ubuntu18.04"))
    c.log("kube-system", dp["metadata"]["name"], "nvidia-device-plugin-ctr",
          "2026/11/01 07:12:40 Loading NVML\n2026/11/01 07:12:40 Fetching devices.\n"
          "2026/11/01 07:12:40 Starting FS watcher.\n2026/11/01 07:12:40 Starting OS watcher.\n"
          "2026/11/01 07:12:40 Starting to serve on /var/lib/kubelet/device-plugins/nvidia.sock\n"
          "2026/11/01 07:12:40 Registered device plugin with Kubelet\n")
    c.prom(node, dcgm(node, 4, "Tesla V100-SXM2-16GB", "450.51.06", xid={1: 31}, pods={i: (ns, name, "train") for i in range(4)}))
    img = "pytorch/pytorch:1.5.1-cuda10.1-cudnn7-devel"
    c.add(job("seg-train", ns, {"containers": [container("train", image=img, gpus=4)], "restartPolicy": "OnFailure"}))
    c.add(crashlooping(name, ns, node, 4, "train", img, restarts=4, owner=("Job", "seg-train"),
                       labels={"job-name": "seg-train"}, restart_policy="OnFailure"))
    c.add(backoff_event(name, ns, "train", count=9))
    c.log(ns, name, "train", previous=True, text=(
        "gpu memory allocated:\n5378117120\ngpu memory allocated:\n5963999232\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 214, in <module>\n'
        "    loss.backward()\n"
        f"RuntimeError: {frag} at /pytorch/aten/src/THC/THCCachingHostAllocator.cpp:278\n"))
    return c


def unet_258_device_side_assert() -> Case:
    node, ns, name = "gpu-a10g-1", "seg", "unet-train-q8w2d"
    frag = "Assertion `t >= 0 && t < n_classes` failed"
    c = HwCase("pytorch-unet-258-device-side-assert-n-classes",
               source="https://github.com/milesial/Pytorch-UNet/issues/258",
               fragment=frag,
               where="log of container train of a Failed Job pod",
               expect="crash-loop", trap=True,
               must_not=["xid-error", "ecc-uncorrectable", "gpu-unhealthy"],
               resolution="The maintainer answered that with 3 classes n_classes must be set to 3 (4 with the "
                          "background); the labels exceeded n_classes. A configuration/data bug in the job, not the GPU.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.29",
               notes="The snapshot adds DCGM's last Xid 43 on the pod's GPU (the channel reset after a device-side "
                     "assert; an application Xid the device plugin ignores).")
    c.add(gpu_node(node, gpus=1, product="NVIDIA-A10G", kubelet="v1.29.3-eks-ae9a62a", driver="535.161.08",
                   cuda="12.2", labels={"node.kubernetes.io/instance-type": "g5.xlarge"}, cpu="4", memory="16Gi"))
    dp = operator_plugin(node)
    c.add(dp, dcgm_exporter(node))
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1112 10:02:44", "v0.15.0", []))
    c.prom(node, dcgm(node, 1, "NVIDIA A10G", "535.161.08", xid={0: 43}, pods={0: (ns, name, "train")}))
    img = "registry.local/seg/unet:2021.02"
    c.add(job("unet-train", ns, {"containers": [container("train", image=img, gpus=1)], "restartPolicy": "Never"}))
    p = pod(name, ns, phase="Failed", node=node, containers=[container("train", image=img, gpus=1)],
            owner=("Job", "unet-train"), labels={"job-name": "unet-train"}, spec={"restartPolicy": "Never"},
            statuses=[terminated("train", "Error", 1, image=img)])
    c.add(p)
    c.log(ns, name, "train", text=(
        "INFO: Starting training:\n        Epochs:          5\n        Batch size:      1\n"
        "/pytorch/aten/src/THCUNN/SpatialClassNLLCriterion.cu:106: cunn_SpatialClassNLLCriterion_updateOutput_kernel: "
        f"block: [0,0,0], thread: [725,0,0] {frag}\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 98, in train_net\n'
        "    loss = criterion(masks_pred, true_masks)\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"))
    return c


def tegnas_19_xid_on_other_gpu() -> Case:
    node, ns, name = "gpu-a100-31", "nas", "tegnas-search-9xw4r"
    frag = "RuntimeError: CUDA error: an illegal memory access was encountered"
    c = HwCase("tegnas-19-illegal-memory-access-xid-on-other-gpu",
               source="https://github.com/VITA-Group/TEGNAS/issues/19",
               fragment=frag,
               where="log of container search (previous instance) of a crash-looping Job pod",
               expect="crash-loop", trap=True,
               must_not=["gpu-memory-exhausted", "ecc-uncorrectable"],
               resolution="The reporter noticed that restarting the search processed the same networks fine; the "
                          "maintainer fixed a bug in the code: the error was due to zero gradients in some bad "
                          "architectures. An application bug.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.29",
               notes="The snapshot puts the pod on a busy 8-GPU node where another team's GPU (GPU 6) fell off the "
                     "bus (Xid 79, marked unhealthy). DCGM attributes GPU 2 to this pod, with only an application "
                     "Xid 31 on it; the hardware Xid belongs to another pod's GPU. A diagnosis that blames the node's "
                     "Xid 79 for this crash has not tied the pod to its GPU.")
    c.add(gpu_node(node, gpus=8, allocatable=7, product="NVIDIA-A100-SXM4-40GB", kubelet="v1.29.6", driver="550.90.07"))
    dp = operator_plugin(node)
    c.add(dp, dcgm_exporter(node))
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin",
          plugin_log("I1110 08:02:11", "v0.15.0", xid_unhealthy("I1120 01:12:09", 79, gpu_uuid(node, 6))))
    c.prom(node, dcgm(node, 8, "NVIDIA A100-SXM4-40GB", "550.90.07", xid={2: 31, 6: 79},
                      pods={2: (ns, name, "search"), 6: ("llm", "llm-train-0", "trainer")}))
    img = "pytorch/pytorch:1.10.0-cuda11.3-cudnn8-runtime"
    c.add(job("tegnas-search", ns, {"containers": [container("search", image=img, gpus=1)], "restartPolicy": "OnFailure"}))
    c.add(crashlooping(name, ns, node, 1, "search", img, restarts=3, owner=("Job", "tegnas-search"),
                       labels={"job-name": "tegnas-search"}, restart_policy="OnFailure"))
    c.add(pod("llm-train-0", "llm", phase="Running", node=node, gpus=1), backoff_event(name, ns, "search", count=6))
    c.log(ns, name, "search", previous=True, text=(
        "arch 1187/2000: ntk cond 412.7, linear regions 2931\n"
        "Traceback (most recent call last):\n"
        '  File "prune_tenas.py", line 213, in get_ntk_n\n'
        "    grads[_i].append(torch.cat(gradient, -1))\n"
        f"{frag}\n"
        "CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"))
    return c


def nccl_2076_infiniband() -> Case:
    nodes = ["v100-node-1", "v100-node-2"]
    ns, jobname = "training", "ddp-train"
    frag = "remote process exited or there was a network error, NCCL version 2.21.5"
    c = HwCase("nccl-2076-remote-process-exited-infiniband",
               source="https://github.com/NVIDIA/nccl/issues/2076",
               fragment=frag,
               where="log of container pytorch of the PyTorchJob's worker pods",
               expect="crash-loop", trap=True,
               must_not=["xid-error", "ecc-uncorrectable", "gpu-unhealthy"],
               resolution="The reporter found a cluster communication issue: some nodes had InfiniBand problems; "
                          "once those were sorted, DDP training ran. Network, not GPUs, not NCCL.",
               target={"namespace": ns, "target": f"pytorchjob/{jobname}"}, k8s="v1.29",
               notes="Two 8x V100 32 GB nodes with DCGM exporter and a clean device plugin: no Xid anywhere. The "
                     "gpuctl codes have no network cause; the right answer is the crash with its log tail, and no "
                     "GPU hardware finding.")
    img = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
    ptj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": jobname, "namespace": ns, "uid": f"uid-{ns}-{jobname}", "creationTimestamp": "2026-11-19T22:00:00Z"},
           "spec": {"pytorchReplicaSpecs": {
               "Master": {"replicas": 1, "restartPolicy": "OnFailure",
                          "template": {"spec": {"containers": [container("pytorch", image=img, gpus=8)]}}},
               "Worker": {"replicas": 1, "restartPolicy": "OnFailure",
                          "template": {"spec": {"containers": [container("pytorch", image=img, gpus=8)]}}}}},
           "status": {"conditions": [{"type": "Running", "status": "True"}]}}
    c.add(ptj)
    tail = (
        "[rank{r}]: Traceback (most recent call last):\n"
        '[rank{r}]:   File "/workspace/train.py", line 141, in <module>\n'
        "[rank{r}]:     loss.backward()\n"
        f"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, {frag}\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
        "Last error:\n"
        "socketProgressOpt: Call to recv from 172....<33759> failed : Connection reset by peer\n")
    for i, (role, n) in enumerate((("master", nodes[0]), ("worker", nodes[1]))):
        c.add(gpu_node(n, gpus=8, product="Tesla-V100-SXM2-16GB", labels={"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB",
                                                                         "nvidia.com/gpu.memory": "32768"},
                       kubelet="v1.29.6", driver="535.183.01", cuda="12.2"))
        dp = operator_plugin(n)
        c.add(dp, dcgm_exporter(n))
        c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1110 03:11:05", "v0.15.0", []))
        pname = f"{jobname}-{role}-0"
        c.prom(n, dcgm(n, 8, "Tesla V100-SXM2-32GB", "535.183.01", pods={k: (ns, pname, "pytorch") for k in range(8)}))
        p = crashlooping(pname, ns, n, 8, "pytorch", img, restarts=3, restart_policy="OnFailure",
                         labels={"training.kubeflow.org/job-name": jobname,
                                 "training.kubeflow.org/replica-type": role, "training.kubeflow.org/replica-index": "0"})
        p["metadata"]["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": jobname,
                                             "uid": f"uid-{ns}-{jobname}", "controller": True}]
        c.add(p, backoff_event(pname, ns, "pytorch", count=4))
        c.log(ns, pname, "pytorch", previous=True, text=tail.format(r=i))
    return c


def gsp_timeout_446() -> Case:
    node, ns, name = "gpu-a100-61", "nlp", "bert-infer-7d9c5b6f4-rw8tn"
    frag = "Timeout waiting for RPC from GSP!"
    xid_line = ("NVRM: Xid (PCI:0000:61:00): 119, pid=977823, name=nvidia-smi, Timeout waiting for RPC from GSP! "
                "Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).")
    start_err = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc "
                 "create failed: unable to start container process: error during container init: error running hook "
                 "#0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: detection error: "
                 "driver error: timed out: unknown")
    c = HwCase("open-gpu-kernel-modules-446-gsp-timeout-container-start",
               source="https://github.com/NVIDIA/open-gpu-kernel-modules/issues/446",
               fragment=frag,
               where="kernel log line (Xid 119) as a node-problem-detector event on the Node; the pod's container "
                     "fails to start with an NVIDIA runtime hook error",
               expect="xid-error", trap=True,
               must_not=["runtime-class-missing", "driver-cuda-mismatch", "gpu-memory-exhausted"],
               resolution="Xid 119 GSP RPC timeouts on 525 drivers: NVIDIA support (reported by the Kubernetes user "
                          "in the thread) advised disabling GSP-RM (NVreg_EnableGpuFirmware=0) and rebooting; later a "
                          "driver release (525.105.17) fixed the GSP-RM issue that led to Xid 119. The GPU/driver "
                          "firmware hung, not the container toolkit.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.25",
               notes="The Xid 119 kernel line is the one the same user posted in NVIDIA/nvidia-docker#1648 (where "
                     "containers failed with 'failed to create shim task: OCI runtime create failed: runc create "
                     "failed'); the hook's stderr 'nvidia-container-cli: detection error: driver error: timed out' "
                     "is the wording of NVIDIA/gpu-operator#523 for the same kind of driver hang. The device plugin "
                     "logs Xid 119 and marks the GPU unhealthy (plugin v0.13 did not ignore 119).")
    uuid = gpu_uuid(node, 2)
    c.add(gpu_node(node, gpus=8, allocatable=7, product="NVIDIA-A100-SXM4-80GB", kubelet="v1.25.6",
                   driver="525.85.12", cuda="12.0"))
    dp = operator_plugin(node, image="nvcr.io/nvidia/k8s-device-plugin:v0.13.0-ubi8")
    c.add(dp)
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin",
          plugin_log("I0301 06:10:22", "v0.13.0", xid_unhealthy("I0306 21:34:31", 119, uuid),
                     ignored="map[13:true 31:true 43:true 45:true 68:true]"))
    c.add(kernel_event(node, "NVRMXid", xid_line, count=9))
    img = "registry.local/nlp/bert-infer:3.2"
    labels = {"app": "bert-infer"}
    c.add(*deployment("bert-infer", ns, "7d9c5b6f4", 1, {"containers": [container("server", image=img, gpus=1)]}, labels))
    st = waiting("server", "CrashLoopBackOff", f"back-off 2m40s restarting failed container=server pod={name}_{ns}"
                 f"(uid-{ns}-{name})", restarts=4, image=img,
                 last_exit={"reason": "StartError", "exitCode": 128, "message": start_err})
    p = pod(name, ns, phase="Running", node=node, containers=[container("server", image=img, gpus=1)],
            owner=("ReplicaSet", "bert-infer-7d9c5b6f4"), labels={**labels, "pod-template-hash": "7d9c5b6f4"},
            statuses=[st], conditions=[{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}])
    c.add(p, event("Pod", name, ns, "Failed", f"Error: {start_err}", count=5, source="kubelet"),
          backoff_event(name, ns, "server", count=11))
    return c


def jade_194(target_node: bool) -> Case:
    node, ns, jobname = "dgk713", "research", "train-resnet"
    frag = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    cid = "jade-hpc-gpu-194-node-dgk713-ecc" if target_node else "jade-hpc-gpu-194-jobs-fail-on-ecc-node"
    c = HwCase(cid,
               source="https://github.com/jade-hpc-gpu/jade-hpc-gpu.github.io/issues/194",
               fragment=frag,
               where="log of container train of the Job's Failed pods, all on node dgk713",
               expect="ecc-uncorrectable",
               also_ok={"xid-error": "Xid 48 is the double-bit ECC error itself; a finding on it names the same "
                                     "faulty GPU"},
               must_not=["gpu-memory-exhausted"],
               resolution="A user saw many jobs fail on node dgk713 with this error and raised it as a possible "
                          "hardware problem; the cluster admins investigated the node and fixed it.",
               target={"node": node} if target_node else {"pod": f"{ns}/{jobname}-p9w3z"}, k8s="v1.29",
               notes="JADE is a Slurm cluster; the snapshot models its jobs as a Kubernetes Job whose pods all landed "
                     "on dgk713 (8x V100 32 GB). DCGM exporter shows Xid 48 and a pending page retirement on GPU 5; "
                     "the device plugin marked GPU 5 unhealthy after the third failure, and the Job's fourth pod "
                     "runs on another GPU of the node.")
    uuid = gpu_uuid(node, 5)
    for n, bad in ((node, True), ("dgk714", False)):
        c.add(gpu_node(n, gpus=8, allocatable=7 if bad else 8, product="Tesla-V100-SXM2-16GB", kubelet="v1.29.6",
                       driver="535.183.01", cuda="12.2",
                       labels={"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB", "nvidia.com/gpu.memory": "32768"}))
        dp = operator_plugin(n)
        c.add(dp, dcgm_exporter(n))
        c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin",
              plugin_log("I1101 04:00:10", "v0.15.0", xid_unhealthy("I1120 01:58:12", 48, uuid) if bad else []))
        c.prom(n, dcgm(n, 8, "Tesla V100-SXM2-32GB", "535.183.01", xid={5: 48} if bad else {},
                       extra={"DCGM_FI_DEV_RETIRED_PENDING": {5: 1} if bad else {}},
                       pods={0: (ns, f"{jobname}-m7d2x", "train")} if bad else None))
    img = "nvcr.io/nvidia/pytorch:24.03-py3"
    j = job(jobname, ns, {"containers": [container("train", image=img, gpus=1)], "restartPolicy": "Never"})
    j["spec"]["backoffLimit"] = 6
    j["status"] = {"active": 1, "failed": 3, "startTime": "2026-11-20T00:12:00Z"}
    c.add(j)
    log = ("Epoch 3:  41%|████      | 512/1250 [02:11<03:09,  3.89it/s]\n"
           "Traceback (most recent call last):\n"
           '  File "/workspace/train.py", line 188, in <module>\n'
           "    loss.backward()\n"
           f"{frag}\n"
           "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
           "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
           "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    for i, pn in enumerate(("b4k9s", "h2x7q", "p9w3z")):
        name = f"{jobname}-{pn}"
        p = pod(name, ns, phase="Failed", node=node, containers=[container("train", image=img, gpus=1)],
                owner=("Job", jobname), labels={"job-name": jobname}, spec={"restartPolicy": "Never"},
                created=f"2026-11-20T0{i}:12:00Z", statuses=[terminated("train", "Error", 1, image=img)])
        c.add(p)
        c.log(ns, name, "train", text=log)
    c.add(pod(f"{jobname}-m7d2x", ns, phase="Running", node=node, containers=[container("train", image=img, gpus=1)],
              owner=("Job", jobname), labels={"job-name": jobname}, spec={"restartPolicy": "Never"},
              created="2026-11-20T02:05:00Z"))
    return c


# ================================================================== kubelet admission failures


def dp_231(target_node: bool) -> Case:
    node, ns = "node-11", "prod"
    msg = ("Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
           "Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 3: nvml: GPU is "
           "lost, which is unexpected")
    frag = "Pod " + msg
    cid = "k8s-device-plugin-231-node-gpu-lost" if target_node else "k8s-device-plugin-231-gpu-is-lost-admission"
    newest = "inference-7c9d8f6b5-zr4lm"
    c = HwCase(cid,
               source="https://github.com/NVIDIA/k8s-device-plugin/issues/231",
               fragment=frag,
               where="status.message of the rejected Deployment pods (reason UnexpectedAdmissionError); the same "
                     "text without 'Pod ' in their kubelet events",
               expect="xid-error" if target_node else "unexpected-admission-error",
               also_ok={} if target_node else {
                   "xid-error": "the root cause is the lost GPU (Xid 79, 'GPU is lost. Reboot the system to "
                                "recover this GPU'); naming it first is as useful as naming the rejection"},
               must_not=["insufficient-gpu", "nvml-init-failed"],
               resolution="One of the node's 4 GPUs crashed (nvidia-smi on the host: 'GPU is lost. Reboot the "
                          "system to recover this GPU'); the plugin's GetPreferredAllocation enumerates every GPU, so "
                          "the lost one made every allocation on the node fail and the 3 healthy GPUs unallocatable. "
                          "The Deployment kept creating pods that were rejected and left Failed (up to 12k). The "
                          "node needs a reboot; NVIDIA/k8s-device-plugin#2038 later traced the same failure to the "
                          "plugin's aligned-allocation path.",
               target={"node": node} if target_node else {"pod": f"{ns}/{newest}"}, k8s="v1.20",
               notes="Plugin v0.8.2 (static manifest, kube-system), whose health check logs the old wording "
                     "'XidCriticalError: Xid=79 on Device=GPU-..., the device will go unhealthy.' (as quoted in "
                     "NVIDIA/k8s-device-plugin#189). The Xid number is the snapshot's: a GPU that is 'lost' and "
                     "needs a reboot is Xid 79. Capacity 4, allocatable 3; two pods from before still run.")
    uuid = gpu_uuid(node, 3)
    c.add(gpu_node(node, gpus=4, allocatable=3, gfd=False, kubelet="v1.20.2", cpu="64", memory="512Gi"))
    dp = device_plugin_pod(node, name=f"nvidia-device-plugin-daemonset-{suffix(node, 'static')}", image="nvcr.io/nvidia/k8s-device-plugin:v0.8.2")
    c.add(dp)
    c.log("kube-system", dp["metadata"]["name"], "nvidia-device-plugin-ctr", (
        "2026/11/01 07:12:40 Loading NVML\n2026/11/01 07:12:40 Starting FS watcher.\n"
        "2026/11/01 07:12:40 Starting OS watcher.\n2026/11/01 07:12:40 Retreiving plugins.\n"
        "2026/11/01 07:12:40 Starting GRPC server for 'nvidia.com/gpu'\n"
        "2026/11/01 07:12:40 Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock\n"
        "2026/11/01 07:12:40 Registered device plugin for 'nvidia.com/gpu' with Kubelet\n"
        f"2026/11/20 02:41:07 XidCriticalError: Xid=79 on Device={uuid}, the device will go unhealthy.\n"
        f"2026/11/20 02:41:07 'nvidia.com/gpu' device marked unhealthy: {uuid}\n"))
    labels = {"app": "inference"}
    img = "registry.local/ml/inference:2.3.1"
    c.add(*deployment("inference", ns, "7c9d8f6b5", 3, {"containers": [container("server", image=img, gpus=1)]}, labels))
    plabels = {**labels, "pod-template-hash": "7c9d8f6b5"}
    for pn in ("8kq2d", "tw9xv"):
        c.add(pod(f"inference-7c9d8f6b5-{pn}", ns, phase="Running", node=node, owner=("ReplicaSet", "inference-7c9d8f6b5"),
                  labels=plabels, containers=[container("server", image=img, gpus=1)]))
    for i, pn in enumerate(("b2m7c", "d4hx8", "f6ql2", "j8vn3", "zr4lm")):
        name = f"inference-7c9d8f6b5-{pn}"
        c.add(rejected(name, ns, node, 1, frag, owner=("ReplicaSet", "inference-7c9d8f6b5"), labels=plabels, image=img,
                       cname="server", created=f"2026-11-20T02:{42 + i * 4}:00Z"),
              admission_event(name, ns, msg))
    return c


def dp_2038(target_node: bool) -> Case:
    node, ns = "gpu-5090-03", "embed"
    frag = ("with err: rpc error: code = Unknown desc = error getting list of preferred allocation devices:")
    msg = ("Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
           "Unknown desc = error getting list of preferred allocation devices: unable to get device link "
           "information: GPU is lost, which is unexpected")
    newest = "embed-server-6b9f7d8c5-w3q8n"
    cid = "k8s-device-plugin-2038-xid79-node" if target_node else "k8s-device-plugin-2038-link-info-admission"
    c = HwCase(cid,
               source="https://github.com/NVIDIA/k8s-device-plugin/issues/2038",
               fragment=frag,
               where="kubelet UnexpectedAdmissionError events and status.message of the rejected pods on the node",
               expect="xid-error" if target_node else "unexpected-admission-error",
               trap=not target_node,
               also_ok={"gpu-unhealthy": "the plugin marked the fallen-off GPU unhealthy (allocatable 7 of 8); "
                                         "that finding points at the same GPU"} if target_node else {
                   "xid-error": "the cause behind the rejection is the GPU that fell off the bus (Xid 79); "
                                "naming it first is as useful"},
               must_not=["insufficient-gpu", "gpu-fragmentation"],
               resolution="A GPU fell off the PCIe bus (Xid 79); the health check correctly marked it unhealthy and "
                          "allocatable dropped from 8 to 7, but the plugin's aligned GetPreferredAllocation path builds "
                          "link information for all physical devices, so the lost one made admission fail for every "
                          "GPU pod on the node, even 1-GPU pods; one Deployment produced about a thousand "
                          "UnexpectedAdmissionError pods every five minutes. The fix (PR #2039) falls back to an "
                          "unaligned allocation; the node itself needs the GPU recovered (reboot).",
               target={"node": node} if target_node else {"pod": f"{ns}/{newest}"}, k8s="v1.34 (RKE2)",
               notes="The thread elides the end of the error ('unable to get device link information: ...'); the "
                     "snapshot ends it with the NVML error of a lost GPU. Device plugin v0.18.1 from the GPU "
                     "Operator, 8x RTX 5090, driver 580.159.03.")
    uuid = gpu_uuid(node, 6)
    c.add(gpu_node(node, gpus=8, allocatable=7, product="NVIDIA-GeForce-RTX-5090", kubelet="v1.34.3+rke2r1",
                   driver="580.159.03", cuda="13.0", labels={"nvidia.com/gpu.memory": "32607"}))
    dp = operator_plugin(node, image="nvcr.io/nvidia/k8s-device-plugin:v0.18.1")
    c.add(dp)
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin",
          plugin_log("I0915 08:00:02", "v0.18.1", xid_unhealthy("I0917 03:12:44", 79, uuid)))
    labels = {"app": "embed-server"}
    img = "registry.local/embed/server:1.8"
    c.add(*deployment("embed-server", ns, "6b9f7d8c5", 4, {"containers": [container("server", image=img, gpus=1)]}, labels))
    plabels = {**labels, "pod-template-hash": "6b9f7d8c5"}
    for pn in ("a1b2c", "d3e4f", "g5h6j"):
        c.add(pod(f"embed-server-6b9f7d8c5-{pn}", ns, phase="Running", node=node, owner=("ReplicaSet", "embed-server-6b9f7d8c5"),
                  labels=plabels, containers=[container("server", image=img, gpus=1)]))
    for i, pn in enumerate(("k7m9p", "r2s4t", "v6x8z", "w3q8n")):
        name = f"embed-server-6b9f7d8c5-{pn}"
        c.add(rejected(name, ns, node, 1, "Pod was rejected: " + msg, owner=("ReplicaSet", "embed-server-6b9f7d8c5"),
                       labels=plabels, image=img, cname="server", created=f"2026-11-20T02:4{i}:00Z"),
              admission_event(name, ns, msg))
    return c


def k8s_130145_stale_allocation() -> Case:
    node, ns, name = "gpu-h100-12", "eval", "eval-run-4t7kd"
    frag = "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu."
    msg = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, "
           "Available: 0, which is unexpected")
    c = HwCase("kubernetes-130145-stale-device-allocation",
               source="https://github.com/kubernetes/kubernetes/issues/130145",
               fragment=frag,
               where="pod status.message (reason UnexpectedAdmissionError) and the kubelet event",
               expect="unexpected-admission-error", trap=True,
               must_not=["insufficient-gpu", "gpu-unhealthy", "xid-error", "gpu-fragmentation"],
               resolution="A kubelet device-manager bug (triaged, sig-node: 'this is a bad bug'): when an allocation "
                          "fails in the error path, the devices picked stay in the kubelet's allocated set, so later "
                          "pods see 'Available: 0' while the node has free, healthy GPUs. Fixed upstream by "
                          "restoring allocatedDevices after a failed allocation (kubernetes PR #130172, per #137317); "
                          "until then a kubelet restart clears it.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.31",
               notes="8x H100, allocatable 8, 3 GPUs used by running pods: the node has 5 free, healthy GPUs.")
    c.add(gpu_node(node, gpus=8, product="NVIDIA-H100-80GB-HBM3", kubelet="v1.31.4", driver="550.127.08"))
    dp = operator_plugin(node, image="nvcr.io/nvidia/k8s-device-plugin:v0.17.0")
    c.add(dp)
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1101 04:00:10", "v0.17.0", []))
    img = "nvcr.io/nvidia/pytorch:25.01-py3"
    for i in range(3):
        c.add(pod(f"serve-{i}", "llm", phase="Running", node=node, gpus=1))
    c.add(job("eval-run", ns, {"containers": [container("main", image=img, gpus=1)], "restartPolicy": "Never"}))
    c.add(rejected(name, ns, node, 1, "Pod was rejected: " + msg, owner=("Job", "eval-run"),
                   labels={"job-name": "eval-run"}, image=img),
          admission_event(name, ns, msg))
    return c


def k8s_124345_completed_readmitted() -> Case:
    node, ns, name = "gpu-a100-22", "batch", "batch-infer-28xk2"
    frag = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 4, "
            "Available: 0, which is unexpected")
    c = HwCase("kubernetes-124345-completed-pods-readmitted",
               source="https://github.com/kubernetes/kubernetes/issues/124345",
               fragment=frag,
               where="kubelet UnexpectedAdmissionError event on a Job pod that had already completed; pod "
                     "status.message",
               expect="unexpected-admission-error", trap=True,
               must_not=["insufficient-gpu", "gpu-unhealthy", "xid-error", "crash-loop"],
               resolution="After a kubelet restart, pods that had already completed (or failed) were run through "
                          "admission again and rejected because their GPUs now belong to running pods; sig-node "
                          "accepted it ('there's work to do in this area'; newer kubelets should not re-admit "
                          "terminal pods). The work had finished; nothing is wrong with the GPUs. Workaround: drain "
                          "and restart the kubelet; delete the rejected pods.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.29",
               notes="The Job completed before the kubelet restart (container terminated Completed, exit 0; Job "
                     "condition Complete); two 4-GPU training pods hold all 8 GPUs now.")
    c.add(gpu_node(node, gpus=8, kubelet="v1.29.9", driver="550.90.07"))
    dp = operator_plugin(node)
    c.add(dp, reboot_event(node))
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1120 02:20:41", "v0.15.0", []))
    for t in ("train-a", "train-b"):
        c.add(pod(t, "research", phase="Running", node=node, gpus=4))
    img = "nvcr.io/nvidia/tritonserver:24.05-py3"
    j = job("batch-infer", ns, {"containers": [container("main", image=img, gpus=4)], "restartPolicy": "Never"})
    j["status"] = {"succeeded": 1, "completionTime": "2026-11-20T01:55:00Z",
                   "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-20T01:55:00Z"}]}
    c.add(j)
    st = {"name": "main", "ready": False, "restartCount": 0, "image": img,
          "state": {"terminated": {"reason": "Completed", "exitCode": 0, "startedAt": "2026-11-20T01:10:00Z",
                                   "finishedAt": "2026-11-20T01:55:00Z"}}}
    c.add(rejected(name, ns, node, 4, "Pod was rejected: " + frag, owner=("Job", "batch-infer"),
                   labels={"job-name": "batch-infer"}, image=img, created="2026-11-20T01:09:00Z", statuses=[st]),
          admission_event(name, ns, frag))
    return c


def k8s_125579_node_reboot() -> Case:
    node, ns, name = "gke-ml-l4-pool-7f3c2a1b-x9kd", "default", "llm-dev"
    frag = "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices"
    msg = "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"
    c = HwCase("kubernetes-125579-node-reboot-plugin-not-ready",
               source="https://github.com/kubernetes/kubernetes/issues/125579",
               fragment=frag,
               where="kubelet UnexpectedAdmissionError event and status.message of a bare pod after a node reboot",
               expect="unexpected-admission-error", trap=True,
               must_not=["gpu-unhealthy", "xid-error", "ecc-uncorrectable"],
               resolution="After a node reboot the kubelet re-runs existing pods in random order; a pod can reach "
                          "device admission before the device plugin has re-registered healthy devices and is "
                          "rejected (behaviour since kubernetes PR #116376). The GPUs are fine; a bare pod stays "
                          "Failed forever and must be re-created.",
               target={"pod": f"{ns}/{name}"}, k8s="v1.30 (GKE)",
               notes="The thread's resource is redacted ('xxx'); GKE with nvidia.com/gpu assumed. The GKE device "
                     "plugin is Running again and the node advertises its L4 (1/1).")
    c.add(gke_node(node, 1, "nvidia-l4", "g2-standard-8", "v1.30.1-gke.1329000"), gke_plugin(node), reboot_event(node))
    c.add(rejected(name, ns, node, 1, "Pod was rejected: " + msg, image="vllm/vllm-openai:v0.5.0", created="2026-11-18T10:00:00Z",
                   statuses=[]),
          admission_event(name, ns, msg))
    return c


def leapfrogai_346_replaced() -> Case:
    node, ns = "leapfrog-gpu-0", "leapfrogai"
    old, new = "vllm-model-5f7c9b8d6d-k2x8p", "vllm-model-5f7c9b8d6d-qz4wn"
    msg = "Allocate failed due to cannot allocate unregistered device nvidia.com/gpu, which is unexpected"
    c = HwCase("leapfrogai-346-rejected-pod-replica-running",
               source="https://github.com/defenseunicorns/leapfrogai/issues/346",
               fragment="UnexpectedAdmissionError",
               where="status.reason of the old Deployment pod (phase Failed) after a cluster restart",
               expect="unexpected-admission-error",
               must_not=["gpu-unhealthy", "xid-error", "device-plugin-not-running"],
               resolution="On cluster restart the existing GPU pods failed with UnexpectedAdmissionError because they "
                          "could not be allocated GPUs, believed to be a race with the nvidia-device-plugin DaemonSet; "
                          "the Deployment spun up replacement replicas successfully, and the old pods linger until "
                          "deleted by hand.",
               target={"pod": f"{ns}/{old}"}, k8s="v1.28 (k3s)",
               notes="The thread does not quote the inner message; the snapshot uses the kubelet's wording for a "
                     "resource whose plugin has not registered yet. The replacement pod of the same ReplicaSet "
                     "runs on the same node with the GPU.")
    c.add(gpu_node(node, gpus=1, product="NVIDIA-A10G", kubelet="v1.28.8+k3s1", driver="535.161.08", cuda="12.2"))
    dp = pod(f"nvidia-device-plugin-{suffix(node, 'helm')}", "nvidia-device-plugin", phase="Running", node=node,
             containers=[container("nvidia-device-plugin-ctr", image="nvcr.io/nvidia/k8s-device-plugin:v0.14.5")],
             labels={"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": "nvidia-device-plugin"},
             owner=("DaemonSet", "nvidia-device-plugin"), created=T_BOOT,
             tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    c.add(dp, reboot_event(node))
    c.log("nvidia-device-plugin", dp["metadata"]["name"], "nvidia-device-plugin-ctr", plugin_log("I1120 02:21:40", "v0.14.5", []))
    labels = {"app": "vllm-model"}
    img = "ghcr.io/defenseunicorns/leapfrogai/vllm:0.6.1"
    c.add(*deployment("vllm-model", ns, "5f7c9b8d6d", 1, {"containers": [container("model", image=img, gpus=1)]}, labels))
    plabels = {**labels, "pod-template-hash": "5f7c9b8d6d"}
    c.add(rejected(old, ns, node, 1, "Pod was rejected: " + msg, owner=("ReplicaSet", "vllm-model-5f7c9b8d6d"),
                   labels=plabels, image=img, cname="model", created="2026-11-18T09:00:00Z"),
          admission_event(old, ns, msg))
    c.add(pod(new, ns, phase="Running", node=node, owner=("ReplicaSet", "vllm-model-5f7c9b8d6d"), labels=plabels,
              containers=[container("model", image=img, gpus=1)], created="2026-11-20T02:21:05Z"))
    return c


def cns_145_job_replaced() -> Case:
    node, ns = "cns-worker-01", "finetune"
    old, new = "nightly-finetune-x7p2k", "nightly-finetune-c4n8v"
    frag = "Allocate failed due to no healthy devices present"
    msg = "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"
    c = HwCase("cloud-native-stack-145-job-pod-rejected-after-restart",
               source="https://github.com/NVIDIA/cloud-native-stack/pull/145",
               fragment=frag,
               where="status.message (reason UnexpectedAdmissionError) of a Job pod after a node restart; kubelet event",
               expect="unexpected-admission-error",
               must_not=["gpu-unhealthy", "xid-error", "insufficient-gpu"],
               resolution="After a node restart, pods requesting GPU (or SR-IOV) resources can be rejected with "
                          "UnexpectedAdmissionError because the device plugin has not re-registered its devices yet; "
                          "they sit Failed and have to be deleted by hand (the PR, resolving cloud-native-stack#132, "
                          "adds an opt-in CronJob that deletes them).",
               target={"pod": f"{ns}/{old}"}, k8s="v1.30",
               notes="A Job pod rejected after the reboot; the Job controller already created a new pod that runs "
                     "on the same node with the GPU.")
    c.add(gpu_node(node, gpus=1, product="NVIDIA-A100-PCIE-40GB", kubelet="v1.30.2", driver="550.90.07"))
    dp = operator_plugin(node, image="nvcr.io/nvidia/k8s-device-plugin:v0.15.0-ubi8")
    dp["metadata"]["creationTimestamp"] = T_BOOT
    c.add(dp, reboot_event(node))
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1120 02:22:31", "v0.15.0", []))
    img = "nvcr.io/nvidia/nemo:24.07"
    j = job("nightly-finetune", ns, {"containers": [container("main", image=img, gpus=1)], "restartPolicy": "Never"})
    j["status"] = {"active": 1, "failed": 1, "startTime": "2026-11-20T01:00:00Z"}
    c.add(j)
    c.add(rejected(old, ns, node, 1, "Pod was rejected: " + msg, owner=("Job", "nightly-finetune"),
                   labels={"job-name": "nightly-finetune"}, image=img, created="2026-11-20T01:00:00Z"),
          admission_event(old, ns, msg))
    c.add(pod(new, ns, phase="Running", node=node, owner=("Job", "nightly-finetune"),
              labels={"job-name": "nightly-finetune"}, containers=[container("main", image=img, gpus=1)],
              spec={"restartPolicy": "Never"}, created="2026-11-20T02:23:10Z"))
    return c


# ================================================================== node health


def gpu_operator_1065_xid94() -> Case:
    node = "h100-node-01"
    frag = ("Skipping non-nvmlEventTypeXidCriticalError event: {Device:{Handle:0x7f0dcf40bdf8} EventType:2 "
            "EventData:0 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}")
    uuid = gpu_uuid(node, 4)
    c = HwCase("gpu-operator-1065-xid94-plugin-keeps-gpu-unhealthy",
               source="https://github.com/NVIDIA/gpu-operator/issues/1065",
               fragment=frag,
               where="log of the GPU Operator's nvidia-device-plugin container on the node",
               expect="gpu-unhealthy", trap=True,
               resolution="An Xid 94 (contained ECC error) on one H100 made the device plugin mark the GPU unhealthy, "
                          "and allocatable stayed at 7 of 8 after the error was gone: the plugin never marks a device "
                          "healthy again. Xid 94 is essentially an application error (NVIDIA's catalog: restart the "
                          "app) and should not disable the device; restart the plugin to get the GPU back, and set "
                          "DP_DISABLE_HEALTHCHECKS=94 as a workaround (k8s-device-plugin#1974 asks to ignore it by "
                          "default).",
               target={"node": node}, k8s="v1.28",
               notes="GPU Operator v23.9.2 (device plugin v0.14.5). The first log line is the thread's; the next "
                     "ones are the plugin's lines for the Xid 94 event (the excerpt cuts them off). No DCGM exporter.")
    c.add(gpu_node(node, gpus=8, allocatable=7, product="NVIDIA-H100-80GB-HBM3", kubelet="v1.28.9", driver="535.129.03",
                   cuda="12.2", cpu="128", memory="2015Gi"))
    dp = operator_plugin(node, image="nvcr.io/nvidia/k8s-device-plugin:v0.14.5-ubi8")
    c.add(dp)
    tail = [f"I1025 02:19:08.002792       1 health.go:151] {frag}",
            "I1025 02:19:08.048144       1 health.go:160] Processing event {Device:{Handle:0x7f0dcf40bdf8} EventType:8 "
            "EventData:94 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}",
            f"I1025 02:19:08.048171       1 health.go:186] XidCriticalError: Xid=94 on Device={uuid}; marking device as unhealthy.",
            f"I1025 02:19:08.048312       1 server.go:245] 'nvidia.com/gpu' device marked unhealthy: {uuid}"]
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin",
          plugin_log("I1020 06:12:01", "v0.14.5", tail, ignored="map[13:true 31:true 43:true 45:true 68:true]"))
    for i in range(3):
        c.add(pod(f"trainer-{i}", "ml", phase="Running", node=node, gpus=2))
    return c


def dcgm_exporter_348_fell_off_bus() -> Case:
    node = "gpu-node-a1"
    frag = "NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus"
    c = HwCase("dcgm-exporter-348-gpu-fell-off-bus-allocatable-unchanged",
               source="https://github.com/NVIDIA/dcgm-exporter/issues/348",
               fragment=frag,
               where="kernel log line as a node-problem-detector event on the Node",
               expect="xid-error",
               also_ok={"gpu-count-mismatch": "a node whose GPU fell off the bus runs short of a GPU; a finding "
                                              "that names the missing GPU is as useful"},
               resolution="One GPU of the node fell off the bus; in Kubernetes nothing showed it (node allocatable "
                          "for nvidia.com/gpu did not change, no DCGM metric reported the state), and the GPUs had to "
                          "be reset (nvidia-smi -r) after stopping whatever used them. The reporter asked for "
                          "dcgm-exporter to expose the state.",
               target={"node": node}, k8s="v1.29",
               notes="The kernel line is the thread's; it reaches Kubernetes only through a node-problem-detector "
                     "kernel-monitor rule (event reason assumed). Allocatable stays 8 of 8 and the device-plugin "
                     "log is clean, as the reporter describes. No DCGM metrics in the snapshot.")
    c.add(gpu_node(node, gpus=8, product="NVIDIA-A100-SXM4-80GB", kubelet="v1.29.6", driver="535.161.08", cuda="12.2"))
    dp = operator_plugin(node)
    c.add(dp, kernel_event(node, "GPUFellOffBus", f"{frag}.", count=1))
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1101 04:00:10", "v0.15.0", []))
    for i in range(2):
        c.add(pod(f"infer-{i}", "serving", phase="Running", node=node, gpus=2))
    return c


CASES = [
    deepfacelab_89_ecc_tensorflow,
    mineru_426_bad_card,
    vllm_7896_bad_node,
    pytorch_42077_app_kernel,
    unet_258_device_side_assert,
    tegnas_19_xid_on_other_gpu,
    nccl_2076_infiniband,
    gsp_timeout_446,
    lambda: jade_194(False),
    lambda: dp_231(False),
    lambda: dp_2038(False),
    k8s_130145_stale_allocation,
    k8s_124345_completed_readmitted,
    k8s_125579_node_reboot,
    leapfrogai_346_replaced,
    cns_145_job_replaced,
    lambda: dp_2038(True),
    lambda: dp_231(True),
    lambda: jade_194(True),
    gpu_operator_1065_xid94,
    dcgm_exporter_348_fell_off_bus,
]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
