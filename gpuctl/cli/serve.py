"""``gpuctl serve``: the diagnosis as a service, on a watch cache (docs/serve.md).
Thin: options in, ``gpuctl.serve`` does the work; SIGINT/SIGTERM stop it (exit 0)."""

from __future__ import annotations

import typer
from typing_extensions import Annotated

from .common import Common, common_options

SERVE_OPTIONS = ("kubeconfig", "context", "request_timeout", "as_user", "token")


@common_options(*SERVE_OPTIONS, after="interval")
def serve(
    opts: Common,
    listen: Annotated[str, typer.Option("--listen", metavar="[HOST]:PORT", help="Where to serve /metrics, /api/v1/..., /healthz and /readyz.")] = ":9402",
    interval: Annotated[float, typer.Option("--interval", min=1.0, max=3600.0, help="Seconds between recomputes of the diagnosis (sooner after the cluster changed, never per request).")] = 15.0,
) -> int:
    """Export why GPU pods wait as Prometheus metrics and a read-only JSON API, from a watch cache (in-cluster or a kubeconfig); Ctrl-C stops."""
    import signal
    import sys
    import threading

    from ..errors import UsageError
    from ..render.safe import clean
    from ..serve.server import Service, http_server, parse_listen

    try:
        host, port = parse_listen(listen)
    except ValueError as e:
        raise UsageError(str(e), "for example --listen :9402 or --listen 127.0.0.1:9402") from None
    service = Service(opts.api(), interval=interval)
    try:
        httpd = http_server(service, host, port)
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}", "choose another --listen port") from None
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM"):
            sig = getattr(signal, name)
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    service.start()
    worker = threading.Thread(target=httpd.serve_forever, name="gpuctl serve http", daemon=True)
    worker.start()
    sys.stderr.write(clean(f"serving on http://{host}:{httpd.server_address[1]} (metrics at /metrics); "
                           f"context {service.cache.context_name or 'in-cluster'}; Ctrl-C stops") + "\n")
    sys.stderr.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        httpd.shutdown()
        service.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
