"""Benchmark `gpuctl serve` on the synthetic cluster (docs/benchmarks.md, "gpuctl serve").

    python -m benchmarks.serve_bench                    # 5,000 nodes / 150,000 pods
    python -m benchmarks.serve_bench --nodes 500 --pods 15000

Starts the synthetic API server in its own process (benchmarks/serve.py), measures the
fetch+decode floor (benchmarks/floor.py, gzip) in the same run, then runs the exporter
in a child process (``--child``) that reports, as one JSON line:

* ``first_sync_s``: the first recompute, which lists everything through the watch cache
  (what the issue compares with 1.3x the floor);
* ``second_pass_s``: a recompute from the cache alone;
* ``rss_mb`` after both passes (the steady memory), and the process's peak;
* ``scrape_ms``: the median and worst of 50 renderings of /metrics.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


def child(kubeconfig: str) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from gpuctl.collect.kube import KubeAPI
    from gpuctl.serve.metrics import exposition
    from gpuctl.serve.server import Service

    svc = Service(KubeAPI(kubeconfig, None, request_timeout=120.0), interval=3600)
    t0 = time.perf_counter()
    state = svc.recompute()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    svc.recompute()
    second = time.perf_counter() - t0
    scrapes = []
    for _ in range(50):
        t0 = time.perf_counter()
        exposition(svc.exporter)
        scrapes.append((time.perf_counter() - t0) * 1000)
    out = {"first_sync_s": first, "second_pass_s": second, "rss_mb": _rss_mb(),
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "scrape_ms_median": statistics.median(scrapes), "scrape_ms_max": max(scrapes),
           "pending_pods": state.pending.get("pods"), "informers": len(svc.cache.informers),
           "nodes": len(state.snapshot.nodes)}
    svc.stop()
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--child", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    sys.path.insert(0, str(ROOT))
    from benchmarks import serve as bench_server
    from benchmarks.run import PY, run_floor, run_measured

    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        served = bench_server.start(kubeconfig, nodes=args.nodes, pods=args.pods)
        try:
            floor = run_floor(served.kubeconfig, "gzip")
            r = run_measured([PY, "-m", "benchmarks.serve_bench", "--child", served.kubeconfig], timeout=1800)
            if r["rc"] != 0:
                sys.stderr.write(r["stderr"][-3000:])
                return 1
            res = json.loads(r["stdout"].strip().splitlines()[-1])
        finally:
            served.stop()
    res["floor_gzip_s"] = floor["wall_s"]
    res["first_sync_vs_floor"] = res["first_sync_s"] / floor["wall_s"]
    res["child_peak_rss_mb"] = r["peak_rss_mb"]
    print(f"| measurement ({args.nodes} nodes / {args.pods} pods) | value |")
    print("| --- | --- |")
    print(f"| floor, gzip (lists + decode, a process of its own) | {floor['wall_s']:.2f} s |")
    print(f"| first sync (first recompute: lists through the cache, diagnosis) | {res['first_sync_s']:.2f} s "
          f"({res['first_sync_vs_floor']:.2f}x the floor) |")
    print(f"| a recompute from the cache | {res['second_pass_s']:.2f} s |")
    print(f"| RSS after two passes (steady) | {res['rss_mb']:.0f} MB (peak {res['child_peak_rss_mb']:.0f} MB) |")
    print(f"| a scrape of /metrics (median / worst of 50) | {res['scrape_ms_median']:.1f} / {res['scrape_ms_max']:.1f} ms |")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
