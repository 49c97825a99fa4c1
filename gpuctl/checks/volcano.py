"""Volcano (scheduling.volcano.sh): why a pod's PodGroup (its gang) is not ready.
Called by ``pod_state.queue_admission``; returns a ``QueueHold`` or None."""

from __future__ import annotations

from typing import Optional

from ..findings import Fix
from ..model.snapshot import QUEUES
from .context import PodContext
from .queues import QueueHold, conditions

GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")


def explain(ctx: PodContext) -> Optional[QueueHold]:
    pod = ctx.pod
    group = next((pod.metadata.annotations.get(a) for a in GROUP_ANNOTATIONS if pod.metadata.annotations.get(a)), None)
    if not group or (pod.spec.schedulerName or "") != "volcano":
        return None
    pg = ctx.snap.find("PodGroup", ctx.ns, group)
    if pg is None:     # unread PodGroups: said as evidence, but no hold of its own
        return QueueHold("", ["Volcano PodGroups: " + ctx.snap.gaps[QUEUES].describe()]) if QUEUES in ctx.snap.gaps else None
    phase = (pg.status or {}).get("phase")
    if phase not in ("Pending", "Inqueue", "Unknown", None):
        return None
    evidence = [f"podgroup/{group} phase {phase}, minMember {(pg.spec or {}).get('minMember')}"]
    for c in conditions(pg):
        if c.get("status") == "True" and c.get("type") == "Unschedulable" or c.get("reason") in ("NotEnoughResources", "NotEnoughTasks"):
            evidence.append(f"podgroup/{group} {c.get('type')} ({c.get('reason')}): {c.get('message', '')}")
    for e in ctx.snap.events_for("PodGroup", ctx.ns, group)[-2:]:
        evidence.append(ctx.event_line(e))
    fixes = [Fix("Free resources for the whole gang or lower minMember; check the Volcano queue's capability",
                 [f"kubectl -n {ctx.ns} describe podgroup {group}", "kubectl get queues.scheduling.volcano.sh"])]
    return QueueHold(f"Volcano PodGroup {group} is {phase or 'not ready'}: the gang cannot be placed as a whole",
                     evidence, fixes)
