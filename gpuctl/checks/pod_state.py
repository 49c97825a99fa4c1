"""Pod-level causes a Pending pod can have besides the nodes: queues and gates,
a scheduler that never acts, preemption under way, volumes, DRA claims, the node
autoscaler's decision, and whether the pod asks for a GPU at all."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable, Optional

from ..findings import Finding, Fix
from ..knowledge.messages import load_yaml
from ..model.snapshot import DRA, EVENTS, PODS, PVCS, QUEUES
from .base import check
from .context import PodContext, human_age
from .fixes import change_commands, workload_ref
from .fixes import DISRUPTION

NEW_POD_GRACE_SECONDS = 60
DEFAULT_SCHEDULER = "default-scheduler"
KUEUE_GATE = "kueue.x-k8s.io/admission"
VOLCANO_GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")


def _pending(ctx: PodContext) -> bool:
    return ctx.pending_unbound


@check("gpu-request", codes=["pod-requests-no-gpu"])
def gpu_request(ctx: PodContext) -> Iterable[Finding]:
    """Says so when the pod requests no GPU: it is diagnosed all the same, but
    nobody should chase the GPU stack for it."""
    if ctx.gpu_requests or ctx.pod.spec.resourceClaims:
        return  # DRA pods get their GPUs through ResourceClaims
    devices = ", ".join(ctx.device_requests) or "none"
    yield Finding("pod-requests-no-gpu", "The pod requests no GPU resource; it is diagnosed as an ordinary pod",
                  evidence=[f"extended resources requested: {devices}",
                            f"containers: {', '.join(c.name for c in ctx.pod.spec.containers)}"])


# ------------------------------------------------------------------ queues


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


def _conditions(obj: Any) -> list[dict]:
    conds = (obj.status or {}).get("conditions") if obj is not None else None
    return [c for c in conds or [] if isinstance(c, dict)]


@check("queue-admission", codes=["queue-not-admitted"], reads=(EVENTS, QUEUES), applies=_pending)
def queue_admission(ctx: PodContext) -> Iterable[Finding]:
    """Scheduling gates, Kueue workloads not admitted and Volcano gangs not ready:
    a queue holds the pod, so no node-level fix will help until it admits it."""
    pod = ctx.pod
    gates = [g.name for g in pod.spec.schedulingGates]
    queue = pod.metadata.labels.get("kueue.x-k8s.io/queue-name")
    evidence: list[str] = []
    fixes: list[Fix] = []
    summary = None
    if gates:
        evidence.append(f"pod spec.schedulingGates: {', '.join(gates)}")
        cond = pod.condition("PodScheduled")
        if cond is not None and cond.reason == "SchedulingGated":
            evidence.append(f"PodScheduled=False reason SchedulingGated{': ' + cond.message if cond.message else ''}")
        summary = f"The pod is held by scheduling gate(s) {', '.join(gates)}"
    if KUEUE_GATE in gates or queue:
        if QUEUES in ctx.snap.gaps:
            evidence.append("Kueue workloads: " + ctx.snap.gaps[QUEUES].describe())
        for w in _kueue_workloads(ctx):
            for c in _conditions(w):
                if c.get("type") in ("QuotaReserved", "Admitted") and c.get("status") == "False":
                    evidence.append(f"workload/{w.metadata.name} {c.get('type')}=False reason {c.get('reason')}: {c.get('message', '')}")
            for e in ctx.snap.events_for("Workload", ctx.ns, w.metadata.name)[-2:]:
                evidence.append(ctx.event_line(e))
        summary = "Kueue has not admitted the pod's workload" + (f" (LocalQueue {queue})" if queue else "")
        fixes.append(Fix("See why the ClusterQueue cannot admit it (quota per flavor, borrowing limits, inactive queue); "
                         "free quota or raise nominalQuota", [
                             f"kubectl -n {ctx.ns} get workloads.kueue.x-k8s.io -o wide",
                             f"kubectl -n {ctx.ns} get localqueue {queue or '<queue>'} -o yaml",
                             "kubectl get clusterqueue -o wide"]))
    group = next((pod.metadata.annotations.get(a) for a in VOLCANO_GROUP_ANNOTATIONS if pod.metadata.annotations.get(a)), None)
    if group and (pod.spec.schedulerName or "") == "volcano":
        pg = ctx.snap.find("PodGroup", ctx.ns, group)
        if pg is not None:
            phase = (pg.status or {}).get("phase")
            if phase in ("Pending", "Inqueue", "Unknown", None):
                summary = f"Volcano PodGroup {group} is {phase or 'not ready'}: the gang cannot be placed as a whole"
                evidence.append(f"podgroup/{group} phase {phase}, minMember {(pg.spec or {}).get('minMember')}")
                for c in _conditions(pg):
                    if c.get("status") == "True" and c.get("type") == "Unschedulable" or c.get("reason") in ("NotEnoughResources", "NotEnoughTasks"):
                        evidence.append(f"podgroup/{group} {c.get('type')} ({c.get('reason')}): {c.get('message', '')}")
                for e in ctx.snap.events_for("PodGroup", ctx.ns, group)[-2:]:
                    evidence.append(ctx.event_line(e))
                fixes.append(Fix("Free resources for the whole gang or lower minMember; check the Volcano queue's capability",
                                 [f"kubectl -n {ctx.ns} describe podgroup {group}", "kubectl get queues.scheduling.volcano.sh"]))
        elif QUEUES in ctx.snap.gaps:
            evidence.append("Volcano PodGroups: " + ctx.snap.gaps[QUEUES].describe())
    kai = _kai_queue(ctx)
    if kai is not None:
        summary, lines, fix = kai
        evidence += lines
        fixes.append(fix)
    if summary is None:
        return
    if gates and not fixes:
        fixes.append(Fix("Find the controller that owns the gate; it removes it when it admits the pod",
                         [f"kubectl -n {ctx.ns} get pod {ctx.name} -o jsonpath='{{.spec.schedulingGates}}'"]))
    yield Finding("queue-not-admitted", summary, evidence=evidence, root_cause=True,
                  disruption=1, unblocks=len(ctx.snap.nodes), fixes=fixes)


# KAI Scheduler (NVIDIA/KAI-Scheduler): pods name their queue with this label; queues are
# scheduling.run.ai Queue objects, and only a queue with a parentQueue takes pods
# (KAI-Scheduler#621: "top-level queue not schedulable"); its quota refusals read
# "NonPreemptibleOverQuota: …" (KAI-Scheduler#2209).
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_QUOTA = ("OverQuota", "over quota")


def _kai_queue(ctx: PodContext):
    """(summary, evidence, fix) when KAI's queue holds the pod, else None."""
    pod = ctx.pod
    name = pod.metadata.labels.get(KAI_QUEUE_LABEL)
    if name is None and (pod.spec.schedulerName or "") != "kai-scheduler":
        return None
    name = name or "default-queue"
    queues = {q.metadata.name: q for q in ctx.snap.objects("Queue") if q.apiVersion.startswith("scheduling.run.ai/")}
    fix = Fix("See the queue tree and quotas; submit to a leaf queue with quota, or make the workload preemptible",
              ["kubectl get queues.scheduling.run.ai -o custom-columns=NAME:.metadata.name,PARENT:.spec.parentQueue",
               f"kubectl get queues.scheduling.run.ai {name} -o yaml"])
    cond = pod.condition("PodScheduled")
    said = cond.message if cond is not None and cond.status == "False" and cond.message else ""
    if any(k in said for k in KAI_QUOTA):
        return (f"KAI's queue {name} refuses the pod over quota", [f"kai-scheduler (PodScheduled): {said}"], fix)
    if not queues:
        return None
    q = queues.get(name)
    if q is None:
        return (f"The pod names KAI queue {name}, which does not exist",
                [f"queues: {', '.join(sorted(queues))}"], fix)
    if not (q.spec or {}).get("parentQueue"):
        return (f"KAI queue {name} is a top-level queue: KAI schedules pods only from queues with a parentQueue",
                [f"queue/{name} has no parentQueue; leaf queues: "
                 + (", ".join(n for n, x in sorted(queues.items()) if (x.spec or {}).get("parentQueue")) or "none")], fix)
    return None


# ------------------------------------------------------------------ scheduler


@check("scheduler-activity", codes=["scheduler-not-found", "scheduling-in-progress"], reads=(EVENTS,),
       applies=_pending)
def scheduler_activity(ctx: PodContext) -> Iterable[Finding]:
    """A pod no scheduler has looked at: new (wait) or named a scheduler that does
    not run (it will wait forever)."""
    pod = ctx.pod
    if pod.spec.schedulingGates:
        return
    cond = pod.condition("PodScheduled")
    scheduler = pod.spec.schedulerName or DEFAULT_SCHEDULER
    heard = cond is not None or any(e.reason in ("FailedScheduling", "Scheduled") for e in ctx.events)
    if heard:
        return
    age = ctx.age_seconds
    if age is not None and age < NEW_POD_GRACE_SECONDS:
        yield Finding("scheduling-in-progress",
                      f"The pod is {human_age(age)} old and the scheduler has not reported yet; check again in a minute",
                      evidence=[f"created {human_age(age)} ago", "no PodScheduled condition, no scheduling events"])
        return
    others = sorted({e.component for e in ctx.snap.events if e.reason == "FailedScheduling" and e.component})
    evidence = [f"spec.schedulerName: {scheduler}",
                f"no PodScheduled condition and no scheduling event after {human_age(age)}"]
    if others:
        evidence.append(f"schedulers seen acting in this snapshot: {', '.join(others)}")
    if scheduler == DEFAULT_SCHEDULER:
        summary = f"No scheduler has acted on the pod for {human_age(age)}: is kube-scheduler running?"
        fixes = [Fix("Check the control plane's scheduler", ["kubectl -n kube-system get pods -l component=kube-scheduler",
                                                             "kubectl get --raw /readyz?verbose | grep -i sched"])]
    else:
        summary = f"The pod names schedulerName {scheduler}, and no running scheduler has acted on it for {human_age(age)}"
        cmds, why = change_commands(ctx, [{"op": "replace", "path": "/schedulerName", "value": DEFAULT_SCHEDULER}])
        fixes = [Fix(f"Deploy or fix the {scheduler} scheduler", [f"kubectl get pods -A | grep -i {scheduler}"]),
                 Fix(f"Or use the default scheduler in {workload_ref(ctx)}", cmds, needs_judgement=why)]
    yield Finding("scheduler-not-found", summary, evidence=evidence, root_cause=True, disruption=2,
                  unblocks=len(ctx.snap.nodes), fixes=fixes)


@check("preemption", codes=["preemption-in-progress"], reads=(EVENTS, PODS), applies=_pending)
def preemption(ctx: PodContext) -> Iterable[Finding]:
    """The scheduler nominated a node and is waiting for preempted pods to leave."""
    node = ctx.pod.status.nominatedNodeName
    if not node:
        return
    victims = [p for p in ctx.snap.pods.values() if p.spec.nodeName == node and p.metadata.deletionTimestamp]
    evidence = [f"status.nominatedNodeName: {node}"]
    evidence += [f"pod/{p.metadata.name} -n {p.metadata.namespace} on {node} is terminating (since {p.metadata.deletionTimestamp})"
                 for p in victims[:5]]
    yield Finding("preemption-in-progress",
                  f"The pod is nominated to {node} and waits for {len(victims) or 'the'} preempted pod(s) to terminate",
                  evidence=evidence, nodes=[node], root_cause=False, disruption=0,
                  fixes=[Fix("Usually nothing: it binds once the victims are gone. If a victim hangs in Terminating, look at its finalizers",
                             [f"kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep Terminating"])])


# ------------------------------------------------------------------ volumes


@check("volumes", codes=["volume-binding"], needs=(PVCS,), reads=(EVENTS,), applies=lambda ctx: ctx.pending_unbound and any(
    v.persistentVolumeClaim for v in ctx.pod.spec.volumes))
def volumes(ctx: PodContext) -> Iterable[Finding]:
    """PersistentVolumeClaims the pod needs that are missing, being deleted, or
    unbound with Immediate binding: the pod cannot schedule until they bind."""
    evidence = []
    for v in ctx.pod.spec.volumes:
        if not v.persistentVolumeClaim:
            continue
        name = v.persistentVolumeClaim.claimName
        pvc = ctx.snap.pvcs.get(f"{ctx.ns}/{name}")
        if pvc is None:
            evidence.append(f"persistentvolumeclaim/{name} does not exist")
            continue
        if pvc.metadata.deletionTimestamp:
            evidence.append(f"persistentvolumeclaim/{name} is being deleted")
        if pvc.status.phase != "Bound":
            sc = ctx.snap.storage_classes.get(pvc.spec.storageClassName or "")
            mode = sc.volumeBindingMode if sc else None
            if mode == "WaitForFirstConsumer":
                continue  # binds after the pod is scheduled
            evidence.append(f"persistentvolumeclaim/{name} is {pvc.status.phase or 'unbound'}"
                            + (f" (storageClass {pvc.spec.storageClassName}, binding {mode or 'Immediate'})" if pvc.spec.storageClassName else ""))
    if not evidence:
        return
    yield Finding("volume-binding", "Volume claims block the pod, not GPUs", evidence=evidence, root_cause=True,
                  disruption=DISRUPTION.get("volume-binding", 2),
                  fixes=[Fix("Create or fix the claim; see why the provisioner has not bound it",
                             [f"kubectl -n {ctx.ns} describe pvc {v.persistentVolumeClaim.claimName}"
                              for v in ctx.pod.spec.volumes if v.persistentVolumeClaim][:2])])


# ------------------------------------------------------------------ DRA


_DRIVER_RE = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


def _class_driver(dc: Any) -> Optional[str]:
    for sel in (dc.spec or {}).get("selectors") or []:
        m = _DRIVER_RE.search(((sel or {}).get("cel") or {}).get("expression", ""))
        if m:
            return m.group(1)
    return None


def _requests(claim: Any) -> list[tuple[str, str, int]]:
    """(request name, deviceClassName, count) from v1 (exactly) and v1beta1 shapes."""
    out = []
    for r in ((claim.spec or {}).get("devices") or {}).get("requests") or []:
        body = r.get("exactly") or r
        count = body.get("count") or 1
        if body.get("allocationMode") == "All":
            count = 0
        out.append((r.get("name", ""), body.get("deviceClassName", ""), int(count)))
    return out


@check("dra-claims", codes=["dra-claim-unallocatable"], needs=(DRA,), reads=(EVENTS,), applies=lambda ctx: ctx.pending_unbound and bool(ctx.pod.spec.resourceClaims))
def dra_claims(ctx: PodContext) -> Iterable[Finding]:
    """Dynamic Resource Allocation: each ResourceClaim the pod needs must exist,
    name an existing DeviceClass, and find free devices in the ResourceSlices."""
    statuses = {s.name: s.resourceClaimName for s in ctx.pod.status.resourceClaimStatuses}
    allocated: set[tuple[str, str, str]] = set()
    for c in ctx.snap.objects("ResourceClaim"):
        for res in (((c.status or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            allocated.add((res.get("driver", ""), res.get("pool", ""), res.get("device", "")))
    evidence = []
    for rc in ctx.pod.spec.resourceClaims:
        name = rc.resourceClaimName or statuses.get(rc.name)
        if not name:
            evidence.append(f"claim {rc.name}: its ResourceClaim was not generated yet from template "
                            f"{rc.resourceClaimTemplateName or '?'}")
            continue
        claim = ctx.snap.find("ResourceClaim", ctx.ns, name)
        if claim is None:
            evidence.append(f"resourceclaim/{name} does not exist")
            continue
        if ((claim.status or {}).get("allocation")):
            continue
        for req, cls, count in _requests(claim):
            dc = ctx.snap.find("DeviceClass", None, cls)
            if dc is None:
                evidence.append(f"resourceclaim/{name} request {req}: DeviceClass {cls} does not exist")
                continue
            driver = _class_driver(dc)
            total, free = 0, 0
            for s in ctx.snap.objects("ResourceSlice"):
                spec = s.spec or {}
                if driver and spec.get("driver") != driver:
                    continue
                pool = (spec.get("pool") or {}).get("name", "")
                for d in spec.get("devices") or []:
                    total += 1
                    if (spec.get("driver", ""), pool, d.get("name", "")) not in allocated:
                        free += 1
            if free < max(count, 1):
                evidence.append(f"resourceclaim/{name} request {req}: needs {count or 'all'} device(s) of class {cls} "
                                f"(driver {driver or '?'}); ResourceSlices hold {total}, {free} unallocated")
    for line in ctx.fit_error and [r.reason for r in ctx.fit_error.reasons if r.code == "dra-claim-unallocatable"] or []:
        evidence.append(f"scheduler: {line}")
    if not evidence:
        return
    yield Finding("dra-claim-unallocatable", "A DRA ResourceClaim of the pod cannot be allocated", evidence=evidence,
                  root_cause=True, disruption=3,
                  fixes=[Fix("Check the claim, its DeviceClass and the driver's ResourceSlices",
                             [f"kubectl -n {ctx.ns} get resourceclaims -o wide", "kubectl get deviceclasses",
                              "kubectl get resourceslices -o wide"])])


# ------------------------------------------------------------------ autoscaler


@lru_cache(maxsize=None)
def _autoscaler_patterns() -> tuple[tuple[str, re.Pattern[str], str], ...]:
    return tuple((r["reason"], re.compile(r["pattern"]), r["code"]) for r in load_yaml("autoscaler_events.yaml")["events"])


@check("autoscaler", codes=["autoscaler-no-scale-up", "scale-up-in-progress"], needs=(EVENTS,), applies=_pending)
def autoscaler(ctx: PodContext) -> Iterable[Finding]:
    """What the cluster autoscaler or Karpenter said about this pod: a node is on
    its way (wait), or none will come (and why)."""
    latest = None
    for e in ctx.events:
        for reason, rx, code in _autoscaler_patterns():
            if e.reason == reason and rx.search(e.message or "") and (reason != "FailedScheduling" or e.component != DEFAULT_SCHEDULER):
                latest = (e, code)
    if latest is None:
        return
    e, code = latest
    age = ctx.snap.age_seconds(e.last_seen)
    if code == "scale-up-in-progress":
        yield Finding(code, f"The autoscaler is adding a node for this pod (asked {human_age(age)} ago)",
                      evidence=[ctx.event_line(e)],
                      fixes=[Fix("Wait for the node to join; if it takes over ~10 minutes, check the node group / NodeClaim",
                                 ["kubectl get nodeclaims -o wide", "kubectl get nodes --sort-by=.metadata.creationTimestamp"])])
    else:
        yield Finding(code, "The node autoscaler will not add a node for this pod", evidence=[ctx.event_line(e)],
                      root_cause=True, disruption=3,
                      fixes=[Fix("Raise the node group's max size or add a node group / NodePool whose nodes fit the pod",
                                 ["kubectl -n kube-system get configmap cluster-autoscaler-status -o yaml",
                                  "kubectl get nodepools -o wide"])])
