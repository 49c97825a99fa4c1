"""Time and memory of ``gpuctl diagnose pod``, stage by stage, in one process.

Runs the real CLI entry point (``gpuctl.cli.app.main``) in-process against a
served synthetic cluster, with the live collector's steps wrapped (nothing in
gpuctl is changed: the wrappers only read the clock and ``/proc/self/statm``), and
prints for each step its duration, the resident memory after it and the peak so
far. At the end it also reports what the garbage collector finds once frozen
objects are released (``gc.unfreeze(); gc.collect()``): cyclic garbage made
while the GC was paused stays resident for the rest of the run.

    python -m benchmarks.memory_stages                       # serves 5,000 / 150,000 itself
    python -m benchmarks.memory_stages --kubeconfig K --pod bench-target-mig
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import io
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

T0 = time.perf_counter()
STAGES: list[dict[str, Any]] = []
_depth = 0


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mark(name: str, started: float | None = None) -> None:
    now = time.perf_counter()
    STAGES.append({"stage": name, "at_s": round(now - T0, 3),
                   "took_s": round(now - started, 3) if started is not None else None,
                   "rss_mb": round(rss_mb(), 1), "peak_mb": round(peak_mb(), 1),
                   "gc_frozen": gc.get_freeze_count()})


def wrap(owner: Any, attr: str, label: str) -> None:
    fn: Callable = getattr(owner, attr)

    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> Any:
        global _depth
        _depth += 1
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            _depth -= 1
            if _depth == 0 or label.startswith("collect"):
                mark(label, t)

    setattr(owner, attr, wrapper)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.synth import NOW, TARGET, TARGET_NS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig", help="a served cluster (else one is generated and served)")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--pod", default=TARGET)
    ap.add_argument("--warm", type=int, default=1, help="untimed runs first, to warm the server's caches")
    args = ap.parse_args(argv)
    os.environ["GPUCTL_NOW"] = NOW
    served = None
    if not args.kubeconfig:
        from benchmarks import serve

        (HERE / "out").mkdir(exist_ok=True)
        served = serve.start(str(HERE / "out" / "stages.kubeconfig"), args.nodes, args.pods)
        args.kubeconfig = served.kubeconfig
    try:
        cli = [sys.executable, "-m", "gpuctl", "diagnose", "pod", args.pod, "-n", TARGET_NS,
               "--kubeconfig", args.kubeconfig, "-o", "json"]
        import subprocess

        for _ in range(args.warm):
            subprocess.run(cli, cwd=ROOT, capture_output=True)
        global T0
        T0 = time.perf_counter()
        mark("start")
        t = time.perf_counter()
        from gpuctl.cli import app
        from gpuctl.collect import kube, live
        from gpuctl import engine
        from gpuctl.render import data as render_data

        mark("import gpuctl (cli, collectors, engine)", t)
        for name, fn in list(vars(live.LiveCollector).items()):
            if callable(fn) and not name.startswith("_"):
                wrap(live.LiveCollector, name, f"collector.{name}")
        wrap(live, "collect_for_pod", "collect_for_pod (all collection)")
        wrap(kube.KubeAPI, "__init__", "kubeconfig + ApiClient")
        if hasattr(engine, "diagnose"):
            wrap(engine, "diagnose", "engine.diagnose (checks)")
        if hasattr(render_data, "dump_json"):
            wrap(render_data, "dump_json", "render json")
        out = io.StringIO()
        t = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = app.main(["diagnose", "pod", args.pod, "-n", TARGET_NS, "--kubeconfig", args.kubeconfig,
                             "-o", "json"])
        mark("whole command", t)
        frozen = gc.get_freeze_count()
        t = time.perf_counter()
        gc.unfreeze()
        unreachable = gc.collect()
        mark("after gc.unfreeze(); gc.collect()", t)
        doc = json.loads(out.getvalue())
    finally:
        if served:
            served.stop()
    print(f"exit {code}, verdict {doc.get('verdict')}, findings {[f.get('code') for f in doc.get('findings', [])]}")
    print(f"frozen objects at the end: {frozen}; unreachable (cyclic garbage) found after unfreezing: {unreachable}")
    print()
    print("| stage | took (s) | at (s) | RSS after (MB) | peak so far (MB) |")
    print("| --- | --- | --- | --- | --- |")
    for s in STAGES:
        took = "" if s["took_s"] is None else f"{s['took_s']:.2f}"
        print(f"| {s['stage']} | {took} | {s['at_s']:.2f} | {s['rss_mb']:.0f} | {s['peak_mb']:.0f} |")
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / f"memory_stages-{args.pod}.json").write_text(json.dumps(
        {"pod": args.pod, "exit": code, "frozen": frozen, "unreachable_after_unfreeze": unreachable,
         "stages": STAGES}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
