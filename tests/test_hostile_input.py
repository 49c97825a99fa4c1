"""Hostile and huge input: snapshot bombs are refused with exit 4, the snapshot
loader survives arbitrary objects, and --debug tracebacks show no secrets."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, SCENARIOS, snapshot_of

from gpuctl.collect import files
from gpuctl.errors import SourceError


def _tar(path, members):
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)


def _file(name, data=b'{"apiVersion": "v1", "kind": "List", "items": []}'):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_tar_with_a_symlink_is_refused(cli, tmp_path):
    link = tarfile.TarInfo("snap/evil.json")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    _tar(tmp_path / "b.tar.gz", [_file("snap/cluster.json"), (link, None)])
    r = cli("diagnose", "pod", "x", "--snapshot", str(tmp_path / "b.tar.gz"))
    assert r.code == 4 and "link" in r.err and r.err.count("\n") == 1


def test_tar_with_path_traversal_is_refused(cli, tmp_path):
    _tar(tmp_path / "b.tar.gz", [_file("snap/cluster.json"), _file("../../outside.json")])
    r = cli("diagnose", "pod", "x", "--snapshot", str(tmp_path / "b.tar.gz"))
    assert r.code == 4 and "unsafe path" in r.err
    assert not (tmp_path.parent / "outside.json").exists()


def test_tar_that_expands_too_far_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_BUNDLE_BYTES", 10_000)
    big = b" " * 50_000   # compresses to almost nothing: a small gzip bomb
    _tar(tmp_path / "b.tar.gz", [_file("snap/cluster.json"), _file("snap/padding.json", big)])
    assert (tmp_path / "b.tar.gz").stat().st_size < 5_000
    r = cli("diagnose", "pod", "x", "--snapshot", str(tmp_path / "b.tar.gz"))
    assert r.code == 4 and "refusing" in r.err


def test_not_a_tarball_is_one_line(cli, tmp_path):
    (tmp_path / "b.tar.gz").write_bytes(b"\x1f\x8b garbage")
    r = cli("diagnose", "pod", "x", "--snapshot", str(tmp_path / "b.tar.gz"))
    assert r.code == 4 and "b.tar.gz" in r.err and "Traceback" not in r.err


def test_debug_traceback_shows_no_locals(tmp_path):
    """--debug shows where it failed, never the local variables (a token, say)."""
    r = subprocess.run([sys.executable, "-m", "gpuctl", "diagnose", "pod", "x", "--snapshot", str(tmp_path / "missing"),
                        "--token", "sekrit-token-123", "--debug"], capture_output=True, text=True, timeout=60,
                       cwd=str(ROOT))
    assert r.returncode != 0 and "Traceback" in r.stderr
    assert "sekrit-token-123" not in r.stderr and "sekrit-token-123" not in r.stdout


_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
                    st.sampled_from(["1e3", "0.5", "100Mi", "-4", "NaN", "nvidia.com/gpu", "\x1b[2J", "[bold]x[/]"]))
_value = st.recursive(_scalar, lambda children: st.one_of(st.lists(children, max_size=4),
                                                           st.dictionaries(st.text(max_size=12), children, max_size=4)),
                      max_leaves=20)
_kinds = st.sampled_from(["Node", "Pod", "Event", "ResourceQuota", "Job", "ResourceSlice", "Unknown"])
_object = st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": _kinds,
                                 "metadata": st.one_of(_value, st.fixed_dictionaries({"name": st.text(max_size=10),
                                                                                      "namespace": st.just("ml")})),
                                 "spec": _value, "status": _value})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(_object, min_size=1, max_size=6))
def test_snapshot_loader_and_engine_survive_arbitrary_objects(tmp_path, objects):
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    try:
        snap = files.load_snapshot(path)
    except SourceError:
        return  # one clear error is an allowed outcome
    from gpuctl.engine import diagnose
    from gpuctl.errors import TargetNotFound
    from gpuctl.reports.capacity import capacity_report
    from gpuctl.reports.pending import pending_report

    try:
        capacity_report(snap)
    except SourceError:
        pass   # nothing to count GPUs on: the one clear error `nodes capacity` gives
    pending_report(snap, None)
    for key, pod in list(snap.pods.items())[:3]:
        ns, name = key.split("/", 1)
        try:
            diagnose(snap, ns, name)
        except TargetNotFound:
            pass


# ------------------------------------------------- hostile text, end to end to the terminal


# what must never reach a terminal: C0/C1 controls (ESC starts CSI/OSC sequences, BEL
# ends OSC titles/hyperlinks), DEL, and Unicode bidi controls (CVE-2021-42574)
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NASTY = [b"\x1b[2J\x1b[H", b"\x1b]0;owned\x07", b"\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
          b"\x9b31m", b"\x00", b"\x7f", b"\xff\xfe", b"\xc3\x28", b"\xe2\x80\xae", b"[bold red]MARKUP[/]",
          b"[link=https://evil.example/]x[/link]", b"\r", b"\x08\x08\x08", "\u2066\u202e".encode()]
_hostile = st.lists(st.one_of(st.sampled_from(_NASTY), st.binary(max_size=12),
                              st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass"))),
                    min_size=1, max_size=8).map(b"".join)

CRASH = SCENARIOS / "crash-loop-illegal-memory-access"
CRASH_LOG = Path("logs/ml-research/moe-kernel-bench-2cjrk/trainer.previous.log")
TAINTED = SCENARIOS / "untolerated-taint"


def _outputs(cli, argv):
    outs = {}
    for fmt in ("table", "wide", "markdown", "json", "yaml"):
        r = cli(*argv, "-o", fmt)
        assert "Traceback" not in r.err
        assert r.code in (0, 1), (fmt, r.code, r.err)
        outs[fmt] = r.out
    return outs


def _assert_terminal_safe(outs):
    import yaml

    for fmt, text in outs.items():
        bad = _UNSAFE.search(text)
        assert bad is None, (fmt, repr(text[max(0, bad.start() - 40):bad.end() + 40]))
    doc = json.loads(outs["json"])
    assert yaml.safe_load(outs["yaml"]) == doc


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(junk=_hostile)
def test_hostile_log_lines_never_reach_the_terminal(cli, tmp_path_factory, junk):
    """The last lines of a crashing container's log are quoted as evidence: escape
    sequences, controls, bidi overrides, invalid UTF-8 and markup in them print as
    inert text in every output format."""
    d = tmp_path_factory.mktemp("crash") / "snap"
    shutil.copytree(snapshot_of(CRASH), d)
    with open(d / CRASH_LOG, "ab") as f:
        f.write(b"RuntimeError: CUDA error: an illegal memory access was encountered " + junk + b"\n" + junk)
    exp = json.loads((CRASH / "expected.json").read_text())
    ns, name = exp["pod"].split("/", 1)
    outs = _outputs(cli, ("diagnose", "pod", name, "-n", ns, "--snapshot", str(d)))
    _assert_terminal_safe(outs)
    assert json.loads(outs["json"])["findings"][0]["code"] == exp["top_code"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(junk=_hostile)
def test_hostile_event_messages_and_taints_never_reach_the_terminal(cli, tmp_path_factory, junk):
    """The same for a Pending pod: junk in the scheduler's event message (as raw bytes
    in the snapshot file, so invalid UTF-8 too) and in a node's taint value, which
    the findings and fix commands quote."""
    d = tmp_path_factory.mktemp("taint") / "snap"
    shutil.copytree(snapshot_of(TAINTED), d)
    raw = (d / "cluster.json").read_bytes()
    escaped = json.dumps(junk.decode("utf-8", "surrogateescape"), ensure_ascii=False)[1:-1] \
        .encode("utf-8", "surrogateescape")
    raw = raw.replace(b"node(s) had untolerated taint(s)", b"node(s) had untolerated taint(s) " + escaped)
    doc = json.loads(raw.decode("utf-8", "replace"))
    for item in doc["items"]:
        for t in (item.get("spec") or {}).get("taints") or [] if item.get("kind") == "Node" else []:
            if t["key"] != "node.kubernetes.io/unschedulable":
                t["value"] = junk.decode("utf-8", "replace")
    (d / "nodes-hostile.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        i for i in doc["items"] if i.get("kind") == "Node"]}))
    (d / "cluster.json").write_bytes(raw)
    exp = json.loads((TAINTED / "expected.json").read_text())
    ns, name = exp["pod"].split("/", 1)
    outs = _outputs(cli, ("diagnose", "pod", name, "-n", ns, "--snapshot", str(d)))
    _assert_terminal_safe(outs)
    for argv in (("diagnose", "pending", "-A", "--snapshot", str(d)), ("nodes", "capacity", "--snapshot", str(d))):
        _assert_terminal_safe(_outputs(cli, argv))
