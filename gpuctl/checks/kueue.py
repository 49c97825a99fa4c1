"""Kueue (kueue.x-k8s.io): why a pod's Workload is not admitted, with Kueue's own
numbers. Called by ``pod_state.queue_admission``; returns a ``QueueHold`` or None.

From the Workload, its LocalQueue, the ClusterQueue that LocalQueue names, the
ResourceFlavors and the Cohort tree (gpuctl/model/kueue.py holds the arithmetic,
transcribed from kubernetes-sigs/kueue), in the order Kueue itself decides:

1. the LocalQueue is missing, or names a ClusterQueue that does not exist
   (``LocalQueue %s doesn't exist`` / ``ClusterQueue %s doesn't exist``,
   pkg/controller/core/workload_controller.go);
2. the ClusterQueue is inactive (``Active=False``: Stopped, FlavorNotFound,
   AdmissionCheckNotFound, ... with ``Can't admit new workloads: ...``,
   pkg/cache/scheduler/clusterqueue.go inactiveReason);
3. quota is reserved but admission checks are not Ready (``status.admissionChecks``
   Pending / Retry / Rejected, e.g. a ProvisioningRequest whose message is the
   autoscaler's ``Provisioned`` condition);
4. quota: per pod set, the flavors tried in ``resourceGroups`` order with why each
   was skipped (taints, node labels) or what it lacks: needs, free of nominal,
   what the cohort can lend, borrowing and lending limits; whether preemption
   (``spec.preemption``) would free enough; the Workload's place in the queue
   (the visibility API's ``pendingworkloads`` when it was read, else the order
   Kueue's queue implies: priority, then creation time);
5. the Workload's own ``QuotaReserved=False`` message, parsed (flavor assignment,
   topology-aware scheduling) and quoted verbatim.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Optional

from ..findings import Fix
from ..knowledge.messages import load_yaml
from ..model import kueue as K
from ..model.names import is_dns1123_subdomain
from ..model.quantity import format_quantity
from ..model.snapshot import QUEUES, Snapshot
from .context import PodContext
from .queues import QueueHold, conditions

KUEUE_GATE = "kueue.x-k8s.io/admission"
QUEUE_LABEL = K.QUEUE_LABEL
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta1"
SUMMARY_KIND = "PendingWorkloadsSummary"
MAX_VICTIMS = 5



@lru_cache(maxsize=None)
def _rx(name: str) -> "re.Pattern[str]":
    """Kueue's message shapes, with their sources: gpuctl/knowledge/kueue_messages.yaml."""
    return re.compile(load_yaml("kueue_messages.yaml")[name])


def _kueue_workloads(ctx: PodContext) -> list[Any]:
    owners = {o.uid for o in ctx.pod.metadata.ownerReferences} | {ctx.pod.metadata.uid}
    out = []
    for w in ctx.snap.objects("Workload"):
        if w.metadata.namespace != ctx.ns:
            continue
        if any(o.uid in owners for o in w.metadata.ownerReferences if o.uid):
            out.append(w)
        elif w.metadata.labels.get("kueue.x-k8s.io/job-uid") in owners:
            out.append(w)
    return out


def _spec(o: Any) -> dict:
    return o.spec if isinstance(o.spec, dict) else {}


def _status(o: Any) -> dict:
    return o.status if isinstance(o.status, dict) else {}


def _by_name(snap: Snapshot, kind: str) -> dict[str, Any]:
    return {o.metadata.name: o for o in snap.objects(kind)}


def _safe(name: str) -> bool:
    return bool(name) and is_dns1123_subdomain(name)


def parse_message(message: str) -> list[str]:
    """The pieces of a Workload's QuotaReserved=False message, explained."""
    out = []
    for m in _rx("podset").finditer(message or ""):
        for s in _rx("short").finditer(m.group("why")):
            if s:
                out.append(f"pod set {m.group('ps')}: flavor {s.group('fl')} lacks {s.group('more')} {s.group('res')} "
                           f"of unused quota (Kueue's message)")
    for m in _rx("max").finditer(message or ""):
        out.append(f"flavor {m.group('fl')}: {m.group('cur')} {m.group('res')} (plus {m.group('prev')} for earlier pod sets) "
                   f"is more than the queue could ever get ({m.group('max')}): it will never be admitted as is")
    pre = _rx("preempting").search(message or "")
    if pre:
        out.append(f"Kueue is preempting {pre.group(1)} workload(s) to make room for it (scheduler.go): "
                   f"it is admitted once they are gone")
    for m in _rx("tas").finditer(message or ""):
        out.append(f"topology-aware scheduling: topology {m.group('topo')} has room for only {m.group('fit') or 0} of the "
                   f"{m.group('want')} {m.group('unit')}s the pod set needs in one domain"
                   + (f" ({m.group('nodes')} nodes; excluded: {m.group('excl')})" if m.group("nodes") else ""))
    return out


def _position(snap: Snapshot, wl: Any, cq_name: str, lq_to_cq: dict[tuple[str, str], str],
              strategy: str) -> Optional[str]:
    """The Workload's place in its ClusterQueue: the visibility API's answer when it
    was read (a PendingWorkloadsSummary kept under the ClusterQueue's name), else
    the order Kueue's queue implies."""
    for s in snap.objects(SUMMARY_KIND):
        if s.metadata.name != cq_name or s.metadata.namespace:
            continue
        raw = _status(s).get("items")
        items = [i for i in raw if isinstance(i, dict)] if isinstance(raw, list) else []
        for i in items:
            md = i.get("metadata") or {}
            if md.get("name") == wl.metadata.name and md.get("namespace") == wl.metadata.namespace:
                return (f"position {i.get('positionInClusterQueue')} in ClusterQueue {cq_name} "
                        f"(0 is next; {len(items)} pending) and {i.get('positionInLocalQueue')} in LocalQueue "
                        f"{i.get('localQueueName')}, from the visibility API (Kueue's pendingworkloads)")
        if items:
            return f"not among the {len(items)} pending workloads the visibility API lists for ClusterQueue {cq_name}"
    # one ordering per ClusterQueue for a whole report (diagnose pending asks once per pod)
    cache: dict = snap.__dict__.setdefault("_kueue_order", {})
    key = (cq_name, strategy, tuple(map(id, snap.objects("Workload"))), tuple(sorted(lq_to_cq.items())))
    if key not in cache:
        order = K.pending_order(snap.objects("Workload"), cq_name, lq_to_cq, strategy)
        cache[key] = (order, {id(w): i for i, w in enumerate(order)})
    order, index = cache[key]
    if id(wl) not in index:
        return None
    idx = index[id(wl)]
    ahead = ", ".join(f"{w.metadata.namespace}/{w.metadata.name} (priority {K.priority_of(w)})" for w in order[:idx][:3])
    namespaces = sorted({ns for (ns, _), c in lq_to_cq.items() if c == cq_name})
    scope = f" (Workloads read in namespace(s) {', '.join(namespaces)})" if namespaces else ""
    strict = "; StrictFIFO: the head of the queue blocks those behind it even when they would fit" \
        if strategy == "StrictFIFO" and idx > 0 else ""
    return (f"position {idx} in ClusterQueue {cq_name} (0 is next; {len(order)} pending), as {strategy} orders them: "
            f"priority, then creation time{scope}" + (f"; ahead: {ahead}" if ahead else "") + strict)


def _pick(assignments: list[K.PodSetAssignment]) -> Optional[tuple[K.PodSetAssignment, K.FlavorTry, str]]:
    """The pod set, flavor and resource to headline: the first pod set with no
    fitting flavor, its first flavor that was not skipped, a GPU-like resource first."""
    for a in assignments:
        if a.chosen is not None:
            continue
        for t in a.tries:
            if t.skipped is None:
                lacking = list(t.never) + list(t.short)
                lacking.sort(key=K.gpu_first)
                if lacking:
                    return a, t, lacking[0]
    return None


def explain(ctx: PodContext) -> Optional[QueueHold]:
    pod = ctx.pod
    gates = [g.name for g in pod.spec.schedulingGates]
    queue = pod.metadata.labels.get(QUEUE_LABEL)
    if not (KUEUE_GATE in gates or queue):
        return None
    evidence: list[str] = []
    gap = ctx.snap.gaps.get(QUEUES)
    if gap is not None:
        evidence.append("Kueue objects: " + gap.describe())
    wls = _kueue_workloads(ctx)
    wl = next((w for w in wls if not K.is_admitted(w)), wls[0] if wls else None)
    said: list[str] = []     # the Workload's own words, after gpuctl's numbers
    for w in wls:
        for c in conditions(w):
            if c.get("type") in ("QuotaReserved", "Admitted") and c.get("status") == "False":
                said.append(f"workload/{w.metadata.name} {c.get('type')}=False reason {c.get('reason')}: {c.get('message', '')}")
        for e in ctx.snap.events_for("Workload", ctx.ns, w.metadata.name)[-2:]:
            said.append(ctx.event_line(e))
    if wl is not None:
        queue = str(_spec(wl).get("queueName") or queue or "")
    ns = ctx.ns
    lq_name = queue or ""
    summary = "Kueue has not admitted the pod's workload" + (f" (LocalQueue {lq_name})" if lq_name else "")
    fixes: list[Fix] = []
    hold = _explain(ctx.snap, wl, lq_name, ns, summary, evidence, fixes, gap is None, KUEUE_GATE in gates)
    if wl is not None:
        msg = (K.condition(wl, "QuotaReserved") or {}).get("message") or ""
        hold.evidence.extend(parse_message(msg))
    hold.evidence.extend(said)
    return hold


def explain_workload(snap: Snapshot, ns: str, wl: Any) -> QueueHold:
    """The same explanation for a Kueue Workload seen from its Job (a suspended Job has
    no pods): for ``checks/workload.py``."""
    queue = str(_spec(wl).get("queueName") or "")
    gap = snap.gaps.get(QUEUES)
    evidence = ["Kueue objects: " + gap.describe()] if gap is not None else []
    hold = _explain(snap, wl, queue, ns, f"Kueue has not admitted workload {wl.metadata.name}"
                    + (f" (LocalQueue {queue})" if queue else ""), evidence, [], gap is None, False)
    msg = (K.condition(wl, "QuotaReserved") or {}).get("message") or ""
    hold.evidence.extend(parse_message(msg))
    return hold


def _explain(snap: Snapshot, wl: Any, lq_name: str, ns: str, summary: str, evidence: list[str], fixes: list[Fix],
             read: bool, gated: bool) -> QueueHold:
    hold = QueueHold(summary, evidence, fixes)
    lqs = {(o.metadata.namespace or "", o.metadata.name): o for o in snap.objects("LocalQueue")}
    cqs = _by_name(snap, "ClusterQueue")
    lq = lqs.get((ns, lq_name))
    safe_ns, safe_lq = _safe(ns), _safe(lq_name)
    if lq is None:
        if read and lq_name and (snap.objects("ClusterQueue") or snap.objects("LocalQueue")):
            hold.summary = f"LocalQueue {lq_name} does not exist in namespace {ns}: Kueue will not admit the workload"
            if safe_ns:
                fixes.append(Fix(f"Create LocalQueue {lq_name} in {ns} pointing at a ClusterQueue, or use an existing one "
                                 f"in the {QUEUE_LABEL} label",
                                 [f"kubectl -n {ns} get localqueues.kueue.x-k8s.io", "kubectl get clusterqueues.kueue.x-k8s.io"]))
        else:
            _generic_fixes(hold, ns, lq_name, safe_ns, safe_lq)
        return hold
    cq_name = str(_spec(lq).get("clusterQueue") or "")
    hold.summary = f"Kueue has not admitted the pod's workload (LocalQueue {lq_name} -> ClusterQueue {cq_name})"
    safe_cq = _safe(cq_name)
    cq = cqs.get(cq_name)
    lq_active = K.condition(lq, "Active")
    if cq is None:
        if read:
            hold.summary = (f"LocalQueue {lq_name} points at ClusterQueue {cq_name}, which does not exist: "
                            f"Kueue will not admit the workload")
            if lq_active and lq_active.get("status") == "False":
                evidence.append(f"localqueue/{lq_name} Active=False reason {lq_active.get('reason')}: {lq_active.get('message', '')}")
            if safe_ns and safe_lq:
                fixes.append(Fix(f"Create ClusterQueue {cq_name}, or point the LocalQueue at an existing one",
                                 ["kubectl get clusterqueues.kueue.x-k8s.io",
                                  f"kubectl -n {ns} get localqueue {lq_name} -o yaml"]))
        return hold
    lq_stop = str(_spec(lq).get("stopPolicy") or "None")
    if lq_stop in ("Hold", "HoldAndDrain") or (lq_active and lq_active.get("status") == "False"
                                               and lq_active.get("reason") == "Stopped"):
        # pkg/controller/core/localqueue_controller.go: Active=False reason Stopped "LocalQueue is stopped";
        # the Workload reads "LocalQueue %s is stopped" (workload_controller.go)
        hold.summary = f"LocalQueue {lq_name} is stopped (spec.stopPolicy {lq_stop}): Kueue admits nothing from it"
        if lq_active:
            evidence.append(f"localqueue/{lq_name} Active={lq_active.get('status')} reason {lq_active.get('reason')}: "
                            f"{lq_active.get('message', '')}")
        if safe_ns and safe_lq:
            fixes.append(Fix(f"Resume LocalQueue {lq_name} (its owner stopped it on purpose: ask first)",
                             [f"kubectl -n {ns} edit localqueue {lq_name}  # set spec.stopPolicy: None"]))
        return hold
    cq_cmd = f"kubectl get clusterqueue {cq_name} -o yaml" if safe_cq else "kubectl get clusterqueues.kueue.x-k8s.io -o yaml"
    active = K.condition(cq, "Active")
    stop = str(_spec(cq).get("stopPolicy") or "None")
    if (active and active.get("status") == "False") or stop in ("Hold", "HoldAndDrain"):
        reason = (active or {}).get("reason") or "Stopped"
        hold.summary = (f"ClusterQueue {cq_name} is inactive ({reason}): it admits no workload"
                        + (f": {active.get('message')}" if active and active.get("message") else ""))
        if active:
            evidence.append(f"clusterqueue/{cq_name} Active=False reason {reason}: {active.get('message', '')}")
        if stop != "None":
            evidence.append(f"clusterqueue/{cq_name} spec.stopPolicy: {stop}")
        missing = [f for _, fl in K.resource_groups(cq) for f in fl if f not in _by_name(snap, "ResourceFlavor")]
        if missing and read:
            evidence.append(f"ResourceFlavor(s) named by the ClusterQueue and not found: {', '.join(sorted(set(missing)))}")
        if safe_cq:
            fixes.append(Fix(f"Make ClusterQueue {cq_name} active: create what its Active condition says is missing"
                             + (", or set spec.stopPolicy to None" if stop != "None" else ""),
                             [cq_cmd, f"kubectl edit clusterqueue {cq_name}  # set spec.stopPolicy: None"] if stop != "None" else
                             [cq_cmd, *(["kubectl get resourceflavors.kueue.x-k8s.io"] if reason == "FlavorNotFound" else []),
                              *(["kubectl get admissionchecks.kueue.x-k8s.io"] if "AdmissionCheck" in reason else [])]))
        return hold
    if wl is None:
        _generic_fixes(hold, ns, lq_name, safe_ns, safe_lq, cq_cmd)
        return hold
    if K.is_admitted(wl):
        if not gated:
            return QueueHold("", [])     # admitted and ungated: Kueue holds nothing
        hold.summary = (f"Kueue admitted the workload in ClusterQueue {K.admitted_cq(wl) or cq_name}, but the pod still "
                        f"carries the scheduling gate {KUEUE_GATE}: Kueue removes it on admission")
        evidence.append(f"workload/{wl.metadata.name} Admitted=True")
        _generic_fixes(hold, ns, lq_name, safe_ns, safe_lq, cq_cmd)
        return hold
    # 3. quota reserved, admission checks pending
    if K.has_reservation(wl) and not K.is_admitted(wl):
        checks = [c for c in _status(wl).get("admissionChecks") or [] if isinstance(c, dict) and c.get("state") != "Ready"]
        if checks:
            first = checks[0]
            hold.summary = (f"Kueue reserved quota in ClusterQueue {cq_name}, but admission check {first.get('name')} is "
                            f"{first.get('state')}" + (f": {first.get('message')}" if first.get("message") else ""))
            for c in checks:
                evidence.append(f"workload/{wl.metadata.name} admission check {c.get('name')}: state {c.get('state')}"
                                + (f", message: {c.get('message')}" if c.get("message") else "")
                                + (f" (since {c.get('lastTransitionTime')})" if c.get("lastTransitionTime") else ""))
            names = [str(c.get("name")) for c in checks if _safe(str(c.get("name") or ""))]
            cmds = [f"kubectl -n {ns} get workload {wl.metadata.name} -o yaml"] if safe_ns and _safe(wl.metadata.name) else []
            cmds += [f"kubectl get admissioncheck {n} -o yaml" for n in names[:2]]
            if safe_ns:
                cmds.append(f"kubectl -n {ns} get provisioningrequests.autoscaling.x-k8s.io")
            fixes.append(Fix("The admission check's controller decides (for a ProvisioningRequest: the cluster "
                             "autoscaler, when it finds capacity); see its state and message", cmds))
            return hold
    # 4. quota
    flavors = _by_name(snap, "ResourceFlavor")
    tree = K.QuotaTree(snap.objects("ClusterQueue"), snap.objects("Cohort"))
    needs = K.podset_needs(wl)
    assignments = K.assign_flavors(tree, cq, flavors, needs)
    for a in assignments:
        evidence.append(a.needs_line())
        for t in a.tries:
            if t.skipped:
                evidence.append(f"flavor {t.flavor} skipped: {t.skipped}")
                continue
            roomy = []
            for r in sorted(t.needs, key=K.gpu_first):
                line = t.rooms[r].describe(t.needs[r])
                if r in t.never:
                    line += f": more than the queue could ever get ({format_quantity(r, t.rooms[r].potential)})"
                elif r in t.short:
                    line += f": {format_quantity(r, t.short[r])} short"
                elif "/" not in r:
                    roomy.append(f"{format_quantity(r, t.needs[r])} {r}")
                    continue
                evidence.append(line)
            if roomy:
                evidence.append(f"flavor {t.flavor}: room for {', '.join(roomy)}")
            if t.fits:
                evidence.append(f"flavor {t.flavor} has room for pod set {a.podset} now")
        if a.uncovered:
            evidence.append(f"no resource group of ClusterQueue {cq_name} covers {', '.join(a.uncovered)}: Kueue cannot admit it")
    strategy = str(_spec(cq).get("queueingStrategy") or K.DEFAULT_STRATEGY)
    lq_to_cq = {(k[0], k[1]): str(_spec(o).get("clusterQueue") or "") for k, o in lqs.items()}
    pos = _position(snap, wl, cq_name, lq_to_cq, strategy)
    if pos:
        evidence.append(pos)
    picked = _pick(assignments)
    skipped_all = [a for a in assignments if a.tries and all(t.skipped for t in a.tries)]
    if picked is not None:
        a, t, r = picked
        room = t.rooms[r]
        hold.summary = f"Kueue cannot admit the workload in ClusterQueue {cq_name}: " + room.describe(t.needs[r])
        skipped = [x.flavor for x in a.tries if x.skipped]
        if skipped:
            hold.summary += f" (flavor {', '.join(skipped)} skipped: it does not suit the pod)"
        if room.cohort:
            evidence.extend(_cohort_lines(tree, cq_name, room.cohort, (t.flavor, r)))
        if r in t.never:
            hold.summary += (f" (never enough: the most it could ever get, nothing reserved"
                             f"{' and all the cohort lends' if room.cohort else ''}, is {format_quantity(r, room.potential)})")
        else:
            for p in K.preemption_options(tree, cq, wl, snap.objects("Workload"), (t.flavor, r), t.short[r], t.needs[r]):
                names = "; ".join(f"{v} holding {format_quantity(r, amt)}" for v, amt in p.victims[:MAX_VICTIMS])
                if p.helps and p.victims:
                    evidence.append(f"preemption ({p.policy}) would help: preempting {names} frees "
                                    f"{format_quantity(r, p.frees)} {r} of the {format_quantity(r, p.short)} needed")
                    hold.summary += f"; preemption ({p.policy}) would free enough"
                elif p.victims:
                    evidence.append(f"preemption ({p.policy}) would not free enough: {names} hold "
                                    f"{format_quantity(r, p.frees)} of the {format_quantity(r, p.short)} {r} needed")
                else:
                    evidence.append(f"preemption ({p.policy}): no admitted workload Kueue may preempt for {r} in flavor {t.flavor}")
            pre = _spec(cq).get("preemption") or {}
            if not pre or all((pre.get(k) or "Never") == "Never" for k in ("withinClusterQueue", "reclaimWithinCohort")):
                evidence.append(f"clusterqueue/{cq_name} spec.preemption allows no preemption (withinClusterQueue and "
                                f"reclaimWithinCohort are Never)")
        if safe_cq:
            path = _quota_path(cq, t.flavor, r)
            cmds = [cq_cmd]
            if any(s.metadata.name == cq_name for s in snap.objects(SUMMARY_KIND)):
                cmds.append(f"kubectl get --raw {VISIBILITY}/clusterqueues/{cq_name}/pendingworkloads")
            if safe_ns:
                cmds.append(f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide")
            fixes.append(Fix(f"Wait for admitted workloads of ClusterQueue {cq_name} to finish, or free quota; "
                             f"verify the numbers with the ClusterQueue's status", cmds))
            if path:
                want = format_quantity(r, max(t.needs[r], room.used + t.needs[r] - room.lendable))
                fixes.append(Fix(f"Or raise the ClusterQueue's nominalQuota for {r} in flavor {t.flavor} "
                                 f"(only if the nodes of that flavor have the capacity)",
                                 [f"kubectl edit clusterqueue {cq_name}  # set {path} from "
                                  f"{format_quantity(r, room.nominal)} to at least {want}"],
                                 needs_judgement="quota is a policy decision: raise it only where the flavor's nodes "
                                                 "have the GPUs"))
    elif skipped_all:
        a = skipped_all[0]
        hold.summary = (f"Kueue cannot admit the workload in ClusterQueue {cq_name}: every flavor was skipped for pod set "
                        f"{a.podset} ({'; '.join(t.skipped or '' for t in a.tries)})")
        if safe_cq:
            fixes.append(Fix("Make the pod's nodeSelector / affinity / tolerations match one of the ClusterQueue's "
                             "flavors (ResourceFlavor spec.nodeLabels and nodeTaints), or add a matching flavor",
                             [cq_cmd, "kubectl get resourceflavors.kueue.x-k8s.io -o yaml"]))
    else:
        if any(a.uncovered for a in assignments):
            hold.summary = (f"Kueue cannot admit the workload: ClusterQueue {cq_name} has no quota for "
                            f"{', '.join(sorted({r for a in assignments for r in a.uncovered}))}")
        elif assignments:
            msg = (K.condition(wl, "QuotaReserved") or {}).get("message") or ""
            tas = _rx("tas").search(msg)
            if tas:
                hold.summary = (f"Kueue cannot admit the workload in ClusterQueue {cq_name}: quota fits, but topology "
                                f"{tas.group('topo')} fits only {tas.group('fit') or 0} of {tas.group('want')} {tas.group('unit')}s")
            else:
                chosen = ", ".join(sorted({a.chosen.flavor for a in assignments if a.chosen is not None}))
                hold.summary = (f"By ClusterQueue {cq_name}'s status the workload fits now" + (f" (flavor {chosen})" if chosen else "")
                                + ", yet Kueue has not admitted it" + (f" ({pos.split(',')[0]})" if pos else "")
                                + (f"; Kueue's last word: {msg}" if msg else ""))
        _generic_fixes(hold, ns, lq_name, safe_ns, safe_lq, cq_cmd if safe_cq else None)
    return hold


def _cohort_lines(tree: K.QuotaTree, cq_name: str, cohort: str, fr: tuple[str, str]) -> list[str]:
    """What each other ClusterQueue of the cohort holds and lends of one (flavor, resource)."""
    out = []
    f = lambda v: format_quantity(fr[1], v)  # noqa: E731
    for other in tree.cohort_members(cohort):
        if other == cq_name:
            continue
        room = tree.room(other, fr)
        if not room.nominal and not room.used:
            continue
        lends = max(0.0, room.nominal - room.used) if room.lending_limit is None else \
            max(0.0, min(room.lending_limit, room.nominal - room.used))
        out.append(f"clusterqueue/{other} (cohort {cohort}): {f(room.used)} of {f(room.nominal)} {fr[1]} nominal reserved in "
                   f"flavor {fr[0]}" + (f", lendingLimit {f(room.lending_limit)}" if room.lending_limit is not None else
                                         ", no lendingLimit") + f": lends up to {f(lends)} unused")
    return out[:MAX_VICTIMS]


def _quota_path(cq: Any, flavor: str, resource: str) -> Optional[str]:
    for gi, rg in enumerate(_spec(cq).get("resourceGroups") or []):
        for fi, fl in enumerate((rg or {}).get("flavors") or []):
            if (fl or {}).get("name") != flavor:
                continue
            for ri, r in enumerate(fl.get("resources") or []):
                if (r or {}).get("name") == resource:
                    return f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].nominalQuota"
    return None


def _generic_fixes(hold: QueueHold, ns: str, lq: str, safe_ns: bool, safe_lq: bool, cq_cmd: Optional[str] = None) -> None:
    if not safe_ns:
        return
    cmds = [f"kubectl -n {ns} get workloads.kueue.x-k8s.io -o wide"]
    cmds.append(f"kubectl -n {ns} get localqueue {lq} -o yaml" if lq and safe_lq else f"kubectl -n {ns} get localqueues.kueue.x-k8s.io")
    cmds.append(cq_cmd or "kubectl get clusterqueue -o wide")
    hold.fixes.append(Fix("See why the ClusterQueue cannot admit it (quota per flavor, borrowing limits, inactive queue); "
                          "free quota or raise nominalQuota", cmds))
