"""SnapshotAPIServer, exercised through the real kubernetes client over real HTTP.

Nothing in the client is patched: each test writes a kubeconfig, builds an
ApiClient from it and talks to the server exactly as gpuctl would talk to a
cluster. Raw ``urllib`` is used only where the client hides what is under test
(response headers, gzip, a hang).
"""

from __future__ import annotations

import gzip
import json
import time
import urllib.error
import urllib.request

import kubernetes
import pytest
import urllib3
from kubernetes.client.rest import ApiException

from support.kubeapi import Fault, SnapshotAPIServer

TOKEN = "test-token"
FAILED_SCHEDULING = (
    "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s). "
    "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
    "2 Preemption is not helpful for scheduling."
)


def _node(name: str, labels: dict, gpus: int = 0, taints: list | None = None) -> dict:
    capacity = {"cpu": "96", "memory": "1056Gi", "pods": "110"}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, ns: str, node: str | None, phase: str, gpus: int, containers=("trainer",),
         labels: dict | None = None) -> dict:
    spec: dict = {
        "schedulerName": "default-scheduler",
        "restartPolicy": "Never",
        "serviceAccountName": "trainer",
        "containers": [
            {"name": c, "image": "nvcr.io/nvidia/pytorch:24.07-py3",
             "resources": {"limits": {"nvidia.com/gpu": str(gpus)}} if c == "trainer" and gpus else {}}
            for c in containers
        ],
    }
    if node:
        spec["nodeName"] = node
    status: dict = {"phase": phase}
    if phase == "Running":
        status["podIP"] = "10.0.1.7"
        status["podIPs"] = [{"ip": "10.0.1.7"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, "uid": f"uid-{name}"},
        "spec": spec,
        "status": status,
    }


GPU_NODE = _node(
    "gpu-a100-0",
    {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/cuda.driver.major": "535",
        "nvidia.com/mig.strategy": "single",
    },
    gpus=8,
)
CPU_TAINT = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
OBJECTS = [
    GPU_NODE,
    _node("cpu-0", {"pool": "system"}, taints=CPU_TAINT),
    _node("cpu-1", {"pool": "system"}, taints=CPU_TAINT),
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}, "status": {"phase": "Active"}},
    _pod("trainer-0", "ml", "gpu-a100-0", "Running", 8, containers=("trainer", "metrics"),
         labels={"app": "trainer", "job": "llama"}),
    _pod("trainer-1", "ml", None, "Pending", 8, labels={"app": "trainer", "job": "llama"}),
    _pod("notebook", "ml", "gpu-a100-0", "Running", 0, labels={"app": "jupyter"}),
    _pod("nvidia-device-plugin-x7k2p", "gpu-operator", "gpu-a100-0", "Running", 0,
         containers=("nvidia-device-plugin",), labels={"app": "nvidia-device-plugin-daemonset"}),
    {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "trainer-1.17f0a", "namespace": "ml"},
        "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "trainer-1", "uid": "uid-trainer-1",
                           "apiVersion": "v1"},
        "reason": "FailedScheduling",
        "message": FAILED_SCHEDULING,
        "source": {"component": "default-scheduler"},
        "type": "Warning",
        "count": 12,
    },
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d9c", "namespace": "ml"},
        "status": {"replicas": 2},
    },
]
LOGS = {
    ("ml", "trainer-0", "trainer", False): "epoch 1 loss 2.1\nepoch 2 loss 1.7\nepoch 3 loss 1.4\n",
    ("ml", "trainer-0", "trainer", True): "CUDA error: out of memory\n",
    ("ml", "trainer-0", "metrics", False): "serving metrics on :9400\n",
}


@pytest.fixture
def srv():
    with SnapshotAPIServer(OBJECTS, logs=LOGS, token=TOKEN) as server:
        yield server


def _client(server: SnapshotAPIServer, tmp_path, **kubeconfig) -> kubernetes.client.ApiClient:
    path = server.write_kubeconfig(tmp_path / f"kubeconfig-{len(list(tmp_path.iterdir()))}", **kubeconfig)
    context = kubeconfig.get("context", "snapshot")
    return kubernetes.config.new_client_from_config(config_file=str(path), context=context)


@pytest.fixture
def core(srv, tmp_path):
    api = _client(srv, tmp_path)
    yield kubernetes.client.CoreV1Api(api)
    api.close()


def _data(resp) -> dict:
    return json.loads(resp.data)


def _names(payload: dict) -> list[str]:
    return [i["metadata"]["name"] for i in payload["items"]]


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


# -- lists and selectors --------------------------------------------------------------


def test_list_with_label_selectors(core):
    gpu = _data(core.list_node(label_selector="nvidia.com/gpu.present=true", _preload_content=False))
    assert gpu["kind"] == "NodeList" and _names(gpu) == ["gpu-a100-0"]
    assert gpu["items"][0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert _names(_data(core.list_node(label_selector="!nvidia.com/gpu.present", _preload_content=False))) == [
        "cpu-0", "cpu-1"]
    pods = _data(core.list_pod_for_all_namespaces(
        label_selector="app in (trainer, jupyter),job notin (bert)", _preload_content=False))
    assert _names(pods) == ["notebook", "trainer-0", "trainer-1"]  # stable (namespace, name) order
    assert _names(_data(core.list_namespaced_pod("ml", label_selector="app!=trainer", _preload_content=False))) == [
        "notebook"]


def test_malformed_label_selector_is_400(core):
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("ml", label_selector="app in (trainer", _preload_content=False)
    assert exc.value.status == 400 and _status(exc.value)["reason"] == "BadRequest"


def test_list_with_field_selectors(core):
    pending = _data(core.list_namespaced_pod("ml", field_selector="spec.nodeName=", _preload_content=False))
    assert _names(pending) == ["trainer-1"]
    running = _data(core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=gpu-a100-0,status.phase==Running,metadata.namespace!=gpu-operator",
        _preload_content=False))
    assert _names(running) == ["notebook", "trainer-0"]
    events = _data(core.list_namespaced_event(
        "ml", field_selector="involvedObject.kind=Pod,involvedObject.name=trainer-1,reason=FailedScheduling",
        _preload_content=False))
    assert [e["message"] for e in events["items"]] == [FAILED_SCHEDULING]
    assert _names(_data(core.list_node(field_selector="spec.unschedulable=false", _preload_content=False))) == [
        "cpu-0", "cpu-1", "gpu-a100-0"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: c.list_namespaced_pod("ml", field_selector="spec.containers=x"),
         "field label not supported: spec.containers"),
        (lambda c: c.list_node(field_selector="metadata.namespace=ml"),
         "field label not supported: metadata.namespace"),
        (lambda c: c.list_namespaced_config_map("ml", field_selector="data.x=1"),
         '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ],
)
def test_unsupported_field_selector_is_400_with_real_message(core, call, message):
    with pytest.raises(ApiException) as exc:
        call(core)
    assert exc.value.status == 400
    assert _status(exc.value)["message"] == message


def test_replicaset_status_replicas_is_rejected_like_apps_v1(srv, tmp_path):
    api = _client(srv, tmp_path)
    try:
        with pytest.raises(ApiException) as exc:
            kubernetes.client.AppsV1Api(api).list_namespaced_replica_set("ml", field_selector="status.replicas=2")
        assert exc.value.status == 400
        assert "is not a known field selector" in _status(exc.value)["message"]
    finally:
        api.close()


# -- pagination ------------------------------------------------------------------------


def test_pagination_with_limit_and_continue_collects_everything(core):
    names, token, pages = [], None, 0
    while True:
        page = _data(core.list_pod_for_all_namespaces(limit=2, _continue=token, _preload_content=False))
        pages += 1
        names += _names(page)
        token = page["metadata"].get("continue")
        if not token:
            break
        assert page["metadata"]["remainingItemCount"] == 4 - len(names)
    assert pages == 2
    assert names == ["nvidia-device-plugin-x7k2p", "notebook", "trainer-0", "trainer-1"]


def test_page_size_cap_forces_continue_without_limit(tmp_path):
    with SnapshotAPIServer(OBJECTS, token=TOKEN, page_size_cap=1) as server:
        api = _client(server, tmp_path)
        core = kubernetes.client.CoreV1Api(api)
        first = _data(core.list_node(_preload_content=False))
        assert len(first["items"]) == 1 and first["metadata"]["continue"]
        names, token = _names(first), first["metadata"]["continue"]
        while token:
            page = _data(core.list_node(_continue=token, _preload_content=False))
            names += _names(page)
            token = page["metadata"].get("continue")
        assert names == ["cpu-0", "cpu-1", "gpu-a100-0"]
        assert sum(r.path == "/api/v1/nodes" for r in server.requests) == 3
        api.close()


def test_expired_continue_token_is_410_with_a_fresh_token(srv, core):
    first = _data(core.list_pod_for_all_namespaces(limit=1, _preload_content=False))
    srv.expire_continue_tokens()
    with pytest.raises(ApiException) as exc:
        core.list_pod_for_all_namespaces(limit=1, _continue=first["metadata"]["continue"], _preload_content=False)
    status = _status(exc.value)
    assert exc.value.status == 410 and status["reason"] == "Expired" and status["code"] == 410
    assert status["message"].startswith("The provided continue parameter is too old to display a consistent list")
    # the 410 carries a token that continues (inconsistently) after the last key returned
    rest = _data(core.list_pod_for_all_namespaces(_continue=status["metadata"]["continue"], _preload_content=False))
    assert _names(rest) == ["notebook", "trainer-0", "trainer-1"]


def test_garbled_continue_token_is_400(core):
    with pytest.raises(ApiException) as exc:
        core.list_node(_continue="not-a-token", _preload_content=False)
    assert exc.value.status == 400
    assert _status(exc.value)["message"].startswith("invalid continue token:")


# -- get, logs -------------------------------------------------------------------------


def test_get_missing_is_404_status(core):
    assert _data(core.read_node("gpu-a100-0", _preload_content=False))["metadata"]["name"] == "gpu-a100-0"
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("x", "ml", _preload_content=False)
    assert exc.value.status == 404
    assert _status(exc.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "x" not found', "reason": "NotFound", "details": {"name": "x", "kind": "pods"}, "code": 404,
    }


def test_logs_tail_previous_and_container_errors(core):
    tail = core.read_namespaced_pod_log("trainer-0", "ml", container="trainer", tail_lines=2, _preload_content=False)
    assert tail.data.decode() == "epoch 2 loss 1.7\nepoch 3 loss 1.4\n"
    assert tail.headers["Content-Type"].startswith("text/plain")
    prev = core.read_namespaced_pod_log("trainer-0", "ml", container="trainer", previous=True, _preload_content=False)
    assert prev.data.decode() == "CUDA error: out of memory\n"
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod_log("trainer-0", "ml", _preload_content=False)
    assert _status(exc.value)["message"] == (
        "a container name must be specified for pod trainer-0, choose one of: [trainer metrics]")
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod_log("trainer-1", "ml", previous=True, _preload_content=False)
    assert exc.value.status == 400
    assert _status(exc.value)["message"] == 'previous terminated container "trainer" in pod "trainer-1" not found'
    assert core.read_namespaced_pod_log("trainer-1", "ml", _preload_content=False).data == b""


# -- authn / authz -----------------------------------------------------------------------


def test_forbid_gives_rbac_403_messages(srv, core):
    srv.forbid("nodes", "list")
    srv.forbid("resourcequotas", namespace="ml")
    srv.forbid("pods/log", "get", namespace="ml")
    with pytest.raises(ApiException) as exc:
        core.list_node(_preload_content=False)
    assert exc.value.status == 403
    assert _status(exc.value)["message"] == (
        'nodes is forbidden: User "system:serviceaccount:ml:trainer" cannot list resource "nodes" '
        'in API group "" at the cluster scope')
    assert _data(core.read_node("gpu-a100-0", _preload_content=False))  # get is still allowed
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_resource_quota("ml", _preload_content=False)
    assert _status(exc.value)["message"].endswith(
        'cannot list resource "resourcequotas" in API group "" in the namespace "ml"')
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod_log("notebook", "ml", _preload_content=False)
    assert _status(exc.value)["message"].startswith('pods "notebook" is forbidden: User')
    assert 'cannot get resource "pods/log"' in _status(exc.value)["message"]


def test_allow_only_role_mode(srv, core):
    srv.allow_only([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"],
                     "namespaces": ["ml"]}])
    assert len(_data(core.list_namespaced_pod("ml", _preload_content=False))["items"]) == 3
    for call in (lambda: core.list_pod_for_all_namespaces(), lambda: core.list_namespaced_pod("gpu-operator"),
                 lambda: core.list_namespaced_event("ml")):
        with pytest.raises(ApiException) as exc:
            call()
        assert exc.value.status == 403


def test_wrong_token_is_401(srv, tmp_path):
    api = _client(srv, tmp_path, user_token="wrong")
    try:
        with pytest.raises(ApiException) as exc:
            kubernetes.client.CoreV1Api(api).list_node(_preload_content=False)
        assert exc.value.status == 401 and _status(exc.value)["reason"] == "Unauthorized"
    finally:
        api.close()


def test_kubeconfig_with_second_context_and_merge(srv, tmp_path):
    path = tmp_path / "kubeconfig"
    srv.write_kubeconfig(path, context="prod", extra_contexts=[("prod-ml", "ml")])
    with SnapshotAPIServer([GPU_NODE], token="other") as other:
        other.write_kubeconfig(path, context="staging", merge=True)
        for context, expected in (("prod", 3), ("prod-ml", 3), ("staging", 1)):
            api = kubernetes.config.new_client_from_config(config_file=str(path), context=context)
            assert len(_data(kubernetes.client.CoreV1Api(api).list_node(_preload_content=False))["items"]) == expected
            api.close()
    assert json.loads(path.read_text())["current-context"] == "prod"


# -- patch -----------------------------------------------------------------------------------


def test_merge_patch_node_labels_and_dry_run(srv, core):
    body = {"metadata": {"labels": {"gpuctl.io/drain": "true"}}}
    dry = _data(core.patch_node("gpu-a100-0", body, dry_run="All", _content_type="application/merge-patch+json",
                                _preload_content=False))
    assert dry["metadata"]["labels"]["gpuctl.io/drain"] == "true"
    assert "gpuctl.io/drain" not in _data(core.read_node("gpu-a100-0", _preload_content=False))["metadata"]["labels"]

    before = _data(core.read_node("gpu-a100-0", _preload_content=False))["metadata"]["resourceVersion"]
    patched = _data(core.patch_node("gpu-a100-0", body, field_manager="gpuctl",
                                    _content_type="application/merge-patch+json", _preload_content=False))
    assert int(patched["metadata"]["resourceVersion"]) > int(before)
    labels = _data(core.read_node("gpu-a100-0", _preload_content=False))["metadata"]["labels"]
    assert labels["gpuctl.io/drain"] == "true" and labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert next(o for o in srv.objects if o["metadata"]["name"] == "gpu-a100-0")["metadata"]["labels"][
        "gpuctl.io/drain"] == "true"

    # the client's default for dict bodies is a strategic merge patch; deleting a label with null
    core.patch_node("gpu-a100-0", {"metadata": {"labels": {"gpuctl.io/drain": None}}})
    assert "gpuctl.io/drain" not in _data(core.read_node("gpu-a100-0", _preload_content=False))["metadata"]["labels"]


def test_patch_precondition_conflict_and_json_patch(core):
    with pytest.raises(ApiException) as exc:
        core.patch_node("cpu-0", {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
                        _content_type="application/merge-patch+json")
    assert exc.value.status == 409 and _status(exc.value)["reason"] == "Conflict"
    ops = [{"op": "test", "path": "/metadata/labels/pool", "value": "system"},
           {"op": "add", "path": "/spec/unschedulable", "value": True}]
    assert _data(core.patch_node("cpu-0", ops, _preload_content=False))["spec"]["unschedulable"] is True
    assert _names(_data(core.list_node(field_selector="spec.unschedulable=true", _preload_content=False))) == ["cpu-0"]
    with pytest.raises(ApiException) as exc:
        core.patch_node("cpu-0", [{"op": "test", "path": "/metadata/labels/pool", "value": "gpu"}])
    assert exc.value.status == 422


# -- transport -------------------------------------------------------------------------------


def _raw(server: SnapshotAPIServer, path: str, headers: dict | None = None, timeout: float = 5):
    req = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer {TOKEN}", **(headers or {})})
    return urllib.request.urlopen(req, timeout=timeout)


def test_gzip_when_asked(srv):
    with _raw(srv, "/api/v1/nodes", {"Accept-Encoding": "gzip"}) as resp:
        assert resp.headers["Content-Encoding"] == "gzip"
        assert resp.headers["Content-Type"] == "application/json"
        assert len(json.loads(gzip.decompress(resp.read()))["items"]) == 3
    with _raw(srv, "/api/v1/nodes") as resp:
        assert resp.headers.get("Content-Encoding") is None


def test_missing_crd_is_404_and_present_crd_is_served(srv, tmp_path):
    api = _client(srv, tmp_path)
    custom = kubernetes.client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as exc:
        custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    assert exc.value.status == 404
    assert _status(exc.value)["message"] == "the server could not find the requested resource"
    api.close()

    queue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "gpu-cq"},
             "spec": {"namespaceSelector": {}}}
    with SnapshotAPIServer([queue], token=TOKEN) as kueue:
        api = _client(kueue, tmp_path)
        custom = kubernetes.client.CustomObjectsApi(api)
        assert _names(custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues")) == ["gpu-cq"]
        # same CRD group, no objects of this kind: an empty list, not a 404
        assert custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", "ml", "localqueues")["items"] == []
        # CRDs take merge patches (the CustomObjectsApi default) but not strategic merge patches
        custom.patch_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "gpu-cq",
                                           {"spec": {"cohort": "gpus"}})
        assert kueue.objects[0]["spec"] == {"namespaceSelector": {}, "cohort": "gpus"}
        with pytest.raises(ApiException) as exc:
            custom.patch_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "gpu-cq", {"spec": {}},
                                               _content_type="application/strategic-merge-patch+json")
        assert exc.value.status == 415
        with pytest.raises(ApiException) as exc:
            custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "nope")
        assert _status(exc.value)["message"] == 'clusterqueues.kueue.x-k8s.io "nope" not found'
        groups = {g["name"] for g in json.loads(_raw(kueue, "/apis").read())["groups"]}
        assert "kueue.x-k8s.io" in groups and "apps" in groups and "scheduling.volcano.sh" not in groups
        api.close()


def test_version_and_request_log(srv, tmp_path):
    api = _client(srv, tmp_path)
    assert kubernetes.client.VersionApi(api).get_code().git_version == "v1.31.0"
    api.close()
    assert [(r.method, r.path, r.status) for r in srv.requests] == [("GET", "/version/", 200)]  # as the client sends it
    srv.reset_requests()
    assert srv.requests == []


# -- faults ----------------------------------------------------------------------------------


def test_fault_429_has_retry_after(srv):
    srv.add_fault(Fault(r"^/api/v1/nodes$", status=429, headers={"Retry-After": "2"}))
    with pytest.raises(urllib.error.HTTPError) as exc:
        _raw(srv, "/api/v1/nodes")
    assert exc.value.code == 429 and exc.value.headers["Retry-After"] == "2"
    assert json.loads(exc.value.read())["reason"] == "TooManyRequests"
    with _raw(srv, "/api/v1/nodes") as resp:  # times=1: the next request succeeds
        assert resp.status == 200
    assert [r.status for r in srv.requests] == [429, 200]


def test_fault_reset_raises_connection_error(srv, core):
    # urllib3 (under the kubernetes client) retries idempotent GETs 3 times by default,
    # so a single reset is invisible to the client...
    srv.add_fault(Fault("/api/v1/nodes", kind="reset", times=1))
    assert len(_data(core.list_node(_preload_content=False))["items"]) == 3
    assert [r.status for r in srv.requests] == [0, 200]
    # ...and only a persistent one surfaces as a connection error.
    srv.add_fault(Fault("/api/v1/nodes", kind="reset", times=None))
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_node(_preload_content=False)


def test_fault_status_badjson_and_gone(srv, core):
    srv.add_fault(Fault("/namespaces/ml/pods$", status=503))
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("ml")
    assert exc.value.status == 503
    srv.add_fault(Fault("/namespaces/ml/pods$", kind="badjson"))
    with pytest.raises(ValueError):
        json.loads(core.list_namespaced_pod("ml", _preload_content=False).data)
    srv.add_fault(Fault("continue=", kind="gone"))
    token = _data(core.list_namespaced_pod("ml", limit=1, _preload_content=False))["metadata"]["continue"]
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("ml", limit=1, _continue=token)
    assert exc.value.status == 410 and _status(exc.value)["reason"] == "Expired"


def test_hang_fault_times_out_and_does_not_block_shutdown():
    server = SnapshotAPIServer(OBJECTS, token=TOKEN).start()
    server.add_fault(Fault("/api/v1/nodes", kind="hang", delay=30))
    with pytest.raises(OSError):  # socket timeout (URLError/TimeoutError are OSErrors)
        _raw(server, "/api/v1/nodes", timeout=0.3)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
