"""Offline snapshots against live and against a floor (issue 18), in one run.

The synthetic cluster (``benchmarks.synth``) is written as kubectl-style List files
(``nodes.json``, ``pods.json``, ``other.json``, one item per line, plus the
``snapshot.json`` synth writes), as a directory and as a ``.tar.gz`` of it, and served
by the benchmark API server (``benchmarks.serve``, its own process) for the live runs.
Every command is a fresh process timed from outside with GNU time (wall, CPU with its
children's, peak RSS of the largest process). A directory's large List files are read
by several processes (collect/forked.py); the rows marked "one process" set
``GPUCTL_PROCESSES=1``, as on macOS, Windows or one CPU::

    python -m benchmarks.snapshot_bench                       # 5,000 nodes / 150,000 pods (minutes)
    python -m benchmarks.snapshot_bench --nodes 500 --pods 15000 --reps 3
    python -m benchmarks.snapshot_bench --skip live,save      # offline rows only

Floors (``python -m benchmarks.snapshot_bench floor SRC``): the same files read and
decoded by msgspec, one call per file, straight into the records the command keeps
(``Node``, ``BoundPod``; other kinds of ``other.json`` as gpuctl's records), the GC paused,
nothing else; for a tarball, read member by member from the stream. Save floors: the
same bytes read (or fetched: the same lists, raw pages) and gzipped into a tarball.
Prints a Markdown table and writes ``benchmarks/out/snapshot_bench.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GNU_TIME = "/usr/bin/time"
ENV = {"GPUCTL_NOW": "2026-11-20T03:12:00Z"}


def write_lists(out: Path, nodes: int, pods: int) -> dict:
    """The cluster as kubectl List files (one item a line) + snapshot.json, and a .tar.gz of them."""
    from .synth import NOW, generate

    c = generate(nodes, pods)
    d = out / "lists"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, items in (("nodes.json", c.nodes), ("pods.json", c.pods), ("other.json", c.others)):
        with open(d / name, "w", encoding="utf-8") as f:
            f.write('{"apiVersion": "v1", "items": [\n')
            for i, s in enumerate(items):
                if i:
                    f.write(",\n")
                f.write(s)
            f.write('\n], "kind": "List", "metadata": {"resourceVersion": ""}}\n')
    (d / "snapshot.json").write_text(json.dumps({"schema": "gpuctl/snapshot/v1", "capturedAt": NOW,
                                                 "context": "bench-synthetic"}, indent=2) + "\n")
    tgz = out / "lists.tar.gz"
    with tarfile.open(tgz, "w:gz", compresslevel=6) as tf:
        for name in ("snapshot.json", "nodes.json", "other.json", "pods.json"):
            tf.add(d / name, arcname=f"lists/{name}")
    node = json.loads(c.nodes[0])["metadata"]["name"]
    return {"dir": str(d), "tgz": str(tgz), "node": node, "bytes": sum(f.stat().st_size for f in d.iterdir()),
            "tgz_bytes": tgz.stat().st_size}


# ------------------------------------------------------------------ floors (run as subprocesses)


def floor_read(src: str) -> dict:
    """Decode the snapshot's files into the records a command keeps, nothing else."""
    import msgspec

    from gpuctl.model import objects as O

    NodeList = msgspec.defstruct("NodeList", [("items", list[O.Node], msgspec.field(default_factory=list))])
    PodList = msgspec.defstruct("PodList", [("items", list[O.BoundPod], msgspec.field(default_factory=list))])
    AnyList = msgspec.defstruct("AnyList", [("items", list[O.Event], msgspec.field(default_factory=list))])

    decoders = {"nodes.json": msgspec.json.Decoder(NodeList), "pods.json": msgspec.json.Decoder(PodList),
                "other.json": msgspec.json.Decoder(AnyList)}
    gc.disable()
    kept = []
    if src.endswith(".tar.gz"):
        with tarfile.open(src, "r|gz") as tf:
            for m in tf:
                base = m.name.rsplit("/", 1)[-1]
                if m.isfile() and base in decoders:
                    kept.append(decoders[base].decode(tf.extractfile(m).read()).items)
    else:
        for base, dec in decoders.items():
            with open(os.path.join(src, base), "rb") as f:
                kept.append(dec.decode(f.read()).items)
    gc.freeze()
    return {"objects": sum(map(len, kept))}


def load_only(src: str, collector: str = "collect_cluster", for_pending: str = "") -> dict:
    """gpuctl's offline read alone (what a command reads, no report): against the floor."""
    from gpuctl.collect.files import load_snapshot, need_for

    snap = load_snapshot(src, need_for(collector, {"for_pending": bool(for_pending)}))
    return {"nodes": len(snap.nodes), "pods": len(snap.pods)}


def floor_gzip(src: str, dest: str) -> dict:
    """The same bytes read and written into a .tar.gz, at the level snapshot save
    compresses them (gpuctl/collect/targz.py LEVEL), in one thread."""
    from gpuctl.collect.targz import LEVEL

    with tarfile.open(dest, "w:gz", compresslevel=LEVEL) as tf:
        for name in sorted(os.listdir(src)):
            tf.add(os.path.join(src, name), arcname=f"floor/{name}")
    return {"bytes": os.path.getsize(dest)}


def floor_fetch_gzip(kubeconfig: str, dest: str) -> dict:
    """The lists snapshot save reads for the synthetic cluster (nodes, pods, events,
    namespaces, quotas; raw pages, gzip on the wire) written into a .tar.gz."""
    from gpuctl.collect.kube import KubeAPI

    api = KubeAPI(kubeconfig)
    work = Path(dest + ".d")
    work.mkdir(exist_ok=True)
    for stem, path in (("nodes", "/api/v1/nodes"), ("pods", "/api/v1/pods"), ("events", "/api/v1/events"),
                       ("namespaces", "/api/v1/namespaces"), ("resourcequotas", "/api/v1/resourcequotas")):
        with open(work / f"{stem}.json", "wb") as f:
            for items in api.pages(path, None, lambda b: ([b], _token(b)), key=None):
                f.write(items[0])
    from gpuctl.collect.targz import LEVEL

    with tarfile.open(dest, "w:gz", compresslevel=LEVEL) as tf:
        for p in sorted(work.iterdir()):
            tf.add(p, arcname=f"floor/{p.name}")
    shutil.rmtree(work)
    return {"bytes": os.path.getsize(dest)}


def _token(page: bytes) -> str:
    import msgspec

    Meta = msgspec.defstruct("Meta", [("continue_", str, msgspec.field(name="continue", default=""))])
    Page = msgspec.defstruct("Page", [("metadata", Meta, msgspec.field(default_factory=Meta))])

    return msgspec.json.decode(page, type=Page).metadata.continue_


# ------------------------------------------------------------------ timing


def timed(cmd: list[str], label: str, expect: tuple[int, ...] = (0, 1), env: Optional[dict] = None) -> dict:
    row = _timed(cmd, label, expect, env)
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def _timed(cmd: list[str], label: str, expect: tuple[int, ...] = (0, 1), extra: Optional[dict] = None) -> dict:
    """Wall time, CPU time (with its children's) and peak RSS (the largest of the
    process and its children) of one fresh process (GNU time)."""
    env = dict(os.environ, **ENV, **(extra or {}))
    stats = Path("/tmp/gpuctl-snapshot-bench.time")
    t0 = time.perf_counter()
    r = subprocess.run([GNU_TIME, "-o", str(stats), "-f", "%e %M %U %S"] + cmd, cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    fields = stats.read_text().split()[-4:]
    if r.returncode not in expect:
        raise RuntimeError(f"{label}: exit {r.returncode}: {r.stderr.decode()[-2000:]}")
    return {"label": label, "wall_s": round(wall, 3), "peak_mb": round(int(fields[1]) / 1024, 1),
            "cpu_s": round(float(fields[2]) + float(fields[3]), 2), "code": r.returncode,
            "out_bytes": len(r.stdout)}


def gpuctl(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpuctl", *args]


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    t = time.perf_counter()
    data = write_lists(out, args.nodes, args.pods)
    print(f"wrote {data['bytes'] / 1e6:.0f} MB of List files ({data['tgz_bytes'] / 1e6:.0f} MB .tar.gz) "
          f"in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    rows: list[dict] = []
    sources = {"dir": data["dir"], "tar.gz": data["tgz"]}
    commands = {
        "nodes capacity": ["nodes", "capacity", "-o", "json"],
        "diagnose pending -A": ["diagnose", "pending", "-A", "-o", "json"],
        "diagnose pod": ["diagnose", "pod", "bench-target", "-n", "ml", "-o", "json"],
        "label-nodes": ["label-nodes", "-o", "json"],
        "diagnose node": ["diagnose", "node", data["node"], "-o", "json"],
    }
    served = None
    if "live" not in skip or "save" not in skip:
        from .serve import start

        served = start(out / "snapshot-bench.kubeconfig", nodes=args.nodes, pods=args.pods)
    try:
        for rep in range(args.reps):
            for where, src in sources.items():
                rows.append({**timed([sys.executable, "-m", "benchmarks.snapshot_bench", "floor", src],
                                     f"floor: decode {where}", expect=(0,)), "rep": rep})
                rows.append({**timed([sys.executable, "-m", "benchmarks.snapshot_bench", "load", src],
                                     f"gpuctl's read alone (nodes capacity's need) {where}", expect=(0,)), "rep": rep})
                for name, argv in commands.items():
                    rows.append({**timed(gpuctl(*argv, "--snapshot", src), f"{name} --snapshot {where}"), "rep": rep})
                if where == "dir":    # one process (GPUCTL_PROCESSES=1: macOS, Windows, one CPU), as a directory forks
                    one = {"GPUCTL_PROCESSES": "1"}
                    rows.append({**timed([sys.executable, "-m", "benchmarks.snapshot_bench", "load", src],
                                         f"gpuctl's read alone (nodes capacity's need) {where}, one process",
                                         expect=(0,), env=one), "rep": rep})
                    for name in ("nodes capacity", "diagnose pending -A", "diagnose pod"):
                        rows.append({**timed(gpuctl(*commands[name], "--snapshot", src),
                                             f"{name} --snapshot {where}, one process", env=one), "rep": rep})
            if served is not None and "live" not in skip:
                for name, argv in commands.items():
                    if rep == 0:     # the server's caches warm up (its first answer of a list is slow)
                        timed(gpuctl(*argv, "--kubeconfig", served.kubeconfig), "warm-up")
                    rows.append({**timed(gpuctl(*argv, "--kubeconfig", served.kubeconfig), f"{name} live"), "rep": rep})
            if "save" not in skip:
                for p in (out / "rebundle.tar.gz", out / "floor.tar.gz", out / "live.tar.gz", out / "fetch.tar.gz"):
                    p.unlink(missing_ok=True)
                rows.append({**timed([sys.executable, "-m", "benchmarks.snapshot_bench", "floor-gzip", data["dir"],
                                      str(out / "floor.tar.gz")], "floor: read + gzip (dir)", expect=(0,)), "rep": rep})
                rows.append({**timed(gpuctl("snapshot", "save", str(out / "rebundle.tar.gz"), "--snapshot", data["dir"]),
                                     "snapshot save --snapshot dir (re-bundle)"), "rep": rep})
                if served is not None:
                    rows.append({**timed([sys.executable, "-m", "benchmarks.snapshot_bench", "floor-fetch", served.kubeconfig,
                                          str(out / "fetch.tar.gz")], "floor: fetch + gzip", expect=(0,)), "rep": rep})
                    rows.append({**timed(gpuctl("snapshot", "save", str(out / "live.tar.gz"), "--kubeconfig",
                                                served.kubeconfig), "snapshot save live"), "rep": rep})
    finally:
        if served is not None:
            served.stop()
    result = {"nodes": args.nodes, "pods": args.pods, "reps": args.reps, "data": data, "rows": rows,
              "commit": _commit(), "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "snapshot_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    print(table(rows))
    return result


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def table(rows: list[dict]) -> str:
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["label"], []).append(r)
    lines = ["| measurement | wall (median) | wall (min) | CPU (median) | peak RSS (median) |",
             "| --- | --- | --- | --- | --- |"]
    for label, rs in by.items():
        lines.append(f"| {label} | {summary(rs)} |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    """Table cells of repetitions: wall (median), wall (min), CPU (median), peak RSS (median)."""
    walls = sorted(r["wall_s"] for r in rows)
    cpus = sorted(r["cpu_s"] for r in rows)
    peaks = sorted(r["peak_mb"] for r in rows)
    return (f"{walls[len(walls) // 2]:.2f} s | {walls[0]:.2f} s | {cpus[len(cpus) // 2]:.2f} s "
            f"| {peaks[len(peaks) // 2]:.0f} MB")


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("floor", "floor-gzip", "floor-fetch", "load"):
        t0 = time.perf_counter()
        res = {"floor": floor_read, "floor-gzip": floor_gzip, "floor-fetch": floor_fetch_gzip,
               "load": load_only}[argv[0]](*argv[1:])
        res["s"] = round(time.perf_counter() - t0, 3)
        res["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(res))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--out", default="/tmp/gpuctl-snapshot-bench")
    ap.add_argument("--skip", default="", help="comma-separated: live, save")
    run(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
