"""Real-world runtime cases: which container runtime really runs the pod, the NVIDIA
container toolkit's errors, pods that request no GPU, every container and operand
(init containers, GPU Operator validators), and hardware that outranks the symptom
it causes. Run ``python tests/realworld/build_runtime.py`` to rewrite their snapshots.

Where a thread does not say a detail the snapshot needs (the GPU model, a pod's
generated name suffix), the case says so in ``notes``; everything the diagnosis
turns on (the message, the requests, the RuntimeClass, the versions the thread
gives) is taken from the thread."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (backoff, kubelet_event,   # noqa: E402
    NOW, Case, _meta, container, cpu_node, event, gpu_node, pod, running, taint, terminated, waiting, runtime_class, node_info,
)

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


# ------------------------------------------------------------------ local helpers


class RuntimeCase(Case):
    """A Case that can also write ``probes/<node>.json`` (a gpuctl node probe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.probes: dict[str, dict] = {}

    def probe(self, node: str, data: dict) -> "RuntimeCase":
        self.probes[node] = data
        return self

    def write(self, root: Path = Path(__file__).resolve().parent) -> Path:
        d = super().write(root)
        for node, data in self.probes.items():
            f = d / "snapshot" / "probes" / f"{node}.json"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(data, indent=1))
        return d


def with_spec(p: dict, **spec: Any) -> dict:
    p["spec"].update(spec)
    return p


def crashloop(name: str, restarts: int, exit_code: int = 1, image: str = "", reason: str = "Error",
              message: str = "", pod_ref: str = "") -> dict[str, Any]:
    """A container in CrashLoopBackOff after ``restarts`` non-zero exits."""
    last = {"reason": reason, "exitCode": exit_code, **({"message": message} if message else {})}
    wait_msg = f"back-off 5m0s restarting failed container={name} pod={pod_ref}" if pod_ref else ""
    return waiting(name, "CrashLoopBackOff", wait_msg, restarts=restarts, last_exit=last,
                   **({"image": image} if image else {}))


def start_error(name: str, message: str, restarts: int, image: str) -> dict[str, Any]:
    """containerd's view of a container the OCI hook refused: StartError exit 128, then back-off."""
    return crashloop(name, restarts, exit_code=128, image=image, reason="StartError", message=message)


def pending_init(name: str, image: str) -> dict[str, Any]:
    return waiting(name, "PodInitializing", image=image)


def operator_pod(name: str, namespace: str, node: str, app: str, containers: list, init_containers: list,
                 statuses: list, init_statuses: list, phase: str = "Pending",
                 runtime_class_name: Optional[str] = "nvidia", owner: str = "") -> dict[str, Any]:
    """A GPU Operator operand (DaemonSet pod) on ``node``."""
    p = pod(name, namespace, phase=phase, node=node, containers=containers, init_containers=init_containers,
            labels={"app": app, "app.kubernetes.io/part-of": "gpu-operator"},
            owner=("DaemonSet", owner or app), tolerations=[GPU_TOLERATION],
            statuses=statuses, init_statuses=init_statuses)
    if runtime_class_name:
        p["spec"]["runtimeClassName"] = runtime_class_name
    return p


def running_operand(name: str, namespace: str, node: str, app: str, image: str, ctr: str,
                    runtime_class_name: Optional[str] = "nvidia") -> dict[str, Any]:
    c = container(ctr, image=image)
    return operator_pod(name, namespace, node, app, [c], [], [running(ctr, image=image)], [],
                        phase="Running", runtime_class_name=runtime_class_name)


def device_plugin_operand(node: str, namespace: str, suffix: str, image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.16.2-ubi8",
                          runtime_class_name: Optional[str] = "nvidia") -> dict[str, Any]:
    return running_operand(f"nvidia-device-plugin-daemonset-{suffix}", namespace, node,
                           "nvidia-device-plugin-daemonset", image, "nvidia-device-plugin", runtime_class_name)


def toolkit_operand(node: str, namespace: str, suffix: str, image: str = "nvcr.io/nvidia/k8s/container-toolkit:v1.16.1-ubuntu20.04") -> dict[str, Any]:
    return running_operand(f"nvidia-container-toolkit-daemonset-{suffix}", namespace, node,
                           "nvidia-container-toolkit-daemonset", image, "nvidia-container-toolkit-ctr",
                           runtime_class_name="nvidia")


VECTOR_ADD_FAIL = "Failed to allocate device vector A (error code CUDA driver version is insufficient for CUDA runtime version)!"


# ------------------------------------------------------------------ which runtime really runs the container


def vectoradd_default_runtime_runc() -> Case:
    image = "k8s.gcr.io/cuda-vector-add:v0.1"
    c = Case("gpu-operator-1017-vectoradd-default-runtime-not-nvidia",
             source="https://github.com/NVIDIA/gpu-operator/pull/1017",
             fragment=VECTOR_ADD_FAIL,
             where="log of container cuda-vector-add (previous instance) of the GPU Operator's test pod, in CrashLoopBackOff",
             expect="nvidia-runtime-error", trap=True,
             resolution="Not the driver and not the CUDA version: the node's containerd default runtime is runc, "
                        "not nvidia, so a pod without runtimeClassName: nvidia is never handled by the NVIDIA "
                        "runtime and the sample finds no driver library. Setting runtimeClassName: nvidia on the "
                        "pod fixes it (PR #1017, for the same report on k3s in gpu-operator#415).",
             target={"pod": "default/gpu-operator-test"},
             must_not=["driver-cuda-mismatch", "gpu-not-requested"], k8s="v1.30 (k3s v1.30.4+k3s1, GPU Operator v24.6.2)",
             notes="The pod is the repository's tests/gpu-pod.yaml (gpu-operator-test, cuda-vector-add, "
                   "k8s.gcr.io/cuda-vector-add:v0.1, nvidia.com/gpu: 1, no runtimeClassName). The k3s version and "
                   "operator version are those of the gpu-operator#415 report PR #1017 cites; the GPU model is "
                   "not given there (a T4 is assumed). The operator's RuntimeClass nvidia exists, its operands use it "
                   "and run: only the test pod bypasses the NVIDIA runtime.")
    node = node_info(gpu_node("k3s-gpu-01", gpus=1, product="Tesla-T4", kubelet="v1.30.4+k3s1", driver="550.90.07", cuda="12.4"),
                     "v1.30.4+k3s1", "containerd://1.7.20-k3s1", "Ubuntu 22.04.4 LTS", "5.15.0-119-generic")
    c.add(node, runtime_class("nvidia"))
    c.add(device_plugin_operand("k3s-gpu-01", "gpu-operator", "7x2kq"),
          toolkit_operand("k3s-gpu-01", "gpu-operator", "m4p9z", "nvcr.io/nvidia/k8s/container-toolkit:v1.16.1-ubuntu20.04"))
    ref = "gpu-operator-test_default(uid-default-gpu-operator-test)"
    p = pod("gpu-operator-test", "default", phase="Running", node="k3s-gpu-01",
            containers=[container("cuda-vector-add", image=image, gpus=1)],
            statuses=[crashloop("cuda-vector-add", 4, image=image, pod_ref=ref)])
    p["spec"]["restartPolicy"] = "OnFailure"
    c.add(p, backoff("gpu-operator-test", "default", "cuda-vector-add"))
    c.log("default", "gpu-operator-test", "cuda-vector-add", VECTOR_ADD_FAIL + "\n[Vector addition of 50000 elements]\n",
          previous=True)
    return c


def microk8s_cuda_add_no_runtimeclass() -> Case:
    image = "registry.k8s.io/cuda-vector-add:v0.1"
    c = Case("microk8s-core-addons-400-cuda-add-needs-runtimeclass",
             source="https://github.com/canonical/microk8s-core-addons/pull/400",
             fragment=VECTOR_ADD_FAIL,
             where="log of container cuda-vector-add (previous instance), pod in CrashLoopBackOff",
             expect="nvidia-runtime-error", trap=True,
             resolution="The nvidia addon stopped making nvidia the global default containerd runtime (the GPU "
                        "Operator decides), so a GPU pod must opt in with runtimeClassName: nvidia. Without it the "
                        "cuda-add test crash-loops with the 'driver version is insufficient' message; with it the test "
                        "passes on the same node (g4dn.xlarge, T4).",
             target={"pod": "default/cuda-vector-add"},
             must_not=["driver-cuda-mismatch", "gpu-not-requested"], k8s="v1.32 (MicroK8s 1.32/stable)",
             notes="The pod is the addon's tests/templates/cuda-add.yaml before the PR (no runtimeClassName). "
                   "The driver version is not given in the PR; the operator's default of that time is assumed.")
    node = node_info(gpu_node("ip-172-31-20-144", gpus=1, product="Tesla-T4", kubelet="v1.32.3", driver="570.124.06", cuda="12.8",
                              labels={"node.kubernetes.io/instance-type": "g4dn.xlarge"}),
                     "v1.32.3", "containerd://1.6.28", "Ubuntu 22.04.5 LTS", "6.8.0-1024-aws")
    c.add(node, runtime_class("nvidia"))
    c.add(device_plugin_operand("ip-172-31-20-144", "gpu-operator-resources", "h8k2d"),
          toolkit_operand("ip-172-31-20-144", "gpu-operator-resources", "q2w7n"))
    ref = "cuda-vector-add_default(uid-default-cuda-vector-add)"
    p = pod("cuda-vector-add", "default", phase="Running", node="ip-172-31-20-144",
            containers=[container("cuda-vector-add", image=image, gpus=1)],
            statuses=[crashloop("cuda-vector-add", 5, image=image, pod_ref=ref)])
    p["spec"]["restartPolicy"] = "OnFailure"
    c.add(p, backoff("cuda-vector-add", "default", "cuda-vector-add"))
    c.log("default", "cuda-vector-add", "cuda-vector-add", "[Vector addition of 50000 elements]\n" + VECTOR_ADD_FAIL + "\n",
          previous=True)
    return c


NO_NVIDIA_RUNTIME = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: '
                     'no runtime for "nvidia" is configured')


def microk8s_no_runtime_configured() -> Case:
    c = Case("microk8s-2474-no-runtime-for-nvidia-configured",
             source="https://github.com/canonical/microk8s/issues/2474",
             fragment=NO_NVIDIA_RUNTIME,
             where="event FailedCreatePodSandBox (kubelet) on a pod that names RuntimeClass nvidia; the pod stays ContainerCreating",
             expect="runtime-class-missing",
             resolution="The node's containerd had no 'nvidia' runtime configured. On MicroK8s 1.21 the stable GPU "
                        "addon did not set it up; refreshing to latest/edge and disabling/re-enabling the gpu addon "
                        "installed the operator that configures the runtime, and everything worked.",
             target={"pod": "gpu-operator-resources/nvidia-operator-validator-tq9wd"},
             must_not=["driver-cuda-mismatch", "gpu-not-requested"], k8s="v1.21 (MicroK8s 1.21)",
             notes="The thread shows the message in a screenshot without naming the pod; it is placed on the GPU "
                   "Operator's validator (runtimeClassName: nvidia), the operand the gpu addon starts first on the "
                   "node. The GPU model is not given (a T4 is assumed); the node advertises no GPU yet because the "
                   "operands cannot start.")
    node = node_info(gpu_node("gpu-workstation", gpus=0, gfd=False, kubelet="v1.21.3-3+90fd5f3d2aea0a",
                              labels={"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true"}),
                     "v1.21.3-3+90fd5f3d2aea0a", "containerd://1.4.4", "Ubuntu 20.04.2 LTS", "5.8.0-63-generic")
    c.add(node, runtime_class("nvidia"))
    img = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.7.1"
    inits = [container(n, image=img) for n in ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation")]
    p = operator_pod("nvidia-operator-validator-tq9wd", "gpu-operator-resources", "gpu-workstation", "nvidia-operator-validator",
                     [container("nvidia-operator-validator", image=img)], inits,
                     statuses=[waiting("nvidia-operator-validator", "PodInitializing", image=img)],
                     init_statuses=[waiting(i["name"], "PodInitializing", image=img) for i in inits])
    c.add(p, kubelet_event("Pod", "nvidia-operator-validator-tq9wd", "gpu-operator-resources", "FailedCreatePodSandBox",
                           NO_NVIDIA_RUNTIME, count=31))
    return c


def toolkit_not_ready_no_runtime() -> Case:
    c = Case("gpu-operator-730-toolkit-not-configured-no-runtime",
             source="https://github.com/NVIDIA/gpu-operator/issues/730",
             fragment=NO_NVIDIA_RUNTIME,
             where="event FailedCreatePodSandBox (kubelet) on the device-plugin DaemonSet pod; the container-toolkit pod on the node is still in Init",
             expect="runtime-class-missing",
             resolution="The RuntimeClass nvidia exists, but the node's containerd has no nvidia handler yet: the "
                        "nvidia-container-toolkit-daemonset pod on that node is stuck in its init container and has "
                        "not configured the nvidia runtime in containerd (maintainer's reading); every operand that "
                        "uses runtimeClassName: nvidia fails until it does.",
             target={"pod": "gpu-operator/nvidia-device-plugin-daemonset-w72xb"},
             must_not=["driver-cuda-mismatch", "insufficient-gpu"], k8s="v1.24 (kops 1.24.1, GPU Operator v23.9.2)",
             notes="Node name and pod names are the thread's. The GPU model is not given; the node has NFD's "
                   "PCI label and no GPU capacity (nothing advertises yet).")
    node = node_info(gpu_node("i-071a4e5a302e4025b", gpus=0, gfd=False, kubelet="v1.24.14",
                              labels={"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true",
                                      "nvidia.com/gpu.deploy.container-toolkit": "true", "nvidia.com/gpu.deploy.device-plugin": "true"}),
                     "v1.24.14", "containerd://1.6.20", "Ubuntu 20.04.6 LTS", "5.15.0-1036-aws")
    c.add(node, cpu_node("i-0a9d3c1f7e2b64c11", kubelet="v1.24.14"), runtime_class("nvidia"))
    dp_img = "nvcr.io/nvidia/k8s-device-plugin:v0.14.5-ubi8"
    val_img = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v23.9.2"
    dp = operator_pod("nvidia-device-plugin-daemonset-w72xb", "gpu-operator", "i-071a4e5a302e4025b",
                      "nvidia-device-plugin-daemonset", [container("nvidia-device-plugin", image=dp_img)],
                      [container("toolkit-validation", image=val_img)],
                      statuses=[waiting("nvidia-device-plugin", "PodInitializing", image=dp_img)],
                      init_statuses=[waiting("toolkit-validation", "PodInitializing", image=val_img)])
    tk_img = "nvcr.io/nvidia/k8s/container-toolkit:v1.14.6-ubuntu20.04"
    tk = operator_pod("nvidia-container-toolkit-daemonset-vb6qn", "gpu-operator", "i-071a4e5a302e4025b",
                      "nvidia-container-toolkit-daemonset", [container("nvidia-container-toolkit-ctr", image=tk_img)],
                      [container("driver-validation", image=val_img)],
                      statuses=[waiting("nvidia-container-toolkit-ctr", "PodInitializing", image=tk_img)],
                      init_statuses=[running("driver-validation", image=val_img, ready=False)],
                      runtime_class_name=None)
    c.add(dp, tk)
    c.add(event("Pod", "nvidia-device-plugin-daemonset-w72xb", "gpu-operator", "Scheduled",
                "Successfully assigned gpu-operator/nvidia-device-plugin-daemonset-w72xb to i-071a4e5a302e4025b",
                type_="Normal"),
          kubelet_event("Pod", "nvidia-device-plugin-daemonset-w72xb", "gpu-operator", "FailedCreatePodSandBox",
                        NO_NVIDIA_RUNTIME, count=10))
    return c


def crio_no_runtime_handler() -> Case:
    frag = "failed to find runtime handler nvidia from"
    msg = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find runtime handler nvidia from "
           "runtime list map[crun:0xc0004dd5f0 runc:0xc0004dd790]")
    image = "registry.example.com/platform/mig-profiler:0.3.1"
    c = Case("gpu-operator-1298-crio-has-no-nvidia-runtime-handler",
             source="https://github.com/NVIDIA/gpu-operator/issues/1298",
             fragment=frag,
             where="event FailedCreatePodSandBox (kubelet) on a pod that names runtimeClassName: nvidia on an OpenShift (CRI-O) node",
             expect="runtime-class-missing",
             resolution="CRI-O's runtime list has only crun and runc: on OpenShift the toolkit installs an OCI prestart "
                        "hook for CRI-O instead of a runtime handler, so the 'nvidia' handler does not apply there "
                        "(maintainer). The toolkit DaemonSet was running fine; the fix is to drop runtimeClassName: "
                        "nvidia from the pod.",
             target={"pod": "mig-tools/mig-profiler-0"},
             must_not=["nvidia-runtime-error", "driver-cuda-mismatch"], k8s="v1.30 (OpenShift, CRI-O, GPU Operator defaults)",
             notes="The thread quotes the message by hand ('Failled to create pod sandbox:rpc error code = ...'); the "
                   "event here carries CRI-O's own wording around the same words. The application (it creates MIG "
                   "profiles) and its names are not given; the OpenShift version is not given.")
    node = node_info(gpu_node("worker-gpu-0", gpus=1, product="NVIDIA-A100-PCIE-40GB", driver="550.144.03", cuda="12.4",
                              kubelet="v1.30.7"),
                     "v1.30.7", "cri-o://1.30.8-3.rhaos4.17.git1a4b8ff.el9", "Red Hat Enterprise Linux CoreOS 417.94",
                     "5.14.0-427.50.1.el9_4.x86_64")
    c.add(node, runtime_class("nvidia"),
          device_plugin_operand("worker-gpu-0", "nvidia-gpu-operator", "c7s2k", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                                runtime_class_name=None),
          toolkit_operand("worker-gpu-0", "nvidia-gpu-operator", "f9w4n", "nvcr.io/nvidia/k8s/container-toolkit:v1.17.4-ubi8"))
    p = pod("mig-profiler-0", "mig-tools", phase="Pending", node="worker-gpu-0", owner=("StatefulSet", "mig-profiler"),
            containers=[container("profiler", image=image, gpus=1)],
            statuses=[waiting("profiler", "ContainerCreating", image=image)])
    p["spec"]["runtimeClassName"] = "nvidia"
    c.add(p, kubelet_event("Pod", "mig-profiler-0", "mig-tools", "FailedCreatePodSandBox", msg, count=18))
    return c


def replicaset(name: str, namespace: str, template: dict, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": _meta(name, namespace, owner=("Deployment", name.rsplit("-", 1)[0])),
            "spec": {"replicas": replicas, "selector": {"matchLabels": template["metadata"]["labels"]}, "template": template},
            "status": {"replicas": 0, "observedGeneration": 1}}


def truenas_runtimeclass_not_found() -> Case:
    frag = 'pods "prune-test1-ix-chart-6c6f674cbb-" is forbidden: pod rejected: RuntimeClass "nvidia" not found'
    image = "busybox:1.36"
    c = Case("truenas-middleware-11178-runtimeclass-nvidia-not-found",
             source="https://github.com/truenas/middleware/pull/11178",
             fragment=frag,
             where="event FailedCreate (replicaset-controller) on the app's ReplicaSet; no pod is created",
             expect="runtime-class-missing",
             resolution="The app middleware always told the chart to set runtimeClassName: nvidia, even on a system "
                        "without an NVIDIA GPU, where no 'nvidia' RuntimeClass exists, so the API server rejected every "
                        "pod. The fix sets the RuntimeClass only when the user actually asks for an NVIDIA GPU.",
             target={"namespace": "ix-prune-test1", "target": "replicaset/prune-test1-ix-chart-6c6f674cbb"},
             must_not=["nvidia-runtime-error", "insufficient-gpu", "unknown-resource-name"],
             k8s="v1.26 (TrueNAS SCALE 23.10, k3s)",
             notes="The message is the PR's integration-test failure; the app requests no GPU. Namespace and image "
                   "follow the chart's naming (ix-<app>, ix-chart) and are assumed.")
    node = node_info(cpu_node("ix-truenas", kubelet="v1.26.6+k3s-6a894050-dirty"),
                     "v1.26.6+k3s-6a894050-dirty", "containerd://1.7.1-k3s1", "Debian GNU/Linux 12 (bookworm)", "6.1.42-production+truenas")
    tmpl = {"metadata": {"labels": {"app.kubernetes.io/instance": "prune-test1", "app.kubernetes.io/name": "ix-chart",
                                    "pod-template-hash": "6c6f674cbb"}},
            "spec": {"runtimeClassName": "nvidia", "containers": [container("ix-chart", image=image)]}}
    c.add(node, replicaset("prune-test1-ix-chart-6c6f674cbb", "ix-prune-test1", tmpl))
    c.add(event("ReplicaSet", "prune-test1-ix-chart-6c6f674cbb", "ix-prune-test1", "FailedCreate", "Error creating: " + frag,
                count=14, source="replicaset-controller"))
    return c


# ------------------------------------------------------------------ NVIDIA container toolkit / CLI errors


def cdi_unresolvable_uuid() -> Case:
    msg = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: could not apply "
           "required modification to OCI specification: error modifying OCI spec: failed to inject CDI devices: "
           "unresolvable CDI devices management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead")
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
    c = Case("nvidia-container-toolkit-1239-cdi-spec-lacks-gpu-uuid",
             source="https://github.com/NVIDIA/nvidia-container-toolkit/issues/1239",
             fragment="failed to inject CDI devices: unresolvable CDI devices management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead",
             where="event Failed (kubelet) 'Error: ...' and the container's last termination (StartError, exit 128)",
             expect="nvidia-runtime-error",
             resolution="The GPU exists (nvidia-smi -L lists GPU-e78e68c0-...), but the CDI spec the toolkit generated "
                        "under /var/run/cdi holds only the 'all' device, so the runtime cannot resolve the UUID the device "
                        "plugin asked for; running nvidia-ctk cdi generate by hand produces the missing entries. A "
                        "toolkit (CDI spec generation) failure on the node, not the pod.",
             target={"pod": "default/cuda-cdi-test"},
             must_not=["driver-cuda-mismatch", "gpu-not-requested", "image-pull-failed"],
             k8s="v1.33 (RKE2, NVIDIA Container Toolkit v1.17.8, GPU Operator with cdi.enabled)",
             notes="RKE2 version and pod name are not given (assumed); the GPU (Tesla T4, UUID), the toolkit version, "
                   "runtimeClassName nvidia-cdi and the one-GPU request are the thread's.")
    node = node_info(gpu_node("rke2-gpu", gpus=1, product="Tesla-T4", kubelet="v1.33.3+rke2r1", driver="570.148.08", cuda="12.8"),
                     "v1.33.3+rke2r1", "containerd://2.0.5-k3s2", "Ubuntu 24.04.2 LTS", "6.8.0-71-generic")
    c.add(node, cpu_node("rke2-server", kubelet="v1.33.3+rke2r1"))
    c.add(runtime_class("nvidia"), runtime_class("nvidia-cdi"), runtime_class("nvidia-legacy"))
    c.add(device_plugin_operand("rke2-gpu", "gpu-operator", "5dn8c", "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"),
          toolkit_operand("rke2-gpu", "gpu-operator", "zz4lk", "nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04"))
    p = pod("cuda-cdi-test", "default", phase="Running", node="rke2-gpu",
            containers=[container("cuda", image=image, gpus=1, command=["nvidia-smi", "-L"])],
            statuses=[start_error("cuda", msg, 1, image)])
    p["spec"]["runtimeClassName"] = "nvidia-cdi"
    c.add(p, kubelet_event("Pod", "cuda-cdi-test", "default", "Failed", "Error: " + msg, count=2))
    return c


def eks_ami_libnvidia_container_regression() -> Case:
    msg = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
           "unable to start container process: error during container init: error running hook #0: error running hook: "
           "exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
           "nvidia-container-cli: mount error: file creation failed: /run/containerd/io.containerd.runtime.v2.task/k8s.io/"
           "48bbbb4cd0073d2211c2cb9c9ae33ed5f160998e21b63808557aa498f586764b/rootfs/usr/bin/nvidia-smi: file exists: unknown")
    image = "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04"
    c = Case("amazon-eks-ami-2165-libnvidia-container-regression",
             source="https://github.com/awslabs/amazon-eks-ami/issues/2165",
             fragment=("nvidia-container-cli: mount error: file creation failed: /run/containerd/io.containerd.runtime.v2.task/"
                       "k8s.io/48bbbb4cd0073d2211c2cb9c9ae33ed5f160998e21b63808557aa498f586764b/rootfs/usr/bin/nvidia-smi: "
                       "file exists: unknown"),
             where="container lastState.terminated (reason StartError, exit code 128) message, and the kubelet's Failed event",
             expect="nvidia-runtime-error",
             resolution="A package regression in the EKS GPU AMI amazon-eks-gpu-node-1.30-v20250224: it shipped an "
                        "older libnvidia-container than the previous AMI, and the NVIDIA hook now fails on every pod "
                        "requesting a GPU. Nodes on the previous AMI (v20250212) work; the fix is on the node (AMI), not "
                        "in the pod or its image.",
             target={"pod": "ml/inference-6d8f9c7b5-x2lqp"},
             must_not=["driver-cuda-mismatch", "image-pull-failed", "gpu-not-requested"],
             k8s="v1.30 (EKS, AMI amazon-eks-gpu-node-1.30-v20250224, Karpenter)",
             notes="The workload, its image and the instance type are not given (a g5 node and an NVIDIA CUDA base "
                   "image are assumed); the message, exit code, reason and AMI are the thread's. EKS's AL2 GPU AMI "
                   "ships driver and toolkit; the standalone device plugin runs in kube-system.")
    node = node_info(gpu_node("ip-10-0-87-12.ec2.internal", gpus=1, product="NVIDIA-A10G", kubelet="v1.30.9-eks-5d632ec",
                              driver="550.144.03", cuda="12.4", gfd=False,
                              labels={"node.kubernetes.io/instance-type": "g5.xlarge", "karpenter.sh/nodepool": "gpu",
                                      "k8s.amazonaws.com/accelerator": "nvidia-tesla-a10g"}),
                     "v1.30.9-eks-5d632ec", "containerd://1.7.25", "Amazon Linux 2", "5.10.233-224.894.amzn2.x86_64")
    c.add(node)
    dp = device_plugin_operand("ip-10-0-87-12.ec2.internal", "kube-system", "k9v4s", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                               runtime_class_name=None)
    dp["metadata"]["labels"] = {"name": "nvidia-device-plugin-ds"}
    c.add(dp)
    p = pod("inference-6d8f9c7b5-x2lqp", "ml", phase="Running", node="ip-10-0-87-12.ec2.internal",
            containers=[container("inference", image=image, gpus=1)], owner=("ReplicaSet", "inference-6d8f9c7b5"),
            statuses=[start_error("inference", msg, 3, image)])
    c.add(p, kubelet_event("Pod", "inference-6d8f9c7b5-x2lqp", "ml", "Failed", "Error: " + msg, count=4),
          backoff("inference-6d8f9c7b5-x2lqp", "ml", "inference", count=9))
    return c


def vllm_requires_cuda_124() -> Case:
    msg = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
           "unable to start container process: error during container init: error running hook #0: error running hook: "
           "exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
           "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a "
           "newer version, or use an earlier cuda container: unknown")
    image = "vllm/vllm-openai:v0.5.0"
    c = Case("vllm-5635-image-needs-cuda-12-4-driver-530",
             source="https://github.com/vllm-project/vllm/issues/5635",
             fragment=("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your "
                       "driver to a newer version, or use an earlier cuda container: unknown"),
             where="container lastState.terminated (StartError, exit 128) message and the kubelet's Failed event",
             expect="driver-cuda-mismatch",
             resolution="A genuine driver/CUDA mismatch: vLLM images after 0.4.3 are built on a CUDA 12.4 base image "
                        "(NVIDIA_REQUIRE_CUDA cuda>=12.4), and the host's driver 530 supports only CUDA 12.1. The "
                        "maintainer explains the base image moved to 12.4; the way out is a newer driver or the older "
                        "image (v0.4.3).",
             target={"pod": "llm/vllm-0"},
             must_not=["nvidia-runtime-error", "crash-loop"], k8s="v1.29",
             notes="The thread runs the image with Docker; the toolkit's message is the same under containerd, and "
                   "is placed where the kubelet keeps it for a pod on a node with the thread's driver (530, CUDA 12.1) "
                   "and GPU (V100). The Kubernetes version is not from the thread.")
    node = gpu_node("gpu-v100-1", gpus=1, product="Tesla-V100-SXM2-16GB", driver="530.30.02", cuda="12.1")
    c.add(node)
    c.add(device_plugin_operand("gpu-v100-1", "kube-system", "p2c6m", "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
                                runtime_class_name=None))
    p = pod("vllm-0", "llm", phase="Running", node="gpu-v100-1", owner=("StatefulSet", "vllm"),
            containers=[container("vllm", image=image, gpus=1)],
            statuses=[start_error("vllm", msg, 2, image)])
    c.add(p, kubelet_event("Pod", "vllm-0", "llm", "Failed", "Error: " + msg, count=3))
    return c


def cuda11_image_on_pre450_driver() -> Case:
    msg = ("OCI runtime create failed: container_linux.go:370: starting container process caused: process_linux.go:459: "
           "container init caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: "
           "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.0, please update your driver to a "
           "newer version, or use an earlier cuda container: unknown")
    image = "nvidia/cuda:11.0-base"
    c = Case("nvidia-docker-1442-cuda-11-image-on-pre-450-driver",
             source="https://github.com/NVIDIA/nvidia-docker/issues/1442",
             fragment=("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.0, please update your "
                       "driver to a newer version, or use an earlier cuda container: unknown"),
             where="kubelet Failed event and the container's last termination message (Docker-era hook wrapper)",
             expect="driver-cuda-mismatch",
             resolution="Maintainer: the relevant part is the requirement error; a CUDA 11 container cannot be "
                        "launched on a host driver older than 450. Upgrade the driver or use an older CUDA image.",
             target={"pod": "default/cuda-check"},
             must_not=["nvidia-runtime-error"], k8s="v1.19 (Docker 19.03 runtime)",
             notes="The thread (Ubuntu 16.04, Docker 19.03.4) runs the container with Docker; the same wrapper text is "
                   "what a dockershim kubelet of that time reported. The driver version is not stated beyond 'older "
                   "than 450'; 440.33.01 (CUDA 10.2) and a GTX 1080 Ti are assumed.")
    node = node_info(gpu_node("xenial-gpu", gpus=1, product="GeForce-GTX-1080-Ti", driver="440.33.01", cuda="10.2",
                              kubelet="v1.19.4"),
                     "v1.19.4", "docker://19.3.4", "Ubuntu 16.04.7 LTS", "4.15.0-128-generic")
    c.add(node, device_plugin_operand("xenial-gpu", "kube-system", "g8d1c", "nvidia/k8s-device-plugin:v0.7.3",
                                      runtime_class_name=None))
    p = pod("cuda-check", "default", phase="Running", node="xenial-gpu",
            containers=[container("cuda", image=image, gpus=1, command=["nvidia-smi"])],
            statuses=[crashloop("cuda", 3, exit_code=128, image=image, reason="ContainerCannotRun", message=msg)])
    c.add(p, kubelet_event("Pod", "cuda-check", "default", "Failed", "Error: failed to start container \"cuda\": "
                           "Error response from daemon: " + msg, count=4))
    return c


def driver_library_mismatch_reboot() -> Case:
    msg = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
           "unable to start container process: error during container init: error running hook #0: error running hook: "
           "exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
           "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown")
    image = "nvidia/cuda:12.3.2-base-ubuntu22.04"
    c = Case("nvidia-container-toolkit-394-driver-library-mismatch-reboot",
             source="https://github.com/NVIDIA/nvidia-container-toolkit/issues/394",
             fragment="nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown",
             where="container lastState.terminated (StartError, exit 128) message and the kubelet's Failed event",
             expect="nvidia-runtime-error",
             resolution="The user-space driver had been updated while the old kernel module stayed loaded; rebooting the "
                        "server (or reinstalling the driver) made nvidia-smi and GPU containers work again with driver "
                        "550.54.14.",
             target={"pod": "default/cuda-smoke"},
             must_not=["driver-cuda-mismatch", "gpu-not-requested"], k8s="v1.29",
             notes="The thread starts containers with Docker on an RTX 3060 workstation; the hook's stderr is the "
                   "same under containerd and is placed on a GPU pod of a one-node cluster. The Kubernetes version is "
                   "not from the thread.")
    node = gpu_node("rtx-3060-ws", gpus=1, product="NVIDIA-GeForce-RTX-3060", driver="550.54.14", cuda="12.4")
    c.add(node, device_plugin_operand("rtx-3060-ws", "kube-system", "r5t1x", "nvcr.io/nvidia/k8s-device-plugin:v0.14.5",
                                      runtime_class_name=None))
    p = pod("cuda-smoke", "default", phase="Running", node="rtx-3060-ws",
            containers=[container("cuda", image=image, gpus=1, command=["nvidia-smi"])],
            statuses=[start_error("cuda", msg, 2, image)])
    c.add(p, kubelet_event("Pod", "cuda-smoke", "default", "Failed", "Error: " + msg, count=3))
    return c


# ------------------------------------------------------------------ no GPU requested, or lost at runtime


def onnxruntime_gke_no_gpu_limit() -> Case:
    frag = 'Parse Failed to parse provider option "device_id":'
    image = "europe-docker.pkg.dev/acme/ml/onnx-inference:1.4.2"
    c = Case("onnxruntime-13753-gke-pod-requests-no-gpu",
             source="https://github.com/microsoft/onnxruntime/issues/13753",
             fragment=frag,
             where="log of the inference container (previous instance); the pod runs on a GKE T4 node, tolerating its taint",
             expect="gpu-not-requested", trap=True,
             resolution="Not an onnxruntime option bug: the pod tolerated the GPU node pool's taint but set no "
                        "nvidia.com/gpu limit, so Kubernetes gave it no GPU. Adding nvidia.com/gpu: \"2\" to the "
                        "container's limits made nvidia-smi work in the pod and onnxruntime use CUDA.",
             target={"pod": "ml/onnx-inference-7c9d8b6f4-kq2vz"},
             must_not=["driver-cuda-mismatch", "nvidia-runtime-error", "untolerated-taint"],
             k8s="v1.24 (GKE)",
             notes="In the thread the error came from an interactive session in the pod; it is placed in the "
                   "container's log as an app that builds the CUDA session at start would write it. Image and pod "
                   "names are not given; the CPU/memory limits are the thread's (6 CPU, 8G).")
    nodes = [node_info(gpu_node(f"gke-ml-gpu-pool-3f1c2b7a-{s}", gpus=2, gfd=False,
                                labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                                        "cloud.google.com/gke-nodepool": "gpu-pool"},
                                taints=[taint("nvidia.com/gpu", "present")]),
                       "v1.24.5-gke.600", "containerd://1.6.6", "Container-Optimized OS from Google", "5.10.133+")
             for s in ("9xq1", "kd7w")]
    c.add(*nodes)
    for n in nodes:
        dp = running_operand(f"nvidia-gpu-device-plugin-{n['metadata']['name'][-4:]}", "kube-system", n["metadata"]["name"],
                             "nvidia-gpu-device-plugin", "gke.gcr.io/nvidia-gpu-device-plugin@sha256:4b1c", "nvidia-gpu-device-plugin",
                             runtime_class_name=None)
        dp["metadata"]["labels"] = {"k8s-app": "nvidia-gpu-device-plugin"}
        c.add(dp)
    ctr = container("inference", image=image, limits={"cpu": "6", "memory": "8G"}, requests={"cpu": "500m", "memory": "4G"})
    p = pod("onnx-inference-7c9d8b6f4-kq2vz", "ml", phase="Running", node="gke-ml-gpu-pool-3f1c2b7a-9xq1",
            containers=[ctr], owner=("ReplicaSet", "onnx-inference-7c9d8b6f4"),
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}],
            node_selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
            statuses=[crashloop("inference", 6, image=image)])
    c.add(p, backoff("onnx-inference-7c9d8b6f4-kq2vz", "ml", "inference"))
    c.log("ml", "onnx-inference-7c9d8b6f4-kq2vz", "inference", frag + "\n", previous=True)
    return c


NVML_UNKNOWN = "Failed to initialize NVML: Unknown Error"


def akash_nvml_unknown_systemd_cgroup() -> Case:
    image = "nvcr.io/nvidia/cuda:12.0.0-base-ubuntu20.04"
    c = Case("akash-network-support-266-nvml-unknown-systemd-cgroups",
             source="https://github.com/akash-network/support/issues/266",
             fragment=NVML_UNKNOWN,
             where="log of container cuda (an nvidia-smi -L loop) of a running GPU pod",
             expect="container-lost-gpu-access", trap=True,
             resolution="Not a driver fault: nvidia-smi works on the host and running GPU work is unaffected. It is the "
                        "known NVIDIA container toolkit issue (#48): with systemd managing the container cgroups, a "
                        "systemd reload rewrites the container's device rules without the GPU; reproduced on the "
                        "provider's nodes. The container must be re-created; the fix is the /dev/char symlinks.",
             target={"pod": "default/cuda-nvidia-smi-loop"},
             must_not=["driver-cuda-mismatch", "nvidia-runtime-error", "gpu-not-requested"], k8s="v1.30",
             notes="The pod spec is the thread's reproducer (runtimeClassName nvidia, nvidia.com/gpu: 1, the GPU "
                   "toleration, an nvidia-smi -L loop). The node's GPU model and Kubernetes version are not given "
                   "(an RTX 4090 provider node is assumed); only the error lines are put in the log.")
    node = gpu_node("provider-node-3", gpus=8, product="NVIDIA-GeForce-RTX-4090", driver="550.127.05", cuda="12.4",
                    taints=[taint("nvidia.com/gpu")], kubelet="v1.30.6")
    c.add(node, runtime_class("nvidia"),
          device_plugin_operand("provider-node-3", "nvidia-device-plugin", "b7n2w", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2"))
    p = pod("cuda-nvidia-smi-loop", "default", phase="Running", node="provider-node-3",
            containers=[container("cuda", image=image, gpus=1, command=["/bin/sh", "-c"])],
            tolerations=[GPU_TOLERATION], statuses=[running("cuda", image=image)])
    p["spec"]["containers"][0]["args"] = ["while true; do nvidia-smi -L; sleep 5; done"]
    p["spec"]["runtimeClassName"] = "nvidia"
    p["spec"]["restartPolicy"] = "OnFailure"
    c.add(p)
    c.log("default", "cuda-nvidia-smi-loop", "cuda", (NVML_UNKNOWN + "\n") * 6)
    return c


def cpu_manager_static_nvml_unknown() -> Case:
    image = "registry.example.com/ai/tf-train:1.14.0-gpu"
    c = Case("mattshma-bigdata-150-nvml-unknown-cpu-manager-static",
             source="https://github.com/mattshma/bigdata/issues/150",
             fragment=NVML_UNKNOWN,
             where="log of the training container of a running GPU pod (the thread ran nvidia-smi in the container)",
             expect="container-lost-gpu-access", trap=True,
             resolution="The container's device cgroup had lost the GPU (open /dev/nvidiactl: EPERM; devices.list without "
                        "the nvidia devices): the kubelet ran with --cpu-manager-policy=static, whose container updates "
                        "drop the GPU device rules (kubernetes#77073, nvidia-docker#966). Removing that kubelet setting "
                        "fixed it.",
             target={"pod": "ai/tf-train-0"},
             must_not=["driver-cuda-mismatch", "nvidia-runtime-error", "gpu-not-requested"],
             k8s="v1.13 (Docker, --cpu-manager-policy=static, CPUManager=true)",
             notes="The thread ran nvidia-smi inside the container (kubectl exec); the line is placed in the container's "
                   "log. Pod name, image and GPU model are not given; the kubelet flags are the thread's.")
    node = node_info(gpu_node("gpu-node-07", gpus=8, product="Tesla-V100-SXM2-16GB", driver="418.67", cuda="10.1",
                              kubelet="v1.13.5"),
                     "v1.13.5", "docker://18.9.7", "CentOS Linux 7 (Core)", "3.10.0-957.el7.x86_64")
    node["metadata"]["annotations"] = {"kubeadm.alpha.kubernetes.io/cri-socket": "/var/run/dockershim.sock"}
    c.add(node, device_plugin_operand("gpu-node-07", "kube-system", "f3k8d", "nvidia/k8s-device-plugin:1.11",
                                      runtime_class_name=None))
    p = pod("tf-train-0", "ai", phase="Running", node="gpu-node-07", owner=("StatefulSet", "tf-train"),
            containers=[container("train", image=image, gpus=1, limits={"cpu": "8", "memory": "32Gi"},
                                  requests={"cpu": "8", "memory": "32Gi"})],
            statuses=[running("train", image=image)])
    c.add(p)
    c.log("ai", "tf-train-0", "train", NVML_UNKNOWN + "\n")
    return c


def nvml_unknown_after_random_time() -> Case:
    image = "tensorflow/tensorflow:latest-gpu"
    c = Case("nvidia-docker-1671-nvml-unknown-after-hours",
             source="https://github.com/NVIDIA/nvidia-docker/issues/1671",
             fragment=NVML_UNKNOWN,
             where="log of a long-running GPU container (the thread's 'after a random amount of time')",
             expect="container-lost-gpu-access", trap=True,
             resolution="GPUs vanish from all running containers after hours or days while the host still sees them; "
                        "a container restart brings them back. Maintainer: the systemd-cgroup/runc device-rule issue; "
                        "GPU Operator 22.9.2 fixes it on its nodes, otherwise create the /dev/char symlinks with "
                        "nvidia-ctk system create-dev-char-symlinks --create-all (udev rule at boot).",
             target={"pod": "research/tf-notebook-0"},
             must_not=["driver-cuda-mismatch", "nvidia-runtime-error", "gpu-not-requested"],
             k8s="v1.22 (containerd, systemd cgroup driver, cgroup v2)",
             notes="Kubernetes v1.22.9 with containerd and systemd cgroups is a reporter's environment in the thread; "
                   "the image is the original report's. Pod name and GPU model are not given.")
    node = node_info(gpu_node("gpu-a100-12", gpus=8, product="NVIDIA-A100-SXM4-40GB", driver="515.65.01", cuda="11.7",
                              kubelet="v1.22.9"),
                     "v1.22.9", "containerd://1.6.8", "CentOS Stream 8", "5.15.73-1.el8.x86_64")
    c.add(node, device_plugin_operand("gpu-a100-12", "kube-system", "z9q3e", "nvcr.io/nvidia/k8s-device-plugin:v0.12.3",
                                      runtime_class_name=None))
    p = pod("tf-notebook-0", "research", phase="Running", node="gpu-a100-12", owner=("StatefulSet", "tf-notebook"),
            containers=[container("notebook", image=image, gpus=1)], statuses=[running("notebook", image=image)])
    c.add(p)
    c.log("research", "tf-notebook-0", "notebook", NVML_UNKNOWN + "\n")
    return c


# ------------------------------------------------------------------ every container and every operand


def cuda_validator_forward_compat() -> Case:
    frag = "Failed to allocate device vector A (error code forward compatibility was attempted on non supported HW)!"
    img = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.8.2"
    c = Case("gpu-operator-277-cuda-validator-forward-compat-old-driver",
             source="https://github.com/NVIDIA/gpu-operator/issues/277",
             fragment=frag,
             where="log of the init container cuda-validation of the nvidia-cuda-validator pod (Init:CrashLoopBackOff)",
             expect="driver-cuda-mismatch", trap=True,
             resolution="Not a GPU without CUDA support: the validator's CUDA sample was built for a newer CUDA than the "
                        "host's 450 driver, so CUDA tried forward compatibility, which that GPU does not support. "
                        "Upgrading the host driver to 470 fixed the validation (the reporter); the operator later "
                        "dropped the compat libraries from its images (v22.9.0).",
             target={"pod": "gpu-operator-resources/nvidia-cuda-validator-tes6x"},
             must_not=["gpu-not-requested", "nvidia-runtime-error", "ecc-uncorrectable"],
             k8s="v1.19 (1.19.16, containerd with systemd cgroup, driver 450 on the host)",
             notes="The pod's name is truncated in the thread; the GPU model is not given (the message says forward "
                   "compatibility is unsupported on it, so a GeForce board is assumed); the operator version of that "
                   "time is assumed. The validator pod requests no GPU on purpose (NVIDIA_VISIBLE_DEVICES=all).")
    node = node_info(gpu_node("gpu-worker-1", gpus=1, product="NVIDIA-GeForce-RTX-2080-Ti", driver="450.80.02", cuda="11.0",
                              kubelet="v1.19.16"),
                     "v1.19.16", "containerd://1.4.11", "Ubuntu 20.04.3 LTS", "5.4.0-89-generic")
    c.add(node, runtime_class("nvidia"))
    c.add(device_plugin_operand("gpu-worker-1", "gpu-operator-resources", "lx2vd", "nvcr.io/nvidia/k8s-device-plugin:v0.9.0-ubi8"),
          toolkit_operand("gpu-worker-1", "gpu-operator-resources", "b56sg", "nvcr.io/nvidia/k8s/container-toolkit:1.6.0-ubuntu18.04"))
    init = container("cuda-validation", image=img, env={"NVIDIA_VISIBLE_DEVICES": "all"}, command=["sh", "-c"])
    init["args"] = ["vectorAdd"]
    main = container("nvidia-cuda-validator", image=img, command=["sh", "-c"])
    main["args"] = ["echo cuda workload validation is successful"]
    p = pod("nvidia-cuda-validator-tes6x", "gpu-operator-resources", phase="Pending", node="gpu-worker-1",
            containers=[main], init_containers=[init], labels={"app": "nvidia-cuda-validator"},
            tolerations=[GPU_TOLERATION],
            statuses=[waiting("nvidia-cuda-validator", "PodInitializing", image=img)],
            init_statuses=[crashloop("cuda-validation", 7, image=img)])
    p["spec"]["restartPolicy"] = "OnFailure"
    p["spec"]["runtimeClassName"] = "nvidia"
    p["status"]["conditions"] = [{"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
                                  "message": "containers with incomplete status: [cuda-validation]"},
                                 {"type": "PodScheduled", "status": "True"}]
    c.add(p, backoff("nvidia-cuda-validator-tes6x", "gpu-operator-resources", "cuda-validation"))
    c.log("gpu-operator-resources", "nvidia-cuda-validator-tes6x", "cuda-validation",
          "[Vector addition of 50000 elements]\n" + frag + "\n", previous=True)
    return c


PLUGIN_ADMISSION = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
                    "Requested: 1, Available: 0, which is unexpected")


def _user_pod_holding_the_gpu(node: str, name: str = "train-5f7c9d-8qvnm", ns: str = "ml") -> dict:
    image = "nvcr.io/nvidia/pytorch:23.10-py3"
    return pod(name, ns, phase="Running", node=node, containers=[container("train", image=image, gpus=1)],
               owner=("ReplicaSet", name.rsplit("-", 1)[0]), statuses=[running("train", image=image)])


def plugin_validator_admission() -> Case:
    img = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.7.1"
    c = Case("gpu-operator-233-plugin-validator-gpu-taken-by-pending-pod",
             source="https://github.com/NVIDIA/gpu-operator/issues/233",
             fragment=PLUGIN_ADMISSION,
             where="event UnexpectedAdmissionError (kubelet) on the nvidia-device-plugin-validator pod, which is Failed",
             expect="unexpected-admission-error",
             resolution="A user pod that was waiting for a GPU took the node's only GPU before the operator's "
                        "device-plugin validator could, so the kubelet refused the validator at admission. Maintainer: "
                        "nothing is broken; disable the plugin workload validation (validator.plugin.env "
                        "WITH_WORKLOAD=false) or free the GPU.",
             target={"pod": "gpu-operator-resources/nvidia-device-plugin-validator-6k9xt"},
             must_not=["nvidia-runtime-error", "driver-cuda-mismatch", "gpu-unhealthy"],
             k8s="v1.21 (GPU Operator 1.7.x Helm chart)",
             notes="The thread gives the event, not the node or GPU; a one-GPU node is assumed and the user pod "
                   "holding its GPU is added.")
    node = gpu_node("gpu-node-1", gpus=1, product="Tesla-T4", driver="460.73.01", cuda="11.2", kubelet="v1.21.2")
    c.add(node, runtime_class("nvidia"),
          device_plugin_operand("gpu-node-1", "gpu-operator-resources", "n4m2s", "nvcr.io/nvidia/k8s-device-plugin:v0.9.0-ubi8"),
          _user_pod_holding_the_gpu("gpu-node-1"))
    p = pod("nvidia-device-plugin-validator-6k9xt", "gpu-operator-resources", phase="Failed", node="gpu-node-1",
            containers=[container("nvidia-device-plugin-validator", image=img)],
            init_containers=[container("plugin-validation", image=img, gpus=1)],
            labels={"app": "nvidia-device-plugin-validator"}, tolerations=[GPU_TOLERATION],
            reason="UnexpectedAdmissionError",
            message="Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, "
                    "Available: 0, which is unexpected",
            statuses=[], init_statuses=[])
    p["spec"]["restartPolicy"] = "OnFailure"
    p["spec"]["runtimeClassName"] = "nvidia"
    c.add(p, kubelet_event("Pod", "nvidia-device-plugin-validator-6k9xt", "gpu-operator-resources",
                           "UnexpectedAdmissionError", PLUGIN_ADMISSION))
    return c


def operator_validator_plugin_validation_loop() -> Case:
    img = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v22.9.1"
    c = Case("gpu-operator-481-operator-validator-plugin-validation-loops",
             source="https://github.com/NVIDIA/gpu-operator/issues/481",
             known_miss="inconclusive (pod-requests-no-gpu info): the looping init container plugin-validation is not considered, and the sibling nvidia-device-plugin-validator pod's UnexpectedAdmissionError (the node's only GPU held by a user pod) is not followed",
             fragment=PLUGIN_ADMISSION,
             where="event on the nvidia-device-plugin-validator pod; the nvidia-operator-validator pod's init container "
                   "plugin-validation restarts again and again (Init:CrashLoopBackOff)",
             expect="unexpected-admission-error", trap=True,
             resolution="Not a validator or operator bug: the only GPU of the node (g4dn.2xlarge, 1 GPU) is held by a "
                        "user pod scheduled before the device-plugin validator, so the validator pod is refused "
                        "(Requested: 1, Available: 0) and the operator-validator's plugin-validation keeps failing. "
                        "Maintainer: skip the plugin workload validation (WITH_WORKLOAD=false) or free the GPU.",
             target={"pod": "nvidia-gpu-operator/nvidia-operator-validator-2hz5j"},
             must_not=["nvidia-runtime-error", "driver-cuda-mismatch", "crash-loop"],
             k8s="v1.24 (OpenShift 4.11.22)",
             notes="Pod name suffixes are not given. The operator-validator's own status (four init containers, the "
                   "fourth looping) is what the user saw first; the admission event sits on the sibling validator pod.")
    node = node_info(gpu_node("ip-10-0-141-77.ec2.internal", gpus=1, product="Tesla-T4", driver="525.60.13", cuda="12.0",
                              kubelet="v1.24.6+5658434", labels={"node.kubernetes.io/instance-type": "g4dn.2xlarge"}),
                     "v1.24.6+5658434", "cri-o://1.24.3-7.rhaos4.11.gitad7b5b2.el8", "Red Hat Enterprise Linux CoreOS 411.86",
                     "4.18.0-372.40.1.el8_6.x86_64")
    c.add(node, runtime_class("nvidia"),
          device_plugin_operand("ip-10-0-141-77.ec2.internal", "nvidia-gpu-operator", "q8r3b",
                                "nvcr.io/nvidia/k8s-device-plugin:v0.13.0-ubi8"),
          _user_pod_holding_the_gpu("ip-10-0-141-77.ec2.internal", ns="data-science"))
    inits = [container(n, image=img) for n in ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation")]
    init_st = [terminated(n, "Completed", 0, image=img) for n in ("driver-validation", "toolkit-validation", "cuda-validation")]
    init_st.append(crashloop("plugin-validation", 14, image=img))
    ov = operator_pod("nvidia-operator-validator-2hz5j", "nvidia-gpu-operator", "ip-10-0-141-77.ec2.internal",
                      "nvidia-operator-validator", [container("nvidia-operator-validator", image=img)], inits,
                      statuses=[waiting("nvidia-operator-validator", "PodInitializing", image=img)], init_statuses=init_st)
    ov["status"]["conditions"] = [{"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
                                   "message": "containers with incomplete status: [plugin-validation]"},
                                  {"type": "PodScheduled", "status": "True"}]
    pv = pod("nvidia-device-plugin-validator-7tqfw", "nvidia-gpu-operator", phase="Failed", node="ip-10-0-141-77.ec2.internal",
             containers=[container("nvidia-device-plugin-validator", image=img)],
             init_containers=[container("plugin-validation", image=img, gpus=1)],
             labels={"app": "nvidia-device-plugin-validator"}, tolerations=[GPU_TOLERATION],
             reason="UnexpectedAdmissionError",
             message="Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, "
                     "Available: 0, which is unexpected",
             statuses=[], init_statuses=[])
    pv["spec"]["runtimeClassName"] = "nvidia"
    c.add(ov, pv, backoff("nvidia-operator-validator-2hz5j", "nvidia-gpu-operator", "plugin-validation"),
          kubelet_event("Pod", "nvidia-device-plugin-validator-7tqfw", "nvidia-gpu-operator", "UnexpectedAdmissionError",
                        PLUGIN_ADMISSION))
    return c


# ------------------------------------------------------------------ hardware outranks its symptoms


def oom_on_uncorrectable_ecc() -> Case:
    image = "registry.example.com/ml/trainer:2021.09"
    frag = "RuntimeError: CUDA error: out of memory"
    c = RuntimeCase("k8s-device-plugin-267-oom-on-gpu-with-uncorrectable-ecc",
                    source="https://github.com/NVIDIA/k8s-device-plugin/issues/267",
                    fragment=frag,
                    where="log of the training container (previous instance); the node's GPU 1 shows 1 volatile "
                          "uncorrectable ECC error (node probe)",
                    expect="ecc-uncorrectable", trap=True,
                    resolution="The pod is not too big for the GPU: GPU 1 on the host has an uncorrectable ECC error "
                               "(nvidia-smi: 1 Volatile Uncorr. ECC) and every pod placed on it fails with 'CUDA error: "
                               "out of memory'. The device plugin kept advertising it as healthy (it marks GPUs unhealthy "
                               "only on error events; maintainer); the GPU must be taken out of service and reset.",
                    target={"pod": "ml/trainer-job-n7x4p"},
                    must_not=["driver-cuda-mismatch", "nvidia-runtime-error"], k8s="v1.20",
                    notes="The thread shows nvidia-smi (a screenshot) with 1 volatile uncorrectable ECC error on GPU 1; "
                          "it is given here as a gpuctl node probe of that node. GPU model, pod and Kubernetes version "
                          "are not given (V100 assumed).")
    node = gpu_node("gpu-v100-03", gpus=8, product="Tesla-V100-SXM2-16GB", driver="460.73.01", cuda="11.2", kubelet="v1.20.11")
    c.add(node, device_plugin_operand("gpu-v100-03", "kube-system", "w2s9p", "nvcr.io/nvidia/k8s-device-plugin:v0.9.0",
                                      runtime_class_name=None))
    p = pod("trainer-job-n7x4p", "ml", phase="Running", node="gpu-v100-03", owner=("Job", "trainer-job"),
            containers=[container("trainer", image=image, gpus=1)],
            statuses=[crashloop("trainer", 3, image=image)])
    p["spec"]["restartPolicy"] = "OnFailure"
    c.add(p, backoff("trainer-job-n7x4p", "ml", "trainer"))
    c.log("ml", "trainer-job-n7x4p", "trainer", frag + "\n", previous=True)
    gpus = []
    for i in range(8):
        g = {"index": i, "pciBusId": f"00000000:{0x1a + i:02X}:00.0", "name": "Tesla V100-SXM2-16GB",
             "ecc": {"volatile": {"corrected": 0, "uncorrected": 1 if i == 1 else 0},
                     "aggregate": {"corrected": 0, "uncorrected": 1 if i == 1 else 0}},
             "retiredPages": {"pending": False}}
        gpus.append(g)
    c.probe("gpu-v100-03", {"schema": "gpuctl/probe/v1", "node": "gpu-v100-03", "capturedAt": NOW,
                            "driverVersion": "460.73.01", "cudaDriverVersion": "11.2", "gpus": gpus})
    return c


def vllm_uncorrectable_ecc_hardware() -> Case:
    image = "vllm/vllm-openai:v0.4.3"
    frag = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    c = Case("vllm-5222-uncorrectable-ecc-is-hardware",
             source="https://github.com/vllm-project/vllm/issues/5222",
             fragment=frag,
             where="log of the vLLM server container (previous instance), pod crash-looping",
             expect="ecc-uncorrectable",
             resolution="A hardware error (maintainer: recovered by a new run if transient, broken hardware if it recurs); "
                        "the reporter confirmed a hardware failure: the same workload runs fine on other hardware.",
             target={"pod": "llm/vllm-7b-5c8d7f9b4-hw2x9"},
             must_not=["gpu-memory-exhausted", "driver-cuda-mismatch", "crash-loop"], k8s="v1.29",
             notes="The thread is a vLLM usage report without a cluster; the line is placed in the log of a vLLM pod. "
                   "GPU model and Kubernetes version are not from the thread.")
    node = gpu_node("gpu-a100-04", gpus=8, product="NVIDIA-A100-SXM4-80GB", driver="550.54.15", cuda="12.4")
    c.add(node, device_plugin_operand("gpu-a100-04", "kube-system", "j3h6t", "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
                                      runtime_class_name=None))
    p = pod("vllm-7b-5c8d7f9b4-hw2x9", "llm", phase="Running", node="gpu-a100-04", owner=("ReplicaSet", "vllm-7b-5c8d7f9b4"),
            containers=[container("vllm", image=image, gpus=1)], statuses=[crashloop("vllm", 4, image=image)])
    c.add(p, backoff("vllm-7b-5c8d7f9b4-hw2x9", "llm", "vllm"))
    c.log("llm", "vllm-7b-5c8d7f9b4-hw2x9", "vllm", frag + "\n", previous=True)
    return c


CASES = [
    vectoradd_default_runtime_runc,
    microk8s_cuda_add_no_runtimeclass,
    microk8s_no_runtime_configured,
    toolkit_not_ready_no_runtime,
    crio_no_runtime_handler,
    truenas_runtimeclass_not_found,
    cdi_unresolvable_uuid,
    eks_ami_libnvidia_container_regression,
    vllm_requires_cuda_124,
    cuda11_image_on_pre450_driver,
    driver_library_mismatch_reboot,
    onnxruntime_gke_no_gpu_limit,
    akash_nvml_unknown_systemd_cgroup,
    cpu_manager_static_nvml_unknown,
    nvml_unknown_after_random_time,
    cuda_validator_forward_compat,
    plugin_validator_admission,
    operator_validator_plugin_validation_loop,
    oom_on_uncorrectable_ecc,
    vllm_uncorrectable_ecc_hardware,
]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
