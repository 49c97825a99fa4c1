"""Finding each GPU node's device-plugin pod and reading its state and log.

The pod is found by the label selectors of every known deployment style (GPU
Operator, Helm chart, static manifest, GKE's managed plugin, …; data in
gpuctl/knowledge/device_plugins.yaml). Its log is classified with the patterns in
gpuctl/knowledge/device_plugin_logs.yaml: NVML init failures, devices marked
unhealthy, Xids. Later issues extend this (toolkit validation, DCGM, probes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from ..knowledge.messages import load_yaml
from ..model.objects import Node, Pod
from ..model.snapshot import Snapshot

LOG_TAIL_LINES = 400


@dataclass(frozen=True)
class LogPattern:
    kind: str
    regex: re.Pattern[str]
    source: str


@lru_cache(maxsize=None)
def log_patterns() -> tuple[LogPattern, ...]:
    rows = load_yaml("device_plugin_logs.yaml")["patterns"]
    return tuple(LogPattern(r["kind"], re.compile(r["pattern"]), r["source"]) for r in rows)


@dataclass
class LogFinding:
    kind: str
    line: str
    xid: Optional[int] = None


def classify_log(text: str) -> list[LogFinding]:
    out: list[LogFinding] = []
    for line in text.splitlines()[-LOG_TAIL_LINES:]:
        for p in log_patterns():
            m = p.regex.search(line)
            if m:
                xid = m.groupdict().get("xid")
                out.append(LogFinding(p.kind, line.strip(), int(xid) if xid else None))
                break
    return out


@dataclass
class NodePlugin:
    node: str
    pods: list[Pod] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # evidence lines: missing, not ready, crash-looping
    log: list[LogFinding] = field(default_factory=list)
    # ("ns/pod/container[ (previous)]", lines classified, lines in the log): a clean log is evidence
    logs_read: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def nvml_failed(self) -> bool:
        return any(f.kind == "nvml-init" for f in self.log)

    @property
    def unhealthy_lines(self) -> list[LogFinding]:
        return [f for f in self.log if f.kind == "unhealthy"]

    def logs_text(self) -> str:
        """What was read, for evidence: "53 lines of ns/pod" (the container named
        when the pod has more than one log read), "the last 400 of 1200 lines of …",
        "the empty log of …"."""
        per_pod: dict[str, int] = {}
        for where, _, _ in self.logs_read:
            pod = "/".join(where.split("/")[:2])
            per_pod[pod] = per_pod.get(pod, 0) + 1
        out = []
        for where, scanned, total in self.logs_read:
            pod = "/".join(where.split("/")[:2])
            ref = pod if per_pod[pod] == 1 and not where.endswith("(previous)") else where
            out.append(log_extent(ref, scanned, total))
        return ", ".join(out)


def log_extent(ref: str, scanned: int, total: int) -> str:
    if total == 0:
        return f"the empty log of {ref}"
    if scanned < total:
        return f"the last {scanned} of {total} lines of {ref}"
    return f"{total} line{'s' if total != 1 else ''} of {ref}"


@dataclass
class DevicePluginState:
    by_node: dict[str, NodePlugin]
    known: bool   # False when the device-plugin pods could not be listed

    def for_node(self, node: str) -> NodePlugin:
        return self.by_node.get(node) or NodePlugin(node)


def is_device_plugin_pod(pod: Pod) -> bool:
    from ..knowledge.catalog import labels_mark_device_plugin

    return labels_mark_device_plugin(pod.metadata.labels, pod.metadata.namespace)


def pod_problems(pod: Pod) -> list[str]:
    ref = f"pod/{pod.metadata.name} -n {pod.metadata.namespace}"
    out = []
    for cs in pod.status.initContainerStatuses:
        w = cs.state.waiting if cs.state else None
        if cs.state and cs.state.running and not cs.ready:
            out.append(f"{ref}: init container {cs.name} still running (not done)")
        elif w:
            out.append(f"{ref}: init container {cs.name} waiting ({w.reason or 'unknown'})")
    for cs in pod.status.containerStatuses:
        w = cs.state.waiting if cs.state else None
        if w and w.reason:
            last = cs.lastState.terminated if cs.lastState else None
            extra = f", last exit code {last.exitCode}" if last else ""
            out.append(f"{ref}: container {cs.name} {w.reason} (restarts {cs.restartCount}{extra})")
        elif not cs.ready:
            out.append(f"{ref}: container {cs.name} not ready (restarts {cs.restartCount})")
    if not out and pod.phase != "Running":
        out.append(f"{ref}: phase {pod.phase}")
    return out


def device_plugin_state(snap: Snapshot, gpu_nodes: list[Node],
                        pods_by_node: Optional[dict[str, list[Pod]]] = None) -> DevicePluginState:
    """``pods_by_node``: ``snap.pods_by_node()`` when the caller has it: the pods of a
    few nodes are then read without going over every pod (the same pods, in the same
    order: snapshot order, terminated ones left out)."""
    from ..model.snapshot import DEVICE_PLUGINS

    known = DEVICE_PLUGINS not in snap.gaps
    by_node: dict[str, NodePlugin] = {}
    wanted = {n.metadata.name for n in gpu_nodes}
    if pods_by_node is not None:
        for node in sorted(wanted):
            for p in pods_by_node.get(node, ()):
                if is_device_plugin_pod(p):
                    by_node.setdefault(node, NodePlugin(node)).pods.append(p)
    else:
        for p in snap.pods.values():
            node = p.spec.nodeName
            if node in wanted and not p.terminated and is_device_plugin_pod(p):
                by_node.setdefault(node, NodePlugin(node)).pods.append(p)
    for name in wanted:
        np_ = by_node.setdefault(name, NodePlugin(name))
        if not np_.pods:
            if known:
                np_.problems.append(f"node/{name}: no device-plugin pod runs on it")
            continue
        for p in np_.pods:
            np_.problems.extend(pod_problems(p))
            containers = [c.name for c in p.spec.containers]
            restarted = {cs.name for cs in p.status.containerStatuses if cs.restartCount > 0}
            for c in containers:
                for previous in (False, True):
                    if previous and c not in restarted:
                        continue
                    text = snap.logs.get(p.metadata.namespace or "", p.metadata.name, c, previous)
                    if text is None:
                        continue
                    where = f"{p.metadata.namespace}/{p.metadata.name}/{c}" + (" (previous)" if previous else "")
                    total = len(text.splitlines())
                    np_.logs_read.append((where, min(total, LOG_TAIL_LINES), total))
                    if text:
                        np_.log.extend(classify_log(text))
    return DevicePluginState(by_node, known)
