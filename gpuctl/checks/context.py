"""What every pod check reads: the pod, its effective requests, its scheduler
events, and the per-node fit matrix, computed once and shared.

The fit matrix re-evaluates every node against the pod from the CURRENT state,
because events expire after an hour, are aggregated, and since Kubernetes 1.34 hide
the taint's key. Each node gets the list of finding codes that keep the pod off it;
a code that is a node's only reason is a fix that alone lets the pod run there.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from ..knowledge import catalog
from ..knowledge.state_taints import StateTaint, state_taint
from ..model.matching import (
    STATE_TAINTS, describe_requirement, near_label, near_miss, node_selector_mismatches,
    required_affinity_matches, taint_text, untolerated_taints,
)
from ..model.objects import Event, Node, Pod, Taint
from ..model.quantity import format_quantity, parse_quantity
from ..model.requests import is_extended, pod_requests
from ..model.snapshot import Snapshot, human_age  # noqa: F401 (checks import it from here)
from .device_plugin import DevicePluginState, device_plugin_state
from .interpod import InterPod
from .memo import Memo
from .scheduler_events import FitError, parse_fit_error

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


def gpu_vendor_prefix(resource: str) -> str:
    return resource.split("/", 1)[0] + "/" if "/" in resource else ""


def is_mig(resource: str) -> bool:
    return resource.startswith("nvidia.com/mig-")


def twin_of(resource: str) -> str:
    """nvidia.com/gpu <-> nvidia.com/gpu.shared (time-slicing/MPS renameByDefault)."""
    return resource[: -len(".shared")] if resource.endswith(".shared") else resource + ".shared"


def requests_read(path: tuple, resources: set[str]) -> bool:
    """Whether an unreadable field of a pod (its path) hides part of its requests
    of ``resources``: a container's or init container's resources (or the
    container, the list, the spec), or ``spec.overhead``."""
    if not path or path[0] != "spec":
        return False
    if len(path) == 1:
        return True
    if path[1] == "overhead":
        return len(path) == 2 or path[2] in resources
    if path[1] not in ("containers", "initContainers"):
        return False
    rest = path[3:]          # after spec.containers[i]
    if not rest:
        return True
    if rest[0] == "restartPolicy":
        return True
    if rest[0] != "resources":
        return False
    return len(rest) < 3 or rest[2] in resources


def node_fit_reads(path: tuple, resources: set[str], label_keys: set[str]) -> bool:
    """Whether an unreadable field of a node (its path) is one the fit of a pod
    requesting ``resources`` and selecting on ``label_keys`` reads."""
    if len(path) <= 1:
        return True
    head = path[:2]
    if head in (("spec", "taints"), ("spec", "unschedulable"), ("status", "conditions")):
        return True
    if head in (("status", "capacity"), ("status", "allocatable")):
        return len(path) == 2 or path[2] in resources
    if head == ("metadata", "labels"):
        return len(path) == 2 or path[2] in label_keys
    return False


def _num(value: object) -> float:
    try:
        return parse_quantity(value)
    except ValueError:
        return 0.0


@dataclass
class NodeFit:
    name: str
    reasons: list[str] = field(default_factory=list)
    details: dict[str, list[str]] = field(default_factory=dict)
    free: dict[str, float] = field(default_factory=dict)
    candidate: bool = False          # advertises a requested device resource (or the pod requests none)
    enough_devices: bool = False     # free >= request for every requested device resource
    gpu_node: bool = False           # physically has GPUs (advertised or by labels)
    taints: list[Taint] = field(default_factory=list)   # untolerated, non-state taints
    state_taints: list[tuple[Taint, StateTaint]] = field(default_factory=list)   # never tolerated: fix what set them

    def add(self, code: str, detail: str) -> None:
        if code not in self.reasons:
            self.reasons.append(code)
        self.details.setdefault(code, []).append(detail)

    @property
    def fits(self) -> bool:
        return not self.reasons

    def to_dict(self, requests: dict[str, float]) -> dict:
        return {
            "name": self.name,
            "fits": self.fits,
            "reasons": list(self.reasons),
            "details": [d for code in self.reasons for d in self.details.get(code, [])],
            "free": {r: (int(v) if v == int(v) else round(v, 3)) for r, v in self.free.items()
                     if r in requests and is_extended(r)},
        }


class PodContext:
    """Shared, lazily computed analysis of one pod against the snapshot."""

    def __init__(self, snap: Snapshot, pod: Pod, memo: Optional[Memo] = None):
        self.snap = snap
        self.pod = pod
        self.memo = memo if memo is not None else Memo()

    # ------------------------------------------------------------ the pod
    @property
    def ns(self) -> str:
        return self.pod.metadata.namespace or "default"

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def bound(self) -> bool:
        return bool(self.pod.spec.nodeName)

    @property
    def pending_unbound(self) -> bool:
        return not self.bound and self.pod.phase in ("Pending", "Unknown") and not self.pod.metadata.deletionTimestamp

    @cached_property
    def requests(self) -> dict[str, float]:
        """What the pod needs from a node: its effective requests, less the resources
        its own scheduler's extender accounts (HAMi's nvidia.com/gpumem with
        hami-scheduler), which no node advertises."""
        own = self.extender_placed
        return {r: q for r, q in self._all_requests.items() if r not in own} if own else self._all_requests

    @cached_property
    def _all_requests(self) -> dict[str, float]:
        return pod_requests(self.pod)

    @cached_property
    def extender_placed(self) -> set[str]:
        scheduler = self.pod.spec.schedulerName or "default-scheduler"
        return {r for r in self._all_requests if "/" in r and catalog.placing_scheduler(r) == scheduler}

    @cached_property
    def device_requests(self) -> dict[str, float]:
        return {r: q for r, q in self.requests.items() if is_extended(r)}

    @cached_property
    def gpu_requests(self) -> dict[str, float]:
        return {r: q for r, q in self.device_requests.items() if catalog.is_gpu_resource(r) or self._looks_gpu(r)}

    @staticmethod
    def _looks_gpu(resource: str) -> bool:
        name = resource.split("/", 1)[-1].lower()
        return "gpu" in name or name.startswith("mig-")

    @property
    def age_seconds(self) -> Optional[float]:
        return self.snap.age_seconds(self.pod.metadata.creationTimestamp)

    # ------------------------------------------------------------ events
    @cached_property
    def events(self) -> list[Event]:
        return self.snap.events_for("Pod", self.ns, self.name, self.pod.metadata.uid or None)

    @cached_property
    def scheduling_events(self) -> list[Event]:
        return [e for e in self.events if e.reason == "FailedScheduling"]

    @cached_property
    def fit_error(self) -> Optional[FitError]:
        """The scheduler's latest verdict: the PodScheduled condition (untruncated) if
        it carries a FitError, else the newest FailedScheduling event."""
        cond = self.pod.condition("PodScheduled")
        if cond is not None and cond.status == "False" and cond.message:
            fe = parse_fit_error(cond.message)
            if fe is not None:
                return fe
        for e in reversed(self.scheduling_events):
            fe = parse_fit_error(e.message or "")
            if fe is not None:
                return fe
        return None

    def event_line(self, e: Event) -> str:
        age = self.snap.age_seconds(e.last_seen)
        when = f", last {human_age(age)} ago" if age is not None else ""
        times = f" x{e.times}" if e.times > 1 else ""
        return f"event {e.reason}{times} from {e.component or 'unknown'}{when}: {e.message or ''}".strip()

    # ------------------------------------------------------------ the cluster
    @cached_property
    def nodes(self) -> list[Node]:
        return sorted(self.snap.nodes.values(), key=lambda n: n.metadata.name)

    @cached_property
    def pods_by_node(self) -> dict[str, list[Pod]]:
        """Non-terminated pods per node, without the pod itself (built once per snapshot)."""
        shared = self.memo.get("pods_by_node")
        if shared is None:
            shared = self.memo["pods_by_node"] = self.snap.pods_by_node()
        node, own = self.pod.spec.nodeName, self.pod.metadata.uid
        if node and own and any(p.metadata.uid == own for p in shared.get(node, [])):
            return {**shared, node: [p for p in shared[node] if p.metadata.uid != own]}
        return shared

    @cached_property
    def advertised_sets(self) -> dict[str, set[str]]:
        return {r: set(nodes) for r, nodes in self.advertised.items()}

    @cached_property
    def advertised(self) -> dict[str, list[str]]:
        """resource -> nodes with capacity or allocatable above zero."""
        out: dict[str, list[str]] = {}
        for n in self.nodes:
            for r in dict.fromkeys([*n.status.capacity, *n.status.allocatable]):
                if is_extended(r) and (_num(n.status.capacity.get(r, 0)) > 0 or _num(n.status.allocatable.get(r, 0)) > 0):
                    out.setdefault(r, []).append(n.metadata.name)
        return out

    @cached_property
    def device_plugins(self) -> DevicePluginState:
        """The device-plugin pods of the GPU nodes: the same for every pod of the snapshot (shared)."""
        state = self.memo.get("device-plugin-state")
        if state is None:
            state = self.memo["device-plugin-state"] = device_plugin_state(
                self.snap, [n for n in self.nodes if self.gpu_evidence(n) is not None])
        return state

    @cached_property
    def _evidence(self) -> dict[str, Optional[catalog.GpuEvidence]]:
        return {}

    def gpu_evidence(self, node: Node) -> Optional[catalog.GpuEvidence]:
        name = node.metadata.name
        if name not in self._evidence:
            self._evidence[name] = catalog.node_has_gpus(node.metadata.labels)
        return self._evidence[name]

    def advertises_vendor(self, node: Node, prefix: str) -> bool:
        for r in dict.fromkeys([*node.status.capacity, *node.status.allocatable]):
            if r.startswith(prefix) and catalog.is_gpu_resource(r) and (
                _num(node.status.capacity.get(r, 0)) > 0 or _num(node.status.allocatable.get(r, 0)) > 0
            ):
                return True
        return False

    def closest_resource(self, resource: str) -> Optional[str]:
        names = sorted(self.advertised)
        match = difflib.get_close_matches(resource, names, n=1, cutoff=0.6)
        return match[0] if match else None

    # ------------------------------------------------------------ unreadable objects
    @cached_property
    def uncertain_nodes(self) -> dict[str, list[str]]:
        """Nodes the fit matrix leaves out because something it would read there
        could not be: a field of the node itself (taints, conditions, a label the
        pod selects on, the amount of a resource it requests) or the request of a
        pod bound to it. node -> "Node x: field: problem" lines. Presenting such a
        node as one that fits (or not) would be a guess."""
        out: dict[str, list[str]] = {}
        entries = self.snap.unreadable(("Node", "Pod"))
        if not entries:
            return out
        wanted = set(self.requests) | {"pods"}
        keys = self._selector_keys()
        for u in entries:
            if not u.kept:
                continue
            if u.kind == "Node":
                if u.name in self.snap.nodes and node_fit_reads(u.path, wanted, keys):
                    out.setdefault(u.name, []).append(str(u))
                continue
            if u.namespace == self.pod.metadata.namespace and u.name == self.pod.metadata.name:
                continue   # the pod itself: see the engine
            p = self.snap.pods.get(f"{u.namespace}/{u.name}")
            node = p.spec.nodeName if p is not None else None
            if node and node in self.snap.nodes and not p.terminated and requests_read(u.path, wanted):
                out.setdefault(node, []).append(str(u))
        return out

    def _selector_keys(self) -> set[str]:
        spec = self.pod.spec
        keys = set(spec.nodeSelector)
        na = spec.affinity.nodeAffinity if spec.affinity else None
        req = na.requiredDuringSchedulingIgnoredDuringExecution if na else None
        for t in req.nodeSelectorTerms if req else []:
            keys |= {r.key for r in t.matchExpressions}
        return keys

    # ------------------------------------------------------------ the fit matrix
    @cached_property
    def fits(self) -> list[NodeFit]:
        """The fit matrix, shared by pods with the same scheduling constraints
        (nodes in ``uncertain_nodes`` are left out)."""
        key = self.fit_signature
        cached = self.memo.get(key) if key is not None else None
        if cached is None:
            skip = self.uncertain_nodes
            cached = [self._fit(n) for n in self.nodes if n.metadata.name not in skip]
            if key is not None:
                self.memo[key] = cached
        return cached

    @cached_property
    def fit_signature(self) -> Optional[tuple]:
        """What the fit matrix depends on: pods with the same scheduling constraints
        (and, where inter-pod rules apply, the same namespace and matched labels) share it;
        None (no sharing) for pods with required pod (anti-)affinity of their own,
        whose result depends on their own labels."""
        import msgspec

        spec = self.pod.spec
        aff = spec.affinity
        if aff and any(a and a.requiredDuringSchedulingIgnoredDuringExecution for a in (aff.podAffinity, aff.podAntiAffinity)):
            return None
        enc = msgspec.json.encode
        return (spec.nodeName, tuple(sorted(self.requests.items())), tuple(sorted(spec.nodeSelector.items())),
                enc(aff.nodeAffinity) if aff and aff.nodeAffinity else b"", enc(spec.tolerations), len(self.snap.nodes),
                self.interpod.signature)

    @cached_property
    def interpod(self) -> InterPod:
        """The pod's inter-pod rules (and the placed pods' anti-affinity) against the current pods."""
        return InterPod(self.pod, self.snap.nodes, self.pods_by_node, self.memo)

    @cached_property
    def fit_by_name(self) -> dict[str, NodeFit]:
        return {f.name: f for f in self.fits}

    def fit_on(self, node: Node) -> Optional[NodeFit]:
        """One node's fit alone, without the whole matrix (``diagnose node``); None
        for a node in ``uncertain_nodes``."""
        if "fits" in self.__dict__:
            return self.fit_by_name.get(node.metadata.name)
        if node.metadata.name in self.uncertain_nodes:
            return None
        return self._fit(node)

    def _fit(self, node: Node) -> NodeFit:
        pod, name = self.pod, node.metadata.name
        fit = NodeFit(name)
        devices = self.device_requests
        adv = self.advertised_sets
        fit.candidate = not devices or any(name in adv.get(r, ()) for r in devices)
        fit.gpu_node = self.gpu_evidence(node) is not None or any(
            name in nodes and catalog.is_gpu_resource(r) for r, nodes in adv.items())

        # Readiness and Kubernetes' own state taints.
        ready = node.condition("Ready")
        if ready is None or ready.status != "True":
            state = f"Ready={ready.status if ready else 'missing'}"
            if ready is not None and (ready.reason or ready.message):
                state += f" ({ready.reason or ''}{': ' if ready.reason and ready.message else ''}{ready.message or ''})"
            fit.add("node-not-ready", f"node/{name} {state}")
        for t in untolerated_taints(node, pod.spec.tolerations):
            code = STATE_TAINTS.get(t.key)
            state = state_taint(t.key) if code is None else None
            if state is not None:
                fit.state_taints.append((t, state))
                fit.add(state.code, f"node/{name} taint {taint_text(t)}: set by {state.set_by}")
            elif code is None:
                fit.taints.append(t)
                fit.add("untolerated-taint", f"node/{name} taint {taint_text(t)}")
            elif code != "node-unschedulable":
                fit.add(code, f"node/{name} taint {taint_text(t)}")
        if node.spec.unschedulable and not any(
            (tol.operator == "Exists" and not tol.key) or tol.key == "node.kubernetes.io/unschedulable"
            for tol in pod.spec.tolerations
        ):
            fit.add("node-unschedulable", f"node/{name} is cordoned (spec.unschedulable=true)")

        # Placement constraints.
        miss = node_selector_mismatches(pod.spec.nodeSelector, node)
        for k, have in miss.items():
            want = pod.spec.nodeSelector[k]
            why = near_miss(want, have) if have is not None else None
            near = near_label(k, None, node.metadata.labels) if have is None else None
            fit.add("node-selector-mismatch",
                    f"node/{name} label {k}={have}" + (f", which differs from the wanted {want} {why} (near miss)" if why else "")
                    if have is not None else f"node/{name} has no label {k}" + (f" (near miss: it {near})" if near else ""))
        na = pod.spec.affinity.nodeAffinity if pod.spec.affinity else None
        req = na.requiredDuringSchedulingIgnoredDuringExecution if na else None
        if req is not None and not required_affinity_matches(req.nodeSelectorTerms, node):
            terms = "; or ".join(" and ".join(describe_requirement(r) for r in t.matchExpressions + t.matchFields)
                                 for t in req.nodeSelectorTerms) or "no terms"
            near = _affinity_near_miss(req.nodeSelectorTerms, node)
            fit.add("node-affinity-mismatch", f"node/{name} does not satisfy required node affinity: {terms}"
                    + (f" (near miss: it {near})" if near else ""))
        for why in self.interpod.reasons(node):
            fit.add("pod-topology-constraint", why)

        # Resources.
        if fit.candidate:
            self._fit_resources(node, fit)
        else:
            for r in devices:
                fit.add(self._not_advertised_code(node, r), f"node/{name} does not advertise {r}")
        fit.enough_devices = all(fit.free.get(r, 0) >= q for r, q in devices.items())
        return fit

    def _not_advertised_code(self, node: Node, r: str) -> str:
        prefix = gpu_vendor_prefix(r)
        adv = self.advertised_sets
        if node.metadata.name in adv.get(twin_of(r), ()):
            return "sharing-resource-mismatch"
        if is_mig(r) or (r == "nvidia.com/gpu" and any(is_mig(x) and node.metadata.name in ns for x, ns in adv.items())):
            return "mig-profile-unavailable"
        ev = self.gpu_evidence(node)
        if r in self.gpu_requests and ev is not None and prefix in ("nvidia.com/", "") and not self.advertises_vendor(node, "nvidia.com/"):
            dp = self.device_plugins.for_node(node.metadata.name)
            return "nvml-init-failed" if dp.nvml_failed else "device-plugin-not-running"
        if not self.advertised.get(r):
            return "unknown-resource-name"
        return "insufficient-gpu" if r in self.gpu_requests else "insufficient-resource"

    def _fit_resources(self, node: Node, fit: NodeFit) -> None:
        name = node.metadata.name
        pods = self.pods_by_node.get(name, [])
        resources = tuple(sorted(self.requests))
        own_excluded = self.pods_by_node is not self.memo.get("pods_by_node")
        key = ("used", name, resources)
        used = None if own_excluded else self.memo.get(key)
        if used is None:
            used = used_by(pods, resources)
            if not own_excluded:
                self.memo[key] = used
        for r, q in list(self.requests.items()) + [("pods", 1.0)]:
            cap = _num(node.status.capacity.get(r, 0))
            alloc = _num(node.status.allocatable.get(r, cap if r not in node.status.allocatable else 0))
            free = max(0.0, alloc - used.get(r, 0.0))
            fit.free[r] = free
            if free >= q:
                continue
            have = f"{format_quantity(r, free)} of {format_quantity(r, alloc)} free, pod needs {format_quantity(r, q)}"
            if is_extended(r):
                if cap == 0 and alloc == 0:
                    fit.add(self._not_advertised_code(node, r), f"node/{name} does not advertise {r}")
                    continue
                unhealthy = max(0.0, cap - alloc)
                if unhealthy and free + unhealthy >= q:
                    fit.add("gpu-unhealthy", f"node/{name} {r}: {have}; {format_quantity(r, unhealthy)} unhealthy (capacity {format_quantity(r, cap)}, allocatable {format_quantity(r, alloc)})")
                elif is_mig(r):
                    fit.add("mig-profile-unavailable", f"node/{name} {r}: {have}")
                elif r in self.gpu_requests:
                    fit.add("insufficient-gpu", f"node/{name} {r}: {have}")
                else:
                    fit.add("insufficient-resource", f"node/{name} {r}: {have}")
            elif r == "cpu":
                fit.add("insufficient-cpu", f"node/{name} cpu: {have}")
            elif r == "memory":
                fit.add("insufficient-memory", f"node/{name} memory: {have}")
            elif r == "pods":
                fit.add("insufficient-resource", f"node/{name} pods: {int(used['pods'])} of {int(alloc)} pod slots used")
            else:
                fit.add("insufficient-resource", f"node/{name} {r}: {have}")


def _affinity_near_miss(terms: list, node: Node) -> Optional[str]:
    """A node label that nearly satisfies an ``In`` (or ``Exists``) requirement of the
    pod's required node affinity: a value or key that differs only by case, punctuation
    or a suffix."""
    labels = node.metadata.labels
    for t in terms:
        for r in t.matchExpressions:
            if r.operator == "In" and labels.get(r.key) not in r.values:
                for w in r.values:
                    near = near_label(r.key, w, labels)
                    if near:
                        return near
            elif r.operator == "Exists" and r.key not in labels:
                near = near_label(r.key, None, labels)
                if near:
                    return near
    return None


def used_by(pods: list, resources: tuple[str, ...]) -> dict[str, float]:
    """What these pods request of the given resources (effective requests), plus
    their count under "pods". The common pod (no init containers, no overhead) is
    summed directly, only for the resources asked about: this runs over every pod
    bound to every candidate node."""
    used = dict.fromkeys(resources, 0.0)
    for p in pods:
        spec = p.spec
        if spec.initContainers or spec.overhead:
            full = pod_requests(p)
            for r in resources:
                used[r] += full.get(r, 0.0)
            continue
        for c in spec.containers:
            req, lim = c.resources.requests, c.resources.limits
            for r in resources:
                v = req.get(r)
                if v is None:
                    v = lim.get(r)
                if v is not None:
                    used[r] += _num(v)
    used["pods"] = float(len(pods))
    return used
