"""Reading a snapshot from disk: a file, a directory, or a ``.tar.gz`` of a directory.

Formats (docs/snapshots.md): a file holds JSON or YAML —
one object, a typed list, a ``v1 List`` of mixed kinds, or YAML documents — exactly
what ``kubectl get … -o json|yaml`` prints. A directory holds such files at its top
level plus optional ``logs/``, ``metrics/``, ``probes/`` and ``snapshot.json``.

JSON Lists are streamed: cut into batches of whole items, each decoded by msgspec in
one call straight into the slim records a command needs (see "streaming" below); a
batch that does not decode cleanly is read item by item, so one malformed object is
reported by name instead of failing the file. Tarballs are read member by member in
one pass, never extracted; unsafe members are refused.
"""

from __future__ import annotations

import gc
import io
import json
import os
import re
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

import msgspec

from ..errors import SourceError
from ..model import objects as O
from ..model.snapshot import NODES, Gap, LogStore, Snapshot, parse_time
from . import forked

OBJECT_SUFFIXES = (".json", ".yaml", ".yml")
META_FILE = "snapshot.json"
MAX_BUNDLE_BYTES = 8 * 2**30          # refuse bundles that expand beyond this
MAX_MEMBER_BYTES = 4 * 2**30          # one file (in a directory, a tarball, or given alone)
MAX_MEMBERS = 100_000                 # files in a tarball or directory (a million empty files is a bomb too)
MAX_YAML_EXPANDED_NODES = 5_000_000   # YAML nodes after aliases are expanded (a "billion laughs" file)


class _Peek(msgspec.Struct):
    kind: str = ""
    apiVersion: str = ""


class _RawList(msgspec.Struct):
    kind: str = ""
    apiVersion: str = ""
    items: Optional[list[msgspec.Raw]] = None


_peek_dec = msgspec.json.Decoder(_Peek)
_list_dec = msgspec.json.Decoder(_RawList)


class SnapshotFiles:
    """A snapshot's files, from a directory, a tarball or a single file."""

    def __init__(self, path: Path, names: list[str], read: Callable[[str], bytes], single: bool = False,
                 opener: Optional[Callable[[str], Any]] = None):
        self.path = path
        self.names = names
        self.read = read
        self.single = single
        self.opener = opener      # a file's stream (directories and single files; None: read() only)

    single: bool = False      # one file given alone: an object file whatever its name

    @property
    def shown(self) -> str:
        """The snapshot as the user named it (a single file, not its folder)."""
        return str(self.path / self.names[0]) if self.single else str(self.path)

    def read_name(self, name: str) -> str:
        """How a read error names the file (a single file: its path, as given)."""
        return str(self.path / name) if self.single else name

    def top_level_object_files(self) -> list[str]:
        if self.single:
            return list(self.names)
        return sorted(n for n in self.names if "/" not in n and n.lower().endswith(OBJECT_SUFFIXES) and n != META_FILE)


def _open_regular(path: Path, shown: str) -> Any:
    """A regular file opened for reading; SourceError (one line naming it) when it is
    not a regular file, is over MAX_MEMBER_BYTES, or cannot be opened."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"snapshot file {shown}: not a regular file")
        if st.st_size > MAX_MEMBER_BYTES:
            raise SourceError(f"snapshot file {shown}: {st.st_size} bytes, over the {MAX_MEMBER_BYTES} limit; refusing")
        return open(path, "rb")
    except OSError as e:
        raise SourceError(f"snapshot file {shown} could not be read: {e.strerror or e}") from None


def _read_regular(path: Path, shown: str) -> bytes:
    """A regular file's bytes, refused (one line naming it) when it is not a regular
    file, is over MAX_MEMBER_BYTES, or cannot be read (see _open_regular)."""
    with _open_regular(path, shown) as f:
        try:
            data = f.read(MAX_MEMBER_BYTES + 1)
        except OSError as e:
            raise SourceError(f"snapshot file {shown} could not be read: {e.strerror or e}") from None
    if len(data) > MAX_MEMBER_BYTES:
        raise SourceError(f"snapshot file {shown}: over the {MAX_MEMBER_BYTES} byte limit; refusing")
    return data


DEMO_NAME = "demo"


def bundled_demo() -> Optional[Path]:
    """The demo cluster snapshot shipped with gpuctl: inside the installed package
    (the wheel carries examples/demo-cluster as gpuctl/demo), else the source
    checkout's examples/demo-cluster."""
    here = Path(__file__).resolve().parents[1]
    for candidate in (here / "demo", here.parent / "examples" / "demo-cluster"):
        if (candidate / "cluster.json").is_file():
            return candidate
    return None


def resolve_snapshot(path: str | os.PathLike) -> Path:
    """``--snapshot demo`` is the bundled demo, unless a file or directory named
    ``demo`` exists where the user runs gpuctl: a real path always wins."""
    p = Path(path)
    if str(path) == DEMO_NAME and not p.exists():
        demo = bundled_demo()
        if demo is not None:
            return demo
    return p


def open_snapshot(path: str | os.PathLike) -> SnapshotFiles:
    p = resolve_snapshot(path)
    if not p.exists():
        raise SourceError(f"snapshot {p}: no such file or directory", "check the path given to --snapshot")
    if p.is_dir():
        names = []
        for root, dirs, files in os.walk(p):
            for f in files:
                full = Path(root) / f
                try:
                    mode = os.lstat(full).st_mode
                except OSError:
                    continue
                if not stat.S_ISREG(mode):     # links, FIFOs, sockets, devices: never opened
                    continue
                names.append(full.relative_to(p).as_posix())
                if len(names) > MAX_MEMBERS:
                    raise SourceError(f"snapshot {p}: more than {MAX_MEMBERS} files; refusing")

        def read_dir(name: str) -> bytes:
            return _read_regular(p / name, name)

        return SnapshotFiles(p, names, read_dir, opener=lambda name: _open_regular(p / name, name))
    try:
        mode = os.stat(p).st_mode
    except OSError as e:
        raise SourceError(f"snapshot {p} could not be read: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        raise SourceError(f"snapshot {p}: not a regular file, directory or .tar.gz bundle")
    if p.name.lower().endswith((".tar.gz", ".tgz", ".tar")):
        return _open_tarball(p)
    return SnapshotFiles(p.parent, [p.name], lambda name: _read_regular(p, str(p)), single=True,
                         opener=lambda name: _open_regular(p, str(p)))


def _member_name(name: str) -> str:
    """A tar member's name without the ``./`` that ``tar -C dir .`` puts in front."""
    while name.startswith("./"):
        name = name[2:]
    return "" if name == "." else name.rstrip("/")


def safe_members(tf: "tarfile.TarFile", p: Path) -> Iterator[tuple["tarfile.TarInfo", str, tuple[str, ...]]]:
    """The regular-file members of a bundle, in order, as (member, name, path parts),
    after the safety limits: member count, no links or devices, no absolute or ``..``
    paths, member and total sizes. Anything over them is a SourceError naming it."""
    count = total = 0
    while True:
        try:
            m = tf.next()
        except (tarfile.TarError, OSError, EOFError) as e:
            raise SourceError(f"snapshot {p}: not a readable tar.gz bundle ({e})") from None
        if m is None:
            return
        count += 1
        if count > MAX_MEMBERS:
            raise SourceError(f"snapshot {p}: more than {MAX_MEMBERS} members; refusing")
        name = _member_name(m.name)
        if not name:
            continue
        if m.issym() or m.islnk() or m.isdev():
            raise SourceError(f"snapshot {p}: refusing link or device member {name!r}")
        parts = Path(name).parts
        if name.startswith("/") or ".." in parts:
            raise SourceError(f"snapshot {p}: refusing member with unsafe path {name!r}")
        if not m.isfile():
            continue
        if m.size > MAX_MEMBER_BYTES:
            raise SourceError(f"snapshot {p}: member {name!r} is {m.size} bytes, over the {MAX_MEMBER_BYTES} limit; "
                              f"refusing")
        total += m.size
        if total > MAX_BUNDLE_BYTES:
            raise SourceError(f"snapshot {p}: expands to over {MAX_BUNDLE_BYTES} bytes; refusing")
        yield m, name, parts


def _open_tarball(p: Path) -> SnapshotFiles:
    # Members are checked one header at a time as the stream is read (never
    # getmembers(), which decompresses the whole stream first): a small .tgz holding
    # a huge member is refused at that member's header, before its data is inflated.
    by_name: dict[str, tarfile.TarInfo] = {}
    prefix = None
    try:
        tf = tarfile.open(p, "r:*")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SourceError(f"snapshot {p}: not a readable tar.gz bundle ({e})") from None
    for m, name, _ in safe_members(tf, p):
        by_name[name] = m
    # A bundle usually holds one top directory (gpuctl-snapshot-…/); strip it.
    tops = {Path(n).parts[0] for n in by_name if len(Path(n).parts) > 1}
    if len(tops) == 1 and not any(len(Path(n).parts) == 1 for n in by_name):
        prefix = tops.pop() + "/"
    names = {}
    for n, m in by_name.items():
        names[n[len(prefix):] if prefix and n.startswith(prefix) else n] = m

    def read_tar(name: str) -> bytes:
        try:
            f = tf.extractfile(names[name])
            if f is None:
                raise SourceError(f"snapshot {p}: cannot read member {name!r}")
            limit = names[name].size
            data = f.read(limit + 1)
        except (tarfile.TarError, OSError, EOFError) as e:
            raise SourceError(f"snapshot {p}: member {name!r} could not be read ({e})") from None
        if len(data) > limit:
            raise SourceError(f"snapshot {p}: member {name!r} is larger than declared")
        return data

    return SnapshotFiles(p, list(names), read_tar)


# ------------------------------------------------------------------ decoding


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]')


def _split_list(data: bytes) -> Optional[tuple[str, list[bytes]]]:
    """(list kind, item texts) of a top-level ``{"kind": …, "items": [...]}`` found by
    scanning brackets and strings only: the fallback for a list with an object nested
    deeper than the parser's recursion limit, so that object alone is refused."""
    depth, key, prev, kind = 0, b"", b"", ""
    start, items, in_items = 0, [], False
    for m in _TOKENS.finditer(data):
        t = m.group()
        if t in (b"{", b"["):
            if depth == 1 and t == b"[" and prev == b":" and key == b'"items"':
                in_items, start = True, m.end()
            depth += 1
        elif t in (b"}", b"]"):
            depth -= 1
            if in_items and depth == 1:
                seg = data[start:m.start()].strip()
                if seg:
                    items.append(seg)
                in_items = False
        elif t == b",":
            if in_items and depth == 2:
                items.append(data[start:m.start()].strip())
                start = m.end()
        elif t != b":" and depth == 1:
            if prev == b":" and key == b'"kind"':
                kind = t[1:-1].decode("utf-8", "replace")
            elif prev != b":":
                key = t
        prev = t
    return (kind, items) if items else None


def _iter_json_items(data: bytes, fname: str) -> Iterator[tuple[str, Any]]:
    """Yield (kind, raw bytes) for each object in a JSON document."""
    try:
        top = O.decode_lenient(_list_dec, data)
    except msgspec.ValidationError:
        top = None
    except msgspec.DecodeError as e:
        raise SourceError(f"snapshot file {fname}: not valid JSON ({e})") from None
    except RecursionError:
        split = _split_list(data)
        if split is None:
            raise SourceError(f"snapshot file {fname}: nested deeper than the JSON parser's limit; refusing") from None
        top = _RawList(kind=split[0], items=[msgspec.Raw(b) for b in split[1]])
    if top is not None and top.items is not None:
        list_kind = top.kind[:-4] if top.kind.endswith("List") and top.kind != "List" else ""
        for raw in top.items:
            try:
                peek = O.decode_lenient(_peek_dec, raw)
            except (msgspec.ValidationError, msgspec.DecodeError):
                yield "", raw
                continue
            except RecursionError:      # refused in decode_into, by the name a scan finds
                yield _guess(rb'"kind"\s*:\s*"([A-Za-z0-9]+)"', raw) or list_kind or "object", raw
                continue
            yield peek.kind or list_kind, raw
        return
    try:
        peek = O.decode_lenient(_peek_dec, data)
    except msgspec.ValidationError:
        raise SourceError(f"snapshot file {fname}: JSON but not a Kubernetes object or list") from None
    except msgspec.DecodeError as e:   # the list decoder stopped at a wrong type before reaching the bad byte
        raise SourceError(f"snapshot file {fname}: not valid JSON ({e})") from None
    yield peek.kind, data


def _iter_yaml_items(data: bytes, fname: str) -> Iterator[tuple[str, Any]]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if b"&" in data:      # anchors: count what their aliases expand to before building anything
            _refuse_alias_bomb(yaml.compose_all(data, Loader=loader), fname)
        docs = list(yaml.load_all(data, Loader=loader))
    except yaml.YAMLError as e:
        raise SourceError(f"snapshot file {fname}: not valid YAML ({str(e).splitlines()[0]})") from None
    except RecursionError:
        raise SourceError(f"snapshot file {fname}: nested deeper than the YAML parser's limit; refusing") from None
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise SourceError(f"snapshot file {fname}: YAML but not a Kubernetes object or list")
        items = doc.get("items")
        if isinstance(items, list):
            list_kind = doc.get("kind", "")
            list_kind = list_kind[:-4] if isinstance(list_kind, str) and list_kind.endswith("List") and list_kind != "List" else ""
            for item in items:
                kind = item.get("kind") if isinstance(item, dict) else None
                yield (kind if isinstance(kind, str) else "") or list_kind, item
        else:
            kind = doc.get("kind")
            yield kind if isinstance(kind, str) else "", doc


def _guess(pattern: bytes, raw: Any) -> str:
    """The first match of ``pattern`` in an object's text (for naming an object that
    cannot be parsed)."""
    m = re.search(pattern, bytes(raw)[:65536]) if isinstance(raw, (bytes, msgspec.Raw)) else None
    return m.group(1).decode("utf-8", "replace") if m else ""


def _refuse_alias_bomb(docs: Iterator[Any], fname: str) -> None:
    """Refuse a YAML file whose aliases expand to more than MAX_YAML_EXPANDED_NODES
    nodes ("billion laughs", model/yaml_aliases.py)."""
    from ..model.yaml_aliases import expands_beyond

    if expands_beyond(docs, MAX_YAML_EXPANDED_NODES):
        raise SourceError(f"snapshot file {fname}: its YAML aliases expand to more than "
                          f"{MAX_YAML_EXPANDED_NODES:,} nodes (an alias bomb); refusing")


def decode_into(snap: Snapshot, items: Iterator[tuple[str, Any]], fname: str) -> int:
    """Decode items into typed records; unknown kinds are ignored; returns objects seen."""
    seen = 0
    for kind, raw in items:
        if not kind:
            continue
        seen += 1
        if kind not in O.KNOWN_KINDS:
            continue
        # Kept with the bad fields emptied where it can be, each named (docs/output.md).
        rec, problems = _salvage(kind, kind, raw, fname)
        snap.malformed.extend(problems)
        if rec is None:
            continue
        if kind == "GenericObject" or isinstance(rec, O.GenericObject):
            rec.kind = rec.kind or kind
        snap.add(kind, rec)
    return seen


def _is_empty_list(data: bytes) -> bool:
    """`kubectl get X -A -o json` on a cluster with none of X prints an empty List:
    well-formed, so it does not make a directory snapshot unreadable."""
    try:
        top = O.decode_lenient(_list_dec, data)
        return top.items == [] and top.kind.endswith("List")
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False


_GAP_FIELDS = ("what", "reason", "detail", "verb", "resource", "namespace", "group")


def _gap_of(d: Any) -> Optional[Gap]:
    """A Gap from snapshot.json (written by ``snapshot save``); None if malformed."""
    if not isinstance(d, dict) or not isinstance(d.get("what"), str) or not isinstance(d.get("reason"), str):
        return None
    if any(d.get(k) is not None and not isinstance(d.get(k), str) for k in _GAP_FIELDS):
        return None
    return Gap(d["what"], d["reason"], d.get("detail") or "", verb=d.get("verb"), resource=d.get("resource"),
               namespace=d.get("namespace"), group=d.get("group") or "")


def _restore_gaps(snap: Snapshot, meta: Any) -> None:
    """What ``snapshot save`` could not collect becomes the gap a live run would have
    had (checks skipped with the reason), not an absence read as "none"."""
    if not isinstance(meta, dict):
        return
    scoped = meta.get("namespaces")
    if isinstance(scoped, list) and all(isinstance(n, str) for n in scoped):
        snap.namespaces = list(scoped)
    for field_name, target in (("gaps", snap.gaps), ("logGaps", snap.log_gaps)):
        entries = meta.get(field_name)
        if not isinstance(entries, dict):
            continue
        for key, d in entries.items():
            gap = _gap_of(d)
            if isinstance(key, str) and gap is not None:
                target[key] = gap
            else:
                snap.malformed.append(f"{META_FILE}: {field_name} entry {str(key)[:80]!r} is not a gap record")


def raw_logs(path: str | os.PathLike) -> dict[tuple[str, str, str, bool], str]:
    files = open_snapshot(path)
    out = {}
    for name in files.names:
        parts = name.split("/")
        if len(parts) == 4 and parts[0] == "logs" and parts[3].endswith(".log"):
            container = parts[3][:-4]
            previous = container.endswith(".previous")
            if previous:
                container = container[: -len(".previous")]
            out[(parts[1], parts[2], container, previous)] = files.read(name).decode("utf-8", errors="replace")
    return out


def raw_metrics(path: str | os.PathLike) -> dict[str, str]:
    """``metrics/<node>.prom`` of a snapshot as node -> Prometheus text (for the local API server)."""
    files = open_snapshot(path)
    out = {}
    for name in files.names:
        parts = name.split("/")
        if len(parts) == 2 and parts[0] == "metrics" and parts[1].endswith(".prom") and len(parts[1]) > 5:
            out[parts[1][:-5]] = files.read(name).decode("utf-8", errors="replace")
    return out


# ------------------------------------------------------------------ streaming (issue 18)
#
# A large List file is never held whole: it is read in chunks, the top-level
# ``items`` array is cut into batches of whole items, and each batch is decoded by
# msgspec in one call straight into the records a command needs (a tagged union on
# ``kind``: records of kinds it does not need are skipped unparsed). Where a cut
# cannot be proven, or a batch does not decode cleanly, the exact per-item path of
# before takes over for that batch; anything odd about the file itself (not a
# List, truncated, nested too deep, kind-less items before the list's kind) makes
# the file go through the whole-file reader of before, so errors and salvaging are
# exactly what they were. See docs/snapshots.md ("Reading large snapshots").

STREAM_CHUNK = 4 << 20            # bytes read at a time
STREAM_BATCH = 4 << 20            # bytes of items decoded per msgspec call
MAX_HEAD_BYTES = 64 << 20         # where "items" must begin (else: the whole-file reader)

# File names `snapshot save` writes, and the kind each holds.
STEM_KINDS = {
    "nodes": "Node", "pods": "Pod", "events": "Event", "namespaces": "Namespace", "resourcequotas": "ResourceQuota",
    "limitranges": "LimitRange", "configmaps": "ConfigMap", "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume", "priorityclasses": "PriorityClass", "runtimeclasses": "RuntimeClass",
    "storageclasses": "StorageClass", "daemonsets": "DaemonSet", "deployments": "Deployment",
    "replicasets": "ReplicaSet", "statefulsets": "StatefulSet", "jobs": "Job", "resourceclaims": "ResourceClaim",
    "resourceclaimtemplates": "ResourceClaimTemplate", "deviceclasses": "DeviceClass",
    "resourceslices": "ResourceSlice", "kueue-workloads": "Workload", "kueue-localqueues": "LocalQueue",
    "kueue-clusterqueues": "ClusterQueue", "kueue-resourceflavors": "ResourceFlavor", "volcano-podgroups": "PodGroup",
    "volcano-queues": "Queue", "volcano-jobs": "Job", "pytorchjobs": "PyTorchJob", "mpijobs": "MPIJob",
    "jobsets": "JobSet", "karpenter-nodeclaims": "NodeClaim", "karpenter-nodepools": "NodePool",
    "kai-queues": "Queue", "kai-podgroups": "PodGroup",
}


@dataclass(frozen=True)
class Need:
    """What a command reads from a snapshot (``None`` everywhere: everything, in full,
    as before). ``kinds``: the kinds decoded (the others are skipped unparsed, and a
    file named after a kind it does not need, ``pods.json``, is not read at all).
    ``slim_pods``: pods are decoded as ``BoundPod`` records (what the live path lists
    in bulk) except those ``full_pod`` picks, which are read in full (``Pod``)."""

    kinds: Optional[frozenset] = None
    slim_pods: bool = False
    full_pod: Optional[Callable[[Any], bool]] = None
    key: tuple = ()
    by_name: bool = True      # a file named after a kind not needed is left unread
    lite: bool = False        # slim pods without labels (BoundPodLite): read again with them if a full pod needs them
    # only the pods ``full_pod`` picks are kept: the others are decoded as a name and
    # a node only (_PodPeek), then dropped, as the live collector never lists them
    only_full: bool = False
    # with only_full: ``node``, the one node whose pods are kept; when it is cordoned,
    # the snapshot is read again with ``fallback`` (which Pending pods would fit there
    # depends on the pods of other nodes: placed pods' anti-affinity, topology spread)
    node: Optional[str] = None
    fallback: Optional["Need"] = None
    # slim pods that full_pod does not pick are kept without labels (BoundPodLite),
    # once full_pod has seen them (it tells device-plugin pods by their labels)
    unlabel: bool = False
    # given what was read: whether to read again with ``fallback`` (None: never)
    retry: Optional[Callable[[Snapshot], bool]] = None
    # given a full Pod record as soon as it is decoded: whether retry will say yes
    # whatever else is read (then the read stops there and ``fallback`` is read)
    stop: Optional[Callable[[Any], bool]] = None

    def wants(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds


EVERYTHING = Need()


_DP_FIRST: Optional[tuple[tuple[str, frozenset], ...]] = None
_DP_FIRST_KEYS: frozenset = frozenset()
_DRA_PLUGIN_LABEL = "nvidia-dra-driver-gpu-component"


def _dp_first() -> tuple[tuple[str, frozenset], ...]:
    """(label key, values) of the first label of every known device-plugin selector."""
    global _DP_FIRST, _DP_FIRST_KEYS
    if _DP_FIRST is None:
        from ..knowledge import catalog

        first: dict[str, set] = {}
        for kind in (*catalog.device_plugin_selectors(), *catalog.other_device_plugins()):
            pairs = catalog._selector_pairs(kind.label_selector)
            if pairs:
                first.setdefault(pairs[0][0], set()).add(pairs[0][1])
        _DP_FIRST_KEYS = frozenset(first)
        _DP_FIRST = tuple((k, frozenset(v)) for k, v in first.items())
    return _DP_FIRST


def _device_plugin(p: Any) -> bool:
    """catalog.labels_mark_device_plugin, after a quick test (called for every pod): a
    device-plugin pod carries the first label of one of the known selectors."""
    md = p.metadata
    labels = md.labels
    if not labels:
        return False
    get = labels.get
    for key, values in _DP_FIRST or _dp_first():
        if get(key) in values:
            from ..knowledge import catalog

            # a GPU device plugin, or another device plugin (EFA, RDMA, …) whose pods the
            # serving checks read in full, as live lists them by selector
            return catalog.labels_mark_device_plugin(labels, md.namespace) or any(
                catalog.kind_selects(k, labels) for k in catalog.other_device_plugins())
    return False


def _plugin_pod(p: Any) -> bool:
    """A device-plugin or DRA kubelet-plugin pod (read in full, as live lists them).
    Asked of every bound pod, so it first asks whether the labels may be a plugin's
    (the first label key of a known selector, or the DRA driver's component label):
    one set operation in C, so that the ~150,000 pods that are neither cost next to
    nothing (_device_plugin, _dra_plugin then decide)."""
    md = p.metadata
    if type(md) is _PROBE_META:
        return _probed_plugin(p)
    labels = md.labels
    if _DP_FIRST is None:
        _dp_first()
    if _DP_FIRST_KEYS.isdisjoint(labels) and _DRA_PLUGIN_LABEL not in labels:
        return False
    return _device_plugin(p) or _dra_plugin(p)


def _dra_plugin(p: Any) -> bool:
    """NVIDIA's DRA driver kubelet-plugin pods (its chart's component label): read in
    full, as live lists them, so a crash-looping plugin shows."""
    labels = p.metadata.labels
    return bool(labels) and labels.get(_DRA_PLUGIN_LABEL) == "kubelet-plugin"


class _NeedLabels(Exception):
    """_plugin_pod was asked of a pod decoded with only the labels that tell a possible
    plugin pod (_probe_pod_type), and they say it may be one: its whole labels decide."""


_PROBE_POD: Optional[type] = None
_PROBE_META: Optional[type] = None
_PROBE_SETS: tuple[frozenset, ...] = ()     # per probed label: the values that may make a plugin pod


def _probe_pod_type() -> type:
    """A bound pod as a Need with ``unlabel`` first decodes it: a BoundPod whose labels
    are only those _plugin_pod tests first (the first label of each known device-plugin
    selector, and the DRA driver's component label), so that the labels of the other
    ~150,000 pods are skipped by the parser instead of built into dicts and dropped.
    A pod those labels mark as a possible plugin is decoded again with all its labels
    (_NeedLabels), so the records are the ones a labelled read gives."""
    global _PROBE_POD, _PROBE_META, _PROBE_SETS
    if _PROBE_POD is None:
        first = _DP_FIRST or _dp_first()
        keys = [k for k, _ in first] + [_DRA_PLUGIN_LABEL]
        _PROBE_SETS = tuple(values for _, values in first) + (frozenset({"kubelet-plugin"}),)
        fields = [(f"k{i}", Optional[str], None) for i in range(len(keys))]
        labels = msgspec.defstruct("_PluginLabels", fields, rename=dict((f"k{i}", k) for i, k in enumerate(keys)),
                                   kw_only=True, omit_defaults=True)
        _PROBE_META = msgspec.defstruct("_ProbeMeta", [
            ("name", str, ""), ("namespace", Optional[str], None), ("uid", str, ""),
            ("deletionTimestamp", Optional[str], None),
            ("plugin_labels", labels, msgspec.field(default_factory=labels, name="labels"))],
            kw_only=True, omit_defaults=True)
        _PROBE_POD = msgspec.defstruct("_ProbePod", [("metadata", _PROBE_META, msgspec.field(default_factory=_PROBE_META))],
                                       bases=(O.BoundPod,), kw_only=True, omit_defaults=True)
    return _PROBE_POD


def _probed_plugin(p: Any) -> bool:
    """_plugin_pod of a pod decoded as _probe_pod_type: False where its probed labels
    rule a plugin out, as its whole labels would (no first label of a known selector
    has one of that selector's values, and the DRA component label is not
    ``kubelet-plugin``); else _NeedLabels. Asked of every bound pod: in C but for one call."""
    if any(map(frozenset.__contains__, _PROBE_SETS, msgspec.structs.astuple(p.metadata.plugin_labels))):
        raise _NeedLabels
    return False


def need_for(collector: str, args: Optional[dict[str, Any]] = None) -> Need:
    """What ``--snapshot`` must read for the live collector a command names
    (``gpuctl.collect.live.<collector>``): the same data sets, as the same records.
    Pods bound to a node and still running are slim (``BoundPod``; ``BoundPodLite``,
    without labels, where live reads them so); Pending pods, device-plugin pods and
    the pods the target is about are full. Whatever the need, what records hold alike
    is kept once (_Shared)."""
    args = args or {}
    if collector == "collect_nodes":
        return Need(kinds=frozenset({"Node"}), key=(collector,))
    if collector == "collect_cluster":
        if not args.get("for_pending"):
            # nodes capacity: as live, bound pods without labels unless a Pending pod's
            # inter-pod rules need them (then read again with them); no device-plugin pods
            def pending(p: Any) -> bool:
                return not p.spec.nodeName

            return Need(slim_pods=True, full_pod=pending, key=(collector, False), lite=True)

        def full(p: Any) -> bool:
            return not p.spec.nodeName or _plugin_pod(p)

        # As live (collect_cluster for_pending): bound pods without labels, unless a
        # Pending pod's inter-pod rules need them: then read again with them. Each
        # bound pod is decoded with its labels (they tell device-plugin pods, kept in
        # full), which are dropped once seen.
        labelled = Need(slim_pods=True, full_pod=full, key=(collector, True))
        return Need(slim_pods=True, full_pod=full, key=(collector, True, "unlabel"), unlabel=True,
                    fallback=labelled, retry=_pending_need_labels)
    if collector in ("collect_for_pod", "collect_for_workload") and args.get("ns"):
        ns = args["ns"]

        def full(p: Any) -> bool:
            return not p.spec.nodeName or p.metadata.namespace == ns or _plugin_pod(p)

        whole_ns = Need(slim_pods=True, full_pod=full, key=(collector, ns))
        name = args.get("name")
        if collector == "collect_for_workload" or not name:
            return whole_ns

        def target_full(p: Any) -> bool:
            return not p.spec.nodeName or (p.metadata.name == name and p.metadata.namespace == ns) \
                or _plugin_pod(p)

        def retry(snap: Snapshot) -> bool:
            pod = snap.pods.get(f"{ns}/{name}")
            return pod is None or type(pod) is not O.Pod or bool(pod.spec.nodeName) or _needs_every_node(snap, pod)

        def bound_target(p: Any) -> bool:
            return p.metadata.name == name and p.metadata.namespace == ns and bool(p.spec.nodeName)

        # As live (collect_for_pod) for an unbound target: the target, Pending and
        # device-plugin pods in full, other bound pods without labels. A bound target
        # (its owner's other pods are read: checks/runtime.py _replacement, live's
        # `replacements`), a target whose inter-pod rules or scheduler events make
        # other pods' labels matter (live: needs_every_node), or no target found:
        # read again with the namespace's pods in full and labels, as before. A bound
        # target is known as soon as it is decoded: the first read stops there.
        return Need(slim_pods=True, full_pod=target_full, key=(collector, ns, name), unlabel=True,
                    fallback=whole_ns, retry=retry, stop=bound_target)
    if collector == "collect_for_node" and args.get("name"):
        node = args["name"]

        def full(p: Any) -> bool:
            return not p.spec.nodeName or p.spec.nodeName == node or _plugin_pod(p)

        def mine(p: Any) -> bool:
            return p.spec.nodeName == node

        # As live (collect_for_node): the node's own pods (device-plugin and operator
        # pods among them) in full; no other pod is kept. The node checks read no other
        # pod (checks/node_health.py NodeContext.pods, checks/device_plugin.py
        # device_plugin_state for [node]) except `cordon`, whose fit of each Pending
        # pod reads the Pending pods and every node's pods: a cordoned node is read again.
        everything_slim = Need(slim_pods=True, full_pod=full, key=(collector, node))
        def cordoned(snap: Snapshot) -> bool:
            n = snap.nodes.get(node)
            return n is not None and bool(n.spec.unschedulable)

        return Need(slim_pods=True, full_pod=mine, key=(collector, node, "own"), only_full=True, node=node,
                    fallback=everything_slim, retry=cordoned)
    return EVERYTHING


class _Fallback(Exception):
    """This file is read by the whole-file reader instead (exact errors and salvaging)."""


class _Stop(Exception):
    """Need.stop said the snapshot is to be read with Need.fallback: stop this read."""


class _Skip(msgspec.Struct):
    pass


class _PeekMeta(msgspec.Struct):
    name: str = ""
    namespace: Optional[str] = None


class _PeekSpec(msgspec.Struct):
    nodeName: Optional[str] = None


class _PodPeek(msgspec.Struct):
    """What Need.only_full decides a pod by (the rest of the pod is parsed, not kept)."""

    metadata: _PeekMeta = msgspec.field(default_factory=_PeekMeta)
    spec: _PeekSpec = msgspec.field(default_factory=_PeekSpec)


class _Body(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A GenericObject without its ``kind`` (the tag of the union carries it)."""

    apiVersion: str = ""
    metadata: O.ObjectMeta = msgspec.field(default_factory=O.ObjectMeta)
    spec: Optional[dict[str, Any]] = None
    status: Optional[dict[str, Any]] = None


_union_cache: dict[tuple, tuple[msgspec.json.Decoder, dict[type, tuple[str, Optional[type]]]]] = {}
_raw_items_dec = msgspec.json.Decoder(list[msgspec.Raw])
_skip_dec = msgspec.json.Decoder(msgspec.Raw)
_any_items_dec = msgspec.json.Decoder(list[Any])
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


def _union(need: Need) -> tuple[msgspec.json.Decoder, dict[type, tuple[str, Optional[type]]]]:
    """A decoder of ``[item, …]`` dispatching on each item's ``kind``, and for each
    tagged type: (kind, the record class to give the record, or None: skipped, or
    GenericObject for a _Body)."""
    key = (need.kinds, need.slim_pods, need.lite, need.only_full, need.unlabel)
    hit = _union_cache.get(key)
    if hit is not None:
        return hit
    types, meaning = [], {}
    for kind in sorted(O.KNOWN_KINDS - {"BoundPod", "BoundPodLite"}):
        if not need.wants(kind):
            t = msgspec.defstruct(f"_Skip{kind}", [], bases=(_Skip,), tag_field="kind", tag=kind)
            meaning[t] = (kind, None)
        elif kind in O.TYPED_KINDS:
            cls = ((_PodPeek if need.only_full else O.BoundPodLite if need.lite
                    else _probe_pod_type() if need.unlabel else O.BoundPod)
                   if (kind == "Pod" and need.slim_pods) else O.TYPED_KINDS[kind])
            t = msgspec.defstruct(f"_Tagged{kind}", [], bases=(cls,), tag_field="kind", tag=kind)
            meaning[t] = (kind, cls)
        else:
            t = msgspec.defstruct(f"_Tagged{kind}", [], bases=(_Body,), tag_field="kind", tag=kind)
            meaning[t] = (kind, O.GenericObject)
        types.append(t)
    hit = _union_cache[key] = (msgspec.json.Decoder(list[Union[tuple(types)]]), meaning)
    return hit


class _Reader:
    """Chunks of one file or tarball member, with the member limit checked as it is read."""

    def __init__(self, f: Any, shown: str, tar: Optional[Path] = None):
        self.f, self.shown, self.tar = f, shown, tar
        self.buf = b""
        self.read_total = 0
        self.eof = False

    def more(self, keep_from: int) -> int:
        """Drop ``buf[:keep_from]``, append the next chunk; returns how much was dropped.
        A file that can read into a buffer (a regular file) is read straight after what is
        kept, into a new buffer, so each byte is copied once (``read`` then joining the
        chunk to what was kept copied it twice); ``buf`` is then a bytearray, never changed
        once made, so whatever a reader holds of an older one stays as it was."""
        readinto = getattr(self.f, "readinto", None) if not self.eof else None
        try:
            if readinto is not None:
                with memoryview(self.buf) as old:
                    kept = len(old) - keep_from
                    buf = bytearray(kept + STREAM_CHUNK)
                    buf[:kept] = old[keep_from:]
                with memoryview(buf) as view, view[kept:] as room:
                    n = readinto(room) or 0
                del buf[kept + n:]
            else:
                chunk = self.f.read(STREAM_CHUNK) if not self.eof else b""
                n = len(chunk)
                buf = b"".join((memoryview(self.buf)[keep_from:], chunk)) if keep_from else self.buf + chunk
        except OSError as e:
            if self.tar is not None:
                raise SourceError(f"snapshot {self.tar}: member {self.shown!r} could not be read ({e})") from None
            raise SourceError(f"snapshot file {self.shown} could not be read: {e.strerror or e}") from None
        self.read_total += n
        if self.read_total > MAX_MEMBER_BYTES:
            raise SourceError(f"snapshot file {self.shown}: over the {MAX_MEMBER_BYTES} byte limit; refusing")
        if not n:
            self.eof = True
        self.buf = buf
        return keep_from

    def whole(self) -> bytes:
        """What has been read, as bytes (for parsers that take bytes only, such as YAML's)."""
        return self.buf if type(self.buf) is bytes else bytes(self.buf)


_WS = b" \t\r\n"
_ITEMS_KEY = re.compile(rb'"items"\s*:\s*\[')


def _skip_ws(buf: bytes, i: int) -> int:
    n = len(buf)
    while i < n and buf[i] in _WS:
        i += 1
    return i


class _ListStream:
    """The items of a top-level ``{… "items": [ … ] …}`` as batches of JSON text
    (``[item,item,…]``), read in bounded memory. Anything it cannot prove raises
    _Fallback."""

    def __init__(self, reader: _Reader):
        self.r = reader
        self.head_kind = ""
        self.tail_kind = ""
        self.sep: Optional[bytes] = None
        self.comma_off = 0
        self.items = 0
        self.at = -1
        self.batch: Optional[int] = None     # at most this many bytes a batch cut at separators (else: all read)

    @property
    def list_kind(self) -> str:
        return self.head_kind or self.tail_kind

    def _head(self) -> int:
        r = self.r
        while True:
            m = _ITEMS_KEY.search(r.buf)
            if m is not None:
                break
            if r.eof or len(r.buf) > MAX_HEAD_BYTES:
                raise _Fallback("no items array")
            r.more(0)
        if not r.buf[:m.start()].lstrip(_WS).startswith(b"{"):
            raise _Fallback("not an object")
        try:
            head = O.decode_lenient(_list_dec, r.buf[:m.end()] + b"]}")
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise _Fallback("head") from None
        if head.items != []:          # the match was not the object's own "items" key
            raise _Fallback("head")
        self.head_kind = head.kind
        return m.end() - 1        # the '['

    def _one(self, p: int) -> tuple[int, int]:
        """(start, end) of the item at or after ``p`` (``buf[end]`` is ',' or ']'),
        reading more as needed; positions may move: returns them in the current buffer."""
        r = self.r
        while True:
            p = _skip_ws(r.buf, p)
            if p >= len(r.buf):
                if r.eof:
                    raise _Fallback("truncated")
                p -= r.more(p)
                continue
            try:
                _skip_dec.decode(memoryview(r.buf)[p:])
            except msgspec.DecodeError as e:
                m = _TRAILING.search(str(e))
                if m is not None:
                    end = p + int(m.group(1)) - 1
                    if r.buf[end] in b",]":
                        return p, end
                    raise _Fallback("not a list") from None
                if "truncated" in str(e) and not r.eof:
                    p -= r.more(p)
                    continue
                raise _Fallback("malformed") from None
            except RecursionError:
                raise _Fallback("deep") from None
            if r.eof:
                raise _Fallback("truncated")
            p -= r.more(p)

    def _learn(self, start: int, end: int) -> None:
        buf = self.r.buf
        q = end - 1
        while q > start and buf[q] in _WS:
            q -= 1
        if buf[q] != ord("}"):
            return
        s = q - 1
        while s > start and buf[s] in b" \t":
            s -= 1
        s = s if buf[s] == ord("\n") else q
        t = _skip_ws(buf, end + 1)
        if t >= len(buf) or buf[t] != ord("{"):
            return
        sep = buf[s:t + 1]
        if b"\n" in sep:
            self.sep, self.comma_off = sep, end - s

    def batches(self, pick: Optional[Callable[[bytes, int, int], Optional[list[tuple[int, int]]]]] = None
                ) -> Iterator[tuple[Optional[bytes], Optional[list[tuple[int, int]]]]]:
        """Yield (``[item,…]`` text, the items' spans in it or None). ``pick(buf, start,
        end)``, for a batch cut at the separator: None to take it whole, else the
        (start, end) of the only items to take (then (None, None) when there are none)."""
        r = self.r
        seg = self._head()            # buf[seg] is '[' or the ',' before the next item
        p = _skip_ws(r.buf, seg + 1)
        while p >= len(r.buf) and not r.eof:
            dropped = r.more(seg)
            seg, p = seg - dropped, p - dropped
            p = _skip_ws(r.buf, p)
        if p < len(r.buf) and r.buf[p] == ord("]"):
            self._tail(p + 1)
            return
        first = True
        while True:
            if self.sep is not None and not r.eof and len(r.buf) - seg < (
                    STREAM_BATCH + STREAM_CHUNK if self.batch is None else self.batch):
                seg -= r.more(seg)     # (small batches: read on only when less than one is left, copying less)
            if self.sep is not None:
                k = r.buf.rfind(self.sep, seg + 1) if self.batch is None else \
                    (r.buf.rfind(self.sep, seg + 1, seg + 1 + self.batch) if len(r.buf) - seg > self.batch else -1)
                if k <= seg and self.batch is not None:
                    k = r.buf.rfind(self.sep, seg + 1)
                if k > seg:
                    c = k + self.comma_off
                    picked = pick(r.buf, seg + 1, c) if pick is not None else None
                    if picked is not None:
                        seg = c
                        if not picked:
                            yield None, None
                            continue
                        pieces = [r.buf[a:b] for a, b in picked]
                        spans, at = [], 1
                        for piece in pieces:
                            spans.append((at, at + len(piece)))
                            at += len(piece) + 1
                        yield b"[" + b",".join(pieces) + b"]", spans
                        continue
                    text = b"".join((b"[", memoryview(r.buf)[seg + 1:c], b"]"))
                    seg = c
                    yield text, None
                    continue
                if not r.eof:
                    seg -= r.more(seg)
                    continue
            # item by item: the first item (to learn the separator), and the end of the list
            spans, parts, size, done = [], [], 0, False
            while size < STREAM_BATCH:
                start, end = self._one(seg + 1)
                piece = r.buf[start:end]
                spans.append((size + 1 + (1 if parts else 0), size + 1 + (1 if parts else 0) + len(piece)))
                size += len(piece) + (1 if parts else 0)
                parts.append(piece)
                if first:
                    first = False
                    if r.buf[end] == ord(","):
                        self._learn(start, end)
                seg = end
                if r.buf[end] == ord("]"):
                    done = True
                    break
                if self.sep is not None:
                    break
            self.at = r.read_total - len(r.buf) + seg     # in the file: the ',' or ']' after these items
            yield b"[" + b",".join(parts) + b"]", spans
            if done:
                self._tail(seg + 1)
                return

    def _tail(self, after: int) -> None:
        r = self.r
        while not r.eof:
            after -= r.more(after)
            if len(r.buf) > MAX_HEAD_BYTES:
                raise _Fallback("long tail")
        try:
            tail = O.decode_lenient(_list_dec, b'{"gpuctl:items":[]' + r.buf[after:])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise _Fallback("tail") from None
        if tail.items is not None or (tail.kind and self.head_kind):
            raise _Fallback("duplicate keys")
        self.tail_kind = tail.kind


# The kind _FileResult.records gives a slim pod (BoundPod, BoundPodLite) whose
# quantities are known to parse: Snapshot.add without scrub_quantities.
_CLEAN_SLIM_POD = "BoundPod (quantities parse)"


class _FileResult:  # noqa: D101
    """What one file adds to the snapshot, kept aside until the file is read whole
    (a file that falls back to the whole-file reader adds nothing twice)."""

    def __init__(self) -> None:
        # (kind, record), or (None, (problems, record or None, kind)) for an object
        # not fully read: its problems come before it, as the whole-file reader adds them
        self.records: list[tuple[Optional[str], Any]] = []
        self.seen = 0
        self.items = 0
        self.skipped: set[str] = set()    # kinds of objects skipped (the command does not need them)
        self.shared = _Shared()

    def commit(self, snap: Snapshot) -> None:
        add, add_clean_pod = snap.add, snap.add_clean_pod
        for kind, rec in self.records:
            if kind == _CLEAN_SLIM_POD:      # (==: records from a forked reader hold a copy of the string)
                add_clean_pod(rec)
                continue
            if kind is None:
                problems, rec, kind = rec
                snap.malformed.extend(problems)
                if rec is None:
                    continue
            add(kind, rec)


MAX_SHARED = 1 << 16          # distinct values a sharing table remembers, per file


class _Shared:
    """What the records of one file hold alike, kept once (hash-consing). What
    150,000 bound pods weigh is mostly their containers' resources, affinity and
    labels, identical across the pods of one ReplicaSet, Job or DaemonSet, and
    repeated strings (namespace, node name, phase); nodes repeat their label keys
    and values. A record is given the first record's objects when their JSON
    encodings are equal (so equal in value, type and order: every record reads
    exactly as decoded alone). Records are never written to once a Snapshot holds
    them (checks are pure functions over it; what-if code copies them,
    msgspec.structs.replace); the one exception, scrub_quantities removing a
    quantity that does not parse, is why containers with such a quantity are never
    shared and a node's maps are rebuilt, not shared. At most MAX_SHARED distinct
    values a table are remembered (pods all unlike each other cost a bounded table)."""

    def __init__(self) -> None:
        self.strs: dict[str, str] = {}
        self.specs: dict[bytes, Any] = {}       # encoded spec without nodeName -> first spec, or None: not shared
        self.labels: dict[bytes, dict] = {}
        self.statuses: dict[Optional[str], Any] = {}
        self.tables: dict[str, dict[bytes, Any]] = {}

    def pod(self, rec: Any) -> bool:
        """Share the parts of a slim pod record (BoundPod, BoundPodLite); True when
        its quantities are known to parse (its spec's parts are a clean spec's), so
        that scrub_quantities would find nothing (_FileResult.commit skips it)."""
        strs = self.strs
        md = rec.metadata
        ns = md.namespace
        if ns is not None:
            md.namespace = strs.setdefault(ns, ns)
        if type(md) is O.BoundPodMeta and md.labels:
            labels = md.labels
            key = _enc(labels)
            same = self.labels.get(key)
            if same is not None:
                md.labels = same
            elif len(self.labels) < MAX_SHARED:
                self.labels[key] = labels
        spec = rec.spec
        node = spec.nodeName
        if node is not None:
            spec.nodeName = None
            key = _enc(spec)
            spec.nodeName = strs.setdefault(node, node)
        else:
            key = _enc(spec)
        same = self.specs.get(key, False)
        clean = False
        if same is False:
            if len(self.specs) < MAX_SHARED:
                clean = O.pod_quantities_clean(spec)
                self.specs[key] = spec if clean else None
        elif same is not None:
            spec.containers, spec.initContainers = same.containers, same.initContainers
            spec.overhead, spec.affinity = same.overhead, same.affinity
            clean = True
        status = rec.status
        if type(status) is O.BoundPodStatus:
            rec.status = self.statuses.setdefault(status.phase, status)
        return clean

    def _same(self, table: str, value: Any, ok: Optional[Callable[[Any], bool]] = None) -> Any:
        """The first value of ``table`` encoded as ``value`` is, else ``value``
        (remembered if ``ok(value)``, else never shared)."""
        seen = self.tables.get(table)
        if seen is None:
            seen = self.tables[table] = {}
        key = _enc(value)
        same = seen.get(key, False)
        if same is False:
            if len(seen) < MAX_SHARED:
                seen[key] = value if ok is None or ok(value) else None
            return value
        return value if same is None else same

    def full_pod(self, rec: Any) -> None:
        """Share the parts of a full Pod record that the pods of one workload (or one
        DaemonSet) hold alike: containers (when their quantities parse), tolerations,
        selectors, affinity, labels, annotations, owners; and repeated strings."""
        strs, same = self.strs, self._same
        md = rec.metadata
        if md.namespace is not None:
            md.namespace = strs.setdefault(md.namespace, md.namespace)
        if md.labels:
            md.labels = same("labels", md.labels)
        if md.annotations:
            md.annotations = same("annotations", md.annotations)
        if md.ownerReferences:
            md.ownerReferences = same("owners", md.ownerReferences)
        spec = rec.spec
        for name in ("nodeName", "schedulerName", "priorityClassName", "preemptionPolicy", "restartPolicy",
                     "runtimeClassName"):
            v = getattr(spec, name)
            if v is not None:
                setattr(spec, name, strs.setdefault(v, v))
        if spec.containers or spec.initContainers:
            spec.containers, spec.initContainers = same("containers", (spec.containers, spec.initContainers),
                                                        _containers_clean)
        for name in ("tolerations", "nodeSelector", "affinity", "volumes", "topologySpreadConstraints"):
            v = getattr(spec, name)
            if v:
                setattr(spec, name, same(name, v))
        st = rec.status
        if st.phase is not None:
            st.phase = strs.setdefault(st.phase, st.phase)

    def node(self, rec: Any) -> None:
        """A Node's repeated strings (label keys and values, resource names,
        condition texts) kept once; its maps stay its own (scrub_quantities may edit
        them), only their keys and values are the shared strings."""
        strs = self.strs
        s = strs.setdefault
        md = rec.metadata
        if md.labels:
            md.labels = {s(k, k): s(v, v) for k, v in md.labels.items()}
        if md.annotations:
            md.annotations = {s(k, k): v for k, v in md.annotations.items()}
        st = rec.status
        if st.capacity:
            st.capacity = {s(k, k): s(v, v) if type(v) is str else v for k, v in st.capacity.items()}
        if st.allocatable:
            st.allocatable = {s(k, k): s(v, v) if type(v) is str else v for k, v in st.allocatable.items()}
        for c in st.conditions:
            c.type, c.status = s(c.type, c.type), s(c.status, c.status)
            if c.reason is not None:
                c.reason = s(c.reason, c.reason)
            if c.message is not None:
                c.message = s(c.message, c.message)
        if st.nodeInfo is not None:
            st.nodeInfo = self._same("nodeInfo", st.nodeInfo)
        if rec.spec.taints:
            rec.spec.taints = self._same("taints", rec.spec.taints)


def _containers_clean(both: tuple[list, list]) -> bool:
    """Whether every quantity of these (containers, initContainers) parses."""
    return O.pod_quantities_clean(O.BoundPodSpec(containers=both[0], initContainers=both[1]))


_enc = msgspec.json.encode


def _item_spans(text: bytes, sep: bytes, comma_off: int, n: int) -> Optional[list[tuple[int, int]]]:
    """Where each of ``n`` items lies in a batch cut at ``sep`` (None: cannot say).
    Items one a line (``sep`` is ``},\n{``, as snapshot save and ``jq -c`` write them)
    are found by their newlines, which a byte search finds six times faster than the
    separator itself (JSON is full of ``}``); each newline is checked to be a separator."""
    one_a_line = sep[:1] != b"\n" and sep.count(b"\n") == 1
    spans = (_spans_by_newline if one_a_line else _spans_by_separator)(text, sep, comma_off)
    return spans if len(spans) == n else None


def _spans_by_separator(text: bytes, sep: bytes, comma_off: int) -> list[tuple[int, int]]:
    spans, start = [], 1
    i = text.find(sep, 1)
    while i != -1:
        c = i + comma_off
        spans.append((start, c))
        start = c + 1
        i = text.find(sep, c)
    spans.append((start, len(text) - 1))
    return spans


def _spans_by_newline(text: bytes, sep: bytes, comma_off: int) -> list[tuple[int, int]]:
    """_spans_by_separator for a separator holding one newline: the same spans."""
    spans, start = [], 1
    k = sep.index(b"\n")
    i = text.find(b"\n", 1)
    while i != -1:
        if i >= k and text.startswith(sep, i - k):
            c = i - k + comma_off
            spans.append((start, c))
            start = c + 1
        i = text.find(b"\n", i + 1)
    spans.append((start, len(text) - 1))
    return spans


def _decode_batch(text: bytes, spans: Optional[list[tuple[int, int]]], ls: _ListStream, need: Need,
                  fname: str, out: _FileResult) -> None:
    dec, meaning = _union(need)
    try:
        recs = dec.decode(text)
    except (msgspec.ValidationError, UnicodeDecodeError):
        recs = None
    except msgspec.DecodeError:
        raise _Fallback("batch") from None
    except RecursionError:
        raise _Fallback("deep") from None
    if recs is None:
        _decode_batch_slow(text, ls, need, fname, out)
        return
    out.seen += len(recs)
    out.items += len(recs)
    first = len(out.records)
    append = out.records.append
    full = need.full_pod if need.slim_pods else None
    slim_kind = "BoundPodLite" if need.lite else "BoundPod"
    share = out.shared.pod
    wanted_full: list[int] = []
    for i, rec in enumerate(recs):
        kind, cls = meaning[type(rec)]
        if cls is None:
            out.skipped.add(kind)
            continue
        if cls is O.GenericObject:
            rec = O.GenericObject(apiVersion=rec.apiVersion, kind=kind, metadata=rec.metadata, spec=rec.spec,
                                  status=rec.status)
            append((kind, rec))
            continue
        rec.__class__ = cls
        if full is not None and kind == "Pod":
            try:
                wanted = full(rec)
            except _NeedLabels:   # decoded with the probed labels only: again, with all of them
                if spans is None and ls.sep is not None:
                    spans = _item_spans(text, ls.sep, ls.comma_off, len(recs))
                try:
                    rec = _labelled(text, spans, i, rec)
                except msgspec.ValidationError:
                    # a bad label that a labelled read of the batch meets: item by item, as that read goes on
                    del out.records[first:]
                    out.seen -= len(recs)
                    out.items -= len(recs)
                    _decode_batch_slow(text, ls, need, fname, out)
                    return
                wanted = full(rec)
            if wanted:
                wanted_full.append((i, len(out.records)))
                append(("Pod", None))
                continue
            if need.unlabel:
                rec = _unlabelled(rec)
                append((_CLEAN_SLIM_POD if share(rec) else "BoundPodLite", rec))
            elif not need.only_full:
                append((_CLEAN_SLIM_POD if share(rec) else slim_kind, rec))
            continue
        if kind == "Node":
            out.shared.node(rec)
        elif kind == "Pod":
            out.shared.full_pod(rec)
        append((kind, rec))
    if wanted_full:
        if spans is None and ls.sep is not None:
            spans = _item_spans(text, ls.sep, ls.comma_off, len(recs))
        view = memoryview(text)
        raws = {i: msgspec.Raw(view[spans[i][0]:spans[i][1]]) for i, _ in wanted_full} if spans is not None else \
            O.decode_lenient(_raw_items_dec, text)
        for i, slot in wanted_full:
            rec, problems = O.decode_salvaging("Pod", raws[i], source=fname)
            slim = recs[i]
            if rec is None or (rec.metadata.name, rec.metadata.namespace) != (slim.metadata.name,
                                                                               slim.metadata.namespace):
                raws = O.decode_lenient(_raw_items_dec, text)     # the cut was not where it seemed
                rec, problems = O.decode_salvaging("Pod", raws[i], source=fname)
            if not problems:
                out.shared.full_pod(rec)
            if need.stop is not None and rec is not None and need.stop(rec):
                raise _Stop()
            out.records[slot] = ("Pod", rec) if not problems else (None, (problems, rec, "Pod"))


_bound_pod_dec = msgspec.json.Decoder(O.BoundPod)


def _labelled(text: bytes, spans: Optional[list[tuple[int, int]]], i: int, probed: Any) -> Any:
    """Item ``i`` of a batch as a BoundPod, all its labels decoded (it was decoded as
    _probe_pod_type). Where the items cannot be cut by ``spans``, or the cut is not
    where it seemed, every item of the batch is taken apart by the parser instead.
    A label that is not a string raises ValidationError, as a labelled read of the
    batch would have met it."""
    if spans is not None:
        try:
            rec = _bound_pod_dec.decode(memoryview(text)[spans[i][0]:spans[i][1]])
        except msgspec.ValidationError:
            raise
        except msgspec.DecodeError:   # not one whole item: the cut was not where it seemed
            rec = None
        if rec is not None and (rec.metadata.name, rec.metadata.namespace) == (probed.metadata.name,
                                                                               probed.metadata.namespace):
            return rec
    return _bound_pod_dec.decode(O.decode_lenient(_raw_items_dec, text)[i])


def _unlabelled(rec: Any) -> Any:
    """A BoundPod as the BoundPodLite record it would have decoded to."""
    md = rec.metadata
    return O.BoundPodLite(metadata=O.BoundPodLiteMeta(name=md.name, namespace=md.namespace, uid=md.uid,
                                                      deletionTimestamp=md.deletionTimestamp),
                          spec=rec.spec, status=rec.status)


def _decode_batch_slow(text: bytes, ls: _ListStream, need: Need, fname: str, out: _FileResult) -> None:
    """Item by item, exactly as the whole-file reader does (salvaging, names)."""
    try:
        raws = O.decode_lenient(_raw_items_dec, text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise _Fallback("batch") from None
    out.items += len(raws)
    list_kind = ls.head_kind[:-4] if ls.head_kind.endswith("List") and ls.head_kind != "List" else ""
    for raw in raws:
        try:
            peek = O.decode_lenient(_peek_dec, raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue                      # no kind: not counted, as before
        except RecursionError:
            raise _Fallback("deep") from None
        if not peek.kind and not list_kind and not ls.head_kind:
            raise _Fallback("kind after items")   # the list's kind may still come
        kind = peek.kind or list_kind
        if not kind:
            continue
        out.seen += 1
        if kind not in O.KNOWN_KINDS:
            continue
        if not need.wants(kind):
            out.skipped.add(kind)
            continue
        _decode_one(kind, raw, need, fname, out)


def _salvage(kind: str, as_kind: str, raw: Any, fname: str) -> tuple[Any, list]:
    """One object decoded as ``as_kind``, its bad fields emptied and named; one nested
    past the recursion limit is an Unreadable record of ``kind`` instead."""
    try:
        return O.decode_salvaging(as_kind, raw, source=fname)
    except RecursionError:
        name = _guess(rb'"name"\s*:\s*"([^"\\]{1,253})"', raw) or "?"
        return None, [O.Unreadable(kind, None, name, "", "nested deeper than the parser's recursion limit",
                                   kept=False, source=fname)]


def _decode_one(kind: str, raw: Any, need: Need, fname: str, out: _FileResult) -> None:
    as_kind = ("BoundPodLite" if need.lite else "BoundPod") if (kind == "Pod" and need.slim_pods) else kind
    rec, problems = _salvage(kind, as_kind, raw, fname)
    if rec is not None and as_kind.startswith("BoundPod") and need.full_pod is not None and need.full_pod(rec):
        rec, problems = O.decode_salvaging("Pod", raw, source=fname)
        as_kind = "Pod"
    elif rec is not None and as_kind.startswith("BoundPod") and need.only_full:
        return                        # a pod the command does not keep (its problems with it)
    elif rec is not None and as_kind == "BoundPod" and need.unlabel:
        rec, as_kind = _unlabelled(rec), "BoundPodLite"
    if rec is not None and (kind == "GenericObject" or isinstance(rec, O.GenericObject)):
        rec.kind = rec.kind or kind
    out.records.append((as_kind, rec) if not problems else (None, (problems, rec, as_kind)))


_UNICODE_ESCAPE = re.compile(rb"\\u")


def _stream_json_file(reader: _Reader, fname: str, need: Need, skip_if: Optional[str] = None,
                      pool: Optional[Any] = None) -> Optional[_FileResult]:
    """Decode one JSON List file in bounded memory; None when it was not read because
    its first object is of ``skip_if``, a kind the command does not need. Raises
    _Fallback when the whole-file reader must read it instead. ``pool``: forked
    workers (forked.Pool, made for ``need``) that take the batches after the first."""
    out = _FileResult()
    ls = _ListStream(reader)
    # A file `snapshot save` names pods.json, whose first object is a Pod, is taken to
    # hold pods only (as _skip_kind takes it): for a command that keeps the pods of one
    # node only (Need.only_full, diagnose node), a batch whose text does not hold that
    # node's name as a JSON string holds none of its pods and is skipped unparsed.
    # (A name written with \u escapes would not be found: such a batch is parsed.)
    needle = (b'"' + need.node.encode() + b'"') if (need.slim_pods and need.only_full and need.node
                                                     and need.by_name and fname == "pods.json") else None
    first_batch = True
    pods_only = False

    def pick(buf: bytes, start: int, end: int) -> Optional[list[tuple[int, int]]]:
        """The items of buf[start:end] (cut at ls.sep) that hold the node's name."""
        if not pods_only or (buf.find(b"\\", start, end) >= 0 and _UNICODE_ESCAPE.search(buf, start, end)):
            return None
        out: list[tuple[int, int]] = []
        sep, off = ls.sep, ls.comma_off
        at = buf.find(needle, start, end)
        while at >= 0:
            k = buf.rfind(sep, start, at)
            a = start if k < 0 else k + off + 1
            k = buf.find(sep, at, end)
            b = end if k < 0 else k + off
            out.append((a, b))
            at = buf.find(needle, b, end)
        return out

    forkable = needle is None and _forkable(reader)
    pool = pool if needle is None else None
    if pool is not None:
        ls.batch = pool.job_bytes - 1024       # (the job's own header and meta fit too)
    parts: list[tuple[int, Optional[tuple[bool, Any]]]] = []     # with a pool: each batch's job, or its result
    enabled = gc.isenabled()
    gc.disable()
    try:
        for text, spans in ls.batches(pick if needle is not None else None):
            if text is None:
                out.skipped.add("Pod")
                continue
            if skip_if is not None or (needle is not None and first_batch):
                try:
                    first = O.decode_lenient(_peek_dec, O.decode_lenient(_raw_items_dec, text)[0])
                except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, IndexError):
                    first = None
                if skip_if is not None and first is not None and first.kind == skip_if:
                    return None
                skip_if = None
                pods_only = needle is not None and first is not None and first.kind == "Pod"
            if pool is not None and not first_batch and spans is None:
                job, res = pool.send((fname, ls.sep, ls.comma_off, ls.head_kind, need.slim_pods), text,
                                     lambda t: _job(t, ls, need, fname, out.shared))
                parts.append((job, res))
                if res is not None and not res[0]:
                    break              # this batch stops the read: nothing after it is needed
                continue
            first_batch = False
            if parts:   # an item-by-item batch after pooled ones (the end of the list): in order
                parts.append((-1, _job(text, ls, need, fname, out.shared, spans)))
                continue
            _decode_batch(text, spans, ls, need, fname, out)
            if forkable:
                forkable = False
                if _read_rest_forked(reader, ls, need, fname, out):
                    break
    finally:
        if enabled:
            gc.enable()
        done = pool.results() if parts else {}
    for job, res in parts:              # in file order: the first batch that stopped the read decides
        res = res if res is not None else done[job]
        _raise_for(res)
        _merge(out, res)
    if out.seen == 0 and not out.skipped and not (out.items == 0 and ls.list_kind.endswith("List")):
        raise _Fallback("no objects")      # the whole-file reader says why, as before
    return out


# ------------------------------------------------------------------ a large file read by several processes

FORK_MIN_BYTES = 16 << 20         # a List file at least this large is shared between processes (forked.py)
FORK_JOB_BYTES = 2 << 20          # bytes of items a job (smaller batches decode faster; see forked.py)
FORK_MIN_TARBALL = 1 << 20        # a .tar.gz at least this large (compressed: JSON shrinks 8-18x) is read with forked workers
_TAIL_WINDOW = 1 << 20            # bytes read back from the end at a time, to find the last item
_CUT_WINDOW = 64 << 10            # bytes read at first where a job is to end, to find a separator


def _forkable(reader: _Reader) -> bool:
    """Whether the rest of this file may be read by several processes: a regular file
    of a directory (not a tarball member), large enough, where forking is safe."""
    f = reader.f
    if reader.tar is not None or type(f) is not io.BufferedReader:
        return False
    try:
        st = os.fstat(f.fileno())
    except (OSError, ValueError):
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size < FORK_MIN_BYTES:
        return False
    return forked.processes() > 1 and forked.can_fork()


def _job_text(fd: int, a: int, b: int) -> Optional[bytearray]:
    """The items between the ',' at ``a`` and the ',' at ``b`` as ``[item,…]``, read
    straight into the buffer msgspec decodes; None when those are no longer commas
    (the file changed since it was cut)."""
    buf = bytearray(b - a + 1)
    with memoryview(buf) as view:
        if forked.pread_into(fd, view, a) < len(buf):
            return None
    if buf[0] != 0x2C or buf[-1] != 0x2C:
        return None
    buf[0], buf[-1] = 0x5B, 0x5D          # "[", "]"
    return buf


def _cuts(fd: int, ls: _ListStream, start: int, size: int, job: int) -> Optional[list[int]]:
    """Where the items after the one ending at ``start`` (a ',') are cut into jobs: the
    positions of the ',' of separators (``ls.sep``), from ``start`` to the last one in
    the file; None when there is none after ``start``."""
    sep, off = ls.sep, ls.comma_off
    assert sep is not None
    end, last = size, -1
    while last < 0 and end > start:              # the last separator, read back from the end
        lo = max(start, end - _TAIL_WINDOW)
        window = forked.pread(fd, min(end, size) - lo + len(sep), lo)
        k = window.rfind(sep)
        if k >= 0 and lo + k + off > start:
            last = lo + k + off
        end = lo
    if last < 0:
        return None
    cuts = [start]
    t = start + job
    while t < last:
        window, at, step = b"", t, _CUT_WINDOW
        while True:                              # the first separator at or after t
            window = forked.pread(fd, step + len(sep), at)
            k = window.find(sep)
            if k >= 0 or not window:
                break
            at += step
            step = min(step * 4, _TAIL_WINDOW)
        if k < 0:
            break
        c = at + k + off
        if c >= last:
            break
        if c > cuts[-1]:
            cuts.append(c)
        t = max(c + 1, t + job)
    cuts.append(last)
    return cuts


def _read_rest_forked(reader: _Reader, ls: _ListStream, need: Need, fname: str, out: _FileResult) -> bool:
    """Read the items after the first (the batch just decoded) with several processes
    (forked.py), adding to ``out`` exactly what the rest of the serial read would, in
    the same order. False, with nothing added, when the caller is to go on serially:
    there is no separator to cut at, or a process failed. _Fallback and _Stop as the
    serial read would raise them (the first job to raise one decides)."""
    fd = reader.f.fileno()
    size = os.fstat(fd).st_size
    if ls.sep is None or not 0 <= ls.at < size:
        return False
    n = forked.processes()
    job = max(FORK_JOB_BYTES, -(-size // forked.MAX_JOBS))
    cuts = _cuts(fd, ls, ls.at, size, job)
    if cuts is None or len(cuts) < 3:
        return False

    def do_job(j: int) -> tuple[bool, Any]:
        text = _job_text(fd, cuts[j], cuts[j + 1])
        if text is None:
            return False, ("changed", "")
        return _job(text, ls, need, fname, out.shared)

    results = forked.run(len(cuts) - 1, n, do_job)
    global FORKED_READS, FORK_GAVE_UP
    for r in results:
        if r is None:
            FORK_GAVE_UP += 1
            return False           # a process failed: read serially
        if not r[0] and r[1][0] == "changed":
            return False
        _raise_for(r)
    # the last item, the end of the list and what follows it, as the serial read takes them
    tail = _Reader(io.BytesIO(b'{"items":[' + forked.pread(fd, size - cuts[-1] - 1, cuts[-1] + 1)), reader.shown)
    tail.more(0)
    rest = _ListStream(tail)
    last = list(rest.batches())
    if rest.tail_kind and ls.head_kind:
        raise _Fallback("duplicate keys")
    ls.tail_kind = rest.tail_kind
    for r in results:
        _merge(out, r)
    for text, spans in last:
        _decode_batch(text, spans, ls, need, fname, out)
    FORKED_READS += 1
    return True


def _job(text: Any, ls: Any, need: Need, fname: str, shared: "_Shared", spans: Any = None) -> tuple[bool, Any]:
    """One job of items decoded, in this process or a forked one: (True, what it adds
    to the file's _FileResult), or (False, why the read stops there: "fallback" or "stop")."""
    res = _FileResult()
    res.shared = shared
    try:
        _decode_batch(text, spans, ls, need, fname, res)
    except _Fallback as e:
        return False, ("fallback", str(e))
    except _Stop:
        return False, ("stop", "")
    return True, (res.records, res.seen, res.items, res.skipped)


def _raise_for(result: tuple[bool, Any]) -> None:
    """A job that stopped the read: what a single process would have raised there."""
    ok, value = result
    if not ok:
        if value[0] == "stop":
            raise _Stop()
        raise _Fallback(value[1] or value[0])


def _merge(out: "_FileResult", result: tuple[bool, Any]) -> None:
    records, seen, items, skipped = result[1]
    out.records += records
    out.seen += seen
    out.items += items
    out.skipped |= skipped


class _Cut:
    """What a job's decoding reads of its file's _ListStream, sent to a pool worker."""

    __slots__ = ("sep", "comma_off", "head_kind")

    def __init__(self, sep: Optional[bytes], comma_off: int, head_kind: str):
        self.sep, self.comma_off, self.head_kind = sep, comma_off, head_kind


def _open_pool(size: int, need: Need) -> Optional[Any]:
    """Workers for a ``.tar.gz`` of ``size`` bytes (forked.Pool), forked before its
    inflater thread starts; None where one process reads (too small, one CPU, not Linux,
    another thread). A worker decodes the jobs of any file read with ``need``, or with
    it without slim pods (as _LoadState.need reads a file before the snapshot's time)."""
    n = forked.processes()
    if size < FORK_MIN_TARBALL or n < 2 or not forked.can_fork():
        return None
    shared: dict[str, _Shared] = {}
    # a file read before the snapshot says when it was taken is read without slim pods (_LoadState.need)
    needs = {need.slim_pods: need, False: _without_slim_pods(need)}

    def work(meta: tuple, text: Any) -> tuple[bool, Any]:
        fname, sep, comma_off, head_kind, slim = meta
        return _job(text, _Cut(sep, comma_off, head_kind), needs[slim], fname, shared.setdefault(fname, _Shared()))

    return forked.Pool(n - 1, work)


FORKED_READS = 0        # files read by several processes, and
FORK_GAVE_UP = 0        # reads that went on serially after a process failed, and
POOL_JOBS_SENT = 0      # jobs a .tar.gz's workers took (tests read them)


# ------------------------------------------------------------------ loading, file by file


_COUNTED = frozenset({"Node", "Pod", "Event", "ResourceQuota"}) | O.GENERIC_KINDS   # what makes a snapshot non-empty


class _LoadState:
    def __init__(self, need: Need):
        self.wanted = need
        self.skipped: set[str] = set()
        self.captured = False
        self.pool: Optional[Any] = None     # forked workers decoding for ``wanted`` (a .tar.gz)

    @property
    def need(self) -> Need:
        """Slim pods only when the snapshot says when it was taken: without capturedAt,
        "now" is the newest timestamp of every pod (Snapshot.now), which slim records lack."""
        if self.wanted.slim_pods and not self.captured:
            return _without_slim_pods(self.wanted)
        return self.wanted


def _without_slim_pods(need: Need) -> Need:
    import dataclasses

    return dataclasses.replace(need, slim_pods=False)


def _skip_kind(name: str, need: Need) -> Optional[str]:
    """The kind a file named as ``snapshot save`` names them holds, when the command
    does not need it (the file is then not read, if its first object is of that kind)."""
    if not need.by_name or need.kinds is None or "/" in name or not name.endswith(".json"):
        return None
    kind = STEM_KINDS.get(name[:-5])
    return kind if kind is not None and not need.wants(kind) else None


class _Recorder:
    """What decode_into adds, recorded in order into a _FileResult instead of a Snapshot."""

    def __init__(self, out: _FileResult):
        self.out = out
        self.malformed = self

    def extend(self, problems: list[Any]) -> None:
        if problems:
            self.out.records.append((None, (list(problems), None, None)))

    def add(self, kind: str, rec: Any) -> None:
        self.out.records.append((kind, rec))


def _load_object_stream(snap: Snapshot, f: Any, name: str, read_all: Callable[[], bytes], st: _LoadState,
                        results: Optional[dict[str, _FileResult]] = None, tar: Optional[Path] = None,
                        shown: Optional[str] = None) -> None:
    """One top-level object file: JSON Lists streamed, the rest as before. What it
    adds goes into ``snap`` now, or into ``results[name]`` to be added later."""
    out = _FileResult()
    _load_object_into(out, f, name, read_all, st, tar, shown)
    if results is not None:
        results[name] = out
    else:
        out.commit(snap)


def _load_object_into(out: _FileResult, f: Any, name: str, read_all: Callable[[], bytes], st: _LoadState,
                      tar: Optional[Path] = None, shown: Optional[str] = None) -> None:
    reader = _Reader(f, shown or name, tar)
    reader.more(0)
    while not reader.eof and not reader.buf.strip():
        reader.more(0)
    if not reader.buf.strip():
        raise SourceError(f"snapshot file {name}: empty")
    if name.endswith(".json") or reader.buf.lstrip()[:1] in (b"{", b"["):
        skip = _skip_kind(name, st.need)
        try:
            res = _stream_json_file(reader, name, st.need, skip, st.pool)
        except _Fallback:
            res = False
        if res is None:
            st.skipped.add(skip)
            return
        if res is not False:
            out.records = res.records
            st.skipped |= res.skipped
            return
        data = read_all()
        items = _iter_json_items(data, name)
    else:
        while not reader.eof:
            reader.more(0)
        data = reader.whole()
        items = _iter_yaml_items(data, name)
    if decode_into(_Recorder(out), items, name) == 0 and not _is_empty_list(data):  # type: ignore[arg-type]
        raise SourceError(f"snapshot file {name}: holds no Kubernetes objects")


def _finish(snap: Snapshot, st: _LoadState, shown: str) -> None:
    if not (snap.nodes or snap.pods or snap.events or snap.generic or snap.quotas or st.skipped & _COUNTED):
        raise SourceError(f"snapshot {shown}: holds no Kubernetes objects")
    if not snap.nodes and st.wanted.wants("Node"):
        snap.gaps.setdefault(NODES, Gap("nodes", "absent", "the snapshot holds no Node objects"))


def _read_meta(snap: Snapshot, data: bytes) -> None:
    try:
        meta = json.loads(data)
        snap.captured_at = parse_time(meta.get("capturedAt"))
        snap.context = meta.get("context")
    except (ValueError, AttributeError) as e:
        raise SourceError(f"snapshot file {META_FILE}: not valid snapshot metadata ({e})") from None
    _restore_gaps(snap, meta)


def _load_files(files: SnapshotFiles, need: Need) -> Snapshot:
    """A directory or a single file (or a tarball read as before), file by file."""
    snap = Snapshot(source="snapshot")
    st = _LoadState(need)
    object_files = files.top_level_object_files()
    if not object_files:
        raise SourceError(f"snapshot {files.shown}: no JSON or YAML object files found")
    names = set(files.names)
    if META_FILE in names:
        _read_meta(snap, files.read(META_FILE))
    st.captured = snap.captured_at is not None
    for name in object_files:
        if files.opener is not None:
            with files.opener(name) as f:
                _load_object_stream(snap, f, name, lambda name=name: files.read(name), st, shown=files.read_name(name))
        else:
            _load_object_stream(snap, io.BytesIO(files.read(name)), name, lambda name=name: files.read(name), st)
    _finish(snap, st, files.shown)

    def load_log(ns: str, pod: str, container: str, previous: bool) -> Optional[str]:
        name = f"logs/{ns}/{pod}/{container}{'.previous' if previous else ''}.log"
        if name not in names:
            return None
        return files.read(name).decode("utf-8", errors="replace")

    snap.logs = LogStore(load_log)
    for name in names:
        _side_file(snap, name, lambda name=name: files.read(name))
    return snap


def _side_file(snap: Snapshot, name: str, read: Callable[[], bytes]) -> None:
    if name.startswith("metrics/") and name.endswith(".prom"):
        snap.metrics[Path(name).stem] = read().decode("utf-8", errors="replace")
    elif name.startswith("probes/") and name.endswith(".json"):
        try:
            snap.probes[Path(name).stem] = json.loads(read())
        except ValueError:
            snap.malformed.append(f"probe file {name}: not valid JSON")


class _TarFallback(Exception):
    """The tarball is read as before (names re-read, members by random access)."""


MAX_KEPT_LOG_BYTES = 256 << 20     # logs of a streamed tarball kept in memory; beyond, re-read on demand


def _load_tarball_stream(p: Path, need: Need) -> Snapshot:
    """One pass over the tarball, member by member as they come (never all of it in
    memory, never decompressed twice): the same checks as _open_tarball, in order."""
    from .targz import open_stream

    global POOL_JOBS_SENT
    try:
        raw = open(p, "rb")
    except OSError as e:
        raise SourceError(f"snapshot {p}: not a readable tar.gz bundle ({e})") from None
    with raw:
        # workers are forked before the inflater's thread starts (forked.can_fork)
        pool = _open_pool(os.fstat(raw.fileno()).st_size, need)
        try:
            try:
                tf, inflater = open_stream(raw)
            except (tarfile.TarError, OSError, EOFError) as e:
                raise SourceError(f"snapshot {p}: not a readable tar.gz bundle ({e})") from None
            try:
                return _load_tarball_members(p, need, tf, pool)
            finally:
                if inflater is not None:
                    inflater.close()
        except BaseException:
            if pool is not None:
                pool.close(kill=True)
                pool = None
            raise
        finally:
            if pool is not None:
                POOL_JOBS_SENT += pool.sent
                pool.close()


def _load_tarball_members(p: Path, need: Need, tf: tarfile.TarFile, pool: Optional[Any] = None) -> Snapshot:
    snap = Snapshot(source="snapshot")
    st = _LoadState(need)
    st.pool = pool
    prefix: Optional[str] = None
    seen_names: set[str] = set()
    results: dict[str, _FileResult] = {}
    objects = 0
    logs: dict[str, bytes] = {}
    kept_logs = 0
    lazy_logs: set[str] = set()
    with tf:
        for m, name, parts in safe_members(tf, p):
            # a single top directory is stripped, as _open_tarball strips it
            top = parts[0] if len(parts) > 1 else ""
            if prefix is None:
                prefix = top + "/" if top else ""
            elif prefix and top + "/" != prefix:
                raise _TarFallback()          # not one top directory after all
            rel = name[len(prefix):] if prefix else name
            if rel in seen_names:
                raise _TarFallback()          # a name twice: the last one counts
            seen_names.add(rel)
            if rel == META_FILE:
                _read_meta(snap, _member_bytes(tf, m, p, rel))
                st.captured = snap.captured_at is not None and not objects
            elif "/" not in rel and rel.lower().endswith(OBJECT_SUFFIXES):
                objects += 1
                f = tf.extractfile(m)
                if f is None:
                    raise SourceError(f"snapshot {p}: cannot read member {rel!r}")
                try:
                    _load_object_stream(snap, f, rel, lambda rel=rel: _reread_member(p, rel), st, results, p)
                except (tarfile.TarError, OSError, EOFError) as e:
                    raise SourceError(f"snapshot {p}: member {rel!r} could not be read ({e})") from None
            elif rel.startswith("logs/") and rel.endswith(".log"):
                if kept_logs + m.size <= MAX_KEPT_LOG_BYTES:
                    logs[rel] = _member_bytes(tf, m, p, rel)
                    kept_logs += m.size
                else:
                    lazy_logs.add(rel)
            elif rel.startswith(("metrics/", "probes/")):
                data = _member_bytes(tf, m, p, rel)
                _side_file(snap, rel, lambda data=data: data)
    if not objects:
        raise SourceError(f"snapshot {p}: no JSON or YAML object files found")
    for name in sorted(results):          # in name order, as a directory's files are read
        results[name].commit(snap)
    _finish(snap, st, str(p))

    def load_log(ns: str, pod: str, container: str, previous: bool) -> Optional[str]:
        name = f"logs/{ns}/{pod}/{container}{'.previous' if previous else ''}.log"
        data = logs.get(name)
        if data is None and name in lazy_logs:
            data = _reread_member(p, name)
        return None if data is None else data.decode("utf-8", errors="replace")

    snap.logs = LogStore(load_log)
    return snap


def _member_bytes(tf: tarfile.TarFile, m: tarfile.TarInfo, p: Path, name: str) -> bytes:
    try:
        f = tf.extractfile(m)
        if f is None:
            raise SourceError(f"snapshot {p}: cannot read member {name!r}")
        data = f.read(m.size + 1)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SourceError(f"snapshot {p}: member {name!r} could not be read ({e})") from None
    if len(data) > m.size:
        raise SourceError(f"snapshot {p}: member {name!r} is larger than declared")
    return data


def _reread_member(p: Path, name: str) -> bytes:
    """One member again, by random access (the rare cases a streamed pass cannot serve)."""
    return _open_tarball(p).read(name)


def _is_tarball(p: Path) -> bool:
    return p.name.lower().endswith((".tar.gz", ".tgz", ".tar"))


def load_snapshot(path: str | os.PathLike, need: Optional[Need] = None) -> Snapshot:
    """The snapshot at ``path``; ``need`` (see need_for) narrows what is read to what
    a command needs, as the live collector narrows its requests. Without it,
    everything is read in full."""
    need = need or EVERYTHING
    try:
        snap: Optional[Snapshot] = _load_snapshot(path, need)
    except _Stop:
        snap = None           # (read again outside the handler: its traceback holds the partial read)
    if snap is None:
        return load_snapshot(path, need.fallback)
    # (what was read first is let go before reading again: never two snapshots at once)
    if need.fallback is not None and need.retry is not None and need.retry(snap):
        del snap
        return load_snapshot(path, need.fallback)
    if need.lite and any(type(p) is O.Pod and not p.spec.nodeName and _needs_labels(p) for p in snap.pods.values()):
        import dataclasses

        # as live: a Pending pod with inter-pod rules needs the other pods' labels
        del snap
        snap = _load_snapshot(path, dataclasses.replace(need, lite=False))
    return snap


def _needs_every_node(snap: Snapshot, pod: Any) -> bool:
    from .live import needs_every_node

    return needs_every_node(snap, pod)


def _needs_labels(p: Any) -> bool:
    from .live import needs_pod_labels

    return needs_pod_labels(p)


def _pending_need_labels(snap: Snapshot) -> bool:
    """Whether bound pods were read without labels and a Pending pod has inter-pod
    rules (which match other pods' labels)."""
    pods, full = snap.pods.values(), O.Pod
    return any(type(p) is O.BoundPodLite for p in pods) and any(
        _needs_labels(p) for p in pods if type(p) is full and not p.spec.nodeName)


def _load_snapshot(path: str | os.PathLike, need: Need) -> Snapshot:
    p = resolve_snapshot(path)
    enabled = gc.isenabled()
    gc.disable()           # as KubeAPI.list: no collector passes over millions of young records
    try:
        if p.exists() and not p.is_dir() and _is_tarball(p):
            try:
                if stat.S_ISREG(os.stat(p).st_mode):
                    return _load_tarball_stream(p, need)
            except (_TarFallback, OSError):
                pass
        return _load_files(open_snapshot(path), need)
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


def _raw_kind(d: Any, list_kind: str) -> str:
    """An item's kind as _iter_json_items finds it (its own, else its typed list's)."""
    if not isinstance(d, dict):
        return ""
    kind, version = d.get("kind", ""), d.get("apiVersion", "")
    if not isinstance(kind, str) or not isinstance(version, str):
        return ""
    return kind or list_kind


_tops_dec = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])


class RawFields(dict):
    """An object as its top-level fields, each still JSON text (``msgspec.Raw``)."""


def _raw_batch(text: bytes) -> Iterator[tuple[Optional[str], Any]]:
    """(kind, item) of each item of a batch, the item as its top-level fields
    (``dict[str, msgspec.Raw]``: one pass over the batch), else as its text; kind is
    None where _raw_kind finds none (not an object, a kind or apiVersion that is not
    a string), "" where the item has no kind."""
    try:
        tops = O.decode_lenient(_tops_dec, text)
    except msgspec.ValidationError:
        tops = None
    except (msgspec.DecodeError, RecursionError):
        raise _Fallback("batch") from None
    if tops is None:          # an item that is not an object: item by item
        try:
            raws = O.decode_lenient(_raw_items_dec, text)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            raise _Fallback("batch") from None
        for r in raws:
            try:
                peek = O.decode_lenient(_peek_dec, r)
            except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
                yield None, r
                continue
            yield peek.kind, r
        return
    for top in tops:
        kind, version = top.get("kind"), top.get("apiVersion")
        try:
            k = msgspec.json.decode(kind) if kind is not None else ""
            v = msgspec.json.decode(version) if version is not None else ""
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            k = v = None
        yield (k if isinstance(k, str) and isinstance(v, str) else None), RawFields(top)


def _iter_json_stream(reader: _Reader, fname: str, read_all: Callable[[], bytes], raw: bool = False
                      ) -> Iterator[tuple[str, Any]]:
    """(kind, object as a dict) of each item of a JSON List, batch by batch; other
    files, and files the stream cannot prove, through _iter_json_items. ``raw``: a
    List's items as their JSON text (``msgspec.Raw``), not dicts (objects the whole-file
    reader finds may still come as either)."""
    done = 0
    try:
        ls = _ListStream(reader)
        for text, _spans in ls.batches():
            if raw:
                list_kind = ls.head_kind[:-4] if ls.head_kind.endswith("List") and ls.head_kind != "List" else ""
                for kind, item in _raw_batch(text):
                    if not kind and not ls.head_kind:
                        raise _Fallback("kind after items")
                    if kind is not None and (kind or list_kind):
                        done += 1
                        yield kind or list_kind, item
                continue
            try:
                items = _any_items_dec.decode(text)
            except (msgspec.ValidationError, UnicodeDecodeError):
                items = [O.decode_lenient(msgspec.json, raw) for raw in O.decode_lenient(_raw_items_dec, text)]
            except (msgspec.DecodeError, RecursionError):
                raise _Fallback("batch") from None
            list_kind = ls.head_kind[:-4] if ls.head_kind.endswith("List") and ls.head_kind != "List" else ""
            for d in items:
                if isinstance(d, dict) and not d.get("kind") and not ls.head_kind:
                    raise _Fallback("kind after items")
                kind = _raw_kind(d, list_kind)
                if kind:
                    d.setdefault("kind", kind)
                    done += 1
                    yield kind, d
        return
    except _Fallback:
        pass
    data = read_all()
    skip = done
    for kind, raw_item in _iter_json_items(data, fname):
        if raw and kind and not isinstance(raw_item, dict):
            if skip:
                skip -= 1
                continue
            yield kind, raw_item
            continue
        try:
            d = O.decode_lenient(msgspec.json, raw_item) if not isinstance(raw_item, dict) else raw_item
        except RecursionError:
            continue
        if kind and isinstance(d, dict):
            if skip:
                skip -= 1
                continue
            d.setdefault("kind", kind)
            yield kind, d


def iter_raw_objects(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Every object of a snapshot as a plain dict (for the local API server and
    re-bundling), file by file and, for JSON Lists, batch by batch: never a whole
    file in memory."""
    for _kind, d in iter_source_items(path, raw=False):
        yield d


def iter_source_items(path: str | os.PathLike, raw: bool = True) -> Iterator[tuple[str, Any]]:
    """(kind, object) of every object of a snapshot, as iter_raw_objects reads them;
    with ``raw``, JSON objects come unparsed (their text as ``msgspec.Raw`` or bytes,
    or their top-level fields as RawFields; the kind not filled in) and YAML ones as
    dicts: re-bundling redacts the text (collect/redaction.py rewrite_item) without
    parsing every object."""
    files = open_snapshot(path)
    for name in files.top_level_object_files():
        if files.opener is not None:
            f = files.opener(name)
        else:
            f = io.BytesIO(files.read(name))
        with f:
            reader = _Reader(f, files.read_name(name))
            reader.more(0)
            if name.endswith(".json") or reader.buf.lstrip()[:1] in (b"{", b"["):
                yield from _iter_json_stream(reader, name, lambda name=name: files.read(name), raw)
            else:
                while not reader.eof:
                    reader.more(0)
                for kind, d in _iter_yaml_items(reader.whole(), name):
                    if kind and isinstance(d, dict):
                        d.setdefault("kind", kind)
                        yield kind, d
