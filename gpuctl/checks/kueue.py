"""Kueue (kueue.x-k8s.io): why a pod's Workload is not admitted. Called by
``pod_state.queue_admission``; returns a ``QueueHold`` or None."""

from __future__ import annotations

from typing import Any, Optional

from ..findings import Fix
from ..model.snapshot import QUEUES
from .context import PodContext
from .queues import QueueHold, conditions

KUEUE_GATE = "kueue.x-k8s.io/admission"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


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



def explain(ctx: PodContext) -> Optional[QueueHold]:
    pod = ctx.pod
    gates = [g.name for g in pod.spec.schedulingGates]
    queue = pod.metadata.labels.get(QUEUE_LABEL)
    if not (KUEUE_GATE in gates or queue):
        return None
    evidence: list[str] = []
    if QUEUES in ctx.snap.gaps:
        evidence.append("Kueue workloads: " + ctx.snap.gaps[QUEUES].describe())
    for w in _kueue_workloads(ctx):
        for c in conditions(w):
            if c.get("type") in ("QuotaReserved", "Admitted") and c.get("status") == "False":
                evidence.append(f"workload/{w.metadata.name} {c.get('type')}=False reason {c.get('reason')}: {c.get('message', '')}")
        for e in ctx.snap.events_for("Workload", ctx.ns, w.metadata.name)[-2:]:
            evidence.append(ctx.event_line(e))
    summary = "Kueue has not admitted the pod's workload" + (f" (LocalQueue {queue})" if queue else "")
    fixes = [Fix("See why the ClusterQueue cannot admit it (quota per flavor, borrowing limits, inactive queue); "
                 "free quota or raise nominalQuota", [
                     f"kubectl -n {ctx.ns} get workloads.kueue.x-k8s.io -o wide",
                     f"kubectl -n {ctx.ns} get localqueue {queue or '<queue>'} -o yaml",
                     "kubectl get clusterqueue -o wide"])]
    return QueueHold(summary, evidence, fixes)
