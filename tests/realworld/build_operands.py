"""Real-world GPU Operator operand cases (driver, toolkit, validator, GFD DaemonSets and
the node labels/ClusterPolicy that drive them). Run ``python tests/realworld/build_operands.py``
to rewrite their snapshots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (backoff, Case, container, cpu_node, event, gpu_node, pod, running, unschedulable, waiting, runtime_class, node_info)  # noqa: E402
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
VALIDATOR = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.7.1"


# ------------------------------------------------------------------ helpers (local to this script)


def operator_labels(n: dict, **deploy: str) -> dict:
    """The labels the GPU Operator puts on a GPU node (NFD PCI label, gpu.deploy.* operands)."""
    lab = n["metadata"]["labels"]
    lab["feature.node.kubernetes.io/pci-10de.present"] = "true"
    for comp in ("driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
                 "dcgm-exporter", "node-status-exporter", "operator-validator"):
        lab[f"nvidia.com/gpu.deploy.{comp}"] = deploy.get(comp.replace("-", "_"), "true")
    return n


def no_gpu_capacity(n: dict, resource: str = "nvidia.com/gpu") -> dict:
    """A GPU node whose plugin never registered: no GPU line in capacity/allocatable."""
    n["status"]["capacity"].pop(resource, None)
    n["status"]["allocatable"].pop(resource, None)
    return n


def crashloop(name: str, restarts: int, image: str, exit_code: int = 1, reason: str = "Error",
              pod_ref: str = "") -> dict[str, Any]:
    msg = f"back-off 5m0s restarting failed container={name} pod={pod_ref}" if pod_ref else ""
    return waiting(name, "CrashLoopBackOff", msg, restarts=restarts,
                   last_exit={"reason": reason, "exitCode": exit_code}, image=image)


def init_running(name: str, image: str) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": 0, "image": image,
            "state": {"running": {"startedAt": "2026-11-19T09:00:00Z"}}}


def pod_initializing(name: str, image: str) -> dict[str, Any]:
    return waiting(name, "PodInitializing", image=image)


def operand(name: str, namespace: str, node: str, app: str, containers: list, statuses: list,
            init_containers: Optional[list] = None, init_statuses: Optional[list] = None,
            phase: str = "Pending", runtime_class_name: Optional[str] = None, owner: str = "") -> dict[str, Any]:
    """A GPU Operator operand: a DaemonSet pod on ``node``."""
    p = pod(name, namespace, phase=phase, node=node, containers=containers, init_containers=init_containers,
            labels={"app": app, "app.kubernetes.io/part-of": "gpu-operator"},
            owner=("DaemonSet", owner or app), tolerations=[GPU_TOLERATION],
            statuses=statuses, init_statuses=init_statuses)
    if runtime_class_name:
        p["spec"]["runtimeClassName"] = runtime_class_name
    return p


def waiting_on_driver(kind: str, name: str, namespace: str, node: str, app: str, ctr: str, image: str,
                      init: str = "toolkit-validation", validator: str = VALIDATOR,
                      runtime_class_name: Optional[str] = None) -> dict[str, Any]:
    """An operand whose validation init container waits for the driver (Init:0/1)."""
    return operand(name, namespace, node, app, [container(ctr, image=image)], [pod_initializing(ctr, image)],
                   init_containers=[container(init, image=validator)],
                   init_statuses=[init_running(init, validator)], runtime_class_name=runtime_class_name)


def flat(s: str) -> str:
    return " ".join(s.split())


# ------------------------------------------------------------------ driver DaemonSet cannot build the module


def driver_kernel_headers_entitlement() -> Case:
    frag = ("Error: Unable to find a match: kernel-headers-4.18.0-240.23.2.el8_3.x86_64 "
            "kernel-devel-4.18.0-240.23.2.el8_3.x86_64")
    ns = "gpu-operator-resources"
    node = "worker-gpu-0"
    c = Case("gpu-operator-234-driver-kernel-headers-entitlement",
             source="https://github.com/NVIDIA/gpu-operator/issues/234",
             fragment=frag,
             where="log of container nvidia-driver-ctr of the nvidia-driver-daemonset pod (CrashLoopBackOff)",
             expect="device-plugin-not-running",
             resolution="After the OpenShift 4.7.21 update the driver container cannot install the kernel "
                        "headers for the new kernel; the maintainers traced it to an entitlement file that is "
                        "still valid but too old to give access to the rhocp-4.7 repositories (regenerate it). "
                        "Until the driver builds, the device plugin never starts and the GPU node advertises no GPUs.",
             target={"pod": "ml/train-gpu-0"},
             also_ok={"nvml-init-failed": "its runbook names a driver DaemonSet that cannot build the module "
                                          "(kernel headers) as the deeper cause behind the missing plugin"},
             must_not=["insufficient-gpu", "unknown-resource-name", "driver-cuda-mismatch"],
             k8s="v1.20 (OpenShift 4.7.21, GPU Operator 1.7.1)",
             notes="The user's GPU pod is not in the thread; it stands for any workload waiting on that node. "
                   "GPU model not given (T4 assumed).")
    n = gpu_node(node, gpus=1, product="Tesla-T4", kubelet="v1.20.0+558d959")
    node_info(n, "v1.20.0+558d959", "cri-o://1.20.4-4.rhaos4.7.gitebe4d45.el8",
              "Red Hat Enterprise Linux CoreOS 47.84.202107131417-0 (Ootpa)", "4.18.0-240.23.2.el8_3.x86_64")
    operator_labels(no_gpu_capacity(n))
    c.add(n, *[cpu_node(f"worker-{i}", kubelet="v1.20.0+558d959") for i in range(2)])
    drv_img = "nvcr.io/nvidia/driver:460.73.01-rhcos4.7"
    dname = "nvidia-driver-daemonset-8xk2p"
    c.add(operand(dname, ns, node, "nvidia-driver-daemonset", [container("nvidia-driver-ctr", image=drv_img)],
                  [crashloop("nvidia-driver-ctr", 37, drv_img, pod_ref=f"{dname}_{ns}(uid-{ns}-{dname})")]))
    c.log(ns, dname, "nvidia-driver-ctr",
          "========== NVIDIA Software Installer ==========\n\n"
          "Starting installation of NVIDIA driver version 460.73.01 for Linux kernel version 4.18.0-240.23.2.el8_3.x86_64\n\n"
          "Stopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\n"
          "Unmounting NVIDIA driver rootfs...\nChecking NVIDIA driver packages...\nUpdating the package cache...\n"
          "Installing Linux kernel headers...\n"
          "+ echo 'Installing Linux kernel headers...'\n"
          "+ dnf -q -y --releasever=8.3 install kernel-headers-4.18.0-240.23.2.el8_3.x86_64 kernel-devel-4.18.0-240.23.2.el8_3.x86_64\n"
          + frag + "\n")
    c.add(backoff(dname, ns, "nvidia-driver-ctr", count=210))
    c.add(waiting_on_driver("Pod", "nvidia-container-toolkit-daemonset-q7vfd", ns, node,
                            "nvidia-container-toolkit-daemonset", "nvidia-container-toolkit-ctr",
                            "nvcr.io/nvidia/k8s/container-toolkit:1.5.0-ubi8", init="driver-validation"))
    c.add(waiting_on_driver("Pod", "nvidia-device-plugin-daemonset-jx4ls", ns, node,
                            "nvidia-device-plugin-daemonset", "nvidia-device-plugin-ctr",
                            "nvcr.io/nvidia/k8s-device-plugin:v0.9.0-ubi8"))
    msg = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    c.add(pod("train-gpu-0", "ml", gpus=1, conditions=[unschedulable(msg)]),
          event("Pod", "train-gpu-0", "ml", "FailedScheduling", msg, count=30))
    return c


def driver_gpl_only_symbol_newer_kernel() -> Case:
    frag = "ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol 'rcu_read_unlock_strict'"
    ns = "gpu-operator-resources"
    node = "gpu-desktop"
    c = Case("gpu-operator-751-driver-gpl-only-symbol-new-kernel",
             source="https://github.com/NVIDIA/gpu-operator/issues/751",
             fragment=frag,
             where="log of container nvidia-driver-ctr of the nvidia-driver-daemonset pod (CrashLoopBackOff)",
             expect="device-plugin-not-running",
             resolution="The driver container's module build fails on the node's newer kernel (GPL-only symbol "
                        "rcu_read_unlock_strict): a known issue fixed with driver versions >= 535.183.08 "
                        "(maintainer). With no driver the operand chain stops and the node advertises no GPUs.",
             target={"node": node},
             also_ok={"nvml-init-failed": "its runbook names a driver DaemonSet that cannot build or load the module "
                                          "(fix 3) as the deeper cause behind the missing plugin"},
             must_not=["driver-cuda-mismatch", "insufficient-gpu"],
             k8s="v1.29 (MicroK8s gpu addon, GPU Operator v23.9)",
             notes="GPU model and kernel are not given in the excerpt; a consumer card and a 6.5 HWE kernel are "
                   "assumed. Driver log lines around the verbatim modpost error are a reconstruction.")
    n = gpu_node(node, gpus=1, product="NVIDIA-GeForce-RTX-3090", kubelet="v1.29.4", driver="535.104.05", cuda="12.2")
    node_info(n, "v1.29.4", "containerd://1.6.28", "Ubuntu 22.04.4 LTS", "6.5.0-41-generic")
    operator_labels(no_gpu_capacity(n))
    c.add(n, runtime_class("nvidia"))
    drv_img = "nvcr.io/nvidia/driver:535.104.05-ubuntu22.04"
    dname = "nvidia-driver-daemonset-5v7qk"
    c.add(operand(dname, ns, node, "nvidia-driver-daemonset", [container("nvidia-driver-ctr", image=drv_img)],
                  [crashloop("nvidia-driver-ctr", 54, drv_img, pod_ref=f"{dname}_{ns}(uid-{ns}-{dname})")],
                  init_containers=[container("k8s-driver-manager", image="nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.6.5")],
                  init_statuses=[{"name": "k8s-driver-manager", "ready": True, "restartCount": 0,
                                  "image": "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.6.5",
                                  "state": {"terminated": {"reason": "Completed", "exitCode": 0,
                                                           "startedAt": "2026-11-19T09:00:00Z",
                                                           "finishedAt": "2026-11-19T09:00:20Z"}}}]))
    c.log(ns, dname, "nvidia-driver-ctr",
          "Starting installation of NVIDIA driver version 535.104.05 for Linux kernel version 6.5.0-41-generic\n\n"
          "Installing NVIDIA driver kernel modules...\n"
          "Kernel module compilation complete.\n"
          "  MODPOST /usr/src/nvidia-535.104.05/kernel/Module.symvers\n"
          + frag + "\n"
          "make[3]: *** [scripts/Makefile.modpost:145: /usr/src/nvidia-535.104.05/kernel/Module.symvers] Error 1\n"
          "Stopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\n")
    c.add(backoff(dname, ns, "nvidia-driver-ctr", count=300))
    v = VALIDATOR.replace("v1.7.1", "v23.9.1")
    c.add(waiting_on_driver("Pod", "nvidia-device-plugin-daemonset-m2d8h", ns, node,
                            "nvidia-device-plugin-daemonset", "nvidia-device-plugin",
                            "nvcr.io/nvidia/k8s-device-plugin:v0.14.3-ubi8", validator=v, runtime_class_name="nvidia"))
    c.add(waiting_on_driver("Pod", "nvidia-operator-validator-t9cqz", ns, node,
                            "nvidia-operator-validator", "nvidia-operator-validator", v,
                            init="driver-validation", validator=v, runtime_class_name="nvidia"))
    c.add(waiting_on_driver("Pod", "gpu-feature-discovery-h5fjb", ns, node,
                            "gpu-feature-discovery", "gpu-feature-discovery",
                            "nvcr.io/nvidia/gpu-feature-discovery:v0.8.2-ubi8", validator=v,
                            runtime_class_name="nvidia"))
    return c


# ------------------------------------------------------------------ validators


def cuda_validator_fabric_manager() -> Case:
    frag = "Failed to allocate device vector A (error code system not yet initialized)!"
    ns = "gpu-operator"
    node = "poc01"
    v = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.6.2"
    pname = "nvidia-cuda-validator-4xzlm"
    c = Case("gpu-operator-1043-cuda-validator-fabric-manager",
             source="https://github.com/NVIDIA/gpu-operator/issues/1043",
             fragment=frag,
             where="log of init container cuda-validation of the nvidia-cuda-validator pod (Init:CrashLoopBackOff)",
             expect="inconclusive",
             trap=True,
             resolution="The user resolved it on the host: the node is an NVSwitch system and CUDA reports "
                        "'system not yet initialized' (CUDA 802) until nvidia-fabricmanager, matching the driver/CUDA "
                        "version, runs (systemctl status nvidia-fabricmanager). Not a CUDA/driver version mismatch "
                        "and not the device plugin: GPUs are advertised and can be assigned; nothing in the cluster "
                        "objects shows the fabric manager.",
             target={"pod": f"{ns}/{pname}"},
             must_not=["driver-cuda-mismatch", "device-plugin-not-running", "nvml-init-failed"],
             k8s="v1.29 (GPU Operator 24.6.2)",
             notes="8x H100 SXM assumed (the thread's node has NVSwitch; the exact model is not in the excerpt).")
    n = gpu_node(node, gpus=8, product="NVIDIA-H100-80GB-HBM3", driver="550.90.07", cuda="12.4")
    operator_labels(n)
    c.add(n, runtime_class("nvidia"))
    cimg = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.6.2"
    c.add(operand(pname, ns, node, "nvidia-cuda-validator", [container("nvidia-cuda-validator", image=cimg)],
                  [pod_initializing("nvidia-cuda-validator", cimg)],
                  init_containers=[container("cuda-validation", image=cimg)],
                  init_statuses=[crashloop("cuda-validation", 7, cimg, pod_ref=f"{pname}_{ns}(uid-{ns}-{pname})")],
                  runtime_class_name="nvidia", owner="nvidia-operator-validator"))
    c.log(ns, pname, "cuda-validation", frag + "\n[Vector addition of 50000 elements]\n")
    c.add(backoff(pname, ns, "cuda-validation", count=7))
    oname = "nvidia-operator-validator-r2kd8"
    c.add(operand(oname, ns, node, "nvidia-operator-validator", [container("nvidia-operator-validator", image=v)],
                  [pod_initializing("nvidia-operator-validator", v)],
                  init_containers=[container(x, image=v) for x in ("driver-validation", "toolkit-validation",
                                                                   "cuda-validation", "plugin-validation")],
                  init_statuses=[{"name": "driver-validation", "ready": True, "restartCount": 0, "image": v,
                                  "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                                 {"name": "toolkit-validation", "ready": True, "restartCount": 0, "image": v,
                                  "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                                 init_running("cuda-validation", v),
                                 pod_initializing("plugin-validation", v)],
                  runtime_class_name="nvidia"))
    dp = operand("nvidia-device-plugin-daemonset-9wq4t", ns, node, "nvidia-device-plugin-daemonset",
                 [container("nvidia-device-plugin", image="nvcr.io/nvidia/k8s-device-plugin:v0.16.2-ubi8")],
                 [running("nvidia-device-plugin", image="nvcr.io/nvidia/k8s-device-plugin:v0.16.2-ubi8")],
                 phase="Running", runtime_class_name="nvidia")
    c.add(dp)
    return c


def dcgm_exporter_on_non_gpu_node() -> Case:
    frag = ("Failed to allocate device vector A (error code CUDA driver version is insufficient for CUDA "
            "runtime version)!")
    ns = "gpu-operator-resources"
    pname = "nvidia-dcgm-exporter-l75sj"
    c = Case("gpu-operator-138-dcgm-exporter-on-non-gpu-node",
             source="https://github.com/NVIDIA/gpu-operator/issues/138",
             fragment=frag,
             where="log of init container toolkit-validation of the nvidia-dcgm-exporter pod",
             expect="inconclusive",
             trap=True,
             resolution="The reporter found the cause himself: unlike the other operands, dcgm-exporter had no "
                        "nodeSelector nvidia.com/gpu.present=true, so it was scheduled on a node without a GPU, where "
                        "the validation's CUDA sample naturally fails. The 'driver version is insufficient' text is "
                        "what CUDA says when there is no driver at all, not a version mismatch.",
             target={"pod": f"{ns}/{pname}"},
             also_ok={"pod-requests-no-gpu": "true of the pod (it runs on a node without GPUs and asks for none); "
                                             "an info finding that claims no GPU-stack cause"},
             must_not=["driver-cuda-mismatch", "nvml-init-failed"],
             k8s="v1.20 (K3s v1.20.2+k3s1, GPU Operator 1.5)",
             notes="Node names invented; the thread's K3s version is used for the kubelet.")
    g = gpu_node("k3s-gpu-0", gpus=1, product="Tesla-T4", kubelet="v1.20.2+k3s1", driver="460.32.03", cuda="11.2")
    cpu = cpu_node("k3s-cpu-0", kubelet="v1.20.2+k3s1")
    c.add(g, cpu)
    img = "nvcr.io/nvidia/k8s/dcgm-exporter:2.0.13-2.1.2-ubuntu18.04"
    vimg = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda10.2"
    p = operand(pname, ns, "k3s-cpu-0", "nvidia-dcgm-exporter", [container("nvidia-dcgm-exporter", image=img)],
                [pod_initializing("nvidia-dcgm-exporter", img)],
                init_containers=[container("toolkit-validation", image=vimg)],
                init_statuses=[init_running("toolkit-validation", vimg)])
    c.add(p)
    c.log(ns, pname, "toolkit-validation",
          (frag + "\n[Vector addition of 50000 elements]\nwaiting for nvidia drivers to be loaded\n") * 3)
    return c


# ------------------------------------------------------------------ node labels that drive the operands


def nfd_label_without_pci_10de() -> Case:
    frag = "feature.node.kubernetes.io/pci-0302_10de.present"
    node = "ip-10-0-12-34.ec2.internal"
    c = Case("gpu-operator-78-nfd-labels-class-not-vendor",
             source="https://github.com/NVIDIA/gpu-operator/issues/78",
             fragment=frag,
             where="node label written by node-feature-discovery (kubectl get node --show-labels)",
             expect="device-plugin-not-running",
             resolution="NFD labelled the g4dn.xlarge node with the class+vendor labels pci-0302_10de.present and "
                        "pci-0300_1d0f.present but not pci-10de.present, which this operator version selected GPU "
                        "nodes by; so it deployed no driver, toolkit or device plugin there. Labelling the node "
                        "feature.node.kubernetes.io/pci-10de.present=true made the operator deploy its operands "
                        "(the reporter's fix; the maintainer confirmed 0302_10de is the NVIDIA 3D controller).",
             target={"node": node},
             must_not=["nvml-init-failed", "driver-cuda-mismatch", "unknown-resource-name"],
             k8s="v1.18 (Ubuntu 18.04 on AWS g4dn.xlarge, GPU Operator 1.1)",
             notes="Node name invented; the instance type, OS and labels are the thread's. No operand pod exists on "
                   "the node because the operator never created its DaemonSets' pods there.")
    n = gpu_node(node, gpus=0, gfd=False, kubelet="v1.18.8", cpu="4", memory="16Gi",
                 labels={"node.kubernetes.io/instance-type": "g4dn.xlarge",
                         "beta.kubernetes.io/instance-type": "g4dn.xlarge",
                         "feature.node.kubernetes.io/pci-0300_1d0f.present": "true",
                         "feature.node.kubernetes.io/pci-0302_10de.present": "true",
                         "feature.node.kubernetes.io/kernel-version.full": "5.4.0-1024-aws"})
    node_info(n, "v1.18.8", "docker://19.3.12", "Ubuntu 18.04.5 LTS", "5.4.0-1024-aws")
    c.add(n, cpu_node("ip-10-0-3-17.ec2.internal", kubelet="v1.18.8"))
    op = pod("gpu-operator-7c5f9d8b6-lx2pq", "gpu-operator", phase="Running", node="ip-10-0-3-17.ec2.internal",
             containers=[container("gpu-operator", image="nvcr.io/nvidia/gpu-operator:1.1.7")],
             labels={"name": "gpu-operator"}, owner=("ReplicaSet", "gpu-operator-7c5f9d8b6"))
    c.add(op)
    return c


def gfd_no_labels_plugin_without_runtimeclass() -> Case:
    frag = "no labels generated from any source"
    node = "gpu-node-01"
    gfd_img = "nvcr.io/nvidia/gpu-feature-discovery:v0.7.0"
    dp_img = "nvcr.io/nvidia/k8s-device-plugin:v0.13.0"
    c = Case("gpu-feature-discovery-36-no-labels-plugin-without-runtimeclass",
             source="https://github.com/NVIDIA/gpu-feature-discovery/issues/36",
             fragment=frag,
             where="log of the gpu-feature-discovery container (in the NFD DaemonSet pod)",
             expect="nvml-init-failed",
             trap=True,
             also_ok={"device-plugin-not-running": "the plugin pod runs but serves no GPUs; naming it without the "
                                                   "NVML reason is less precise but points at the right component"},
             resolution="Not a GFD/NFD labelling problem: the reporter had forgotten runtimeClassName: nvidia on the "
                        "NVIDIA device plugin (and GFD), so on this containerd node (nvidia not the default runtime) "
                        "they ran without the driver libraries and NVML could not load; after adding it 'everything "
                        "went well'.",
             target={"node": node},
             must_not=["driver-cuda-mismatch", "unknown-resource-name"],
             k8s="v1.26 (kubeadm, containerd, standalone NFD + GFD v0.7 + device plugin v0.13)",
             notes="Node name, GPU model and versions are assumptions (the thread is from March 2023). The device "
                   "plugin log is the v0.13 text for a pod without the NVIDIA runtime; the GFD log around the "
                   "verbatim fragment is a reconstruction.")
    n = gpu_node(node, gpus=0, gfd=False, kubelet="v1.26.3",
                 labels={"feature.node.kubernetes.io/pci-10de.present": "true",
                         "feature.node.kubernetes.io/pci-0302_10de.present": "true"})
    node_info(n, "v1.26.3", "containerd://1.6.19", "Ubuntu 22.04.2 LTS", "5.15.0-67-generic")
    c.add(n, runtime_class("nvidia"))
    nfd = pod("nfd-8vq2c", "node-feature-discovery", phase="Running", node=node,
              containers=[container("nfd-worker", image="registry.k8s.io/nfd/node-feature-discovery:v0.12.1"),
                          container("gpu-feature-discovery", image=gfd_img)],
              labels={"app": "nfd"}, owner=("DaemonSet", "nfd"))
    nfd["spec"]["runtimeClassName"] = "nvidia"
    c.add(nfd)
    c.log("node-feature-discovery", "nfd-8vq2c", "gpu-feature-discovery",
          "gpu-feature-discovery: 2023/03/23 09:12:01 Running gpu-feature-discovery in version v0.7.0\n"
          "gpu-feature-discovery: 2023/03/23 09:12:01 Start running\n"
          "gpu-feature-discovery: 2023/03/23 09:12:01 Warning: " + frag + "\n"
          "gpu-feature-discovery: 2023/03/23 09:12:01 Sleeping for 60000000000\n")
    dp = pod("nvidia-device-plugin-daemonset-tb7w4", "kube-system", phase="Running", node=node,
             containers=[container("nvidia-device-plugin-ctr", image=dp_img)],
             labels={"name": "nvidia-device-plugin-ds"}, owner=("DaemonSet", "nvidia-device-plugin-daemonset"),
             tolerations=[GPU_TOLERATION])
    c.add(dp)
    c.log("kube-system", "nvidia-device-plugin-daemonset-tb7w4", "nvidia-device-plugin-ctr",
          "I0323 09:11:40.101522       1 main.go:154] Starting FS watcher.\n"
          "I0323 09:11:40.101603       1 main.go:161] Starting OS watcher.\n"
          "I0323 09:11:40.101888       1 main.go:176] Starting Plugins.\n"
          "I0323 09:11:40.101905       1 main.go:234] Loading configuration.\n"
          "I0323 09:11:40.102033       1 main.go:242] Updating config with default resource matching patterns.\n"
          "I0323 09:11:40.102248       1 main.go:253] \nRunning with config:\n{\n  \"version\": \"v1\",\n"
          "  \"flags\": {\n    \"migStrategy\": \"none\",\n    \"failOnInitError\": false,\n"
          "    \"nvidiaDriverRoot\": \"/\"\n  }\n}\n"
          "I0323 09:11:40.102261       1 main.go:256] Retreiving plugins.\n"
          "W0323 09:11:40.102306       1 factory.go:31] No valid resources detected, creating a null CDI handler\n"
          "I0323 09:11:40.102345       1 factory.go:107] Detected non-NVML platform: could not load NVML library: "
          "libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"
          "I0323 09:11:40.102381       1 factory.go:107] Detected non-Tegra platform: /sys/devices/soc0/family file not found\n"
          "E0323 09:11:40.102388       1 factory.go:115] Incompatible platform detected\n"
          "E0323 09:11:40.102392       1 factory.go:116] If this is a GPU node, did you configure the NVIDIA Container Toolkit?\n"
          "E0323 09:11:40.102396       1 factory.go:117] You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites\n"
          "E0323 09:11:40.102400       1 factory.go:118] You can learn how to set the runtime at: https://github.com/NVIDIA/k8s-device-plugin#quick-start\n"
          "E0323 09:11:40.102404       1 factory.go:119] If this is not a GPU node, you should set up a toleration or nodeSelector to only deploy this plugin on GPU nodes\n"
          "I0323 09:11:40.102421       1 main.go:287] No devices found. Waiting indefinitely.\n")
    return c


# ------------------------------------------------------------------ driver DaemonSet on a host that already has a driver


def driver_in_use_host_driver() -> Case:
    frag = "Could not unload NVIDIA driver kernel modules, driver is in use"
    ns = "gpu-operator-resources"
    node = "gpu-vm-01"
    drv_img = "nvcr.io/nvidia/driver:460.32.03-ubuntu18.04"
    dname = "nvidia-driver-daemonset-qm6kt"
    c = Case("gpu-operator-163-driver-in-use-host-driver",
             source="https://github.com/NVIDIA/gpu-operator/issues/163",
             fragment=frag,
             where="log of container nvidia-driver-ctr of the nvidia-driver-daemonset pod (CrashLoopBackOff)",
             expect="crash-loop",
             trap=True,
             resolution="Installing cuda-drivers-fabricmanager-460 had also put the NVIDIA driver on the host, so the "
                        "driver container cannot unload the loaded module and restarts forever. The other operands use "
                        "the host driver and work (the reporter: just ignore the driver container); the maintainer's "
                        "fix is to install only nvidia-fabricmanager-<branch>, or not to deploy the driver container "
                        "on that node. The GPUs are advertised and usable: the crash loop is the only fault.",
             target={"pod": f"{ns}/{dname}"},
             must_not=["nvml-init-failed", "device-plugin-not-running", "driver-cuda-mismatch", "gpu-unhealthy"],
             k8s="v1.20 (GPU Operator 1.6, Ubuntu 18.04 VM)",
             notes="Node name invented; 8x A100 assumed (fabric manager implies an NVSwitch system). The device "
                   "plugin and toolkit run on the host driver and the node advertises its GPUs.")
    n = gpu_node(node, gpus=8, product="NVIDIA-A100-SXM4-40GB", kubelet="v1.20.4", driver="460.32.03", cuda="11.2")
    node_info(n, "v1.20.4", "docker://20.10.5", "Ubuntu 18.04.5 LTS", "4.15.0-136-generic")
    operator_labels(n)
    c.add(n)
    c.add(operand(dname, ns, node, "nvidia-driver-daemonset", [container("nvidia-driver-ctr", image=drv_img)],
                  [crashloop("nvidia-driver-ctr", 23, drv_img, pod_ref=f"{dname}_{ns}(uid-{ns}-{dname})")]))
    c.log(ns, dname, "nvidia-driver-ctr",
          "Starting installation of NVIDIA driver version 460.32.03 for Linux kernel version 4.15.0-136-generic\n\n"
          "Stopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\n" + frag + "\n"
          "Stopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\n" + frag + "\n")
    c.add(backoff(dname, ns, "nvidia-driver-ctr", count=90))
    for app, sfx, ctr, img in (("nvidia-device-plugin-daemonset", "x8b2n", "nvidia-device-plugin-ctr",
                                "nvcr.io/nvidia/k8s-device-plugin:v0.8.2-ubi8"),
                               ("nvidia-container-toolkit-daemonset", "c4wz7", "nvidia-container-toolkit-ctr",
                                "nvcr.io/nvidia/k8s/container-toolkit:1.4.7-ubuntu18.04"),
                               ("nvidia-dcgm-exporter", "p9r6d", "nvidia-dcgm-exporter",
                                "nvcr.io/nvidia/k8s/dcgm-exporter:2.1.4-2.2.0-ubuntu20.04")):
        c.add(operand(f"{app}-{sfx}", ns, node, app, [container(ctr, image=img)],
                      [running(ctr, image=img)], phase="Running"))
    return c


# ------------------------------------------------------------------ toolkit / validator


def toolkit_validation_crio_hooks_dir() -> Case:
    frag = 'Error: error validating toolkit installation: exec: \\"nvidia-smi\\": executable file not found in $PATH'
    ns = "gpu-operator-resources"
    node = "awz-worker1"
    v = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.8.2"
    vname = "nvidia-operator-validator-l72z2"
    c = Case("gpu-operator-280-toolkit-validation-crio-hooks-dir",
             source="https://github.com/NVIDIA/gpu-operator/issues/280",
             fragment=frag,
             where="log of init container toolkit-validation of the nvidia-operator-validator pod",
             expect="device-plugin-not-running",
             also_ok={"nvidia-runtime-error": "the NVIDIA runtime hook is never applied to containers, which is "
                                              "what the toolkit validation detects"},
             resolution="The toolkit DaemonSet had installed its OCI hook in /run/containers/oci/hooks.d, but CRI-O's "
                        "hooks_dir in /etc/crio/crio.conf did not include that path, so the hook never ran and the "
                        "validator found no nvidia-smi in its container (the reporter's finding after the "
                        "maintainer's question). Until toolkit validation passes, the device plugin, GFD and DCGM "
                        "stay in Init and the node advertises no GPUs.",
             target={"node": node},
             must_not=["driver-cuda-mismatch", "unknown-resource-name", "insufficient-gpu"],
             k8s="v1.21 (CRI-O, GPU Operator 1.8.2)",
             notes="Node and validator pod names are the thread's; GPU model not given (T4 assumed). The driver is "
                   "pre-installed on the host, so there is no driver pod; driver-validation has completed.")
    n = gpu_node(node, gpus=0, gfd=False, kubelet="v1.21.6",
                 labels={"feature.node.kubernetes.io/pci-10de.present": "true"})
    node_info(n, "v1.21.6", "cri-o://1.21.4", "CentOS Linux 8", "4.18.0-305.19.1.el8_4.x86_64")
    operator_labels(n, driver="false")
    c.add(n, runtime_class("nvidia"))
    ref = f"{vname}_{ns}(uid-{ns}-{vname})"
    c.add(operand(vname, ns, node, "nvidia-operator-validator", [container("nvidia-operator-validator", image=v)],
                  [pod_initializing("nvidia-operator-validator", v)],
                  init_containers=[container(x, image=v) for x in ("driver-validation", "toolkit-validation",
                                                                   "cuda-validation", "plugin-validation")],
                  init_statuses=[{"name": "driver-validation", "ready": True, "restartCount": 0, "image": v,
                                  "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                                 crashloop("toolkit-validation", 41, v, pod_ref=ref),
                                 pod_initializing("cuda-validation", v), pod_initializing("plugin-validation", v)],
                  runtime_class_name="nvidia"))
    c.log(ns, vname, "toolkit-validation", "toolkit is not ready\n" + 'time="2021-11-17T07:42:32Z" level=info msg="' + frag + '"\n')
    c.add(backoff(vname, ns, "toolkit-validation", count=41))
    tk = "nvcr.io/nvidia/k8s/container-toolkit:1.7.1-ubi8"
    c.add(operand("nvidia-container-toolkit-daemonset-9z7wd", ns, node, "nvidia-container-toolkit-daemonset",
                  [container("nvidia-container-toolkit-ctr", image=tk)], [running("nvidia-container-toolkit-ctr", image=tk)],
                  phase="Running"))
    for app, sfx, ctr, img in (("nvidia-device-plugin-daemonset", "hm5ld", "nvidia-device-plugin-ctr",
                                "nvcr.io/nvidia/k8s-device-plugin:v0.9.0-ubi8"),
                               ("gpu-feature-discovery", "tq2mc", "gpu-feature-discovery",
                                "nvcr.io/nvidia/gpu-feature-discovery:v0.4.1"),
                               ("nvidia-dcgm-exporter", "w8f3s", "nvidia-dcgm-exporter",
                                "nvcr.io/nvidia/k8s/dcgm-exporter:2.2.9-2.4.0-ubi8")):
        c.add(waiting_on_driver("Pod", f"{app}-{sfx}", ns, node, app, ctr, img, validator=v,
                                runtime_class_name="nvidia"))
    return c



def toolkit_rke2_default_socket() -> Case:
    frag = ("Error signaling containerd, attempt 5/6: unable to dial: dial unix /runtime/sock-dir/containerd.sock: "
            "connect: no such file or directory")
    ns = "gpu-operator"
    node = "rke2-gpu-worker-1"
    tk = "nvcr.io/nvidia/k8s/container-toolkit:v1.10.0-ubuntu20.04"
    v = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.11.1"
    tname = "nvidia-container-toolkit-daemonset-5qj8w"
    c = Case("gpu-operator-406-toolkit-rke2-default-containerd-paths",
             source="https://github.com/NVIDIA/gpu-operator/issues/406",
             fragment=frag,
             where="log of container nvidia-container-toolkit-ctr of the nvidia-container-toolkit-daemonset pod "
                   "(CrashLoopBackOff)",
             expect="device-plugin-not-running",
             resolution="RKE2 runs its own containerd with the socket at /run/k3s/containerd/containerd.sock and the "
                        "config under /var/lib/rancher/rke2/agent/etc/containerd; the toolkit, left at the default "
                        "paths, cannot signal containerd and never finishes. The maintainer's fix (setting "
                        "CONTAINERD_CONFIG and CONTAINERD_SOCKET in the ClusterPolicy toolkit env) brought the "
                        "operator pods to a good status. Containerd itself is fine: other pods run.",
             target={"node": node},
             must_not=["node-not-ready", "driver-cuda-mismatch", "insufficient-gpu"],
             k8s="v1.22 (RKE2, Ubuntu 20.04, Tesla T4, GPU Operator v1.11)",
             notes="Node and pod names invented; RKE2 version, OS and GPU are the thread's. The toolkit log lines "
                   "before the verbatim warning are a reconstruction of the toolkit's containerd setup output.")
    n = gpu_node(node, gpus=0, gfd=False, kubelet="v1.22.13+rke2r1",
                 labels={"feature.node.kubernetes.io/pci-10de.present": "true"})
    node_info(n, "v1.22.13+rke2r1", "containerd://1.5.13-k3s1", "Ubuntu 20.04.5 LTS", "5.4.0-125-generic")
    operator_labels(n, driver="false")
    c.add(n, cpu_node("rke2-server-1", kubelet="v1.22.13+rke2r1"))
    c.add(operand(tname, ns, node, "nvidia-container-toolkit-daemonset",
                  [container("nvidia-container-toolkit-ctr", image=tk)],
                  [crashloop("nvidia-container-toolkit-ctr", 15, tk, pod_ref=f"{tname}_{ns}(uid-{ns}-{tname})")],
                  init_containers=[container("driver-validation", image=v)],
                  init_statuses=[{"name": "driver-validation", "ready": True, "restartCount": 0, "image": v,
                                  "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]))
    c.log(ns, tname, "nvidia-container-toolkit-ctr",
          'time="2022-09-19T11:51:58Z" level=info msg="Starting \'setup\' for containerd"\n'
          'time="2022-09-19T11:51:58Z" level=info msg="Loading config: /runtime/config-dir/config.toml"\n'
          'time="2022-09-19T11:51:58Z" level=info msg="Config file does not exist, creating new one"\n'
          'time="2022-09-19T11:51:58Z" level=info msg="Flushing config"\n'
          'time="2022-09-19T11:51:58Z" level=info msg="Successfully flushed config"\n'
          'time="2022-09-19T11:51:58Z" level=info msg="Sending SIGHUP signal to containerd"\n'
          + "".join(f'time="2022-09-19T11:52:{3 + 5 * i:02d}Z" level=warning msg="Error signaling containerd, attempt '
                    f'{i}/6: unable to dial: dial unix /runtime/sock-dir/containerd.sock: connect: no such file or '
                    f'directory"\n' for i in range(1, 7)))
    c.add(backoff(tname, ns, "nvidia-container-toolkit-ctr", count=15))
    for app, sfx, ctr, img in (("nvidia-device-plugin-daemonset", "r7k2v", "nvidia-device-plugin",
                                "nvcr.io/nvidia/k8s-device-plugin:v0.12.2-ubi8"),
                               ("nvidia-operator-validator", "b6m4x", "nvidia-operator-validator", v)):
        c.add(waiting_on_driver("Pod", f"{app}-{sfx}", ns, node, app, ctr, img, validator=v))
    return c


CASES = [driver_kernel_headers_entitlement, driver_gpl_only_symbol_newer_kernel, cuda_validator_fabric_manager,
         dcgm_exporter_on_non_gpu_node, nfd_label_without_pci_10de, gfd_no_labels_plugin_without_runtimeclass,
         driver_in_use_host_driver, toolkit_validation_crio_hooks_dir, toolkit_rke2_default_socket]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
