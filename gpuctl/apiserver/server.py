"""A local HTTP server that serves a snapshot the way kube-apiserver would.

gpuctl's tests (and ``python -m benchmarks.serve``) point the *real* ``kubernetes``
Python client at this server through a real kubeconfig, over real HTTP. Nothing
in the client is patched, so anything the client does with a real cluster
(paging, selectors, error decoding, gzip, retries in urllib3) happens here too.

What is emulated, and why it matters for a diagnostic tool:

* Routing exactly like kube-apiserver's ``RequestInfoFactory``: core
  ``/api/v1/...``, group ``/apis/<group>/<version>/...``, namespaced and
  cluster-scoped collections, named objects, the ``pods/log`` subresource,
  and the ``pods/proxy`` subresource in front of an emulated DCGM exporter
  (``metrics``: node -> Prometheus text), with the apiserver's proxy errors.
  A group/version or resource that is not served answers the same generic 404
  a real server gives for a CRD that is not installed, so "is Kueue installed?"
  code paths are exercised.
* Authentication (bearer token, 401) and authorization (RBAC-like deny and
  allow rules, 403 with the apiserver's exact sentence), because a diagnosis
  run under a namespaced service account must degrade, not crash.
* ``labelSelector`` with the full set-based grammar, and ``fieldSelector``
  validated per kind with the *same* accepted labels and the same 400 text a
  real server returns - a selector that works here works on a cluster.
* Chunked lists (``limit``/``continue``), an optional server-side page cap so
  callers must follow ``continue``, and 410 "Expired" for compacted tokens.
* PATCH (merge, strategic merge approximated as merge with its `$patch: replace`
  directive honoured, JSON patch), DELETE, POST (create: a Job's selector generated
  as the apiserver does), PUT; a Job's template and a pod's spec immutable (422),
  ``dryRun=All``, resourceVersion preconditions (409).
* Fault injection (HTTP statuses incl. 429 + Retry-After, connection resets,
  hangs, truncated JSON, 410) to test retry and degradation paths.

It is stdlib-only on purpose and must not import ``kubernetes``: the point is
to test the client, so the server must not share code with it. The one module it
shares with gpuctl is the label-selector grammar (gpuctl/model/selectors.py), which
gpuctl uses only to filter a snapshot's nodes offline; live, selectors go to the
server as text.
"""

from __future__ import annotations

import base64
import bisect
import copy
import gzip
import hashlib
import ipaddress
import json
import os
import re
import socket
import struct
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["Fault", "RequestRecord", "SnapshotAPIServer"]

DEFAULT_USER = "system:serviceaccount:ml:trainer"
DEFAULT_VERSION = "v1.31.0"

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
    _KindInfo("scheduling.volcano.sh", "PodGroup", "podgroups", True, crd=True),
    _KindInfo("scheduling.volcano.sh", "Queue", "queues", False, crd=True),
    _KindInfo("batch.volcano.sh", "Job", "jobs", True, crd=True),
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
# Patches: RFC 7386 merge patch and RFC 6902 JSON patch.
# ---------------------------------------------------------------------------


class _PatchError(Exception):
    """A patch that cannot be applied (answered 422 like the apiserver does)."""


def merge_patch(target: Any, patch: Any, strategic: bool = False) -> Any:
    """RFC 7386 JSON merge patch; ``null`` deletes a key. ``strategic``: a map marked
    ``{"$replaced": value}`` by _strategic_replace replaces the target's."""
    if strategic and isinstance(patch, dict) and set(patch) == {_REPLACED}:
        return copy.deepcopy(patch[_REPLACED])
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, strategic)
    return result


_REPLACED = "$replaced"


def _strategic_replace(patch: Any) -> Any:
    """A strategic merge patch as a merge patch: a map with the ``$patch: replace``
    directive (what ``kubectl rollout undo`` sends for the pod template) is marked to
    replace the target's instead of merging into it; other directives are dropped
    (lists are replaced, not merged by key: the approximation this server makes)."""
    if not isinstance(patch, dict):
        return _strip_directives(patch)
    if patch.get("$patch") == "replace":
        return {_REPLACED: _strip_directives(patch)}
    return {k: _strategic_replace(v) for k, v in patch.items() if not k.startswith("$")}


def _strip_directives(patch: Any) -> Any:
    """Drop strategic-merge directives ($patch, $retainKeys, $setElementOrder/...)."""
    if isinstance(patch, dict):
        return {k: _strip_directives(v) for k, v in patch.items() if not k.startswith("$")}
    if isinstance(patch, list):
        return [_strip_directives(v) for v in patch]
    return patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _PatchError(f"JSON pointer {path!r} must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _walk(doc: Any, tokens: list[str], op: str, path: str) -> Any:
    cur = doc
    for tok in tokens:
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
            cur = cur[int(tok)]
        else:
            raise _PatchError(f"{op} operation does not apply: doc is missing path: {path}: missing value")
    return cur


def _list_index(container: list, tok: str, op: str, path: str, allow_end: bool) -> int:
    if tok == "-" and allow_end:
        return len(container)
    if not tok.isdigit():
        raise _PatchError(f"{op} operation does not apply: invalid array index {tok!r} in {path}")
    idx = int(tok)
    if idx > len(container) or (idx == len(container) and not allow_end):
        raise _PatchError(f"{op} operation does not apply: array index out of bounds: {path}")
    return idx


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    tokens = _pointer(path)
    if not tokens:
        return copy.deepcopy(value)
    parent = _walk(doc, tokens[:-1], op, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        parent.insert(_list_index(parent, last, op, path, allow_end=True), copy.deepcopy(value))
    else:
        raise _PatchError(f"{op} operation does not apply: doc is missing path: {path}: missing value")
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise _PatchError(f"{op} operation does not apply: cannot remove the document root")
    parent = _walk(doc, tokens[:-1], op, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_list_index(parent, last, op, path, allow_end=False))
    raise _PatchError(f"{op} operation does not apply: doc is missing path: {path}: missing value")


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch: add, remove, replace, test, move, copy."""
    if not isinstance(ops, list):
        raise ValueError("json patch must be a JSON array of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise ValueError(f"invalid JSON patch operation: {json.dumps(op)}")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, op.get("value"))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _walk(doc, _pointer(path), "replace", path)
            if _pointer(path):
                doc, _ = _remove(doc, path, "replace")
            doc = _add(doc, path, op.get("value"), "replace")
        elif kind == "test":
            if _walk(doc, _pointer(path), "test", path) != op.get("value"):
                raise _PatchError(f"testing value {path} failed: test failed")
        elif kind in ("move", "copy"):
            src = op.get("from", "")
            if kind == "move":
                doc, value = _remove(doc, src, "move")
            else:
                value = _walk(doc, _pointer(src), "copy", src)
            doc = _add(doc, path, value, kind)
        else:
            raise ValueError(f"Unexpected kind: {kind}")
    return doc


# ---------------------------------------------------------------------------
# Status bodies, exactly as metav1.Status is serialized by the apiserver.
# ---------------------------------------------------------------------------

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}
_DEFAULT_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected fault",
    503: "the server is currently unable to handle the request",
    504: "Timeout: request did not complete within the allotted timeout",
}
_NOT_FOUND = "the server could not find the requested resource"
# k8s.io/apiserver/pkg/storage/etcd3/errors.go `inconsistentContinue`: the 410 sent
# when a continue token's revision was compacted; handleCompactedErrorForPaging
# attaches a fresh token (resourceVersion -1) that continues inconsistently. A token
# that does not decode is a 400 "invalid continue token: ..." instead (etcd3 store.go).
# Caches for large snapshots (see _Store, SnapshotAPIServer._matching, _gzip).
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


# ---------------------------------------------------------------------------
# Public records and fault specs.
# ---------------------------------------------------------------------------


@dataclass
class RequestRecord:
    """One request the server received. ``status`` is 0 when no answer was sent."""

    method: str
    path: str
    query: dict[str, list[str]]
    status: int
    headers: dict[str, str]
    body: bytes = b""   # what the client sent (PATCH bodies, for tests that check what was written)


_FAULT_KINDS = ("status", "reset", "hang", "badjson", "gone", "trickle", "endless", "loop", "flood", "slow")


@dataclass
class Fault:
    """An injected failure for requests whose path matches ``path_regex``.

    ``path_regex`` is searched (``re.search``) in the URL path and, failing
    that, in ``path?query``. ``method`` is an HTTP method or ``"*"``.
    ``times`` is how many matching requests get the fault (``None``: forever).

    Kinds: ``status`` answers ``status`` (default 500) with a Status body (429
    gets ``Retry-After: 1`` unless ``headers`` says otherwise); ``reset``
    aborts the connection with a TCP RST and no answer; ``hang`` waits
    ``delay`` seconds (``0``: until the server stops) and closes without an
    answer; ``badjson`` answers 200 with the real body cut in half; ``gone``
    answers 410 Expired as for a compacted continue token; ``trickle`` answers
    200 with the real body's length and sends it one byte every ``interval``
    seconds (a response that never ends in practice); ``endless`` answers a list
    with its first page and a fresh ``continue`` token every time (a list that
    never ends), ``loop`` the same with one repeated token, ``flood`` with the
    first page's objects renamed on every page (new objects forever); ``slow`` does the real
    work (a PATCH is applied) and answers only after ``delay`` seconds (a client
    that times out cannot know the write happened). ``delay`` also delays the
    other kinds.
    """

    path_regex: str
    status: int | None = None
    kind: str = "status"
    times: int | None = 1
    method: str = "GET"
    headers: dict | None = None
    delay: float = 0.0
    interval: float = 0.5
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in _FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {_FAULT_KINDS}")
        self._regex = re.compile(self.path_regex)

    def _matches(self, method: str, path: str, raw_query: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method != "*" and self.method.upper() != method:
            return False
        return bool(self._regex.search(path) or (raw_query and self._regex.search(f"{path}?{raw_query}")))


@dataclass(frozen=True)
class _Deny:
    resource: str
    verb: str
    namespace: str | None
    group: str


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


def _invalid(res: _Resource, name: str, field: str, detail: str) -> _Response:
    """422 as the apiserver words it (apierrors.NewInvalid): kubectl prints
    'The Kind "name" is invalid: field: detail' from the causes."""
    qualified = f"{res.kind}.{res.group}" if res.group else res.kind
    return _status_response(422, f'{qualified} "{name}" is invalid: {field}: {detail}', reason="Invalid",
                            details={"name": name, **({"group": res.group} if res.group else {}), "kind": res.kind,
                                     "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}]})


def _rfc3339_now() -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


_JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
_JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


def _validate_create(res: _Resource, obj: dict, uid: str) -> tuple[str, str] | None:
    """The create-time rules fix commands meet: a Job's selector is generated
    (pkg/registry/batch/job strategy generateSelector + ValidateJob): a copied
    ``spec.selector`` without ``manualSelector`` and a stale controller-uid
    template label are refused with the apiserver's words."""
    if res.kind != "Job" or res.group != "batch":
        return None
    spec = obj.setdefault("spec", {})
    name = obj["metadata"]["name"]
    tmeta = spec.setdefault("template", {}).setdefault("metadata", {})
    labels = tmeta.setdefault("labels", {})
    if spec.get("manualSelector") is True:
        return None
    if spec.get("selector"):
        return "spec.selector", f'Invalid value: {json.dumps(spec["selector"], sort_keys=True)}: `selector` not auto-generated'
    stale = [k for k in _JOB_UID_LABELS if k in labels and labels[k] != uid]
    if stale:
        return f"spec.template.metadata.labels[{stale[0]}]", f"Invalid value: \"{labels[stale[0]]}\": must be '{uid}'"
    for k in _JOB_UID_LABELS:
        labels[k] = uid
    for k in _JOB_NAME_LABELS:
        labels.setdefault(k, name)
    spec["selector"] = {"matchLabels": {_JOB_UID_LABELS[0]: uid}}
    return None


_POD_MUTABLE = ("activeDeadlineSeconds", "tolerations", "schedulingGates", "terminationGracePeriodSeconds")


def _immutable_change(res: _Resource, current: dict, new: dict) -> tuple[str, str] | None:
    """Updates the apiserver refuses (422), as fix commands would meet them: a Job's
    pod template is immutable; a pod's spec may only change images, gain
    tolerations and lose scheduling gates."""
    cur_spec, new_spec = current.get("spec") or {}, new.get("spec") or {}
    if res.kind == "Job" and res.group == "batch":
        if (cur_spec.get("template") or {}).get("spec") != (new_spec.get("template") or {}).get("spec"):
            return "spec.template", "Invalid value: ...: field is immutable"
    if res.kind == "Pod" and not res.group:
        def strip(spec: dict) -> dict:
            out = {k: v for k, v in spec.items() if k not in _POD_MUTABLE}
            out["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers") or []]
            return out
        old_tol = cur_spec.get("tolerations") or []
        if strip(cur_spec) != strip(new_spec) or (new_spec.get("tolerations") or [])[:len(old_tol)] != old_tol:
            return "spec", ('Forbidden: pod updates may not change fields other than '
                    '`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,'
                    '`spec.tolerations` (only additions to existing tolerations),'
                    '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)')
    return None


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


class _Store:
    """Objects indexed by resource and (namespace, name); global resourceVersion.

    Derived data (each bucket's key order, and each object's JSON encoding) is
    cached and dropped whenever an object is put: ``generation`` counts the puts.
    Stored objects must therefore only change through :meth:`replace` (PATCH),
    never in place.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]], served: Iterable[str]) -> None:
        self.generation = 0
        self._sorted: dict[tuple[str, str, str], tuple[int, list[tuple[tuple[str, str], dict]]]] = {}
        self._encoded: dict[int, tuple[dict, bytes]] = {}
        objs = [_copy_tree(dict(o), {}) for o in objects]
        for o in objs:
            if not o.get("apiVersion") or not o.get("kind") or not o.get("metadata", {}).get("name"):
                raise ValueError(f"object needs apiVersion, kind and metadata.name: {json.dumps(o)[:200]}")
        self.catalog = _Catalog(objs, served)
        rvs = [int(o["metadata"]["resourceVersion"]) for o in objs
               if str(o["metadata"].get("resourceVersion", "")).isdigit()]
        self.rv = max(rvs + [1000])
        self.objects: list[dict] = []
        self._index: dict[tuple[str, str, str], dict[tuple[str, str], dict]] = {}
        for o in objs:
            if not str(o["metadata"].get("resourceVersion", "")).isdigit():
                o["metadata"]["resourceVersion"] = str(self.next_rv())
            self._put(o)

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _bucket(self, res: _Resource) -> dict[tuple[str, str], dict]:
        return self._index.setdefault((res.group, res.version, res.plural), {})

    def _put(self, obj: dict) -> None:
        bucket = self._bucket(self.catalog.for_object(obj))
        old = bucket.get(_obj_key(obj))
        if old is not None:
            self.objects[next(i for i, o in enumerate(self.objects) if o is old)] = obj
            self._encoded.pop(id(old), None)
        else:
            self.objects.append(obj)
        bucket[_obj_key(obj)] = obj
        self.generation += 1

    def replace(self, obj: dict) -> None:
        self._put(obj)

    def remove(self, obj: dict) -> None:
        bucket = self._bucket(self.catalog.for_object(obj))
        old = bucket.pop(_obj_key(obj), None)
        if old is not None:
            self.objects = [o for o in self.objects if o is not old]
            self._encoded.pop(id(old), None)
            self.generation += 1

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
    hold: float = 0.0  # streaming (watch): keep the connection open this long, then close
    trickle: float = 0.0  # > 0: send the body one byte every this many seconds (a body that never ends)


@dataclass
class _Drop:
    """Answer nothing: abort (``rst``) or close gracefully."""

    rst: bool


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
    """Thin HTTP layer; all behaviour lives in SnapshotAPIServer._handle."""

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
        app: SnapshotAPIServer = self.server.app  # type: ignore[attr-defined]
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
        result = app._handle(req)
        if isinstance(result, _Drop):
            self._drop(result.rst)
            return
        self._write(result, "gzip" in req.header("Accept-Encoding").lower())

    def _write(self, resp: _Response, gzip_ok: bool) -> None:
        body = resp.body
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in resp.headers.items():
            self.send_header(k, v)
        if gzip_ok and body and not resp.trickle:
            body = self.server.gzip(body)  # type: ignore[attr-defined]
            self.send_header("Content-Encoding", "gzip")
        if resp.hold:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if resp.trickle:
            self._trickle(body, resp.trickle)
            return
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return
        if resp.hold:
            self.server.app._stop.wait(resp.hold)  # type: ignore[attr-defined]

    def _trickle(self, body: bytes, interval: float) -> None:
        """A byte at a time, each well inside a client's read timeout: only a deadline
        on the whole response ends it."""
        self.close_connection = True
        stop = self.server.app._stop  # type: ignore[attr-defined]
        for i in range(len(body)):
            try:
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
            except OSError:
                return
            if stop.wait(interval):
                return

    def _drop(self, rst: bool) -> None:
        self.close_connection = True
        if rst:
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            except OSError:
                pass


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that can also tear down its open keep-alive connections."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], app: SnapshotAPIServer) -> None:
        self.app = app
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._gz_cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._gz_bytes = 0
        self._gz_lock = threading.Lock()
        super().__init__(addr, _Handler)

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
# The server.
# ---------------------------------------------------------------------------


class SnapshotAPIServer:
    """Serve ``objects`` over a Kubernetes-compatible HTTP API on 127.0.0.1.

    ``objects`` are raw objects as ``kubectl get -o json`` prints items;
    ``logs`` maps ``(namespace, pod, container, previous)`` to log text.
    ``token``: required bearer token (``None`` disables authentication).
    ``page_size_cap``: maximum list page size even without ``limit``.
    ``user``: the user named in 403 messages. ``version``: ``gitVersion`` of
    ``/version``. ``served``: extra ``group/version`` strings to serve even
    though the snapshot has no objects of them (an installed but empty CRD).
    ``metrics``: node name -> Prometheus text, answered by the DCGM exporter pod
    on that node through the pod proxy (``pods/{name}:9400/proxy/metrics``).

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]],
        logs: Mapping[tuple[str, str, str, bool], str] | None = None,
        token: str | None = "test-token",
        page_size_cap: int | None = None,
        *,
        user: str = DEFAULT_USER,
        version: str = DEFAULT_VERSION,
        served: Iterable[str] = (),
        metrics: Mapping[str, str] | None = None,
        tls: Any = None,
    ) -> None:
        """``tls``: an ``ssl.SSLContext`` (server side) to serve HTTPS instead of HTTP."""
        self._tls = tls
        self._store = _Store(objects, served)
        self._logs = dict(logs or {})
        self._metrics = dict(metrics or {})
        self.token = token
        self.page_size_cap = page_size_cap
        self.user = user
        self.version = version
        self._lock = threading.RLock()
        self._match_cache: OrderedDict[tuple, tuple[int, list[tuple[str, str]], list[dict]]] = OrderedDict()
        self._requests: list[RequestRecord] = []
        self._faults: list[Fault] = []
        self._denies: list[_Deny] = []
        self._allow_rules: list[dict] | None = None
        self._compacted_rv = 0
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> SnapshotAPIServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self._stop.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), self)
        if self._tls is not None:
            self._httpd.socket = self._tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
            name=f"snapshot-apiserver-{self.port}", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wake hung handlers, close connections, free the port."""
        if self._httpd is None:
            return
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> SnapshotAPIServer:
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
        return f"{'https' if self._tls is not None else 'http'}://127.0.0.1:{self.port}"

    # -- test controls -------------------------------------------------------

    @property
    def objects(self) -> list[dict]:
        """The current objects, in snapshot order (patched objects replaced in place)."""
        with self._lock:
            return list(self._store.objects)

    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._requests)

    def reset_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def forbid(self, resource: str, verb: str = "*", namespace: str | None = None, group: str = "") -> None:
        """Deny ``verb`` on ``resource`` (e.g. ``nodes``, ``pods/log``; ``*`` = any)
        in ``namespace`` (``None``: everywhere, including cluster scope) of API
        group ``group`` (``*`` = any) with a 403, as RBAC would."""
        with self._lock:
            self._denies.append(_Deny(resource, verb, namespace, group))

    def allow_only(self, rules: list[dict] | None) -> None:
        """Role mode: only requests matching one of ``rules`` are allowed.

        A rule is ``{"apiGroups": [...], "resources": [...], "verbs": [...]}``
        with optional ``"namespaces": [...]`` (absent: cluster-wide, like a
        ClusterRoleBinding) and ``"resourceNames": [...]``; ``"*"`` matches
        anything. ``None`` turns role mode off. ``forbid`` still applies.
        """
        with self._lock:
            self._allow_rules = None if rules is None else [dict(r) for r in rules]

    def expire_continue_tokens(self) -> None:
        """Compact: continue tokens issued so far now answer 410 Expired."""
        with self._lock:
            self._compacted_rv = self._store.rv
            self._store.next_rv()

    def write_kubeconfig(
        self,
        path: str | os.PathLike[str],
        context: str = "snapshot",
        namespace: str = "default",
        user_token: str | None = None,
        *,
        extra_contexts: Iterable[str | tuple[str, str]] = (),
        merge: bool = False,
    ) -> str | os.PathLike[str]:
        """Write a kubeconfig whose current context points at this server.

        ``user_token`` overrides the server token (e.g. a wrong one to get 401;
        ``""`` writes a user with no credentials). ``extra_contexts`` adds more
        context names (or ``(name, namespace)`` pairs) for the same server and
        user. ``merge=True`` adds this server's cluster/user/contexts to an
        existing kubeconfig at ``path`` (written by this method), keeping its
        current-context - so two servers can live in one file. The file is
        JSON, which every kubeconfig loader accepts as YAML.
        """
        token = self.token if user_token is None else user_token
        cluster, user = f"{context}-cluster", f"{context}-user"
        contexts = [(context, namespace)]
        contexts += [(c, namespace) if isinstance(c, str) else (c[0], c[1]) for c in extra_contexts]
        cfg: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": cluster, "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": token} if token else {}}],
            "contexts": [{"name": n, "context": {"cluster": cluster, "user": user, "namespace": ns}}
                         for n, ns in contexts],
            "current-context": context,
        }
        if merge and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                old = json.load(fh)
            for section in ("clusters", "users", "contexts"):
                names = {e["name"] for e in cfg[section]}
                cfg[section] = [e for e in old.get(section, []) if e["name"] not in names] + cfg[section]
            cfg["current-context"] = old.get("current-context") or context
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(cfg, fh, indent=2)
        return path

    # -- request handling ----------------------------------------------------

    def _handle(self, req: _Request) -> _Response | _Drop:
        record = RequestRecord(req.method, req.path, req.query, 0, dict(req.headers), req.body)
        with self._lock:
            self._requests.append(record)
            fault = next((f for f in self._faults if f._matches(req.method, req.path, req.raw_query)), None)
            if fault is not None:
                fault.hits += 1
        result = self._apply_fault(fault, req) if fault is not None else self._serve(req)
        if isinstance(result, _Response):
            record.status = result.status
        return result

    def _apply_fault(self, fault: Fault, req: _Request) -> _Response | _Drop:
        if fault.kind == "hang":
            self._stop.wait(fault.delay if fault.delay > 0 else None)
            return _Drop(rst=False)
        if fault.kind == "slow":
            real = self._serve(req)
            self._stop.wait(fault.delay)
            return real
        if fault.delay > 0:
            self._stop.wait(fault.delay)
        if fault.kind == "reset":
            return _Drop(rst=True)
        if fault.kind == "gone":
            return _status_response(410, _EXPIRED_CONTINUE, reason="Expired", headers=fault.headers)
        if fault.kind == "badjson":
            real = self._serve(req)
            body = real.body[: max(1, len(real.body) // 2)]
            return _Response(200, body, headers=dict(fault.headers or {}))
        if fault.kind in ("endless", "loop", "flood"):
            first = _Request(req.method, req.path, "", {k: v for k, v in req.query.items() if k != "continue"},
                             req.headers, req.body)
            real = self._serve(first)
            try:
                page = json.loads(real.body)
            except ValueError:
                return real
            if real.status != 200 or not isinstance(page, dict) or "items" not in page:
                return real
            page.setdefault("metadata", {})["continue"] = "loop" if fault.kind == "loop" else f"endless-{fault.hits}"
            if fault.kind == "flood":
                for item in page["items"]:
                    if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
                        item["metadata"]["name"] = f"{item['metadata'].get('name', 'x')}-{fault.hits}"
            return _json_response(200, page, headers=dict(fault.headers or {}))
        if fault.kind == "trickle":
            real = self._serve(req)
            return _Response(200, real.body, real.content_type, headers=dict(fault.headers or {}),
                             trickle=max(0.01, fault.interval))
        code = fault.status or 500
        headers = dict(fault.headers or {})
        details = None
        if code == 429:
            headers.setdefault("Retry-After", "1")
            try:
                details = {"retryAfterSeconds": int(float(headers["Retry-After"]))}
            except (ValueError, OverflowError):   # a garbage header, on purpose
                details = None
        return _status_response(code, _DEFAULT_MESSAGES.get(code, f"injected fault ({code})"),
                                details=details, headers=headers)

    def _serve(self, req: _Request) -> _Response:
        """Authenticate, then non-resource endpoints, then authorize and route."""
        path = req.path.rstrip("/") or "/"
        if self.token is not None:
            auth = req.header("Authorization")
            public = path in ("/version", "/healthz", "/livez", "/readyz")
            if not (not auth and public) and auth != f"Bearer {self.token}":
                return _status_response(401, "Unauthorized")
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
                         "kind": res.kind, "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
                if SHORT_NAMES.get((group, res.plural)):
                    entry["shortNames"] = SHORT_NAMES[(group, res.plural)]
                resources.append(entry)
                if res.kind == "Pod" and not group:
                    resources.append({"name": "pods/log", "singularName": "", "namespaced": True,
                                      "kind": "Pod", "verbs": ["get"]})
                    resources.append({"name": "pods/proxy", "singularName": "", "namespaced": True,
                                      "kind": "PodProxyOptions", "verbs": ["create", "delete", "get", "patch", "update"]})
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
        downloading a full schema. The server accepts and ignores the parameter."""
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

    # -- authorization -----------------------------------------------------------

    def _authorize(self, info: _RequestInfo) -> _Response | None:
        """RBAC-like check; a denial reads exactly like kube-apiserver's.

        Message format from k8s.io/apiserver .../handlers/responsewriters/errors.go
        forbiddenMessage() wrapped by apierrors.NewForbidden().
        """
        res = info.rbac_resource
        with self._lock:
            denied = any(
                d.resource in ("*", res)
                and d.verb in ("*", info.verb)
                and d.group in ("*", info.group)
                and (d.namespace is None or d.namespace == info.namespace)
                for d in self._denies
            )
            if not denied and self._allow_rules is not None:
                denied = not any(self._rule_allows(r, info) for r in self._allow_rules)
        if not denied:
            return None
        qualified = f"{info.resource}.{info.group}" if info.group else info.resource
        subject = f'{qualified} "{info.name}"' if info.name else qualified
        scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
        message = (f'{subject} is forbidden: User "{self.user}" cannot {info.verb} resource "{res}" '
                   f'in API group "{info.group}" {scope}')
        return _status_response(403, message, details=_details(info.resource, info.group, info.name))

    @staticmethod
    def _rule_allows(rule: Mapping[str, Any], info: _RequestInfo) -> bool:
        def has(key: str, value: str) -> bool:
            values = rule.get(key) or []
            return "*" in values or value in values

        if not (has("apiGroups", info.group) and has("verbs", info.verb) and has("resources", info.rbac_resource)):
            return False
        if rule.get("resourceNames") and info.name not in rule["resourceNames"]:
            return False
        namespaces = rule.get("namespaces")
        return namespaces is None or (bool(info.namespace) and info.namespace in namespaces)

    # -- routing -------------------------------------------------------------------

    def _route(self, info: _RequestInfo, req: _Request) -> _Response:
        res = self._store.catalog.lookup(info.group, info.version, info.resource)
        if (res is not None and info.subresource == "proxy" and res.plural == "pods" and not res.group
                and info.namespace and info.name):
            return self._pod_proxy(res, info, req)
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
            return self._get(res, namespace, info.name)
        if info.verb == "get" and info.subresource == "log" and res.plural == "pods" and not res.group:
            return self._log(res, namespace, info.name, req)
        if info.verb == "patch" and info.name and info.subresource in ("", "status"):
            return self._patch(res, namespace, info.name, req)
        if info.verb == "delete" and info.name and not info.subresource:
            return self._delete(res, namespace, info.name, req)
        if info.verb == "create" and not info.name:
            return self._create(res, namespace, req)
        if info.verb == "update" and info.name and not info.subresource:
            return self._update(res, namespace, info.name, req)
        if info.subresource and info.verb == "get":
            return _status_response(404, _NOT_FOUND, details={})
        return _status_response(405, "the server does not allow this method on the requested resource",
                                details=_details(res.plural, res.group, info.name))

    def _not_found(self, res: _Resource, name: str) -> _Response:
        return _status_response(404, f'{res.qualified} "{name}" not found',
                                details=_details(res.plural, res.group, name))

    def _get(self, res: _Resource, namespace: str, name: str) -> _Response:
        with self._lock:
            obj = self._store.get(res, namespace, name)
            if obj is None:
                return self._not_found(res, name)
            return _json_response(200, obj)

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
        """Minimal WATCH: ADDED for current objects (or MODIFIED since ``resourceVersion``),
        then the stream stays open for ``timeoutSeconds`` (default 1s) and ends."""
        try:
            labels, fields = self._selectors(res, req)
        except SelectorError as exc:
            return _status_response(400, str(exc))
        since = int(req.q("resourceVersion")) if req.q("resourceVersion").isdigit() else 0
        with self._lock:
            events = []
            for _, obj in self._store.select(res, namespace):
                if not self._matches(res, obj, labels, fields):
                    continue
                obj_rv = int(obj["metadata"].get("resourceVersion") or 0)
                if since == 0:
                    events.append({"type": "ADDED", "object": obj})
                elif obj_rv > since:
                    events.append({"type": "MODIFIED", "object": obj})
            body = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
        timeout = req.q("timeoutSeconds")
        hold = float(timeout) if timeout.isdigit() else 1.0
        return _Response(200, body, hold=max(hold, 0.01))

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

    # -- patch -----------------------------------------------------------------------------

    _PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                    "application/strategic-merge-patch+json", "application/apply-patch+yaml")

    def _patch(self, res: _Resource, namespace: str, name: str, req: _Request) -> _Response:
        """PATCH as kube-apiserver's patch handler applies it (dryRun, preconditions, 409/415/422).

        Approximations: a strategic merge patch is applied as a JSON merge patch
        (directives dropped; lists are replaced rather than merged by key), and
        server-side apply (``apply-patch+yaml``, JSON bodies only - there is no
        YAML parser in the stdlib) is applied as a merge patch with no field
        ownership. CRDs reject strategic merge patches with 415, as on a cluster.
        """
        ctype = req.header("Content-Type").split(";")[0].strip().lower()
        accepted = [t for t in self._PATCH_TYPES if not (res.crd and "strategic" in t)]
        if ctype not in accepted:
            return _status_response(
                415, "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(accepted))
        dry_run = req.query.get("dryRun", [])
        if any(v != "All" for v in dry_run):
            return _status_response(400, f"Invalid dryRun value: {', '.join(dry_run)}")
        if ctype == "application/apply-patch+yaml" and not req.q("fieldManager"):
            return _status_response(
                422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                "is required for apply patch", reason="Invalid")
        try:
            patch = json.loads(req.body or b"null")
        except ValueError as exc:
            if ctype == "application/apply-patch+yaml":
                return _status_response(415, "the snapshot server only accepts JSON apply patches")
            return _status_response(400, f"error decoding patch: {exc}")
        with self._lock:
            current = self._store.get(res, namespace, name)
            if current is None:
                return self._not_found(res, name)
            try:
                if ctype == "application/json-patch+json":
                    patched = json_patch(current, patch)
                elif isinstance(patch, dict) and "strategic" in ctype:
                    patched = merge_patch(copy.deepcopy(current), _strategic_replace(patch), strategic=True)
                elif isinstance(patch, dict):
                    patched = merge_patch(copy.deepcopy(current), _strip_directives(patch))
                else:
                    return _status_response(400, "the patch must be a JSON object")
            except ValueError as exc:
                return _status_response(400, str(exc))
            except _PatchError as exc:
                return _status_response(422, str(exc))
            if not isinstance(patched, dict):
                return _status_response(422, "the patched object is not a JSON object")
            meta = patched.setdefault("metadata", {})
            old_meta = current["metadata"]
            if _obj_key(patched) != _obj_key(current):
                return _status_response(
                    400, f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})")
            if (patched.get("apiVersion"), patched.get("kind")) != (current.get("apiVersion"), current.get("kind")):
                return _status_response(400, "the apiVersion and kind of the object may not be changed by a patch")
            if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta.get("resourceVersion"):
                return _status_response(
                    409, f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                    details=_details(res.plural, res.group, name))
            meta["resourceVersion"] = old_meta.get("resourceVersion")
            invalid = _immutable_change(res, current, patched)
            if invalid:
                return _invalid(res, name, *invalid)
            if patched.get("spec") != current.get("spec") and "generation" in old_meta:
                meta["generation"] = int(old_meta["generation"]) + 1
            if not dry_run:
                meta["resourceVersion"] = str(self._store.next_rv())
                self._store.replace(patched)
            return _json_response(200, patched)

    # -- delete, create, update (what fix commands use: kubectl delete, replace [--force]) ---------

    @staticmethod
    def _dry_run(req: _Request) -> tuple[bool, _Response | None]:
        values = req.query.get("dryRun", [])
        if any(v != "All" for v in values):
            return False, _status_response(400, f"Invalid dryRun value: {', '.join(values)}")
        return bool(values), None

    def _delete(self, res: _Resource, namespace: str, name: str, req: _Request) -> _Response:
        """DELETE of one object: gone at once (no grace period, no finalizers), as a
        pod with ``--grace-period=0`` would be; the answer is the object, like the
        apiserver's for a deletion that completes immediately."""
        dry, bad = self._dry_run(req)
        if bad is not None:
            return bad
        with self._lock:
            current = self._store.get(res, namespace, name)
            if current is not None and not dry:
                self._store.remove(current)
        return self._not_found(res, name) if current is None else _json_response(200, current)

    def _write_request(self, res: _Resource, namespace: str, req: _Request) -> tuple[bool, dict | None, _Response | None]:
        """(dryRun, the object sent, an error answer) of a POST or PUT."""
        dry, bad = self._dry_run(req)
        if bad is not None:
            return dry, None, bad
        obj, bad = self._body_object(res, namespace, req)
        return dry, obj, bad

    def _body_object(self, res: _Resource, namespace: str, req: _Request) -> tuple[dict | None, _Response | None]:
        try:
            obj = json.loads(req.body or b"null")
        except ValueError as exc:
            return None, _status_response(400, f"error decoding the object: {exc}")
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return None, _status_response(400, "the body must be a JSON object with metadata")
        if (obj.get("apiVersion"), obj.get("kind")) != (res.api_version, res.kind):
            return None, _status_response(400, f"the API version in the data ({obj.get('apiVersion')}) does not "
                                               f"match the expected API version ({res.api_version})")
        meta = obj["metadata"]
        if res.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                return None, _status_response(
                    400, "the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = namespace
        return obj, None

    def _create(self, res: _Resource, namespace: str, req: _Request) -> _Response:
        """POST: create with new uid, creationTimestamp and resourceVersion; status
        reset; a Job's selector generated as the apiserver does, so a Job copied
        from ``kubectl get -o yaml`` fails here exactly as it fails on a cluster."""
        dry, obj, bad = self._write_request(res, namespace, req)
        if bad is not None:
            return bad
        meta = obj["metadata"]
        name = meta.get("name") or ""
        if not name:
            return _status_response(422, f"{res.kind}.{res.group or 'core'} is invalid: metadata.name: Required value",
                                    reason="Invalid")
        if meta.get("resourceVersion"):
            return _status_response(500, "resourceVersion should not be set on objects to be created")
        with self._lock:
            if self._store.get(res, namespace, name) is not None:
                return _status_response(409, f'{res.qualified} "{name}" already exists', reason="AlreadyExists",
                                        details=_details(res.plural, res.group, name))
            uid = str(uuid.uuid4())
            meta.update(uid=uid, creationTimestamp=_rfc3339_now(), generation=1)
            meta.pop("managedFields", None)
            meta.pop("deletionTimestamp", None)
            obj.pop("status", None)
            invalid = _validate_create(res, obj, uid)
            if invalid:
                return _invalid(res, name, *invalid)
            if not dry:
                meta["resourceVersion"] = str(self._store.next_rv())
                self._store.replace(obj)
            return _json_response(201, obj)

    def _update(self, res: _Resource, namespace: str, name: str, req: _Request) -> _Response:
        """PUT: replace, with the resourceVersion precondition and the same
        immutability rules as PATCH."""
        dry, obj, bad = self._write_request(res, namespace, req)
        if bad is not None:
            return bad
        with self._lock:
            current = self._store.get(res, namespace, name)
            if current is None:
                return self._not_found(res, name)
            meta, old_meta = obj["metadata"], current["metadata"]
            if meta.get("name") != name:
                return _status_response(400, f"the name of the object ({meta.get('name')}) does not match the "
                                             f"name on the URL ({name})")
            if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta.get("resourceVersion"):
                return _status_response(
                    409, f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                    details=_details(res.plural, res.group, name))
            for key in ("uid", "creationTimestamp"):
                if key in old_meta:
                    meta[key] = old_meta[key]
            invalid = _immutable_change(res, current, obj)
            if invalid:
                return _invalid(res, name, *invalid)
            meta["resourceVersion"] = old_meta.get("resourceVersion")
            if not dry:
                meta["resourceVersion"] = str(self._store.next_rv())
                self._store.replace(obj)
            return _json_response(200, obj)
