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
# A list that never ends (a server that always answers `continue`, or repeats a
# token) must fail, not grow until memory is gone. gpuctl is designed for 5,000 GPU
# nodes and 150,000 pods (Kubernetes' own scalability limits): a list over
# MAX_LIST_ITEMS is not a cluster but a broken or hostile server. `snapshot save`
# streams to disk and allows MAX_STREAMED_ITEMS (events can outnumber pods).
MAX_LIST_ITEMS = 500_000
MAX_STREAMED_ITEMS = 2_000_000
MAX_EMPTY_PAGES = 20          # consecutive pages with no items but a `continue` token


def path_segment(name: str) -> str:
    """One URL path segment: every '/' and '%' escaped, so a name can never reach
    another resource (names are validated first; this is the second wall)."""
    return quote(str(name), safe="")


class ApiFailure(Exception):
    """A request that failed for good: carries what a Gap needs (and, where the
    cause is known, the hint a person needs)."""

    def __init__(self, status: Optional[int], reason: str, message: str, hint: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.reason = reason      # forbidden | not-found | unauthorized | timeout | unreachable | error | gone
        self.message = message
        self.hint = hint
        self.partial = False   # the server answered, but too slowly to finish (not "down")


class _PageGuard:
    """Bounds one paged list: items, consecutive empty pages, repeated tokens, and
    objects seen twice (a consistent list never repeats an object: a server that
    serves page one again, e.g. behind a proxy that drops ``continue``, is caught
    on its second page)."""

    def __init__(self, path: str, max_items: int):
        self.path = path
        self.max_items = max_items
        self.items = 0
        self.pages = 0
        self.empty = 0
        self.tokens: set[str] = set()
        self.keys: set[int] = set()

    def page(self, items: list[Any], token: str, key: Any = None) -> None:
        """Account for one page; raise ApiFailure when the list cannot be a real one."""
        self.pages += 1
        self.items += len(items)
        self.empty = self.empty + 1 if (not items and token) else 0
        problem = None
        if self.items > self.max_items:
            problem = f"more than {self.max_items:,} items"
        elif self.empty > MAX_EMPTY_PAGES:
            problem = f"{self.empty} pages in a row with no items but a continue token"
        elif token and token in self.tokens:
            problem = f"the server repeated a continue token after {self.pages} pages"
        elif key is not None and (token or self.pages > 1):
            before = len(self.keys)
            self.keys.update(key(it) for it in items)
            if len(self.keys) - before < len(items):
                problem = f"page {self.pages} repeats objects of earlier pages"
        if problem:
            raise ApiFailure(200, "error", f"the list {self.path} did not end ({problem}); gave up",
                             "the API server (or a proxy in front of it) is paginating wrongly")
        if token:
            self.tokens.add(token)


def record_key(rec: Any) -> int:
    """Identity of a decoded record within one list."""
    md = rec.metadata
    return hash((md.namespace, md.name))


def dict_key(item: dict[str, Any]) -> int:
    """Identity of a raw object within one list."""
    md = item.get("metadata")
    return hash((md.get("namespace"), md.get("name"))) if isinstance(md, dict) else id(item)


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
        # Once the server has not answered at all (every try timed out, or it cannot
        # be reached), later requests fail at once with the same cause: a hung
        # cluster costs one request's retries, not one per read.
        self.down: Optional[ApiFailure] = None
        # The overall deadline: the seconds all requests together may lose to tries
        # that timed out, could not connect or were cut at the deadline (and the
        # backoff after them) are --request-timeout x (MAX_ATTEMPTS + 1): one
        # request's tries and one more. Past it no try is retried and the server
        # counts as down, so a hung, unreachable or crawling cluster ends the
        # command in about that time, never in one such wait per read (a hung one,
        # that gets no answer at all, is down after its first request's tries).
        self.lost = 0.0
        self.budget = request_timeout * (MAX_ATTEMPTS + 1)
        self.context_name, self.default_namespace, self.api_client = _load_client(kubeconfig, context, as_user, token,
                                                                                  request_timeout)

    # ------------------------------------------------------------ raw requests
    def get_bytes(self, path: str, query: Optional[dict[str, Any]] = None) -> bytes:
        """A GET, retried (bounded) on 429, 5xx, dropped connections and timeouts."""
        params = [(k, v) for k, v in (query or {}).items() if v not in (None, "")]
        return self._request("GET", path, params)

    def patch_merge(self, path: str, body: dict[str, Any], dry_run: bool = False) -> bytes:
        """A JSON merge patch (RFC 7386), the only write gpuctl ever sends, and only
        for `label-nodes --apply` / `--dry-run=server`. Retried on 429/503 (the
        server did not act on it). A timeout or a dropped connection is not
        retried: the server may have applied the patch, and the caller must say so."""
        query = [("dryRun", "All")] if dry_run else []
        return self._request("PATCH", path, query, body)

    def _request(self, method: str, path: str, params: list[tuple[str, Any]],
                 body: Optional[dict[str, Any]] = None) -> bytes:
        _refuse_unsafe_path(path)
        if self.down is not None:
            raise ApiFailure(None, self.down.reason, f"not tried: an earlier request got {self.down.message}",
                             self.down.hint)
        started, sent = time.monotonic(), self.log.count
        try:
            return self._attempts(method, path, params, body)
        except ApiFailure as e:
            spent = self.lost >= self.budget
            if e.reason in ("timeout", "unreachable") and (not e.partial or spent):
                tries, waited = self.log.count - sent, time.monotonic() - started
                e.message += f" after {tries} {'try' if tries == 1 else 'tries'}, {waited:.1f}s waited"
                if spent and self.lost > waited + 0.05:
                    e.message += f" ({self.lost:.1f}s lost to timeouts in all)"
                self.down = e
            raise

    def _lose(self, since: float) -> bool:
        """Count the time since ``since`` as lost; True when the overall deadline is spent."""
        self.lost += time.monotonic() - since
        return self.lost >= self.budget

    def _attempts(self, method: str, path: str, params: list[tuple[str, Any]],
                  body: Optional[dict[str, Any]] = None) -> bytes:
        from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError, ProtocolError, ReadTimeoutError

        write = method != "GET"
        retry_statuses = (429, 503) if write else (429, 500, 502, 503, 504)
        timeout = (min(5.0, self.timeout), self.timeout)
        delay = BACKOFF_BASE
        for attempt in range(1, MAX_ATTEMPTS + 1):
            last = attempt >= MAX_ATTEMPTS or self.lost >= self.budget
            self.log.count += 1
            tried = time.monotonic()
            self.log.paths.append(path)
            try:
                if write:
                    return _transport_patch(self.api_client, path, params, body or {}, timeout)
                return _transport_get(self.api_client, path, params, timeout)
            except _HTTPStatus as e:
                if e.status in retry_statuses and not last and not _backend_unreachable(e.status, e):
                    retry_after = _retry_after(e)
                    self._sleep(retry_after if retry_after is not None else delay)
                    delay *= 2
                    continue
                raise _failure(e.status, e, path) from None
            except (ReadTimeoutError, _BodyDeadline) as e:
                last = self._lose(tried) or last
                if not last and not write:
                    continue
                failure = _timeout(self.timeout, whole=isinstance(e, _BodyDeadline), write=write, tries=attempt)
                failure.partial = isinstance(e, _BodyDeadline)   # answered, too slowly: not "down"
                raise failure from None
            except MaxRetryError as e:
                inner = e.reason
                tls = _tls_failure(inner)
                if tls is not None:
                    raise tls from None
                last = self._lose(tried) or last
                if isinstance(inner, ReadTimeoutError):
                    if not last and not write:
                        continue
                    raise _timeout(self.timeout, write=write, tries=attempt) from None
                if isinstance(inner, NewConnectionError) or last or write:
                    raise ApiFailure(None, "unreachable", _short(inner)) from None
                paused = time.monotonic()
                self._sleep(delay)
                self._lose(paused)
                delay *= 2
            except (ProtocolError, HTTPError, OSError) as e:
                tls = _tls_failure(e)
                if tls is not None:
                    raise tls from None
                last = self._lose(tried) or last
                if not last and not write:
                    paused = time.monotonic()
                    self._sleep(delay)
                    self._lose(paused)
                    delay *= 2
                    continue
                raise ApiFailure(None, "unreachable", _short(e)) from None
        raise ApiFailure(None, "error", "retries exhausted")

    def _sleep(self, seconds: float) -> None:
        self.log.retries += 1
        time.sleep(_clamp_wait(seconds) * (0.8 + 0.4 * random.random()))

    # ------------------------------------------------------------ decoded
    def get(self, path: str, kind: str, malformed: Optional[list[Any]] = None) -> Any:
        """One object, decoded; a field of the wrong type is salvaged (emptied, and
        named in ``malformed`` when given), an object that cannot be read at all fails."""
        data = self.get_bytes(path)
        try:
            return O.decode_lenient(O.decoder_for(kind), data)
        except msgspec.ValidationError:
            rec, problems = O.decode_salvaging(kind, data, source=path)
            if malformed is not None:
                malformed.extend(problems)
            if rec is not None:
                return rec
            detail = "; ".join(str(p) for p in problems[:2]) or "unreadable"
            raise ApiFailure(200, "error", f"invalid {kind} from {path}: {detail}") from None
        except msgspec.DecodeError as e:
            raise ApiFailure(200, "error", f"invalid {kind} JSON from {path}: {e}") from None

    def list(self, path: str, kind: str, query: Optional[dict[str, Any]] = None,
             malformed: Optional[list[str]] = None) -> list[Any]:
        """Every item of a (paged) list; a 410 Gone restarts the list cleanly."""
        return self.list_versioned(path, kind, query, malformed)[0]

    def list_versioned(self, path: str, kind: str, query: Optional[dict[str, Any]] = None,
                       malformed: Optional[list[str]] = None) -> tuple[list[Any], str]:
        """``list``, with the list's resourceVersion (where a watch starts).

        The garbage collector is paused while the records are built (it would
        rescan millions of young objects over and over: 4x the decode time), and
        what was built is then frozen out of later collections."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            for restart in range(MAX_LIST_RESTARTS + 1):
                version: list[str] = [""]
                try:
                    return list(self._pages(path, kind, query or {}, malformed, version)), version[0]
                except ApiFailure as e:
                    if e.reason == "gone" and restart < MAX_LIST_RESTARTS:
                        continue
                    raise
            raise ApiFailure(410, "gone", "list kept expiring")
        finally:
            if enabled:
                gc.freeze()
                gc.enable()

    def watch(self, path: str, query: dict[str, Any], resource_version: str, timeout_seconds: int) -> Iterator[bytes]:
        """The events of one watch (``watch=true`` from ``resource_version``, with
        bookmarks), one JSON line each, until the server ends it after
        ``timeout_seconds``. Not retried: the caller (a watch cache) re-opens or
        re-lists. A silent connection ends after ``timeout_seconds`` plus the
        request timeout."""
        from urllib3.exceptions import HTTPError

        _refuse_unsafe_path(path)
        params = [(k, v) for k, v in query.items() if v not in (None, "")] + [
            ("watch", "true"), ("allowWatchBookmarks", "true"), ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds))]
        self.log.count += 1
        try:
            resp = _transport_open(self.api_client, path, params, (min(5.0, self.timeout), timeout_seconds + self.timeout))
            buf = b""
            for chunk in resp.stream(64 * 1024, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield line
            if buf.strip():
                yield buf
        except _HTTPStatus as e:
            raise _failure(e.status, e, path) from None
        except (HTTPError, OSError) as e:
            tls = _tls_failure(e)
            raise (tls or ApiFailure(None, "unreachable", _short(e))) from None

    def fork(self) -> "KubeAPI":
        """A client sharing this one's connection pool and credentials, with its own
        request log and deadline budget (a long-running watch cache gives each
        informer one, so one resource's outage does not mark the server down for all)."""
        other = object.__new__(KubeAPI)
        other.__dict__.update(self.__dict__)
        other.log, other.down, other.lost = RequestLog(), None, 0.0
        return other

    def pages(self, path: str, query: Optional[dict[str, Any]], decode: Any,
              max_items: Optional[int] = None, key: Any = record_key) -> Iterator[list[Any]]:
        """The items of each page of a paged list (``limit`` + ``continue``), as
        ``decode(bytes) -> (items, continue_token)`` returns them. Bounded: a list
        that never ends fails with a clear message (see ``_PageGuard``)."""
        guard = _PageGuard(path, MAX_LIST_ITEMS if max_items is None else max_items)
        token = ""
        while True:
            q = dict(query or {}, limit=PAGE_SIZE)
            if token:
                q["continue"] = token
            items, token = decode(self.get_bytes(path, q))
            guard.page(items, token, key)
            yield items
            if not token:
                return

    def _pages(self, path: str, kind: str, query: dict[str, Any], malformed: Optional[list[str]],
               version: Optional[list[str]] = None) -> Iterator[Any]:
        typed = _typed_page_decoder(kind)

        def decode(data: bytes) -> tuple[list[Any], str]:
            try:
                page = O.decode_lenient(typed, data)
                if version is not None:
                    version[:] = [page.metadata.resourceVersion]
                return page.items, page.metadata.continue_
            except msgspec.ValidationError:
                pass
            except msgspec.DecodeError as e:
                raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
            # One odd object must not sink the page: decode item by item.
            try:
                raw = O.decode_lenient(_page_dec, data)
            except (msgspec.DecodeError, msgspec.ValidationError) as e:
                raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
            if version is not None:
                version[:] = [raw.metadata.resourceVersion]
            items = []
            for r in raw.items or []:
                rec, problems = O.decode_salvaging(kind, r, source=path)
                if malformed is not None:
                    malformed.extend(problems)
                if rec is not None:
                    items.append(rec)
            return items, raw.metadata.continue_

        for items in self.pages(path, query, decode):
            if isinstance(items[0] if items else None, O.GenericObject):
                for it in items:
                    it.kind = it.kind or kind
            yield from items

    def log_text(self, ns: str, pod: str, container: str, previous: bool, tail_lines: int = 400,
                 limit_bytes: int = 256 * 1024) -> str:
        q = {"container": container, "tailLines": tail_lines, "limitBytes": limit_bytes}
        if previous:
            q["previous"] = "true"
        data = self.get_bytes(f"/api/v1/namespaces/{path_segment(ns)}/pods/{path_segment(pod)}/log", q)
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


def _transport_open(api_client: Any, path: str, params: list[tuple[str, Any]], timeout: tuple[float, float]) -> Any:
    """A GET whose body is left unread (a watch stream): the urllib3 response, after
    the status check, through the official client's transport (both generations)."""
    from kubernetes.client.exceptions import ApiException

    if hasattr(api_client, "param_serialize"):
        method, url, headers, _body, _post = api_client.param_serialize(
            "GET", path, query_params=params, header_params=dict(_HEADERS), auth_settings=["BearerToken"])
        resp = api_client.call_api(method, url, header_params=headers, _request_timeout=timeout)
        raw = getattr(resp, "response", resp)
        if not 200 <= resp.status <= 299:
            raise _HTTPStatus(resp.status, raw.read(), resp.headers)
        return raw
    try:
        return api_client.call_api(path, "GET", query_params=params, header_params=dict(_HEADERS),
                                   auth_settings=["BearerToken"], _preload_content=False,
                                   _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as e:
        raise _HTTPStatus(e.status or 0, e.body, e.headers) from None


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
    deadline = time.monotonic() + timeout[1]
    if hasattr(api_client, "param_serialize"):
        method, url, hdrs, ser_body, post = api_client.param_serialize(
            "PATCH", path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"])
        resp = api_client.call_api(method, url, header_params=hdrs, body=ser_body, post_params=post, _request_timeout=timeout)
        data = _read_body(getattr(resp, "response", resp), deadline)
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
    """Seconds from a Retry-After header (delay-seconds or an HTTP-date, RFC 9110
    10.2.3), or None when absent or unreadable: then gpuctl's own backoff applies.
    Negative, infinite, NaN or absurd values are clamped by ``_clamp_wait``."""
    headers = getattr(e, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    if value is None:
        return None
    text = str(value).strip()
    try:
        return _clamp_wait(float(text))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(text)
        return _clamp_wait(when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _clamp_wait(seconds: float) -> float:
    """A wait in [0, MAX_RETRY_AFTER]; NaN counts as 0."""
    if seconds != seconds or seconds <= 0:       # NaN, negative, zero
        return 0.0
    return min(MAX_RETRY_AFTER, seconds)


def _timeout(seconds: float, whole: bool = False, write: bool = False, tries: int = 1) -> ApiFailure:
    what = "the answer did not complete" if whole else "no answer"
    per = f"within {seconds:g}s"
    if write:
        return ApiFailure(None, "timeout", f"{what} {per}: the server may or may not have applied "
                                           f"the change")
    failure = ApiFailure(None, "timeout", f"{what} {per}")
    failure.tries = tries
    return failure


def _tls_failure(e: Any) -> Optional[ApiFailure]:
    """An ApiFailure for a TLS handshake/verification failure (never retried: it
    will fail the same way), keeping the whole reason OpenSSL gave."""
    import ssl

    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        tls_error = isinstance(e, ssl.SSLError) or type(e).__name__ == "SSLError"
        if isinstance(e, ssl.SSLCertVerificationError) or (tls_error and "CERTIFICATE_VERIFY_FAILED" in str(e)):
            return ApiFailure(None, "unreachable", f"TLS verification of the API server failed: {_ssl_reason(e)}",
                              "the server's certificate does not match the kubeconfig's certificate-authority "
                              "(or server name) for this context: check certificate-authority(-data) and "
                              "--context (insecure-skip-tls-verify in the kubeconfig turns the check off)")
        if tls_error:
            return ApiFailure(None, "unreachable", f"TLS handshake with the API server failed: {_ssl_reason(e)}",
                              "check the server URL's scheme (https) and port, and the kubeconfig's TLS settings "
                              "(certificate-authority, insecure-skip-tls-verify)")
        if "CertificateError" in type(e).__name__ or "hostname" in str(e).lower() and "match" in str(e).lower():
            return ApiFailure(None, "unreachable", f"TLS verification of the API server failed: {e}",
                              "the certificate is not valid for the server name in the kubeconfig: check "
                              "server / tls-server-name for this context")
        e = getattr(e, "reason", None) or e.__cause__ or e.__context__
    return None


def _ssl_reason(e: Any) -> str:
    verify = getattr(e, "verify_message", None)
    reason = getattr(e, "reason", None)
    if verify:
        return f"{reason or 'certificate verify failed'}: {verify}"
    return str(e)[:500]


def _refuse_unsafe_path(path: str) -> None:
    """A path with a '.' or '..' segment would be cleaned by the server into
    another resource: never sent (names are validated first; this is the second wall)."""
    if any(seg in (".", "..") for seg in path.split("?", 1)[0].split("/")):
        raise ApiFailure(None, "error", f"refusing to request {path[:200]!r}: it has a '.' or '..' segment")


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


def _load_client(kubeconfig: Optional[str], context: Optional[str], as_user: Optional[str], token: Optional[str],
                 timeout: float = 15.0):
    """(context name, its namespace, ApiClient) as kubectl would choose them: the
    files of ``--kubeconfig`` (a path list is merged, never ignored), else
    ``KUBECONFIG``, else ``~/.kube/config``, else the in-cluster service account
    (see collect/kubeconfig.py for the merge rules and exec plugins)."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    from . import kubeconfig as K

    cfg = client.Configuration()
    files, explicit = K.candidate_files(kubeconfig)
    namespace = None
    if files:
        kc = K.load(files)
        context_name, ctx = K.choose_context(kc, context)
        namespace = ctx.get("namespace") or None
        K.resolve_exec(kc, ctx, timeout)
        try:
            config.load_kube_config_from_dict(kc.config, context=context_name, client_configuration=cfg,
                                              persist_config=False)
        except ConfigException as e:
            raise SourceError(f"kubeconfig {kc.where}: context {context_name!r} could not be used: {e}",
                              "check --kubeconfig/--context") from None
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise SourceError(f"kubeconfig {kc.where}: context {context_name!r} has a malformed field "
                              f"({type(e).__name__}: {e})") from None
        except OSError as e:
            raise SourceError(f"kubeconfig {kc.where}: a file it names could not be read: {e}") from None
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=cfg)
        except ConfigException as e:
            raise SourceError(f"in-cluster configuration could not be loaded: {e}") from None
        context_name = "in-cluster"
        try:
            with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
                namespace = f.read().strip() or None
        except OSError:
            namespace = None
    else:
        raise SourceError("no kubeconfig found (KUBECONFIG, ~/.kube/config) and not running in a cluster",
                          "pass --kubeconfig or --snapshot")
    if token:
        # --token wins over the kubeconfig's user, as kubectl's does: the key under
        # both names the client generations read ("authorization" before v33,
        # "BearerToken" since), and no refresh hook that would put the kubeconfig's
        # token back before each request.
        cfg.api_key = {"authorization": token, "BearerToken": token}
        cfg.api_key_prefix = {"authorization": "Bearer", "BearerToken": "Bearer"}
        cfg.refresh_api_key_hook = None
    cfg.retries = 0  # gpuctl retries itself, bounded, with backoff
    if not cfg.verify_ssl:
        _warn_insecure(context_name)
    try:
        import warnings

        with warnings.catch_warnings():       # urllib3 warns, then raises ImportError: one line is enough
            warnings.simplefilter("ignore")
            api_client = client.ApiClient(cfg)
    except ImportError as e:
        if "socks" in str(e).lower() or "SOCKS" in str(getattr(cfg, "proxy", "") or ""):
            raise SourceError(f"the kubeconfig's proxy-url {cfg.proxy} is a SOCKS proxy, which needs the PySocks package",
                              "pip install 'gpuctl[socks]' (or: pip install PySocks)") from None
        raise
    if as_user:
        api_client.set_default_header("Impersonate-User", as_user)
    return context_name, namespace, api_client


def _warn_insecure(context_name: Optional[str]) -> None:
    """One warning for the whole command instead of urllib3's one per request."""
    import sys
    import warnings

    from urllib3.exceptions import InsecureRequestWarning

    warnings.filterwarnings("ignore", category=InsecureRequestWarning)
    sys.stderr.write(f"gpuctl: warning: TLS verification is off for context {context_name} "
                     f"(insecure-skip-tls-verify): the API server's identity is not checked\n")


def gap_from(failure: ApiFailure, what: str, verb: str, resource: str, namespace: Optional[str] = None,
             group: str = "") -> Gap:
    return Gap(what, failure.reason, failure.message, verb=verb if failure.reason == "forbidden" else None,
               resource=resource, namespace=namespace, group=group)
