"""Serve a synthetic (or saved) cluster over the Kubernetes API, in its own process.

The server (the tests' ``SnapshotAPIServer``, tests/support/kubeapi.py) runs in a
child process so its CPU time does not share the client's interpreter (GIL) or its
RSS figures: on a 2-core machine the server gets one core and the measured client
the other.

As a command (prints ``READY <json>`` on stdout once serving, then serves until
SIGINT/SIGTERM or until its stdin closes)::

    python -m benchmarks.serve --nodes 5000 --pods 150000 --kubeconfig /tmp/bench.kubeconfig
    python -m benchmarks.serve --snapshot /tmp/bench-snap --kubeconfig /tmp/bench.kubeconfig

and then, in another shell::

    gpuctl diagnose pod bench-target -n ml --kubeconfig /tmp/bench.kubeconfig

From Python, :func:`start` launches that process and returns a :class:`Served`
handle (``.url``, ``.kubeconfig``, ``.info``, ``.stop()``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOKEN = "bench-token"
READY = "READY "


def _load_snapshot(path: Path) -> tuple[Iterator[dict], dict, dict[str, Any]]:
    """Objects (decoded lazily), logs and metadata of a snapshot: a directory written by
    ``benchmarks.synth --out`` or ``gpuctl snapshot save``, a tarball, a kubectl dump,
    or ``demo`` (the bundled demo cluster) - whatever ``gpuctl --snapshot`` reads."""
    sys.path.insert(0, str(ROOT))
    from gpuctl.collect.files import iter_raw_objects, resolve_snapshot

    path = resolve_snapshot(path)
    logs: dict[tuple[str, str, str, bool], str] = {}
    for p in (path / "logs").rglob("*.log") if (path / "logs").is_dir() else ():
        ns, pod = p.parent.parent.name, p.parent.name
        name = p.name[: -len(".log")]
        previous = name.endswith(".previous")
        logs[(ns, pod, name[: -len(".previous")] if previous else name, previous)] = p.read_text(encoding="utf-8")
    meta_file = path / "snapshot.json"
    info = json.loads(meta_file.read_text()).get("synthetic", {}) if meta_file.is_file() else {}
    return iter_raw_objects(path), logs, info


def _serve(args: argparse.Namespace) -> int:
    # Building ~40 million dicts with the cyclic GC on costs minutes; they are never
    # garbage, so collect nothing while loading and then freeze them out of the GC's view.
    gc.disable()
    t0 = time.perf_counter()
    if args.snapshot:
        objects, logs, info = _load_snapshot(Path(args.snapshot))
        objects = (o for o in objects if o.get("apiVersion") and o.get("kind") and (o.get("metadata") or {}).get("name"))
        generated_s = 0.0
    else:
        sys.path.insert(0, str(ROOT))
        from benchmarks import synth

        cluster = synth.generate(args.nodes, args.pods, args.seed)
        logs, info = cluster.logs, dict(cluster.info)
        info["json_bytes"] = cluster.total_bytes
        generated_s = time.perf_counter() - t0
        import msgspec

        def drain() -> Iterator[dict]:
            # decode one object at a time and drop its JSON: the store copies each dict,
            # so only one copy of the cluster is ever held
            for part in (cluster.nodes, cluster.pods, cluster.others):
                part.reverse()
                while part:
                    yield msgspec.json.decode(part.pop())
        objects = drain()
    t1 = time.perf_counter()
    sys.path.insert(0, str(ROOT / "tests"))    # the tests' API server (tests/support/kubeapi.py): auth, request counts
    from support.kubeapi import SnapshotAPIServer

    tls, ca = _tls_context(Path(args.kubeconfig).parent) if args.tls else (None, None)
    server = SnapshotAPIServer(objects, logs=logs, token=None if args.no_auth else TOKEN, page_size_cap=args.page_size_cap,
                               tls=tls)
    del objects
    if not args.snapshot:
        del cluster
    gc.collect()
    gc.freeze()
    gc.enable()
    t2 = time.perf_counter()
    server.start()
    server.write_kubeconfig(args.kubeconfig, context="bench", namespace="ml")
    if ca is not None:   # trust the certificate, as a real cluster's kubeconfig does
        cfg = json.loads(Path(args.kubeconfig).read_text())
        cfg["clusters"][0]["cluster"]["certificate-authority"] = str(ca)
        Path(args.kubeconfig).write_text(json.dumps(cfg, indent=2))
    info.update({
        "url": server.url, "kubeconfig": str(args.kubeconfig), "pid": os.getpid(),
        "generate_s": round(generated_s, 2), "load_s": round(t2 - t1, 2),
        "server_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    })
    print(READY + json.dumps(info), flush=True)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_on_stdin_eof:
        def watch_stdin() -> None:
            while not stop.is_set():
                r, _, _ = select.select([sys.stdin], [], [], 0.5)
                if r and not sys.stdin.buffer.read1(1 << 16):
                    stop.set()
        threading.Thread(target=watch_stdin, daemon=True).start()
    while not stop.wait(0.5):
        pass
    reqs = server.requests
    server.stop()
    print(json.dumps({"requests": len(reqs),
                      "server_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}),
          file=sys.stderr, flush=True)
    return 0


@dataclass
class Served:
    """A serving child process."""

    proc: subprocess.Popen
    url: str
    kubeconfig: str
    info: dict[str, Any] = field(default_factory=dict)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _tls_context(where: Path) -> tuple[Any, Path]:
    """A server-side SSLContext with a fresh self-signed certificate for 127.0.0.1, and the certificate's path."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.tls import self_signed

    return self_signed(where)


def start(kubeconfig: str | os.PathLike[str], nodes: int = 5000, pods: int = 150_000, seed: Optional[int] = None,
          snapshot: Optional[str] = None, timeout: float = 900.0, tls: bool = False) -> Served:
    """Launch ``python -m benchmarks.serve`` and wait until it serves; raises if it dies first."""
    cmd = [sys.executable, "-m", "benchmarks.serve", "--kubeconfig", str(kubeconfig), "--exit-on-stdin-eof"]
    if tls:
        cmd.append("--tls")
    if snapshot:
        cmd += ["--snapshot", str(snapshot)]
    else:
        cmd += ["--nodes", str(nodes), "--pods", str(pods)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark server exited with status {proc.wait()} before serving")
        if line.startswith(READY):
            info = json.loads(line[len(READY):])
            return Served(proc, info["url"], info["kubeconfig"], info)
    proc.kill()
    raise TimeoutError("benchmark server did not start in time")


def main(argv: Optional[list[str]] = None) -> int:
    from benchmarks.synth import DEFAULT_NODES, DEFAULT_PODS, DEFAULT_SEED

    ap = argparse.ArgumentParser(description="Serve a synthetic GPU cluster over the Kubernetes API.")
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    ap.add_argument("--pods", type=int, default=DEFAULT_PODS)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--snapshot", help="serve this snapshot instead (benchmarks.synth --out, gpuctl snapshot save, a kubectl dump, or demo)")
    ap.add_argument("--kubeconfig", default=str(HERE / "out" / "bench.kubeconfig"))
    ap.add_argument("--page-size-cap", type=int, default=None)
    ap.add_argument("--no-auth", action="store_true",
                    help="serve without a bearer token (kubectl will not send a token over plain HTTP; for the kubectl comparison)")
    ap.add_argument("--tls", action="store_true",
                    help="serve HTTPS with a fresh self-signed certificate (openssl), trusted by the kubeconfig written")
    ap.add_argument("--exit-on-stdin-eof", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    Path(args.kubeconfig).parent.mkdir(parents=True, exist_ok=True)
    return _serve(args)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
