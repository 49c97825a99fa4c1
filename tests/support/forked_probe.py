"""Run in its own process by tests/test_forked_read.py: a process with one thread, as
``gpuctl`` is, so that gpuctl.collect.forked may fork it (pytest's process may hold
server threads, and forking it would copy pytest).

``python tests/support/forked_probe.py JSON``; JSON names a mode:

- ``read``: load a snapshot with a need (``collector``, ``args``) with the fork
  thresholds lowered (``job`` bytes a job), and print the snapshot's records in
  order, its problems and gaps, and how many files were read by several processes.
  ``thread``: another thread runs meanwhile. ``kill_children``: every forked reader
  dies as it starts a job.
- ``run``: call forked.run on jobs that say which process did them; ``fail`` (job
  numbers whose result is not ok), ``die`` (jobs a child dies on), ``die_second``
  (every child dies as it takes its second job), ``raise`` (the parent raises in
  the first job it takes from that one on), ``parent_sleep`` (how long each of the parent's jobs takes: longer, and the
  children take most jobs).
- ``pool``: send jobs to a forked.Pool; ``die`` (jobs a worker dies on), ``fail``
  (jobs a worker raises on), ``raise`` (a job that raises in this process).
- ``pending``: the pending report (-A) of each snapshot in ``paths``, shared with
  forked copies from ``min_pods`` Pending pods on, lone pods handed out ``lone`` at a
  time; ``thread`` and ``kill_children`` as for ``read`` (a copy dies as it starts a
  pod). Prints each report and exit code, and how many reports were forked; with
  ``who``, also which process diagnosed each pod and each pod's class (the fit it
  shares with others), taken out of the reports.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import msgspec  # noqa: E402

from gpuctl.collect import files as F  # noqa: E402
from gpuctl.collect import forked  # noqa: E402
from gpuctl.errors import SourceError  # noqa: E402


def _other_thread_and_dying_children(args: dict, module, name: str) -> None:
    """``thread``: another thread runs meanwhile. ``kill_children``: a forked copy dies as
    it calls ``module.name`` (this process calls it as before)."""
    if args.get("thread"):
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    if args.get("kill_children"):
        parent, real = os.getpid(), getattr(module, name)

        def dying(*a, **k):
            if os.getpid() != parent:
                os._exit(9)
            return real(*a, **k)

        setattr(module, name, dying)


def read(args: dict) -> dict:
    F.FORK_MIN_BYTES = 0
    F.FORK_MIN_TARBALL = 0
    F.FORK_JOB_BYTES = args.get("job", 4096)
    forked._JOB_BYTES = args.get("job", 4096) + 2048
    _other_thread_and_dying_children(args, F, "_decode_batch")
    need = F.need_for(args["collector"], args.get("args"))
    b = msgspec.to_builtins
    try:
        snap = F.load_snapshot(args["path"], need)
        out = {"nodes": [[k, type(v).__name__, b(v)] for k, v in snap.nodes.items()],
               "pods": [[k, type(v).__name__, b(v)] for k, v in snap.pods.items()],
               "generic": {k: [b(o) for o in v] for k, v in snap.generic.items()},
               "malformed": [str(m) for m in snap.malformed],
               "gaps": sorted(str(g) for g in snap.gaps.values())}
    except SourceError as e:
        out = {"error": str(e)}
    return {"forked": F.FORKED_READS, "gave_up": F.FORK_GAVE_UP, "pool_sent": F.POOL_JOBS_SENT, "snap": out}


def run(args: dict) -> dict:
    parent = os.getpid()
    fail, die, raise_at = set(args.get("fail", ())), set(args.get("die", ())), args.get("raise")
    done_here = []

    def do_job(j: int):
        if os.getpid() != parent and (j in die or (args.get("die_second") and done_here)):
            os._exit(3)
        done_here.append(j)
        if os.getpid() == parent and raise_at is not None and j >= raise_at:   # its first job from there on
            raise KeyboardInterrupt
        time.sleep(args.get("parent_sleep", 0.01) if os.getpid() == parent else 0.01)
        return j not in fail, {"job": j, "by_parent": os.getpid() == parent}

    try:
        got = forked.run(args["jobs"], args["workers"], do_job)
        outcome = "returned"
    except KeyboardInterrupt:
        got, outcome = None, "raised"
    try:
        os.waitpid(-1, os.WNOHANG)
        children_left = True
    except ChildProcessError:
        children_left = False
    return {"outcome": outcome, "results": got, "children_left": children_left}


def pool(args: dict) -> dict:
    parent = os.getpid()
    die, fail, raise_at = set(args.get("die", ())), set(args.get("fail", ())), args.get("raise")

    def work(meta, text):
        j = meta
        if j in die:
            os._exit(3)
        if j in fail:
            raise ValueError("worker fails")
        time.sleep(0.005)
        return True, {"job": j, "text": bytes(text).decode(), "by": "worker"}

    def local(j):
        def do(text):
            if raise_at is not None and j >= raise_at:    # the first job done here from then on
                raise KeyboardInterrupt
            time.sleep(0.02)     # this process is slower: workers have room for most jobs
            return True, {"job": j, "text": bytes(text).decode(), "by": "parent"}
        return do

    got, outcome, sent = {}, "returned", []
    p = forked.Pool(args["workers"], work)
    try:
        for j in range(args["jobs"]):
            job, res = p.send(j, f"text {j}".encode(), local(j))
            got[job] = res
            if res is None:
                sent.append(job)
        done = p.results()
        got = {job: (res if res is not None else done[job]) for job, res in got.items()}
        p.close()
    except KeyboardInterrupt:
        p.close(kill=True)
        outcome = "raised"
    try:
        os.waitpid(-1, os.WNOHANG)
        children_left = True
    except ChildProcessError:
        children_left = False
    return {"outcome": outcome, "results": [got[j] for j in sorted(got)] if outcome == "returned" else None,
            "children_left": children_left, "sent": sent}


def pending(args: dict) -> dict:
    from gpuctl.reports import pending as P

    os.environ.setdefault("GPUCTL_NOW", "2026-11-20T03:12:00Z")
    P.FORK_MIN_PODS = args.get("min_pods", 0)
    P._LONE_PODS_PER_JOB = args.get("lone", 1)
    _other_thread_and_dying_children(args, P, "_outcome")
    if args.get("who"):
        real_outcome = P._outcome

        def marked(*a, **k):
            o = real_outcome(*a, **k)
            o[2]["by"] = os.getpid()
            return o

        P._outcome = marked
    reports, who = [], {}
    for path in args["paths"]:
        snap = F.load_snapshot(path, F.need_for("collect_cluster", {"namespace": None, "for_pending": True}))
        doc, code = P.pending_report(snap, None)
        if args.get("who"):
            from gpuctl.checks.context import PodContext
            from gpuctl.checks.memo import Memo

            memo = Memo(share_across_owners=True)
            classes: dict = {}
            for i, p in enumerate(P.pending_gpu_pods(snap, None, memo)):
                sig = PodContext(snap, p, memo).fit_signature
                key = repr((sig, p.status.nominatedNodeName)) if sig is not None else f"lone {i}"
                who[p.metadata.name] = {"class": classes.setdefault(key, len(classes)), "index": i}
            for g in doc["groups"]:
                for e in g["pods"]:
                    who[e["name"]]["by"] = e.pop("by")
        reports.append([path, code, doc])
    return {"forked": P.FORKED_REPORTS, "reports": reports, "who": who}


if __name__ == "__main__":
    a = json.loads(sys.argv[1])
    print(json.dumps({"read": read, "run": run, "pool": pool, "pending": pending}[a["mode"]](a)))
