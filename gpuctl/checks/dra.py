"""Dynamic Resource Allocation: each ResourceClaim a Pending pod needs must exist,
name an existing DeviceClass, and find devices in the ResourceSlices that every
selector accepts, that are free, tolerated and within their pool's counters.

The selectors are compiled and run with a real CEL implementation in the DRA
environment (gpuctl/model/cel_env.py); the allocation rules are the scheduler's
structured allocator's (gpuctl/model/dra.py). A selector the API server would
reject, or one that fails with a CEL runtime error on every device it runs on, is
``dra-selector-invalid``; everything else that leaves a request without devices is
``dra-claim-unallocatable``, with per-selector counts and example values."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from ..findings import Finding, Fix
from ..knowledge.catalog import node_has_gpus
from ..model import dra as D
from ..model.names import is_dns1123_label, is_dns1123_subdomain
from ..model.snapshot import DEVICE_PLUGINS, DRA, EVENTS
from .base import check
from .context import PodContext

MAX_LIST = 4
MAX_EXPR = 200   # a selector is quoted in the evidence up to this many characters


def _expr(text: str) -> str:
    return text if len(text) <= MAX_EXPR else text[:MAX_EXPR] + "…"


def _names(items: Iterable[str], limit: int = MAX_LIST) -> str:
    items = list(items)
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _values(rep: D.SelectorReport, errors: bool = False) -> str:
    parts = []
    for ref, counts in (rep.error_values if errors else rep.values).items():
        shown = ", ".join(f"{v} on {n}" for v, n in counts.most_common(3))
        parts.append(f"{ref.split('/', 1)[1] if '/' in ref else ref}: {shown}")
    return "; ".join(parts)


def _mode(alt: D.Alternative) -> str:
    if alt.mode == "All":
        return "all matching devices (allocationMode All)"
    return f"{alt.count} device{'s' if alt.count != 1 else ''}"


def _alt_lines(claim_name: str, rep: D.AlternativeReport) -> list[str]:
    alt = rep.alt
    head = f"resourceclaim/{claim_name} request {alt.name}"
    if rep.class_missing:
        return [f"{head}: DeviceClass {alt.device_class} does not exist"]
    out = [f"{head}: needs {_mode(alt)} of DeviceClass {alt.device_class}"
           + (" with adminAccess" if alt.admin else "")
           + f"; {rep.considered} devices in ResourceSlices, {len(rep.matching)} match its selectors, "
           f"{len(rep.usable)} usable"]
    for s in rep.selectors:
        if s.failed:
            out.append(f"{s.label} `{_expr(s.expression)}` is false for {s.failed} of the {s.evaluated} devices it ran on"
                       + (f" ({_values(s)})" if s.values else ""))
        if s.errors and s.errors < s.evaluated:
            out.append(f"{s.label} `{_expr(s.expression)}` fails with a CEL runtime error on {s.errors} devices "
                       f"({s.first_error}, first on {s.first_error_device}); the scheduler stops allocating on a "
                       f"node at the first such free device")
    if rep.allocated:
        by_claim = Counter(h.claim for _, hs in rep.allocated for h in hs) or Counter({"this pod's other requests": len(rep.allocated)})
        out.append(f"{len(rep.allocated)} matching devices are allocated: "
                   + _names(f"{n} to {c}" for c, n in by_claim.most_common()))
    if rep.tainted:
        taints = Counter(f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}" for _, t in rep.tainted)
        out.append(f"{len(rep.tainted)} matching devices carry a device taint the request does not tolerate: "
                   + _names(f"{t} on {n}" for t, n in taints.most_common())
                   + f" ({_names(d.id for d, _ in rep.tainted)})")
    if rep.counters:
        sets = Counter(c for _, c in rep.counters)
        out.append(f"{len(rep.counters)} matching devices need shared counters their pool no longer has "
                   f"(a partition or its parent GPU is allocated): " + _names(f"{c} for {n}" for c, n in sets.most_common()))
    if alt.mode == "All" and rep.matching and not rep.nodes_ok:
        per_node = Counter(d.node for d in rep.matching)
        busy = Counter(d.node for d in rep.matching if d not in rep.usable)
        out.append("allocationMode All takes every matching device of a node, so one in use blocks it: "
                   + _names(f"{n or '(not node-local)'} has {per_node[n]} matching, {busy[n]} not usable"
                            for n in sorted(per_node)))
    elif rep.usable and not rep.nodes_ok and alt.mode != "All":
        per_node = Counter(d.node for d in rep.usable)
        why = f" devices sharing one {rep.constraint} value (matchAttribute)" if rep.constraint else " usable devices"
        out.append(f"no node has {alt.count}{why}: " + _names(f"{n or '(not node-local)'} has {c}" for n, c in per_node.most_common()))
    return out


def _invalid_lines(rep: D.AlternativeReport) -> list[str]:
    out = []
    for s in rep.selectors:
        if s.compiled.error:
            out.append(f"{s.label} `{_expr(s.expression)}` is not a valid DRA selector: {s.compiled.error}")
        elif s.evaluated and s.errors == s.evaluated:
            out.append(f"{s.label} `{_expr(s.expression)}` fails with a CEL runtime error on all {s.errors} devices it ran on: "
                       f"{s.first_error} (first on {s.first_error_device})"
                       + (f"; they have {_values(s, errors=True)}" if s.error_values else ""))
    return out


def _plugin_lines(ctx: PodContext, drivers: set[str]) -> tuple[list[str], list[tuple[Any, str]]]:
    """Nodes where NVIDIA's DRA kubelet plugin should publish devices but does not,
    and (pod, container) of the plugins named."""
    pods = D.plugin_pods(ctx.snap)
    out: list[str] = []
    named: list[tuple[Any, str]] = []
    for driver in sorted(d for d in drivers if d in D.PLUGIN_CONTAINERS):
        publishing = D.slice_nodes(ctx.snap, driver)
        container = D.PLUGIN_CONTAINERS[driver]
        # nodes running the plugin, and GPU nodes the classic device plugin does not serve
        candidates = set(pods) | {n for n, node in ctx.snap.nodes.items() if node_has_gpus(node.metadata.labels)
                                  and not any(k.startswith("nvidia.com/") for k in node.status.capacity)}
        if not pods and not publishing:
            continue   # no sign this cluster runs the driver's kubelet plugin anywhere
        for node in sorted(candidates - publishing):
            plugin = pods.get(node) or []
            if not plugin:
                out.append(f"node {node}: no ResourceSlice from driver {driver} and no {driver} kubelet-plugin pod "
                           f"(the DRA counterpart of the device plugin) runs there")
                continue
            p = plugin[0]
            named.append((p, container))
            if not any(c.name == container for c in p.spec.containers):
                out.append(f"node {node}: no ResourceSlice from driver {driver}, though its kubelet plugin pod "
                           f"{p.metadata.namespace}/{p.metadata.name} is {p.phase}, and it has no {container} "
                           f"container, which publishes them (the DaemonSet revision this pod came from lacks it)")
                continue
            # plugin pods are full records, live and from files alike: their containers' states show
            out.append(f"node {node}: no ResourceSlice from driver {driver}, though its kubelet plugin pod "
                       f"{p.metadata.namespace}/{p.metadata.name} is {p.phase}{_container_state(p, container)}: "
                       f"the plugin's {container} container publishes them (read its log)")
    return out, named


def _container_state(p: Any, container: str) -> str:
    """", its gpus container CrashLoopBackOff (restarted 14 times)" from a full pod record;
    "" when the container runs ready or the record has no statuses."""
    for cs in getattr(p.status, "containerStatuses", None) or []:
        if cs.name != container or cs.ready:
            continue
        waiting = cs.state.waiting if cs.state else None
        what = (waiting.reason if waiting and waiting.reason else "not ready")
        return f", its {container} container {what}" + (f" (restarted {cs.restartCount} times)" if cs.restartCount else "")
    return ""


def _fixes(ctx: PodContext, claims: list[str], classes: list[str], plugin_pods: list[tuple[Any, str]]) -> list[Fix]:
    ns = ctx.ns if is_dns1123_label(ctx.ns) else None
    cmds = [f"kubectl get resourceclaim -n {ns} {c} -o yaml" for c in claims if ns and is_dns1123_subdomain(c)]
    cmds += [f"kubectl get deviceclass {c} -o yaml" for c in classes if is_dns1123_subdomain(c)]
    cmds.append("kubectl get resourceslices -o yaml")
    fixes = [Fix("Compare the claim's requests and selectors, its DeviceClass and the devices the ResourceSlices publish", cmds)]
    pcmds = []
    for p, container in plugin_pods[:2]:
        pns, name = p.metadata.namespace or "", p.metadata.name
        if is_dns1123_label(pns) and is_dns1123_subdomain(name):
            pcmds.append(f"kubectl -n {pns} describe pod {name}")
            if any(c.name == container for c in p.spec.containers):
                pcmds.append(f"kubectl -n {pns} logs {name} -c {container} --tail=50")
    if pcmds:
        fixes.append(Fix("See why the DRA driver's kubelet plugin publishes no devices on those nodes", pcmds))
    return fixes


@check("dra-claims", codes=["dra-claim-unallocatable", "dra-selector-invalid"], needs=(DRA,), reads=(EVENTS, DEVICE_PLUGINS),
       applies=lambda ctx: ctx.pending_unbound and bool(ctx.pod.spec.resourceClaims))
def dra_claims(ctx: PodContext) -> Iterable[Finding]:
    """Dynamic Resource Allocation: each ResourceClaim the pod needs must exist,
    name an existing DeviceClass, and find free devices in the ResourceSlices."""
    statuses = {s.name: s.resourceClaimName for s in ctx.pod.status.resourceClaimStatuses}
    evidence: list[str] = []
    invalid: list[str] = []
    claims: list[str] = []
    classes: list[str] = []
    taken: set = set()
    unsatisfied = False
    unknown: list[str] = []
    for rc in ctx.pod.spec.resourceClaims:
        name = rc.resourceClaimName or statuses.get(rc.name)
        if not name:
            evidence.append(f"claim {rc.name}: its ResourceClaim was not generated yet from template "
                            f"{rc.resourceClaimTemplateName or '?'}")
            unsatisfied = True
            continue
        claim = ctx.snap.find("ResourceClaim", ctx.ns, name)
        if claim is None:
            evidence.append(f"resourceclaim/{name} does not exist")
            unsatisfied = True
            continue
        if (claim.status or {}).get("allocation"):
            continue
        claims.append(name)
        before = len(evidence)
        inv = ctx.memo.get_or(("dra-inventory",), lambda: D.inventory(ctx.snap))
        for rr in D.analyse_claim(ctx.snap, claim, taken, inv):
            classes = list(dict.fromkeys(classes + [a.alt.device_class for a in rr.alternatives]))
            if rr.chosen is not None:
                continue
            bad = [line for a in rr.alternatives for line in _invalid_lines(a)]
            if bad and len(rr.alternatives) == 1:
                invalid += bad
                continue
            skipped = [a for a in rr.alternatives if a.unsupported]
            for a in skipped:   # valid CEL gpuctl cannot run: say so, decide nothing from it
                s = a.unsupported[0]
                unknown.append(f"resourceclaim/{name} request {a.alt.name}: {s.label} `{_expr(s.expression)}` was not "
                               f"evaluated: {s.compiled.unsupported}")
            if skipped:
                continue
            unsatisfied = True
            if rr.request.first_available:
                evidence.append(f"resourceclaim/{name} request {rr.request.name}: none of its {len(rr.alternatives)} "
                                f"firstAvailable subrequests fits; each falls through to the next")
            for a in rr.alternatives:
                evidence += _alt_lines(name, a) if not a.invalid else _invalid_lines(a)
                pinned = D.drivers_of(ctx.snap, [a.alt.device_class]) if not a.class_missing and not a.matching else set()
                if pinned and not any(D.slice_nodes(ctx.snap, d) for d in pinned):
                    evidence.append(f"no ResourceSlice publishes devices of driver {_names(sorted(pinned))}, which "
                                    f"DeviceClass {a.alt.device_class} selects: no device can match it")
        cd = D.compute_domain_of(claim) if len(evidence) > before else None
        if cd:
            made = f" (generated from resourceclaimtemplate/{rc.resourceClaimTemplateName})" if rc.resourceClaimTemplateName else ""
            evidence.append(f"resourceclaim/{name}{made} asks for an IMEX channel of the ComputeDomain with uid {cd} "
                            f"(its {D.CHANNEL_CONFIG_KIND}): the {D.COMPUTE_DOMAIN_DRIVER} kubelet plugin must "
                            f"publish channel devices on the job's nodes")
    plugin, pods = _plugin_lines(ctx, D.drivers_of(ctx.snap, classes)) if (unsatisfied or invalid) else ([], [])
    scheduler = [f"scheduler: {r.reason}" for r in (ctx.fit_error.reasons if ctx.fit_error else [])
                 if r.code == "dra-claim-unallocatable"]
    if invalid:
        yield Finding("dra-selector-invalid", "A DRA selector of the pod's claim or its DeviceClass is invalid CEL",
                      evidence=invalid + scheduler, root_cause=True, disruption=0,
                      fixes=_fixes(ctx, claims, classes, []))
    if unsatisfied or (scheduler and not invalid and (unknown or not claims)):
        yield Finding("dra-claim-unallocatable", "A DRA ResourceClaim of the pod cannot be allocated",
                      evidence=evidence + unknown + plugin + scheduler, root_cause=True, disruption=3,
                      fixes=_fixes(ctx, claims, classes, pods))
