"""A watch cache for `gpuctl serve`: the one-shot collectors, answered from memory.

``CachedAPI`` stands where a ``KubeAPI`` stands, so `serve` builds its snapshots with the
same collectors (collect/live.py) as `diagnose pending -A` and `nodes capacity`: a live
run, a snapshot run and the exporter see the same data. What differs is where a list
comes from:

* The first time a collector lists ``(path, kind, query)``, an ``Informer`` lists it
  (paged, as today) and then keeps it current in a thread: ``watch=true`` from the
  list's resourceVersion with bookmarks; a watch that ends is re-opened from the last
  resourceVersion seen; 410 Gone (the resourceVersion expired) re-lists; errors back
  off exponentially with jitter (capped); a list or watch answered 403 stays a gap,
  retried slowly. Later lists of the same query are answered from its records.
* Single GETs and logs go to the API server, through a short-lived cache (``ttl``):
  a recompute every few seconds never turns into a request per object per pass.
* Records are the same slim, decoded records the collectors use. An informer that no
  pass has read for ``IDLE_PASSES`` passes is stopped and dropped (``prune``): when the
  Pending pods stop needing bound pods' labels, the labelled list goes, and memory
  follows what the checks need.

Nothing here writes to the cluster.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import msgspec

from ..model import objects as O
from .kube import ApiFailure, KubeAPI

WATCH_SECONDS = 300          # how long one watch request stays open (the server may end it sooner)
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
FORBIDDEN_RETRY = 300.0      # a denied list is retried this rarely
MAX_INFORMERS = 64           # beyond this many distinct queries, lists go to the API server
IDLE_PASSES = 3              # an informer no collector read for this many passes is stopped (its memory freed)


class _Event(msgspec.Struct):
    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"null")


class _Meta(msgspec.Struct):
    resourceVersion: str = ""


class _Status(msgspec.Struct):
    kind: str = ""
    code: int = 0
    reason: str = ""
    message: str = ""
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Obj(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_event_dec = msgspec.json.Decoder(_Event)
_status_dec = msgspec.json.Decoder(_Status)
_obj_dec = msgspec.json.Decoder(_Obj)


@dataclass
class InformerStats:
    """What `serve` exports about one informer (docs/serve.md, the exporter's own health)."""

    resource: str
    synced: bool = False
    relists: int = 0
    restarts: int = 0
    events: int = 0
    last_event: float = 0.0          # monotonic time of the last event or bookmark (or list)
    errors: dict[str, int] = field(default_factory=dict)   # HTTP status ("0": network) -> count
    gap: Optional[ApiFailure] = None  # the last list failure, while the informer has no data
    absent: bool = False              # the cluster does not serve the resource (404): not a fault


def _key(rec: Any) -> tuple[str, str]:
    md = rec.metadata
    return (md.namespace or "", md.name or "")


def resource_name(path: str) -> str:
    """"pods" for /api/v1/pods and /api/v1/namespaces/x/pods, "resourceslices" for its group's path."""
    return path.rstrip("/").rsplit("/", 1)[-1]


class Informer:
    """One list+watch of ``path`` with ``query``, decoded as ``kind``; thread-safe reads."""

    def __init__(self, api: KubeAPI, path: str, kind: str, query: dict[str, Any],
                 watch_seconds: int = WATCH_SECONDS, on_change: Optional[Callable[[], None]] = None):
        self.api, self.path, self.kind, self.query = api, path, kind, dict(query)
        self.watch_seconds = watch_seconds
        self.on_change = on_change
        self.stats = InformerStats(resource_name(path))
        self._records: dict[tuple[str, str], Any] = {}
        self._rv = ""
        self._lock = threading.Lock()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._decoder = O.decoder_for(kind)
        self.last_read = 0          # the pass that last read it (CachedAPI.passes)

    # ------------------------------------------------------------ reading
    def items(self) -> list[Any]:
        """The current records; raises the list's failure while there are none to give."""
        with self._lock:
            if not self.stats.synced and self.stats.gap is not None:
                raise self.stats.gap
            return list(self._records.values())

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    # ------------------------------------------------------------ running
    def start(self) -> "Informer":
        self._thread = threading.Thread(target=self._run, name=f"informer {self.path}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching and free the records (an open watch request ends at its timeout)."""
        self._stop.set()
        with self._lock:
            self._records = {}

    def _count_error(self, e: ApiFailure) -> None:
        if e.reason == "not-found":
            return   # a resource (an API version, a CRD) the cluster does not serve: the collector tries the next
        code = str(e.status or 0)
        self.stats.errors[code] = self.stats.errors.get(code, 0) + 1

    def relist(self) -> None:
        items, rv = self.api.list_versioned(self.path, self.kind, self.query)
        with self._lock:
            self._records = {_key(r): r for r in items}
            self._rv = rv
            self.stats.synced, self.stats.gap, self.stats.absent = True, None, False
            self.stats.last_event = time.monotonic()
        self._synced.set()
        if self.on_change:
            self.on_change()

    def _run(self) -> None:
        delay = BACKOFF_FIRST
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self.api.down, self.api.lost = None, 0.0   # a long-running client: each try stands alone
                    self.relist()
                    need_list = False
                    delay = BACKOFF_FIRST
                expired = self.watch_once()
                if expired:
                    self.stats.relists += 1
                    self.stats.synced = False
                    need_list = True
                else:
                    self.stats.restarts += 1
                delay = BACKOFF_FIRST
            except ApiFailure as e:
                self._count_error(e)
                if need_list:
                    with self._lock:
                        if not self._records:
                            self.stats.gap = e
                        self.stats.absent = e.reason == "not-found"
                    self._synced.set()   # readers get the failure instead of waiting for ever
                if e.reason == "gone":
                    self.stats.relists += 1
                    need_list = True
                    continue
                self.stats.restarts += 1
                wait = FORBIDDEN_RETRY if e.reason in ("forbidden", "unauthorized", "not-found") else delay
                self._stop.wait(wait * (0.8 + 0.4 * random.random()))
                delay = min(delay * 2, BACKOFF_MAX)
            except Exception as e:   # noqa: BLE001 - an informer never dies; it backs off and tries again
                self._count_error(ApiFailure(None, "error", str(e)))
                self.stats.restarts += 1
                self._stop.wait(delay * (0.8 + 0.4 * random.random()))
                delay = min(delay * 2, BACKOFF_MAX)

    def watch_once(self) -> bool:
        """One watch request, applied; True when the resourceVersion expired (re-list)."""
        for line in self.api.watch(self.path, self.query, self._rv, self.watch_seconds):
            if self._stop.is_set():
                return False
            ev = _event_dec.decode(line)
            if ev.type == "ERROR":
                st = _status_dec.decode(ev.object)
                if st.code == 410:
                    return True
                raise ApiFailure(st.code or None, "error", st.message or "watch error")
            self.apply(ev.type, ev.object)
        return False

    def apply(self, type_: str, raw: msgspec.Raw) -> None:
        """One watch event: ADDED/MODIFIED put the record, DELETED drops it, BOOKMARK moves the resourceVersion."""
        now = time.monotonic()
        rv = _obj_dec.decode(raw).metadata.resourceVersion
        if type_ == "BOOKMARK":
            with self._lock:
                self._rv = rv or self._rv
                self.stats.last_event = now
            return
        try:
            rec = O.decode_lenient(self._decoder, raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            rec, _ = O.decode_salvaging(self.kind, raw, source=self.path)
            if rec is None:
                return
        if isinstance(rec, O.GenericObject):
            rec.kind = rec.kind or self.kind
        with self._lock:
            if type_ == "DELETED":
                self._records.pop(_key(rec), None)
            elif type_ in ("ADDED", "MODIFIED"):
                self._records[_key(rec)] = rec
            self._rv = rv or self._rv
            self.stats.events += 1
            self.stats.last_event = now
        if self.on_change:
            self.on_change()


class CachedAPI:
    """A ``KubeAPI`` whose lists come from informers (see the module's docstring)."""

    # The pods bound to the nodes are listed cluster-wide (one informer, not one per
    # node); a few troubled nodes' device-plugin pods stay per-node lists (a field
    # selector the API server indexes; a label selector would scan every pod each time).
    prefers_bulk = True

    def __init__(self, api: KubeAPI, ttl: float = 60.0, watch_seconds: int = WATCH_SECONDS,
                 sync_timeout: float = 120.0, on_change: Optional[Callable[[], None]] = None):
        self.api = api
        self.ttl = ttl
        self.watch_seconds = watch_seconds
        self.sync_timeout = sync_timeout
        self.on_change = on_change
        self.informers: dict[tuple, Informer] = {}
        self.passes = 0
        self._lock = threading.Lock()
        self._gets: dict[tuple, tuple[float, Any]] = {}

    # what collectors read of a KubeAPI
    @property
    def context_name(self) -> Optional[str]:
        return self.api.context_name

    @property
    def timeout(self) -> float:
        return self.api.timeout

    @property
    def down(self) -> Optional[ApiFailure]:
        return None

    @down.setter
    def down(self, value: Optional[ApiFailure]) -> None:
        pass

    def informer(self, path: str, kind: str, query: Optional[dict[str, Any]] = None) -> Optional[Informer]:
        key = (path, kind, tuple(sorted((query or {}).items())))
        with self._lock:
            inf = self.informers.get(key)
            if inf is None:
                if len(self.informers) >= MAX_INFORMERS:
                    return None
                inf = self.informers[key] = Informer(self.api.fork(), path, kind, query or {},
                                                     self.watch_seconds, self.on_change).start()
            inf.last_read = self.passes
        return inf

    def next_pass(self) -> None:
        """A collector pass is about to start: count it, and stop the informers the
        last ``IDLE_PASSES`` passes did not read."""
        with self._lock:
            self.passes += 1
            for key, inf in list(self.informers.items()):
                if self.passes - inf.last_read > IDLE_PASSES:
                    inf.stop()
                    del self.informers[key]

    def list(self, path: str, kind: str, query: Optional[dict[str, Any]] = None,
             malformed: Optional[list[Any]] = None) -> list[Any]:
        inf = self.informer(path, kind, query)
        if inf is None:
            return self.api.fork().list(path, kind, query, malformed=malformed)
        inf.wait_synced(self.sync_timeout)
        return inf.items()

    def _cached(self, key: tuple, fetch: Callable[[], Any]) -> Any:
        now = time.monotonic()
        hit = self._gets.get(key)
        if hit is not None and now - hit[0] < self.ttl:
            if isinstance(hit[1], ApiFailure):
                raise hit[1]
            return hit[1]
        try:
            value = fetch()
        except ApiFailure as e:
            self._gets[key] = (now, e)
            raise
        self._gets[key] = (now, value)
        if len(self._gets) > 4096:   # bounded: drop the oldest half
            for k, _ in sorted(self._gets.items(), key=lambda kv: kv[1][0])[:2048]:
                self._gets.pop(k, None)
        return value

    def get(self, path: str, kind: str, malformed: Optional[list[Any]] = None) -> Any:
        return self._cached(("get", path, kind), lambda: self.api.fork().get(path, kind, malformed=malformed))

    def get_bytes(self, path: str, query: Optional[dict[str, Any]] = None) -> bytes:
        return self._cached(("bytes", path, tuple(sorted((query or {}).items()))),
                            lambda: self.api.fork().get_bytes(path, query))

    def log_text(self, ns: str, pod: str, container: str, previous: bool, tail_lines: int = 400,
                 limit_bytes: int = 256 * 1024) -> str:
        return self._cached(("log", ns, pod, container, previous, tail_lines),
                            lambda: self.api.fork().log_text(ns, pod, container, previous, tail_lines, limit_bytes))

    def synced(self) -> bool:
        return bool(self.informers) and all(i.stats.synced or i.stats.gap is not None for i in self.informers.values())

    def stop(self) -> None:
        for inf in self.informers.values():
            inf.stop()
