"""`gpuctl diagnose pending`: every Pending GPU pod of a namespace (or, with -A,
the cluster), diagnosed with the same engine as `diagnose pod` from ONE snapshot,
and grouped by top cause, biggest group first, each with its fix and how long its
pods have waited. Pods with the same scheduling constraints share one evaluation
of the per-node fit matrix (one Memo for the report)."""

from __future__ import annotations

from typing import Any, Optional

from ..checks.context import PodContext
from ..checks.memo import Memo, gc_paused
from ..findings import Severity, Status
from ..knowledge import catalog
from ..model.kueue import QUEUE_LABEL
from ..model.snapshot import Snapshot, unreadable_dicts


def pending_gpu_pods(snap: Snapshot, namespace: Optional[str], memo: Optional[Memo] = None) -> list:
    memo = memo if memo is not None else Memo()
    out = []
    for p in snap.pods.values():
        if p.spec.nodeName or p.status.phase != "Pending" or p.metadata.deletionTimestamp:
            continue
        if namespace is not None and p.metadata.namespace != namespace:
            continue
        ctx = PodContext(snap, p, memo)
        if ctx.gpu_requests or any(catalog.is_gpu_resource(r) or "gpu" in r for r in ctx.device_requests) \
                or getattr(p.spec, "resourceClaims", None):
            out.append(p)
    return sorted(out, key=lambda p: p.key)


def queue_of(snap: Snapshot, pod: Any) -> Optional[str]:
    """The queue a Pending pod waits in (docs/output.md, ``queue``): for Kueue the
    ClusterQueue its LocalQueue points at (else the LocalQueue, ``NS/NAME``); for
    Volcano and KAI the queue the pod names; None when it names none."""
    labels, ns = pod.metadata.labels, pod.metadata.namespace or "default"
    lq = labels.get(QUEUE_LABEL)
    if lq is None:
        owners = {o.uid for o in pod.metadata.ownerReferences} | {pod.metadata.uid}
        for w in snap.objects("Workload"):
            if w.metadata.namespace == ns and isinstance(w.spec, dict) and (
                    any(o.uid in owners for o in w.metadata.ownerReferences if o.uid)
                    or w.metadata.labels.get("kueue.x-k8s.io/job-uid") in owners):
                lq = str(w.spec.get("queueName") or "") or None
                break
    if lq:
        q = snap.find("LocalQueue", ns, lq)
        cq = q.spec.get("clusterQueue") if q is not None and isinstance(q.spec, dict) else None
        return str(cq) if cq else f"{ns}/{lq}"
    other = labels.get("kai.scheduler/queue") or pod.metadata.annotations.get("scheduling.volcano.sh/queue-name")
    return str(other) if other else None


# the statuses listed once under "checks": members, compared without reading each one's
# .value (an enum property, read for every check of every pod)
_SKIPPED_OR_ERROR = (Status.SKIPPED, Status.ERROR)


def pending_report(snap: Snapshot, namespace: Optional[str]) -> tuple[dict[str, Any], int]:
    with gc_paused():
        return _pending_report(snap, namespace)


def _pending_report(snap: Snapshot, namespace: Optional[str]) -> tuple[dict[str, Any], int]:
    from ..engine import diagnose_pod

    memo = Memo(share_across_owners=True)   # pods with the same constraints share one fit, whoever owns them
    groups: dict[str, dict[str, Any]] = {}
    checks: dict[str, dict[str, str]] = {}
    worst = 0
    for p in pending_gpu_pods(snap, namespace, memo):
        d = diagnose_pod(snap, p.metadata.namespace or "default", p.metadata.name, pod=p, include_nodes=False, memo=memo)
        top = next((f for f in d.findings if f.severity != Severity.INFO), d.findings[0] if d.findings else None)
        code = top.code if top else ("inconclusive" if d.verdict == "inconclusive" else "none")
        g = groups.get(code)
        if g is None:
            g = groups[code] = {
                "code": code, "severity": top.severity.value if top else "info",
                "summary": top.summary if top else ("no cause identified" if d.verdict == "inconclusive" else "nothing wrong yet"),
                "pods": [], "fixes": [fx.to_dict() for fx in top.fixes] if top else [],
                "runbook": f"gpuctl runbook {code}" if top else None,
            }
        age = PodContext(snap, p, memo).age_seconds
        g["pods"].append({"namespace": p.metadata.namespace, "name": p.metadata.name,
                          "pendingSeconds": int(age) if age is not None else None,
                          "verdict": d.verdict, "summary": top.summary if top else None,
                          "queue": queue_of(snap, p)})
        for c in d.checks:
            if c.name == "decode objects":
                continue   # listed once, whole, in "unreadable"
            if c.status in _SKIPPED_OR_ERROR:
                checks.setdefault(f"{c.name}: {c.detail}", {"name": c.name, "status": c.status.value, "detail": c.detail})
        worst = max(worst, d.exit_code)
    for key in ("pending-pods", "pods", "nodes"):
        gap = snap.gaps.get(key)
        if gap is not None:   # the list itself is incomplete: never "nothing Pending"
            checks.setdefault(f"read {key}", {"name": f"read {key}", "status": "skipped", "detail": gap.describe()})
            worst = max(worst, 1)
    order = {"blocker": 0, "critical": 1, "warning": 2, "info": 3}
    ranked = sorted(groups.values(), key=lambda g: (-len(g["pods"]), order.get(g["severity"], 4), g["code"]))
    for g in ranked:
        g["pods"].sort(key=lambda p: p["queue"] or "")   # by queue within a cause (stable: else as listed)
        waits = [p["pendingSeconds"] for p in g["pods"] if p["pendingSeconds"] is not None]
        g["oldestPendingSeconds"] = max(waits) if waits else None
        if len({p["summary"] for p in g["pods"]}) > 1:
            g["summary"] = f"{len(g['pods'])} pods: " + g["summary"]
        for p in g["pods"]:
            p.pop("summary", None)
    doc = {"schema": "gpuctl/pending/v1", "scope": namespace or "all namespaces",
           "pods": sum(len(g["pods"]) for g in ranked), "groups": ranked, "checks": list(checks.values())[:20]}
    unreadable = snap.unreadable()
    if unreadable:   # the report stands, but it is partial: exit 1 (docs/output.md)
        doc["unreadable"] = unreadable_dicts(unreadable)
        worst = max(worst, 1)
    return doc, worst


def narrow_pending(doc: dict[str, Any], namespace: Optional[str]) -> dict[str, Any]:
    """The cluster-wide pending report cut to one namespace without diagnosing again
    (what ``gpuctl serve`` answers to ``/api/v1/pending?namespace=NS``): its pods only,
    empty groups dropped, the groups ranked again as ``pending_report`` ranks them. A
    group's summary is the cluster-wide one (its "N pods:" prefix counts this namespace)."""
    if namespace is None:
        return doc
    order = {"blocker": 0, "critical": 1, "warning": 2, "info": 3}
    groups = []
    for g in doc.get("groups", []):
        pods = [p for p in g["pods"] if (p.get("namespace") or "default") == namespace]
        if not pods:
            continue
        summary = g["summary"]
        head, sep, rest = summary.partition(" pods: ")
        if sep and head.isdigit():
            summary = f"{len(pods)} pods: {rest}" if len(pods) > 1 else rest
        waits = [p["pendingSeconds"] for p in pods if p.get("pendingSeconds") is not None]
        groups.append({**g, "summary": summary, "pods": pods, "oldestPendingSeconds": max(waits) if waits else None})
    groups.sort(key=lambda g: (-len(g["pods"]), order.get(g["severity"], 4), g["code"]))
    return {**doc, "scope": namespace, "pods": sum(len(g["pods"]) for g in groups), "groups": groups}


def pending_exit_code(doc: dict[str, Any]) -> int:
    """The exit code ``pending_report`` gives with ``doc``, read from the document: 1 when
    a pod waits (any verdict but healthy), a list was incomplete, or an object could not
    be read; else 0."""
    waiting = any(p.get("verdict") != "healthy" for g in doc.get("groups", []) for p in g["pods"])
    gaps = any(c.get("name", "").startswith("read ") for c in doc.get("checks", []))
    return 1 if waiting or gaps or doc.get("unreadable") else 0
