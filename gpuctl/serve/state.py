"""One recompute of what `gpuctl serve` exports, from one snapshot: the documents of
`diagnose pending -A` and `nodes capacity`, the diagnoses of the GPU nodes that show a
problem, and the counts the metrics are made of. Pure: a function of the snapshot."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from ..checks.context import PodContext
from ..engine import diagnose_node
from ..findings import Severity
from ..model.snapshot import Snapshot
from ..reports.capacity import capacity_report
from ..reports.pending import pending_report

MAX_NODE_DIAGNOSES = 500   # bounded work per pass: the nodes that show a problem, worst first


@dataclass
class State:
    """What one pass computed; immutable once built."""

    snapshot: Snapshot
    pending: dict[str, Any]
    capacity: dict[str, Any]
    nodes: dict[str, dict[str, Any]]                 # node -> its diagnosis document
    pending_counts: dict[tuple[str, str, str, str], int] = field(default_factory=dict)   # (code, ns, resource, severity)
    oldest: dict[str, float] = field(default_factory=dict)                                 # code -> seconds
    built_at: float = field(default_factory=time.time)
    duration: float = 0.0


def _gpu_resource(snap: Snapshot, ns: str, name: str) -> str:
    p = snap.pods.get(f"{ns}/{name}")
    if p is None:
        return "unknown"
    ctx = PodContext(snap, p)
    for r in ctx.gpu_requests or ctx.device_requests:
        return r
    return "dra" if p.spec.resourceClaims else "none"


def nodes_worth_diagnosing(snap: Snapshot) -> list[str]:
    """The GPU nodes a pass diagnoses: the collectors' ``nodes_showing_a_problem``
    (whose device-plugin pods the pass read), at most MAX_NODE_DIAGNOSES."""
    from ..collect.live import nodes_showing_a_problem

    return nodes_showing_a_problem(snap)[:MAX_NODE_DIAGNOSES]


def compute(snap: Snapshot) -> State:
    started = time.monotonic()
    pending, _ = pending_report(snap, None)
    capacity = capacity_report(snap)
    counts: dict[tuple[str, str, str, str], int] = {}
    oldest: dict[str, float] = {}
    for g in pending.get("groups", []):
        code, severity = g["code"], g.get("severity", "info")
        for p in g["pods"]:
            key = (code, p["namespace"] or "default", _gpu_resource(snap, p["namespace"] or "default", p["name"]), severity)
            counts[key] = counts.get(key, 0) + 1
            if p.get("pendingSeconds") is not None:
                oldest[code] = max(oldest.get(code, 0.0), float(p["pendingSeconds"]))
    nodes = {}
    for name in nodes_worth_diagnosing(snap):
        d = diagnose_node(snap, name)
        nodes[name] = d.to_dict()
    return State(snapshot=snap, pending=pending, capacity=capacity, nodes=nodes, pending_counts=counts,
                 oldest=oldest, duration=time.monotonic() - started)


def node_findings(state: State) -> list[tuple[str, str, str]]:
    """(node, code, severity) of every non-info finding of the diagnosed GPU nodes."""
    out = []
    for name, doc in sorted(state.nodes.items()):
        for f in doc.get("findings", []):
            if f.get("severity") != Severity.INFO.value:
                out.append((name, f["code"], f["severity"]))
    return out


def pod_document(state: State, namespace: str, name: str) -> Optional[dict[str, Any]]:
    """`diagnose pod` of one pod, from the cached snapshot (no API call)."""
    from ..engine import diagnose_pod

    if f"{namespace}/{name}" not in state.snapshot.pods:
        return None
    return diagnose_pod(state.snapshot, namespace, name).to_dict()
