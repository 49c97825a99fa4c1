"""Reading a snapshot from disk: a file, a directory, or a ``.tar.gz`` of a directory.

Formats (docs/snapshots.md): a file holds JSON or YAML —
one object, a typed list, a ``v1 List`` of mixed kinds, or YAML documents — exactly
what ``kubectl get … -o json|yaml`` prints. A directory holds such files at its top
level plus optional ``logs/``, ``metrics/``, ``probes/`` and ``snapshot.json``.

JSON is decoded with msgspec straight into the slim records (item by item, so one
malformed object is reported by name instead of failing the file). Bundles are read
in memory from the tarball, never extracted; unsafe members are refused.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tarfile
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import msgspec

from ..errors import SourceError
from ..model import objects as O
from ..model.snapshot import NODES, Gap, LogStore, Snapshot, parse_time

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

    def __init__(self, path: Path, names: list[str], read: Callable[[str], bytes], single: bool = False):
        self.path = path
        self.names = names
        self.read = read
        self.single = single

    single: bool = False      # one file given alone: an object file whatever its name

    @property
    def shown(self) -> str:
        """The snapshot as the user named it (a single file, not its folder)."""
        return str(self.path / self.names[0]) if self.single else str(self.path)

    def top_level_object_files(self) -> list[str]:
        if self.single:
            return list(self.names)
        return sorted(n for n in self.names if "/" not in n and n.lower().endswith(OBJECT_SUFFIXES) and n != META_FILE)


def _read_regular(path: Path, shown: str) -> bytes:
    """A regular file's bytes, refused (one line naming it) when it is not a regular
    file, is over MAX_MEMBER_BYTES, or cannot be read."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"snapshot file {shown}: not a regular file")
        if st.st_size > MAX_MEMBER_BYTES:
            raise SourceError(f"snapshot file {shown}: {st.st_size} bytes, over the {MAX_MEMBER_BYTES} limit; refusing")
        with open(path, "rb") as f:
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

        return SnapshotFiles(p, names, read_dir)
    try:
        mode = os.stat(p).st_mode
    except OSError as e:
        raise SourceError(f"snapshot {p} could not be read: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        raise SourceError(f"snapshot {p}: not a regular file, directory or .tar.gz bundle")
    if p.name.lower().endswith((".tar.gz", ".tgz", ".tar")):
        return _open_tarball(p)
    return SnapshotFiles(p.parent, [p.name], lambda name: _read_regular(p, str(p)), single=True)


def _member_name(name: str) -> str:
    """A tar member's name without the ``./`` that ``tar -C dir .`` puts in front."""
    while name.startswith("./"):
        name = name[2:]
    return "" if name == "." else name.rstrip("/")


def _open_tarball(p: Path) -> SnapshotFiles:
    # Members are checked one header at a time as the stream is read (never
    # getmembers(), which decompresses the whole stream first): a small .tgz holding
    # a huge member is refused at that member's header, before its data is inflated.
    total = 0
    count = 0
    by_name: dict[str, tarfile.TarInfo] = {}
    prefix = None
    try:
        tf = tarfile.open(p, "r:*")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SourceError(f"snapshot {p}: not a readable tar.gz bundle ({e})") from None
    while True:
        try:
            m = tf.next()
        except (tarfile.TarError, OSError, EOFError) as e:
            raise SourceError(f"snapshot {p}: not a readable tar.gz bundle ({e})") from None
        if m is None:
            break
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
    nodes ("billion laughs": nine levels of nine aliases are 387 million nodes that
    every later walk of the data would visit). Sizes are memoised per node, so the
    count costs one pass over the composed graph, not over its expansion."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        value = node.value
        n = 1
        if isinstance(value, list):
            for child in value:
                n += sum(size(c) for c in child) if isinstance(child, tuple) else size(child)
                if n > MAX_YAML_EXPANDED_NODES:
                    break
        sizes[id(node)] = n
        return n

    total = 0
    for doc in docs:
        if doc is not None:
            total += size(doc)
        if total > MAX_YAML_EXPANDED_NODES:
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
        try:
            rec, problems = O.decode_salvaging(kind, raw, source=fname)
        except RecursionError:
            name = _guess(rb'"name"\s*:\s*"([^"\\]{1,253})"', raw) or "?"
            problems, rec = [O.Unreadable(kind, None, name, "", "nested deeper than the parser's recursion limit",
                                          kept=False, source=fname)], None
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


def load_snapshot(path: str | os.PathLike) -> Snapshot:
    files = open_snapshot(path)
    snap = Snapshot(source="snapshot")
    object_files = files.top_level_object_files()
    if not object_files:
        raise SourceError(f"snapshot {files.shown}: no JSON or YAML object files found")
    names = set(files.names)
    if META_FILE in names:
        try:
            meta = json.loads(files.read(META_FILE))
            snap.captured_at = parse_time(meta.get("capturedAt"))
            snap.context = meta.get("context")
        except (ValueError, AttributeError) as e:
            raise SourceError(f"snapshot file {META_FILE}: not valid snapshot metadata ({e})") from None
        _restore_gaps(snap, meta)
    for name in object_files:
        data = files.read(name)
        if not data.strip():
            raise SourceError(f"snapshot file {name}: empty")
        if name.endswith(".json") or data.lstrip()[:1] in (b"{", b"["):
            items = _iter_json_items(data, name)
        else:
            items = _iter_yaml_items(data, name)
        if decode_into(snap, items, name) == 0 and not _is_empty_list(data):
            raise SourceError(f"snapshot file {name}: holds no Kubernetes objects")
    if not (snap.nodes or snap.pods or snap.events or snap.generic or snap.quotas):
        raise SourceError(f"snapshot {files.shown}: holds no Kubernetes objects")
    if not snap.nodes:
        snap.gaps.setdefault(NODES, Gap("nodes", "absent", "the snapshot holds no Node objects"))

    def load_log(ns: str, pod: str, container: str, previous: bool) -> Optional[str]:
        name = f"logs/{ns}/{pod}/{container}{'.previous' if previous else ''}.log"
        if name not in names:
            return None
        return files.read(name).decode("utf-8", errors="replace")

    snap.logs = LogStore(load_log)
    for name in names:
        if name.startswith("metrics/") and name.endswith(".prom"):
            snap.metrics[Path(name).stem] = files.read(name).decode("utf-8", errors="replace")
        elif name.startswith("probes/") and name.endswith(".json"):
            try:
                snap.probes[Path(name).stem] = json.loads(files.read(name))
            except ValueError:
                snap.malformed.append(f"probe file {name}: not valid JSON")
    return snap


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


def iter_raw_objects(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Every object of a snapshot as a plain dict (for the local API server)."""
    files = open_snapshot(path)
    for name in files.top_level_object_files():
        data = files.read(name)
        if name.endswith(".json") or data.lstrip()[:1] in (b"{", b"["):
            for kind, raw in _iter_json_items(data, name):
                try:
                    d = O.decode_lenient(msgspec.json, raw) if not isinstance(raw, dict) else raw
                except RecursionError:
                    continue
                if kind and isinstance(d, dict):
                    d.setdefault("kind", kind)
                    yield d
        else:
            for kind, d in _iter_yaml_items(data, name):
                if kind and isinstance(d, dict):
                    d.setdefault("kind", kind)
                    yield d


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
