"""The recompute loop and the read-only HTTP server of `gpuctl serve` (docs/serve.md).

The loop builds a snapshot with the one-shot collector of `diagnose pending -A`
(collect/live.py ``collect_cluster``) over the watch cache (collect/watch.py
``CachedAPI``), computes a ``State`` and swaps it in; it runs every ``interval``
seconds, sooner after the cache changed, never per request. Requests read the last
state: a scrape or an API call never reaches the API server."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit

from ..collect.live import collect_cluster
from ..collect.watch import CachedAPI
from .metrics import Exporter, Health, exposition
from .state import State, compute, pod_document

log = logging.getLogger("gpuctl.serve")

POD_PATH = re.compile(r"^/api/v1/pods/(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/(?P<name>[a-z0-9]([-.a-z0-9]*[a-z0-9])?)/diagnosis$")
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
NODE_PATH = re.compile(r"^/api/v1/nodes/(?P<name>[^/]{1,253})/diagnosis$")
MIN_GAP = 1.0   # seconds between two recomputes, however fast the cluster changes


def waits(duration: float, interval: float) -> tuple[float, float]:
    """(soonest, latest) seconds after a recompute that took ``duration`` until the next:
    a change brings it forward to ``soonest``, else it comes at ``latest``. The soonest is
    never under the last recompute's own duration, so however fast the cluster changes,
    recomputing takes at most half of one core (a 9 s recompute of a 150,000-pod cluster
    is followed by at least 9 s of rest); the latest is ``--interval``, or that soonest
    when a recompute takes longer than the interval."""
    soonest = max(MIN_GAP, duration)
    return soonest, max(interval, soonest)


class Service:
    """The cache, the loop and the latest state."""

    def __init__(self, api: Any, interval: float = 15.0, watch_seconds: int = 300):
        self.interval = interval
        self.changed = threading.Event()
        self.cache = CachedAPI(api, watch_seconds=watch_seconds, on_change=self.changed.set)
        self.health = Health()
        self.exporter = Exporter(lambda: self.state, lambda: list(self.cache.informers.values()), self.health)
        self.state: Optional[State] = None
        self.last_error: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def recompute(self) -> State:
        started = time.monotonic()
        self.cache.next_pass()
        snap = collect_cluster(self.cache, for_pending=True, node_warnings=True)
        state = compute(snap)
        state.duration = time.monotonic() - started
        self.state = state
        self.health.observe(state.duration)
        _release_memory()
        return state

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.changed.clear()
            started = time.monotonic()
            try:
                self.recompute()
                self.last_error = None
            except Exception as e:   # noqa: BLE001 - the loop survives; staleness is exported
                self.health.failures += 1
                self.last_error = f"{type(e).__name__}: {e}"
                log.warning("recompute failed: %s", self.last_error)
            soonest, latest = waits(time.monotonic() - started, self.interval)
            self._stop.wait(soonest)
            deadline = time.monotonic() + (latest - soonest)
            while not self._stop.is_set() and time.monotonic() < deadline and not self.changed.wait(0.2):
                pass

    def start(self) -> "Service":
        self._thread = threading.Thread(target=self._loop, name="gpuctl serve loop", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.cache.stop()

    def ready(self) -> bool:
        return self.state is not None and self.cache.synced()


def _release_memory() -> None:
    """After a pass: collect the previous state's garbage and hand freed heap back to
    the system (glibc's malloc_trim), so a long-running exporter's RSS is what it holds,
    not its high-water mark. A no-op where there is no glibc."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = getattr(libc, "malloc_trim", None)
        if trim is not None:
            trim(0)
    except OSError:
        pass


def watch_pending(api: Any, namespace: Optional[str], interval: float, show: Any, stop: threading.Event) -> None:
    """`diagnose pending --watch`: the pending report from the watch cache, shown by
    ``show(doc)`` after the first sync and then whenever it changed (at most every
    ``interval`` seconds), until ``stop`` is set."""
    from ..reports.pending import pending_report

    changed = threading.Event()
    cache = CachedAPI(api, on_change=changed.set)
    last = None
    try:
        while not stop.is_set():
            changed.clear()
            cache.next_pass()
            doc, _ = pending_report(collect_cluster(cache, namespace=namespace, for_pending=True), namespace)
            key = json.dumps(doc, sort_keys=True, default=str)
            if key != last:
                show(doc)
                last = key
            deadline = time.monotonic() + interval
            while not stop.is_set() and (time.monotonic() < deadline or not changed.is_set()):
                stop.wait(0.2)
    finally:
        cache.stop()


def _json(status: int, doc: Any) -> tuple[int, str, bytes]:
    """The document as the command's -o json writes it (camelCase keys, cluster text cleaned)."""
    from ..render.data import json_text

    return status, "application/json", (json_text(doc) + "\n").encode()


def route(service: Service, path: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET: the whole read-only API."""
    parts = urlsplit(path)
    path, query = parts.path, parts.query
    state = service.state
    if path == "/metrics":
        return 200, "text/plain; version=0.0.4; charset=utf-8", exposition(service.exporter)
    if path == "/healthz":
        return 200, "text/plain", b"ok\n"
    if path == "/readyz":
        if service.ready():
            return 200, "text/plain", b"ok\n"
        return 503, "text/plain", b"not ready: the watch cache has not synced or no diagnosis was computed yet\n"
    if not path.startswith("/api/v1/"):
        return _json(404, {"error": f"no such path: {path}"})
    if state is None:
        return _json(503, {"error": "no diagnosis computed yet", "lastError": service.last_error})
    if path == "/api/v1/pending":
        from ..reports.pending import narrow_pending

        namespace = (parse_qs(query).get("namespace") or [None])[0]
        if namespace is not None and not NAMESPACE.match(namespace):
            return _json(400, {"error": f"invalid namespace {namespace!r}"})
        return _json(200, narrow_pending(state.pending, namespace))
    if path == "/api/v1/capacity":
        return _json(200, state.capacity)
    m = POD_PATH.match(path)
    if m:
        doc = pod_document(state, m["ns"], m["name"])
        if doc is None:
            return _json(404, {"error": f"pod {m['ns']}/{m['name']} is not a Pending pod in the cache; "
                                        "`gpuctl diagnose pod` reads any pod from the API server"})
        return _json(200, doc)
    m = NODE_PATH.match(path)
    if m:
        doc = state.nodes.get(m["name"])
        if doc is None:
            from ..engine import diagnose_node

            if m["name"] not in state.snapshot.nodes:
                return _json(404, {"error": f"node {m['name']} is not in the cache"})
            doc = diagnose_node(state.snapshot, m["name"]).to_dict()
        return _json(200, doc)
    return _json(404, {"error": f"no such path: {path}"})


class _Handler(BaseHTTPRequestHandler):
    server_version = "gpuctl-serve"
    service: Service

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        log.debug("%s " + format, self.client_address[0], *args)

    def do_GET(self) -> None:
        try:
            status, ctype, body = route(self.service, self.path)
        except Exception as e:   # noqa: BLE001 - one bad request never stops the server
            status, ctype, body = _json(500, {"error": f"{type(e).__name__}: {e}"})
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_only(self) -> None:
        body = b'{"error": "gpuctl serve is read-only"}\n'
        self.send_response(405)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_PATCH = do_DELETE = _read_only


def http_server(service: Service, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"service": service})
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    return httpd


def parse_listen(text: str) -> tuple[str, int]:
    """':9402' -> ('0.0.0.0', 9402); 'localhost:9402'; '[::1]:9402'."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: expected [HOST]:PORT, e.g. :9402")
    return (host.strip("[]") or "0.0.0.0"), int(port)
