"""``gpuctl nodes capacity``: GPU capacity, allocation and fragmentation per node, pool and cluster."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from enum import Enum
from typing import Iterator, Optional

import typer
from typing_extensions import Annotated

from .common import (AsOpt, Common, ContextOpt, DebugOpt, KubeconfigOpt, NoColorOpt, SnapshotOpt, TimeoutOpt, TokenOpt,
                     load_offline, set_debug)

app = typer.Typer(help="The cluster's GPU nodes: capacity, allocation, fragmentation.", no_args_is_help=True,
                  rich_markup_mode=None)


class ReportOutput(str, Enum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    markdown = "markdown"


ReportOutputOpt = Annotated[ReportOutput, typer.Option("--output", "-o", help="Output format: table, wide (adds each node's taints and labels), json, yaml, csv (one row per node and GPU resource), markdown.", case_sensitive=False)]
PendingOutputOpt = Annotated[ReportOutput, typer.Option("--output", "-o", help="Output format: table, wide (every pod and every fix of each group), json, yaml, markdown (csv is refused: groups are not rows).", case_sensitive=False)]
SelectorOpt = Annotated[Optional[str], typer.Option("--selector", "-l", help="Only nodes with these labels (a label selector, as kubectl -l).", show_default=False)]
PoolLabelOpt = Annotated[Optional[str], typer.Option("--pool-label", help="Group nodes into pools by this label (default: the first of gpu-type, nvidia.com/gpu.product, node.kubernetes.io/instance-type that GPU nodes carry).", show_default=False)]


@contextmanager
def progress(opts: Common) -> Iterator:
    """A spinner on stderr while a large cluster is read, only on a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    with opts.console(stderr=True).status("reading the cluster") as status:
        yield lambda msg: status.update(msg)


@app.command("capacity")
def capacity(
    selector: SelectorOpt = None,
    pool_label: PoolLabelOpt = None,
    output: ReportOutputOpt = ReportOutput.table,
    snapshot: SnapshotOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    no_color: NoColorOpt = False,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Per node and pool: GPU capacity, allocatable, allocated, free, unhealthy; fragmentation and stranded GPUs."""
    set_debug(debug)
    opts = Common(kubeconfig, context, None, no_color=no_color, request_timeout=request_timeout, as_user=as_user, token=token)
    from ..reports.capacity import capacity_report

    if snapshot:
        snap = load_offline(snapshot)
        if selector:
            keep_selected(snap, selector)
    else:
        from ..collect.live import collect_cluster

        with progress(opts) as say:
            snap = collect_cluster(opts.api(), selector=selector, progress=say)
    from ..model.snapshot import NODES, PODS

    for key in (NODES, PODS):
        if key in snap.gaps:   # without nodes or their pods, every count would be wrong
            from ..errors import SourceError

            raise SourceError(f"cannot count GPUs: {snap.gaps[key].describe()}")
    doc = capacity_report(snap, pool_label, wide=output == ReportOutput.wide)
    gaps = [g.describe() for g in snap.gaps.values()]
    if gaps:
        doc["not_read"] = gaps
    write_report(doc, output, opts, "capacity")
    return 1 if doc.get("unreadable") else 0   # partial: some object could not be fully read (docs/output.md)


def keep_selected(snap, selector: str) -> None:
    """Apply a label selector to a snapshot's nodes, as the API server would."""
    from ..model.selectors import parse_label_selector

    try:
        reqs = parse_label_selector(selector)
    except ValueError as e:
        from ..errors import UsageError

        raise UsageError(f"invalid label selector {selector!r}: {e}") from None
    snap.nodes = {k: n for k, n in snap.nodes.items() if all(r.matches(n.metadata.labels) for r in reqs)}


def write_report(doc, output: ReportOutput, opts: Common, kind: str) -> None:
    from ..render import capacity as R
    from ..render.data import dump_json, dump_yaml

    if output == ReportOutput.json:
        dump_json(doc)
    elif output == ReportOutput.yaml:
        dump_yaml(doc)
    elif output == ReportOutput.csv:
        if kind != "capacity":
            from ..errors import UsageError

            raise UsageError("-o csv is for nodes capacity; use json, yaml, markdown or table")
        sys.stdout.write(R.capacity_csv(doc))
        for line in R.unreadable_lines(doc):   # objects without a row of their own: on stderr, as warnings
            sys.stderr.write(f"gpuctl: warning: could not be read fully: {line}\n")
    elif output == ReportOutput.markdown:
        sys.stdout.write(R.capacity_markdown(doc) if kind == "capacity" else R.pending_markdown(doc))
    else:
        render = R.render_capacity if kind == "capacity" else R.render_pending
        wide = output == ReportOutput.wide
        render(doc, opts.console(wide=wide), wide=wide)
