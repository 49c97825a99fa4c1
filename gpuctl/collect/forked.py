"""Decoding shared between this process and forked copies of it (docs/decisions.md (ai)).
``run`` also shares the pending report's classes of pods (reports/pending.py ``_outcomes``).

Decoding a large JSON List file is CPU work that holds the GIL (msgspec builds Python
objects), so threads cannot share it; processes can. Two ways, both used by
``files``:

- :func:`run`: jobs known ahead (a directory's file cut into jobs at item separators,
  ``files._read_rest_forked``). This process and ``workers - 1`` children each claim
  the next job from a pipe that holds one two-byte number per job (a pipe read is
  atomic against other reads), so a process that is slower takes fewer jobs.
  Children append results to anonymous memory files (``memfd``), which this process
  reads between its own jobs (so that little is left to read when the children are
  done) and keeps once each child has exited well.
- :class:`Pool`: jobs cut from a stream as it comes (a ``.tar.gz``'s inflated
  members, ``files._open_pool``). Workers are forked before the caller starts any
  thread, and each job goes to a worker with room through that worker's pipe, or is
  done by the caller when none has.

Why this is safe in a tool that must never make an incident worse:

- **fork, on Linux only, from a process with one thread** (:func:`can_fork`). A
  child is a copy of this process: it already holds the decoders and the command's
  need, and nothing but job numbers and texts is sent to it. A process with other
  threads (``gpuctl serve``, the MCP server) is never forked, since a lock held by
  another thread would stay held in the child. macOS and Windows, where fork is
  unsafe or missing, read in one process, as before.
- **Results are pickled records** (pickle keeps the records' shared parts shared),
  written only by this process's own children.
- **Anything odd means this process does the work**: :func:`run` gives ``None`` for a
  job a child left undone (the caller then reads serially), :class:`Pool` does a job
  whose worker died or failed it with the caller's ``local``. Children leave with
  ``os._exit`` (no atexit handlers, no flush of the parent's buffered output), never
  write to stdout or stderr, and are killed and reaped if the parent stops early (an
  error, Ctrl-C).

``GPUCTL_PROCESSES``: how many processes decode (1: never fork; default: the CPUs
this process may run on, at most :data:`MAX_PROCESSES`).
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import threading
from typing import Any, Callable, Iterator, Optional

MAX_PROCESSES = 8
MAX_JOBS = 4096           # two bytes a job in the claim pipe (8 KiB: it fits the pipe's buffer)
_TOKEN = struct.Struct("<H")
_FRAME = struct.Struct("<IQ")     # a result in a child's memory file: job number, pickled length


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
        # what each copy finished is read while this process works (so that it is not all
        # left for the end, when the copies are done and wait); kept only if the copy exits well
        at = dict.fromkeys(children, 0)
        got: dict[int, list[int]] = {pid: [] for pid in children}
        while True:
            j = _claim(r)
            if j is None:
                break
            ok, value = do_job(j)
            results[j] = (ok, value)
            if not ok:
                _drain(r)
                break
            for pid, fd in children.items():
                at[pid] = _collect(fd, results, at[pid], got[pid])
        for pid, fd in list(children.items()):
            _, status = os.waitpid(pid, 0)
            del children[pid]
            try:
                if os.waitstatus_to_exitcode(status) == 0:
                    _collect(fd, results, at[pid], got[pid])
                else:                  # a copy that died: none of its jobs counts
                    for job in got[pid]:
                        results[job] = None
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
            _put_result(fd, j, data)
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


def _collect(fd: int, results: list[Optional[tuple[bool, Any]]], at: int, jobs: list[int]) -> int:
    """The whole results a copy has written from ``at`` on, into ``results`` (their job
    numbers appended to ``jobs``); where the next one begins."""
    for job, data, at in _results(fd, at):
        if job < len(results):
            results[job] = pickle.loads(data)
            jobs.append(job)
    return at


def _put_result(fd: int, job: int, data: bytes) -> None:
    _write_all(fd, _FRAME.pack(job, len(data)))
    _write_all(fd, data)


def _results(fd: int, at: int) -> Iterator[tuple[int, bytes, int]]:
    """The whole results in a child's memory file from ``at``: (job, pickled result,
    where the next one begins). A result still being written is left for later."""
    size = os.fstat(fd).st_size     # not lseek: the copy writing it shares the file's offset
    while at + _FRAME.size <= size:
        job, n = _FRAME.unpack(os.pread(fd, _FRAME.size, at))
        if at + _FRAME.size + n > size:
            return
        data = pread(fd, n, at + _FRAME.size)
        at += _FRAME.size + n
        yield job, data, at


# ------------------------------------------------------------------ jobs streamed to forked workers

_HEAD = struct.Struct("<IIQ")     # job number, pickled meta length, text length
_READY = struct.Struct("<Bi")     # worker, job it finished
_POLL_MS = 200                    # how long the parent waits for a worker before it checks they live
_PIPE_BYTES = 1 << 20             # a worker's pipe (Linux allows an unprivileged process up to 1 MiB)
_JOB_BYTES = _PIPE_BYTES - (64 << 10)   # a job at most, with its header: one waits whole in the pipe


class Pool:
    """Workers forked now, before the caller starts any thread (a ``.tar.gz``'s
    inflater), that take jobs as the caller cuts them from a stream.

    ``work(meta, text)``, given now, runs in a worker. A job's text goes through the
    worker's own pipe, whose buffer holds a whole job (``job_bytes``), so the caller
    hands a job to a busy worker without waiting: each worker has one job running and
    one waiting in its pipe (and memory stays bounded). When every worker has both, the
    caller does the job itself (``send``'s ``local``): its stream never waits, and a
    slow machine simply does more of the work here. A worker appends each job's
    pickled result to its own anonymous memory file, then says which job it finished
    on a pipe shared by the workers. ``results()`` waits for the jobs in flight and
    returns them; a worker that died (checked every _POLL_MS while waiting) or failed a
    job has that job done here, with ``local``. ``close()`` ends the workers (end of
    their pipes) and reaps them; on an error it kills them."""

    def __init__(self, workers: int, work: Callable[[Any, bytearray], tuple[bool, Any]]):
        self._next = 0
        self._flight: dict[int, tuple[int, bytes, Callable]] = {}    # job -> (worker, text, local)
        self._done: dict[int, tuple[bool, Any]] = {}
        self._pids: list[int] = []
        self._pipes: list[int] = []
        self._fds: list[int] = []
        self._offsets: list[int] = []
        self._load: list[int] = []          # jobs in flight, per worker
        self._alive: list[bool] = []
        self.job_bytes = _JOB_BYTES
        self._depth = 2
        self.sent = 0
        self._ready_r, ready_w = os.pipe()
        try:
            for k in range(workers):
                data_r, data_w = os.pipe()
                if _pipe_size(data_w, _PIPE_BYTES) < _PIPE_BYTES:
                    self._depth = 1         # a waiting job would not fit: one at a time
                fd = os.memfd_create(f"gpuctl-pool-{k}", os.MFD_CLOEXEC)
                pid = os.fork()
                if pid == 0:
                    for w in self._pipes:       # a later worker must not hold an earlier one's pipe open
                        os.close(w)
                    os.close(data_w)
                    os.close(self._ready_r)
                    _worker(k, data_r, fd, ready_w, work)
                os.close(data_r)
                self._pids.append(pid)
                self._pipes.append(data_w)
                self._fds.append(fd)
                self._offsets.append(0)
                self._load.append(0)
                self._alive.append(True)
        except BaseException:
            os.close(ready_w)
            self.close(kill=True)
            raise
        os.close(ready_w)
        os.set_blocking(self._ready_r, False)

    # -------------------------------------------------------------- the caller's side

    def send(self, meta: Any, text: bytes, local: Callable[[bytes], tuple[bool, Any]]
             ) -> tuple[int, Optional[tuple[bool, Any]]]:
        """Hand a job to a worker with room: (job, None); or, none having room, do it
        here with ``local(text)``: (job, its result). ``local`` also does the job if its
        worker dies or fails it."""
        job = self._next
        self._next += 1
        self._poll(block=False)
        m = pickle.dumps(meta, protocol=pickle.HIGHEST_PROTOCOL)
        while True:
            free = [k for k, n in enumerate(self._load) if self._alive[k] and n < self._depth]
            if not free or len(text) + len(m) + _HEAD.size > (self.job_bytes if self._depth > 1 else 1 << 62):
                return job, local(text)
            k = min(free, key=self._load.__getitem__)
            try:
                _write_all(self._pipes[k], _HEAD.pack(job, len(m), len(text)) + m)
                _write_all(self._pipes[k], text)
            except OSError:                 # the worker is gone (EPIPE): another, or here
                self._alive[k] = False
                continue
            self._flight[job] = (k, text, local)
            self._load[k] += 1
            self.sent += 1
            return job, None

    def results(self) -> dict[int, tuple[bool, Any]]:
        """Every job handed to a worker so far, finished: job -> (ok, value)."""
        while self._flight:
            if not self._poll(block=True):
                self._check_workers()
        out, self._done = self._done, {}
        return out

    def close(self, kill: bool = False) -> None:
        for w in self._pipes:
            os.close(w)
        self._pipes = []
        for pid in self._pids:
            try:
                if kill:
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        self._pids = []
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if self._ready_r >= 0:
            os.close(self._ready_r)
            self._ready_r = -1

    # -------------------------------------------------------------- bookkeeping

    def _poll(self, block: bool) -> bool:
        """Take the workers' "finished" messages; False when none came (in _POLL_MS, block)."""
        if block:
            import select

            p = select.poll()
            p.register(self._ready_r, select.POLLIN)
            if not p.poll(_POLL_MS):
                return False
        try:
            data = os.read(self._ready_r, _READY.size * 256)
        except BlockingIOError:
            return False
        if not data:                        # every worker has gone
            self._alive = [False] * len(self._alive)
            self._check_workers()
            return True
        for k, job in _READY.iter_unpack(data[: len(data) - len(data) % _READY.size]):
            if job in self._flight:
                self._load[k] -= 1
                self._collect(k)
                if job in self._flight:     # its result is not there: the worker failed it
                    self._redo(job)
        return True

    def _collect(self, k: int) -> None:
        for job, data, at in _results(self._fds[k], self._offsets[k]):
            self._offsets[k] = at
            if job in self._flight:
                del self._flight[job]
                self._done[job] = pickle.loads(data)

    def _check_workers(self) -> None:
        """Jobs of workers that have exited are done here."""
        for job, (k, _, _) in list(self._flight.items()):
            if self._alive[k]:
                try:
                    pid, _ = os.waitpid(self._pids[k], os.WNOHANG)
                except ChildProcessError:
                    pid = self._pids[k]
                if pid == 0:
                    continue
                self._alive[k] = False
            self._collect(k)
            if job in self._flight:
                self._redo(job)

    def _redo(self, job: int) -> None:
        _, text, local = self._flight.pop(job)
        self._done[job] = local(text)


def _pipe_size(fd: int, want: int) -> int:
    """Ask for a pipe buffer of ``want`` bytes (Linux); the size it has."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, want)
        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except (ImportError, AttributeError, OSError):
        return 0


def pread_into(fd: int, view: memoryview, at: int) -> int:
    """Fill ``view`` from the file at ``at``; how many bytes came (fewer only at its end)."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], at + got)
        if n <= 0:
            break
        got += n
    return got


def pread(fd: int, n: int, at: int) -> bytearray:
    """``n`` bytes of the file at ``at``: fewer only at its end."""
    buf = bytearray(n)
    with memoryview(buf) as view:
        got = pread_into(fd, view, at)
    del buf[got:]
    return buf


def _read_exact(fd: int, buf: memoryview) -> bool:
    got = 0
    while got < len(buf):
        n = os.readv(fd, [buf[got:]])
        if n == 0:
            return False
        got += n
    return True


def _worker(k: int, data_r: int, fd: int, ready_w: int, work: Callable[[Any, bytearray], tuple[bool, Any]]) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        head = bytearray(_HEAD.size)
        while _read_exact(data_r, memoryview(head)):
            job, mlen, tlen = _HEAD.unpack(head)
            m = bytearray(mlen)
            text = bytearray(tlen)
            if not (_read_exact(data_r, memoryview(m)) and _read_exact(data_r, memoryview(text))):
                break
            try:
                data = pickle.dumps(work(pickle.loads(m), text), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:      # noqa: B036 - the parent does this job itself
                data = None
            if data is not None:
                _put_result(fd, job, data)
            _write_all(ready_w, _READY.pack(k, job))
    except BaseException:              # noqa: B036
        code = 1
    finally:
        os._exit(code)
