"""Run gpuctl as a fresh process per fault-matrix cell, without paying its imports
410 times.

A plain ``subprocess.run([python, -m, gpuctl, ...])`` per cell spends most of its CPU
importing the kubernetes client (~0.4 s on the 2-core CI machine), which made the fault
matrix the slowest part of the suite. Here one forkserver process imports gpuctl's
heavy dependencies once; every cell is a ``fork()`` of it, so each still runs in its
own process (own globals, own environment, own working directory, fds 1 and 2 sent to
files, a hard timeout that kills it) exactly as ``python -m gpuctl`` would, minus the
import time. gpuctl reads its environment when a command runs, never at import, so a
preloaded module cannot carry the parent's settings into a cell.

Kept free of pytest and importable by module name (``cell_runner``) because the
forkserver unpickles :func:`child` by reference.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from multiprocessing.connection import wait
from dataclasses import dataclass

# third-party and gpuctl modules a live command imports (kubernetes dominates)
PRELOAD = ["cell_runner", "kubernetes.client", "kubernetes.config", "urllib3", "msgspec", "yaml",
           "gpuctl.cli.app", "gpuctl.collect.kube", "gpuctl.collect.live", "gpuctl.engine"]

_CTX = None
# multiprocessing is not thread-safe here: Process.start() polls every other live child
# (multiprocessing.process._cleanup), and a forkserver child's exit status is a value
# read once from a pipe, so two threads polling one child make one of them read EOF
# and report exit 255. Everything that polls runs under this lock; waiting does not.
_POLL_LOCK = threading.Lock()


def _context():
    global _CTX
    if _CTX is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        _CTX = ctx
    return _CTX


def child(argv: list[str], env: dict[str, str], cwd: str, out_path: str, err_path: str) -> None:
    """The body of one cell's process: ``gpuctl ARGV`` with ENV in CWD, stdout and
    stderr to files; the process's exit status is gpuctl's."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        for fd, path in ((1, out_path), (2, err_path)):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        sys.argv = ["gpuctl", *argv]
        from gpuctl.cli.app import main

        code = main(list(argv))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


@dataclass
class Result:
    code: int
    out: str
    err: str
    timed_out: bool


def run_gpuctl(argv: list[str], env: dict[str, str], cwd: str, timeout: float) -> Result:
    """``python -m gpuctl ARGV`` in a fresh (forked) process; kill it after TIMEOUT s."""
    out_path, err_path = os.path.join(cwd, ".stdout"), os.path.join(cwd, ".stderr")
    proc = _context().Process(target=child, args=(list(argv), dict(env), cwd, out_path, err_path))
    with _POLL_LOCK:
        proc.start()
    timed_out = not wait([proc.sentinel], timeout)
    with _POLL_LOCK:
        if timed_out:
            proc.kill()
        proc.join()
        code = -9 if timed_out else proc.exitcode

    def read(path: str) -> str:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    out, err = read(out_path), read(err_path)
    for path in (out_path, err_path):
        try:
            os.remove(path)
        except OSError:
            pass
    return Result(code, out, err, timed_out)
