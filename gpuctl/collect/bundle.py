"""``gpuctl snapshot save``: a bundle ``--snapshot`` reads back.

Whole objects as the API returned them (minus ``managedFields``), one ``v1 List``
file per kind, streamed page by page so 150,000 pods never sit in memory at once;
device-plugin and failing GPU pods' logs under ``logs/``; ``snapshot.json`` with
capturedAt, the context and what could not be collected.

Bundles get pasted into tickets, so by default they are redacted (collect/redaction.py:
env ``value``s except the CUDA runtime's, secret-looking flags in container arguments,
the last-applied-configuration annotation, ConfigMap data other than the GPU stack's
own, Secret data wherever it sits, credentials in logs). Secrets are never collected.
Objects are redacted and written as JSON text, parsing only what redaction changes;
a ``.tar.gz`` is compressed on a second thread as it is written (collect/targz.py).

The bundle is built beside the destination and renamed into place, so an
interrupted save leaves no half bundle and keeps the previous one; ``--force``
replaces only a previous gpuctl bundle. Names sent by the server (namespaces, pods,
containers, nodes, kinds) become file names only when they are valid Kubernetes
names, and every path is checked to lie inside the bundle.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import tarfile
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

import msgspec

from .. import __version__
from ..errors import SourceError, UsageError
from ..model import names as N
from ..model import objects as O
from ..model import snapshot as S
from .redaction import redact_log, redact_object, rewrite_item, strip_managed
from .targz import Deflater, write_targz

SCHEMA = "gpuctl/snapshot/v1"

LOG_TAIL_LINES = 400
MAX_LOG_PODS = 50
MAX_METRICS_NODES = 32   # DCGM scrapes through the API server's proxy are not free on a 5,000-node cluster

# (file stem, API path template, kind, namespaced). Secrets are deliberately absent.
COLLECT: list[tuple[str, str, str, bool]] = [
    ("nodes", "/api/v1/nodes", "Node", False),
    ("pods", "/api/v1{ns}/pods", "Pod", True),
    ("events", "/api/v1{ns}/events", "Event", True),
    ("namespaces", "/api/v1/namespaces", "Namespace", False),
    ("resourcequotas", "/api/v1{ns}/resourcequotas", "ResourceQuota", True),
    ("limitranges", "/api/v1{ns}/limitranges", "LimitRange", True),
    ("configmaps", "/api/v1{ns}/configmaps", "ConfigMap", True),
    ("persistentvolumeclaims", "/api/v1{ns}/persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("persistentvolumes", "/api/v1/persistentvolumes", "PersistentVolume", False),
    ("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass", False),
    ("runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses", "RuntimeClass", False),
    ("storageclasses", "/apis/storage.k8s.io/v1/storageclasses", "StorageClass", False),
    ("daemonsets", "/apis/apps/v1{ns}/daemonsets", "DaemonSet", True),
    ("deployments", "/apis/apps/v1{ns}/deployments", "Deployment", True),
    ("replicasets", "/apis/apps/v1{ns}/replicasets", "ReplicaSet", True),
    ("statefulsets", "/apis/apps/v1{ns}/statefulsets", "StatefulSet", True),
    ("jobs", "/apis/batch/v1{ns}/jobs", "Job", True),
    ("resourceclaims", "/apis/resource.k8s.io/v1{ns}/resourceclaims", "ResourceClaim", True),
    ("resourceclaimtemplates", "/apis/resource.k8s.io/v1{ns}/resourceclaimtemplates", "ResourceClaimTemplate", True),
    ("deviceclasses", "/apis/resource.k8s.io/v1/deviceclasses", "DeviceClass", False),
    ("resourceslices", "/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice", False),
    ("kueue-workloads", "/apis/kueue.x-k8s.io/v1beta1{ns}/workloads", "Workload", True),
    ("kueue-localqueues", "/apis/kueue.x-k8s.io/v1beta1{ns}/localqueues", "LocalQueue", True),
    ("kueue-clusterqueues", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", "ClusterQueue", False),
    ("kueue-resourceflavors", "/apis/kueue.x-k8s.io/v1beta1/resourceflavors", "ResourceFlavor", False),
    ("kueue-cohorts", "/apis/kueue.x-k8s.io/v1beta1/cohorts", "Cohort", False),
    ("volcano-podgroups", "/apis/scheduling.volcano.sh/v1beta1{ns}/podgroups", "PodGroup", True),
    ("volcano-queues", "/apis/scheduling.volcano.sh/v1beta1/queues", "Queue", False),
    ("volcano-jobs", "/apis/batch.volcano.sh/v1alpha1{ns}/jobs", "Job", True),
    ("pytorchjobs", "/apis/kubeflow.org/v1{ns}/pytorchjobs", "PyTorchJob", True),
    ("mpijobs", "/apis/kubeflow.org/v2beta1{ns}/mpijobs", "MPIJob", True),
    ("jobsets", "/apis/jobset.x-k8s.io/v1alpha2{ns}/jobsets", "JobSet", True),
    ("karpenter-nodeclaims", "/apis/karpenter.sh/v1/nodeclaims", "NodeClaim", False),
    ("karpenter-nodepools", "/apis/karpenter.sh/v1/nodepools", "NodePool", False),
    ("kai-queues", "/apis/scheduling.run.ai/v2/queues", "Queue", False),
    ("kai-podgroups", "/apis/scheduling.run.ai/v2alpha2{ns}/podgroups", "PodGroup", True),
]

# The data sets (Snapshot gap keys) each list feeds. A list that could not be read,
# or was read in one namespace only, is written to snapshot.json's "gaps", and
# --snapshot restores the same gap a live run would have had: checks are skipped
# with the reason instead of reading a partial bundle as a cluster with no pods.
FEEDS: dict[str, tuple[str, ...]] = {
    "nodes": (S.NODES,), "pods": (S.PODS, S.DEVICE_PLUGINS), "events": (S.EVENTS,),
    "resourcequotas": (S.QUOTAS,), "persistentvolumeclaims": (S.PVCS,), "runtimeclasses": (S.RUNTIMECLASSES,),
    "kueue-workloads": (S.QUEUES,), "volcano-podgroups": (S.QUEUES,), "kai-podgroups": (S.QUEUES,),
    "resourceclaims": (S.DRA,), "resourceslices": (S.DRA,), "deviceclasses": (S.DRA,),
}
# data sets that span namespaces: incomplete when only one namespace was collected
CROSS_NAMESPACE = (S.PODS, S.DEVICE_PLUGINS)


def _resource_of(template: str) -> tuple[str, str]:
    """(API group, resource) of a COLLECT path template."""
    parts = template.replace("{ns}", "").strip("/").split("/")
    return ("" if parts[0] == "api" else parts[1]), parts[-1]


# ------------------------------------------------------------------ writing


@dataclass
class SaveReport:
    path: str
    counts: dict[str, int] = field(default_factory=dict)
    gaps: list[str] = field(default_factory=list)        # one line each, for people
    logs: int = 0
    data_gaps: dict[str, S.Gap] = field(default_factory=dict)   # gap key -> Gap, for --snapshot
    log_gaps: dict[str, S.Gap] = field(default_factory=dict)    # ns/pod/container -> Gap
    namespaces: Optional[list[str]] = None                      # collected namespaces (None: all)


class _ListWriter:
    """One ``v1 List`` file, object by object, written in chunks: to the staging
    folder, or (a ``.tar.gz`` destination) deflated on the way (collect/targz.py)."""

    # Large chunks: the compressor thread needs the GIL between chunks, and waits up to
    # the interpreter's switch interval (5 ms) for it; at 1 MiB (about 6 ms of zlib) it
    # sat idle half the time
    CHUNK = 8 << 20

    def __init__(self, path: Path, deflater: Optional[Deflater] = None):
        self.path, self.deflater = path, deflater
        self.seg = deflater.open(path.name) if deflater is not None else None   # list files sit at the top
        self.f = open(path, "wb") if deflater is None else None
        self.parts: list[str] = ['{"apiVersion": "v1", "kind": "List", "items": [\n']
        self.size = 0
        self.n = 0
        self.closed = False

    def add(self, obj: dict[str, Any]) -> None:
        self.add_text(json.dumps(obj, ensure_ascii=False))

    def add_text(self, text: str) -> None:
        """One object's JSON text (see redaction.rewrite_item)."""
        if self.n:
            self.parts.append(",\n")
        self.parts.append(text)
        self.size += len(text)
        self.n += 1
        if self.size >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        data = "".join(self.parts).encode("utf-8")
        self.parts, self.size = [], 0
        if self.seg is not None:
            assert self.deflater is not None
            self.deflater.write(self.seg, data)
        elif self.f is not None:
            self.f.write(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.parts.append("\n]}\n")
        try:
            self._flush()
        finally:
            if self.seg is not None and self.deflater is not None:
                self.deflater.write(self.seg, None)
            elif self.f is not None:
                self.f.close()

    def discard(self) -> None:
        """An empty list: no file in the bundle."""
        self.close()
        if self.seg is not None:
            self.seg.dropped = True
        else:
            self.path.unlink(missing_ok=True)


class _Outside(Exception):
    """A path that would leave the bundle (the second wall behind name validation)."""


def _inside(root: Path, *parts: str) -> Path:
    """``root/parts…``, refused unless it resolves to a path inside ``root``."""
    base = root.resolve()
    p = base.joinpath(*parts).resolve()
    if p == base or base not in p.parents:
        raise _Outside("/".join(parts))
    return p


def _show(value: Any) -> str:
    return str(value)[:100]


# ------------------------------------------------------------------ the destination

# Objects are rewritten as JSON text (collect/redaction.py rewrite_item) where that is
# provably the same as parsing, redacting and writing them; False: every object parsed
# (tests/test_redaction_text.py compares the two).
TEXT_PATH = True
_TEMP_PREFIX = "gpuctl-snapshot-"
_DEFLATE = ".deflate"            # inside the staging folder: the compressed List files of a .tar.gz
_BUNDLE_FILE = re.compile(r"[a-z0-9][a-z0-9-]*\.json\Z")        # nodes.json, kueue-workloads.json, …
_BUNDLE_FOLDERS = {"logs": (3, ".log"), "metrics": (1, ".prom"), "probes": (1, ".json")}   # depth of files, suffix
_MAX_META_BYTES = 16 * 1024 * 1024
_MAX_SCANNED_MEMBERS = 200_000


@dataclass
class _Target:
    path: Path        # absolute, not resolved (a symbolic link is refused, never followed)
    shown: str        # as the user wrote it
    tarball: bool
    force: bool

    @property
    def parent(self) -> Path:
        return self.path.parent

    def refuse(self, why: str) -> UsageError:
        return UsageError(f"refusing to replace {self.shown}: {why}", "nothing was changed")

    def check(self) -> None:
        """Raise UsageError unless a bundle may be written at this path: its folder
        exists and is writable, and whatever is there is a previous gpuctl bundle
        that --force may replace."""
        parent = self.parent
        if not parent.exists():
            raise UsageError(f"cannot write {self.shown}: the folder {parent} does not exist",
                             "create it first or choose another path")
        if not parent.is_dir():
            raise UsageError(f"cannot write {self.shown}: {parent} is not a directory", "choose another path")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"cannot write {self.shown}: the folder {parent} is not writable", "choose another path")
        if not os.path.lexists(self.path):
            return
        real = self.path.resolve()
        if real.parent == real:
            raise self.refuse("it is the root directory")
        home = Path(os.path.expanduser("~")).resolve()
        if real == home:
            raise self.refuse("it is your home directory")
        if real in home.parents:
            raise self.refuse("it contains your home directory")
        try:
            cwd = Path.cwd().resolve()
        except OSError:          # the current directory was deleted: nothing there to protect
            cwd = Path("/nonexistent-cwd")
        if real == cwd or real in cwd.parents:
            raise self.refuse("it is the current directory or contains it")
        if not self.force:
            raise UsageError(f"{self.shown} already exists", "choose another name or pass --force to replace it")
        if self.path.is_symlink():
            raise self.refuse("it is a symbolic link; --force replaces only a gpuctl bundle")
        why = _tarball_problem(self.path) if self.tarball else _bundle_dir_problem(self.path)
        if why:
            raise self.refuse(f"not a gpuctl bundle ({why}); --force replaces only a bundle written by snapshot save")


def _meta_problem(data: bytes) -> Optional[str]:
    try:
        meta = json.loads(data)
    except ValueError:
        return "its snapshot.json is not JSON"
    if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
        return f'its snapshot.json has no "schema": "{SCHEMA}"'
    return None


def _bundle_dir_problem(d: Path) -> Optional[str]:
    """Why the directory ``d`` is not a gpuctl bundle directory (None: it is one): a
    snapshot.json with the schema at its top, and nothing but List JSON files,
    logs/, metrics/ and probes/."""
    if not d.is_dir():
        return "a file, where a directory bundle goes; a tarball needs a .tar.gz or .tgz name"
    meta = d / "snapshot.json"
    if meta.is_symlink() or not meta.is_file():
        return f"no snapshot.json with schema {SCHEMA} at its top"
    if meta.stat().st_size > _MAX_META_BYTES:
        return "its snapshot.json is too large"
    why = _meta_problem(meta.read_bytes())
    if why:
        return why
    seen = 0
    for entry in os.scandir(d):
        if entry.name == "snapshot.json":
            continue
        if entry.name in _BUNDLE_FOLDERS and entry.is_dir(follow_symlinks=False):
            depth, suffix = _BUNDLE_FOLDERS[entry.name]
            for root, dirs, files in os.walk(entry.path):
                level = len(Path(root).relative_to(entry.path).parts)
                seen += len(dirs) + len(files)
                if seen > _MAX_SCANNED_MEMBERS:
                    return "it holds too many files"
                odd = [f for f in files if level != depth - 1 or not f.endswith(suffix)]
                odd += [x for x in dirs if level >= depth - 1 or os.path.islink(os.path.join(root, x))]
                if odd:
                    return f"it holds {Path(root, odd[0]).relative_to(d).as_posix()}, which snapshot save does not write"
            continue
        if entry.is_file(follow_symlinks=False) and _BUNDLE_FILE.match(entry.name):
            continue
        return f"it holds {entry.name}, which snapshot save does not write"
    return None


def _tarball_problem(f: Path) -> Optional[str]:
    """Why the file ``f`` is not a gpuctl bundle tarball (None: it is one): it must
    hold ``snapshot.json`` or ``TOP/snapshot.json`` with the schema. Only member
    headers are read (and that one member), stopping at snapshot.json, which
    snapshot save writes first."""
    if not f.is_file():
        return "a directory, where a .tar.gz bundle goes" if f.is_dir() else "not a regular file"
    top = None
    try:
        with tarfile.open(f, mode="r|*") as tf:
            for i, m in enumerate(tf):
                if i >= _MAX_SCANNED_MEMBERS:
                    break
                parts = [x for x in m.name.split("/") if x not in ("", ".")]
                top = parts[0] if top is None and parts else top
                rel = parts[1:] if parts and parts[0] == top else None
                if rel == ["snapshot.json"] and m.isfile():
                    if m.size > _MAX_META_BYTES:
                        return "its snapshot.json is too large"
                    data = tf.extractfile(m)
                    return _meta_problem(data.read()) if data is not None else "its snapshot.json cannot be read"
                if rel is None or not _bundle_member(rel, m.isdir()):
                    return f"it holds {m.name[:200]}, which snapshot save does not write"   # stop early: not ours
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        return f"not a readable tarball: {e}"
    return "no snapshot.json member"


def _bundle_member(rel: list[str], is_dir: bool) -> bool:
    """Is TOP/``rel`` something snapshot save writes into a tarball?"""
    if not rel:
        return is_dir
    if len(rel) == 1 and not is_dir:
        return bool(_BUNDLE_FILE.match(rel[0]))
    if rel[0] not in _BUNDLE_FOLDERS or ".." in rel:
        return False
    depth, suffix = _BUNDLE_FOLDERS[rel[0]]
    inner = len(rel) - 1
    return inner < depth if is_dir else (inner == depth and rel[-1].endswith(suffix))


def check_destination(dest: str, force: bool) -> None:
    """Fail (UsageError, exit 2) before anything is collected when ``dest`` cannot
    take a bundle: its folder is missing or read-only, or something other than a
    previous gpuctl bundle is there (--force replaces only that)."""
    _target(dest, force).check()


def _target(dest: str, force: bool) -> _Target:
    if not dest or "\0" in dest:
        raise UsageError("FILE must be a path", "for example incident.tar.gz or a new directory name")
    path = Path(os.path.abspath(dest))
    return _Target(path, dest, path.name.endswith((".tar.gz", ".tgz")), force)


class Interrupted(SystemExit):
    """SIGTERM (or SIGHUP) during a save: a SystemExit, so no ``except Exception``
    on the way swallows it and every ``finally`` runs."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum
        self.signal_name = signal.Signals(signum).name


class _SignalGuard:
    """For the duration of a save, SIGINT raises KeyboardInterrupt and SIGTERM/SIGHUP
    raise Interrupted, so the ``finally`` that removes the temporary files runs;
    inside :meth:`deferred` (the final renames and the cleanup itself) a signal is
    held and raised when the block ends. The previous handlers are restored."""

    SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))

    def __init__(self) -> None:
        self.previous: dict[int, Any] = {}
        self.pending: Optional[int] = None
        self.holding = 0
        self.written = False      # the new bundle is in place: a held signal no longer undoes anything

    def __enter__(self) -> "_SignalGuard":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                prev = signal.getsignal(sig)
                if prev is signal.SIG_IGN:          # nohup, or a parent that asked us to ignore it
                    continue
                self.previous[sig] = prev
                signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, prev in self.previous.items():
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        self.previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.holding:
            self.pending = self.pending or signum
            return
        self._raise(signum)

    def _raise(self, signum: int) -> None:
        e: BaseException = KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)
        e.written = self.written  # type: ignore[attr-defined]
        raise e

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
        if not self.holding and self.pending:
            signum, self.pending = self.pending, None
            self._raise(signum)


class _Stage:
    """The bundle being built: a temporary directory beside the destination, renamed
    into place by :meth:`finish`; every temporary file or directory is removed on
    the way out, whatever ends the save (an error, Ctrl-C, SIGTERM)."""

    def __init__(self, target: _Target, guard: _SignalGuard):
        self.target, self.guard = target, guard
        self.temps: list[Path] = []
        self.work = Path()
        self.deflater: Optional[Deflater] = None

    def start(self) -> None:
        with self.guard.deferred():
            self.work = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=str(self.target.parent)))
            self.temps.append(self.work)
        # a .tar.gz: List files are compressed while they are written (collect/targz.py)
        self.deflater = Deflater(self.work / _DEFLATE) if self.target.tarball else None

    def list_writer(self, path: Path) -> _ListWriter:
        return _ListWriter(path, self.deflater)

    def cleanup(self) -> None:
        if self.deflater is not None:
            self.deflater.abort()
        with self.guard.deferred():
            for t in reversed(self.temps):
                if t.is_dir() and not t.is_symlink():
                    shutil.rmtree(t, ignore_errors=True)
                elif os.path.lexists(t):
                    with contextlib.suppress(OSError):
                        t.unlink()

    def finish(self) -> None:
        t = self.target
        t.check()     # again: the destination may have changed while the cluster was read
        if t.tarball:
            self._finish_tarball()
        else:
            self._finish_directory()

    def _finish_tarball(self) -> None:
        t = self.target
        with self.guard.deferred():
            fd, name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".tar.gz.partial", dir=str(t.parent))
            tmp = Path(name)
            self.temps.append(tmp)
            raw = os.fdopen(fd, "wb")
        top = t.path.name[: -len(".tar.gz")] if t.path.name.endswith(".tar.gz") else t.path.name[: -len(".tgz")]
        assert self.deflater is not None
        self.deflater.finish()
        members: list[tuple[str, Any]] = [(f.relative_to(self.work).as_posix(), f) for f in self.work.rglob("*")
                                          if f.is_file() and f.relative_to(self.work).parts[0] != _DEFLATE]
        members += [(seg.name, seg) for seg in self.deflater.segments if not seg.dropped]
        members.sort(key=lambda m: (m[0] != "snapshot.json", m[0]))   # snapshot.json first: --force reads only it
        with raw:
            write_targz(raw, [(f"{top or 'snapshot'}/{name}", src) for name, src in members])
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with self.guard.deferred():
            os.replace(tmp, t.path)
            self.guard.written = True

    def _finish_directory(self) -> None:
        t = self.target
        with self.guard.deferred():
            if not os.path.lexists(t.path):
                os.rename(self.work, t.path)
                self.guard.written = True
                return
            # the old bundle aside, the new one in, then the old one deleted (by cleanup);
            # if the new one cannot be moved in, the old one goes back
            holder = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX, suffix=".old", dir=str(t.parent)))
            self.temps.append(holder)
            os.rename(t.path, holder / "old")
            try:
                os.rename(self.work, t.path)
            except BaseException:
                os.rename(holder / "old", t.path)
                raise
            self.guard.written = True


@contextlib.contextmanager
def _staged(dest: str, force: bool) -> Iterator[_Stage]:
    target = _target(dest, force)
    target.check()
    with _SignalGuard() as guard:
        stage = _Stage(target, guard)
        try:
            stage.start()
            yield stage
        except OSError as e:
            where = f": {e.filename}" if getattr(e, "filename", None) else ""
            raise SourceError(f"snapshot save {dest} failed: {e.strerror or e}{where}") from None
        finally:
            stage.cleanup()


def _write_meta(work: Path, context: Optional[str], captured: dt.datetime, redact: bool, report: SaveReport) -> None:
    meta = {"schema": SCHEMA, "capturedAt": captured.strftime("%Y-%m-%dT%H:%M:%SZ"), "context": context,
            "gpuctlVersion": __version__, "redacted": redact, "counts": report.counts, "notCollected": report.gaps}
    if report.namespaces is not None:
        meta["namespaces"] = report.namespaces
    if report.data_gaps:
        meta["gaps"] = {k: _gap_json(g) for k, g in sorted(report.data_gaps.items())}
    if report.log_gaps:
        meta["logGaps"] = {k: _gap_json(g) for k, g in sorted(report.log_gaps.items())}
    (work / "snapshot.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def _gap_json(g: S.Gap) -> dict[str, Any]:
    d = {"what": g.what, "reason": g.reason, "detail": g.detail, "verb": g.verb, "resource": g.resource,
         "namespace": g.namespace, "group": g.group}
    return {k: v for k, v in d.items() if v not in (None, "")}


def _log_name_problem(ns: Any, pod: Any, container: Any) -> Optional[str]:
    """The report line for a log whose names cannot become a path (None: they can)."""
    for what, value in (("namespace", ns), ("pod", pod), ("container", container)):
        if not N.is_valid(what, value):
            return f"logs of {_show(ns)}/{_show(pod)}: invalid {what} name {_show(value)!r}"
    return None


def _write_log(work: Path, ns: str, pod: str, container: str, previous: bool, text: str, redact: bool,
               report: SaveReport) -> bool:
    why = _log_name_problem(ns, pod, container)
    path = None
    if why is None:
        try:
            path = _inside(work, "logs", ns, pod, f"{container}{'.previous' if previous else ''}.log")
        except _Outside:
            why = f"logs of {_show(ns)}/{_show(pod)}/{_show(container)}: the path would leave the bundle"
    if path is None:
        if why and why not in report.gaps:
            report.gaps.append(why)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact_log(text) if redact else text, encoding="utf-8")
    return True


def _write_node_file(work: Path, folder: str, node: Any, suffix: str, text: str, report: SaveReport) -> bool:
    """metrics/NODE.prom or probes/NODE.json, for a valid node name only."""
    if not N.is_valid("node", node):
        report.gaps.append(f"{folder} of node {_show(node)!r}: invalid node name")
        return False
    try:
        path = _inside(work, folder, f"{node}{suffix}")
    except _Outside:
        report.gaps.append(f"{folder} of node {_show(node)!r}: the path would leave the bundle")
        return False
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def save_live(api: Any, dest: str, namespace: Optional[str], redact: bool = True, force: bool = False) -> SaveReport:
    """Every COLLECT list, the logs and DCGM metrics the checks read, into a bundle
    staged next to ``dest`` and renamed into place only when complete."""
    from .live import now

    report = SaveReport(dest)
    log_candidates: list[dict[str, Any]] = []
    exporters: dict[str, bytes] = {}               # node -> DCGM exporter pod (JSON: one per node, 5,000 on a big cluster)
    metrics_nodes: list[str] = []                  # nodes whose GPU health matters
    with _staged(dest, force) as stage:            # checks the destination before any request
        work = stage.work
        captured = now()
        fallback_ns = getattr(api, "default_namespace", None) or "default"
        report.namespaces = [namespace] if namespace else None

        def keep(item: Any, kind: str, writer: _ListWriter) -> None:
            if type(item) is _Unparsed:
                # as text (collect/redaction.py); what a choice below needs is decoded alone
                done = rewrite_item(item.fields, item.kind or kind, item.api_version, redact) if TEXT_PATH else None
                if done is None:
                    item = _parsed(item, kind)      # a Secret, a ConfigMap, a List, odd escapes: parsed
                else:
                    writer.add_text(done[1])
                    if kind in ("Pod", "Node"):
                        gate = _gate(item.fields)
                        if gate is None or (kind == "Pod" and _may_want_log(gate)):
                            chosen(msgspec.json.decode(done[1]), kind)
                        elif kind == "Node" and _has_unhealthy_gpus(gate):
                            metrics_nodes.append(gate["metadata"].get("name") or "")
                    return
            if item.get("kind") in ("Secret", "SecretList", "List"):   # never a Secret, even one slipped into a list
                return
            item.setdefault("kind", kind)
            obj = strip_managed(item)
            if redact:
                redact_object(obj)
            writer.add(obj)
            chosen(obj, kind)

        def chosen(obj: dict[str, Any], kind: str) -> None:
            """The pods whose logs, and the nodes whose DCGM metrics, the bundle keeps."""
            if kind == "Pod" and _wants_log(obj):
                if len(log_candidates) < MAX_LOG_PODS:       # the logs of the first ones are saved
                    log_candidates.append(obj)
                node = (obj.get("spec") or {}).get("nodeName")
                if node and not _is_device_plugin(obj):
                    metrics_nodes.append(node)
            if kind == "Pod" and _is_dcgm_exporter(obj):
                exporters[(obj.get("spec") or {}).get("nodeName", "")] = msgspec.json.encode(obj)
            if kind == "Node" and _has_unhealthy_gpus(obj):
                metrics_nodes.append(obj.get("metadata", {}).get("name", ""))

        for entry in COLLECT:
            _save_list(api, stage, entry, namespace, fallback_ns, keep, report)
        _save_logs(api, work, log_candidates, redact, report)
        _save_metrics(api, work, list(dict.fromkeys(n for n in metrics_nodes if n in exporters))[:MAX_METRICS_NODES],
                      exporters, report)
        if not report.counts:
            raise SourceError("nothing could be collected from the cluster: " + "; ".join(report.gaps[:3]))
        _write_meta(work, api.context_name, captured, redact, report)
        stage.finish()
    return report


# Versions to try, in order, when a list's group is served at another version than
# COLLECT names (a 1.32 cluster serves DRA at v1beta1 only; Cohorts were v1alpha1
# before Kueue 0.11); the objects are saved as the server returns them.
API_VERSIONS = {"resource.k8s.io": ("v1", "v1beta2", "v1beta1"), "kueue.x-k8s.io": ("v1beta1", "v1beta2", "v1alpha1")}


def _version_templates(template: str, group: str) -> list[str]:
    versions = API_VERSIONS.get(group)
    head = f"/apis/{group}/"
    if not versions or not template.startswith(head):
        return [template]
    first = template[len(head):].split("/", 1)[0]
    return [template] + [template.replace(f"{head}{first}/", f"{head}{v}/", 1) for v in versions if v != first]


def _list_into(api: Any, template: str, scope: Optional[str], namespaced: bool, kind: str, stem: str,
               fallback_ns: str, keep: Callable[[dict[str, Any], str, "_ListWriter"], None], writer: "_ListWriter",
               report: SaveReport) -> None:
    """The list into ``writer``: cluster-wide (or ``scope``), else, when only that is
    allowed, the user's own namespace (said in the report)."""
    from .kube import ApiFailure, gap_from

    path = template.format(ns=f"/namespaces/{scope}" if scope else "")
    try:
        for item in _raw_items(api, path):
            keep(item, kind, writer)
    except ApiFailure as e:
        # A namespace-scoped role (a typical ML user): the cluster-wide list is
        # forbidden, the user's own namespace is not. Collect that, and say so.
        if not (e.reason == "forbidden" and namespaced and scope is None and writer.n == 0):
            raise
        if stem == "pods":   # the bundle's pods (where targets are looked up) are one namespace's
            report.namespaces = [fallback_ns]
            for key in CROSS_NAMESPACE:
                report.data_gaps.setdefault(key, gap_from(e, "list pods (cluster-wide)", "list", "pods"))
        try:
            for item in _raw_items(api, template.format(ns=f"/namespaces/{fallback_ns}")):
                keep(item, kind, writer)
        except ApiFailure as inner:
            inner.scope = fallback_ns     # what the gap names: the namespace list failed
            raise
        report.gaps.append(f"{stem}: forbidden cluster-wide ({e.message}); collected namespace "
                           f"{fallback_ns} only")


def _save_list(api: Any, stage: "_Stage", entry: tuple, namespace: Optional[str], fallback_ns: str,
               keep: Callable[[dict[str, Any], str, "_ListWriter"], None], report: SaveReport) -> None:
    """One COLLECT entry into STEM.json: cluster-wide, or the user's namespace when
    only that is allowed (said in the report); a failure becomes the data sets' gaps."""
    from .kube import ApiFailure, gap_from

    stem, template, kind, namespaced = entry
    group, resource = _resource_of(template)
    writer = stage.list_writer(stage.work / f"{stem}.json")
    templates = _version_templates(template, group)
    try:
        for i, template in enumerate(templates):
            scope = namespace if namespaced else None
            try:
                _list_into(api, template, scope, namespaced, kind, stem, fallback_ns, keep, writer, report)
                break
            except ApiFailure as e:
                if e.reason == "not-found" and writer.n == 0 and i + 1 < len(templates):
                    continue      # not served at this version: the API's next one (DRA v1 -> v1beta2 -> v1beta1)
                raise
    except ApiFailure as e:
        scope = getattr(e, "scope", scope)
        if e.reason != "not-found":
            report.gaps.append(f"{stem}: {e.reason} ({e.message})")
            where = f"in namespace {scope}" if scope else "cluster-wide"
            for key in FEEDS.get(stem, ()):
                report.data_gaps.setdefault(key, gap_from(e, f"list {stem} ({where})", "list", resource,
                                                          namespace=scope if scope else None, group=group))
    finally:
        writer.close()
    if namespace and stem == "pods":
        for key in CROSS_NAMESPACE:
            report.data_gaps.setdefault(key, S.Gap(
                "pods of other namespaces", "absent",
                f"the snapshot was saved with -n {namespace}: pods of other namespaces on the same nodes "
                f"(and device-plugin pods) were not collected"))
    if writer.n == 0:
        writer.discard()
    else:
        report.counts[kind if stem == kind.lower() + "s" else stem] = writer.n


def _save_logs(api: Any, work: Path, pods: list[dict[str, Any]], redact: bool, report: SaveReport) -> None:
    """The logs of the pods whose logs the checks read (current, and previous after
    a restart), bounded; names that would not be valid paths are not requested."""
    from .kube import ApiFailure, gap_from

    for obj in pods[:MAX_LOG_PODS]:
        md, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
        restarted = {cs.get("name") for cs in status.get("containerStatuses") or [] if cs.get("restartCount", 0) > 0}
        for c in spec.get("containers") or []:
            if not isinstance(c, dict):
                continue
            # names become paths: a name the API server would never accept is not requested or written
            why = _log_name_problem(md.get("namespace", ""), md.get("name", ""), c.get("name", ""))
            if why:
                report.gaps.append(why)
                continue
            for previous in (False, True):
                if previous and c.get("name") not in restarted:
                    continue
                try:
                    text = api.log_text(md.get("namespace", ""), md.get("name", ""), c.get("name", ""), previous,
                                        tail_lines=LOG_TAIL_LINES)
                except ApiFailure as e:
                    if not previous:
                        key = f"{md.get('namespace')}/{md.get('name')}/{c.get('name')}"
                        report.gaps.append(f"logs {key}: {e.reason}")
                        if e.reason != "not-found":
                            report.log_gaps[key] = gap_from(e, f"read log of {md.get('name')}/{c.get('name')}",
                                                            "get", "pods/log", namespace=md.get("namespace"))
                    continue
                if _write_log(work, md.get("namespace", ""), md.get("name", ""), c.get("name", ""), previous, text,
                              redact, report):
                    report.logs += 1


class _PageMeta(msgspec.Struct):
    continue_: Any = msgspec.field(name="continue", default=None)


class _Page(msgspec.Struct):
    """A List page whose items stay JSON text, split at their top-level fields."""
    kind: str = ""
    apiVersion: Optional[str] = None
    metadata: _PageMeta = msgspec.field(default_factory=_PageMeta)
    items: Optional[list[dict[str, msgspec.Raw]]] = None


_page_dec = msgspec.json.Decoder(_Page)


class _Unparsed(msgspec.Struct):
    """One item of a page, unparsed, and what its page says of it."""
    fields: dict[str, msgspec.Raw]
    kind: str                    # the page's item kind ("" for a plain List)
    api_version: Optional[str]


class _NameOnly(msgspec.Struct):
    name: Any = None
    namespace: Any = None


_name_dec = msgspec.json.Decoder(_NameOnly)


def _item_key(item: Any) -> int:
    """kube.dict_key for both shapes _raw_items yields."""
    from .kube import dict_key

    if type(item) is not _Unparsed:
        return dict_key(item)
    md = item.fields.get("metadata")
    try:
        m = _name_dec.decode(md) if md is not None else None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        m = None
    return hash((m.namespace, m.name)) if m is not None else id(item)


def _raw_items(api: Any, path: str) -> Iterator[Any]:
    """Every item of a paged list, page by page (bounded like every list: a list
    that never ends fails the read, see kube.KubeAPI.pages): unparsed (_Unparsed),
    or, from a page with an item that is not an object, as plain dicts."""
    from .kube import MAX_STREAMED_ITEMS, ApiFailure

    def decode(data: bytes) -> tuple[list[Any], str]:
        try:
            fast = O.decode_lenient(_page_dec, data)
        except msgspec.ValidationError:
            fast = None
        except msgspec.DecodeError as e:
            raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
        if fast is not None:
            item_kind = fast.kind[:-4] if fast.kind.endswith("List") and fast.kind != "List" else ""
            token = fast.metadata.continue_
            return ([_Unparsed(f, item_kind, fast.apiVersion or None) for f in fast.items or []],
                    token if isinstance(token, str) else "")
        try:
            page = O.decode_lenient(msgspec.json, data)
        except msgspec.DecodeError as e:
            raise ApiFailure(200, "error", f"invalid JSON from {path}: {e}") from None
        if not isinstance(page, dict):
            raise ApiFailure(200, "error", f"invalid list from {path}: not a JSON object")
        list_kind = str(page.get("kind", ""))
        api_version = page.get("apiVersion")
        items = []
        for item in page.get("items") or []:
            if isinstance(item, dict):
                if list_kind.endswith("List") and list_kind != "List":
                    item.setdefault("kind", list_kind[:-4])
                if api_version:
                    item.setdefault("apiVersion", api_version)
                items.append(item)
        meta = page.get("metadata")
        token = meta.get("continue") if isinstance(meta, dict) else None
        return items, token if isinstance(token, str) else ""

    for items in api.pages(path, None, decode, max_items=MAX_STREAMED_ITEMS, key=_item_key):
        yield from items


def _parsed(item: "_Unparsed", kind: str) -> dict[str, Any]:
    """An unparsed item as the plain dict the page's full decode would have given."""
    d = O.decode_lenient(msgspec.json, msgspec.json.encode(item.fields))
    if item.kind:
        d.setdefault("kind", item.kind)
    if item.api_version:
        d.setdefault("apiVersion", item.api_version)
    return d


class _GateMeta(msgspec.Struct):
    name: Any = None
    namespace: Any = None
    labels: Any = None


class _GateStatus(msgspec.Struct):
    phase: Any = None
    reason: Any = None
    containerStatuses: Any = None
    capacity: Any = None
    allocatable: Any = None


_gate_meta_dec = msgspec.json.Decoder(_GateMeta)
_gate_status_dec = msgspec.json.Decoder(_GateStatus)


def _gate(fields: dict[str, msgspec.Raw]) -> Optional[dict[str, Any]]:
    """What save_live's choices read of a Pod or Node (which pods' logs and which
    nodes' DCGM metrics to save: _wants_log, _is_dcgm_exporter, _has_unhealthy_gpus),
    decoded alone from its metadata and status, as a dict those tests take; None when
    they do not decode as expected (then the whole object is parsed). Redaction never
    changes what they read (labels, names, phase, container states, quantities)."""
    md, status = fields.get("metadata"), fields.get("status")
    try:
        m = _gate_meta_dec.decode(md) if md is not None else _GateMeta()
        st = _gate_status_dec.decode(status) if status is not None else _GateStatus()
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return {"metadata": {"name": m.name, "namespace": m.namespace, "labels": m.labels},
            "status": {"phase": st.phase, "reason": st.reason, "containerStatuses": st.containerStatuses,
                       "capacity": st.capacity, "allocatable": st.allocatable}}


def _may_want_log(gate: dict[str, Any]) -> bool:
    """A superset of _wants_log and _is_dcgm_exporter, from the gate alone: only these
    pods are parsed in full, and the exact tests decide on them."""
    status = gate["status"]
    if _is_device_plugin(gate) or _is_dcgm_exporter(gate) or status.get("phase") == "Failed":
        return True
    statuses = status.get("containerStatuses")
    if statuses is None:
        return False
    if not isinstance(statuses, list):
        return True
    for cs in statuses:
        if not isinstance(cs, dict) or cs.get("restartCount", 0) != 0 or "state" in cs and cs["state"] \
                and (not isinstance(cs["state"], dict) or cs["state"].get("waiting")):
            return True
    return False


def _is_dcgm_exporter(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get("app") == "nvidia-dcgm-exporter" or labels.get("app.kubernetes.io/name") == "dcgm-exporter"


def _is_device_plugin(pod: dict[str, Any]) -> bool:
    from ..knowledge.catalog import labels_mark_device_plugin

    md = pod.get("metadata") or {}
    return labels_mark_device_plugin(md.get("labels") or {}, md.get("namespace"))


def _has_unhealthy_gpus(node: dict[str, Any]) -> bool:
    from ..knowledge import catalog
    from ..model.quantity import parse_quantity

    status = node.get("status") or {}
    cap, alloc = status.get("capacity") or {}, status.get("allocatable") or {}
    try:
        return any(catalog.is_gpu_resource(r) and parse_quantity(v) > parse_quantity(alloc.get(r, 0)) for r, v in cap.items())
    except ValueError:
        return False


def _save_metrics(api: Any, work: Path, nodes: list[str], exporters: dict[str, bytes], report: SaveReport) -> None:
    """metrics/<node>.prom from each node's DCGM exporter, through the pod proxy."""
    from .kube import ApiFailure, gap_from
    from .metrics import MetricsUnavailable, dcgm_via_proxy

    for node in nodes:
        if not N.is_valid("node", node):    # it would become metrics/NODE.prom
            report.gaps.append(f"metrics of node {_show(node)!r}: invalid node name")
            continue
        pod = O.convert("Pod", msgspec.json.decode(exporters[node]))
        try:
            text = dcgm_via_proxy(api, node, [pod], timeout=api.timeout)
        except ApiFailure as e:
            report.gaps.append(f"metrics {node}: {e.reason}")
            report.data_gaps.setdefault(S.METRICS, gap_from(e, f"read DCGM metrics of {node} through the pod proxy",
                                                            "get", "pods/proxy", namespace=pod.metadata.namespace))
            continue
        except MetricsUnavailable as e:
            report.gaps.append(f"metrics {node}: {e.reason}")
            report.data_gaps.setdefault(S.METRICS, S.Gap(f"read DCGM metrics of {node}", e.reason, e.detail))
            continue
        if _write_node_file(work, "metrics", node, ".prom", text, report):
            report.counts["metrics"] = report.counts.get("metrics", 0) + 1


def _wants_log(pod: dict[str, Any]) -> bool:
    if _is_device_plugin(pod):
        return True
    status = pod.get("status") or {}
    if status.get("phase") == "Failed" and status.get("reason") in ("UnexpectedAdmissionError", "TopologyAffinityError"):
        return True
    for cs in status.get("containerStatuses") or []:
        if cs.get("restartCount", 0) > 0 or (cs.get("state") or {}).get("waiting"):
            return _gpu_workload(pod)
    return False


def _gpu_workload(pod: dict[str, Any]) -> bool:
    """Requests GPUs, or is a CUDA workload that may be running without them (a
    CUDA image, NVIDIA_*/CUDA_* env, a GPU toleration): its crash log is where
    "No CUDA GPUs are available" shows a GPU that was never requested."""
    from ..knowledge.cuda import required_cuda

    spec = pod.get("spec") or {}
    if any("gpu" in str(t.get("key", "")) for t in spec.get("tolerations") or [] if isinstance(t, dict)):
        return True
    for c in spec.get("containers") or []:
        if not isinstance(c, dict):
            continue
        limits = (c.get("resources") or {}).get("limits") or {}
        if any("gpu" in k or k.startswith("nvidia.com/") for k in limits):
            return True
        env = {e.get("name"): e.get("value") for e in c.get("env") or [] if isinstance(e, dict)}
        if any(str(k).startswith(("NVIDIA_", "CUDA_")) for k in env) or required_cuda(env, c.get("image")) is not None:
            return True
    return False


def _flatten(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The objects of a ``List`` (or ``FooList``) item inside a dump, at any depth, so
    that no Secret hides inside a nested List; items without a kind are dropped."""
    stack: list[dict[str, Any]] = [obj]
    while stack:
        o = stack.pop()
        kind, items = o.get("kind"), o.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            item_kind = kind[:-4] if kind != "List" else ""
            for it in reversed(items):
                if isinstance(it, dict):
                    if item_kind:
                        it.setdefault("kind", item_kind)
                    stack.append(it)
            continue
        if isinstance(kind, str) and kind:
            yield o


def _kind_stem(kind: str) -> str:
    """A kind as a file stem: letters and digits only (``Pod`` -> ``pods``)."""
    return (re.sub(r"[^A-Za-z0-9]", "", kind)[:100] or "object").lower() + "s"


def _newest(kind: str, obj: dict[str, Any], newest: Optional[dt.datetime]) -> Optional[dt.datetime]:
    """The newest of ``newest`` and the timestamps Snapshot.now reads in one Node, Pod
    or Event (as a dict): a re-bundle's capturedAt without reading the records."""
    def get(d: Any, *keys: str) -> Any:
        for k in keys:
            d = d.get(k) if isinstance(d, dict) else None
        return d

    def items(d: Any, *keys: str) -> list[Any]:
        v = get(d, *keys)
        return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []

    texts: list[Any] = []
    if kind in ("Node", "Pod"):
        texts.append(get(obj, "metadata", "creationTimestamp"))
        for c in items(obj, "status", "conditions"):
            texts.append(c.get("lastTransitionTime"))
            if kind == "Node":
                texts.append(c.get("lastHeartbeatTime"))
        if kind == "Pod":
            for cs in items(obj, "status", "containerStatuses"):
                for st in (cs.get("state"), cs.get("lastState")):
                    texts.append(get(st, "running", "startedAt"))
                    texts.append(get(st, "terminated", "finishedAt"))
    elif kind == "Event":
        texts.append(get(obj, "series", "lastObservedTime") or obj.get("lastTimestamp") or obj.get("eventTime")
                     or obj.get("firstTimestamp"))
    for text in texts:
        t = S.parse_time(text) if isinstance(text, str) else None
        if t is not None and (newest is None or t > newest):
            newest = t
    return newest


class _MetaTimes(msgspec.Struct):
    creationTimestamp: Any = None


class _StatusTimes(msgspec.Struct):
    conditions: Any = None
    containerStatuses: Any = None


class _Times(msgspec.Struct):
    """What _newest reads of a Node, Pod or Event, decoded alone."""
    metadata: _MetaTimes = msgspec.field(default_factory=_MetaTimes)
    status: _StatusTimes = msgspec.field(default_factory=_StatusTimes)
    series: Any = None
    lastTimestamp: Any = None
    eventTime: Any = None
    firstTimestamp: Any = None


_times_dec = msgspec.json.Decoder(_Times)


def _times_of(raw: Any) -> dict[str, Any]:
    """The fields of one object's JSON text that _newest reads, as a dict."""
    try:
        return msgspec.to_builtins(O.decode_lenient(_times_dec, raw))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        d = O.decode_lenient(msgspec.json, raw)
        return d if isinstance(d, dict) else {}


def save_offline(source: str, dest: str, redact: bool = True, force: bool = False) -> SaveReport:
    """Re-bundle (and redact) an existing snapshot or kubectl dump, object by object:
    the source is checked as --snapshot checks it (without keeping its records), then
    streamed file by file, batch by batch, into the new bundle."""
    from .files import Need, RawFields, iter_source_items, load_snapshot, raw_logs

    report = SaveReport(dest)
    with _staged(dest, force) as stage:          # checks the destination before the source is read
        work = stage.work
        # validates it as --snapshot would (nothing kept), and gives capturedAt, context, gaps
        snap = load_snapshot(source, Need(kinds=frozenset(), by_name=False))
        newest: Optional[dt.datetime] = None
        writers: dict[str, _ListWriter] = {}
        def writer(kind: str) -> _ListWriter:
            stem = _kind_stem(kind)
            w = writers.get(stem)
            if w is None:
                w = writers[stem] = stage.list_writer(_inside(work, f"{stem}.json"))
            label = kind if re.fullmatch(r"[A-Za-z0-9]{1,100}", kind) else stem[:-1]
            report.counts[label] = report.counts.get(label, 0) + 1
            return w

        try:
            for kind, top in iter_source_items(source):
                if type(top) is RawFields or not isinstance(top, dict):
                    # JSON text: rewritten as text (most objects), else parsed below
                    done = rewrite_item(top, kind, redact=redact) if TEXT_PATH else None
                    if done is not None:
                        kind, text = done
                        if snap.captured_at is None and kind in ("Node", "Pod", "Event"):
                            newest = _newest(kind, _times_of(text), newest)
                        writer(kind).add_text(text)
                        continue
                    raw = msgspec.json.encode(top) if type(top) is RawFields else top
                    try:
                        top = O.decode_lenient(msgspec.json, raw)
                    except (msgspec.DecodeError, RecursionError):
                        continue
                    if not isinstance(top, dict):
                        continue
                    top.setdefault("kind", kind)
                if snap.captured_at is None and top.get("kind") in ("Node", "Pod", "Event"):
                    newest = _newest(top["kind"], top, newest)
                for obj in _flatten(top):
                    kind = str(obj["kind"])
                    if kind.lower() == "secret":
                        continue
                    strip_managed(obj)
                    writer(kind).add(redact_object(obj) if redact else obj)
        finally:
            for w in writers.values():
                w.close()
        for (ns, pod, container, previous), text in raw_logs(source).items():
            if _write_log(work, ns, pod, container, previous, text, redact, report):
                report.logs += 1
        for folder, items in (("metrics", snap.metrics), ("probes", snap.probes)):
            for node, content in items.items():
                suffix = ".prom" if folder == "metrics" else ".json"
                text = content if isinstance(content, str) else json.dumps(content, indent=2)
                _write_node_file(work, folder, node, suffix, text, report)
        # what the source bundle could not collect stays recorded (the synthesised
        # "no Node objects" gap is re-derived on load, so it is not copied)
        report.data_gaps = {k: g for k, g in snap.gaps.items() if g.reason != "absent" or k != S.NODES}
        report.log_gaps = dict(snap.log_gaps)
        report.namespaces = snap.namespaces
        captured = snap.captured_at or newest or dt.datetime.now(dt.timezone.utc)
        _write_meta(work, snap.context, captured, redact, report)
        stage.finish()
    return report


def describe(report: SaveReport) -> Iterable[str]:
    yield f"wrote {report.path}: " + ", ".join(f"{n} {k}" for k, n in sorted(report.counts.items())) + f", {report.logs} logs"
    for g in report.gaps:
        yield f"not collected: {g}"
