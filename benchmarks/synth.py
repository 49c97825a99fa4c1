"""A deterministic, realistic synthetic GPU cluster for gpuctl's benchmarks.

``generate(nodes=5000, pods=150000, seed=...)`` builds, from a seeded RNG (same
arguments -> byte-identical output):

* ``nodes`` GPU nodes (~8 KB of JSON each): EKS-style names, ~45 labels (GPU
  Feature Discovery, node-feature-discovery, instance type, topology), taint
  ``nvidia.com/gpu=present:NoSchedule`` on most, capacity/allocatable with
  ``nvidia.com/gpu`` 8 or 4 (p4d/p4de/p5/p5e/g6/g6e/g5 instance types), a few
  nodes with one unhealthy GPU (allocatable = capacity - 1), 20 nodes in MIG
  ``mixed`` mode that also advertise ``nvidia.com/mig-1g.10gb``, conditions,
  addresses, images, nodeInfo.
* ``pods`` pods in all (~5.6 KB each), including the DaemonSet pods on every node
  (GPU Operator device plugin ``app=nvidia-device-plugin-daemonset``, GPU feature
  discovery, DCGM exporter, kube-proxy, aws-node); GPU training pods (Jobs,
  torchrun) requesting 1/2/4/8 GPUs, GPU inference pods, CPU pods (Deployments),
  MIG pods on the MIG nodes. ~90% are bound and Running, ~6% Succeeded/Failed
  (bound), ~4% Pending (unbound). Every 8-GPU node has at least one GPU in use, so
  no node can take an 8-GPU pod.
* The targets: ``ml/bench-target`` (Pending, 8 ``nvidia.com/gpu``) and
  ``ml/bench-target-mig`` (Pending, 1 ``nvidia.com/mig-1g.10gb``, which only the 20
  MIG nodes advertise, all fully used), each with a ``FailedScheduling`` event;
  a ResourceQuota in ``ml``; Namespaces; device-plugin logs of the unhealthy nodes.

Pods are rendered from JSON templates (one per archetype and phase) with
``str.format``: building 150,000 pod dicts would take minutes and gigabytes.

Use it as a library (``generate(...)`` -> :class:`Cluster`: ``.objects()`` gives
dicts, ``.iter_json()`` gives each object's JSON bytes, ``.write_snapshot(dir)``
writes ``cluster.json`` (a ``v1 List``) + ``snapshot.json`` + ``logs/``), or from
the command line::

    python -m benchmarks.synth --nodes 5000 --pods 150000 --out /tmp/bench-snap
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

DEFAULT_NODES = 5_000
DEFAULT_PODS = 150_000
DEFAULT_SEED = 20261120
MIG_NODES = 20
UNHEALTHY_NODES = 3
NOW = "2026-11-20T03:12:00Z"
TARGET_NS = "ml"
TARGET = "bench-target"
TARGET_MIG = "bench-target-mig"
MIG_RESOURCE = "nvidia.com/mig-1g.10gb"
DS_PER_NODE = 5  # device plugin, GFD, DCGM exporter, kube-proxy, aws-node

# ---------------------------------------------------------------------------------- SKUs


@dataclass(frozen=True)
class Sku:
    instance: str
    weight: int
    gpus: int
    product: str
    memory_mib: int  # per GPU
    family: str
    compute: tuple[int, int]
    cpus: int
    mem_gib: int
    efa: int
    mig_capable: bool


SKUS: tuple[Sku, ...] = (
    Sku("p4d.24xlarge", 18, 8, "NVIDIA-A100-SXM4-40GB", 40960, "ampere", (8, 0), 96, 1152, 4, True),
    Sku("p4de.24xlarge", 10, 8, "NVIDIA-A100-SXM4-80GB", 81920, "ampere", (8, 0), 96, 1152, 4, True),
    Sku("p5.48xlarge", 25, 8, "NVIDIA-H100-80GB-HBM3", 81559, "hopper", (9, 0), 192, 2048, 32, True),
    Sku("p5e.48xlarge", 5, 8, "NVIDIA-H200", 143771, "hopper", (9, 0), 192, 2048, 32, True),
    Sku("g6.12xlarge", 14, 4, "NVIDIA-L4", 23034, "ada-lovelace", (8, 9), 48, 192, 0, False),
    Sku("g6.48xlarge", 5, 8, "NVIDIA-L4", 23034, "ada-lovelace", (8, 9), 192, 768, 0, False),
    Sku("g6e.12xlarge", 8, 4, "NVIDIA-L40S", 46068, "ada-lovelace", (8, 9), 48, 384, 0, False),
    Sku("g5.12xlarge", 15, 4, "NVIDIA-A10G", 23028, "ampere", (8, 6), 48, 192, 0, False),
)
MIG_SKU = SKUS[1]  # MIG nodes are p4de (A100 80GB): 6 whole GPUs + 2 GPUs as 7x 1g.10gb each
MIG_WHOLE, MIG_SLICES = 6, 14
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d")

TEAMS = ("ml", "ml-research", "llm-pretrain", "vision", "speech", "recsys", "inference", "data-eng",
         "notebooks", "rl", "safety", "eval")
MODELS = ("llama3-8b", "llama3-70b", "mixtral-8x7b", "bert-large", "vit-h14", "whisper-large", "sdxl",
          "t5-xxl", "resnet152", "gpt-neox-20b", "qwen2-72b", "clip-vit-l")

# ---------------------------------------------------------------------------------- helpers


class _Rand:
    """The generator's randomness: one seeded ``random.Random``."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def uid(self) -> str:
        h = "%032x" % self.r.getrandbits(128)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"

    def hexid(self, n: int) -> str:
        return "%0*x" % (n, self.r.getrandbits(4 * n))

    def sfx(self, n: int = 5) -> str:
        return "".join(self.r.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def ip(self) -> str:
        return f"10.{self.r.randint(32, 63)}.{self.r.randint(0, 255)}.{self.r.randint(1, 254)}"


def _ts(day: int, sec: int) -> str:
    """A timestamp ``day`` days (0..40) after 2026-10-10 plus ``sec`` seconds."""
    import datetime as dt

    t = dt.datetime(2026, 10, 10, tzinfo=dt.timezone.utc) + dt.timedelta(days=day, seconds=sec)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


_TS_CACHE: dict[tuple[int, int], str] = {}


def ts(day: int, sec: int) -> str:
    key = (day, sec)
    v = _TS_CACHE.get(key)
    if v is None:
        if len(_TS_CACHE) > 200_000:
            _TS_CACHE.clear()
        v = _TS_CACHE[key] = _ts(day, sec)
    return v


def _enc(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


class _Template:
    """A JSON document with holes, rendered with ``str.format``.

    In the source dict, ``"@@name@@"`` anywhere inside a string is a hole for
    string content (inserted as is: callers pass JSON-safe text), and a whole
    string ``"@@#name@@"`` is a hole for a raw JSON fragment (number, object...).
    """

    def __init__(self, doc: Any) -> None:
        text = _enc(doc).replace("{", "{{").replace("}", "}}")
        out, i = [], 0
        while True:
            j = text.find("@@", i)
            if j < 0:
                out.append(text[i:])
                break
            k = text.find("@@", j + 2)
            name = text[j + 2 : k]
            if name.startswith("#"):
                # drop the surrounding quotes of a raw hole
                out.append(text[i : j - 1])
                out.append("{" + name[1:] + "}")
                i = k + 3
            else:
                out.append(text[i:j])
                out.append("{" + name + "}")
                i = k + 2
        self.fmt = "".join(out)

    def render(self, **values: Any) -> str:
        return self.fmt.format_map(values)


# ---------------------------------------------------------------------------------- nodes


@dataclass
class NodeInfo:
    name: str
    sku: Sku
    ip: str
    zone: str
    gpus: int  # whole GPUs advertised (capacity)
    gpu_alloc: int
    mig: int  # 1g.10gb slices advertised (0 unless a MIG node)
    cpu_m: int  # allocatable
    mem_mi: int
    free_cpu_m: int = 0
    free_mem_mi: int = 0
    free_gpu: int = 0
    free_mig: int = 0
    pods: int = 0


_IMAGES = (
    (["nvcr.io/nvidia/pytorch@sha256:b97c6e882ed254731ac334f88d0ebbddf61441016c9b360e59787960ae400128",
      "nvcr.io/nvidia/pytorch:24.10-py3"], 9875123456),
    (["nvcr.io/nvidia/k8s/dcgm-exporter@sha256:0bc8fe2c8ee2d6d2d9a6e9e5f4d1f6a17c1b6f0f1e0a7c0f6a0b1e7c2d3f4a5b",
      "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8-3.6.0-ubuntu22.04"], 402716349),
    (["nvcr.io/nvidia/k8s-device-plugin@sha256:420bb471acb0bafae102515d6f9008b377fef34b5bd6b3d4422b9171c996311a",
      "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"], 153123337),
    (["nvcr.io/nvidia/cloud-native/gpu-operator-validator@sha256:28ee2c79737ad178589fd1ed1c211f75eabb31ae1c7a8ae8d4d7a827eb2dd2be",
      "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.0"], 132617530),
    (["602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni@sha256:5b7e7435f88a86bbbdb2a5ecd61e893dc14dd13c9511dc8ace362d299259700a",
      "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.5-eksbuild.1"], 65215416),
    (["602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy@sha256:2b3d1e3a7a4b50b5f8b6e8a0a3c0c1e0e3b9d2c1a0f9e8d7c6b5a4f3e2d1c0b9",
      "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.31.2-minimal-eksbuild.3"], 35871256),
    (["vllm/vllm-openai@sha256:9f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e",
      "vllm/vllm-openai:v0.6.3"], 8123456789),
    (["nvcr.io/nvidia/tritonserver@sha256:3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b",
      "nvcr.io/nvidia/tritonserver:24.10-py3"], 7912345678),
    (["docker.io/library/python@sha256:6f1b9c2d8e7a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4",
      "docker.io/library/python:3.11-slim"], 48123456),
    (["docker.io/fluent/fluent-bit@sha256:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809",
      "docker.io/fluent/fluent-bit:3.1.9"], 31234567),
    (["602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-ebs-csi-driver@sha256:8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f",
      "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-ebs-csi-driver:v1.35.0"], 31876543),
    (["602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/csi-node-driver-registrar@sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
      "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/csi-node-driver-registrar:v2.12.0-eks-1-31-5"], 9234567),
    (["602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/pause@sha256:529cf6b1b6e5b76e901abc43aee825badbd93f9c5ee5f1e316d46a83abbce5a2",
      "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/pause:3.10"], 299406),
    (["nvcr.io/nvidia/k8s/container-toolkit@sha256:5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c",
      "nvcr.io/nvidia/k8s/container-toolkit:v1.17.0-ubuntu20.04"], 141234567),
)


def _node_doc(rnd: _Rand, n: NodeInfo, idx: int, rv: int, tainted: bool) -> dict:
    s = n.sku
    instance_id = "i-0" + rnd.hexid(16)
    created = ts(rnd.r.randint(0, 30), rnd.r.randint(0, 86399))
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": s.instance,
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "eks.amazonaws.com/nodegroup": f"gpu-{s.instance.split('.')[0]}-{n.zone[-1]}",
        "eks.amazonaws.com/nodegroup-image": "ami-0c1e5b0f4d0a1c2e3",
        "failure-domain.beta.kubernetes.io/region": "us-west-2",
        "failure-domain.beta.kubernetes.io/zone": n.zone,
        "feature.node.kubernetes.io/kernel-version.full": "6.8.0-1021-aws",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "k8s.io/cloud-provider-aws": "a8c1f3e2b7d94e0c9f5a6b1d2e3f4a5b",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux",
        "node-pool": "gpu",
        "node.kubernetes.io/instance-type": s.instance,
        "nvidia.com/cuda.driver-version.full": "550.127.05",
        "nvidia.com/cuda.driver-version.major": "550",
        "nvidia.com/cuda.driver-version.minor": "127",
        "nvidia.com/cuda.driver-version.revision": "05",
        "nvidia.com/cuda.driver.major": "550",
        "nvidia.com/cuda.driver.minor": "127",
        "nvidia.com/cuda.driver.rev": "05",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        "nvidia.com/cuda.runtime-version.major": "12",
        "nvidia.com/cuda.runtime-version.minor": "4",
        "nvidia.com/cuda.runtime.major": "12",
        "nvidia.com/cuda.runtime.minor": "4",
        "nvidia.com/gfd.timestamp": str(1795144140 + idx),
        "nvidia.com/gpu.compute.major": str(s.compute[0]),
        "nvidia.com/gpu.compute.minor": str(s.compute[1]),
        "nvidia.com/gpu.count": str(s.gpus),
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.driver": "pre-installed",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.mig-manager": "true" if s.mig_capable else "false",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
        "nvidia.com/gpu.family": s.family,
        "nvidia.com/gpu.machine": s.instance,
        "nvidia.com/gpu.memory": str(s.memory_mib),
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": s.product,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true" if s.mig_capable else "false",
        "nvidia.com/mps.capable": "false",
        "topology.kubernetes.io/region": "us-west-2",
        "topology.kubernetes.io/zone": n.zone,
    }
    if s.mig_capable:
        labels["nvidia.com/mig.config"] = "custom-2x-1g.10gb" if n.mig else "all-disabled"
        labels["nvidia.com/mig.config.state"] = "success"
        labels["nvidia.com/mig.strategy"] = "mixed" if n.mig else "single"
    if n.mig:
        labels.update({
            "nvidia.com/mig-1g.10gb.count": str(MIG_SLICES),
            "nvidia.com/mig-1g.10gb.engines.copy": "1",
            "nvidia.com/mig-1g.10gb.memory": "9728",
            "nvidia.com/mig-1g.10gb.multiprocessors": "14",
            "nvidia.com/mig-1g.10gb.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
            "nvidia.com/mig-1g.10gb.replicas": "1",
        })
    labels = dict(sorted(labels.items()))
    mem_ki = s.mem_gib * 1024 * 1024
    capacity = {
        "cpu": str(s.cpus),
        "ephemeral-storage": "524275692Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki + 2_000_000}Ki",
        "nvidia.com/gpu": str(n.gpus),
        "pods": "250" if s.cpus > 48 else "110",
    }
    allocatable = dict(capacity, cpu=f"{n.cpu_m}m", memory=f"{n.mem_mi * 1024}Ki",
                       **{"ephemeral-storage": "483172477746", "nvidia.com/gpu": str(n.gpu_alloc)})
    if n.mig:
        capacity[MIG_RESOURCE] = allocatable[MIG_RESOURCE] = str(n.mig)
    if s.efa:
        capacity["vpc.amazonaws.com/efa"] = allocatable["vpc.amazonaws.com/efa"] = str(s.efa)
    capacity, allocatable = dict(sorted(capacity.items())), dict(sorted(allocatable.items()))
    hb = ts(40, 43_900 + rnd.r.randint(0, 40))
    since = created
    conditions = [
        {"lastHeartbeatTime": hb, "lastTransitionTime": since, "message": msg, "reason": reason,
         "status": status, "type": ctype}
        for ctype, status, reason, msg in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        )
    ]
    spec: dict[str, Any] = {
        "podCIDR": f"10.{100 + idx // 250}.{idx % 250}.0/24",
        "podCIDRs": [f"10.{100 + idx // 250}.{idx % 250}.0/24"],
        "providerID": f"aws:///{n.zone}/{instance_id}",
    }
    if tainted:
        spec["taints"] = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": n.ip,
                "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": instance_id,
                                                               "efs.csi.aws.com": instance_id}),
                "nfd.node.kubernetes.io/feature-labels": "pci-10de.present,kernel-version.full",
                "node.alpha.kubernetes.io/ttl": "0",
                "nvidia.com/gpu-driver-upgrade-enabled": "true",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": created,
            "labels": labels,
            "name": n.name,
            "resourceVersion": str(rv),
            "uid": rnd.uid(),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": n.ip, "type": "InternalIP"},
                {"address": n.name, "type": "Hostname"},
                {"address": n.name, "type": "InternalDNS"},
            ],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": names, "sizeBytes": size} for names, size in _IMAGES],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": rnd.uid(),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.8.0-1021-aws",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.31.2-eks-7f9249a",
                "machineID": rnd.hexid(32),
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": rnd.uid(),
            },
        },
    }


# ---------------------------------------------------------------------------------- pods

_SA_TOKEN_VOLUME = {
    "name": "kube-api-access-@@sfx@@",
    "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}},
    ]},
}
_SA_MOUNT = {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-@@sfx@@",
             "readOnly": True}
_SYSTEM_TOLERATIONS = [
    {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
]
_WORKLOAD_TOLERATIONS = [
    {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
]


@dataclass(frozen=True)
class _Container:
    name: str
    image: str
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[dict] = field(default_factory=list)
    mounts: list[dict] = field(default_factory=list)
    ports: list[dict] | None = None
    probes: bool = False
    privileged: bool = False
    resources: bool = True  # a "@@#res@@" hole (else {})


def _container(c: _Container) -> dict:
    d: dict[str, Any] = {}
    if c.args:
        d["args"] = c.args
    if c.command:
        d["command"] = c.command
    if c.env:
        d["env"] = c.env
    d["image"] = c.image
    d["imagePullPolicy"] = "IfNotPresent"
    if c.probes:
        d["livenessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/health", "port": 8000, "scheme": "HTTP"},
                              "initialDelaySeconds": 60, "periodSeconds": 10, "successThreshold": 1,
                              "timeoutSeconds": 5}
        d["readinessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/ready", "port": 8000, "scheme": "HTTP"},
                               "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 2}
    d["name"] = c.name
    if c.ports:
        d["ports"] = c.ports
    d["resources"] = "@@#res@@" if c.resources else {}
    if c.privileged:
        d["securityContext"] = {"privileged": True}
    d["terminationMessagePath"] = "/dev/termination-log"
    d["terminationMessagePolicy"] = "File"
    d["volumeMounts"] = c.mounts + [_SA_MOUNT]
    return d


@dataclass(frozen=True)
class _Arch:
    """A pod archetype: everything but the per-pod values."""

    key: str
    namespace: str | None  # None: the workload namespace hole
    labels: dict
    owner_kind: str
    owner_api: str
    containers: tuple[_Container, ...]
    init: tuple[_Container, ...] = ()
    volumes: tuple[dict, ...] = ()
    tolerations: tuple[dict, ...] = tuple(_WORKLOAD_TOLERATIONS)
    node_selector: dict | None = None
    sa: str = "default"
    priority_class: str | None = None
    priority: int = 0
    restart: str = "Always"
    host_network: bool = False
    runtime_class: str | None = None
    daemonset: bool = False
    annotations: dict | None = None


def _ds_arch(key: str, ns: str, app: str, container: _Container, init: tuple[_Container, ...] = (),
             volumes: tuple[dict, ...] = (), node_selector: dict | None = None, sa: str = "", labels: dict | None = None,
             host_network: bool = False, runtime_class: str | None = None) -> _Arch:
    lab = labels or {"app": app, "app.kubernetes.io/managed-by": "gpu-operator",
                     "app.kubernetes.io/part-of": "nvidia-gpu", "helm.sh/chart": "gpu-operator-v25.10.0"}
    lab = dict(lab, **{"controller-revision-hash": "@@crh@@", "pod-template-generation": "1"})
    return _Arch(key, ns, dict(sorted(lab.items())), "DaemonSet", "apps/v1", (container,), init, volumes,
                 tuple(_SYSTEM_TOLERATIONS), node_selector, sa or app, "system-node-critical", 2000001000,
                 host_network=host_network, runtime_class=runtime_class, daemonset=True)


_VALIDATOR_INIT = _Container(
    "toolkit-validation", "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.0", ["sh", "-c"],
    ["until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for nvidia container stack to be "
     "setup; sleep 5; done"],
    mounts=[{"mountPath": "/run/nvidia", "mountPropagation": "HostToContainer", "name": "run-nvidia"}],
    privileged=True, resources=False)

_NCCL_ENV = [
    {"name": "NCCL_DEBUG", "value": "WARN"},
    {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
    {"name": "FI_PROVIDER", "value": "efa"},
    {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"},
    {"name": "OMP_NUM_THREADS", "value": "8"},
    {"name": "PYTORCH_CUDA_ALLOC_CONF", "value": "expandable_segments:True"},
    {"name": "HF_HOME", "value": "/cache/huggingface"},
    {"name": "WANDB_PROJECT", "value": "@@model@@"},
    {"name": "MASTER_PORT", "value": "29500"},
    {"name": "S3_BUCKET", "value": "s3://@@team@@-datasets-us-west-2/shards"},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
]

ARCHES: dict[str, _Arch] = {
    "device-plugin": _ds_arch(
        "device-plugin", "gpu-operator", "nvidia-device-plugin-daemonset",
        _Container("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", ["/bin/bash", "-c"],
                   ["/bin/entrypoint.sh"],
                   env=[{"name": k, "value": v} for k, v in (
                       ("PASS_DEVICE_SPECS", "true"), ("FAIL_ON_INIT_ERROR", "true"),
                       ("DEVICE_LIST_STRATEGY", "envvar"), ("DEVICE_ID_STRATEGY", "uuid"),
                       ("NVIDIA_VISIBLE_DEVICES", "all"), ("NVIDIA_DRIVER_CAPABILITIES", "all"),
                       ("MIG_STRATEGY", "@@migstrategy@@"), ("NVIDIA_MIG_MONITOR_DEVICES", "all"))],
                   mounts=[{"mountPath": "/var/lib/kubelet/device-plugins", "name": "device-plugin"},
                           {"mountPath": "/run/nvidia", "mountPropagation": "HostToContainer", "name": "run-nvidia"}],
                   privileged=True, resources=False),
        init=(_VALIDATOR_INIT,),
        volumes=({"hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": ""}, "name": "device-plugin"},
                 {"hostPath": {"path": "/run/nvidia", "type": "Directory"}, "name": "run-nvidia"}),
        node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"}, sa="nvidia-device-plugin",
        runtime_class="nvidia"),
    "gfd": _ds_arch(
        "gfd", "gpu-operator", "gpu-feature-discovery",
        _Container("gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", ["gpu-feature-discovery"],
                   env=[{"name": "GFD_SLEEP_INTERVAL", "value": "60s"}, {"name": "GFD_FAIL_ON_INIT_ERROR", "value": "true"},
                        {"name": "MIG_STRATEGY", "value": "@@migstrategy@@"},
                        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                         "fieldPath": "spec.nodeName"}}}],
                   mounts=[{"mountPath": "/etc/kubernetes/node-feature-discovery/features.d", "name": "output-dir"},
                           {"mountPath": "/sys", "name": "host-sys"}],
                   privileged=True, resources=False),
        init=(_VALIDATOR_INIT,),
        volumes=({"hostPath": {"path": "/etc/kubernetes/node-feature-discovery/features.d", "type": ""},
                  "name": "output-dir"}, {"hostPath": {"path": "/sys", "type": ""}, "name": "host-sys"}),
        node_selector={"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}, sa="nvidia-gpu-feature-discovery",
        runtime_class="nvidia"),
    "dcgm-exporter": _ds_arch(
        "dcgm-exporter", "gpu-operator", "nvidia-dcgm-exporter",
        _Container("nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8-3.6.0-ubuntu22.04",
                   env=[{"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
                        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                        {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"}],
                   mounts=[{"mountPath": "/var/lib/kubelet/pod-resources", "name": "pod-gpu-resources",
                            "readOnly": True}],
                   ports=[{"containerPort": 9400, "name": "metrics", "protocol": "TCP"}], privileged=True,
                   resources=False),
        init=(_VALIDATOR_INIT,),
        volumes=({"hostPath": {"path": "/var/lib/kubelet/pod-resources", "type": ""}, "name": "pod-gpu-resources"},
                 {"hostPath": {"path": "/run/nvidia", "type": "Directory"}, "name": "run-nvidia"}),
        node_selector={"nvidia.com/gpu.deploy.dcgm-exporter": "true"}, sa="nvidia-dcgm-exporter",
        runtime_class="nvidia"),
    "kube-proxy": _ds_arch(
        "kube-proxy", "kube-system", "kube-proxy",
        _Container("kube-proxy", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.31.2-minimal-eksbuild.3",
                   ["kube-proxy", "--v=2", "--config=/var/lib/kube-proxy-config/config",
                    "--hostname-override=$(NODE_NAME)"],
                   env=[{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                         "fieldPath": "spec.nodeName"}}}],
                   mounts=[{"mountPath": "/var/log", "name": "varlog"},
                           {"mountPath": "/run/xtables.lock", "name": "xtables-lock"},
                           {"mountPath": "/lib/modules", "name": "lib-modules", "readOnly": True},
                           {"mountPath": "/var/lib/kube-proxy/", "name": "kubeconfig"},
                           {"mountPath": "/var/lib/kube-proxy-config/", "name": "config"}],
                   privileged=True),
        volumes=({"hostPath": {"path": "/var/log", "type": ""}, "name": "varlog"},
                 {"hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}, "name": "xtables-lock"},
                 {"hostPath": {"path": "/lib/modules", "type": ""}, "name": "lib-modules"},
                 {"configMap": {"defaultMode": 420, "name": "kube-proxy"}, "name": "kubeconfig"},
                 {"configMap": {"defaultMode": 420, "name": "kube-proxy-config"}, "name": "config"}),
        sa="kube-proxy", labels={"k8s-app": "kube-proxy"}, host_network=True),
    "aws-node": _ds_arch(
        "aws-node", "kube-system", "aws-node",
        _Container("aws-node", "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.5-eksbuild.1",
                   env=[{"name": k, "value": v} for k, v in (
                       ("ADDITIONAL_ENI_TAGS", "{}"), ("AWS_VPC_CNI_NODE_PORT_SUPPORT", "true"),
                       ("AWS_VPC_ENI_MTU", "9001"), ("AWS_VPC_K8S_CNI_LOGLEVEL", "DEBUG"),
                       ("AWS_VPC_K8S_PLUGIN_LOG_FILE", "/var/log/aws-routed-eni/plugin.log"),
                       ("DISABLE_INTROSPECTION", "false"), ("DISABLE_METRICS", "false"),
                       ("ENABLE_IPv4", "true"), ("ENABLE_PREFIX_DELEGATION", "true"),
                       ("WARM_PREFIX_TARGET", "1"), ("VPC_ID", "vpc-0a1b2c3d4e5f60718"))]
                   + [{"name": "MY_NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                          "fieldPath": "spec.nodeName"}}}],
                   mounts=[{"mountPath": "/host/opt/cni/bin", "name": "cni-bin-dir"},
                           {"mountPath": "/host/etc/cni/net.d", "name": "cni-net-dir"},
                           {"mountPath": "/host/var/log/aws-routed-eni", "name": "log-dir"},
                           {"mountPath": "/var/run/aws-node", "name": "run-dir"}],
                   ports=[{"containerPort": 61678, "hostPort": 61678, "name": "metrics", "protocol": "TCP"}],
                   probes=True),
        volumes=({"hostPath": {"path": "/opt/cni/bin", "type": ""}, "name": "cni-bin-dir"},
                 {"hostPath": {"path": "/etc/cni/net.d", "type": ""}, "name": "cni-net-dir"},
                 {"hostPath": {"path": "/var/log/aws-routed-eni", "type": "DirectoryOrCreate"}, "name": "log-dir"},
                 {"hostPath": {"path": "/var/run/aws-node", "type": "DirectoryOrCreate"}, "name": "run-dir"}),
        sa="aws-node", labels={"app.kubernetes.io/instance": "aws-vpc-cni", "app.kubernetes.io/name": "aws-node",
                               "k8s-app": "aws-node"}, host_network=True),
    "train": _Arch(
        "train", None,
        {"batch.kubernetes.io/controller-uid": "@@ouid@@", "batch.kubernetes.io/job-completion-index": "0",
         "batch.kubernetes.io/job-name": "@@owner@@", "controller-uid": "@@ouid@@", "job-name": "@@owner@@",
         "team": "@@team@@", "model": "@@model@@"},
        "Job", "batch/v1",
        (_Container("trainer", "nvcr.io/nvidia/pytorch:24.10-py3", ["torchrun"],
                    ["--nproc_per_node=@@gpus@@", "/workspace/train.py", "--config", "/configs/@@owner@@.yaml"],
                    env=_NCCL_ENV,
                    mounts=[{"mountPath": "/dev/shm", "name": "dshm"}, {"mountPath": "/configs", "name": "config"},
                            {"mountPath": "/cache", "name": "cache"}]),),
        volumes=({"emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}, "name": "dshm"},
                 {"configMap": {"defaultMode": 420, "name": "@@owner@@-config"}, "name": "config"},
                 {"hostPath": {"path": "/mnt/nvme/cache", "type": "DirectoryOrCreate"}, "name": "cache"}),
        sa="trainer", restart="Never", annotations={"kubectl.kubernetes.io/default-container": "trainer"}),
    "infer": _Arch(
        "infer", None,
        {"app": "@@owner@@", "app.kubernetes.io/name": "@@owner@@", "app.kubernetes.io/component": "inference",
         "pod-template-hash": "@@crh@@", "team": "@@team@@", "model": "@@model@@"},
        "ReplicaSet", "apps/v1",
        (_Container("vllm", "vllm/vllm-openai:v0.6.3", ["python3", "-m", "vllm.entrypoints.openai.api_server"],
                    ["--model", "/models/@@model@@", "--tensor-parallel-size", "@@gpus@@", "--port", "8000"],
                    env=[{"name": "HF_HOME", "value": "/cache/huggingface"},
                         {"name": "VLLM_WORKER_MULTIPROC_METHOD", "value": "spawn"}],
                    mounts=[{"mountPath": "/dev/shm", "name": "dshm"}, {"mountPath": "/models", "name": "models",
                                                                          "readOnly": True}],
                    ports=[{"containerPort": 8000, "name": "http", "protocol": "TCP"}], probes=True),),
        volumes=({"emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}, "name": "dshm"},
                 {"hostPath": {"path": "/mnt/nvme/models", "type": "Directory"}, "name": "models"}),
        sa="inference"),
    "cpu": _Arch(
        "cpu", None,
        {"app": "@@owner@@", "app.kubernetes.io/name": "@@owner@@", "app.kubernetes.io/component": "worker",
         "pod-template-hash": "@@crh@@", "team": "@@team@@"},
        "ReplicaSet", "apps/v1",
        (_Container("worker", "python:3.11-slim", ["python", "-m", "worker"], ["--queue", "@@owner@@"],
                    env=[{"name": "QUEUE_URL", "value": "redis://redis.@@ns@@.svc:6379/0"},
                         {"name": "LOG_LEVEL", "value": "info"},
                         {"name": "WORKER_CONCURRENCY", "value": "4"},
                         {"name": "S3_BUCKET", "value": "s3://@@team@@-datasets-us-west-2/shards"},
                         {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.monitoring.svc:4317"},
                         {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                       "fieldPath": "status.podIP"}}}],
                    mounts=[{"mountPath": "/data", "name": "scratch"}]),
         _Container("log-shipper", "fluent/fluent-bit:3.1.9", env=[{"name": "FLUENT_ES_HOST",
                                                                    "value": "es.logging.svc"}],
                    mounts=[{"mountPath": "/data", "name": "scratch", "readOnly": True}], resources=False)),
        volumes=({"emptyDir": {}, "name": "scratch"},),
        sa="default"),
    "mig": _Arch(
        "mig", None,
        {"app": "@@owner@@", "app.kubernetes.io/name": "@@owner@@", "pod-template-hash": "@@crh@@",
         "team": "@@team@@", "model": "@@model@@"},
        "ReplicaSet", "apps/v1",
        (_Container("triton", "nvcr.io/nvidia/tritonserver:24.10-py3", ["tritonserver"],
                    ["--model-repository=/models/@@model@@", "--http-port=8000"],
                    mounts=[{"mountPath": "/models", "name": "models", "readOnly": True}],
                    ports=[{"containerPort": 8000, "name": "http", "protocol": "TCP"}], probes=True),),
        volumes=({"hostPath": {"path": "/mnt/nvme/models", "type": "Directory"}, "name": "models"},),
        sa="inference"),
}
ARCHES["target"] = ARCHES["train"]


def _pod_doc(arch: _Arch, phase: str, bound: bool) -> dict:
    """The template document of one archetype in one phase (holes: see _Template)."""
    labels = arch.labels
    meta: dict[str, Any] = {}
    if arch.annotations or not arch.daemonset:
        meta["annotations"] = dict(sorted({
            **(arch.annotations or {}),
            "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
            "prometheus.io/path": "/metrics", "prometheus.io/port": "9090", "prometheus.io/scrape": "true",
            "gpuctl.bench/cost-center": "@@team@@-compute",
        }.items()))
    meta["creationTimestamp"] = "@@created@@"
    meta["generateName"] = "@@gen@@"
    meta["generation"] = 1
    meta["labels"] = labels
    meta["name"] = "@@name@@"
    meta["namespace"] = arch.namespace or "@@ns@@"
    meta["ownerReferences"] = [{"apiVersion": arch.owner_api, "blockOwnerDeletion": True, "controller": True,
                                "kind": arch.owner_kind, "name": "@@owner@@", "uid": "@@ouid@@"}]
    meta["resourceVersion"] = "@@rv@@"
    meta["uid"] = "@@uid@@"
    spec: dict[str, Any] = {}
    if not arch.daemonset:
        spec["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"preference": {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                                      "values": ["us-west-2a", "us-west-2b"]}]}, "weight": 50}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"podAffinityTerm": {"labelSelector": {"matchLabels": {"team": "@@team@@"}},
                                     "topologyKey": "kubernetes.io/hostname"}, "weight": 10}]}}
    if arch.daemonset:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                    "values": ["@@node@@"]}]}]}}}
    spec["containers"] = [_container(c) for c in arch.containers]
    spec["dnsPolicy"] = "ClusterFirstWithHostNet" if arch.host_network else "ClusterFirst"
    spec["enableServiceLinks"] = True
    if arch.host_network:
        spec["hostNetwork"] = True
    if arch.init:
        spec["initContainers"] = [_container(c) for c in arch.init]
    if bound:
        spec["nodeName"] = "@@node@@"
    if arch.node_selector:
        spec["nodeSelector"] = arch.node_selector
    spec["preemptionPolicy"] = "PreemptLowerPriority"
    spec["priority"] = arch.priority
    if arch.priority_class:
        spec["priorityClassName"] = arch.priority_class
    spec["restartPolicy"] = arch.restart
    if arch.runtime_class:
        spec["runtimeClassName"] = arch.runtime_class
    spec["schedulerName"] = "default-scheduler"
    spec["securityContext"] = {}
    spec["serviceAccount"] = arch.sa
    spec["serviceAccountName"] = arch.sa
    spec["terminationGracePeriodSeconds"] = 30
    spec["tolerations"] = list(arch.tolerations)
    spec["volumes"] = list(arch.volumes) + [_SA_TOKEN_VOLUME]

    def cond(t: str, status: str = "True", when: str = "@@started@@", **extra: str) -> dict:
        return {"lastProbeTime": None, "lastTransitionTime": when, **extra, "status": status, "type": t}

    def cstatus(c: _Container, state: dict, ready: bool, started: bool, res: bool) -> dict:
        d: dict[str, Any] = {"containerID": "containerd://@@cid@@", "image": c.image,
                             "imageID": c.image.rsplit(":", 1)[0] + "@sha256:@@digest@@", "lastState": {},
                             "name": c.name, "ready": ready}
        d["resources"] = "@@#res@@" if (res and c.resources) else {}
        d.update({"restartCount": 0, "started": started, "state": state, "volumeMounts": [
            {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-@@sfx@@",
             "readOnly": True, "recursiveReadOnly": "Disabled"}]})
        return d

    status: dict[str, Any]
    if phase == "Pending":
        status = {"conditions": [cond("PodScheduled", "False", "@@created@@", message="@@#schedmsg@@",
                                      reason="Unschedulable")],
                  "phase": "Pending", "qosClass": "@@qos@@"}
    else:
        running = phase == "Running"
        if running:
            state = {"running": {"startedAt": "@@started@@"}}
        elif phase == "Succeeded":
            state = {"terminated": {"containerID": "containerd://@@cid@@", "exitCode": 0, "finishedAt": "@@finished@@",
                                    "reason": "Completed", "startedAt": "@@started@@"}}
        else:
            state = {"terminated": {"containerID": "containerd://@@cid@@", "exitCode": "@@#exit@@",
                                    "finishedAt": "@@finished@@", "reason": "@@exitreason@@",
                                    "startedAt": "@@started@@"}}
        ready = "True" if running else "False"
        conds = [cond("PodReadyToStartContainers", ready), cond("Initialized"),
                 cond("Ready", ready, **({} if running else {"reason": "PodCompleted"})),
                 cond("ContainersReady", ready, **({} if running else {"reason": "PodCompleted"})),
                 cond("PodScheduled", when="@@created@@")]
        status = {"conditions": conds,
                  "containerStatuses": [cstatus(c, state, running, running, True) for c in arch.containers],
                  "hostIP": "@@hostip@@", "hostIPs": [{"ip": "@@hostip@@"}]}
        if arch.init:
            status["initContainerStatuses"] = [cstatus(c, {"terminated": {
                "containerID": "containerd://@@cid@@", "exitCode": 0, "finishedAt": "@@started@@",
                "reason": "Completed", "startedAt": "@@created@@"}}, True, False, False) for c in arch.init]
        status.update({"observedGeneration": 1, "phase": phase, "podIP": "@@podip@@",
                       "podIPs": [{"ip": "@@podip@@"}], "qosClass": "@@qos@@", "startTime": "@@created@@"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


_TEMPLATES: dict[tuple[str, str, bool], _Template] = {}


def _template(arch: str, phase: str, bound: bool) -> _Template:
    key = (arch, phase, bound)
    t = _TEMPLATES.get(key)
    if t is None:
        t = _TEMPLATES[key] = _Template(_pod_doc(ARCHES[arch], phase, bound))
    return t


# ---------------------------------------------------------------------------------- the cluster


@dataclass
class Cluster:
    """The generated objects as JSON (one ``str`` per object) plus what the benchmark needs to know."""

    nodes: list[str]
    pods: list[str]
    others: list[str]
    logs: dict[tuple[str, str, str, bool], str]
    info: dict[str, Any]

    def iter_json(self) -> Iterator[str]:
        yield from self.nodes
        yield from self.pods
        yield from self.others

    def objects(self) -> list[dict]:
        """Every object as a dict (decoded with the garbage collector paused: ~10x faster)."""
        import gc

        try:
            import msgspec

            decode: Callable[[str], Any] = msgspec.json.decode
        except ImportError:  # pragma: no cover - msgspec is a gpuctl dependency
            decode = json.loads
        enabled = gc.isenabled()
        gc.disable()
        try:
            return [decode(s) for s in self.iter_json()]
        finally:
            if enabled:
                gc.enable()

    @property
    def total_bytes(self) -> int:
        return sum(len(s) for s in self.iter_json())

    def write_snapshot(self, out: str | os.PathLike[str]) -> Path:
        """``cluster.json`` (a ``v1 List``), ``snapshot.json`` and ``logs/<ns>/<pod>/<container>.log``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "cluster.json", "w", encoding="utf-8") as fh:
            fh.write('{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[\n')
            first = True
            for s in self.iter_json():
                if not first:
                    fh.write(",\n")
                fh.write(s)
                first = False
            fh.write("\n]}\n")
        meta = {"schema": "gpuctl/snapshot/v1", "capturedAt": NOW, "context": "bench-synthetic",
                "gpuctlVersion": "0.1.0", "synthetic": self.info}
        (out / "snapshot.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        for (ns, pod, container, previous), text in self.logs.items():
            p = out / "logs" / ns / pod / f"{container}{'.previous' if previous else ''}.log"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        return out


def _qty_cpu(m: int) -> str:
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def _qty_mem(mi: int) -> str:
    return f"{mi // 1024}Gi" if mi % 1024 == 0 else f"{mi}Mi"


def _resources(cpu_m: int, mem_mi: int, extra: dict[str, int] | None = None, limit_cpu: bool = False) -> str:
    req = {"cpu": _qty_cpu(cpu_m), "memory": _qty_mem(mem_mi)}
    lim: dict[str, str] = {"memory": _qty_mem(mem_mi)}
    if limit_cpu:
        lim["cpu"] = _qty_cpu(cpu_m)
    for k, v in (extra or {}).items():
        req[k] = lim[k] = str(v)
    return _enc({"limits": dict(sorted(lim.items())), "requests": dict(sorted(req.items()))})


def generate(nodes: int = DEFAULT_NODES, pods: int = DEFAULT_PODS, seed: int = DEFAULT_SEED) -> Cluster:
    """Build the cluster. ``pods`` counts every pod, DaemonSet pods and targets included."""
    if nodes < 1:
        raise ValueError("need at least one node")
    rnd = _Rand(seed)
    r = rnd.r
    rv = 80_000_000
    n_mig = min(MIG_NODES, nodes)

    def next_rv() -> str:
        nonlocal rv
        rv += r.randint(1, 9)
        return str(rv)

    # -- nodes ---------------------------------------------------------------------------
    weights = [s.weight for s in SKUS]
    infos: list[NodeInfo] = []
    used_names: set[str] = set()
    mig_at = set(r.sample(range(nodes), n_mig))
    rest = [i for i in range(nodes) if i not in mig_at]
    unhealthy_at = set(r.sample(rest, min(UNHEALTHY_NODES, len(rest))))
    for i in range(nodes):
        sku = MIG_SKU if i in mig_at else r.choices(SKUS, weights)[0]
        while True:
            ip = f"10.42.{r.randint(16, 127)}.{r.randint(2, 254)}"
            name = f"ip-{ip.replace('.', '-')}.us-west-2.compute.internal"
            if name not in used_names:
                used_names.add(name)
                break
        gpus = MIG_WHOLE if i in mig_at else sku.gpus
        cpu_m = sku.cpus * 1000 - (310 if sku.cpus <= 48 else 1310)
        mem_mi = sku.mem_gib * 1024 - (4 * 1024 if sku.mem_gib <= 384 else 12 * 1024)
        infos.append(NodeInfo(name, sku, ip, ZONES[r.randrange(len(ZONES))], gpus,
                              gpus - 1 if i in unhealthy_at else gpus, MIG_SLICES if i in mig_at else 0,
                              cpu_m, mem_mi))
    for n in infos:
        n.free_cpu_m, n.free_mem_mi, n.free_gpu, n.free_mig = n.cpu_m, n.mem_mi, n.gpu_alloc, n.mig
    tainted = [r.random() < 0.9 for _ in infos]
    node_json = [_enc(_node_doc(rnd, n, i, int(next_rv()), tainted[i])) for i, n in enumerate(infos)]

    # -- pods ----------------------------------------------------------------------------
    pod_json: list[str] = []
    ds_uids = {k: rnd.uid() for k in ("device-plugin", "gfd", "dcgm-exporter", "kube-proxy", "aws-node")}
    ds_crh = {k: rnd.sfx(9) for k in ds_uids}
    ds_names = {"device-plugin": "nvidia-device-plugin-daemonset", "gfd": "gpu-feature-discovery",
                "dcgm-exporter": "nvidia-dcgm-exporter", "kube-proxy": "kube-proxy", "aws-node": "aws-node"}
    ds_res = {"kube-proxy": _resources(100, 128, limit_cpu=False), "aws-node": _resources(25, 64)}
    digests = {}

    def digest(image: str) -> str:
        d = digests.get(image)
        if d is None:
            d = digests[image] = rnd.hexid(64)
        return d

    serial = 0
    pod_names: set[tuple[str, str]] = set()

    def emit(arch: str, phase: str, node: NodeInfo | None, *, ns: str, name: str, owner: str, ouid: str,
             res: str = "{}", gpus: int = 0, team: str = "", model: str = "", crh: str = "",
             schedmsg: str = "", day: int | None = None) -> None:
        nonlocal serial
        serial += 1
        while (ns, name) in pod_names:  # a random suffix that is taken: draw another (names are unique)
            name = f"{name.rsplit('-', 1)[0]}-{rnd.sfx(5)}"
        pod_names.add((ns, name))
        a = ARCHES[arch]
        t = _template(arch, phase, node is not None)
        day = r.randint(0, 39) if day is None else day
        sec = r.randint(0, 80000)
        created = ts(day, sec)
        started = ts(day, sec + r.randint(5, 120))
        qos = "BestEffort" if res == "{}" else "Burstable"
        pod_json.append(t.render(
            name=name, gen=name.rsplit("-", 1)[0] + "-", ns=ns, owner=owner, ouid=ouid, uid=rnd.uid(),
            rv=next_rv(), created=created, started=started, finished=ts(min(day + 1, 40), sec),
            node=node.name if node else "", hostip=node.ip if node else "", podip=rnd.ip() if node else "",
            sfx=rnd.sfx(5), cid=rnd.hexid(64), digest=digest(a.containers[0].image), res=res,
            gpus=gpus or 1, team=team, model=model, crh=crh or rnd.sfx(10),
            migstrategy="mixed" if node is not None and node.mig else "single",
            qos=qos, schedmsg=schedmsg or '""', exit=137 if serial % 3 == 0 else 1,
            exitreason="OOMKilled" if serial % 3 == 0 else "Error",
        ))
        if node is not None:
            node.pods += 1

    # DaemonSet pods on every node (as many kinds as the pod budget allows)
    ds_kinds = list(ds_uids)[: max(1, min(DS_PER_NODE, (pods - 2) // max(nodes, 1)))]
    for n in infos:
        for k in ds_kinds:
            res = ds_res.get(k, "{}")
            if k in ds_res:
                n.free_cpu_m -= 100 if k == "kube-proxy" else 25
                n.free_mem_mi -= 128 if k == "kube-proxy" else 64
            emit(k, "Running", n, ns=ARCHES[k].namespace or "", name=f"{ds_names[k]}-{rnd.sfx(5)}",
                 owner=ds_names[k], ouid=ds_uids[k], res=res, crh=ds_crh[k], day=r.randint(0, 5))

    budget = pods - 2 - len(pod_json)  # the two targets come last
    teams_ns = list(TEAMS)
    job_seq = 0

    def gpu_pod(n: NodeInfo | None, g: int, phase: str, schedmsg: str = "") -> None:
        nonlocal job_seq
        job_seq += 1
        sku = n.sku if n is not None else r.choices(SKUS, weights)[0]
        cpu_per = max(1000, (sku.cpus * 800 // sku.gpus) // 1000 * 1000)
        mem_per = max(8, sku.mem_gib * 3 // 4 // sku.gpus) * 1024
        cpu_m, mem_mi = cpu_per * g, mem_per * g
        model, team = r.choice(MODELS), r.choice(teams_ns)
        infer = r.random() < 0.25 and g <= 2
        owner = f"{model.replace('.', '-')}-{'serve' if infer else 'train'}-{job_seq:06d}"
        if n is not None and phase == "Running":
            n.free_cpu_m -= cpu_m
            n.free_mem_mi -= mem_mi
            n.free_gpu -= g
        emit("infer" if infer else "train", phase, n, ns=team, name=f"{owner}-{rnd.sfx(5)}", owner=owner,
             ouid=rnd.uid(), res=_resources(cpu_m, mem_mi, {"nvidia.com/gpu": g}), gpus=g, team=team, model=model,
             schedmsg=schedmsg)

    # Running GPU pods: every 8-GPU node keeps >= 1 GPU busy; most nodes are (nearly) full
    for n in infos:
        if budget <= 0:
            break
        if n.mig:
            for _ in range(n.free_mig):
                if budget <= 0:
                    break
                model, team = r.choice(MODELS), r.choice(teams_ns)
                owner = f"{model}-mig-{n.name[3:14].replace('-', '')}"
                emit("mig", "Running", n, ns=team, name=f"{owner}-{rnd.sfx(5)}", owner=owner, ouid=rnd.uid(),
                     res=_resources(2000, 8192, {MIG_RESOURCE: 1}), gpus=1, team=team, model=model)
                n.free_cpu_m -= 2000
                n.free_mem_mi -= 8192
                budget -= 1
            n.free_mig = 0
        want_used = n.gpu_alloc if r.random() < 0.6 else r.randint(1, n.gpu_alloc)
        used = 0
        while used < want_used and budget > 0:
            sizes = [s for s in (1, 2, 4, 8) if s <= want_used - used]
            g = r.choice(sizes)
            gpu_pod(n, g, "Running")
            used += g
            budget -= 1

    # the rest: Pending (~4% of all), Succeeded/Failed (~6%), CPU pods Running
    n_pending = min(budget, round(pods * 0.04))
    n_done = min(budget - n_pending, round(pods * 0.06))
    n_cpu = budget - n_pending - n_done
    gpu_msg_by_g: dict[int, str] = {}
    for g in (1, 2, 4, 8):
        fits = sum(1 for n in infos if n.free_gpu >= g)
        busy = len(infos) - fits
        gpu_msg_by_g[g] = _enc(
            f"0/{len(infos)} nodes are available: {busy} Insufficient nvidia.com/gpu. preemption: 0/{len(infos)} "
            f"nodes are available: {busy} No preemption victims found for incoming pod.")
    for i in range(n_pending):
        g = r.choice((1, 2, 4, 8, 8))
        gpu_pod(None, g, "Pending", schedmsg=gpu_msg_by_g[g])
    for i in range(n_done):
        n = infos[r.randrange(len(infos))]
        if r.random() < 0.7:
            gpu_pod(n, r.choice((1, 2, 4, 8)), "Succeeded" if r.random() < 0.75 else "Failed")
        else:
            team = r.choice(teams_ns)
            owner = f"etl-{r.choice(('tokenize', 'shard', 'dedup', 'eval'))}-{i:06d}"
            emit("cpu", "Succeeded" if r.random() < 0.8 else "Failed", n, ns=team, name=f"{owner}-{rnd.sfx(5)}",
                 owner=owner, ouid=rnd.uid(), res=_resources(1000, 4096), team=team)
    deployments = [(r.choice(teams_ns), f"{r.choice(('feature', 'loader', 'tokenizer', 'metrics', 'batcher'))}-"
                    f"{r.choice(('svc', 'worker', 'proxy'))}-{d:04d}", rnd.uid(), rnd.sfx(10))
                   for d in range(max(1, n_cpu // 40))]
    order = list(range(len(infos)))
    for i in range(n_cpu):
        n = infos[order[i % len(order)]]
        if i % len(order) == len(order) - 1:
            r.shuffle(order)
        team, owner, ouid, crh = deployments[r.randrange(len(deployments))]
        cpu_m = r.choice((100, 250, 250, 500))
        mem_mi = r.choice((256, 512, 512, 1024))
        if n.free_cpu_m - cpu_m < 0 or n.free_mem_mi - mem_mi < 0:
            cpu_m, mem_mi = 50, 128
        n.free_cpu_m -= cpu_m
        n.free_mem_mi -= mem_mi
        emit("cpu", "Running", n, ns=team, name=f"{owner}-{crh[:5]}-{rnd.sfx(5)}", owner=owner, ouid=ouid,
             res=_resources(cpu_m, mem_mi), team=team, crh=crh)

    # -- the targets and their events --------------------------------------------------------
    n_nodes = len(infos)
    tainted_n = sum(tainted)
    no_gpu8 = sum(1 for n in infos if n.free_gpu < 8)
    target_msg = (f"0/{n_nodes} nodes are available: {no_gpu8} Insufficient nvidia.com/gpu. preemption: "
                  f"0/{n_nodes} nodes are available: {n_nodes} No preemption victims found for incoming pod.")
    no_mig = sum(1 for n in infos if n.free_mig < 1)
    mig_msg = (f"0/{n_nodes} nodes are available: {no_mig} Insufficient {MIG_RESOURCE}. preemption: "
               f"0/{n_nodes} nodes are available: {n_mig} No preemption victims found for incoming pod, "
               f"{n_nodes - n_mig} Preemption is not helpful for scheduling.")
    target_uids = {}
    for name, arch, res, msg in (
        (TARGET, "target", _resources(64000, 512 * 1024, {"nvidia.com/gpu": 8}), target_msg),
        (TARGET_MIG, "mig", _resources(2000, 8192, {MIG_RESOURCE: 1}), mig_msg),
    ):
        before = len(pod_json)
        emit(arch, "Pending", None, ns=TARGET_NS, name=name, owner=name if arch == "target" else f"{name}-rs",
             ouid=rnd.uid(), res=res, gpus=8 if arch == "target" else 1, team="ml", model="llama3-70b",
             schedmsg=_enc(msg), day=40)
        target_uids[name] = json.loads(pod_json[before])["metadata"]["uid"]
        # a target's generateName would be wrong (its name is not generated): strip it
        doc = json.loads(pod_json[before])
        doc["metadata"].pop("generateName", None)
        doc["metadata"]["creationTimestamp"] = "2026-11-20T02:35:00Z"
        doc["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-20T02:35:01Z"
        pod_json[before] = _enc(doc)

    others: list[str] = []
    for name, msg in ((TARGET, target_msg), (TARGET_MIG, mig_msg)):
        others.append(_enc({
            "apiVersion": "v1", "count": 14, "eventTime": None, "firstTimestamp": "2026-11-20T02:35:01Z",
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": TARGET_NS,
                               "resourceVersion": str(rv), "uid": target_uids[name]},
            "kind": "Event", "lastTimestamp": "2026-11-20T03:10:44Z", "message": msg,
            "metadata": {"creationTimestamp": "2026-11-20T02:35:01Z", "name": f"{name}.18e9a03ad3809d82",
                         "namespace": TARGET_NS, "resourceVersion": next_rv(), "uid": rnd.uid()},
            "reason": "FailedScheduling", "reportingComponent": "default-scheduler", "reportingInstance": "",
            "source": {"component": "default-scheduler"}, "type": "Warning"}))
    for ns in sorted(set(TEAMS) | {"gpu-operator", "kube-system", "default"}):
        others.append(_enc({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"creationTimestamp": "2026-10-01T00:00:00Z",
                                         "labels": {"kubernetes.io/metadata.name": ns}, "name": ns,
                                         "resourceVersion": next_rv(), "uid": rnd.uid()},
                            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}))
    others.append(_enc({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"creationTimestamp": "2026-10-01T00:00:00Z", "name": "gpu-quota", "namespace": TARGET_NS,
                     "resourceVersion": next_rv(), "uid": rnd.uid()},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4096", "requests.cpu": "200000", "requests.memory": "400Ti"}},
        "status": {"hard": {"requests.nvidia.com/gpu": "4096", "requests.cpu": "200000",
                            "requests.memory": "400Ti"},
                   "used": {"requests.nvidia.com/gpu": "1200", "requests.cpu": "15000", "requests.memory": "110Ti"}}}))

    # device-plugin logs of the nodes with an unhealthy GPU (gpuctl reads them)
    logs: dict[tuple[str, str, str, bool], str] = {}
    unhealthy_names = {infos[i].name for i in unhealthy_at}
    for s in pod_json[: len(infos) * len(ds_kinds)]:
        if '"app":"nvidia-device-plugin-daemonset"' not in s:
            continue
        doc = json.loads(s)
        if doc["spec"]["nodeName"] in unhealthy_names:
            uuid = "GPU-" + rnd.uid()
            logs[("gpu-operator", doc["metadata"]["name"], "nvidia-device-plugin", False)] = "".join((
                "I1120 01:02:03.000001       1 main.go:235] \"Starting NVIDIA Device Plugin\" version=<\n",
                "I1120 01:02:03.100000       1 server.go:195] Starting GRPC server for 'nvidia.com/gpu'\n",
                "I1120 01:02:03.200000       1 server.go:139] Starting to serve 'nvidia.com/gpu' on "
                "/var/lib/kubelet/device-plugins/nvidia-gpu.sock\n",
                "I1120 01:02:03.300000       1 server.go:146] Registered device plugin for 'nvidia.com/gpu' with Kubelet\n",
                f"I1120 02:10:11.123456       1 health.go:143] Processing event {{Device:{uuid} EventType:8 "
                "EventData:79 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}\n",
                f"I1120 02:10:11.123470       1 health.go:159] XidCriticalError: Xid=79 on Device={uuid}; "
                "marking device as unhealthy.\n",
                f"I1120 02:10:11.123500       1 server.go:276] 'nvidia.com/gpu' device marked unhealthy: {uuid}\n",
            ))

    info = {
        "nodes": len(infos), "pods": len(pod_json), "seed": seed,
        "target": f"{TARGET_NS}/{TARGET}", "target_mig": f"{TARGET_NS}/{TARGET_MIG}",
        "mig_nodes": n_mig, "unhealthy_nodes": sorted(unhealthy_names), "tainted_nodes": tainted_n,
        "daemonset_pods": len(infos) * len(ds_kinds), "pending": n_pending + 2, "terminated": n_done,
        "nodes_without_8_free_gpus": no_gpu8,
    }
    return Cluster(node_json, pod_json, others, logs, info)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    ap.add_argument("--pods", type=int, default=DEFAULT_PODS)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--out", help="write a snapshot directory here (cluster.json + snapshot.json + logs/)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    c = generate(args.nodes, args.pods, args.seed)
    t1 = time.perf_counter()
    nb, pb = sum(map(len, c.nodes)), sum(map(len, c.pods))
    print(f"generated {len(c.nodes)} nodes ({nb / len(c.nodes) / 1024:.1f} KB avg), {len(c.pods)} pods "
          f"({pb / len(c.pods) / 1024:.2f} KB avg), {(nb + pb) / 1e6:.0f} MB of JSON in {t1 - t0:.1f}s",
          file=sys.stderr)
    if args.out:
        c.write_snapshot(args.out)
        print(f"wrote {args.out} in {time.perf_counter() - t1:.1f}s", file=sys.stderr)
    print(json.dumps(c.info, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
