"""Issue 11, snapshots: valid inputs that were refused, and inputs that hung or
crashed (FIFOs, deep nesting, oversize files, compression and alias bombs). Each
test failed before the change to gpuctl/collect/files.py."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import tarfile

import pytest

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-n1"},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}
LIST = {"apiVersion": "v1", "kind": "List", "items": [NODE]}


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _capacity(cli, path, *extra):
    return cli("nodes", "capacity", "--snapshot", str(path), "-o", "json", *extra)


# ------------------------------------------------------------ 12. valid inputs


def test_tar_of_dot_reads_like_any_bundle(cli, tmp_path):
    d = tmp_path / "bundle"
    d.mkdir()
    (d / "nodes.json").write_text(json.dumps(LIST))
    out = tmp_path / "x.tgz"
    subprocess.run(["tar", "czf", str(out), "-C", str(d), "."], check=True)
    assert "./nodes.json" in tarfile.open(out).getnames()
    r = _capacity(cli, out)
    assert r.code == 0, r.err
    assert [row["node"] for row in r.json()["rows"]] == ["gpu-n1"]


@pytest.mark.parametrize("name", ["dump", "cluster.txt", "DUMP.JSON", "nodes.YAML"])
def test_a_single_file_is_read_whatever_its_name(cli, tmp_path, name):
    p = tmp_path / name
    p.write_text(json.dumps(LIST) if "YAML" not in name else "apiVersion: v1\nkind: List\nitems:\n- " +
                 json.dumps(NODE) + "\n")
    r = _capacity(cli, p)
    assert r.code == 0, r.err
    assert r.json()["rows"][0]["node"] == "gpu-n1"


def test_upper_case_extensions_inside_a_directory(cli, tmp_path):
    (tmp_path / "NODES.JSON").write_text(json.dumps(LIST))
    assert _capacity(cli, tmp_path).code == 0


def test_errors_name_the_file_not_its_folder(cli, tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text('{"hello": "world"}')
    line = _one_line(_capacity(cli, p).err)
    assert "notes.txt" in line


# ------------------------------------------------------------ 13. hangs and crashes


def test_a_fifo_inside_a_snapshot_directory_is_skipped(cli, tmp_path):
    (tmp_path / "nodes.json").write_text(json.dumps(LIST))
    os.mkfifo(tmp_path / "pipe.json")          # opening it would block forever
    r = _capacity(cli, tmp_path)
    assert r.code == 0, r.err


def test_a_fifo_given_as_the_snapshot_is_one_line(cli, tmp_path):
    os.mkfifo(tmp_path / "dump.json")
    r = _capacity(cli, tmp_path / "dump.json")
    assert r.code == 4 and "not a regular file" in _one_line(r.err)


def _deep(depth=100_000):
    return '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "deep", "namespace": "ml"}, "spec": ' + \
        "[" * depth + "]" * depth + "}"


def test_one_object_nested_too_deeply_is_refused_and_the_rest_kept(cli, tmp_path):
    (tmp_path / "all.json").write_text('{"apiVersion": "v1", "kind": "List", "items": [' + json.dumps(NODE) + ", " +
                                       _deep() + "]}")
    r = _capacity(cli, tmp_path)
    assert r.code == 1, r.err                     # partial: something could not be read
    doc = r.json()
    assert doc["rows"][0]["node"] == "gpu-n1"
    assert any(u["name"] == "deep" and "nested deeper" in u["problem"] for u in doc["unreadable"])


@pytest.mark.parametrize("name, text", [("deep.json", _deep()),
                                        ("deep.yaml", "kind: Pod\nmetadata: {name: y}\nspec: " + "[" * 5000 + "]" * 5000)],
                         ids=["json", "yaml"])
def test_a_file_nested_too_deeply_is_one_line(cli, tmp_path, name, text):
    (tmp_path / name).write_text(text)
    r = _capacity(cli, tmp_path / name)
    assert r.code == 4 and name in _one_line(r.err)


def test_files_over_the_limit_are_refused_before_reading(cli, tmp_path, monkeypatch):
    import gpuctl.collect.files as files

    monkeypatch.setattr(files, "MAX_MEMBER_BYTES", 1000)    # gpuctl's own limit (4 GiB), made small
    (tmp_path / "nodes.json").write_text(json.dumps({**LIST, "padding": "x" * 2000}))
    r = _capacity(cli, tmp_path)
    assert r.code == 4 and "nodes.json" in _one_line(r.err) and "limit" in r.err
    r = _capacity(cli, tmp_path / "nodes.json")
    assert r.code == 4 and "limit" in _one_line(r.err)


# ------------------------------------------------------------ 14. bombs


def test_a_huge_member_is_refused_at_its_header_not_after_inflating_it(cli, tmp_path):
    """A member that declares 5 GiB (over the 4 GiB limit) and whose data is not even
    there: reading every header first (getmembers) would have to inflate, and fail on,
    the missing data; gpuctl refuses at the header."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        data = json.dumps(LIST).encode()
        info = tarfile.TarInfo("b/nodes.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        end = tf.offset                               # before the end-of-archive blocks and padding
    raw = buf.getvalue()[:end]
    huge = tarfile.TarInfo("b/huge.json")
    huge.size = 5 * 2**30
    path = tmp_path / "bomb.tgz"
    path.write_bytes(gzip.compress(raw + huge.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 4096))
    r = _capacity(cli, path)
    assert r.code == 4
    line = _one_line(r.err)
    assert "huge.json" in line and "over the" in line and "limit" in line


def test_a_tarball_of_too_many_members_is_refused(cli, tmp_path, monkeypatch):
    import gpuctl.collect.files as files

    monkeypatch.setattr(files, "MAX_MEMBERS", 50)
    path = tmp_path / "many.tgz"
    with tarfile.open(path, "w:gz") as tf:
        for i in range(100):
            tf.addfile(tarfile.TarInfo(f"b/empty-{i}.txt"), io.BytesIO(b""))
    r = _capacity(cli, path)
    assert r.code == 4 and "more than 50 members" in _one_line(r.err)


BOMB = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol, namespace: x}\ndata:\n  a: &a [x,x,x,x,x,x,x,x,x]\n" + \
    "".join(f"  {n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("argv", [("nodes", "capacity"), ("diagnose", "pending", "-A"),
                                  ("snapshot", "save", "{out}")])
def test_a_yaml_alias_bomb_is_refused_by_every_command(cli, tmp_path, argv):
    (tmp_path / "nodes.json").write_text(json.dumps(LIST))
    (tmp_path / "bomb.yaml").write_text(BOMB)
    argv = [a.replace("{out}", str(tmp_path / "out.tgz")) for a in argv]
    r = cli(*argv, "--snapshot", str(tmp_path))
    assert r.code == 4, r.err
    assert "alias bomb" in _one_line(r.err) and "bomb.yaml" in r.err
    assert not (tmp_path / "out.tgz").exists()


def test_a_few_honest_anchors_still_read(cli, tmp_path):
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: gpu-a}\n"
            "  status: &st {capacity: {nvidia.com/gpu: '8'}, allocatable: {nvidia.com/gpu: '8'}}\n"
            "- apiVersion: v1\n  kind: Node\n  metadata: {name: gpu-b}\n  status: *st\n")
    (tmp_path / "nodes.yaml").write_text(text)
    r = _capacity(cli, tmp_path)
    assert r.code == 0, r.err
    assert sorted(row["node"] for row in r.json()["rows"]) == ["gpu-a", "gpu-b"]


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc/self/mem, a regular file whose read fails")
def test_a_file_that_cannot_be_read_is_one_line_naming_it(cli):
    # /proc/self/mem is a regular file that stat() accepts and read() refuses (EIO): the
    # one unreadable file a test can make as root, where chmod 000 does not stop reads.
    r = _capacity(cli, "/proc/self/mem")
    assert r.code == 4
    assert "/proc/self/mem could not be read" in _one_line(r.err)
