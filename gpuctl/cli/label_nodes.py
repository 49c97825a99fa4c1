"""``gpuctl label-nodes``: labels from each node's detected GPU SKU; shown by
default, written only with ``--apply``."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer
from typing_extensions import Annotated

from .complete import complete_node
from .common import Common, Source, common_options, emit, valid_name


class DryRun(str, Enum):
    none = "none"
    client = "client"
    server = "server"


class LabelOutput(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


@common_options()
def label_nodes(
    opts: Common,
    nodes: Annotated[Optional[list[str]], typer.Argument(help="Node names (default: every GPU node, or those matching -l).", show_default=False, autocompletion=complete_node)] = None,
    selector: Annotated[Optional[str], typer.Option("--selector", "-l", help="Only nodes with these labels (a label selector).", show_default=False)] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Write the labels (a merge patch touching only these keys). Without it nothing is sent.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Change labels that already have a different value (as kubectl label --overwrite).")] = False,
    dry_run: Annotated[DryRun, typer.Option("--dry-run", help="client: show only (the default without --apply); server: send the patch with dryRun=All so the API server validates it without persisting.", case_sensitive=False)] = DryRun.none,
    prefix: Annotated[str, typer.Option("--prefix", help="Prefix for every key, e.g. example.com/ gives example.com/gpu-type.")] = "",
    key: Annotated[Optional[list[str]], typer.Option("--key", help="Rename one key: NAME=LABEL with NAME in type, memory, count, family, memory-gib. Repeatable.", show_default=False)] = None,
    include: Annotated[str, typer.Option("--include", help="Labels to manage, comma-separated from type, memory, count, family, memory-gib.")] = "type,memory",
    probe: Annotated[Optional[list[str]], typer.Option("--probe", help="A probe document (gpuctl node probe -o json) to detect from; repeatable.", show_default=False)] = None,
    probes_from_pods: Annotated[Optional[str], typer.Option("--probes-from-pods", help="NAMESPACE/SELECTOR of probe DaemonSet pods: read the newest gpuctl/probe/v1 line of each pod's log.", show_default=False)] = None,
    output: Annotated[LabelOutput, typer.Option("--output", "-o", help="table, json or yaml.", case_sensitive=False)] = LabelOutput.table,
) -> int:
    """Compute GPU labels (gpu-type, gpu-memory, …) from each node's detected SKU; show the diff; write only with --apply."""
    from ..errors import UsageError
    from ..reports.labels import label_keys, labels_document, plan_node, target_nodes

    names, keys = label_keys(include, key, prefix)
    for n in nodes or []:
        valid_name("node", n)
    if probes_from_pods:
        valid_name("namespace", probes_from_pods.partition("/")[0])
    # kubectl's --dry-run: client sends nothing (even with --apply), server sends
    # the patch with dryRun=All; none with --apply writes.
    writing = dry_run == DryRun.server or (apply and dry_run == DryRun.none)
    if opts.snapshot and writing:
        raise UsageError("--apply and --dry-run=server need a live cluster, not --snapshot")
    src = Source(opts)
    snap = src.snapshot("collect_nodes", names=nodes, selector=selector, probes=probe)
    if probes_from_pods:
        if src.api is None:
            raise UsageError("--probes-from-pods needs a live cluster")
        from ..collect.live import probes_from_pods as read_probes

        ns, _, sel = probes_from_pods.partition("/")
        for node_name, doc in read_probes(src.api, ns, sel).items():
            snap.probes.setdefault(node_name, doc)
    targets = target_nodes(snap, nodes)

    def plan(name: str, node) -> object:
        return plan_node(node, snap.probes.get(name), names, keys, overwrite)

    plans = [plan(n.metadata.name, n) for n in targets]
    stopped = None
    if writing:
        from ..collect.labeling import apply_labels

        stopped = apply_labels(src.api, plans, snap, plan, server_dry_run=dry_run == DryRun.server)
    doc = labels_document(plans, snap, applied=writing and dry_run != DryRun.server,
                          dry_run=None if dry_run == DryRun.none else dry_run.value)

    def table(console, wide: bool) -> None:
        from ..render.labels import render_labels

        render_labels(doc, console)

    emit(opts, doc, table)
    if stopped is not None:
        raise stopped
    errors = doc.get("errors")
    if errors:
        from ..errors import GpuctlError

        raise GpuctlError(f"{len(errors)} of {len(plans)} node(s) were not labelled: {errors[0]}"
                       + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
                       "every node's outcome is in the report above; re-run to finish")
    return 1 if doc.get("unreadable") or any(p.status in ("unknown", "conflict") for p in plans) else 0


