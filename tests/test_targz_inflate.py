"""Reading a .tar.gz bundle with the gzip stream inflated on a background thread
(gpuctl/collect/targz.py Inflater, open_stream): the same members, bytes and errors as
``tarfile``'s own ``r|gz`` pass, on good, corrupt, truncated and odd gzip files; the
thread always stopped; and whole snapshots read the same either way."""

from __future__ import annotations

import gzip
import io
import json
import random
import sys
import tarfile
import threading
import zlib
from pathlib import Path

import pytest

from gpuctl.collect import targz
from gpuctl.collect.files import load_snapshot, need_for
from gpuctl.errors import SourceError

SCENARIO = Path(__file__).parent / "scenarios"


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _members(tf: tarfile.TarFile) -> list[tuple[str, bytes]]:
    out = []
    for m in tf:
        f = tf.extractfile(m) if m.isfile() else None
        out.append((m.name, f.read() if f is not None else b""))
    return out


def _outcome(opener, data: bytes):
    """(members) or (the exception's class family) of one pass over ``data``."""
    try:
        tf, inflater = opener(io.BytesIO(data))
        try:
            with tf:
                return ("ok", _members(tf))
        finally:
            if inflater is not None:
                inflater.close()
    except (tarfile.TarError, OSError, EOFError) as e:
        return ("error", "tar" if isinstance(e, tarfile.TarError) else type(e).__name__)


def _plain(f):
    return tarfile.open(fileobj=f, mode="r|*"), None


BIG = json.dumps({"items": [{"kind": "Pod", "metadata": {"name": f"p{i}"}} for i in range(60000)]}).encode()
GOOD = gzip.compress(_tar({"b/snapshot.json": b"{}", "b/pods.json": BIG, "b/nodes.json": b"{}" * 3}), 6)


def _flip(data: bytes, at: int) -> bytes:
    b = bytearray(data)
    b[at] ^= 0xFF
    return bytes(b)


CASES = {
    "good": GOOD,
    "empty tar": gzip.compress(_tar({})),
    "truncated in the middle": GOOD[: len(GOOD) // 2],
    "truncated trailer": GOOD[:-3],
    "corrupt deflate data": _flip(GOOD, len(GOOD) // 3),
    "second gzip member ignored": GOOD + gzip.compress(_tar({"b/extra.json": b"[]"})),
    "trailing garbage": GOOD + b"garbage",
    "header only": GOOD[:10],
    "level 1": gzip.compress(_tar({"a.json": BIG}), 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_members_and_errors_as_tarfile(case):
    data = CASES[case]
    assert _outcome(targz.open_stream, data) == _outcome(_plain, data)


def test_a_wrong_crc_is_refused_where_tarfile_does_not_look():
    bad = GOOD[:-8] + (zlib.crc32(b"x") ^ 1).to_bytes(4, "little") + GOOD[-4:]
    assert _outcome(_plain, bad)[0] == "ok"                 # tarfile never checks the trailer
    with pytest.raises(tarfile.ReadError, match="invalid compressed data"):
        tf, inflater = targz.open_stream(io.BytesIO(bad))
        try:
            _members(tf)
        finally:
            inflater.close()


def test_a_plain_tar_is_read_without_the_thread():
    tf, inflater = targz.open_stream(io.BytesIO(_tar({"a.json": b"[]"})))
    assert inflater is None and _members(tf) == [("a.json", b"[]")]


def _inflaters() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gpuctl-inflate"]


def test_closing_early_stops_the_thread_and_restores_the_switch_interval():
    before = sys.getswitchinterval()
    big = gzip.compress(b"x" * (200 << 20), 1)     # far more than the read-ahead
    inflater = targz.Inflater(io.BytesIO(big))
    assert inflater.read(10) == b"x" * 10
    inflater.close()
    assert not _inflaters()
    assert sys.getswitchinterval() == before
    inflater.close()                              # twice is harmless


def test_read_ahead_is_bounded():
    """A small file that inflates hugely: the thread stops after _AHEAD chunks when nobody reads."""
    big = gzip.compress(b"\0" * (300 << 20), 9)
    inflater = targz.Inflater(io.BytesIO(big))
    try:
        for _ in range(200):
            if inflater._q.full():
                break
            threading.Event().wait(0.01)
        assert inflater._q.qsize() <= targz._AHEAD
    finally:
        inflater.close()


def test_read_sizes_and_read_all():
    payload = bytes(range(256)) * 40000
    inflater = targz.Inflater(io.BytesIO(gzip.compress(payload)))
    got = inflater.read(1) + inflater.read(3 << 20) + inflater.read(0) + inflater.read()
    inflater.close()
    assert got == payload


def test_an_io_error_reaches_the_reader():
    class Failing(io.BytesIO):
        def read(self, n=-1):
            if self.tell() > 0:
                raise OSError(5, "Input/output error")
            return super().read(n)

    noise = gzip.compress(random.Random(1).randbytes(1 << 20))   # several reads' worth
    inflater = targz.Inflater(Failing(noise))
    with pytest.raises(OSError, match="Input/output error"):
        while inflater.read(1 << 20):
            pass
    inflater.close()
    assert not _inflaters()


@pytest.mark.parametrize("scenario", ["untolerated-taint", "node-xid-79", "crash-loop"])
def test_a_bundle_reads_the_same_as_its_directory(tmp_path, scenario):
    src = SCENARIO / scenario / "snapshot"
    bundle = tmp_path / "b.tar.gz"
    with tarfile.open(bundle, "w:gz") as tf:
        tf.add(src, arcname="b")
    for need in (need_for("collect_cluster", {}), need_for("collect_cluster", {"for_pending": True}), None):
        a, b = load_snapshot(src, need), load_snapshot(bundle, need)
        assert sorted(a.pods) == sorted(b.pods) and sorted(a.nodes) == sorted(b.nodes)
        assert [e.message for e in a.events] == [e.message for e in b.events]
    assert not _inflaters()


def test_a_corrupt_bundle_is_one_clear_error(tmp_path):
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(CASES["corrupt deflate data"])
    with pytest.raises(SourceError, match="invalid compressed data"):
        load_snapshot(bundle)
    assert not _inflaters()
