"""gpuctl's performance benchmark: one command generates, serves and measures.

    python -m benchmarks.run                 # 5,000 nodes / 150,000 pods, 3 repetitions (~10 min on 2 cores)
    python -m benchmarks.run --quick         # 500 nodes / 15,000 pods (~1 min)
    python -m benchmarks.run --nodes 2000 --pods 60000 --reps 5

What it does, in order:

1. Starts ``benchmarks.serve`` in a child process: it generates the synthetic
   cluster (``benchmarks.synth``, seeded) and serves it with gpuctl's
   ``SnapshotAPIServer`` on 127.0.0.1, writing a kubeconfig.
2. Warm-up (untimed, reported as "cold"): one run of each measured command, so the
   server has its per-selector match lists, per-object JSON and gzip pages cached
   and every timed run sees the same, nearly free, server (a real kube-apiserver
   serves lists from its watch cache on other cores).
3. ``--reps`` rounds, interleaved: the floor (``benchmarks.floor``) four ways -
   ``Accept-Encoding: gzip`` as gpuctl asks, ``identity`` (the client's default,
   cheaper on loopback), each with the cyclic GC on or paused while decoding (the
   leanest: identity, GC paused) - then ``gpuctl diagnose pod
   bench-target -n ml --kubeconfig K -o json`` (8 GPUs: all nodes are candidates,
   so one paged cluster-wide pod list), and the same for ``bench-target-mig`` (a
   MIG resource only 20 nodes advertise: per-node pod queries). Every command is a
   fresh subprocess; wall time includes interpreter start-up and imports; peak RSS
   is that command's own maximum resident set (GNU time's ``%M``; see run_measured).
4. ``gpuctl --help``: ``python -m gpuctl --help`` and the installed console
   script, 10 runs each, next to ``python -c pass`` for the interpreter's own
   start-up on this machine.
5. Optionally (default on, ``--no-client-model`` to skip), on a 500-node /
   15,000-pod cluster: ``CoreV1Api().list_pod_for_all_namespaces()`` into the
   client's models, for reference, next to the floor on the same cluster.
6. Optionally (``--profile``), one extra run of each ``diagnose`` under cProfile;
   the top functions go to results.json and ``benchmarks/out/diagnose-<pod>.prof``.

Prints a Markdown table and writes ``benchmarks/out/results.json``. No timing is
asserted anywhere: the targets are evaluated and reported, not enforced.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks import serve  # noqa: E402
from benchmarks.synth import DEFAULT_NODES, DEFAULT_PODS, DEFAULT_SEED, NOW, TARGET, TARGET_MIG, TARGET_NS  # noqa: E402

PY = sys.executable  # the real interpreter, not a pyenv/asdf shim (a shim adds ~0.1 s per start)
ENV = dict(os.environ, GPUCTL_NOW=NOW, NO_COLOR="1", TERM="dumb", PYTHONDONTWRITEBYTECODE="1")
TARGETS = {"diagnose_vs_floor": 1.5, "diagnose_peak_rss_mb": 500.0, "help_s": 0.2}
# key -> (label); encoding and GC mode are read from the key
FLOORS = {
    "floor_gzip": "floor, gzip (the requests gpuctl sends)",
    "floor_identity": "floor, identity",
    "floor_gzip_gc_paused": "floor, gzip, GC paused",
    "floor_identity_gc_paused": "floor, identity, GC paused (leanest)",
}


def floor_of(kubeconfig: str, key: str) -> dict[str, Any]:
    return run_floor(kubeconfig, "gzip" if "gzip" in key else "identity", gc_paused=key.endswith("_gc_paused"))


# ------------------------------------------------------------------------------- running things


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_measured(cmd: list[str], env: Optional[dict] = None, timeout: float = 900.0) -> dict[str, Any]:
    """Run ``cmd`` as a child: wall time, exit status, CPU time and the child's own peak RSS.

    Peak RSS comes from GNU time (``/usr/bin/time -f %M``) when there is one: Linux
    charges a child's ``ru_maxrss`` with the RSS of the process it was forked from
    (the pre-exec copy), so ``wait4`` straight from this process would report at
    least this process's own RSS; GNU time forks from a ~2 MB process instead.
    Without GNU time, ``os.wait4``'s figure is used (an over-estimate for small commands).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r", suffix=".time") as tfile:
        full = [TIME, "-f", "%x %M %U %S", "-o", tfile.name, *cmd] if TIME else cmd
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, cwd=ROOT, env=env or ENV, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        res = {"wall_s": wall, "rc": proc.returncode, "peak_rss_mb": usage.ru_maxrss / 1024,
               "user_s": usage.ru_utime, "sys_s": usage.ru_stime, "rss_source": "wait4"}
        if TIME:
            fields = (tfile.read().strip().splitlines() or [""])[-1].split()
            if len(fields) == 4:  # exit status, max RSS KB, user s, sys s of the command itself
                res.update(rc=int(fields[0]), peak_rss_mb=int(fields[1]) / 1024, user_s=float(fields[2]),
                           sys_s=float(fields[3]), rss_source="gnu-time")
        out.seek(0)
        err.seek(0)
        res["stdout"] = out.read().decode("utf-8", "replace")
        res["stderr"] = err.read().decode("utf-8", "replace")
        return res


def floor_cmd(kubeconfig: str, encoding: str = "gzip", mode: str = "lean", gc_paused: bool = False) -> list[str]:
    return [PY, "-m", "benchmarks.floor", "--kubeconfig", kubeconfig, "--encoding", encoding, "--mode", mode] + (
        ["--gc-paused"] if gc_paused else [])


def diagnose_cmd(kubeconfig: str, name: str) -> list[str]:
    return [PY, "-m", "gpuctl", "diagnose", "pod", name, "-n", TARGET_NS, "--kubeconfig", kubeconfig, "-o", "json"]


def run_floor(kubeconfig: str, encoding: str, mode: str = "lean", gc_paused: bool = False) -> dict[str, Any]:
    r = run_measured(floor_cmd(kubeconfig, encoding, mode, gc_paused))
    if r["rc"] != 0:
        raise RuntimeError(f"floor ({mode}, {encoding}) failed: {r['stderr'][-2000:]}")
    r["inner"] = json.loads(r.pop("stdout").strip().splitlines()[-1])
    r.pop("stderr")
    return r


def run_diagnose(kubeconfig: str, name: str) -> dict[str, Any]:
    r = run_measured(diagnose_cmd(kubeconfig, name))
    out, err = r.pop("stdout"), r.pop("stderr")
    try:
        doc = json.loads(out)
    except ValueError:
        raise RuntimeError(f"gpuctl diagnose {name}: exit {r['rc']}, output is not JSON:\n{out[:500]}\n{err[-2000:]}")
    findings = doc.get("findings") or []
    r["verdict"] = doc.get("verdict")
    r["findings"] = [f.get("code") for f in findings]
    r["summary"] = findings[0].get("summary") if findings else None
    r["gaps"] = doc.get("gaps") or doc.get("unknowns") or None
    r["ok"] = r["rc"] == 1 and bool(findings)
    if not r["ok"]:
        raise RuntimeError(f"gpuctl diagnose {name}: expected exit 1 with findings, got exit {r['rc']} and "
                           f"{len(findings)} findings\n{err[-2000:]}")
    return r


def code_version() -> dict[str, Any]:
    """The commit measured and whether gpuctl/ had uncommitted changes (read-only git queries)."""
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return ""
    changed = [ln[3:] for ln in git("status", "--porcelain", "--", "gpuctl").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD").strip(), "gpuctl_uncommitted_files": changed}


def stats(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples)}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"wall_s": stats([r["wall_s"] for r in runs]), "peak_rss_mb": stats([r["peak_rss_mb"] for r in runs]),
            "cpu_s": stats([r["user_s"] + r["sys_s"] for r in runs]), "runs": runs}


def console_script() -> Optional[str]:
    for cand in (Path(PY).parent / "gpuctl", shutil.which("gpuctl")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            try:
                head = Path(cand).read_bytes()[:200]
            except OSError:
                continue
            if b"pyenv" in head and b"exec" in head:  # a shim, not the script
                continue
            return str(cand)
    return None


def time_help(n: int) -> dict[str, Any]:
    site_packages = next((p for p in sys.path if p.endswith("site-packages")), "")
    clean_env = dict(ENV, PYTHONPATH=site_packages)
    variants: dict[str, tuple[list[str], dict]] = {
        "python -c pass": ([PY, "-c", "pass"], ENV),
        "python -m gpuctl --help": ([PY, "-m", "gpuctl", "--help"], ENV),
    }
    script = console_script()
    if script:
        variants["gpuctl --help (console script)"] = ([script, "--help"], ENV)
    # this sandbox's site-packages holds a .pth that imports certifi at every start-up;
    # -S skips .pth files (PYTHONPATH still finds the packages): start-up as on a clean install
    variants["python -S -c pass"] = ([PY, "-S", "-c", "pass"], clean_env)
    variants["python -S -m gpuctl --help"] = ([PY, "-S", "-m", "gpuctl", "--help"], clean_env)
    out: dict[str, Any] = {"console_script": script}
    for name, (cmd, env) in variants.items():
        runs = [run_measured(cmd, env) for _ in range(n)]
        if any(r["rc"] != 0 for r in runs):
            out[name] = {"error": runs[0]["stderr"][-500:]}
            continue
        out[name] = {"wall_s": stats([r["wall_s"] for r in runs]), "peak_rss_mb": stats([r["peak_rss_mb"] for r in runs])}
    return out


def profile_diagnose(kubeconfig: str, name: str, top: int = 25) -> dict[str, Any]:
    import pstats

    prof = HERE / "out" / f"diagnose-{name}.prof"
    cmd = [PY, "-m", "cProfile", "-o", str(prof), "-m", "gpuctl", "diagnose", "pod", name, "-n", TARGET_NS,
           "--kubeconfig", kubeconfig, "-o", "json"]
    r = run_measured(cmd)
    st = pstats.Stats(str(prof))
    rows = []
    total = st.total_tt  # type: ignore[attr-defined]
    for (file, line, func), (cc, nc, tt, ct, _) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"where": f"{os.path.relpath(file, ROOT) if file.startswith(str(ROOT)) else file}:{line}:{func}",
                     "calls": nc, "tottime_s": round(tt, 3), "cumtime_s": round(ct, 3)})
    by_cum = sorted(rows, key=lambda x: -x["cumtime_s"])[:top]
    by_tot = sorted(rows, key=lambda x: -x["tottime_s"])[:top]
    ours = sorted((x for x in rows if x["where"].startswith("gpuctl/")), key=lambda x: -x["cumtime_s"])[:top]
    return {"target": name, "profiled_wall_s": r["wall_s"], "profile_total_s": round(total, 3), "file": str(prof),
            "top_cumulative": by_cum, "top_self": by_tot, "top_gpuctl_cumulative": ours}


# ------------------------------------------------------------------------------- the table


def fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def table(res: dict[str, Any]) -> str:
    m = res["measurements"]
    lines = ["| measurement | wall median | wall min | CPU median | peak RSS (median) | notes |",
             "| --- | --- | --- | --- | --- | --- |"]

    def row(label: str, s: dict[str, Any], note: str = "") -> None:
        lines.append(f"| {label} | {fmt_s(s['wall_s']['median'])} s | {fmt_s(s['wall_s']['min'])} s | "
                     f"{fmt_s(s['cpu_s']['median'])} s | {s['peak_rss_mb']['median']:.0f} MB | {note} |")

    c = res["cluster"]
    for key, label in FLOORS.items():
        s = m[key]
        inner = statistics.median(r["inner"]["fetch_s"] for r in s["runs"])
        row(label, s, f"fetch+decode in-process {fmt_s(inner)} s; {s['runs'][0]['inner']['requests']} requests, "
                      f"{s['runs'][0]['inner']['pods']} pods kept")
    d = m["diagnose"]
    row("`gpuctl diagnose pod bench-target -n ml -o json`", d,
        f"exit {d['runs'][0]['rc']}, verdict {d['runs'][0]['verdict']}, findings {', '.join(d['runs'][0]['findings'])}")
    dm = m["diagnose_mig"]
    row(f"`gpuctl diagnose pod {TARGET_MIG}` (20 candidate nodes)", dm,
        f"exit {dm['runs'][0]['rc']}, findings {', '.join(dm['runs'][0]['findings'])}")
    h = m["help"]
    for name in ("python -m gpuctl --help", "gpuctl --help (console script)", "python -c pass",
                 "python -S -m gpuctl --help", "python -S -c pass"):
        if name in h and "wall_s" in h[name]:
            lines.append(f"| `{name}` (x{h[name]['wall_s']['n']}) | {fmt_s(h[name]['wall_s']['median'])} s | "
                         f"{fmt_s(h[name]['wall_s']['min'])} s | | {h[name]['peak_rss_mb']['median']:.0f} MB | |")
    cm = m.get("client_model")
    if cm:
        row(f"client models `list_pod_for_all_namespaces()` ({cm['nodes']} nodes / {cm['pods']} pods)", cm["model"],
            f"fetch in-process {fmt_s(cm['model']['runs'][0]['inner']['fetch_s'])} s")
        row(f"floor on the same {cm['nodes']} / {cm['pods']} cluster", cm["floor"])
    t = res["targets"]
    lines.append("")
    cold = ", ".join(f"{k} {v['wall_s']:.2f} s" for k, v in m["cold"].items())
    lines.append(f"Cluster: {c['nodes']} nodes, {c['pods']} pods, {c['json_bytes'] / 1e6:.0f} MB of JSON; "
                 f"server generate {c['generate_s']} s + load {c['load_s']} s, {res['reps']} reps. "
                 f"Cold (first, untimed warm-up) runs: {cold}. Load average before/after: "
                 f"{res['loadavg']['before'][0]:.2f} / {res['loadavg']['after'][0]:.2f}.")
    lines.append("")
    lines.append("| target | measured | met |")
    lines.append("| --- | --- | --- |")
    for k, v in t.items():
        lines.append(f"| {v['target']} | {v['measured']} | {'yes' if v['met'] else 'NO'} |")
    return "\n".join(lines)


def evaluate(m: dict[str, Any]) -> dict[str, Any]:
    d = m["diagnose"]["wall_s"]["median"]
    t: dict[str, Any] = {}
    for key in ("floor_gzip", "floor_identity_gc_paused"):
        f = m[key]["wall_s"]["median"]
        t[f"diagnose_vs_{key}"] = {
            "target": f"diagnose within {TARGETS['diagnose_vs_floor']}x of the {FLOORS[key]}",
            "measured": f"{d:.2f} s / {f:.2f} s = {d / f:.2f}x", "ratio": d / f,
            "met": d / f <= TARGETS["diagnose_vs_floor"]}
    rss = m["diagnose"]["peak_rss_mb"]["median"]
    t["diagnose_rss"] = {"target": f"diagnose peak RSS < {TARGETS['diagnose_peak_rss_mb']:.0f} MB",
                         "measured": f"{rss:.0f} MB", "met": rss < TARGETS["diagnose_peak_rss_mb"]}
    dm = m["diagnose_mig"]["wall_s"]["median"]
    rm = m["diagnose_mig"]["peak_rss_mb"]["median"]
    t["few_candidates"] = {"target": "much less with few candidate nodes (MIG, 20 nodes): under half the time",
                           "measured": f"{dm:.2f} s / {rm:.0f} MB vs {d:.2f} s / {rss:.0f} MB ({d / dm:.1f}x faster)",
                           "met": dm < d / 2}
    for name in ("python -m gpuctl --help", "gpuctl --help (console script)"):
        h = m["help"].get(name)
        if h and "wall_s" in h:
            v = h["wall_s"]["median"]
            t[f"help:{name}"] = {"target": f"`{name}` < {TARGETS['help_s']} s", "measured": f"{v:.3f} s",
                                 "met": v < TARGETS["help_s"]}
    return t


# ------------------------------------------------------------------------------- main


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark gpuctl against the floor on a synthetic cluster.")
    ap.add_argument("--nodes", type=int, default=None, help=f"default {DEFAULT_NODES} ({500} with --quick)")
    ap.add_argument("--pods", type=int, default=None, help=f"default {DEFAULT_PODS} ({15000} with --quick)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--quick", action="store_true", help="500 nodes / 15,000 pods: a fast smoke run")
    ap.add_argument("--help-runs", type=int, default=10)
    ap.add_argument("--no-client-model", dest="client_model", action="store_false",
                    help="skip the client-models reference (500 nodes / 15,000 pods, ~30 s)")
    ap.add_argument("--profile", action="store_true", help="also profile one diagnose run with cProfile")
    ap.add_argument("--out", default=str(HERE / "out" / "results.json"))
    args = ap.parse_args(argv)
    nodes = args.nodes or (500 if args.quick else DEFAULT_NODES)
    pods = args.pods or (15_000 if args.quick else DEFAULT_PODS)
    out_dir = Path(args.out).parent
    out_dir.mkdir(parents=True, exist_ok=True)
    kubeconfig = str(out_dir / "bench.kubeconfig")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    load_before = os.getloadavg()
    log(f"generating and serving {nodes} nodes / {pods} pods (seed {args.seed}) in a child process ...")
    m: dict[str, Any] = {}
    with serve.start(kubeconfig, nodes, pods, args.seed) as srv:
        cluster = dict(srv.info)
        log(f"serving at {srv.url}: generated in {cluster['generate_s']} s, loaded in {cluster['load_s']} s")
        log("warm-up (cold server caches) ...")
        cold = {"floor_gzip": run_floor(kubeconfig, "gzip"), "floor_identity": run_floor(kubeconfig, "identity"),
                "diagnose": run_diagnose(kubeconfig, TARGET), "diagnose_mig": run_diagnose(kubeconfig, TARGET_MIG)}
        for k, v in cold.items():
            log(f"  cold {k}: {v['wall_s']:.2f} s")
        runs: dict[str, list] = {k: [] for k in FLOORS}
        runs.update(diagnose=[], diagnose_mig=[])
        for rep in range(args.reps):
            for key in FLOORS:
                runs[key].append(floor_of(kubeconfig, key))
            runs["diagnose"].append(run_diagnose(kubeconfig, TARGET))
            runs["diagnose_mig"].append(run_diagnose(kubeconfig, TARGET_MIG))
            log(f"  rep {rep + 1}/{args.reps}: " + ", ".join(f"{k} {v[-1]['wall_s']:.2f} s / "
                                                             f"{v[-1]['peak_rss_mb']:.0f} MB" for k, v in runs.items()))
        for k, v in runs.items():
            m[k] = summarize(v)
        m["cold"] = {k: {"wall_s": v["wall_s"], "peak_rss_mb": v["peak_rss_mb"]} for k, v in cold.items()}
        log(f"gpuctl --help, {args.help_runs} runs per variant ...")
        m["help"] = time_help(args.help_runs)
        if args.profile:
            log("profiling one diagnose run (cProfile) ...")
            m["profile"] = profile_diagnose(kubeconfig, TARGET)
            m["profile_mig"] = profile_diagnose(kubeconfig, TARGET_MIG)
    if args.client_model:
        cm_nodes, cm_pods = 500, 15_000
        log(f"client-models reference on {cm_nodes} nodes / {cm_pods} pods ...")
        cm_kubeconfig = str(out_dir / "bench-small.kubeconfig")
        with serve.start(cm_kubeconfig, cm_nodes, cm_pods, args.seed):
            run_floor(cm_kubeconfig, "identity")  # warm the server
            floor = [run_floor(cm_kubeconfig, "identity")]
            model = [run_floor(cm_kubeconfig, "identity", mode="client-model")]
        m["client_model"] = {"nodes": cm_nodes, "pods": cm_pods, "floor": summarize(floor), "model": summarize(model)}
        log(f"  client models {model[0]['wall_s']:.1f} s / {model[0]['peak_rss_mb']:.0f} MB; "
            f"floor {floor[0]['wall_s']:.2f} s / {floor[0]['peak_rss_mb']:.0f} MB")
    res = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(["python", "-m", "benchmarks.run"] + (argv if argv is not None else sys.argv[1:])),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                    "executable": PY},
        "code": code_version(),
        "cluster": cluster, "reps": args.reps, "measurements": m,
        "total_s": round(time.perf_counter() - t_all, 1),
        # other work on the machine distorts timings: 1-minute load before the run and at the end
        "loadavg": {"before": load_before, "after": os.getloadavg()},
    }
    res["targets"] = evaluate(m)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(table(res))
    log(f"wrote {args.out} ({res['total_s']} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
