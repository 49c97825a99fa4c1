"""Issue 11: never the wrong cluster, never an unbounded or crashing request path.

Everything here goes through the real kubernetes client over real HTTP against the
local API server (gpuctl.apiserver), with real kubeconfig files; nothing of the
client is patched. Each test failed before the change it guards."""

from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import ROOT, SCENARIOS, snapshot_of
from support.kubeapi import Fault, SnapshotAPIServer
from gpuctl.collect.files import iter_raw_objects

DEMO = ROOT / "examples" / "demo-cluster"
TAINT = SCENARIOS / "untolerated-taint"


def _patches(srv):
    return [r for r in srv.requests if r.method == "PATCH"]


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ----------------------------------------------------------------- 1. which cluster


def _two_clusters(tmp_path, monkeypatch):
    """Server `good` reached through --kubeconfig A:B; server `other` through $KUBECONFIG."""
    objs = list(iter_raw_objects(DEMO))
    good, other = SnapshotAPIServer(objs).start(), SnapshotAPIServer(list(iter_raw_objects(DEMO))).start()
    a = good.write_kubeconfig(str(tmp_path / "a.json"), context="good")
    b = other.write_kubeconfig(str(tmp_path / "b.json"), context="other")          # also sets a current-context
    env = other.write_kubeconfig(str(tmp_path / "env.json"), context="env")
    monkeypatch.setenv("KUBECONFIG", str(env))
    return good, other, str(a), str(b)


def test_kubeconfig_path_list_is_merged_never_replaced_by_the_environment(cli, tmp_path, monkeypatch):
    good, other, a, b = _two_clusters(tmp_path, monkeypatch)
    try:
        r = cli("label-nodes", "--kubeconfig", f"{a}{os.pathsep}{b}", "--apply", "-o", "json")
        assert r.code == 0, r.err
        assert r.json()["applied"] is True and _patches(good)
        assert other.requests == []                          # neither $KUBECONFIG's cluster nor B's context
        # the merged file's contexts are all reachable: B's context by name
        other.reset_requests()
        r = cli("nodes", "capacity", "--kubeconfig", f"{a}{os.pathsep}{b}", "--context", "other", "-o", "json")
        assert r.code == 0 and other.requests and all(q.method == "GET" for q in other.requests)
        # kubectl's rule: the first file that sets current-context wins
        good.reset_requests()
        other.reset_requests()
        assert cli("nodes", "capacity", "--kubeconfig", f"{b}{os.pathsep}{a}", "-o", "json").code == 0
        assert other.requests and not good.requests
    finally:
        good.stop()
        other.stop()


def test_kubeconfig_list_with_a_missing_file_reaches_no_cluster(cli, tmp_path, monkeypatch):
    good, other, a, _ = _two_clusters(tmp_path, monkeypatch)
    try:
        missing = str(tmp_path / "nope.yaml")
        r = cli("label-nodes", "--kubeconfig", f"{a}{os.pathsep}{missing}", "--apply")
        assert r.code == 4 and "nope.yaml" in _one_line(r.err)
        assert good.requests == [] and other.requests == []
    finally:
        good.stop()
        other.stop()


@pytest.mark.parametrize("text, words", [
    ("clusters: [\n  - name: x\n   bad indent", "not valid YAML (line"),
    ("- just\n- a list\n", "must be a map"),
    ("clusters: 7\n", "'clusters' must be a list"),
    ("contexts:\n- name: c\n  context: [1, 2]\ncurrent-context: c\n", "'context' must be a map"),
    ("contexts:\n- context: {cluster: x}\n", "contexts[0] must be a map with a 'name'"),
    ("current-context: [a]\n", "'current-context' must be a string"),
    ("clusters: []\ncontexts: []\nusers: []\n", "has no current-context"),
    ("contexts:\n- name: c\n  context: {cluster: x, user: y}\ncurrent-context: c\n", "could not be used"),
])
def test_broken_kubeconfig_is_one_line_naming_the_file(cli, tmp_path, text, words):
    path = tmp_path / "broken-kubeconfig"
    path.write_text(text)
    r = cli("diagnose", "node", "gpu-a-1", "--kubeconfig", str(path))
    assert r.code == 4, r.err
    line = _one_line(r.err)
    assert words in line and "broken-kubeconfig" in line


def _exec_config(srv, tmp_path, command, args=(), **extra):
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": srv.url}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                  "command": command, "args": list(args), "interactiveMode": "Never",
                                                  **extra}}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / "exec-kubeconfig"
    path.write_text(json.dumps(cfg))
    return str(path)


def _plugin(tmp_path, body):
    p = tmp_path / "plugin.py"
    p.write_text(body)
    return str(p)


def test_exec_plugin_that_hangs_is_bounded_by_the_request_timeout(cli, tmp_path):
    with SnapshotAPIServer(list(iter_raw_objects(DEMO))) as srv:
        kc = _exec_config(srv, tmp_path, sys.executable, [_plugin(tmp_path, "import time\ntime.sleep(60)\n")])
        r = cli("nodes", "capacity", "--kubeconfig", kc, "--request-timeout", "1")
        assert r.code == 4
        assert "did not answer within 1s" in _one_line(r.err)
        assert srv.requests == []


def test_exec_plugin_that_fails_is_reported_in_its_own_words(cli, tmp_path):
    with SnapshotAPIServer(list(iter_raw_objects(DEMO))) as srv:
        body = "import sys\nsys.stderr.write('error: SSO session expired; run aws sso login\\n')\nsys.exit(3)\n"
        kc = _exec_config(srv, tmp_path, sys.executable, [_plugin(tmp_path, body)])
        line = _one_line(cli("nodes", "capacity", "--kubeconfig", kc).err)
        assert "failed (exit 3)" in line and "SSO session expired" in line and "refused the credentials" not in line
        assert srv.requests == []


def test_exec_plugin_missing_says_so_with_its_install_hint(cli, tmp_path):
    with SnapshotAPIServer(list(iter_raw_objects(DEMO))) as srv:
        kc = _exec_config(srv, tmp_path, "gke-gcloud-auth-plugin-not-installed",
                          installHint="Install gke-gcloud-auth-plugin for use with kubectl")
        r = cli("nodes", "capacity", "--kubeconfig", kc)
        line = _one_line(r.err)
        assert r.code == 4 and "was not found" in line and "Install gke-gcloud-auth-plugin" in line


def test_exec_plugin_garbage_output_is_named(cli, tmp_path):
    with SnapshotAPIServer(list(iter_raw_objects(DEMO))) as srv:
        kc = _exec_config(srv, tmp_path, sys.executable, [_plugin(tmp_path, "print('hello')\n")])
        r = cli("nodes", "capacity", "--kubeconfig", kc)
        assert r.code == 4 and "did not print an ExecCredential" in _one_line(r.err)


def test_socks_proxy_without_pysocks_names_the_package(cli, tmp_path):
    import importlib.util

    with SnapshotAPIServer(list(iter_raw_objects(DEMO))) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        cfg = json.loads(open(kc).read())
        cfg["clusters"][0]["cluster"]["proxy-url"] = "socks5://127.0.0.1:1"
        open(kc, "w").write(json.dumps(cfg))
        r = cli("nodes", "capacity", "--kubeconfig", kc, "--request-timeout", "2")
        assert r.code == 4
        line = _one_line(r.err)
        if importlib.util.find_spec("socks") is None:
            assert "PySocks" in line and "gpuctl[socks]" in line
        else:   # with PySocks installed the proxy is used, and port 1 refuses
            assert "cannot reach the API server" in line


# ------------------------------------------------------------ 2. dry runs and writes


def test_dry_run_client_sends_nothing_even_with_apply(cli, serve):
    srv, kc = serve(DEMO)
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "--dry-run", "client", "-o", "json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["applied"] is False and doc["dryRun"] == "client"
    assert any(n["set"] for n in doc["nodes"])
    assert _patches(srv) == [] and all(q.method == "GET" for q in srv.requests)


def _plan(cli, kc):
    return sorted(n["node"] for n in cli("label-nodes", "--kubeconfig", kc, "-o", "json").json()["nodes"] if n["set"])


@pytest.mark.parametrize("fmt", ["json", "yaml", "table"])
def test_a_patch_that_times_out_stops_the_run_and_every_node_has_an_outcome(cli, serve, fmt):
    srv, kc = serve(DEMO)
    nodes = _plan(cli, kc)
    assert len(nodes) >= 3
    srv.add_fault(Fault(path_regex=f"/api/v1/nodes/{nodes[1]}$", method="PATCH", kind="slow", delay=3.0, times=None))
    srv.reset_requests()
    r = cli("label-nodes", *nodes, "--kubeconfig", kc, "--apply", "--overwrite", "--request-timeout", "1", "-o", fmt)
    assert r.code == 4, r.err
    line = _one_line(r.err)
    assert nodes[1] in line and "may or may not have applied" in line
    assert len(_patches(srv)) <= 2                         # stopped: no pressing on a server that does not answer
    if fmt == "json":
        results = {n["node"]: n["result"] for n in r.json()["nodes"]}
        assert results[nodes[0]] in ("patched", "unchanged")
        assert results[nodes[1]].startswith("failed: timeout")
        assert all(results[n].startswith("not tried") for n in nodes[2:])
        assert len(r.json()["errors"]) == len(nodes) - 1
    elif fmt == "yaml":
        assert "not tried" in r.out and "failed: timeout" in r.out
    else:
        assert "not tried" in r.out and "failed: timeout" in r.out and nodes[-1] in r.out


def test_a_409_whose_reread_fails_is_reported_and_the_others_go_on(cli, serve):
    srv, kc = serve(DEMO)
    nodes = _plan(cli, kc)
    victim = nodes[0]
    srv.add_fault(Fault(path_regex=f"/api/v1/nodes/{victim}$", method="PATCH", status=409, times=None))
    srv.add_fault(Fault(path_regex=f"/api/v1/nodes/{victim}$", method="GET", status=500, times=None))
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 1
    assert "1 of" in _one_line(r.err) and victim in r.err
    results = {n["node"]: n.get("result", "") for n in r.json()["nodes"]}
    assert results[victim].startswith("failed: conflict (409), and re-reading the node failed: error")
    assert all(results[n] == "patched" for n in nodes[1:])


def test_forbidden_patch_still_prints_every_node_and_names_the_rule(cli, serve):
    srv, kc = serve(DEMO)
    nodes = _plan(cli, kc)
    srv.forbid("nodes", "patch")
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 4 and "gpuctl-label-nodes" in _one_line(r.err)
    results = {n["node"]: n.get("result", "") for n in r.json()["nodes"]}
    assert results[nodes[0]].startswith("failed: forbidden")
    assert all(results[n].startswith("not tried") for n in nodes[1:])
    assert len(_patches(srv)) == 1


def test_persistent_server_errors_stop_after_a_few_nodes(cli, serve):
    srv, kc = serve(DEMO)
    nodes = _plan(cli, kc)
    assert len(nodes) > 3
    srv.add_fault(Fault(path_regex="/api/v1/nodes/", method="PATCH", status=500, times=None))
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 4 and "in a row" in _one_line(r.err)
    results = [n.get("result", "") for n in r.json()["nodes"] if n["set"]]
    assert sum(x.startswith("failed") for x in results) == 3
    assert all(x.startswith("not tried") for x in results[3:])


# ----------------------------------------------------------------- 7. names as paths


@pytest.mark.parametrize("argv", [
    ("diagnose", "node", "../../../api/v1/secrets"),
    ("diagnose", "node", "gpu%2F..%2Fx"),
    ("diagnose", "pod", "x", "-n", "../../api/v1/secrets"),
    ("diagnose", "pod", "../secrets/x", "-n", "default"),
    ("diagnose", "pod", "job/../../secrets", "-n", "default"),
    ("diagnose", "pending", "-n", "kube-system/../x"),
    ("label-nodes", "ok-node", "../../api/v1/secrets"),
    ("label-nodes", "--probes-from-pods", "../../secrets/app=x"),
    ("snapshot", "save", "{out}", "-n", "A_B"),
])
def test_names_are_validated_before_they_become_paths(cli, serve, tmp_path, argv):
    srv, kc = serve(DEMO)
    argv = [a.replace("{out}", str(tmp_path / "out.tar.gz")) for a in argv]
    r = cli(*argv, "--kubeconfig", kc)
    assert r.code == 2, r.err
    assert "not a valid Kubernetes name" in _one_line(r.err)
    assert srv.requests == []
    assert not (tmp_path / "out.tar.gz").exists()


# --------------------------------------------------------- 8. lists that never end


@pytest.mark.parametrize("kind", ["endless", "loop"])
def test_a_list_that_repeats_itself_fails_on_its_second_page(cli, serve, kind):
    srv, kc = serve(DEMO)
    srv.add_fault(Fault(path_regex="^/api/v1/nodes$", kind=kind, times=None))
    r = cli("nodes", "capacity", "--kubeconfig", kc, "-o", "json")
    assert r.code == 4
    assert "did not end" in _one_line(r.err)
    assert len([q for q in srv.requests if q.path == "/api/v1/nodes"]) == 2


def test_a_list_of_new_objects_forever_stops_at_the_item_cap(cli, serve, monkeypatch):
    import gpuctl.collect.kube as kube

    monkeypatch.setattr(kube, "MAX_LIST_ITEMS", 200)    # gpuctl's own cap (500,000 by default), made small
    srv, kc = serve(DEMO)
    srv.add_fault(Fault(path_regex="^/api/v1/nodes$", kind="flood", times=None))
    r = cli("nodes", "capacity", "--kubeconfig", kc, "-o", "json")
    assert r.code == 4 and "more than 200 items" in _one_line(r.err)
    nodes = len([o for o in srv.objects if o["kind"] == "Node"])
    assert len([q for q in srv.requests if q.path == "/api/v1/nodes"]) <= 200 // nodes + 2


def test_snapshot_save_of_a_list_that_never_ends_records_the_gap(cli, serve, tmp_path):
    srv, kc = serve(snapshot_of(TAINT))
    srv.add_fault(Fault(path_regex="^/api/v1/events$", kind="loop", times=None))
    out = tmp_path / "b.tar.gz"
    r = cli("snapshot", "save", str(out), "--kubeconfig", kc)
    assert r.code == 0 and out.exists(), r.err
    assert "events: error" in r.err and "did not end" in r.err
    assert len([q for q in srv.requests if q.path == "/api/v1/events"]) == 2


# --------------------------------------------------------------- 9. Retry-After


@pytest.mark.parametrize("value", ["-1", "garbage", "inf", "-inf", "nan", "1e308", "Wed, 21 Oct 2015 07:28:00 GMT", ""])
def test_any_retry_after_is_clamped_never_a_crash(cli, serve, value):
    ns, name = json.loads((TAINT / "expected.json").read_text())["pod"].split("/", 1)
    srv, kc = serve(snapshot_of(TAINT))
    srv.add_fault(Fault(path_regex="^/api/v1/nodes$", status=429, times=2, headers={"Retry-After": value}))
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json")
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert r.json()["findings"][0]["code"] == "untolerated-taint"
    assert len([q for q in srv.requests if q.path == "/api/v1/nodes"]) == 3


def test_retry_after_parsing_clamps():
    from gpuctl.collect.kube import MAX_RETRY_AFTER, _retry_after

    class E:
        def __init__(self, v):
            self.headers = {"Retry-After": v}

    assert _retry_after(E("2")) == 2.0
    assert _retry_after(E("-1")) == 0.0 and _retry_after(E("nan")) == 0.0
    assert _retry_after(E("1e308")) == MAX_RETRY_AFTER and _retry_after(E("inf")) == MAX_RETRY_AFTER
    assert _retry_after(E("Wed, 21 Oct 2015 07:28:00 GMT")) == 0.0       # a date in the past
    assert _retry_after(E("soon")) is None and _retry_after(E("")) is None


# ------------------------------------------------------------ 11. options and TLS


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e9", "abc", "2h", "1m30"])
def test_bad_request_timeouts_are_usage_errors(cli, value):
    r = cli("diagnose", "node", "x", "--snapshot", str(DEMO), "--request-timeout", value)
    assert r.code == 2 and "Traceback" not in r.err and "--request-timeout" in r.err


@pytest.mark.parametrize("value, seconds", [("15", 15.0), ("2.5", 2.5), ("30s", 30.0), ("1m", 60.0),
                                            ("1m30s", 90.0), ("500ms", 0.5)])
def test_request_timeouts_accept_kubectl_durations(value, seconds):
    from gpuctl.cli.common import parse_request_timeout

    assert parse_request_timeout(value) == seconds


@pytest.mark.parametrize("flag, value", [("--as", "admin\r\nX-Evil: 1"), ("--as", "bob\x1b[31m"), ("--as", ""),
                                         ("--token", "abc def"), ("--token", "abc\n")])
def test_header_values_with_control_characters_are_usage_errors(cli, serve, flag, value):
    srv, kc = serve(DEMO)
    r = cli("nodes", "capacity", "--kubeconfig", kc, flag, value)
    assert r.code == 2 and "Traceback" not in r.err and flag in r.err
    assert srv.requests == []


def _tls_server(tmp_path):
    """The local API server behind TLS with a self-signed certificate (openssl CLI)."""
    from conftest import self_signed_tls

    return SnapshotAPIServer(list(iter_raw_objects(DEMO)), tls=self_signed_tls(tmp_path)).start()


def test_tls_verification_failure_keeps_the_reason_and_points_at_the_ca(cli, tmp_path):
    srv = _tls_server(tmp_path)
    try:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        cfg = json.loads(open(kc).read())
        assert cfg["clusters"][0]["cluster"]["server"].startswith("https://")
        r = cli("nodes", "capacity", "--kubeconfig", kc)
        line = _one_line(r.err)
        assert r.code == 4
        assert "certificate verify failed" in line and "self-signed certificate" in line
        assert "certificate-authority" in line and "VPN" not in line

        # the right CA, named relative to the kubeconfig's own directory (kubectl resolves it there)
        sub = tmp_path / "conf"
        sub.mkdir()
        cfg["clusters"][0]["cluster"]["certificate-authority"] = "../cert.pem"
        (sub / "kc").write_text(json.dumps(cfg))
        r = cli("nodes", "capacity", "--kubeconfig", str(sub / "kc"), "-o", "json")
        assert r.code == 0 and r.err == "", r.err
        del cfg["clusters"][0]["cluster"]["certificate-authority"]

        cfg["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
        open(kc, "w").write(json.dumps(cfg))
        r = cli("nodes", "capacity", "--kubeconfig", kc, "-o", "json")
        assert r.code == 0, r.err
        warnings = [ln for ln in r.err.splitlines() if "warning" in ln.lower()]
        assert len(warnings) == 1 and "TLS verification is off" in warnings[0]
        assert json.loads(r.out)["schema"] == "gpuctl/capacity/v1"
    finally:
        srv.stop()
