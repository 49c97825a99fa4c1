"""Why a Pending pod is not bound: the decision tree of an expert, as checks.

* ``scheduler-verdict`` reads what the scheduler said (PodScheduled condition and
  FailedScheduling events). It decides on its own only what current state cannot
  show (volumes, topology spread, DRA, plugins), or everything when the nodes
  cannot be read (then the verdict is ``inconclusive``).
* ``node-fit`` re-evaluates every node from current state and names the causes:
  which resource no node advertises (typo, shared/MIG twin, device plugin down),
  shortage vs fragmentation from the numbers, and the placement constraints
  (taints, selectors, affinity, cordons, readiness, cpu/memory) that keep the pod
  off the nodes that have enough free GPUs.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Iterable, Optional

from ..findings import Finding, Fix, Severity
from ..knowledge import catalog
from ..knowledge.state_taints import state_taint
from ..model.matching import STATE_TAINTS, taint_text
from ..model.quantity import format_quantity
from ..model.requests import pod_requests
from ..model.snapshot import DAEMONSETS, DEVICE_PLUGINS, EVENTS, NODES, PODS
from . import context
from .base import Partial, check
from .context import NodeFit, PodContext, is_mig, twin_of
from .fixes import (DISRUPTION, add_toleration_ops, change_commands, crash_log_command, edit_commands, esc, kubectl as _kubectl,
                    rename_resource_ops, workload_ref)
from .device_plugin import pod_problems
from .plugin_serving import fixes as serving_fixes, scaled_to_zero, serving, well_known
from .rollback import rollback_fix, rollback_for_resource, rollback_for_selector

MAX_EVIDENCE_NODES = 6
PLACEMENT = ("node-not-ready", "node-unschedulable", "untolerated-taint", "node-selector-mismatch",
             "node-affinity-mismatch", "pod-topology-constraint")
NODE_RESOURCE = ("insufficient-cpu", "insufficient-memory", "insufficient-resource")
# What node-fit decides from the nodes' current state.
NODE_FIT_CODES = PLACEMENT + NODE_RESOURCE + (
    "unknown-resource-name", "insufficient-gpu", "gpu-fragmentation", "mig-profile-unavailable",
    "sharing-resource-mismatch", "device-plugin-not-running", "nvml-init-failed")
# What scheduler-verdict reports from the scheduler's own words alone (when the
# nodes cannot be read, or for causes the current state cannot show).
SCHEDULER_WORDS = NODE_FIT_CODES + ("volume-binding", "dra-claim-unallocatable")
# How disruptive each fix is (0 = correct a typo in the pod, 4 = wait or buy capacity).


def _pending(ctx: PodContext) -> bool:
    return ctx.pending_unbound


# ------------------------------------------------------------------ helpers


GPU_CAPACITY_CMD = ("kubectl get nodes -o custom-columns='NAME:.metadata.name,"
                    "GPU:.status.allocatable.nvidia\\.com/gpu,CORDONED:.spec.unschedulable'")


def _node_lines(fits: list[NodeFit], code: str) -> list[str]:
    lines = [d for f in fits[:MAX_EVIDENCE_NODES] for d in f.details.get(code, [])[:2]]
    if len(fits) > MAX_EVIDENCE_NODES:
        lines.append(f"… and {len(fits) - MAX_EVIDENCE_NODES} more nodes")
    return lines


def _names(fits: list[NodeFit]) -> list[str]:
    return [f.name for f in fits]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def event_codes(ctx: PodContext) -> dict[str, list[str]]:
    """Finding code -> the scheduler's own words supporting it."""
    fe = ctx.fit_error
    out: dict[str, list[str]] = {}
    if fe is None:
        return out
    src = "PodScheduled condition" if _from_condition(ctx) else "FailedScheduling event"
    if fe.prefilter and fe.prefilter_code:
        out.setdefault(resolve_rule(ctx, fe.prefilter_code, None), []).append(f"scheduler ({src}): {fe.prefilter}")
    for rc in fe.reasons:
        if rc.code is None:
            continue
        code = resolve_rule(ctx, rc.code, rc.resource)
        if rc.code == "untolerated-taint" and rc.taint_key:
            state = state_taint(rc.taint_key)
            code = STATE_TAINTS.get(rc.taint_key, state.code if state else code)
        out.setdefault(code, []).append(
            f"scheduler ({src}): {rc.count} of {fe.total_nodes} nodes: {rc.reason}")
    return out


def _from_condition(ctx: PodContext) -> bool:
    cond = ctx.pod.condition("PodScheduled")
    return bool(cond and cond.status == "False" and cond.message and ctx.fit_error and cond.message == ctx.fit_error.raw)


def resolve_rule(ctx: PodContext, code: str, resource: Optional[str]) -> str:
    if code == "@resource":
        r = resource or ""
        if r == "cpu":
            return "insufficient-cpu"
        if r == "memory":
            return "insufficient-memory"
        if is_mig(r):
            return "mig-profile-unavailable"
        if r in ctx.gpu_requests or "gpu" in r:
            return "insufficient-gpu"
        return "insufficient-resource"
    if code == "@selector-or-affinity":
        na = ctx.pod.spec.affinity.nodeAffinity if ctx.pod.spec.affinity else None
        has_aff = bool(na and na.requiredDuringSchedulingIgnoredDuringExecution)
        if ctx.pod.spec.nodeSelector and not has_aff:
            return "node-selector-mismatch"
        if has_aff and not ctx.pod.spec.nodeSelector:
            return "node-affinity-mismatch"
        if ctx.snap.nodes:
            sel = sum(1 for f in ctx.fits if "node-selector-mismatch" in f.reasons)
            aff = sum(1 for f in ctx.fits if "node-affinity-mismatch" in f.reasons)
            return "node-selector-mismatch" if sel >= aff else "node-affinity-mismatch"
        return "node-selector-mismatch"
    if code == "@plugin":
        return "pod-topology-constraint"
    return code


_KLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\]\s*")


def _log_evidence(lines, kind: str, limit: int = 3) -> list[str]:
    """The last distinct log messages of a kind (klog headers ignored for the comparison)."""
    seen: dict[str, str] = {}
    for lf in lines:
        if lf.kind == kind:
            seen.pop(_KLOG.sub("", lf.line), None)
            seen[_KLOG.sub("", lf.line)] = lf.line
    return [f"log: {line}" for line in list(seen.values())[-limit:]]


# ------------------------------------------------------------------ fixes per code


STANDARD_GPU_TAINTS = ("nvidia.com/gpu", "amd.com/gpu", "gpu", "sku")


def _taint_fixes(ctx: PodContext, fits: list[NodeFit]) -> list[Fix]:
    taints = {}
    for f in fits:
        for t in f.taints:
            taints.setdefault((t.key, t.value or "", t.effect), t)
    fixes = []
    undo = rollback_fix(ctx, "toleration", [t for t in taints.values()])
    if undo:
        fixes.append(undo)
    ref = workload_ref(ctx)
    for (key, value, effect), t in sorted(taints.items()):
        op = "Equal" if value else "Exists"
        yaml_lines = ["tolerations:", f'- key: "{key}"', f'  operator: "{op}"']
        if value:
            yaml_lines.append(f'  value: "{value}"')
        yaml_lines.append(f'  effect: "{effect}"')
        tol = {"key": key, "operator": op, "effect": effect, **({"value": value} if value else {})}
        cmds, why = change_commands(ctx, add_toleration_ops(ctx, tol), pod_mutable=True)
        fixes.append(Fix(f"If the pod belongs on these nodes, tolerate {taint_text(t)} in {ref}'s pod spec",
                         cmds, snippets=["\n".join(yaml_lines)], needs_judgement=why))
    nodes = [f.name for f in fits][:3]
    if taints and nodes:
        (key, value, effect) = sorted(taints)[0]
        standard = key in STANDARD_GPU_TAINTS
        fixes.append(Fix("Or, if the taint is stale, remove it from the node(s)"
                         + (" (it is the GPU pool's standard taint: without it non-GPU pods land on GPU nodes)" if standard else ""),
                         [f"kubectl taint nodes {n} {key}{'=' + value if value else ''}:{effect}-" for n in nodes],
                         needs_judgement="the GPU pool's standard taint keeps other pods off GPU nodes" if standard else ""))
    return fixes


def _selector_fix(ctx: PodContext, fits: list[NodeFit]) -> list[Fix]:
    keys = list(ctx.pod.spec.nodeSelector)
    node_vals = Counter()
    for f in fits:
        n = ctx.snap.nodes[f.name]
        for k in keys:
            node_vals[(k, n.metadata.labels.get(k))] += 1
    wanted = ", ".join(f"{k}={v}" for k, v in ctx.pod.spec.nodeSelector.items())
    have = ", ".join(f"{k}={v}" if v is not None else f"no {k} label" for (k, v), _ in node_vals.most_common(3))
    ref = workload_ref(ctx)
    fixes = []
    best: dict[str, Optional[str]] = {}
    for (k, v), _n in node_vals.most_common():
        best.setdefault(k, v)
    undo = rollback_for_selector(ctx, lambda sel: all(best.get(k) == v for k, v in sel.items()),
                                 "the nodes with room")
    if undo:
        fixes.append(undo)
    ops = []
    for k, v in ctx.pod.spec.nodeSelector.items():
        if best.get(k, v) == v:
            continue
        path = f"/nodeSelector/{esc(k)}"
        ops.append({"op": "remove", "path": path} if best.get(k) is None else {"op": "replace", "path": path, "value": best[k]})
    now = ", ".join(f"{k}={v}" for k, v in ctx.pod.spec.nodeSelector.items())
    cmds, why = change_commands(ctx, ops) if ops else ([], "")
    fixes.append(Fix(f"The nodes with room have {have}; the pod wants {wanted}. If those nodes are acceptable, "
                     f"point the nodeSelector of {ref} at them ({now} → "
                     + (", ".join(f"{k}={best[k]}" if best.get(k) is not None else f"no {k}" for k in ctx.pod.spec.nodeSelector
                                  if best.get(k, ctx.pod.spec.nodeSelector[k]) != ctx.pod.spec.nodeSelector[k]) or now) + ")",
                     cmds, needs_judgement=why))
    mislabelled = [f.name for f in fits if all(
        ctx.snap.nodes[f.name].metadata.labels.get(k) is None for k in keys)]
    if mislabelled:
        fixes.append(Fix("If these nodes should carry the label (check their GPU model first), label them",
                         [f"kubectl label node {n} {' '.join(f'{k}={v}' for k, v in ctx.pod.spec.nodeSelector.items())}"
                          for n in mislabelled[:3]]))
    return fixes


def _affinity_text(ctx: PodContext) -> str:
    na = ctx.pod.spec.affinity.nodeAffinity if ctx.pod.spec.affinity else None
    terms = na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms if na and na.requiredDuringSchedulingIgnoredDuringExecution else []
    parts = []
    for t in terms[:2]:
        parts.append(" and ".join(f"{e.key} {e.operator} {','.join(e.values)}".strip() for e in t.matchExpressions[:3]))
    return " or ".join(f"({p})" for p in parts) or "required terms"


def _largest_request(ctx: PodContext, res: str) -> tuple[int, str]:
    """The container asking the most of ``res`` and its request as written."""
    best, text, amount = 0, "unset", -1.0
    from ..model.quantity import parse_quantity

    for i, c in enumerate(ctx.pod.spec.containers):
        q = c.resources.requests.get(res, c.resources.limits.get(res))
        if q is None:
            continue
        try:
            v = parse_quantity(q)
        except (ValueError, TypeError):
            continue
        if v > amount:
            best, text, amount = i, str(q), v
    return best, text


def _change_fix(ctx: PodContext, summary: str, ops: list[dict]) -> Fix:
    cmds, why = change_commands(ctx, ops)
    return Fix(summary, cmds, needs_judgement=why)


def _edit_resource(ctx: PodContext, r: str, new: str) -> list[str]:
    for i, c in enumerate(ctx.pod.spec.containers):
        for part in ("limits", "requests"):
            values = getattr(c.resources, part)
            if r in values:
                return edit_commands(ctx, f"/containers/{i}/resources/{part}", f"{r}: {values[r]}", f"{new} instead")
    return edit_commands(ctx, "/containers/0/resources/limits", r, new)


def _resource_name_fixes(ctx: PodContext, r: str, close: Optional[str]) -> list[Fix]:
    ref = workload_ref(ctx)
    if not close:
        return [Fix(f"Fix the resource name in {ref}: no node advertises {r}",
                    _edit_resource(ctx, r, "a resource the nodes advertise (kubectl describe nodes | grep -A8 Allocatable)"),
                    needs_judgement="no advertised name is close: pick the right one")]
    fixes = []
    undo = rollback_for_resource(ctx, r, close)
    if undo:
        fixes.append(undo)
    cmds, why = change_commands(ctx, rename_resource_ops(ctx, r, close))
    fixes.append(Fix(f"Fix the resource name in {ref}: {r} → {close} (limits and requests)", cmds, needs_judgement=why))
    return fixes


def _free_per_node(r: str, frees: list[tuple[float, str]]) -> str:
    """The nodes with something free by name (at most 8); the ones with nothing, counted."""
    some = [(v, n) for v, n in frees if v > 0]
    none = len(frees) - len(some)
    text = f"free {r} per node: " + ", ".join(f"{n}={format_quantity(r, v)}" for v, n in some[:8])
    if len(some) > 8:
        text += f", … ({len(some) - 8} more)"
    if none:
        if not some:
            return f"free {r}: none on any of the {_plural(none, 'node')}"
        text += f"; {_plural(none, 'node')} with none free"
    return text


def _fixes(ctx: PodContext, code: str, fits: list[NodeFit]) -> list[Fix]:
    ref = workload_ref(ctx)
    names = _names(fits)
    if code == "untolerated-taint":
        return _taint_fixes(ctx, fits)
    if code == "node-selector-mismatch":
        return _selector_fix(ctx, fits)
    if code == "node-affinity-mismatch":
        return [Fix(f"Relax the required node affinity of {ref} so it admits {', '.join(names[:3])}, "
                    "or label the intended nodes to match it",
                    [f"kubectl get node {names[0]} --show-labels" if names else "kubectl get nodes --show-labels",
                     *edit_commands(ctx, "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
                                    _affinity_text(ctx), f"terms that admit {', '.join(names[:3]) or 'the GPU nodes'}")],
                    needs_judgement="which nodes the pod may use is your call")]
    state = _state_taint_fixes(ctx, code, fits)
    if code == "node-unschedulable":
        cordoned = [f.name for f in fits if any("cordoned" in d for d in f.details.get(code, []))]
        if not cordoned and state:
            return state
        return state + [Fix("Check why the node was cordoned (maintenance, drain, a health controller), then uncordon it",
                            [f"kubectl describe node {n} | grep -iA3 -E 'taints|unschedulable|annotations'" for n in cordoned[:1]]
                            + [f"kubectl uncordon {n}" for n in cordoned[:5]])]
    if code == "node-not-ready":
        ready_taints_only = all(not any("Ready=" in d for d in f.details.get(code, [])) for f in fits)
        if state and ready_taints_only:
            return state
        return state + [Fix("Find out why the node is not Ready (kubelet down, network, pressure) and repair or replace it",
                            [f"kubectl describe node {n}" for n in names[:2]]
                            + [f"kubectl debug node/{names[0]} -it --image=busybox -- chroot /host journalctl -u kubelet --since -30m"] if names else [])]
    if code in ("insufficient-cpu", "insufficient-memory", "insufficient-resource"):
        res = {"insufficient-cpu": "cpu", "insufficient-memory": "memory"}.get(code) or _lacking(fits, code)
        idx, current = _largest_request(ctx, res)
        most = max((f.free.get(res, 0) for f in fits), default=0)
        return [
            Fix(f"Lower the pod's {res} request so it fits the free {res} of a GPU node",
                edit_commands(ctx, f"/containers/{idx}/resources/requests/{esc(res)}", current,
                              f"at most {format_quantity(res, most)} in all containers (the most free on a GPU node with room)"
                              if most > 0 else "less"),
                needs_judgement="how much the container can do with is your call"),
            Fix("See which pods hold the node's resources; keep non-GPU pods off GPU nodes with a taint",
                [f"kubectl get pods -A --field-selector spec.nodeName={n},status.phase=Running -o wide" for n in names[:2]]
                + ([f"kubectl taint nodes {names[0]} nvidia.com/gpu=present:NoSchedule"] if names else []),
                needs_judgement="a new taint also repels GPU pods that do not tolerate it: add the toleration to them first"),
        ]
    if code == "pod-topology-constraint":
        return [Fix(f"Relax the pod's required (anti-)affinity or topology spread in {ref}, or free a node it accepts",
                    [f"{_kubectl(ctx)} get {ref} -o yaml | grep -A15 -E 'podAntiAffinity|podAffinity|topologySpreadConstraints'"])]
    return []


# ------------------------------------------------------------------ checks


@check("scheduler-verdict", also=SCHEDULER_WORDS, reads=(EVENTS,), applies=_pending)
def scheduler_verdict(ctx: PodContext) -> Iterable[Finding]:
    """What the scheduler said. Decides alone only the causes current state cannot
    show; when the nodes cannot be read, everything the events support."""
    fe = ctx.fit_error
    if fe is None:
        return
    nodes_known = NODES not in ctx.snap.gaps and bool(ctx.snap.nodes)
    state_codes = set(PLACEMENT + NODE_RESOURCE) | {"insufficient-gpu", "gpu-fragmentation",
                                                     "mig-profile-unavailable", "unknown-resource-name"}
    unchecked = {resolve_rule(ctx, r.code or "", r.resource) for r in fe.reasons if r.code and not r.state_checked}
    for code, lines in event_codes(ctx).items():
        if nodes_known and code in state_codes and code not in unchecked:
            continue
        if code in ("queue-not-admitted",):
            continue  # the queue check explains gates with the queue's own status
        summary = {
            "volume-binding": "Volume constraints block the pod, not GPUs",
            "pod-topology-constraint": "Pod (anti-)affinity or topology spread rules exclude the nodes",
            "dra-claim-unallocatable": "A DRA ResourceClaim of the pod cannot be allocated",
        }.get(code, f"The scheduler reports: {lines[0].split(': ', 1)[-1]}")
        if not nodes_known:
            summary += " (from the scheduler's message only: the nodes could not be read)"
        yield Finding(code, summary, evidence=lines, root_cause=True, disruption=DISRUPTION.get(code, 2),
                      unblocks=sum(r.count for r in fe.reasons if resolve_rule(ctx, r.code or "", r.resource) == code))


def _requested_text(ctx: PodContext, r: str) -> str:
    return f"{format_quantity(r, ctx.device_requests.get(r, ctx.requests.get(r, 0)))} {r}"


@check("node-fit", codes=NODE_FIT_CODES, also=["gpu-unhealthy", "preemption-in-progress"], needs=(NODES, PODS),
       reads=(EVENTS, DEVICE_PLUGINS, DAEMONSETS), applies=_pending, essential=True)
def node_fit(ctx: PodContext) -> Iterable[Finding]:
    """Every node against the pod, from current state: which resource nobody
    advertises, shortage vs fragmentation, and the constraints that keep the pod
    off the nodes that have enough free GPUs.

    Pods with the same scheduling constraints, namespace and owner (the replicas of
    one Job or Deployment) get the same findings: they are computed once per
    snapshot and copied. A group report (diagnose pending: a Memo with share_across_owners)
    shares them across owners too: it shows each group's first fix only."""
    key = None
    partial = _uncertain(ctx)
    if ctx.fit_signature is not None:
        owner = None if ctx.memo.share_across_owners else (ctx.ns, workload_ref(ctx))
        key = ("node-fit", ctx.fit_signature, owner, ctx.pod.status.nominatedNodeName)
        cached = ctx.memo.get(key)
        if cached is not None:
            return copy_findings(cached) + partial
    found = list(_node_fit(ctx))
    if key is not None:
        ctx.memo[key] = copy_findings(found)
    return found + partial


def copy_findings(found: list) -> list:
    """``copy.deepcopy(found)`` for the plain findings node-fit makes (strings, lists
    of strings, Fix records), in a fraction of its time (it runs once per Pending pod):
    every list and record is new, lists shared within ``found`` stay shared, strings
    and enums are kept, as deepcopy does. Anything else goes through deepcopy.

    The helpers are module functions handed the table of copies (``made``): nested
    functions that call each other would make a reference cycle per call, which only
    the cyclic collector frees, with every copy in the table."""
    if not context.FAST_PATHS:
        return copy.deepcopy(found)
    made: dict[int, object] = {}
    try:
        return [_copy_record(made, f, Finding, ("evidence", "nodes", "fixes"), _PLAIN) for f in found]
    except _NotPlain:
        return copy.deepcopy(found)


def _copy_strings(made: dict[int, object], xs: object) -> list:
    got = made.get(id(xs))
    if got is None:
        if type(xs) is not list or (xs and set(map(type, xs)) != _STR):   # strings only
            raise _NotPlain
        got = made[id(xs)] = list(xs)
    return got  # type: ignore[return-value]


def _copy_record(made: dict[int, object], obj: object, cls: type, list_fields: tuple[str, ...],
                 plain: tuple[type, ...]) -> object:
    got = made.get(id(obj))
    if got is None:
        if type(obj) is not cls:
            raise _NotPlain
        state = dict(obj.__dict__)
        for k, v in state.items():
            if k in list_fields:
                state[k] = _copy_strings(made, v) if k != "fixes" else _copy_fixes(made, v)
            elif type(v) not in plain:
                raise _NotPlain
        got = made[id(obj)] = cls.__new__(cls)
        got.__dict__.update(state)
    return got


def _copy_fixes(made: dict[int, object], xs: object) -> list:
    got = made.get(id(xs))
    if got is None:
        if type(xs) is not list:
            raise _NotPlain
        got = made[id(xs)] = [_copy_record(made, x, Fix, ("commands", "snippets"), (str,)) for x in xs]
    return got  # type: ignore[return-value]


class _NotPlain(Exception):
    """A finding holds something ``copy_findings`` does not copy itself."""


_PLAIN = (str, bool, int, Severity, type(None))
_STR = {str}


def _uncertain(ctx: PodContext) -> list[Partial]:
    """Nodes left out of the fit matrix because an object it needs there could not
    be fully read (docs/output.md, "Objects that could not be read")."""
    skip = ctx.uncertain_nodes
    if not skip:
        return []
    lines = [f"node {n} left out: {'; '.join(why[:2])}{f' (+{len(why) - 2} more)' if len(why) > 2 else ''}"
             for n, why in sorted(skip.items())]
    return [Partial("; ".join(lines[:5]) + (f"; … {len(lines) - 5} more nodes" if len(lines) > 5 else ""))]


class _FitRun:
    """What the steps of node-fit share: the fit matrix, the scheduler's words by
    code, the device requests, and the codes already emitted."""

    def __init__(self, ctx: PodContext) -> None:
        self.ctx = ctx
        self.fits = ctx.fits
        self.ev = event_codes(ctx)
        self.devices = ctx.device_requests
        self.emitted: set[str] = set()

    def sole(self, code: str) -> list[NodeFit]:
        """The nodes this code alone keeps the pod off."""
        return [f for f in self.fits if f.reasons == [code]]


def _node_fit(ctx: PodContext) -> Iterable[Finding]:
    s = _FitRun(ctx)
    yield from _unadvertised(s)
    yield from _plugin_down(s)
    yield from _unhealthy(s)
    yield from _combination(s)
    yield from _shortage(s)
    yield from _constraints(s)


def _unadvertised(s: _FitRun) -> Iterable[Finding]:
    """Resources nobody advertises: a sharing twin, a MIG profile, or an unknown name."""
    ctx, fits, ev, devices, emitted, sole = s.ctx, s.fits, s.ev, s.devices, s.emitted, s.sole
    for r, q in devices.items():
        if ctx.advertised.get(r):
            continue
        placer = catalog.placing_scheduler(r)
        if placer is not None:   # a sharing layer's resource only its scheduler places; the pod has another
            if "sharing-resource-mismatch" not in emitted:
                emitted.add("sharing-resource-mismatch")
                yield _other_scheduler(s, placer)
            continue
        twin = twin_of(r)
        if ctx.advertised.get(twin):
            nodes = [f for f in fits if "sharing-resource-mismatch" in f.reasons]
            emitted.add("sharing-resource-mismatch")
            yield Finding(
                "sharing-resource-mismatch",
                f"The pod asks for {r}, but GPU sharing renamed the resource: {len(ctx.advertised[twin])} nodes advertise {twin}",
                evidence=[f"no node advertises {r}"] + [f"node/{n} advertises {twin}" for n in ctx.advertised[twin][:MAX_EVIDENCE_NODES]]
                + ev.get("insufficient-gpu", []),
                nodes=ctx.advertised[twin], root_cause=True, unblocks=len(sole("sharing-resource-mismatch")) or 1,
                disruption=DISRUPTION["sharing-resource-mismatch"],
                fixes=[_change_fix(ctx, f"Request {twin} instead of {r} in {workload_ref(ctx)} (limits and requests)",
                                   rename_resource_ops(ctx, r, twin))])
            continue
        mig = sorted(x for x in ctx.advertised if is_mig(x))
        unapplied = _mig_not_applied(ctx) if r.startswith("nvidia.com/") else []
        if unapplied and not mig:
            emitted.add("mig-profile-unavailable")
            yield _mig_layout_finding(s, r, unapplied)
            continue
        if is_mig(r) and not mig and _plugin_failing_on_mig_nodes(ctx):
            yield _not_served(s, r, serving(ctx, r))   # no MIG resource at all while the plugin fails: the plugin, not the profile
            continue
        if is_mig(r) or (r == "nvidia.com/gpu" and mig):
            emitted.add("mig-profile-unavailable")
            nodes = sorted({n for x in mig for n in ctx.advertised[x]})
            what = (f"no node advertises the MIG profile {r}" if is_mig(r)
                    else "the GPU nodes are MIG-partitioned (mixed strategy) and advertise only MIG resources")
            yield Finding(
                "mig-profile-unavailable", f"The pod asks for {r}, but {what}",
                evidence=[f"advertised MIG resources: {', '.join(mig) or 'none'}"]
                + [f"node/{n}: {', '.join(x for x in mig if n in ctx.advertised[x])}" for n in nodes[:MAX_EVIDENCE_NODES]]
                + ev.get("insufficient-gpu", []) + ev.get("mig-profile-unavailable", []),
                nodes=nodes, root_cause=True, unblocks=len(nodes), disruption=DISRUPTION["mig-profile-unavailable"],
                fixes=[Fix(f"Request an advertised MIG profile in {workload_ref(ctx)}" + (f" (e.g. {mig[-1]})" if mig else ""),
                           _edit_resource(ctx, r, f"an advertised MIG profile ({', '.join(mig[:3])})" if mig else "an advertised MIG profile"),
                           needs_judgement="which MIG profile fits the model is your call"),
                       Fix("Or repartition a node with the MIG manager (drains its GPU workloads)",
                           [f"kubectl label node {nodes[0] if nodes else 'NODE'} nvidia.com/mig.config=<profile-config> --overwrite"])])
            continue
        dp_nodes = [f for f in fits if f.reasons and any(c in ("device-plugin-not-running", "nvml-init-failed") for c in f.reasons)]
        if dp_nodes and r in ctx.gpu_requests:
            continue  # explained below as device-plugin-not-running / nvml-init-failed
        if well_known(r):
            sv = serving(ctx, r)
            if scaled_to_zero(ctx, sv):
                continue   # the autoscaler check explains the missing GPU nodes
            cpu_only = _cpu_only_cluster(ctx, sv) if r in ctx.gpu_requests else []
            if cpu_only:
                emitted.add("insufficient-gpu")
                yield _no_gpu_node(s, r, cpu_only)
            else:
                yield _not_served(s, r, sv)
            continue
        emitted.add("unknown-resource-name")
        close = ctx.closest_resource(r)
        advertised = sorted(x for x in ctx.advertised)
        yield Finding(
            "unknown-resource-name",
            f"No node advertises {r}" + (f"; did you mean {close}?" if close else ""),
            evidence=[f"the pod requests {_requested_text(ctx, r)}",
                      f"resources the nodes advertise: {', '.join(advertised) or 'none beyond cpu/memory'}"]
            + ev.get("insufficient-gpu", []) + ev.get("insufficient-resource", []),
            root_cause=True, unblocks=len(ctx.advertised.get(close, [])) if close else 0,
            disruption=DISRUPTION["unknown-resource-name"],
            fixes=_resource_name_fixes(ctx, r, close))


def _cpu_only_cluster(ctx: PodContext, sv) -> list[tuple[str, str]]:
    """(node, instance type) for every node when none can have a GPU: no GPU label,
    no device-plugin pod or DaemonSet, and each node's instance type is CPU-only by its
    cloud's naming (skus.yaml cpu_only_instance_types). Empty otherwise."""
    if sv.pods or sv.daemonsets or not ctx.snap.nodes:
        return []
    out = []
    for n in ctx.nodes:
        it = catalog.cpu_only_instance_type(n.metadata.labels)
        if it is None or ctx.gpu_evidence(n) is not None:
            return []
        out.append((n.metadata.name, it))
    return out


def _no_gpu_node(s: _FitRun, r: str, nodes: list[tuple[str, str]]) -> Finding:
    """The cluster has no GPU node at all: no plugin could advertise one."""
    ctx = s.ctx
    types = sorted({it for _, it in nodes})
    return Finding(
        "insufficient-gpu",
        "No node in the cluster has a GPU: "
        + (f"its only node is a CPU-only {types[0]}" if len(nodes) == 1
           else f"its {len(nodes)} nodes are CPU-only instance types ({', '.join(types[:3])})")
        + f"; the pod needs {_requested_text(ctx, r)}",
        evidence=[f"node/{n}: instance type {it}, no GPU label" for n, it in nodes[:MAX_EVIDENCE_NODES]]
        + ["no device-plugin pod or DaemonSet: nothing to deploy it on"] + s.ev.get("insufficient-gpu", []),
        nodes=[n for n, _ in nodes][:20], root_cause=True, unblocks=0, disruption=DISRUPTION.get("insufficient-gpu", 4),
        fixes=[Fix("Add GPU nodes (a node group or NodePool of a GPU instance type, with the cloud's GPU image "
                   "or the GPU Operator), then the device plugin advertises their GPUs",
                   ["kubectl get nodes -L node.kubernetes.io/instance-type"],
                   needs_judgement="which GPU instance type fits the workload is your call")])


def _other_scheduler(s: _FitRun, placer: str) -> Finding:
    """The pod asks for resources a GPU-sharing layer's scheduler accounts (HAMi's
    nvidia.com/gpumem, placed by hami-scheduler through its extender; no node
    advertises them), but another scheduler handles the pod: it reports them
    "Insufficient" on every node. The layer's admission webhook, which sets the
    schedulerName, did not run, or the pod names another scheduler."""
    ctx = s.ctx
    placed = sorted(r for r in s.devices if catalog.placing_scheduler(r) == placer)
    mine = ctx.pod.spec.schedulerName or "default-scheduler"
    runs = [p.key for p in ctx.snap.pods.values() if placer in p.metadata.name and p.phase == "Running"]
    evidence = [f"the pod requests {', '.join(_requested_text(ctx, r) for r in placed)}, which {placer} places "
                "(its extender accounts them; no node advertises them)",
                f"the pod's schedulerName is {mine}"
                + (f"; {placer} runs ({', '.join(runs[:2])})" if runs else f"; no running {placer} pod was seen")]
    evidence += s.ev.get("insufficient-resource", []) + s.ev.get("insufficient-gpu", [])
    ref = workload_ref(ctx)
    return Finding(
        "sharing-resource-mismatch",
        f"The pod asks for {', '.join(placed)}, which only {placer} can place, but {mine} handles it: the sharing "
        "layer's admission webhook did not route the pod to its scheduler",
        evidence=evidence, root_cause=True, unblocks=1, disruption=DISRUPTION["sharing-resource-mismatch"],
        fixes=[Fix(f"Check that {placer} and its admission webhook run (the webhook sets schedulerName: {placer} on "
                   "pods that request its resources; pods created before it was ready keep the old scheduler)",
                   [f"kubectl get pods -A -o wide | grep -i {placer}",
                    "kubectl get mutatingwebhookconfigurations"]),
               Fix(f"Or set schedulerName: {placer} in {ref}'s pod spec and recreate the pod",
                   edit_commands(ctx, "/schedulerName", mine, placer),
                   needs_judgement="normally the webhook sets it: fix the webhook for every workload")])


def _not_served(s: _FitRun, r: str, sv) -> Finding:
    """A well-known GPU resource nobody advertises: why its plugin does not serve it."""
    ctx = s.ctx
    code = "nvml-init-failed" if sv.nvml else "gpu-unhealthy" if sv.unhealthy else "device-plugin-not-running"
    s.emitted.add(code)
    bad = [p for p in sv.pods if pod_problems(p)]
    why = ("its device plugin runs but cannot load NVML" if sv.nvml
           else f"the {sv.vendor} device plugin marked the GPUs unhealthy" if sv.unhealthy
           else f"the {sv.vendor} device plugin's DaemonSet does not run on the GPU nodes" if sv.blocked
           else f"the {sv.vendor} device-plugin pod is not running" if bad
           else f"the {sv.vendor} device-plugin pods run but register no {r}" if sv.pods
           else f"no {sv.vendor} device plugin serves it")
    return Finding(code, f"No node advertises {r}: {why}", evidence=sv.evidence + s.ev.get("insufficient-gpu", []),
                   nodes=sorted({b.split(":")[0].removeprefix("node/") for _, b in sv.blocked}),
                   root_cause=True, unblocks=1, disruption=DISRUPTION[code], fixes=serving_fixes(ctx, sv))


def _mig_not_applied(ctx: PodContext) -> list:
    """GPU nodes whose MIG layout did not apply: the MIG manager's state is failed or
    pending, or GPU feature discovery names the product *-MIG-INVALID (MIG mode on,
    no instances): they advertise no GPU until it is fixed."""
    out = []
    for n in ctx.snap.nodes.values():
        labels = n.metadata.labels
        state = labels.get("nvidia.com/mig.config.state")
        if state in ("failed", "pending") or labels.get("nvidia.com/gpu.product", "").endswith("-MIG-INVALID"):
            out.append(n)
    return sorted(out, key=lambda n: n.metadata.name)


def _plugin_failing_on_mig_nodes(ctx: PodContext) -> bool:
    nodes = [n for n in ctx.snap.nodes.values()
             if n.metadata.labels.get("nvidia.com/mig.capable") == "true" or "nvidia.com/mig.strategy" in n.metadata.labels]
    return any(ctx.device_plugins.for_node(n.metadata.name).problems for n in nodes)


def _mig_layout_finding(s: _FitRun, r: str, nodes: list) -> Finding:
    evidence = []
    for n in nodes[:MAX_EVIDENCE_NODES]:
        lab = n.metadata.labels
        evidence.append(f"node/{n.metadata.name}: nvidia.com/mig.config={lab.get('nvidia.com/mig.config', 'unset')}, "
                        f"mig.config.state={lab.get('nvidia.com/mig.config.state', 'unset')}, "
                        f"gpu.product={lab.get('nvidia.com/gpu.product', '?')}")
    names = [n.metadata.name for n in nodes]
    return Finding("mig-profile-unavailable",
                   f"The pod asks for {r}, but the MIG layout of {_plural(len(nodes), 'GPU node')} did not apply, so "
                   f"{'it advertises' if len(nodes) == 1 else 'they advertise'} no GPU",
                   evidence=evidence + s.ev.get("insufficient-gpu", []), nodes=names, root_cause=True, unblocks=len(nodes),
                   disruption=DISRUPTION["mig-profile-unavailable"],
                   fixes=[Fix("Read the MIG manager's log; a MIG mode change needs the GPUs idle and often a GPU reset or "
                              "node reboot before the layout applies",
                              ["kubectl -n gpu-operator logs -l app=nvidia-mig-manager --tail=50",
                               f"kubectl drain {names[0]} --ignore-daemonsets --delete-emptydir-data"],
                              needs_judgement="draining evicts the node's pods: pick the moment")])


def _plugin_down(s: _FitRun) -> Iterable[Finding]:
    """GPU nodes whose device plugin is down or cannot initialise NVML."""
    ctx, fits, ev, emitted, sole = s.ctx, s.fits, s.ev, s.emitted, s.sole
    for code in ("nvml-init-failed", "device-plugin-not-running"):
        nodes = [f for f in fits if code in f.reasons]
        if not nodes:
            continue
        emitted.add(code)
        dp = ctx.device_plugins
        evidence = []
        for f in nodes[:MAX_EVIDENCE_NODES]:
            node = ctx.snap.nodes[f.name]
            gev = ctx.gpu_evidence(node)
            if gev is not None:
                evidence.append(f"node/{f.name} has GPUs ({gev.source}: {gev.raw}) but advertises no nvidia.com GPU resource")
            np_ = dp.for_node(f.name)
            evidence.extend(np_.problems[:2])
            evidence.extend(_log_evidence(np_.log, "nvml-init"))
        if not dp.known:
            evidence.append("device-plugin pods could not be listed: " + ctx.snap.gaps[DEVICE_PLUGINS].describe())
        evidence.extend(ev.get("insufficient-gpu", []))
        first = nodes[0].name
        np_ = dp.for_node(first)
        pod = np_.pods[0] if np_.pods else None
        if code == "nvml-init-failed":
            summary = (f"The device plugin cannot initialise NVML on {_plural(len(nodes), 'GPU node')} "
                       f"({', '.join(_names(nodes)[:3])}{', …' if len(nodes) > 3 else ''}), so no GPUs are advertised there")
            fixes = [Fix("Check the driver on the node (installed, loaded, matching the user-space library) and the container toolkit",
                         ([crash_log_command(pod)] if pod else [])
                         + [f"kubectl debug node/{first} -it --image=busybox -- chroot /host nvidia-smi",
                            "kubectl -n gpu-operator get pods -o wide -l app=nvidia-driver-daemonset"]),
                     Fix("Once the driver works, restart the device-plugin pod so it re-registers",
                         [f"kubectl -n {pod.metadata.namespace} delete pod {pod.metadata.name}"] if pod else [])]
        else:
            summary = (f"{_plural(len(nodes), 'GPU node')} advertise{'s' if len(nodes) == 1 else ''} no GPUs: "
                       "the device plugin is missing or not running there")
            labels = ctx.snap.nodes[first].metadata.labels
            fixes = []
            if labels.get("nvidia.com/gpu.deploy.device-plugin") == "false" or labels.get("nvidia.com/gpu.deploy.operands") == "false":
                fixes.append(Fix("The GPU Operator was told not to deploy the device plugin on this node; re-enable it",
                                 [f"kubectl label node {f.name} nvidia.com/gpu.deploy.device-plugin=true --overwrite" for f in nodes[:5]]))
            fixes.append(Fix("Find the device-plugin DaemonSet and why it has no Ready pod on these nodes",
                             ["kubectl get ds -A -l 'app in (nvidia-device-plugin-daemonset)' -o wide",
                              f"kubectl get pods -A -o wide --field-selector spec.nodeName={first} | grep -i device-plugin"]
                             + ([f"kubectl -n {pod.metadata.namespace} describe pod {pod.metadata.name}"] if pod else [])))
        yield Finding(code, summary, evidence=evidence, nodes=_names(nodes), root_cause=True,
                      unblocks=len(sole(code)), disruption=DISRUPTION[code], fixes=fixes)


def _unhealthy(s: _FitRun) -> Iterable[Finding]:
    """Unhealthy GPUs that make the difference."""
    ctx, fits, emitted, sole = s.ctx, s.fits, s.emitted, s.sole
    unhealthy = [f for f in fits if "gpu-unhealthy" in f.reasons]
    if unhealthy:
        emitted.add("gpu-unhealthy")
        evidence = _node_lines(unhealthy, "gpu-unhealthy")
        dp = ctx.device_plugins_of([f.name for f in unhealthy[:MAX_EVIDENCE_NODES]])
        for f in unhealthy[:MAX_EVIDENCE_NODES]:
            evidence.extend(_log_evidence(dp.for_node(f.name).log, "unhealthy"))
        np_ = dp.for_node(unhealthy[0].name)
        pod = np_.pods[0] if np_.pods else None
        yield Finding(
            "gpu-unhealthy",
            f"The device plugin marked GPUs unhealthy on {_plural(len(unhealthy), 'node')}; healthy they would fit the pod",
            evidence=evidence, nodes=_names(unhealthy), root_cause=True, unblocks=len(sole("gpu-unhealthy")),
            disruption=DISRUPTION["gpu-unhealthy"],
            fixes=[Fix("Check the GPUs (Xid in the kernel log, ECC), drain and reset or replace the faulty one; "
                       "the plugin keeps a device unhealthy until it restarts",
                       [f"kubectl describe node {unhealthy[0].name}",
                        f"kubectl debug node/{unhealthy[0].name} -it --image=busybox -- chroot /host nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER",
                        f"kubectl drain {unhealthy[0].name} --ignore-daemonsets --delete-emptydir-data"]
                       + ([f"kubectl -n {pod.metadata.namespace} delete pod {pod.metadata.name}   # after the GPU is healthy"] if pod else []))])


def _combination(s: _FitRun) -> Iterable[Finding]:
    """A pod that asks for several device resources (a GPU and an RDMA device, a MIG
    profile and an SR-IOV NIC): every one of them is free somewhere, but no node has
    them all. Says per node which resource fails, and names the combination that
    exists nowhere: a shortage on the nodes that advertise all of them, or, when no
    node advertises all of them, the resource the GPU nodes lack."""
    ctx, fits, devices = s.ctx, s.fits, s.devices
    if len(devices) < 2 or any(f.enough_devices for f in fits):
        return
    free_on = {r: [f for f in fits if f.free.get(r, 0.0) >= q] for r, q in devices.items()}
    if not all(free_on.values()):
        return   # one resource is short everywhere: the shortage (or not-advertised) step names it
    adv = ctx.advertised_sets
    complete = [f for f in fits if all(f.name in adv.get(r, ()) for r in devices)]
    gpus = [r for r in devices if r in ctx.gpu_requests] or list(devices)[:1]
    combo = " + ".join(_requested_text(ctx, r) for r in devices)

    def lacking(f: NodeFit) -> list[str]:
        return [r for r, q in devices.items() if f.free.get(r, 0.0) < q]

    def line(f: NodeFit) -> str:
        return f"node/{f.name}: " + "; ".join(
            f"{r} {format_quantity(r, f.free.get(r, 0.0))} free" if f.name in adv.get(r, ()) else f"{r} not advertised"
            for r in devices)

    with_gpu = [f for f in fits if all(f.free.get(r, 0.0) >= devices[r] for r in gpus)]
    if complete:
        short = Counter(r for f in complete for r in lacking(f)).most_common(1)[0][0]
        code = "mig-profile-unavailable" if is_mig(short) else "insufficient-gpu" if short in ctx.gpu_requests \
            else "insufficient-resource"
        summary = (f"No node has {combo} free: on the {_plural(len(complete), 'node')} that "
                   f"{'advertises' if len(complete) == 1 else 'advertise'} all of them {short} is short")
        shown = complete
    else:
        others = sorted({r for f in with_gpu for r in lacking(f)}) or [r for r in devices if r not in gpus]
        short = others[0]
        code = "insufficient-resource" if short not in ctx.gpu_requests else "insufficient-gpu"
        summary = (f"No node advertises both {' and '.join(gpus)} and {', '.join(others)}: the pod asks for {combo}, "
                   f"and the nodes with free {gpus[0]} lack {', '.join(others)}")
        shown = with_gpu
    s.emitted.add(code)
    evidence = [line(f) for f in shown[:MAX_EVIDENCE_NODES]]
    rest = [f for f in free_on[short] if f not in shown][:MAX_EVIDENCE_NODES]
    if rest:
        evidence.append(f"{short} is free on {', '.join(f.name for f in rest)}, which lack "
                        + ", ".join(sorted({r for f in rest for r in lacking(f)})))
    evidence += s.ev.get("insufficient-gpu", []) + s.ev.get("insufficient-resource", [])
    where = shown[0].name if shown else "NODE"
    fixes = [Fix(f"Make {short} available on the nodes that have the rest: its device plugin must run there "
                 f"(a DaemonSet nodeSelector or taint often keeps it off), or free it where it is advertised",
                 [f"kubectl describe node {where} | grep -A12 -E 'Allocatable|Allocated resources'",
                  "kubectl get ds -A -o wide"],
                 needs_judgement="where that device should be served is a cluster design choice"),
             Fix(f"Or, if the workload can run without {short}, drop it from the request",
                 _edit_resource(ctx, short, f"no {short}"), needs_judgement="whether the job needs it is your call")]
    yield Finding(code, summary, evidence=evidence, nodes=_names(shown)[:20], root_cause=True,
                  unblocks=0, disruption=DISRUPTION.get(code, 4), fixes=fixes)


def _shortage(s: _FitRun) -> Iterable[Finding]:
    """Shortage vs fragmentation, from the numbers."""
    ctx, fits, ev, devices, emitted, sole = s.ctx, s.fits, s.ev, s.devices, s.emitted, s.sole
    for r, q in devices.items():
        got = _pool(s, r, q)
        if got is None:
            continue
        advertisers, eligible, pool, frees = got
        total = sum(v for v, _ in frees)
        largest = frees[0][0] if frees else 0.0
        if largest >= q:
            continue
        if is_mig(r):
            code = "mig-profile-unavailable"
            summary = f"Every {r} slice is taken: {format_quantity(r, total)} free on {_plural(len(pool), 'node')}, the pod needs {format_quantity(r, q)}"
        elif total >= q:
            code = "gpu-fragmentation"
            summary = (f"{format_quantity(r, total)} {r} free across {_plural(sum(1 for v, _ in frees if v > 0), 'node')}, "
                       f"but no single node has {format_quantity(r, q)} free (largest: {format_quantity(r, largest)} on {frees[0][1]})")
        else:
            code = "insufficient-gpu"
            summary = ((f"Only {format_quantity(r, total)} {r} free" if total > 0 else f"No {r} free")
                       + f" on the {_plural(len(pool), 'node')} the pod may use; it needs {format_quantity(r, q)}")
        if code in emitted and code == "mig-profile-unavailable":
            continue
        emitted.add(code)
        histogram = Counter(int(v) for v, _ in frees)
        evidence = [f"the pod requests {_requested_text(ctx, r)}",
                    _free_per_node(r, frees),
                    "free-GPU histogram (free: nodes): " + ", ".join(f"{k}: {histogram[k]}" for k in sorted(histogram))]
        if not eligible:
            evidence.append("none of these nodes accepts the pod today (see the other findings); counted anyway")
        evidence += ev.get("insufficient-gpu", [])
        symptom = None
        for cause in ("device-plugin-not-running", "nvml-init-failed", "gpu-unhealthy"):
            if cause in emitted and sole(cause):
                symptom = cause
        severity = None
        freeing = _freed_by_preemption(ctx, r)
        if freeing is not None and freeing >= q:
            symptom, severity = "preemption-in-progress", Severity.INFO
            summary += f" (resolving: preemption on {ctx.pod.status.nominatedNodeName} frees {format_quantity(r, freeing)})"
        busy = [name for _, name in frees[:2]]   # frees is that very sort of the pool
        fixes = []
        if code == "gpu-fragmentation":
            fixes.append(Fix(f"Split the work into pods of at most {format_quantity(r, largest)} {r} each, "
                             "or free one node: see what holds the GPUs on the emptiest nodes",
                             [f"kubectl get pods -A -o wide --field-selector spec.nodeName={n},status.phase=Running" for n in busy]))
            fixes.append(Fix("Pack GPU pods tighter from now on: score nodes with MostAllocated for the GPU resource "
                             "(NodeResourcesFit scoringStrategy) so whole nodes stay free", [GPU_CAPACITY_CMD]))
        else:
            fixes.append(Fix("Wait for running GPU jobs to finish, lower the request, or add GPU nodes to the pool",
                             [GPU_CAPACITY_CMD, f"kubectl get pods -A -o wide --field-selector spec.nodeName={busy[0]}" if busy else "kubectl get nodes"]))
            if ctx.pod.spec.priorityClassName is None:
                fixes.append(Fix("If this work is more important than what runs, give it a higher PriorityClass so the scheduler can preempt",
                                 ["kubectl get priorityclass"]))
        also_blocked = {"node-unschedulable": "cordoned", "untolerated-taint": "tainted", "node-not-ready": "not Ready"}
        outside = [f for f in advertisers if f.free.get(r, 0.0) >= q and set(f.reasons) & set(SELECTOR_CODES)
                   and set(f.reasons) <= set(SELECTOR_CODES) | set(also_blocked)]
        if outside and eligible:   # the pod names a pool on purpose: room elsewhere is evidence, relaxing it a choice
            named = "; ".join(x for x in (
                ", ".join(f"{k}={v}" for k, v in ctx.pod.spec.nodeSelector.items()) and
                "nodeSelector " + ", ".join(f"{k}={v}" for k, v in ctx.pod.spec.nodeSelector.items()),
                "node affinity " + _affinity_text(ctx) if any("node-affinity-mismatch" in f.reasons for f in outside) else "") if x)
            evidence.append(f"the pod's {named} names a pool on purpose; {_plural(len(outside), 'node')} outside it "
                            f"{'has' if len(outside) == 1 else 'have'} room: "
                            + ", ".join(f"{f.name} ({format_quantity(r, f.free.get(r, 0.0))} free"
                                        + "".join(f", {also_blocked[c]}" for c in f.reasons if c in also_blocked) + ")"
                                        for f in outside[:4]))
            fixes += [Fix(fx.summary.replace("Fix", "If the work can run there, relax", 1) if fx.summary.startswith("Fix") else
                          f"If the work can run on {', '.join(_names(outside)[:2])}, relax the constraint: {fx.summary}",
                          fx.commands, needs_judgement="the pool the pod names is usually on purpose (GPU model, memory)")
                      for c in SELECTOR_CODES if any(c in f.reasons for f in outside)
                      for fx in _fixes(ctx, c, outside)[:1]]
        if symptom is None and _autoscaler_declined(ctx):
            symptom = "autoscaler-no-scale-up"   # short of capacity, and the autoscaler will not add it: that is the cause
        yield Finding(code, summary, evidence=evidence, nodes=_names(pool)[:20], root_cause=bool(eligible) and symptom is None,
                      unblocks=0, disruption=DISRUPTION.get(code, 4), symptom_of=symptom, fixes=fixes, severity=severity)


_PLACEMENT_SET = frozenset(PLACEMENT)


def _pool(s: _FitRun, r: str, q: float) -> Optional[tuple[list[NodeFit], list[NodeFit], list[NodeFit], list]]:
    """(the nodes that advertise ``r``, those of them no placement code keeps the pod
    off, the pool: those or else all of them, (free r, node) of the pool by most free
    first), or None when no node advertises ``r`` or one in the pool has ``q`` free.
    The pool and its free amounts are the same for the pod classes with one placement
    (``PodContext.pool_of``): there the pool's nodes are looked up, not found again."""
    fits = s.fits
    shared = s.ctx.pool_of(r, _pool_rows)
    advertising, eligible_at, frees = shared if shared is not None else \
        _pool_rows(fits, r, s.ctx.advertised_sets.get(r, ()))
    if not advertising or frees[0][0] >= q:
        return None
    advertisers = [fits[i] for i in advertising]
    eligible = [fits[i] for i in eligible_at]
    return advertisers, eligible, eligible or advertisers, frees


def _pool_rows(fits: list[NodeFit], r: str, advertising_set) -> tuple[list[int], list[int], list]:
    """``_pool``'s rows of a fit matrix: (positions of the nodes that advertise r, of
    those without a placement code, (free r, node) of the pool by most free first)."""
    advertising = [i for i, f in enumerate(fits) if f.name in advertising_set]
    eligible = [i for i in advertising if _PLACEMENT_SET.isdisjoint(fits[i].reasons)]
    frees = sorted(((fits[i].free.get(r, 0.0), fits[i].name) for i in (eligible or advertising)), reverse=True)
    return advertising, eligible, frees


def _constraints(s: _FitRun) -> Iterable[Finding]:
    """Constraints on the nodes that have room — only when no node takes the pod
    as it is (otherwise those constraints are not why it waits). A pod that asks
    for no GPU is never told to tolerate the taint that reserves GPU nodes."""
    ctx, fits, ev, devices = s.ctx, s.fits, s.ev, s.devices
    if any(f.fits for f in fits):
        return
    roomy = [f for f in fits if f.candidate and (f.enough_devices or not devices)]
    if not ctx.gpu_requests:   # not told to tolerate the GPU taint, unless only GPU nodes could take it
        others = [f for f in roomy if not (f.gpu_node and f.taints and all("gpu" in t.key.lower() for t in f.taints))]
        roomy = others if others or not any(f.reasons == ["untolerated-taint"] for f in roomy) else roomy
    pooled = [c for c in SELECTOR_CODES if _names_a_pool(s, c)]
    if pooled:   # the pod names a pool on purpose: nodes outside it are not why it waits (nor their taints)
        roomy = [f for f in roomy if not set(f.reasons) & set(pooled)]
    listed: dict[str, str] = {}
    order = PLACEMENT + NODE_RESOURCE
    for code in order:
        blocked = [f for f in roomy if code in f.reasons]
        if not blocked or (code in SELECTOR_CODES and _names_a_pool(s, code)):
            continue
        alone = [f for f in blocked if f.reasons == [code]]
        summary = _constraint_summary(ctx, code, blocked, len(alone), bool(devices))
        # A node blocked for several reasons is listed once, under its first
        # reason, with all of them; the other findings count it in their summary.
        shown = [f for f in (alone or blocked) if f.name not in listed]
        lines = []
        for f in shown[:MAX_EVIDENCE_NODES]:
            mine = f.details.get(code, [])[:2]
            others = [d for c in f.reasons if c != code and c in order for d in f.details.get(c, [])[:1]]
            if others and mine:
                mine = [mine[0] + "; also " + "; ".join(o.split(" ", 1)[1] if o.startswith("node/") else o for o in others)] + mine[1:]
            lines += mine
        if len(shown) > MAX_EVIDENCE_NODES:
            lines.append(f"… and {len(shown) - MAX_EVIDENCE_NODES} more nodes")
        elsewhere = Counter(listed[f.name] for f in (alone or blocked) if f.name in listed)
        for other, n in sorted(elsewhere.items()):
            lines.append(f"{_plural(n, 'node')} blocked for more than one reason: listed under {other}")
        listed.update((f.name, code) for f in shown)
        declined = code in NODE_RESOURCE and _autoscaler_declined(ctx)
        yield Finding(code, summary, evidence=lines + ev.get(code, []),
                      nodes=_names(alone or blocked), root_cause=bool(alone) and not declined, unblocks=len(alone),
                      disruption=DISRUPTION.get(code, 2), fixes=_fixes(ctx, code, alone or blocked),
                      symptom_of="autoscaler-no-scale-up" if declined else None)


def _state_taint_fixes(ctx: PodContext, code: str, fits: list[NodeFit]) -> list[Fix]:
    """A taint that is state (not ready yet, being removed, quarantined) is never
    tolerated: the fix is to finish or repair what set it."""
    seen: dict[str, list[str]] = {}
    for f in fits:
        for t, state in f.state_taints:
            if state.code == code:
                seen.setdefault(state.fix, []).append(f"{f.name} ({taint_text(t)}, set by {state.set_by})")
    return [Fix(f"Do not tolerate it: {fix} ({'; '.join(nodes[:3])})",
                [f"kubectl describe node {nodes[0].split(' ')[0]} | grep -iA5 -E 'taints|conditions'"])
            for fix, nodes in seen.items()]


SELECTOR_CODES = ("node-selector-mismatch", "node-affinity-mismatch")


def _autoscaler_declined(ctx: PodContext) -> bool:
    """The node autoscaler's latest word on the pod is that it will not scale up
    (NotTriggerScaleUp after any TriggeredScaleUp): in an autoscaled pool a capacity
    shortage is then the autoscaler's finding's symptom."""
    latest = None
    for e in ctx.events:
        if e.reason in ("NotTriggerScaleUp", "TriggeredScaleUp", "FailedScaleUp"):
            if latest is None or (e.last_seen or "") >= (latest.last_seen or ""):
                latest = e
    return latest is not None and latest.reason in ("NotTriggerScaleUp", "FailedScaleUp")


def _names_a_pool(s: _FitRun, code: str) -> bool:
    """A nodeSelector (or required node affinity) that some node the pod could use
    satisfies names a pool on purpose: the nodes it leaves out are not why the pod
    waits; what blocks it inside the pool is."""
    return any(f.candidate and code not in f.reasons and f.reasons
               and not set(f.reasons) & {"untolerated-taint", "node-not-ready", "node-unschedulable"}
               for f in s.fits)


def _freed_by_preemption(ctx: PodContext, resource: str) -> Optional[float]:
    """Free amount of ``resource`` on the nominated node once its terminating pods
    (the preemption victims) are gone; None when no preemption is under way."""
    node = ctx.pod.status.nominatedNodeName
    if not node:   # no node is named "": without building fit_by_name
        return None
    fit = ctx.fit_by_name.get(node)
    if fit is None:
        return None
    victims = [p for p in ctx.pods_by_node.get(node or "", []) if p.metadata.deletionTimestamp]
    if not victims:
        return None
    return fit.free.get(resource, 0.0) + sum(pod_requests(p).get(resource, 0.0) for p in victims)


def _lacking(fits: list[NodeFit], code: str) -> str:
    """The resources named in the nodes' details ("node/x ephemeral-storage: …")."""
    names = sorted({d.split(" ", 2)[1].rstrip(":") for f in fits for d in f.details.get(code, []) if d.count(" ") >= 2})
    return ", ".join(names) or "resources"


def _inter_pod_rules(blocked: list[NodeFit]) -> str:
    """Which inter-pod rules the nodes' details name (checks/interpod.py writes them)."""
    text = " ".join(d for f in blocked for d in f.details.get("pod-topology-constraint", []))
    rules = [rule for rule, words in (("the pod's required pod affinity", ("pod affinity",)),
                                      ("the pod's required anti-affinity", ("the pod's required anti-affinity",)),
                                      ("the required anti-affinity of pods already there", ("whose required anti-affinity",)),
                                      ("the pod's topology spread constraints", ("skew", "topology spread")))
             if any(w in text for w in words)]
    return " and ".join(rules) or "inter-pod rules"


def _constraint_summary(ctx: PodContext, code: str, blocked: list[NodeFit], alone: int, gpu: bool) -> str:
    n = len(blocked)
    room = "enough free GPUs" if gpu else "room for the pod"
    what = {
        "node-not-ready": "are NotReady or unreachable",
        "node-unschedulable": "are cordoned",
        "untolerated-taint": "carry a taint the pod does not tolerate",
        "node-selector-mismatch": "do not match the pod's nodeSelector",
        "node-affinity-mismatch": "do not match the pod's required node affinity",
        "pod-topology-constraint": f"are excluded by {_inter_pod_rules(blocked)}",
        "insufficient-cpu": "lack free CPU for the pod",
        "insufficient-memory": "lack free memory for the pod",
        "insufficient-resource": f"lack free {_lacking(blocked, code)} for the pod",
    }[code]
    tail = f"; fixing this alone frees {_plural(alone, 'node')}" if alone else ""
    verb_nodes = "node with " + room if n == 1 else "nodes with " + room
    return f"{n} {verb_nodes} {what.replace('are ', 'is ').replace('carry', 'carries').replace('do not', 'does not').replace('lack ', 'lacks ') if n == 1 else what}{tail}"
