"""The snapshot: everything a command knows about the cluster, as slim records.

A live run (gpuctl/collect/kube.py) and a ``--snapshot`` run (gpuctl/collect/files.py)
fill the same :class:`Snapshot`. Checks read it and never call the cluster.

What could not be read is as important as what was: every data set a check may
depend on is either present or has a :class:`Gap` saying why not (403 with the RBAC
verb and resource that would allow it, 404, timeout, unreachable, absent from the
snapshot file). The engine turns a gap into a ``skipped`` check.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from .objects import (Event, GenericObject, Node, PersistentVolumeClaim, Pod, ResourceQuota, RuntimeClass, StorageClass,
                      Unreadable, scrub_quantities)

# Data sets checks may depend on (the keys of Snapshot.gaps).
NODES = "nodes"
PODS = "pods"              # non-terminated pods bound to the candidate nodes
EVENTS = "events"          # events of the target
QUOTAS = "resourcequotas"
DEVICE_PLUGINS = "device-plugin-pods"
PVCS = "persistentvolumeclaims"
RUNTIMECLASSES = "runtimeclasses"
QUEUES = "queues"
DRA = "dra"
LOGS = "logs"             # container logs (the target's, the device plugin's)
METRICS = "dcgm-metrics"
POOL = "pool"              # the other nodes of a node's pool (diagnose node)
PENDING_PODS = "pending-pods"   # unbound Pending pods (who waits for a cordoned node)
OWNERS = "owners"          # a pod's owners (ReplicaSet, Deployment: rollbacks)
STORAGECLASSES = "storageclasses"   # read with the PVCs that name one (part of PVCS)
DAEMONSETS = "daemonsets"  # device-plugin DaemonSets, when nobody serves a GPU resource
# Every data set a check may declare it reads (CheckSpec.reads).
DATA_SETS = (NODES, PODS, EVENTS, QUOTAS, DEVICE_PLUGINS, PVCS, RUNTIMECLASSES, QUEUES, DRA, LOGS, METRICS, POOL,
             PENDING_PODS, OWNERS, DAEMONSETS)
RUNTIMECLASSES_KEY = RUNTIMECLASSES


@dataclass
class Gap:
    """Why a data set is missing: what request failed and how to unlock it."""

    what: str                      # "list nodes (cluster-wide)"
    reason: str                    # forbidden | not-found | unreachable | timeout | error | absent | unauthorized
    detail: str = ""
    verb: Optional[str] = None     # RBAC verb that would allow it (for 403)
    resource: Optional[str] = None
    namespace: Optional[str] = None
    group: str = ""

    def describe(self) -> str:
        if self.reason == "forbidden":
            scope = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
            group = f" (API group {self.group})" if self.group else ""
            return f"{self.what}: forbidden; needs RBAC verb '{self.verb}' on '{self.resource}'{group} {scope}"
        if self.reason == "absent":
            return f"{self.what}: {self.detail or 'not in the snapshot'}"
        return f"{self.what}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


def parse_time(text: Optional[str]) -> Optional[dt.datetime]:
    if not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def human_age(seconds: Optional[float]) -> str:
    """An age as kubectl prints it: 45s, 12m, 3h05m, 2d."""
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m" if s % 3600 >= 60 else f"{s // 3600}h"
    return f"{s // 86400}d"



class LogStore:
    """Container logs: fetched up front by the live collector, or read on demand
    from ``logs/<ns>/<pod>/<container>[.previous].log`` in a snapshot directory."""

    def __init__(self, loader: Optional[Callable[[str, str, str, bool], Optional[str]]] = None):
        self._logs: dict[tuple[str, str, str, bool], str] = {}
        self._loader = loader

    def put(self, ns: str, pod: str, container: str, previous: bool, text: str) -> None:
        self._logs[(ns, pod, container, previous)] = text

    def get(self, ns: str, pod: str, container: str, previous: bool = False) -> Optional[str]:
        key = (ns, pod, container, previous)
        if key not in self._logs and self._loader is not None:
            text = self._loader(*key)
            if text is None:
                return None
            self._logs[key] = text
        return self._logs.get(key)

    def keys(self) -> Iterable[tuple[str, str, str, bool]]:
        return self._logs.keys()


_QUANTITY_KINDS = frozenset({"Node", "Pod", "BoundPod", "BoundPodLite", "ResourceQuota"})


def unreadable_dicts(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """The JSON form of Snapshot.unreadable() (docs/output.md, "Objects that could not
    be read"); a plain line becomes an entry with only ``problem``."""
    out = []
    for m in entries:
        if isinstance(m, Unreadable):
            out.append(m.to_dict())
        else:
            out.append({"kind": None, "namespace": None, "name": None, "field": None, "problem": str(m),
                        "kept": None, "source": None})
    return out


@dataclass
class Snapshot:
    source: str = "snapshot"                  # "live" | "snapshot"
    captured_at: Optional[dt.datetime] = None
    context: Optional[str] = None
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)          # "ns/name" -> Pod
    events: list[Event] = field(default_factory=list)
    quotas: list[ResourceQuota] = field(default_factory=list)
    pvcs: dict[str, PersistentVolumeClaim] = field(default_factory=dict)
    storage_classes: dict[str, StorageClass] = field(default_factory=dict)
    runtime_classes: dict[str, RuntimeClass] = field(default_factory=dict)
    generic: dict[str, list[GenericObject]] = field(default_factory=dict)
    logs: LogStore = field(default_factory=LogStore)
    metrics: dict[str, str] = field(default_factory=dict)        # node -> Prometheus text
    probes: dict[str, Any] = field(default_factory=dict)         # node -> probe JSON
    gaps: dict[str, Gap] = field(default_factory=dict)
    # What could not be fully read: an Unreadable per object field (the record kept
    # with the field emptied, or left out), or a plain line (a probe file, a
    # snapshot.json entry). Read it through unreadable().
    malformed: list[Any] = field(default_factory=list)
    # Nodes whose bound pods are all known (None: every node's).
    pods_known_for: Optional[set[str]] = None
    # Namespaces a saved snapshot holds namespaced objects of (None: all of them).
    namespaces: Optional[list[str]] = None
    # For a live run: the request that failed for logs, keyed "ns/pod/container".
    log_gaps: dict[str, Gap] = field(default_factory=dict)
    # The data sets a live collector covered for its target: read, tried (a gap
    # says why it failed), or found from the target that there is none of it to
    # read (a pod with no PVC, no RuntimeClass). None for a file: it holds what it holds.
    collected: Optional[set[str]] = None
    _event_index: Optional[tuple[int, dict[tuple[str, str], list[Event]]]] = field(default=None, repr=False)
    _problem_index: Optional[tuple[int, dict[tuple, list[Unreadable]]]] = field(default=None, repr=False)

    # ------------------------------------------------------------ adding records
    def add(self, kind: str, rec: Any) -> None:
        if kind in _QUANTITY_KINDS:
            bad = scrub_quantities(kind, rec)
            if bad:
                self.malformed.extend(bad)
        if kind == "Node":
            self.nodes[rec.metadata.name] = rec
        elif kind == "Pod":
            self.pods[f"{rec.metadata.namespace}/{rec.metadata.name}"] = rec
        elif kind in ("BoundPod", "BoundPodLite"):
            self.add_clean_pod(rec)
        elif kind == "Event":
            self.events.append(rec)
        elif kind == "ResourceQuota":
            self.quotas.append(rec)
        elif kind == "PersistentVolumeClaim":
            self.pvcs[f"{rec.metadata.namespace}/{rec.metadata.name}"] = rec
        elif kind == "StorageClass":
            self.storage_classes[rec.metadata.name] = rec
        elif kind == "RuntimeClass":
            self.runtime_classes[rec.metadata.name] = rec
        else:
            self.generic.setdefault(kind, []).append(rec)

    def add_clean_pod(self, rec: Any) -> None:
        """``add`` of a slim pod (BoundPod, BoundPodLite) whose quantities are known to
        parse: nothing to scrub (a reader that shares a clean spec between records knows)."""
        self.pods.setdefault(f"{rec.metadata.namespace}/{rec.metadata.name}", rec)

    def unreadable(self, kinds: Optional[Iterable[str]] = None) -> list[Any]:
        """What could not be fully read, once each: :class:`Unreadable` entries (only
        of ``kinds`` when given) and, without ``kinds``, the plain lines."""
        wanted = set(kinds) if kinds is not None else None
        seen: set = set()
        out: list[Any] = []
        for m in self.malformed:
            if isinstance(m, Unreadable):
                if wanted is not None and m.kind not in wanted:
                    continue
                key = m.key
            else:
                if wanted is not None:
                    continue
                key = str(m)
            if key not in seen:
                seen.add(key)
                out.append(m)
        return out

    def problems_of(self, kind: str, namespace: Optional[str], name: str) -> list[Unreadable]:
        """The fields of one object that could not be read (indexed: called per pod)."""
        if not self.malformed:
            return []
        if self._problem_index is None or self._problem_index[0] != len(self.malformed):
            index: dict[tuple, list[Unreadable]] = {}
            for m in self.unreadable():
                if isinstance(m, Unreadable):
                    index.setdefault((m.kind, m.namespace or None, m.name), []).append(m)
            self._problem_index = (len(self.malformed), index)
        return self._problem_index[1].get((kind, namespace or None, name), [])

    def gap(self, key: str) -> Optional[Gap]:
        return self.gaps.get(key)

    # ------------------------------------------------------------ lookups
    def objects(self, kind: str) -> list[GenericObject]:
        return self.generic.get(kind, [])

    def find(self, kind: str, namespace: Optional[str], name: str) -> Optional[Any]:
        kind_l = kind.lower()
        for k, objs in self.generic.items():
            if k.lower() != kind_l:
                continue
            for o in objs:
                if o.metadata.name == name and (namespace is None or o.metadata.namespace in (namespace, None)):
                    return o
        return None

    def pods_on(self, node: str) -> list[Pod]:
        return [p for p in self.pods.values() if p.spec.nodeName == node and not p.terminated]

    def pods_by_node(self) -> dict[str, list[Pod]]:
        out: dict[str, list[Pod]] = {}
        for p in self.pods.values():
            if p.spec.nodeName and not p.terminated:
                out.setdefault(p.spec.nodeName, []).append(p)
        return out

    def events_for(self, kind: str, namespace: Optional[str], name: str, uid: Optional[str] = None) -> list[Event]:
        if self._event_index is None or self._event_index[0] != len(self.events):
            index: dict[tuple[str, str], list[Event]] = {}
            for e in self.events:
                index.setdefault((e.involvedObject.kind or "", e.involvedObject.name or ""), []).append(e)
            self._event_index = (len(self.events), index)
        out = []
        for e in self._event_index[1].get((kind, name), []):
            io = e.involvedObject
            if io.kind != kind or io.name != name:
                continue
            if namespace is not None and (io.namespace or e.metadata.namespace) not in (namespace, None):
                continue
            if uid and io.uid and io.uid != uid:
                continue
            out.append(e)
        out.sort(key=lambda e: e.last_seen or "")
        return out

    # ------------------------------------------------------------ time
    _now: Optional[dt.datetime] = None

    def now(self) -> dt.datetime:
        """"Now" for ages: capturedAt, else the newest timestamp in the snapshot
        (never a deletionTimestamp, which lies in the future); live: the clock."""
        if self.captured_at is not None:
            return self.captured_at
        if self._now is None:
            newest: Optional[dt.datetime] = None

            def see(text: Optional[str]) -> None:
                nonlocal newest
                t = parse_time(text)
                if t is not None and (newest is None or t > newest):
                    newest = t

            for n in self.nodes.values():
                see(n.metadata.creationTimestamp)
                for c in n.status.conditions:
                    see(c.lastTransitionTime)
                    see(c.lastHeartbeatTime)
            for p in self.pods.values():
                see(p.metadata.creationTimestamp)
                for c in p.status.conditions:
                    see(c.lastTransitionTime)
                for cs in p.status.containerStatuses:
                    for st in (cs.state, cs.lastState):
                        if st and st.running:
                            see(st.running.startedAt)
                        if st and st.terminated:
                            see(st.terminated.finishedAt)
            for e in self.events:
                see(e.last_seen)
            self._now = newest or dt.datetime.now(dt.timezone.utc)
        return self._now

    def age_seconds(self, text: Optional[str]) -> Optional[float]:
        t = parse_time(text)
        if t is None:
            return None
        return max(0.0, (self.now() - t).total_seconds())
