"""What every pod check reads: the pod, its effective requests, its scheduler
events, and the per-node fit matrix, computed once and shared.

The fit matrix re-evaluates every node against the pod from the CURRENT state,
because events expire after an hour, are aggregated, and since Kubernetes 1.34 hide
the taint's key. Each node gets the list of finding codes that keep the pod off it;
a code that is a node's only reason is a fix that alone lets the pod run there.
"""

from __future__ import annotations

import difflib
from typing import Optional

from ..knowledge import catalog
from ..knowledge.state_taints import StateTaint, state_taint
from ..model.matching import (
    SCHEDULING_EFFECTS, STATE_TAINTS, describe_requirement, near_label, near_miss, node_selector_mismatches,
    required_affinity_matches, taint_text, tolerates,
)
from ..model.objects import Event, Node, Pod, Taint
from ..model.quantity import format_quantity, parse_quantity
from ..model.requests import is_extended, pod_requests
from ..model.snapshot import Snapshot, human_age  # noqa: F401 (checks import it from here)
from .device_plugin import DevicePluginState, device_plugin_state
from .interpod import InterPod
from .memo import Memo, lazy
from .scheduler_events import FitError, parse_fit_error

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")

# The fit matrix's shortcuts: per-node facts, free amounts and snapshot-wide indexes
# shared by every pod of a memo, detail lines written when read, remembered
# quantities and tolerations, inter-pod rules skipped when there are none, node-fit
# findings copied without deepcopy; each node's placement shared by the pod classes
# with the same constraints and the matrix built from it row by row (_matrix), and
# node-fit's pool of free devices with it; bound pods' requests summed per shared
# containers list (used_by); a pod's requests, CUDA requirement and encoded
# tolerations once per shared part of its record; CUDA verdicts per node. False: each
# computed where it is used, as straightforwardly as before
# (tests/test_report_equivalence.py compares the two).
FAST_PATHS = True


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


_FORMATTED: dict[tuple[str, float], str] = {}


def _fmt(resource: str, value: float) -> str:
    """``format_quantity``, remembered: the fit matrix formats the same few amounts
    (free GPUs, a node type's allocatable) hundreds of thousands of times. Equal
    values format alike whatever their type, so (resource, value) is the whole key."""
    if not FAST_PATHS:
        return format_quantity(resource, value)
    key = (resource, value)
    text = _FORMATTED.get(key)
    if text is None:
        text = format_quantity(resource, value)
        if len(_FORMATTED) < 65536:
            _FORMATTED[key] = text
    return text


class NodeFacts:
    """What the fit of ANY pod reads of one node: its readiness line, its taints that
    affect scheduling (with their finding code), whether it is cordoned, its labels,
    its GPU evidence and its amounts of each resource. Computed once per node and memo
    (``PodContext.facts``) instead of once per node and pod: each fit matrix then only
    decides what depends on the pod."""

    __slots__ = ("node", "name", "labels", "not_ready", "taints", "cordoned", "evidence", "_amounts", "free_rows",
                 "placements")

    def __init__(self, node: Node) -> None:
        self.node = node
        name = self.name = node.metadata.name
        self.labels = node.metadata.labels
        self.cordoned = bool(node.spec.unschedulable)
        ready = node.condition("Ready")
        self.not_ready: Optional[str] = None
        if ready is None or ready.status != "True":
            state = f"Ready={ready.status if ready else 'missing'}"
            if ready is not None and (ready.reason or ready.message):
                state += f" ({ready.reason or ''}{': ' if ready.reason and ready.message else ''}{ready.message or ''})"
            self.not_ready = f"node/{name} {state}"
        # in the node's order, as untolerated_taints sees them
        # (taint, STATE_TAINTS code, state taint, (key, value, effect): all a toleration reads of it)
        self.taints: tuple = tuple((t, STATE_TAINTS.get(t.key), state_taint(t.key) if t.key not in STATE_TAINTS else None,
                                    (t.key, t.value, t.effect))
                                   for t in node.spec.taints if t.effect in SCHEDULING_EFFECTS)
        self.evidence = catalog.node_has_gpus(self.labels)
        self._amounts: dict[str, tuple[float, float]] = {}
        # resource names in a pod's request order -> ({resource: free}, [(resource, capacity,
        # allocatable, free)]): what the node has for pods requesting those resources, given
        # the memo's pods per node (PodContext._free_rows)
        self.free_rows: dict[tuple[str, ...], tuple[dict[str, float], list[tuple[str, float, float, float]]]] = {}
        # a pod's placement key (PodContext._placement_key) -> the node's fit before resources
        # (PodContext._placement): the same for every pod class with those constraints
        self.placements: dict[tuple, NodeFit] = {}

    def amounts(self, r: str) -> tuple[float, float]:
        """(capacity, allocatable) of ``r``; allocatable defaults to capacity when absent."""
        got = self._amounts.get(r)
        if got is None:
            status = self.node.status
            cap = _num(status.capacity.get(r, 0))
            alloc = _num(status.allocatable.get(r, cap if r not in status.allocatable else 0))
            got = self._amounts[r] = (cap, alloc)
        return got


def own_pod_affinity(pod: Pod) -> bool:
    """The pod has required pod affinity or anti-affinity of its own: where it fits
    depends on its own labels, so it shares its fit with no other pod."""
    aff = pod.spec.affinity
    return bool(aff and any(a and a.requiredDuringSchedulingIgnoredDuringExecution
                            for a in (aff.podAffinity, aff.podAntiAffinity)))


class NodeFit:
    """One node against one pod: the codes that keep the pod off it (in the order
    found), a detail line per code, the free amounts of what it requests.

    A fit matrix has a row per node and pod class (5,000 x dozens on a large
    cluster), and the report reads the detail lines of a few rows only: a line can be
    added as a renderer and its arguments (``add_later``), written out the first time
    ``details`` is read, in the order the lines were added."""

    __slots__ = ("name", "reasons", "_lines", "_details", "free", "candidate", "enough_devices", "gpu_node",
                 "taints", "state_taints")

    def __init__(self, name: str, reasons: Optional[list[str]] = None, details: Optional[dict[str, list[str]]] = None,
                 free: Optional[dict[str, float]] = None, candidate: bool = False, enough_devices: bool = False,
                 gpu_node: bool = False, taints: Optional[list[Taint]] = None,
                 state_taints: Optional[list[tuple[Taint, StateTaint]]] = None) -> None:
        self.name = name
        self.reasons: list[str] = reasons if reasons is not None else []
        self._lines: list[tuple] = []                  # (code, text) or (code, renderer, args), not yet in _details
        self._details: dict[str, list[str]] = details if details is not None else {}
        self.free: dict[str, float] = free if free is not None else {}
        self.candidate = candidate                      # advertises a requested device resource (or the pod requests none)
        self.enough_devices = enough_devices            # free >= request for every requested device resource
        self.gpu_node = gpu_node                        # physically has GPUs (advertised or by labels)
        self.taints: list[Taint] = taints if taints is not None else []   # untolerated, non-state taints
        # never tolerated: fix what set them
        self.state_taints: list[tuple[Taint, StateTaint]] = state_taints if state_taints is not None else []

    def add(self, code: str, detail: str) -> None:
        if code not in self.reasons:
            self.reasons.append(code)
        self._line((code, detail))

    def add_later(self, code: str, render, *args) -> None:
        """``add(code, render(*args))``, the line written only when read."""
        if not FAST_PATHS:
            return self.add(code, render(*args))
        if code not in self.reasons:
            self.reasons.append(code)
        self._line((code, render, args))

    def _line(self, line: tuple) -> None:
        lines = self._lines
        if type(lines) is tuple:   # as the fit matrix's shortcut leaves them (PodContext._matrix)
            lines = self._lines = list(lines)
        lines.append(line)

    @property
    def details(self) -> dict[str, list[str]]:
        if self._details is None:   # none yet (PodContext._matrix)
            self._details = {}
        if self._lines:
            details = self._details
            for line in self._lines:
                if line[0] is None:   # several lines at once: (None, writer of (code, line) pairs, args)
                    for code, text in line[1](*line[2]):
                        details.setdefault(code, []).append(text)
                else:
                    details.setdefault(line[0], []).append(line[1] if len(line) == 2 else line[1](*line[2]))
            self._lines = []
        return self._details

    @property
    def fits(self) -> bool:
        return not self.reasons

    def _fields(self) -> tuple:
        return (self.name, self.reasons, self.details, self.free, self.candidate, self.enough_devices, self.gpu_node,
                self.taints, self.state_taints)

    def __eq__(self, other: object) -> bool:   # as the dataclass it was: field by field
        return self._fields() == other._fields() if isinstance(other, NodeFit) else NotImplemented

    __hash__ = None   # type: ignore[assignment]  (mutable, like the dataclass)

    def __repr__(self) -> str:
        return ("NodeFit(name={!r}, reasons={!r}, details={!r}, free={!r}, candidate={!r}, enough_devices={!r}, "
                "gpu_node={!r}, taints={!r}, state_taints={!r})").format(*self._fields())

    def to_dict(self, requests: dict[str, float]) -> dict:
        details = self.details
        return {
            "name": self.name,
            "fits": self.fits,
            "reasons": list(self.reasons),
            "details": [d for code in self.reasons for d in details.get(code, [])],
            "free": {r: (int(v) if v == int(v) else round(v, 3)) for r, v in self.free.items()
                     if r in requests and is_extended(r)},
        }


def _short_line(name: str, r: str, free: float, alloc: float, q: float) -> str:
    return f"node/{name} {r}: {_fmt(r, free)} of {_fmt(r, alloc)} free, pod needs {_fmt(r, q)}"


def _short_lines(name: str, rows: list, amounts: tuple[float, ...], codes: tuple[tuple[str, int], ...]):
    """(code, line) for each row of a node the pod needs more of than is free, in row
    order, as ``_fit_resources`` writes them when each is a plain shortfall (``_matrix``)."""
    for (r, _, alloc, free), q, (code, _) in zip(rows, amounts, codes):
        if free < q:
            yield code, _short_line(name, r, free, alloc, q)


def _unhealthy_line(name: str, r: str, free: float, alloc: float, q: float, unhealthy: float, cap: float) -> str:
    return (f"{_short_line(name, r, free, alloc, q)}; {_fmt(r, unhealthy)} unhealthy (capacity {_fmt(r, cap)}, "
            f"allocatable {_fmt(r, alloc)})")


def _request_views(every: dict[str, float], scheduler: str
                   ) -> tuple[set[str], dict[str, float], dict[str, float], dict[str, float]]:
    """(extender_placed, requests, device_requests, gpu_requests) of a pod whose
    effective requests are ``every`` and whose scheduler is ``scheduler``."""
    own = {r for r in every if "/" in r and catalog.placing_scheduler(r) == scheduler}
    requests = {r: q for r, q in every.items() if r not in own} if own else every
    devices = {r: q for r, q in requests.items() if is_extended(r)}
    gpus = {r: q for r, q in devices.items() if catalog.is_gpu_resource(r) or PodContext._looks_gpu(r)}
    return own, requests, devices, gpus


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

    @lazy
    def bound(self) -> bool:
        return bool(self.pod.spec.nodeName)

    @lazy
    def pending_unbound(self) -> bool:
        return not self.bound and self.pod.phase in ("Pending", "Unknown") and not self.pod.metadata.deletionTimestamp

    @lazy
    def requests(self) -> dict[str, float]:
        """What the pod needs from a node: its effective requests, less the resources
        its own scheduler's extender accounts (HAMi's nvidia.com/gpumem with
        hami-scheduler), which no node advertises."""
        return self._request_views[1]

    @lazy
    def _all_requests(self) -> dict[str, float]:
        """The pod's effective requests; computed once per pod and memo (a report
        makes several contexts of one pod), kept with the pod record they came from;
        and once per containers list where the pod has no overhead: the pods of one
        workload share their containers and init containers lists (the reader shares
        identical parts of records), and nothing else of the pod counts then."""
        if not FAST_PATHS:
            return pod_requests(self.pod)
        spec = self.pod.spec
        if not spec.overhead:
            containers, init = spec.containers, spec.initContainers
            key = ("pod-requests-of", id(containers), id(init))
            got = self.memo.get(key)
            if got is None or got[0] is not containers or got[1] is not init:
                got = self.memo[key] = (containers, init, pod_requests(self.pod))
            return got[2]
        key = ("pod-requests", self.pod.key)
        got = self.memo.get(key)
        if got is None or got[0] is not self.pod:
            got = self.memo[key] = (self.pod, pod_requests(self.pod))
        return got[1]

    @lazy
    def _request_views(self) -> tuple[set[str], dict[str, float], dict[str, float], dict[str, float]]:
        """(extender_placed, requests, device_requests, gpu_requests): functions of the
        effective requests and the scheduler's name, shared by the memo's contexts whose
        requests are the same dict (``_all_requests``)."""
        every = self._all_requests
        scheduler = self.pod.spec.schedulerName or "default-scheduler"
        if not FAST_PATHS:
            return _request_views(every, scheduler)
        return self._by_object(("request-views", scheduler), every, lambda e: _request_views(e, scheduler))

    @lazy
    def extender_placed(self) -> set[str]:
        return self._request_views[0]

    @lazy
    def device_requests(self) -> dict[str, float]:
        return self._request_views[2]

    @lazy
    def gpu_requests(self) -> dict[str, float]:
        return self._request_views[3]

    @staticmethod
    def _looks_gpu(resource: str) -> bool:
        name = resource.split("/", 1)[-1].lower()
        return "gpu" in name or name.startswith("mig-")

    @property
    def age_seconds(self) -> Optional[float]:
        return self.snap.age_seconds(self.pod.metadata.creationTimestamp)

    # ------------------------------------------------------------ events
    @lazy
    def events(self) -> list[Event]:
        return self.snap.events_for("Pod", self.ns, self.name, self.pod.metadata.uid or None)

    @lazy
    def scheduling_events(self) -> list[Event]:
        return [e for e in self.events if e.reason == "FailedScheduling"]

    @lazy
    def fit_error(self) -> Optional[FitError]:
        """The scheduler's latest verdict: the PodScheduled condition (untruncated) if
        it carries a FitError, else the newest FailedScheduling event."""
        cond = self.pod.condition("PodScheduled")
        if cond is not None and cond.status == "False" and cond.message:
            fe = self._parse_fit_error(cond.message)
            if fe is not None:
                return fe
        for e in reversed(self.scheduling_events):
            fe = self._parse_fit_error(e.message or "")
            if fe is not None:
                return fe
        return None

    def _parse_fit_error(self, message: str) -> Optional[FitError]:
        """``parse_fit_error``, once per message and memo: the Pending pods of one
        workload carry the same message, and nothing changes a parsed FitError."""
        if not FAST_PATHS:
            return parse_fit_error(message)
        key = ("fit-error", message)
        if key in self.memo:
            return self.memo[key]
        fe = self.memo[key] = parse_fit_error(message)
        return fe

    def event_line(self, e: Event) -> str:
        age = self.snap.age_seconds(e.last_seen)
        when = f", last {human_age(age)} ago" if age is not None else ""
        times = f" x{e.times}" if e.times > 1 else ""
        return f"event {e.reason}{times} from {e.component or 'unknown'}{when}: {e.message or ''}".strip()

    # ------------------------------------------------------------ the cluster
    @lazy
    def nodes(self) -> list[Node]:
        return self._shared("nodes", lambda: sorted(self.snap.nodes.values(), key=lambda n: n.metadata.name))

    def _shared(self, key: str, compute):
        """A value that depends on the snapshot only, shared by every context of the
        memo; recomputed if the memo meets another snapshot (kept with the snapshot
        it was computed from)."""
        if not FAST_PATHS:
            return compute()
        got = self.memo.get(("snapshot-fact", key))
        if got is None or got[0] is not self.snap:
            got = self.memo[("snapshot-fact", key)] = (self.snap, compute())
        return got[1]

    def facts(self, node: Node) -> NodeFacts:
        """The pod-independent facts of ``node``, computed once per memo (and node
        record: a node replaced in the snapshot gets new ones)."""
        if not FAST_PATHS:
            return NodeFacts(node)
        table = self.memo.get("node-facts")
        if table is None:
            table = self.memo["node-facts"] = {}
        f = table.get(node.metadata.name)
        if f is None or f.node is not node:
            f = table[node.metadata.name] = NodeFacts(node)
        return f

    @lazy
    def pods_by_node(self) -> dict[str, list[Pod]]:
        """Non-terminated pods per node, without the pod itself (built once per snapshot)."""
        shared = self.memo.get("pods_by_node")
        if shared is None:
            shared = self.memo["pods_by_node"] = self.snap.pods_by_node()
        node, own = self.pod.spec.nodeName, self.pod.metadata.uid
        if node and own and any(p.metadata.uid == own for p in shared.get(node, [])):
            return {**shared, node: [p for p in shared[node] if p.metadata.uid != own]}
        return shared

    @lazy
    def advertised_sets(self) -> dict[str, set[str]]:
        return self._shared("advertised-sets", lambda: {r: set(nodes) for r, nodes in self.advertised.items()})

    @lazy
    def advertised(self) -> dict[str, list[str]]:
        """resource -> nodes with capacity or allocatable above zero (the same for every
        pod of the snapshot: shared through the memo; callers do not change it)."""
        return self._shared("advertised", self._advertised)

    def _advertised(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for n in self.nodes:
            for r in dict.fromkeys([*n.status.capacity, *n.status.allocatable]):
                if is_extended(r) and (_num(n.status.capacity.get(r, 0)) > 0 or _num(n.status.allocatable.get(r, 0)) > 0):
                    out.setdefault(r, []).append(n.metadata.name)
        return out

    @lazy
    def _gpu_advertisers(self) -> set[str]:
        """The nodes that advertise some GPU resource."""
        return self._shared("gpu-advertisers", lambda: {
            n for r, nodes in self.advertised_sets.items() if catalog.is_gpu_resource(r) for n in nodes})

    @lazy
    def device_plugins(self) -> DevicePluginState:
        """The device-plugin pods of the GPU nodes: the same for every pod of the snapshot (shared)."""
        state = self.memo.get("device-plugin-state")
        if state is None:
            state = self.memo["device-plugin-state"] = device_plugin_state(
                self.snap, [n for n in self.nodes if self.gpu_evidence(n) is not None])
        return state

    def device_plugins_of(self, names: list[str]) -> DevicePluginState:
        """``device_plugins`` for a few nodes: what ``for_node`` gives for them is the
        same (a node's entry depends only on that node, and a node without GPU
        evidence gets none in either), without reading the labels of every pod on every
        GPU node when the report needs a handful (the whole state when it is known)."""
        whole = self.memo.get("device-plugin-state")
        if whole is not None or not FAST_PATHS:
            return self.device_plugins
        key = ("device-plugin-state-of", frozenset(names))
        state = self.memo.get(key)
        if state is None:
            nodes = [self.snap.nodes[n] for n in sorted(set(names)) if n in self.snap.nodes]
            self.pods_by_node   # the snapshot's pods per node, in the memo
            state = self.memo[key] = device_plugin_state(self.snap, [n for n in nodes if self.gpu_evidence(n) is not None],
                                                         self.memo.get("pods_by_node"))
        return state

    def gpu_evidence(self, node: Node) -> Optional[catalog.GpuEvidence]:
        return self.facts(node).evidence

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
    @lazy
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
    @lazy
    def fits(self) -> list[NodeFit]:
        """The fit matrix, shared by pods with the same scheduling constraints
        (nodes in ``uncertain_nodes`` are left out)."""
        key = self.fit_signature
        cached = self.memo.get(key) if key is not None else None
        if cached is None:
            skip = self.uncertain_nodes
            nodes = [n for n in self.nodes if n.metadata.name not in skip] if skip else self.nodes
            cached = self._matrix(nodes) if self._matrix_shortcut else [self._fit(n) for n in nodes]
            if key is not None:
                self.memo[key] = cached
        return cached

    def prepare_fits(self) -> None:
        """Compute now, in the memo, what every pod class with this pod's placement and
        resource order shares when its fit matrix is built: each node's placement and
        free rows (``_prepared``). A report that then hands classes to forked copies of
        this process (reports/pending.py) does this once, before the fork, instead of
        once in each copy. Nothing to do where the matrix is built node by node."""
        if self._matrix_shortcut and not self.uncertain_nodes:
            self._prepared(self.nodes)

    @lazy
    def fit_signature(self) -> Optional[tuple]:
        """What the fit matrix depends on: pods with the same scheduling constraints
        (and, where inter-pod rules apply, the same namespace and matched labels) share it;
        None (no sharing) for pods with required pod (anti-)affinity of their own,
        whose result depends on their own labels."""
        import msgspec

        if own_pod_affinity(self.pod):
            return None
        spec = self.pod.spec
        aff = spec.affinity
        if not FAST_PATHS:
            enc = msgspec.json.encode
            return (spec.nodeName, tuple(sorted(self.requests.items())), tuple(sorted(spec.nodeSelector.items())),
                    enc(aff.nodeAffinity) if aff and aff.nodeAffinity else b"", enc(spec.tolerations),
                    len(self.snap.nodes), self.interpod.signature)
        return (spec.nodeName, self._by_object("sorted-items", self.requests, lambda d: tuple(sorted(d.items()))),
                tuple(sorted(spec.nodeSelector.items())) if spec.nodeSelector else (),
                self._encoded(aff.nodeAffinity) if aff and aff.nodeAffinity else b"", self._encoded(spec.tolerations),
                len(self.snap.nodes), self.interpod.signature)

    def _by_object(self, what: object, obj: object, compute):
        """``compute(obj)``, once per object and memo: for parts of pod records that the
        pods of one workload share (the reader shares identical parts of records), and
        that nothing changes. Kept with the object, so its id is not reused meanwhile."""
        key = (what, id(obj))
        got = self.memo.get(key)
        if got is None or got[0] is not obj:
            got = self.memo[key] = (obj, compute(obj))
        return got[1]

    def _encoded(self, obj: object) -> bytes:
        """``msgspec.json.encode(obj)``, once per object and memo (``_by_object``)."""
        import msgspec

        if not FAST_PATHS:
            return msgspec.json.encode(obj)
        return self._by_object("encoded", obj, msgspec.json.encode)

    @lazy
    def interpod(self) -> InterPod:
        """The pod's inter-pod rules (and the placed pods' anti-affinity) against the current pods."""
        return InterPod(self.pod, self.snap.nodes, self.pods_by_node, self.memo)

    @lazy
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

    # What the fit of every node reads of the pod, decided once per context.
    @lazy
    def _cordon_tolerated(self) -> bool:
        return any((tol.operator == "Exists" and not tol.key) or tol.key == "node.kubernetes.io/unschedulable"
                   for tol in self.pod.spec.tolerations)

    @lazy
    def _required_affinity(self):
        na = self.pod.spec.affinity.nodeAffinity if self.pod.spec.affinity else None
        return na.requiredDuringSchedulingIgnoredDuringExecution if na else None

    @lazy
    def _tolerated(self) -> dict[tuple, bool]:
        """(taint key, value, effect) -> whether the pod tolerates it (all a toleration reads of a taint)."""
        return {}

    def _tolerates(self, t: Taint) -> bool:
        if not FAST_PATHS:
            return any(tolerates(tol, t) for tol in self.pod.spec.tolerations)
        k = (t.key, t.value, t.effect)
        ok = self._tolerated.get(k)
        if ok is None:
            ok = self._tolerated[k] = any(tolerates(tol, t) for tol in self.pod.spec.tolerations)
        return ok

    @lazy
    def _resource_rows(self) -> list[tuple[str, float]]:
        return list(self.requests.items()) + [("pods", 1.0)]

    def _fit(self, node: Node) -> NodeFit:
        table = self._facts_table
        facts = table.get(node.metadata.name) if table is not None else None
        if facts is None or facts.node is not node:
            facts = self.facts(node)
        fit = NodeFit(facts.name)
        self._place(node, facts, fit)
        self._fit_rest(node, facts, fit)
        return fit

    def _place(self, node: Node, facts: NodeFacts, fit: NodeFit) -> None:
        """The node against what the pod asks of its placement, before resources: whether it
        advertises a requested device, readiness, taints, cordon, node selector and affinity,
        inter-pod rules."""
        pod = self.pod
        name = facts.name
        devices = self.device_requests
        if devices:
            for nodes in self._device_advertisers:
                if name in nodes:
                    fit.candidate = True
                    break
        else:
            fit.candidate = True
        fit.gpu_node = facts.evidence is not None or name in self._gpu_advertisers

        # Readiness and Kubernetes' own state taints.
        if facts.not_ready is not None:
            fit.add("node-not-ready", facts.not_ready)
        tolerated = self._tolerated
        for t, code, state, key in facts.taints:
            ok = tolerated.get(key) if FAST_PATHS else None
            if ok is None:
                ok = self._tolerates(t)
            if ok:
                continue
            if state is not None:
                fit.state_taints.append((t, state))
                fit.add(state.code, f"node/{name} taint {taint_text(t)}: set by {state.set_by}")
            elif code is None:
                fit.taints.append(t)
                fit.add("untolerated-taint", f"node/{name} taint {taint_text(t)}")
            elif code != "node-unschedulable":
                fit.add(code, f"node/{name} taint {taint_text(t)}")
        if facts.cordoned and not self._cordon_tolerated:
            fit.add("node-unschedulable", f"node/{name} is cordoned (spec.unschedulable=true)")

        # Placement constraints.
        selector = pod.spec.nodeSelector
        if selector:
            miss = node_selector_mismatches(selector, node)
            for k, have in miss.items():
                want = selector[k]
                why = near_miss(want, have) if have is not None else None
                near = near_label(k, None, node.metadata.labels) if have is None else None
                fit.add("node-selector-mismatch",
                        f"node/{name} label {k}={have}" + (f", which differs from the wanted {want} {why} (near miss)" if why else "")
                        if have is not None else f"node/{name} has no label {k}" + (f" (near miss: it {near})" if near else ""))
        req = self._required_affinity
        if req is not None and not required_affinity_matches(req.nodeSelectorTerms, node):
            terms = "; or ".join(" and ".join(describe_requirement(r) for r in t.matchExpressions + t.matchFields)
                                 for t in req.nodeSelectorTerms) or "no terms"
            near = _affinity_near_miss(req.nodeSelectorTerms, node)
            fit.add("node-affinity-mismatch", f"node/{name} does not satisfy required node affinity: {terms}"
                    + (f" (near miss: it {near})" if near else ""))
        if not self._interpod_idle:
            for why in self.interpod.reasons(node):
                fit.add("pod-topology-constraint", why)

    def _fit_rest(self, node: Node, facts: NodeFacts, fit: NodeFit) -> None:
        """Resources, after ``_place``: the node's free amounts against the requests."""
        if fit.candidate:
            self._fit_resources(node, fit, facts)
        else:
            for r in self.device_requests:
                fit.add(self._not_advertised_code(node, r), f"node/{facts.name} does not advertise {r}")
        free = fit.free
        enough = True
        for r, q in self.device_requests.items():
            if free.get(r, 0) < q:
                enough = False
                break
        fit.enough_devices = enough

    # ------------------------------------------------------------ the fit matrix, shortcut
    @lazy
    def _matrix_shortcut(self) -> bool:
        """Whether ``_matrix`` may build the fit matrix: the shortcuts are on, the nodes'
        free rows are shared, and no inter-pod rule applies (those read the node's pods
        against this pod's labels: each node then goes through ``_fit``)."""
        return FAST_PATHS and self._rows_shared and self._interpod_idle

    @lazy
    def _placement_key(self) -> tuple:
        """All ``_place`` reads of the pod when no inter-pod rule applies: the requested
        device resources (in order), the tolerations, the node selector (in its order:
        the order of the mismatch lines) and the node affinity. Pods with the same key
        get the same placement on every node, whatever they request."""
        spec = self.pod.spec
        aff = spec.affinity
        return (tuple(self.device_requests), self._encoded(spec.tolerations), tuple(spec.nodeSelector.items()),
                self._encoded(aff.nodeAffinity) if aff and aff.nodeAffinity else b"")

    def _placement(self, node: Node, facts: NodeFacts) -> NodeFit:
        """``_place`` of the node, once per node and placement key (kept in the node's
        facts). The result is a template: never handed out, only copied."""
        key = self._placement_key
        tpl = facts.placements.get(key)
        if tpl is None:
            tpl = facts.placements[key] = NodeFit(facts.name)
            self._place(node, facts, tpl)
        return tpl

    @lazy
    def _row_codes(self) -> tuple[tuple[str, int], ...]:
        """Per row of ``_resource_order``: (the code of a shortfall written as a short line,
        as ``_fit_resources`` chooses it from the resource alone; 0 for cpu, memory and other
        standard resources, 1 for an extended resource, whose shortfall is that code unless
        the node does not advertise it or unhealthy devices make the difference; 2 for
        "pods", decided by ``_short_row``)."""
        return tuple((self._shortfall_code(r), 1 if is_extended(r) else 2 if r == "pods" else 0)
                     for r in self._resource_order)

    def _shortfall_code(self, r: str) -> str:
        """The code of a node short of ``r``, when the shortfall is a plain one (a short
        line): for an extended resource, once it is advertised and unhealthy devices are
        not the difference; "pods" is written by ``_fit_resources`` itself."""
        if is_extended(r):
            return "mig-profile-unavailable" if is_mig(r) else "insufficient-gpu" if r in self.gpu_requests \
                else "insufficient-resource"
        return "insufficient-cpu" if r == "cpu" else "insufficient-memory" if r == "memory" else "insufficient-resource"

    @lazy
    def _device_rows(self) -> tuple[tuple[int, float], ...]:
        """(row in ``_resource_order``, request) of each device request, in request order."""
        order = self._resource_order
        return tuple((order.index(r), q) for r, q in self.device_requests.items())

    def _matrix(self, nodes: list[Node]) -> list[NodeFit]:
        """``[self._fit(n) for n in nodes]``, the same NodeFits, faster: a node's placement
        (``_placement``) and free rows are looked up once per placement key and node list
        (``_prepared``), and the common shortfalls (a short line per resource) are decided
        inline, their lines written when read (``_short_lines``). A NodeFit made here
        shares with others only what never changes: the Taint records, as ``_fit`` shares
        them, and the node's free rows and the pod's amounts its lines are written from."""
        amounts, codes, plain_codes = self._resource_amounts, self._row_codes, self._plain_codes
        device_rows = self._device_rows
        new = NodeFit.__new__
        out = []
        append = out.append
        for node, facts, tpl, got, frees, rest in self._prepared(nodes):
            if rest is not None:   # no candidate: its not-advertised lines, the same for every class
                fit = new(NodeFit)
                fit.name = facts.name
                fit.reasons = list(rest.reasons)
                fit._lines = tuple(rest._lines)
                fit._details = None
                fit.free = {}
                fit.candidate = False
                fit.gpu_node = rest.gpu_node
                fit.taints = rest.taints
                fit.state_taints = rest.state_taints
                enough = True
                for q in self.device_requests.values():   # as _fit_rest: nothing free of any
                    if 0 < q:
                        enough = False
                        break
                fit.enough_devices = enough
                append(fit)
                continue
            if frees is not None:
                reasons = list(tpl.reasons) if tpl.reasons else []
                short = False
                for free, q, code in zip(frees, amounts, plain_codes):
                    if free >= q:
                        continue
                    if code is None:   # out of pod slots: as _fit_resources writes it
                        frees = None
                        break
                    short = True
                    if code not in reasons:
                        reasons.append(code)
            if frees is None:
                fit = self._copy_placement(tpl)
                self._fit_rest(node, facts, fit)
                append(fit)
                continue
            fit = new(NodeFit)
            name = fit.name = facts.name
            fit.reasons = reasons
            rows = got[1]
            # lines as a tuple (NodeFit._line makes it a list if a line is ever added); the
            # short lines, in row order, written when read
            fit._lines = (tpl._lines + [(None, _short_lines, (name, rows, amounts, codes))] if tpl._lines
                          else ((None, _short_lines, (name, rows, amounts, codes)),)) if short else tuple(tpl._lines)
            fit._details = None
            fit.free = got[0]            # read only, like the template's lists
            fit.candidate = True
            fit.gpu_node = tpl.gpu_node
            fit.taints = tpl.taints
            fit.state_taints = tpl.state_taints
            enough = True
            for i, q in device_rows:
                if frees[i] < q:
                    enough = False
                    break
            fit.enough_devices = enough
            append(fit)
        return out

    def _prepared(self, nodes: list[Node]) -> list[tuple]:
        """Per node: (node, its facts, its placement, its free rows for the pod's resource
        order, the free amounts of those rows, None where ``_fit_rest`` decides: the node is
        no candidate, its rows are not known yet, or it does not advertise a requested device
        or has unhealthy ones; and for a node that is no candidate, its fit as
        ``_not_candidate`` keeps it). The same for the pod classes with one placement key and
        resource order over the same node list (kept in the memo with that list)."""
        key = ("fit-prepared", self._placement_key, self._resource_order)
        got = self.memo.get(key)
        if got is not None and got[0] is nodes:
            return got[1]
        table = self._facts_table
        order = self._resource_order
        kinds = [kind for _, kind in self._row_codes]
        out = []
        complete = True
        for node in nodes:
            facts = table.get(node.metadata.name)
            if facts is None or facts.node is not node:
                facts = self.facts(node)
            tpl = self._placement(node, facts)
            rows = facts.free_rows.get(order) if tpl.candidate else None
            if rows is None and tpl.candidate:   # the first pod class with this order: the node's free rows now
                self._free_rows(node, facts)
                rows = facts.free_rows.get(order)
                if rows is None:
                    complete = False   # not kept (cannot be, with the shortcut on): prepare again next time
            frees = None
            if rows is not None and all(kind != 1 or ((cap != 0 or alloc != 0) and not cap - alloc > 0)
                                        for (_, cap, alloc, _), kind in zip(rows[1], kinds)):
                frees = tuple(row[3] for row in rows[1])
            out.append((node, facts, tpl, rows, frees, None if tpl.candidate else self._not_candidate(node, facts, tpl)))
        if complete:
            self.memo[key] = (nodes, out)
        return out

    def _not_candidate(self, node: Node, facts: NodeFacts, tpl: NodeFit) -> NodeFit:
        """The fit of a node that advertises none of the requested devices (``_fit_rest``
        after ``_place``): what keeps the pod off it depends on the requested devices'
        names only (in the placement key), so it is kept with the placement. A template:
        never handed out, only copied (its enough_devices is this pod's)."""
        key = (self._placement_key, "no candidate")
        rest = facts.placements.get(key)
        if rest is None:
            rest = facts.placements[key] = self._copy_placement(tpl)
            self._fit_rest(node, facts, rest)
        return rest

    def pool_of(self, r: str, rows):
        """``rows(self.fits, r, the nodes that advertise r)`` (node-fit's pool of ``r``:
        positions in the matrix and free amounts), shared by the pod classes with this
        pod's placement key and resource order: where ``_matrix`` made the matrix over
        every node, a node's placement (so its placement codes) and its free amounts are
        the same in each of their matrices, row for row. None otherwise."""
        if not self._matrix_shortcut or self.uncertain_nodes:
            return None
        nodes = self.nodes
        key = ("fit-pool", self._placement_key, self._resource_order, r, rows)
        got = self.memo.get(key)
        if got is None or got[0] is not nodes:
            got = self.memo[key] = (nodes, rows(self.fits, r, self.advertised_sets.get(r, ())))
        return got[1]

    @lazy
    def _plain_codes(self) -> tuple[Optional[str], ...]:
        """``_row_codes``' codes, None for the "pods" row."""
        return tuple(None if kind == 2 else code for code, kind in self._row_codes)

    @staticmethod
    def _copy_placement(tpl: NodeFit) -> NodeFit:
        fit = NodeFit(tpl.name, reasons=list(tpl.reasons), free={}, candidate=tpl.candidate, gpu_node=tpl.gpu_node,
                      taints=list(tpl.taints), state_taints=list(tpl.state_taints))
        fit._lines = list(tpl._lines)
        return fit

    def _short_row(self, node: Node, fit: NodeFit, row: tuple[str, float, float, float], q: float) -> None:
        """One shortfall of an extended resource or of pod slots, as ``_fit_resources`` writes it."""
        r, cap, alloc, free = row
        name = fit.name
        if r == "pods":
            used = self._used(node, name)
            fit.add("insufficient-resource", f"node/{name} pods: {int(used['pods'])} of {int(alloc)} pod slots used")
        else:
            self._extended_short(node, fit, name, r, cap, alloc, free, q)

    def _extended_short(self, node: Node, fit: NodeFit, name: str, r: str, cap: float, alloc: float, free: float,
                        q: float) -> None:
        """One shortfall of an extended resource: not advertised at all, held by unhealthy
        devices, a MIG profile taken, or not enough GPUs or other devices free."""
        if cap == 0 and alloc == 0:
            fit.add(self._not_advertised_code(node, r), f"node/{name} does not advertise {r}")
            return
        unhealthy = max(0.0, cap - alloc)
        if unhealthy and free + unhealthy >= q:
            fit.add_later("gpu-unhealthy", _unhealthy_line, name, r, free, alloc, q, unhealthy, cap)
        else:
            fit.add_later(self._shortfall_code(r), _short_line, name, r, free, alloc, q)

    @lazy
    def _interpod_idle(self) -> bool:
        return FAST_PATHS and self.interpod.idle

    @lazy
    def _facts_table(self) -> Optional[dict[str, NodeFacts]]:
        """The memo's node facts by name (None without the shortcuts)."""
        if not FAST_PATHS:
            return None
        return self.memo.setdefault("node-facts", {})

    @lazy
    def _device_advertisers(self) -> list:
        """Per requested device resource, the nodes that advertise it."""
        adv = self.advertised_sets
        return [adv.get(r, ()) for r in self.device_requests]

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

    def _fit_resources(self, node: Node, fit: NodeFit, facts: Optional[NodeFacts] = None) -> None:
        facts = facts if facts is not None else self.facts(node)
        name = facts.name
        got = facts.free_rows.get(self._resource_order) if self._rows_shared else None
        if got is not None:
            free_of, rows = got
            used = None
        else:
            free_of, rows, used = self._free_rows(node, facts)
        fit.free = dict(free_of)
        for (r, cap, alloc, free), q in zip(rows, self._resource_amounts):
            if free >= q:
                continue
            if is_extended(r):
                self._extended_short(node, fit, name, r, cap, alloc, free, q)
            elif r == "pods":
                if used is None:
                    used = self._used(node, name)
                fit.add("insufficient-resource", f"node/{name} pods: {int(used['pods'])} of {int(alloc)} pod slots used")
            else:
                fit.add_later(self._shortfall_code(r), _short_line, name, r, free, alloc, q)

    def _used(self, node: Node, name: str) -> dict[str, float]:
        """What the pods on the node (without this one) request of the pod's resources,
        shared by the memo's contexts (not when this pod's own record was left out)."""
        pods_by_node = self.pods_by_node
        resources = self._resource_key
        own_excluded = pods_by_node is not self.memo.get("pods_by_node")
        key = ("used", name, resources)
        used = None if own_excluded else self.memo.get(key)
        if used is None:
            used = used_by(pods_by_node.get(name, []), resources, self._containers_cache)
            if not own_excluded:
                self.memo[key] = used
        return used

    @lazy
    def _containers_cache(self) -> dict:
        """``used_by``'s containers cache, shared by the memo's contexts."""
        return self.memo.setdefault("used-by-containers", {})

    def _free_rows(self, node: Node, facts: NodeFacts) -> tuple[dict[str, float], list, Optional[dict[str, float]]]:
        """({resource: free}, [(resource, capacity, allocatable, free)] in request order
        then "pods", the used amounts or None when they came from the node's facts): the
        same for every pod class requesting these resources in this order (kept in the
        node's facts, unless this pod's own record was left out of the node's pods)."""
        order = self._resource_order
        shared = FAST_PATHS and self.pods_by_node is self.memo.get("pods_by_node")
        got = facts.free_rows.get(order) if shared else None
        if got is not None:
            return got[0], got[1], None
        used = self._used(node, facts.name)
        free_of: dict[str, float] = {}
        rows = []
        for r in order:
            cap, alloc = facts.amounts(r)
            free = max(0.0, alloc - used.get(r, 0.0))
            free_of[r] = free
            rows.append((r, cap, alloc, free))
        if shared:
            facts.free_rows[order] = (free_of, rows)
        return free_of, rows, used

    @lazy
    def _rows_shared(self) -> bool:
        """The nodes' free rows can be shared with the memo's other contexts (this pod's
        own record is not left out of its node's pods)."""
        return FAST_PATHS and self.pods_by_node is self.memo.get("pods_by_node")

    @lazy
    def _resource_order(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self._resource_rows)

    @lazy
    def _resource_amounts(self) -> tuple[float, ...]:
        return tuple(q for _, q in self._resource_rows)

    @lazy
    def _resource_key(self) -> tuple[str, ...]:
        return tuple(sorted(self.requests))


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


_AMOUNTS: dict[str, float] = {}


def used_by(pods: list, resources: tuple[str, ...], containers: Optional[dict] = None) -> dict[str, float]:
    """What these pods request of the given resources (effective requests), plus
    their count under "pods". The common pod (no init containers, no overhead) is
    summed directly, only for the resources asked about: this runs over every pod
    bound to every candidate node (150,000 on a large cluster), so a quantity written
    as a string is parsed once per distinct string (``_AMOUNTS``); the sums are
    added in the same order as before, so they are the same floats.

    ``containers``: a cache (per ``resources``) of each containers list's amounts
    (and each pair of containers and init containers lists'), by the lists' ids, kept with
    the lists (so an id is never reused while it is there): the pods of one workload share
    those lists (the reader shares identical parts of records), so most pods are summed
    from them without reading their containers again."""
    if containers is not None and FAST_PATHS and len(set(resources)) == len(resources):
        return _used_by_shared(pods, resources, containers)
    used = dict.fromkeys(resources, 0.0)
    amounts = _AMOUNTS
    for p in pods:
        spec = p.spec
        if spec.initContainers or spec.overhead:
            full = pod_requests(p)
            for r in resources:
                used[r] += full.get(r, 0.0)
            continue
        for c in spec.containers:
            res = c.resources
            req, lim = res.requests, res.limits
            for r in resources:
                v = req.get(r)
                if v is None:
                    v = lim.get(r)
                    if v is None:
                        continue
                x = amounts.get(v) if type(v) is str and FAST_PATHS else None
                if x is None:
                    x = _num(v)
                    if type(v) is str and len(amounts) < 65536:
                        amounts[v] = x
                used[r] += x
    used["pods"] = float(len(pods))
    return used


def _container_amounts(cs: list, resources: tuple[str, ...]) -> tuple[tuple[int, float], ...]:
    """``used_by``'s terms for a containers list: (index in ``resources``, amount), each
    resource's amounts in container order (a container that requests none of it is
    left out)."""
    per: list[list[float]] = [[] for _ in resources]
    for c in cs:
        res = c.resources
        req, lim = res.requests, res.limits
        for i, r in enumerate(resources):
            v = req.get(r)
            if v is None:
                v = lim.get(r)
                if v is None:
                    continue
            x = _AMOUNTS.get(v) if type(v) is str else None
            if x is None:
                x = _num(v)
                if type(v) is str and len(_AMOUNTS) < 65536:
                    _AMOUNTS[v] = x
            per[i].append(x)
    return tuple((i, x) for i, xs in enumerate(per) for x in xs)


def warm_bound_pods(memo: Memo, snap: Snapshot, keys: list[tuple[str, ...]],
                    nodes: Optional[set[str]] = None) -> None:
    """What the fits of many Pending pods read of the bound pods, in one pass over the
    snapshot's pods instead of three (a report of many Pending pods calls it first;
    reports/pending.py):

    - the pods per node, as ``Snapshot.pods_by_node`` lists them (memo "pods_by_node");
    - per node, its pods with required pod anti-affinity (memo "placed-anti-candidates",
      which InterPod reads instead of every placed pod);
    - for each resource key in ``keys`` (a pod's sorted requested resources), each node's
      used amounts as ``used_by`` gives them (memo ("used", node, key)), for the nodes in
      ``nodes`` (None: every node). Each resource's terms are added in ``used_by``'s order
      (pod after pod, a pod's containers in order), whatever else the key holds, so the
      floats are the same.

    Nothing is done when the memo already holds pods per node."""
    if not FAST_PATHS or memo.get("pods_by_node") is not None:
        return
    keys = [k for k in dict.fromkeys(keys) if len(set(k)) == len(k)]
    union = tuple(sorted({r for k in keys for r in k}))
    cache = memo.setdefault("used-by-containers", {}).setdefault(union, {})
    n = len(union)
    table: dict[str, tuple[list, Optional[list[float]]]] = {}   # node -> (its pods, its sums or None)
    anti: dict[str, list] = {}
    for p in snap.pods.values():
        spec = p.spec
        node = spec.nodeName
        if not node:
            continue
        phase = p.status.phase
        if phase == "Succeeded" or phase == "Failed":   # Pod.terminated
            continue
        entry = table.get(node)
        if entry is None:
            entry = table[node] = ([], [0.0] * n if n and (nodes is None or node in nodes) else None)
        entry[0].append(p)
        aff = spec.affinity
        if aff is not None:
            a = aff.podAntiAffinity
            if a is not None and a.requiredDuringSchedulingIgnoredDuringExecution:
                anti.setdefault(node, []).append(p)
        s = entry[1]
        if s is None:
            continue
        for i, x in _terms(p, spec, union, cache):   # as _used_by_shared, term for term
            s[i] += x
    by_node = {node: entry[0] for node, entry in table.items()}
    memo["pods_by_node"] = by_node
    memo["placed-anti-candidates"] = (by_node, anti)
    for key in keys:
        at = [union.index(r) for r in key]
        for node, (pods, s) in table.items():
            if s is not None:
                used = {r: s[i] for r, i in zip(key, at)}
                used["pods"] = float(len(pods))
                memo[("used", node, key)] = used


def _terms(p: Pod, spec, resources: tuple[str, ...], cache: dict) -> tuple[tuple[int, float], ...]:
    """A bound pod's terms of ``used_by``'s sums: (index in ``resources``, amount), in the
    order they are added. A pod with an overhead: its effective requests, one term per
    resource; with init containers: the same, kept per pair of containers and init
    containers lists; else each container's amounts, kept per containers list (the pods of
    one workload share those lists). ``cache`` holds one set of ``resources``' terms, by
    the lists' ids, with the lists (so that an id is not reused while it is there)."""
    cs = spec.containers
    if spec.overhead:
        full = pod_requests(p)
        return tuple(enumerate(full.get(r, 0.0) for r in resources))
    init = spec.initContainers
    if init:   # the effective requests (init containers' peaks, sidecars), by both lists
        got = cache.get((id(cs), id(init)))
        if got is None or got[0] is not cs or got[1] is not init:
            full = pod_requests(p)
            got = cache[(id(cs), id(init))] = (cs, init, tuple(enumerate(full.get(r, 0.0) for r in resources)))
        return got[2]
    got = cache.get(id(cs))
    if got is None or got[0] is not cs:
        got = cache[id(cs)] = (cs, _container_amounts(cs, resources))
    return got[1]


def _used_by_shared(pods: list, resources: tuple[str, ...], containers: dict) -> dict[str, float]:
    """``used_by`` with its containers cache: each resource's sum gets the same terms in
    the same order (a pod's containers in order, pod after pod), so the same float."""
    containers = containers.setdefault(resources, {})   # the terms depend on the resources asked about
    sums = [0.0] * len(resources)
    for p in pods:
        for i, x in _terms(p, p.spec, resources, containers):
            sums[i] += x
    used = dict(zip(resources, sums))
    used["pods"] = float(len(pods))
    return used
