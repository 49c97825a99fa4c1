"""Pod-level causes a Pending pod can have besides the nodes: queues and gates (each
queueing system explains itself in its own module), a scheduler that never acts,
preemption under way, volumes, the node autoscaler's decision, and whether the pod
asks for a GPU at all. DRA claims: checks/dra.py."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from ..findings import Finding, Fix
from ..knowledge.messages import load_yaml
from ..model.snapshot import EVENTS, PODS, PVCS, QUEUES
from . import kai, kueue, volcano
from .base import check
from .queues import QueueHold
from .context import PodContext, human_age
from .fixes import change_commands, workload_ref
from .fixes import DISRUPTION

NEW_POD_GRACE_SECONDS = 60
DEFAULT_SCHEDULER = "default-scheduler"


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


@check("queue-admission", codes=["queue-not-admitted"], reads=(EVENTS, QUEUES), applies=_pending)
def queue_admission(ctx: PodContext) -> Iterable[Finding]:
    """Scheduling gates, and the queueing systems that hold a pod before any node is
    tried: Kueue (checks/kueue.py), Volcano (checks/volcano.py), KAI (checks/kai.py).
    Each explains its own hold; no node-level fix helps until the queue admits the pod."""
    pod = ctx.pod
    gates = [g.name for g in pod.spec.schedulingGates]
    holds: list[QueueHold] = []
    if gates:
        evidence = [f"pod spec.schedulingGates: {', '.join(gates)}"]
        cond = pod.condition("PodScheduled")
        if cond is not None and cond.reason == "SchedulingGated":
            evidence.append(f"PodScheduled=False reason SchedulingGated{': ' + cond.message if cond.message else ''}")
        holds.append(QueueHold(f"The pod is held by scheduling gate(s) {', '.join(gates)}", evidence))
    for explain in (kueue.explain, volcano.explain, kai.explain):
        hold = explain(ctx)
        if hold is not None:
            holds.append(hold)
    said = [h.summary for h in holds if h.summary]
    if not said:
        return
    summary = said[-1]          # the queue system's word beats the bare gate
    evidence = [line for h in holds for line in h.evidence]
    fixes = [f for h in holds for f in h.fixes]
    if gates and not fixes:
        fixes.append(Fix("Find the controller that owns the gate; it removes it when it admits the pod",
                         [f"kubectl -n {ctx.ns} get pod {ctx.name} -o jsonpath='{{.spec.schedulingGates}}'"]))
    yield Finding("queue-not-admitted", summary, evidence=evidence, root_cause=True,
                  disruption=1, unblocks=len(ctx.snap.nodes), fixes=fixes)


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
