"""``gpuctl diagnose pod NAME|KIND/NAME``: the ranked diagnosis of one pod or workload."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .complete import complete_node, complete_pod
from .nodes import PendingOutputOpt, ReportOutput
from .common import (AsOpt, Common, ContextOpt, DebugOpt, KubeconfigOpt, NamespaceOpt, NoColorOpt, Output, OutputOpt,
                     SnapshotOpt, TimeoutOpt, TokenOpt, load_offline, set_debug, valid_name)

DcgmOpt = Annotated[Optional[str], typer.Option("--dcgm-url", help="Read DCGM exporter metrics from this URL (e.g. http://10.0.3.7:9400/metrics) instead of through the API server's pod proxy.", show_default=False)]
PromOpt = Annotated[Optional[str], typer.Option("--prometheus-url", help="Read DCGM metrics from this Prometheus (PromQL over its HTTP API) instead of the exporter pod.", show_default=False)]

ProbeOpt = Annotated[Optional[list[str]], typer.Option("--probe", help="A probe document (gpuctl node probe -o json, run on a node) to read with the cluster; repeatable.", show_default=False)]


def add_probes(snap, paths: Optional[list[str]]) -> None:
    """Probe documents given on the command line join the snapshot, by node name."""
    import json

    from ..errors import SourceError

    for path in paths or []:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise SourceError(f"probe {path}: cannot be read ({e})") from None
        if not isinstance(doc, dict) or doc.get("schema") != "gpuctl/probe/v1" or not isinstance(doc.get("node"), str):
            raise SourceError(f"probe {path}: not a gpuctl/probe/v1 document with a node name")
        snap.probes[doc["node"]] = doc


app = typer.Typer(help="Explain why a GPU pod or workload is not running, with fixes.", no_args_is_help=True, rich_markup_mode=None)


@app.command("pod")
def pod(
    target: Annotated[str, typer.Argument(help="Pod name, NAMESPACE/NAME, or KIND/NAME for a workload (job, deployment, statefulset, replicaset, daemonset, pytorchjob, mpijob, jobset, vcjob, podgroup, workload); kind.group/name as kubectl get -o name prints it works too.", show_default=False, autocompletion=complete_pod)],
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Find the pod NAME in every namespace (one match is diagnosed; several are listed).")] = False,
    output: OutputOpt = Output.table,
    snapshot: SnapshotOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    no_color: NoColorOpt = False,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    dcgm_url: DcgmOpt = None,
    prometheus_url: PromOpt = None,
    probe: ProbeOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Diagnose a Pending or failing GPU pod: scheduler events, every node against the pod, device plugins, quotas and queues."""
    set_debug(debug)
    from ..engine import diagnose, find_pod_anywhere, parse_target
    from ..errors import UsageError

    kind, name, target_ns = parse_target(target)
    if not name:
        raise UsageError(f"invalid target {target!r}: give NAME, KIND/NAME or NAMESPACE/NAME")
    if target_ns is not None:
        valid_name("namespace", target_ns)
        if namespace and namespace != target_ns:
            raise UsageError(f"{target} names namespace {target_ns} but -n says {namespace}")
        namespace, target = target_ns, name
    if all_namespaces and (target_ns is not None or kind not in (None, "pod")):
        raise UsageError("-A finds a pod by NAME in every namespace; give a bare pod name")
    if kind == "pod":
        kind, target = None, name
    opts = Common(kubeconfig, context, namespace, output, snapshot, request_timeout, no_color, as_user, token, debug)
    valid_name("pod" if kind is None else kind, name)
    if snapshot:
        snap = load_offline(snapshot)
        ns = find_pod_anywhere(snap, name) if all_namespaces else opts.resolve_namespace()
    else:
        from ..collect.live import collect_for_pod, collect_for_workload, find_pod_namespace

        api = opts.api()
        ns = find_pod_namespace(api, name) if all_namespaces else opts.resolve_namespace(api)
        if kind is None:
            snap = collect_for_pod(api, ns, name, dcgm_url=dcgm_url, prometheus_url=prometheus_url)
        else:
            snap = collect_for_workload(api, ns, kind, name)
    add_probes(snap, probe)
    diagnosis = diagnose(snap, ns, target)
    emit(diagnosis, opts, snap)
    return diagnosis.exit_code


NodeOutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Output format: table, wide (every check and all evidence), json, yaml, markdown.", case_sensitive=False)]


@app.command("node")
def node(
    name: Annotated[str, typer.Argument(help="Node name.", show_default=False, autocompletion=complete_node)],
    output: NodeOutputOpt = Output.table,
    snapshot: SnapshotOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    no_color: NoColorOpt = False,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    dcgm_url: DcgmOpt = None,
    prometheus_url: PromOpt = None,
    probe: ProbeOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Is this node's GPU stack healthy? GPUs expected vs advertised, device plugin and operator pods, driver/CUDA, MIG, Xid and ECC."""
    set_debug(debug)
    valid_name("node", name)
    opts = Common(kubeconfig, context, None, output, snapshot, request_timeout, no_color, as_user, token, debug)
    from ..engine import diagnose_node

    if snapshot:
        snap = load_offline(snapshot)
    else:
        from ..collect.live import collect_for_node

        snap = collect_for_node(opts.api(), name, dcgm_url=dcgm_url, prometheus_url=prometheus_url)
    add_probes(snap, probe)
    diagnosis = diagnose_node(snap, name)
    emit(diagnosis, opts, snap)
    return diagnosis.exit_code


@app.command("pending")
def pending(
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace of the cluster.")] = False,
    output: PendingOutputOpt = ReportOutput.table,
    snapshot: SnapshotOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    no_color: NoColorOpt = False,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Every Pending GPU pod of the namespace (-A: the cluster), grouped by cause, biggest group first."""
    set_debug(debug)
    from .nodes import progress, write_report

    opts = Common(kubeconfig, context, namespace, no_color=no_color, request_timeout=request_timeout, as_user=as_user, token=token)
    from ..reports.pending import pending_report

    if snapshot:
        snap = load_offline(snapshot)
        ns = None if all_namespaces else opts.resolve_namespace()
    else:
        from ..collect.live import collect_cluster

        api = opts.api()
        ns = None if all_namespaces else opts.resolve_namespace(api)
        with progress(opts) as say:
            snap = collect_cluster(api, namespace=ns, for_pending=True, progress=say)
    doc, code = pending_report(snap, ns)
    write_report(doc, output, opts, "pending")
    return code


def document(diagnosis, snap=None) -> dict:
    """The JSON document; ``unreadable`` (docs/output.md) only when some object of
    the snapshot could not be fully read."""
    doc = diagnosis.to_dict()
    if snap is not None and snap.unreadable():
        from ..model.snapshot import unreadable_dicts

        doc["unreadable"] = unreadable_dicts(snap.unreadable())
    return doc


def emit(diagnosis, opts: Common, snap=None) -> None:
    import sys

    if opts.output == Output.json:
        from ..render.data import dump_json

        dump_json(document(diagnosis, snap), sys.stdout)
    elif opts.output == Output.yaml:
        from ..render.data import dump_yaml

        dump_yaml(document(diagnosis, snap), sys.stdout)
    elif opts.output == Output.markdown:
        from ..render.diagnosis import render_markdown

        sys.stdout.write(render_markdown(diagnosis) + "\n")
    else:
        from ..render.diagnosis import render_diagnosis

        render_diagnosis(diagnosis, opts.console(wide=opts.wide), wide=opts.wide)
