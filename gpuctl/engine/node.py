"""``diagnose node``: the node's checks and the node document (GPUs expected,
advertised, allocatable and allocated; driver; pool; GPU Operator operands; GPU
pods)."""

from __future__ import annotations

from typing import Any, Optional

from ..checks.context import requests_read
from ..checks.device_plugin import pod_problems
from ..checks.gpu_node import advertised, driver_info, expected_gpus, expected_mig_devices, pool_key
from ..checks.node_health import NodeContext
from ..findings import Diagnosis
from ..model.requests import pod_requests
from ..model.snapshot import Snapshot
from ..checks.memo import Memo
from .ranking import merge, verdict_for
from .run import broken_checks, data_results, node_checks_reading, run_checks
from .targets import find_node


def diagnose_node(snap: Snapshot, name: str, memo: Optional[Memo] = None) -> Diagnosis:
    node = find_node(snap, name)
    ctx = NodeContext(snap, node, memo or Memo())
    own = snap.problems_of("Node", None, name)
    findings, results = run_checks(ctx, "node", broken_checks(own, node_checks_reading))
    data_results(snap, results)
    ranked = merge(findings)
    notes = []
    if not ctx.has_gpus:
        notes.append(f"{name} has no GPUs (no GPU labels, no GPU resources advertised).")
    verdict = verdict_for(ranked, results, bound=True)
    if verdict == "inconclusive":
        notes.append("The verdict is inconclusive: see the skipped checks for what could not be read.")
    return Diagnosis(target=node_document(ctx, own), verdict=verdict, findings=ranked, checks=results, notes=notes)


def node_document(ctx: NodeContext, own: list) -> dict[str, Any]:
    """The ``target`` of a node diagnosis (docs/output.md)."""
    snap, node, name = ctx.snap, ctx.node, ctx.name
    info = driver_info(snap, name, ctx.memo)
    key = pool_key(node)
    return {"kind": "Node", "namespace": None, "name": name, "phase": "Ready" if node.ready else "NotReady",
            "node": name, "schedulable": not node.spec.unschedulable, "gpus": _gpus(ctx, own),
            "sku": (catalog_sku(node) or None),
            "driver": {"version": info.driver, "cuda": str(info.cuda) if info.cuda else None, "source": info.source} if info else None,
            "pool": {"key": key, "drivers": _pool_drivers(ctx, key)} if key else None,
            "operands": _operands(ctx) if ctx.has_gpus else {},
            "pods": [{"namespace": p.metadata.namespace, "name": p.metadata.name, "phase": p.phase,
                      "gpus": {r: int(q) for r, q in pod_requests(p).items() if r in ctx.gpu_resources}}
                     for p in ctx.pods if any(r in ctx.gpu_resources for r in pod_requests(p))]}


def _gpus(ctx: NodeContext, own: list) -> list[dict[str, Any]]:
    """Per GPU resource: expected (from the SKU), capacity, allocatable, allocated;
    None where the field could not be read."""
    snap, node = ctx.snap, ctx.node
    exp = expected_gpus(snap, node)
    expected = {e.resource: e.count for e in ([exp] if exp else []) + expected_mig_devices(node)}
    unknown = {u.path[1:3] for u in own if u.path[:2] in (("status", "capacity"), ("status", "allocatable"))}
    pod_unknown = {r for r in ctx.gpu_resources for p in ctx.pods
                   for u in snap.problems_of("Pod", p.metadata.namespace, p.metadata.name) if requests_read(u.path, {r})}
    gpus = []
    for r in ctx.gpu_resources:
        cap, alloc = advertised(node, r)
        gpus.append({"resource": r, "expected": expected.get(r),
                     "capacity": None if {("capacity",), ("capacity", r)} & unknown else int(cap),
                     "allocatable": None if {("allocatable",), ("allocatable", r)} & unknown else int(alloc),
                     "allocated": None if r in pod_unknown else int(ctx.allocated(r))})
    return gpus


def _operands(ctx: NodeContext) -> dict[str, str]:
    operands = {"device plugin": "; ".join(ctx.plugin.problems) or ("Running" if ctx.plugin.pods else "missing")}
    for label, pods in sorted(ctx.operand_pods().items()):
        operands[label] = "; ".join(x for p in pods for x in pod_problems(p)) or "Running"
    return operands


def _pool_drivers(ctx: NodeContext, key: str) -> dict[str, int]:
    drivers: dict[str, int] = {}
    for n in ctx.snap.nodes.values():
        if pool_key(n) == key:
            d = driver_info(ctx.snap, n.metadata.name, ctx.memo)
            if d and d.driver:
                drivers[d.driver] = drivers.get(d.driver, 0) + 1
    return drivers


def catalog_sku(node) -> Optional[str]:
    from ..knowledge import catalog

    ev = catalog.node_has_gpus(node.metadata.labels)
    return ev.sku.id if ev and ev.sku else None
