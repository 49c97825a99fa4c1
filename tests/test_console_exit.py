"""The console script (``gpuctl.cli.app.run``) leaves with os._exit once main() is done,
keeping the snapshot instead of freeing it object by object: everything written must
still arrive, whole, with main()'s exit code, to a file, to a pipe, and to a reader that
goes away early."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpuctl.cli import common

SNAP = Path(__file__).parent / "scenarios" / "untolerated-taint" / "snapshot"
ENV = {**os.environ, "GPUCTL_NOW": "2026-11-20T03:12:00Z", "NO_COLOR": "1"}


def _run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuctl", *args], env=ENV, capture_output=True, timeout=120, **kw)


def test_output_to_a_pipe_is_whole_with_main_s_exit_code(cli):
    inproc = cli("diagnose", "pending", "-A", "-o", "json", "--snapshot", str(SNAP))
    r = _run("diagnose", "pending", "-A", "-o", "json", "--snapshot", str(SNAP))
    assert r.returncode == inproc.code == 1           # a pod waits
    assert json.loads(r.stdout) == json.loads(inproc.out)
    assert r.stderr == b""


def test_output_to_a_file_is_flushed(tmp_path):
    out = tmp_path / "capacity.json"
    with out.open("wb") as f:
        r = subprocess.run([sys.executable, "-m", "gpuctl", "nodes", "capacity", "-o", "json", "--snapshot", str(SNAP)],
                           env=ENV, stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["schema"].startswith("gpuctl/capacity")


def test_errors_still_one_line_and_the_contract_s_code(tmp_path):
    r = _run("diagnose", "pod", "x", "--snapshot", str(tmp_path / "absent"))
    assert r.returncode == 4 and r.stdout == b""
    assert r.stderr.decode().count("\n") == 1 and "no such file or directory" in r.stderr.decode()


def test_a_reader_that_goes_away_early_is_no_traceback():
    r, w = os.pipe()
    os.close(r)                                        # the reader is gone before anything is written
    try:
        p = subprocess.run([sys.executable, "-m", "gpuctl", "runbook", "-o", "json"], env=ENV, stdout=w,
                           stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(w)
    err = p.stderr.decode()
    assert p.returncode in (0, 1) and "Traceback" not in err and "Exception ignored" not in err, err


def test_in_process_calls_keep_nothing(cli):
    cli("nodes", "capacity", "-o", "json", "--snapshot", str(SNAP))
    assert common.KEPT_UNTIL_EXIT is None             # only the console script keeps snapshots until it exits
