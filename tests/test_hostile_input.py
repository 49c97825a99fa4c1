"""Hostile and huge input: snapshot bombs are refused with exit 4, the snapshot
loader survives arbitrary objects, and --debug tracebacks show no secrets."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT

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

    capacity_report(snap)
    pending_report(snap, None)
    for key, pod in list(snap.pods.items())[:3]:
        ns, name = key.split("/", 1)
        try:
            diagnose(snap, ns, name)
        except TargetNotFound:
            pass
