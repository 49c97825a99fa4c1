"""`gpuctl diagnose pending`: every Pending GPU pod of a namespace (or, with -A,
the cluster), diagnosed with the same engine as `diagnose pod` from ONE snapshot,
and grouped by top cause, biggest group first, each with its fix and how long its
pods have waited. Pods with the same scheduling constraints share one evaluation
of the per-node fit matrix (one Memo for the report)."""

from __future__ import annotations

from typing import Any, Optional

from ..checks.context import PodContext, own_pod_affinity, warm_bound_pods
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
    memo = Memo(share_across_owners=True)   # pods with the same constraints share one fit, whoever owns them
    pods = pending_gpu_pods(snap, namespace, memo)
    groups: dict[str, dict[str, Any]] = {}
    checks: dict[str, dict[str, str]] = {}
    worst = 0
    for code, head, entry, failed, exit_code in _outcomes(snap, pods, memo):
        g = groups.get(code)
        if g is None:
            g = groups[code] = head   # the first pod of a cause always carries it (_outcome)
            g["pods"] = []
        g["pods"].append(entry)
        for key, row in failed:
            checks.setdefault(key, row)
        worst = max(worst, exit_code)
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


# A report of this many Pending pods or more is shared with forked copies of this process
# (collect/forked.py, GPUCTL_PROCESSES): below it, forking costs more than it saves.
FORK_MIN_PODS = 1000
_LONE_PODS_PER_JOB = 64    # pods that share no fit with another, handed out this many at a time
FORKED_REPORTS = 0         # reports shared with forked copies in this process (the tests read it)


def _outcome(snap: Snapshot, p: Any, memo: Memo, i: int, heads: dict[str, int]) -> tuple:
    """One Pending pod diagnosed, as the report keeps it: (its top cause's code, the
    head of that cause's group or None, the pod's entry, its skipped and failed checks
    as (key, row), its exit code). ``heads``: code -> the index of the earliest pod that
    carried that code's head here. A pod carries the head unless an earlier pod with
    the same code did, so that the first pod of a cause, in the report's order,
    carries it in whichever process diagnosed it."""
    from ..engine import diagnose_pod

    d = diagnose_pod(snap, p.metadata.namespace or "default", p.metadata.name, pod=p, include_nodes=False, memo=memo)
    top = next((f for f in d.findings if f.severity != Severity.INFO), d.findings[0] if d.findings else None)
    code = top.code if top else ("inconclusive" if d.verdict == "inconclusive" else "none")
    head = None
    if code not in heads or i < heads[code]:
        heads[code] = i
        head = {
            "code": code, "severity": top.severity.value if top else "info",
            "summary": top.summary if top else ("no cause identified" if d.verdict == "inconclusive" else "nothing wrong yet"),
            "pods": None, "fixes": [fx.to_dict() for fx in top.fixes] if top else [],
            "runbook": f"gpuctl runbook {code}" if top else None,
        }
    age = PodContext(snap, p, memo).age_seconds
    entry = {"namespace": p.metadata.namespace, "name": p.metadata.name,
             "pendingSeconds": int(age) if age is not None else None,
             "verdict": d.verdict, "summary": top.summary if top else None,
             "queue": queue_of(snap, p)}
    failed = []
    for c in d.checks:
        if c.name == "decode objects":
            continue   # listed once, whole, in "unreadable"
        if c.status in _SKIPPED_OR_ERROR:
            failed.append((f"{c.name}: {c.detail}", {"name": c.name, "status": c.status.value, "detail": c.detail}))
    return code, head, entry, failed, d.exit_code


def _jobs(snap: Snapshot, pods: list, memo: Memo) -> tuple[list[list[int]], list[PodContext], list[tuple], Optional[set]]:
    """The pods after the first, handed out as jobs: (jobs of pod indexes, the context of
    each job's first pod, every pod's resource key, the nodes any of them may land on
    (None: any node)). Pods with the same fit_signature have the same requests and node
    selector (and a class is its nominated node's too), so a job holds whole classes;
    these are read without encoding the rest of the signature. Pods with required pod
    (anti-)affinity of their own share no fit and go ``_LONE_PODS_PER_JOB`` to a job."""
    jobs: list[list[int]] = []
    reps: list[PodContext] = []
    job_of: dict[tuple, int] = {}
    lone: list[int] = []
    keys: list[tuple] = []
    devices: Optional[set] = set()
    ctx = None
    for i, p in enumerate(pods):
        ctx = PodContext(snap, p, memo)
        requests = tuple(sorted(ctx.requests.items()))
        keys.append(tuple(r for r, _ in requests))
        if devices is not None:   # a node that advertises none of a pod's devices is no candidate for it
            wanted = ctx.device_requests
            if wanted:
                devices.update(wanted)
            else:
                devices = None
        if i == 0:
            continue
        if own_pod_affinity(p):
            lone.append(i)
            if len(lone) == _LONE_PODS_PER_JOB:
                jobs.append(lone)
                lone = []
            continue
        spec = p.spec
        key = (requests, tuple(sorted(spec.nodeSelector.items())) if spec.nodeSelector else (), p.status.nominatedNodeName)
        j = job_of.get(key)
        if j is None:
            j = job_of[key] = len(jobs)
            jobs.append([])
            reps.append(ctx)
        jobs[j].append(i)
    if lone:
        jobs.append(lone)
    nodes: Optional[set] = None
    if devices is not None and ctx is not None:   # advertised_sets is the snapshot's, whichever pod asks
        nodes = set().union(*(ctx.advertised_sets.get(r, ()) for r in devices))
    return jobs, reps, keys, nodes


def _outcomes(snap: Snapshot, pods: list, memo: Memo) -> list[tuple]:
    """``_outcome`` of every pod, in order: in this process, or, for a large report,
    shared with forked copies of it (collect/forked.py; Linux, one thread). The same
    outcomes either way:

    - Pods that share a fit (the same ``fit_signature`` and nominated node) share
      node-fit's findings, which are those of the first of them diagnosed
      (checks/pending.py): each such class is diagnosed whole and in order by one
      process, in one job with the classes that have its requests and node selector.
    - What every class reads of the bound pods (the pods per node, their summed
      requests, the placed pods' anti-affinity) is read in one pass
      (context.warm_bound_pods), then the first pod is diagnosed (each node's facts)
      and each job's placements and free rows are computed, here, before the fork,
      so the copies inherit them instead of each computing them again.
    - A job a copy left undone (it died) is done here afterwards; every other entry
      of the memo is the same whichever class computed it first."""
    from ..collect import forked

    heads: dict[str, int] = {}

    def in_this_process() -> list[tuple]:
        return [_outcome(snap, p, memo, i, heads) for i, p in enumerate(pods)]

    if len(pods) < max(2, FORK_MIN_PODS):
        return in_this_process()
    jobs, reps, keys, nodes = _jobs(snap, pods, memo)
    warm_bound_pods(memo, snap, keys, nodes)
    workers = forked.processes()
    if workers < 2 or not forked.can_fork() or not jobs or len(jobs) > forked.MAX_JOBS:
        return in_this_process()
    out: list = [None] * len(pods)
    out[0] = _outcome(snap, pods[0], memo, 0, heads)
    for ctx in reps:
        ctx.prepare_fits()

    def do_job(j: int) -> tuple[bool, list]:
        return True, [_outcome(snap, pods[i], memo, i, heads) for i in jobs[j]]

    global FORKED_REPORTS
    FORKED_REPORTS += 1
    done = forked.run(len(jobs), workers, do_job)
    for j, result in enumerate(done):
        got = result[1] if result is not None else do_job(j)[1]   # a copy that died: done here
        for i, o in zip(jobs[j], got):
            out[i] = o
    return out


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
