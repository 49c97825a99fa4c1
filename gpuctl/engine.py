"""The engine: picks the checks for a target, runs each isolated, ranks findings
and builds the diagnosis document.

* A check whose data set is missing (a Gap: 403, 404, timeout, absent from the
  snapshot) is ``skipped`` with the reason; one that raises is ``error`` naming what
  it was reading. The rest of the diagnosis still prints.
* Ranking (docs/runbooks/README.md): root causes whose fix alone lets the pod run
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

from .checks.base import DataUnavailable, Note, Partial, checks_for
from .checks.context import PodContext, human_age, requests_read
from .errors import TargetNotFound
from .findings import CheckResult, Diagnosis, Finding, Severity, Status
from .model.objects import Pod
from .model.names import suggest, workload_of_pods
from .model.snapshot import NODES as NODES_KEY, Snapshot

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


def run_checks(ctx: Any, target: str, broken: Optional[dict[str, str]] = None) -> tuple[list[Finding], list[CheckResult]]:
    """Run the target's checks. ``broken``: checks that read a field of the target
    that could not be read (name -> the object, field and problem): ``error``
    without running, since whatever they concluded would rest on a field emptied
    by the decoder."""
    findings: list[Finding] = []
    results: list[CheckResult] = []
    broken = broken or {}
    for spec in checks_for(target):
        try:
            if not spec.applies(ctx):
                continue
        except Exception as e:  # a broken applies() is a broken check
            results.append(CheckResult(spec.name, Status.ERROR, _error_detail(ctx, e), spec.essential))
            continue
        if spec.name in broken:
            results.append(CheckResult(spec.name, Status.ERROR, broken[spec.name], spec.essential))
            continue
        gaps = [ctx.snap.gaps[k] for k in spec.needs if k in ctx.snap.gaps]
        if gaps:
            results.append(CheckResult(spec.name, Status.SKIPPED, "; ".join(g.describe() for g in gaps), spec.essential))
            continue
        try:
            found = list(spec.fn(ctx))
        except DataUnavailable as e:
            results.append(CheckResult(spec.name, Status.SKIPPED, str(e), spec.essential))
            continue
        except Exception as e:
            results.append(CheckResult(spec.name, Status.ERROR, _error_detail(ctx, e), spec.essential))
            continue
        notes = [n.text for n in found if isinstance(n, Note)]
        partial = [n.text for n in found if isinstance(n, Partial)]
        found = [f for f in found if not isinstance(f, (Note, Partial))]
        findings.extend(found)
        problems = [f for f in found if f.severity != Severity.INFO]
        status = Status.ERROR if partial else Status.FAILED if problems else Status.PASSED
        detail = "; ".join([", ".join(sorted({f.code for f in found}))] * bool(found) + notes + partial)
        results.append(CheckResult(spec.name, status, detail, spec.essential))
    return findings, results


class _Every:
    """Every resource name (a target's request that could not be read may have been of any)."""

    def __contains__(self, item: object) -> bool:
        return True


_REQUEST_CHECKS = ("node-fit", "gpu-request", "queue-admission", "preemption", "device-admission", "driver-cuda",
                   "node-gpu-health")
_STATUS_CHECKS = ("containers-running", "container-start", "image-pull", "host-oom", "crash-loop", "container-logs",
                  "device-admission")
_POD_SPEC_CHECKS = {
    "nodeSelector": ("node-fit",), "affinity": ("node-fit",), "tolerations": ("node-fit",),
    "topologySpreadConstraints": ("node-fit",), "nodeName": ("node-fit",), "schedulingGates": ("queue-admission",),
    "priority": ("preemption",), "priorityClassName": ("preemption",), "preemptionPolicy": ("preemption",),
    "resourceClaims": ("dra-claims", "node-fit"), "volumes": ("volumes",), "runtimeClassName": ("runtime-class",),
    "schedulerName": ("scheduler-activity",),
}


def pod_checks_reading(path: tuple) -> tuple[str, ...]:
    """The checks of a pod diagnosis that read this field of the pod."""
    if requests_read(path, _Every()):  # type: ignore[arg-type]
        return _REQUEST_CHECKS + (tuple(c for cs in _POD_SPEC_CHECKS.values() for c in cs) if len(path) == 1 else ())
    if path[:1] == ("spec",):
        return _POD_SPEC_CHECKS.get(path[1], ()) if len(path) > 1 else ()
    if path[:1] == ("status",):
        if len(path) == 1:
            return _STATUS_CHECKS + ("scheduler-verdict",)
        if path[1] in ("containerStatuses", "initContainerStatuses", "phase"):
            return _STATUS_CHECKS
        if path[1] == "conditions":
            return ("scheduler-verdict",)
        return ()
    if path[:2] in (("metadata", "labels"), ("metadata", "annotations"), ("metadata", "ownerReferences")):
        return ("queue-admission",)
    return ()


_NODE_CAPACITY_CHECKS = ("gpu-count", "gpu-allocatable", "mig", "device-plugin")


def node_checks_reading(path: tuple) -> tuple[str, ...]:
    """The checks of a node diagnosis that read this field of the node."""
    if len(path) <= 1:
        return _NODE_CAPACITY_CHECKS + ("driver-drift", "xid", "ecc")
    head = path[:2]
    if head in (("status", "capacity"), ("status", "allocatable")):
        return _NODE_CAPACITY_CHECKS
    if head == ("metadata", "labels"):
        key = path[2] if len(path) > 2 else ""
        if not key or any(w in key for w in ("nvidia.com/", "gpu", "instance-type", "cuda", "mig")):
            return _NODE_CAPACITY_CHECKS + ("driver-drift",)
        return ()
    if head in (("status", "conditions"), ("spec", "taints")):
        return ("xid", "ecc")
    if head == ("status", "nodeInfo"):
        return ("driver-drift",)
    return ()


def broken_checks(problems: list, reading: Any) -> dict[str, str]:
    """check name -> the target's unreadable fields it reads (the error detail)."""
    out: dict[str, list[str]] = {}
    for u in problems:
        for name in reading(u.path):
            out.setdefault(name, []).append(str(u))
    return {name: "could not read " + "; ".join(lines) for name, lines in out.items()}


def _error_detail(ctx: Any, e: Exception) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    where = f" at {frame.name}" if frame else ""
    what = f"node {ctx.name}" if ctx.ns == "" else f"pod {ctx.ns}/{ctx.name}"
    return f"{type(e).__name__}{where} while reading {what}: {e}"


# ------------------------------------------------------------------ targets


def unreadable_target(snap: Snapshot, kind: str, namespace: Optional[str], name: str) -> None:
    """A target that exists but could not be decoded at all is a source error
    (exit 4) naming the field, never "not found" (exit 3)."""
    lost = [u for u in snap.problems_of(kind, namespace, name) if not u.kept]
    if lost:
        from .errors import SourceError

        ref = f"{kind.lower()} {namespace + '/' if namespace else ''}{name}"
        u = lost[0]
        raise SourceError(f"{ref} could not be read: {u.field + ': ' if u.field else ''}{u.problem}"
                          + (f" (in {u.source})" if u.source else ""),
                          "the object is malformed where gpuctl reads it; check it with kubectl get -o json")


def find_pod(snap: Snapshot, namespace: str, name: str) -> Pod:
    pod = snap.pods.get(f"{namespace}/{name}")
    if pod is not None:
        return pod
    unreadable_target(snap, "Pod", namespace, name)
    elsewhere = sorted(p.metadata.namespace or "" for p in snap.pods.values() if p.metadata.name == name)
    hint = None
    if elsewhere:
        hint = f"a pod of that name exists in namespace(s) {', '.join(elsewhere)}: try -n {elsewhere[0]}"
    else:
        names = {p.metadata.name for p in snap.pods.values() if p.metadata.namespace == namespace}
        owners = [w for w in workload_of_pods(name, [(o.kind, o.name, p.metadata.labels.get("pod-template-hash"))
                                                     for p in snap.pods.values() if p.metadata.namespace == namespace
                                                     for o in p.metadata.ownerReferences])
                  if not w.startswith("deployment/") or snap.find("Deployment", namespace, name) is not None]
        close = suggest(name, names)
        if owners:
            hint = f"{name} is {' and '.join(owners)}: gpuctl diagnose pod {owners[0]} -n {namespace}"
        elif close:
            hint = close
        elif snap.namespaces is not None and namespace not in snap.namespaces:
            hint = (f"the snapshot holds namespace(s) {', '.join(snap.namespaces)} only; save one of {namespace} "
                    f"(gpuctl snapshot save FILE -n {namespace})")
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


def diagnose_pod(snap: Snapshot, namespace: str, name: str, pod: Optional[Pod] = None,
                 include_nodes: bool = True) -> Diagnosis:
    pod = pod or find_pod(snap, namespace, name)
    ctx = PodContext(snap, pod)
    broken = broken_checks(snap.problems_of("Pod", pod.metadata.namespace, pod.metadata.name), pod_checks_reading)
    findings, results = run_checks(ctx, "pod", broken)
    explained = any(f.severity != Severity.INFO or f.code == "scheduling-in-progress" for f in findings)
    if ctx.bound and "containers-running" in broken:
        results.append(CheckResult("containers-running", Status.ERROR, broken["containers-running"]))
    elif ctx.bound:
        results.append(_runtime_state(ctx, explained))
    elif ctx.pending_unbound and not explained:
        age = ctx.age_seconds
        results.append(CheckResult("cause-identified", Status.SKIPPED,
                                   f"the pod has been Pending for {human_age(age)} and no check identified why; "
                                   "look at its events and at the scheduler's logs", essential=True))
    _data_results(snap, results)
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
    if verdict == "inconclusive":
        notes.append("The verdict is inconclusive: see the skipped checks for what could not be read or decided; "
                     "the findings show what the rest supports.")
    return Diagnosis(target=pod_target(ctx), verdict=verdict, findings=ranked, checks=results, nodes=nodes, notes=notes)


def _data_results(snap: Snapshot, results: list[CheckResult]) -> None:
    """What could not be read or decoded, as skipped/error checks, so a report never
    hides a gap (only those not already named by a check's own detail)."""
    for gap_key, gap in sorted(snap.gaps.items()):
        if not any(gap.describe() in r.detail for r in results):
            results.append(CheckResult(f"read {gap_key}", Status.SKIPPED, gap.describe(), essential=False))
    for key, gap in sorted(snap.log_gaps.items()):
        if not any(gap.describe() in r.detail for r in results):
            results.append(CheckResult("read logs", Status.SKIPPED, gap.describe(), essential=False))
    for m in snap.unreadable()[:10]:
        results.append(CheckResult("decode objects", Status.ERROR, str(m), essential=False))


def _runtime_state(ctx: PodContext, explained: bool) -> CheckResult:
    """Bound pods: healthy only when every container runs and is ready; a pod that
    is not, and that no check explained, makes the verdict inconclusive."""
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
    detail = f"bound to {pod.spec.nodeName}, {pod.phase}; {'; '.join(states) or 'no container status'}"
    if explained:
        return CheckResult("containers-running", Status.FAILED, detail)
    young = (ctx.age_seconds or 0) < 60 and pod.phase == "Pending"
    return CheckResult("containers-running", Status.PASSED if young else Status.SKIPPED,
                       detail + ("; just started" if young else "; no check identified why"), essential=not young)


def find_node(snap: Snapshot, name: str):
    node = snap.nodes.get(name)
    if node is not None:
        return node
    unreadable_target(snap, "Node", None, name)
    if NODES_KEY in snap.gaps:
        from .errors import SourceError

        raise SourceError(f"node {name}: {snap.gaps[NODES_KEY].describe()}")
    raise TargetNotFound(f'node "{name}" not found', suggest(name, snap.nodes))


def diagnose_node(snap: Snapshot, name: str) -> Diagnosis:
    from .checks.gpu_node import advertised, driver_info, expected_gpus, expected_mig_devices
    from .checks.node_health import NodeContext
    from .model.requests import pod_requests

    node = find_node(snap, name)
    ctx = NodeContext(snap, node)
    own = snap.problems_of("Node", None, name)
    findings, results = run_checks(ctx, "node", broken_checks(own, node_checks_reading))
    _data_results(snap, results)
    ready = node.condition("Ready")
    if ready is None or ready.status != "True":
        findings.append(Finding("node-not-ready", f"{name} is not Ready ({ready.reason if ready else 'no Ready condition'})",
                                evidence=[f"node/{name} Ready={ready.status if ready else 'missing'}: {ready.message if ready else ''}"],
                                nodes=[name], root_cause=True))
    ranked = merge(findings)
    exp = expected_gpus(snap, node)
    expected = {e.resource: e.count for e in ([exp] if exp else []) + expected_mig_devices(node)}
    gpus = []
    unknown = {u.path[1:3] for u in own if u.path[:2] in (("status", "capacity"), ("status", "allocatable"))}
    pod_unknown = {r for r in ctx.gpu_resources for p in ctx.pods
                   for u in snap.problems_of("Pod", p.metadata.namespace, p.metadata.name) if requests_read(u.path, {r})}
    for r in ctx.gpu_resources:
        cap, alloc = advertised(node, r)
        gpus.append({"resource": r, "expected": expected.get(r),
                     "capacity": None if {("capacity",), ("capacity", r)} & unknown else int(cap),
                     "allocatable": None if {("allocatable",), ("allocatable", r)} & unknown else int(alloc),
                     "allocated": None if r in pod_unknown else int(ctx.allocated(r))})
    info = driver_info(snap, name)
    from .checks.device_plugin import pod_problems
    from .checks.node_health import _pool_key

    operands = {"device plugin": "; ".join(ctx.plugin.problems) or ("Running" if ctx.plugin.pods else "missing")}
    for label, pods in sorted(ctx.operand_pods().items()):
        operands[label] = "; ".join(x for p in pods for x in pod_problems(p)) or "Running"
    pool_key = _pool_key(node)
    pool_drivers: dict[str, int] = {}
    for n in snap.nodes.values():
        if pool_key and _pool_key(n) == pool_key:
            d = driver_info(snap, n.metadata.name)
            if d and d.driver:
                pool_drivers[d.driver] = pool_drivers.get(d.driver, 0) + 1
    target = {"kind": "Node", "namespace": None, "name": name, "phase": "Ready" if node.ready else "NotReady",
              "node": name, "schedulable": not node.spec.unschedulable, "gpus": gpus,
              "sku": (catalog_sku(node) or None),
              "driver": {"version": info.driver, "cuda": str(info.cuda) if info.cuda else None, "source": info.source} if info else None,
              "pool": {"key": pool_key, "drivers": pool_drivers} if pool_key else None,
              "operands": operands if ctx.has_gpus else {},
              "pods": [{"namespace": p.metadata.namespace, "name": p.metadata.name, "phase": p.phase,
                        "gpus": {r: int(q) for r, q in pod_requests(p).items() if r in ctx.gpu_resources}}
                       for p in ctx.pods if any(r in ctx.gpu_resources for r in pod_requests(p))]}
    notes = []
    if not ctx.has_gpus:
        notes.append(f"{name} has no GPUs (no GPU labels, no GPU resources advertised).")
    verdict = verdict_for(ranked, results, bound=True)
    if verdict == "inconclusive":
        notes.append("The verdict is inconclusive: see the skipped checks for what could not be read.")
    return Diagnosis(target=target, verdict=verdict, findings=ranked, checks=results, notes=notes)


def catalog_sku(node) -> Optional[str]:
    from .knowledge import catalog

    ev = catalog.node_has_gpus(node.metadata.labels)
    return ev.sku.id if ev and ev.sku else None


def parse_target(target: str) -> tuple[Optional[str], str, Optional[str]]:
    """(kind, name, namespace) of what the user typed, as kubectl prints things:
    ``NAME``; ``KIND/NAME`` (``job/x``, ``deploy/x``); ``kind.group/name`` from
    ``kubectl get -o name`` (``job.batch/x``, ``pytorchjob.kubeflow.org/x``,
    ``pod/x``); ``NAMESPACE/NAME``, as gpuctl itself prints pods. A prefix that is
    a known kind wins over a namespace of the same name."""
    from .model.workloads import KINDS

    if "/" not in target:
        return None, target, None
    head, _, name = target.partition("/")
    if "/" in name:
        from .errors import UsageError

        raise UsageError(f"invalid target {target!r}: {name!r} is not a valid Kubernetes name "
                         "(give NAME, KIND/NAME or NAMESPACE/NAME)")
    lowered = head.lower()
    if lowered == "job.batch.volcano.sh":
        return "vcjob", name, None
    base = lowered.split(".", 1)[0]
    if base in ("pod", "pods", "po"):
        return "pod", name, None
    if base in KINDS or base in OTHER_KINDS or "." in lowered:
        return base, name, None   # a kind gpuctl does not diagnose is refused by name, not taken for a namespace
    return None, name, head


# Resource names kubectl knows that are not workloads gpuctl diagnoses: "cronjob/x"
# is a kind the user meant, never a namespace called "cronjob".
OTHER_KINDS = frozenset({
    "cronjob", "cronjobs", "cj", "node", "nodes", "no", "service", "services", "svc", "configmap", "configmaps", "cm",
    "secret", "secrets", "namespace", "namespaces", "ns", "persistentvolumeclaim", "persistentvolumeclaims", "pvc",
    "replicationcontroller", "replicationcontrollers", "rc", "event", "events", "ev", "ingress", "ingresses", "ing",
    "serviceaccount", "serviceaccounts", "sa", "endpoints", "ep", "lease", "leases"})


def split_target(target: str) -> tuple[Optional[str], str]:
    kind, name, _ = parse_target(target)
    return kind, name


def diagnose_workload(snap: Snapshot, namespace: str, kind: str, name: str) -> Diagnosis:
    from .checks.workload import diagnose_workload as run

    return run(snap, namespace, kind, name)


def find_pod_anywhere(snap: Snapshot, name: str) -> str:
    """``diagnose pod -A NAME``: the namespace of the one pod of that name."""
    from .errors import TargetNotFound, UsageError

    spaces = sorted(p.metadata.namespace or "default" for p in snap.pods.values() if p.metadata.name == name)
    if len(spaces) == 1:
        return spaces[0]
    if spaces:
        raise UsageError(f"{len(spaces)} pods are named {name}: " + ", ".join(f"{s}/{name}" for s in spaces)
                         + "; give one as NAMESPACE/NAME")
    raise TargetNotFound(f'pod "{name}" not found in any namespace',
                         suggest(name, {f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in snap.pods.values()}))


def diagnose(snap: Snapshot, namespace: str, target: str) -> Diagnosis:
    kind, name = split_target(target)
    if kind in (None, "pod", "pods", "po"):
        return diagnose_pod(snap, namespace, name)
    return diagnose_workload(snap, namespace, kind, name)
