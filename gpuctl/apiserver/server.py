"""The read-only Kubernetes API server behind ``gpuctl snapshot serve``.

It serves a snapshot's objects (whatever ``--snapshot`` reads) on 127.0.0.1 so that
kubectl, k9s, the ``kubernetes`` Python client or gpuctl itself can browse a cluster
as it was when the snapshot was taken. Nothing is written: every write verb (POST,
PUT, PATCH, DELETE) answers 405 with a ``Status`` saying the served snapshot is
read-only, and discovery advertises only ``get``, ``list`` and ``watch``. The one
POST answered is an access review (SelfSubjectAccessReview/RulesReview, JSON or
kubectl's protobuf), which allows exactly those verbs: ``kubectl auth can-i`` and
k9s ask before they act.

What is served, as kube-apiserver serves it:

* Routing exactly like kube-apiserver's ``RequestInfoFactory``: core
  ``/api/v1/...``, group ``/apis/<group>/<version>/...``, namespaced and
  cluster-scoped collections, named objects, the ``pods/log`` subresource,
  and the ``pods/proxy`` subresource in front of an emulated DCGM exporter
  (``metrics``: node -> Prometheus text), with the apiserver's proxy errors.
  A group/version or resource that is not served answers the same generic 404
  a real server gives for a CRD that is not installed.
* Discovery (``/api``, ``/apis``, group/versions with short names), ``/version``,
  the health endpoints, and just enough OpenAPI v3 for kubectl.
* ``labelSelector`` with the full set-based grammar, and ``fieldSelector``
  validated per kind with the *same* accepted labels and the same 400 text a
  real server returns - a selector that works here works on a cluster.
* Chunked lists (``limit``/``continue``, 410 "Expired" for compacted tokens), an
  optional server-side page cap, and WATCH as the apiserver's watch cache serves
  it: a chunked stream of JSON events (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)
  from a ``resourceVersion`` out of a bounded event log (410 Expired when it is too
  old), bookmarks, ``timeoutSeconds``. Nothing changes a served snapshot, so its
  watches see the initial ADDED events and bookmarks; the tests' server writes.
* Server-side printing (``Table``) of pods, nodes, events and namespaces, so
  ``kubectl get`` shows the columns it shows on a cluster (tables.py).

It is stdlib-only on purpose and must not import ``kubernetes`` (gpuctl's tests
point the real client at it, so it must not share code with the client), nor
gpuctl's checks, engine, reports, rendering or commands: the one module it shares
with gpuctl is the label-selector grammar (gpuctl/model/selectors.py).

gpuctl's tests extend this class with what only tests need (bearer-token auth,
RBAC emulation, fault injection, request recording, and the write verbs emulated
with dryRun, preconditions and immutability): ``tests/support/kubeapi.py``, which
is not part of the installed package.
"""

from __future__ import annotations

import base64
import bisect
import copy
import gzip
import hashlib
import ipaddress
import json
import re
import socket
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Iterator, Mapping
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["ReadOnlyAPIServer", "status_body"]

DEFAULT_VERSION = "v1.31.0"
HOST = "127.0.0.1"          # never anything else: a snapshot is served to this machine only
READ_METHODS = ("GET", "HEAD")
READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
_REVIEWS = {"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": "SelfSubjectAccessReview",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews": "SelfSubjectRulesReview"}
READ_ONLY_MESSAGE = "the served snapshot is read-only (gpuctl snapshot serve)"


# ---------------------------------------------------------------------------
# Resource catalogue: kind -> plural / scope / group, as the real API serves it.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _KindInfo:
    """One entry of the built-in kind catalogue.

    ``versions`` lists the versions of ``group`` that serve the kind (``None``:
    every served version of the group). ``crd`` marks kinds that, on a real
    cluster, come from a CustomResourceDefinition: they are served by
    apiextensions-apiserver, which validates field selectors and patch types
    differently from kube-apiserver's compiled-in types.
    """

    group: str
    kind: str
    plural: str
    namespaced: bool
    crd: bool = False
    versions: tuple[str, ...] | None = None


_CATALOGUE: tuple[_KindInfo, ...] = (
    # core/v1
    _KindInfo("", "Node", "nodes", False),
    _KindInfo("", "Pod", "pods", True),
    _KindInfo("", "Event", "events", True),
    _KindInfo("", "Namespace", "namespaces", False),
    _KindInfo("", "ResourceQuota", "resourcequotas", True),
    _KindInfo("", "LimitRange", "limitranges", True),
    _KindInfo("", "ConfigMap", "configmaps", True),
    _KindInfo("", "Secret", "secrets", True),
    _KindInfo("", "ServiceAccount", "serviceaccounts", True),
    _KindInfo("", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    _KindInfo("", "PersistentVolume", "persistentvolumes", False),
    _KindInfo("", "Service", "services", True),
    _KindInfo("", "Endpoints", "endpoints", True),
    _KindInfo("", "ReplicationController", "replicationcontrollers", True),
    # built-in groups
    _KindInfo("apps", "DaemonSet", "daemonsets", True),
    _KindInfo("apps", "Deployment", "deployments", True),
    _KindInfo("apps", "ReplicaSet", "replicasets", True),
    _KindInfo("apps", "StatefulSet", "statefulsets", True),
    _KindInfo("batch", "Job", "jobs", True),
    _KindInfo("batch", "CronJob", "cronjobs", True),
    _KindInfo("scheduling.k8s.io", "PriorityClass", "priorityclasses", False),
    _KindInfo("node.k8s.io", "RuntimeClass", "runtimeclasses", False),
    _KindInfo("storage.k8s.io", "StorageClass", "storageclasses", False),
    _KindInfo("storage.k8s.io", "CSIDriver", "csidrivers", False),
    _KindInfo("coordination.k8s.io", "Lease", "leases", True),
    _KindInfo("events.k8s.io", "Event", "events", True),
    _KindInfo("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", False),
    # Dynamic Resource Allocation (compiled in, not a CRD)
    _KindInfo("resource.k8s.io", "ResourceClaim", "resourceclaims", True),
    _KindInfo("resource.k8s.io", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    _KindInfo("resource.k8s.io", "DeviceClass", "deviceclasses", False),
    _KindInfo("resource.k8s.io", "ResourceSlice", "resourceslices", False),
    # CRD-based schedulers / training operators / autoscalers
    _KindInfo("kueue.x-k8s.io", "Workload", "workloads", True, crd=True),
    _KindInfo("kueue.x-k8s.io", "LocalQueue", "localqueues", True, crd=True),
    _KindInfo("kueue.x-k8s.io", "ClusterQueue", "clusterqueues", False, crd=True),
    _KindInfo("kueue.x-k8s.io", "ResourceFlavor", "resourceflavors", False, crd=True),
    _KindInfo("kueue.x-k8s.io", "Cohort", "cohorts", False, crd=True),
    _KindInfo("kueue.x-k8s.io", "AdmissionCheck", "admissionchecks", False, crd=True),
    # Kueue's visibility API (an aggregated API, not a CRD): only the
    # ``pendingworkloads`` subresource is answered, computed from the Workloads
    # (_pending_workloads). Served when the snapshot holds a PendingWorkloadsSummary.
    _KindInfo("visibility.kueue.x-k8s.io", "ClusterQueue", "clusterqueues", False, versions=("v1beta1", "v1beta2")),
    _KindInfo("visibility.kueue.x-k8s.io", "LocalQueue", "localqueues", True, versions=("v1beta1", "v1beta2")),
    _KindInfo("scheduling.volcano.sh", "PodGroup", "podgroups", True, crd=True),
    _KindInfo("scheduling.volcano.sh", "Queue", "queues", False, crd=True),
    _KindInfo("batch.volcano.sh", "Job", "jobs", True, crd=True),
    # KAI Scheduler (NVIDIA/KAI-Scheduler deployments/kai-scheduler/crds): Queue is
    # cluster-scoped at v2, PodGroup namespaced at v2alpha2.
    _KindInfo("scheduling.run.ai", "Queue", "queues", False, crd=True, versions=("v2",)),
    _KindInfo("scheduling.run.ai", "PodGroup", "podgroups", True, crd=True, versions=("v2alpha2",)),
    _KindInfo("kubeflow.org", "PyTorchJob", "pytorchjobs", True, crd=True, versions=("v1",)),
    _KindInfo("kubeflow.org", "MPIJob", "mpijobs", True, crd=True, versions=("v1", "v2beta1")),
    _KindInfo("jobset.x-k8s.io", "JobSet", "jobsets", True, crd=True),
    _KindInfo("karpenter.sh", "NodeClaim", "nodeclaims", False, crd=True),
    _KindInfo("karpenter.sh", "NodePool", "nodepools", False, crd=True),
)

# Group/versions every real cluster serves whether or not the snapshot holds
# objects of them (an empty list, not a 404). Everything else - DRA, CRDs - is
# served only when the snapshot shows it exists (objects of that apiVersion, a
# CustomResourceDefinition object, or the ``served`` argument).
_ALWAYS_SERVED: tuple[tuple[str, str], ...] = (
    ("", "v1"),
    ("apps", "v1"),
    ("batch", "v1"),
    ("scheduling.k8s.io", "v1"),
    ("node.k8s.io", "v1"),
    ("storage.k8s.io", "v1"),
    ("coordination.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1"),
)
_BUILTIN_GROUPS = {g for g, _ in _ALWAYS_SERVED} | {"resource.k8s.io", "events.k8s.io"}
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"


@dataclass(frozen=True)
class _Resource:
    """A resource as served at one group/version (what a URL resolves to)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    crd: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``schema.GroupResource.String()``: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _pluralize(kind: str) -> str:
    """Default plural for a kind we know nothing about (kubebuilder's rule)."""
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def _version_priority(version: str) -> tuple[int, int, int]:
    """Order versions the way kube-apiserver prefers them (GA > beta > alpha)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (-1, 0, 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (stage, int(m.group(1)), int(m.group(3) or 0))


# DRA (resource.k8s.io) is served at several versions at once, each object converted:
# a cluster whose newest DRA version is v1 (1.34+) also serves v1beta2 and v1beta1, one
# at v1beta2 (1.33) also v1beta1. v1beta2 and v1 have the same shapes; v1beta1 keeps a
# request's fields flat on the request (no ``exactly``) and a device's under ``basic``
# (k8s.io/api/resource/v1beta1 types.go; conversion in pkg/apis/resource/v1beta1).
_DRA_GROUP = "resource.k8s.io"
_DRA_SERVED_WITH = {"v1": ("v1", "v1beta2", "v1beta1"), "v1beta2": ("v1beta2", "v1beta1"), "v1beta1": ("v1beta1",)}


def _dra_convert(obj: dict, to: str) -> dict:
    """One DRA object at another served version (the object is a private copy)."""
    out = json.loads(json.dumps(obj))
    frm = out["apiVersion"].rpartition("/")[2]
    out["apiVersion"] = f"{_DRA_GROUP}/{to}"
    if (frm == "v1beta1") == (to == "v1beta1"):
        return out
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else {}
    if out.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") if isinstance(spec.get("spec"), dict) else {}
    devices = spec.get("devices") if isinstance(spec.get("devices"), dict) else None
    if out.get("kind") in ("ResourceClaim", "ResourceClaimTemplate") and devices is not None:
        reqs = devices.get("requests") if isinstance(devices.get("requests"), list) else []
        if to == "v1beta1":
            devices["requests"] = [dict(name=r.get("name"), **r["exactly"]) if isinstance(r, dict)
                                   and isinstance(r.get("exactly"), dict) else r for r in reqs]
        else:
            devices["requests"] = [r if not isinstance(r, dict) or "firstAvailable" in r else
                                   {"name": r.get("name"), "exactly": {k: v for k, v in r.items() if k != "name"}}
                                   for r in reqs]
    if out.get("kind") == "ResourceSlice" and isinstance(spec.get("devices"), list):
        if to == "v1beta1":
            spec["devices"] = [{"name": d.get("name"), "basic": {k: v for k, v in d.items() if k != "name"}}
                               if isinstance(d, dict) else d for d in spec["devices"]]
        else:
            spec["devices"] = [{"name": d.get("name"), **(d.get("basic") or {})}
                               if isinstance(d, dict) and isinstance(d.get("basic"), dict) else d for d in spec["devices"]]
    return out


def _dra_versions(objs: list[dict]) -> list[dict]:
    """Copies of the DRA objects at the other versions the same API server serves."""
    dra = [o for o in objs if o["apiVersion"].startswith(_DRA_GROUP + "/")]
    have = {o["apiVersion"].rpartition("/")[2] for o in dra}
    known = [v for v in have if v in _DRA_SERVED_WITH]
    if not known:
        return []
    served = _DRA_SERVED_WITH[max(known, key=_version_priority)]
    return [_dra_convert(o, v) for o in dra for v in served
            if v != o["apiVersion"].rpartition("/")[2] and o["apiVersion"].rpartition("/")[2] in _DRA_SERVED_WITH]


class _Catalog:
    """The set of resources this server answers for, built from the snapshot."""

    def __init__(self, objects: list[dict], served: Iterable[str]) -> None:
        self.resources: dict[tuple[str, str, str], _Resource] = {}
        self._by_kind: dict[tuple[str, str, str], _Resource] = {}
        gvs: set[tuple[str, str]] = set(_ALWAYS_SERVED)
        gvs.update(_split_api_version(gv) for gv in served)
        for obj in objects:
            if obj.get("kind") == "CustomResourceDefinition":
                self._register_crd(obj, gvs)
        gvs.update(_split_api_version(o["apiVersion"]) for o in objects)
        for group, version in sorted(gvs):
            for info in _CATALOGUE:
                if info.group == group and (info.versions is None or version in info.versions):
                    self._add(_Resource(group, version, info.kind, info.plural, info.namespaced, info.crd))
        for obj in objects:
            group, version = _split_api_version(obj["apiVersion"])
            if (group, version, obj["kind"]) not in self._by_kind:
                namespaced = bool(obj.get("metadata", {}).get("namespace"))
                self._add(
                    _Resource(group, version, obj["kind"], _pluralize(obj["kind"]), namespaced,
                              crd=group not in _BUILTIN_GROUPS)
                )

    def _register_crd(self, crd: dict, gvs: set[tuple[str, str]]) -> None:
        """A CustomResourceDefinition in the snapshot means its resource is served."""
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
        if not (group and kind and plural):
            return
        for ver in spec.get("versions", []):
            if ver.get("served", True) and ver.get("name"):
                gvs.add((group, ver["name"]))
                self._add(_Resource(group, ver["name"], kind, plural, spec.get("scope") == "Namespaced", True))

    def _add(self, res: _Resource) -> None:
        self.resources.setdefault((res.group, res.version, res.plural), res)
        self._by_kind.setdefault((res.group, res.version, res.kind), res)

    def lookup(self, group: str, version: str, plural: str) -> _Resource | None:
        return self.resources.get((group, version, plural))

    def for_object(self, obj: Mapping[str, Any]) -> _Resource:
        group, version = _split_api_version(obj["apiVersion"])
        return self._by_kind[(group, version, obj["kind"])]

    def group_versions(self) -> dict[str, list[str]]:
        """group -> served versions, preferred first (for discovery)."""
        out: dict[str, set[str]] = {}
        for group, version, _ in self.resources:
            out.setdefault(group, set()).add(version)
        return {g: sorted(vs, key=_version_priority, reverse=True) for g, vs in sorted(out.items())}

    def in_group_version(self, group: str, version: str) -> list[_Resource]:
        return sorted(
            (r for (g, v, _), r in self.resources.items() if g == group and v == version),
            key=lambda r: r.plural,
        )


# Label selectors (k8s.io/apimachinery/pkg/labels grammar) live in gpuctl/model/selectors.py:
# stdlib-only, shared with gpuctl's offline `-l`, never with the kubernetes client.
from ..model.selectors import SelectorError, _LabelRequirement, parse_label_selector  # noqa: E402,F401
from . import tables  # noqa: E402


# ---------------------------------------------------------------------------
# Field selectors: which labels each kind accepts, and what they select.
#
# The apiserver runs every fieldSelector requirement through
# Scheme.ConvertFieldLabel(gvk, label, value) and turns an error into a 400
# whose message is err.Error() verbatim (ListResource in
# kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go:
# `err = errors.NewBadRequest(err.Error())`). The accepted labels and messages
# below are transcribed from the registered conversion funcs, found with the
# code search:
#   * kubernetes/kubernetes pkg/apis/core/v1/conversion.go: Pod (incl. the
#     legacy alias spec.host -> spec.nodeName), Node (metadata.name and
#     spec.unschedulable only - no metadata.namespace), ReplicationController,
#     Event, Namespace (status.phase, metadata.name), Secret, Service; all
#     reject with "field label not supported: <label>".
#   * kubernetes/kubernetes pkg/apis/batch/v1/conversion.go: Job accepts
#     status.successful and rejects with `field label "<label>" not supported
#     for batchv1.Job` (a user report of exactly that text was also found).
#   * kubernetes/kubernetes pkg/apis/resource/v1beta1/conversion.go:
#     ResourceSlice accepts metadata.name, spec.nodeName, spec.driver and
#     rejects with "field label not supported for
#     resource.k8s.io/v1beta1, Kind=ResourceSlice: <label>".
#   * Kinds with no registered func fall back to
#     runtime.DefaultMetaV1FieldSelectorConversion (apimachinery
#     pkg/runtime/conversion.go via Scheme.ConvertFieldLabel): metadata.name and
#     metadata.namespace only, rejecting with `"<label>" is not a known field
#     selector: only "metadata.name", "metadata.namespace"`. apps/v1 registers
#     no field-label funcs (pkg/apis/apps/v1/conversion.go), so
#     ReplicaSet status.replicas is *rejected* on a real server - only the
#     core/v1 ReplicationController accepts status.replicas.
#   * CRDs use apiextensions' crConverter.ConvertFieldLabel: metadata.name,
#     plus metadata.namespace for namespaced CRDs, rejecting with
#     "field label not supported: <label>".
# Values come from each registry strategy's ToSelectableFields
# (pkg/registry/core/pod/strategy.go etc.): absent strings select as "",
# booleans as "true"/"false", counters as decimal strings; pods' status.podIPs
# is accepted but never set there, so it only ever equals "".
# ---------------------------------------------------------------------------


def _get_path(obj: Mapping[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _str_field(path: str) -> Callable[[Mapping[str, Any]], str]:
    def get(obj: Mapping[str, Any]) -> str:
        v = _get_path(obj, path)
        return "" if v is None else str(v)

    return get


def _bool_field(path: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda obj: "true" if _get_path(obj, path) is True else "false"


def _int_field(path: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda obj: str(int(_get_path(obj, path) or 0))


def _pod_ip(obj: Mapping[str, Any]) -> str:
    ips = _get_path(obj, "status.podIPs") or []
    if ips and isinstance(ips[0], Mapping) and ips[0].get("ip"):
        return str(ips[0]["ip"])
    return str(_get_path(obj, "status.podIP") or "")


def _event_source(obj: Mapping[str, Any]) -> str:
    return str(_get_path(obj, "source.component") or obj.get("reportingComponent") or "")


def _not_supported(label: str) -> str:
    return f"field label not supported: {label}"


def _default_meta_reject(label: str) -> str:
    return f'{json.dumps(label)} is not a known field selector: only "metadata.name", "metadata.namespace"'


@dataclass(frozen=True)
class _FieldSpec:
    """Per-kind field-selector contract: accepted labels, aliases, values, error text."""

    accepted: tuple[str, ...]
    values: Mapping[str, Callable[[Mapping[str, Any]], str]]
    reject: Callable[[str], str] = _not_supported
    aliases: Mapping[str, str] = field(default_factory=dict)


_META_NS = ("metadata.name", "metadata.namespace")
_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

_FIELD_SPECS: dict[tuple[str, str], _FieldSpec] = {
    ("", "Pod"): _FieldSpec(
        accepted=_META_NS + (
            "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName",
        ),
        values={
            "spec.nodeName": _str_field("spec.nodeName"),
            "spec.restartPolicy": _str_field("spec.restartPolicy"),
            "spec.schedulerName": _str_field("spec.schedulerName"),
            "spec.serviceAccountName": _str_field("spec.serviceAccountName"),
            "spec.hostNetwork": _bool_field("spec.hostNetwork"),
            "status.phase": _str_field("status.phase"),
            "status.podIP": _pod_ip,
            "status.nominatedNodeName": _str_field("status.nominatedNodeName"),
        },
        aliases={"spec.host": "spec.nodeName"},
    ),
    ("", "Node"): _FieldSpec(
        accepted=("metadata.name", "spec.unschedulable"),
        values={"spec.unschedulable": _bool_field("spec.unschedulable")},
    ),
    ("", "Namespace"): _FieldSpec(
        accepted=("metadata.name", "status.phase"),
        values={"status.phase": _str_field("status.phase")},
    ),
    ("", "Event"): _FieldSpec(
        accepted=_META_NS + tuple(f"involvedObject.{f}" for f in _INVOLVED)
        + ("reason", "reportingComponent", "source", "type"),
        values={
            **{f"involvedObject.{f}": _str_field(f"involvedObject.{f}") for f in _INVOLVED},
            "reason": _str_field("reason"),
            "reportingComponent": _str_field("reportingComponent"),
            "source": _event_source,
            "type": _str_field("type"),
        },
    ),
    ("", "ReplicationController"): _FieldSpec(
        accepted=_META_NS + ("status.replicas",),
        values={"status.replicas": _int_field("status.replicas")},
    ),
    ("", "Secret"): _FieldSpec(accepted=_META_NS + ("type",), values={"type": _str_field("type")}),
    ("", "Service"): _FieldSpec(
        accepted=_META_NS + ("spec.clusterIP", "spec.type"),
        values={"spec.clusterIP": _str_field("spec.clusterIP"), "spec.type": _str_field("spec.type")},
    ),
    ("batch", "Job"): _FieldSpec(
        accepted=_META_NS + ("status.successful",),
        values={"status.successful": _int_field("status.succeeded")},
        reject=lambda label: f"field label {json.dumps(label)} not supported for batchv1.Job",
    ),
}


def _field_spec(res: _Resource) -> _FieldSpec:
    """The field-selector contract a real server applies to ``res``."""
    if res.crd:
        accepted = _META_NS if res.namespaced else ("metadata.name",)
        return _FieldSpec(accepted=accepted, values={})
    if res.group == "resource.k8s.io" and res.kind == "ResourceSlice":
        gvk = f"resource.k8s.io/{res.version}, Kind=ResourceSlice"
        return _FieldSpec(
            accepted=("metadata.name", "spec.nodeName", "spec.driver"),
            values={"spec.nodeName": _str_field("spec.nodeName"), "spec.driver": _str_field("spec.driver")},
            reject=lambda label: f"field label not supported for {gvk}: {label}",
        )
    spec = _FIELD_SPECS.get((res.group, res.kind))
    if spec is not None:
        return spec
    return _FieldSpec(accepted=_META_NS, values={}, reject=_default_meta_reject)


@dataclass(frozen=True)
class _FieldRequirement:
    label: str  # canonical label
    op: str  # "=" or "!="
    value: str


def _split_field_terms(text: str) -> list[str]:
    """Split on unescaped commas (fields.ParseSelector honours backslash escapes)."""
    terms, cur, escaped = [], [], False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if escaped:
        cur.append("\\")
    terms.append("".join(cur))
    return terms


def _unescape_field_value(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {value!r}")
            out.append(value[i + 1])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _split_field_term(term: str) -> tuple[str, str, str] | None:
    """The first unescaped operator, scanning left to right (fields.splitTerm)."""
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
        i += 1
    return None


def parse_field_selector(text: str, res: _Resource) -> list[_FieldRequirement]:
    """Parse and validate a ``fieldSelector`` for ``res``; raise SelectorError."""
    spec = _field_spec(res)
    reqs: list[_FieldRequirement] = []
    for term in _split_field_terms(text or ""):
        if not term:
            continue
        split = _split_field_term(term)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        label, op, value = split
        if label in spec.aliases:
            label = spec.aliases[label]
        elif label not in spec.accepted:
            raise SelectorError(spec.reject(label))
        reqs.append(_FieldRequirement(label, "!=" if op == "!=" else "=", _unescape_field_value(value)))
    return reqs


def _field_value(res: _Resource, obj: Mapping[str, Any], label: str) -> str:
    meta = obj.get("metadata", {})
    if label == "metadata.name":
        return str(meta.get("name", ""))
    if label == "metadata.namespace":
        return str(meta.get("namespace") or "") if res.namespaced else ""
    getter = _field_spec(res).values.get(label)
    return getter(obj) if getter else ""


# ---------------------------------------------------------------------------
# Status bodies, exactly as metav1.Status is serialized by the apiserver.
# ---------------------------------------------------------------------------

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}
_NOT_FOUND = "the server could not find the requested resource"
# k8s.io/apiserver/pkg/storage/etcd3/errors.go `inconsistentContinue`: the 410 sent
# when a continue token's revision was compacted; handleCompactedErrorForPaging
# attaches a fresh token (resourceVersion -1) that continues inconsistently. A token
# that does not decode is a 400 "invalid continue token: ..." instead (etcd3 store.go).
# Caches for large snapshots (see _Store, ReadOnlyAPIServer._matching, _HTTPServer.gzip).
_MATCH_CACHE_ENTRIES = 256
_GZIP_CACHE_MIN_BYTES = 256 * 1024
_GZIP_CACHE_MAX_BYTES = 512 * 2**20
_EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


def status_body(code: int, message: str, reason: str | None = None, details: dict | None = None,
                metadata: dict | None = None) -> dict:
    """A ``Status`` failure object in the apiserver's field order."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
        "reason": reason or _REASONS.get(code, ""),
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def _details(res_plural: str, group: str, name: str) -> dict:
    """``StatusDetails`` for a resource error (empty fields are omitted, as in Go)."""
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = res_plural
    return d


_DCGM_PORT = 9400


def _global_unicast(ip: str) -> bool:
    """net.IP.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or broadcast."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    if addr.is_unspecified or addr.is_loopback or addr.is_multicast or addr.is_link_local:
        return False
    return not (addr.version == 4 and str(addr) == "255.255.255.255")


@dataclass(frozen=True)
class _RequestInfo:
    """What kube-apiserver's RequestInfoFactory derives from a resource URL."""

    group: str
    version: str
    namespace: str
    resource: str
    name: str
    subresource: str
    verb: str
    extra_parts: bool  # more path segments than resource/name/subresource

    @property
    def rbac_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _parse_request_info(method: str, path: str, query: Mapping[str, list[str]]) -> _RequestInfo | None:
    """Mirror of k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory.

    Returns None for non-resource paths (discovery, /version, ...).
    """
    segs = [unquote(s) for s in path.strip("/").split("/") if s]
    if len(segs) >= 3 and segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    elif len(segs) >= 4 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        return None
    verb = {"GET": "get", "HEAD": "get", "PATCH": "patch", "PUT": "update", "POST": "create",
            "DELETE": "delete"}.get(method, method.lower())
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", [""])[0] in ("true", "1") else "list"
    elif not name and verb == "delete":
        verb = "deletecollection"
    return _RequestInfo(group, version, namespace, resource, name, subresource, verb, len(rest) > 3)


# The short names kube-apiserver's discovery publishes (kubectl get ds, pvc, po, ...).
SHORT_NAMES: dict[tuple[str, str], list[str]] = {
    ("", "pods"): ["po"], ("", "nodes"): ["no"], ("", "namespaces"): ["ns"], ("", "events"): ["ev"],
    ("", "configmaps"): ["cm"], ("", "persistentvolumeclaims"): ["pvc"], ("", "persistentvolumes"): ["pv"],
    ("", "resourcequotas"): ["quota"], ("", "limitranges"): ["limits"], ("", "services"): ["svc"],
    ("", "serviceaccounts"): ["sa"], ("apps", "daemonsets"): ["ds"], ("apps", "deployments"): ["deploy"],
    ("apps", "replicasets"): ["rs"], ("apps", "statefulsets"): ["sts"], ("batch", "cronjobs"): ["cj"],
    ("scheduling.k8s.io", "priorityclasses"): ["pc"], ("storage.k8s.io", "storageclasses"): ["sc"],
    ("events.k8s.io", "events"): ["ev"],
}


# ---------------------------------------------------------------------------
# The object store.
# ---------------------------------------------------------------------------


def _obj_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta.get("name", ""))


_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})


def _copy_tree(x: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy`` for JSON-like trees, ~5x faster on plain dicts and lists.

    Same result as deepcopy (shared sub-objects stay shared, through the same memo
    protocol); anything but exact dicts, lists and atomic values is handed to
    deepcopy itself. The caller keeps ``x`` alive for the whole call, so no
    keep-alive list is needed for the ids in ``memo``. Matters for large snapshots (150,000 pods: minutes -> seconds).
    """
    t = type(x)
    if t in _ATOMIC:
        return x
    found = memo.get(id(x))
    if found is not None:
        return found
    if t is dict:
        new: Any = {}
        memo[id(x)] = new
        for k, v in x.items():
            if type(k) not in _ATOMIC:
                k = copy.deepcopy(k, memo)
            new[k] = v if type(v) in _ATOMIC else _copy_tree(v, memo)
        return new
    if t is list:
        new = []
        memo[id(x)] = new
        append = new.append
        for v in x:
            append(v if type(v) in _ATOMIC else _copy_tree(v, memo))
        return new
    return copy.deepcopy(x, memo)


@dataclass
class _Event:
    """One change in the store's event log, as kube-apiserver's watch cache keeps it:
    ``obj`` is the new state (for DELETED: the last state, carrying the deletion's
    resourceVersion), ``prev`` the state before (None for ADDED), so a watch with
    selectors can turn an update that leaves (enters) its selection into DELETED (ADDED)."""

    rv: int
    type: str
    res_key: tuple[str, str, str]
    obj: dict
    prev: dict | None = None
    data: bytes | None = None   # json of ``obj``, encoded once for every watch that sends it


DEFAULT_EVENT_LOG_SIZE = 10_000


class _Store:
    """Objects indexed by resource and (namespace, name); global resourceVersion.

    Derived data (each bucket's key order, and each object's JSON encoding) is
    cached and dropped whenever an object is put: ``generation`` counts the puts.
    Read-only here; the tests' write emulation (tests/support/kubeapi.py) changes
    objects only through ``_put`` and its own ``remove``, never in place.

    The event log: every put after construction (ADDED or MODIFIED, the object
    carrying its new resourceVersion) and every removal (DELETED) is appended to
    :attr:`events`, in resourceVersion order, keeping the last ``event_log_size``;
    :attr:`floor` is the resourceVersion after which the log is complete (a watch
    from an older one is 410 Expired), :attr:`log_rv` the newest logged. Both change
    under :attr:`cond`, which wakes waiting watches.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]], served: Iterable[str],
                 event_log_size: int = DEFAULT_EVENT_LOG_SIZE) -> None:
        self.generation = 0
        self._sorted: dict[tuple[str, str, str], tuple[int, list[tuple[tuple[str, str], dict]]]] = {}
        self._encoded: dict[int, tuple[dict, bytes]] = {}
        self.cond = threading.Condition(threading.Lock())
        self.events: list[_Event] = []
        self.lost_rv = 0        # the newest event dropped from the log (overflow or compaction)
        self.event_log_size = max(1, int(event_log_size))
        self._logging = False
        objs = [_copy_tree(dict(o), {}) for o in objects]
        for o in objs:
            if not o.get("apiVersion") or not o.get("kind") or not o.get("metadata", {}).get("name"):
                raise ValueError(f"object needs apiVersion, kind and metadata.name: {json.dumps(o)[:200]}")
        objs += _dra_versions(objs)   # DRA at every version the same server serves, converted
        self.catalog = _Catalog(objs, served)
        rvs = [int(o["metadata"]["resourceVersion"]) for o in objs
               if str(o["metadata"].get("resourceVersion", "")).isdigit()]
        self.rv = max(rvs + [1000])
        # snapshot order; replacing an object keeps its place (an ordered dict: O(1), not a scan)
        self._order: dict[tuple[tuple[str, str, str], tuple[str, str]], dict] = {}
        self._index: dict[tuple[str, str, str], dict[tuple[str, str], dict]] = {}
        for o in objs:
            if not str(o["metadata"].get("resourceVersion", "")).isdigit():
                o["metadata"]["resourceVersion"] = str(self.next_rv())
            self._put(o)
        self.floor = self.log_rv = self.rv
        self._logging = True

    @property
    def objects(self) -> list[dict]:
        return list(self._order.values())

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _bucket(self, res: _Resource) -> dict[tuple[str, str], dict]:
        return self._index.setdefault((res.group, res.version, res.plural), {})

    def _put(self, obj: dict) -> None:
        res = self.catalog.for_object(obj)
        bkey = (res.group, res.version, res.plural)
        bucket = self._bucket(res)
        key = _obj_key(obj)
        old = bucket.get(key)
        if old is not None:
            self._encoded.pop(id(old), None)
        self._order[(bkey, key)] = obj
        bucket[key] = obj
        self.generation += 1
        if self._logging:
            rv_text = str(obj.get("metadata", {}).get("resourceVersion", ""))
            rv = int(rv_text) if rv_text.isdigit() else self.rv
            self._log(_Event(rv, "ADDED" if old is None else "MODIFIED", bkey, obj, old))

    def _drop(self, obj: dict) -> dict | None:
        """Remove the stored object with ``obj``'s kind, namespace and name; log DELETED
        (the last state, with a new resourceVersion). Returns what was removed."""
        res = self.catalog.for_object(obj)
        bkey = (res.group, res.version, res.plural)
        key = _obj_key(obj)
        old = self._bucket(res).pop(key, None)
        if old is None:
            return None
        self._order.pop((bkey, key), None)
        self._encoded.pop(id(old), None)
        self.generation += 1
        if self._logging:
            rv = self.next_rv()
            last = dict(old)
            last["metadata"] = {**old.get("metadata", {}), "resourceVersion": str(rv)}
            self._log(_Event(rv, "DELETED", bkey, last, old))
        return old

    def _log(self, event: _Event) -> None:
        with self.cond:
            self.events.append(event)
            extra = len(self.events) - self.event_log_size
            if extra > 0:
                self.floor = self.lost_rv = max(self.floor, self.events[extra - 1].rv)
                del self.events[:extra]
            self.log_rv = max(self.log_rv, event.rv)
            self.cond.notify_all()

    def compact(self) -> None:
        """Drop every retained event and move the floor past the current resourceVersion:
        every resourceVersion handed out so far is now too old to watch from."""
        with self.cond:
            if self.events:
                self.lost_rv = self.events[-1].rv
            self.floor = self.log_rv = self.next_rv()
            self.events.clear()
            self.cond.notify_all()

    def events_after(self, rv: int) -> list[_Event]:
        """Retained events newer than ``rv`` (call with :attr:`cond` held)."""
        return self.events[bisect.bisect_right(self.events, rv, key=lambda e: e.rv):]

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def get(self, res: _Resource, namespace: str, name: str) -> dict | None:
        return self._bucket(res).get((namespace if res.namespaced else "", name))

    def select(self, res: _Resource, namespace: str) -> list[tuple[tuple[str, str], dict]]:
        """Objects of ``res`` (in ``namespace`` when given), in key order (do not modify the list)."""
        bkey = (res.group, res.version, res.plural)
        cached = self._sorted.get(bkey)
        if cached is None or cached[0] != self.generation:
            cached = self._sorted[bkey] = (self.generation, sorted(self._bucket(res).items()))
        items = cached[1]
        if namespace and res.namespaced:
            # keys sort by namespace first: the namespace's objects are one slice
            lo = bisect.bisect_left(items, (namespace, ""), key=lambda kv: kv[0])
            hi = bisect.bisect_left(items, (namespace + "\x00", ""), key=lambda kv: kv[0])
            items = [(k, o) for k, o in items[lo:hi] if k[0] == namespace]
        return items

    def encoded(self, obj: dict) -> bytes:
        """``json.dumps(obj, separators=(",", ":")).encode()``, computed once per stored object."""
        hit = self._encoded.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = json.dumps(obj, separators=(",", ":")).encode()
        self._encoded[id(obj)] = (obj, data)
        return data


# ---------------------------------------------------------------------------
# HTTP plumbing.
# ---------------------------------------------------------------------------


@dataclass
class _Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: Any = None  # a _WatchStream: the body is its chunks, each flushed as it comes (chunked)


def _json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Response:
    return _Response(status, json.dumps(payload, separators=(",", ":")).encode(), headers=headers or {})


def _status_response(code: int, message: str, **kw: Any) -> _Response:
    headers = kw.pop("headers", None)
    return _json_response(code, status_body(code, message, **kw), headers)


@dataclass
class _Request:
    method: str
    path: str
    raw_query: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def q(self, key: str) -> str:
        return self.query.get(key, [""])[0]

    def header(self, name: str, default: str = "") -> str:
        """Header lookup, case-insensitive as HTTP requires (clients send ``authorization``)."""
        name = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == name), default)


class _Handler(BaseHTTPRequestHandler):
    """Thin HTTP layer; all behaviour lives in ReadOnlyAPIServer._handle."""

    protocol_version = "HTTP/1.1"
    server_version = "gpuctl-snapshot-apiserver"
    sys_version = ""
    # headers and body go out in two writes; without TCP_NODELAY, Nagle plus the
    # client's delayed ACK would add ~40 ms to every request
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_PATCH = do_POST = do_PUT = do_DELETE = do_GET

    def _dispatch(self) -> None:
        app: ReadOnlyAPIServer = self.server.app  # type: ignore[attr-defined]
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        req = _Request(
            method=self.command,
            path=split.path,
            raw_query=split.query,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={k: v for k, v in self.headers.items()},
            body=body,
        )
        try:
            result = app._handle(req)
        except Exception as exc:  # noqa: BLE001 - an odd object must cost one 500, not a traceback on stderr
            if not app._internal_errors_as_500:
                raise
            result = _status_response(500, f"Internal error occurred: {type(exc).__name__}")
        self._send(result, req)

    def _send(self, result: Any, req: _Request) -> None:
        self._write(result, "gzip" in req.header("Accept-Encoding").lower())

    def _write(self, resp: _Response, gzip_ok: bool) -> None:
        body = resp.body
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in resp.headers.items():
            self.send_header(k, v)
        if resp.stream is not None:
            self._write_stream(resp.stream)
            return
        if gzip_ok and body:
            body = self.server.gzip(body)  # type: ignore[attr-defined]
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._write_body(body, resp)

    def _write_body(self, body: bytes, resp: _Response) -> None:
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _write_stream(self, stream: _WatchStream) -> None:
        """A watch: each chunk (one JSON event and its newline) is written and flushed as
        the stream yields it, with chunked transfer encoding (HTTP/1.1; an HTTP/1.0
        client gets a body delimited by the connection's close). Never gzipped. A clean
        end writes the last chunk and keeps the connection; a dropped stream closes it
        with no last chunk (the client sees the response end prematurely)."""
        chunked = self.request_version >= "HTTP/1.1"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        stream.attach(self.connection)
        try:
            self.wfile.flush()
            for chunk in stream:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                self.wfile.flush()
            if stream.dropped:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            elif chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            stream.close()


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that can also tear down its open keep-alive connections."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], app: ReadOnlyAPIServer, handler: type[_Handler]) -> None:
        self.app = app
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._gz_cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._gz_bytes = 0
        self._gz_lock = threading.Lock()
        super().__init__(addr, handler)
    def gzip(self, body: bytes) -> bytes:
        """``gzip.compress(body)``; large bodies are remembered by content (a paged list
        read again page by page is compressed once), bounded by _GZIP_CACHE_MAX_BYTES."""
        if len(body) < _GZIP_CACHE_MIN_BYTES:
            return gzip.compress(body)
        digest = hashlib.blake2b(body, digest_size=32).digest()
        with self._gz_lock:
            hit = self._gz_cache.get(digest)
            if hit is not None:
                self._gz_cache.move_to_end(digest)
                return hit
        data = gzip.compress(body)
        with self._gz_lock:
            if digest not in self._gz_cache:
                self._gz_cache[digest] = data
                self._gz_bytes += len(data)
                while self._gz_bytes > _GZIP_CACHE_MAX_BYTES and self._gz_cache:
                    self._gz_bytes -= len(self._gz_cache.popitem(last=False)[1])
        return data

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ---------------------------------------------------------------------------
# WATCH: one open watch, streaming the store's event log.
# ---------------------------------------------------------------------------

# k8s.io/apiserver storage/cacher: how long a watch from a resourceVersion newer than
# the store's waits for it before the 504 "Too large resource version".
_FUTURE_RV_WAIT = 3.0
# The annotation of the bookmark that ends the initial events of sendInitialEvents=true.
_INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _line(event_type: str, obj_json: bytes) -> bytes:
    return b'{"type":"%s","object":%s}\n' % (event_type.encode(), obj_json)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class _WatchStream:
    """One watch as kube-apiserver's cacher serves it: the initial events (ADDED for
    every current object, when the watch did not name a resourceVersion), then every
    logged event of the resource after it, filtered by namespace and selectors (an
    update that takes an object out of the selection is DELETED, into it ADDED), as
    they happen, until ``timeout`` seconds have passed. With ``bookmarks``, a BOOKMARK
    (an object of the kind with only ``metadata.resourceVersion``: every event up to
    it was sent) every ``bookmark_interval`` seconds and at the end. A watch whose
    events were dropped from the log before they could be sent gets a 410 ERROR event
    and ends. Iterating yields each event's bytes (one JSON line)."""

    def __init__(self, app: ReadOnlyAPIServer, res: _Resource, namespace: str, req: _Request,
                 labels: list[_LabelRequirement], fields: list[_FieldRequirement], start_rv: int,
                 initial: list[tuple[dict, bytes]], timeout: float, bookmarks: bool, error: dict | None = None,
                 initial_end: bool = False) -> None:
        self.app, self.res, self.namespace, self.req = app, res, namespace, req
        self.labels, self.fields = labels, fields
        self.rv = start_rv
        self.initial, self.timeout, self.bookmarks = initial, timeout, bookmarks
        self.error, self.initial_end = error, initial_end
        self.key = (res.group, res.version, res.plural)
        self.dropped = False        # ended by the server without a clean end (a dropped connection)
        self.ended = False          # ended early, cleanly (the last chunk is written)
        self._conn: socket.socket | None = None
        self._first = True

    # -- registry: the server knows its open watches ------------------------------------

    def attach(self, conn: socket.socket | None) -> None:
        self._conn = conn
        with self.app._watch_lock:
            self.app._watches.add(self)
        self.app._store.wake()          # for whoever waits for a watch to open

    def close(self) -> None:
        with self.app._watch_lock:
            self.app._watches.discard(self)

    def end(self) -> None:
        """End this watch now, cleanly (as when its timeout passes, without the bookmark)."""
        self.ended = True
        self.close()
        self.app._store.wake()

    def drop(self) -> None:
        """End this watch now, as a broken connection ends it: no last chunk."""
        self.dropped = True
        self.close()
        self.app._store.wake()
        if self._conn is not None:
            try:
                self._conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- the events ---------------------------------------------------------------------

    def _encode(self, event_type: str, obj: dict, data: bytes | None = None) -> bytes:
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            table = self.app._table(self.res, [obj], self.req, {}, columns=self._first)
            self._first = False
            if table is not None:
                return _line(event_type, _dumps(table))
        return _line(event_type, data if data is not None else _dumps(obj))

    def _bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {_INITIAL_EVENTS_END: "true"}
        return _line("BOOKMARK", _dumps({"kind": self.res.kind, "apiVersion": self.res.api_version,
                                         "metadata": meta}))

    def _passes(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        if self.namespace and self.res.namespaced and (obj.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return self.app._matches(self.res, obj, self.labels, self.fields)

    def _convert(self, ev: _Event) -> bytes | None:
        """The event this watch sees (cacheWatcher.convertToWatchEvent), or None."""
        if ev.res_key != self.key:
            return None
        cur = ev.type != "DELETED" and self._passes(ev.obj)
        old = self._passes(ev.prev)
        if cur:
            if ev.data is None:
                ev.data = _dumps(ev.obj)
            return self._encode("MODIFIED" if old else "ADDED", ev.obj, ev.data)
        if not old:
            return None
        if ev.type == "DELETED":
            if ev.data is None:
                ev.data = _dumps(ev.obj)
            return self._encode("DELETED", ev.obj, ev.data)
        gone = dict(ev.prev or {})           # left the selection: the previous state, at the event's version
        gone["metadata"] = {**gone.get("metadata", {}), "resourceVersion": str(ev.rv)}
        return self._encode("DELETED", gone)

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        store, stop = self.app._store, self.app._stop
        if self.error is not None:
            yield _line("ERROR", _dumps(self.error))
            return
        for obj, data in self.initial:
            yield self._encode("ADDED", obj, data)
        self.initial = []
        if self.initial_end and self.bookmarks:
            yield self._bookmark(self.rv, initial_end=True)
        interval = max(0.01, float(self.app.bookmark_interval))
        now = time.monotonic()
        deadline, next_bookmark = now + self.timeout, now + interval
        last = self.rv
        while True:
            with store.cond:
                while not (self.dropped or self.ended or stop.is_set() or store.log_rv > last):
                    wake_at = min(deadline, next_bookmark) if self.bookmarks else deadline
                    wait = wake_at - time.monotonic()
                    if wait <= 0:
                        break
                    store.cond.wait(wait)
                if self.dropped or self.ended or stop.is_set():
                    return
                expired = store.lost_rv > last
                events = [] if expired else store.events_after(last)
                current = store.log_rv
            if expired:
                yield _line("ERROR", _dumps(status_body(
                    410, "The resourceVersion for the provided watch is too old.", reason="Expired")))
                return
            for ev in events:
                chunk = self._convert(ev)
                if chunk is not None:
                    yield chunk
                if self.dropped or self.ended:
                    return
            last = current
            now = time.monotonic()
            if now >= deadline:
                if self.bookmarks:
                    yield self._bookmark(last)
                return
            if self.bookmarks and now >= next_bookmark:
                yield self._bookmark(last)
                next_bookmark = now + interval


# ---------------------------------------------------------------------------
# The server.
# ---------------------------------------------------------------------------


# Access reviews as kubectl sends them: the protobuf envelope ("k8s\0", then a
# runtime.Unknown whose field 2 holds the object), read with just enough of the wire
# format for the fields below (k8s.io/api authorization/v1 generated.proto).
_PROTOBUF_MAGIC = b"k8s\x00"
_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource",
                        7: "name"}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _protobuf_fields(data: bytes) -> dict[int, list[Any]]:
    """Field number -> values of one protobuf message (varints as ints, the rest as bytes)."""
    fields: dict[int, list[Any]] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire in (1, 2, 5):
            size = {1: 8, 5: 4}[wire] if wire != 2 else None
            if size is None:
                size, i = _varint(data, i)
            value, i = data[i:i + size], i + size
            if i > len(data):
                raise ValueError("truncated protobuf message")
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        fields.setdefault(key >> 3, []).append(value)
    return fields


def _review_spec_from_protobuf(body: bytes, kind: str) -> dict[str, Any]:
    """The ``spec`` of a SelfSubjectAccessReview or SelfSubjectRulesReview sent as
    protobuf, as JSON would have it."""
    review = _protobuf_fields(_protobuf_fields(body[len(_PROTOBUF_MAGIC):])[2][0])
    spec = _protobuf_fields(review[2][0]) if 2 in review else {}
    out: dict[str, Any] = {}
    if kind == "SelfSubjectRulesReview":
        namespace = spec.get(1, [b""])[0]
        return {"namespace": namespace.decode("utf-8", "replace")} if isinstance(namespace, bytes) else {}
    for number, key, names in ((1, "resourceAttributes", _RESOURCE_ATTRIBUTES),
                               (2, "nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES)):
        if number in spec and isinstance(spec[number][0], bytes):
            attrs = _protobuf_fields(spec[number][0])
            out[key] = {name: attrs[n][0].decode("utf-8", "replace") for n, name in names.items()
                        if n in attrs and isinstance(attrs[n][0], bytes) and attrs[n][0]}
    return out


def _read_only(req: _Request, info: _RequestInfo | None) -> _Response:
    """405 for a write verb, as a ``Status`` kubectl prints: "Error from server
    (MethodNotAllowed): the served snapshot is read-only ...: patch nodes "x" is not allowed"."""
    if info is None:
        what, details = f"{req.method} {req.path}", None
    else:
        qualified = f"{info.resource}.{info.group}" if info.group else info.resource
        if info.subresource:
            qualified += f"/{info.subresource}"
        what = f'{info.verb} {qualified}' + (f' "{info.name}"' if info.name else "")
        details = _details(info.resource, info.group, info.name)
    return _status_response(405, f"{READ_ONLY_MESSAGE}: {what} is not allowed", reason="MethodNotAllowed",
                            details=details, headers={"Allow": "GET"})


class ReadOnlyAPIServer:
    """Serve ``objects`` read-only over a Kubernetes-compatible HTTP API on 127.0.0.1.

    ``objects`` are raw objects as ``kubectl get -o json`` prints items (each needs
    ``apiVersion``, ``kind`` and ``metadata.name``); ``logs`` maps ``(namespace,
    pod, container, previous)`` to log text. ``page_size_cap``: maximum list page
    size even without ``limit``. ``version``: ``gitVersion`` of ``/version``.
    ``served``: extra ``group/version`` strings to serve even though the snapshot
    has no objects of them (an installed but empty CRD). ``metrics``: node name ->
    Prometheus text, answered by the DCGM exporter pod on that node through the pod
    proxy (``pods/{name}:9400/proxy/metrics``). ``port``: the port to bind on
    127.0.0.1 (``0``: any free port; :attr:`port` says which). ``event_log_size``:
    how many changes the event log keeps for watches (a watch from an older
    resourceVersion is 410 Expired); ``bookmark_interval``: seconds between a
    watch's BOOKMARK events (default :attr:`bookmark_interval`, 60).

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    # What discovery advertises for every resource (k9s and other clients hide
    # actions a resource does not list); the tests' server advertises the write verbs.
    _VERBS: tuple[str, ...] = READ_VERBS
    _PROXY_VERBS: tuple[str, ...] = ("get",)
    _handler_class: type[_Handler] = _Handler
    _store_class: type[_Store] = _Store
    _watch_stream_class: type[_WatchStream] = _WatchStream
    # An exception while answering becomes a 500 Status (the tests' server lets it
    # propagate, as it always did).
    _internal_errors_as_500 = True
    # Server-side printing (tables.py) for kubectl get; the tests' server answers plain
    # lists, as it always did, so what their kubectl runs print does not change.
    _TABLES = True
    # How long a watch without timeoutSeconds stays open (kube-apiserver: 30 to 60 min),
    # so `kubectl get -w` waits as on a cluster; the tests' server ends it after 1 s.
    _WATCH_SECONDS = 1800.0
    # Seconds between the BOOKMARK events of a watch with allowWatchBookmarks=true
    # (kube-apiserver: about a minute); the constructor's ``bookmark_interval`` overrides it.
    bookmark_interval = 60.0
    _scheme = "http"

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]],
        logs: Mapping[tuple[str, str, str, bool], str] | None = None,
        *,
        page_size_cap: int | None = None,
        version: str = DEFAULT_VERSION,
        served: Iterable[str] = (),
        metrics: Mapping[str, str] | None = None,
        port: int = 0,
        event_log_size: int = DEFAULT_EVENT_LOG_SIZE,
        bookmark_interval: float | None = None,
    ) -> None:
        self._store = self._store_class(objects, served, event_log_size)
        if bookmark_interval is not None:
            self.bookmark_interval = float(bookmark_interval)
        self._watches: set[_WatchStream] = set()
        self._watch_lock = threading.Lock()
        self._logs = dict(logs or {})
        self._metrics = dict(metrics or {})
        self.page_size_cap = page_size_cap
        self.version = version
        self._bind_port = port
        self._lock = threading.RLock()
        self._match_cache: OrderedDict[tuple, tuple[int, list[tuple[str, str]], list[dict]]] = OrderedDict()
        self._compacted_rv = 0      # continue tokens issued at or before this answer 410 (never, unless a test compacts)
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> ReadOnlyAPIServer:
        """Bind 127.0.0.1 (the port given, else a free one) and serve in a daemon thread.
        Raises OSError when the port cannot be bound (in use, privileged)."""
        if self._httpd is not None:
            return self
        self._stop.clear()
        self._httpd = _HTTPServer((HOST, self._bind_port), self, self._handler_class)
        self._prepare_socket(self._httpd)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
            name=f"snapshot-apiserver-{self.port}", daemon=True,
        )
        self._thread.start()
        return self

    def _prepare_socket(self, httpd: _HTTPServer) -> None:
        """Hook for a subclass (the tests wrap the socket in TLS)."""

    def stop(self) -> None:
        """Stop serving: wake hung handlers, close connections, free the port."""
        if self._httpd is None:
            return
        self._stop.set()
        self._store.wake()              # open watches end
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ReadOnlyAPIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"{self._scheme}://{HOST}:{self.port}"

    @property
    def objects(self) -> list[dict]:
        """The current objects, in snapshot order."""
        with self._lock:
            return list(self._store.objects)

    @property
    def logs(self) -> dict[tuple[str, str, str, bool], str]:
        return dict(self._logs)

    # -- request handling ----------------------------------------------------

    def _handle(self, req: _Request) -> _Response:
        return self._serve(req)

    def _serve(self, req: _Request) -> _Response:
        """Refuse writes, authenticate, then non-resource endpoints, then authorize and route."""
        path = req.path.rstrip("/") or "/"
        refusal = self._refuse_method(req, path)
        if refusal is not None:
            return refusal
        denial = self._authenticate(req, path)
        if denial is not None:
            return denial
        if path in ("/healthz", "/livez", "/readyz"):
            return _Response(200, b"ok", content_type="text/plain; charset=utf-8")
        if path == "/version":
            return _json_response(200, self._version_info())
        info = _parse_request_info(req.method, path, req.query)
        if info is None:
            return self._discovery(path)
        denial = self._authorize(info)
        if denial is not None:
            return denial
        return self._route(info, req)

    def _refuse_method(self, req: _Request, path: str) -> _Response | None:
        """Every write verb, on any path, is a 405: the served snapshot is read-only.
        The one POST answered is an access review, which writes nothing (it is how
        ``kubectl auth can-i`` and k9s ask what they may do)."""
        if req.method in READ_METHODS:
            return None
        if req.method == "POST" and path in _REVIEWS:
            return self._access_review(req, _REVIEWS[path])
        return _read_only(req, _parse_request_info(req.method, path, req.query))

    @staticmethod
    def _access_review(req: _Request, kind: str) -> _Response:
        """SelfSubjectAccessReview: ``get``, ``list`` and ``watch`` are allowed, on
        everything; anything else is not (with the reason). SelfSubjectRulesReview:
        those rules."""
        try:
            if req.body.startswith(_PROTOBUF_MAGIC):        # kubectl sends its typed requests as protobuf
                review = {"spec": _review_spec_from_protobuf(req.body, kind)}
            else:
                review = json.loads(req.body or b"null")
        except (ValueError, IndexError) as exc:
            return _status_response(400, f"error decoding the object: {exc}")
        if not isinstance(review, dict) or not isinstance(review.get("spec"), dict):
            return _status_response(400, f"the body must be a {kind} object with a spec")
        spec = review["spec"]
        if kind == "SelfSubjectRulesReview":
            status: dict[str, Any] = {
                "resourceRules": [{"verbs": list(READ_VERBS), "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
        else:
            attrs = spec.get("resourceAttributes") or spec.get("nonResourceAttributes") or {}
            verb = attrs.get("verb") if isinstance(attrs, dict) else None
            allowed = verb in (READ_VERBS if "resourceAttributes" in spec else ("get",))
            status = {"allowed": allowed} if allowed else {"allowed": False, "reason": READ_ONLY_MESSAGE}
        return _json_response(201, {"kind": kind, "apiVersion": "authorization.k8s.io/v1",
                                    "metadata": {"creationTimestamp": None}, "spec": spec, "status": status})

    def _authenticate(self, req: _Request, path: str) -> _Response | None:
        """No credentials are asked for (the server listens on 127.0.0.1 only)."""
        return None

    def _authorize(self, info: _RequestInfo) -> _Response | None:
        """Everything served may be read."""
        return None

    # -- discovery -------------------------------------------------------------

    def _version_info(self) -> dict:
        m = re.match(r"v(\d+)\.(\d+)", self.version)
        major, minor = (m.group(1), m.group(2)) if m else ("1", "31")
        return {
            "major": major, "minor": minor, "gitVersion": self.version,
            "gitCommit": "0" * 40, "gitTreeState": "clean", "buildDate": "2024-08-13T07:28:49Z",
            "goVersion": "go1.22.5", "compiler": "gc", "platform": "linux/amd64",
        }

    def _discovery(self, path: str) -> _Response:
        """Legacy (unaggregated) discovery documents for /api, /apis and group/versions."""
        catalog = self._store.catalog
        gvs = catalog.group_versions()
        segs = [s for s in path.split("/") if s]
        if segs == ["api"]:
            return _json_response(200, {
                "kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}],
            })
        if segs == ["apis"]:
            return _json_response(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": [self._api_group(g, vs) for g, vs in gvs.items() if g]})
        if len(segs) == 2 and segs[0] == "apis" and segs[1] in gvs:
            group_doc = self._api_group(segs[1], gvs[segs[1]])
            return _json_response(200, {"kind": "APIGroup", "apiVersion": "v1", **group_doc})
        if segs == ["api", "v1"] or (len(segs) == 3 and segs[0] == "apis" and segs[2] in gvs.get(segs[1], ())):
            group, version = ("", "v1") if segs[0] == "api" else (segs[1], segs[2])
            resources = []
            for res in catalog.in_group_version(group, version):
                entry = {"name": res.plural, "singularName": res.kind.lower(), "namespaced": res.namespaced,
                         "kind": res.kind, "verbs": list(self._VERBS)}
                if SHORT_NAMES.get((group, res.plural)):
                    entry["shortNames"] = SHORT_NAMES[(group, res.plural)]
                resources.append(entry)
                if res.kind == "Pod" and not group:
                    resources.append({"name": "pods/log", "singularName": "", "namespaced": True,
                                      "kind": "Pod", "verbs": ["get"]})
                    resources.append({"name": "pods/proxy", "singularName": "", "namespaced": True,
                                      "kind": "PodProxyOptions", "verbs": list(self._PROXY_VERBS)})
            return _json_response(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                        "groupVersion": f"{group}/{version}" if group else version,
                                        "resources": resources})
        if segs[:2] == ["openapi", "v3"]:
            return self._openapi_v3(segs[2:], gvs)
        return _status_response(404, _NOT_FOUND, details={})

    def _openapi_v3(self, rest: list[str], gvs: dict[str, list[str]]) -> _Response:
        """Just enough OpenAPI v3 for kubectl's QueryParamVerifierV3: each served
        resource's PATCH operation, with its group-version-kind and the
        ``fieldValidation`` query parameter, so ``kubectl replace``/``create`` use
        server-side field validation (as against any 1.27+ apiserver) instead of
        downloading a full schema. (This server refuses every write with 405; the tests'
        server accepts the parameter and ignores it.)"""
        if not rest:
            paths = {("api/v1" if not g else f"apis/{g}/{v}"): {"serverRelativeURL": f"/openapi/v3/{'api/v1' if not g else f'apis/{g}/{v}'}?hash=0"}
                     for g, vs in gvs.items() for v in vs}
            return _json_response(200, {"paths": paths})
        group, version = ("", "v1") if rest == ["api", "v1"] else (rest[1], rest[2]) if len(rest) == 3 and rest[0] == "apis" else (None, None)
        if group is None or version not in gvs.get(group, ()):
            return _status_response(404, _NOT_FOUND, details={})
        paths = {}
        for res in self._store.catalog.in_group_version(group, version):
            base = ("/api/v1" if not group else f"/apis/{group}/{version}") + (
                "/namespaces/{namespace}" if res.namespaced else "") + f"/{res.plural}/{{name}}"
            paths[base] = {"patch": {
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": res.kind},
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                               {"name": "dryRun", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "OK"}}}}
        return _json_response(200, {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": self.version},
                                     "paths": paths})

    @staticmethod
    def _api_group(group: str, versions: list[str]) -> dict:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}


    # -- routing -------------------------------------------------------------------

    def _route(self, info: _RequestInfo, req: _Request) -> _Response:
        res = self._store.catalog.lookup(info.group, info.version, info.resource)
        if (res is not None and info.subresource == "proxy" and res.plural == "pods" and not res.group
                and info.namespace and info.name):
            return self._pod_proxy(res, info, req)
        if (res is not None and res.group == VISIBILITY_GROUP and info.subresource == "pendingworkloads"
                and info.verb == "get" and not info.extra_parts):
            return self._pending_workloads(res, info, req)
        if res is None or info.extra_parts:
            return _status_response(404, _NOT_FOUND, details={})
        namespace = info.namespace
        if res.plural == "namespaces":
            namespace = ""  # /api/v1/namespaces/<name>: the namespace *is* the object
        elif namespace and not res.namespaced:
            return _status_response(404, _NOT_FOUND, details={})
        elif res.namespaced and info.name and not namespace:
            return _status_response(404, _NOT_FOUND, details={})
        if info.verb == "list":
            return self._list(res, namespace, req)
        if info.verb == "watch":
            return self._watch(res, namespace, req)
        if info.verb == "get" and info.subresource in ("", "status"):
            return self._get(res, namespace, info.name, req)
        if info.verb == "get" and info.subresource == "log" and res.plural == "pods" and not res.group:
            return self._log(res, namespace, info.name, req)
        if info.verb == "get" and info.subresource:
            return _status_response(404, _NOT_FOUND, details={})
        if info.verb in WRITE_VERBS:
            return self._write_verb(res, namespace, info, req)
        return self._method_not_allowed(res, info)

    def _pending_workloads(self, res: _Resource, info: _RequestInfo, req: _Request) -> _Response:
        """Kueue's visibility API (apis/visibility/v1beta1/types.go in kubernetes-sigs/kueue):
        a ``PendingWorkloadsSummary`` of the ClusterQueue's (or LocalQueue's) pending
        Workloads, computed from the served Workloads and LocalQueues in the order of
        Kueue's queue (priority, then creation time), with ``positionInClusterQueue``
        and ``positionInLocalQueue`` from 0; ``offset`` and ``limit`` (default 1000) page it."""
        with self._lock:
            objs = list(self._store.objects)
        kueue = lambda o, kind: o.get("kind") == kind and str(o.get("apiVersion", "")).startswith("kueue.x-k8s.io/")  # noqa: E731
        lqs = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): (o.get("spec") or {}).get("clusterQueue")
               for o in objs if kueue(o, "LocalQueue")}
        if res.plural == "clusterqueues":
            if not any(kueue(o, "ClusterQueue") and o["metadata"]["name"] == info.name for o in objs):
                return self._not_found(res, info.name)
            cq = info.name
        else:
            if (info.namespace, info.name) not in lqs:
                return self._not_found(res, info.name)
            cq = lqs[(info.namespace, info.name)]
        pending = []
        for o in objs:
            if not kueue(o, "Workload"):
                continue
            spec, status = o.get("spec") or {}, o.get("status") or {}
            conds = {c.get("type"): c.get("status") for c in status.get("conditions") or [] if isinstance(c, dict)}
            if spec.get("active") is False or conds.get("QuotaReserved") == "True" or conds.get("Finished") == "True":
                continue
            lq = (o["metadata"].get("namespace", ""), str(spec.get("queueName") or ""))
            if lqs.get(lq) != cq:
                continue
            prio = spec.get("priority") if isinstance(spec.get("priority"), int) else 0
            pending.append((-prio, o["metadata"].get("creationTimestamp") or "", o["metadata"]["name"], prio, lq, o))
        pending.sort(key=lambda t: t[:3])
        items, per_lq = [], {}
        for pos, (_, _, _, prio, lq, o) in enumerate(pending):
            per_lq[lq] = per_lq.get(lq, -1) + 1
            if res.plural == "localqueues" and lq != (info.namespace, info.name):
                continue
            md = o["metadata"]
            items.append({"metadata": {k: md[k] for k in ("name", "namespace", "creationTimestamp", "ownerReferences")
                                       if k in md},
                          "priority": prio, "localQueueName": lq[1],
                          "positionInClusterQueue": pos, "positionInLocalQueue": per_lq[lq]})
        try:
            offset = max(0, int(req.q("offset") or 0))
            limit = max(0, int(req.q("limit") or 1000))
        except ValueError:
            return _status_response(400, "offset and limit must be integers")
        return _json_response(200, {"kind": "PendingWorkloadsSummary", "apiVersion": f"{res.group}/{res.version}",
                                    "metadata": {"creationTimestamp": None}, "items": items[offset:offset + limit]})

    def _write_verb(self, res: _Resource, namespace: str, info: _RequestInfo, req: _Request) -> _Response:
        """A write that got past _refuse_method (a subclass that allows writes routes them here)."""
        return _read_only(req, info)

    @staticmethod
    def _method_not_allowed(res: _Resource, info: _RequestInfo) -> _Response:
        return _status_response(405, "the server does not allow this method on the requested resource",
                                details=_details(res.plural, res.group, info.name))

    def _not_found(self, res: _Resource, name: str) -> _Response:
        return _status_response(404, f'{res.qualified} "{name}" not found',
                                details=_details(res.plural, res.group, name))

    def _get(self, res: _Resource, namespace: str, name: str, req: _Request | None = None) -> _Response:
        with self._lock:
            obj = self._store.get(res, namespace, name)
            if obj is None:
                return self._not_found(res, name)
            table = self._table(res, [obj], req, {}) if req is not None else None
            return _json_response(200, table if table is not None else obj)

    def _table(self, res: _Resource, objs: list[dict], req: _Request, metadata: dict,
               columns: bool = True) -> dict | None:
        """A ``Table`` of ``objs`` when the client asked for one (``kubectl get``) and
        the kind has a printer (tables.py); else None (a plain object or list)."""
        version = tables.wants_table(req.header("Accept")) if self._TABLES else None
        if version is None:
            return None
        include = req.q("includeObject") or "Metadata"
        return tables.table(res.group, res.plural, objs, version, include, metadata, columns)

    # -- lists -------------------------------------------------------------------------

    def _selectors(self, res: _Resource, req: _Request) -> tuple[list[_LabelRequirement], list[_FieldRequirement]]:
        return parse_label_selector(req.q("labelSelector")), parse_field_selector(req.q("fieldSelector"), res)

    @staticmethod
    def _matches(res: _Resource, obj: Mapping[str, Any], labels: list[_LabelRequirement],
                 fields: list[_FieldRequirement]) -> bool:
        obj_labels = obj.get("metadata", {}).get("labels") or {}
        if not all(r.matches(obj_labels) for r in labels):
            return False
        for f in fields:
            equal = _field_value(res, obj, f.label) == f.value
            if equal != (f.op == "="):
                return False
        return True

    @staticmethod
    def _encode_continue(rv: int, key: tuple[str, str], res: _Resource) -> str:
        """Same shape as the apiserver's token: base64url(JSON{v, rv, start})."""
        start = (f"{key[0]}/{key[1]}" if res.namespaced else key[1]) + "\x00"
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str, res: _Resource) -> tuple[int, tuple[str, str]]:
        try:
            raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            if raw.get("v") != "meta.k8s.io/v1":
                raise ValueError(f"server does not recognize this encoded version {raw.get('v')!r}")
            rv, start = int(raw["rv"]), str(raw["start"]).rstrip("\x00")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"continue key is not valid: {exc}") from None
        if rv == 0:
            raise ValueError(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        ns, _, name = start.rpartition("/")
        return rv, ((ns, name) if res.namespaced else ("", name))

    def _list(self, res: _Resource, namespace: str, req: _Request) -> _Response:
        """A chunked LIST with selectors, as the etcd3 storage layer answers it."""
        try:
            labels, fields = self._selectors(res, req)
        except SelectorError as exc:
            return _status_response(400, str(exc))
        try:
            limit = int(req.q("limit") or 0)
        except ValueError:
            return _status_response(400, f'strconv.ParseInt: parsing "{req.q("limit")}": invalid syntax')
        token = req.q("continue")
        if token and req.q("resourceVersion") not in ("", "0"):
            return _status_response(400, "specifying resource version is not allowed when using continue")
        sizes = [s for s in (limit, self.page_size_cap or 0) if s > 0]
        page_size = min(sizes) if sizes else 0
        with self._lock:
            list_rv = self._store.rv
            start: tuple[str, str] | None = None
            if token:
                try:
                    token_rv, start = self._decode_continue(token, res)
                except ValueError as exc:
                    return _status_response(400, f"invalid continue token: {exc}")
                if 0 < token_rv <= self._compacted_rv:
                    # etcd compacted the revision: 410 plus a token to continue inconsistently (rv -1)
                    fresh = self._encode_continue(-1, start, res)
                    return _status_response(410, _EXPIRED_CONTINUE, reason="Expired", metadata={"continue": fresh})
                if token_rv > 0:
                    list_rv = token_rv
            keys, objs = self._matching(res, namespace, labels, fields)
            first = 0 if start is None else bisect.bisect_right(keys, start)  # keys > start
            left = len(keys) - first  # what the original filter-then-slice would have matched
            end = first + min(page_size, left) if page_size else len(keys)
            meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
            if end - first < left:
                meta["continue"] = self._encode_continue(list_rv, keys[end - 1], res)
                if not labels and not fields:  # the apiserver only counts when nothing is filtered
                    meta["remainingItemCount"] = left - (end - first)
            table = self._table(res, objs[first:end], req, meta)
            if table is not None:
                return _json_response(200, table)
            # byte for byte json.dumps(body) with body["items"] = the page, from cached item encodings
            head = json.dumps({"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta},
                              separators=(",", ":"))
            encoded = self._store.encoded
            body = b"".join((head[:-1].encode(), b',"items":[',
                             b",".join([encoded(o) for o in objs[first:end]]), b"]}"))
            return _Response(200, body)

    def _matching(self, res: _Resource, namespace: str, labels: list[_LabelRequirement],
                  fields: list[_FieldRequirement]) -> tuple[list[tuple[str, str]], list[dict]]:
        """Keys and objects of ``res`` in ``namespace`` matching the selectors, in key order.

        Cached per (resource, namespace, selectors) until the store changes, so a
        paged list costs one filtering pass, not one per page. Call with the lock held.
        """
        ckey = (res, namespace, tuple(labels), tuple(fields))
        hit = self._match_cache.get(ckey)
        if hit is not None and hit[0] == self._store.generation:
            self._match_cache.move_to_end(ckey)
            return hit[1], hit[2]
        keys: list[tuple[str, str]] = []
        objs: list[dict] = []
        for k, o in self._store.select(res, namespace):
            if self._matches(res, o, labels, fields):
                keys.append(k)
                objs.append(o)
        self._match_cache[ckey] = (self._store.generation, keys, objs)
        while len(self._match_cache) > _MATCH_CACHE_ENTRIES:
            self._match_cache.popitem(last=False)
        return keys, objs

    def _watch(self, res: _Resource, namespace: str, req: _Request) -> _Response:
        """WATCH as kube-apiserver's watch cache serves it (k8s.io/apiserver storage/cacher).

        ``resourceVersion`` empty or ``"0"``: ADDED for every current object, then the
        changes after them. Any other: the logged changes after it, then new ones as
        they happen; older than the log's floor: HTTP 200 and one ERROR event, a Status
        410 Expired "too old resource version: RV (FLOOR)"; newer than the store: wait
        up to 3 s for it, then an ERROR event 504 "Too large resource version".
        ``sendInitialEvents=true``: the current objects first whatever the
        resourceVersion, then a BOOKMARK annotated ``k8s.io/initial-events-end``.
        ``allowWatchBookmarks=true``: BOOKMARKs every :attr:`bookmark_interval` seconds
        and when the watch ends. It ends after ``timeoutSeconds`` (0 or absent:
        _WATCH_SECONDS). A ``Table`` request (``kubectl get -w``) gets one-row Tables,
        the columns in the first only. The body is chunked, one JSON event per line,
        each flushed as it is written (_Handler._write_stream)."""
        try:
            labels, fields = self._selectors(res, req)
        except SelectorError as exc:
            return _status_response(400, str(exc))
        rv_text = req.q("resourceVersion")
        if rv_text not in ("", "0") and not rv_text.isdigit():
            return _status_response(400, f"resourceVersion: Invalid value: {json.dumps(rv_text)}: "
                                         f'strconv.ParseUint: parsing {json.dumps(rv_text)}: invalid syntax',
                                    reason="BadRequest")
        timeout_text = req.q("timeoutSeconds")
        timeout = float(timeout_text) if timeout_text.isdigit() and int(timeout_text) > 0 else self._WATCH_SECONDS
        bookmarks = req.q("allowWatchBookmarks") in ("true", "1")
        send_initial = req.q("sendInitialEvents") in ("true", "1")
        store = self._store
        requested = int(rv_text) if rv_text.isdigit() else 0
        error = None
        if requested > store.rv:
            with store.cond:
                store.cond.wait_for(lambda: store.rv >= requested or self._stop.is_set(), _FUTURE_RV_WAIT)
            if requested > store.rv:
                error = status_body(504, f"Too large resource version: {requested}, current: {store.rv}",
                                    reason="Timeout", details={"causes": [{"reason": "ResourceVersionTooLarge",
                                                                           "message": "Too large resource version"}],
                                                               "retryAfterSeconds": 1})
        initial: list[tuple[dict, bytes]] = []
        with self._lock:                     # no write is half done: the objects and log_rv agree
            with store.cond:
                floor, start = store.floor, store.log_rv
            if error is None and requested and requested < floor:
                error = status_body(410, f"too old resource version: {requested} ({floor})", reason="Expired")
            if error is None and (not requested or send_initial):
                encoded = store.encoded              # not thread-safe: under the lock, as lists use it
                initial = [(o, encoded(o)) for o in self._matching(res, namespace, labels, fields)[1]]
            elif error is None:
                start = requested
        stream = self._watch_stream_class(self, res, namespace, req, labels, fields, start, initial, timeout, bookmarks,
                              error, initial_end=send_initial)
        return _Response(200, b"", stream=stream)

    # -- logs ------------------------------------------------------------------------------

    def _log(self, res: _Resource, namespace: str, name: str, req: _Request) -> _Response:
        """pods/log: container defaulting and errors as in pkg/registry/core/pod LogLocation,
        "previous" errors as the kubelet words them."""
        with self._lock:
            pod = self._store.get(res, namespace, name)
            if pod is None:
                return self._not_found(res, name)
            spec = pod.get("spec", {})
            containers = [c["name"] for c in spec.get("containers", [])]
            inits = [c["name"] for c in spec.get("initContainers", [])]
            ephemeral = [c["name"] for c in spec.get("ephemeralContainers", [])]
        container = req.q("container")
        if not container:
            if len(containers) == 1:
                container = containers[0]
            elif not containers:
                return _status_response(400, f"a container name must be specified for pod {name}")
            else:
                msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
                if inits:
                    msg += f" or one of the init containers: [{' '.join(inits)}]"
                return _status_response(400, msg)
        elif container not in containers + inits + ephemeral:
            return _status_response(400, f"container {container} is not valid for pod {name}")
        previous = req.q("previous") in ("true", "1")
        text = self._logs.get((namespace, name, container, previous))
        if text is None and previous:
            return _status_response(400, f'previous terminated container "{container}" in pod "{name}" not found')
        data = (text or "").encode()
        for param in ("tailLines", "limitBytes"):
            raw = req.q(param)
            if raw and not raw.isdigit():
                return _status_response(400, f"{param}: Invalid value: {raw!r}: must be a non-negative integer")
        if req.q("tailLines"):
            tail = int(req.q("tailLines"))
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[len(lines) - tail :]) if tail else b""
        if req.q("limitBytes"):
            data = data[: int(req.q("limitBytes"))]
        return _Response(200, data, content_type="text/plain")

    # -- pod proxy -------------------------------------------------------------------------

    def _pod_proxy(self, res: _Resource, info: _RequestInfo, req: _Request) -> _Response:
        """``pods/{name}[:{port}]/proxy/{path}`` as kube-apiserver's pod proxy answers it
        (pkg/registry/core/pod ResourceLocation + apimachinery's proxy transport),
        with the DCGM exporter emulated behind it.

        The id is ``name``, ``name:port`` or ``scheme:name:port``
        (utilnet.SplitSchemeNamePort; anything else is 400 ``invalid pod request``);
        without a port the pod's first container port is used, else 80. A pod with
        no usable IP is 400 ``address not allowed`` (a scheduled pod that the
        snapshot shows without ``status.podIP`` is given 10.0.0.1). Something is
        listening only on a running pod labelled as a DCGM exporter
        (``app=nvidia-dcgm-exporter`` or ``app.kubernetes.io/name=dcgm-exporter``)
        whose node has metrics, on its declared container ports (9400 when none are
        declared); anything else is the 503 the apiserver sends when the dial fails.
        """
        parts = info.name.split(":")
        scheme, port = "", ""
        if len(parts) == 1:
            name = parts[0]
        elif len(parts) == 2:
            name, port = parts
        elif len(parts) == 3:
            scheme, name, port = parts
        else:
            name = ""
        if not name or scheme not in ("", "http", "https"):
            return _status_response(400, f"invalid pod request {json.dumps(info.name)}")
        with self._lock:
            pod = self._store.get(res, info.namespace, name)
        if pod is None:
            return self._not_found(res, name)
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        container_ports = [p.get("containerPort") for c in spec.get("containers") or []
                           for p in c.get("ports") or [] if isinstance(p, dict) and p.get("containerPort")]
        if not port:
            port = str(container_ports[0]) if container_ports else "80"
        ips = [e.get("ip") for e in status.get("podIPs") or [] if isinstance(e, dict)]
        ip = (ips[0] if ips else None) or status.get("podIP")
        if not ip and spec.get("nodeName"):
            ip = "10.0.0.1"
        if not ip or not _global_unicast(str(ip)):
            return _status_response(400, "address not allowed")
        host = f"[{ip}]:{port}" if ":" in str(ip) else f"{ip}:{port}"
        labels = (pod.get("metadata") or {}).get("labels") or {}
        exporter = labels.get("app") == "nvidia-dcgm-exporter" or labels.get("app.kubernetes.io/name") == "dcgm-exporter"
        text = self._metrics.get(spec.get("nodeName") or "")
        listening = [str(p) for p in container_ports] or [str(_DCGM_PORT)]
        if not (exporter and text is not None and status.get("phase") == "Running" and port in listening):
            return _status_response(503, f"error trying to reach service: dial tcp {host}: connect: connection refused")
        if scheme == "https":
            return _status_response(503, "error trying to reach service: tls: first record does not look like a "
                                         "TLS handshake")
        # Behind the proxy: the exporter's /metrics; any other path gets Go's default 404.
        if req.method not in ("GET", "HEAD"):
            return _Response(405, b"Method Not Allowed\n", content_type="text/plain; charset=utf-8")
        segs = [s for s in req.path.strip("/").split("/") if s]
        target = "/" + "/".join(segs[segs.index("proxy") + 1:]) if "proxy" in segs else "/"
        if target == "/metrics":
            body = b"" if req.method == "HEAD" else text.encode()
            return _Response(200, body, content_type="text/plain; version=0.0.4; charset=utf-8")
        return _Response(404, b"404 page not found\n", content_type="text/plain; charset=utf-8")
