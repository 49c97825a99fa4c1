"""Running the checks of a target, each isolated.

A check whose data set is missing (a Gap: 403, 404, timeout, absent from the
snapshot) is ``skipped`` with the reason; one that raises is ``error`` naming what
it was reading; one that reads a field of the target that could not be decoded is
``error`` without running. The rest of the diagnosis still prints."""

from __future__ import annotations

import traceback
from typing import Any, Optional

from ..checks.base import DataUnavailable, Note, Partial
from ..checks.context import requests_read
from ..checks.registry import checks_for
from ..findings import CheckResult, Finding, Severity, Status
from ..model.snapshot import Snapshot


def run_checks(ctx: Any, target: str, broken: Optional[dict[str, str]] = None) -> tuple[list[Finding], list[CheckResult]]:
    """Run the target's checks. ``broken``: checks that read a field of the target
    that could not be read (name -> the object, field and problem): ``error``
    without running, since whatever they concluded would rest on a field emptied
    by the decoder."""
    findings: list[Finding] = []
    results: list[CheckResult] = []
    broken = broken or {}
    snap_gaps = ctx.snap.gaps
    passed = Status.PASSED
    for spec in checks_for(target):
        try:
            if not spec.applies(ctx):
                continue
        except Exception as e:  # a broken applies() is a broken check
            results.append(CheckResult(spec.name, Status.ERROR, _error_detail(ctx, e), spec.essential))
            continue
        if broken and spec.name in broken:
            results.append(CheckResult(spec.name, Status.ERROR, broken[spec.name], spec.essential))
            continue
        if snap_gaps:
            gaps = [snap_gaps[k] for k in spec.needs if k in snap_gaps]
            if gaps:
                results.append(CheckResult(spec.name, Status.SKIPPED, "; ".join(g.describe() for g in gaps),
                                           spec.essential))
                continue
        try:
            found = list(spec.fn(ctx))
        except DataUnavailable as e:
            results.append(CheckResult(spec.name, Status.SKIPPED, str(e), spec.essential))
            continue
        except Exception as e:
            results.append(CheckResult(spec.name, Status.ERROR, _error_detail(ctx, e), spec.essential))
            continue
        if not found:   # the common case, said as the general one below would say it
            results.append(CheckResult(spec.name, passed, "", spec.essential))
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
    what = getattr(ctx, "ref", None) or (f"node {ctx.name}" if ctx.ns == "" else f"pod {ctx.ns}/{ctx.name}")
    return f"{type(e).__name__}{where} while reading {what}: {e}"


def data_results(snap: Snapshot, results: list[CheckResult]) -> None:
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
