"""`gpuctl label-nodes`: the labels each GPU node should carry, from its detected SKU.

Detection by precedence: a probe (NVML names on the node itself), GFD labels, cloud
labels (GKE accelerator, Karpenter), the instance type. The source is reported.
Mixed-SKU nodes, unknown products and sources that disagree are reported and not
labelled: gpuctl never guesses silently.

Default keys (docs/commands.md): `gpu-type` = the SKU's canonical short name
(`h100` vs `h100-nvl`: variants that schedule differently stay apart) and
`gpu-memory` = nominal memory per GPU in whole Gi (`80Gi`); on request `gpu-count`,
`gpu-family` and `gpu-memory-gib` (a plain integer, for Gt/Lt node affinity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import TargetNotFound
from ..knowledge import catalog
from ..model.objects import Node
from ..model.snapshot import Snapshot, unreadable_dicts

KEYS = {"type": "gpu-type", "memory": "gpu-memory", "count": "gpu-count", "family": "gpu-family",
        "memory-gib": "gpu-memory-gib"}
DEFAULT_INCLUDED = ("type", "memory")


@dataclass
class NodePlan:
    node: str
    sku: Optional[str] = None
    source: Optional[str] = None
    status: str = "ok"                       # ok | unknown | conflict | no-gpu
    problems: list[str] = field(default_factory=list)
    set: dict[str, str] = field(default_factory=dict)          # keys to write (new or changed)
    unchanged: dict[str, str] = field(default_factory=dict)
    changed: dict[str, dict[str, str]] = field(default_factory=dict)   # key -> {from, to}
    blocked: dict[str, dict[str, str]] = field(default_factory=dict)   # differs, needs --overwrite
    result: Optional[str] = None             # after --apply: patched | dry-run | unchanged | failed: …

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"node": self.node, "sku": self.sku, "source": self.source, "status": self.status,
                             "set": dict(self.set), "unchanged": dict(self.unchanged)}
        if self.changed:
            d["changed"] = self.changed
        if self.blocked:
            d["needs_overwrite"] = self.blocked
        if self.problems:
            d["problems"] = self.problems
        if self.result:
            d["result"] = self.result
        return d


def _probe_evidence(probe: dict) -> tuple[list[catalog.GpuEvidence], list[str]]:
    """Evidence from a probe document: one entry if all GPUs are one SKU, else a conflict."""
    gpus = [g for g in probe.get("gpus") or [] if isinstance(g, dict)]
    if not gpus:
        return [], []
    skus = {}
    for g in gpus:
        name = str(g.get("name") or "")
        sku = catalog.match_product(name, g.get("memoryTotalMiB"))
        skus.setdefault(sku.id if sku else f"unknown:{name}", (sku, name))
    if len(skus) > 1:
        return [], [f"probe: mixed GPUs on one node: {', '.join(sorted(n for _, n in skus.values()))}"]
    sku, name = next(iter(skus.values()))
    return [catalog.GpuEvidence(sku, len(gpus), "probe", name)], []


def plan_node(node: Node, probe: Optional[dict], include: tuple[str, ...], keys: dict[str, str],
              overwrite: bool) -> NodePlan:
    plan = NodePlan(node.metadata.name)
    evidence, problems = _probe_evidence(probe) if probe else ([], [])
    evidence += catalog.gpu_evidence_from_labels(node.metadata.labels)
    plan.problems += problems
    with_sku = [e for e in evidence if e.sku is not None]
    if problems:
        plan.status = "conflict"
        return plan
    if not evidence:
        plan.status = "no-gpu"
        return plan
    if not with_sku:
        plan.status = "unknown"
        plan.source = evidence[0].source
        plan.problems.append(f"unknown GPU product ({evidence[0].source}: {evidence[0].raw}); add it to the SKU catalog")
        return plan
    best = with_sku[0]
    disagree = [e for e in with_sku[1:] if (e.sku.type, e.sku.memory_gib) != (best.sku.type, best.sku.memory_gib)]
    if disagree:
        plan.status = "conflict"
        plan.source = best.source
        plan.problems.append(f"sources disagree: {best.source} says {best.sku.id} ({best.raw}), "
                             + ", ".join(f"{e.source} says {e.sku.id} ({e.raw})" for e in disagree))
        return plan
    plan.sku, plan.source = best.sku.id, best.source
    count = best.count or next((e.count for e in evidence if e.count), None)
    values = {"type": best.sku.type, "memory": f"{best.sku.memory_gib}Gi", "family": best.sku.family,
              "memory-gib": str(best.sku.memory_gib), "count": str(count) if count else None}
    for name in include:
        value = values.get(name)
        if value is None:
            plan.problems.append(f"{name}: not known for this node (no GPU count from any source)")
            continue
        key = keys[name]
        have = node.metadata.labels.get(key)
        if have == value:
            plan.unchanged[key] = value
        elif have is None:
            plan.set[key] = value
        elif overwrite:
            plan.set[key] = value
            plan.changed[key] = {"from": have, "to": value}
        else:
            plan.blocked[key] = {"from": have, "to": value}
    if plan.blocked:
        plan.problems.append("existing values differ: " + ", ".join(f"{k}={v['from']} (wants {v['to']})"
                                                                   for k, v in plan.blocked.items()) + "; use --overwrite")
    return plan


def resolve_keys(prefix: str, overrides: dict[str, str]) -> dict[str, str]:
    keys = {name: prefix + key for name, key in KEYS.items()}
    keys.update(overrides)
    return keys


def is_gpu_node(node: Node) -> bool:
    return catalog.node_has_gpus(node.metadata.labels) is not None or any(
        catalog.is_gpu_resource(r) for r in node.status.capacity)


def target_nodes(snap: Snapshot, nodes: Optional[list[str]]) -> list:
    """The nodes named (each must be there), else every GPU node, by name."""
    if nodes:
        missing = [n for n in nodes if n not in snap.nodes]
        if missing:
            raise TargetNotFound(f"node(s) not found: {', '.join(missing)}")
        return [snap.nodes[n] for n in nodes]
    return [n for n in sorted(snap.nodes.values(), key=lambda n: n.metadata.name) if is_gpu_node(n)]


def labels_document(plans: list, snap, applied: bool, dry_run: Optional[str] = None) -> dict:
    """The ``gpuctl/labels/v1`` document: each node's plan and outcome, what could
    not be read, the nodes that were not labelled."""
    doc = {"schema": "gpuctl/labels/v1", "nodes": [p.to_dict() for p in plans], "applied": bool(applied)}
    if dry_run:
        doc["dryRun"] = dry_run

    unreadable = unreadable_dicts(snap.unreadable(("Node",)))
    if unreadable:
        doc["unreadable"] = unreadable
    errors = [f"{p.node}: {p.result}" for p in plans if p.result and p.result.startswith(("failed", "not tried"))]
    if errors:
        doc["errors"] = errors
    return doc


def label_keys(include: str, key: Optional[list[str]], prefix: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """label-nodes' --include, --key and --prefix (and the MCP tool's same inputs): the
    labels managed and each one's key. A bad name is a usage error."""
    from ..errors import UsageError

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
    return tuple(names), resolve_keys(prefix, overrides)
