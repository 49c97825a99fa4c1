"""Talking to the API server: the only module that imports ``kubernetes``.

* Configuration as kubectl does it: ``--kubeconfig``/``KUBECONFIG``/``~/.kube/config``
  with ``--context`` (exec credential plugins included), else the in-cluster
  service account; ``--token`` and ``--as`` on top.
* Raw JSON (``_preload_content=False``) with ``Accept-Encoding: gzip``, decoded by
  msgspec straight into the slim records: the client's model deserialisation is
  ~100x slower and would need 17 GB for 150,000 pods.
* Long lists paged (``limit`` + ``continue``); a 410 Gone mid-list restarts the list
  from the start, at most twice.
* Each request has a timeout; 429 (honouring Retry-After, capped), 5xx and dropped
  connections are retried with backoff, at most ``MAX_ATTEMPTS`` times in all.
* Read commands only ever send GET; the one write is `patch_merge`, used by
  `label-nodes --apply` (and `--dry-run=server`) alone.
"""

from __future__ import annotations

import gc
import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional
from urllib.parse import quote

import msgspec

from ..errors import SourceError
from ..model import objects as O
from ..model.snapshot import Gap

PAGE_SIZE = 500
MAX_ATTEMPTS = 3
MAX_LIST_RESTARTS = 2
MAX_RETRY_AFTER = 5.0
BACKOFF_BASE = 0.4


class ApiFailure(Exception):
    """A request that failed for good: carries what a Gap needs."""

    def __init__(self, status: Optional[int], reason: str, message: str):
        super().__init__(message)
        self.status = status
        self.reason = reason      # forbidden | not-found | unauthorized | timeout | unreachable | error | gone
        self.message = message


class _ListMeta(msgspec.Struct):
    continue_: str = msgspec.field(name="continue", default="")
    resourceVersion: str = ""


class _RawPage(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: Optional[list[msgspec.Raw]] = None


class _Status(msgspec.Struct):
    message: str = ""
    reason: str = ""


_page_dec = msgspec.json.Decoder(_RawPage)
_status_dec = msgspec.json.Decoder(_Status)
_typed_pages: dict[type, msgspec.json.Decoder] = {}


def _typed_page_decoder(kind: str) -> msgspec.json.Decoder:
    t = O.TYPED_KINDS.get(kind, O.GenericObject)
    dec = _typed_pages.get(t)
    if dec is None:
        page = msgspec.defstruct(f"{t.__name__}Page", [("metadata", _ListMeta, msgspec.field(default_factory=_ListMeta)),
                                                        ("items", list[t], msgspec.field(default_factory=list))])
        dec = _typed_pages[t] = msgspec.json.Decoder(page)
    return dec


@dataclass
class RequestLog:
    count: int = 0
    retries: int = 0
    paths: list[str] = field(default_factory=list)


class KubeAPI:
    """A thin, read-only, retrying GET client over the official client's transport."""

    def __init__(self, kubeconfig: Optional[str] = None, context: Optional[str] = None,
                 request_timeout: float = 15.0, as_user: Optional[str] = None, token: Optional[str] = None):
        self.timeout = request_timeout
        self.log = RequestLog()
        self.context_name, self.default_namespace, self.api_client = _load_client(kubeconfig, context, as_user, token)

    # ------------------------------------------------------------ raw GET
    def get_bytes(self, path: str, query: Optional[dict[str, Any]] = None) -> bytes:
        from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError, ProtocolError, ReadTimeoutError

        params = [(k, v) for k, v in (query or {}).items() if v not in (None, "")]
        delay = BACKOFF_BASE
        for attempt in range(1, MAX_ATTEMPTS + 1):
            self.log.count += 1
            self.log.paths.append(path)
            try:
                return _transport_get(self.api_client, path, params, (min(5.0, self.timeout), self.timeout))
            except _HTTPStatus as e:
                status = e.status
                retry_after = _retry_after(e)
                if status in (429, 500, 502, 503, 504) and attempt < MAX_ATTEMPTS \
                        and not _backend_unreachable(status, e):
                    self._sleep(retry_after if retry_after is not None else delay)
                    delay *= 2
                    continue
                raise _failure(status, e, path) from None
            except ReadTimeoutError:
                if attempt < MAX_ATTEMPTS:
                    continue
                raise ApiFailure(None, "timeout", f"no answer within {self.timeout:g}s") from None
            except _BodyDeadline:
                if attempt < MAX_ATTEMPTS:
                    continue
                raise ApiFailure(None, "timeout", f"the answer did not complete within {self.timeout:g}s") from None
            except MaxRetryError as e:
                inner = e.reason
                if isinstance(inner, ReadTimeoutError):
                    if attempt < MAX_ATTEMPTS:
                        continue
                    raise ApiFailure(None, "timeout", f"no answer within {self.timeout:g}s") from None
                if isinstance(inner, NewConnectionError) or attempt >= MAX_ATTEMPTS:
                    raise ApiFailure(None, "unreachable", _short(inner)) from None
                self._sleep(delay)
                delay *= 2
            except (ProtocolError, HTTPError, OSError) as e:
                if attempt < MAX_ATTEMPTS:
                    self._sleep(delay)
                    delay *= 2
                    continue
                raise ApiFailure(None, "unreachable", _short(e)) from None
        raise ApiFailure(None, "error", "retries exhausted")

    def patch_merge(self, path: str, body: dict[str, Any], dry_run: bool = False) -> bytes:
        """A JSON merge patch (RFC 7386), the only write gpuctl ever sends, and only
        for `label-nodes --apply` / `--dry-run=server`. Retried on 429/503 like reads:
        the patch carries the object's resourceVersion, so a retry cannot clobber."""
        query = {"dryRun": "All"} if dry_run else {}
        delay = BACKOFF_BASE
        for attempt in range(1, MAX_ATTEMPTS + 1):
            self.log.count += 1
            self.log.paths.append(path)
            try:
                return _transport_patch(self.api_client, path, list(query.items()), body,
                                        (min(5.0, self.timeout), self.timeout))
            except _HTTPStatus as e:
                if e.status in (429, 503) and attempt < MAX_ATTEMPTS:
                    retry_after = _retry_after(e)
                    self._sleep(retry_after if retry_after is not None else delay)
                    delay *= 2
                    continue
                raise _failure(e.status, e, path) from None
        raise ApiFailure(None, "error", "retries exhausted")

    def _sleep(self, seconds: float) -> None:
        self.log.retries += 1
        time.sleep(min(MAX_RETRY_AFTER, seconds) * (0.8 + 0.4 * random.random()))

    # ------------------------------------------------------------ decoded
    def get(self, path: str, kind: str) -> Any:
        data = self.get_bytes(path)
        try:
            return O.decode_lenient(O.decoder_for(kind), data)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            raise ApiFailure(200, "error", f"invalid {kind} JSON from {path}: {e}") from None

    def list(self, path: str, kind: str, query: Optional[dict[str, Any]] = None,
             malformed: Optional[list[str]] = None) -> list[Any]:
        """Every item of a (paged) list; a 410 Gone restarts the list cleanly.

        The garbage collector is paused while the records are built (it would
        rescan millions of young objects over and over: 4x the decode time), and
        what was built is then frozen out of later collections."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            for restart in range(MAX_LIST_RESTARTS + 1):
                try:
                    return list(self._pages(path, kind, query or {}, malformed))
                except ApiFailure as e:
                    if e.reason == "gone" and restart < MAX_LIST_RESTARTS:
                        continue
                    raise
            raise ApiFailure(410, "gone", "list kept expiring")
        finally:
            if enabled:
                gc.freeze()
                gc.enable()

    def _pages(self, path: str, kind: str, query: dict[str, Any], malformed: Optional[list[str]]) -> Iterator[Any]:
        token = ""
        typed = _typed_page_decoder(kind)
        item_dec = O.decoder_for(kind)
        while True:
            q = dict(query, limit=PAGE_SIZE)
            if token:
                q["continue"] = token
            data = self.get_bytes(path, q)
            try:
                page = O.decode_lenient(typed, data)
                items = page.items
                token = page.metadata.continue_
            except msgspec.ValidationError:
                # One odd object must not sink the page: decode item by item.
                try:
                    raw = O.decode_lenient(_page_dec, data)
                except (msgspec.DecodeError, msgspec.ValidationError) as e:
                    raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
                items = []
                for r in raw.items or []:
                    try:
                        items.append(O.decode_lenient(item_dec, r))
                    except (msgspec.DecodeError, msgspec.ValidationError) as e:
                        if malformed is not None:
                            malformed.append(f"{kind} from {path}: {e}")
                token = raw.metadata.continue_
            except msgspec.DecodeError as e:
                raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
            if isinstance(items[0] if items else None, O.GenericObject):
                for it in items:
                    it.kind = it.kind or kind
            yield from items
            if not token:
                return

    def log_text(self, ns: str, pod: str, container: str, previous: bool, tail_lines: int = 400,
                 limit_bytes: int = 256 * 1024) -> str:
        q = {"container": container, "tailLines": tail_lines, "limitBytes": limit_bytes}
        if previous:
            q["previous"] = "true"
        data = self.get_bytes(f"/api/v1/namespaces/{quote(ns)}/pods/{quote(pod)}/log", q)
        return data.decode("utf-8", errors="replace")


_HEADERS = {"Accept": "application/json", "Accept-Encoding": "gzip"}


def _transport_get(api_client: Any, path: str, params: list[tuple[str, Any]], timeout: tuple[float, float]) -> bytes:
    """One raw GET through the official client's transport and auth (token refresh
    of exec plugins included), for both generations of the generated client:
    kubernetes >= 33 (``param_serialize`` + ``call_api(method, url, …)``, which
    returns an unread response and leaves status checks to the caller) and older
    releases (``call_api(path, method, …, _preload_content=False)``, which raises)."""
    from kubernetes.client.exceptions import ApiException

    def status_error(status: int, body: Any, headers: Any) -> "_HTTPStatus":
        return _HTTPStatus(status, body if isinstance(body, (bytes, str)) else b"", headers or {})

    deadline = time.monotonic() + timeout[1]
    if hasattr(api_client, "param_serialize"):
        method, url, headers, _body, _post = api_client.param_serialize(
            "GET", path, query_params=params, header_params=dict(_HEADERS), auth_settings=["BearerToken"])
        resp = api_client.call_api(method, url, header_params=headers, _request_timeout=timeout)
        data = _read_body(getattr(resp, "response", resp), deadline)
        if not 200 <= resp.status <= 299:
            raise status_error(resp.status, data, resp.headers)
        return data
    try:
        resp = api_client.call_api(path, "GET", query_params=params, header_params=dict(_HEADERS),
                                   auth_settings=["BearerToken"], _preload_content=False,
                                   _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as e:
        raise status_error(e.status or 0, e.body, e.headers) from None
    return _read_body(resp, deadline)


class _BodyDeadline(Exception):
    """The whole answer did not arrive within the request timeout."""


def _read_body(resp: Any, deadline: float) -> bytes:
    """The body of an unread urllib3 response, within ``deadline`` (monotonic).

    urllib3's read timeout bounds each socket read, not the response: a body that
    keeps coming a byte at a time would never time out. Like kubectl's
    --request-timeout (client-go's http.Client.Timeout), the timeout here covers the
    whole request, so a watchdog shuts the response down at the deadline with
    ``HTTPResponse.shutdown()`` (urllib3 >= 2.3, which interrupts a blocked read)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        resp.shutdown()
        raise _BodyDeadline()
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        resp.shutdown()

    timer = threading.Timer(remaining, stop)
    timer.daemon = True
    timer.start()
    try:
        data = resp.read()
    except Exception:
        if fired.is_set():
            raise _BodyDeadline() from None
        raise
    finally:
        timer.cancel()
    if fired.is_set():
        raise _BodyDeadline()
    return data


def _transport_patch(api_client: Any, path: str, params: list[tuple[str, Any]], body: dict[str, Any],
                     timeout: tuple[float, float]) -> bytes:
    """One merge PATCH through the official client's transport and auth (both client generations)."""
    from kubernetes.client.exceptions import ApiException

    headers = {"Accept": "application/json", "Content-Type": "application/merge-patch+json"}
    if hasattr(api_client, "param_serialize"):
        method, url, hdrs, ser_body, post = api_client.param_serialize(
            "PATCH", path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"])
        resp = api_client.call_api(method, url, header_params=hdrs, body=ser_body, post_params=post, _request_timeout=timeout)
        data = resp.read()
        if not 200 <= resp.status <= 299:
            raise _HTTPStatus(resp.status, data, resp.headers)
        return data
    try:
        resp = api_client.call_api(path, "PATCH", query_params=params, header_params=headers, body=body,
                                   auth_settings=["BearerToken"], _preload_content=False,
                                   _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as e:
        raise _HTTPStatus(e.status or 0, e.body or b"", e.headers or {}) from None
    return resp.data


class _HTTPStatus(Exception):
    """A non-2xx answer: status, body and headers, whatever the client generation."""

    def __init__(self, status: int, body: Any, headers: Any):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


def _short(e: Any) -> str:
    text = str(e)
    if "Connection refused" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text or "Temporary failure in name resolution" in text:
        return "host name does not resolve"
    return text.split(": ", 1)[-1][:200]


def _retry_after(e: Any) -> Optional[float]:
    headers = getattr(e, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# k8s.io/apimachinery pkg/util/proxy/transport.go (RoundTrip): when the API server's
# proxy cannot dial the pod or service it answers
# NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)).
# The API server itself is fine and the backend's port did not answer: retrying only
# adds backoff (and, for a dial timeout, whole timeouts) to the diagnosis.
_PROXY_DIAL_FAILURE = "error trying to reach service"


def _backend_unreachable(status: int, e: Any) -> bool:
    """A 503 the API server's proxy sent for a backend it could not reach."""
    return status == 503 and _status_message(e).startswith(_PROXY_DIAL_FAILURE)


def _status_message(e: Any) -> str:
    """The ``message`` of the Status body of a non-2xx answer ("" if it has none)."""
    try:
        return _status_dec.decode(e.body or b"{}").message or ""
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError):
        return ""


def _failure(status: int, e: Any, path: str) -> ApiFailure:
    message = _status_message(e)
    reason = {401: "unauthorized", 403: "forbidden", 404: "not-found", 410: "gone"}.get(status, "error")
    return ApiFailure(status, reason, message or f"HTTP {status}")


# ------------------------------------------------------------------ configuration


def _load_client(kubeconfig: Optional[str], context: Optional[str], as_user: Optional[str], token: Optional[str]):
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    paths = [p for p in path.split(os.pathsep) if p]
    context_name = context
    namespace = None
    try:
        if any(os.path.exists(p) for p in paths):
            contexts, active = config.list_kube_config_contexts(config_file=paths[0] if len(paths) == 1 else None) \
                if len(paths) == 1 else (None, None)
            if context and contexts is not None and context not in {c["name"] for c in contexts}:
                names = ", ".join(sorted(c["name"] for c in contexts))
                raise SourceError(f"context {context!r} not found in kubeconfig {paths[0]}", f"available contexts: {names}")
            config.load_kube_config(config_file=paths[0] if len(paths) == 1 else None, context=context,
                                    client_configuration=cfg, persist_config=False)
            chosen = next((c for c in contexts or [] if c["name"] == context), None) if context else active
            if chosen:
                context_name = chosen.get("name")
                namespace = (chosen.get("context") or {}).get("namespace")
        elif kubeconfig:
            raise SourceError(f"kubeconfig {kubeconfig}: no such file")
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)
            context_name = "in-cluster"
            try:
                with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
                    namespace = f.read().strip() or None
            except OSError:
                namespace = None
        else:
            raise SourceError("no kubeconfig found (KUBECONFIG, ~/.kube/config) and not running in a cluster",
                              "pass --kubeconfig or --snapshot")
    except ConfigException as e:
        raise SourceError(f"kubeconfig could not be loaded: {e}", "check --kubeconfig/--context") from None
    except (OSError, ValueError) as e:
        raise SourceError(f"kubeconfig could not be read: {e}") from None
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    cfg.retries = 0  # gpuctl retries itself, bounded, with backoff
    api_client = client.ApiClient(cfg)
    if as_user:
        api_client.set_default_header("Impersonate-User", as_user)
    return context_name, namespace, api_client


def gap_from(failure: ApiFailure, what: str, verb: str, resource: str, namespace: Optional[str] = None,
             group: str = "") -> Gap:
    return Gap(what, failure.reason, failure.message, verb=verb if failure.reason == "forbidden" else None,
               resource=resource, namespace=namespace, group=group)
