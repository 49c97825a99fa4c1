"""deploy/rbac.yaml is enough: every scenario, diagnosed live under exactly the
gpuctl-reader ClusterRole (enforced by the local API server), gets no 403 and the
same diagnosis as offline; under a namespace-only role it degrades honestly."""

from __future__ import annotations

import pytest
import yaml

from conftest import ROOT, SCENARIOS, argv_of, probe_args, expected_of, scenario_dirs, snapshot_of, target_of


def _role(name: str) -> list[dict]:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()) if d]
    return next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name)["rules"]


def test_reader_role_is_read_only():
    for rule in _role("gpuctl-reader"):
        assert set(rule["verbs"]) <= {"get", "list"}, rule
        assert "secrets" not in rule["resources"]


@pytest.mark.parametrize("scenario", scenario_dirs(), ids=[p.name for p in scenario_dirs()])
def test_reader_role_is_enough(cli, serve, scenario):
    exp = expected_of(scenario)
    srv, kc = serve(snapshot_of(scenario))
    srv.allow_only(_role("gpuctl-reader"))
    live = cli(*argv_of(exp), "--kubeconfig", kc, *probe_args(snapshot_of(scenario)), "-o", "json")
    offline = cli(*argv_of(exp), "--snapshot", str(snapshot_of(scenario)), "-o", "json")
    assert [r.path for r in srv.requests if r.status == 403] == []
    assert live.json()["findings"] == offline.json()["findings"]


def test_namespace_only_role_degrades_and_names_the_missing_permission(cli, serve):
    scenario = SCENARIOS / "untolerated-taint"
    ns, target = target_of(expected_of(scenario))
    srv, kc = serve(snapshot_of(scenario))
    srv.allow_only([{"apiGroups": [""], "resources": ["pods", "pods/log", "events", "resourcequotas",
                                                      "persistentvolumeclaims"],
                     "verbs": ["get", "list"], "namespaces": [ns]}])
    r = cli("diagnose", "pod", target, "-n", ns, "--kubeconfig", kc, "-o", "json")
    d = r.json()
    assert r.code == 1 and d["verdict"] == "inconclusive"
    details = " ".join(c["detail"] for c in d["checks"] if c["status"] == "skipped")
    assert "'list' on 'nodes'" in details and "cluster-wide" in details
    assert d["findings"][0]["code"] == "untolerated-taint"
