"""Real-world GPU health cases, second round: Xid evidence on nodes (kernel lines
surfaced by node-problem-detector, device-plugin health lines), GPUs that fell off the
bus, failing HBM behind an application "hang", and unhealthy GPUs behind a plain
"Insufficient nvidia.com/gpu". Run ``python tests/realworld/build_health2.py`` to
rewrite their snapshots.

Kernel ``NVRM`` lines appear as node-problem-detector events on the Node (source
``kernel-monitor``), as in build_hardware.py; what each snapshot adds beyond the thread
is said in its ``notes``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (backoff_event, kernel_event, Case, container, event, gpu_node, cpu_node, pod, unschedulable, waiting, gpu_uuid, suffix, plugin_log)  # noqa: E402

T_FAIL = "2026-11-20T02:41:07Z"


# ------------------------------------------------------------------ local helpers (copied from build_hardware.py)


def plugin_pod(node: str, ns: str, name_prefix: str, cname: str, image: str, labels: dict,
               ds: str) -> dict:
    c = container(cname, image=image)
    return pod(f"{name_prefix}-{suffix(node, ds)}", ns, phase="Running", node=node, containers=[c], labels=labels,
               owner=("DaemonSet", ds),
               tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])


def crashlooping(name: str, ns: str, node: str, gpus: int, cname: str, image: str, restarts: int = 5,
                 exit_code: int = 1, owner: Optional[tuple[str, str]] = None, labels: Optional[dict] = None) -> dict:
    c = container(cname, image=image, gpus=gpus)
    st = waiting(cname, "CrashLoopBackOff",
                 f"back-off 5m0s restarting failed container={cname} pod={name}_{ns}(uid-{ns}-{name})",
                 restarts=restarts, last_exit={"reason": "Error", "exitCode": exit_code}, image=image)
    return pod(name, ns, phase="Running", node=node, containers=[c], owner=owner, labels=labels, statuses=[st],
               conditions=[{"type": "PodScheduled", "status": "True"},
                           {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}])


# ================================================================== cases


def vllm_backport_62_failing_hbm() -> Case:
    """An inference-engine "hang" that was failing HBM on one GPU (trap)."""
    node, ns, name = "a100-pcie-01", "llm", "vllm-dspark-0"
    frag = "RPC call to sample_tokens timed out"
    c = Case("vllm-backport-62-sample-tokens-timeout-failing-hbm",
             source="https://github.com/wtdcode/vllm-backport/issues/62",
             fragment=frag,
             where="log of container vllm (previous instance) of a CrashLoopBackOff pod",
             expect="ecc-uncorrectable", trap=True,
             also_ok={"xid-error": "Xid 48 (DBE) and Xid 63 (row remap) on the pod's GPU name the same failing HBM"},
             must_not=["gpu-memory-exhausted"],
             resolution="Reported as a DSpark speculative-decoding hang; the reporter's root-cause correction: the "
                        "hangs were failing HBM on GPU2 (hardware), not a software bug. dmesg showed repeated Xid "
                        "48 (uncorrectable DBE) and Xid 63 (row remapper) all on the same GPU and HBM region, "
                        "remapped rows kept growing after a reboot, and the same engine death reproduced with "
                        "other engines (SGLang) on that GPU.",
             target={"pod": f"{ns}/{name}"}, k8s="v1.31",
             notes="The thread runs vLLM TP=4 on 4x A100-80GB PCIe, driver 580.178.04, outside Kubernetes. The "
                   "snapshot puts the engine in a StatefulSet pod on that node; the NVRM lines are written in the "
                   "driver's format from the Xids, PCI address (0000:9c:00) and region the thread names, surfaced "
                   "as node-problem-detector kernel-monitor events. The pod's log is a reconstruction around the "
                   "thread's title phrase.")
    c.add(gpu_node(node, gpus=4, product="NVIDIA-A100-80GB-PCIe", kubelet="v1.31.4", driver="580.178.04",
                   cuda="13.0", cpu="64", memory="512Gi"))
    img = "registry.local/llm/vllm-backport:dspark-0.11"
    c.add(crashlooping(name, ns, node, 4, "vllm", img, restarts=3, owner=("StatefulSet", "vllm-dspark"),
                       labels={"app": "vllm-dspark"}))
    c.add(backoff_event(name, ns, "vllm", count=9))
    c.add(kernel_event(node, "NVRMXid", "NVRM: Xid (PCI:0000:9c:00): 48, pid=48211, name=python3, An uncorrectable "
                       "double bit error (DBE) has been detected on GPU in the framebuffer at partition 9, "
                       "subpartition 1.", count=4))
    c.add(kernel_event(node, "NVRMXid", "NVRM: Xid (PCI:0000:9c:00): 63, pid=48211, Row Remapper: New row marked "
                       "for remapping, reset gpu to activate.", count=3))
    c.log(ns, name, "vllm", previous=True, text=(
        "INFO 11-20 02:38:51 [loggers.py:123] Engine 000: Avg prompt throughput: 2104.3 tokens/s, Avg generation "
        "throughput: 61.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 41.7%\n"
        "ERROR 11-20 02:41:07 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly\n"
        "ERROR 11-20 02:41:07 [dump_input.py:69] Dumping input data for V1 LLM engine\n"
        f"TimeoutError: {frag} (after 300.0 s)\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
        "root cause.\n"))
    return c


def nvsentinel_155_fell_off_bus_no_xid() -> Case:
    node = "l40-node-07"
    frag = "fallen off the bus and is not responding to commands."
    c = Case("nvsentinel-155-gpu-fell-off-bus-without-xid",
             source="https://github.com/NVIDIA/NVSentinel/issues/155",
             fragment=frag,
             where="kernel log lines as a node-problem-detector event on the Node",
             expect="xid-error",
             also_ok={"gpu-count-mismatch": "the GPU that fell off the bus is missing from capacity (7 of the 8 "
                                            "GPUs the node was labelled with); naming the missing GPU is as useful"},
             resolution="On-prem nodes printed that a GPU 'fell off the bus and is not responding to commands' "
                        "and the probe routine failed for it, with no Xid line; the maintainer noted it duplicates "
                        "Xid 79 (GPU has fallen off the bus) and the syslog health monitor was changed (#195) to "
                        "treat the message as that hardware fault.",
             target={"node": node}, k8s="v1.31",
             notes="Kernel lines are the thread's (570.158.01 open kernel module, PCI ID 10de:26b5, an L40), joined "
                   "into one node-problem-detector event. After the failed probe the plugin enumerates 7 GPUs; the "
                   "GPU feature discovery count label still says 8 (assumed). No DCGM exporter.")
    n = gpu_node(node, gpus=7, product="NVIDIA-L40", kubelet="v1.31.4", driver="570.158.01", cuda="12.8",
                 labels={"nvidia.com/gpu.count": "8"})
    c.add(n)
    dp = plugin_pod(node, "gpu-operator", "nvidia-device-plugin-daemonset", "nvidia-device-plugin",
                    "nvcr.io/nvidia/k8s-device-plugin:v0.17.1", {"app": "nvidia-device-plugin-daemonset"},
                    "nvidia-device-plugin-daemonset")
    c.add(dp)
    c.log("gpu-operator", dp["metadata"]["name"], "nvidia-device-plugin", plugin_log("I1120 02:20:31", "v0.17.1", []))
    c.add(kernel_event(node, "GPUFellOffBus",
                       "NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: (PCI ID: 10de:26b5) installed in this system has "
                       f"NVRM: {frag}"))
    c.add(kernel_event(node, "NVRMProbeFailed", "NVRM: The NVIDIA probe routine failed for 1 device(s)."))
    for i in range(3):
        c.add(pod(f"render-{i}", "vis", phase="Running", node=node, gpus=2))
    return c


def akash_209_xid79_node() -> Case:
    node = "node1"
    frag = "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    c = Case("akash-network-support-209-xid79-recurring-node",
             source="https://github.com/akash-network/support/issues/209",
             fragment=frag,
             where="kernel log line as a node-problem-detector event on the Node",
             expect="xid-error",
             also_ok={"gpu-unhealthy": "the device plugin marks the GPU that fell off the bus unhealthy; a finding "
                                       "on that GPU names the same fault",
                      "gpu-count-mismatch": "the node runs a GPU short after Xid 79"},
             resolution="A provider node kept spawning failing pods and nvidia-smi said 'Unable to determine the device "
                        "handle for GPU0000:A1:00.0: Unknown Error'; dmesg showed Xid 79 (GPU fell off the bus) on "
                        "GPU a1, recurring after reboots. The node was cordoned and an NVIDIA bug report collected: a "
                        "hardware fault on that GPU, not the workloads.",
             target={"node": node}, k8s="v1.28",
             notes="Driver 535.161.07 from the thread; 8 GPUs per node assumed. The plugin's health lines for the "
                   "Xid 79 are added (nvdp release of the static plugin chart, v0.14.5); allocatable 7 of 8.")
    uuid = "GPU-979426f2-893a-7cbb-c4cf-81472f89a462"
    c.add(gpu_node(node, gpus=8, allocatable=7, product="NVIDIA-A100-SXM4-80GB", kubelet="v1.28.6",
                   driver="535.161.07", cuda="12.2"))
    dp = plugin_pod(node, "nvidia-device-plugin", "nvdp-nvidia-device-plugin", "nvidia-device-plugin-ctr",
                    "nvcr.io/nvidia/k8s-device-plugin:v0.14.5", {"app.kubernetes.io/name": "nvidia-device-plugin",
                                                               "app.kubernetes.io/instance": "nvdp"},
                    "nvdp-nvidia-device-plugin")
    c.add(dp)
    c.log("nvidia-device-plugin", dp["metadata"]["name"], "nvidia-device-plugin-ctr", plugin_log(
        "I0408 17:05:10", "v0.14.5", [
            "I0409 01:21:38.889979       1 health.go:160] Processing event {Device:{Handle:0x7f8b442818e9} "
            "EventType:8 EventData:79 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}",
            f"I0409 01:21:38.890218       1 health.go:186] XidCriticalError: Xid=79 on Device={uuid}; marking "
            "device as unhealthy.",
            f"I0409 01:21:38.890900       1 server.go:245] 'nvidia.com/gpu' device marked unhealthy: {uuid}"],
        ignored="map[13:true 31:true 43:true 45:true 68:true]"))
    c.add(kernel_event(node, "NVRMXid", "NVRM: GPU at PCI:0000:a1:00: " + uuid))
    c.add(kernel_event(node, "NVRMXid", frag))
    c.add(kernel_event(node, "GPUFellOffBus", "NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus."))
    for i in range(3):
        c.add(pod(f"lease-{i}-web", f"lease-{i}", phase="Running", node=node, gpus=2))
    return c


def akash_249_unhealthy_gpu_reads_insufficient() -> Case:
    """A pod Pending on 'Insufficient nvidia.com/gpu' while one GPU is marked unhealthy (trap)."""
    ns, name = "lease-8gpu", "llm-train-0"
    frag = ("0/8 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 7 Insufficient "
            "nvidia.com/gpu. preemption: 0/8 nodes are available: 1 Preemption is not helpful for scheduling, 7 No "
            "preemption victims found for incoming pod..")
    c = Case("akash-network-support-249-unhealthy-gpu-reads-insufficient",
             source="https://github.com/akash-network/support/issues/249",
             fragment=frag,
             where="FailedScheduling event and PodScheduled condition of the Pending pod",
             expect="gpu-unhealthy", trap=True,
             also_ok={"gpu-count-mismatch": "the node with the free GPUs advertises 7 of its 8 GPUs; naming the "
                                            "missing GPU points at the same fix"},
             must_not=["unknown-resource-name"],
             resolution="The device plugin (nvdp) had marked one GPU of an 8-GPU node unhealthy, so an 8-GPU "
                        "deployment stayed Pending on 'Insufficient nvidia.com/gpu' while the provider's inventory "
                        "still reported all 8 GPUs available; bouncing the nvdp device-plugin pod on that node "
                        "recovered the GPU (when the fault was transient).",
             target={"pod": f"{ns}/{name}"}, k8s="v1.28",
             notes="Cluster shaped to the scheduler message: 7 H100 nodes with 8 GPUs, 6 fully used by other leases, "
                   "one (node7) with a GPU marked unhealthy (allocatable 7, none used), and one control-plane node "
                   "the pod's selector excludes. The thread's plugin log is a gist not in the excerpt; only its "
                   "'device marked unhealthy' line is reproduced (no Xid number given).")
    sel = {"akash.network/capabilities.gpu.vendor.nvidia.model.h100": "true"}
    for i in range(1, 8):
        nn = f"node{i}"
        c.add(gpu_node(nn, gpus=8, allocatable=7 if i == 7 else None, product="NVIDIA-H100-80GB-HBM3",
                       kubelet="v1.28.6", driver="535.161.07", cuda="12.2", labels=sel))
        dp = plugin_pod(nn, "nvidia-device-plugin", "nvdp-nvidia-device-plugin", "nvidia-device-plugin-ctr",
                        "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
                        {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": "nvdp"},
                        "nvdp-nvidia-device-plugin")
        c.add(dp)
        if i == 7:
            uuid = gpu_uuid(nn, 3)
            c.log("nvidia-device-plugin", dp["metadata"]["name"], "nvidia-device-plugin-ctr", plugin_log(
                "I0815 08:02:11", "v0.15.0",
                [f"I0816 11:47:02.890900       1 server.go:245] 'nvidia.com/gpu' device marked unhealthy: {uuid}"]))
        else:
            c.add(pod(f"lease-{i}-worker", f"lease-{i}", phase="Running", node=nn, gpus=8))
    c.add(cpu_node("control-plane-1", kubelet="v1.28.6",
                   taints=[]))
    p = pod(name, ns, gpus=8, phase="Pending", node_selector=sel, conditions=[unschedulable(frag)],
            owner=("StatefulSet", "llm-train"))
    c.add(p, event("Pod", name, ns, "FailedScheduling", frag, count=14))
    return c


def club3090_827_spec_decode_illegal_address() -> Case:
    """An illegal memory access (with an app-class Xid 13) that was a spec-decoding bug (trap)."""
    node, ns, name = "rtx5090-ws-01", "inference", "vllm-thinkingcap-27b-dual-w4a8-6f9c7d5b8-x2k4p"
    frag = ("Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
            "encountered")
    c = Case("club-3090-827-spec-decode-illegal-address-not-hardware",
             source="https://github.com/noonghunna/club-3090/issues/827",
             fragment=frag,
             where="log of container vllm (previous instance) of a CrashLoopBackOff pod",
             expect="crash-loop", trap=True,
             must_not=["ecc-uncorrectable", "gpu-unhealthy"],
             resolution="The engine died with an illegal memory access on a homogeneous pair of RTX 5090s under a "
                        "soak test, at ~25K context rather than at the 240K it had just prefilled. The maintainers "
                        "traced it (in #758, which harvests #827) to a -1 draft token in MTP speculative decoding: a "
                        "vLLM bug fixed by vllm#50021; the patched build ran the same load with zero faults and zero "
                        "Xid, and SPEC_N=0 is the workaround. Application bug, not the GPUs.",
             target={"pod": f"{ns}/{name}"}, k8s="v1.32",
             notes="The thread runs the compose stack on 2x RTX 5090 under Docker; the snapshot puts the same "
                   "container in a Deployment pod. The thread reports Xids that vanish with the patched build but "
                   "the excerpt does not quote them: the node event carries an app-class Xid 13 (Graphics SM Warp "
                   "Exception, Out Of Range Address) in the driver's format, on the pod's GPU (assumed). Driver "
                   "version assumed.")
    c.add(gpu_node(node, gpus=2, product="NVIDIA-GeForce-RTX-5090", kubelet="v1.32.3", driver="580.65.06",
                   cuda="13.0", cpu="32", memory="192Gi", labels={"nvidia.com/gpu.memory": "32607"}))
    img = "vllm/vllm-openai:nightly"
    labels = {"app": "vllm-thinkingcap-27b-dual-w4a8", "pod-template-hash": "6f9c7d5b8"}
    c.add(crashlooping(name, ns, node, 2, "vllm", img, restarts=4,
                       owner=("ReplicaSet", "vllm-thinkingcap-27b-dual-w4a8-6f9c7d5b8"), labels=labels))
    c.add(backoff_event(name, ns, "vllm", count=11))
    c.add(kernel_event(node, "NVRMXid", "NVRM: Xid (PCI:0000:01:00): 13, pid=2841, name=python3, Graphics SM Warp "
                       "Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address", count=2))
    c.log(ns, name, "vllm", previous=True, text=(
        '(APIServer pid=1) INFO:     192.168.32.1:46494 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        '(APIServer pid=1) INFO:     192.168.32.1:36530 - "GET /v1/models HTTP/1.1" 200 OK\n'
        f"[rank1]:[E731 01:24:58.516124705 ProcessGroupNCCL.cpp:2119] [PG ID 2 PG GUID 3 Rank 1] {frag}\n"
        "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
        "for more information.\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"))
    return c


def mfc_1748_ecc_node_fails_every_job() -> Case:
    node, ns, name = "atl1-1-03-007-29-0", "ci", "mfc-gpu-acc-32374295683-7xk2m"
    frag = "(CUDA_ERROR_ECC_UNCORRECTABLE): uncorrectable ECC error encountered"
    c = Case("mfc-1748-ci-node-uncorrectable-ecc",
             source="https://github.com/MFlowCode/MFC/pull/1748",
             fragment=frag,
             where="log of container syscheck of a Failed Job pod",
             expect="ecc-uncorrectable",
             also_ok={"xid-error": "a finding on the node's GPU memory fault names the same bad node"},
             must_not=["gpu-memory-exhausted", "driver-cuda-mismatch"],
             resolution="GPU CI jobs failed intermittently at syscheck with CUDA_ERROR_ECC_UNCORRECTABLE: every "
                        "failure came from one L40S node with uncorrectable ECC memory errors that the scheduler "
                        "kept placing jobs on; the node was excluded and reported for repair/drain.",
             target={"pod": f"{ns}/{name}"}, k8s="v1.30",
             notes="The thread's jobs run under SLURM; the snapshot makes the CI step a Kubernetes Job pod on the "
                   "same-named node (2 L40S GPUs assumed) next to a healthy node. Only the application's error "
                   "shows the fault: no Xid event, no DCGM exporter.")
    for nn in (node, "atl1-1-03-007-33-0"):
        c.add(gpu_node(nn, gpus=2, product="NVIDIA-L40S", kubelet="v1.30.5", driver="550.127.05", cuda="12.4",
                       cpu="48", memory="384Gi"))
    img = "ghcr.io/mflowcode/mfc-ci:nvhpc-24.5"
    cont = container("syscheck", image=img, gpus=1)
    p = pod(name, ns, phase="Failed", node=node, containers=[cont], owner=("Job", "mfc-gpu-acc-32374295683"),
            labels={"job-name": "mfc-gpu-acc-32374295683"}, spec={"restartPolicy": "Never"},
            statuses=[{"name": "syscheck", "ready": False, "restartCount": 0, "image": img,
                       "state": {"terminated": {"reason": "Error", "exitCode": 1, "startedAt": "2026-11-20T02:40:51Z",
                                                "finishedAt": T_FAIL}}}],
            conditions=[{"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "False", "reason": "PodFailed"}])
    c.add(p)
    c.log(ns, name, "syscheck", text=(
        "mfc: OK > (venv) Entered the Python 3.11.9 virtual environment (>= 3.9).\n"
        "Accelerator Fatal Error: call to cuCtxCreate returned error 214\n"
        f"  {frag}\n"
        "mfc: ERROR > syscheck failed with exit code 1.\n"))
    c.add(pod("mfc-gpu-acc-32374295683-qq8rd", ns, phase="Succeeded", node="atl1-1-03-007-33-0", gpus=1,
              owner=("Job", "mfc-gpu-acc-32374295683"), statuses=[]))
    return c


def nvsentinel_911_xid31_cordon(target_node: bool = False) -> Case:
    """A node cordoned by a health monitor for an application-class Xid 31 (trap)."""
    ns, name = "research", "finetune-7b-0"
    bad, full = "h100-node-04", "h100-node-05"
    frag = ("ErrorCode:DCGM_FR_XID_ERROR GPU:4 PCI:0000:c4:00.0 GPU_UUID:GPU-d1816eb1-2926-4fbc-13f6-1cf1ba1b921b "
            "Detected XID 31 for GPU 4 Please consult the documentation for details of this XID. Recommended "
            "Action=NONE;")
    sched = ("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable. preemption: 0/2 "
             "nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for "
             "scheduling.")
    c = Case("nvsentinel-911-xid31-cordon-recommended-action-none" + ("-node" if target_node else ""),
             source="https://github.com/NVIDIA/NVSentinel/issues/911",
             fragment=frag,
             where="node condition GpuMemWatch set by NVSentinel's gpu-health-monitor on the cordoned node",
             expect="node-unschedulable", trap=True,
             must_not=["ecc-uncorrectable", "gpu-unhealthy"] + (["xid-error"] if target_node else []),
             resolution="An Xid 31 (GPU memory page fault, an application-class error; injected in the report) made "
                        "DCGM's memory health watch fail with DCGM_FR_XID_ERROR. Because that watch is fatal, "
                        "NVSentinel cordoned the node, but the error's recommended action is NONE, so remediation "
                        "dropped it and the node stayed cordoned until someone uncordoned it by hand. Reported and "
                        "closed as an NVSentinel bug: nothing on the GPU needs repair; the cordon is what blocks work.",
             target={"node": bad} if target_node else {"pod": f"{ns}/{name}"}, k8s="v1.31",
             notes="The condition text is the thread's. The snapshot adds a Pending 1-GPU pod and a second H100 node "
                   "whose 8 GPUs are in use, so the cordoned node is the only one with free GPUs; the scheduler "
                   "message is written to match. NVSentinel's cordon is spec.unschedulable (no extra taint).")
    cond = {"type": "GpuMemWatch", "status": "True", "reason": "GpuMemWatchIsNotHealthy", "message": frag,
            "lastHeartbeatTime": "2026-11-20T02:55:00Z", "lastTransitionTime": "2026-11-17T00:22:57Z"}
    c.add(gpu_node(bad, gpus=8, product="NVIDIA-H100-80GB-HBM3", kubelet="v1.31.6", driver="570.148.08",
                   cuda="12.8", cpu="192", memory="2015Gi", unschedulable=True, conditions=[cond],
                   taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]))
    c.add(gpu_node(full, gpus=8, product="NVIDIA-H100-80GB-HBM3", kubelet="v1.31.6", driver="570.148.08",
                   cuda="12.8", cpu="192", memory="2015Gi",
                   conditions=[{"type": "GpuMemWatch", "status": "False", "reason": "GpuMemWatchIsHealthy",
                                "message": "", "lastHeartbeatTime": "2026-11-20T02:55:00Z",
                                "lastTransitionTime": "2026-11-10T00:00:00Z"}]))
    c.add(pod("pretrain-0", "research", phase="Running", node=full, gpus=8))
    for nn in (bad, full):
        c.add(plugin_pod(nn, "gpu-operator", "nvidia-device-plugin-daemonset", "nvidia-device-plugin",
                         "nvcr.io/nvidia/k8s-device-plugin:v0.17.2", {"app": "nvidia-device-plugin-daemonset"},
                         "nvidia-device-plugin-daemonset"))
    c.add(event("Node", bad, None, "NodeNotSchedulable", f"Node {bad} status is now: NodeNotSchedulable",
                type_="Normal", source="kubelet"))
    p = pod(name, ns, gpus=1, phase="Pending", conditions=[unschedulable(sched)], owner=("StatefulSet", "finetune-7b"))
    c.add(p, event("Pod", name, ns, "FailedScheduling", sched, count=31))
    return c


CASES = [
    vllm_backport_62_failing_hbm,
    nvsentinel_155_fell_off_bus_no_xid,
    akash_209_xid79_node,
    akash_249_unhealthy_gpu_reads_insufficient,
    club3090_827_spec_decode_illegal_address,
    mfc_1748_ecc_node_fails_every_job,
    nvsentinel_911_xid31_cordon,
    lambda: nvsentinel_911_xid31_cordon(True),
]

if __name__ == "__main__":
    for make in CASES:
        print(make().write())
