"""``gpuctl fit``: would the namespace's ResourceQuota, and the Kueue LocalQueue or
Volcano queue the manifest names, let its pods in (docs/fit.md)?

ResourceQuota admission is per pod, at creation: the quota's remaining room,
divided by one pod's request, is how many pods it admits (the templates of one
run share that room, in order). Kueue and Volcano admit a workload as a whole:
the ClusterQueue's nominal quota per flavor, less what it has reserved, must hold
all of the workload's requests (borrowing from a cohort is not counted), and a
Volcano queue must be Open with room in its capability for minAvailable pods.
The findings use the codes ``diagnose pod`` uses: ``quota-exceeded`` and
``queue-not-admitted``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from ..findings import Finding, Fix
from ..model.manifests import PodTemplate
from ..model.objects import Pod
from ..model.quantity import format_quantity, parse_quantity
from ..model.snapshot import QUEUES, QUOTAS, Snapshot

_BARE = ("cpu", "memory", "ephemeral-storage")


def _q(value: Any) -> float:
    try:
        return parse_quantity(value)
    except ValueError:
        return 0.0


def _limits(pod: Pod) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in pod.spec.containers:
        for r, v in c.resources.limits.items():
            out[r] = out.get(r, 0.0) + _q(v)
    return out


@dataclass
class QuotaRoom:
    """What the namespace quotas have left while a run's templates take from it."""

    snap: Snapshot
    left: dict[tuple[str, str, str], float] = field(default_factory=dict)   # (ns, quota, key) -> room

    @property
    def known(self) -> bool:
        return QUOTAS not in self.snap.gaps

    def admit(self, tmpl: PodTemplate, requests: dict[str, float], pod: Pod, want: int) -> tuple[Optional[int], list[Finding], list[str]]:
        """How many of ``want`` pods the quotas admit (None: unknown), findings
        when fewer than ``want``, and evidence lines."""
        if not self.known:
            return None, [], [self.snap.gaps[QUOTAS].describe()]
        if self.snap.namespaces is not None and tmpl.namespace not in self.snap.namespaces:
            return None, [], [f"the snapshot holds no objects of namespace {tmpl.namespace} (its quotas are unknown)"]
        limits = _limits(pod)
        allowed = want
        findings: list[Finding] = []
        lines: list[str] = []
        takes: list[tuple[tuple[str, str, str], float]] = []
        for q in self.snap.quotas:
            if (q.metadata.namespace or "default") != tmpl.namespace:
                continue
            hard_map = q.status.hard or q.spec.hard
            for key, hard in sorted(hard_map.items()):
                if key in ("pods", "count/pods"):
                    need = 1.0
                    res = "pods"
                elif key.startswith("requests."):
                    res = key[len("requests."):]
                    need = requests.get(res, 0.0)
                elif key.startswith("limits."):
                    res = key[len("limits."):]
                    need = limits.get(res, 0.0)
                elif key in _BARE:
                    res, need = key, requests.get(key, 0.0)
                else:
                    continue
                if need <= 0:
                    continue
                k = (tmpl.namespace, q.metadata.name, key)
                if k not in self.left:
                    self.left[k] = max(0.0, _q(hard) - _q(q.status.used.get(key, 0)))
                room = self.left[k]
                fits = int(math.floor(room / need + 1e-9))
                used = q.status.used.get(key, 0)
                line = (f"resourcequota/{q.metadata.name} {key}: hard {hard}, used {used}"
                        + (f", room left {format_quantity(res, room)} after the pods placed before" if room != max(0.0, _q(hard) - _q(used)) else "")
                        + f"; each pod needs {format_quantity(res, need)}")
                lines.append(line)
                takes.append((k, need))
                if fits < want:
                    allowed = min(allowed, fits)
                    findings.append(Finding(
                        "quota-exceeded",
                        f"ResourceQuota {q.metadata.name} admits {fits} of {want} pod(s) of {tmpl.label}: {key} used "
                        f"{used} of {hard}, each pod needs {format_quantity(res, need)}",
                        evidence=[line], root_cause=True, disruption=1,
                        fixes=[Fix("Free quota (finished pods still count until deleted), lower the request, or raise the quota",
                                   [f"kubectl -n {tmpl.namespace} describe resourcequota {q.metadata.name}",
                                    f"kubectl -n {tmpl.namespace} get pods --field-selector status.phase=Running -o wide"])]))
        for k, need in takes:
            self.left[k] = max(0.0, self.left[k] - need * allowed)
        return allowed, findings, lines


# ------------------------------------------------------------------ queues


@dataclass
class QueueVerdict:
    system: str                       # kueue | volcano
    name: str
    admitted: Optional[bool]          # None: cannot tell
    evidence: list[str]
    finding: Optional[Finding] = None

    def to_dict(self) -> dict[str, Any]:
        return {"system": self.system, "name": self.name, "admitted": self.admitted, "evidence": list(self.evidence)}


def _objects(snap: Snapshot, kind: str, api_prefix: str) -> list:
    return [o for o in snap.objects(kind) if not o.apiVersion or o.apiVersion.startswith(api_prefix)]


def _not_admitted(system: str, name: str, ref: str, ns: str, summary: str, evidence: list[str], fixes: list[Fix]) -> QueueVerdict:
    return QueueVerdict(system, name, False, evidence,
                        Finding("queue-not-admitted", summary, evidence=evidence, root_cause=True, disruption=1, fixes=fixes))


def kueue_admission(snap: Snapshot, ref: str, ns: str, queue: str, podsets: list[tuple[str, int, dict[str, float], dict]]) -> QueueVerdict:
    """Whether Kueue would admit a workload of these pod sets ``(name, count, one
    pod's requests, pod spec)`` through LocalQueue ``queue`` now: the LocalQueue and
    its ClusterQueue exist, the ClusterQueue is active, and Kueue's flavor
    assignment (gpuctl/model/kueue.py: flavors in resourceGroups order, skipped when
    they do not suit the pod, quota with what the cohort can lend) finds a flavor
    with room for every pod set."""
    from ..model import kueue as K

    fixes = [Fix("See the ClusterQueue's quota and what holds it; free quota or raise nominalQuota",
                 [f"kubectl -n {ns} get localqueue {queue} -o yaml", "kubectl get clusterqueue -o wide"])]
    lqs = _objects(snap, "LocalQueue", "kueue.x-k8s.io/")
    cqs = {o.metadata.name: o for o in _objects(snap, "ClusterQueue", "kueue.x-k8s.io/")}
    if QUEUES in snap.gaps and not lqs:
        return QueueVerdict("kueue", queue, None, [snap.gaps[QUEUES].describe()])
    if not lqs and not cqs:
        return QueueVerdict("kueue", queue, None, ["no Kueue LocalQueue or ClusterQueue in the cluster's data: "
                                                   "is Kueue installed (and were its queues read)?"])
    lq = next((o for o in lqs if o.metadata.name == queue and (o.metadata.namespace or ns) == ns), None)
    if lq is None:
        here = sorted(o.metadata.name for o in lqs if (o.metadata.namespace or ns) == ns)
        return _not_admitted("kueue", queue, ref, ns, f"LocalQueue {queue} does not exist in namespace {ns}: Kueue holds {ref} suspended",
                             [f"LocalQueues in {ns}: {', '.join(here) or 'none'}"], fixes)
    cq_name = (lq.spec or {}).get("clusterQueue") or ""
    cq = cqs.get(cq_name)
    if cq is None:
        return _not_admitted("kueue", queue, ref, ns, f"LocalQueue {queue} points at ClusterQueue {cq_name or '(none)'}, which does not exist",
                             [f"localqueue/{queue} spec.clusterQueue: {cq_name or '(empty)'}",
                              f"ClusterQueues: {', '.join(sorted(cqs)) or 'none'}"], fixes)
    spec = cq.spec or {}
    evidence = [f"localqueue/{queue} -> clusterqueue/{cq_name}"]
    active = K.condition(cq, "Active")
    if active and active.get("status") == "False":
        evidence.append(f"clusterqueue/{cq_name} Active=False ({active.get('reason')}): {active.get('message', '')}")
        return _not_admitted("kueue", queue, ref, ns, f"ClusterQueue {cq_name} is not active: it admits nothing", evidence, fixes)
    if spec.get("stopPolicy") in ("Hold", "HoldAndDrain"):
        evidence.append(f"clusterqueue/{cq_name} spec.stopPolicy: {spec['stopPolicy']}")
        return _not_admitted("kueue", queue, ref, ns, f"ClusterQueue {cq_name} is stopped ({spec['stopPolicy']})", evidence, fixes)
    flavors = {o.metadata.name: o for o in _objects(snap, "ResourceFlavor", "kueue.x-k8s.io/")}
    tree = K.QuotaTree(list(cqs.values()), snap.objects("Cohort"))
    needs = [K.PodSetNeed(name, count, {r: v * count for r, v in req.items() if v > 0}, pod_spec)
             for name, count, req, pod_spec in podsets]
    short: list[str] = []
    for a in K.assign_flavors(tree, cq, flavors, needs):
        evidence.append(a.needs_line())
        for t in a.tries:
            if t.skipped:
                evidence.append(f"flavor {t.flavor} skipped: {t.skipped}")
                continue
            evidence += [t.rooms[r].describe(t.needs[r]) for r in sorted(t.needs, key=K.gpu_first)
                         if r in t.short or r in t.never or "/" in r]
            if t.fits:
                evidence.append(f"flavor {t.flavor} has room for pod set {a.podset} now")
        if a.uncovered:
            evidence.append(f"no resource group of ClusterQueue {cq_name} covers {', '.join(a.uncovered)}")
            short.append(f"pod set {a.podset}: {', '.join(a.uncovered)} not covered")
        elif a.chosen is None:
            why = [m for t in a.tries for m in t.messages()]
            short.append(f"pod set {a.podset}: " + ("; ".join(why[:2]) or "no flavor suits it"))
    if short:
        return _not_admitted("kueue", queue, ref, ns,
                             f"Kueue would not admit {ref} now in ClusterQueue {cq_name}: " + "; ".join(short), evidence, fixes)
    checks = [str(c) for c in spec.get("admissionChecks") or []] + [
        str(c.get("name")) for c in ((spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []) if isinstance(c, dict)]
    if checks:     # quota is there; admission waits for the checks' controllers (a ProvisioningRequest: the autoscaler)
        evidence.append(f"clusterqueue/{cq_name} admission checks {', '.join(checks)}: Kueue admits the workload only once "
                        "they pass, which their controllers decide later: cannot tell")
        return QueueVerdict("kueue", queue, None, evidence)
    return QueueVerdict("kueue", queue, True, evidence)


def volcano_admission(snap: Snapshot, ref: str, ns: str, queue: str, needed: dict[str, float]) -> QueueVerdict:
    """Whether Volcano's queue would take a job needing ``needed`` (its
    minAvailable pods): the Queue exists and is Open, and its capability less what
    it has allocated holds it."""
    fixes = [Fix("See the queue's state and capability; submit to an open queue with room, or lower minAvailable",
                 [f"kubectl get queues.scheduling.volcano.sh {queue} -o yaml"])]
    queues = {o.metadata.name: o for o in snap.objects("Queue") if o.apiVersion.startswith("scheduling.volcano.sh/") or not o.apiVersion}
    if QUEUES in snap.gaps and not queues:
        return QueueVerdict("volcano", queue, None, [snap.gaps[QUEUES].describe()])
    if not queues:
        return QueueVerdict("volcano", queue, None, ["no Volcano Queue in the cluster's data: is Volcano installed (and were its queues read)?"])
    q = queues.get(queue)
    if q is None:
        return _not_admitted("volcano", queue, ref, ns, f"Volcano queue {queue} does not exist: {ref} would be refused",
                             [f"queues: {', '.join(sorted(queues))}"], fixes)
    spec, status = q.spec or {}, q.status or {}
    evidence = [f"queue/{queue}: state {status.get('state', '?')}"]
    if status.get("state") and status.get("state") != "Open":
        return _not_admitted("volcano", queue, ref, ns, f"Volcano queue {queue} is {status.get('state')}, not Open", evidence, fixes)
    cap = spec.get("capability") or {}
    allocated = status.get("allocated") or {}
    short = []
    for res, need in sorted(needed.items()):
        if need <= 0 or res not in cap:
            continue
        room = _q(cap[res]) - _q(allocated.get(res, 0))
        evidence.append(f"queue/{queue} {res}: capability {cap[res]}, allocated {allocated.get(res, 0)}; "
                        f"minAvailable pods need {format_quantity(res, need)}")
        if room < need:
            short.append(res)
    if short:
        return _not_admitted("volcano", queue, ref, ns,
                             f"Volcano queue {queue} has no room for {ref}'s minAvailable pods: {', '.join(short)} over its capability",
                             evidence, fixes)
    return QueueVerdict("volcano", queue, True, evidence)
