"""Every scenario under tests/scenarios/ (a realistic cluster with real wording),
diagnosed three ways: from the snapshot, live through the real kubernetes client
against the local API server, and as the table a person reads (golden text)."""

from __future__ import annotations

import pytest

from conftest import GOLDEN, argv_of, probe_args, expected_of, scenario_dirs, snapshot_of

SCENARIOS = scenario_dirs()
IDS = [p.name for p in SCENARIOS]


def _top_text(doc: dict) -> str:
    top = doc["findings"][0]
    return " ".join([top["summary"], *top["evidence"]])


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_offline_diagnosis(cli, scenario):
    exp = expected_of(scenario)
    r = cli(*argv_of(exp), "--snapshot", str(snapshot_of(scenario)), "-o", "json")
    assert r.err == "", r.err
    doc = r.json()
    assert doc["schema"] == "gpuctl/diagnosis/v1"
    codes = [f["code"] for f in doc["findings"]]
    assert r.code == exp["exit_code"], (codes, doc["verdict"])
    assert doc["verdict"] == exp["verdict"], codes
    if exp["top_code"] is None:
        assert not [f for f in doc["findings"] if f["severity"] != "info"], codes
    else:
        assert codes and codes[0] == exp["top_code"], codes
        text = _top_text(doc)
        for needle in exp.get("evidence", []):
            assert needle in text, f"{needle!r} not in top finding: {text}"
        for node in exp.get("nodes", []):
            assert node in doc["findings"][0]["nodes"], doc["findings"][0]["nodes"]
        commands = " ".join(c for fx in doc["findings"][0]["fixes"] for c in fx["commands"])
        for needle in exp.get("fix_commands", []):
            assert needle in commands, f"{needle!r} not in fixes: {commands}"
    for code in exp.get("codes", []):
        assert code in codes, f"{code} missing from {codes}"
    for f in doc["findings"]:
        assert f["runbook"] == f"gpuctl runbook {f['code']}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_live_matches_snapshot(cli, serve, scenario):
    """Same scenario, same diagnosis, live and offline; the server saw only GETs
    and no request it had to reject (e.g. an unsupported field selector)."""
    exp = expected_of(scenario)
    snapdir = snapshot_of(scenario)
    srv, kubeconfig = serve(snapdir)
    live = cli(*argv_of(exp), "--kubeconfig", kubeconfig, *probe_args(snapdir), "-o", "json")
    offline = cli(*argv_of(exp), "--snapshot", str(snapdir), "-o", "json")
    assert live.err == "", live.err
    assert live.code == offline.code
    a, b = live.json(), offline.json()
    assert a["verdict"] == b["verdict"]
    assert [f["code"] for f in a["findings"]] == [f["code"] for f in b["findings"]]
    assert a["findings"] == b["findings"]
    assert a["nodes"] == b["nodes"]
    methods = {r.method for r in srv.requests}
    assert methods == {"GET"}, methods
    # A 400 for a restarted container's previous log is the kubelet's normal answer when
    # that log is gone; anything else rejected means gpuctl sent what a real server refuses.
    rejected = [(r.path, r.query, r.status) for r in srv.requests if r.status in (400, 422)
                and not (r.path.endswith("/log") and r.query.get("previous") == ["true"])]
    assert not rejected, rejected


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_table_golden(cli, scenario, update_golden):
    exp = expected_of(scenario)
    r = cli(*argv_of(exp), "--snapshot", str(snapshot_of(scenario)), "--no-color")
    assert "\x1b" not in r.out
    golden = GOLDEN / f"{scenario.name}.txt"
    if update_golden:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(r.out)
    assert golden.exists(), f"no golden file {golden}; run pytest --update-golden"
    assert r.out == golden.read_text(), f"table output changed; rerun with --update-golden if intended ({golden})"


def test_every_scheduling_and_runtime_code_has_a_scenario():
    from gpuctl.findings import CODES

    covered = set()
    for s in SCENARIOS:
        exp = expected_of(s)
        covered |= {exp["top_code"], *exp.get("codes", [])}
    wanted = {c for c, info in CODES.items() if info.section in ("scheduling", "runtime")}
    assert wanted - covered == set()
