"""``gpuctl snapshot save FILE``: collect what the read commands need into one bundle."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .common import AsOpt, Common, ContextOpt, DebugOpt, KubeconfigOpt, TimeoutOpt, TokenOpt, set_debug

app = typer.Typer(help="Offline snapshots of a cluster for diagnosis later or elsewhere.", no_args_is_help=True, rich_markup_mode=None)


@app.command("save")
def save(
    file: Annotated[str, typer.Argument(help="Where to write: NAME.tar.gz for a bundle, or a directory path.", show_default=False)],
    namespace: Annotated[Optional[str], typer.Option("--namespace", "-n", help="Collect namespaced objects of this namespace only (nodes are always collected).", show_default=False)] = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Collect every namespace (the default unless -n is given).")] = False,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep env values, last-applied annotations, ConfigMap data and tokens in logs.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
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

    opts = Common(kubeconfig, context, namespace, request_timeout=request_timeout, as_user=as_user, token=token)
    if snapshot:
        report = bundle.save_offline(snapshot, file, redact=not no_redact, force=force)
    else:
        ns = None if all_namespaces or not namespace else namespace
        report = bundle.save_live(opts.api(), file, ns, redact=not no_redact, force=force)
    for line in bundle.describe(report):
        sys.stderr.write(line + "\n")
    return 0
