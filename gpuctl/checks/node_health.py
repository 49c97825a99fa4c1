"""``diagnose node``: is this node's GPU stack healthy?

GPUs expected vs advertised vs allocatable vs allocated; the device plugin and the
GPU Operator's operand pods on the node; driver/CUDA against the node's pool; the
MIG configuration state; Xid, ECC and row-remapping evidence from every source;
and the GPU pods that run there."""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Iterable, Optional

from ..findings import Finding, Fix, Severity
from ..knowledge import catalog
from ..model.objects import Node, Pod
from ..model.requests import pod_requests
from ..model.snapshot import DEVICE_PLUGINS, EVENTS, LOGS, METRICS, PENDING_PODS, PODS, POOL, Snapshot
from .base import DataUnavailable, Note, check
from .memo import Memo
from .device_plugin import NodePlugin, device_plugin_state, pod_problems
from .gpu_node import Health, advertised, driver_info, expected_gpus, expected_mig_devices, node_health, pool_key

# GPU Operator operands, by pod label (GOP assets/state-*).
OPERANDS = {
    "app=nvidia-driver-daemonset": "driver",
    "app=nvidia-container-toolkit-daemonset": "container toolkit",
    "app=nvidia-operator-validator": "operator validator",
    "app=nvidia-dcgm-exporter": "DCGM exporter",
    "app=gpu-feature-discovery": "GPU feature discovery",
    "app=nvidia-mig-manager": "MIG manager",
}


class NodeContext:
    def __init__(self, snap: Snapshot, node: Node, memo: Optional[Memo] = None):
        self.snap = snap
        self.node = node
        self.memo = memo if memo is not None else Memo()

    @property
    def name(self) -> str:
        return self.node.metadata.name

    ns = ""   # engine error messages name "pod {ns}/{name}"; nodes have no namespace

    @cached_property
    def pods(self) -> list[Pod]:
        return sorted(self.snap.pods_on(self.name), key=lambda p: p.key)

    @cached_property
    def gpu_resources(self) -> list[str]:
        res = [r for r in dict.fromkeys([*self.node.status.capacity, *self.node.status.allocatable]) if catalog.is_gpu_resource(r)]
        return res or ["nvidia.com/gpu"]

    @cached_property
    def plugin(self) -> NodePlugin:
        return device_plugin_state(self.snap, [self.node]).for_node(self.name)

    @cached_property
    def health(self) -> Health:
        return node_health(self.snap, self.name, self.memo)

    @cached_property
    def has_gpus(self) -> bool:
        """GPU labels, GPUs advertised, or a device-plugin pod on the node (a node
        without labels whose plugin cannot start still has GPUs)."""
        return catalog.node_has_gpus(self.node.metadata.labels) is not None or any(
            advertised(self.node, r)[0] > 0 for r in self.gpu_resources) or bool(self.plugin_pods)

    @cached_property
    def plugin_pods(self) -> list[Pod]:
        from .device_plugin import is_device_plugin_pod

        return [p for p in self.pods if not p.terminated and is_device_plugin_pod(p)]

    def allocated(self, resource: str) -> float:
        return sum(pod_requests(p).get(resource, 0.0) for p in self.pods)

    def operand_pods(self) -> dict[str, list[Pod]]:
        out: dict[str, list[Pod]] = {}
        for p in self.pods:
            for sel, name in OPERANDS.items():
                k, _, v = sel.partition("=")
                if p.metadata.labels.get(k) == v:
                    out.setdefault(name, []).append(p)
        return out


def _critical_xids(ctx: NodeContext) -> list:
    from ..knowledge.gpu_health import xid_info

    return [x for x in ctx.health.xids if (xid_info(x.xid) and xid_info(x.xid).severity == "critical")]


def _gpu_node(ctx: NodeContext) -> bool:
    return ctx.has_gpus


@check("node-ready", target="node", also=["node-not-ready"])
def node_ready(ctx: NodeContext) -> Iterable[Finding]:
    """The kubelet's Ready condition: a node that is not Ready runs nothing new."""
    ready = ctx.node.condition("Ready")
    if ready is None or ready.status != "True":
        yield Finding("node-not-ready", f"{ctx.name} is not Ready ({ready.reason if ready else 'no Ready condition'})",
                      evidence=[f"node/{ctx.name} Ready={ready.status if ready else 'missing'}: {ready.message if ready else ''}"],
                      nodes=[ctx.name], root_cause=True)
    else:
        yield Note(f"Ready since {ready.lastTransitionTime}" if getattr(ready, "lastTransitionTime", None) else "Ready")


@check("gpu-count", target="node", codes=["gpu-count-mismatch"], reads=(LOGS, METRICS), applies=_gpu_node, essential=True)
def gpu_count(ctx: NodeContext) -> Iterable[Finding]:
    """A node advertising fewer GPUs than its SKU, GFD count (times sharing
    replicas) or identical nodes say it has: a GPU fell off the bus or a driver
    failed on one card. On MIG nodes, fewer devices of a profile than GFD counts:
    the device plugin did not pick up the current MIG layout, or a GPU's instances
    are gone."""
    exp = expected_gpus(ctx.snap, ctx.node)
    if exp is not None and exp.count is not None:
        cap, alloc = advertised(ctx.node, exp.resource)
        if cap == 0 and alloc == 0:
            return   # nothing advertised at all: the device plugin check explains it
        if cap < exp.count:
            if exp.mig:
                yield _mig_shortfall(ctx, [(exp, cap, alloc)])
                return
            evidence = [f"expected {exp.count} {exp.resource}: {exp.source}", f"node/{ctx.name} capacity {cap:g}, allocatable {alloc:g}"]
            evidence += [f"{x.source}: {x.line}" for x in ctx.health.xids if x.xid == 79][:3]
            yield Finding("gpu-count-mismatch", f"{ctx.name} advertises {cap:g} of the {exp.count} GPUs it should have",
                          evidence=evidence, nodes=[ctx.name], root_cause=True, disruption=3,
                          fixes=[Fix("Find the missing GPU (nvidia-smi, kernel log for 'fallen off the bus'); drain and reboot the node, "
                                     "and replace the card if it stays missing",
                                     [f"kubectl debug node/{ctx.name} -it --image=busybox -- chroot /host nvidia-smi -L",
                                      f"kubectl drain {ctx.name} --ignore-daemonsets --delete-emptydir-data"])])
        return
    profiles = expected_mig_devices(ctx.node)
    if not profiles or not any(advertised(ctx.node, e.resource)[0] > 0 for e in profiles):
        return   # no MIG resource advertised at all: the device plugin check explains it
    short = [(e, *advertised(ctx.node, e.resource)) for e in profiles]
    short = [(e, cap, alloc) for e, cap, alloc in short if e.count is not None and cap < e.count]
    if short:
        yield _mig_shortfall(ctx, short)


def _mig_shortfall(ctx: NodeContext, short: list) -> Finding:
    labels = ctx.node.metadata.labels
    state = labels.get("nvidia.com/mig.config.state")
    evidence = [f"expected {e.count} {e.resource}: {e.source}; node/{ctx.name} capacity {cap:g}, allocatable {alloc:g}"
                for e, cap, alloc in short]
    evidence.append(f"nvidia.com/mig.config={labels.get('nvidia.com/mig.config', 'unset')}, "
                    f"nvidia.com/mig.config.state={state or 'unset'}")
    evidence += [f"{x.source}: {x.line}" for x in ctx.health.xids if x.xid == 79][:3]
    first = short[0]
    more = f" (and {len(short) - 1} more MIG profile(s))" if len(short) > 1 else ""
    plugin = ctx.plugin.pods[0] if ctx.plugin.pods else None
    restart = (f"kubectl -n {plugin.metadata.namespace} delete pod {plugin.metadata.name}" if plugin else
               f"kubectl get pods -A -o wide --field-selector spec.nodeName={ctx.name} | grep -i device-plugin")
    in_progress = state in ("pending", "rebooting")
    return Finding(
        "gpu-count-mismatch",
        f"{ctx.name} advertises {first[1]:g} of the {first[0].count} {first[0].resource} MIG devices GFD counts{more}"
        + ("; the MIG manager is still applying the layout" if in_progress else ""),
        evidence=evidence, nodes=[ctx.name], root_cause=not in_progress, disruption=2,
        fixes=[Fix("Restart the device plugin on the node so it re-reads the MIG layout; if the count stays short, "
                   "a GPU or its MIG instances are missing (nvidia-smi -L on the node)",
                   [restart, f"kubectl debug node/{ctx.name} -it --image=busybox -- chroot /host nvidia-smi -L"])])


@check("gpu-allocatable", target="node", codes=["gpu-unhealthy"], also=["xid-error"],
       reads=(DEVICE_PLUGINS, LOGS, METRICS), applies=_gpu_node, essential=True)
def gpu_allocatable(ctx: NodeContext) -> Iterable[Finding]:
    """capacity > allocatable on a GPU resource: the device plugin marked devices
    unhealthy (it keeps them so until it restarts)."""
    for r in ctx.gpu_resources:
        cap, alloc = advertised(ctx.node, r)
        if cap > alloc:
            evidence = [f"node/{ctx.name} {r}: capacity {cap:g}, allocatable {alloc:g} ({cap - alloc:g} unhealthy)"]
            evidence += [f"log: {lf.line}" for lf in ctx.plugin.unhealthy_lines[-3:]]
            evidence += ctx.health.unhealthy[:3]
            pod = ctx.plugin.pods[0] if ctx.plugin.pods else None
            cause = "xid-error" if _critical_xids(ctx) else None
            yield Finding("gpu-unhealthy", f"The device plugin marked {cap - alloc:g} {r} on {ctx.name} unhealthy",
                          evidence=evidence, nodes=[ctx.name], root_cause=cause is None, disruption=3, symptom_of=cause,
                          fixes=[Fix("Find the Xid behind it (below, or the kernel log); reset the GPU or reboot, then restart the "
                                     "device-plugin pod: it never marks a device healthy again by itself",
                                     [f"kubectl drain {ctx.name} --ignore-daemonsets --delete-emptydir-data"]
                                     + ([f"kubectl -n {pod.metadata.namespace} delete pod {pod.metadata.name}"] if pod else []))])
    if ctx.health.unhealthy and not any(advertised(ctx.node, r)[0] > advertised(ctx.node, r)[1] for r in ctx.gpu_resources):
        ctrl = [u for u in ctx.health.unhealthy if u.startswith("node ")]
        if ctrl:
            cause = "xid-error" if _critical_xids(ctx) else None
            yield Finding("gpu-unhealthy", f"A health controller reports a GPU problem on {ctx.name}", evidence=ctrl[:4],
                          nodes=[ctx.name], root_cause=cause is None, symptom_of=cause, disruption=3,
                          fixes=[Fix("Check the GPUs and the health controller's reason before returning the node to service",
                                     [f"kubectl describe node {ctx.name}"])])


@check("device-plugin", target="node", also=["device-plugin-not-running", "nvml-init-failed"], needs=(DEVICE_PLUGINS,), reads=(LOGS,), applies=_gpu_node, essential=True)
def device_plugin(ctx: NodeContext) -> Iterable[Finding]:
    """The node's device-plugin pod: missing, not Ready, crash-looping, stuck in
    toolkit validation, or unable to initialise NVML."""
    p = ctx.plugin
    nothing = all(advertised(ctx.node, r)[0] == 0 for r in ctx.gpu_resources)
    if p.nvml_failed:
        pod = p.pods[0] if p.pods else None
        yield Finding("nvml-init-failed", f"The device plugin on {ctx.name} cannot initialise NVML",
                      evidence=p.problems[:3] + [f"log: {lf.line}" for lf in p.log if lf.kind == "nvml-init"][-3:],
                      nodes=[ctx.name], root_cause=True, disruption=3,
                      fixes=[Fix("Check the driver (installed, loaded, matching its user-space library) and the toolkit",
                                 [f"kubectl debug node/{ctx.name} -it --image=busybox -- chroot /host nvidia-smi"]
                                 + ([f"kubectl -n {pod.metadata.namespace} logs {pod.metadata.name} --all-containers --previous --tail=50"] if pod else []))])
        return
    if p.problems or (nothing and not p.pods):
        evidence = p.problems[:4] or [f"node/{ctx.name}: no device-plugin pod runs on it"]
        if nothing:
            evidence.append(f"node/{ctx.name} advertises no GPU resource")
        labels = ctx.node.metadata.labels
        fixes = []
        if labels.get("nvidia.com/gpu.deploy.device-plugin") == "false":
            fixes.append(Fix("The GPU Operator was told not to deploy the device plugin here; re-enable it",
                             [f"kubectl label node {ctx.name} nvidia.com/gpu.deploy.device-plugin=true --overwrite"]))
        fixes.append(Fix("Find out why the device-plugin pod is missing or failing on this node",
                         [f"kubectl get pods -A -o wide --field-selector spec.nodeName={ctx.name} | grep -i device-plugin",
                          "kubectl get ds -A | grep -i device-plugin"]))
        yield Finding("device-plugin-not-running", f"The device plugin is {'missing' if not p.pods else 'not running well'} on {ctx.name}"
                      + ("; the node advertises no GPUs" if nothing else ""), evidence=evidence, nodes=[ctx.name],
                      root_cause=True, disruption=2, fixes=fixes, severity=None if nothing else Severity.WARNING)
        return
    if nothing and p.pods:   # the plugin runs but serves nothing: usually no driver on the node yet
        drivers = [q for q in ctx.pods if q not in p.pods and ("driver" in q.metadata.name or "nvidia" in q.metadata.name)
                   and pod_problems(q)]
        evidence = [f"node/{ctx.name} advertises no GPU resource although its device-plugin pod "
                    f"{p.pods[0].metadata.namespace}/{p.pods[0].metadata.name} is Running"]
        evidence += [x for q in drivers[:3] for x in pod_problems(q)]
        yield Finding("device-plugin-not-running",
                      f"The device plugin on {ctx.name} serves no GPUs"
                      + (f": {drivers[0].metadata.name} (the driver) is not running" if drivers else ""),
                      evidence=evidence, nodes=[ctx.name], root_cause=True, disruption=2,
                      fixes=[Fix("Find out why the driver is not installed or loaded on the node (its installer pod's log), "
                                 "then restart the device-plugin pod",
                                 ([f"kubectl -n {drivers[0].metadata.namespace} logs {drivers[0].metadata.name} --all-containers --tail=50"]
                                  if drivers else []) + [f"kubectl debug node/{ctx.name} -it --image=busybox -- chroot /host nvidia-smi"])])
        return
    line = plugin_log_line(ctx.snap, p)
    if line:
        yield Note(line)


def plugin_log_line(snap: Snapshot, p: NodePlugin) -> Optional[str]:
    """The device-plugin log as evidence: read and clean ("no Xid/NVML errors in
    N lines of POD"), read with problem lines (the xid and gpu-allocatable checks
    report them), or not read (why, when the live read failed)."""
    if p.logs_read:
        bad = [f for f in p.log if f.kind != "nvml-init"]
        if not bad:
            return f"device-plugin log: no Xid/NVML errors in {p.logs_text()}"
        return f"device-plugin log: {len(bad)} Xid/unhealthy line(s) in {p.logs_text()}"
    if not p.pods:
        return None
    pod = p.pods[0]
    ref = f"{pod.metadata.namespace}/{pod.metadata.name}"
    gaps = [g for key, g in snap.log_gaps.items() if key.startswith(ref + "/")]
    if gaps:
        return f"device-plugin log of {ref} could not be read: {gaps[0].detail or gaps[0].reason}"
    return f"device-plugin log of {ref} was not collected"


@check("gpu-operator-operands", target="node", also=["device-plugin-not-running", "nvml-init-failed"], needs=(PODS,), applies=_gpu_node)
def operands(ctx: NodeContext) -> Iterable[Finding]:
    """The GPU Operator's operand pods on the node (driver, toolkit, validator,
    DCGM, GFD, MIG manager): a failing driver or toolkit pod explains most of the
    rest. Reported as evidence; the node's state decides the code."""
    problems = []
    for name, pods in sorted(ctx.operand_pods().items()):
        for p in pods:
            problems += [f"{name}: {line}" for line in pod_problems(p)]
    if problems:
        raise_if = [ln for ln in problems if ln.startswith(("driver", "container toolkit"))]
        if raise_if:
            yield Finding("nvml-init-failed" if any("driver" in ln for ln in raise_if) else "device-plugin-not-running",
                          f"GPU Operator operands are failing on {ctx.name}", evidence=problems[:6], nodes=[ctx.name],
                          root_cause=True, disruption=3,
                          fixes=[Fix("Read the failing operand's log", [f"kubectl get pods -A -o wide --field-selector spec.nodeName={ctx.name}"])])


@check("xid", target="node", codes=["xid-error"], reads=(LOGS, METRICS, EVENTS), applies=_gpu_node)
def xid(ctx: NodeContext) -> Iterable[Finding]:
    """Xid errors, each with its catalog meaning and the action it calls for."""
    from ..knowledge.gpu_health import needs_no_hardware_action, xid_info

    if not ctx.health.sources and not ctx.health.xids:
        raise DataUnavailable("no Xid source: no device-plugin log, DCGM metrics, probe or health-controller condition for "
                              + ctx.name + (f" ({'; '.join(ctx.health.gaps)})" if ctx.health.gaps else ""))
    by_xid: dict[int, list] = {}
    quiet: dict[int, list] = {}   # application-class, or the health controller recommends no action
    for x in ctx.health.xids:
        (quiet if needs_no_hardware_action(x.xid, x.action) else by_xid).setdefault(x.xid, []).append(x)
    for n, events in sorted(quiet.items()):
        info = xid_info(n)
        said = sorted({f"the health controller recommends {e.action}" for e in events if e.action})
        yield Note(f"Xid {n}" + (f" ({info.description})" if info else "") + f" on GPU {', '.join(sorted({e.gpu for e in events}))}"
                   f" ({', '.join(sorted({e.source for e in events}))}): an application's error, no hardware action"
                   + (f" ({'; '.join(said)})" if said else " (NVIDIA's Xid catalog: " + (info.action if info else "restart the application") + ")")
                   + ": not a node fault")
    worst: Optional[tuple] = None
    evidence = []
    for n, events in sorted(by_xid.items()):
        info = xid_info(n)
        gpus = sorted({e.gpu for e in events})
        what = f"Xid {n}" + (f" {info.mnemonic}: {info.description} → {info.action}" if info else " (not in the catalog)")
        evidence.append(f"{what} (GPU {', '.join(gpus)}; seen in {', '.join(sorted({e.source for e in events}))})")
        evidence += [f"  {e.line}" for e in events[-2:]]
        sev = info.severity if info else "warning"
        if worst is None or (sev == "critical" and worst[1] != "critical"):
            worst = (n, sev, info)
    if worst is None:
        if quiet:
            return
        yield Note("no Xid in " + "; ".join(ctx.health.read + [s for s in ctx.health.sources if s != "device-plugin log"]))
        return
    n, sev, info = worst
    yield Finding("xid-error", f"Xid {n} on {ctx.name}" + (f": {info.description}; {info.action}" if info else ""),
                  evidence=evidence[:10], nodes=[ctx.name], root_cause=True, disruption=3,
                  severity=Severity.CRITICAL if sev == "critical" else Severity.WARNING,
                  fixes=[Fix(info.action if info else "Look the Xid up in NVIDIA's Xid catalog",
                             [f"kubectl drain {ctx.name} --ignore-daemonsets --delete-emptydir-data",
                              f"kubectl debug node/{ctx.name} -it --image=busybox -- chroot /host nvidia-smi -q -d ECC,ROW_REMAPPER"])])


@check("ecc", target="node", codes=["ecc-uncorrectable"], reads=(LOGS, METRICS), applies=_gpu_node)
def ecc(ctx: NodeContext) -> Iterable[Finding]:
    """Uncorrectable ECC errors, pending page retirement or row remapping, or a
    row-remapping failure."""
    if ctx.health.ecc:
        yield Finding("ecc-uncorrectable", f"Uncorrectable memory errors on {ctx.name}'s GPUs", evidence=ctx.health.ecc[:6],
                      nodes=[ctx.name], root_cause=True, disruption=3,
                      fixes=[Fix("Drain the node and reset the GPU (pending remaps/retirements apply at reset); "
                                 "a remapping failure or recurring errors mean the card should be replaced",
                                 [f"kubectl drain {ctx.name} --ignore-daemonsets --delete-emptydir-data",
                                  f"kubectl debug node/{ctx.name} -it --image=busybox -- chroot /host nvidia-smi -r"])])


@check("driver-drift", target="node", reads=(POOL,), applies=_gpu_node)
def driver_drift(ctx: NodeContext) -> Iterable[Finding]:
    """The node's driver against its pool (same instance type or GPU product):
    reported in the check's detail; a lagging node runs fewer images."""
    info = driver_info(ctx.snap, ctx.name, ctx.memo)
    if info is None:
        raise DataUnavailable(f"no driver version for {ctx.name} (no GFD cuda labels, no probe)")
    key = pool_key(ctx.node)
    peers = [n for n in ctx.snap.nodes.values() if n is not ctx.node and key and pool_key(n) == key]
    versions = Counter(i.driver for i in (driver_info(ctx.snap, n.metadata.name, ctx.memo) for n in peers) if i and i.driver)
    if versions:
        common, _ = versions.most_common(1)[0]
        if info.driver and info.driver != common:
            yield Note(f"{ctx.name}: {info.describe()}; most of its pool ({key}) runs driver {common}")
            return
    yield Note(f"{ctx.name}: {info.describe()}" + (f"; pool {key} agrees" if versions else ""))


@check("mig", target="node", also=["mig-profile-unavailable"], applies=lambda ctx: ctx.node.metadata.labels.get("nvidia.com/mig.capable") == "true"
       or "nvidia.com/mig.config" in ctx.node.metadata.labels)
def mig(ctx: NodeContext) -> Iterable[Finding]:
    """The MIG manager's state for the node's requested MIG layout."""
    labels = ctx.node.metadata.labels
    state = labels.get("nvidia.com/mig.config.state")
    config = labels.get("nvidia.com/mig.config")
    detail = f"mig.config={config or 'unset'}, mig.config.state={state or 'unset'}, strategy={labels.get('nvidia.com/mig.strategy', 'none')}"
    if state == "failed":
        yield Finding("mig-profile-unavailable", f"The MIG manager failed to apply {config} on {ctx.name}",
                      evidence=[detail], nodes=[ctx.name], root_cause=True, disruption=3,
                      fixes=[Fix("Read the MIG manager's log; GPUs must be idle for a repartition",
                                 [f"kubectl get pods -A -o wide --field-selector spec.nodeName={ctx.name} | grep mig-manager"])])
    yield Note(detail)


def cordon_origin(snap: Snapshot, node: Node) -> list[str]:
    """When and by whom the node was cordoned, from what the cluster kept: the
    field manager that owns spec.unschedulable (a live read; `kubectl get -o json`
    leaves managedFields out), the node.kubernetes.io/unschedulable taint's
    timeAdded, and the kubelet's NodeNotSchedulable event (kept an hour by default).
    `kubectl cordon` sends no field manager, so the API server records the client's
    user-agent name: "kubectl"."""
    from .context import human_age

    def when(t: str) -> str:
        age = snap.age_seconds(t)
        return f"{t}, {human_age(age)} ago" if age is not None else t

    out = []
    for m in node.metadata.managedFields:
        if m.owns_unschedulable:
            out.append(f"cordoned by {m.manager or 'an unnamed client'} (managedFields"
                       + (f"; its last write {when(m.time)})" if m.time else ")"))
    for t in node.spec.taints:
        if t.key == "node.kubernetes.io/unschedulable" and t.timeAdded:
            out.append(f"unschedulable taint added {when(t.timeAdded)}")
    for e in reversed(snap.events_for("Node", None, node.metadata.name)):
        if e.reason == "NodeNotSchedulable" or "status is now: NodeNotSchedulable" in (e.message or ""):
            who = e.component or "?"
            out.append(f"{who} event NodeNotSchedulable {when(e.last_seen)}" if e.last_seen
                       else f"{who} event NodeNotSchedulable")
            break
    return out


def waiting_pods(snap: Snapshot, node: Node, memo: Optional[Memo] = None) -> list[tuple[Pod, dict[str, float]]]:
    """Pending, unbound GPU pods whose only obstacle on this node is the cordon:
    each would fit here once it is uncordoned (same fit as `diagnose pod`), with
    the GPUs it requests."""
    from .context import PodContext

    out = []
    for p in sorted(snap.pods.values(), key=lambda p: p.key):
        if p.phase != "Pending" or p.spec.nodeName or p.metadata.deletionTimestamp:
            continue
        ctx = PodContext(snap, p, memo)
        if not ctx.gpu_requests:
            continue
        fit = ctx.fit_on(node)
        if fit is not None and fit.reasons == ["node-unschedulable"]:
            out.append((p, ctx.gpu_requests))
    return out


def _pending_scope(snap: Snapshot) -> Optional[str]:
    """Why the Pending pods seen may not be all of them, or None."""
    gap = snap.gaps.get("pending-pods")
    if gap is not None:
        return f"Pending pods could not be listed ({gap.detail or gap.reason})"
    if snap.namespaces is not None:
        return f"Pending pods seen in namespace(s) {', '.join(snap.namespaces)} only"
    return None


@check("cordon", target="node", also=["node-unschedulable"], reads=(EVENTS, PENDING_PODS), applies=lambda ctx: bool(ctx.node.spec.unschedulable))
def cordon(ctx: NodeContext) -> Iterable[Finding]:
    """A cordoned GPU node: who cordoned it and when, if the cluster says, and the
    Pending GPU pods that would run on it once uncordoned."""
    origin = cordon_origin(ctx.snap, ctx.node) or ["no event, taint time or field manager says when or by whom"]
    waiting = waiting_pods(ctx.snap, ctx.node, ctx.memo)
    scope = _pending_scope(ctx.snap)
    if not waiting:
        yield Note(f"cordoned; {'; '.join(origin)}; "
                   + (scope if scope and ctx.snap.gaps.get("pending-pods") else
                      "no Pending GPU pod waits for it" + (f" ({scope})" if scope else "")))
        return
    names = [f"{p.metadata.namespace}/{p.metadata.name} ("
             + ", ".join(f"{q:g} GPU" if r == "nvidia.com/gpu" else f"{q:g} {r}" for r, q in gpus.items()) + ")"
             for p, gpus in waiting]
    shown = ", ".join(names[:6]) + (f", and {len(names) - 6} more" if len(names) > 6 else "")
    yield Finding("node-unschedulable",
                  f"{ctx.name} is cordoned while {len(waiting)} Pending GPU pod(s) would fit on it",
                  evidence=origin + [f"{'each ' if len(names) > 1 else ''}would fit once uncordoned: {shown}"] + ([scope] if scope else []),
                  nodes=[ctx.name], root_cause=True, disruption=1, severity=Severity.WARNING,
                  fixes=[Fix("If the maintenance is over, uncordon it",
                             [f"kubectl describe node {ctx.name} | grep -iA3 -E 'taints|unschedulable'",
                              f"kubectl uncordon {ctx.name}"])])
