"""Dynamic Resource Allocation: each ResourceClaim a Pending pod needs must exist,
name an existing DeviceClass, and find free devices in the ResourceSlices."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from ..findings import Finding, Fix
from ..model.snapshot import DRA, EVENTS
from .base import check
from .context import PodContext



_DRIVER_RE = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


def _class_driver(dc: Any) -> Optional[str]:
    for sel in (dc.spec or {}).get("selectors") or []:
        m = _DRIVER_RE.search(((sel or {}).get("cel") or {}).get("expression", ""))
        if m:
            return m.group(1)
    return None


def _requests(claim: Any) -> list[tuple[str, str, int]]:
    """(request name, deviceClassName, count) from v1 (exactly) and v1beta1 shapes."""
    out = []
    for r in ((claim.spec or {}).get("devices") or {}).get("requests") or []:
        body = r.get("exactly") or r
        count = body.get("count") or 1
        if body.get("allocationMode") == "All":
            count = 0
        out.append((r.get("name", ""), body.get("deviceClassName", ""), int(count)))
    return out


@check("dra-claims", codes=["dra-claim-unallocatable"], needs=(DRA,), reads=(EVENTS,), applies=lambda ctx: ctx.pending_unbound and bool(ctx.pod.spec.resourceClaims))
def dra_claims(ctx: PodContext) -> Iterable[Finding]:
    """Dynamic Resource Allocation: each ResourceClaim the pod needs must exist,
    name an existing DeviceClass, and find free devices in the ResourceSlices."""
    statuses = {s.name: s.resourceClaimName for s in ctx.pod.status.resourceClaimStatuses}
    allocated: set[tuple[str, str, str]] = set()
    for c in ctx.snap.objects("ResourceClaim"):
        for res in (((c.status or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            allocated.add((res.get("driver", ""), res.get("pool", ""), res.get("device", "")))
    evidence = []
    for rc in ctx.pod.spec.resourceClaims:
        name = rc.resourceClaimName or statuses.get(rc.name)
        if not name:
            evidence.append(f"claim {rc.name}: its ResourceClaim was not generated yet from template "
                            f"{rc.resourceClaimTemplateName or '?'}")
            continue
        claim = ctx.snap.find("ResourceClaim", ctx.ns, name)
        if claim is None:
            evidence.append(f"resourceclaim/{name} does not exist")
            continue
        if ((claim.status or {}).get("allocation")):
            continue
        for req, cls, count in _requests(claim):
            dc = ctx.snap.find("DeviceClass", None, cls)
            if dc is None:
                evidence.append(f"resourceclaim/{name} request {req}: DeviceClass {cls} does not exist")
                continue
            driver = _class_driver(dc)
            total, free = 0, 0
            for s in ctx.snap.objects("ResourceSlice"):
                spec = s.spec or {}
                if driver and spec.get("driver") != driver:
                    continue
                pool = (spec.get("pool") or {}).get("name", "")
                for d in spec.get("devices") or []:
                    total += 1
                    if (spec.get("driver", ""), pool, d.get("name", "")) not in allocated:
                        free += 1
            if free < max(count, 1):
                evidence.append(f"resourceclaim/{name} request {req}: needs {count or 'all'} device(s) of class {cls} "
                                f"(driver {driver or '?'}); ResourceSlices hold {total}, {free} unallocated")
    for line in ctx.fit_error and [r.reason for r in ctx.fit_error.reasons if r.code == "dra-claim-unallocatable"] or []:
        evidence.append(f"scheduler: {line}")
    if not evidence:
        return
    yield Finding("dra-claim-unallocatable", "A DRA ResourceClaim of the pod cannot be allocated", evidence=evidence,
                  root_cause=True, disruption=3,
                  fixes=[Fix("Check the claim, its DeviceClass and the driver's ResourceSlices",
                             [f"kubectl -n {ctx.ns} get resourceclaims -o wide", "kubectl get deviceclasses",
                              "kubectl get resourceslices -o wide"])])


