"""Slim typed records of the Kubernetes objects the checks read.

One msgspec Struct per kind (kr8s style), each field named exactly as
``kubectl get -o json`` names it, holding only what the checks use. Decoding raw
API JSON straight into these Structs is what lets 150,000 pods fit in a few hundred
MB (see docs/benchmarks.md); unknown fields are dropped by the decoder.

Kinds the checks read only rarely (CRDs: Kueue, Volcano, DRA, Karpenter, training
operators) are kept as :class:`GenericObject` with ``spec``/``status`` as dicts.
"""

from __future__ import annotations

import copy
import json
import re
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Union

import msgspec
from msgspec import Struct, field

from .quantity import parse_quantity

# A resource quantity as the API serves it: "500m", "16Gi", "4", or a plain number.
# Anything else (null, a list, a map, a boolean) fails decoding at C speed and is
# salvaged by decode_salvaging; strings that do not parse ("abc", "") are caught by
# scrub_quantities when the record joins a Snapshot.
Quantity = Union[int, float, str]


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
    minDomains: Optional[int] = None
    matchLabelKeys: list[str] = field(default_factory=list)
    nodeAffinityPolicy: Optional[str] = None   # Honor (default) | Ignore
    nodeTaintsPolicy: Optional[str] = None     # Ignore (default) | Honor


# ---------------------------------------------------------------- pods


class ResourceRequirements(_S):
    requests: dict[str, Quantity] = field(default_factory=dict)
    limits: dict[str, Quantity] = field(default_factory=dict)


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
    overhead: dict[str, Quantity] = field(default_factory=dict)
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


class BoundAffinity(_S):
    """Only what other pods are judged by: required anti-affinity (the scheduler
    keeps a pod off a node when an existing pod's anti-affinity excludes it)."""
    podAntiAffinity: Optional[PodAffinity] = None


class BoundPodSpec(_S):
    nodeName: Optional[str] = None
    affinity: Optional[BoundAffinity] = None
    containers: list[SlimContainer] = field(default_factory=list)
    initContainers: list[SlimContainer] = field(default_factory=list)
    overhead: dict[str, Quantity] = field(default_factory=dict)


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
    capacity: dict[str, Quantity] = field(default_factory=dict)
    allocatable: dict[str, Quantity] = field(default_factory=dict)
    conditions: list[NodeCondition] = field(default_factory=list)
    nodeInfo: Optional[NodeSystemInfo] = None


class ManagedFieldsEntry(_S):
    """Who wrote which fields of an object, and when (server-side field tracking).
    Kept for nodes only, to say who cordoned one: ``kubectl get -o json`` leaves
    these out unless --show-managed-fields, a live read has them."""

    manager: str = ""
    operation: str = ""
    time: Optional[str] = None
    fieldsV1: Optional[dict[str, Any]] = None

    def __post_init__(self) -> None:
        # Keep only what is read (ownership of spec.unschedulable): a node's
        # entries (kubelet status, NFD/GFD labels) weigh more than the node.
        spec = self.fieldsV1.get("f:spec") if isinstance(self.fieldsV1, dict) else None
        owns = isinstance(spec, dict) and "f:unschedulable" in spec
        self.fieldsV1 = {"f:spec": {"f:unschedulable": {}}} if owns else None

    @property
    def owns_unschedulable(self) -> bool:
        return self.fieldsV1 is not None


class NodeMeta(ObjectMeta):
    managedFields: list[ManagedFieldsEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Only the entries that own spec.unschedulable (who cordoned the node).
        if self.managedFields:
            self.managedFields = [m for m in self.managedFields if m.owns_unschedulable]


class Node(_S):
    metadata: NodeMeta = field(default_factory=NodeMeta)
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
    hard: dict[str, Quantity] = field(default_factory=dict)


class ResourceQuotaStatus(_S):
    hard: dict[str, Quantity] = field(default_factory=dict)
    used: dict[str, Quantity] = field(default_factory=dict)


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
    "Cohort", "PendingWorkloadsSummary",   # Kueue: gpuctl keeps a visibility-API answer's items in status.items
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
    """Typed record from an already-parsed dict, its unreadable fields emptied
    (see decode_salvaging); ``msgspec.ValidationError`` only when nothing can be kept."""
    rec, problems = decode_salvaging(kind, obj)
    if rec is None:
        raise msgspec.ValidationError(str(problems[-1]) if problems else f"not a {kind}")
    return rec


# ---------------------------------------------------------------- objects that cannot be fully read

MAX_SALVAGED_FIELDS = 16      # a record with more bad fields than this is given up on
_DISPLAY_KIND = {"BoundPod": "Pod", "BoundPodLite": "Pod"}
_IDENTITY = (("metadata",), ("metadata", "name"), ("metadata", "namespace"))


@dataclass(frozen=True)
class Unreadable:
    """One object gpuctl could not fully read: which object, which field, what was
    wrong, and whether the record was kept with that field emptied (``kept``) or
    left out. ``str()`` is the line reports print:
    ``Node gpu-a-1: metadata.labels.x: expected a string, got an integer``."""

    kind: str
    namespace: Optional[str]
    name: str
    field: str                      # "spec.taints", "spec.containers[0].resources.requests['nvidia.com/gpu']"; "" = the object
    problem: str
    kept: bool = True
    source: str = ""                # the file or request it came from
    path: tuple = ()                # ``field`` as keys and list indices

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name or '?'}"

    @property
    def key(self) -> tuple:
        return (self.kind, self.namespace, self.name, self.field)

    def __str__(self) -> str:
        text = f"{self.ref}: {self.field + ': ' if self.field else ''}{self.problem}"
        if not self.kept:
            text += " (left out)"
        return text + (f" (in {self.source})" if self.source else "")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "field": self.field,
                "problem": self.problem, "kept": self.kept, "source": self.source or None}


def field_text(path: tuple) -> str:
    """('spec', 'taints', 1, 'key') -> 'spec.taints[1].key'; keys that are not plain
    names are quoted: status.allocatable['nvidia.com/gpu']."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", p):
            out += ("." if out else "") + p
        else:
            out += f"[{p!r}]"
    return out


_TYPE_WORDS = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean", "null": "null",
               "array": "a list", "object": "a map", "int | float | str": "a quantity"}


def _type_words(names: str) -> str:
    parts = [p.strip() for p in names.split("|")]
    if parts == ["int", "float", "str"]:
        return "a quantity"
    words = [_TYPE_WORDS.get(p, p) for p in parts if p != "null" or len(parts) == 1]
    return " or ".join(words)


def _problem_text(message: str) -> str:
    """msgspec's "Expected `array`, got `object`" as "expected a list, got a map"."""
    m = re.match(r"Expected `([^`]+)`, got `([^`]+)`$", message)
    if m:
        return f"expected {_type_words(m[1])}, got {_type_words(m[2])}"
    return (message[:1].lower() + message[1:]).replace("`", "")


def _value_text(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def quantity_problem(value: Any) -> Optional[str]:
    """Why ``value`` is not a resource quantity, or None when it is one."""
    try:
        parse_quantity(value)
        return None
    except (ValueError, TypeError):
        return f"not a quantity: {_value_text(value)}"


def _parse_error_path(message: str) -> Optional[list]:
    """"… - at `$.spec.taints[1].key`" -> ['spec', 'taints', 1, 'key'] ('...' for a map value)."""
    m = re.search(r" - at `\$([^`]*)`$", message)
    if not m:
        return None
    out: list = []
    for attr, index, anyvalue in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[(\.\.\.)\]", m[1]):
        out.append(attr if attr else int(index) if index else ...)
    return out


def _unwrap(t: Any) -> Any:
    """Optional[X] -> X (a union of several types stays as it is)."""
    if typing.get_origin(t) is Union:
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return args[0] if len(args) == 1 else Union[tuple(args)]
    return t


def _child_type(t: Any, step: Any) -> Any:
    t = _unwrap(t)
    if isinstance(step, str):
        if isinstance(t, type) and issubclass(t, Struct):
            return typing.get_type_hints(t).get(step, Any)
        return Any
    args = typing.get_args(t)
    origin = typing.get_origin(t)
    if origin is list and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return Any


def _pinpoint(doc: Any, root: type, steps: list) -> tuple[list, list]:
    """The concrete path (map keys filled in for msgspec's '[...]') of the value the
    error names, and the type expected at each step of it. Stops at the deepest step
    it can follow."""
    node, t, path, types = doc, root, [], []
    for step in steps:
        if step is ...:
            if not isinstance(node, dict):
                break
            vt = _child_type(t, 0)
            bad = next((k for k, v in node.items() if not _converts(v, vt)), None)
            if bad is None:
                break
            path.append(bad)
            node, t = node[bad], vt
        elif isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                break
            path.append(step)
            node, t = node[step], _child_type(t, step)
        else:
            if not isinstance(node, dict) or step not in node:
                break
            path.append(step)
            node, t = node[step], _child_type(t, step)
        types.append(t)
    return path, types


def _converts(value: Any, t: Any) -> bool:
    try:
        msgspec.convert(value, t, strict=False)
        return True
    except (msgspec.ValidationError, TypeError):
        return False


def _get(doc: Any, path: list) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _identity(doc: Any) -> tuple[Optional[str], str]:
    md = doc.get("metadata") if isinstance(doc, dict) else None
    md = md if isinstance(md, dict) else {}
    ns, name = md.get("namespace"), md.get("name")
    return (ns if isinstance(ns, str) else None), (name if isinstance(name, str) else "?")


# List elements dropped whole when one of their fields is unreadable.
_WHOLE_ELEMENTS = (Taint, Toleration, NodeCondition, PodCondition, NodeSelectorRequirement, LabelSelectorRequirement,
                   NodeSelectorTerm, PodAffinityTerm, TopologySpreadConstraint, OwnerReference, SchedulingGate)


def decode_salvaging(kind: str, raw: Any, source: str = "") -> tuple[Optional[Any], list[Unreadable]]:
    """Decode one object of ``kind`` (JSON bytes, ``msgspec.Raw`` or an already
    parsed dict) into its record, keeping what can be read.

    The common case is the plain msgspec decode. When that fails, the object is
    read as plain data, the field msgspec names (``at `$.spec.taints```) is removed
    (a map entry or list element: only the bad one) so that its default applies, and
    the decode is retried, at most MAX_SALVAGED_FIELDS times. Returns the record
    (None when it cannot be kept: not a map, its name or namespace unreadable, too
    many bad fields) and one :class:`Unreadable` per field given up."""
    t = TYPED_KINDS.get(kind, GenericObject)
    shown = _DISPLAY_KIND.get(kind, kind)
    try:
        if isinstance(raw, (bytes, bytearray, memoryview, msgspec.Raw)):
            return decode_lenient(decoder_for(kind), raw), []
        return msgspec.convert(raw, t, strict=False), []
    except msgspec.ValidationError as e:
        error = str(e)
    except msgspec.DecodeError as e:
        return None, [Unreadable(shown, None, "?", "", f"not valid JSON ({e})", kept=False, source=source)]
    except TypeError as e:
        return None, [Unreadable(shown, None, "?", "", str(e), kept=False, source=source)]
    if not isinstance(raw, (bytes, bytearray, memoryview, msgspec.Raw)):
        doc = copy.deepcopy(raw)
    else:
        try:
            doc = decode_lenient(msgspec.json, raw)
        except msgspec.DecodeError as e:
            return None, [Unreadable(shown, None, "?", "", f"not valid JSON ({e})", kept=False, source=source)]
    if not isinstance(doc, dict):
        return None, [Unreadable(shown, None, "?", "", _problem_text(error), kept=False, source=source)]
    ns, name = _identity(doc)
    problems: list[Unreadable] = []
    for _ in range(MAX_SALVAGED_FIELDS):
        steps = _parse_error_path(error)
        path, types = _pinpoint(doc, t, steps or [])
        message = _problem_text(error.split(" - at `")[0])
        if steps is None or not path or tuple(path) in _IDENTITY:
            return None, problems + [Unreadable(shown, ns, name, field_text(tuple(path)), message, kept=False,
                                                source=source, path=tuple(path))]
        if len(path) >= 2 and isinstance(path[-2], int) and _unwrap(types[-2]) in _WHOLE_ELEMENTS:
            # half a taint or condition misleads more than none: the element goes
            message = f"{path[-1]}: {message}"
            path, types = path[:-1], types[:-1]
        parent = _get(doc, path[:-1])
        if steps[len(path) - 1:len(path)] == [...]:
            # a map value: every entry of that map that does not fit goes at once
            vt = types[-1]
            bad = [k for k, v in parent.items() if not _converts(v, vt)]
        else:
            bad = [path[-1]]
        for k in bad:
            p = tuple(path[:-1]) + (k,)
            why = (quantity_problem(parent[k]) if _unwrap(types[-1]) == Quantity else None) or message
            problems.append(Unreadable(shown, ns, name, field_text(p), why, source=source, path=p))
        for k in bad:
            del parent[k]
        try:
            return msgspec.convert(doc, t, strict=False), problems
        except msgspec.ValidationError as e:
            error = str(e)
    return None, problems + [Unreadable(shown, ns, name, "", f"more than {MAX_SALVAGED_FIELDS} unreadable fields",
                                        kept=False, source=source)]


_GOOD_QUANTITIES: set = set()


def _scrub_map(values: dict, path: tuple, out: list) -> None:
    bad = []
    for k, v in values.items():
        if isinstance(v, (str, int, float)) and v in _GOOD_QUANTITIES:
            continue
        problem = quantity_problem(v)
        if problem is not None:
            bad.append((k, problem))
        elif len(_GOOD_QUANTITIES) < 65536:
            _GOOD_QUANTITIES.add(v)
    for k, problem in bad:
        del values[k]
        out.append((path + (k,), problem))


def scrub_quantities(kind: str, rec: Any) -> list[Unreadable]:
    """Remove the resource quantities of a Node, Pod or ResourceQuota record that do
    not parse ("abc", "", "1e999"), so that no check or report trips on them, and say
    which. Cheap: one pass over the quantity maps, parsing cached."""
    if kind in ("Pod", "BoundPod", "BoundPodLite"):
        # the common case, at C speed: every value one already seen to parse
        spec, known = rec.spec, _GOOD_QUANTITIES.issuperset
        try:
            for c in spec.containers:
                r = c.resources
                if not (known(r.requests.values()) and known(r.limits.values())):
                    break
            else:
                if not spec.initContainers and (not spec.overhead or known(spec.overhead.values())):
                    return []
        except TypeError:   # an unhashable value in a hand-built record: the slow path says which
            pass
    found: list[tuple[tuple, str]] = []
    if kind == "Node":
        st = rec.status
        _scrub_map(st.capacity, ("status", "capacity"), found)
        _scrub_map(st.allocatable, ("status", "allocatable"), found)
    elif kind in ("Pod", "BoundPod", "BoundPodLite"):
        spec = rec.spec
        for group in ("containers", "initContainers"):
            for i, c in enumerate(getattr(spec, group)):
                r = c.resources
                if r.requests:
                    _scrub_map(r.requests, ("spec", group, i, "resources", "requests"), found)
                if r.limits:
                    _scrub_map(r.limits, ("spec", group, i, "resources", "limits"), found)
        if spec.overhead:
            _scrub_map(spec.overhead, ("spec", "overhead"), found)
    elif kind == "ResourceQuota":
        _scrub_map(rec.spec.hard, ("spec", "hard"), found)
        _scrub_map(rec.status.hard, ("status", "hard"), found)
        _scrub_map(rec.status.used, ("status", "used"), found)
    if not found:
        return []
    md = rec.metadata
    return [Unreadable(_DISPLAY_KIND.get(kind, kind), md.namespace, md.name, field_text(p), problem, path=p)
            for p, problem in found]


def pod_quantities_clean(spec: Any) -> bool:
    """Whether every resource quantity of a pod spec parses (scrub_quantities would
    then change nothing): only such a spec's maps may be shared between records
    (gpuctl/collect/files.py _Shared), as scrubbing one would scrub them all."""
    maps = [c.resources.requests for c in spec.containers] + [c.resources.limits for c in spec.containers]
    maps += [c.resources.requests for c in spec.initContainers] + [c.resources.limits for c in spec.initContainers]
    maps.append(spec.overhead)
    for values in maps:
        for v in values.values():
            if isinstance(v, (str, int, float)) and v in _GOOD_QUANTITIES:
                continue
            if quantity_problem(v) is not None:
                return False
            if len(_GOOD_QUANTITIES) < 65536:
                _GOOD_QUANTITIES.add(v)
    return True
