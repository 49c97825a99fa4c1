"""`gpuctl serve` (gpuctl/serve, gpuctl/collect/watch.py; docs/serve.md): the watch cache
answers the one-shot collector, so the exported state equals the one-shot reports on
the same cluster; the metrics say the same as the documents; the HTTP API is
read-only and ready only after the first sync. Through the real client, over HTTP,
against the local API server."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request

import pytest

from gpuctl.collect.files import resolve_snapshot
from gpuctl.collect.kube import KubeAPI
from gpuctl.serve.metrics import exposition
from gpuctl.serve.server import Service, http_server, parse_listen, route


@pytest.fixture
def demo(serve):
    srv, kubeconfig = serve(resolve_snapshot("demo"))
    return srv, kubeconfig


def _service(kubeconfig: str) -> Service:
    return Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=5.0, watch_seconds=5)


def _as_printed(doc):
    from gpuctl.render.data import clean_data, with_camel_keys

    return json.loads(json.dumps(clean_data(with_camel_keys(doc))))


def _families(text: bytes) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f for f in text_string_to_metric_families(text.decode())}


def test_the_exported_state_is_the_one_shot_reports(cli, demo):
    _, kubeconfig = demo
    svc = _service(kubeconfig)
    try:
        state = svc.recompute()
        pending = cli("diagnose", "pending", "-A", "--kubeconfig", kubeconfig, "--context", "incident", "-o", "json").json()
        capacity = cli("nodes", "capacity", "--kubeconfig", kubeconfig, "--context", "incident", "-o", "json").json()
        assert _as_printed(state.pending)["groups"] == pending["groups"]
        assert _as_printed(state.capacity)["pools"] == capacity["pools"]
        assert state.pending["pods"] > 0
    finally:
        svc.stop()


def test_metrics_say_what_the_documents_say(demo):
    _, kubeconfig = demo
    svc = _service(kubeconfig)
    try:
        state = svc.recompute()
        fams = _families(exposition(svc.exporter))
        pending = fams["gpuctl_pending_pods"]
        assert sum(s.value for s in pending.samples) == state.pending["pods"]
        by_code: dict = {}
        for s in pending.samples:
            by_code[s.labels["code"]] = by_code.get(s.labels["code"], 0) + s.value
        assert by_code == {g["code"]: len(g["pods"]) for g in state.pending["groups"]}
        oldest = {s.labels["code"]: s.value for s in fams["gpuctl_pending_oldest_seconds"].samples}
        assert oldest == {g["code"]: g["oldestPendingSeconds"] for g in state.pending["groups"]
                          if g["oldestPendingSeconds"] is not None}
        gpus = {(s.labels["pool"], s.labels["resource"], s.labels["state"]): s.value for s in fams["gpuctl_gpus"].samples}
        for pool in state.capacity["pools"]:
            for st in ("capacity", "allocatable", "allocated", "free", "unhealthy"):
                assert gpus[(pool["pool"], pool["resource"], st)] == pool[st]
        assert all("pod" not in s.labels for f in fams.values() for s in f.samples), "no pod names as labels"
        synced = {s.labels["resource"]: s.value for s in fams["gpuctl_cache_synced"].samples}
        assert synced.get("nodes") == 1.0 and synced.get("pods") == 1.0
        assert fams["gpuctl_diagnosis_duration_seconds"].samples
        assert not math.isnan(fams["gpuctl_diagnosis_age_seconds"].samples[0].value)
    finally:
        svc.stop()


def test_a_second_pass_reads_the_cache_not_the_api_server(demo):
    srv, kubeconfig = demo
    svc = _service(kubeconfig)
    try:
        svc.recompute()
        before = len(srv.requests)
        svc.recompute()
        lists = [f"{r.method} {r.path}" for r in srv.requests[before:] if "watch" not in r.query]
        assert lists == [], f"the second pass sent {len(lists)} requests besides watches: {lists[:3]}"
    finally:
        svc.stop()


def test_the_http_api_is_read_only_and_ready_after_the_first_pass(demo):
    _, kubeconfig = demo
    svc = _service(kubeconfig)
    httpd = http_server(svc, "127.0.0.1", 0)
    import threading

    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"

    def get(path, method="GET"):
        req = urllib.request.Request(base + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    try:
        assert get("/healthz")[0] == 200
        assert get("/readyz")[0] == 503
        assert get("/api/v1/pending")[0] == 503
        state = svc.recompute()
        assert get("/readyz")[0] == 200
        status, body = get("/api/v1/pending")
        assert status == 200 and json.loads(body) == _as_printed(state.pending)
        status, body = get("/api/v1/capacity")
        assert status == 200 and json.loads(body)["pools"] == _as_printed(state.capacity)["pools"]
        pod = state.pending["groups"][0]["pods"][0]
        status, body = get(f"/api/v1/pods/{pod['namespace']}/{pod['name']}/diagnosis")
        assert status == 200 and json.loads(body)["target"]["name"] == pod["name"]
        assert get("/api/v1/pods/ml/not-there/diagnosis")[0] == 404
        node = sorted(state.snapshot.nodes)[0]
        status, body = get(f"/api/v1/nodes/{node}/diagnosis")
        assert status == 200 and json.loads(body)["target"]["name"] == node
        status, body = get("/metrics")
        assert status == 200 and b"gpuctl_pending_pods{" in body
        assert get("/metrics", method="POST")[0] == 405
        assert get("/nowhere")[0] == 404
    finally:
        httpd.shutdown()
        svc.stop()


def test_route_never_raises_on_odd_paths(demo):
    _, kubeconfig = demo
    svc = _service(kubeconfig)
    try:
        svc.recompute()
        for path in ("/api/v1/pods/../../etc/diagnosis", "/api/v1/nodes//diagnosis", "/api/v1/pods/A/B/diagnosis",
                     "/metrics?x=1", "/api/v1/pending?watch=true"):
            status, _, _ = route(svc, path)
            assert status in (200, 404)
    finally:
        svc.stop()


@pytest.mark.parametrize("text,expected", [(":9402", ("0.0.0.0", 9402)), ("127.0.0.1:80", ("127.0.0.1", 80)),
                                           ("[::1]:9402", ("::1", 9402))])
def test_listen_addresses(text, expected):
    assert parse_listen(text) == expected


@pytest.mark.parametrize("bad", ["9402", "host:", ":99999", "host:port"])
def test_bad_listen_addresses_are_refused(bad):
    with pytest.raises(ValueError):
        parse_listen(bad)


def test_bad_listen_is_one_line_and_the_usage_exit_code(cli):
    r = cli("serve", "--listen", "nowhere")
    assert r.code == 2 and "--listen" in r.err and "Traceback" not in r.err


def test_pending_watch_shows_the_report_and_stops_cleanly(demo):
    import os
    import signal
    import subprocess
    import sys

    _, kubeconfig = demo
    env = dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "gpuctl", "diagnose", "pending", "-A", "--watch", "-o", "json",
                             "--kubeconfig", kubeconfig, "--context", "incident"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = []
        while True:
            line = proc.stdout.readline()
            assert line, f"exited early: {proc.stderr.read()[-2000:]}"
            lines.append(line)
            if line.rstrip() == "}":
                break
        doc = json.loads("".join(lines))
        assert doc["schema"] == "gpuctl/pending/v1" and doc["pods"] > 0
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_pending_watch_needs_a_cluster(cli):
    r = cli("diagnose", "pending", "-A", "--watch", "--snapshot", "demo")
    assert r.code == 2 and "--watch needs a cluster" in r.err


def test_an_informer_no_pass_reads_is_dropped(demo):
    from gpuctl.collect import watch as W

    _, kubeconfig = demo
    svc = _service(kubeconfig)
    try:
        svc.recompute()
        extra = ("/api/v1/namespaces/default/configmaps", "GenericObject", ())
        svc.cache.list(extra[0], extra[1])
        assert extra in svc.cache.informers
        for _ in range(W.IDLE_PASSES + 1):
            svc.recompute()          # the collectors never read configmaps
        assert extra not in svc.cache.informers
        assert ("/api/v1/nodes", "Node", ()) in svc.cache.informers   # what every pass reads stays
    finally:
        svc.stop()


# ------------------------------------------------------------------ the cache follows the cluster


def _settle(svc, srv, seconds=15.0):
    """Recompute until the cache has applied every change the server made (its informers'
    last event or bookmark is at or past the server's resourceVersion)."""
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.3)
        if all(inf.stats.synced and int(inf._rv or 0) >= int(srv.resource_version)
               for inf in svc.cache.informers.values() if not inf.stats.absent):
            break
    return svc.recompute()


def _one_shot(cli, kubeconfig):
    return _as_printed(cli("diagnose", "pending", "-A", "--kubeconfig", kubeconfig, "--context", "incident",
                           "-o", "json").json())


def test_the_cache_follows_adds_updates_deletes_a_dropped_watch_and_an_expiry(cli, serve):
    import copy

    srv, kubeconfig = serve(resolve_snapshot("demo"), bookmark_interval=0.2)
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=3600, watch_seconds=30)
    try:
        first = svc.recompute()
        pending = [(p["namespace"], p["name"]) for g in first.pending["groups"] for p in g["pods"]]
        assert len(pending) >= 2
        srv.wait_for_watches(count=len([i for i in svc.cache.informers.values() if not i.stats.absent]), timeout=20)

        # delete a Pending pod: it leaves the report
        gone = pending[0]
        srv.delete("pods", *gone)
        state = _settle(svc, srv)
        names = {(p["namespace"], p["name"]) for g in state.pending["groups"] for p in g["pods"]}
        assert gone not in names and state.pending["pods"] == first.pending["pods"] - 1
        assert _as_printed(state.pending)["groups"] == _one_shot(cli, kubeconfig)["groups"]

        # add one: a copy of another Pending pod under a new name
        twin = copy.deepcopy(srv.get("pods", *pending[1]))
        twin["metadata"]["name"] += "-twin"
        twin["metadata"].pop("uid", None)
        srv.put(twin)
        state = _settle(svc, srv)
        assert state.pending["pods"] == first.pending["pods"]
        assert _as_printed(state.pending)["groups"] == _one_shot(cli, kubeconfig)["groups"]

        # the watches drop mid-stream, then the watch's resourceVersion expires: re-open, re-list
        restarts = sum(i.stats.restarts for i in svc.cache.informers.values())
        srv.drop_watches()
        srv.compact()
        srv.delete("pods", twin["metadata"]["namespace"], twin["metadata"]["name"])
        state = _settle(svc, srv, seconds=30)
        assert sum(i.stats.restarts + i.stats.relists for i in svc.cache.informers.values()) > restarts
        assert any(i.stats.relists for i in svc.cache.informers.values()), "a compacted log makes the cache re-list"
        assert state.pending["pods"] == first.pending["pods"] - 1
        assert _as_printed(state.pending)["groups"] == _one_shot(cli, kubeconfig)["groups"]
        fams = _families(exposition(svc.exporter))
        assert sum(s.value for s in fams["gpuctl_pending_pods"].samples) == state.pending["pods"]
        assert sum(s.value for s in fams["gpuctl_relists"].samples) >= 1
    finally:
        svc.stop()


@pytest.mark.parametrize("duration,interval,expected", [
    (0.2, 15.0, (1.0, 15.0)),     # a quick recompute: a change brings the next to 1 s, else the interval
    (9.4, 15.0, (9.4, 15.0)),     # the 150,000-pod cluster: at least as much rest as work
    (40.0, 15.0, (40.0, 40.0)),   # slower than the interval: rest as long as it took, change or not
    (0.0, 1.0, (1.0, 1.0)),
])
def test_recomputing_takes_at_most_half_a_core_however_fast_the_cluster_changes(duration, interval, expected):
    from gpuctl.serve.server import waits

    assert waits(duration, interval) == expected
    soonest, latest = waits(duration, interval)
    assert duration / (duration + soonest) <= 0.5 and soonest <= latest


@pytest.mark.parametrize("case", ["dcgm-exporter-348-gpu-fell-off-bus-allocatable-unchanged",
                                  "akash-network-support-209-xid79-recurring-node"])
def test_a_node_only_its_warning_events_accuse_is_diagnosed_and_exported(cli, serve, case):
    from conftest import ROOT

    snapdir = ROOT / "tests" / "realworld" / case / "snapshot"
    _, kubeconfig = serve(snapdir)
    svc = _service(kubeconfig)
    try:
        state = svc.recompute()
        accused = {e.involvedObject.name for e in state.snapshot.events
                   if e.involvedObject.kind == "Node" and e.type == "Warning"}
        assert accused and accused <= set(state.nodes)
        for node in accused:
            live = cli("diagnose", "node", node, "--kubeconfig", kubeconfig, "--context", "incident", "-o", "json").json()
            served = _as_printed(state.nodes[node])
            assert [f["code"] for f in served["findings"]] == [f["code"] for f in live["findings"]]
            assert served["verdict"] == live["verdict"] != "healthy"
        fams = _families(exposition(svc.exporter))
        exported = {(s.labels["node"], s.labels["code"]) for s in fams["gpuctl_node_findings"].samples if s.value}
        assert {(n, f["code"]) for n in accused for f in state.nodes[n]["findings"] if f["severity"] != "info"} <= exported
    finally:
        svc.stop()
