"""Slim typed records of the Kubernetes objects the checks read.

One msgspec Struct per kind (kr8s style), each field named exactly as
``kubectl get -o json`` names it, holding only what the checks use. Decoding raw
API JSON straight into these Structs is what lets 150,000 pods fit in a few hundred
MB (see docs/benchmarks.md); unknown fields are dropped by the decoder.

Kinds the checks read only rarely (CRDs: Kueue, Volcano, DRA, Karpenter, training
operators) are kept as :class:`GenericObject` with ``spec``/``status`` as dicts.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

import msgspec
from msgspec import Struct, field


class _S(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=False):
    pass


# ---------------------------------------------------------------- metadata


class OwnerReference(_S):
    kind: str = ""
    name: str = ""
    uid: str = ""
    apiVersion: str = ""
    controller: Optional[bool] = None


class ObjectMeta(_S):
    name: str = ""
    namespace: Optional[str] = None
    uid: str = ""
    resourceVersion: Optional[str] = None
    creationTimestamp: Optional[str] = None
    deletionTimestamp: Optional[str] = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    ownerReferences: list[OwnerReference] = field(default_factory=list)
    generateName: Optional[str] = None


# ---------------------------------------------------------------- selectors


class LabelSelectorRequirement(_S):
    key: str = ""
    operator: str = ""
    values: list[str] = field(default_factory=list)


class LabelSelector(_S):
    matchLabels: dict[str, str] = field(default_factory=dict)
    matchExpressions: list[LabelSelectorRequirement] = field(default_factory=list)


class NodeSelectorRequirement(_S):
    key: str = ""
    operator: str = ""
    values: list[str] = field(default_factory=list)


class NodeSelectorTerm(_S):
    matchExpressions: list[NodeSelectorRequirement] = field(default_factory=list)
    matchFields: list[NodeSelectorRequirement] = field(default_factory=list)


class NodeSelector(_S):
    nodeSelectorTerms: list[NodeSelectorTerm] = field(default_factory=list)


class NodeAffinity(_S):
    requiredDuringSchedulingIgnoredDuringExecution: Optional[NodeSelector] = None


class PodAffinityTerm(_S):
    labelSelector: Optional[LabelSelector] = None
    topologyKey: str = ""
    namespaces: list[str] = field(default_factory=list)
    namespaceSelector: Optional[LabelSelector] = None


class PodAffinity(_S):
    requiredDuringSchedulingIgnoredDuringExecution: list[PodAffinityTerm] = field(default_factory=list)


class Affinity(_S):
    nodeAffinity: Optional[NodeAffinity] = None
    podAffinity: Optional[PodAffinity] = None
    podAntiAffinity: Optional[PodAffinity] = None


class Toleration(_S):
    key: Optional[str] = None
    operator: Optional[str] = None
    value: Optional[str] = None
    effect: Optional[str] = None
    tolerationSeconds: Optional[int] = None


class Taint(_S):
    key: str = ""
    value: Optional[str] = None
    effect: str = ""
    timeAdded: Optional[str] = None


class TopologySpreadConstraint(_S):
    maxSkew: int = 1
    topologyKey: str = ""
    whenUnsatisfiable: str = ""
    labelSelector: Optional[LabelSelector] = None


# ---------------------------------------------------------------- pods


class ResourceRequirements(_S):
    requests: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)


class EnvVar(_S):
    name: str = ""
    value: Optional[str] = None


class Container(_S):
    name: str = ""
    image: Optional[str] = None
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    restartPolicy: Optional[str] = None  # "Always" on an init container = sidecar
    env: list[EnvVar] = field(default_factory=list)


class PVCSource(_S):
    claimName: str = ""


class Volume(_S):
    name: str = ""
    persistentVolumeClaim: Optional[PVCSource] = None
    ephemeral: Optional[dict[str, Any]] = None


class PodResourceClaim(_S):
    name: str = ""
    resourceClaimName: Optional[str] = None
    resourceClaimTemplateName: Optional[str] = None
    source: Optional[dict[str, Any]] = None  # v1alpha/v1beta1 shape


class SchedulingGate(_S):
    name: str = ""


class PodSpec(_S):
    nodeName: Optional[str] = None
    nodeSelector: dict[str, str] = field(default_factory=dict)
    affinity: Optional[Affinity] = None
    tolerations: list[Toleration] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    initContainers: list[Container] = field(default_factory=list)
    overhead: dict[str, Any] = field(default_factory=dict)
    schedulerName: Optional[str] = None
    priority: Optional[int] = None
    priorityClassName: Optional[str] = None
    preemptionPolicy: Optional[str] = None
    schedulingGates: list[SchedulingGate] = field(default_factory=list)
    resourceClaims: list[PodResourceClaim] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    runtimeClassName: Optional[str] = None
    topologySpreadConstraints: list[TopologySpreadConstraint] = field(default_factory=list)
    restartPolicy: Optional[str] = None


class PodCondition(_S):
    type: str = ""
    status: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None
    lastTransitionTime: Optional[str] = None


class ContainerStateWaiting(_S):
    reason: Optional[str] = None
    message: Optional[str] = None


class ContainerStateRunning(_S):
    startedAt: Optional[str] = None


class ContainerStateTerminated(_S):
    exitCode: int = 0
    reason: Optional[str] = None
    message: Optional[str] = None
    startedAt: Optional[str] = None
    finishedAt: Optional[str] = None


class ContainerState(_S):
    waiting: Optional[ContainerStateWaiting] = None
    running: Optional[ContainerStateRunning] = None
    terminated: Optional[ContainerStateTerminated] = None


class ContainerStatus(_S):
    name: str = ""
    ready: bool = False
    restartCount: int = 0
    image: Optional[str] = None
    state: Optional[ContainerState] = None
    lastState: Optional[ContainerState] = None


class PodResourceClaimStatus(_S):
    name: str = ""
    resourceClaimName: Optional[str] = None


class PodStatus(_S):
    phase: Optional[str] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    conditions: list[PodCondition] = field(default_factory=list)
    nominatedNodeName: Optional[str] = None
    startTime: Optional[str] = None
    containerStatuses: list[ContainerStatus] = field(default_factory=list)
    initContainerStatuses: list[ContainerStatus] = field(default_factory=list)
    resourceClaimStatuses: list[PodResourceClaimStatus] = field(default_factory=list)


class Pod(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodSpec = field(default_factory=PodSpec)
    status: PodStatus = field(default_factory=PodStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def phase(self) -> str:
        return self.status.phase or "Unknown"

    def condition(self, type_: str) -> Optional[PodCondition]:
        for c in self.status.conditions:
            if c.type == type_:
                return c
        return None

    @property
    def terminated(self) -> bool:
        """Succeeded/Failed pods no longer hold node resources."""
        return self.status.phase in ("Succeeded", "Failed")


class SlimContainer(_S):
    name: str = ""
    resources: ResourceRequirements = field(default_factory=ResourceRequirements)
    restartPolicy: Optional[str] = None


class BoundPodMeta(_S):
    name: str = ""
    namespace: Optional[str] = None
    uid: str = ""
    deletionTimestamp: Optional[str] = None
    labels: dict[str, str] = field(default_factory=dict)


class BoundPodLiteMeta(_S):
    name: str = ""
    namespace: Optional[str] = None
    uid: str = ""
    deletionTimestamp: Optional[str] = None

    labels: ClassVar[dict[str, str]] = {}   # not decoded: read-only, always empty


class BoundPodSpec(_S):
    nodeName: Optional[str] = None
    containers: list[SlimContainer] = field(default_factory=list)
    initContainers: list[SlimContainer] = field(default_factory=list)
    overhead: dict[str, Any] = field(default_factory=dict)


class BoundPodStatus(_S):
    phase: Optional[str] = None

    # Read by code that handles any pod; a bound pod listed in bulk never needs them.
    conditions: ClassVar[tuple] = ()
    containerStatuses: ClassVar[tuple] = ()
    initContainerStatuses: ClassVar[tuple] = ()


class BoundPod(_S):
    """A pod listed in bulk to count what a node has allocated: only what the
    allocation, anti-affinity and preemption checks read (150,000 of these fit in
    a fraction of the memory of full Pod records, and decode several times faster)."""

    metadata: BoundPodMeta = field(default_factory=BoundPodMeta)
    spec: BoundPodSpec = field(default_factory=BoundPodSpec)
    status: BoundPodStatus = field(default_factory=BoundPodStatus)

    key = Pod.key
    phase = Pod.phase
    terminated = Pod.terminated

    def condition(self, type_: str) -> None:
        return None


class BoundPodLite(BoundPod):
    """BoundPod without labels, for a target pod with no pod (anti-)affinity to
    evaluate: labels are most of a bulk record's memory."""

    metadata: BoundPodLiteMeta = field(default_factory=BoundPodLiteMeta)


# ---------------------------------------------------------------- nodes


class NodeCondition(_S):
    type: str = ""
    status: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None
    lastTransitionTime: Optional[str] = None
    lastHeartbeatTime: Optional[str] = None


class NodeSystemInfo(_S):
    kubeletVersion: Optional[str] = None
    containerRuntimeVersion: Optional[str] = None
    kernelVersion: Optional[str] = None
    osImage: Optional[str] = None


class NodeSpec(_S):
    unschedulable: bool = False
    taints: list[Taint] = field(default_factory=list)
    providerID: Optional[str] = None


class NodeStatus(_S):
    capacity: dict[str, Any] = field(default_factory=dict)
    allocatable: dict[str, Any] = field(default_factory=dict)
    conditions: list[NodeCondition] = field(default_factory=list)
    nodeInfo: Optional[NodeSystemInfo] = None


class Node(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: NodeSpec = field(default_factory=NodeSpec)
    status: NodeStatus = field(default_factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def condition(self, type_: str) -> Optional[NodeCondition]:
        for c in self.status.conditions:
            if c.type == type_:
                return c
        return None

    @property
    def ready(self) -> bool:
        c = self.condition("Ready")
        return c is not None and c.status == "True"


# ---------------------------------------------------------------- events


class ObjectReference(_S):
    kind: Optional[str] = None
    name: Optional[str] = None
    namespace: Optional[str] = None
    uid: Optional[str] = None
    apiVersion: Optional[str] = None


class EventSource(_S):
    component: Optional[str] = None
    host: Optional[str] = None


class EventSeries(_S):
    count: Optional[int] = None
    lastObservedTime: Optional[str] = None


class Event(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    involvedObject: ObjectReference = field(default_factory=ObjectReference)
    reason: Optional[str] = None
    message: Optional[str] = None
    type: Optional[str] = None
    count: Optional[int] = None
    firstTimestamp: Optional[str] = None
    lastTimestamp: Optional[str] = None
    eventTime: Optional[str] = None
    source: Optional[EventSource] = None
    reportingComponent: Optional[str] = None
    series: Optional[EventSeries] = None

    @property
    def component(self) -> str:
        return self.reportingComponent or (self.source.component if self.source else None) or ""

    @property
    def last_seen(self) -> Optional[str]:
        return (self.series.lastObservedTime if self.series else None) or self.lastTimestamp or self.eventTime or self.firstTimestamp

    @property
    def times(self) -> int:
        return (self.series.count if self.series and self.series.count else None) or self.count or 1


# ---------------------------------------------------------------- others


class ResourceQuotaSpec(_S):
    hard: dict[str, Any] = field(default_factory=dict)


class ResourceQuotaStatus(_S):
    hard: dict[str, Any] = field(default_factory=dict)
    used: dict[str, Any] = field(default_factory=dict)


class ResourceQuota(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: ResourceQuotaSpec = field(default_factory=ResourceQuotaSpec)
    status: ResourceQuotaStatus = field(default_factory=ResourceQuotaStatus)


class PVCSpec(_S):
    storageClassName: Optional[str] = None
    volumeName: Optional[str] = None


class PVCStatus(_S):
    phase: Optional[str] = None


class PersistentVolumeClaim(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PVCSpec = field(default_factory=PVCSpec)
    status: PVCStatus = field(default_factory=PVCStatus)


class StorageClass(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    provisioner: Optional[str] = None
    volumeBindingMode: Optional[str] = None


class RuntimeClass(_S):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    handler: Optional[str] = None


class GenericObject(_S):
    """Any other kind: workloads and CRDs (Kueue, Volcano, DRA, Karpenter, training jobs)."""

    apiVersion: str = ""
    kind: str = ""
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: Optional[dict[str, Any]] = None
    status: Optional[dict[str, Any]] = None


TYPED_KINDS: dict[str, type] = {
    "BoundPod": BoundPod,
    "BoundPodLite": BoundPodLite,
    "Node": Node,
    "Pod": Pod,
    "Event": Event,
    "ResourceQuota": ResourceQuota,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StorageClass": StorageClass,
    "RuntimeClass": RuntimeClass,
}

# Kinds kept as GenericObject (workloads, DRA, queues, autoscalers). Anything else is ignored.
GENERIC_KINDS = frozenset({
    "Namespace", "LimitRange", "PriorityClass", "DaemonSet", "ConfigMap", "Job", "ReplicaSet",
    "Deployment", "StatefulSet", "PersistentVolume", "ResourceClaim", "ResourceClaimTemplate",
    "DeviceClass", "ResourceSlice", "Workload", "LocalQueue", "ClusterQueue", "ResourceFlavor",
    "PodGroup", "Queue", "PyTorchJob", "MPIJob", "JobSet", "NodeClaim", "NodePool", "CronJob",
})

KNOWN_KINDS = frozenset(TYPED_KINDS) | GENERIC_KINDS

_decoders: dict[type, msgspec.json.Decoder] = {}


def decoder_for(kind: str) -> msgspec.json.Decoder:
    t = TYPED_KINDS.get(kind, GenericObject)
    dec = _decoders.get(t)
    if dec is None:
        dec = _decoders[t] = msgspec.json.Decoder(t)
    return dec


def decode_lenient(decoder: Any, data: Any) -> Any:
    """``decoder.decode(data)``, with invalid UTF-8 replaced by U+FFFD instead of
    failing: what Go's encoding/json (and so the API server) does with such bytes.
    msgspec raises UnicodeDecodeError, not DecodeError, for them; a hand-edited
    snapshot or a proxied answer can hold them, and one bad byte in an event message
    must not cost the whole diagnosis."""
    try:
        return decoder.decode(data)
    except UnicodeDecodeError:
        return decoder.decode(bytes(data).decode("utf-8", "replace").encode("utf-8"))


def convert(kind: str, obj: dict[str, Any]) -> Any:
    """Typed record from an already-parsed dict (snapshot files, YAML)."""
    return msgspec.convert(obj, TYPED_KINDS.get(kind, GenericObject), strict=False)
