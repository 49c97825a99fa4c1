"""`snapshot save` rewrites objects as JSON text (collect/redaction.py rewrite_item)
instead of parsing, redacting and re-serialising each one. The text path must give
exactly what the parsed path gives (strip_managed + redact_object), or decline (None)
so that the parsed path runs: on every object of every scenario and real-world case,
on a generated cluster, on hand-made traps, and on random objects (hypothesis). And
the bundles themselves, saved live and re-bundled, hold the same objects either way.

The .tar.gz that holds them is written by collect/targz.py (List files compressed on
a background thread, pieces joined into one gzip stream): read back here by tarfile,
gzip and GNU tar."""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import random
import shutil
import subprocess
import tarfile
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, SCENARIOS, scenario_dirs, snapshot_of
from support.kubeapi import SnapshotAPIServer
from gpuctl.collect import bundle, targz
from gpuctl.collect.files import iter_raw_objects, raw_logs
from gpuctl.collect.redaction import LAST_APPLIED, REDACTED, redact_object, rewrite_item, strip_managed

REALWORLD = ROOT / "tests" / "realworld"


def _parsed_path(obj: dict, kind: str) -> dict:
    d = copy.deepcopy(obj)
    d.setdefault("kind", kind)
    return redact_object(strip_managed(d))


def _check(obj: dict, kind: str = "Pod", dumps=lambda o: json.dumps(o)) -> bool:
    """The text path equals the parsed path; False when it declined."""
    got = rewrite_item(dumps(obj).encode(), kind)
    if got is None:
        return False
    assert json.loads(got[1]) == _parsed_path(obj, kind)
    assert got[0] == (obj.get("kind") or kind)
    return True


def _all_objects() -> list[dict]:
    sources = [snapshot_of(s) for s in scenario_dirs()]
    sources += sorted(p / "snapshot" for p in REALWORLD.iterdir() if (p / "snapshot").is_dir())
    return [o for src in sources for o in iter_raw_objects(src)]


def test_every_object_of_every_case_is_rewritten_as_parsing_would():
    objs = _all_objects()
    assert len(objs) > 2000
    taken = 0
    for o in objs:
        for dumps in (json.dumps, lambda x: json.dumps(x, indent=2), lambda x: json.dumps(x, separators=(",", ":"))):
            taken += _check(o, o["kind"], dumps)
    declined = {o["kind"] for o in objs if rewrite_item(json.dumps(o).encode(), o["kind"]) is None}
    # declined only where the parsed path is needed: Secret or ConfigMap data (at any depth), Lists
    assert declined <= {"ConfigMap", "Secret", "List"} | {o["kind"] for o in objs if "ConfigMap" in json.dumps(o)
                                                        or "Secret" in json.dumps(o) or "\\/" in json.dumps(o)}
    assert taken > 0.9 * 3 * len(objs)


def test_a_generated_cluster_is_rewritten_as_parsing_would():
    from benchmarks.synth import generate

    c = generate(30, 600)
    objs = [json.loads(s) for s in c.nodes + c.pods + c.others]
    assert all(_check(o, o.get("kind", "Pod"), lambda x: json.dumps(x, separators=(",", ":"))) for o in objs
               if o.get("kind") not in ("ConfigMap", "Secret"))


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "ml", "managedFields": [{"manager": "kubectl"}],
                    "annotations": {LAST_APPLIED: "{\"spec\":{\"env\":[{\"name\":\"A\",\"value\":\"s3cr3t\"}]}}"}},
       "spec": {"containers": [{"name": "c", "command": ["python", "train.py"],
                                "args": ["--hf-token", "hf_abcdefghijklmnopqrstuvwxyz0123456789", "--max-tokens=512"],
                                "env": [{"name": "DB_PASSWORD", "value": "pw"}, {"name": "CUDA_VERSION", "value": "12.4"},
                                        {"name": "FROM", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]},
       "status": {"phase": "Running"}}

TRAPS = {
    "a plain pod": POD,
    "env that is not a list": {"kind": "Pod", "metadata": {"labels": {"env": "prod"}}, "spec": {"env": {"env": [{"name": "X", "value": "v"}]}}},
    "keys inside strings": {"kind": "Pod", "metadata": {"annotations": {"note": "\"env\": [{\"value\": \"x\"}], {\"command\": [1]}"}}},
    "env nested in an unknown kind": {"apiVersion": "x/v1", "kind": "TrainingRun",
                                      "workers": {"pod": {"containers": [{"env": [{"name": "Y", "value": "pw"}]}]}},
                                      "status": {"lastPod": {"env": [{"name": "Z", "value": "pw"}], "args": ["--token", "t0k3n"]}}},
    "a list inside env": {"kind": "Pod", "spec": {"env": [{"name": "A", "value": "x", "extra": {"env": [{"name": "B", "value": "y"}]}}]}},
    "managedFields deeper down stay": {"kind": "Deployment", "metadata": {"name": "d"},
                                       "spec": {"template": {"metadata": {"managedFields": [1]}}}},
    "last-applied in a template": {"kind": "Deployment", "spec": {"template": {"metadata": {"annotations": {LAST_APPLIED: "x"}}}}},
    "non-ASCII text": {"kind": "Pod", "metadata": {"name": "p", "annotations": {"t": "日本語 – ünïcødé \u2028"}},
                       "spec": {"containers": [{"args": ["--password=ü-secret"], "env": [{"name": "K", "value": "日本"}]}]}},
    "numbers kept exactly": {"kind": "Pod", "spec": {"n": 12345678901234567890123, "f": 1.5e-7, "z": -0.0, "e": [], "o": {}}},
    "no kind": {"metadata": {"name": "x"}, "spec": {"command": ["sh", "-c", "export TOKEN=abcdefghijkl; run"]}},
    "command null": {"kind": "Pod", "spec": {"containers": [{"command": None, "args": None, "env": None}]}},
}


@pytest.mark.parametrize("name", sorted(TRAPS))
@pytest.mark.parametrize("style", ["compact", "spaced", "indented"])
def test_traps_are_rewritten_as_parsing_would(name, style):
    dumps = {"compact": lambda o: json.dumps(o, separators=(",", ":"), ensure_ascii=False), "spaced": json.dumps,
             "indented": lambda o: json.dumps(o, indent=3, ensure_ascii=False)}[style]
    assert _check(TRAPS[name], "Pod", dumps)


def test_what_the_text_path_redacts():
    got = json.loads(rewrite_item(json.dumps(POD).encode(), "Pod")[1])
    c = got["spec"]["containers"][0]
    assert c["env"][0]["value"] == REDACTED and c["env"][1]["value"] == "12.4" and "value" not in c["env"][2]
    assert c["args"] == ["--hf-token", REDACTED, "--max-tokens=512"]
    assert got["metadata"]["annotations"][LAST_APPLIED] == REDACTED and "managedFields" not in got["metadata"]
    assert rewrite_item(json.dumps(POD).encode(), "Pod", redact=False)[1].count("s3cr3t") == 1   # not redacted, managed gone
    assert "managedFields" not in rewrite_item(json.dumps(POD).encode(), "Pod", redact=False)[1]


@pytest.mark.parametrize("text", [
    # Secrets and ConfigMaps (their data is redacted by the parsed path), at any depth
    '{"kind":"Secret","data":{"k":"c2VjcmV0"}}',
    '{"kind":"Pod","spec":{"x":{"kind":"ConfigMap","data":{"k":"v"}}}}',
    '{"kind" : "ConfigMap", "data": {"k": "v"}}',
    # a key an escape hides from str.find
    '{"kind":"Pod","spec":{"containers":[{"\\u0065nv":[{"name":"A","value":"pw"}]}]}}',
    '{"kind":"Pod","metadata":{"annotations":{"kubectl.kubernetes.io\\/last-applied-configuration":"x"}}}',
    # Lists (their items are flattened by the parsed path), and what is not an object
    '{"kind":"List","items":[{"kind":"Secret","data":{}}]}', '{"kind":"PodList","items":[]}', '[1,2]', '"x"',
    # invalid UTF-8 (the parsed path replaces it, as Go does)
    b'{"kind":"Pod","metadata":{"name":"\xff"}}',
    '{"kind":5}',
])
def test_the_text_path_declines_what_only_parsing_gets_right(text):
    assert rewrite_item(text.encode() if isinstance(text, str) else text, "Pod") is None


def test_the_kind_and_api_version_are_filled_in_only_when_missing():
    k, text = rewrite_item(b'{"metadata":{"name":"a"}}', "Pod", "v1")
    assert k == "Pod" and json.loads(text) == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}
    k, text = rewrite_item(b'{"kind":"Event","apiVersion":"events.k8s.io/v1"}', "Pod", "v1")
    assert k == "Event" and json.loads(text) == {"kind": "Event", "apiVersion": "events.k8s.io/v1"}


_KEYS = st.sampled_from(["env", "command", "args", "kind", "metadata", "annotations", "name", "value", "data",
                         "managedFields", LAST_APPLIED, "spec", "containers", "x"])
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=12),
                  st.sampled_from(["Secret", "ConfigMap", "Pod", "--token", "hf_" + "a" * 32, "DB_PASSWORD", "CUDA_VERSION",
                                   "\"env\": [", "}, \"command\": [\"", "\\u0065"]))
_JSON = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(_KEYS, inner, max_size=5)), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEYS, _JSON, max_size=6), st.sampled_from([None, 1, 2]), st.booleans())
def test_random_objects_are_rewritten_as_parsing_would(obj, indent, ascii_only):
    obj = {k: v for k, v in obj.items() if k != "kind"}
    got = rewrite_item(json.dumps(obj, indent=indent, ensure_ascii=ascii_only).encode(), "Pod")
    if got is not None:
        assert json.loads(got[1]) == _parsed_path(obj, "Pod")


# ------------------------------------------------------------------ whole bundles, both paths


def _bundle_objects(path: Path) -> dict:
    if path.is_file():
        with tarfile.open(path) as tf:
            files = {m.name.split("/", 1)[1]: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    else:
        files = {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}
    meta = json.loads(files.pop("snapshot.json"))
    meta.pop("capturedAt", None)
    return {"meta": meta, **{n: json.loads(b) if n.endswith(".json") else b for n, b in files.items()}}


# a taint, a node's Xid, a crash loop (logs saved), Kueue objects (custom kinds)
CASES = [SCENARIOS / "untolerated-taint", SCENARIOS / "node-xid-79", SCENARIOS / "crash-loop",
         SCENARIOS / "kueue-exceeds-max-quota"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dest,flags", [("b.tar.gz", ()), ("b", ()), ("b.tar.gz", ("--no-redact",))])
def test_bundles_are_the_same_either_way(cli, tmp_path, monkeypatch, case, dest, flags):
    out = {}
    for text_path in (True, False):
        monkeypatch.setattr(bundle, "TEXT_PATH", text_path)
        d = tmp_path / str(text_path)
        d.mkdir()
        r = cli("snapshot", "save", str(d / dest), "--snapshot", str(snapshot_of(case)), *flags)
        assert r.code == 0, r.err
        with SnapshotAPIServer(list(iter_raw_objects(snapshot_of(case))), logs=raw_logs(snapshot_of(case))) as srv:
            kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
            r = cli("snapshot", "save", str(d / ("live-" + dest)), "--kubeconfig", kc, *flags)
        assert r.code == 0, r.err
        out[text_path] = (_bundle_objects(d / dest), _bundle_objects(d / ("live-" + dest)))
    assert out[True] == out[False]
    assert out[True][1]["pods.json"]["items"]        # something was saved


# ------------------------------------------------------------------ the .tar.gz writer


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.binary(max_size=3000))
def test_crc32_combine_is_zlibs(a, b):
    assert targz.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def _write(tmp_path: Path, pieces: dict[str, list[bytes]], small: dict[str, bytes]) -> tuple[Path, dict[str, bytes]]:
    d = targz.Deflater(tmp_path / "segs")
    members, expect = [], {}
    for name, chunks in pieces.items():
        seg = d.open(name)
        for c in chunks:
            d.write(seg, c)
        d.write(seg, None)
        members.append((f"top/{name}", seg))
        expect[f"top/{name}"] = b"".join(chunks)
    d.finish()
    for name, data in small.items():
        p = tmp_path / name
        p.write_bytes(data)
        members.append((f"top/{name}", p))
        expect[f"top/{name}"] = data
    out = tmp_path / "out.tar.gz"
    with open(out, "wb") as f:
        targz.write_targz(f, members)
    return out, expect


def test_the_tarball_reads_back_everywhere(tmp_path):
    rnd = random.Random(7)
    big = [bytes(rnd.getrandbits(8) for _ in range(5000)) + b'{"kind":"Pod"}' * 40000 for _ in range(3)]
    out, expect = _write(tmp_path, {"pods.json": big, "empty.json": [], "one.json": [b"x"]},
                         {"snapshot.json": b'{"schema": "gpuctl/snapshot/v1"}\n', "logs.log": b"a" * 513})
    for mode in ("r:gz", "r|gz"):
        with tarfile.open(out, mode) as tf:
            got = {m.name: tf.extractfile(m).read() for m in tf if m.isfile()}
        assert got == expect
    assert gzip.decompress(out.read_bytes())[:3] == b"top"          # one gzip member, CRC and size checked
    with tarfile.open(out) as tf:
        assert [m.name for m in tf.getmembers()] == list(expect)     # in the order given
        assert {(m.uname, m.gname, m.mode) for m in tf.getmembers()} == {("", "", 0o644)}
    for tool in (["gzip", "-t", str(out)], ["tar", "-tzf", str(out)]):
        if shutil.which(tool[0]) is None:
            pytest.skip(f"{tool[0]} is not installed")
        r = subprocess.run(tool, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert sorted(subprocess.run(["tar", "-tzf", str(out)], capture_output=True, text=True).stdout.split()) == sorted(expect)


def test_a_compressor_failure_reaches_the_writer(tmp_path):
    class DiskFull(io.RawIOBase):
        def write(self, b):
            raise OSError(28, "No space left on device")

    d = targz.Deflater(tmp_path / "segs")
    seg = d.open("x.json")
    seg._f.close()
    seg._f = DiskFull()
    d.write(seg, os.urandom(200_000))     # incompressible: the compressor has output to write
    with pytest.raises(OSError, match="No space"):
        d.finish()
    with pytest.raises(OSError, match="No space"):
        d.write(seg, b"more")            # and the writer's next call, had it come first
    d.abort()


def test_an_aborted_save_leaves_no_thread_and_no_file(tmp_path):
    d = targz.Deflater(tmp_path / "segs")
    seg = d.open("x.json")
    d.write(seg, b"x" * 100)
    d.abort()
    assert seg._f.closed and d._thread is None       # joined, and the file closed for the cleanup
