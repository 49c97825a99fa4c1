"""KAI Scheduler / Run:ai (scheduling.run.ai): why KAI's queue holds a pod. Called by
``pod_state.queue_admission``; returns a ``QueueHold`` or None."""

from __future__ import annotations

from typing import Optional

from ..findings import Fix
from .context import PodContext
from .queues import QueueHold

# KAI Scheduler (NVIDIA/KAI-Scheduler): pods name their queue with this label; queues are
# scheduling.run.ai Queue objects, and only a queue with a parentQueue takes pods
# (KAI-Scheduler#621: "top-level queue not schedulable"); its quota refusals read
# "NonPreemptibleOverQuota: …" (KAI-Scheduler#2209).
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_QUOTA = ("OverQuota", "over quota")


def explain(ctx: PodContext) -> Optional[QueueHold]:
    """Why KAI's queue holds the pod, or None."""
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
        return QueueHold(f"KAI's queue {name} refuses the pod over quota", [f"kai-scheduler (PodScheduled): {said}"], [fix])
    if not queues:
        return None
    q = queues.get(name)
    if q is None:
        return QueueHold(f"The pod names KAI queue {name}, which does not exist",
                         [f"queues: {', '.join(sorted(queues))}"], [fix])
    if not (q.spec or {}).get("parentQueue"):
        return QueueHold(f"KAI queue {name} is a top-level queue: KAI schedules pods only from queues with a parentQueue",
                         [f"queue/{name} has no parentQueue; leaf queues: "
                          + (", ".join(n for n, x in sorted(queues.items()) if (x.spec or {}).get("parentQueue")) or "none")],
                         [fix])
    return None


