"""``diagnose pod KIND/NAME``: a workload, above the pod engine.

Its pods are diagnosed one by one (sharing one Memo, so replicas share their fit),
grouped by shared cause; the workload's own check (quota, RuntimeClass, suspension:
gpuctl/checks/workload.py) runs beside them, and when it has no pods and no known
cause the verdict is inconclusive."""

from __future__ import annotations

from typing import Any, Optional

from ..checks.memo import Memo
from ..checks.workload import WorkloadContext
from ..errors import TargetNotFound
from ..findings import CheckResult, Diagnosis, Finding, Status
from ..model.objects import GenericObject
from ..model.snapshot import Snapshot
from ..model.workloads import VOLCANO_JOB_API, pods_of, resolve_kind
from .pod import diagnose_pod
from .ranking import merge, verdict_for
from .run import run_checks

_STATUS_ORDER = {Status.PASSED: 0, Status.FAILED: 1, Status.ERROR: 2, Status.SKIPPED: 3}


def find_workload(snap: Snapshot, kind: str, alias: str, ns: str, name: str) -> Optional[GenericObject]:
    for o in snap.objects(kind):
        if o.metadata.name == name and o.metadata.namespace in (ns, None):
            is_volcano = o.apiVersion.startswith(VOLCANO_JOB_API)
            if kind == "Job" and (alias == "vcjob") != is_volcano:
                continue
            return o
    return None


def _not_found(snap: Snapshot, kind: str, namespace: str, name: str) -> TargetNotFound:
    from ..model.names import suggest

    names = [o.metadata.name for o in snap.objects(kind) if o.metadata.namespace == namespace]
    names += [o.name for p in snap.pods.values() if p.metadata.namespace == namespace
              for o in p.metadata.ownerReferences if o.kind == kind]
    return TargetNotFound(f"{kind} {name!r} not found in namespace {namespace}", suggest(name, names))


def diagnose_workload(snap: Snapshot, namespace: str, alias: str, name: str, memo: Optional[Memo] = None) -> Diagnosis:
    kind = resolve_kind(alias)
    obj = find_workload(snap, kind, alias, namespace, name)
    if obj is None:
        raise _not_found(snap, kind, namespace, name)
    memo = memo if memo is not None else Memo()
    ref = f"{alias}/{name}"
    pods = pods_of(snap, obj, alias)
    findings, checks, pod_rows, nodes = _pod_diagnoses(snap, namespace, pods, memo)
    own, own_checks = run_checks(WorkloadContext(snap, obj, ref, bool(pods), memo), "workload")
    findings = merge(own + findings)
    checks += own_checks
    observed: list[str] = []
    if not pods and not own:
        events = snap.events_for(obj.kind, namespace, name)
        last = [f"{e.reason}: {e.message}" for e in events[-3:]]
        checks.append(CheckResult("workload-pods", Status.SKIPPED,
                                  f"{ref} has no pods and its events name no known cause"
                                  + (f" (last events: {' | '.join(last)})" if last else " (no events)"), essential=True))
        observed = [f"event {e.reason} x{e.times} on {ref}: {e.message}" for e in reversed(events)
                    if e.type == "Warning"][:8] or [f"{ref}: no pods, no Warning events"]
    verdict = verdict_for(findings, checks, bound=any(p.spec.nodeName for p in pods))
    shown_kind = "Job.batch.volcano.sh" if alias == "vcjob" else kind
    target = {"kind": shown_kind, "namespace": namespace, "name": name, "phase": None, "node": None, "pods": pod_rows}
    notes = []
    if verdict == "inconclusive" and observed and not snap.gaps:
        notes.append("The verdict is inconclusive: gpuctl read everything it needs and recognised no cause; "
                     "what it saw is listed above, most telling first.")
    elif verdict == "inconclusive":
        notes.append("Some data the verdict depends on could not be read; the findings show what the rest supports.")
    return Diagnosis(target=target, verdict=verdict, findings=findings, checks=checks, nodes=nodes, notes=notes,
                     observed=observed if not snap.gaps else [])


def _pod_diagnoses(snap: Snapshot, namespace: str, pods: list, memo: Memo):
    """Each pod's diagnosis folded into one: findings by code (evidence united, the
    pods that share a top cause named), each check's worst status, the first fit
    matrix, and a row per pod."""
    findings: list[Finding] = []
    checks: list[CheckResult] = []
    pod_rows: list[dict[str, Any]] = []
    groups: dict[str, list[str]] = {}
    nodes: list[dict[str, Any]] = []
    for p in pods:
        d = diagnose_pod(snap, namespace, p.metadata.name, pod=p, memo=memo)
        top = d.findings[0].code if d.findings else None
        pod_rows.append({"name": p.metadata.name, "phase": p.phase, "node": p.spec.nodeName or None,
                         "verdict": d.verdict, "top": top})
        if d.verdict == "healthy":
            continue
        if top:
            groups.setdefault(top, []).append(p.metadata.name)
        for f in d.findings:
            have = next((g for g in findings if g.code == f.code), None)
            if have is None:
                findings.append(f)
            else:
                have.evidence += [x for x in f.evidence if x not in have.evidence][:3]
        for c in d.checks:   # keep the worst status seen for each check across the pods
            have_c = next((k for k in checks if k.name == c.name), None)
            if have_c is None:
                checks.append(c)
            elif _STATUS_ORDER[c.status] > _STATUS_ORDER[have_c.status]:
                checks[checks.index(have_c)] = c
        nodes = nodes or d.nodes
    for code, members in groups.items():
        for f in findings:
            if f.code == code and len(pods) > 1:
                f.evidence.insert(0, f"{len(members)} of {len(pods)} pods share this cause: {', '.join(members[:5])}"
                                  + (" …" if len(members) > 5 else ""))
    return findings, checks, pod_rows, nodes
