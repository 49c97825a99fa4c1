"""The one write gpuctl makes: ``label-nodes --apply`` (and ``--dry-run=server``)
patching the GPU labels of nodes, each patch touching only the keys it sets.

What to set on each node is planned by ``gpuctl.reports.labels``; this module only
sends the plans and records each node's outcome on it (``plan.result``)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..errors import SourceError
from ..model.objects import Node
from ..model.snapshot import Snapshot
from .kube import ApiFailure, KubeAPI, path_segment
from .live import HINT_CREDENTIALS

MAX_CONSECUTIVE_FAILURES = 3   # nodes in a row the API server refused: stop instead of hammering it


def apply_labels(api: KubeAPI, plans: list, snap: Snapshot, replan: Callable[[str, Node], Any],
                 server_dry_run: bool) -> Optional[SourceError]:
    """Patch each node whose plan has keys to set: only those keys, with the node's
    resourceVersion as a precondition. On 409 (someone wrote the node meanwhile) the
    node is read again, re-planned (``replan(name, node)``: the command's plan for it, a
    ``gpuctl.reports.labels.NodePlan``) and patched once more.

    Every node ends with an outcome (patched, unchanged, failed: why, not tried).
    A per-node refusal (a 5xx after retries, 404, 422) fails that node and the rest
    go on, unless MAX_CONSECUTIVE_FAILURES nodes in a row fail. Credentials refused
    (401/403), a timeout or an unreachable server stop the run: the nodes left are
    "not tried", and the error that stopped it is returned (to be raised after the
    report is printed). A timed-out patch may have been applied by the server: its
    node says so."""
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
                        plan = plans[i] = replan(plan.node, node)
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


def _stop_reason(e: ApiFailure, node: str) -> Optional[SourceError]:
    """The error that ends an apply after this failure, or None to go on."""
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
