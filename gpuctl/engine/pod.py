"""``diagnose pod``: the pod's checks, its runtime state, the fit matrix and the
verdict, as one Diagnosis."""

from __future__ import annotations

import gc
from typing import Any, Optional

from ..checks.context import PodContext, human_age
from ..checks.memo import Memo, gc_paused
from ..checks.observed import log_ends_in_error, log_stalls_in_setup, observed
from ..findings import CheckResult, Diagnosis, Severity, Status
from ..model.objects import Pod
from ..model.snapshot import Snapshot
from .ranking import merge, verdict_for
from .run import broken_checks, data_results, pod_checks_reading, run_checks
from .targets import find_pod


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


def diagnose_pod(snap: Snapshot, namespace: str, name: str, pod: Optional[Pod] = None,
                 include_nodes: bool = True, memo: Optional[Memo] = None) -> Diagnosis:
    if not gc.isenabled():   # already paused (a report diagnosing pod after pod): as is, without a context manager each
        return _diagnose_pod(snap, namespace, name, pod, include_nodes, memo)
    with gc_paused():
        return _diagnose_pod(snap, namespace, name, pod, include_nodes, memo)


def _diagnose_pod(snap: Snapshot, namespace: str, name: str, pod: Optional[Pod],
                  include_nodes: bool, memo: Optional[Memo]) -> Diagnosis:
    pod = pod or find_pod(snap, namespace, name)
    ctx = PodContext(snap, pod, memo)
    broken = broken_checks(snap.problems_of("Pod", pod.metadata.namespace, pod.metadata.name), pod_checks_reading)
    findings, results = run_checks(ctx, "pod", broken)
    explained = any(f.severity != Severity.INFO or f.code == "scheduling-in-progress" for f in findings)
    complete = read_everything(snap, ctx)
    not_explained = False
    if ctx.bound and "containers-running" in broken:
        results.append(CheckResult("containers-running", Status.ERROR, broken["containers-running"]))
    elif ctx.bound:
        results.append(_runtime_state(ctx, explained, complete))
        not_explained = results[-1].status == Status.SKIPPED
    elif ctx.pending_unbound and not explained:
        age = ctx.age_seconds
        why = ("every read succeeded and no check recognised the cause: see what gpuctl saw" if complete
               else "no check identified why; look at its events and at the scheduler's logs")
        results.append(CheckResult("cause-identified", Status.SKIPPED,
                                   f"the pod has been Pending for {human_age(age)} and {why}", essential=True))
        not_explained = True
    data_results(snap, results)
    ranked = merge(findings)
    verdict = verdict_for(ranked, results, ctx.bound)
    nodes = []
    if include_nodes and ctx.pending_unbound and snap.nodes and not any(
            r.name == "node-fit" and (r.status == Status.SKIPPED or (r.status == Status.ERROR and not ctx.uncertain_nodes)
                                      or r.name in broken) for r in results):
        try:
            nodes = [f.to_dict(ctx.device_requests) for f in sorted(ctx.fits, key=lambda f: (not f.fits, len(f.reasons), f.name))]
        except Exception:
            nodes = []
    notes = []
    seen = observed(ctx) if not_explained and complete else []
    if verdict == "inconclusive" and not_explained and complete:
        notes.append("The verdict is inconclusive: gpuctl read everything it needs and recognised no cause; "
                     "what it saw is listed above, most telling first.")
    elif verdict == "inconclusive":
        notes.append("The verdict is inconclusive: see the skipped checks for what could not be read or decided; "
                     "the findings show what the rest supports.")
    return Diagnosis(target=pod_target(ctx), verdict=verdict, findings=ranked, checks=results, nodes=nodes, notes=notes,
                     observed=seen)


def read_everything(snap: Snapshot, ctx: PodContext) -> bool:
    """Nothing the pod's diagnosis reads is missing: no data set gap, no log of this
    pod that could not be read, no object that could not be decoded."""
    prefix = f"{ctx.ns}/{ctx.name}/"
    return not snap.gaps and not any(k.startswith(prefix) for k in snap.log_gaps) and not snap.unreadable()




def _runtime_state(ctx: PodContext, explained: bool, complete: bool = False) -> CheckResult:
    """Bound pods: healthy only when every container runs and is ready; a pod that
    is not, and that no check explained, makes the verdict inconclusive."""
    pod = ctx.pod
    statuses = pod.status.containerStatuses
    if pod.phase == "Running" and statuses and all(cs.ready for cs in statuses):
        died = [] if explained else log_ends_in_error(ctx)
        if died:   # running, but the program in it died: not healthy, and not understood
            return CheckResult("containers-running", Status.SKIPPED,
                               f"{len(statuses)} container(s) running and ready, but the log ends in an error no check "
                               f"recognises: {died[-1]}", essential=True)
        stuck = [] if explained else log_stalls_in_setup(ctx)
        if stuck:  # running, but the program stopped in NCCL/CUDA setup: maybe hung, and nothing says why
            return CheckResult("containers-running", Status.SKIPPED,
                               f"{len(statuses)} container(s) running and ready, but the log ends with GPU / NCCL setup "
                               f"lines and nothing after them: the program may hang in setup (ranks that cannot reach "
                               f"each other: a host firewall, the wrong NCCL_SOCKET_IFNAME, a peer that never started); "
                               f"nothing in the cluster's objects shows why: {stuck[-1]}", essential=True)
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
    detail = f"bound to {pod.spec.nodeName}, {pod.phase}; {'; '.join(states) or 'no container status'}"
    if explained:
        return CheckResult("containers-running", Status.FAILED, detail)
    young = (ctx.age_seconds or 0) < 60 and pod.phase == "Pending"
    why = ("every read succeeded and no check recognised why: see what gpuctl saw" if complete
           else "no check identified why")
    return CheckResult("containers-running", Status.PASSED if young else Status.SKIPPED,
                       detail + ("; just started" if young else f"; {why}"), essential=not young)
