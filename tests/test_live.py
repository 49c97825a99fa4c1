"""The live path end to end: real kubeconfig, real kubernetes client, real HTTP
against the local API server, with RBAC denials and faults injected."""

from __future__ import annotations

import json
import socket

from conftest import SCENARIOS, snapshot_of
from support.kubeapi import Fault, SnapshotAPIServer

TAINT = SCENARIOS / "untolerated-taint"


def _pod(scenario=TAINT):
    return json.loads((scenario / "expected.json").read_text())["pod"].split("/", 1)


def test_forbidden_nodes_degrade_to_inconclusive_with_the_rbac_rule(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    srv.forbid("nodes", "list")
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json")
    assert r.code == 1, r.err
    d = r.json()
    assert d["verdict"] == "inconclusive"
    skipped = [c for c in d["checks"] if c["status"] == "skipped"]
    assert any("'list' on 'nodes'" in c["detail"] for c in skipped), skipped
    assert d["findings"] and d["findings"][0]["code"] == "untolerated-taint"   # what the events alone support
    assert "could not be read" in d["findings"][0]["summary"]


def test_forbidden_device_plugin_listing_is_a_skipped_check(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    srv.forbid("pods", "list")   # cluster-wide pod lists; the pod GET still works
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json")
    d = r.json()
    assert d["verdict"] == "inconclusive"
    assert any(c["status"] == "skipped" and "pods" in c["detail"] for c in d["checks"])


def test_unknown_pod_live_names_its_namespace(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    r = cli("diagnose", "pod", name, "-n", "nowhere", "--kubeconfig", kc)
    assert r.code == 3 and f"try -n {ns}" in r.err


def test_wrong_token_exits_4(cli, serve, tmp_path):
    ns, name = _pod()
    srv, _ = serve(snapshot_of(TAINT))
    kc = srv.write_kubeconfig(str(tmp_path / "bad"), context="incident", user_token="wrong")
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc)
    assert r.code == 4 and "401" in r.err and r.err.count("\n") == 1


def test_unknown_context_exits_4_listing_contexts(cli, serve):
    srv, kc = serve(snapshot_of(TAINT))
    r = cli("diagnose", "pod", "x", "--kubeconfig", kc, "--context", "prod")
    assert r.code == 4 and "incident" in r.err


def test_unreachable_cluster_exits_4(cli, serve, tmp_path):
    srv, kc = serve(snapshot_of(TAINT))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    text = open(kc).read().replace(srv.url, f"http://127.0.0.1:{port}")
    (tmp_path / "dead").write_text(text)
    r = cli("diagnose", "pod", "x", "--kubeconfig", str(tmp_path / "dead"), "--request-timeout", "2")
    assert r.code == 4 and "cannot reach the API server" in r.err


def test_throttling_is_retried_and_bounded(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    srv.add_fault(Fault(path_regex="/events", status=429, times=1, headers={"Retry-After": "0"}))
    srv.add_fault(Fault(path_regex="/api/v1/nodes", status=503, times=1))
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json")
    assert r.json()["findings"][0]["code"] == "untolerated-taint"
    assert len(srv.requests) < 40


def test_persistent_5xx_becomes_a_gap_not_a_crash(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    srv.add_fault(Fault(path_regex="/api/v1/nodes", status=500, times=None))
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json")
    d = r.json()
    assert d["verdict"] == "inconclusive"
    node_calls = [x for x in srv.requests if x.path.startswith("/api/v1/nodes")]
    assert len(node_calls) == 3   # bounded retries


def test_an_answer_that_never_ends_is_cut_at_the_request_timeout(cli, serve):
    """A body sent a byte at a time keeps every socket read inside the read timeout;
    --request-timeout bounds the whole request (as kubectl's does), so the nodes read
    fails after 3 bounded attempts and the diagnosis still prints, inconclusive."""
    import time

    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    srv.add_fault(Fault(path_regex="^/api/v1/nodes$", kind="trickle", times=None, interval=0.2))
    t0 = time.monotonic()
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "--request-timeout", "1", "-o", "json")
    took = time.monotonic() - t0
    d = r.json()
    assert d["verdict"] == "inconclusive"
    assert any("did not complete within 1s" in c["detail"] for c in d["checks"] if c["status"] == "skipped")
    assert len([x for x in srv.requests if x.path == "/api/v1/nodes"]) == 3
    assert took < 3 * 1 + 5


def test_paged_lists_restart_cleanly_after_410(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT), page_size_cap=1)
    srv.add_fault(Fault(path_regex="continue=", kind="gone", times=1))
    live = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json").json()
    offline = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(snapshot_of(TAINT)), "-o", "json").json()
    assert live["nodes"] == offline["nodes"] and live["findings"] == offline["findings"]
    assert any(r.status == 410 for r in srv.requests)
    assert any("continue" in r.query for r in srv.requests)


def test_requests_ask_for_gzip_and_only_what_is_needed(cli, serve):
    ns, name = _pod()
    srv, kc = serve(snapshot_of(TAINT))
    cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json")
    assert all("gzip" in (r.headers.get("accept-encoding") or r.headers.get("Accept-Encoding") or "") for r in srv.requests)
    paths = {r.path for r in srv.requests}
    assert not any("/secrets" in p or "/configmaps" in p for p in paths)
    ev = [r for r in srv.requests if r.path.endswith("/events")]
    assert ev and all("involvedObject.name" in r.query["fieldSelector"][0] for r in ev)


def _exec_kubeconfig(srv, tmp_path) -> str:
    """A kubeconfig whose user runs an exec credential plugin (as EKS/GKE use)."""
    plugin = tmp_path / "get-token.py"
    plugin.write_text('import json\nprint(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", '
                      '"kind": "ExecCredential", "status": {"token": "test-token"}}))\n')
    import sys

    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "c", "cluster": {"server": srv.url}}],
        "users": [{"name": "exec-user", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                         "command": sys.executable, "args": [str(plugin)],
                                                         "interactiveMode": "Never"}}},
                  {"name": "nobody", "user": {"token": "wrong"}}],
        "contexts": [{"name": "incident", "context": {"cluster": "c", "user": "exec-user"}},
                     {"name": "other", "context": {"cluster": "c", "user": "nobody"}}],
    }
    path = tmp_path / "exec-kubeconfig"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_exec_credential_plugin_kubeconfig_env_and_context(cli, serve, tmp_path, monkeypatch):
    ns, name = _pod()
    srv, _ = serve(snapshot_of(TAINT))
    monkeypatch.setenv("KUBECONFIG", _exec_kubeconfig(srv, tmp_path))
    ok = cli("diagnose", "pod", name, "-n", ns, "--context", "incident", "-o", "json")
    assert ok.code == 1 and ok.json()["findings"][0]["code"] == "untolerated-taint", ok.err
    denied = cli("diagnose", "pod", name, "-n", ns)          # the current context's user is refused
    assert denied.code == 4 and "401" in denied.err
    auth = {r.headers.get("authorization") or r.headers.get("Authorization") for r in srv.requests if r.status == 200}
    assert auth == {"Bearer test-token"}


def test_namespace_defaults_to_the_contexts(cli, serve, tmp_path):
    ns, name = _pod()
    srv, _ = serve(snapshot_of(TAINT))
    kc = srv.write_kubeconfig(str(tmp_path / "kc-ns"), context="incident", namespace=ns)
    r = cli("diagnose", "pod", name, "--kubeconfig", kc, "-o", "json")
    assert r.json()["target"]["namespace"] == ns


NODE_XID = SCENARIOS / "node-xid-79"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dcgm_exporter_unreachable_is_a_skipped_read_not_a_failure(cli, serve):
    srv, kc = serve(snapshot_of(NODE_XID))
    r = cli("diagnose", "node", "gpu-a100-5", "--kubeconfig", kc, "--dcgm-url", f"http://127.0.0.1:{_closed_port()}/metrics",
            "--request-timeout", "2", "-o", "json")
    d = r.json()
    assert r.code == 1 and d["findings"][0]["code"] == "xid-error"      # the device-plugin log still shows Xid 79
    skipped = [c for c in d["checks"] if c["status"] == "skipped" and "DCGM" in c["detail"]]
    assert skipped and "unreachable" in skipped[0]["detail"]


def test_dcgm_exporter_garbage_through_the_proxy_is_a_skipped_read(cli, tmp_path):
    from gpuctl.collect.files import iter_raw_objects, raw_logs

    snapdir = snapshot_of(NODE_XID)
    garbage = {"gpu-a100-5": "\x00\x01 not prometheus {{{"}
    with SnapshotAPIServer(list(iter_raw_objects(snapdir)), logs=raw_logs(snapdir), metrics=garbage) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        r = cli("diagnose", "node", "gpu-a100-5", "--kubeconfig", kc, "-o", "json")
    d = r.json()
    assert d["findings"][0]["code"] == "xid-error"
    assert any(c["status"] == "skipped" and "DCGM" in c["detail"] for c in d["checks"]), d["checks"]
