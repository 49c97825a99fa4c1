"""`gpuctl nodes capacity`: the cluster's GPU picture, per node, pool and cluster.

Pure over a Snapshot. One row per node per GPU-like resource (whole GPUs, each MIG
profile, shared replicas, other vendors, DRA device classes), counted with the
contract's rules (docs/commands.md): allocated = effective requests
(sidecars, init containers, overhead) of pods bound to the node that are not
Succeeded/Failed (terminating pods still hold their GPUs; unbound Pending pods never
count); free = max(0, allocatable - allocated) whatever the node's state; unhealthy =
capacity - allocatable.

Fragmentation is told in terms a user can act on, per pool over schedulable and
ready nodes: the largest request that fits now, the histogram of free GPUs per node,
and the stranded GPUs — free GPUs on nodes whose free count is below the smallest
GPU request of the pool's Pending pods (or, with none pending, below the most common
request size of its running pods).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

from ..checks.context import requests_read, used_by
from ..knowledge import catalog
from ..model import kueue as K
from ..model.matching import node_selector_mismatches, required_affinity_matches
from ..model.objects import Node, Pod, Unreadable
from ..model.quantity import parse_quantity
from ..model.requests import request_of
from ..errors import SourceError
from ..model.dra import dra_devices
from ..model.snapshot import NODES, PODS, Snapshot, unreadable_dicts

POOL_LABELS = ("gpu-type", "nvidia.com/gpu.product", "node.kubernetes.io/instance-type")

# The report's shortcuts over a large cluster: the consolidation hint tries each
# distinct set of request sizes once instead of every combination of pods, Pending
# pods with the same nodeSelector are admitted to a pool once, and only pods whose
# name has an unreadable field are looked up for their problems. False: the
# straightforward way (tests/test_capacity.py and tests/test_capacity_hint.py compare
# the two).
FAST_PATHS = True

_DRIVER_RE = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


def _num(v: Any) -> float:
    try:
        return parse_quantity(v)
    except ValueError:
        return 0.0


def _int(v: Optional[float]) -> Any:
    if v is None:
        return None
    return int(v) if v == int(v) else round(v, 3)


def _sum(values) -> float:
    """The sum of the known figures (a row whose figure could not be read is None)."""
    return sum(v for v in values if v is not None)


# Kinds `nodes capacity` reads: an unreadable one of these makes the report partial.
READS = ("Node", "Pod", "ResourceSlice", "DeviceClass", "ResourceClaim")


@dataclass
class Row:
    node: str
    resource: str
    sku: Optional[str]
    capacity: Optional[float]          # None: could not be read (see ``unreadable``)
    allocatable: Optional[float]
    allocated: Optional[float]
    schedulable: bool
    ready: bool
    pool: str
    replicas: Optional[int] = None
    physical_gpus: Optional[int] = None
    claims: list[str] = field(default_factory=list)
    taints: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    @property
    def free(self) -> Optional[float]:
        if self.allocatable is None or self.allocated is None:
            return None
        return max(0.0, self.allocatable - self.allocated)

    @property
    def unhealthy(self) -> Optional[float]:
        if self.capacity is None or self.allocatable is None:
            return None
        return max(0.0, self.capacity - self.allocatable)

    def to_dict(self, wide: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "node": self.node, "resource": self.resource, "sku": self.sku, "pool": self.pool,
            "capacity": _int(self.capacity), "allocatable": _int(self.allocatable), "allocated": _int(self.allocated),
            "free": _int(self.free), "unhealthy": _int(self.unhealthy), "schedulable": self.schedulable, "ready": self.ready,
        }
        if self.replicas is not None:
            d["replicas"] = self.replicas
            d["physical_gpus"] = self.physical_gpus
        if self.claims:
            d["claims"] = self.claims
        if self.unreadable:
            d["unreadable"] = list(self.unreadable)
        if wide:
            d["taints"] = self.taints
            d["labels"] = self.labels
        return d


def choose_pool_label(nodes: list[Node], explicit: Optional[str]) -> str:
    """--pool-label, else the first of POOL_LABELS that GPU nodes carry."""
    if explicit:
        return explicit
    for key in POOL_LABELS:
        if any(key in n.metadata.labels for n in nodes):
            return key
    return POOL_LABELS[-1]


def _gpu_labels(labels: dict[str, str]) -> dict[str, str]:
    keep = ("nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy",
            "nvidia.com/mig.strategy", "nvidia.com/mig.config", "gpu-type", "gpu-memory", "node.kubernetes.io/instance-type",
            "cloud.google.com/gke-accelerator", "nvidia.com/cuda.driver-version.full")
    return {k: labels[k] for k in keep if k in labels}


class _CatalogFacts:
    """What the report reads of the catalog for its nodes, asked once: whether a
    resource name is a GPU's (each node lists the same few), and each node's GPU
    evidence (read for the pools and again for the rows)."""

    def __init__(self) -> None:
        self._gpu: dict[str, bool] = {}
        self._evidence: dict[int, tuple[Node, Any]] = {}

    def is_gpu_resource(self, name: str) -> bool:
        got = self._gpu.get(name)
        if got is None:
            got = self._gpu[name] = catalog.is_gpu_resource(name)
        return got

    def evidence(self, node: Node) -> Any:
        got = self._evidence.get(id(node))
        if got is None or got[0] is not node:
            got = self._evidence[id(node)] = (node, catalog.node_has_gpus(node.metadata.labels))
        return got[1]


def _problem_pod_names(snap: Snapshot) -> Optional[set[str]]:
    """The names of the pods with an unreadable field (``Snapshot.problems_of`` finds
    nothing for the others): checking a name is cheaper than asking for each of
    150,000 pods. None: ask for every pod."""
    if not FAST_PATHS:
        return None
    return {m.name for m in snap.unreadable() if isinstance(m, Unreadable) and m.kind == "Pod"} if snap.malformed else set()


def _rows_for_node(snap: Snapshot, node: Node, pods: list, pool_label: str,
                   problem_pods: Optional[set[str]] = None, facts: Optional[_CatalogFacts] = None) -> list[Row]:
    """The node's rows; ``facts``: the report's, shared by every node (else fresh)."""
    facts = facts if facts is not None else _CatalogFacts()
    is_gpu = facts.is_gpu_resource
    labels = node.metadata.labels
    own = snap.problems_of("Node", None, node.metadata.name)
    unknown = {u.path[1:3] for u in own if u.path[:2] in (("status", "capacity"), ("status", "allocatable"))}
    resources = [r for r in dict.fromkeys([*node.status.capacity, *node.status.allocatable,
                                           *(k[1] for k in unknown if len(k) == 2)])
                 if is_gpu(r) and (_num(node.status.capacity.get(r, 0)) > 0 or _num(node.status.allocatable.get(r, 0)) > 0
                                                    or ("capacity", r) in unknown or ("allocatable", r) in unknown)]
    if not resources:
        return []
    if problem_pods is None:
        pod_problems = [u for p in pods for u in snap.problems_of("Pod", p.metadata.namespace, p.metadata.name)]
    elif problem_pods:
        pod_problems = [u for p in pods if p.metadata.name in problem_pods
                        for u in snap.problems_of("Pod", p.metadata.namespace, p.metadata.name)]
    else:
        pod_problems = []
    ev = facts.evidence(node)
    sku = ev.sku.id if ev and ev.sku else None
    used = used_by(pods, tuple(resources))
    pool = labels.get(pool_label) or f"(no {pool_label})"
    replicas = int(_num(labels.get("nvidia.com/gpu.replicas", 1)) or 1)
    sharing = labels.get("nvidia.com/gpu.sharing-strategy") in ("time-slicing", "mps") or replicas > 1
    taints = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in node.spec.taints]
    rows = []
    for r in resources:
        cap, alloc = _num(node.status.capacity.get(r, 0)), _num(node.status.allocatable.get(r, 0))
        hidden = [u for u in pod_problems if requests_read(u.path, {r})]
        row = Row(node.metadata.name, r, sku,
                  None if {("capacity",), ("capacity", r)} & unknown else cap,
                  None if {("allocatable",), ("allocatable", r)} & unknown else alloc,
                  None if hidden else used.get(r, 0.0), not node.spec.unschedulable, node.ready, pool,
                  taints=taints, labels=_gpu_labels(labels),
                  unreadable=[f"{u.field}: {u.problem}" for u in own] + [str(u) for u in hidden])
        if sharing and r in ("nvidia.com/gpu", "nvidia.com/gpu.shared"):
            row.replicas = replicas
            count = labels.get("nvidia.com/gpu.count")
            row.physical_gpus = int(_num(count)) if count else int(cap // replicas) if replicas else None
        rows.append(row)
    return rows


def _dra_rows(snap: Snapshot, nodes: dict[str, Node], pool_label: str) -> list[Row]:
    """DRA: devices published in ResourceSlices (``model.dra.dra_devices``), per node and
    DeviceClass (MIG partitions apart, as ``CLASS/mig``), and the ResourceClaims
    allocated from them; a partition whose GPU is taken counts as allocated."""
    classes: dict[str, str] = {}
    for dc in snap.objects("DeviceClass"):
        for sel in (dc.spec or {}).get("selectors") or []:
            m = _DRIVER_RE.search(((sel or {}).get("cel") or {}).get("expression", ""))
            if m:
                classes.setdefault(m.group(1), dc.metadata.name)
    by_key: dict[tuple[str, str], Row] = {}
    for d in dra_devices(snap):      # the allocator's view: newest pool generation, every API shape
        if not d.node or d.node not in nodes:
            continue
        node = nodes[d.node]
        # a MIG partition and its parent GPU are both published: each its own row, never summed
        resource = f"dra:{classes.get(d.driver, d.driver)}" + ("/mig" if d.kind == "mig" else "")
        row = by_key.get((d.node, resource))
        if row is None:
            ev = catalog.node_has_gpus(node.metadata.labels)
            row = by_key[(d.node, resource)] = Row(
                d.node, resource, ev.sku.id if ev and ev.sku else None, 0, 0, 0, not node.spec.unschedulable, node.ready,
                node.metadata.labels.get(pool_label) or f"(no {pool_label})")
        row.capacity += 1
        row.allocatable += 1
        if d.allocated or d.blocked_by_counters:    # taken, or its share of the GPU is (a partition of an allocated GPU)
            row.allocated += 1
        for claim in d.claims:
            if claim not in row.claims:
                row.claims.append(claim)
    return list(by_key.values())


class _PendingPods:
    """The unbound Pending pods, found once for every pool, and per resource what
    each requests of it and what it asks of a node's labels (read once, not per pool)."""

    def __init__(self, snap: Snapshot) -> None:
        self.pods: list[Pod] = [p for p in snap.pods.values()
                     if not p.spec.nodeName and p.status.phase == "Pending" and not p.metadata.deletionTimestamp]
        self._wanting: dict[str, tuple[list[tuple[float, int]], list[tuple[dict, list]]]] = {}

    def wanting(self, resource: str) -> tuple[list[tuple[float, int]], list[tuple[dict, list]]]:
        """([(request, demand)] of each pod requesting ``resource``, in the snapshot's
        order; the demands: [(nodeSelector, required node selector terms)]). Pods with
        the same nodeSelector and no required affinity share one demand: a pool admits
        them alike, and a few thousand Pending pods ask for a few dozen label sets."""
        got = self._wanting.get(resource)
        if got is None:
            entries: list[tuple[float, int]] = []
            demands: list[tuple[dict, list]] = []
            index: dict[tuple, int] = {}
            for p in self.pods:
                q = request_of(p, resource)
                if q <= 0:
                    continue
                affinity = getattr(p.spec, "affinity", None)
                na = affinity.nodeAffinity if affinity else None
                terms = na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms if na and na.requiredDuringSchedulingIgnoredDuringExecution else []
                selector = getattr(p.spec, "nodeSelector", {}) or {}
                key = _selector_key(selector) if FAST_PATHS and not terms else None
                k = index.get(key) if key is not None else None
                if k is None:
                    k = len(demands)
                    demands.append((selector, terms))
                    if key is not None:
                        index[key] = k
                entries.append((q, k))
            got = self._wanting[resource] = (entries, demands)
        return got


def _pending_requests(pending: _PendingPods, pool_nodes: list[Node], resource: str) -> list[float]:
    """GPU requests of Pending pods that could use this pool (their nodeSelector and
    required node affinity admit one of its nodes; taints are not considered)."""
    entries, demands = pending.wanting(resource)
    admits = [any(not node_selector_mismatches(selector, n) and required_affinity_matches(terms, n) for n in pool_nodes)
              for selector, terms in demands]
    return [q for q, k in entries if admits[k]]


def _selector_key(selector: dict) -> Optional[tuple]:
    """A nodeSelector as a dictionary key; None when a value cannot be one."""
    key = tuple(selector.items())
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _fragmentation(rows: list[Row], pending: list[float], running_sizes: list[float], resource: str) -> dict[str, Any]:
    usable = [r for r in rows if r.schedulable and r.ready and r.free is not None]
    frees = [r.free for r in usable]
    largest = max(frees) if frees else 0.0
    histogram = Counter(str(_int(f)) for f in frees)
    threshold, basis = None, None
    if pending:
        threshold, basis = min(pending), "smallest Pending request"
    elif running_sizes:
        threshold, basis = Counter(running_sizes).most_common(1)[0][0], "most common running request"
    stranded = sum(f for f in frees if threshold is not None and 0 < f < threshold)
    total_free = sum(frees)
    frag: dict[str, Any] = {
        "largest_free_block": _int(largest),
        "free_histogram": dict(sorted(histogram.items(), key=lambda kv: float(kv[0]))),
        "stranded": _int(stranded),
        "request_size": _int(threshold) if threshold is not None else None,
        "request_basis": basis,
    }
    if pending:
        biggest = max(pending)
        if largest < biggest:
            frag["summary"] = (f"{_int(total_free)} free {resource} on schedulable nodes, but no node can take a Pending pod "
                               f"that needs {_int(biggest)} (largest free block: {_int(largest)})")
    if "summary" not in frag and stranded:
        frag["summary"] = f"{_int(stranded)} of {_int(total_free)} free {resource} are stranded on nodes with fewer than {_int(threshold)} free"
    return frag


MAX_MOVERS = 12   # pods considered on one node: subsets are enumerated (4,096 at most)


def _place(movers: list[tuple[float, Any]], order: list[tuple[float, str]], free: dict[str, float],
           exclude: str) -> Optional[list[tuple[float, Any, str]]]:
    """First-fit decreasing: each pod, biggest first, onto the node with the least room
    that still fits all of it after the earlier moves (ties by name), never ``exclude``;
    None when one does not fit anywhere. ``order`` is every node's (free, name), sorted:
    the untouched nodes are searched by bisection, the few already used one by one, so
    a plan costs a few lookups, not a sort of the pool per pod."""
    from bisect import bisect_left

    used: dict[str, float] = {}
    plan = []
    for q, p in sorted(movers, key=lambda x: -x[0]):
        best: Optional[tuple[float, str]] = None
        i = bisect_left(order, (q, ""))
        while i < len(order):
            f, n = order[i]
            if n != exclude and n not in used:
                best = (f, n)
                break
            i += 1
        for n, u in used.items():
            left = free[n] - u
            if left >= q and (best is None or (left, n) < best):
                best = (left, n)
        if best is None:
            return None
        used[best[1]] = used.get(best[1], 0.0) + q
        plan.append((q, p, best[1]))
    return plan


def _first_plan(movers: list[tuple[float, Any]], size: int, missing: float, order: list[tuple[float, str]],
                free: dict[str, float], exclude: str) -> Optional[list[tuple[float, Any, str]]]:
    """The plan for the first of the ``size``-pod combinations of ``movers`` (sorted by
    request) that frees ``missing`` and can be placed, in the order of their sums then
    of ``itertools.combinations``, without enumerating them (4,096 per node).

    Whether a combination can be placed depends only on its request sizes (``_place``
    reads nothing else of a pod), and its sum too; of the combinations with the same
    sizes the first in ``combinations`` order takes the first pods of each size. So
    each distinct set of sizes is tried once, as that first combination, in the order
    of (sum, its pods' positions): the same plan as trying every combination."""
    groups: list[tuple[float, int, int]] = []       # (request, first position, how many)
    for i, (q, _) in enumerate(movers):
        if groups and groups[-1][0] == q:
            groups[-1] = (q, groups[-1][1], groups[-1][2] + 1)
        else:
            groups.append((q, i, 1))
    options = []
    for counts in _counts(groups, 0, size):
        picks = [i for (_, first, _), k in zip(groups, counts) for i in range(first, first + k)]
        total = sum(movers[i][0] for i in picks)     # in the pods' order, as ``sum`` over the combination adds
        if total >= missing:
            options.append((total, picks))
    options.sort()
    for _, picks in options:
        plan = _place([movers[i] for i in picks], order, free, exclude)
        if plan is not None:
            return plan
    return None


def _counts(groups: list[tuple[float, int, int]], start: int, size: int):
    """Each way to take ``size`` pods from ``groups[start:]``: how many of each group."""
    if start == len(groups):
        if size == 0:
            yield ()
        return
    for k in range(min(size, groups[start][2]) + 1):
        for rest in _counts(groups, start + 1, size - k):
            yield (k, *rest)


def _consolidation(snap: Snapshot, rows: list[Row], pods_by_node: dict[str, list], resource: str,
                   pending: list[float]) -> Optional[str]:
    """Best effort: which running pods, if moved, would free a node for the largest
    Pending request. Only a feasible plan is offered: each pod moved fits, whole, on
    a node that still has room for it after the earlier moves (by GPU count; the
    pods' own constraints are for the reader to check). A hint, never an instruction."""
    from itertools import combinations

    if not pending:
        return None
    need = max(pending)
    usable = sorted((r for r in rows if r.schedulable and r.ready and r.free is not None and r.allocated is not None),
                    key=lambda r: (-r.free, r.node))
    if not usable or usable[0].free >= need:
        return None
    best = None
    free = {r.node: r.free for r in usable}
    order = sorted((f, n) for n, f in free.items())
    for target in usable:
        if best is not None and len(best[1]) == 1:
            break   # no later target can move fewer pods
        if target.allocatable < need:
            continue
        missing = need - target.free
        movers = sorted(((request_of(p, resource), p) for p in pods_by_node.get(target.node, [])
                         if request_of(p, resource) > 0), key=lambda x: (x[0], x[1].metadata.name))[:MAX_MOVERS]
        fewer = len(best[1]) - 1 if best is not None else len(movers)   # only a shorter plan could win now
        for size in range(1, min(len(movers), fewer) + 1):
            if FAST_PATHS:
                plan = _first_plan(movers, size, missing, order, free, target.node)
            else:
                options = sorted((c for c in combinations(movers, size) if sum(q for q, _ in c) >= missing),
                                 key=lambda c: sum(q for q, _ in c))
                plan = next((pl for c in options if (pl := _place(list(c), order, free, target.node)) is not None), None)
            if plan is not None:
                if best is None or len(plan) < len(best[1]):
                    best = (target, plan)
                break
    if best is None:
        return None
    target, plan = best
    moved = sum(q for q, _, _ in plan)
    steps = ", ".join(f"{p.metadata.namespace}/{p.metadata.name} ({_int(q)}) to {dest}" for q, p, dest in plan)
    return (f"hint: moving {steps} would free {_int(target.free + moved)} {resource} on {target.node} "
            f"for a Pending {_int(need)}-GPU pod (by GPU count; check the moved pods' own constraints)")


def capacity_report(snap: Snapshot, pool_label: Optional[str] = None, wide: bool = False) -> dict[str, Any]:
    """The ``nodes capacity`` document; what could not be read is in ``not_read``.
    Without the nodes or their pods every count would be wrong: a SourceError."""
    for gap_key in (NODES, PODS):
        if gap_key in snap.gaps:
            raise SourceError(f"cannot count GPUs: {snap.gaps[gap_key].describe()}")
    doc = _capacity(snap, pool_label, wide)
    gaps = [g.describe() for g in snap.gaps.values()]
    if gaps:
        doc["not_read"] = gaps
    return doc


def _capacity(snap: Snapshot, pool_label: Optional[str], wide: bool) -> dict[str, Any]:
    nodes = sorted(snap.nodes.values(), key=lambda n: n.metadata.name)
    facts = _CatalogFacts()
    gpu_nodes = [n for n in nodes if facts.evidence(n) is not None
                 or any(facts.is_gpu_resource(r) for r in n.status.capacity)]
    key = choose_pool_label(gpu_nodes, pool_label)
    pods_by_node = snap.pods_by_node()
    problem_pods = _problem_pod_names(snap)
    rows: list[Row] = []
    for n in nodes:
        rows += _rows_for_node(snap, n, pods_by_node.get(n.metadata.name, []), key, problem_pods, facts)
    rows += _dra_rows(snap, {n.metadata.name: n for n in nodes}, key)
    rows.sort(key=lambda r: (r.pool, r.node, r.resource))

    pools = []
    by_pool: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        by_pool.setdefault((r.pool, r.resource), []).append(r)
    node_by_name = {n.metadata.name: n for n in nodes}
    pending_pods = _PendingPods(snap)
    for (pool, resource), prow in sorted(by_pool.items()):
        pool_nodes = [node_by_name[r.node] for r in prow]
        pending = _pending_requests(pending_pods, pool_nodes, resource)
        running = [] if pending else [q for r in prow for p in pods_by_node.get(r.node, [])
                                      if (q := request_of(p, resource)) > 0]
        entry: dict[str, Any] = {
            "pool": pool, "resource": resource, "nodes": len(prow),
            "capacity": _int(_sum(r.capacity for r in prow)), "allocatable": _int(_sum(r.allocatable for r in prow)),
            "allocated": _int(_sum(r.allocated for r in prow)), "free": _int(_sum(r.free for r in prow)),
            "unhealthy": _int(_sum(r.unhealthy for r in prow)), "pending_pods": len(pending),
            "fragmentation": _fragmentation(prow, pending, running, resource),
        }
        hint = _consolidation(snap, prow, pods_by_node, resource, pending)
        if hint:
            entry["consolidation_hint"] = hint
        pools.append(entry)

    totals = []
    for resource in sorted({r.resource for r in rows}):
        rr = [r for r in rows if r.resource == resource]
        totals.append({"resource": resource, "nodes": len(rr), "capacity": _int(_sum(r.capacity for r in rr)),
                       "allocatable": _int(_sum(r.allocatable for r in rr)), "allocated": _int(_sum(r.allocated for r in rr)),
                       "free": _int(_sum(r.free for r in rr)), "unhealthy": _int(_sum(r.unhealthy for r in rr))})
    doc = {"schema": "gpuctl/capacity/v1", "pool_label": key, "rows": [r.to_dict(wide) for r in rows],
           "pools": pools, "totals": totals}
    queues = kueue_queues(snap, rows, node_by_name)
    if queues:
        doc["queues"] = queues
    unreadable = capacity_unreadable(snap)
    if unreadable:
        doc["unreadable"] = unreadable_dicts(unreadable)
    return doc


def kueue_queues(snap: Snapshot, rows: list[Row], nodes: dict[str, Node]) -> Optional[dict[str, Any]]:
    """GPUs by Kueue ResourceFlavor (docs/output.md, ``queues``): per flavor and GPU
    resource the nominal quota and reservations summed over the ClusterQueues, next to
    the allocatable GPUs of the nodes that carry the flavor's nodeLabels; and per
    ClusterQueue and flavor its own figures. None when no ClusterQueue was read."""
    cqs = snap.objects("ClusterQueue")
    if not cqs:
        return None
    gpu = lambda r: catalog.is_gpu_resource(r) or "gpu" in r.lower()  # noqa: E731
    qrows = [r for r in K.quota_rows(cqs, snap.objects("Cohort")) if gpu(r["resource"])]
    flavors = {f.metadata.name: f for f in snap.objects("ResourceFlavor")}
    by_flavor: dict[tuple[str, str], dict[str, Any]] = {}
    for r in qrows:
        e = by_flavor.setdefault((r["flavor"], r["resource"]), {
            "flavor": r["flavor"], "resource": r["resource"], "clusterQueues": 0, "nominal": 0.0, "reserved": 0.0})
        e["clusterQueues"] += 1
        e["nominal"] += r["nominal"]
        e["reserved"] += r["reserved"]
    out_flavors = []
    for (fname, res), e in sorted(by_flavor.items()):
        f = flavors.get(fname)
        matched = [x for x in rows if x.resource == res and f is not None
                   and K.flavor_matches_node(f, nodes[x.node].metadata.labels if x.node in nodes else {})]
        e.update({"nominal": _int(e["nominal"]), "reserved": _int(e["reserved"]),
                  "free": _int(max(0.0, e["nominal"] - e["reserved"])),
                  "nodeLabels": dict((f.spec or {}).get("nodeLabels") or {}) if f is not None and isinstance(f.spec, dict) else None,
                  "nodes": len({x.node for x in matched}) if f is not None else None,
                  "allocatable": _int(_sum(x.allocatable for x in matched)) if f is not None else None})
        out_flavors.append(e)
    for r in qrows:
        for k in ("nominal", "reserved", "free", "borrowingLimit", "lendingLimit"):
            r[k] = _int(r[k]) if r[k] is not None else None
    return {"flavors": out_flavors, "clusterQueues": qrows}


def capacity_unreadable(snap: Snapshot) -> list[Any]:
    """The objects this report reads that could not be fully read: nodes (those a
    --selector left out aside), pods bound to the nodes reported or Pending, DRA
    objects."""
    out = []
    for u in snap.unreadable():
        if not isinstance(u, Unreadable):
            if str(u).startswith(("Node ", "Pod ", "BoundPod")):   # a line from a list decoder
                out.append(u)
            continue
        if u.kind not in READS:
            continue
        if u.kind == "Node" and u.kept and u.name not in snap.nodes:
            continue   # not selected
        if u.kind == "Pod" and u.kept:
            p = snap.pods.get(f"{u.namespace}/{u.name}")
            if p is not None and p.spec.nodeName and p.spec.nodeName not in snap.nodes:
                continue
        out.append(u)
    return out
