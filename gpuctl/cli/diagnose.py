"""``gpuctl diagnose pod NAME|KIND/NAME``: the ranked diagnosis of one pod or workload."""

from __future__ import annotations

import typer
from typing_extensions import Annotated

from .common import (AsOpt, Common, ContextOpt, DebugOpt, KubeconfigOpt, NamespaceOpt, NoColorOpt, Output, OutputOpt,
                     SnapshotOpt, TimeoutOpt, TokenOpt, load_offline, set_debug)

app = typer.Typer(help="Explain why a GPU pod or workload is not running, with fixes.", no_args_is_help=True, rich_markup_mode=None)


@app.command("pod")
def pod(
    target: Annotated[str, typer.Argument(help="Pod name, or KIND/NAME for a workload (job, deployment, statefulset, replicaset, daemonset, pytorchjob, mpijob, jobset, vcjob, podgroup, workload).", show_default=False)],
    namespace: NamespaceOpt = None,
    output: OutputOpt = Output.table,
    snapshot: SnapshotOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    no_color: NoColorOpt = False,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Diagnose a Pending or failing GPU pod: scheduler events, every node against the pod, device plugins, quotas and queues."""
    set_debug(debug)
    opts = Common(kubeconfig, context, namespace, output, snapshot, request_timeout, no_color, as_user, token, debug)
    from ..engine import diagnose, split_target

    kind, name = split_target(target)
    if not name:
        from ..errors import UsageError

        raise UsageError(f"invalid target {target!r}: give NAME or KIND/NAME")
    if snapshot:
        snap = load_offline(snapshot)
        ns = opts.resolve_namespace()
    else:
        from ..collect.live import collect_for_pod, collect_for_workload

        api = opts.api()
        ns = opts.resolve_namespace(api)
        if kind in (None, "pod", "pods", "po"):
            snap = collect_for_pod(api, ns, name)
        else:
            snap = collect_for_workload(api, ns, kind, name)
    diagnosis = diagnose(snap, ns, target)
    emit(diagnosis, opts)
    return diagnosis.exit_code


def emit(diagnosis, opts: Common) -> None:
    import sys

    if opts.output == Output.json:
        from ..render.data import dump_json

        dump_json(diagnosis.to_dict(), sys.stdout)
    elif opts.output == Output.yaml:
        from ..render.data import dump_yaml

        dump_yaml(diagnosis.to_dict(), sys.stdout)
    elif opts.output == Output.markdown:
        from ..render.diagnosis import render_markdown

        sys.stdout.write(render_markdown(diagnosis) + "\n")
    else:
        from ..render.diagnosis import render_diagnosis

        render_diagnosis(diagnosis, opts.console(), wide=opts.wide)
