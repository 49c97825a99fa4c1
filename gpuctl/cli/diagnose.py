"""``gpuctl diagnose pod NAME|KIND/NAME``: the ranked diagnosis of one pod or workload."""

from __future__ import annotations

import sys

from typing import Optional

import typer
from typing_extensions import Annotated

from .complete import complete_node, complete_pod
from .common import (Common, NamespaceOpt, Output, OutputOpt, ReportOutput, Source, add_probes, common_options, emit,
                     valid_name)

DcgmOpt = Annotated[Optional[str], typer.Option("--dcgm-url", help="Read DCGM exporter metrics from this URL (e.g. http://10.0.3.7:9400/metrics) instead of through the API server's pod proxy.", show_default=False)]
PromOpt = Annotated[Optional[str], typer.Option("--prometheus-url", help="Read DCGM metrics from this Prometheus (PromQL over its HTTP API) instead of the exporter pod.", show_default=False)]

ServerOpt = Annotated[Optional[str], typer.Option("--server", metavar="URL", help="Ask a running gpuctl serve (e.g. http://localhost:9402 after kubectl port-forward) instead of the API server: the answer from its watch cache, without API calls. -n or 'default' names the namespace.", show_default=False)]
ProbeOpt = Annotated[Optional[list[str]], typer.Option("--probe", help="A probe document (gpuctl node probe -o json, run on a node) to read with the cluster; repeatable.", show_default=False)]
NodeOutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Output format: table, wide (every check and all evidence), json, yaml, markdown.", case_sensitive=False)]
PendingOutputOpt = Annotated[ReportOutput, typer.Option("--output", "-o", help="Output format: table, wide (every pod and every fix of each group), json, yaml, markdown (csv is refused: groups are not rows).", case_sensitive=False)]

app = typer.Typer(help="Explain why a GPU pod or workload is not running, with fixes.", no_args_is_help=True, rich_markup_mode=None)


@app.command("pod")
@common_options()
def pod(
    opts: Common,
    target: Annotated[str, typer.Argument(help="Pod name, NAMESPACE/NAME, or KIND/NAME for a workload (job, deployment, statefulset, replicaset, daemonset, pytorchjob, mpijob, jobset, vcjob, podgroup, workload); kind.group/name as kubectl get -o name prints it works too.", show_default=False, autocompletion=complete_pod)],
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Find the pod NAME in every namespace (one match is diagnosed; several are listed).")] = False,
    output: OutputOpt = Output.table,
    dcgm_url: DcgmOpt = None,
    prometheus_url: PromOpt = None,
    probe: ProbeOpt = None,
    server: ServerOpt = None,
) -> int:
    """Diagnose a Pending or failing GPU pod: scheduler events, every node against the pod, device plugins, quotas and queues."""
    from ..engine import diagnose, find_pod_anywhere, resolve_pod_target
    from ..errors import UsageError

    kind, name, opts.namespace, target = resolve_pod_target(target, opts.namespace, all_namespaces)
    if server:
        if kind is not None or all_namespaces:
            raise UsageError("--server diagnoses one pod by NAME or NAMESPACE/NAME (gpuctl serve keeps no workloads)",
                             "drop --server to diagnose a workload or search every namespace")
        _server_only(opts, dcgm_url=dcgm_url, prometheus_url=prometheus_url, probe=probe)
        return _from_server(opts, server, "pod", target, opts.namespace or "default")
    src = Source(opts)
    ns = src.namespace(all_namespaces, pod=name)
    if kind is None:
        snap = src.snapshot("collect_for_pod", ns=ns, name=name, dcgm_url=dcgm_url, prometheus_url=prometheus_url)
    else:
        snap = src.snapshot("collect_for_workload", ns=ns, alias=kind, name=name)
    if ns is None:      # -A over a snapshot: the pod is looked for in it
        ns = find_pod_anywhere(snap, name)
    add_probes(snap, probe)
    diagnosis = diagnose(snap, ns, target)
    show(diagnosis, opts, snap)
    return diagnosis.exit_code


@app.command("node")
@common_options()
def node(
    opts: Common,
    name: Annotated[str, typer.Argument(help="Node name.", show_default=False, autocompletion=complete_node)],
    output: NodeOutputOpt = Output.table,
    dcgm_url: DcgmOpt = None,
    prometheus_url: PromOpt = None,
    probe: ProbeOpt = None,
    server: ServerOpt = None,
) -> int:
    """Is this node's GPU stack healthy? GPUs expected vs advertised, device plugin and operator pods, driver/CUDA, MIG, Xid and ECC."""
    valid_name("node", name)
    if server:
        _server_only(opts, dcgm_url=dcgm_url, prometheus_url=prometheus_url, probe=probe)
        return _from_server(opts, server, "node", name)
    from ..engine import diagnose_node

    snap = Source(opts).snapshot("collect_for_node", name=name, dcgm_url=dcgm_url, prometheus_url=prometheus_url,
                                 probes=probe)
    diagnosis = diagnose_node(snap, name)
    show(diagnosis, opts, snap)
    return diagnosis.exit_code


@app.command("pending")
@common_options()
def pending(
    opts: Common,
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace of the cluster.")] = False,
    output: PendingOutputOpt = ReportOutput.table,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Keep watching (a watch cache, as gpuctl serve keeps): show the report again whenever it changes, until Ctrl-C. Live only.")] = False,
    server: ServerOpt = None,
) -> int:
    """Every Pending GPU pod of the namespace (-A: the cluster), grouped by cause, biggest group first."""
    from ..reports.pending import pending_report

    if server:
        if watch:
            from ..errors import UsageError

            raise UsageError("--watch keeps its own watch cache; --server asks gpuctl serve once", "drop one of them")
        _server_only(opts)
        return _from_server(opts, server, "pending", namespace=None if all_namespaces else opts.namespace or "default")
    src = Source(opts)
    ns = src.namespace(all_namespaces)
    if watch:
        return _watch_pending(opts, src, ns)
    snap = src.snapshot("collect_cluster", spinner=True, namespace=ns, for_pending=True)
    doc, code = pending_report(snap, ns)

    def table(console, wide: bool) -> None:   # the renderers (and rich) imported only for a table
        from ..render import capacity as R

        R.render_pending(doc, console, wide=wide)

    def markdown() -> str:
        from ..render import capacity as R

        return R.pending_markdown(doc)

    emit(opts, doc, table, markdown=markdown, csv=_no_csv)
    return code


def _watch_pending(opts: Common, src: Source, ns) -> int:
    """The pending report, again whenever it changes: one document per change for -o json
    and yaml, the table under a time stamp otherwise. Ctrl-C ends it (exit 0)."""
    import signal
    import threading
    import time as _time

    from ..errors import UsageError
    from ..render import capacity as R
    from ..serve.server import watch_pending

    if src.offline:
        raise UsageError("--watch needs a cluster: a snapshot does not change", "drop --snapshot, or drop --watch")
    if opts.output.value == "csv":
        _no_csv()
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set()) if threading.current_thread() is threading.main_thread() else None

    def show(doc) -> None:
        if opts.output.value not in ("json", "yaml", "markdown"):
            opts.console().print(f"── {_time.strftime('%H:%M:%S')} ──", highlight=False)
        emit(opts, doc, lambda console, wide: R.render_pending(doc, console, wide=wide),
             markdown=lambda: R.pending_markdown(doc), csv=_no_csv)
        sys.stdout.flush()

    try:
        watch_pending(src.api, ns, 2.0, show, stop)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return 0


def _server_only(opts: Common, **local: object) -> None:
    """--server reads nothing but gpuctl serve's answer: a snapshot or an option that
    adds local data is a usage error, not silently ignored."""
    from ..errors import UsageError

    if opts.snapshot:
        raise UsageError("--server and --snapshot both say where to read from", "give one of them")
    given = [f"--{k.replace('_', '-')}" for k, v in local.items() if v]
    if given:
        raise UsageError(f"{', '.join(given)} cannot be sent to gpuctl serve (--server)",
                         "drop --server to read them with the cluster")


def _from_server(opts: Common, server: str, kind: str, name: str = "", namespace: Optional[str] = None) -> int:
    """One document from gpuctl serve, shown exactly as the local one would be."""
    from ..collect.served import served_document

    doc = served_document(server, kind, opts.request_timeout, name=name, namespace=namespace)
    if kind == "pending":
        from ..reports.pending import pending_exit_code
        from ..render import capacity as R

        emit(opts, doc, lambda console, wide: R.render_pending(doc, console, wide=wide),
             markdown=lambda: R.pending_markdown(doc), csv=_no_csv)
        return pending_exit_code(doc)
    from ..errors import SourceError
    from ..findings import Diagnosis

    try:
        diagnosis = Diagnosis.from_dict(doc)
    except (ValueError, TypeError, KeyError) as e:
        raise SourceError(f"gpuctl serve at {server}: its {kind} diagnosis cannot be read here ({e}); "
                          "is it a newer gpuctl?") from None
    show(diagnosis, opts)
    return diagnosis.exit_code


def _no_csv() -> None:
    from ..errors import UsageError

    raise UsageError("-o csv is for nodes capacity; use json, yaml, markdown or table")


def document(diagnosis, snap=None) -> dict:
    """The JSON document; ``unreadable`` (docs/output.md) only when some object of
    the snapshot could not be fully read."""
    doc = diagnosis.to_dict()
    if snap is not None and snap.unreadable():
        from ..model.snapshot import unreadable_dicts

        doc["unreadable"] = unreadable_dicts(snap.unreadable())
    return doc


def show(diagnosis, opts: Common, snap=None) -> None:
    """The diagnosis in the format -o names (rich rendering imported only for it)."""

    def table(console, wide: bool) -> None:
        from ..render.diagnosis import render_diagnosis

        render_diagnosis(diagnosis, console, wide=wide)

    def markdown() -> str:
        from ..render.diagnosis import render_markdown

        return render_markdown(diagnosis) + "\n"

    emit(opts, lambda: document(diagnosis, snap), table, markdown)
