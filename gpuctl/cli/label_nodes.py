"""``gpuctl label-nodes``: labels from each node's detected GPU SKU; shown by
default, written only with ``--apply``."""

from __future__ import annotations

from enum import Enum
from typing import Any, Optional

import typer
from typing_extensions import Annotated

from .complete import complete_node
from .common import (AsOpt, Common, ContextOpt, DebugOpt, KubeconfigOpt, NoColorOpt, SnapshotOpt, TimeoutOpt, TokenOpt,
                     load_offline, set_debug, valid_name)


class DryRun(str, Enum):
    none = "none"
    client = "client"
    server = "server"


class LabelOutput(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


def label_nodes(
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
    snapshot: SnapshotOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = 15.0,
    no_color: NoColorOpt = False,
    as_user: AsOpt = None,
    token: TokenOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Compute GPU labels (gpu-type, gpu-memory, …) from each node's detected SKU; show the diff; write only with --apply."""
    set_debug(debug)
    from ..errors import UsageError
    from ..reports.labels import DEFAULT_INCLUDED, KEYS, is_gpu_node, plan_node, resolve_keys

    names = [n.strip() for n in include.split(",") if n.strip()] or list(DEFAULT_INCLUDED)
    bad = [n for n in names if n not in KEYS]
    if bad:
        raise UsageError(f"--include: unknown label {', '.join(bad)}; use {', '.join(KEYS)}")
    overrides = {}
    for k in key or []:
        name, _, label = k.partition("=")
        if name not in KEYS or not label:
            raise UsageError(f"--key {k!r}: use NAME=LABEL with NAME in {', '.join(KEYS)}")
        overrides[name] = label
    keys = resolve_keys(prefix, overrides)
    for n in nodes or []:
        valid_name("node", n)
    if probes_from_pods:
        valid_name("namespace", probes_from_pods.partition("/")[0])
    # kubectl's --dry-run: client sends nothing (even with --apply), server sends
    # the patch with dryRun=All; none with --apply writes.
    writing = dry_run == DryRun.server or (apply and dry_run == DryRun.none)
    if snapshot and writing:
        raise UsageError("--apply and --dry-run=server need a live cluster, not --snapshot")
    opts = Common(kubeconfig, context, None, no_color=no_color, request_timeout=request_timeout, as_user=as_user, token=token)
    api = None
    if snapshot:
        snap = load_offline(snapshot)
        if selector:
            from .nodes import keep_selected

            keep_selected(snap, selector)
    else:
        from ..collect.live import collect_nodes

        api = opts.api()
        snap = collect_nodes(api, names=nodes, selector=selector)
    from .diagnose import add_probes

    add_probes(snap, probe)
    if probes_from_pods:
        if api is None:
            raise UsageError("--probes-from-pods needs a live cluster")
        from ..collect.live import probes_from_pods as read_probes

        ns, _, sel = probes_from_pods.partition("/")
        for node_name, doc in read_probes(api, ns, sel).items():
            snap.probes.setdefault(node_name, doc)
    if nodes:
        missing = [n for n in nodes if n not in snap.nodes]
        if missing:
            from ..errors import TargetNotFound

            raise TargetNotFound(f"node(s) not found: {', '.join(missing)}")
        targets = [snap.nodes[n] for n in nodes]
    else:
        targets = [n for n in sorted(snap.nodes.values(), key=lambda n: n.metadata.name) if is_gpu_node(n)]
    plans = [plan_node(n, snap.probes.get(n.metadata.name), tuple(names), keys, overwrite) for n in targets]
    stopped = None
    if writing:
        stopped = _apply(api, plans, snap, tuple(names), keys, overwrite, server_dry_run=dry_run == DryRun.server)
    doc = {"schema": "gpuctl/labels/v1", "nodes": [p.to_dict() for p in plans],
           "applied": bool(writing and dry_run != DryRun.server)}
    if dry_run != DryRun.none:
        doc["dryRun"] = dry_run.value
    from ..model.snapshot import unreadable_dicts

    unreadable = unreadable_dicts(snap.unreadable(("Node",)))
    if unreadable:
        doc["unreadable"] = unreadable
    errors = [f"{p.node}: {p.result}" for p in plans if p.result and p.result.startswith(("failed", "not tried"))]
    if errors:
        doc["errors"] = errors
    _emit(doc, output, opts)
    if stopped is not None:
        raise stopped
    if errors:
        from ..errors import GpuctlError

        raise GpuctlError(f"{len(errors)} of {len(plans)} node(s) were not labelled: {errors[0]}"
                       + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
                       "every node's outcome is in the report above; re-run to finish")
    return 1 if unreadable or any(p.status in ("unknown", "conflict") for p in plans) else 0


MAX_CONSECUTIVE_FAILURES = 3   # nodes in a row the API server refused: stop instead of hammering it


def _apply(api: Any, plans: list, snap: Any, include: tuple[str, ...], keys: dict[str, str], overwrite: bool,
           server_dry_run: bool):
    """Patch each node whose plan has keys to set: only those keys, with the node's
    resourceVersion as a precondition. On 409 (someone wrote the node meanwhile) the
    node is read again, re-planned and patched once more.

    Every node ends with an outcome (patched, unchanged, failed: why, not tried).
    A per-node refusal (a 5xx after retries, 404, 422) fails that node and the rest
    go on, unless MAX_CONSECUTIVE_FAILURES nodes in a row fail. Credentials refused
    (401/403), a timeout or an unreachable server stop the run: the nodes left are
    "not tried", and the error that stopped it is returned (to be raised after the
    report is printed). A timed-out patch may have been applied by the server: its
    node says so."""
    from ..collect.kube import ApiFailure, path_segment
    from ..errors import SourceError
    from ..reports.labels import plan_node

    stopped: Optional[SourceError] = None
    consecutive = 0
    for i, plan in enumerate(plans):
        if stopped is not None:
            if plan.status == "ok" and plan.set:
                plan.result = f"not tried ({stopped.message.split(':', 1)[0]})"
            elif plan.status == "ok":
                plan.result = "unchanged"
            continue
        if plan.status != "ok" or not plan.set:
            plan.result = "unchanged" if plan.status == "ok" else None
            continue
        node = snap.nodes[plan.node]
        for attempt in (1, 2):
            body = {"metadata": {"resourceVersion": node.metadata.resourceVersion, "labels": dict(plan.set)}}
            try:
                api.patch_merge(f"/api/v1/nodes/{path_segment(plan.node)}", body, dry_run=server_dry_run)
                plan.result = "dry-run (server validated)" if server_dry_run else "patched"
                consecutive = 0
                break
            except ApiFailure as e:
                if e.status == 409 and attempt == 1:
                    try:
                        node = api.get(f"/api/v1/nodes/{path_segment(plan.node)}", "Node")
                    except ApiFailure as again:
                        plan.result = (f"failed: conflict (409), and re-reading the node failed: "
                                       f"{again.reason} ({again.message})")
                        e = again
                    else:
                        snap.nodes[plan.node] = node
                        plan = plans[i] = plan_node(node, snap.probes.get(plan.node), include, keys, overwrite)
                        if plan.status != "ok" or not plan.set:
                            plan.result = "unchanged (already labelled by someone else)" if plan.status == "ok" else None
                            break
                        continue
                else:
                    plan.result = f"failed: {e.reason} ({e.message})"
                stopped = _stop_reason(e, plan.node)
                consecutive += 1
                if stopped is None and consecutive >= MAX_CONSECUTIVE_FAILURES:
                    stopped = SourceError(f"stopped after {consecutive} nodes in a row failed (last: {plan.node}: "
                                          f"{e.reason})", "check the API server, then re-run label-nodes")
                break
    return stopped


def _stop_reason(e: Any, node: str):
    """The error that ends an apply after this failure, or None to go on."""
    from ..collect.live import HINT_CREDENTIALS
    from ..errors import SourceError

    if e.reason == "forbidden":
        return SourceError(f"patch node {node}: forbidden ({e.message})",
                           "needs RBAC verb 'patch' on 'nodes' (cluster-wide): bind the ClusterRole "
                           "gpuctl-label-nodes from deploy/rbac.yaml")
    if e.reason == "unauthorized":
        return SourceError(f"patch node {node}: the cluster refused the credentials (401 Unauthorized)",
                           HINT_CREDENTIALS)
    if e.reason in ("timeout", "unreachable"):
        return SourceError(f"patch node {node}: {e.message}",
                           e.hint or "stopped so as not to press an API server that does not answer; re-run "
                                     "label-nodes to see what was applied")
    return None


def _emit(doc: dict, output: LabelOutput, opts: Common) -> None:
    from ..render.data import dump_json, dump_yaml

    if output == LabelOutput.json:
        dump_json(doc)
        return
    if output == LabelOutput.yaml:
        dump_yaml(doc)
        return
    from rich.table import Table
    from rich.text import Text

    from ..render.safe import clean

    console = opts.console()
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("NODE", no_wrap=True)
    table.add_column("SKU (SOURCE)", overflow="fold")
    table.add_column("LABELS", overflow="fold")
    for n in doc["nodes"]:
        changes = n.get("changed", {})
        lines = [Text(f"+ {k}={v}", style="green") for k, v in n["set"].items() if k not in changes]
        lines += [Text(f"~ {k}: {v['from']} -> {v['to']}", style="yellow") for k, v in changes.items()]
        lines += [Text(f"! {k}: {v['from']} (wants {v['to']})", style="red") for k, v in n.get("needs_overwrite", {}).items()]
        lines += [Text(f"= {k}={v}", style="dim") for k, v in n["unchanged"].items()]
        if n["status"] != "ok":
            lines.append(Text(n["status"], style={"unknown": "yellow", "conflict": "red"}.get(n["status"], "dim")))
        if n.get("result"):
            lines.append(Text(n["result"], style="bold"))
        cell = Text("\n").join(Text(clean(str(t)), style=t.style) for t in lines) if lines else Text("-")
        table.add_row(Text(clean(n["node"])), Text(clean(f"{n['sku'] or '?'} ({n['source'] or '-'})")), cell)
    console.print(table)
    from ..render.capacity import print_unreadable

    print_unreadable(doc, console)
    for n in doc["nodes"]:
        for problem in n.get("problems", []):
            console.print(Text(f"  {clean(n['node'])}: {clean(problem)}", style="yellow"))
    if not doc["applied"] and not any(n.get("result") for n in doc["nodes"]) and any(n["set"] for n in doc["nodes"]):
        console.print(Text("Dry run: nothing was sent. Add --apply to write these labels.", style="bold"))

