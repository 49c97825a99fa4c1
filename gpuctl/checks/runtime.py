"""Why a pod that got a node does not run well: the kubelet refused its devices,
the NVIDIA runtime hook failed, the image's CUDA is newer than the driver, the
container lost its GPU, ran out of GPU or host memory, or simply crashes.

Text comes from the pod's status, its container states, its events and its logs
(current and previous), classified with gpuctl/knowledge/runtime_messages.yaml.
Non-GPU causes (image pull, host OOM, plain crash loops) are named as such, so
nobody chases the GPU for them."""

from __future__ import annotations

from typing import Iterable, Optional

from ..findings import Finding, Fix, Severity
from ..knowledge.runtime import codes_in
from ..model.snapshot import DEVICE_PLUGINS, EVENTS, LOGS, METRICS, NODES, OWNERS, RUNTIMECLASSES
from .base import DataUnavailable, check
from . import context
from .context import PodContext
from .device_plugin import device_plugin_state
from .gpu_node import advertised, driver_info, node_health
from .fixes import change_commands, container_index, edit_commands, set_limit_ops, workload_ref

MAX_LINE = 300
LOG_LINES = 200
PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable")
START_REASONS = ("CreateContainerError", "RunContainerError", "CreateContainerConfigError", "StartError",
                 "ContainerCannotRun")
ADMISSION_REASONS = ("UnexpectedAdmissionError", "TopologyAffinityError")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def _bound(ctx: PodContext) -> bool:
    return ctx.bound and ctx.pod.phase != "Succeeded"


def _texts(ctx: PodContext) -> list[tuple[str, str, str]]:
    """(where, text, origin) for every status/event text of the pod."""
    pod = ctx.pod
    out: list[tuple[str, str, str]] = []
    if pod.status.message:
        out.append(("status", pod.status.message, f"pod status ({pod.status.reason or pod.phase})"))
    for cs in [*pod.status.initContainerStatuses, *pod.status.containerStatuses]:
        for label, st in (("state", cs.state), ("last state", cs.lastState)):
            if st is None:
                continue
            if st.waiting and st.waiting.message:
                out.append(("status", st.waiting.message, f"container {cs.name} {label} waiting {st.waiting.reason or ''}"))
            if st.terminated and st.terminated.message:
                out.append(("status", st.terminated.message, f"container {cs.name} {label} terminated {st.terminated.reason or ''}"))
    for e in ctx.events:
        if e.type == "Warning" or e.reason in ADMISSION_REASONS:
            out.append(("event", e.message or "", ctx.event_line(e)))
    return out


def _classify(ctx: PodContext, codes: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    """code -> [(detail, evidence line)] from status and event texts."""
    from ..knowledge.runtime import classify

    found: dict[str, list[tuple[str, str]]] = {}
    for where, text, origin in _texts(ctx):
        for m in classify(text, where):
            if m.code in codes:
                line = origin if origin.startswith("event") else f"{origin}: {_short(text)}"
                found.setdefault(m.code, [])
                if (m.detail, line) not in found[m.code]:
                    found[m.code].append((m.detail, line))
    return found


def _node_ref(ctx: PodContext) -> str:
    return ctx.pod.spec.nodeName or "?"


# ------------------------------------------------------------------ admission


@check("device-admission", codes=["unexpected-admission-error"], reads=(EVENTS, OWNERS), applies=_bound)
def device_admission(ctx: PodContext) -> Iterable[Finding]:
    """UnexpectedAdmissionError: the kubelet's device manager could not allocate
    the pod's GPUs (unregistered resource after a restart, unhealthy devices, a
    shared-resource request too large). Rejected pods stay Failed until deleted."""
    hits = _classify(ctx, ("unexpected-admission-error",))
    if not hits and ctx.pod.status.reason not in ADMISSION_REASONS:
        return
    node = _node_ref(ctx)
    lines = hits.get("unexpected-admission-error", [])
    detail = lines[0][0] if lines else ctx.pod.status.reason or "admission refused"
    evidence = [ln for _, ln in lines] or [f"pod status: {ctx.pod.status.reason}: {_short(ctx.pod.status.message or '')}"]
    n = ctx.snap.nodes.get(node)
    if n is not None:
        dp = device_plugin_state(ctx.snap, [n]).for_node(node)
        evidence += dp.problems[:2] + [f"log: {lf.line}" for lf in dp.unhealthy_lines[-2:]]
        for r, q in ctx.gpu_requests.items():
            cap, alloc = n.status.capacity.get(r, 0), n.status.allocatable.get(r, 0)
            evidence.append(f"node/{node} {r}: capacity {cap}, allocatable {alloc}")
    ref = workload_ref(ctx)
    replaced = _replacement(ctx)
    summary = f"The kubelet on {node} refused the pod's GPUs: {detail}"
    if replaced is not None:
        summary += f" (its owner has already replaced it: {replaced.metadata.name} is {replaced.phase})"
        evidence.append(f"pod/{replaced.metadata.name}: {replaced.phase} on {replaced.spec.nodeName or 'no node yet'}, "
                        f"created {replaced.metadata.creationTimestamp} by the same owner")
    elif ctx.pod.metadata.ownerReferences:
        evidence.append(f"no newer pod of {ref} was found: the owner has not replaced it")
    yield Finding("unexpected-admission-error", summary,
                  evidence=evidence, nodes=[node], root_cause=True, disruption=1,
                  fixes=[Fix("Check the node's device plugin and GPUs, then delete the Failed pod so its controller "
                             "creates a new one (rejected pods are never retried)",
                             [f"gpuctl diagnose node {node}",
                              f"kubectl -n {ctx.ns} delete pod {ctx.name}" + ("" if ref.startswith("pod/") else f"   # {ref} re-creates it")])])


def _replacement(ctx: PodContext):
    """A newer pod of the same owner (a Job or ReplicaSet re-creates a rejected pod),
    preferring a Running one; None when the pod has no owner or none was made."""
    owners = {o.uid or o.name for o in ctx.pod.metadata.ownerReferences if o.controller is not False}
    if not owners:
        return None
    mine = ctx.pod.metadata.creationTimestamp or ""
    siblings = [p for p in ctx.snap.pods.values() if p is not ctx.pod and p.metadata.namespace == ctx.pod.metadata.namespace
                and {o.uid or o.name for o in p.metadata.ownerReferences} & owners
                and (p.metadata.creationTimestamp or "") >= mine and p.status.reason not in ADMISSION_REASONS]
    return min(siblings, key=lambda p: (p.phase != "Running", p.metadata.creationTimestamp or ""), default=None)


# ------------------------------------------------------------------ container start


@check("container-start", codes=["nvidia-runtime-error"], also=["driver-cuda-mismatch", "runtime-class-missing"],
       reads=(EVENTS, RUNTIMECLASSES), applies=_bound)
def container_start(ctx: PodContext) -> Iterable[Finding]:
    """The container could not start: the NVIDIA runtime hook failed
    (nvidia-container-cli), the image's CUDA requirement is above the driver, or
    the sandbox runtime handler (RuntimeClass) is missing on the node."""
    hits = _classify(ctx, ("nvidia-runtime-error", "driver-cuda-mismatch", "runtime-class-missing"))
    node = _node_ref(ctx)
    for code, lines in hits.items():
        detail = lines[0][0]
        evidence = [ln for _, ln in lines[:4]]
        if code == "nvidia-runtime-error":
            fixes = [Fix("Check the driver and the container toolkit on the node (GPU Operator: driver and toolkit pods)",
                          [f"gpuctl diagnose node {node}",
                           f"kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep -Ei 'driver|toolkit|validator'",
                           f"kubectl debug node/{node} -it --image=busybox -- chroot /host nvidia-smi"])]
            summary = f"The NVIDIA container runtime failed to start the container on {node}: {detail}"
        elif code == "runtime-class-missing":
            rc = ctx.pod.spec.runtimeClassName
            fixes = [Fix(f"Configure the '{rc or 'nvidia'}' runtime handler on the node (GPU Operator: container toolkit) "
                          "or use a RuntimeClass whose handler exists",
                          ["kubectl get runtimeclass -o wide",
                           f"kubectl get pods -A -o wide --field-selector spec.nodeName={node} | grep -i toolkit"])]
            summary = f"The node's container runtime has no handler for the pod's RuntimeClass: {detail}"
        else:
            yield from _cuda_finding(ctx, extra_evidence=evidence, crashed=True)
            continue
        fault = gpu_fault(ctx) if code == "nvidia-runtime-error" else None
        if fault is not None:   # a hung or lost GPU makes the runtime hook fail: the Xid is the cause
            summary += f" (the node's GPU reported Xid {fault.xid})"
            evidence.append(f"{fault.source}: {_short(fault.line)}")
        yield Finding(code, summary, evidence=evidence, nodes=[node], root_cause=fault is None, disruption=2, fixes=fixes,
                      symptom_of="xid-error" if fault is not None else None)


@check("runtime-class", codes=["runtime-class-missing"], reads=(RUNTIMECLASSES,), applies=lambda ctx: bool(ctx.pod.spec.runtimeClassName))
def runtime_class(ctx: PodContext) -> Iterable[Finding]:
    """The pod names a RuntimeClass the cluster does not have."""
    name = ctx.pod.spec.runtimeClassName
    if "runtimeclasses" in ctx.snap.gaps or not ctx.snap.runtime_classes:
        return   # not collected (or the snapshot has none at all): nothing to compare with
    if name in ctx.snap.runtime_classes:
        return
    yield Finding("runtime-class-missing", f"The pod names RuntimeClass {name}, which does not exist",
                  evidence=[f"RuntimeClasses in the cluster: {', '.join(sorted(ctx.snap.runtime_classes))}"],
                  root_cause=True, disruption=1,
                  fixes=[_runtime_class_fix(ctx, name)])


def _runtime_class_fix(ctx: PodContext, name: str) -> Fix:
    """Point the pod at the RuntimeClass the GPU Operator creates when it exists."""
    if "nvidia" in ctx.snap.runtime_classes:
        cmds, why = change_commands(ctx, [{"op": "replace", "path": "/runtimeClassName", "value": "nvidia"}])
        return Fix(f"Use the existing RuntimeClass 'nvidia' instead of '{name}' (or create '{name}')",
                   ["kubectl get runtimeclass", *cmds], needs_judgement=why)
    return Fix("Use an existing RuntimeClass (the GPU Operator creates 'nvidia') or create it",
               ["kubectl get runtimeclass",
                *edit_commands(ctx, "/runtimeClassName", name, "one of: " + (", ".join(sorted(ctx.snap.runtime_classes)) or "none exist"))],
               needs_judgement="which runtime handler the nodes have is your call")


# ------------------------------------------------------------------ non-GPU causes


@check("image-pull", codes=["image-pull-failed"], reads=(EVENTS,), applies=_bound)
def image_pull(ctx: PodContext) -> Iterable[Finding]:
    """The image cannot be pulled: not a GPU problem, and said so."""
    waiting = [(cs.name, cs.state.waiting) for cs in [*ctx.pod.status.initContainerStatuses, *ctx.pod.status.containerStatuses]
               if cs.state and cs.state.waiting and cs.state.waiting.reason in PULL_REASONS]
    hits = _classify(ctx, ("image-pull-failed",))
    if not waiting and not hits:
        return
    evidence = [f"container {n} waiting {w.reason}: {_short(w.message or '')}" for n, w in waiting]
    evidence += [ln for _, ln in hits.get("image-pull-failed", [])[:3]]
    images = sorted({c.image or "?" for c in [*ctx.pod.spec.containers, *ctx.pod.spec.initContainers]
                     if not waiting or c.name in {n for n, _ in waiting}})
    yield Finding("image-pull-failed", f"The image cannot be pulled ({', '.join(images)}); this is not a GPU problem",
                  evidence=evidence, nodes=[_node_ref(ctx)], root_cause=True, disruption=1,
                  fixes=[Fix("Check the image name and tag, and the pull secret for private registries (nvcr.io needs an NGC key)",
                             [f"kubectl -n {ctx.ns} describe pod {ctx.name} | grep -A3 -i 'failed to pull'",
                              f"kubectl -n {ctx.ns} get pod {ctx.name} -o jsonpath='{{.spec.imagePullSecrets}}'"])])


@check("host-oom", codes=["container-oom-killed"], reads=(EVENTS,), applies=_bound)
def host_oom(ctx: PodContext) -> Iterable[Finding]:
    """OOMKilled: the container exceeded its host-memory limit (exit 137), not GPU memory."""
    init_names = {cs.name for cs in ctx.pod.status.initContainerStatuses}
    for cs in [*ctx.pod.status.initContainerStatuses, *ctx.pod.status.containerStatuses]:
        for label, st in (("state", cs.state), ("last state", cs.lastState)):
            t = st.terminated if st else None
            if t and t.reason == "OOMKilled":
                init = cs.name in init_names
                specs = ctx.pod.spec.initContainers if init else ctx.pod.spec.containers
                idx = next((i for i, c in enumerate(specs) if c.name == cs.name), 0)
                c = specs[idx] if idx < len(specs) else None
                limit = c.resources.limits.get("memory") if c else None
                what = "Init container" if init else "Container"
                path = f"/initContainers/{idx}/resources/limits/memory" if init else \
                    f"/containers/{container_index(ctx, cs.name)}/resources/limits/memory"
                yield Finding("container-oom-killed",
                              f"{what} {cs.name} was killed for host memory (OOMKilled, exit {t.exitCode}); not GPU memory",
                              evidence=[f"container {cs.name} {label}: terminated OOMKilled exit {t.exitCode} at {t.finishedAt or '?'}",
                                        f"memory limit: {limit or 'none'}; restarts: {cs.restartCount}"],
                              nodes=[_node_ref(ctx)], root_cause=True, disruption=1,
                              fixes=[Fix("Raise the container's memory limit (data loaders and pinned memory count here), "
                                         "or lower the batch/worker count",
                                         edit_commands(ctx, path, str(limit or "none"), "a higher limit (and request)"),
                                         needs_judgement="how much memory the container needs is your call")])
                return


# ------------------------------------------------------------------ logs


def _logs(ctx: PodContext) -> list[tuple[str, bool, str]]:
    """The logs of every container, init containers first (the GPU Operator's
    validators run CUDA there), current and (after a restart) previous."""
    out = []
    for cs in [*ctx.pod.status.initContainerStatuses, *ctx.pod.status.containerStatuses]:
        for previous in (False, True):
            if previous and not cs.restartCount:
                continue
            text = ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, previous)
            if text:
                out.append((cs.name, previous, "\n".join(text.splitlines()[-LOG_LINES:])))
    return out


def _sharing(ctx: PodContext) -> Optional[str]:
    n = ctx.snap.nodes.get(ctx.pod.spec.nodeName or "")
    if n is None:
        return None
    labels = n.metadata.labels
    strategy = labels.get("nvidia.com/gpu.sharing-strategy")
    if strategy in ("time-slicing", "mps"):
        return f"{strategy} with {labels.get('nvidia.com/gpu.replicas', '?')} replicas per GPU"
    if any(r.endswith(".shared") for r in ctx.gpu_requests):
        return "a shared GPU resource"
    return None


@check("container-logs", codes=["gpu-not-requested", "gpu-memory-exhausted", "container-lost-gpu-access"],
       also=[*codes_in("log"), "nvidia-runtime-error"], reads=(LOGS, RUNTIMECLASSES), applies=_bound)
def container_logs(ctx: PodContext) -> Iterable[Finding]:
    """CUDA, NVML and framework signatures in the container's logs (current and
    previous): no GPU visible, CUDA out of memory, NVML lost, driver too old,
    uncorrectable ECC."""
    found = list(_container_logs(ctx))
    yield from found
    aimed = aimed_without_gpu(ctx)
    if aimed is not None and not any(getattr(f, "code", None) == "gpu-not-requested" for f in found):
        yield aimed


def _requests_nothing_of_the_gpu_stack(ctx: PodContext) -> bool:
    """The pod requests no GPU or other device and is not one of the GPU stack's own
    pods (device plugins and the operator's operands get the driver without a request)."""
    from .device_plugin import is_device_plugin_pod

    pod = ctx.pod
    return not (ctx.gpu_requests or ctx.device_requests or is_device_plugin_pod(pod)
                or pod.metadata.namespace in ("gpu-operator", "nvidia-gpu-operator", "gpu-operator-resources"))


def aimed_without_gpu(ctx: PodContext) -> Optional[Finding]:
    """A crashing pod that requests no GPU but selects GPU nodes (its nodeSelector
    names an accelerator, as GPU labels do): the device plugin gives it no GPU, so
    its GPU code fails. Not the GPU stack's own pods (plugins, operands)."""
    from ..knowledge import catalog

    pod = ctx.pod
    if not _requests_nothing_of_the_gpu_stack(ctx):
        return None
    selects = catalog.node_has_gpus(dict(pod.spec.nodeSelector or {}))
    crashing = [cs for cs in pod.status.containerStatuses
                if cs.restartCount > 0 or (cs.state and cs.state.waiting and cs.state.waiting.reason == "CrashLoopBackOff")]
    if selects is None or not crashing:
        return None
    cs = crashing[0]
    text = ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, True) or ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, False) or ""
    tail = [ln for ln in text.splitlines() if ln.strip()][-2:]
    node = _node_ref(ctx)
    return Finding("gpu-not-requested",
                   f"The pod selects GPU nodes ({selects.source}: {selects.raw}) but requests no GPU, so it gets none; "
                   f"its container {cs.name} keeps failing",
                   evidence=[f"nodeSelector {', '.join(f'{k}={v}' for k, v in pod.spec.nodeSelector.items())}; no GPU in "
                             "requests or limits", f"container {cs.name}: restarts {cs.restartCount}"]
                   + [f"last log line: {_short(ln)}" for ln in tail],
                   nodes=[node], root_cause=True, disruption=1,
                   fixes=[Fix(f"Request a GPU in {workload_ref(ctx)} (limits nvidia.com/gpu: 1)",
                              [f"kubectl -n {ctx.ns} get {workload_ref(ctx)} -o yaml | grep -B2 -A8 resources:"],
                              needs_judgement="how many GPUs it needs is your call")])


def _container_logs(ctx: PodContext) -> Iterable[Finding]:
    from ..knowledge.runtime import classify

    logs = _logs(ctx)
    if not logs:
        gap = next((g for k, g in ctx.snap.log_gaps.items() if k.startswith(f"{ctx.ns}/{ctx.name}/")), None)
        if gap is not None:
            raise DataUnavailable(gap.describe())
        return
    seen: dict[str, list[tuple[str, str]]] = {}
    severity_override = None
    for container, previous, text in logs:
        for line in text.splitlines():
            for m in classify(line, "log"):
                tag = f"log of {container}{' (previous)' if previous else ''}: {_short(line)}"
                if len(seen.setdefault(m.code, [])) < 4:
                    seen[m.code].append((m.detail, tag))
    node = _node_ref(ctx)
    for code, lines in seen.items():
        detail, evidence = lines[0][0], [ln for _, ln in lines]
        if code == "gpu-not-requested":
            if ctx.gpu_requests:
                code = "nvidia-runtime-error"
                summary = f"The container sees no GPU although the pod requests {', '.join(ctx.gpu_requests)}: {detail}"
                fixes = [Fix("Check the NVIDIA runtime on the node and that the image does not override NVIDIA_VISIBLE_DEVICES",
                              [f"gpuctl diagnose node {node}"])]
            else:
                summary = f"The container wants a GPU ({detail}) but the pod requests none"
                cmds, why = change_commands(ctx, set_limit_ops(ctx, 0, "nvidia.com/gpu", "1"))
                fixes = [Fix("Request a GPU in the pod spec (limits: nvidia.com/gpu: 1); if the GPU nodes are tainted, "
                             "the GPU Operator's admission or a toleration lets it on", cmds, needs_judgement=why)]
        elif code == "gpu-memory-exhausted":
            running = ctx.pod.phase == "Running" and all(cs.ready for cs in ctx.pod.status.containerStatuses)
            severity_override = None if running else Severity.BLOCKER
            sharing = _sharing(ctx)
            summary = "CUDA ran out of GPU memory" + (f" on a GPU shared by {sharing}" if sharing else "")
            isolation = ("; time-slicing gives no memory isolation: the other pods on the GPU use the same memory"
                         if sharing and sharing.startswith("time-slicing") else
                         "; MPS gives each pod an equal share (1/replicas) of the GPU's memory" if sharing and sharing.startswith("mps") else "")
            fixes = [Fix("Lower the batch size or model footprint, or request a whole GPU / a bigger one" + isolation,
                         [f"kubectl -n {ctx.ns} logs {ctx.name} --previous --tail=30"])]
        elif code == "container-lost-gpu-access":
            summary = f"The container lost access to its GPU while running ({detail})"
            fixes = [Fix("Restart the pod to get the devices back; stop it recurring by fixing the runtime/cgroup setup "
                         "(systemd cgroup driver and daemon-reload interplay in the NVIDIA container toolkit)",
                         [f"kubectl -n {ctx.ns} delete pod {ctx.name}", f"gpuctl diagnose node {node}"])]
        elif code == "driver-cuda-mismatch" and _requests_nothing_of_the_gpu_stack(ctx):
            # Without a GPU request the NVIDIA runtime mounts no driver (or, with the
            # runtime as the default, only what NVIDIA_VISIBLE_DEVICES allows): CUDA then
            # calls the driver "insufficient". The cause is the missing request.
            code = "gpu-not-requested"
            summary = (f"The container uses CUDA ({detail}) but the pod requests no GPU: it gets no GPU and no "
                       "usable driver, which CUDA reports as an insufficient driver")
            cmds, why = change_commands(ctx, set_limit_ops(ctx, 0, "nvidia.com/gpu", "1"))
            fixes = [Fix("Request a GPU in the pod spec (limits: nvidia.com/gpu: 1)", cmds, needs_judgement=why)]
        elif code == "driver-cuda-mismatch":
            yield from _cuda_finding(ctx, extra_evidence=evidence, crashed=True)
            continue
        elif code == "ecc-uncorrectable":
            summary = f"The GPU reported an uncorrectable ECC error to the application on {node}"
            fixes = [Fix("Drain the node and check the GPU's ECC and row-remapping state", [f"gpuctl diagnose node {node}",
                                                                                             f"kubectl drain {node} --ignore-daemonsets --delete-emptydir-data"])]
        elif code == "crash-loop":
            continue  # explained by the crash-loop check, with these lines as evidence
        else:
            summary = detail
            fixes = []
        hardware = None
        ecc = node_health(ctx.snap, node, ctx.memo).ecc if code == "gpu-memory-exhausted" else []
        if ecc:   # hardware outranks its symptom
            hardware = "ecc-uncorrectable"
            summary += ": the node's GPUs report uncorrectable memory errors, which retire or remap memory"
            evidence.append(f"node {node}: {ecc[0]}")
        yield Finding(code, summary, evidence=evidence, nodes=[node], root_cause=hardware is None, disruption=2, fixes=fixes,
                      severity=severity_override if code == "gpu-memory-exhausted" else None, symptom_of=hardware)


@check("crash-loop", codes=["crash-loop"], reads=(LOGS, EVENTS), applies=_bound)
def crash_loop(ctx: PodContext) -> Iterable[Finding]:
    """A container keeps exiting and nothing more specific explains it: show its
    exit code and last log lines."""
    from ..knowledge.runtime import classify

    if _specific_cause(ctx):
        return
    for cs in ctx.pod.status.containerStatuses:
        waiting = cs.state.waiting if cs.state else None
        last = cs.lastState.terminated if cs.lastState else None
        now_term = cs.state.terminated if cs.state else None
        looping = (waiting and waiting.reason == "CrashLoopBackOff") or (cs.restartCount >= 3 and last and last.exitCode != 0)
        failed = now_term is not None and now_term.exitCode != 0 and ctx.pod.phase == "Failed"
        if not (looping or failed):
            continue
        term = last or now_term
        if term is not None and term.reason == "OOMKilled":
            continue
        text = ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, True) or ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, False) or ""
        tail = [ln for ln in text.splitlines() if ln.strip()][-5:]
        hints = [m.detail for ln in text.splitlines()[-LOG_LINES:] for m in classify(ln, "log") if m.code == "crash-loop"]
        evidence = [f"container {cs.name}: {waiting.reason if waiting else 'terminated'}, restarts {cs.restartCount}, "
                    f"last exit code {term.exitCode if term else '?'} ({term.reason if term and term.reason else 'Error'})"]
        evidence += [f"last log line: {_short(ln)}" for ln in tail]
        summary = f"Container {cs.name} keeps exiting (exit code {term.exitCode if term else '?'})"
        fault = gpu_fault(ctx)
        if fault is None and aimed_without_gpu(ctx) is not None:
            yield Finding("crash-loop", f"Container {cs.name} keeps exiting (exit code {term.exitCode if term else '?'}): "
                          "it runs GPU code without a GPU", evidence=evidence, nodes=[_node_ref(ctx)], root_cause=False,
                          disruption=2, symptom_of="gpu-not-requested",
                          fixes=[Fix("Read the previous container's log",
                                     [f"kubectl -n {ctx.ns} logs {ctx.name} -c {cs.name} --previous --tail=100"])])
            return
        if fault is not None:
            summary += f": its GPU reported Xid {fault.xid}, a hardware fault that crashes any program on it"
            evidence.append(f"{fault.source}: {_short(fault.line)}")
        else:
            summary += f": {hints[0]}" if hints else "; its log shows no GPU cause"
        yield Finding("crash-loop", summary, evidence=evidence, nodes=[_node_ref(ctx)], root_cause=fault is None, disruption=2,
                      symptom_of="xid-error" if fault is not None else None,
                      fixes=[Fix("Read the previous container's log and fix the application error",
                                 [f"kubectl -n {ctx.ns} logs {ctx.name} -c {cs.name} --previous --tail=100"])])
        return


def gpu_fault(ctx: PodContext):
    """A critical (reset- or reboot-class) Xid on the GPU this pod runs on: on its node,
    unless the source ties that GPU to another pod (DCGM's pod labels). None when
    there is none, so an application crash stays the application's."""
    from ..knowledge.gpu_health import xid_info

    node = ctx.pod.spec.nodeName
    if not node:
        return None
    me = f"{ctx.ns}/{ctx.name}"
    health = node_health(ctx.snap, node, ctx.memo)
    owners = health.gpu_pods   # from the DCGM exporter's pod labels
    mine = {gpu for gpu, pods in owners.items() if me in pods}
    for x in reversed(health.xids):
        info = xid_info(x.xid)
        if info is None or info.severity != "critical":
            continue
        if (x.pods and me not in x.pods) or (mine and x.gpu not in mine) or (x.gpu in owners and me not in owners[x.gpu]):
            continue   # another pod's GPU
        return x
    return None


SPECIFIC = ("unexpected-admission-error", "nvidia-runtime-error", "driver-cuda-mismatch", "runtime-class-missing",
            "image-pull-failed", "gpu-not-requested", "gpu-memory-exhausted", "container-lost-gpu-access",
            "ecc-uncorrectable", "container-oom-killed")


def _specific_cause(ctx: PodContext) -> bool:
    """Whether a more specific runtime code explains the pod's exits (crash-loop is
    only for exits nothing else explains)."""
    from ..knowledge.runtime import classify

    if _classify(ctx, SPECIFIC):
        return True
    for _, _, text in _logs(ctx):
        for line in text.splitlines():
            if any(m.code in SPECIFIC for m in classify(line, "log")):
                return True
    return False


# ------------------------------------------------------------------ driver and CUDA


def _gpu_pod(ctx: PodContext) -> bool:
    return bool(ctx.gpu_requests) and ctx.pod.phase not in ("Succeeded", "Failed") and not ctx.pod.metadata.deletionTimestamp


@check("driver-cuda", codes=["driver-cuda-mismatch"], also=["nvidia-runtime-error"], reads=(NODES, EVENTS, LOGS, RUNTIMECLASSES),
       applies=_gpu_pod)
def driver_cuda(ctx: PodContext) -> Iterable[Finding]:
    """The CUDA version the image needs (NVIDIA_REQUIRE_CUDA/CUDA_VERSION, or the
    image tag) against the driver of the node it runs on, or of the nodes it may
    land on — flagged before the pod crashes."""
    yield from _cuda_finding(ctx, extra_evidence=[], crashed=False)


def _requirement(ctx: PodContext):
    """(container name, the highest CUDA requirement of the pod's containers), or None.
    It reads the containers list only, which the pods of one workload share (the
    reader shares identical parts of records): once per list and memo, kept with the
    list (so its id is not reused while the entry stands)."""
    containers = ctx.pod.spec.containers
    if not context.FAST_PATHS:
        return _containers_requirement(containers)
    key = ("cuda-requirement", id(containers))
    got = ctx.memo.get(key)
    if got is None or got[0] is not containers:
        got = ctx.memo[key] = (containers, _containers_requirement(containers))
    return got[1]


def _containers_requirement(containers: list):
    from ..knowledge.cuda import required_cuda

    best = None
    for c in containers:
        env = {e.name: e.value for e in c.env if e.value is not None}
        req = required_cuda(env, c.image)
        if req is not None and (best is None or req.cuda > best[1].cuda):
            best = (c.name, req)
    return best


def _requirement_from_text(lines: list[str]):
    """The requirement the NVIDIA runtime reported refusing ('unsatisfied condition:
    cuda>=12.4'), for images whose env is not visible in the pod spec."""
    from ..knowledge.cuda import requirement_from_message

    for line in lines:
        req = requirement_from_message(line)
        if req is not None:
            return ("?", req)
    return None


def _cuda_finding(ctx: PodContext, extra_evidence: list[str], crashed: bool) -> Iterable[Finding]:
    found = _requirement(ctx) or _requirement_from_text(extra_evidence)
    if crashed and ctx.bound:
        no_runtime = _without_nvidia_runtime(ctx, found)
        if no_runtime is not None:
            yield no_runtime
            return
    if found is None:
        n = ctx.snap.nodes.get(ctx.pod.spec.nodeName or "")
        if n is not None and _no_gpu_here(ctx, n):
            return   # "driver version is insufficient" on a node with no GPU and no driver: no driver at all, not an old one
        if crashed:   # the runtime said so, but the requirement is not in the spec: report what we saw
            node = _node_ref(ctx)
            yield Finding("driver-cuda-mismatch", f"The container needs a newer CUDA than the driver on {node} supports",
                          evidence=extra_evidence, nodes=[node], root_cause=True, disruption=2,
                          fixes=[Fix("Run on nodes with a newer driver, or use an image built for an older CUDA",
                                     [f"gpuctl diagnose node {node}"])])
        return
    container, req = found
    # a node's verdict depends on the requirement and the node only: shared by the pod
    # classes of the memo that need this requirement
    verdicts = None

    def verdict(node_name: str):
        nonlocal verdicts
        if not context.FAST_PATHS:
            return _verdict(node_name)
        if verdicts is None:
            verdicts = ctx.memo.setdefault(("cuda-verdicts", req), {})
        got = verdicts.get(node_name)
        if got is None:
            got = verdicts[node_name] = _verdict(node_name)
        return got

    def _verdict(node_name: str):
        """(driver info, will it fail?): an enforced requirement (NVIDIA_REQUIRE_CUDA,
        CUDA_VERSION, the runtime's own error) fails where the runtime refuses it;
        one read from an image tag only where no compatibility path exists."""
        from ..knowledge.cuda import check_compat, runtime_refuses

        info = driver_info(ctx.snap, node_name, ctx.memo)
        if info is None or info.cuda is None:
            return info, None
        if req.enforced:
            return info, runtime_refuses(info.cuda, req, info.driver)
        return info, check_compat(info.driver, info.cuda, req.cuda).status == "unsupported"

    def want() -> str:   # written only for a finding
        return f"{req.cuda} ({req.source}: {_short(req.raw)})"

    if ctx.bound:
        node = ctx.pod.spec.nodeName or ""
        info, bad = verdict(node)
        if not bad:
            return
        good = _good_nodes(ctx, verdict)
        evidence = [f"container {container} needs CUDA {want()}" if container != "?" else f"the image needs CUDA {want()}",
                    f"node/{node}: {info.describe()}"] + extra_evidence
        if good:
            evidence.append(f"nodes whose driver supports it: {', '.join(good[:6])}" + (" …" if len(good) > 6 else ""))
        certain = crashed or req.enforced
        yield Finding("driver-cuda-mismatch",
                      f"The image needs CUDA {req.cuda}, but the driver on {node} supports only CUDA {info.cuda}"
                      + ("" if crashed else "; the container will fail to start" if req.enforced
                         else "; it may fail unless the image carries CUDA forward-compatibility libraries"),
                      evidence=evidence, nodes=[node], root_cause=True, disruption=2, fixes=_cuda_fixes(ctx, req, good),
                      severity=None if certain else Severity.WARNING)
        return
    # Not bound yet: which nodes could it land on, and would they run it? The same
    # for every pod with these constraints and this requirement (cached).
    key = ("cuda", ctx.fit_signature, str(req.cuda), req.enforced, req.driver_ranges) if ctx.fit_signature else None
    hit = ctx.memo.get(key) if key else None
    if hit is None:
        candidates = [f.name for f in ctx.fits if not f.reasons] or [f.name for f in ctx.fits if f.candidate]
        # the verdicts on these nodes: the same for the pod classes that may land on the same nodes
        seen = ("cuda-judged", req, tuple(candidates)) if context.FAST_PATHS else None
        both = ctx.memo.get(seen) if seen else None
        if both is None:
            if context.FAST_PATHS:   # each node's verdict once (as verdict keeps them), then read as they are
                if verdicts is None:
                    verdicts = ctx.memo.setdefault(("cuda-verdicts", req), {})
                for n in candidates:
                    if n not in verdicts:
                        verdicts[n] = _verdict(n)
                judged = {n: verdicts[n] for n in candidates}
            else:
                judged = {n: verdict(n) for n in candidates}
            both = (judged, [n for n, (_, bad) in judged.items() if bad])
            if seen:
                ctx.memo[seen] = both
        judged, bad_nodes = both
        hit = (judged, bad_nodes, _good_nodes(ctx, verdict) if bad_nodes else [])
        if key:
            ctx.memo[key] = hit
    judged, bad_nodes, good = hit
    if not bad_nodes:
        return
    sample = judged[bad_nodes[0]][0]
    severity = Severity.BLOCKER if len(bad_nodes) == len(judged) and req.enforced else Severity.WARNING
    summary = (f"The image needs CUDA {req.cuda}; {len(bad_nodes)} of the {len(judged)} nodes the pod can land on have a "
               f"driver that supports only CUDA {sample.cuda}: it will fail to start there")
    evidence = [f"container {container} needs CUDA {want()}"] + \
               [f"node/{n}: {judged[n][0].describe()}" for n in bad_nodes[:5]] + extra_evidence
    if good:
        evidence.append(f"nodes whose driver supports it: {', '.join(good[:6])}" + (" …" if len(good) > 6 else ""))
    yield Finding("driver-cuda-mismatch", summary, evidence=evidence, nodes=bad_nodes[:20], root_cause=True,
                  disruption=2, severity=severity, fixes=_cuda_fixes(ctx, req, good))


def _no_gpu_here(ctx: PodContext, node) -> bool:
    """No GPU labels, no GPU advertised and no driver known: the pod runs on a node without GPUs."""
    from ..knowledge import catalog

    return (catalog.node_has_gpus(node.metadata.labels) is None
            and not any(catalog.is_gpu_resource(r) for r in node.status.capacity)
            and driver_info(ctx.snap, node.metadata.name, ctx.memo) is None)


def _without_nvidia_runtime(ctx: PodContext, found) -> Optional[Finding]:
    """"CUDA driver version is insufficient" from a GPU pod that names no
    runtimeClassName on a cluster whose NVIDIA runtime is a RuntimeClass: the
    container ran under the default runtime, without the driver's libraries, so it
    saw no driver at all. Not when the node's driver really is too old for the
    image's known requirement."""
    from ..knowledge.cuda import runtime_refuses

    if ctx.pod.spec.runtimeClassName or not ctx.gpu_requests:
        return None
    nvidia = sorted(name for name, rc in ctx.snap.runtime_classes.items() if "nvidia" in (rc.handler or name))
    if not nvidia:
        return None
    node = ctx.pod.spec.nodeName or ""
    info = driver_info(ctx.snap, node, ctx.memo)
    if found is not None and info is not None and info.cuda is not None and runtime_refuses(info.cuda, found[1], info.driver):
        return None   # a genuine driver/CUDA mismatch
    ops = [{"op": "add", "path": "/runtimeClassName", "value": nvidia[0]}]
    cmds, why = change_commands(ctx, ops)
    evidence = [f"the pod names no runtimeClassName; RuntimeClass {nvidia[0]} exists (handler "
                f"{ctx.snap.runtime_classes[nvidia[0]].handler or '?'}): the NVIDIA runtime is not the node's default"]
    if info is not None:
        evidence.append(f"node/{node}: {info.describe()}: new enough, the container simply saw no driver")
    return Finding("nvidia-runtime-error",
                   f"The container ran without the NVIDIA runtime on {node}: the pod names no runtimeClassName, so no "
                   "driver libraries were mounted ('CUDA driver version is insufficient' means no driver, not an old one)",
                   evidence=evidence, nodes=[node], root_cause=True, disruption=1,
                   fixes=[Fix(f"Run the pod with runtimeClassName: {nvidia[0]} (or make nvidia the node's default runtime)",
                              cmds, needs_judgement=why or None)])


def _good_nodes(ctx: PodContext, verdict) -> list[str]:
    out = []
    for f in ctx.fits if ctx.snap.nodes else []:
        if f.gpu_node:
            info, bad = verdict(f.name)
            if bad is False:
                out.append(f.name)
    return out


def _cuda_fixes(ctx: PodContext, req, good: list[str]) -> list[Fix]:
    fixes = []
    if good:
        versions = sorted({str(i.cuda) for i in (driver_info(ctx.snap, n, ctx.memo) for n in good) if i and i.cuda})
        fixes.append(Fix(f"Schedule the pod onto nodes whose driver supports CUDA {req.cuda} ({', '.join(good[:4])}"
                         f"{', …' if len(good) > 4 else ''}), e.g. required node affinity "
                         f"nvidia.com/cuda.runtime-version.full In [{', '.join(versions)}]",
                         [f"kubectl get nodes {' '.join(good[:4])} -L nvidia.com/cuda.driver-version.full,nvidia.com/cuda.runtime-version.full"]
                         + edit_commands(ctx, "/affinity/nodeAffinity", "none for the driver",
                                         f"required nvidia.com/cuda.runtime-version.full In [{', '.join(versions)}]"),
                         needs_judgement="merge the affinity with any the pod already has"))
    fixes.append(Fix(f"Or use an image built for the node's CUDA, or upgrade the node driver to one that supports CUDA {req.cuda}",
                     ["kubectl -n gpu-operator get pods -l app=nvidia-driver-daemonset -o wide"]))
    return fixes


# ------------------------------------------------------------------ node health under a failing pod


def _failing_gpu_pod(ctx: PodContext) -> bool:
    if not ctx.bound or not ctx.gpu_requests:
        return False
    if ctx.pod.phase == "Failed" and ctx.pod.status.reason in ADMISSION_REASONS:
        return True
    statuses = ctx.pod.status.containerStatuses
    healthy = ctx.pod.phase == "Running" and statuses and all(cs.ready for cs in statuses)
    return not healthy


@check("node-gpu-health", also=["xid-error", "gpu-unhealthy", "ecc-uncorrectable"],
       reads=(DEVICE_PLUGINS, LOGS, METRICS), applies=_failing_gpu_pod)
def node_gpu_health(ctx: PodContext) -> Iterable[Finding]:
    """Xid and ECC evidence on the failing pod's node: the GPU, not the app, may be at fault."""
    from ..knowledge.gpu_health import xid_info

    node = ctx.pod.spec.nodeName or ""
    h = node_health(ctx.snap, node, ctx.memo)
    serious = []
    for x in h.xids:
        info = xid_info(x.xid)
        if info is not None and info.severity == "critical":
            serious.append((x, info))
    if serious:
        x, info = serious[-1]
        yield Finding("xid-error", f"Xid {x.xid} ({info.mnemonic}) on {node}'s GPU {x.gpu}: {info.description}; {info.action}",
                      evidence=[f"{s.source}: {_short(s.line)}" for s, _ in serious[-4:]], nodes=[node], root_cause=True,
                      disruption=3, fixes=[Fix(info.action, [f"gpuctl diagnose node {node}"])])
    n = ctx.snap.nodes.get(node)
    for r in ctx.gpu_requests if n is not None else []:
        cap, alloc = advertised(n, r)
        if cap > alloc:
            dp = device_plugin_state(ctx.snap, [n]).for_node(node)
            yield Finding("gpu-unhealthy", f"{cap - alloc:g} of the {cap:g} {r} on {node} are marked unhealthy",
                          evidence=[f"node/{node} {r}: capacity {cap:g}, allocatable {alloc:g}"]
                          + [f"log: {lf.line}" for lf in dp.unhealthy_lines[-2:]], nodes=[node],
                          symptom_of="xid-error" if serious else None, root_cause=not serious, disruption=3,
                          fixes=[Fix("Reset or replace the faulty GPUs, then restart the device-plugin pod",
                                     [f"gpuctl diagnose node {node}"])])
    if h.ecc:
        yield Finding("ecc-uncorrectable", f"Uncorrectable memory errors on {node}'s GPUs", evidence=h.ecc[:5],
                      nodes=[node], root_cause=True, disruption=3,
                      fixes=[Fix("Drain the node, reset the GPU and check row remapping; replace the card if it recurs",
                                 [f"gpuctl diagnose node {node}", f"kubectl drain {node} --ignore-daemonsets --delete-emptydir-data"])])

