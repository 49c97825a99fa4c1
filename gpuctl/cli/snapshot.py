"""``gpuctl snapshot save FILE``: collect what the read commands need into one bundle."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .common import AsOpt, Common, ContextOpt, DebugOpt, KubeconfigOpt, TimeoutOpt, TokenOpt, check_namespace, set_debug

app = typer.Typer(help="Offline snapshots of a cluster for diagnosis later or elsewhere.", no_args_is_help=True, rich_markup_mode=None)


@app.command("save")
def save(
    file: Annotated[str, typer.Argument(help="Where to write: NAME.tar.gz for a bundle, or a directory path.", show_default=False)],
    namespace: Annotated[Optional[str], typer.Option("--namespace", "-n", help="Collect namespaced objects of this namespace only (nodes are always collected).", show_default=False, callback=check_namespace)] = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Collect every namespace (the default unless -n is given).")] = False,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep env values, last-applied annotations, ConfigMap data and tokens in logs.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it is a previous gpuctl bundle (never anything else).")] = False,
    snapshot: Annotated[Optional[str], typer.Option("--snapshot", help="Re-bundle (and redact) an existing snapshot or kubectl dump instead of reading the cluster.", show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Write a bundle that --snapshot reads back: whole objects (minus managedFields), device-plugin logs, redacted by default."""
    set_debug(debug)
    import sys

    from ..collect import bundle
    from ..errors import SourceError
    from ..render.safe import clean

    opts = Common(kubeconfig, context, namespace, request_timeout=request_timeout, as_user=as_user, token=token)
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
