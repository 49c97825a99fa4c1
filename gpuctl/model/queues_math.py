"""The arithmetic of gang queues, as pure functions over plain numbers and the
objects' dicts: Volcano (scheduling.volcano.sh Queue / PodGroup) and KAI Scheduler
(scheduling.run.ai Queue / PodGroup). Checks (checks/volcano.py, checks/kai.py)
turn the results into sentences; nothing here reads the snapshot.

Volcano (volcano-sh/volcano):
* a PodGroup is admitted to its queue ("enqueued", phase Inqueue) only when
  ``minResources + queue allocated (+ inqueue - elastic) <= capability`` in every
  dimension the capability lists (pkg/scheduler/plugins/proportion/proportion.go,
  AddJobEnqueueableFn; the capacity plugin does the same with ``deserved``);
  a queue whose ``status.state`` is not ``Open`` admits nothing;
* the gang starts only when ``minMember`` pods are placed at once
  (pkg/scheduler/plugins/gang/gang.go); its messages read
  ``%v/%v tasks in gang unschedulable: %v`` with ``FitError()`` =
  ``pod group is not ready, <sorted "count status" histogram, "N minAvailable" among them>``
  (pkg/scheduler/api/job_info.go) and, in v1.9-v1.11,
  ``Not enough valid tasks for gang-scheduling, valid: %d, min: %d``.

KAI (NVIDIA/KAI-Scheduler pkg/scheduler/plugins/proportion/capacity_policy):
* ``OverLimit`` when, for the job's queue or any queue above it,
  ``limit < allocated + requested`` (limit -1: none);
* ``NonPreemptibleOverQuota`` when a non-preemptible job would take a queue (or
  one above it) past ``quota`` counting only non-preemptible allocations.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from .quantity import parse_quantity

UNLIMITED = -1.0


def quantities(rl: Any) -> dict[str, float]:
    """A ResourceList (``{"nvidia.com/gpu": "8", "cpu": "96"}``) as numbers; keys
    whose value does not parse are left out."""
    out: dict[str, float] = {}
    for k, v in (rl or {}).items() if isinstance(rl, dict) else ():
        try:
            out[str(k)] = parse_quantity(v)
        except (ValueError, TypeError):
            continue
    return out


def num(x: float) -> str:
    """8.0 -> "8", 0.5 -> "0.5", 1/3 -> "0.333" (how KAI humanizes: 3 digits)."""
    if x == int(x):
        return str(int(x))
    return f"{x:.3f}".rstrip("0").rstrip(".")


# ------------------------------------------------------------------ Volcano


@dataclass(frozen=True)
class QueueRoom:
    """One dimension of a Volcano queue against a gang's minimum."""

    resource: str
    capability: float
    allocated: float
    need: float

    @property
    def free(self) -> float:
        return max(0.0, self.capability - self.allocated)

    @property
    def short(self) -> bool:
        return self.need > self.free

    @property
    def never(self) -> bool:
        """The gang needs more than the queue's whole capability."""
        return self.need > self.capability


def queue_room(need: dict[str, float], capability: dict[str, float], allocated: dict[str, float]) -> list[QueueRoom]:
    """Each dimension the gang needs and the capability lists (Volcano checks only
    those), in the order of ``need``."""
    return [QueueRoom(r, capability[r], allocated.get(r, 0.0), q) for r, q in need.items() if q > 0 and r in capability]


def gang_need(min_resources: dict[str, float], min_member: int, per_pod: dict[str, float]) -> dict[str, float]:
    """What the queue must hold for the gang: ``spec.minResources`` (the job
    controller sums the minAvailable tasks' requests), else minMember x one pod."""
    if min_resources:
        return dict(min_resources)
    return {r: q * max(min_member, 1) for r, q in per_pod.items()}


@dataclass(frozen=True)
class GangMessage:
    """What the Volcano scheduler wrote about a gang."""

    unready: int
    tasks: int
    min_available: Optional[int]
    histogram: dict[str, int] = field(default_factory=dict)


_GANG_RE = re.compile(r"(\d+)/(\d+) tasks in gang unschedulable: pod group is (?:not )?ready, ([^;]*)")
_VALID_RE = re.compile(r"Not enough valid tasks for gang-scheduling, valid: (\d+), min: (\d+)")


def parse_gang_message(text: str) -> Optional[GangMessage]:
    """``4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4
    minAvailable; Pending: 4 Unschedulable`` -> tasks 4, minAvailable 4; ``Not
    enough valid tasks for gang-scheduling, valid: 3, min: 4`` -> tasks 3, min 4."""
    m = _GANG_RE.search(text or "")
    if m:
        hist: dict[str, int] = {}
        for part in m.group(3).split(". Origin reason", 1)[0].split(","):
            bits = part.strip().split(" ", 1)
            if len(bits) == 2 and bits[0].isdigit():
                hist[bits[1].strip()] = int(bits[0])
        return GangMessage(int(m.group(1)), int(m.group(2)), hist.pop("minAvailable", None), hist)
    m = _VALID_RE.search(text or "")
    if m:
        return GangMessage(int(m.group(2)) - int(m.group(1)), int(m.group(1)), int(m.group(2)))
    return None


def pods_that_fit(per_pod: dict[str, float], room: dict[str, float]) -> int:
    """How many pods of the shape ``per_pod`` fit into ``room`` (one node)."""
    counts = [math.floor(room.get(r, 0.0) / q + 1e-9) for r, q in per_pod.items() if q > 0]
    return max(0, min(counts)) if counts else 0


@dataclass(frozen=True)
class GangFit:
    """A gang of ``min_member`` identical pods against the nodes they may use."""

    min_member: int
    nodes: int
    slots_empty: int     # pods the nodes hold when empty (allocatable)
    slots_now: int       # pods they hold with what runs there now

    @property
    def never(self) -> bool:
        return self.slots_empty < self.min_member

    @property
    def wait(self) -> bool:
        return not self.never and self.slots_now < self.min_member


def gang_fit(min_member: int, per_pod: dict[str, float], nodes: list[tuple[dict[str, float], dict[str, float]]]) -> GangFit:
    """``nodes``: (allocatable, free) of each node the pods may use."""
    return GangFit(min_member, len(nodes), sum(pods_that_fit(per_pod, a) for a, _ in nodes),
                   sum(pods_that_fit(per_pod, f) for _, f in nodes))


# ------------------------------------------------------------------ KAI


@dataclass(frozen=True)
class KaiLevel:
    """One queue of a KAI queue chain, GPU dimension (spec.resources.gpu; GPUs in
    fractions, status.allocated / allocatedNonPreemptible ``nvidia.com/gpu``)."""

    name: str
    parent: str
    quota: Optional[float]            # None: not set
    limit: Optional[float]            # None: not set; -1: unlimited
    over_quota_weight: Optional[float]
    allocated: Optional[float]        # None: the queue reports no status
    allocated_np: Optional[float]


def kai_level(name: str, spec: Any, status: Any, resource: str = "nvidia.com/gpu") -> KaiLevel:
    spec = spec if isinstance(spec, dict) else {}
    status = status if isinstance(status, dict) else {}
    gpu = ((spec.get("resources") or {}).get("gpu") or {}) if isinstance(spec.get("resources"), dict) else {}

    def f(d: Any, k: str) -> Optional[float]:
        v = d.get(k) if isinstance(d, dict) else None
        try:
            return float(v) if v is not None and not isinstance(v, bool) else None
        except (TypeError, ValueError):
            return None

    alloc = quantities(status.get("allocated")) if "allocated" in status else None
    alloc_np = quantities(status.get("allocatedNonPreemptible")) if "allocatedNonPreemptible" in status else None
    return KaiLevel(name, str(spec.get("parentQueue") or ""), f(gpu, "quota"), f(gpu, "limit"), f(gpu, "overQuotaWeight"),
                    alloc.get(resource, 0.0) if alloc is not None else None,
                    alloc_np.get(resource, 0.0) if alloc_np is not None else None)


def kai_chain(leaf: str, levels: dict[str, KaiLevel]) -> list[KaiLevel]:
    """The leaf and the queues above it, leaf first (cycles cut)."""
    out: list[KaiLevel] = []
    name = leaf
    while name in levels and all(x.name != name for x in out):
        out.append(levels[name])
        name = levels[name].parent
    return out


@dataclass(frozen=True)
class KaiBlock:
    reason: str          # "OverLimit" | "NonPreemptibleOverQuota"
    level: KaiLevel
    cap: float           # the limit, or the quota
    used: float          # allocated, or allocated to non-preemptible pods
    requested: float

    @property
    def exact(self) -> bool:
        """used + requested equals the cap: KAI's float comparison still refuses
        it (0.1 + 0.2 > 0.3 in binary floating point; KAI-Scheduler#2209)."""
        return abs(self.cap - (self.used + self.requested)) <= 1e-9 * max(1.0, abs(self.cap))


def kai_block(chain: list[KaiLevel], requested: float, preemptible: bool) -> Optional[KaiBlock]:
    """The first refusal KAI's capacity policy would give, in its own order: the
    limits over the whole chain first, then (non-preemptible jobs) the quotas."""
    if requested <= 0:
        return None
    for lv in chain:
        if lv.limit is not None and lv.limit != UNLIMITED and lv.limit > 0 and lv.allocated is not None \
                and lv.limit < lv.allocated + requested:
            return KaiBlock("OverLimit", lv, lv.limit, lv.allocated, requested)
    if not preemptible:
        for lv in chain:
            if lv.quota is not None and lv.quota != UNLIMITED and lv.allocated_np is not None \
                    and lv.quota < lv.allocated_np + requested:
                return KaiBlock("NonPreemptibleOverQuota", lv, lv.quota, lv.allocated_np, requested)
    return None


_NPOQ_RE = re.compile(r"Workload requested ([\d.]+) GPUs, but (\S+) quota is ([\d.]+) GPUs, while ([\d.]+) GPUs are already "
                      r"allocated for non-preemptible pods")
_LIMIT_RE = re.compile(r"(\S+) quota has reached the allowable limit of GPUs\. Limit is ([\d.]+) GPUs, currently ([\d.]+) GPUs "
                       r"allocated and workload requested ([\d.]+) GPUs")


def parse_kai_refusal(text: str) -> Optional[tuple[str, str, float, float, float]]:
    """KAI's own numbers from its GPU refusal messages (pkg/scheduler/api/unschedule_info.go):
    (reason, queue, cap, used, requested)."""
    m = _NPOQ_RE.search(text or "")
    if m:
        return "NonPreemptibleOverQuota", m.group(2).rstrip(","), float(m.group(3)), float(m.group(4)), float(m.group(1))
    m = _LIMIT_RE.search(text or "")
    if m:
        return "OverLimit", m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))
    return None


def kai_over_quota(level: KaiLevel, requested: float) -> bool:
    """Whether the job takes the queue past its quota (allowed for preemptible
    jobs: they run over quota on GPUs other queues leave unused)."""
    return (level.quota is not None and level.quota != UNLIMITED and level.allocated is not None
            and level.allocated + requested > level.quota)
