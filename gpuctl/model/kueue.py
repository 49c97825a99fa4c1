"""Kueue's quota arithmetic, as pure functions over ClusterQueue, Cohort,
ResourceFlavor and Workload objects (``GenericObject`` records, or their dicts).

What Kueue computes when it tries to admit a Workload, transcribed from
kubernetes-sigs/kueue (read at ff69552e79ad, v0.20.0-devel; v0.10 and v0.13 agree
on everything used here):

* ``pkg/cache/scheduler/resource_node.go``: every ClusterQueue and Cohort is a
  node of a quota tree. A ClusterQueue's ``subtreeQuota`` is its nominalQuota; a
  Cohort's is its own nominalQuota (Cohort ``spec.resourceGroups``) plus, of each
  child, ``subtreeQuota - localQuota``, where ``localQuota`` is
  ``max(0, subtreeQuota - lendingLimit)`` when a lendingLimit is set, else 0 (all
  of a child's quota is lendable). A Cohort's usage is, of each child,
  ``max(0, usage - localQuota)``. ``available(node)`` is
  ``max(0, localQuota - usage)`` plus what the parent has available, the latter
  capped by the node's borrowingLimit (``subtreeQuota - localQuota - usedInParent
  + borrowingLimit``); a root's is ``subtreeQuota - usage``.
  ``potentialAvailable`` is the same with nothing used: the most the queue could
  ever get (``localQuota + parent's``, capped at ``subtreeQuota +
  borrowingLimit``).
* ``pkg/scheduler/flavorassigner/flavorassigner.go``: flavors are tried in the
  order of the ClusterQueue's ``resourceGroups[].flavors``; a flavor is skipped
  when it does not exist (``flavor %s not found``), when a taint of its
  ``nodeTaints`` is not tolerated by the pod set's tolerations plus the flavor's
  ``tolerations`` (``untolerated taint %s in flavor %s``), or when the pod set's
  nodeSelector / required node affinity, restricted to the flavor's
  ``nodeLabels`` keys, does not match the flavor's labels (``flavor %s doesn't
  match node affinity``). For quota: a request (plus what earlier pod sets took of
  the same flavor) above ``potentialAvailable`` never fits (``insufficient quota
  for %s in flavor %s, previously considered podsets requests (%s) + current
  podset request (%s) > maximum capacity (%s)``); above ``available`` it waits or
  preempts (``insufficient unused quota for %s in flavor %s, %s more needed``).

Usage is the ClusterQueue's ``status.flavorsReservation`` (quota reserved, what
admission counts), else ``status.flavorsUsage``. Quantities are floats in base
units (``parse_quantity``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from .matching import tolerates_raw
from .quantity import format_quantity, parse_quantity
from .snapshot import parse_time

FR = tuple[str, str]   # (flavor, resource)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Kueue's defaults (apis/kueue/v1beta1/clusterqueue_types.go kubebuilder defaults).
DEFAULT_STRATEGY = "BestEffortFIFO"


def _q(value: Any) -> float:
    try:
        return parse_quantity(value)
    except ValueError:
        return 0.0


def _opt_q(value: Any) -> Optional[float]:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def _d(x: Any) -> dict:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list:
    return x if isinstance(x, list) else []


def _spec(obj: Any) -> dict:
    return _d(obj.get("spec") if isinstance(obj, Mapping) else getattr(obj, "spec", None))


def _status(obj: Any) -> dict:
    return _d(obj.get("status") if isinstance(obj, Mapping) else getattr(obj, "status", None))


def _name(obj: Any) -> str:
    if isinstance(obj, Mapping):
        return str(_d(obj.get("metadata")).get("name") or "")
    return obj.metadata.name or ""


# ------------------------------------------------------------------ the quota tree


@dataclass(frozen=True)
class Quota:
    nominal: float = 0.0
    borrowing_limit: Optional[float] = None
    lending_limit: Optional[float] = None


def quotas_of(resource_groups: Any) -> dict[FR, Quota]:
    """``spec.resourceGroups`` of a ClusterQueue or Cohort, per (flavor, resource)."""
    out: dict[FR, Quota] = {}
    for rg in _l(resource_groups):
        for fl in _l(_d(rg).get("flavors")):
            fname = str(_d(fl).get("name") or "")
            for r in _l(_d(fl).get("resources")):
                r = _d(r)
                if not r.get("name"):
                    continue
                out[(fname, str(r["name"]))] = Quota(_q(r.get("nominalQuota", 0)), _opt_q(r.get("borrowingLimit")),
                                                    _opt_q(r.get("lendingLimit")))
    return out


def usage_of(status: Mapping[str, Any]) -> dict[FR, float]:
    """A ClusterQueue's reserved quota per (flavor, resource): ``flavorsReservation``
    (what admission counts), else ``flavorsUsage``."""
    entries = _l(status.get("flavorsReservation")) or _l(status.get("flavorsUsage"))
    out: dict[FR, float] = {}
    for fu in entries:
        fname = str(_d(fu).get("name") or "")
        for r in _l(_d(fu).get("resources")):
            r = _d(r)
            if r.get("name"):
                out[(fname, str(r["name"]))] = _q(r.get("total", 0))
    return out


def cohort_of(cq: Any) -> str:
    """``spec.cohort`` (v1beta1) or ``spec.cohortName`` (v1beta2)."""
    spec = _spec(cq)
    return str(spec.get("cohortName") or spec.get("cohort") or "")


@dataclass
class _Node:
    name: str
    is_cq: bool
    parent: Optional[str]               # cohort name
    quotas: dict[FR, Quota] = field(default_factory=dict)
    usage: dict[FR, float] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)   # node keys


class QuotaTree:
    """ClusterQueues and Cohorts (explicit Cohort objects and the implicit ones
    ClusterQueues name), with Kueue's subtree quota, usage and availability."""

    def __init__(self, cluster_queues: Iterable[Any], cohorts: Iterable[Any] = ()):
        self.nodes: dict[str, _Node] = {}
        for co in cohorts:
            spec = _spec(co)
            key = "co/" + _name(co)
            self.nodes[key] = _Node(_name(co), False, str(spec.get("parentName") or "") or None,
                                    quotas_of(spec.get("resourceGroups")))
        for cq in cluster_queues:
            key = "cq/" + _name(cq)
            self.nodes[key] = _Node(_name(cq), True, cohort_of(cq) or None,
                                    quotas_of(_spec(cq).get("resourceGroups")), usage_of(_status(cq)))
        for key, n in list(self.nodes.items()):
            if n.parent:
                self.nodes.setdefault("co/" + n.parent, _Node(n.parent, False, None))
        # A cohort cycle makes Kueue refuse the whole tree (ErrCohortHasCycle):
        # cut it here so the arithmetic terminates.
        for key, n in self.nodes.items():
            seen = {key}
            p = n.parent
            while p:
                pk = "co/" + p
                if pk in seen:
                    n.parent = None
                    break
                seen.add(pk)
                p = self.nodes[pk].parent
        for key, n in self.nodes.items():
            if n.parent:
                self.nodes["co/" + n.parent].children.append(key)
        self._subtree: dict[tuple[str, FR], float] = {}
        self._cusage: dict[tuple[str, FR], float] = {}

    def has(self, cq: str) -> bool:
        return "cq/" + cq in self.nodes

    def quota(self, key: str, fr: FR) -> Quota:
        return self.nodes[key].quotas.get(fr, Quota())

    def subtree_quota(self, key: str, fr: FR) -> float:
        k = (key, fr)
        if k not in self._subtree:
            n = self.nodes[key]
            total = n.quotas[fr].nominal if fr in n.quotas else 0.0
            if not n.is_cq:
                for c in n.children:
                    total += self.subtree_quota(c, fr) - self.local_quota(c, fr)
            self._subtree[k] = total
        return self._subtree[k]

    def usage(self, key: str, fr: FR) -> float:
        n = self.nodes[key]
        if n.is_cq:
            return n.usage.get(fr, 0.0)
        k = (key, fr)
        if k not in self._cusage:
            self._cusage[k] = sum(max(0.0, self.usage(c, fr) - self.local_quota(c, fr)) for c in n.children)
        return self._cusage[k]

    def local_quota(self, key: str, fr: FR) -> float:
        """What a node keeps for itself: ``subtreeQuota - lendingLimit`` when one is
        set, else 0 (``resourceNode.localQuota``)."""
        ll = self.quota(key, fr).lending_limit
        if ll is None:
            return 0.0
        return max(0.0, self.subtree_quota(key, fr) - ll)

    def local_available(self, key: str, fr: FR) -> float:
        return max(0.0, self.local_quota(key, fr) - self.usage(key, fr))

    def available(self, key: str, fr: FR) -> float:
        n = self.nodes[key]
        if not n.parent:
            return self.subtree_quota(key, fr) - self.usage(key, fr)
        pk = "co/" + n.parent
        parent = self.available(pk, fr)
        bl = self.quota(key, fr).borrowing_limit
        if bl is not None:
            lq = self.local_quota(key, fr)
            stored = self.subtree_quota(key, fr) - lq
            used_in_parent = max(0.0, self.usage(key, fr) - lq)
            parent = min(stored - used_in_parent + bl, parent)
        return self.local_available(key, fr) + parent

    def potential_available(self, key: str, fr: FR) -> float:
        n = self.nodes[key]
        if not n.parent:
            return self.subtree_quota(key, fr)
        avail = self.local_quota(key, fr) + self.potential_available("co/" + n.parent, fr)
        bl = self.quota(key, fr).borrowing_limit
        if bl is not None:
            avail = min(self.subtree_quota(key, fr) + bl, avail)
        return avail

    def room(self, cq: str, fr: FR) -> "Room":
        key = "cq/" + cq
        q = self.quota(key, fr)
        used = self.usage(key, fr)
        free = max(0.0, q.nominal - used)
        avail = max(0.0, self.available(key, fr))
        parent = self.nodes[key].parent
        return Room(fr[0], fr[1], q.nominal, used, free, avail, max(0.0, self.potential_available(key, fr)),
                    q.borrowing_limit, q.lending_limit, parent,
                    lendable=max(0.0, avail - free) if parent else 0.0,
                    lent_out=max(0.0, free - avail) if parent else 0.0,
                    cohort_free=max(0.0, self.available("co/" + parent, fr)
                                    - max(0.0, free - max(0.0, free - avail) - self.local_available(key, fr)))
                    if parent else 0.0)

    def cohort_members(self, cohort: str) -> list[str]:
        """The ClusterQueues under a cohort (its subtree), by name."""
        out: list[str] = []
        stack = ["co/" + cohort]
        while stack:
            n = self.nodes.get(stack.pop())
            if n is None:
                continue
            for c in n.children:
                (out.append(self.nodes[c].name) if self.nodes[c].is_cq else stack.append(c))
        return sorted(out)


@dataclass(frozen=True)
class Room:
    """One (flavor, resource) of a ClusterQueue, as a person checks it by hand."""

    flavor: str
    resource: str
    nominal: float
    used: float            # reserved in this ClusterQueue
    free: float            # max(0, nominal - used)
    available: float       # what Kueue would let it take now (its own and the cohort's)
    potential: float       # the most it could ever take (nothing used anywhere)
    borrowing_limit: Optional[float]
    lending_limit: Optional[float]
    cohort: Optional[str]
    lendable: float        # what the cohort lends it beyond its own free quota
    lent_out: float        # of its own free quota, what other queues of the cohort use
    cohort_free: float = 0.0   # what the cohort has unused besides this queue's own (before its borrowingLimit)

    def describe(self, need: Optional[float] = None) -> str:
        f = lambda v: format_quantity(self.resource, v)  # noqa: E731
        head = f"flavor {self.flavor}: " + (f"needs {f(need)} {self.resource}, " if need is not None else f"{self.resource}: ")
        text = head + f"queue has {f(self.free)} free of {f(self.nominal)} nominal ({f(self.used)} reserved)"
        if self.cohort:
            text += f", cohort {self.cohort} can lend {f(self.lendable)}"
            if self.cohort_free > self.lendable + 1e-9:
                text += f" of the {f(self.cohort_free)} it has unused"
            if self.borrowing_limit is not None:
                text += f" (borrowingLimit {f(self.borrowing_limit)})"
            if self.lent_out:
                text += f"; {f(self.lent_out)} of its unused quota is borrowed by other queues of the cohort"
        if self.lending_limit is not None:
            text += f", lendingLimit {f(self.lending_limit)}"
        return text


# ------------------------------------------------------------------ workloads


def conditions(obj: Any) -> list[dict]:
    return [c for c in _l(_status(obj).get("conditions")) if isinstance(c, dict)]


def condition(obj: Any, ctype: str) -> Optional[dict]:
    for c in conditions(obj):
        if c.get("type") == ctype:
            return c
    return None


def is_admitted(wl: Any) -> bool:
    c = condition(wl, "Admitted")
    return c is not None and c.get("status") == "True"


def has_reservation(wl: Any) -> bool:
    c = condition(wl, "QuotaReserved")
    return c is not None and c.get("status") == "True"


def is_finished(wl: Any) -> bool:
    c = condition(wl, "Finished")
    return c is not None and c.get("status") == "True"


def _reserved_at(wl: Any) -> dt.datetime:
    """When the Workload got its quota (QuotaReserved's lastTransitionTime), else its creation."""
    c = condition(wl, "QuotaReserved") or {}
    return parse_time(c.get("lastTransitionTime")) or parse_time(wl.metadata.creationTimestamp) or _EPOCH


def admitted_cq(wl: Any) -> str:
    return str(_d(_status(wl).get("admission")).get("clusterQueue") or "")


def priority_of(wl: Any) -> int:
    p = _spec(wl).get("priority")
    return int(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else 0


def _pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """A pod template's effective requests: containers summed (limits stand in for a
    missing request), init containers as the max, plus overhead."""
    total: dict[str, float] = {}
    for c in _l(spec.get("containers")):
        res = _d(_d(c).get("resources"))
        req, lim = _d(res.get("requests")), _d(res.get("limits"))
        for r in set(req) | set(lim):
            total[r] = total.get(r, 0.0) + _q(req.get(r, lim.get(r)))
    for c in _l(spec.get("initContainers")):
        res = _d(_d(c).get("resources"))
        req, lim = _d(res.get("requests")), _d(res.get("limits"))
        for r in set(req) | set(lim):
            total[r] = max(total.get(r, 0.0), _q(req.get(r, lim.get(r))))
    for r, v in _d(spec.get("overhead")).items():
        total[r] = total.get(r, 0.0) + _q(v)
    return total


@dataclass
class PodSetNeed:
    name: str
    count: int
    requests: dict[str, float]           # totals for the pod set (count x per pod)
    template: dict                       # the pod template's spec (selectors, tolerations)


def podset_needs(wl: Any) -> list[PodSetNeed]:
    """Each pod set's total requests: ``status.resourceRequests`` (what Kueue
    computed) where present, else ``count`` x the template's requests."""
    spec, status = _spec(wl), _status(wl)
    computed = {str(_d(r).get("name")): _d(_d(r).get("resources")) for r in _l(status.get("resourceRequests"))}
    out = []
    for ps in _l(spec.get("podSets")):
        ps = _d(ps)
        name = str(ps.get("name") or "main")
        count = ps.get("count", 1)
        count = int(count) if isinstance(count, int) and not isinstance(count, bool) else 1
        tspec = _d(_d(ps.get("template")).get("spec"))
        if name in computed and computed[name]:
            req = {r: _q(v) for r, v in computed[name].items()}
        else:
            req = {r: v * count for r, v in _pod_requests(tspec).items()}
        out.append(PodSetNeed(name, count, {r: v for r, v in req.items() if v > 0}, tspec))
    return out


def workload_usage(wl: Any) -> dict[FR, float]:
    """What an admitted (quota-reserved) Workload holds per (flavor, resource):
    ``status.admission.podSetAssignments[].flavors`` and ``resourceUsage``."""
    out: dict[FR, float] = {}
    for psa in _l(_d(_status(wl).get("admission")).get("podSetAssignments")):
        psa = _d(psa)
        flavors = _d(psa.get("flavors"))
        for r, v in _d(psa.get("resourceUsage")).items():
            fl = flavors.get(r)
            if fl:
                out[(str(fl), r)] = out.get((str(fl), r), 0.0) + _q(v)
    return out


# ------------------------------------------------------------------ flavor assignment


def taint_string(t: Mapping[str, Any]) -> str:
    """``corev1.Taint.ToString()``: ``key=value:effect`` or ``key:effect``."""
    key, value, effect = t.get("key") or "", t.get("value") or "", t.get("effect") or ""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _req_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = req.get("key"), req.get("operator"), [str(v) for v in _l(req.get("values"))]
    value = labels.get(key) if key is not None else None
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def flavor_skip(flavor_name: str, flavor: Optional[Any], template: Mapping[str, Any]) -> Optional[str]:
    """Why Kueue's flavor assigner would skip this flavor for a pod set, in its own
    words (``checkFlavorForPodSets``), or None."""
    if flavor is None:
        return f"flavor {flavor_name} not found"
    fspec = _spec(flavor)
    tols = [_d(t) for t in _l(template.get("tolerations"))] + [_d(t) for t in _l(fspec.get("tolerations"))]
    for taint in _l(fspec.get("nodeTaints")):
        taint = _d(taint)
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates_raw(t, taint) for t in tols):
            return f"untolerated taint {taint_string(taint)} in flavor {flavor_name}"
    labels = {str(k): str(v) for k, v in _d(fspec.get("nodeLabels")).items()}
    keys = set(labels)
    for k, v in _d(template.get("nodeSelector")).items():
        if k in keys and labels.get(k) != str(v):
            return f"flavor {flavor_name} doesn't match node affinity"
    na = _d(_d(template.get("affinity")).get("nodeAffinity"))
    terms = _l(_d(na.get("requiredDuringSchedulingIgnoredDuringExecution")).get("nodeSelectorTerms"))
    kept: list[list[dict]] = []
    for t in terms:
        exprs = [_d(e) for e in _l(_d(t).get("matchExpressions")) if _d(e).get("key") in keys]
        if not exprs:      # a term with no relevant key matches any flavor (the terms are ORed)
            kept = []
            break
        kept.append(exprs)
    if kept and not any(all(_req_matches(e, labels) for e in exprs) for exprs in kept):
        return f"flavor {flavor_name} doesn't match node affinity"
    return None


@dataclass
class FlavorTry:
    flavor: str
    skipped: Optional[str] = None                          # Kueue's words for the skip
    needs: dict[str, float] = field(default_factory=dict)  # resource -> request (with earlier pod sets')
    rooms: dict[str, Room] = field(default_factory=dict)
    short: dict[str, float] = field(default_factory=dict)  # resource -> more needed than available
    never: dict[str, float] = field(default_factory=dict)  # resource -> need above the most it could get

    @property
    def fits(self) -> bool:
        return self.skipped is None and not self.short and not self.never

    def messages(self) -> list[str]:
        """What Kueue would write for this flavor (flavorassigner.go)."""
        if self.skipped:
            return [self.skipped]
        out = []
        for r, v in sorted(self.never.items()):
            out.append(f"insufficient quota for {r} in flavor {self.flavor}, request {format_quantity(r, v)} "
                       f"> maximum capacity ({format_quantity(r, self.rooms[r].potential)})")
        for r, v in sorted(self.short.items()):
            out.append(f"insufficient unused quota for {r} in flavor {self.flavor}, {format_quantity(r, v)} more needed")
        return out


@dataclass
class PodSetAssignment:
    podset: str
    resources: dict[str, float]
    tries: list[FlavorTry] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)    # requested resources no resource group covers

    @property
    def chosen(self) -> Optional[FlavorTry]:
        return next((t for t in self.tries if t.fits), None)

    def needs_line(self) -> str:
        """'pod set main needs 8 nvidia.com/gpu, 64 cpu in total' (extended resources first)."""
        wanted = ", ".join(f"{format_quantity(r, v)} {r}" for r, v in sorted(self.resources.items(),
                                                                              key=lambda kv: gpu_first(kv[0])))
        return f"pod set {self.podset} needs {wanted or 'nothing'} in total"


def gpu_first(resource: str) -> tuple[bool, str]:
    """Sort key of resources as the flavor evidence lists them: extended (GPU) ones first."""
    return "/" not in resource, resource


def resource_groups(cq: Any) -> list[tuple[list[str], list[str]]]:
    """``(coveredResources, flavor names in order)`` per resource group."""
    out = []
    for rg in _l(_spec(cq).get("resourceGroups")):
        rg = _d(rg)
        out.append(([str(r) for r in _l(rg.get("coveredResources"))],
                    [str(_d(f).get("name") or "") for f in _l(rg.get("flavors"))]))
    return out


def assign_flavors(tree: QuotaTree, cq: Any, flavors: Mapping[str, Any], podsets: list[PodSetNeed]) -> list[PodSetAssignment]:
    """Kueue's flavor assignment, pod set by pod set, in ``resourceGroups`` order:
    each flavor tried with why it was skipped or what quota it lacked; the first
    that fits every covered resource is taken (and counts for the next pod sets)."""
    name = _name(cq)
    assumed: dict[FR, float] = {}
    out = []
    for ps in podsets:
        a = PodSetAssignment(ps.name, dict(ps.requests))
        covered: set[str] = set()
        for res, fnames in resource_groups(cq):
            wanted = {r: v for r, v in ps.requests.items() if r in res}
            covered |= set(res)
            if not wanted:
                continue
            for fname in fnames:
                t = FlavorTry(fname)
                t.skipped = flavor_skip(fname, flavors.get(fname), ps.template)
                if t.skipped is None:
                    for r, v in sorted(wanted.items()):
                        fr = (fname, r)
                        val = assumed.get(fr, 0.0) + v
                        room = tree.room(name, fr)
                        t.needs[r], t.rooms[r] = val, room
                        if val > room.potential + 1e-9:
                            t.never[r] = val
                        elif val > room.available + 1e-9:
                            t.short[r] = val - room.available
                a.tries.append(t)
                if t.fits:
                    for r, v in t.needs.items():
                        assumed[(fname, r)] = v
                    break
        a.uncovered = sorted(r for r in ps.requests if r not in covered)
        out.append(a)
    return out


# ------------------------------------------------------------------ preemption


@dataclass
class Preemption:
    policy: str                 # which ClusterQueue policy allows it
    victims: list[tuple[str, float]]   # ("ns/name (priority p, ClusterQueue c)", amount freed)
    frees: float
    short: float

    @property
    def helps(self) -> bool:
        return self.frees + 1e-9 >= self.short


def preemption_options(tree: QuotaTree, cq: Any, wl: Any, workloads: Iterable[Any], fr: FR, short: float,
                       need: float) -> list[Preemption]:
    """Which admitted workloads Kueue's ClusterQueue ``spec.preemption`` lets this
    Workload preempt for one (flavor, resource), and whether that frees ``short``:
    withinClusterQueue (LowerPriority, LowerOrNewerEqualPriority) among the queue's
    own workloads (only while the request fits the nominal quota, unless
    borrowWithinCohort allows preempting while borrowing), reclaimWithinCohort
    (LowerPriority, Any) among other queues of the cohort that borrow (at most what
    they borrow). docs: https://kueue.sigs.k8s.io/docs/concepts/preemption/"""
    name = _name(cq)
    pre = _d(_spec(cq).get("preemption"))
    within = str(pre.get("withinClusterQueue") or "Never")
    reclaim = str(pre.get("reclaimWithinCohort") or "Never")
    borrow = _d(pre.get("borrowWithinCohort"))
    prio = priority_of(wl)
    created = parse_time(wl.metadata.creationTimestamp)
    admitted = [w for w in workloads if has_reservation(w) and not is_finished(w) and admitted_cq(w)]

    def label(w: Any) -> str:
        return f"{w.metadata.namespace}/{w.metadata.name} (priority {priority_of(w)}, ClusterQueue {admitted_cq(w)})"

    out: list[Preemption] = []
    nominal = tree.quota("cq/" + name, fr).nominal
    borrow_ok = borrow.get("policy") == "LowerPriority"
    if within != "Never" and (need <= nominal + 1e-9 or borrow_ok):
        victims = []
        for w in admitted:
            if admitted_cq(w) != name or w is wl:
                continue
            p = priority_of(w)
            ok = p < prio
            if within == "LowerOrNewerEqualPriority" and p == prio:
                t = parse_time(w.metadata.creationTimestamp)
                ok = ok or (t is not None and created is not None and t > created)
            amount = workload_usage(w).get(fr, 0.0)
            if ok and amount > 0:
                victims.append((w, amount))
        # Kueue preempts the fewest it needs: lowest priority first, then the most recently admitted
        # (pkg/scheduler/preemption/common/ordering.go CandidatesOrdering).
        victims.sort(key=lambda v: (priority_of(v[0]), -_reserved_at(v[0]).timestamp()))
        taken, freed = [], 0.0
        for w, amount in victims:
            if freed + 1e-9 >= short:
                break
            taken.append((label(w), amount))
            freed += amount
        out.append(Preemption(f"withinClusterQueue: {within}", taken, freed, short))
    cohort = tree.nodes["cq/" + name].parent if tree.has(name) else None
    if reclaim != "Never" and cohort:
        victims = []
        for other in tree.cohort_members(cohort):
            if other == name:
                continue
            ok_node = "cq/" + other
            borrowed = max(0.0, tree.usage(ok_node, fr) - tree.quota(ok_node, fr).nominal)
            if borrowed <= 0:
                continue
            taken = 0.0
            for w in sorted((w for w in admitted if admitted_cq(w) == other), key=priority_of):
                if reclaim == "LowerPriority" and priority_of(w) >= prio:
                    continue
                amount = min(workload_usage(w).get(fr, 0.0), borrowed - taken)
                if amount > 0:
                    victims.append((label(w), amount))
                    taken += amount
        out.append(Preemption(f"reclaimWithinCohort: {reclaim}", victims, sum(v for _, v in victims), short))
    return out


# ------------------------------------------------------------------ queue order


def pending_order(workloads: Iterable[Any], cq_name: str, lq_to_cq: Mapping[tuple[str, str], str],
                  strategy: str = DEFAULT_STRATEGY) -> list[Any]:
    """The ClusterQueue's pending Workloads in the order Kueue's queue heap pops
    them (StrictFIFO and BestEffortFIFO alike: higher priority first, then older;
    pkg/cache/queue/cluster_queue.go baseCompareFunc; StrictFIFO
    keeps the head blocking, BestEffortFIFO sets inadmissible ones aside). A Workload is pending in the
    queue when its LocalQueue points at it, it is active and holds no reservation."""
    out = []
    for w in workloads:
        spec = _spec(w)
        if spec.get("active") is False or has_reservation(w) or is_finished(w):
            continue
        lq = str(spec.get("queueName") or "")
        if lq_to_cq.get((w.metadata.namespace or "", lq)) != cq_name:
            continue
        out.append(w)
    out.sort(key=lambda w: (-priority_of(w), w.metadata.creationTimestamp or "", w.metadata.name or ""))
    return out


# ------------------------------------------------------------------ quota per flavor (nodes capacity)


def quota_rows(cluster_queues: Iterable[Any], cohorts: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """One row per ClusterQueue, flavor and resource: nominal quota, what is reserved,
    free (max(0, nominal - reserved)), borrowing and lending limits, the cohort."""
    cqs = list(cluster_queues)
    tree = QuotaTree(cqs, cohorts)
    rows = []
    for cq in sorted(cqs, key=_name):
        name = _name(cq)
        node = tree.nodes["cq/" + name]
        for fr in sorted(set(node.quotas) | set(node.usage)):
            q = node.quotas.get(fr, Quota())
            used = node.usage.get(fr, 0.0)
            rows.append({"clusterQueue": name, "cohort": node.parent, "flavor": fr[0], "resource": fr[1],
                         "nominal": q.nominal, "reserved": used, "free": max(0.0, q.nominal - used),
                         "borrowingLimit": q.borrowing_limit, "lendingLimit": q.lending_limit})
    return rows


def flavor_matches_node(flavor: Any, labels: Mapping[str, str]) -> bool:
    """A node carries every label of the flavor's ``spec.nodeLabels`` (how Kueue
    steers a flavor's pods to its nodes)."""
    want = _d(_spec(flavor).get("nodeLabels"))
    return bool(want) and all(labels.get(k) == str(v) for k, v in want.items())
