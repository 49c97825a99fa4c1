"""``gpuctl fit``: would these pods fit, before they exist (docs/fit.md).

No second scheduler: each pod template becomes the same slim Pod record the
collectors make, added to an overlay of the snapshot as an unbound Pending pod
with no events, and the pod engine (``diagnose_pod``) runs on it. Its fit matrix
and findings are those ``diagnose pod`` gives the same pod once it exists.

Gangs: the replicas are placed one after another. Each is diagnosed against the
overlay as it stands; it goes to the fitting node the scheduler's MostAllocated
scoring ranks first (the most allocated after placement), and becomes a bound pod
there, so the next replica's resources, affinity, anti-affinity and topology
spread see it. The first replica that fits nowhere is the one whose diagnosis says
what stops the gang.

Counterfactuals (``--assume``) change the overlay before anything is placed."""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from typing import Any, Optional

import msgspec

from ..checks.context import used_by
from ..checks.memo import Memo
from ..errors import UsageError
from ..findings import Diagnosis, Severity
from ..knowledge import catalog
from ..model import objects as O
from ..model.manifests import KUEUE_QUEUE_LABEL, PodTemplate
from ..model.quantity import parse_quantity
from ..model.requests import is_extended, pod_requests
from ..model.snapshot import EVENTS, Snapshot
from .pod import diagnose_pod

# Later replicas of a template without inter-pod rules reuse the fit matrix, only the
# node the previous one went to recomputed (tests/test_fit.py compares with False).
REUSE_MATRIX = True
# Findings that only say the pod is new (it was made a moment ago): not a cause.
NEW_POD_ONLY = frozenset({"scheduling-in-progress"})
FIT_UID = "gpuctl-fit-"
# The memo entries that stay true while replicas are placed (others are recomputed).
_KEPT = ("device-plugin-state",)
ASSUME_KINDS = ("uncordon", "untaint", "free")
CORDON_TAINT = "node.kubernetes.io/unschedulable"
KUEUE_GATE = "kueue.x-k8s.io/admission"


# ------------------------------------------------------------------ the overlay


def overlay_of(snap: Snapshot) -> Snapshot:
    """A copy of the snapshot whose nodes, pods and events can change without
    touching the original (records themselves are replaced, never mutated). The
    pods to be placed have no events: the overlay has none, and no events gap."""
    o = copy.copy(snap)
    o.nodes = dict(snap.nodes)
    o.pods = dict(snap.pods)
    o.events = []
    o.gaps = {k: g for k, g in snap.gaps.items() if k != EVENTS}
    o.malformed = list(snap.malformed)
    o.generic = {k: list(v) for k, v in snap.generic.items()}
    o._event_index = None
    o._problem_index = None
    if snap.collected is not None:
        o.collected = set(snap.collected) | {EVENTS}
    return o


@dataclasses.dataclass
class Assumption:
    kind: str            # uncordon | untaint | free
    node: str
    key: Optional[str] = None
    removed: int = 0     # pods (free) or taints (untaint) taken away

    @property
    def text(self) -> str:
        if self.kind == "uncordon":
            return f"uncordoning {self.node}"
        if self.kind == "untaint":
            return f"removing taint {self.key} from {self.node}"
        return f"freeing {self.node} ({self.removed} non-DaemonSet pod{'s' if self.removed != 1 else ''} gone)"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "node": self.node, "text": self.text}
        if self.key is not None:
            d["key"] = self.key
        if self.kind == "free":
            d["podsRemoved"] = self.removed
        return d


def parse_assumptions(items: Any) -> list[Assumption]:
    """``uncordon=NODE``, ``untaint=NODE:KEY``, ``free=NODE`` (usage error otherwise)."""
    out = []
    for raw in items or ():
        if not isinstance(raw, str):
            raise UsageError(f"--assume {raw!r}: give uncordon=NODE, untaint=NODE:KEY or free=NODE")
        kind, sep, rest = raw.partition("=")
        if not sep or kind not in ASSUME_KINDS or not rest:
            raise UsageError(f"--assume {raw!r}: give uncordon=NODE, untaint=NODE:KEY or free=NODE")
        key = None
        if kind == "untaint":
            node, sep, key = rest.partition(":")
            if not sep or not node or not key:
                raise UsageError(f"--assume {raw!r}: untaint takes NODE:KEY (the taint's key)")
        else:
            node = rest
        out.append(Assumption(kind, node, key))
    return out


def apply_assumptions(o: Snapshot, assumptions: list[Assumption]) -> None:
    """Change the overlay as each assumption says; a node the snapshot does not
    have is a usage error naming it (and the closest names)."""
    from ..model.names import suggest

    for a in assumptions:
        node = o.nodes.get(a.node)
        if node is None:
            raise UsageError(f"--assume {a.kind}={a.node}{':' + a.key if a.key else ''}: no node {a.node!r} in the cluster",
                             suggest(a.node, list(o.nodes)))
        if a.kind == "uncordon":
            spec = msgspec.structs.replace(node.spec, unschedulable=False,
                                           taints=[t for t in node.spec.taints if t.key != CORDON_TAINT])
            o.nodes[a.node] = msgspec.structs.replace(node, spec=spec)
        elif a.kind == "untaint":
            keep = [t for t in node.spec.taints if t.key != a.key]
            a.removed = len(node.spec.taints) - len(keep)
            if not a.removed:
                have = ", ".join(sorted({t.key for t in node.spec.taints})) or "none"
                raise UsageError(f"--assume untaint={a.node}:{a.key}: node {a.node} has no taint {a.key!r} (its taints: {have})")
            spec = msgspec.structs.replace(node.spec, taints=keep)
            o.nodes[a.node] = msgspec.structs.replace(node, spec=spec)
        else:
            gone = [k for k, p in o.pods.items() if p.spec.nodeName == a.node and not p.terminated
                    and not any(r.kind in ("DaemonSet", "Node") for r in getattr(p.metadata, "ownerReferences", ()))]
            for k in gone:
                del o.pods[k]
            a.removed = len(gone)


# ------------------------------------------------------------------ a pod from a template


def pod_record(tmpl: PodTemplate, name: str, uid: str, created: str, claims: Optional[list[dict]] = None) -> O.Pod:
    """The template as the Pod record a collector makes of a new, unbound pod
    (``claims``: its ``status.resourceClaimStatuses``, the claims made for it)."""
    d = copy.deepcopy(tmpl.pod)
    meta = d.setdefault("metadata", {})
    meta.update({"name": name, "namespace": tmpl.namespace, "uid": uid, "creationTimestamp": created})
    if tmpl.kind != "Pod":
        kind = "Job" if tmpl.kind == "Job.batch.volcano.sh" else tmpl.kind
        meta["ownerReferences"] = [{"kind": kind, "name": tmpl.name, "controller": True,
                                    "apiVersion": "batch.volcano.sh/v1alpha1" if tmpl.kind == "Job.batch.volcano.sh" else ""}]
    d.pop("status", None)
    d["status"] = {"phase": "Pending", **({"resourceClaimStatuses": claims} if claims else {})}
    spec = d.get("spec") if isinstance(d.get("spec"), dict) else {}
    node_name = spec.pop("nodeName", None)
    if isinstance(node_name, str) and node_name:   # bound by hand: fitted as a required affinity to that node
        field = {"key": "metadata.name", "operator": "In", "values": [node_name]}
        aff = spec.setdefault("affinity", {}) if isinstance(spec.get("affinity", {}), dict) else {}
        na = aff.setdefault("nodeAffinity", {}) if isinstance(aff.get("nodeAffinity", {}), dict) else {}
        req = na.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        terms = req.get("nodeSelectorTerms") if isinstance(req, dict) else None
        if isinstance(terms, list) and terms:
            for t in terms:
                if isinstance(t, dict):
                    t["matchFields"] = [*(t.get("matchFields") or []), field]
        elif isinstance(req, dict):
            req["nodeSelectorTerms"] = [{"matchFields": [field]}]
    # Kueue's admission is judged on the queue itself (fit_admission): its label and
    # gate alone say nothing of a pod that does not exist yet.
    if isinstance(meta.get("labels"), dict):
        meta["labels"] = {k: v for k, v in meta["labels"].items() if k != KUEUE_QUEUE_LABEL}
    if isinstance(spec.get("schedulingGates"), list):
        spec["schedulingGates"] = [g for g in spec["schedulingGates"] if not (isinstance(g, dict) and g.get("name") == KUEUE_GATE)]
    rec, problems = O.decode_salvaging("Pod", d, source=tmpl.source)
    if rec is not None:
        problems = problems + O.scrub_quantities("Pod", rec)
    if rec is None or problems:
        first = problems[0] if problems else None
        what = f"{first.field}: {first.problem}" if first is not None else "not a pod template"
        raise UsageError(f"{tmpl.source}: {tmpl.label}: {what}")
    return rec


def needs_inter_pod(pod: O.Pod) -> bool:
    """Required pod (anti-)affinity or DoNotSchedule topology spread: placing one
    replica changes where the next may go beyond the node it took."""
    aff = pod.spec.affinity
    return bool(aff and any(a and a.requiredDuringSchedulingIgnoredDuringExecution
                            for a in (aff.podAntiAffinity, aff.podAffinity))) or any(
        c.whenUnsatisfiable == "DoNotSchedule" for c in pod.spec.topologySpreadConstraints)


def _bind(pod: O.Pod, node: str) -> O.Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, nodeName=node),
                                   status=msgspec.structs.replace(pod.status, phase="Running"))


# ------------------------------------------------------------------ scoring


def _alloc(node: O.Node, r: str) -> float:
    try:
        cap = parse_quantity(node.status.capacity.get(r, 0))
        return parse_quantity(node.status.allocatable.get(r, cap if r not in node.status.allocatable else 0))
    except ValueError:
        return 0.0


def scored_resources(requests: dict[str, float]) -> tuple[str, ...]:
    """What MostAllocated ranks by: the GPU resources the pod requests; else its
    other extended resources; else cpu and memory."""
    gpus = tuple(sorted(r for r, q in requests.items() if q > 0 and is_extended(r)
                        and (catalog.is_gpu_resource(r) or "gpu" in r.split("/", 1)[-1].lower() or r.split("/", 1)[-1].startswith("mig-"))))
    if gpus:
        return gpus
    ext = tuple(sorted(r for r, q in requests.items() if q > 0 and is_extended(r)))
    return ext or tuple(r for r in ("cpu", "memory") if requests.get(r, 0) > 0) or ("cpu", "memory")


def most_allocated(node: O.Node, pods: list, requests: dict[str, float]) -> tuple[int, float]:
    """The scheduler's MostAllocated score (0-100) of a node after the pod is placed
    there, over the scored resources, and cpu/memory's as a tie-break."""
    def score(resources: tuple[str, ...]) -> float:
        used = used_by(pods, resources)
        parts = []
        for r in resources:
            alloc = _alloc(node, r)
            if alloc > 0:
                parts.append(min(1.0, (used.get(r, 0.0) + requests.get(r, 0.0)) / alloc))
        return 100.0 * sum(parts) / len(parts) if parts else 0.0

    main = scored_resources(requests)
    return int(math.floor(score(main) + 1e-9)), score(("cpu", "memory"))


# ------------------------------------------------------------------ placing a template's replicas


@dataclasses.dataclass
class TemplateFit:
    template: PodTemplate
    first: Optional[Diagnosis] = None           # the first replica's diagnosis (its fit matrix)
    blocking: Optional[Diagnosis] = None        # the first replica that fits nowhere
    blocked_replica: Optional[int] = None       # its index (0-based)
    placements: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    ranked: list[dict[str, Any]] = dataclasses.field(default_factory=list)   # first replica's fit matrix, ranked
    requests: dict[str, float] = dataclasses.field(default_factory=dict)
    undecided: bool = False                     # node-fit could not run (nodes or pods unreadable)

    @property
    def placed(self) -> int:
        return len(self.placements)


class Placer:
    """Places templates one after another on one overlay: what an earlier
    template's replicas took, later ones see."""

    def __init__(self, overlay: Snapshot):
        self.o = overlay
        self.pbn = overlay.pods_by_node()
        self.shared: dict[Any, Any] = {}
        created = overlay.now().isoformat().replace("+00:00", "Z")
        self.created = created
        self.n = 0
        # Reuse needs a matrix over every node: none left out for an unreadable field.
        self.readable = not overlay.unreadable(("Node", "Pod"))

    def _memo(self) -> Memo:
        memo = Memo()
        memo["pods_by_node"] = self.pbn
        memo.update(self.shared)
        return memo

    def _keep(self, memo: Memo) -> None:
        for k, v in memo.items():
            if k in _KEPT or (isinstance(k, tuple) and k and k[0] == "used"):
                self.shared[k] = v

    def _name(self, tmpl: PodTemplate, i: int) -> str:
        if tmpl.kind == "Pod" and tmpl.replicas == 1:
            base = tmpl.name
        else:
            role = re.sub(r"[^a-z0-9-]+", "-", tmpl.role.lower()).strip("-") if tmpl.role else ""
            base = f"{tmpl.name}{'-' + role if role else ''}-{i}"
        name = base[:253]
        while True:
            have = self.o.pods.get(f"{tmpl.namespace}/{name}")
            if have is None or (not have.spec.nodeName and not str(have.metadata.uid).startswith(FIT_UID)):
                return name      # free, or an unbound pod of that name (nothing it holds changes)
            name = (name + "-fit")[:253]

    def _carry(self, memo: Memo, pod: O.Pod, node: str) -> Memo:
        """The memo for the next replica of a template without inter-pod rules, after
        one was bound to ``node``: what placing it cannot change is kept (other nodes'
        allocations and fits, the device-plugin state, the placed pods' anti-affinity,
        which its replicas do not add to), ``node``'s fit is recomputed, the rest (the
        findings drawn from the whole matrix) is dropped and recomputed."""
        from ..checks.context import NodeFit, PodContext

        new = Memo()
        matrices = []
        for k, v in memo.items():
            if k in ("pods_by_node", "placed-anti-affinity") or k in _KEPT:
                new[k] = v
            elif isinstance(k, tuple) and k and k[0] == "used":
                if k[1] != node:
                    new[k] = v
            elif isinstance(v, list) and v and isinstance(v[0], NodeFit):
                matrices.append((k, v))
        for k, v in matrices:
            fresh = PodContext(self.o, pod, new)._fit(self.o.nodes[node])
            new[k] = [fresh if f.name == node else f for f in v]
        return new

    @staticmethod
    def _matrix_rows(memo: Memo, d: Diagnosis) -> list[dict[str, Any]]:
        """The fitting nodes of the reused matrix, as rows with the fields placing
        reads (name, fits); none when node-fit did not run cleanly (as diagnose_pod
        would give no rows)."""
        from ..checks.context import NodeFit
        from ..findings import Status

        if any(c.name == "node-fit" and c.status in (Status.SKIPPED, Status.ERROR) for c in d.checks):
            return []
        for v in memo.values():
            if isinstance(v, list) and v and isinstance(v[0], NodeFit):
                return [{"name": f.name, "fits": True} for f in v if f.fits]
        return []

    def _claims(self, tmpl: PodTemplate, name: str) -> list[dict]:
        """The ResourceClaims the control plane makes from the template's
        ResourceClaimTemplates when the pod is created (named as it would:
        POD-CLAIM), added to the overlay unallocated; their statuses for the pod."""
        out = []
        spec = tmpl.pod.get("spec") if isinstance(tmpl.pod.get("spec"), dict) else {}
        for rc in spec.get("resourceClaims") or []:
            if not isinstance(rc, dict) or rc.get("resourceClaimName") or not rc.get("resourceClaimTemplateName"):
                continue
            t = self.o.find("ResourceClaimTemplate", tmpl.namespace, str(rc["resourceClaimTemplateName"]))
            if t is None or not isinstance((t.spec or {}).get("spec"), dict):
                continue
            claim_name = f"{name}-{rc.get('name')}"[:253]
            claim = O.convert("ResourceClaim", {"apiVersion": t.apiVersion, "kind": "ResourceClaim",
                                                "metadata": {"name": claim_name, "namespace": tmpl.namespace},
                                                "spec": copy.deepcopy(t.spec["spec"])})
            claim.kind = "ResourceClaim"
            self.o.generic.setdefault("ResourceClaim", []).append(claim)
            out.append({"name": rc.get("name"), "resourceClaimName": claim_name})
        return out

    def _pod_claims(self, pod: O.Pod) -> list[Any]:
        """The pod's ResourceClaims not yet allocated (its own, or generated for it)."""
        names = {s.name: s.resourceClaimName for s in pod.status.resourceClaimStatuses}
        out = []
        for rc in pod.spec.resourceClaims:
            name = rc.resourceClaimName or names.get(rc.name)
            claim = self.o.find("ResourceClaim", pod.metadata.namespace, name) if name else None
            if claim is not None and not (claim.status or {}).get("allocation"):
                out.append(claim)
        return out

    def _dra_nodes(self, pod: O.Pod) -> Optional[set[str]]:
        """Nodes where every unallocated claim of the pod finds its devices (the DRA
        model's allocator, ``model.dra``), or None when the pod has none to place or its
        devices are not node-local."""
        from ..model import dra as D

        claims = self._pod_claims(pod)
        if not claims:
            return None
        nodes: Optional[set[str]] = None
        for claim in claims:
            for rep in D.analyse_claim(self.o, claim):
                ok = set(rep.chosen.nodes_ok) if rep.chosen else set()
                if "" in ok:
                    continue      # a device every node reaches (allNodes / nodeSelector slices)
                nodes = ok if nodes is None else nodes & ok
        return nodes

    def _allocate_claims(self, pod: O.Pod, node: str) -> None:
        """As the scheduler does on binding: each claim of the pod gets devices on
        ``node`` (the allocator's order), written to its ``status.allocation``, so the
        next replica of the gang finds them taken."""
        from ..model import dra as D

        for claim in self._pod_claims(pod):
            results = []
            taken: set = set()
            for rep in D.analyse_claim(self.o, claim, taken=taken):
                alt = rep.chosen
                if alt is None:
                    continue
                here = [d for d in alt.usable if d.node in (node, "") and d.key not in {r[:3] for r in results}]
                for d in here[: (len(here) if alt.alt.mode == "All" else max(alt.alt.count, 1))]:
                    results.append((d.driver, d.pool, d.name, alt.alt.name))
            claim.status = {**(claim.status or {}), "allocation": {"devices": {"results": [
                {"request": req, "driver": drv, "pool": pool, "device": dev} for drv, pool, dev, req in results]}}}

    def place(self, tmpl: PodTemplate, limit: Optional[int] = None) -> TemplateFit:
        """Place the template's replicas, at most ``limit`` of them (what quota admits)."""
        out = TemplateFit(tmpl)
        memo: Optional[Memo] = None
        score_cache: dict[str, tuple[int, float]] = {}
        count = tmpl.replicas if limit is None else min(limit, tmpl.replicas)
        for i in range(max(count, 1) if tmpl.replicas else 0):   # none admitted: the first, for its fit matrix
            self.n += 1
            name = self._name(tmpl, i)
            pod = pod_record(tmpl, name, f"{FIT_UID}{self.n}", self.created, self._claims(tmpl, name))
            key = f"{tmpl.namespace}/{name}"
            self.o.pods[key] = pod
            # a DRA pod's devices change with each placement (its claims are allocated): no reuse
            reuse = REUSE_MATRIX and memo is not None and not needs_inter_pod(pod) and self.readable \
                and not pod.spec.resourceClaims
            memo = memo if reuse else self._memo()
            # A later replica on a reused matrix: its fitting nodes come from the matrix itself,
            # without the per-node document rows only the first replica's answer shows.
            d = diagnose_pod(self.o, tmpl.namespace, name, pod=pod, memo=memo, include_nodes=not reuse)
            if reuse:
                d.nodes = self._matrix_rows(memo, d)
            self._keep(memo)
            d.findings = [f for f in d.findings if f.code not in NEW_POD_ONLY]
            for c in d.checks:
                if c.detail in NEW_POD_ONLY:
                    c.detail = ""
            if i == 0:
                out.first = d
                out.requests = pod_requests(pod)
            # A blocker (a volume, a DRA claim, a gate) keeps it Pending wherever it would fit.
            held = any(f.severity == Severity.BLOCKER for f in d.findings)
            fitting = [n for n in d.nodes if n["fits"]] if not held else []
            dra_nodes = self._dra_nodes(pod)
            if dra_nodes is not None:   # the nodes whose devices can satisfy every claim of the pod
                fitting = [n for n in fitting if n["name"] in dra_nodes]
            scores = score_cache
            for n in fitting if i else [n for n in d.nodes if n["fits"]]:
                if n["name"] not in scores:
                    scores[n["name"]] = most_allocated(self.o.nodes[n["name"]], self.pbn.get(n["name"], []), out.requests)
            if i == 0:
                out.undecided = not d.nodes
                if dra_nodes is not None:   # the node fits the pod, but not its claims' devices
                    d.nodes = [n if not n["fits"] or n["name"] in dra_nodes else
                               {**n, "fits": False, "reasons": [*n["reasons"], "dra-claim-unallocatable"],
                                "details": [*n["details"], "no free devices here for the pod's ResourceClaims"]}
                               for n in d.nodes]
                fit_nodes = [n for n in d.nodes if n["fits"]]
                ranked = sorted(fit_nodes, key=lambda n: (-scores[n["name"]][0], -scores[n["name"]][1], n["name"]))
                out.ranked = [{**n, "score": scores[n["name"]][0]} for n in ranked] + [n for n in d.nodes if not n["fits"]]
            if i >= count:
                del self.o.pods[key]
                break
            if not fitting:
                del self.o.pods[key]
                out.blocking, out.blocked_replica = d, i
                break
            best = min(fitting, key=lambda n: (-scores[n["name"]][0], -scores[n["name"]][1], n["name"]))["name"]
            self._allocate_claims(pod, best)
            bound = _bind(pod, best)
            self.o.pods[key] = bound
            self.pbn.setdefault(best, []).append(bound)
            for k in [k for k in self.shared if isinstance(k, tuple) and len(k) > 1 and k[0] == "used" and k[1] == best]:
                del self.shared[k]
            out.placements.append({"pod": name, "node": best, "score": scores[best][0]})
            score_cache.pop(best, None)
            if REUSE_MATRIX and not needs_inter_pod(pod) and self.readable:
                memo = self._carry(memo, pod, best)
        return out
