"""How the offline commands scale with the processes they may use (``GPUCTL_PROCESSES``).

On the synthetic cluster written as kubectl List files (``snapshot_bench.write_lists``),
read from a directory: for each number of processes, gpuctl's read alone (what
``diagnose pending`` reads), ``diagnose pending -A``, ``nodes capacity`` and
``diagnose pod``, each a fresh process, beside the floor (``snapshot_bench floor``)::

    python -m benchmarks.processes_bench                              # 5,000 nodes / 150,000 pods
    python -m benchmarks.processes_bench --processes 1,2,4,8 --reps 3

Wall time is measured from here; CPU time (with the children's) and peak RSS (the
largest process) come from ``os.wait4``, so no GNU time is needed. The List files are
written once to ``--out`` and reused. Prints a Markdown table and writes
``benchmarks/out/processes_bench.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENV = {"GPUCTL_NOW": "2026-11-20T03:12:00Z"}


def timed(cmd: list[str], label: str, processes: Optional[int], expect: tuple[int, ...] = (0, 1)) -> dict:
    env = dict(os.environ, **ENV)
    if processes is not None:
        env["GPUCTL_PROCESSES"] = str(processes)
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode not in expect:
            err.seek(0)
            raise RuntimeError(f"{label}: exit {p.returncode}: {err.read().decode()[-2000:]}")
    row = {"label": label, "processes": processes, "wall_s": round(wall, 3),
           "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1)}
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return {"cpus": usable, "cpu": model or platform.processor(), "python": platform.python_version()}


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    src = out / "lists"
    py = sys.executable
    if not (src / "pods.json").is_file():
        # in its own process: a child forked from this one would count this one's memory
        # in its peak RSS (ru_maxrss) until it runs its own program
        t = time.perf_counter()
        subprocess.run([py, "-c", "import sys; from pathlib import Path; from benchmarks.snapshot_bench import write_lists; "
                        "write_lists(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))",
                        str(out), str(args.nodes), str(args.pods)], cwd=ROOT, check=True)
        print(f"wrote the List files in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    commands = {
        "read alone (diagnose pending's need)": [py, "-m", "benchmarks.snapshot_bench", "load", str(src),
                                                  "collect_cluster", "1"],
        "diagnose pending -A": [py, "-m", "gpuctl", "diagnose", "pending", "-A", "-o", "json", "--snapshot", str(src)],
        "nodes capacity": [py, "-m", "gpuctl", "nodes", "capacity", "-o", "json", "--snapshot", str(src)],
        "diagnose pod": [py, "-m", "gpuctl", "diagnose", "pod", "bench-target", "-n", "ml", "-o", "json",
                         "--snapshot", str(src)],
    }
    rows = []
    for rep in range(args.reps):
        rows.append({**timed([py, "-m", "benchmarks.snapshot_bench", "floor", str(src)], "floor: decode", None,
                             expect=(0,)), "rep": rep})
        for n in args.processes:
            for label, cmd in commands.items():
                rows.append({**timed(cmd, label, n, expect=(0,) if label.startswith("read") else (0, 1)), "rep": rep})
    result = {"machine": machine(), "nodes": args.nodes, "pods": args.pods, "reps": args.reps, "rows": rows,
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "processes_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return result


def table(result: dict) -> str:
    from .snapshot_bench import summary

    by: dict[tuple, list[dict]] = {}
    for r in result["rows"]:
        by.setdefault((r["label"], r["processes"]), []).append(r)
    m = result["machine"]
    lines = [f"{m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, {result['nodes']} nodes / {result['pods']} pods, "
             f"{result['reps']} reps, {result['when']}", "",
             "| measurement | processes | wall (median) | wall (min) | CPU (median) | peak RSS (median) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for (label, n), rs in by.items():
        lines.append(f"| {label} | {n if n is not None else '-'} | {summary(rs)} |")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--processes", default="1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--out", default="/tmp/gpuctl-processes-bench")
    run(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
