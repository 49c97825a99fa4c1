"""`nodes capacity` and `diagnose pending` against hand-checked fixtures
(tests/capacity/*, tests/pending/*): every counting rule, offline and live through
the local API server, plus golden table output for the demo cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import GOLDEN, ROOT

CAPACITY = sorted((ROOT / "tests" / "capacity").glob("*/expected*.json")) if (ROOT / "tests" / "capacity").is_dir() else []
PENDING = sorted((ROOT / "tests" / "pending").glob("*/expected.json")) if (ROOT / "tests" / "pending").is_dir() else []
ROW_KEYS = ("capacity", "allocatable", "allocated", "free", "unhealthy", "schedulable", "ready", "replicas", "physical_gpus")


def _ids(paths):
    return [f"{p.parent.name}/{p.stem}" for p in paths]


def _check_capacity(doc: dict, exp: dict) -> None:
    rows = {(r["node"], r["resource"]): r for r in doc["rows"]}
    for want in exp.get("rows", []):
        got = rows.get((want["node"], want["resource"]))
        assert got is not None, f"no row for {want['node']} {want['resource']}: {sorted(rows)}"
        for k in ROW_KEYS:
            if k in want:
                assert got.get(k) == want[k], f"{want['node']} {want['resource']} {k}: {got.get(k)} != {want[k]}"
    for node in exp.get("absent_nodes", []):
        assert not any(r["node"] == node for r in doc["rows"]), f"{node} should have no rows"
    pools = {(p["pool"], p["resource"]): p for p in doc["pools"]}
    for want in exp.get("pools", []):
        got = pools.get((want["pool"], want["resource"]))
        assert got is not None, f"no pool {want['pool']} {want['resource']}: {sorted(pools)}"
        for k in ("nodes", "capacity", "allocatable", "allocated", "free"):
            if k in want:
                assert got[k] == want[k], f"pool {want['pool']} {k}: {got[k]} != {want[k]}"
        for k, v in (want.get("fragmentation") or {}).items():
            assert got["fragmentation"][k] == v, f"pool {want['pool']} fragmentation {k}: {got['fragmentation'][k]} != {v}"
    totals = {t["resource"]: t for t in doc["totals"]}
    for want in exp.get("totals", []):
        for k in ("capacity", "allocatable", "allocated", "free"):
            if k in want:
                assert totals[want["resource"]][k] == want[k], f"total {want['resource']} {k}"


@pytest.mark.parametrize("expected", CAPACITY, ids=_ids(CAPACITY))
def test_capacity_offline(cli, expected):
    exp = json.loads(expected.read_text())
    r = cli("nodes", "capacity", *exp.get("args", []), "--snapshot", str(expected.parent / "snapshot"), "-o", "json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["schema"] == "gpuctl/capacity/v1"
    _check_capacity(doc, exp)


@pytest.mark.parametrize("expected", CAPACITY, ids=_ids(CAPACITY))
def test_capacity_live_matches_offline(cli, serve, expected):
    exp = json.loads(expected.read_text())
    snapdir = expected.parent / "snapshot"
    srv, kc = serve(snapdir)
    live = cli("nodes", "capacity", *exp.get("args", []), "--kubeconfig", kc, "-o", "json")
    offline = cli("nodes", "capacity", *exp.get("args", []), "--snapshot", str(snapdir), "-o", "json")
    assert live.code == 0, live.err
    a, b = live.json(), offline.json()
    assert a["rows"] == b["rows"] and a["pools"] == b["pools"] and a["totals"] == b["totals"]
    assert {x.method for x in srv.requests} == {"GET"}
    assert not [x for x in srv.requests if x.status == 400]


@pytest.mark.parametrize("expected", PENDING, ids=_ids(PENDING))
def test_pending_groups(cli, serve, expected):
    exp = json.loads(expected.read_text())
    snapdir = expected.parent / "snapshot"
    offline = cli("diagnose", "pending", *exp["args"], "--snapshot", str(snapdir), "-o", "json")
    doc = offline.json()
    assert doc["schema"] == "gpuctl/pending/v1"
    got = [(g["code"], sorted(f"{p['namespace']}/{p['name']}" for p in g["pods"])) for g in doc["groups"]]
    want = [(g["code"], sorted(g["pods"])) for g in exp["groups"]]
    assert got == want
    srv, kc = serve(snapdir)
    live = cli("diagnose", "pending", *exp["args"], "--kubeconfig", kc, "-o", "json").json()
    assert [(g["code"], len(g["pods"])) for g in live["groups"]] == [(c, len(p)) for c, p in want]
    per_pod = [x for x in srv.requests if x.path.startswith("/api/v1/namespaces/") and "/pods/" in x.path]
    assert per_pod == [], "diagnose pending must not fetch pods one by one"


def test_demo_capacity_and_pending_golden(cli, update_golden):
    for name, args in (("demo-capacity", ["nodes", "capacity"]), ("demo-pending", ["diagnose", "pending", "-A"])):
        r = cli(*args, "--snapshot", str(ROOT / "examples" / "demo-cluster"), "--no-color")
        golden = GOLDEN / f"{name}.txt"
        if update_golden:
            golden.write_text(r.out)
        assert r.out == golden.read_text(), f"{name} changed; rerun with --update-golden if intended"


def test_capacity_formats(cli):
    snap = str(ROOT / "examples" / "demo-cluster")
    csv_out = cli("nodes", "capacity", "--snapshot", snap, "-o", "csv").out.splitlines()
    assert csv_out[0].startswith("node,pool,resource,sku,capacity") and len(csv_out) == 19
    md = cli("nodes", "capacity", "--snapshot", snap, "-o", "markdown").out
    assert md.startswith("## GPU capacity") and "| pool |" in md
    wide = cli("nodes", "capacity", "--snapshot", snap, "-o", "wide").out
    assert "TAINTS" in wide and "nvidia.com/gpu=present:NoSchedule" in wide and "nvidia.com/gpu.product=" in wide
    only = cli("nodes", "capacity", "--snapshot", snap, "-l", "gpu-type=h100", "-o", "json").json()
    assert {r["pool"] for r in only["rows"]} == {"h100"}
    bad = cli("nodes", "capacity", "--snapshot", snap, "-l", "gpu-type in (")
    assert bad.code == 2
    assert cli("diagnose", "pending", "-A", "--snapshot", snap, "-o", "csv").code == 2


# The report's shortcuts (gpuctl.reports.capacity.FAST_PATHS: the consolidation hint
# tried per distinct set of request sizes, Pending pods' node selectors decided once
# per pool, pod problems looked up by name) change nothing: the document is the same
# with them off, on every fixture, scenario and example snapshot, and on a generated
# cluster, with the default pool label and each other one.
SNAPSHOTS = sorted({p.parent / "snapshot" for p in CAPACITY}
                   | {s / "snapshot" for s in (ROOT / "tests" / "scenarios").iterdir() if (s / "snapshot").is_dir()}
                   | {ROOT / "examples" / "demo-cluster"})


def _capacity_both(snapdir: Path, monkeypatch) -> list[tuple[str, str, str]]:
    from gpuctl.collect.files import load_snapshot
    from gpuctl.errors import SourceError
    from gpuctl.reports import capacity

    out = []
    for label in (None, "gpu-type", "nvidia.com/gpu.product", "node.kubernetes.io/instance-type"):
        docs = []
        for fast in (True, False):
            monkeypatch.setattr(capacity, "FAST_PATHS", fast)
            snap = load_snapshot(snapdir)
            try:
                docs.append(json.dumps(capacity.capacity_report(snap, label), indent=2, default=str))
            except SourceError as e:
                docs.append(f"SourceError: {e}")
        out.append((str(label), docs[0], docs[1]))
    monkeypatch.setattr(capacity, "FAST_PATHS", True)
    return out


@pytest.mark.parametrize("snapdir", SNAPSHOTS, ids=[str(p.parent.name if p.name == "snapshot" else p.name) for p in SNAPSHOTS])
def test_capacity_shortcuts_change_nothing(snapdir: Path, monkeypatch):
    monkeypatch.setenv("GPUCTL_NOW", "2026-11-20T03:12:00Z")
    for label, fast, plain in _capacity_both(snapdir, monkeypatch):
        assert fast == plain, f"--pool-label {label}: the fast path differs from the straightforward one"


def test_capacity_shortcuts_change_nothing_on_a_generated_cluster(tmp_path: Path, monkeypatch):
    """The benchmark's generator (Pending pods in every pool, hints with several moves)."""
    import sys

    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.synth import generate
    finally:
        sys.path.remove(str(ROOT))
    c = generate(150, 4500)
    d = tmp_path / "lists"
    d.mkdir()
    for name, items in (("nodes.json", c.nodes), ("pods.json", c.pods), ("other.json", c.others)):
        (d / name).write_text('{"apiVersion": "v1", "kind": "List", "items": [\n' + ",\n".join(items) + "\n]}\n")
    monkeypatch.setenv("GPUCTL_NOW", "2026-11-20T03:12:00Z")
    results = _capacity_both(d, monkeypatch)
    assert any("consolidation_hint" in fast for _, fast, _ in results)
    for label, fast, plain in results:
        assert fast == plain, f"--pool-label {label}: the fast path differs from the straightforward one"


def test_capacity_shortcuts_change_nothing_with_unreadable_pods(tmp_path: Path, monkeypatch):
    """Pods whose GPU request cannot be read (looked up by name on the fast path): a
    bound one, and one of the same name in another namespace."""
    import copy
    import shutil

    d = tmp_path / "snap"
    shutil.copytree(ROOT / "tests" / "scenarios" / "untolerated-taint" / "snapshot", d)
    doc = json.loads((d / "cluster.json").read_text())
    pods = {i["metadata"]["name"]: i for i in doc["items"] if i["kind"] == "Pod"}
    bound = pods["pretrain-1a-gjf24"]
    twin = copy.deepcopy(bound)
    twin["metadata"]["namespace"] = "elsewhere"
    twin["metadata"].pop("uid", None)
    doc["items"].append(twin)
    for c in bound["spec"]["containers"][:1]:
        c["resources"]["requests"]["nvidia.com/gpu"] = c["resources"]["limits"]["nvidia.com/gpu"] = "abc"
    (d / "cluster.json").write_text(json.dumps(doc))
    monkeypatch.setenv("GPUCTL_NOW", "2026-11-20T03:12:00Z")
    results = _capacity_both(d, monkeypatch)
    assert '"unreadable"' in results[0][1]
    for label, fast, plain in results:
        assert fast == plain, f"--pool-label {label}: the fast path differs from the straightforward one"
