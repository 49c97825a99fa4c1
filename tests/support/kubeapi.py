"""gpuctl's test Kubernetes API server: the product's read-only server
(gpuctl/apiserver/server.py, behind ``gpuctl snapshot serve``) plus what only tests
need. Not part of the installed package.

gpuctl's tests (and ``python -m benchmarks.serve``) point the *real* ``kubernetes``
Python client, and kubectl, at this server through a real kubeconfig, over real
HTTP. Nothing in the client is patched, so anything the client does with a real
cluster (paging, selectors, error decoding, gzip, retries in urllib3) happens here
too. On top of the read-only server (routing, discovery, selectors, pagination, pod
logs, the DCGM pod proxy) it emulates:

* Authentication (bearer token, 401) and authorization (RBAC-like deny and
  allow rules, 403 with the apiserver's exact sentence), because a diagnosis
  run under a namespaced service account must degrade, not crash.
* PATCH (merge, strategic merge approximated as merge with its `$patch: replace`
  directive honoured, JSON patch), DELETE, POST (create: a Job's selector generated
  as the apiserver does), PUT; a Job's template and a pod's spec immutable (422),
  ``dryRun=All``, resourceVersion preconditions (409) - so every fix command gpuctl
  prints can be run with kubectl and read back. Discovery advertises the write verbs.
* Fault injection (HTTP statuses incl. 429 + Retry-After, connection resets,
  hangs, truncated JSON, 410) to test retry and degradation paths.
* Request recording (:attr:`SnapshotAPIServer.requests`), TLS, and compaction of
  continue tokens (:meth:`SnapshotAPIServer.expire_continue_tokens`).
* Changes from Python (:meth:`~SnapshotAPIServer.put`,
  :meth:`~SnapshotAPIServer.delete`, :meth:`~SnapshotAPIServer.get`), which, like
  every write verb, go through the store's event log: open watches stream them as
  ADDED, MODIFIED and DELETED events. Watch faults: :meth:`~SnapshotAPIServer.drop_watches`
  (every open watch's connection ends mid-stream, or cleanly), :meth:`~SnapshotAPIServer.expire_watches`
  (the next watches answer the 410 Expired ERROR event), :meth:`~SnapshotAPIServer.compact`
  (the event log is emptied: every resourceVersion handed out so far is too old to
  watch from), :meth:`~SnapshotAPIServer.slow_watches` (each event sent late), and
  :meth:`~SnapshotAPIServer.wait_for_watches` to know a client's watch is open.

Unlike the product server it answers plain lists (no server-side ``Table``), ends a
watch without ``timeoutSeconds`` after 1 s, sends a watch's bookmarks every second
(``bookmark_interval``), and lets an exception in a handler propagate: as it always did.

Stdlib-only, like the server it extends, and it must not import ``kubernetes``: the
point is to test the client, so the server must not share code with it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from gpuctl.apiserver.server import (
    _EXPIRED_CONTINUE,
    DEFAULT_VERSION,
    ReadOnlyAPIServer,
    _details,
    _Handler,
    _HTTPServer,
    _json_response,
    _obj_key,
    _Request,
    _RequestInfo,
    _Resource,
    _Response,
    DEFAULT_EVENT_LOG_SIZE,
    _status_response,
    _Store,
    _WatchStream,
    status_body,
)

__all__ = ["Fault", "RequestRecord", "SnapshotAPIServer", "json_patch", "merge_patch", "status_body"]

DEFAULT_USER = "system:serviceaccount:ml:trainer"


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


# What an injected status fault says, by code.
_DEFAULT_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected fault",
    503: "the server is currently unable to handle the request",
    504: "Timeout: request did not complete within the allotted timeout",
}


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
# The writable store, HTTP plumbing for faults.
# ---------------------------------------------------------------------------


class _WritableStore(_Store):
    """The read-only store plus what the write verbs need. Stored objects change
    only through :meth:`replace` and :meth:`remove`, never in place."""

    def replace(self, obj: dict) -> None:
        self._put(obj)

    def remove(self, obj: dict) -> None:
        """Remove the object (a DELETED event with a new resourceVersion)."""
        self._drop(obj)


class _PacedWatchStream(_WatchStream):
    """A watch whose every event waits the server's ``watch_event_delay`` first
    (:meth:`SnapshotAPIServer.slow_watches`)."""

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks():
            delay = self.app.watch_event_delay  # type: ignore[attr-defined]
            if delay > 0 and self.app._stop.wait(delay):
                return
            yield chunk


@dataclass
class _Drop:
    """Answer nothing: abort (``rst``) or close gracefully."""

    rst: bool


@dataclass
class _Trickle(_Response):
    """Send the body one byte every ``interval`` seconds (a body that never ends)."""

    interval: float = 0.5


class _FaultHandler(_Handler):
    """The product's HTTP layer plus the faults' dropped and trickled answers."""

    def _send(self, result: Any, req: _Request) -> None:
        if isinstance(result, _Drop):
            self._drop(result.rst)
            return
        if isinstance(result, _Trickle):
            self._write(result, False)    # never gzipped: the bytes trickle as they are
            return
        super()._send(result, req)

    def _write_body(self, body: bytes, resp: _Response) -> None:
        if isinstance(resp, _Trickle):
            self._trickle(body, resp.interval)
            return
        super()._write_body(body, resp)

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


# ---------------------------------------------------------------------------
# The server.
# ---------------------------------------------------------------------------


class SnapshotAPIServer(ReadOnlyAPIServer):
    """Serve ``objects`` over a Kubernetes-compatible HTTP API on 127.0.0.1, with
    auth, RBAC, faults, request recording and the write verbs (for tests).

    ``objects`` are raw objects as ``kubectl get -o json`` prints items;
    ``logs`` maps ``(namespace, pod, container, previous)`` to log text.
    ``token``: required bearer token (``None`` disables authentication).
    ``page_size_cap``: maximum list page size even without ``limit``.
    ``user``: the user named in 403 messages. ``version``: ``gitVersion`` of
    ``/version``. ``served``: extra ``group/version`` strings to serve even
    though the snapshot has no objects of them (an installed but empty CRD).
    ``metrics``: node name -> Prometheus text, answered by the DCGM exporter pod
    on that node through the pod proxy (``pods/{name}:9400/proxy/metrics``).
    ``tls``: an ``ssl.SSLContext`` (server side) to serve HTTPS instead of HTTP.
    ``event_log_size``: how many changes the event log keeps for watches (10,000);
    ``bookmark_interval``: seconds between a watch's bookmarks (1).

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    _VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
    _PROXY_VERBS = ("create", "delete", "get", "patch", "update")
    _handler_class = _FaultHandler
    _store_class = _WritableStore
    _internal_errors_as_500 = False
    _TABLES = False
    _WATCH_SECONDS = 1.0
    _watch_stream_class = _PacedWatchStream
    bookmark_interval = 1.0

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
        event_log_size: int = DEFAULT_EVENT_LOG_SIZE,
        bookmark_interval: float | None = None,
    ) -> None:
        super().__init__(objects, logs, page_size_cap=page_size_cap, version=version, served=served, metrics=metrics,
                         event_log_size=event_log_size, bookmark_interval=bookmark_interval)
        self.watch_event_delay = 0.0
        self._expiring: list[list[Any]] = []     # [resource or None, watches left to expire]
        self._tls = tls
        self._scheme = "https" if tls is not None else "http"
        self.token = token
        self.user = user
        self._requests: list[RequestRecord] = []
        self._faults: list[Fault] = []
        self._denies: list[_Deny] = []
        self._allow_rules: list[dict] | None = None

    def _prepare_socket(self, httpd: _HTTPServer) -> None:
        if self._tls is not None:
            httpd.socket = self._tls.wrap_socket(httpd.socket, server_side=True)

    # -- test controls -------------------------------------------------------

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

    # -- changes and watch faults -------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The store's current resourceVersion (what a list answers now)."""
        return str(self._store.rv)

    def _resources(self, what: str) -> list[_Resource]:
        """The served resources ``what`` names (plural, ``plural.group``, or kind), the
        core group and built-in types first, preferred version first."""
        from gpuctl.apiserver.server import _version_priority

        found = [r for r in self._store.catalog.resources.values()
                 if what in (r.plural, r.qualified, r.kind, r.kind.lower())]
        if not found:
            raise KeyError(f"no served resource is called {what!r}")
        return sorted(found, key=lambda r: (r.group != "", r.crd, r.group, [-p for p in _version_priority(r.version)]))

    def get(self, what: str, namespace: str = "", name: str = "") -> dict | None:
        """A copy of the stored object (``what``: ``pods``, ``Pod``, ``deployments.apps``), or None."""
        with self._lock:
            for res in self._resources(what):
                obj = self._store.get(res, namespace if res.namespaced else "", name)
                if obj is not None:
                    return copy.deepcopy(obj)
        return None

    def put(self, obj: Mapping[str, Any]) -> dict:
        """Create or replace ``obj`` (``apiVersion``, ``kind``, ``metadata.name``; a
        namespaced object without a namespace goes to ``default``), as a write verb
        would: a new resourceVersion, uid and creationTimestamp kept (or made), and
        an ADDED or MODIFIED event for open watches. Returns a copy of what is stored."""
        obj = copy.deepcopy(dict(obj))
        meta = obj.get("metadata")
        if not obj.get("apiVersion") or not obj.get("kind") or not isinstance(meta, dict) or not meta.get("name"):
            raise ValueError("put() needs an object with apiVersion, kind and metadata.name")
        with self._lock:
            try:
                res = self._store.catalog.for_object(obj)
            except KeyError:
                raise ValueError(f"{obj['apiVersion']} {obj['kind']} is not served by this server") from None
            if res.namespaced:
                meta["namespace"] = meta.get("namespace") or "default"
            else:
                meta.pop("namespace", None)
            current = self._store.get(res, meta.get("namespace", ""), meta["name"])
            old_meta = (current or {}).get("metadata", {})
            meta.setdefault("uid", old_meta.get("uid") or str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", old_meta.get("creationTimestamp") or _rfc3339_now())
            meta["resourceVersion"] = str(self._store.next_rv())
            self._store.replace(obj)
            return copy.deepcopy(obj)

    def delete(self, what: str | Mapping[str, Any], namespace: str = "", name: str = "") -> dict | None:
        """Delete an object: ``delete(obj)``, or ``delete("pods", "ml", "p")`` /
        ``delete("nodes", name="n")``. Open watches get DELETED (the last state, with a
        new resourceVersion). Returns the deleted object, or None when there was none."""
        if isinstance(what, Mapping):
            meta = what.get("metadata") or {}
            namespace, name = meta.get("namespace") or "", meta.get("name") or ""
            with self._lock:
                try:
                    resources = [self._store.catalog.for_object(what)]
                except KeyError:
                    raise ValueError(f"{what.get('apiVersion')} {what.get('kind')} is not served") from None
        else:
            resources = self._resources(what)
        with self._lock:
            for res in resources:
                current = self._store.get(res, namespace if res.namespaced else "", name)
                if current is not None:
                    self._store.remove(current)
                    return copy.deepcopy(current)
        return None

    @property
    def open_watches(self) -> int:
        """How many watches are streaming now."""
        with self._watch_lock:
            return len(self._watches)

    def wait_for_watches(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until at least ``count`` watches are streaming; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._store.cond:
            while self.open_watches < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._store.cond.wait(min(left, 0.05))
        return True

    def drop_watches(self, clean: bool = False) -> int:
        """End every open watch now. ``clean=False``: the connection is shut down
        mid-stream, without the last chunk (a client sees the response end
        prematurely: urllib3's ProtocolError); ``clean=True``: the stream ends as at
        its timeout (no bookmark). Returns how many watches were open."""
        with self._watch_lock:
            watches = list(self._watches)
        for w in watches:
            if clean:
                w.end()
            else:
                w.drop()
        return len(watches)

    def expire_watches(self, resource: str | None = None, times: int = 1) -> None:
        """The next ``times`` watches (of ``resource``, a plural such as ``pods`` or
        ``deployments.apps``; ``None``: of any) answer HTTP 200 with one ERROR event, Status 410 Expired
        "too old resource version", whatever resourceVersion they ask for."""
        with self._lock:
            self._expiring.append([resource, times])

    def compact(self) -> None:
        """Compact the event log: every retained event is dropped and the
        resourceVersion moves on, so a watch from any resourceVersion handed out
        so far answers 410 Expired (open watches that are caught up go on)."""
        with self._lock:
            self._store.compact()

    def slow_watches(self, delay: float) -> None:
        """Send each watch event ``delay`` seconds late (``0``: at once again)."""
        self.watch_event_delay = max(0.0, float(delay))

    def _watch(self, res: _Resource, namespace: str, req: _Request) -> _Response:
        with self._lock:
            entry = next((e for e in self._expiring if e[1] > 0 and e[0] in (None, res.plural, res.qualified)), None)
            if entry is not None:
                entry[1] -= 1
        if entry is None:
            return super()._watch(res, namespace, req)
        asked = req.q("resourceVersion") or "0"
        error = status_body(410, f"too old resource version: {asked} ({self._store.rv})", reason="Expired")
        stream = self._watch_stream_class(self, res, namespace, req, [], [], self._store.rv, [], 0.0, False, error)
        return _Response(200, b"", stream=stream)

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
            return _Trickle(200, real.body, real.content_type, headers=dict(fault.headers or {}),
                            interval=max(0.01, fault.interval))
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

    def _refuse_method(self, req: _Request, path: str) -> _Response | None:
        """Writes are emulated here, not refused."""
        return None

    def _authenticate(self, req: _Request, path: str) -> _Response | None:
        if self.token is not None:
            auth = req.header("Authorization")
            public = path in ("/version", "/healthz", "/livez", "/readyz")
            if not (not auth and public) and auth != f"Bearer {self.token}":
                return _status_response(401, "Unauthorized")
        return None

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

    # -- writes ----------------------------------------------------------------------------

    def _write_verb(self, res: _Resource, namespace: str, info: _RequestInfo, req: _Request) -> _Response:
        if info.verb == "patch" and info.name and info.subresource in ("", "status"):
            return self._patch(res, namespace, info.name, req)
        if info.verb == "delete" and info.name and not info.subresource:
            return self._delete(res, namespace, info.name, req)
        if info.verb == "create" and not info.name:
            return self._create(res, namespace, req)
        if info.verb == "update" and info.name and not info.subresource:
            return self._update(res, namespace, info.name, req)
        return self._method_not_allowed(res, info)

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
