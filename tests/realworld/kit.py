"""Building blocks for real-world cases: Kubernetes objects as `kubectl get -o json`
prints them, and a case writer.

A case is a folder ``tests/realworld/<id>/`` holding ``case.yaml`` (where the message
comes from, the verbatim fragment, what the thread's resolution says the cause is)
and ``snapshot/`` (``cluster.json``, ``snapshot.json``, ``logs/NS/POD/CONTAINER.log``),
which ``gpuctl diagnose … --snapshot`` reads. The snapshot is written by the area's
build script (``tests/realworld/build_<area>.py``) with these functions, so the
cluster agrees with the message: the node counts a scheduler message states, the
plugin and Kubernetes versions of the thread.

    from kit import Case, gpu_node, pod, event, device_plugin_pod
    c = Case("dp-taint-keeps-plugin-off", source="https://github.com/NVIDIA/k8s-device-plugin/issues/NNN", ...)
    c.add(gpu_node("gpu-1", gpus=8), pod("train", "ml", gpus=1, phase="Pending"), event(...))
    c.write()
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zlib
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

HERE = Path(__file__).resolve().parent
NOW = "2026-11-20T03:00:00Z"
_T0 = "2026-11-19T09:00:00Z"


def _meta(name: str, namespace: Optional[str] = None, labels: Optional[dict] = None,
          annotations: Optional[dict] = None, owner: Optional[tuple[str, str]] = None,
          created: str = _T0, uid: Optional[str] = None) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "creationTimestamp": created,
                         "uid": uid or f"uid-{namespace or 'cluster'}-{name}"}
    if namespace is not None:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    if owner:
        kind, oname = owner
        api = {"Job": "batch/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1",
               "Deployment": "apps/v1"}.get(kind, "v1")
        m["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": oname, "uid": f"uid-{namespace}-{oname}",
                                 "controller": True}]
    return m


GFD_PRODUCTS = {   # nvidia.com/gpu.product -> memory MiB (GPU feature discovery labels)
    "NVIDIA-A100-SXM4-80GB": 81920, "NVIDIA-A100-SXM4-40GB": 40960, "NVIDIA-A100-PCIE-40GB": 40960,
    "NVIDIA-H100-80GB-HBM3": 81559, "NVIDIA-L4": 23034, "Tesla-T4": 15360, "NVIDIA-A10G": 23028,
    "Tesla-V100-SXM2-16GB": 16384, "NVIDIA-L40S": 46068, "NVIDIA-H200": 143771,
}


def gpu_node(name: str, gpus: int = 8, product: str = "NVIDIA-A100-SXM4-80GB", resource: str = "nvidia.com/gpu",
             allocatable: Optional[int] = None, labels: Optional[dict] = None, taints: Iterable[dict] = (),
             ready: bool = True, unschedulable: bool = False, cpu: str = "96", memory: str = "1056Gi",
             extra_capacity: Optional[dict] = None, gfd: bool = True, kubelet: str = "v1.29.6",
             conditions: Iterable[dict] = (), driver: str = "550.90.07", cuda: str = "12.4") -> dict[str, Any]:
    """A GPU node as the device plugin and GPU feature discovery leave it. ``gpus=0``
    with ``gfd=True``: GPU labels but nothing advertised (a plugin that is not serving)."""
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    if gfd:
        major, minor = cuda.split(".")[:2]
        lab.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
                    "nvidia.com/gpu.count": str(gpus or 8), "nvidia.com/gpu.memory": str(GFD_PRODUCTS.get(product, 81920)),
                    "nvidia.com/cuda.driver.major": driver.split(".")[0], "nvidia.com/cuda.driver.minor": driver.split(".")[1],
                    "nvidia.com/cuda.driver.rev": driver.split(".")[2] if driver.count(".") > 1 else "",
                    "nvidia.com/cuda.runtime.major": major, "nvidia.com/cuda.runtime.minor": minor})
    lab.update(labels or {})
    cap = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "1Ti"}
    if gpus:
        cap[resource] = str(gpus)
    cap.update(extra_capacity or {})
    alloc = dict(cap)
    if gpus and allocatable is not None:
        alloc[resource] = str(allocatable)
    conds = [{"type": "Ready", "status": "True" if ready else "Unknown",
              "reason": "KubeletReady" if ready else "NodeStatusUnknown",
              "message": "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.",
              "lastHeartbeatTime": NOW, "lastTransitionTime": _T0}]
    conds += list(conditions)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": _meta(name, labels=lab), "spec": spec,
            "status": {"capacity": cap, "allocatable": alloc, "conditions": conds,
                       "nodeInfo": {"kubeletVersion": kubelet, "containerRuntimeVersion": "containerd://1.7.20",
                                    "osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0-113-generic"}}}


def cpu_node(name: str, cpu: str = "16", memory: str = "64Gi", labels: Optional[dict] = None,
             taints: Iterable[dict] = (), kubelet: str = "v1.29.6") -> dict[str, Any]:
    n = gpu_node(name, gpus=0, gfd=False, labels=labels, taints=taints, cpu=cpu, memory=memory, kubelet=kubelet)
    return n


def taint(key: str, value: Optional[str] = None, effect: str = "NoSchedule") -> dict[str, str]:
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


def container(name: str = "main", image: str = "nvcr.io/nvidia/pytorch:24.05-py3", requests: Optional[dict] = None,
              limits: Optional[dict] = None, gpus: int = 0, resource: str = "nvidia.com/gpu",
              env: Optional[dict] = None, command: Optional[list] = None) -> dict[str, Any]:
    res: dict[str, Any] = {}
    lim = dict(limits or {})
    if gpus:
        lim[resource] = str(gpus)
    if lim:
        res["limits"] = lim
    if requests:
        res["requests"] = dict(requests)
    c: dict[str, Any] = {"name": name, "image": image, "resources": res}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if command:
        c["command"] = command
    return c


def pod(name: str, namespace: str = "default", gpus: int = 0, resource: str = "nvidia.com/gpu",
        phase: str = "Pending", node: Optional[str] = None, containers: Optional[list] = None,
        init_containers: Optional[list] = None, labels: Optional[dict] = None, annotations: Optional[dict] = None,
        owner: Optional[tuple[str, str]] = None, tolerations: Optional[list] = None,
        node_selector: Optional[dict] = None, affinity: Optional[dict] = None, conditions: Optional[list] = None,
        statuses: Optional[list] = None, init_statuses: Optional[list] = None, reason: Optional[str] = None,
        message: Optional[str] = None, created: str = _T0, spec: Optional[dict] = None,
        requests: Optional[dict] = None) -> dict[str, Any]:
    """A pod. ``gpus``: a one-container pod with that GPU limit. A Pending unbound pod
    gets ``PodScheduled=False`` only when ``conditions`` says so (give the scheduler's
    message there or as an event)."""
    cs = containers or [container(gpus=gpus, resource=resource, requests=requests)]
    s: dict[str, Any] = {"containers": cs, "restartPolicy": "Always", "schedulerName": "default-scheduler",
                         "tolerations": (tolerations or []) + [
                             {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 300},
                             {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 300}]}
    if init_containers:
        s["initContainers"] = init_containers
    if node:
        s["nodeName"] = node
    if node_selector:
        s["nodeSelector"] = node_selector
    if affinity:
        s["affinity"] = affinity
    s.update(spec or {})
    st: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if statuses is not None:
        st["containerStatuses"] = statuses
    elif phase == "Running":
        st["containerStatuses"] = [{"name": c["name"], "ready": True, "restartCount": 0, "image": c["image"],
                                    "state": {"running": {"startedAt": created}}} for c in cs]
        st["conditions"] = st["conditions"] or [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    if init_statuses is not None:
        st["initContainerStatuses"] = init_statuses
    if reason:
        st["reason"] = reason
    if message:
        st["message"] = message
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": _meta(name, namespace, labels, annotations, owner, created), "spec": s, "status": st}


def unschedulable(message: str, at: str = NOW) -> dict[str, str]:
    """The PodScheduled condition the scheduler writes with its FailedScheduling message."""
    return {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
            "lastTransitionTime": at}


def waiting(name: str, reason: str, message: str = "", restarts: int = 0, last_exit: Optional[dict] = None,
            image: str = "nvcr.io/nvidia/pytorch:24.05-py3") -> dict[str, Any]:
    """A container status: waiting (CrashLoopBackOff, CreateContainerError, ...), with
    the last termination when it restarted."""
    s: dict[str, Any] = {"name": name, "ready": False, "restartCount": restarts, "image": image,
                         "state": {"waiting": {"reason": reason, **({"message": message} if message else {})}}}
    if last_exit:
        s["lastState"] = {"terminated": {"finishedAt": NOW, "startedAt": _T0, **last_exit}}
    return s


def terminated(name: str, reason: str, exit_code: int, message: str = "", restarts: int = 0,
               image: str = "nvcr.io/nvidia/pytorch:24.05-py3") -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts, "image": image,
            "state": {"terminated": {"reason": reason, "exitCode": exit_code, "finishedAt": NOW, "startedAt": _T0,
                                     **({"message": message} if message else {})}}}


def running(name: str, restarts: int = 0, image: str = "nvcr.io/nvidia/pytorch:24.05-py3", ready: bool = True) -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": restarts, "image": image,
            "state": {"running": {"startedAt": _T0}}}


_EVENT_N = [0]


def event(kind: str, name: str, namespace: Optional[str], reason: str, message: str, type_: str = "Warning",
          count: int = 1, source: str = "default-scheduler", at: str = NOW, uid: Optional[str] = None) -> dict[str, Any]:
    """An event on an object (``kind``/``name``), as `kubectl get events -o json` shows it."""
    _EVENT_N[0] += 1
    ns = namespace if namespace is not None else "default"
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": _meta(f"{name}.{_EVENT_N[0]:016x}", ns, created=at),
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace or "",
                               "uid": uid or f"uid-{namespace or 'cluster'}-{name}",
                               "apiVersion": "v1" if kind in ("Pod", "Node") else ""},
            "reason": reason, "message": message, "type": type_, "count": count,
            "firstTimestamp": _T0, "lastTimestamp": at, "source": {"component": source}}


def device_plugin_pod(node: str, namespace: str = "kube-system", name: Optional[str] = None,
                      image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0", phase: str = "Running",
                      statuses: Optional[list] = None, labels: Optional[dict] = None) -> dict[str, Any]:
    """The NVIDIA device plugin's DaemonSet pod on ``node`` (labels of the static
    manifest; pass the GPU Operator's ``app=nvidia-device-plugin-daemonset`` in labels)."""
    lab = labels or {"name": "nvidia-device-plugin-ds"}
    name = name or f"nvidia-device-plugin-daemonset-{zlib.crc32(node.encode()) % 100000:05d}"   # stable across runs
    c = container("nvidia-device-plugin-ctr", image=image)
    p = pod(name, namespace, phase=phase, node=node, containers=[c], labels=lab,
            owner=("DaemonSet", "nvidia-device-plugin-daemonset"), statuses=statuses,
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    return p


def quota(name: str, namespace: str, hard: dict, used: dict) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": _meta(name, namespace),
            "spec": {"hard": hard}, "status": {"hard": hard, "used": used}}


def job(name: str, namespace: str, template: dict, suspend: bool = False, labels: Optional[dict] = None,
        parallelism: int = 1) -> dict[str, Any]:
    tmpl = {"metadata": {"labels": {"job-name": name, **(labels or {})}}, "spec": template}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, namespace, labels),
            "spec": {"parallelism": parallelism, "completions": parallelism, "suspend": suspend, "template": tmpl,
                     "backoffLimit": 6},
            "status": {}}


def obj(api: str, kind: str, name: str, namespace: Optional[str] = None, spec: Optional[dict] = None,
        status: Optional[dict] = None, labels: Optional[dict] = None, annotations: Optional[dict] = None,
        owner: Optional[tuple[str, str, str]] = None, uid: Optional[str] = None) -> dict[str, Any]:
    """Any object as `kubectl get -o json` prints it; ``owner`` is (apiVersion, kind, name)."""
    m = _meta(name, namespace, labels, annotations, uid=uid)
    if owner:
        api_o, kind_o, name_o = owner
        m["ownerReferences"] = [{"apiVersion": api_o, "kind": kind_o, "name": name_o,
                                 "uid": f"uid-{namespace or 'cluster'}-{name_o}", "controller": True}]
    o: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": m}
    if spec is not None:
        o["spec"] = spec
    if status is not None:
        o["status"] = status
    return o


def cond(type_: str, status: str, reason: str, message: str = "", at: str = NOW) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


class Case:
    """One real-world case: its metadata (written to case.yaml) and its objects and
    logs (written to snapshot/)."""

    def __init__(self, id: str, *, source: str, fragment: str, where: str, expect: str, resolution: str,
                 target: dict, trap: bool = False, also_ok: Optional[dict[str, str]] = None,
                 must_not: Iterable[str] = (), k8s: str = "v1.29", notes: str = "", known_miss: str = "",
                 captured_at: str = NOW) -> None:
        self.meta: dict[str, Any] = {
            "id": id, "source": source, "fragment": fragment, "where": where, "trap": trap,
            "resolution": resolution, "expect": expect, "also_ok": dict(also_ok or {}),
            "must_not": list(must_not), "target": target, "k8s": k8s}
        if notes:
            self.meta["notes"] = notes
        if known_miss:
            self.meta["known_miss"] = known_miss
        self.objects: list[dict] = []
        self.logs: dict[tuple[str, str, str], str] = {}
        self.captured_at = captured_at

    def add(self, *objs: dict) -> "Case":
        self.objects.extend(objs)
        return self

    def log(self, namespace: str, pod: str, container: str, text: str, previous: bool = False) -> "Case":
        self.logs[(namespace, pod, container + (".previous" if previous else ""))] = text
        return self

    def write(self, root: Path = HERE) -> Path:
        d = root / self.meta["id"]
        if (d / "snapshot").exists():
            shutil.rmtree(d / "snapshot")
        (d / "snapshot").mkdir(parents=True)
        (d / "case.yaml").write_text(yaml.safe_dump(self.meta, sort_keys=False, allow_unicode=True, width=100))
        (d / "snapshot" / "cluster.json").write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": self.objects}, indent=1))
        (d / "snapshot" / "snapshot.json").write_text(json.dumps(
            {"schema": "gpuctl/snapshot/v1", "capturedAt": self.captured_at, "context": "realworld",
             "gpuctlVersion": "0.1.0"}, indent=1))
        for (ns, p, c), text in self.logs.items():
            f = d / "snapshot" / "logs" / ns / p / f"{c}.log"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
        return d


def write_snapshot(root: Path, *objs: dict, logs: Iterable[tuple] = (), metrics: Optional[dict[str, str]] = None) -> Path:
    """A snapshot folder of these objects (and logs: (ns, pod, container, text[, previous]);
    metrics: node -> DCGM text), for unit tests that need a small cluster, not a case."""
    c = Case("snapshot", source="https://example.invalid/unit-test", fragment="-", where="-", expect="-",
             resolution="-", target={})
    c.add(*objs)
    for args in logs:
        c.log(*args)
    snap = c.write(root) / "snapshot"
    for node, text in (metrics or {}).items():
        (snap / "metrics").mkdir(exist_ok=True)
        (snap / "metrics" / f"{node}.prom").write_text(text)
    return snap


# ------------------------------------------------------------------ shared by several build scripts
def backoff(name: str, namespace: str, ctr: str, count: int = 12) -> dict[str, Any]:
    return kubelet_event("Pod", name, namespace, "BackOff",
                         f"Back-off restarting failed container {ctr} in pod {name}_{namespace}(uid-{namespace}-{name})",
                         count=count)

def backoff_event(pod_name: str, ns: str, cname: str, count: int = 24) -> dict:
    return event("Pod", pod_name, ns, "BackOff", f"Back-off restarting failed container {cname} in pod "
                 f"{pod_name}_{ns}(uid-{ns}-{pod_name})", count=count, source="kubelet")

def crashloop(ctr: str, image: str, restarts: int, exit_code: int = 1, reason: str = "Error") -> dict:
    return waiting(ctr, "CrashLoopBackOff", f"back-off 5m0s restarting failed container={ctr}", restarts=restarts,
                   last_exit={"reason": reason, "exitCode": exit_code}, image=image)

def kernel_event(node: str, reason: str, message: str, count: int = 1) -> dict:
    """A node-problem-detector kernel-monitor event on the Node (custom rule matching NVRM lines)."""
    return event("Node", node, None, reason, message, count=count, source="kernel-monitor")

def kubelet_event(kind: str, name: str, namespace: str, reason: str, message: str, count: int = 1,
                  type_: str = "Warning") -> dict[str, Any]:
    return event(kind, name, namespace, reason, message, type_=type_, count=count, source="kubelet")


# ------------------------------------------------------------------ helpers the build scripts share


def bound(name: str, namespace: str, node: str, gpus: int = 0, requests: Optional[dict] = None,
          owner: Optional[tuple[str, str]] = None, labels: Optional[dict] = None,
          image: str = "nvcr.io/nvidia/pytorch:24.05-py3", created: str = _T0,
          containers: Optional[list] = None, affinity: Optional[dict] = None,
          tolerations: Optional[list] = None, resource: str = "nvidia.com/gpu",
          statuses: Optional[list] = None, phase: str = "Running") -> dict:
    """A pod bound to ``node`` that holds what it requests (GPUs and CPU/memory); Running
    and Ready unless ``phase`` or ``statuses`` say otherwise."""
    cs = containers or [container(image=image, gpus=gpus, resource=resource, requests=requests,
                                  limits=dict(requests) if requests else None)]
    p = pod(name, namespace, phase=phase, node=node, containers=cs, owner=owner, labels=labels,
            created=created, affinity=affinity, tolerations=tolerations, statuses=statuses)
    if phase == "Running" and statuses is None:
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]
    return p


def scheduler_said(c: Case, p: dict, message: str, count: int = 1, source: str = "default-scheduler") -> None:
    """The FailedScheduling event and the PodScheduled=False condition with the same message."""
    md = p["metadata"]
    c.add(event("Pod", md["name"], md["namespace"], "FailedScheduling", message, count=count, source=source))
    p["status"]["conditions"] = [unschedulable(message)]


def runtime_class(name: str, handler: Optional[str] = None) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": _meta(name),
            "handler": handler or name}


def node_info(n: dict, kubelet: str, runtime: str, os_image: str, kernel: str) -> dict:
    """Set what ``kubectl get node -o wide`` shows of the node's software."""
    n["status"]["nodeInfo"].update({"kubeletVersion": kubelet, "containerRuntimeVersion": runtime,
                                    "osImage": os_image, "kernelVersion": kernel})
    return n


def gpu_uuid(node: str, i: int) -> str:
    """A stable GPU UUID for GPU ``i`` of ``node`` (the same on every rebuild)."""
    h = hashlib.sha1(f"{node}/{i}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def suffix(*parts: str) -> str:
    """A stable 5-character name suffix (as a ReplicaSet or DaemonSet gives its pods)."""
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:5]


def plugin_log(stamp: str, version: str, tail: Iterable[str], ignored: str = "map[13:true 31:true 43:true 45:true 68:true 109:true]") -> str:
    """A klog-style device-plugin log (v0.14+): start-up, registration, then ``tail``."""
    head = [
        f'{stamp}.204084       1 main.go:235] "Starting NVIDIA Device Plugin" version=<',
        f"\t{version}",
        " >",
        f"{stamp}.204521       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins",
        f"{stamp}.205305       1 main.go:245] Starting OS watcher.",
        f"{stamp}.205867       1 main.go:260] Starting Plugins.",
        f"{stamp}.207708       1 main.go:356] Retrieving plugins.",
        f"{stamp}.207851       1 factory.go:112] Detected NVML platform: found NVML library",
        f"{stamp}.207900       1 server.go:176] Starting GRPC server for 'nvidia.com/gpu'",
        f"{stamp}.208588       1 server.go:117] Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock",
        f"{stamp}.209109       1 server.go:125] Registered device plugin for 'nvidia.com/gpu' with Kubelet",
        f"{stamp}.209404       1 health.go:118] Ignoring the following XIDs for health checks: {ignored}",
    ]
    return "\n".join(head + list(tail)) + "\n"


def plain_node(name: str, kubelet: str, labels: Optional[dict] = None, taints: Iterable[dict] = (),
               capacity: Optional[dict] = None, cpu: str = "16", memory: str = "64Gi",
               os_image: str = "Ubuntu 22.04.4 LTS", kernel: str = "5.15.0-113-generic",
               runtime: str = "containerd://1.7.20") -> dict:
    """A node without GPU feature-discovery labels (cloud GPU nodes before GFD runs):
    the cloud's own labels say what it is."""
    n = gpu_node(name, gpus=0, gfd=False, labels=labels, taints=taints, cpu=cpu, memory=memory, kubelet=kubelet,
                 extra_capacity=capacity)
    n["status"]["nodeInfo"].update({"osImage": os_image, "kernelVersion": kernel, "containerRuntimeVersion": runtime})
    return n


def pending(case: Case, p: dict, message: str, count: int = 1, source: str = "default-scheduler") -> dict:
    """``p`` added to ``case``, Pending with the scheduler's message (``scheduler_said``)."""
    case.add(p)
    scheduler_said(case, p, message, count, source)
    return p
