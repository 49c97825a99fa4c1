"""Server-side printing (``meta.k8s.io/v1`` ``Table``) for the kinds people browse a
snapshot for: pods, nodes, events and namespaces.

``kubectl get`` asks the server for a Table and prints its cells; without one it can
only show NAME and AGE. The columns and cells are kube-apiserver's
(pkg/printers/internalversion/printers.go: printPod, printNode, printEvent,
printNamespace), computed with ``Wide`` on as the server always does (kubectl hides
the priority-1 columns unless ``-o wide``). Ages are measured from now, as a real
server measures them, and as ``kubectl describe`` does on the client. Other kinds get
no Table: kubectl then prints NAME and AGE, as it does for them today.

Stdlib-only, like the server.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Callable, Mapping, Optional

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.",
         "priority": 0}
_AGE = {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp of the object.",
        "priority": 0}


def _col(name: str, description: str, priority: int = 0, type_: str = "string") -> dict:
    return {"name": name, "type": type_, "format": "", "description": description, "priority": priority}


def wants_table(accept: str) -> Optional[str]:
    """The Table version (``v1`` or ``v1beta1``) an ``Accept`` header asks for, or None:
    ``application/json;as=Table;v=v1;g=meta.k8s.io,...`` as kubectl sends it."""
    for part in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in part.split(";")[1:])
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return params["v"]
    return None


def _parse_time(value: Any) -> Optional[float]:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _since(value: Any, now: float) -> str:
    t = _parse_time(value)
    return "<unknown>" if t is None else human_duration(now - t)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# ------------------------------------------------------------------ pods

_POD_COLUMNS = [
    _NAME,
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col("Restarts", "The number of times the containers in this pod have been restarted and when the last "
                     "container in this pod has restarted."),
    _AGE,
    _col("IP", "IP address allocated to the pod.", 1),
    _col("Node", "NodeName indicates in which node this pod is scheduled.", 1),
    _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
]


def _restartable(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _pod_row(pod: Mapping[str, Any], now: float) -> list:
    """kubectl get pods' row, as kube-apiserver's printPod builds it."""
    spec, status = _dict(pod.get("spec")), _dict(pod.get("status"))
    containers, inits = _list(spec.get("containers")), _list(spec.get("initContainers"))
    conditions = _list(status.get("conditions"))
    restarts = restartable_restarts = ready = 0
    total = len(containers) + sum(1 for c in inits if _restartable(c))
    last_restart = last_restartable_restart = None
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"

    def later(a: Optional[float], state: Mapping[str, Any]) -> Optional[float]:
        t = _parse_time(_dict(_dict(state.get("lastState")).get("terminated")).get("finishedAt"))
        return t if t is not None and (a is None or t > a) else a

    by_name = {c.get("name"): c for c in inits}
    initializing = False
    for i, cs in enumerate(_list(status.get("initContainerStatuses"))):
        restarts += int(cs.get("restartCount") or 0)
        last_restart = later(last_restart, cs)
        is_sidecar = _restartable(by_name.get(cs.get("name"), {}))
        if is_sidecar:
            restartable_restarts += int(cs.get("restartCount") or 0)
            last_restartable_restart = later(last_restartable_restart, cs)
        state = _dict(cs.get("state"))
        terminated, waiting = _dict(state.get("terminated")), _dict(state.get("waiting"))
        if state.get("terminated") is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") else 0
            continue
        if state.get("terminated") is not None:
            if terminated.get("reason"):
                reason = f"Init:{terminated['reason']}"
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode', 0)}"
        elif waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(inits)}"
        initializing = True
        break

    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
    if not initializing or initialized:
        restarts, last_restart = restartable_restarts, last_restartable_restart
        running = False
        for cs in reversed(_list(status.get("containerStatuses"))):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = later(last_restart, cs)
            state = _dict(cs.get("state"))
            terminated, waiting = _dict(state.get("terminated")), _dict(state.get("waiting"))
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif state.get("terminated") is not None and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif state.get("terminated") is not None:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{terminated.get('exitCode', 0)}")
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            reason = "Running" if pod_ready else "NotReady"

    meta = _dict(pod.get("metadata"))
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    shown_restarts = str(restarts)
    if restarts and last_restart is not None:
        shown_restarts = f"{restarts} ({human_duration(now - last_restart)} ago)"

    return [meta.get("name", ""), f"{ready}/{total}", reason, shown_restarts, _since(meta.get("creationTimestamp"), now),
            *_pod_wide_columns(spec, status, conditions)]


def _pod_wide_columns(spec: Mapping[str, Any], status: Mapping[str, Any], conditions: list) -> list:
    """IP, NODE, NOMINATED NODE, READINESS GATES."""
    ips = _list(status.get("podIPs"))
    ip = str(ips[0].get("ip") or "") if ips else ""
    gates = "<none>"
    if _list(spec.get("readinessGates")):
        wanted = [g.get("conditionType") for g in _list(spec.get("readinessGates"))]
        true = sum(1 for t in wanted if any(c.get("type") == t and c.get("status") == "True" for c in conditions))
        gates = f"{true}/{len(wanted)}"
    return [ip or "<none>", spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", gates]


# ------------------------------------------------------------------ nodes

_NODE_COLUMNS = [
    _NAME,
    _col("Status", "The status of the node"),
    _col("Roles", "The roles of the node"),
    _AGE,
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", "List of addresses reachable to the node.", 1),
    _col("External-IP", "List of addresses reachable to the node.", 1),
    _col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1),
    _col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
    _col("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API "
                              "(e.g. containerd://1.4.2).", 1),
]


def _node_row(node: Mapping[str, Any], now: float) -> list:
    meta, spec, status = _dict(node.get("metadata")), _dict(node.get("spec")), _dict(node.get("status"))
    ready = next((c for c in _list(status.get("conditions")) if c.get("type") == "Ready"), None)
    shown = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        shown.append("SchedulingDisabled")
    roles = set()
    for key, value in _dict(meta.get("labels")).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = _dict(status.get("nodeInfo"))
    addresses = _list(status.get("addresses"))

    def address(kind: str) -> str:
        return next((str(a.get("address")) for a in addresses if a.get("type") == kind), "<none>")

    return [meta.get("name", ""), ",".join(shown), ",".join(sorted(roles)) or "<none>",
            _since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            address("InternalIP"), address("ExternalIP"), info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]


# ------------------------------------------------------------------ events

_EVENT_COLUMNS = [
    _col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", "This should be a short, machine understandable string that gives the reason for the transition "
                   "into the object's current status."),
    _col("Object", "The object that this event is about."),
    _col("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain "
                      "a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].", 1),
    _col("Source", "The component reporting this event. Should be a short machine understandable string.", 1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", 1),
    _col("Count", "The number of times this event has occurred.", 1),
    {**_NAME, "priority": 1},
]


def _event_row(event: Mapping[str, Any], now: float) -> list:
    first = _since(event.get("firstTimestamp"), now) if event.get("firstTimestamp") else \
        _since(event.get("eventTime"), now)
    last = _since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = event.get("count") or 0
    series = _dict(event.get("series"))
    if event.get("series") is not None:
        last = _since(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif not count:
        count = 1
    involved = _dict(event.get("involvedObject"))
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = _dict(event.get("source"))    # formatEventSource: source, else the reporting controller
    component = str(source.get("component") or event.get("reportingComponent") or "")
    instance = str(source.get("host") or event.get("reportingInstance") or "")
    origin = f"{component}, {instance}" if instance else component
    return [last, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""), origin,
            str(event.get("message") or "").strip(), first, int(count) if str(count).isdigit() else count,
            _dict(event.get("metadata")).get("name", "")]


# ------------------------------------------------------------------ namespaces

_NAMESPACE_COLUMNS = [
    _NAME,
    _col("Status", "The status of the namespace"),
    _AGE,
]


def _namespace_row(ns: Mapping[str, Any], now: float) -> list:
    meta = _dict(ns.get("metadata"))
    return [meta.get("name", ""), _dict(ns.get("status")).get("phase", ""), _since(meta.get("creationTimestamp"), now)]


PRINTERS: dict[tuple[str, str], tuple[list[dict], Callable[[Mapping[str, Any], float], list]]] = {
    ("", "pods"): (_POD_COLUMNS, _pod_row),
    ("", "nodes"): (_NODE_COLUMNS, _node_row),
    ("", "events"): (_EVENT_COLUMNS, _event_row),
    ("", "namespaces"): (_NAMESPACE_COLUMNS, _namespace_row),
}


def _row_object(obj: Mapping[str, Any], include: str) -> Optional[dict]:
    if include == "None":
        return None
    if include == "Object":
        return dict(obj)
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _dict(obj.get("metadata"))}


def table(group: str, plural: str, objects: list[Mapping[str, Any]], version: str, include: str,
          metadata: Mapping[str, Any], columns: bool = True) -> Optional[dict]:
    """The Table for ``objects`` of ``group``/``plural``, or None when this kind has no
    printer. ``include``: the ``includeObject`` parameter (``None``, ``Metadata``, the
    default, or ``Object``). ``columns=False`` leaves out the column definitions (watch
    events after the first)."""
    printer = PRINTERS.get((group, plural))
    if printer is None:
        return None
    definitions, row = printer
    now = time.time()
    rows = []
    for obj in objects:
        entry: dict[str, Any] = {"cells": row(obj, now)}
        phase = _dict(obj.get("status")).get("phase") if plural == "pods" else None
        if phase in ("Succeeded", "Failed"):
            entry["conditions"] = [{"type": "Completed", "status": "True", "reason": phase,
                                    "message": "The pod has completed successfully." if phase == "Succeeded"
                                    else "The pod failed."}]
        embedded = _row_object(obj, include)
        if embedded is not None:
            entry["object"] = embedded
        rows.append(entry)
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}", "metadata": dict(metadata),
            "columnDefinitions": definitions if columns else [], "rows": rows}
