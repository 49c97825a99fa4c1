"""Benchmark `gpuctl serve` on the synthetic cluster (docs/benchmarks.md, "gpuctl serve").

    python -m benchmarks.serve_bench                    # 5,000 nodes / 150,000 pods
    python -m benchmarks.serve_bench --nodes 500 --pods 15000

Starts the synthetic API server in its own process (benchmarks/serve.py), measures the
fetch+decode floor (benchmarks/floor.py, gzip; a warm-up run first, as benchmarks/run.py
does: the server gzips each page once) in the same run, then runs the exporter
in a child process (``--child``) that reports, as one JSON line:

* ``first_sync_s``: the first collector pass, which lists everything through the watch
  cache (what the issue compares with 1.3x the floor); ``first_diagnosis_s`` the
  diagnosis computed on it;
* ``second_pass_s``: a recompute from the cache alone (``second_collect_s`` of it the
  collectors reading the cache);
* ``rss_mb`` after both passes (the steady memory), and the process's peak;
* ``scrape_ms``: the median and worst of 50 renderings of /metrics;
* ``update_cpu_share``: while this script PATCHes ``--rate`` pods a second for
  ``--window`` seconds (from the parent process), the exporter's CPU time over that
  window, with no recompute running: the cost of applying watch events (the issue's
  "200 pod updates per second with under half a core").
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

    from gpuctl.collect.live import collect_cluster
    from gpuctl.serve.state import compute

    svc = Service(KubeAPI(kubeconfig, None, request_timeout=120.0), interval=3600)
    t0 = time.perf_counter()
    svc.cache.next_pass()
    snap = collect_cluster(svc.cache, for_pending=True)       # the first sync: every list, through the cache
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = svc.state = compute(snap)
    first_compute = time.perf_counter() - t0
    t0 = time.perf_counter()
    svc.cache.next_pass()
    snap = collect_cluster(svc.cache, for_pending=True)       # a pass from the cache
    second_collect = time.perf_counter() - t0
    svc.state = compute(snap)
    second = time.perf_counter() - t0
    from gpuctl.serve.server import _release_memory
    _release_memory()
    scrapes = []
    for _ in range(50):
        t0 = time.perf_counter()
        exposition(svc.exporter)
        scrapes.append((time.perf_counter() - t0) * 1000)
    # Applying updates: tell the parent we are ready, measure CPU until it says "done".
    events0 = sum(i.stats.events for i in svc.cache.informers.values())
    print("GO", flush=True)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sys.stdin.readline()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    applied = sum(i.stats.events for i in svc.cache.informers.values()) - events0
    out = {"first_sync_s": first, "first_diagnosis_s": first_compute, "second_collect_s": second_collect,
           "second_pass_s": second, "rss_mb": _rss_mb(),
           "update_window_s": wall, "update_cpu_s": cpu, "update_cpu_share": cpu / wall if wall else None,
           "events_applied": applied,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "scrape_ms_median": statistics.median(scrapes), "scrape_ms_max": max(scrapes),
           "pending_pods": state.pending.get("pods"), "informers": len(svc.cache.informers),
           "nodes": len(state.snapshot.nodes)}
    svc.stop()
    return out


def _patch_loop(url: str, pods: list[tuple[str, str]], rate: int, window: float) -> int:
    """PATCH one label on pods, ``rate`` a second for ``window`` seconds; the number sent."""
    import urllib.request

    from benchmarks.serve import TOKEN

    sent, start = 0, time.perf_counter()
    while time.perf_counter() - start < window:
        ns, name = pods[sent % len(pods)]
        body = json.dumps({"metadata": {"labels": {"bench-tick": str(sent)}}}).encode()
        req = urllib.request.Request(f"{url}/api/v1/namespaces/{ns}/pods/{name}", data=body, method="PATCH",
                                     headers={"Content-Type": "application/merge-patch+json",
                                              "Authorization": f"Bearer {TOKEN}"})
        urllib.request.urlopen(req, timeout=10).read()
        sent += 1
        ahead = start + sent / rate - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)
    return sent


def _child_with_updates(served: Any, rate: int, window: float) -> tuple[Optional[dict], int]:
    import subprocess
    import urllib.request

    from benchmarks.run import PY
    from benchmarks.serve import TOKEN

    req = urllib.request.Request(f"{served.url}/api/v1/pods?limit=500&fieldSelector=spec.nodeName%21%3D",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    items = json.loads(urllib.request.urlopen(req, timeout=60).read())["items"]
    pods = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items]
    proc = subprocess.Popen([PY, "-m", "benchmarks.serve_bench", "--child", served.kubeconfig], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    sent = 0
    for line in proc.stdout:
        if line.strip() == "GO":
            sent = _patch_loop(served.url, pods, rate, window)
            time.sleep(1.0)   # let the last events arrive
            proc.stdin.write("done\n")
            proc.stdin.flush()
            break
    out = proc.stdout.read()
    if proc.wait() != 0:
        return None, sent
    return json.loads(out.strip().splitlines()[-1]), sent


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--rate", type=int, default=200, help="pod updates a second during the update window")
    ap.add_argument("--window", type=float, default=10.0, help="seconds of updates")
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
            run_floor(served.kubeconfig, "gzip")           # warm-up: the server gzips each page once, then caches it
            floor = run_floor(served.kubeconfig, "gzip")
            pending_cmd = [PY, "-m", "gpuctl", "diagnose", "pending", "-A", "--kubeconfig", served.kubeconfig, "-o", "json"]
            run_measured(pending_cmd)                     # warm-up of the collectors' own queries
            one_shot = run_measured(pending_cmd)
            res, sent = _child_with_updates(served, args.rate, args.window)
            if res is None:
                return 1
        finally:
            served.stop()
    res["floor_gzip_s"] = floor["wall_s"]
    res["first_sync_vs_floor"] = res["first_sync_s"] / floor["wall_s"]
    res["updates_sent"] = sent
    res["one_shot_pending_s"], res["one_shot_pending_rss_mb"] = one_shot["wall_s"], one_shot["peak_rss_mb"]
    print(f"| measurement ({args.nodes} nodes / {args.pods} pods) | value |")
    print("| --- | --- |")
    print(f"| floor, gzip (lists + decode, a process of its own) | {floor['wall_s']:.2f} s |")
    print(f"| one-shot `gpuctl diagnose pending -A -o json` (same server, warm) | {res['one_shot_pending_s']:.2f} s, "
          f"{res['one_shot_pending_rss_mb']:.0f} MB peak |")
    print(f"| first sync (every list the collectors make, through the cache) | {res['first_sync_s']:.2f} s "
          f"({res['first_sync_vs_floor']:.2f}x the floor) |")
    print(f"| the first diagnosis on it (pending report, capacity, node diagnoses) | {res['first_diagnosis_s']:.2f} s |")
    print(f"| a recompute from the cache (collect {res['second_collect_s']:.2f} s + diagnosis) | {res['second_pass_s']:.2f} s |")
    print(f"| RSS after two passes (steady) | {res['rss_mb']:.0f} MB (peak {res['peak_rss_mb']:.0f} MB) |")
    print(f"| applying {args.rate} pod updates a second ({sent} sent, {res['events_applied']} events applied) | "
          f"{res['update_cpu_share']:.2f} of a core |")
    print(f"| a scrape of /metrics (median / worst of 50) | {res['scrape_ms_median']:.1f} / {res['scrape_ms_max']:.1f} ms |")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
