"""`gpuctl fit --gpus 8` against the floor of the same run (issue 16: "within 1.5x of the
fetch+decode floor"; docs/benchmarks.md, "gpuctl fit (issue 16)").

    python -m benchmarks.fit_bench                  # 5,000 nodes / 150,000 pods, 3 repetitions
    python -m benchmarks.fit_bench --quick          # 500 nodes / 15,000 pods
    python -m benchmarks.fit_bench --nodes 2000 --pods 60000 --reps 5

The synthetic cluster (``benchmarks.synth``) is generated and served by
``benchmarks/serve.py`` in a child process. The floor (``benchmarks/floor.py``: the
node list and the cluster-wide list of bound pods, gzip, paged, decoded into
records, nothing else) and `gpuctl fit --gpus 8 -o json` (every GPU node is a
candidate: the same two paged lists, plus the namespace's quotas, then the fit
matrix, MostAllocated ranking and the document) each run as a fresh process,
warmed up once, then alternated. Wall time includes interpreter start-up and
imports. No timing is asserted: the figures are printed (Markdown) and written to
``benchmarks/out/fit.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.5


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=None, help="default 5000 (500 with --quick)")
    ap.add_argument("--pods", type=int, default=None, help="default 150000 (15000 with --quick)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="500 nodes / 15,000 pods")
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "fit.json"))
    args = ap.parse_args(argv)
    nodes = args.nodes or (500 if args.quick else 5000)
    pods = args.pods or (15_000 if args.quick else 150_000)
    sys.path.insert(0, str(ROOT))
    from benchmarks import serve as bench_server
    from benchmarks.run import PY, run_floor, run_measured

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        log(f"generating and serving {nodes} nodes / {pods} pods ...")
        served = bench_server.start(str(Path(tmp) / "kubeconfig"), nodes=nodes, pods=pods)
        try:
            fit = [PY, "-m", "gpuctl", "fit", "--gpus", str(args.gpus), "-n", "ml", "--kubeconfig", served.kubeconfig,
                   "-o", "json"]
            run_floor(served.kubeconfig, "gzip")
            warm = run_measured(fit)
            if warm["rc"] not in (0, 1):
                sys.stderr.write(warm["stderr"][-2000:])
                return 1
            doc = json.loads(warm["stdout"])
            floors, runs, rss = [], [], []
            for rep in range(args.reps):
                floors.append(run_floor(served.kubeconfig, "gzip")["wall_s"])
                r = run_measured(fit)
                runs.append(r["wall_s"])
                rss.append(r["peak_rss_mb"])
                log(f"  rep {rep + 1}/{args.reps}: floor {floors[-1]:.2f} s, fit {runs[-1]:.2f} s / {rss[-1]:.0f} MB")
        finally:
            served.stop()
    floor, med = statistics.median(floors), statistics.median(runs)
    ratio = med / floor
    print(f"| {nodes} nodes / {pods} pods, median of {args.reps} | value |")
    print("| --- | --- |")
    print(f"| floor, gzip (nodes and bound pods listed and decoded) | {floor:.2f} s |")
    print(f"| `gpuctl fit --gpus {args.gpus} -o json` | {med:.2f} s ({ratio:.2f}x the floor; target {TARGET_RATIO}x), "
          f"{statistics.median(rss):.0f} MB peak |")
    print(f"| its answer | {doc['summary']} |")
    res = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "command": " ".join(["python", "-m", "benchmarks.fit_bench"] + (argv if argv is not None else sys.argv[1:])),
           "nodes": nodes, "pods": pods, "floor_s": floors, "fit_s": runs, "fit_rss_mb": rss, "ratio": ratio,
           "target_ratio": TARGET_RATIO, "summary": doc["summary"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
