"""Fetching DCGM exporter metrics: the only module that imports ``httpx``.

Three sources, each returning Prometheus exposition text for
:func:`gpuctl.model.gpu_metrics.parse_dcgm`:

* :func:`dcgm_via_proxy` - the exporter pod on the node, through the API server's
  pod proxy (``GET /api/v1/namespaces/{ns}/pods/{name}:{port}/proxy/metrics``,
  RBAC verb ``get`` on ``pods/proxy``), over :meth:`KubeAPI.get_bytes`, so the
  kubeconfig's own credentials, TLS settings and retries are used. Failures are
  :class:`~gpuctl.collect.kube.ApiFailure` (a 403 says which RBAC rule is missing).
* :func:`dcgm_direct` - an exporter URL reachable from here (``--dcgm-url``).
* :func:`prometheus_query` - a Prometheus server's ``/api/v1/query`` for the DCGM
  health series of one node, rendered back to exposition lines.

The two direct HTTP paths never raise anything but :class:`MetricsUnavailable`:
every request has a timeout and an overall deadline, at most one retry (only
for a refused or dropped connection), and a cap on the bytes read.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any, Iterable, Optional
from urllib.parse import quote, urlsplit, urlunsplit

import msgspec

from ..model.gpu_metrics import DCGM_HEALTH_METRICS, MetricsError, parse_dcgm
from .kube import ApiFailure, KubeAPI

__all__ = ["MAX_METRICS_BYTES", "MetricsUnavailable", "dcgm_direct", "dcgm_via_proxy", "prometheus_query",
           "prometheus_promql"]

MAX_METRICS_BYTES = 32 * 2**20
DEFAULT_PORT = 9400
_RETRY_PAUSE = 0.2
_USER_AGENT = "gpuctl"


class MetricsUnavailable(Exception):
    """Metrics could not be read. ``reason``: timeout | unreachable | http-status |
    garbage | too-large | not-found (Prometheus has no series for the node) | error."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# ------------------------------------------------------------------ pod proxy


def dcgm_via_proxy(api: KubeAPI, node: str, exporter_pods: Iterable[Any], port: int = DEFAULT_PORT,
                   timeout: Optional[float] = None) -> str:
    """Metrics of the DCGM exporter pod on ``node`` through the API server's pod proxy.

    ``exporter_pods``: pod records (``metadata.namespace/name``, ``spec.nodeName``);
    those on other nodes are ignored, running ones are tried first. Raises
    :class:`ApiFailure`: ``not-found`` when no exporter pod runs on the node,
    ``forbidden`` without ``get`` on ``pods/proxy``, the API server's 503 when the
    exporter does not answer, ``error`` for an answer that is not DCGM metrics.
    """
    candidates = [p for p in exporter_pods if _attr(p, "spec", "nodeName") == node]
    candidates.sort(key=lambda p: _attr(p, "status", "phase") != "Running")
    if not candidates:
        raise ApiFailure(None, "not-found", f"no DCGM exporter pod runs on node {node}")
    client = api
    if timeout is not None and timeout != api.timeout:
        client = copy.copy(api)  # same connection pool and request log, its own timeout
        client.timeout = timeout
    last: Optional[ApiFailure] = None
    for pod in candidates:
        ns = _attr(pod, "metadata", "namespace") or "default"
        name = _attr(pod, "metadata", "name") or ""
        path = f"/api/v1/namespaces/{quote(ns, safe='')}/pods/{quote(name, safe='')}:{int(port)}/proxy/metrics"
        try:
            data = client.get_bytes(path)
        except ApiFailure as e:
            if e.reason in ("forbidden", "unauthorized"):
                raise
            last = e
            continue
        try:
            return _validated(data, f"pod {ns}/{name} port {port}")
        except MetricsUnavailable as e:
            last = ApiFailure(200, "error", f"{e.detail}")
    assert last is not None
    raise last


def _attr(obj: Any, *names: str) -> Any:
    for n in names:
        obj = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if obj is None:
            return None
    return obj


def _validated(data: bytes, where: str, node: Optional[str] = None) -> str:
    """Bytes -> text that parses as DCGM exporter output, else MetricsUnavailable."""
    if len(data) > MAX_METRICS_BYTES:
        raise MetricsUnavailable("too-large", f"{where}: answer is {len(data)} bytes, over the "
                                              f"{MAX_METRICS_BYTES // 2**20} MiB limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MetricsUnavailable("garbage", f"{where}: answer is not UTF-8 text (byte {e.start})") from None
    try:
        parsed = parse_dcgm(text, node)
    except MetricsError as e:
        raise MetricsUnavailable("garbage", f"{where}: not Prometheus metrics ({e})") from None
    if not parsed.gpus:
        raise MetricsUnavailable("garbage", f"{where}: Prometheus text without DCGM GPU metrics "
                                            "(is this a DCGM exporter?)")
    return text


# ------------------------------------------------------------------ direct HTTP


def dcgm_direct(url: str, timeout: float) -> str:
    """GET a DCGM exporter's metrics (``/metrics`` is added to a URL without a path)."""
    target = _with_default_path(url, "/metrics")
    data = _http_get(target, timeout, headers={"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1"})
    return _validated(data, target)


def prometheus_promql(node: str) -> str:
    """The instant query for one node's DCGM health series, for either hostname label."""
    names = "|".join(DCGM_HEALTH_METRICS)
    value = _promql_string(node)
    return " or ".join(f'{{__name__=~"{names}", {key}={value}}}' for key in ("Hostname", "hostname"))


def prometheus_query(url: str, node: str, timeout: float) -> str:
    """Ask Prometheus (``url``: its base URL) for the DCGM health series of ``node``
    and render the instant vector as exposition lines."""
    base = url.rstrip("/")
    endpoint = base if base.endswith("/api/v1/query") else base + "/api/v1/query"
    data = _http_get(endpoint, timeout, params={"query": prometheus_promql(node)},
                     headers={"Accept": "application/json"}, prometheus=True)
    try:
        resp = _prom_dec.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise MetricsUnavailable("garbage", f"{endpoint}: not a Prometheus API answer ({_short(str(e))})") from None
    if resp.status != "success" or resp.data is None:
        raise MetricsUnavailable("http-status", f"{endpoint}: Prometheus answered {resp.status}: "
                                                f"{resp.errorType} {_short(resp.error)}".rstrip())
    if resp.data.resultType != "vector":
        raise MetricsUnavailable("garbage", f"{endpoint}: expected a vector result, got {resp.data.resultType!r}")
    lines = []
    for sample in resp.data.result:
        line = _render_sample(sample)
        if line is None:
            raise MetricsUnavailable("garbage", f"{endpoint}: unusable sample {_short(repr(sample))}")
        lines.append(line)
    if not lines:
        raise MetricsUnavailable("not-found", f"Prometheus at {base} has no DCGM series with "
                                              f"Hostname or hostname = {node!r}")
    return _validated("\n".join(lines).encode() + b"\n", endpoint, node)


class _PromData(msgspec.Struct):
    resultType: str = ""
    result: list[Any] = msgspec.field(default_factory=list)


class _PromResponse(msgspec.Struct):
    status: str = ""
    data: Optional[_PromData] = None
    errorType: str = ""
    error: str = ""


_prom_dec = msgspec.json.Decoder(_PromResponse)


def _render_sample(sample: Any) -> Optional[str]:
    if not isinstance(sample, dict):
        return None
    metric, value = sample.get("metric"), sample.get("value")
    if not isinstance(metric, dict) or not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], str):
        return None
    name = metric.get("__name__")
    if not isinstance(name, str) or not _is_legacy_name(name):
        return None
    try:
        float(value[1])
    except ValueError:
        return None
    labels = []
    for k, v in metric.items():
        if k == "__name__" or not isinstance(k, str) or not isinstance(v, str) or not _is_legacy_name(k):
            continue
        labels.append(f'{k}="{_escape_label(v)}"')
    return f"{name}{{{','.join(labels)}}} {value[1]}"


def _is_legacy_name(s: str) -> bool:
    return bool(s) and (s[0].isascii() and (s[0].isalpha() or s[0] in "_:")) and \
        all(c.isascii() and (c.isalnum() or c in "_:") for c in s)


def _escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _promql_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _with_default_path(url: str, path: str) -> str:
    try:
        parts = urlsplit(url if "://" in url else "http://" + url)
    except ValueError as e:
        raise MetricsUnavailable("unreachable", f"invalid URL {url!r}: {e}") from None
    if parts.path in ("", "/"):
        parts = parts._replace(path=path)
    return urlunsplit(parts)


def _short(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "…"


def _http_get(url: str, timeout: float, *, params: Optional[dict[str, str]] = None,
              headers: Optional[dict[str, str]] = None, prometheus: bool = False) -> bytes:
    """One GET with a deadline, a size cap, and at most one retry after a refused or
    dropped connection. Raises only MetricsUnavailable."""
    return http_get(url, timeout, params=params, headers=headers, prometheus=prometheus)[1]


def http_get(url: str, timeout: float, *, params: Optional[dict[str, str]] = None,
             headers: Optional[dict[str, str]] = None, prometheus: bool = False,
             accept_status: tuple[int, ...] = (200,)) -> tuple[int, bytes]:
    """``_http_get`` that also hands back the answers of the statuses in
    ``accept_status`` (status, body) instead of raising for them."""
    import httpx

    timeout = float(timeout) if timeout and timeout > 0 and math.isfinite(timeout) else 10.0
    deadline = time.monotonic() + timeout
    hdrs = {"User-Agent": _USER_AGENT, **(headers or {})}
    last: Optional[MetricsUnavailable] = None
    for attempt in (1, 2):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            with httpx.Client(timeout=httpx.Timeout(left), follow_redirects=True, max_redirects=3) as client:
                with client.stream("GET", url, params=params, headers=hdrs) as resp:
                    if resp.status_code not in accept_status:
                        raise MetricsUnavailable("http-status", _status_detail(url, resp, deadline, prometheus))
                    declared = resp.headers.get("Content-Length", "")
                    if declared.isdigit() and int(declared) > MAX_METRICS_BYTES:
                        raise MetricsUnavailable("too-large", f"{url}: answer of {declared} bytes is over the "
                                                              f"{MAX_METRICS_BYTES // 2**20} MiB limit")
                    return resp.status_code, _read_capped(resp, url, deadline, timeout)
        except MetricsUnavailable:
            raise
        except httpx.TimeoutException:
            raise MetricsUnavailable("timeout", f"{url}: no answer within {timeout:g}s") from None
        except (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError,
                httpx.LocalProtocolError) as e:
            last = MetricsUnavailable("unreachable", f"{url}: {_connection_detail(e)}")
            if attempt == 1 and deadline - time.monotonic() > _RETRY_PAUSE:
                time.sleep(_RETRY_PAUSE)
                continue
            raise last from None
        except httpx.DecodingError as e:
            raise MetricsUnavailable("garbage", f"{url}: undecodable body ({_short(str(e))})") from None
        except httpx.TooManyRedirects:
            raise MetricsUnavailable("http-status", f"{url}: too many redirects") from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as e:
            raise MetricsUnavailable("unreachable", f"invalid URL {url!r}: {_short(str(e))}") from None
        except httpx.HTTPError as e:
            raise MetricsUnavailable("unreachable", f"{url}: {_short(str(e)) or type(e).__name__}") from None
        except (OSError, ValueError, UnicodeError) as e:
            raise MetricsUnavailable("unreachable", f"{url}: {_short(str(e)) or type(e).__name__}") from None
    if last is not None:
        raise last
    raise MetricsUnavailable("timeout", f"{url}: no answer within {timeout:g}s")


def _read_capped(resp: Any, url: str, deadline: float, timeout: float) -> bytes:
    chunks: list[bytes] = []
    total = 0
    for chunk in resp.iter_bytes():
        total += len(chunk)
        if total > MAX_METRICS_BYTES:
            raise MetricsUnavailable("too-large", f"{url}: answer is over the {MAX_METRICS_BYTES // 2**20} MiB limit")
        if time.monotonic() > deadline:
            raise MetricsUnavailable("timeout", f"{url}: answer not complete within {timeout:g}s")
        chunks.append(chunk)
    return b"".join(chunks)


def _status_detail(url: str, resp: Any, deadline: float, prometheus: bool) -> str:
    body = b""
    try:
        for chunk in resp.iter_bytes():
            body += chunk
            if len(body) > 4096 or time.monotonic() > deadline:
                break
    except Exception:  # the status is what matters; the body is a courtesy
        pass
    detail = ""
    if prometheus:
        try:
            err = _prom_dec.decode(body)
            detail = f"{err.errorType} {err.error}".strip()
        except (msgspec.DecodeError, msgspec.ValidationError):
            detail = ""
    if not detail:
        detail = body[:300].decode("utf-8", errors="replace")
    reason = resp.reason_phrase or ""
    return f"{url}: HTTP {resp.status_code} {reason}".rstrip() + (f" ({_short(detail)})" if detail.strip() else "")


def _connection_detail(e: Exception) -> str:
    text = str(e)
    if "refused" in text.lower() or "Errno 111" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text or "name resolution" in text:
        return "host name does not resolve"
    if not text:
        return type(e).__name__
    return _short(text)
