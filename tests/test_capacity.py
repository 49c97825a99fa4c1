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
