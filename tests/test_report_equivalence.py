"""The fit matrix's shortcuts change nothing a person reads.

``gpuctl.checks.context.FAST_PATHS`` switches off every shortcut the pending report
and the pod diagnosis take over a large cluster (per-node facts and free amounts
shared by the pods of a memo, detail lines written when read, remembered quantities
and tolerations, inter-pod rules skipped when a pod has none, node-fit findings copied
without deepcopy; the fit matrix built row by row from placements shared by pod classes
with the same constraints and short lines written when read (``PodContext._matrix``);
bound pods' requests summed from their shared containers lists (``used_by``); a pod's
requests, CUDA requirement and encoded tolerations computed once per shared part of
its record; CUDA verdicts per node shared by the pod classes; device-plugin pods of a
few nodes read from the pods per node). With it off each value is computed where it is
used, as before. Both ways must give the same documents, byte for byte: the pending
report (-A and per namespace), and the diagnosis of every pod, on every scenario under
tests/scenarios and on a generated cluster (benchmarks.synth); and the same fit
matrices, row by row with every detail line, for every Pending pod."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import captured_at, scenario_dirs, snapshot_of

from gpuctl.checks import context
from gpuctl.collect.files import load_snapshot
from gpuctl.engine import diagnose_pod
from gpuctl.reports.pending import pending_report

SCENARIOS = scenario_dirs()
NOW = "2026-11-20T03:12:00Z"
ROOT = Path(__file__).resolve().parent.parent


def _documents(path: Path) -> dict[str, Any]:
    """Every document the shortcuts could change, from a fresh read of the snapshot."""
    snap = load_snapshot(path)
    out: dict[str, Any] = {}
    doc, code = pending_report(snap, None)
    out["pending -A"] = (doc, code)
    for ns in sorted({p.metadata.namespace or "default" for p in snap.pods.values()}):
        out[f"pending {ns}"] = pending_report(snap, ns)
    for p in sorted(snap.pods.values(), key=lambda p: p.key):
        ns = p.metadata.namespace or "default"
        out[f"pod {p.key}"] = diagnose_pod(snap, ns, p.metadata.name).to_dict()
    return out


def _both(path: Path, monkeypatch) -> tuple[dict[str, Any], dict[str, Any]]:
    monkeypatch.setattr(context, "FAST_PATHS", True)
    fast = _documents(path)
    monkeypatch.setattr(context, "FAST_PATHS", False)
    plain = _documents(path)
    monkeypatch.setattr(context, "FAST_PATHS", True)
    return fast, plain


def _same(fast: dict[str, Any], plain: dict[str, Any]) -> None:
    assert list(fast) == list(plain)
    for key in fast:
        a = json.dumps(fast[key], indent=2, sort_keys=False, default=str)
        b = json.dumps(plain[key], indent=2, sort_keys=False, default=str)
        assert a == b, f"{key}: the fast path differs from the straightforward one"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario_documents_are_the_same(scenario: Path, monkeypatch) -> None:
    snapdir = snapshot_of(scenario)
    monkeypatch.setenv("GPUCTL_NOW", captured_at(snapdir) or NOW)
    fast, plain = _both(snapdir, monkeypatch)
    _same(fast, plain)


@pytest.fixture(scope="module")
def synth_lists(tmp_path_factory) -> Path:
    """A small generated cluster (the benchmark's generator) as kubectl List files."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.synth import generate
    finally:
        sys.path.remove(str(ROOT))
    c = generate(120, 3000)
    d = tmp_path_factory.mktemp("synth") / "lists"
    d.mkdir()
    for name, items in (("nodes.json", c.nodes), ("pods.json", c.pods), ("other.json", c.others)):
        (d / name).write_text('{"apiVersion": "v1", "kind": "List", "items": [\n' + ",\n".join(items) + "\n]}\n")
    (d / "snapshot.json").write_text(json.dumps({"schema": "gpuctl/snapshot/v1", "capturedAt": NOW,
                                                 "context": "synthetic"}) + "\n")
    return d


def test_synthetic_cluster_documents_are_the_same(synth_lists: Path, monkeypatch) -> None:
    """The pending report and the targets' diagnoses (diagnosing every one of 3,000
    pods twice would take minutes): every Pending pod is in the report."""
    monkeypatch.setenv("GPUCTL_NOW", NOW)

    def documents() -> dict[str, Any]:
        snap = load_snapshot(synth_lists)
        out: dict[str, Any] = {"pending -A": pending_report(snap, None), "pending ml": pending_report(snap, "ml")}
        pending = sorted((p for p in snap.pods.values() if not p.spec.nodeName), key=lambda p: p.key)
        assert len(pending) > 20
        for p in pending[:: max(1, len(pending) // 15)] + [snap.pods["ml/bench-target"], snap.pods["ml/bench-target-mig"]]:
            out[f"pod {p.key}"] = diagnose_pod(snap, p.metadata.namespace or "default", p.metadata.name).to_dict()
        return out

    fast, plain = _run_both(documents, monkeypatch)
    assert fast["pending -A"][0]["pods"] > 20
    _same(fast, plain)


def _run_both(documents: Callable[[], dict[str, Any]], monkeypatch) -> tuple[dict[str, Any], dict[str, Any]]:
    monkeypatch.setattr(context, "FAST_PATHS", True)
    fast = documents()
    monkeypatch.setattr(context, "FAST_PATHS", False)
    plain = documents()
    monkeypatch.setattr(context, "FAST_PATHS", True)
    return fast, plain


def test_a_finding_copy_is_a_deep_copy() -> None:
    """node-fit's copy of its cached findings shares nothing mutable with them, and
    keeps lists shared within them shared, as deepcopy does."""
    from gpuctl.checks.pending import copy_findings
    from gpuctl.findings import Finding, Fix

    lines = ["a", "b"]
    fx = Fix("do it", ["kubectl get nodes"])
    found = [Finding("insufficient-gpu", "s", evidence=lines, nodes=["n1"], fixes=[fx]),
             Finding("untolerated-taint", "t", evidence=lines, fixes=[fx])]
    copied = copy_findings(found)
    assert copied == found
    assert copied[0] is not found[0] and copied[0].evidence is not lines and copied[0].fixes[0] is not fx
    assert copied[0].evidence is copied[1].evidence and copied[0].fixes[0] is copied[1].fixes[0]
    assert copied[0].fixes[0].commands is not fx.commands


def _matrices(snap) -> dict[str, Any]:
    """Every Pending pod's fit matrix (each row with its detail lines, as a NodeFit
    compares) and what ``used_by`` sums per node, with one memo for all, as the
    pending report shares it."""
    from gpuctl.checks.context import PodContext, used_by
    from gpuctl.checks.memo import Memo

    memo = Memo(share_across_owners=True)
    out: dict[str, Any] = {}
    for p in sorted(snap.pods.values(), key=lambda p: p.key):
        if p.spec.nodeName or p.status.phase != "Pending":
            continue
        ctx = PodContext(snap, p, memo)
        out[p.key] = [(f.name, f.reasons, f.details, f.free, f.candidate, f.enough_devices, f.gpu_node,
                       [t.key for t in f.taints], [(t.key, s.code) for t, s in f.state_taints],
                       f.to_dict(ctx.device_requests)) for f in ctx.fits]
    by_node = snap.pods_by_node()
    cache: dict = {}
    for resources in (("cpu", "memory", "nvidia.com/gpu"), ("nvidia.com/gpu",), ("memory", "ephemeral-storage")):
        for name in sorted(by_node):
            out[f"used {name} {resources}"] = used_by(by_node[name], resources, cache)
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario_fit_matrices_are_the_same(scenario: Path, monkeypatch) -> None:
    snapdir = snapshot_of(scenario)
    monkeypatch.setenv("GPUCTL_NOW", captured_at(snapdir) or NOW)
    fast, plain = _run_both(lambda: _matrices(load_snapshot(snapdir)), monkeypatch)
    assert list(fast) == list(plain)
    for key in fast:
        assert repr(fast[key]) == repr(plain[key]), f"{key}: the fast fit matrix differs from the straightforward one"


def test_synthetic_cluster_fit_matrices_are_the_same(synth_lists: Path, monkeypatch) -> None:
    """The generated cluster: pod classes that share placements, nodes full and empty,
    bound pods with init containers and shared containers lists."""
    monkeypatch.setenv("GPUCTL_NOW", NOW)
    fast, plain = _run_both(lambda: _matrices(load_snapshot(synth_lists)), monkeypatch)
    assert sum(1 for k in fast if not k.startswith("used ")) > 20
    assert list(fast) == list(plain)
    for key in fast:
        assert repr(fast[key]) == repr(plain[key]), f"{key}: the fast fit matrix differs from the straightforward one"


def test_a_lazy_value_is_computed_once_and_kept_like_cached_property() -> None:
    from gpuctl.checks.memo import lazy

    calls = []

    class C:
        @lazy
        def value(self) -> list:
            """doc"""
            calls.append(1)
            return [len(calls)]

    c = C()
    assert c.value is c.value and c.value == [1] and calls == [1]
    assert "value" in c.__dict__ and C.value.__doc__ == "doc"
    assert C().value == [2]


def test_device_plugin_pods_of_a_few_nodes_are_the_same_from_the_pods_per_node(synth_lists: Path) -> None:
    from gpuctl.checks.device_plugin import device_plugin_state

    snap = load_snapshot(synth_lists)
    nodes = sorted(snap.nodes.values(), key=lambda n: n.metadata.name)
    for few in (nodes[:3], nodes[::7], nodes):
        assert device_plugin_state(snap, few, snap.pods_by_node()) == device_plugin_state(snap, few)


@pytest.mark.parametrize("where", ["scenarios", "synthetic"])
def test_bound_pods_read_in_one_pass_give_what_each_node_reads(where: str, synth_lists: Path, monkeypatch) -> None:
    """context.warm_bound_pods (a report of many Pending pods reads the bound pods in one
    pass): the same pods per node as ``Snapshot.pods_by_node``, the same used amounts as
    ``used_by`` for every node and resource key, to the last bit, and the same placed
    anti-affinity groups; and the pending report with it is the plain one."""
    from gpuctl.checks.context import PodContext, used_by, warm_bound_pods
    from gpuctl.checks.memo import Memo
    from gpuctl.reports import pending as P

    paths = [snapshot_of(s) for s in SCENARIOS] if where == "scenarios" else [synth_lists]
    checked = 0
    for path in paths:
        monkeypatch.setenv("GPUCTL_NOW", captured_at(path) or NOW)
        snap = load_snapshot(path)
        pods = P.pending_gpu_pods(snap, None)
        if not pods:
            continue
        memo = Memo(share_across_owners=True)
        keys = [tuple(sorted(PodContext(snap, p, memo).requests)) for p in pods] + [("cpu", "memory", "pods")]
        warm_bound_pods(memo, snap, keys)
        plain = snap.pods_by_node()
        assert list(memo["pods_by_node"]) == list(plain), path
        assert all(memo["pods_by_node"][n] == plain[n] for n in plain), path
        for key in {k for k in keys if len(set(k)) == len(k)}:
            for node, bound in plain.items():
                assert memo[("used", node, key)] == used_by(bound, key), (path, node, key)
                checked += 1
        warm = PodContext(snap, pods[0], memo).interpod._placed_anti_groups
        fresh = PodContext(snap, pods[0], Memo(share_across_owners=True)).interpod._placed_anti_groups
        assert [(t, ns, d) for t, ns, d in warm] == [(t, ns, d) for t, ns, d in fresh], path
        monkeypatch.setattr(P, "FORK_MIN_PODS", 0)
        monkeypatch.setenv("GPUCTL_PROCESSES", "1")
        with_warm = pending_report(snap, None)
        monkeypatch.setattr(P, "FORK_MIN_PODS", 10 ** 9)
        without = pending_report(load_snapshot(path), None)
        assert json.dumps(with_warm, default=str) == json.dumps(without, default=str), path
    assert checked > (100 if where == "synthetic" else 20)
