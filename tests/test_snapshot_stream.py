"""Issue 18: snapshots read as lean as live.

A List file is cut into batches of whole items and decoded batch by batch into the
records a command needs (gpuctl/collect/files.py, "streaming"); a tarball is read
member by member; `snapshot save` streams. These tests hold the streaming reader to
the whole-file reader it replaces (kept in files.py as the fallback: _iter_json_items
+ decode_into), to the live collector's records, and to the limits of before."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import SCENARIOS, snapshot_of
from gpuctl.collect import files as F
from gpuctl.errors import SourceError
from gpuctl.model.snapshot import Snapshot


@pytest.fixture
def tiny_batches(monkeypatch):
    """Chunks and batches of a few bytes, so that every cut and refill is exercised."""
    monkeypatch.setattr(F, "STREAM_CHUNK", 61)
    monkeypatch.setattr(F, "STREAM_BATCH", 97)


# ------------------------------------------------------------------ the splitter against json.loads

_STRINGS = st.text(alphabet=st.sampled_from(list('ab[]{},:"\\ \n\té/')), max_size=12)
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), _STRINGS)
_VALUE = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(_STRINGS, inner, max_size=3)), max_leaves=12)
_KIND = st.sampled_from(["Pod", "Node", "Event", "ConfigMap", "Widget", "Secret"])


@st.composite
def _item(draw):
    item = {"kind": draw(_KIND), "apiVersion": "v1",
            "metadata": {"name": draw(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)), "namespace": "ml"}}
    extra = draw(st.dictionaries(st.sampled_from(["spec", "status", "data", "x"]), _VALUE, max_size=3))
    item.update(extra)
    keys = list(item)
    order = draw(st.permutations(keys))
    return {k: item[k] for k in order}


@st.composite
def _list_file(draw):
    items = draw(st.lists(_item(), max_size=8))
    style = draw(st.sampled_from(["compact", "per-line", "indent2", "indent4", "kubectl"]))
    items_first = draw(st.booleans())
    head = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}

    def enc(o, indent=None):
        return json.dumps(o, indent=indent, ensure_ascii=draw(st.booleans()))

    if style == "compact":
        body = "[" + ",".join(enc(i) for i in items) + "]"
    elif style == "per-line":
        body = "[\n" + ",\n".join(enc(i) for i in items) + "\n]"
    else:
        n = {"indent2": 2, "indent4": 4, "kubectl": 4}[style]
        body = json.dumps(items, indent=n)
    rest = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    text = ('{"items": ' + body + ", " + rest + "}") if items_first else ("{" + rest + ', "items": ' + body + "}")
    return text.encode(), items


def _write(tmp: Path, name: str, data: bytes) -> Path:
    p = tmp / name
    p.write_bytes(data)
    return p


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_list_file())
def test_the_splitter_yields_what_json_loads_reads(tmp_path_factory, tiny_batches, doc):
    data, items = doc
    d = tmp_path_factory.mktemp("split")
    _write(d, "dump.json", data)
    got = list(F.iter_raw_objects(d / "dump.json"))
    assert got == [i for i in json.loads(data)["items"]]
    assert items == json.loads(data)["items"]


def _reference(path: Path) -> Snapshot:
    """The whole-file reader of before, for one JSON file."""
    data = path.read_bytes()
    snap = Snapshot(source="snapshot")
    if not data.strip():
        raise SourceError(f"snapshot file {path.name}: empty")
    if F.decode_into(snap, F._iter_json_items(data, path.name), path.name) == 0 and not F._is_empty_list(data):
        raise SourceError(f"snapshot file {path.name}: holds no Kubernetes objects")
    return snap


def _records(snap: Snapshot) -> dict:
    b = msgspec.to_builtins
    return {"nodes": {k: b(v) for k, v in snap.nodes.items()}, "pods": {k: b(v) for k, v in snap.pods.items()},
            "events": [b(e) for e in snap.events], "generic": {k: [b(o) for o in v] for k, v in snap.generic.items()},
            "malformed": [str(m) for m in snap.malformed]}


def _outcome(fn, path):
    try:
        return "ok", _records(fn(path))
    except SourceError as e:
        return "error", str(e)


def _streamed_file(path: Path) -> Snapshot:
    snap = Snapshot(source="snapshot")
    st_ = F._LoadState(F.EVERYTHING)
    with open(path, "rb") as f:
        F._load_object_stream(snap, f, path.name, path.read_bytes, st_)
    return snap


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_list_file(), cut=st.integers(0, 10**6), junk=st.sampled_from([b"", b"x", b"]", b"}", b",", b'"', b"\\"]))
# "items" made a string before a malformed byte: the list decoder stops at the type, the peek at the byte
@example(doc=(b'{"items": [], "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}', []),
         cut=2880, junk=b'"')
def test_truncated_or_malformed_files_fail_as_before(tmp_path_factory, tiny_batches, doc, cut, junk):
    data, _ = doc
    variants = [data, data[: cut % (len(data) + 1)], data[: cut % (len(data) + 1)] + junk + data[cut % (len(data) + 1):]]
    d = tmp_path_factory.mktemp("bad")
    for i, v in enumerate(variants):
        if not v.strip():
            continue
        p = _write(d, f"f{i}.json", v)
        assert _outcome(_streamed_file, p) == _outcome(_reference, p)


def test_empty_lists_items_not_first_and_kindless_items(tmp_path, tiny_batches):
    cases = {
        "empty.json": b'{"apiVersion": "v1", "items": [], "kind": "List", "metadata": {}}',
        "empty-spaced.json": b'{\n  "items": [\n  ],\n  "kind": "PodList"\n}\n',
        "podlist.json": b'{"kind": "PodList", "items": [{"metadata": {"name": "a", "namespace": "ml"}}, '
                        b'{"kind": "Node", "metadata": {"name": "n"}}]}',
        "kind-last.json": b'{"items": [{"metadata": {"name": "a", "namespace": "ml"}}], "kind": "PodList"}',
        "not-a-list.json": b'{"items": 3, "kind": "List"}',
        "object.json": b'{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}}',
        "array.json": b'[{"kind": "Node"}]',
        "nested-items.json": b'{"metadata": {"items": [1]}, "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]}',
        "items-in-a-key.json": b'{"x\\"items": [{"kind": "Node", "metadata": {"name": "n"}}]}',
        "items-twice.json": b'{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}], "items": []}',
        "deep.json": b'{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "ok"}}, ' + b"[" * 5000 + b"]" * 5000 + b"]}",
    }
    for name, data in cases.items():
        p = _write(tmp_path, name, data)
        assert _outcome(_streamed_file, p) == _outcome(_reference, p), name


# ------------------------------------------------------------------ the same records as before, and as live


@pytest.mark.parametrize("scenario", [s for s in sorted(SCENARIOS.iterdir()) if (s / "snapshot").is_dir()][:40],
                         ids=lambda s: s.name)
def test_a_scenario_loads_to_the_same_snapshot_as_the_whole_file_reader(scenario, tiny_batches):
    snapdir = snapshot_of(scenario)
    files = F.open_snapshot(snapdir)
    ref = Snapshot(source="snapshot")
    for name in files.top_level_object_files():
        data = files.read(name)
        items = F._iter_json_items(data, name) if (name.endswith(".json") or data.lstrip()[:1] in (b"{", b"[")) \
            else F._iter_yaml_items(data, name)
        F.decode_into(ref, items, name)
    assert _records(F.load_snapshot(snapdir)) == _records(ref)


def test_offline_records_are_the_records_the_live_path_decodes(serve, tmp_path):
    """Serve a snapshot with the local API server, collect it live, load it offline for
    the same command: the same nodes, and each pod as the same record fields."""
    from gpuctl.collect.kube import KubeAPI
    from gpuctl.collect.live import collect_cluster

    snapdir = snapshot_of(SCENARIOS / "untolerated-taint")
    srv, kc = serve(snapdir)
    live = collect_cluster(KubeAPI(kc), for_pending=False)
    offline = F.load_snapshot(snapdir, F.need_for("collect_cluster", {}))
    assert {k: msgspec.to_builtins(v) for k, v in offline.nodes.items()} == \
        {k: msgspec.to_builtins(v) for k, v in live.nodes.items()}
    bound = {k: p for k, p in live.pods.items() if p.spec.nodeName}
    assert bound and set(bound) <= set(offline.pods)
    for key, rec in bound.items():
        # the same record type, with the same fields
        assert type(offline.pods[key]) is type(rec) and offline.pods[key] == rec, key
    assert offline.captured_at is not None
    pending = {k: p for k, p in live.pods.items() if not p.spec.nodeName}
    for key, rec in pending.items():
        assert type(offline.pods[key]) is type(rec) and offline.pods[key] == rec, key


def test_label_nodes_does_not_need_pods_json(cli, tmp_path):
    """What a user expects: a command reads what it needs. label-nodes needs nodes only,
    so a corrupt pods.json of a bundle does not stop it; nodes capacity needs pods and
    fails on it, naming the file."""
    src = snapshot_of(SCENARIOS / "untolerated-taint")
    out = tmp_path / "bundle"
    assert cli("snapshot", "save", str(out), "--snapshot", str(src)).code == 0
    good = cli("label-nodes", "--snapshot", str(out), "-o", "json").json()
    pods = out / "pods.json"
    text = pods.read_bytes()
    pods.write_bytes(text[: len(text) // 2])        # truncated mid-way
    r = cli("label-nodes", "--snapshot", str(out), "-o", "json")
    assert r.code == 0, r.err
    assert [n["node"] for n in r.json()["nodes"]] == [n["node"] for n in good["nodes"]]
    bad = cli("nodes", "capacity", "--snapshot", str(out))
    assert bad.code == 4 and "pods.json" in bad.err


# ------------------------------------------------------------------ tarballs and snapshot save


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_a_tarball_member_over_the_limit_is_still_refused(tmp_path, monkeypatch):
    node = json.dumps({"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]}).encode()
    big = _tar(tmp_path / "b.tar.gz", {"b/nodes.json": node, "b/pods.json": b" " * 5000})
    monkeypatch.setattr(F, "MAX_MEMBER_BYTES", 4096)
    with pytest.raises(SourceError, match="over the 4096 limit; refusing"):
        F.load_snapshot(big)
    monkeypatch.setattr(F, "MAX_MEMBER_BYTES", 1 << 20)
    monkeypatch.setattr(F, "MAX_BUNDLE_BYTES", 2048)
    with pytest.raises(SourceError, match="expands to over 2048 bytes"):
        F.load_snapshot(big)


def test_tarballs_in_any_member_order_read_as_their_directory(tmp_path, tiny_batches):
    src = snapshot_of(SCENARIOS / "untolerated-taint")
    members = {f"b/{p.relative_to(src).as_posix()}": p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()}
    for order in (sorted(members), sorted(members, reverse=True)):
        t = _tar(tmp_path / f"o{len(order)}-{order[0].replace('/', '_')}.tar.gz", {k: members[k] for k in order})
        a, b = F.load_snapshot(t), F.load_snapshot(src)
        assert _records(a) == _records(b)
        assert a.captured_at == b.captured_at and a.gaps.keys() == b.gaps.keys()


def test_snapshot_save_round_trip_is_byte_for_byte(cli, tmp_path, serve):
    """Saved live, then re-bundled from that bundle: the same object files and logs, byte for byte."""
    snapdir = snapshot_of(SCENARIOS / "untolerated-taint")
    srv, kc = serve(snapdir)
    first, second = tmp_path / "first", tmp_path / "second"
    assert cli("snapshot", "save", str(first), "--kubeconfig", kc).code == 0
    assert cli("snapshot", "save", str(second), "--snapshot", str(first)).code == 0
    a = {p.relative_to(first).as_posix(): p.read_bytes() for p in first.rglob("*") if p.is_file()}
    b = {p.relative_to(second).as_posix(): p.read_bytes() for p in second.rglob("*") if p.is_file()}
    a.pop("snapshot.json"), b.pop("snapshot.json")
    assert a == b
    ma, mb = (json.loads((d / "snapshot.json").read_text()) for d in (first, second))
    assert (ma["capturedAt"], ma["counts"]) == (mb["capturedAt"], mb["counts"])


@pytest.mark.parametrize("indent", [None, 2, 4])
def test_large_lists_go_through_the_batched_path_not_the_whole_file_reader(tmp_path, monkeypatch, indent):
    monkeypatch.setattr(F, "STREAM_CHUNK", 4096)
    monkeypatch.setattr(F, "STREAM_BATCH", 8192)
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ml", "labels": {"a": "b"}},
             "spec": {"nodeName": f"n{i % 7}" if i % 5 else None, "containers": [{"name": "c", "resources": {
                 "requests": {"nvidia.com/gpu": "1"}}}]}, "status": {"phase": "Running" if i % 5 else "Pending",
                                                                      "conditions": [{"type": "Ready", "status": "True"}]}}
            for i in range(400)]
    if indent is None:
        text = '{"apiVersion": "v1", "kind": "List", "items": [\n' + ",\n".join(json.dumps(p) for p in pods) + "\n]}"
    else:
        text = json.dumps({"apiVersion": "v1", "items": pods, "kind": "List"}, indent=indent)
    p = _write(tmp_path, "pods.json", text.encode())
    need = F.Need(slim_pods=True, full_pod=lambda rec: not rec.spec.nodeName)
    with open(p, "rb") as f:
        reader = F._Reader(f, "pods.json")
        reader.more(0)
        res = F._stream_json_file(reader, "pods.json", need)      # _Fallback would fail the test
    snap = Snapshot(source="snapshot")
    res.commit(snap)
    assert list(snap.pods) == [f"ml/p{i}" for i in range(400)]
    assert {type(r).__name__ for k, r in snap.pods.items()} == {"BoundPod", "Pod"}
    assert all(type(r).__name__ == ("Pod" if int(k[4:]) % 5 == 0 else "BoundPod") for k, r in snap.pods.items())
    ref = _reference(p)
    for k, r in snap.pods.items():
        assert msgspec.convert(msgspec.to_builtins(ref.pods[k]), type(r)) == r


# ------------------------------------------------------------------ what a command reads, against everything


REALWORLD_CASES = sorted(p.parent for p in (SCENARIOS.parent / "realworld").glob("*/case.yaml"))


def _as_saved(src: Path, dest: Path) -> Path:
    """The snapshot as `snapshot save` writes it: nodes.json, pods.json, events.json and
    other.json, one item a line, a capturedAt (the snapshot's own "now" when it has
    none: the slim and skipping paths are taken only with one), its side files."""
    import shutil

    from gpuctl.model.snapshot import Snapshot as _S

    by_file: dict[str, list[dict]] = {}
    for d in F.iter_raw_objects(src):
        by_file.setdefault({"Node": "nodes.json", "Pod": "pods.json", "Event": "events.json"}.get(d.get("kind"), "other.json"),
                           []).append(d)
    dest.mkdir(parents=True)
    for name, items in by_file.items():
        body = ",\n".join(json.dumps(i, separators=(",", ":")) for i in items)
        _write(dest, name, ('{"apiVersion": "v1", "items": [\n' + body + '\n], "kind": "List", "metadata": {}}\n').encode())
    for sub in ("logs", "metrics", "probes"):
        if (src / sub).is_dir():
            shutil.copytree(src / sub, dest / sub)
    meta = json.loads((src / F.META_FILE).read_text()) if (src / F.META_FILE).is_file() else {}
    if not meta.get("capturedAt"):
        now = F.load_snapshot(src).now() if isinstance(F.load_snapshot(src), _S) else None
        meta["capturedAt"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    (dest / F.META_FILE).write_text(json.dumps(meta))
    return dest


def _commands(snapdir: Path, target: list[str]) -> list[list[str]]:
    """The case's own diagnosis, and the commands whose reads need_for narrows: every
    pod's and node's diagnosis (a few), diagnose pending -A, nodes capacity, label-nodes."""
    snap = F.load_snapshot(snapdir)
    nodes = sorted(snap.nodes, key=lambda n: (not snap.nodes[n].spec.unschedulable, n))[:3]
    pods = sorted(snap.pods.values(), key=lambda p: (bool(p.spec.nodeName), p.key))[:2]
    out = [target] + [["diagnose", "node", n] for n in nodes]
    out += [["diagnose", "pod", p.metadata.name, "-n", p.metadata.namespace or "default"] for p in pods]
    out += [["diagnose", "pending", "-A"], ["nodes", "capacity"], ["label-nodes"]]
    unique: list[list[str]] = []
    for c in out:
        if c not in unique:
            unique.append(c)
    return unique


def _target_of_case(case: Path) -> list[str]:
    import yaml

    t = yaml.safe_load((case / "case.yaml").read_text())["target"]
    if t.get("node"):
        return ["diagnose", "node", t["node"]]
    if t.get("pod"):
        ns, name = t["pod"].split("/", 1)
        return ["diagnose", "pod", name, "-n", ns]
    return ["diagnose", "pod", t["target"], "-n", t["namespace"]]


def _target_of_scenario(scenario: Path) -> list[str]:
    from conftest import argv_of, expected_of

    return argv_of(expected_of(scenario))


@pytest.mark.parametrize("case", [*(p for p in sorted(SCENARIOS.iterdir()) if (p / "expected.json").is_file()),
                                  *REALWORLD_CASES], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_command_reads_what_it_needs_and_says_what_reading_everything_says(case, cli, tmp_path, monkeypatch):
    """need_for narrows what --snapshot reads as the live collector narrows its
    requests (slim pods, one node's pods, files by name): the -o json output and exit
    code must be byte for byte those of reading everything in full, for every scenario
    and real-world case, laid out as `snapshot save` writes it (capturedAt, pods.json)."""
    target = _target_of_case(case) if (case / "case.yaml").is_file() else _target_of_scenario(case)
    snapdir = _as_saved(case / "snapshot", tmp_path / "saved")
    commands = _commands(snapdir, target)
    narrowed = [cli(*c, "--snapshot", str(snapdir), "-o", "json") for c in commands]
    monkeypatch.setattr(F, "need_for", lambda collector, args=None: F.EVERYTHING)
    for c, got in zip(commands, narrowed):
        want = cli(*c, "--snapshot", str(snapdir), "-o", "json")
        assert (got.code, got.out) == (want.code, want.out), " ".join(c)


def _many_pods(tmp_path: Path, nodes: int = 4, per_node: int = 12) -> Path:
    """A saved-style directory: nodes.json, and a pods.json of many bound pods, one a line."""
    node_items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gpu-{n}"},
                   "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}
                  for n in range(nodes)]
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"w-{n}-{i}", "namespace": "ml", "labels": {"app": "w"}},
             "spec": {"nodeName": f"gpu-{n}", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
             "status": {"phase": "Running"}} for i in range(per_node) for n in range(nodes)]
    d = tmp_path / "snap"
    d.mkdir()
    for name, items in (("nodes.json", node_items), ("pods.json", pods)):
        body = ",\n".join(json.dumps(i, separators=(",", ":")) for i in items)
        _write(d, name, ('{"apiVersion": "v1", "items": [\n' + body + '\n], "kind": "List"}\n').encode())
    _write(d, "snapshot.json", b'{"capturedAt": "2026-11-20T03:12:00Z"}')
    return d


def test_diagnose_node_decodes_only_the_items_that_name_its_node(tmp_path, monkeypatch):
    """diagnose node keeps that node's pods, in full, and no other; of pods.json it
    decodes only the items holding the node's name (a malformed pod of another node is
    not read, as live never lists it), and says what reading everything says."""
    monkeypatch.setattr(F, "STREAM_CHUNK", 2048)
    monkeypatch.setattr(F, "STREAM_BATCH", 1024)
    d = _many_pods(tmp_path)
    text = (d / "pods.json").read_text()
    # another node's pod with a field of the wrong type: reading everything lists it
    (d / "pods.json").write_text(text.replace('"name":"w-2-5","namespace":"ml"', '"name":"w-2-5","namespace":"ml","uid":7'))
    need = F.need_for("collect_for_node", {"name": "gpu-1"})
    decoded: list[int] = []
    real = F._decode_batch

    def counting(text, spans, *a, **k):
        decoded.append(text.count(b'"kind":"Pod"'))
        return real(text, spans, *a, **k)

    monkeypatch.setattr(F, "_decode_batch", counting)
    snap = F.load_snapshot(d, need)
    assert sorted(snap.pods) == sorted(f"ml/w-1-{i}" for i in range(12))
    assert all(type(p).__name__ == "Pod" for p in snap.pods.values())
    assert sum(decoded) < 48 / 2          # most items were never parsed
    assert not snap.unreadable()
    everything = F.load_snapshot(d)
    assert {k: msgspec.to_builtins(v) for k, v in everything.pods.items() if v.spec.nodeName == "gpu-1"} == \
        {k: msgspec.to_builtins(v) for k, v in snap.pods.items()}
    assert any("w-2-5" in str(m) for m in everything.unreadable())


def test_diagnose_node_still_refuses_a_truncated_pods_json(tmp_path, cli):
    d = _many_pods(tmp_path)
    data = (d / "pods.json").read_bytes()
    (d / "pods.json").write_bytes(data[:-150])
    r = cli("diagnose", "node", "gpu-1", "--snapshot", str(d), "-o", "json")
    assert r.code == 4 and "pods.json" in r.err


def test_a_cordoned_node_is_read_again_with_every_pod(tmp_path):
    """Which Pending pods would fit a cordoned node depends on other nodes' pods:
    the node's need reads the snapshot again as before (bound pods slim, Pending in full)."""
    d = _many_pods(tmp_path)
    nodes = json.loads((d / "nodes.json").read_text())
    nodes["items"][1]["spec"] = {"unschedulable": True}
    (d / "nodes.json").write_text(json.dumps(nodes))
    snap = F.load_snapshot(d, F.need_for("collect_for_node", {"name": "gpu-1"}))
    assert len(snap.pods) == 48
    assert {type(p).__name__ for k, p in snap.pods.items() if not k.startswith("ml/w-1-")} == {"BoundPod"}


def test_diagnose_pod_of_an_unbound_target_keeps_other_bound_pods_without_labels(tmp_path):
    d = _many_pods(tmp_path)
    pods = json.loads((d / "pods.json").read_text())
    pods["items"].append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "namespace": "ml"},
                          "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}})
    (d / "pods.json").write_text(json.dumps(pods))
    snap = F.load_snapshot(d, F.need_for("collect_for_pod", {"ns": "ml", "name": "t"}))
    assert type(snap.pods["ml/t"]).__name__ == "Pod"
    assert {type(p).__name__ for k, p in snap.pods.items() if k != "ml/t"} == {"BoundPodLite"}
    # a bound target: its namespace is read in full, with labels, as before
    bound = F.load_snapshot(d, F.need_for("collect_for_pod", {"ns": "ml", "name": "w-1-1"}))
    assert {type(p).__name__ for p in bound.pods.values()} == {"Pod"}


def test_without_captured_at_diagnose_node_reads_every_pod(tmp_path):
    """"Now" is then the newest timestamp of every pod: no pod may be left unread."""
    d = _many_pods(tmp_path)
    (d / "snapshot.json").unlink()
    snap = F.load_snapshot(d, F.need_for("collect_for_node", {"name": "gpu-1"}))
    assert len(snap.pods) == 48 and {type(p).__name__ for p in snap.pods.values()} == {"Pod"}


def _add_pods(d: Path, *pods: dict) -> None:
    doc = json.loads((d / "pods.json").read_text())
    doc["items"] += list(pods)
    body = ",\n".join(json.dumps(i, separators=(",", ":")) for i in doc["items"])
    (d / "pods.json").write_text('{"apiVersion": "v1", "items": [\n' + body + '\n], "kind": "List"}\n')


_PLUGIN_POD = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "nvidia-device-plugin-daemonset-x1", "namespace": "gpu-operator",
                            "labels": {"app": "nvidia-device-plugin-daemonset"}},
               "spec": {"nodeName": "gpu-0", "containers": [{"name": "nvidia-device-plugin"}]},
               "status": {"phase": "Running", "containerStatuses": [{"name": "nvidia-device-plugin", "ready": False,
                                                                     "restartCount": 3}]}}


def _pending_pod(name: str, **spec: Any) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": {"app": "w"}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}], **spec},
            "status": {"phase": "Pending"}}


def test_diagnose_pending_keeps_bound_pods_without_labels_unless_a_pending_pod_needs_them(tmp_path, tiny_batches):
    """As live (collect_cluster for_pending): bound pods slim without labels, device-plugin
    pods (told by their labels, read with every pod) and Pending pods in full; a Pending
    pod with inter-pod rules makes the snapshot read again with every bound pod's labels."""
    d = _many_pods(tmp_path)
    _add_pods(d, _PLUGIN_POD, _pending_pod("p0"))
    need = F.need_for("collect_cluster", {"for_pending": True})
    snap = F.load_snapshot(d, need)
    kinds = {k: type(p).__name__ for k, p in snap.pods.items()}
    assert kinds.pop("gpu-operator/nvidia-device-plugin-daemonset-x1") == "Pod"
    assert kinds.pop("ml/p0") == "Pod"
    assert set(kinds.values()) == {"BoundPodLite"}
    plugin = snap.pods["gpu-operator/nvidia-device-plugin-daemonset-x1"]
    assert plugin.metadata.labels and plugin.status.containerStatuses[0].restartCount == 3
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    _add_pods(d, _pending_pod("p1", affinity=anti))
    again = F.load_snapshot(d, need)
    assert {type(p).__name__ for k, p in again.pods.items() if p.spec.nodeName and not k.startswith("gpu-operator/")} \
        == {"BoundPod"}
    assert all(p.metadata.labels == {"app": "w"} for k, p in again.pods.items() if k.startswith("ml/w-"))


@pytest.mark.parametrize("batches", ["tiny", "default"])
def test_pending_reads_only_the_labels_that_tell_a_plugin_pod_and_says_what_live_says(tmp_path, cli, serve, monkeypatch,
                                                                                         batches):
    """Bound pods are decoded for diagnose pending with only the labels _plugin_pod tests
    first (files._probe_pod_type); a pod they mark as a possible plugin is decoded again
    with all its labels. So a bad value in another label of a bound pod that is no
    plugin is never read, as live (which lists such pods without labels) never reads it;
    the device-plugin pod, the DRA kubelet-plugin pod and the Pending pod are full
    records; and the report is the live one."""
    if batches == "tiny":
        monkeypatch.setattr(F, "STREAM_CHUNK", 61)
        monkeypatch.setattr(F, "STREAM_BATCH", 97)
    d = _many_pods(tmp_path)
    odd = json.loads(json.dumps(_pending_pod("odd-bound")))
    odd["spec"]["nodeName"], odd["status"]["phase"] = "gpu-1", "Running"
    odd["metadata"]["labels"]["build"] = 7                 # not a string: unreadable, where it is read
    dra = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "nvidia-dra-driver-gpu-kubelet-plugin-x", "namespace": "nvidia-dra-driver-gpu",
                        "labels": {"nvidia-dra-driver-gpu-component": "kubelet-plugin"}},
           "spec": {"nodeName": "gpu-2", "containers": [{"name": "gpus"}]}, "status": {"phase": "Running"}}
    look_alike = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "other-component", "namespace": "nvidia-dra-driver-gpu",
                               "labels": {"nvidia-dra-driver-gpu-component": "controller", "app": "trainer"}},
                  "spec": {"nodeName": "gpu-3", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}
    _add_pods(d, _PLUGIN_POD, dra, look_alike, odd, _pending_pod("p0"))
    snap = F.load_snapshot(d, F.need_for("collect_cluster", {"for_pending": True}))
    kinds = {k: type(p).__name__ for k, p in snap.pods.items()}
    assert kinds.pop("gpu-operator/nvidia-device-plugin-daemonset-x1") == "Pod"
    assert kinds.pop("nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin-x") == "Pod"
    assert kinds.pop("ml/p0") == "Pod"
    assert set(kinds.values()) == {"BoundPodLite"} and "ml/odd-bound" in kinds
    assert not snap.unreadable()
    offline = cli("diagnose", "pending", "-A", "-o", "json", "--snapshot", str(d))
    _, kc = serve(d)
    live = cli("diagnose", "pending", "-A", "-o", "json", "--kubeconfig", kc)
    assert offline.code == live.code == 1 and offline.json() == live.json()
    assert "unreadable" not in offline.json()
    # everything read (snapshot save, diagnose pod of a bound pod's namespace): the bad label is named
    everything = F.load_snapshot(d)
    assert [u.path for u in everything.unreadable()] == [("metadata", "labels", "build")]


@pytest.mark.parametrize("batches", ["tiny", "default"])
def test_a_bad_label_of_a_possible_plugin_pod_is_named(tmp_path, cli, monkeypatch, batches):
    """A pod whose probed labels mark it as a possible device-plugin pod is decoded again
    with all its labels; one of them not a string (an API server never serves one: a
    hand-edited file) sends its batch item by item, as a labelled read of the batch did:
    the pod is kept in full, its bad label named, the rest read as usual."""
    if batches == "tiny":
        monkeypatch.setattr(F, "STREAM_CHUNK", 61)
        monkeypatch.setattr(F, "STREAM_BATCH", 97)
    d = _many_pods(tmp_path)
    plugin = json.loads(json.dumps(_PLUGIN_POD))
    plugin["metadata"]["labels"]["bad"] = 5
    _add_pods(d, plugin, _pending_pod("p0"))
    snap = F.load_snapshot(d, F.need_for("collect_cluster", {"for_pending": True}))
    assert type(snap.pods["gpu-operator/nvidia-device-plugin-daemonset-x1"]).__name__ == "Pod"
    assert [(u.name, u.path) for u in snap.unreadable()] == [("nvidia-device-plugin-daemonset-x1",
                                                              ("metadata", "labels", "bad"))]
    assert len(snap.pods) == 4 * 12 + 2 and {type(p).__name__ for k, p in snap.pods.items()
                                             if k.startswith("ml/w-")} == {"BoundPodLite"}
    offline = cli("diagnose", "pending", "-A", "-o", "json", "--snapshot", str(d))
    assert offline.code == 1 and offline.err == ""
    assert [(u["name"], u["field"]) for u in offline.json()["unreadable"]] == [
        ("nvidia-device-plugin-daemonset-x1", "metadata.labels.bad")]


def test_records_share_what_they_hold_alike_and_read_as_decoded(tmp_path, tiny_batches):
    """Pods of one workload hold the same containers, labels and strings once
    (collect/files.py _Shared); each record still reads exactly as decoded alone."""
    d = _many_pods(tmp_path)
    _add_pods(d, _pending_pod("p0"), _pending_pod("p1"))
    everything = F.load_snapshot(d)
    for need in (F.need_for("collect_cluster", {"for_pending": True}), F.need_for("collect_cluster", {}),
                 F.need_for("collect_for_pod", {"ns": "ml", "name": "p0"}), F.EVERYTHING):
        snap = F.load_snapshot(d, need)
        assert set(snap.pods) == set(everything.pods)
        for k, r in snap.pods.items():
            assert msgspec.convert(msgspec.to_builtins(everything.pods[k]), type(r)) == r, k
        bound = [p for p in snap.pods.values() if p.spec.nodeName]
        pending = [p for p in snap.pods.values() if not p.spec.nodeName]
        assert len({id(p.spec.containers) for p in bound}) == 1
        assert len({id(p.spec.containers) for p in pending}) == 1
        assert len({id(p.spec.nodeName) for p in bound}) == 4       # one string a node
        assert {k: msgspec.to_builtins(v) for k, v in snap.nodes.items()} == \
            {k: msgspec.to_builtins(v) for k, v in everything.nodes.items()}


def test_a_quantity_that_does_not_parse_is_named_for_every_pod_that_holds_it(tmp_path, tiny_batches):
    """A spec with a quantity that does not parse is never shared (scrubbing one
    record's would scrub the others' unseen): each pod holding it is named, as when
    every object is read alone."""
    d = _many_pods(tmp_path)
    text = (d / "pods.json").read_text()
    (d / "pods.json").write_text(text.replace('"name":"w-1-', '"name":"bad-1-').replace(
        '"namespace":"ml","labels":{"app":"w"}},"spec":{"nodeName":"gpu-1","containers":[{"name":"c","resources":'
        '{"limits":{"nvidia.com/gpu":"1"}}}]}',
        '"namespace":"ml","labels":{"app":"w"}},"spec":{"nodeName":"gpu-1","containers":[{"name":"c","resources":'
        '{"limits":{"nvidia.com/gpu":"abc"}}}]}'))
    bad = _pending_pod("pb0")
    bad["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "x"
    bad2 = json.loads(json.dumps(bad))
    bad2["metadata"]["name"] = "pb1"
    _add_pods(d, bad, bad2, _pending_pod("p0"))

    def named(s: Snapshot) -> set:
        return {(m.namespace, m.name, m.field) for m in s.unreadable()}

    want = named(F.load_snapshot(d, F.EVERYTHING))
    assert {n for _, n, _ in want} == {f"bad-1-{i}" for i in range(12)} | {"pb0", "pb1"}
    for need in (F.need_for("collect_cluster", {"for_pending": True}), F.need_for("collect_cluster", {}),
                 F.EVERYTHING):
        snap = F.load_snapshot(d, need)
        assert named(snap) == want
        assert all(not p.spec.containers[0].resources.limits for k, p in snap.pods.items() if "/bad-" in k or "/pb" in k)
        assert all(p.spec.containers[0].resources.limits for k, p in snap.pods.items() if "/w-" in k or k == "ml/p0")


def test_the_sharing_tables_are_bounded(tmp_path, monkeypatch):
    """Pods all unlike each other: at most MAX_SHARED specs are remembered."""
    monkeypatch.setattr(F, "MAX_SHARED", 5)
    d = _many_pods(tmp_path)
    text = (d / "pods.json").read_text()
    n = iter(range(10**6))
    import re as _re

    (d / "pods.json").write_text(_re.sub(r'"nvidia.com/gpu":"1"', lambda m: f'"nvidia.com/gpu":"{next(n) % 9 + 1}"', text))
    shared: list = []
    real = F._Shared.__init__

    def keep(self):
        real(self)
        shared.append(self)

    monkeypatch.setattr(F._Shared, "__init__", keep)
    snap = F.load_snapshot(d, F.need_for("collect_cluster", {}))
    everything = F.load_snapshot(d)
    assert shared and all(len(s.specs) <= 5 for s in shared)
    for k, r in snap.pods.items():
        assert msgspec.convert(msgspec.to_builtins(everything.pods[k]), type(r)) == r, k


def test_a_snapshot_read_again_lets_the_first_reading_go_first(tmp_path, monkeypatch):
    """A need read again (a bound target, a Pending pod with inter-pod rules) never
    holds two snapshots at once: the first is freed before the second read starts."""
    import weakref

    d = _many_pods(tmp_path)
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    _add_pods(d, _pending_pod("p1", affinity=anti))
    real = F._load_snapshot
    first: list = []

    def load(path, need):
        alive = [r for r in first if r() is not None]
        assert not alive, "the first reading is still held"
        snap = real(path, need)
        first.append(weakref.ref(snap))
        return snap

    monkeypatch.setattr(F, "_load_snapshot", load)
    for need in (F.need_for("collect_cluster", {"for_pending": True}), F.need_for("collect_cluster", {}),
                 F.need_for("collect_for_pod", {"ns": "ml", "name": "nobody"})):
        first.clear()
        snap = F.load_snapshot(d, need)
        assert len(first) == 2 and first[-1]() is snap


def test_a_bound_target_stops_the_first_read_where_it_is_found(tmp_path, monkeypatch):
    """diagnose pod of a bound pod is read with its namespace in full (Need.fallback):
    the first, narrower read stops as soon as the target is decoded, and what is read
    is what the fallback alone reads."""
    monkeypatch.setattr(F, "STREAM_CHUNK", 2048)
    monkeypatch.setattr(F, "STREAM_BATCH", 1024)
    d = _many_pods(tmp_path)
    real = F._load_snapshot
    calls: list = []

    def load(path, need):
        try:
            snap = real(path, need)
        except F._Stop:
            calls.append("stopped")
            raise
        calls.append("read")
        return snap

    monkeypatch.setattr(F, "_load_snapshot", load)
    need = F.need_for("collect_for_pod", {"ns": "ml", "name": "w-0-0"})
    snap = F.load_snapshot(d, need)
    assert calls == ["stopped", "read"]
    assert _records(snap) == _records(real(d, need.fallback))
    calls.clear()
    F.load_snapshot(d, F.need_for("collect_for_pod", {"ns": "ml", "name": "nobody"}))
    assert calls == ["read", "read"]          # not found: read to the end, then again


# ------------------------------------------------------------------ where each item of a batch lies


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(st.dictionaries(_STRINGS, _VALUE, max_size=3), min_size=1, max_size=6),
       indent=st.sampled_from([None, 1, 2, 4]), stray_newlines=st.booleans())
def test_item_spans_by_newline_match_the_separator_search(items, indent, stray_newlines):
    """One item a line (found by newlines) or indented (found by the separator): the
    same spans as searching for the separator, and each span is its item."""
    # stray newlines: whitespace newlines inside an item, between a key and its value
    texts = [json.dumps(i, indent=indent, separators=(",", ":\n ") if stray_newlines else None).encode()
             for i in items]
    sep = b"},\n{" if indent is None else b"\n}" + b",\n{"
    body = b"[" + (b",\n").join(texts) + b"]"
    comma_off = sep.index(b",")
    got = F._item_spans(body, sep, comma_off, len(items))
    expected = F._spans_by_separator(body, sep, comma_off)
    assert got == (expected if len(expected) == len(items) else None)
    if indent is None:                       # the newline search, whatever _item_spans chooses
        assert F._spans_by_newline(body, sep, comma_off) == F._spans_by_separator(body, sep, comma_off)
    if got is not None and all(isinstance(i, dict) and i for i in items):
        assert [json.loads(body[a:b]) for a, b in got] == items
