"""Jobs shared between this process and forked copies of it, each taking the next job
when it is free; the results come back in job order.

Decoding a large JSON List file is CPU work that holds the GIL (msgspec builds Python
objects), so threads cannot share it; processes can. ``files._read_rest_forked`` cuts
the items of a large ``pods.json`` into jobs and hands them to :func:`run`. On a
2-core machine a 150,000-pod file is read about 40% faster; with more cores, faster
still (docs/benchmarks.md).

How it works, and why it is safe in a tool that must never make an incident worse:

- **fork, on Linux only, from a process with one thread.** The children are copies of
  this process at the moment of the fork: they already hold the decoders, the need and
  the file's structure, and nothing is sent to them. A process with other threads
  (``gpuctl serve``, the MCP server, a ``.tar.gz``'s inflater) is never forked, since
  a lock held by another thread would stay held in the child. macOS and Windows, where
  fork is unsafe or missing, read in one process, as before.
- **Jobs are claimed, not assigned.** A pipe holds two bytes per job; each process
  reads two bytes to claim the next job (a pipe read is atomic against other reads),
  so a process that is slower or busy with other work simply takes fewer jobs.
- **Results come back through anonymous memory files** (``memfd``), one per child,
  read once the child has exited: a child never waits on the parent.
- **The parent decodes too**, and keeps its own results as they are; a child's
  results are pickled records (pickle keeps the records' shared parts shared).
  Nothing but this process's own children writes what is unpickled.
- **Anything odd means the caller reads serially.** A child that crashes, is killed,
  or leaves a job undone gives ``None`` for that job; the caller then reads the file
  in one process, exactly as it would have. Children leave with ``os._exit`` (no
  atexit handlers, no flush of the parent's buffered output) and are killed and
  reaped if the parent stops early (an error, Ctrl-C).

``GPUCTL_PROCESSES``: how many processes read (1: never fork; default: the CPUs
this process may run on, at most :data:`MAX_PROCESSES`).
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import threading
from typing import Any, Callable, Optional

MAX_PROCESSES = 8
MAX_JOBS = 4096           # two bytes a job in the claim pipe (8 KiB: it fits the pipe's buffer)
_TOKEN = struct.Struct("<H")
_FRAME = struct.Struct("<HQ")     # job number, pickled length


def processes() -> int:
    """How many processes may read at once here (1: this one only)."""
    env = os.environ.get("GPUCTL_PROCESSES", "").strip()
    if env:
        try:
            return max(1, min(int(env), MAX_PROCESSES * 4))
        except ValueError:
            return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_PROCESSES))


def can_fork() -> bool:
    """Whether forking is safe here: Linux, and no thread but this one."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(os, "memfd_create")
            and threading.active_count() == 1)


def run(n_jobs: int, workers: int, do_job: Callable[[int], tuple[bool, Any]]) -> list[Optional[tuple[bool, Any]]]:
    """Run ``do_job(0 … n_jobs-1)`` in this process and ``workers - 1`` forked
    children. ``do_job`` returns (ok, value); a process stops taking jobs after one
    that is not ok, and takes the jobs left so that the others stop too. Returns each
    job's (ok, value), or None for a job left undone (after one not ok, or by a process
    that died). Values from children are unpickled copies."""
    if not 0 < n_jobs <= MAX_JOBS:
        raise ValueError(f"{n_jobs} jobs: 1 to {MAX_JOBS}")
    results: list[Optional[tuple[bool, Any]]] = [None] * n_jobs
    r, w = os.pipe()
    children: dict[int, int] = {}     # pid -> memfd
    try:
        os.write(w, b"".join(_TOKEN.pack(j) for j in range(n_jobs)))
        os.close(w)
        w = -1
        for k in range(max(0, min(workers, n_jobs) - 1)):
            fd = os.memfd_create(f"gpuctl-read-{k}", os.MFD_CLOEXEC)
            pid = os.fork()
            if pid == 0:               # the child: never returns
                _child(r, fd, do_job)
            children[pid] = fd
        while True:
            j = _claim(r)
            if j is None:
                break
            ok, value = do_job(j)
            results[j] = (ok, value)
            if not ok:
                _drain(r)
                break
        for pid, fd in list(children.items()):
            _, status = os.waitpid(pid, 0)
            del children[pid]
            try:
                if os.waitstatus_to_exitcode(status) == 0:
                    _collect(fd, results)
            finally:
                os.close(fd)
    finally:
        for pid, fd in children.items():
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
            os.close(fd)
        os.close(r)
        if w >= 0:
            os.close(w)
    return results


def _child(r: int, fd: int, do_job: Callable[[int], tuple[bool, Any]]) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)     # Ctrl-C ends a child at once
        while True:
            j = _claim(r)
            if j is None:
                break
            try:
                ok, value = do_job(j)
                data = pickle.dumps((ok, value), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:      # noqa: B036 - the parent reads this job itself
                code = 1
                break
            _write_all(fd, _FRAME.pack(j, len(data)))
            _write_all(fd, data)
            if not ok:
                _drain(r)
                break
    except BaseException:              # noqa: B036
        code = 1
    finally:
        os._exit(code)


def _drain(r: int) -> None:
    """Take every job left: no job after one that is not ok is needed, so every process stops."""
    while os.read(r, 2 * MAX_JOBS):
        pass


def _claim(r: int) -> Optional[int]:
    """The next job, or None when there is none left. A pipe read holds the pipe's
    lock while it copies, so two bytes written at once are read by one process, whole."""
    tok = os.read(r, _TOKEN.size)
    return _TOKEN.unpack(tok)[0] if len(tok) == _TOKEN.size else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _collect(fd: int, results: list[Optional[tuple[bool, Any]]]) -> None:
    size = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, 0, os.SEEK_SET)
    with os.fdopen(os.dup(fd), "rb") as f:
        at = 0
        while at + _FRAME.size <= size:
            job, n = _FRAME.unpack(f.read(_FRAME.size))
            data = f.read(n)
            at += _FRAME.size + n
            if len(data) != n or job >= len(results):
                return
            results[job] = pickle.loads(data)
