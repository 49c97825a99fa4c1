"""KAI Scheduler / Run:ai (scheduling.run.ai): why KAI's queue holds a pod. Called by
``pod_state.queue_admission``; returns a ``QueueHold`` or None.

What it reads (NVIDIA/KAI-Scheduler):
* the pod's queue: label ``kai.scheduler/queue``; its PodGroup: annotation
  ``pod-group-name`` (pkg/common/constants/constants.go);
* the PodGroup's ``status.schedulingConditions`` (pkg/apis/scheduling/v2alpha2/
  podgroup_types.go): type ``UnschedulableOnNodePool``, reason ``Unschedulable``,
  ``message`` ``<Reason>: <text>.`` and ``reasons[]`` with ``NonPreemptibleOverQuota``,
  ``OverLimit`` or ``QueueDoesNotExist`` (pkg/scheduler/cache/status_updater);
* the queues (``scheduling.run.ai/v2`` Queue): ``spec.resources.gpu.quota`` /
  ``limit`` / ``overQuotaWeight``, ``spec.parentQueue``, ``status.allocated`` /
  ``allocatedNonPreemptible``; the arithmetic (model/queues_math.py) follows KAI's
  capacity policy: the limits of the queue and every queue above it, then, for a
  non-preemptible job, their quotas.

Only leaf queues take pods (docs/queues/README.md; KAI-Scheduler#621)."""

from __future__ import annotations

from typing import Any, Optional

from ..findings import Fix
from ..model.names import is_dns1123_subdomain
from ..model.queues_math import KaiBlock, KaiLevel, kai_block, kai_chain, kai_level, kai_over_quota, num, parse_kai_refusal, quantities
from .context import PodContext
from .queues import QueueHold

KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_PODGROUP_ANNOTATION = "pod-group-name"
KAI_FRACTION_ANNOTATION = "gpu-fraction"
KAI_FRACTION_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
KAI_QUOTA = ("OverQuota", "over quota", "OverLimit")
KAI_REASONS = ("NonPreemptibleOverQuota", "OverLimit", "QueueDoesNotExist")
API = "scheduling.run.ai/"
GPU = "nvidia.com/gpu"
# KAI: a priority of 100 or more makes a workload non-preemptible unless its
# PodGroup says otherwise; the priority classes KAI installs (docs/priority/README.md).
NON_PREEMPTIBLE_PRIORITY = 100
KAI_PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}


def _kai(obj: Any) -> bool:
    return obj is not None and (obj.apiVersion or "").startswith(API)


def _podgroup(ctx: PodContext) -> Any:
    name = ctx.pod.metadata.annotations.get(KAI_PODGROUP_ANNOTATION)
    if not name:
        return None
    return next((o for o in ctx.snap.objects("PodGroup")
                 if _kai(o) and o.metadata.name == name and o.metadata.namespace in (ctx.ns, None)), None)


def _condition(pg: Any) -> Optional[dict]:
    """The newest true scheduling condition (KAI orders them by numeric transitionID)."""
    conds = [c for c in ((pg.status or {}).get("schedulingConditions") or []) if isinstance(c, dict)]
    conds = [c for c in conds if c.get("status", "True") == "True"]

    def order(c: dict) -> int:
        try:
            return int(c.get("transitionID") or -1)
        except (TypeError, ValueError):
            return -1

    return max(conds, key=order) if conds else None


def _reasons(cond: Optional[dict]) -> list[tuple[str, str]]:
    if cond is None:
        return []
    out = [(str(r.get("reason") or ""), str(r.get("message") or "")) for r in cond.get("reasons") or [] if isinstance(r, dict)]
    if not out:   # older KAI: only "message", "<Reason>: <text>."
        msg = str(cond.get("message") or "")
        head = msg.split(":", 1)[0].strip()
        if head in KAI_REASONS:
            out.append((head, msg.split(":", 1)[1].strip()))
    return out


def _pod_gpus(ctx: PodContext) -> float:
    whole = ctx.requests.get(GPU, 0.0)
    if whole:
        return whole
    ann = ctx.pod.metadata.annotations
    try:
        frac = float(ann.get(KAI_FRACTION_ANNOTATION) or 0)
        devices = float(ann.get(KAI_FRACTION_DEVICES_ANNOTATION) or 1)
    except ValueError:
        return 0.0
    return frac * devices if 0 < frac <= 1 else 0.0


def _priority(ctx: PodContext) -> Optional[int]:
    """The pod's priority; else its PriorityClass's value (the object, else KAI's defaults)."""
    if ctx.pod.spec.priority is not None:
        return ctx.pod.spec.priority
    name = ctx.pod.spec.priorityClassName
    if not name:
        return None
    pc = ctx.snap.find("PriorityClass", None, name)
    value = getattr(pc, "value", None) if pc is not None else None
    if value is None and pc is not None:
        value = (pc.spec or {}).get("value") if isinstance(pc.spec, dict) else None
    try:
        return int(value) if value is not None else KAI_PRIORITY_CLASSES.get(name)
    except (TypeError, ValueError):
        return KAI_PRIORITY_CLASSES.get(name)


def _preemptible(ctx: PodContext, pg: Any) -> bool:
    said = str(((pg.spec or {}) if pg is not None else {}).get("preemptibility") or "").lower()
    if said in ("preemptible", "non-preemptible"):
        return said == "preemptible"
    return (_priority(ctx) or 0) < NON_PREEMPTIBLE_PRIORITY


def _level_line(lv: KaiLevel) -> str:
    def v(x: Optional[float]) -> str:
        return "not set" if x is None else ("unlimited" if x == -1 else num(x))
    line = (f"queue/{lv.name}{' (parent ' + lv.parent + ')' if lv.parent else ' (top-level)'}: gpu quota {v(lv.quota)}, "
            f"limit {v(lv.limit)}, overQuotaWeight {v(lv.over_quota_weight)}")
    if lv.allocated is None:
        return line + "; no status.allocated reported"
    return line + f"; allocated {num(lv.allocated)}" + (f" (non-preemptible {num(lv.allocated_np)})" if lv.allocated_np is not None else "")


def _room_lines(chain: list[KaiLevel], requested: float, preemptible: bool) -> list[str]:
    """Whether the job takes its queue over quota, and what room each queue above it has."""
    out = []
    if chain and kai_over_quota(chain[0], requested):
        lv = chain[0]
        out.append(f"the job takes queue {lv.name} over its quota ({num(lv.allocated or 0)} + {num(requested)} > {num(lv.quota or 0)}): "
                   + ("allowed for a preemptible job, on GPUs other queues leave unused" if preemptible
                      else "not allowed for a non-preemptible job"))
    for lv in chain[1:]:
        if lv.allocated is None:
            continue
        if lv.limit is not None and lv.limit > 0:
            out.append(f"parent queue {lv.name}: {num(max(0.0, lv.limit - lv.allocated))} GPU(s) left under its limit {num(lv.limit)}")
        elif lv.quota is not None and lv.quota >= 0:
            out.append(f"parent queue {lv.name}: {num(max(0.0, lv.quota - lv.allocated))} GPU(s) left in its quota {num(lv.quota)}, no limit")
    return out


def explain(ctx: PodContext) -> Optional[QueueHold]:
    """Why KAI's queue holds the pod, or None."""
    pod = ctx.pod
    name = pod.metadata.labels.get(KAI_QUEUE_LABEL)
    if name is None and (pod.spec.schedulerName or "") != "kai-scheduler":
        return None
    pg = _podgroup(ctx)
    name = name or ((pg.spec or {}).get("queue") if pg is not None else None) or "default-queue"
    queues = {q.metadata.name: q for q in ctx.snap.objects("Queue") if _kai(q)}
    safe = is_dns1123_subdomain(name)
    look = ["kubectl get queues.scheduling.run.ai -o custom-columns=NAME:.metadata.name,PARENT:.spec.parentQueue,"
            "QUOTA:.spec.resources.gpu.quota,LIMIT:.spec.resources.gpu.limit,ALLOCATED:.status.allocated"]
    if safe and name in queues:
        look.append(f"kubectl get queues.scheduling.run.ai {name} -o yaml")
    if pg is not None and is_dns1123_subdomain(pg.metadata.name):
        look.append(f"kubectl -n {ctx.ns} describe podgroups.scheduling.run.ai {pg.metadata.name}")
    fix = Fix("See the queue tree and quotas; submit to a leaf queue with quota, or make the workload preemptible", look)

    cond = _condition(pg) if pg is not None else None
    reasons = _reasons(cond)
    evidence = []
    if cond is not None:
        evidence.append(f"podgroup/{pg.metadata.name} {cond.get('type') or 'schedulingCondition'}"
                        + (f" on node pool {cond['nodePool']}" if cond.get("nodePool") else "")
                        + f": {cond.get('message') or cond.get('reason') or ''}".rstrip())
    pod_cond = pod.condition("PodScheduled")
    said = pod_cond.message if pod_cond is not None and pod_cond.status == "False" and pod_cond.message else ""
    if said and not evidence:
        evidence.append(f"kai-scheduler (PodScheduled): {said}")

    if not queues:
        if any(r in KAI_REASONS[:2] for r, _ in reasons) or any(k in said for k in KAI_QUOTA):
            return QueueHold(f"KAI's queue {name} refuses the pod over its quota or limit (the queues could not be read)",
                             evidence, [fix])
        return None
    q = queues.get(name)
    if q is None:
        return QueueHold(f"The pod names KAI queue {name}, which does not exist",
                         evidence + [f"queues: {', '.join(sorted(queues))}"], [fix])
    if not (q.spec or {}).get("parentQueue"):
        return QueueHold(f"KAI queue {name} is a top-level queue: KAI schedules pods only from queues with a parentQueue",
                         evidence + [f"queue/{name} has no parentQueue; leaf queues: "
                                     + (", ".join(n for n, x in sorted(queues.items()) if (x.spec or {}).get("parentQueue")) or "none")],
                         [fix])

    levels = {n: kai_level(n, x.spec, x.status) for n, x in queues.items()}
    chain = kai_chain(name, levels)
    per_pod = _pod_gpus(ctx)
    try:
        members = max(1, int(((pg.spec or {}).get("minMember") if pg is not None else 1) or 1))
    except (TypeError, ValueError):
        members = 1
    details = next((((r.get("details") or {}).get("queueDetails") or {}) for r in (cond or {}).get("reasons") or []
                    if isinstance(r, dict) and isinstance(r.get("details"), dict)), {})
    requested = quantities(details.get("podGroupRequestedResources")).get(GPU) or per_pod * members
    preemptible = _preemptible(ctx, pg)
    evidence += [_level_line(lv) for lv in chain]
    evidence.append(f"the job requests {num(requested)} GPU(s)"
                    + (f" ({members} pods x {num(per_pod)})" if members > 1 and per_pod else "")
                    + f"; it is {'preemptible' if preemptible else 'non-preemptible'}"
                    + (f" (priority {_priority(ctx)}"
                       + (f", priorityClassName {pod.spec.priorityClassName}" if pod.spec.priorityClassName else "") + ")"
                       if _priority(ctx) is not None else ""))
    evidence += _room_lines(chain, requested, preemptible)
    block = kai_block(chain, requested, preemptible)
    word = dict(reasons)
    if block is None:   # the queues' status lacks the numbers: KAI's own message carries them
        for text in [t for _, t in reasons] + [str((cond or {}).get("message") or ""), said]:
            got = parse_kai_refusal(text)
            if got is not None:
                reason, qn, cap, used, req = got
                block = KaiBlock(reason, levels.get(qn) or KaiLevel(qn, "", None, None, None, None, None), cap, used, req)
                word.setdefault(reason, text)
                evidence.append(f"numbers from KAI's message: {num(cap)} {'limit' if reason == 'OverLimit' else 'quota'}, "
                                f"{num(used)} allocated, {num(req)} requested")
                break
    if block is not None:
        lv = block.level
        where = f"KAI queue {name}" if lv.name == name else f"KAI queue {name}'s parent queue {lv.name}"
        if block.reason == "OverLimit":
            summary = (f"{where} has no room under its GPU limit: limit {num(block.cap)}, allocated {num(block.used)}, "
                       f"the job requests {num(block.requested)}")
            how = f"Raise queue {lv.name}'s gpu limit, or wait for jobs in it" + (" and its child queues" if lv.name != name else "") + " to finish"
            path = "limit"
        else:
            summary = (f"{where} refuses the non-preemptible job over quota: quota {num(block.cap)} GPUs, "
                       f"{num(block.used)} already allocated to non-preemptible pods, the job requests {num(block.requested)}")
            how = (f"Make the job preemptible (a priorityClassName below {NON_PREEMPTIBLE_PRIORITY}, e.g. train) so it may run "
                   f"over quota, or raise queue {lv.name}'s gpu quota")
            path = "quota"
        if block.reason in word:
            summary += f" (KAI: {block.reason})"
        if block.exact:
            summary += (f"; {num(block.used)} + {num(block.requested)} equals the {path if block.reason == 'OverLimit' else 'quota'} exactly, "
                        "which KAI's floating-point check refuses all the same (KAI-Scheduler#2209)")
        cmd = (f"kubectl patch queues.scheduling.run.ai {lv.name} --type merge -p "
               f"'{{\"spec\":{{\"resources\":{{\"gpu\":{{\"{path}\":<new {path}>}}}}}}}}'") if is_dns1123_subdomain(lv.name) else look[0]
        return QueueHold(summary, evidence, [fix, Fix(how, [cmd], needs_judgement=(
            "a queue's quota and limit divide the cluster between teams: change them with the cluster's owners"))])
    for reason, text in reasons:
        if reason in ("NonPreemptibleOverQuota", "OverLimit"):
            return QueueHold(f"KAI's queue {name} refuses the job ({reason}): {text}", evidence, [fix])
        if reason == "QueueDoesNotExist":
            return QueueHold(f"KAI says the job's queue does not exist ({text})", evidence, [fix])
    if any(k in said for k in KAI_QUOTA):
        return QueueHold(f"KAI's queue {name} refuses the pod over quota", evidence, [fix])
    leaf = chain[0] if chain else None
    if leaf is not None and preemptible and kai_over_quota(leaf, requested) and reasons:
        return QueueHold(f"KAI queue {name} is over its GPU quota ({num(leaf.allocated or 0)} allocated + {num(requested)} "
                         f"requested > quota {num(leaf.quota or 0)}): the preemptible job runs only on GPUs other queues leave unused",
                         evidence, [fix])
    return None
