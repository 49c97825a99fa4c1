"""`gpuctl diagnose ... --server URL` (docs/serve.md): the CLI asks a running `gpuctl
serve` instead of the API server and shows its answer exactly as it would show its
own; what the server cannot answer is one line and the contract's exit code. Real
parts: the local API server, `gpuctl serve`'s HTTP server on a free port, the CLI."""

from __future__ import annotations

import http.server
import json
import socket
import threading

import pytest

from gpuctl.collect.files import load_snapshot, resolve_snapshot
from gpuctl.collect.kube import KubeAPI
from gpuctl.findings import Diagnosis
from gpuctl.reports.pending import narrow_pending, pending_exit_code, pending_report
from gpuctl.serve.server import Service, http_server
from gpuctl.serve.state import pod_document


def _as_printed(doc):
    from gpuctl.render.data import clean_data, with_camel_keys

    return json.loads(json.dumps(clean_data(with_camel_keys(doc))))


@pytest.fixture
def served(serve):
    """(service, its URL, the kubeconfig of the API server it watches), first pass done."""
    _, kubeconfig = serve(resolve_snapshot("demo"))
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=5.0, watch_seconds=5)
    httpd = http_server(svc, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    svc.recompute()
    yield svc, f"http://127.0.0.1:{httpd.server_address[1]}", kubeconfig
    httpd.shutdown()
    svc.stop()


def _live(kubeconfig):
    return ("--kubeconfig", kubeconfig, "--context", "incident")


def test_a_pod_from_the_server_is_the_diagnosis_serve_holds_and_names_the_live_cause(cli, served):
    svc, url, kubeconfig = served
    group = svc.state.pending["groups"][0]
    pod = group["pods"][0]
    r = cli("diagnose", "pod", pod["name"], "-n", pod["namespace"], "--server", url, "-o", "json")
    held = _as_printed(pod_document(svc.state, pod["namespace"], pod["name"]))
    assert r.json() == held
    live = cli("diagnose", "pod", pod["name"], "-n", pod["namespace"], *_live(kubeconfig), "-o", "json")
    assert r.json()["findings"][0]["code"] == live.json()["findings"][0]["code"] == group["code"]
    assert r.code == live.code == 1
    # NAMESPACE/NAME works as it does against the cluster; the table is the local renderer's
    table = cli("diagnose", "pod", f"{pod['namespace']}/{pod['name']}", "--server", url)
    from io import StringIO

    from rich.console import Console

    from gpuctl.render.diagnosis import render_diagnosis

    buf = StringIO()
    render_diagnosis(Diagnosis.from_dict(held), Console(file=buf, width=80, no_color=True, highlight=False,
                                                        soft_wrap=False, color_system=None))
    assert table.out.splitlines() == [line.rstrip() for line in buf.getvalue().splitlines()]


def test_a_node_from_the_server_is_the_diagnosis_serve_holds(cli, served):
    svc, url, _ = served
    node = sorted(svc.state.snapshot.nodes)[0]
    r = cli("diagnose", "node", node, "--server", url, "-o", "json")
    held = svc.state.nodes.get(node)
    if held is None:
        from gpuctl.engine import diagnose_node

        held = diagnose_node(svc.state.snapshot, node).to_dict()
    assert r.json() == _as_printed(held)
    assert r.code == (0 if held["verdict"] == "healthy" else 1)


def test_pending_from_the_server_matches_the_one_shot_report(cli, served):
    svc, url, kubeconfig = served
    every = cli("diagnose", "pending", "-A", "--server", url, "-o", "json")
    live = cli("diagnose", "pending", "-A", *_live(kubeconfig), "-o", "json")
    assert every.json()["groups"] == live.json()["groups"] and every.code == live.code
    namespaces = {p["namespace"] for g in live.json()["groups"] for p in g["pods"]}
    assert namespaces
    for ns in sorted(namespaces) + ["nobody-here"]:
        one = cli("diagnose", "pending", "-n", ns, "--server", url, "-o", "json")
        ref = cli("diagnose", "pending", "-n", ns, *_live(kubeconfig), "-o", "json")
        assert {g["code"]: g["pods"] for g in one.json()["groups"]} == {g["code"]: g["pods"] for g in ref.json()["groups"]}
        assert one.json()["scope"] == ns and one.json()["pods"] == ref.json()["pods"] and one.code == ref.code


def test_narrowing_the_cluster_report_equals_diagnosing_one_namespace():
    snap = load_snapshot(resolve_snapshot("demo"))
    every, _ = pending_report(snap, None)
    assert narrow_pending(every, None) is every
    for ns in sorted({p.metadata.namespace for p in snap.pods.values()}):
        mine, code = pending_report(snap, ns)
        cut = narrow_pending(every, ns)
        assert [(g["code"], g["pods"], g["oldestPendingSeconds"]) for g in cut["groups"]] == \
               [(g["code"], g["pods"], g["oldestPendingSeconds"]) for g in mine["groups"]]
        assert cut["pods"] == mine["pods"] and pending_exit_code(cut) == code


def test_what_the_server_cannot_answer_is_one_line_and_the_exit_code(cli, served):
    _, url, _ = served
    r = cli("diagnose", "pod", "not-there", "-n", "ml", "--server", url)
    assert r.code == 3 and r.out == "" and len(r.err.strip().splitlines()) == 1 and "not-there" in r.err
    r = cli("diagnose", "node", "no-such-node", "--server", url)
    assert r.code == 3 and "no-such-node" in r.err
    for bad in (("diagnose", "pod", "job/train", "--server", url), ("diagnose", "pod", "x", "-A", "--server", url),
                ("diagnose", "pod", "x", "--server", url, "--snapshot", "demo"),
                ("diagnose", "node", "n1", "--server", url, "--dcgm-url", "http://10.0.0.1:9400"),
                ("diagnose", "pending", "-A", "--server", url, "--watch")):
        r = cli(*bad)
        assert r.code == 2 and "Traceback" not in r.err and r.err.startswith("gpuctl: error:"), bad


def _answering(body_for):
    """A plain HTTP server on a free port answering every GET 200 with ``body_for(path)``:
    something that is not gpuctl serve."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = body_for(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_server_or_not_ready_or_not_gpuctl_is_exit_4(cli, serve):
    r = cli("diagnose", "pending", "-A", "--server", f"http://127.0.0.1:{_free_port()}", "--request-timeout", "2s")
    assert r.code == 4 and "connection refused" in r.err and len(r.err.strip().splitlines()) <= 2
    _, kubeconfig = serve(resolve_snapshot("demo"))
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=5.0, watch_seconds=5)
    httpd = http_server(svc, "127.0.0.1", 0)      # never computed: not ready
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        r = cli("diagnose", "pending", "-A", "--server", f"http://127.0.0.1:{httpd.server_address[1]}")
        assert r.code == 4 and "not ready" in r.err
    finally:
        httpd.shutdown()
        svc.stop()

    other = _answering(lambda path: b"<html>hello</html>" if "pending" in path else b'{"schema": "something/else"}')
    try:
        base = f"http://127.0.0.1:{other.server_address[1]}"
        r = cli("diagnose", "pending", "-A", "--server", base)
        assert r.code == 4 and "did not answer a JSON document" in r.err
        r = cli("diagnose", "node", "n1", "--server", base)
        assert r.code == 4 and "something/else" in r.err
        r = cli("diagnose", "node", "n1", "--server", "ftp://x")
        assert r.code == 4 and "--server" in r.err
    finally:
        other.shutdown()


def test_a_finding_code_this_version_does_not_know_is_exit_4(cli):
    # a server of a newer gpuctl: its document names a code this one lacks
    newer = {"schema": "gpuctl/diagnosis/v1", "target": {"kind": "Pod", "name": "x"}, "verdict": "blocked",
             "findings": [{"code": "from-the-future", "severity": "blocker", "summary": "s"}], "checks": []}

    srv = _answering(lambda path: json.dumps(newer).encode())
    try:
        r = cli("diagnose", "pod", "x", "--server", f"http://127.0.0.1:{srv.server_address[1]}")
        assert r.code == 4 and "from-the-future" in r.err and "newer gpuctl" in r.err
    finally:
        srv.shutdown()


def test_a_diagnosis_document_reads_back_to_the_same_document():
    from gpuctl.engine import diagnose, diagnose_node

    snap = load_snapshot(resolve_snapshot("demo"))
    docs = [diagnose(snap, p.metadata.namespace, p.metadata.name).to_dict() for p in list(snap.pods.values())[:20]]
    docs += [diagnose_node(snap, n).to_dict() for n in sorted(snap.nodes)[:5]]
    for d in docs:
        assert Diagnosis.from_dict(_as_printed(d)).to_dict() == _as_printed(d)
