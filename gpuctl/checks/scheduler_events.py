"""Parsing the scheduler's verdict: ``FailedScheduling`` events and the
``PodScheduled=False`` condition, into per-reason node counts.

Accepts every FitError wording that kube-scheduler has used (scheduler_messages.yaml, each with its source): the
histogram ``0/N nodes are available: <n> <reason>, …``, PreFilter messages, the
``preemption:`` suffix (and the DRA ``no new claims to deallocate`` before it),
double periods from v1.26, the three historical taint texts (old ones carry the
taint's key, 1.34+ hides it) and Volcano's ``0/N nodes are unavailable``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..knowledge.messages import scheduler_patterns

_HEAD = re.compile(r"^\s*0/(?P<total>\d+) nodes are (?:un)?available:?\s*(?P<rest>.*)$", re.S)
_ENTRY_SPLIT = re.compile(r",\s+(?=\d+\s)")
_ENTRY = re.compile(r"^(?P<count>\d+)\s+(?P<reason>.+?)\s*$", re.S)
_HIST_END = re.compile(r"\.(?:\s|$)")


@dataclass
class ReasonCount:
    count: int
    reason: str           # the scheduler's text, e.g. "Insufficient nvidia.com/gpu"
    code: Optional[str]   # finding code, or a rule ("@resource", "@selector-or-affinity"); None if unknown
    resource: Optional[str] = None
    taint_key: Optional[str] = None
    taint_value: Optional[str] = None
    state_checked: bool = True   # node-fit evaluates this constraint itself


@dataclass
class FitError:
    total_nodes: Optional[int]
    reasons: list[ReasonCount] = field(default_factory=list)
    prefilter: Optional[str] = None        # message when a PreFilter plugin rejected the pod
    prefilter_code: Optional[str] = None
    postfilter: str = ""                    # "preemption: …", DRA text
    preemption_helpful: Optional[bool] = None
    raw: str = ""


def _classify(reason: str) -> ReasonCount:
    reasons, _ = scheduler_patterns()
    for p in reasons:
        m = p.regex.match(reason)
        if m:
            g = m.groupdict()
            return ReasonCount(0, reason, p.code, resource=g.get("resource"),
                               taint_key=g.get("key"), taint_value=(g.get("value") or "").strip() if g.get("key") is not None else None,
                               state_checked=p.state_checked)
    return ReasonCount(0, reason, None)


def classify_message(text: str) -> Optional[str]:
    """Code for a whole message that is not a histogram (PreFilter, gates, DRA)."""
    _, messages = scheduler_patterns()
    for p in messages:
        if p.regex.search(text):
            return p.code
    return None


def parse_fit_error(message: str) -> Optional[FitError]:
    """Parse one FailedScheduling/PodScheduled message; None when it is not a FitError."""
    if not message:
        return None
    m = _HEAD.match(message)
    if not m:
        code = classify_message(message)
        if code is None:
            return None
        return FitError(None, prefilter=message.strip(), prefilter_code=code, raw=message)
    fe = FitError(int(m.group("total")), raw=message)
    rest = m.group("rest")
    end = _HIST_END.search(rest)
    head, tail = (rest[: end.start()], rest[end.end():]) if end else (rest, "")
    entries = _ENTRY_SPLIT.split(head.strip()) if head.strip() else []
    if entries and not _ENTRY.match(entries[0]):
        fe.prefilter = head.strip()
        fe.prefilter_code = classify_message(fe.prefilter)
    else:
        for entry in entries:
            em = _ENTRY.match(entry)
            if not em:
                continue
            rc = _classify(em.group("reason"))
            rc.count = int(em.group("count"))
            fe.reasons.append(rc)
    fe.postfilter = tail.lstrip(". ").strip()
    if "preemption:" in fe.postfilter:
        pre = fe.postfilter.split("preemption:", 1)[1]
        if "Preemption is not helpful" in pre and "No preemption victims found" not in pre:
            fe.preemption_helpful = False
        elif "No preemption victims found" in pre:
            fe.preemption_helpful = False
    return fe


def format_counts(fe: FitError) -> str:
    if fe.prefilter:
        return fe.prefilter
    return ", ".join(f"{r.count} {r.reason}" for r in fe.reasons)
