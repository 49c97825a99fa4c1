"""``gpuctl nodes capacity``: GPU capacity, allocation and fragmentation per node, pool and cluster."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from typing_extensions import Annotated

from .common import Common, ReportOutput, Source, common_options, emit

app = typer.Typer(help="The cluster's GPU nodes: capacity, allocation, fragmentation.", no_args_is_help=True,
                  rich_markup_mode=None)

ReportOutputOpt = Annotated[ReportOutput, typer.Option("--output", "-o", help="Output format: table, wide (adds each node's taints and labels), json, yaml, csv (one row per node and GPU resource), markdown.", case_sensitive=False)]
SelectorOpt = Annotated[Optional[str], typer.Option("--selector", "-l", help="Only nodes with these labels (a label selector, as kubectl -l).", show_default=False)]
PoolLabelOpt = Annotated[Optional[str], typer.Option("--pool-label", help="Group nodes into pools by this label (default: the first of gpu-type, nvidia.com/gpu.product, node.kubernetes.io/instance-type that GPU nodes carry).", show_default=False)]


@app.command("capacity")
@common_options()
def capacity(
    opts: Common,
    selector: SelectorOpt = None,
    pool_label: PoolLabelOpt = None,
    output: ReportOutputOpt = ReportOutput.table,
) -> int:
    """Per node and pool: GPU capacity, allocatable, allocated, free, unhealthy; fragmentation and stranded GPUs."""
    from ..reports.capacity import capacity_report

    snap = Source(opts).snapshot("collect_cluster", spinner=True, selector=selector)
    doc = capacity_report(snap, pool_label, wide=output == ReportOutput.wide)

    def R():   # the table renderers (and rich) are imported only for a table, markdown or csv
        from ..render import capacity

        return capacity

    def csv() -> None:
        sys.stdout.write(R().capacity_csv(doc))
        for line in R().unreadable_lines(doc):   # objects without a row of their own: on stderr, as warnings
            sys.stderr.write(f"gpuctl: warning: could not be read fully: {line}\n")

    emit(opts, doc, lambda console, wide: R().render_capacity(doc, console, wide=wide),
         markdown=lambda: R().capacity_markdown(doc), csv=csv)
    return 1 if doc.get("unreadable") else 0   # partial: some object could not be fully read (docs/output.md)
