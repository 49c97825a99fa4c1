"""Collecting DCGM metrics: the pod proxy through the local API server and the real
kubernetes client, and the direct exporter / Prometheus paths against small stdlib
HTTP servers that answer well, slowly, wrongly or not at all.

Every failure must come back as ApiFailure (proxy) or MetricsUnavailable (direct),
in bounded time - never a traceback, never a hang.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.kubeapi import SnapshotAPIServer
from gpuctl.collect import metrics as M
from gpuctl.collect.files import iter_raw_objects, raw_logs, raw_metrics
from gpuctl.collect.kube import ApiFailure, KubeAPI, gap_from
from gpuctl.collect.metrics import MetricsUnavailable, dcgm_direct, dcgm_via_proxy, prometheus_query
from gpuctl.model import objects as O
from gpuctl.model.gpu_metrics import parse_dcgm

NODE = "gpu-h100-0"
OTHER = "gpu-h100-1"
DCGM_TEXT = (
    "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
    "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
    'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:18:00.0",'
    f'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{NODE}",DCGM_FI_DRIVER_VERSION="550.54.15",'
    'err_code="79",err_msg="GPU has fallen off the bus"} 79\n'
    "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:18:00.0",'
    f'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{NODE}",DCGM_FI_DRIVER_VERSION="550.54.15"}} 64\n'
)


@pytest.fixture(autouse=True)
def _no_http_proxy(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def _exporter_pod(name: str, node: str, phase: str = "Running", labels: dict | None = None, ports=(9400,),
                  pod_ip: str | None = "10.244.1.5") -> dict:
    container: dict = {"name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"}
    if ports:
        container["ports"] = [{"name": "metrics", "containerPort": p, "protocol": "TCP"} for p in ports]
    status: dict = {"phase": phase}
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "gpu-operator",
                     "labels": {"app": "nvidia-dcgm-exporter"} if labels is None else labels},
        "spec": {"nodeName": node, "containers": [container]},
        "status": status,
    }


EXPORTER = _exporter_pod("nvidia-dcgm-exporter-7xk2p", NODE)
SILENT_EXPORTER = _exporter_pod("nvidia-dcgm-exporter-q9zt4", OTHER, pod_ip=None)
NOT_EXPORTER = _exporter_pod("node-exporter-b7x9", NODE, labels={"app": "node-exporter"})
HELM_EXPORTER = _exporter_pod("dcgm-exporter-5d8fj", "gpu-h100-2",
                              labels={"app.kubernetes.io/name": "dcgm-exporter"}, ports=())
OBJECTS = [EXPORTER, SILENT_EXPORTER, NOT_EXPORTER, HELM_EXPORTER]


def _records(*pods: dict) -> list[O.Pod]:
    return [O.decoder_for("Pod").decode(json.dumps(p)) for p in pods]


@pytest.fixture
def cluster(tmp_path):
    """(server, KubeAPI) with DCGM metrics for NODE and gpu-h100-2, none for OTHER."""
    srv = SnapshotAPIServer(OBJECTS, metrics={NODE: DCGM_TEXT, "gpu-h100-2": DCGM_TEXT.replace(NODE, "gpu-h100-2")})
    srv.start()
    kubeconfig = srv.write_kubeconfig(str(tmp_path / "kubeconfig"))
    try:
        yield srv, KubeAPI(kubeconfig=str(kubeconfig), request_timeout=5)
    finally:
        srv.stop()


# ---------------------------------------------------------------- pod proxy


def test_proxy_fetch_through_the_real_client(cluster):
    srv, api = cluster
    text = dcgm_via_proxy(api, NODE, _records(*OBJECTS), timeout=5)
    assert text == DCGM_TEXT
    (g,) = parse_dcgm(text, NODE).gpus
    assert g.xid_last == 79 and g.temperature_c == 64.0
    (req,) = [r for r in srv.requests if "/proxy/" in r.path]
    assert req.path == "/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-7xk2p:9400/proxy/metrics"
    assert req.status == 200
    auth = {k.lower(): v for k, v in req.headers.items()}.get("authorization")
    assert auth == "Bearer test-token"   # the kubeconfig's credentials


def test_proxy_serves_helm_labelled_exporter_on_default_port(cluster):
    _, api = cluster
    text = dcgm_via_proxy(api, "gpu-h100-2", _records(HELM_EXPORTER))
    assert parse_dcgm(text, "gpu-h100-2").gpus[0].hostname == "gpu-h100-2"


def test_proxy_answer_is_exposition_text(cluster):
    srv, _ = cluster
    import urllib.request

    req = urllib.request.Request(
        f"{srv.url}/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-7xk2p:9400/proxy/metrics",
        headers={"Authorization": "Bearer test-token"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert resp.read().decode() == DCGM_TEXT


def test_proxy_forbidden_is_api_failure_forbidden(cluster):
    srv, api = cluster
    srv.forbid("pods/proxy", "get")
    started = time.monotonic()
    with pytest.raises(ApiFailure) as exc:
        dcgm_via_proxy(api, NODE, _records(EXPORTER))
    assert time.monotonic() - started < 5
    e = exc.value
    assert (e.status, e.reason) == (403, "forbidden")
    assert ('pods "nvidia-dcgm-exporter-7xk2p:9400" is forbidden: User "system:serviceaccount:ml:trainer" '
            'cannot get resource "pods/proxy" in API group "" in the namespace "gpu-operator"') == e.message
    gap = gap_from(e, f"read DCGM metrics of {NODE} through the pod proxy", "get", "pods/proxy", "gpu-operator")
    assert "needs RBAC verb 'get' on 'pods/proxy'" in gap.describe()


def test_proxy_needs_pods_proxy_not_just_pods(cluster):
    srv, api = cluster
    srv.allow_only([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])
    with pytest.raises(ApiFailure) as exc:
        dcgm_via_proxy(api, NODE, _records(EXPORTER))
    assert exc.value.reason == "forbidden"
    srv.allow_only([{"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"], "namespaces": ["gpu-operator"]}])
    assert dcgm_via_proxy(api, NODE, _records(EXPORTER)) == DCGM_TEXT


def test_proxy_to_exporter_that_does_not_answer_is_503(cluster):
    _, api = cluster
    started = time.monotonic()
    with pytest.raises(ApiFailure) as exc:
        dcgm_via_proxy(api, OTHER, _records(*OBJECTS), timeout=5)
    assert time.monotonic() - started < 10
    e = exc.value
    assert e.status == 503 and e.reason == "error"
    # no podIP in the snapshot: the emulator stands in 10.0.0.1
    assert e.message == "error trying to reach service: dial tcp 10.0.0.1:9400: connect: connection refused"


def test_proxy_503_for_pod_that_is_not_an_exporter_or_wrong_port(cluster):
    _, api = cluster
    before = api.log.count
    with pytest.raises(ApiFailure) as exc:
        api.get_bytes("/api/v1/namespaces/gpu-operator/pods/node-exporter-b7x9:9400/proxy/metrics")
    assert exc.value.status == 503
    assert exc.value.message == "error trying to reach service: dial tcp 10.244.1.5:9400: connect: connection refused"
    # the API server answered for a port that refused: asked once, not retried with backoff
    assert api.log.count - before == 1 and api.log.retries == 0
    with pytest.raises(ApiFailure) as exc:
        dcgm_via_proxy(api, NODE, _records(EXPORTER), port=9401)
    assert exc.value.status == 503 and "10.244.1.5:9401" in exc.value.message


def test_proxy_unknown_pod_bad_id_and_other_paths(cluster):
    _, api = cluster
    with pytest.raises(ApiFailure) as exc:
        api.get_bytes("/api/v1/namespaces/gpu-operator/pods/nope:9400/proxy/metrics")
    assert (exc.value.status, exc.value.reason, exc.value.message) == (404, "not-found", 'pods "nope" not found')
    with pytest.raises(ApiFailure) as exc:
        api.get_bytes("/api/v1/namespaces/gpu-operator/pods/a:b:c:9400/proxy/metrics")
    assert exc.value.status == 400 and exc.value.message == 'invalid pod request "a:b:c:9400"'
    with pytest.raises(ApiFailure) as exc:
        api.get_bytes("/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-7xk2p:9400/proxy/nothing")
    assert exc.value.status == 404
    # scheme:name:port and the first container port when none is given
    assert api.get_bytes("/api/v1/namespaces/gpu-operator/pods/http:nvidia-dcgm-exporter-7xk2p:9400/proxy/metrics") \
        == DCGM_TEXT.encode()
    assert api.get_bytes("/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-7xk2p/proxy/metrics") \
        == DCGM_TEXT.encode()


def test_proxy_no_exporter_on_node(cluster):
    _, api = cluster
    with pytest.raises(ApiFailure) as exc:
        dcgm_via_proxy(api, "cpu-node-0", _records(*OBJECTS))
    assert exc.value.reason == "not-found"


def test_proxy_garbage_from_exporter_is_api_failure(tmp_path):
    with SnapshotAPIServer([EXPORTER], metrics={NODE: "<html><body>502 Bad Gateway</body></html>\n"}) as srv:
        api = KubeAPI(kubeconfig=str(srv.write_kubeconfig(str(tmp_path / "kc"))), request_timeout=5)
        with pytest.raises(ApiFailure) as exc:
            dcgm_via_proxy(api, NODE, _records(EXPORTER))
    assert exc.value.reason == "error" and "not Prometheus metrics" in exc.value.message


def test_snapshot_metrics_served_through_raw_metrics(tmp_path):
    snap = tmp_path / "snap"
    (snap / "metrics").mkdir(parents=True)
    (snap / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [EXPORTER]}))
    (snap / "metrics" / f"{NODE}.prom").write_text(DCGM_TEXT)
    (snap / "metrics" / "README").write_text("not metrics")
    metrics = raw_metrics(snap)
    assert metrics == {NODE: DCGM_TEXT}
    with SnapshotAPIServer(list(iter_raw_objects(snap)), logs=raw_logs(snap), metrics=metrics) as srv:
        api = KubeAPI(kubeconfig=str(srv.write_kubeconfig(str(tmp_path / "kc"))), request_timeout=5)
        assert dcgm_via_proxy(api, NODE, _records(EXPORTER)) == DCGM_TEXT


# ---------------------------------------------------------------- direct HTTP


class _Behaviour:
    def __init__(self):
        self.mode = "ok"
        self.body = DCGM_TEXT.encode()
        self.queries: list[dict] = []
        self.stop = threading.Event()


def _handler(state: _Behaviour):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, code: int, body: bytes, ctype: str = "text/plain; version=0.0.4", length: int | None = None):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            split = urlsplit(self.path)
            state.queries.append({"path": split.path, **parse_qs(split.query)})
            mode = state.mode
            if mode == "ok":
                self._send(200, state.body)
            elif mode == "slow":
                state.stop.wait(30)
                self.close_connection = True
            elif mode == "drip":
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                for _ in range(100):
                    if state.stop.wait(0.2):
                        break
                    try:
                        self.wfile.write(b"# drip\n")
                        self.wfile.flush()
                    except OSError:
                        break
                self.close_connection = True
            elif mode == "garbage":
                self._send(200, b"<!DOCTYPE html><html><head><title>Grafana</title></head></html>\n", "text/html")
            elif mode == "binary":
                self._send(200, bytes(range(256)) * 4, "application/octet-stream")
            elif mode == "500":
                self._send(500, b"internal error: collector crashed\n")
            elif mode == "big":
                self._send(200, b"", length=64 * 2**20)
                self.close_connection = True
            elif mode == "json":
                self._send(200, state.body, "application/json")
            elif mode == "prom-400":
                self._send(400, json.dumps({"status": "error", "errorType": "bad_data",
                                            "error": "invalid parameter \"query\": 1:2: parse error"}).encode(),
                           "application/json")
            elif mode == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
            else:
                self._send(404, b"404 page not found\n")

    return H


@pytest.fixture
def http():
    state = _Behaviour()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    state.url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        yield state
    finally:
        state.stop.set()
        srv.shutdown()
        srv.server_close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _unavailable(fn, *args, limit: float = 6.0) -> MetricsUnavailable:
    started = time.monotonic()
    with pytest.raises(MetricsUnavailable) as exc:
        fn(*args)
    assert time.monotonic() - started < limit, "took too long: the timeout was not honoured"
    return exc.value


def test_direct_ok_adds_metrics_path(http):
    assert dcgm_direct(http.url, 2) == DCGM_TEXT
    assert http.queries[-1]["path"] == "/metrics"
    assert dcgm_direct(http.url + "/metrics", 2) == DCGM_TEXT


def test_direct_slow_answer_times_out(http):
    http.mode = "slow"
    e = _unavailable(dcgm_direct, http.url, 0.5, limit=3)
    assert e.reason == "timeout" and "0.5s" in e.detail


def test_direct_drip_feed_hits_the_deadline(http):
    http.mode = "drip"
    e = _unavailable(dcgm_direct, http.url, 1.0, limit=4)
    assert e.reason == "timeout"


@pytest.mark.parametrize("mode, reason", [
    ("garbage", "garbage"), ("binary", "garbage"), ("500", "http-status"), ("big", "too-large"), ("missing", "http-status"),
])
def test_direct_bad_answers(http, mode, reason):
    http.mode = mode
    e = _unavailable(dcgm_direct, http.url, 2)
    assert e.reason == reason
    if mode == "500":
        assert "HTTP 500" in e.detail and "collector crashed" in e.detail


def test_direct_prometheus_text_without_dcgm_is_garbage(http):
    http.body = b"# TYPE node_load1 gauge\nnode_load1 0.5\n"
    e = _unavailable(dcgm_direct, http.url, 2)
    assert e.reason == "garbage" and "DCGM" in e.detail


def test_direct_body_over_the_cap_while_streaming(http, monkeypatch):
    monkeypatch.setattr(M, "MAX_METRICS_BYTES", 1024)
    http.body = DCGM_TEXT.encode() * 20
    e = _unavailable(dcgm_direct, http.url, 2)
    assert e.reason == "too-large"


def test_direct_closed_port_is_unreachable():
    url = f"http://127.0.0.1:{_closed_port()}/metrics"
    e = _unavailable(dcgm_direct, url, 2, limit=3)
    assert e.reason == "unreachable" and "connection refused" in e.detail


def test_direct_connection_reset_is_unreachable(http):
    http.mode = "reset"
    e = _unavailable(dcgm_direct, http.url, 2, limit=4)
    assert e.reason == "unreachable"
    assert len(http.queries) == 2   # one retry, no more


@pytest.mark.parametrize("url", ["http://", "ftp://127.0.0.1/metrics", "http://[::1/metrics", "http://exa mple/"])
def test_direct_invalid_url(url):
    e = _unavailable(dcgm_direct, url, 1)
    assert e.reason in ("unreachable", "timeout")


# ---------------------------------------------------------------- Prometheus


def _vector(*samples: tuple[dict, str]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": m, "value": [1731400000.123, v]} for m, v in samples]}}).encode()


def _series(name: str, host_key: str, host: str, gpu: str) -> dict:
    return {"__name__": name, host_key: host, "UUID": f"GPU-{host}-{gpu}", "gpu": gpu, "device": f"nvidia{gpu}",
            "modelName": "NVIDIA A100-SXM4-80GB", "pci_bus_id": f"00000000:0{gpu}:00.0",
            "instance": "10.0.1.4:9400", "job": "gpu-metrics", "container": "", "namespace": "", "pod": ""}


def test_prometheus_query_renders_vector_for_parse(http):
    http.mode = "json"
    http.body = _vector(
        (_series("DCGM_FI_DEV_XID_ERRORS", "Hostname", NODE, "0"), "0"),
        (_series("DCGM_FI_DEV_XID_ERRORS", "Hostname", NODE, "1"), "79"),
        (_series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Hostname", NODE, "1"), "3"),
        (_series("DCGM_FI_DEV_GPU_TEMP", "Hostname", NODE, "1"), "NaN"),
        (_series("DCGM_EXP_XID_ERRORS_COUNT", "Hostname", NODE, "1") | {"xid": "79"}, "2"),
    )
    text = prometheus_query(http.url + "/", NODE, 2)
    m = parse_dcgm(text, NODE)
    assert [(g.gpu, g.xid_last) for g in m.gpus] == [("0", 0), ("1", 79)]
    assert m.gpus[1].ecc_dbe_volatile == 3.0 and m.gpus[1].xid_counts == {79: 2.0}
    assert m.gpus[1].temperature_c is None
    q = http.queries[-1]
    assert q["path"] == "/api/v1/query"
    (promql,) = q["query"]
    assert f'Hostname="{NODE}"' in promql and f'hostname="{NODE}"' in promql and " or " in promql
    assert "DCGM_FI_DEV_XID_ERRORS" in promql and "DCGM_FI_DEV_ROW_REMAP_FAILURE" in promql


def test_prometheus_multi_node_answer_is_filtered_by_parse(http):
    http.mode = "json"
    http.body = _vector(
        (_series("DCGM_FI_DEV_XID_ERRORS", "Hostname", NODE, "0"), "48"),
        (_series("DCGM_FI_DEV_XID_ERRORS", "hostname", OTHER, "0"), "79"),
    )
    m = parse_dcgm(prometheus_query(http.url, NODE, 2), NODE)
    assert [(g.hostname, g.xid_last) for g in m.gpus] == [(NODE, 48)]
    assert m.other_nodes == {OTHER}


@pytest.mark.parametrize("body, reason", [
    (json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode(), "not-found"),
    (json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode(), "garbage"),
    (json.dumps({"status": "error", "errorType": "timeout", "error": "query timed out"}).encode(), "http-status"),
    (b"<html>Sign in</html>", "garbage"),
    (b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "x"]}]}}',
     "garbage"),
    (b'{"status": "success", "data": {"resultType": "vector", "result": [7]}}', "garbage"),
])
def test_prometheus_bad_answers(http, body, reason):
    http.mode = "json"
    http.body = body
    e = _unavailable(prometheus_query, http.url, NODE, 2)
    assert e.reason == reason


def test_prometheus_error_status_carries_prometheus_message(http):
    http.mode = "prom-400"
    e = _unavailable(prometheus_query, http.url, NODE, 2)
    assert e.reason == "http-status" and "HTTP 400" in e.detail and "bad_data" in e.detail


def test_prometheus_slow_closed_and_500(http):
    http.mode = "slow"
    assert _unavailable(prometheus_query, http.url, NODE, 0.5, limit=3).reason == "timeout"
    http.mode = "500"
    assert _unavailable(prometheus_query, http.url, NODE, 2).reason == "http-status"
    assert _unavailable(prometheus_query, f"http://127.0.0.1:{_closed_port()}", NODE, 2).reason == "unreachable"


@settings(max_examples=100, deadline=None)
@given(host=st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and "\r" not in s),
       extra=st.text(max_size=40))
def test_prometheus_label_values_survive_rendering(host, extra):
    """Whatever a label value holds, rendering then parsing gives it back."""
    sample = {"metric": {**_series("DCGM_FI_DEV_XID_ERRORS", "Hostname", host, "0"), "extra": extra},
              "value": [1.0, "13"]}
    line = M._render_sample(sample)
    m = parse_dcgm(line + "\n", host)
    assert [(g.hostname, g.xid_last) for g in m.gpus] == [(host, 13)]


def test_promql_escapes_node_name():
    q = M.prometheus_promql('we"ird\\node')
    assert 'Hostname="we\\"ird\\\\node"' in q and 'hostname="we\\"ird\\\\node"' in q
