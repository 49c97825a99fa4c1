"""Volcano (scheduling.volcano.sh): why a pod's PodGroup (its gang) is not ready.
Called by ``pod_state.queue_admission``; returns a ``QueueHold`` or None.

It compares, with the numbers (arithmetic in model/queues_math.py):

* the queue (``spec.capability``, ``spec.deserved``, ``spec.guarantee``,
  ``status.allocated``, ``status.state``) with the PodGroup's ``spec.minResources``
  and ``minMember``: a queue that is not ``Open`` admits nothing; a queue whose
  capability less its allocation is below the gang's minimum keeps it ``Pending``
  (Volcano's event: ``queue resource quota insufficient: insufficient nvidia.com/gpu``);
  with hierarchical queues (``spec.parent``) every queue above it is checked the same way;
* PodGroups of finished jobs left ``Running`` in the same queue, whose
  minResources Volcano may still count (volcano-sh/volcano#2633);
* the gang with the cluster: minMember pods of this pod's shape against the nodes
  the pod may use (those whose only objection is resources), empty and now: a gang
  those nodes can never hold, or a job with fewer tasks than minMember, never
  starts; one they hold when other pods finish must wait (the pods in the way are named).

The PodGroup's condition and events are quoted as the scheduler wrote them
(pkg/scheduler/plugins/gang/gang.go, pkg/scheduler/cache/cache.go)."""

from __future__ import annotations

import re
from typing import Any, Optional

from ..findings import Fix
from ..model.names import is_dns1123_subdomain
from ..model.quantity import format_quantity
from ..model.queues_math import GangMessage, gang_fit, gang_need, parse_gang_message, quantities, queue_room
from ..model.requests import pod_requests
from ..model.snapshot import QUEUES
from .context import PodContext
from .queues import QueueHold, conditions

GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
API = "scheduling.volcano.sh/"
RESOURCE_CODES = frozenset({"insufficient-gpu", "insufficient-cpu", "insufficient-memory", "insufficient-resource"})
NOT_OPEN = ("Closed", "Closing")


def _q(resource: str, value: float) -> str:
    return format_quantity(resource, value)


def _volcano(obj: Any) -> bool:
    return obj is not None and (obj.apiVersion or "").startswith(API)


def _find(ctx: PodContext, kind: str, ns: Optional[str], name: str) -> Any:
    for o in ctx.snap.objects(kind):
        if o.metadata.name == name and _volcano(o) and (ns is None or o.metadata.namespace in (ns, None)):
            return o
    return None


def _chain(ctx: PodContext, qname: str, queue: Any, limit: int = 8) -> list[tuple[str, Any]]:
    """The queue and the queues above it (``spec.parent``, hierarchical queues), as far
    as the snapshot holds them; cycles cut."""
    out: list[tuple[str, Any]] = []
    name, q = qname, queue
    while q is not None and len(out) < limit and all(n != name for n, _ in out):
        out.append((name, q))
        name = str((q.spec or {}).get("parent") or "") if isinstance(q.spec, dict) else ""
        q = _find(ctx, "Queue", None, name) if name else None
    return out


def _gang_message(pg: Any) -> Optional[GangMessage]:
    for c in conditions(pg):
        msg = parse_gang_message(c.get("message") or "")
        if msg is not None:
            return msg
    return None


def _queue_lines(name: str, q: Any) -> list[str]:
    spec, status = q.spec or {}, q.status or {}
    bits = []
    for label, rl in (("capability", spec.get("capability")), ("deserved", spec.get("deserved")),
                      ("guarantee", (spec.get("guarantee") or {}).get("resource") if isinstance(spec.get("guarantee"), dict) else None),
                      ("allocated", status.get("allocated"))):
        vals = quantities(rl)
        if vals:
            bits.append(f"{label} " + ", ".join(f"{r} {_q(r, v)}" for r, v in sorted(vals.items()) if r not in ("pods",)))
    line = f"queue/{name} state {status.get('state') or 'unknown'}" + (f", parent {spec['parent']}" if spec.get("parent") else "")
    if spec.get("reclaimable") is not None:
        line += f", reclaimable {str(spec.get('reclaimable')).lower()}"
    if not quantities(spec.get("capability")):
        bits.insert(0, "no capability set")
    return [line + "; " + "; ".join(bits)]


_RESOURCE_RE = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_./]*")


def _column(resource: str) -> str:
    """A resource name as a custom-columns path (dots escaped); only names made of
    the characters a resource name may hold reach a command."""
    return resource.replace(".", "\\.") if _RESOURCE_RE.fullmatch(resource) else "nvidia\\.com/gpu"


def _gpu(ctx: PodContext) -> Optional[str]:
    return next(iter(sorted(ctx.gpu_requests)), None)


def _nodes_for(ctx: PodContext) -> list[Any]:
    """The fits of the nodes the pod may use: only resources keep it off them."""
    return [f for f in ctx.fits if f.candidate and set(f.reasons) <= RESOURCE_CODES]


def _in_use(ctx: PodContext, nodes: list[str], resource: str, limit: int = 5) -> tuple[float, list[str]]:
    holders = []
    for n in nodes:
        for p in ctx.pods_by_node.get(n, []):
            q = pod_requests(p).get(resource, 0.0)
            if q > 0 and p.key != ctx.pod.key:
                holders.append((q, f"{p.metadata.namespace}/{p.metadata.name} on {n} ({_q(resource, q)})"))
    holders.sort(key=lambda h: (-h[0], h[1]))
    more = f", and {len(holders) - limit} more" if len(holders) > limit else ""
    return sum(h[0] for h in holders), [h[1] for h in holders[:limit]] + ([more.lstrip(", ")] if more else [])


def _queue_verdict(group: str, phase: Optional[str], qname: str, chain: list[tuple[str, Any]], need: dict[str, float],
                   gpu: Optional[str], shape: str, look: Fix, evidence: list[str]) -> tuple[str, list[Fix]]:
    """The queue's word: not Open, or too little capability left for the gang in it
    or in a queue above it."""
    state = (chain[0][1].status or {}).get("state")
    if state in NOT_OPEN:
        return (f"Volcano queue {qname} is {state}: it admits no PodGroup, so podgroup/{group} stays "
                f"{phase or 'Pending'} until the queue is opened again",
                [look, Fix(f"Ask the queue's owner to open {qname} again (vcctl queue operate --name {qname} --action open), "
                           "or submit the job to a queue whose state is Open",
                           ["kubectl get queues.scheduling.volcano.sh -o custom-columns=NAME:.metadata.name,STATE:.status.state"],
                           needs_judgement="a queue is closed on purpose (maintenance, a team's cut-off): ask its owner first")])
    for lname, level in chain:
        verdict = _capability_verdict(qname, lname, level, need, gpu, shape, look, evidence)
        if verdict[0]:
            return verdict
    return "", []


def _capability_verdict(qname: str, lname: str, level: Any, need: dict[str, float], gpu: Optional[str], shape: str,
                        look: Fix, evidence: list[str]) -> tuple[str, list[Fix]]:
    """One queue of the chain (the pod's queue, then its parents: the capacity plugin
    checks each, pkg/scheduler/plugins/capacity checkJobEnqueueableHierarchically)."""
    cap = quantities((level.spec or {}).get("capability"))
    rooms = sorted(queue_room(need, cap, quantities((level.status or {}).get("allocated"))),
                   key=lambda x: (x.resource != gpu, x.resource))
    if cap and not (level.status or {}).get("allocated"):
        evidence.append(f"queue/{lname} reports no status.allocated: the queue's use is not known")
    blocking = [x for x in rooms if x.never] or [x for x in rooms if x.short]
    if not blocking:
        return "", []
    x = blocking[0]
    how = f"({shape})" if x.resource == gpu else "(spec.minResources)"
    who = f"queue {qname}" if lname == qname else f"queue {qname}'s parent queue {lname}"
    said = (f"{who}: capability {x.resource} {_q(x.resource, x.capability)}, allocated "
            f"{_q(x.resource, x.allocated)}, the gang needs {_q(x.resource, x.need)} {how}")
    if x.never:
        summary = f"Volcano {said}: more than the queue's whole capability, so it is never admitted"
    else:
        summary = f"Volcano {said}: the queue has {_q(x.resource, x.free)} left, so the gang waits in Pending"
    for y in blocking[1:]:
        evidence.append(f"queue/{lname} {y.resource}: capability {_q(y.resource, y.capability)}, allocated "
                        f"{_q(y.resource, y.allocated)}, the gang needs {_q(y.resource, y.need)}")
    patch = (f"kubectl patch queues.scheduling.volcano.sh {lname} --type merge -p "
             f"'{{\"spec\":{{\"capability\":{{\"{x.resource}\":\"<new {x.resource} capability>\"}}}}}}'")
    runnable = is_dns1123_subdomain(lname) and _RESOURCE_RE.fullmatch(x.resource)
    return summary, [look, Fix(f"Wait for the queue's running jobs to finish, or raise queue {lname}'s capability",
                               [patch if runnable else "kubectl get queues.scheduling.volcano.sh"],
                               needs_judgement="a queue's capability is a share the cluster's owners set: raise it only with them")]


def _stale_verdict(ctx: PodContext, group: str, qname: str, look: Fix, evidence: list[str]) -> Optional[tuple[str, list[Fix]]]:
    """PodGroups of the same queue (in the pod's namespace) whose jobs are done but
    which stay Running with no running pod: Volcano may still count their
    minResources as in use (volcano-sh/volcano#2633: "the minResource of completed
    PodGroups must be released")."""
    stale = []
    for g in ctx.snap.objects("PodGroup"):
        spec, st = (g.spec if isinstance(g.spec, dict) else {}), (g.status if isinstance(g.status, dict) else {})
        if not _volcano(g) or g.metadata.name == group or g.metadata.namespace != ctx.ns or str(spec.get("queue") or "default") != qname:
            continue
        try:
            done = int(st.get("succeeded") or 0) + int(st.get("failed") or 0)
            if st.get("phase") == "Running" and not int(st.get("running") or 0) and done >= max(1, int(spec.get("minMember") or 1)):
                stale.append(g)
        except (TypeError, ValueError):
            continue
    if not stale:
        return None
    held: dict[str, float] = {}
    for g in stale:
        for r, v in quantities(g.spec.get("minResources")).items():
            held[r] = held.get(r, 0.0) + v
    names = sorted(g.metadata.name for g in stale)
    what = ", ".join(f"{r} {_q(r, v)}" for r, v in sorted(held.items())) or "no minResources"
    evidence.append(f"PodGroups of finished jobs still Running in queue {qname} (running 0, succeeded/failed >= minMember): "
                    + ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else ""))
    ok = [n for n in names if is_dns1123_subdomain(n)]
    return (f"Volcano queue {qname}: {len(stale)} PodGroup(s) of finished jobs still hold {what} as minResources, "
            f"so Volcano counts the queue as used and podgroup/{group} stays Pending (volcano-sh/volcano#2633)",
            [look, Fix("Delete the PodGroups whose jobs are done (their pods are gone); Volcano then releases their share",
                       [f"kubectl -n {ctx.ns} delete podgroups.scheduling.volcano.sh " + " ".join(ok[:10])] if ok else [],
                       needs_judgement="check first that each job is really finished: deleting a live job's PodGroup stops its gang")])


def _cluster_verdict(ctx: PodContext, group: str, min_member: int, gpu: str, shape: str, look: Fix,
                     evidence: list[str]) -> tuple[str, list[Fix]]:
    """Can the nodes the pod may use hold minMember pods of its shape at all, and now?"""
    per_pod = {r: q for r, q in ctx.requests.items() if q > 0}
    per_gpu = per_pod[gpu]
    fits = [f for f in _nodes_for(ctx) if f.name in ctx.snap.nodes]
    nodes = []
    for f in fits:
        alloc = quantities(ctx.snap.nodes[f.name].status.allocatable)
        nodes.append(({r: alloc.get(r, 0.0) for r in per_pod}, {r: f.free.get(r, 0.0) for r in per_pod}))
    g = gang_fit(min_member, per_pod, nodes)
    total = sum(a.get(gpu, 0.0) for a, _ in nodes)
    free = sum(f.get(gpu, 0.0) for _, f in nodes)
    used, holders = _in_use(ctx, [f.name for f in fits], gpu)
    evidence.append(f"cluster: {len(fits)} node(s) the pod may use hold {g.slots_empty} pod(s) of this shape when empty, "
                    f"{g.slots_now} now ({_q(gpu, free)} of {_q(gpu, total)} {gpu} free); the gang needs {min_member}")
    unread = sorted(ctx.uncertain_nodes)
    if g.never and unread:    # nodes left out could hold the rest: no "never" on part of the cluster
        evidence.append(f"not counted: {len(unread)} node(s) that could not be fully read ({', '.join(unread[:3])})")
        return "", []
    if g.never:
        return (f"Volcano gang {group} can never start on this cluster: {shape} {gpu} = "
                f"{_q(gpu, min_member * per_gpu)}, but the {len(fits)} node(s) the pods may use hold at most "
                f"{g.slots_empty} such pod(s) ({_q(gpu, total)} {gpu}) even when empty",
                [look, Fix("Lower minMember (fewer, larger pods or fewer replicas), or add GPU nodes the pods may use",
                           [f"kubectl get nodes -o custom-columns='NAME:.metadata.name,ALLOCATABLE:.status.allocatable.{_column(gpu)}'"],
                           needs_judgement="the job's shape is the user's choice; freeing GPUs does not help")])
    if not g.wait:
        return "", []
    if holders:
        evidence.append(f"in use on those nodes: {_q(gpu, used)} {gpu} by " + ", ".join(holders))
    busy = [f.name for f in fits if f.free.get(gpu, 0.0) < per_gpu and is_dns1123_subdomain(f.name)]
    return (f"Volcano gang {group} must wait for GPUs: {shape} {gpu}, and the {len(fits)} node(s) the pods "
            f"may use have room for {g.slots_now} such pod(s) now ({_q(gpu, free)} of {_q(gpu, total)} {gpu} free, "
            f"{_q(gpu, used)} in use)",
            [look, Fix("Wait for the running pods to finish, or free GPUs the gang can use (the pods named in the evidence)",
                       [f"kubectl get pods -A -o wide --field-selector spec.nodeName={n}" for n in busy[:2]],
                       needs_judgement="stopping other people's jobs is a decision, not a fix")])


def explain(ctx: PodContext) -> Optional[QueueHold]:
    pod = ctx.pod
    group = next((pod.metadata.annotations.get(a) for a in GROUP_ANNOTATIONS if pod.metadata.annotations.get(a)), None)
    if not group or (pod.spec.schedulerName or "") != "volcano":
        return None
    pg = _find(ctx, "PodGroup", ctx.ns, group) or ctx.snap.find("PodGroup", ctx.ns, group)
    if pg is None:     # unread PodGroups: said as evidence, but no hold of its own
        return QueueHold("", ["Volcano PodGroups: " + ctx.snap.gaps[QUEUES].describe()]) if QUEUES in ctx.snap.gaps else None
    phase = (pg.status or {}).get("phase")
    if phase not in ("Pending", "Inqueue", "Unknown", None):
        return None
    spec = pg.spec if isinstance(pg.spec, dict) else {}
    try:
        min_member = max(1, int(spec.get("minMember") or 1))
    except (TypeError, ValueError):
        min_member = 1
    qname = str(spec.get("queue") or "default")
    min_res = quantities(spec.get("minResources"))
    evidence = [f"podgroup/{group} phase {phase}, minMember {min_member}, queue {qname}"
                + (", minResources " + ", ".join(f"{r} {_q(r, v)}" for r, v in sorted(min_res.items())) if min_res else "")]
    for c in conditions(pg):
        if c.get("status") == "True" and c.get("type") == "Unschedulable" or c.get("reason") in ("NotEnoughResources", "NotEnoughTasks"):
            evidence.append(f"podgroup/{group} {c.get('type')} ({c.get('reason')}): {c.get('message', '')}")
    for e in ctx.snap.events_for("PodGroup", ctx.ns, group)[-3:]:
        evidence.append(ctx.event_line(e))

    safe = is_dns1123_subdomain(group) and is_dns1123_subdomain(qname)
    look = Fix("See the gang's conditions and the queue's numbers (capability, deserved, allocated, state)",
               [f"kubectl -n {ctx.ns} describe podgroups.scheduling.volcano.sh {group}", f"kubectl get queues.scheduling.volcano.sh {qname} -o yaml"]
               if safe else ["kubectl get queues.scheduling.volcano.sh"])
    gpu = _gpu(ctx)
    per_gpu = ctx.requests.get(gpu, 0.0) if gpu else 0.0
    shape = f"minMember {min_member} x {_q(gpu, per_gpu)}" if gpu else f"minMember {min_member}"
    summary, fixes = "", [look]

    queue = _find(ctx, "Queue", None, qname)
    chain = _chain(ctx, qname, queue)
    for lname, level in chain:
        evidence += _queue_lines(lname, level)
    gm = _gang_message(pg)
    admitted = phase == "Inqueue"    # enqueued: the queue's state and capability were passed; placing the gang is what is left
    if admitted:
        evidence.append(f"podgroup/{group} is Inqueue: queue {qname} admitted it; the pods wait to be placed {min_member} at once")
    if queue is not None and not admitted and (queue.status or {}).get("state") in NOT_OPEN:
        summary, fixes = _queue_verdict(group, phase, qname, chain, {}, gpu, shape, look, evidence)
    elif gm is not None and gm.tasks and gm.tasks < min_member:
        summary = (f"Volcano gang {group} can never start: minMember {min_member}, but the job has only {gm.tasks} "
                   f"task(s); the scheduler waits for {min_member} pods that will never exist")
        fixes = [look, Fix("Lower minMember to the number of replicas (or raise the replicas) in the job that owns the PodGroup",
                           [f"kubectl -n {ctx.ns} get podgroups.scheduling.volcano.sh {group} -o jsonpath='{{.metadata.ownerReferences}}'"
                            if safe else "kubectl get podgroups.scheduling.volcano.sh -A"],
                           needs_judgement="minMember comes from the job's spec (minAvailable / replicas): change it there, not on the PodGroup")]
    elif queue is not None and not admitted:
        need = gang_need(min_res, min_member, {r: q for r, q in ctx.requests.items() if q > 0})
        said, how = _queue_verdict(group, phase, qname, chain, need, gpu, shape, look, evidence)
        if said:
            summary, fixes = said, how
    if not summary and not admitted:
        summary, fixes = _stale_verdict(ctx, group, qname, look, evidence) or (summary, fixes)
    if gpu and per_gpu > 0:
        said, how = _cluster_verdict(ctx, group, min_member, gpu, shape, look, evidence)
        if said and not summary:
            summary, fixes = said, how
    if not summary:
        summary = f"Volcano PodGroup {group} is {phase or 'not ready'}: the gang cannot be placed as a whole"
        fixes = [Fix("Free resources for the whole gang or lower minMember; check the Volcano queue's capability",
                     [f"kubectl -n {ctx.ns} describe podgroups.scheduling.volcano.sh {group}" if safe
                      else "kubectl get podgroups.scheduling.volcano.sh -A", "kubectl get queues.scheduling.volcano.sh"])]
    return QueueHold(summary, evidence, fixes)
