"""The fit matrix's shortcuts change nothing a person reads.

``gpuctl.checks.context.FAST_PATHS`` switches off every shortcut the pending report
and the pod diagnosis take over a large cluster (per-node facts and free amounts
shared by the pods of a memo, detail lines written when read, remembered quantities
and tolerations, inter-pod rules skipped when a pod has none, node-fit findings copied
without deepcopy). With it off each value is computed where it is used, as before.
Both ways must give the same documents, byte for byte: the pending report (-A and per
namespace), and the diagnosis of every pod, on every scenario under tests/scenarios
and on a generated cluster (benchmarks.synth)."""

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
