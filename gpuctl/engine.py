"""The engine: picks the checks for a target, runs each isolated, ranks findings
and builds the diagnosis document.

* A check whose data set is missing (a Gap: 403, 404, timeout, absent from the
  snapshot) is ``skipped`` with the reason; one that raises is ``error`` naming what
  it was reading. The rest of the diagnosis still prints.
* Ranking (shared/spec/findings.md): root causes whose fix alone lets the pod run
  first, least disruptive fix first, more nodes unblocked first; then the other
  causes by how many nodes they block; symptoms below their cause; info last.
* Verdict: blocker -> blocked (unbound) / failing (bound); critical or warning ->
  at-risk; else healthy — unless a check the verdict depends on was skipped, which
  makes it ``inconclusive``: gpuctl never says healthy on missing data.
"""

from __future__ import annotations

import difflib
import traceback
from typing import Any, Optional

from .checks.base import checks_for
from .checks.context import PodContext, human_age
from .errors import TargetNotFound
from .findings import CheckResult, Diagnosis, Finding, Severity, Status
from .model.objects import Pod
from .model.snapshot import Snapshot

# ------------------------------------------------------------------ ranking


def rank_key(f: Finding) -> tuple:
    info = f.severity == Severity.INFO
    root = f.root_cause and f.symptom_of is None
    return (
        info,
        f.symptom_of is not None,
        not root,
        f.disruption if root else 0,
        -(f.unblocks if root else len(f.nodes)),
        f.severity.weight,  # type: ignore[union-attr]
        f.code,
    )


def merge(findings: list[Finding]) -> list[Finding]:
    """One finding per code: evidence and nodes united, the strongest ranking kept."""
    by_code: dict[str, Finding] = {}
    for f in findings:
        have = by_code.get(f.code)
        if have is None:
            by_code[f.code] = f
            continue
        first, second = (have, f) if rank_key(have) <= rank_key(f) else (f, have)
        for line in second.evidence:
            if line not in first.evidence:
                first.evidence.append(line)
        for n in second.nodes:
            if n not in first.nodes:
                first.nodes.append(n)
        if not first.fixes:
            first.fixes = second.fixes
        first.root_cause = first.root_cause or second.root_cause
        first.unblocks = max(first.unblocks, second.unblocks)
        by_code[f.code] = first
    return sorted(by_code.values(), key=rank_key)


def verdict_for(findings: list[Finding], checks: list[CheckResult], bound: bool) -> str:
    essential_missing = any(c.essential and c.status == Status.SKIPPED for c in checks)
    essential_broken = any(c.essential and c.status == Status.ERROR for c in checks)
    if essential_missing:
        return "inconclusive"
    if any(f.severity == Severity.BLOCKER for f in findings):
        return "failing" if bound else "blocked"
    if any(f.severity in (Severity.CRITICAL, Severity.WARNING) for f in findings):
        return "at-risk"
    if essential_broken:
        return "inconclusive"
    return "healthy"


# ------------------------------------------------------------------ running checks


def run_checks(ctx: Any, target: str) -> tuple[list[Finding], list[CheckResult]]:
    findings: list[Finding] = []
    results: list[CheckResult] = []
    for spec in checks_for(target):
        try:
            if not spec.applies(ctx):
                continue
        except Exception as e:  # a broken applies() is a broken check
            results.append(CheckResult(spec.name, Status.ERROR, _error_detail(ctx, e), spec.essential))
            continue
        gaps = [ctx.snap.gaps[k] for k in spec.needs if k in ctx.snap.gaps]
        if gaps:
            results.append(CheckResult(spec.name, Status.SKIPPED, "; ".join(g.describe() for g in gaps), spec.essential))
            continue
        try:
            found = list(spec.fn(ctx))
        except Exception as e:
            results.append(CheckResult(spec.name, Status.ERROR, _error_detail(ctx, e), spec.essential))
            continue
        findings.extend(found)
        problems = [f for f in found if f.severity != Severity.INFO]
        status = Status.FAILED if problems else Status.PASSED
        detail = ", ".join(sorted({f.code for f in found})) if found else ""
        results.append(CheckResult(spec.name, status, detail, spec.essential))
    return findings, results


def _error_detail(ctx: Any, e: Exception) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    where = f" at {frame.name}" if frame else ""
    return f"{type(e).__name__}{where} while reading pod {ctx.ns}/{ctx.name}: {e}"


# ------------------------------------------------------------------ targets


def find_pod(snap: Snapshot, namespace: str, name: str) -> Pod:
    pod = snap.pods.get(f"{namespace}/{name}")
    if pod is not None:
        return pod
    elsewhere = sorted(p.metadata.namespace or "" for p in snap.pods.values() if p.metadata.name == name)
    hint = None
    if elsewhere:
        hint = f"a pod of that name exists in namespace(s) {', '.join(elsewhere)}: try -n {elsewhere[0]}"
    else:
        names = sorted({p.metadata.name for p in snap.pods.values() if p.metadata.namespace == namespace})
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if close:
            hint = f"did you mean {', '.join(close)}?"
    raise TargetNotFound(f'pod "{name}" not found in namespace {namespace}', hint)


def pod_target(ctx: PodContext) -> dict[str, Any]:
    pod = ctx.pod
    ordered = sorted(ctx.device_requests.items(), key=lambda kv: (kv[0] not in ctx.gpu_requests, kv[0]))
    req = {r: (int(q) if q == int(q) else q) for r, q in ordered}
    age = ctx.age_seconds
    return {
        "kind": "Pod", "namespace": ctx.ns, "name": ctx.name, "phase": pod.phase,
        "node": pod.spec.nodeName or None, "requests": req,
        "age": human_age(age) if age is not None else None,
        "owner": next((f"{o.kind}/{o.name}" for o in pod.metadata.ownerReferences), None),
    }


def diagnose_pod(snap: Snapshot, namespace: str, name: str, pod: Optional[Pod] = None) -> Diagnosis:
    pod = pod or find_pod(snap, namespace, name)
    ctx = PodContext(snap, pod)
    findings, results = run_checks(ctx, "pod")
    if ctx.bound:
        results.append(_runtime_check(ctx))
    elif ctx.pending_unbound and not any(f.severity != Severity.INFO or f.code == "scheduling-in-progress" for f in findings):
        age = ctx.age_seconds
        results.append(CheckResult("cause-identified", Status.SKIPPED,
                                   f"the pod has been Pending for {human_age(age)} and no check identified why; "
                                   "look at its events and at the scheduler's logs", essential=True))
    for gap_key, gap in sorted(snap.gaps.items()):
        if not any(gap.describe() in r.detail for r in results):
            results.append(CheckResult(f"read {gap_key}", Status.SKIPPED, gap.describe(), essential=False))
    for m in snap.malformed[:10]:
        results.append(CheckResult("decode objects", Status.ERROR, m, essential=False))
    ranked = merge(findings)
    verdict = verdict_for(ranked, results, ctx.bound)
    nodes = []
    if ctx.pending_unbound and snap.nodes and not any(r.name == "node-fit" and r.status in (Status.SKIPPED, Status.ERROR) for r in results):
        try:
            nodes = [f.to_dict(ctx.device_requests) for f in sorted(ctx.fits, key=lambda f: (not f.fits, len(f.reasons), f.name))]
        except Exception:
            nodes = []
    notes = []
    if verdict == "inconclusive":
        notes.append("The verdict is inconclusive: see the skipped checks for what could not be read or decided; "
                     "the findings show what the rest supports.")
    return Diagnosis(target=pod_target(ctx), verdict=verdict, findings=ranked, checks=results, nodes=nodes, notes=notes)


def _runtime_check(ctx: PodContext) -> CheckResult:
    """Bound pods: healthy only when every container runs and is ready. Deeper
    runtime diagnosis (admission, toolkit, CUDA, Xid) is the failing-pods check set."""
    pod = ctx.pod
    statuses = pod.status.containerStatuses
    if pod.phase == "Running" and statuses and all(cs.ready for cs in statuses):
        return CheckResult("containers-running", Status.PASSED, f"{len(statuses)} container(s) running and ready")
    if pod.phase == "Succeeded":
        return CheckResult("containers-running", Status.PASSED, "the pod completed successfully")
    states = []
    for cs in statuses:
        st = cs.state
        if st and st.waiting:
            states.append(f"{cs.name}: waiting {st.waiting.reason or ''}")
        elif st and st.terminated:
            states.append(f"{cs.name}: terminated {st.terminated.reason or ''} exit {st.terminated.exitCode}")
        elif not cs.ready:
            states.append(f"{cs.name}: not ready (restarts {cs.restartCount})")
    detail = f"pod is bound to {pod.spec.nodeName} but not running well ({pod.phase}; {'; '.join(states) or 'no container status'}); " \
             "runtime causes are not diagnosed by this version"
    return CheckResult("containers-running", Status.SKIPPED, detail, essential=True)


def split_target(target: str) -> tuple[Optional[str], str]:
    if "/" in target:
        kind, _, name = target.partition("/")
        return kind.lower(), name
    return None, target


def diagnose_workload(snap: Snapshot, namespace: str, kind: str, name: str) -> Diagnosis:
    from .checks.workload import diagnose_workload as run

    return run(snap, namespace, kind, name)


def diagnose(snap: Snapshot, namespace: str, target: str) -> Diagnosis:
    kind, name = split_target(target)
    if kind in (None, "pod", "pods", "po"):
        return diagnose_pod(snap, namespace, name)
    return diagnose_workload(snap, namespace, kind, name)
