"""Why nobody serves a well-known GPU resource.

A resource name that a GPU vendor's device plugin serves (``nvidia.com/gpu``,
``amd.com/gpu``, ``gpu.intel.com/i915``, …: gpuctl/knowledge/device_plugins.yaml) is
never a typo. When no node advertises it, the question is why the plugin is not
serving it: no plugin deployed; its DaemonSet schedules no pod on the GPU nodes
because a taint, nodeSelector or affinity keeps it off them; its pod crash-loops or
is not ready; or it runs but its log shows it could not load NVML.

The same holds for the vendor-fixed network and accelerator resources GPU jobs request
next to their GPUs (``vpc.amazonaws.com/efa``: device_plugins.yaml served_resources).
Their plugins (``other_device_plugins``: EFA, Neuron, RDMA, SR-IOV) are looked up by
their own selectors, never taken for a GPU device plugin, and the nodes they should
serve (a node label such as ``vpc.amazonaws.com/efa.present=true``) are counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..findings import Fix
from ..knowledge import catalog
from ..model.objects import GenericObject, Node, Pod
from ..model.snapshot import DAEMONSETS
from .context import PodContext
from .device_plugin import classify_log, is_device_plugin_pod, pod_problems

MAX_LINES = 8


@dataclass
class Serving:
    """What the snapshot shows of the plugins that could serve a resource."""

    resource: str
    vendor: str
    kinds: list[catalog.DevicePluginKind]
    pods: list[Pod] = field(default_factory=list)
    daemonsets: list[GenericObject] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    nvml: list[str] = field(default_factory=list)      # log lines: the plugin could not load NVML
    unhealthy: list[str] = field(default_factory=list)  # log lines: the plugin marked devices unhealthy
    blocked: list[tuple[str, str]] = field(default_factory=list)   # (DaemonSet ns/name, what keeps it off the nodes)


serves = catalog.plugin_serves
well_known = catalog.well_known_gpu_resource


def serving(ctx: PodContext, resource: str) -> Serving:
    kinds = catalog.serving_kinds(resource)
    other = bool(kinds) and not any(k in catalog.device_plugin_selectors() for k in kinds)   # a NIC / non-GPU plugin
    vendor = (kinds[0].vendor if kinds else None) or catalog.served_resource_vendor(resource) or resource.split("/", 1)[0]
    s = Serving(resource, vendor, kinds)
    s.evidence.append(f"no node advertises {resource}, a resource the {vendor} device plugin serves: "
                      "a well-known name, not a typo")
    if other:
        s.pods = sorted((p for p in ctx.snap.pods.values() if not p.terminated and _of_other_kinds(p, kinds)),
                        key=lambda p: p.key)
        s.daemonsets = [d for d in ctx.snap.objects("DaemonSet") if _is_other_daemonset(d, kinds)]
        s.evidence += _served_nodes(ctx, kinds, s.pods)
    else:
        s.pods = sorted((p for p in ctx.snap.pods.values() if not p.terminated and is_device_plugin_pod(p)
                         and _of_kinds(p.metadata.labels, kinds)), key=lambda p: p.key)
        s.daemonsets = [d for d in ctx.snap.objects("DaemonSet") if _is_plugin_daemonset(d, kinds)]
    for d in s.daemonsets:
        _daemonset_lines(ctx, d, s)
    for p in s.pods[:MAX_LINES]:
        problems = pod_problems(p)
        s.evidence += problems or [f"pod/{p.metadata.name} -n {p.metadata.namespace} on {p.spec.nodeName}: Running"]
        for c in p.spec.containers:
            for previous in (False, True):
                text = ctx.snap.logs.get(p.metadata.namespace or "", p.metadata.name, c.name, previous)
                for f in classify_log(text or ""):
                    if f.kind == "nvml-init" and f.line not in s.nvml:
                        s.nvml.append(f.line)
                    elif f.kind in ("unhealthy", "xid") and f.line not in s.unhealthy:
                        s.unhealthy.append(f.line)
    if s.nvml:
        s.evidence += [f"log: {line}" for line in s.nvml[:3]]
    elif s.unhealthy:
        s.evidence += [f"log: {line}" for line in s.unhealthy[-3:]]
    if not s.pods and not s.daemonsets and DAEMONSETS not in ctx.snap.gaps:
        looked = ", ".join(sorted({k.label_selector for k in kinds})) or "the known device-plugin labels"
        s.evidence.append(f"no device-plugin pod or DaemonSet for {resource} found (pods labelled {looked})")
    return s


def scaled_to_zero(ctx: PodContext, s: Serving) -> bool:
    """No node shows a GPU, no plugin pod or DaemonSet exists, and the cluster
    autoscaler has spoken about the pod: a GPU pool at zero nodes, not a plugin
    problem (the autoscaler check says whether and why it scales up)."""
    if s.pods or s.daemonsets or any(ctx.gpu_evidence(n) is not None for n in ctx.snap.nodes.values()):
        return False
    return any(e.reason in ("NotTriggerScaleUp", "TriggeredScaleUp", "FailedScaleUp") for e in ctx.events)


def _of_other_kinds(p: Pod, kinds: list[catalog.DevicePluginKind]) -> bool:
    ns = p.metadata.namespace
    return any(catalog.kind_selects(k, p.metadata.labels) and (not k.namespaces or ns in k.namespaces) for k in kinds)


def _is_other_daemonset(d: GenericObject, kinds: list[catalog.DevicePluginKind]) -> bool:
    tmpl = (((d.spec or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
    name = d.metadata.name or ""
    return any((tmpl and catalog.kind_selects(k, tmpl)) or (k.daemonset and k.daemonset in name) for k in kinds)


def _served_nodes(ctx: PodContext, kinds: list[catalog.DevicePluginKind], pods: list[Pod]) -> list[str]:
    """Where the plugin should serve: the nodes its kind's node label marks (EFA nodes),
    and how many of them run a plugin pod that is not ready."""
    out = []
    for k in kinds:
        if not k.node_label or "=" not in k.node_label:
            continue
        key, _, value = k.node_label.partition("=")
        nodes = sorted(n.metadata.name for n in ctx.snap.nodes.values() if n.metadata.labels.get(key) == value)
        if not nodes:
            continue
        on = {p.spec.nodeName for p in pods if p.spec.nodeName}
        bad = {p.spec.nodeName for p in pods if p.spec.nodeName and pod_problems(p)}
        out.append(f"{len(nodes)} node(s) labelled {k.node_label} should advertise it ({k.name}): "
                   f"{len(on & set(nodes))} run a {k.name} pod, {len(bad & set(nodes))} of them not ready"
                   + (f", e.g. node/{nodes[0]}" if nodes else ""))
    return out


def _of_kinds(labels: dict[str, str], kinds: list[catalog.DevicePluginKind]) -> bool:
    return not kinds or any(catalog.kind_selects(k, labels) for k in kinds)


def _is_plugin_daemonset(d: GenericObject, kinds: list[catalog.DevicePluginKind]) -> bool:
    tmpl = (((d.spec or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
    if catalog.labels_mark_device_plugin(tmpl, d.metadata.namespace):
        return _of_kinds(tmpl, kinds)
    name = d.metadata.name or ""
    return "device-plugin" in name and any((k.daemonset or "").replace("<release>-", "") in name for k in kinds)


def _daemonset_lines(ctx: PodContext, d: GenericObject, s: Serving) -> None:
    from ..model.matching import node_selector_mismatches, untolerated_taints
    from ..model.objects import Toleration

    status = d.status or {}
    ref = f"daemonset/{d.metadata.name} -n {d.metadata.namespace}"
    desired, ready = status.get("desiredNumberScheduled"), status.get("numberReady")
    s.evidence.append(f"{ref}: desired {desired if desired is not None else '?'}, ready {ready if ready is not None else '?'}")
    spec = ((d.spec or {}).get("template") or {}).get("spec") or {}
    selector = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    tolerations = [_toleration(t, Toleration) for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    gpu_nodes = [n for n in ctx.snap.nodes.values() if _gpu_like(ctx, n)] or list(ctx.snap.nodes.values())
    for n in sorted(gpu_nodes, key=lambda n: n.metadata.name)[:MAX_LINES]:
        why = []
        for k, have in node_selector_mismatches(selector, n).items():
            why.append(f"its nodeSelector {k}={selector[k]} (node has {k}={have})" if have is not None
                       else f"its nodeSelector {k}={selector[k]} (node has no {k} label)")
        for t in untolerated_taints(n, [t for t in tolerations if t is not None]):
            why.append(f"taint {t.key}{'=' + t.value if t.value else ''}:{t.effect} not tolerated")
        if why:
            s.blocked.append((ref, f"node/{n.metadata.name}: {'; '.join(why)}"))
            s.evidence.append(f"{ref} keeps off node/{n.metadata.name}: {'; '.join(why)}")


def _toleration(t: dict[str, Any], cls: type) -> Optional[Any]:
    try:
        return cls(**{k: v for k, v in t.items() if k in ("key", "operator", "value", "effect", "tolerationSeconds")})
    except TypeError:
        return None


def _gpu_like(ctx: PodContext, n: Node) -> bool:
    return ctx.gpu_evidence(n) is not None or any(
        p.spec.nodeName == n.metadata.name and is_device_plugin_pod(p) for p in ctx.snap.pods.values())


def fixes(ctx: PodContext, s: Serving) -> list[Fix]:
    out = []
    if s.blocked:
        ref = s.blocked[0][0]
        name, ns = ref.split(" -n ")
        out.append(Fix(f"Let {ref} onto the GPU nodes: add the toleration or label it needs (what keeps it off is "
                       "in the evidence)", [f"kubectl -n {ns} get {name} -o yaml | grep -A12 -E 'nodeSelector|tolerations'",
                                            f"kubectl -n {ns} edit {name}   # spec.template.spec.tolerations / nodeSelector"],
                       needs_judgement="which toleration or label is right for your GPU nodes is your call"))
    bad = [p for p in s.pods if pod_problems(p)]
    if s.nvml or bad:
        p = (bad or s.pods)[0]
        out.append(Fix("Read the device plugin's log on the node; fix the driver or toolkit it reports, then restart it"
                       if any(k in catalog.device_plugin_selectors() for k in s.kinds) or not s.kinds else
                       f"Read the {s.vendor} device plugin's log on the node; fix what it reports (its driver, its "
                       "security context or the host devices it needs), then restart it",
                       [f"kubectl -n {p.metadata.namespace} logs {p.metadata.name} --all-containers --tail=50",
                        f"kubectl -n {p.metadata.namespace} delete pod {p.metadata.name}   # after the cause is fixed"]))
    if not s.pods and not s.daemonsets:
        if s.vendor == "nvidia":
            out.append(Fix("Deploy the NVIDIA device plugin (or the GPU Operator, which deploys it)",
                           ["helm repo add nvdp https://nvidia.github.io/k8s-device-plugin && helm repo update",
                            "helm upgrade -i nvdp nvdp/nvidia-device-plugin --namespace nvidia-device-plugin --create-namespace"],
                           needs_judgement="a cluster managed by the GPU Operator gets the plugin from its ClusterPolicy instead"))
        else:
            out.append(Fix(f"Deploy the {s.vendor} device plugin for {s.resource} on the GPU nodes",
                           ["kubectl get ds -A | grep -i -E 'device-plugin|gpu'"],
                           needs_judgement="which plugin and how is your platform's call"))
    return out
