"""How a fix changes a pod's spec, built from the cluster's own data.

Checks name the change (JSON-patch operations on the pod spec, paths relative to
it: ``/tolerations/-``, ``/containers/0/resources/limits/nvidia.com~1gpu``); this
module turns it into commands for what owns the spec:

* a Deployment, StatefulSet, DaemonSet or ReplicaSet: ``kubectl patch`` of its
  template (the controller rolls the pods);
* a Job, whose template is immutable: the Job is re-created by a kubectl-only
  pipeline that strips what the apiserver generated (``spec.selector`` and the
  ``controller-uid`` template labels; only those present, a JSON-patch ``remove``
  of a missing path fails) and applies the change:
  ``kubectl get job X -o json | kubectl patch --local -f - --type=json -p '[…]' -o json | kubectl replace --force -f -``;
* a bare pod: ``kubectl patch`` where the field may change on a pod
  (tolerations), else the same re-create pipeline;
* anything else (training-operator CRDs): ``kubectl edit`` with a comment naming
  the full path, the current value and the value to set, marked as needing
  judgement.

When the new value is the user's choice (a smaller request, an affinity), the
commands are ``kubectl edit`` (or, for a Job, the pipeline writing a file to
edit) with the same comment, and the fix says it needs judgement. The tests run
every fix of every scenario against the local API server (tests/test_fixes_run.py).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from .context import PodContext


# How disruptive each code's fix is (0 least): the engine ranks root causes whose
# fix alone lets the pod run least disruptive first (docs/runbooks/README.md).
DISRUPTION = {
    "unknown-resource-name": 0, "sharing-resource-mismatch": 0, "mig-profile-unavailable": 1,
    "untolerated-taint": 1, "node-unschedulable": 1, "insufficient-cpu": 2, "insufficient-memory": 2,
    "insufficient-resource": 2, "node-selector-mismatch": 2, "node-affinity-mismatch": 2,
    "pod-topology-constraint": 2, "device-plugin-not-running": 2, "nvml-init-failed": 3,
    "node-not-ready": 3, "gpu-unhealthy": 3, "gpu-fragmentation": 4, "insufficient-gpu": 4,
}

# What the apiserver's admission adds to every pod's tolerations (DefaultTolerationSeconds)
# and, where enabled, for each extended resource requested (ExtendedResourceToleration):
# they are in the pod but not in its controller's template.
ADMISSION_TOLERATION_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
TEMPLATE_KINDS = {"deployment": "apps", "statefulset": "apps", "daemonset": "apps", "replicaset": "apps", "job": "batch"}
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def workload_ref(ctx: PodContext) -> str:
    """The object a user edits to change the pod: its controller, else the pod."""
    for o in ctx.pod.metadata.ownerReferences:
        if o.controller is not False:
            kind = o.kind.lower()
            if kind == "replicaset":
                rs = ctx.snap.find("ReplicaSet", ctx.ns, o.name)
                for ro in (rs.metadata.ownerReferences if rs else []):
                    if ro.kind == "Deployment":
                        return f"deployment/{ro.name}"
                if "-" in o.name and rs is None:
                    return f"deployment/{o.name.rsplit('-', 1)[0]}"
            return f"{kind}/{o.name}"
    return f"pod/{ctx.name}"


def kubectl(ctx: PodContext) -> str:
    return f"kubectl -n {ctx.ns}"


def esc(key: str) -> str:
    """A map key as a JSON-pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _ops_json(ops: list[dict[str, Any]]) -> str:
    text = json.dumps(ops, separators=(",", ":"))
    return "'" + text.replace("'", "'\\''") + "'"


def _prefix(kind: str) -> Optional[str]:
    if kind == "pod":
        return "/spec"
    if kind in TEMPLATE_KINDS:
        return "/spec/template/spec"
    return None


def dotted(path: str) -> str:
    """``/spec/template/spec/containers/0/resources`` -> ``spec.template.spec.containers[0].resources``."""
    out = ""
    for tok in path.strip("/").split("/"):
        tok = tok.replace("~1", "/").replace("~0", "~")
        if tok.isdigit():
            out += f"[{tok}]"
        elif "." in tok or "/" in tok:
            out += f"[{tok}]"
        else:
            out += ("." if out else "") + tok
    return out


def template_path(ctx: PodContext, pod_path: str) -> str:
    """The full path of a pod-spec field in what the user edits, dotted."""
    kind = workload_ref(ctx).partition("/")[0]
    return dotted((_prefix(kind) or "/spec/template/spec") + pod_path)


def _job_strip_ops(ctx: PodContext, name: str) -> list[dict[str, Any]]:
    """Remove what the apiserver generated on the Job, so the copy can be created:
    only the fields present (read from the Job, else from the pod's labels, which
    are the template's)."""
    job = ctx.snap.find("Job", ctx.ns, name)
    if job is not None:
        spec = job.spec or {}
        if spec.get("manualSelector") is True:
            return []
        labels = (((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
        has_selector = bool(spec.get("selector"))
    else:
        labels = ctx.pod.metadata.labels
        has_selector = any(k in labels for k in JOB_UID_LABELS)
    ops: list[dict[str, Any]] = [{"op": "remove", "path": "/spec/selector"}] if has_selector else []
    ops += [{"op": "remove", "path": f"/spec/template/metadata/labels/{esc(k)}"} for k in JOB_UID_LABELS if k in labels]
    return ops


def recreate_pipeline(ctx: PodContext, ref: str, ops: list[dict[str, Any]]) -> list[str]:
    kind, _, name = ref.partition("/")
    strip = _job_strip_ops(ctx, name) if kind == "job" else []
    what = "the Job (its pods start again)" if kind == "job" else "the pod"
    return [f"{kubectl(ctx)} get {ref} -o json | kubectl patch --local -f - --type=json -p {_ops_json(strip + ops)} "
            f"-o json | kubectl replace --force -f -   # re-creates {what}"]


def change_commands(ctx: PodContext, ops: list[dict[str, Any]], *, pod_mutable: bool = False) -> tuple[list[str], str]:
    """Commands applying ``ops`` (paths relative to the pod spec) to what owns the
    pod's spec, and why a person must judge them ("" when they run as printed)."""
    ref = workload_ref(ctx)
    kind = ref.partition("/")[0]
    prefix = _prefix(kind)
    if prefix is None:
        change = "; ".join(f"{o['op']} {dotted('/spec/template/spec' + o['path'])}"
                           + (f" = {json.dumps(o['value'])}" if "value" in o else "") for o in ops)
        return ([f"{kubectl(ctx)} edit {ref}   # in the pod template of each replica type: {change}"],
                f"{ref.partition('/')[0]} is not a built-in workload: find its pod templates yourself")
    full = [{**o, "path": prefix + o["path"]} for o in ops]
    if kind == "job" or (kind == "pod" and not pod_mutable):
        return recreate_pipeline(ctx, ref, full), ""
    return [f"{kubectl(ctx)} patch {ref} --type=json -p {_ops_json(full)}"], ""


def edit_commands(ctx: PodContext, pod_path: str, current: str, new: str) -> list[str]:
    """For a change whose value the user chooses: the full path, the current value
    and what to set. A Job (or a pod) is written to a file without its generated
    fields, to edit and re-create."""
    ref = workload_ref(ctx)
    kind, _, name = ref.partition("/")
    path = template_path(ctx, pod_path)
    comment = f"{path}: {current} now; set {new}"
    if kind in ("job", "pod"):
        strip = _job_strip_ops(ctx, name) if kind == "job" else []
        get = f"{kubectl(ctx)} get {ref} -o json"
        if strip:
            get += f" | kubectl patch --local -f - --type=json -p {_ops_json(strip)} -o json"
        return [f"{get} > {name}.json   # then in {name}.json, {comment}",
                f"kubectl replace --force -f {name}.json   # re-creates the {'Job (its pods start again)' if kind == 'job' else 'pod'}"]
    return [f"{kubectl(ctx)} edit {ref}   # {comment}"]


def container_index(ctx: PodContext, name: str) -> int:
    for i, c in enumerate(ctx.pod.spec.containers):
        if c.name == name:
            return i
    return 0


def template_tolerations(ctx: PodContext) -> list[dict[str, Any]]:
    """The tolerations the pod's spec source holds: the controller's template when
    the snapshot has it, else the pod's own minus what admission added."""
    ref = workload_ref(ctx)
    kind, _, name = ref.partition("/")
    if kind == "pod":
        return [t for t in _tol_dicts(ctx.pod.spec.tolerations)]
    obj = ctx.snap.find(kind, ctx.ns, name)
    if obj is not None and isinstance(obj.spec, dict):
        tols = (((obj.spec.get("template") or {}).get("spec") or {}).get("tolerations"))
        return list(tols) if isinstance(tols, list) else []
    extended = {r for r in ctx.requests if "/" in r}
    out = []
    for t in _tol_dicts(ctx.pod.spec.tolerations):
        if t.get("key") in ADMISSION_TOLERATION_KEYS and t.get("tolerationSeconds") == 300 and t.get("operator") == "Exists":
            continue
        if t.get("key") in extended and t.get("operator") == "Exists" and not t.get("value") and t.get("effect") == "NoSchedule":
            continue
        out.append(t)
    return out


def _tol_dicts(tols) -> list[dict[str, Any]]:
    out = []
    for t in tols:
        d = {k: getattr(t, k, None) for k in ("key", "operator", "value", "effect", "tolerationSeconds")}
        out.append({k: v for k, v in d.items() if v not in (None, "")})
    return out


def add_toleration_ops(ctx: PodContext, tol: dict[str, Any]) -> list[dict[str, Any]]:
    """Append to the template's list when it has one; else add the list (a JSON-patch
    ``add`` to ``…/tolerations/-`` fails where there is no list)."""
    if template_tolerations(ctx):
        return [{"op": "add", "path": "/tolerations/-", "value": tol}]
    return [{"op": "add", "path": "/tolerations", "value": [tol]}]


def rename_resource_ops(ctx: PodContext, old: str, new: str) -> list[dict[str, Any]]:
    """Rename a resource in every container's limits and requests that name it,
    keeping the quantity as written."""
    ops: list[dict[str, Any]] = []
    for i, c in enumerate(ctx.pod.spec.containers):
        for part in ("limits", "requests"):
            values = getattr(c.resources, part)
            if old in values:
                base = f"/containers/{i}/resources/{part}"
                ops.append({"op": "remove", "path": f"{base}/{esc(old)}"})
                ops.append({"op": "add", "path": f"{base}/{esc(new)}", "value": str(values[old])})
    return ops


def set_limit_ops(ctx: PodContext, index: int, resource: str, value: str) -> list[dict[str, Any]]:
    """Set one container's limit, creating ``resources``/``limits`` where absent."""
    c = ctx.pod.spec.containers[index]
    base = f"/containers/{index}/resources"
    if c.resources.limits:
        return [{"op": "add", "path": f"{base}/limits/{esc(resource)}", "value": value}]
    if c.resources.requests:
        return [{"op": "add", "path": f"{base}/limits", "value": {resource: value}}]
    return [{"op": "add", "path": base, "value": {"limits": {resource: value}}}]


def workload_change_commands(ns: str, obj: Any, ops: list[dict[str, Any]]) -> list[str]:
    """``change_commands`` for a workload read from the snapshot (no pod yet):
    ``ops`` are relative to its pod template spec."""
    kind, name = obj.kind.lower(), obj.metadata.name
    full = [{**o, "path": "/spec/template/spec" + o["path"]} for o in ops]
    if kind != "job":
        return [f"kubectl -n {ns} patch {kind}/{name} --type=json -p {_ops_json(full)}"]
    spec = obj.spec or {}
    labels = (((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
    strip = [] if spec.get("manualSelector") is True else (
        ([{"op": "remove", "path": "/spec/selector"}] if spec.get("selector") else [])
        + [{"op": "remove", "path": f"/spec/template/metadata/labels/{esc(k)}"} for k in JOB_UID_LABELS if k in labels])
    return [f"kubectl -n {ns} get job/{name} -o json | kubectl patch --local -f - --type=json -p {_ops_json(strip + full)} "
            "-o json | kubectl replace --force -f -   # re-creates the Job"]


def crash_log_command(pod: Any, tail: int = 50) -> str:
    """The log of a pod's crashing container: ``-c`` the container that restarted,
    with ``--previous`` only when it has a previous instance (``--all-containers
    --previous`` fails on the first init container that never restarted)."""
    statuses = list(getattr(pod.status, "containerStatuses", []) or [])
    crashed = [s for s in statuses if s.restartCount > 0 or (s.lastState and s.lastState.terminated)]
    base = f"kubectl -n {pod.metadata.namespace} logs {pod.metadata.name}"
    if crashed:
        return f"{base} -c {crashed[0].name} --previous --tail={tail}"
    containers = list(getattr(pod.spec, "containers", []) or [])
    name = containers[0].name if containers else (statuses[0].name if statuses else "")
    return f"{base}{f' -c {name}' if name else ''} --tail={tail}"
