"""``gpuctl snapshot save FILE``: collect what the read commands need into one bundle.
``gpuctl snapshot serve BUNDLE``: serve a snapshot read-only over the Kubernetes API on
127.0.0.1 (the server, gpuctl/apiserver, is imported only when it runs)."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .common import Common, DebugOpt, check_namespace, common_options, set_debug

app = typer.Typer(help="Offline snapshots of a cluster for diagnosis later or elsewhere.", no_args_is_help=True, rich_markup_mode=None)


@app.command("save")
@common_options("kubeconfig", "context", "request_timeout", "as_user", "token", after="snapshot")
def save(
    opts: Common,
    file: Annotated[str, typer.Argument(help="Where to write: NAME.tar.gz for a bundle, or a directory path.", show_default=False)],
    namespace: Annotated[Optional[str], typer.Option("--namespace", "-n", help="Collect namespaced objects of this namespace only (nodes are always collected).", show_default=False, callback=check_namespace)] = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Collect every namespace (the default unless -n is given).")] = False,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep env values, last-applied annotations, ConfigMap data and tokens in logs.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it is a previous gpuctl bundle (never anything else).")] = False,
    snapshot: Annotated[Optional[str], typer.Option("--snapshot", help="Re-bundle (and redact) an existing snapshot or kubectl dump instead of reading the cluster.", show_default=False)] = None,
) -> int:
    """Write a bundle that --snapshot reads back: whole objects (minus managedFields), device-plugin logs, redacted by default."""
    import sys

    from ..collect import bundle
    from ..errors import SourceError
    from ..render.safe import clean

    try:
        if snapshot:
            report = bundle.save_offline(snapshot, file, redact=not no_redact, force=force)
        else:
            bundle.check_destination(file, force)      # before the kubeconfig is read or anything requested
            ns = None if all_namespaces or not namespace else namespace
            api = opts.api()
            try:
                report = bundle.save_live(api, file, ns, redact=not no_redact, force=force)
            except SourceError as e:
                if api.down is not None and not e.hint:    # the server stopped answering: say what to check
                    from ..collect.live import _fatal

                    e.hint = _fatal(api.down, "").hint
                raise
    except (bundle.Interrupted, KeyboardInterrupt) as e:
        how = f"terminated by {e.signal_name}" if isinstance(e, bundle.Interrupted) else "interrupted"
        if getattr(e, "written", False):     # the signal came during the final rename: the bundle is complete
            sys.stderr.write(f"gpuctl: error: {how} after {clean(file)} was written\n")
        else:
            sys.stderr.write(f"gpuctl: error: {how}; the partial bundle was removed and {clean(file)} left as it was\n")
        raise
    for line in bundle.describe(report):
        sys.stderr.write(clean(line) + "\n")   # names and messages from the server: no escape sequences
    return 0


# ----------------------------------------------------------------- snapshot serve

SERVE_CONTEXT = "gpuctl-snapshot"
KUBECONFIG_MARK = "gpuctl-snapshot-serve"        # the extension that marks a kubeconfig this command wrote
KUBECONFIG_HEADER = "# Written by `gpuctl snapshot serve`: a read-only snapshot on 127.0.0.1, no credentials.\n"
_MAX_KUBECONFIG_BYTES = 1 << 20


def _written_by_serve(path) -> bool:
    """A kubeconfig this command wrote (and kubectl may have rewritten since: the
    marker is a cluster extension, which kubectl keeps): every cluster points at
    127.0.0.1 and carries the marker, and no user holds a credential. Anything else is
    the user's file and is never replaced."""
    import os
    import stat

    import yaml

    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_KUBECONFIG_BYTES:
            return False
        with open(path, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(cfg, dict) or cfg.get("kind") != "Config":
        return False
    clusters, users = cfg.get("clusters"), cfg.get("users") or []
    if not isinstance(clusters, list) or not clusters or not isinstance(users, list):
        return False
    for entry in clusters:
        cluster = entry.get("cluster") if isinstance(entry, dict) else None
        if not isinstance(cluster, dict) or not str(cluster.get("server", "")).startswith("http://127.0.0.1:"):
            return False
        marks = cluster.get("extensions") or []
        if not isinstance(marks, list) or not any(isinstance(m, dict) and m.get("name") == KUBECONFIG_MARK for m in marks):
            return False
    return all(isinstance(u, dict) and not u.get("user") for u in users)


def _check_kubeconfig_out(path: str) -> None:
    """Before anything is read: FILE may be new, or a kubeconfig this command wrote."""
    import os

    from ..errors import UsageError

    if os.path.islink(path):
        raise UsageError(f"{path} is a symbolic link", "choose another --kubeconfig-out; it is left as it was")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory", "give --kubeconfig-out a file name")
    if os.path.lexists(path) and not _written_by_serve(path):
        raise UsageError(f"{path} already exists and is not a kubeconfig written by gpuctl snapshot serve",
                         "choose another --kubeconfig-out; the file is left as it was")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"the folder of {path} does not exist", "create it, or choose another --kubeconfig-out")


def _kubeconfig(url: str, bundle: str) -> str:
    import yaml

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": SERVE_CONTEXT, "cluster": {
            "server": url,
            "extensions": [{"name": KUBECONFIG_MARK, "extension": {"snapshot": bundle}}],
        }}],
        "contexts": [{"name": SERVE_CONTEXT, "context": {"cluster": SERVE_CONTEXT, "user": SERVE_CONTEXT}}],
        "users": [{"name": SERVE_CONTEXT, "user": {}}],
        "current-context": SERVE_CONTEXT,
        "preferences": {},
    }
    return KUBECONFIG_HEADER + yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False)


def _write_kubeconfig(path: str, text: str) -> None:
    """Atomically (a temporary beside FILE, renamed over it), after checking again
    that FILE is new or ours."""
    import os
    import tempfile

    from ..errors import UsageError

    _check_kubeconfig_out(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gpuctl-kubeconfig-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}", "choose another --kubeconfig-out") from None


def _servable(objects) -> tuple[list[dict], int]:
    """Objects the API can serve (apiVersion, kind and metadata.name strings, a string
    namespace, a labels map), and how many were left out."""
    keep, skipped = [], 0
    for o in objects:
        meta = o.get("metadata")
        if (isinstance(o.get("apiVersion"), str) and o["apiVersion"] and isinstance(o.get("kind"), str) and o["kind"]
                and isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]
                and isinstance(meta.get("namespace") or "", str) and isinstance(meta.get("labels") or {}, dict)):
            keep.append(o)
        else:
            skipped += 1
    return keep, skipped


def _server_version(objects: list[dict]) -> Optional[str]:
    """The newest kubelet version of the snapshot's nodes (an API server is at least
    as new as its kubelets), so kubectl's version-skew warning means what it says."""
    import re

    best = None
    for o in objects:
        if o.get("kind") != "Node":
            continue
        info = (o.get("status") or {}).get("nodeInfo") if isinstance(o.get("status"), dict) else None
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", str((info or {}).get("kubeletVersion", "")).split("-")[0].split("+")[0])
        if m and (best is None or tuple(map(int, m.groups())) > best[0]):
            best = (tuple(map(int, m.groups())), m.group(0))
    return best[1] if best else None


@app.command("serve")
def serve(
    bundle: Annotated[str, typer.Argument(help="What to serve: anything --snapshot reads (a gpuctl .tar.gz bundle, a directory, a kubectl JSON/YAML dump, or demo).", show_default=False)],
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on, on 127.0.0.1 only (0: any free port).")] = 0,
    kubeconfig_out: Annotated[Optional[str], typer.Option("--kubeconfig-out", metavar="FILE", help="Write the kubeconfig to FILE instead of stdout (replaces FILE only if this command wrote it).", show_default=False)] = None,
    debug: DebugOpt = False,
) -> int:
    """Serve a snapshot read-only over the Kubernetes API on 127.0.0.1, for kubectl, k9s or gpuctl --kubeconfig; Ctrl-C stops."""
    set_debug(debug)
    import os
    import shlex
    import signal
    import sys
    import threading

    from ..collect import files
    from ..errors import SourceError, UsageError
    from ..render.safe import clean

    if kubeconfig_out is not None:
        _check_kubeconfig_out(kubeconfig_out)       # before the bundle is read
    try:
        files.load_snapshot(bundle)                 # refused exactly as --snapshot refuses it (exit 4)
        objects, skipped = _servable(files.iter_raw_objects(bundle))
        logs, metrics = files.raw_logs(bundle), files.raw_metrics(bundle)
    except SourceError as e:
        if e.hint and "--snapshot" in e.hint:
            e.hint = e.hint.replace("given to --snapshot", "of BUNDLE")
        raise
    shown = str(files.resolve_snapshot(bundle))

    from ..apiserver.server import DEFAULT_VERSION, ReadOnlyAPIServer

    server = ReadOnlyAPIServer(objects, logs, metrics=metrics, version=_server_version(objects) or DEFAULT_VERSION,
                               port=port)
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):      # Ctrl-C, kill, the terminal closed: stop, exit 0
            if hasattr(signal, name):
                sig = getattr(signal, name)
                previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        try:
            server.start()
        except OSError as e:
            raise UsageError(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}",
                             "choose another --port, or --port 0 for any free port") from None
        text = _kubeconfig(server.url, os.path.abspath(shown))
        if skipped:
            sys.stderr.write(f"left out {skipped} object(s) the API cannot serve: no apiVersion, kind or "
                             "metadata.name, or malformed metadata\n")
        if kubeconfig_out is not None:
            _write_kubeconfig(kubeconfig_out, text)
            usage = f"KUBECONFIG={shlex.quote(kubeconfig_out)} kubectl get pods -A"
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
            usage = ("KUBECONFIG=FILE kubectl get pods -A, FILE holding the kubeconfig printed on stdout "
                     "(--kubeconfig-out FILE writes it)")
        sys.stderr.write(clean(f"serving {shown} read-only at {server.url} until Ctrl-C; use it with: {usage}") + "\n")
        sys.stderr.flush()
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
