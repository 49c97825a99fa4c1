"""`gpuctl nodes capacity` against a TLS API server, against the floor of the same run
(issue 15: "within 1.3x of the floor"; docs/benchmarks.md).

    python -m benchmarks.capacity_tls                      # 5,000 nodes / 150,000 pods, 3 repetitions
    python -m benchmarks.capacity_tls --nodes 500 --pods 15000

The synthetic server serves HTTPS with a fresh self-signed certificate that the written
kubeconfig trusts (``benchmarks/serve.py --tls``). Both the floor (``benchmarks/floor.py``:
the same node and pod lists, gzip, decoded into records, nothing else) and `nodes
capacity` run as processes of their own, each warmed up once, then alternated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks import serve as bench_server
    from benchmarks.run import PY, run_floor, run_measured

    with tempfile.TemporaryDirectory() as tmp:
        served = bench_server.start(str(Path(tmp) / "kubeconfig"), nodes=args.nodes, pods=args.pods, tls=True)
        try:
            capacity = [PY, "-m", "gpuctl", "nodes", "capacity", "--kubeconfig", served.kubeconfig, "-o", "json"]
            run_floor(served.kubeconfig, "gzip")
            warm = run_measured(capacity)
            if warm["rc"] not in (0, 1):
                sys.stderr.write(warm["stderr"][-2000:])
                return 1
            floors, runs, rss = [], [], []
            for _ in range(args.reps):
                floors.append(run_floor(served.kubeconfig, "gzip")["wall_s"])
                r = run_measured(capacity)
                runs.append(r["wall_s"])
                rss.append(r["peak_rss_mb"])
        finally:
            served.stop()
    floor, cap = statistics.median(floors), statistics.median(runs)
    print(f"| over TLS, {args.nodes} nodes / {args.pods} pods, median of {args.reps} | value |")
    print("| --- | --- |")
    print(f"| floor, gzip (nodes and pods listed and decoded) | {floor:.2f} s |")
    print(f"| `gpuctl nodes capacity -o json` | {cap:.2f} s ({cap / floor:.2f}x the floor), "
          f"{statistics.median(rss):.0f} MB peak |")
    print(json.dumps({"floor_s": floors, "capacity_s": runs, "capacity_rss_mb": rss, "ratio": cap / floor}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
