"""WATCH on the local API servers, driven over real HTTP by real clients: the
``kubernetes`` client's ``watch.Watch().stream`` and a plain urllib3 reader.

The tests' server (tests/support/kubeapi.py) changes objects from another thread
(``put``/``delete`` and the write verbs) and its open watches stream ADDED, MODIFIED
and DELETED as they happen; bookmarks come when asked for; a resourceVersion older
than the event log answers 410 Expired as an ERROR event; a dropped connection ends
the stream; selectors filter events as kube-apiserver's watch cache does (an update
that leaves the selection is DELETED). The product server (``gpuctl snapshot serve``,
read-only) streams the initial ADDED events and bookmarks and ends at timeoutSeconds.

Timing is only ever "arrives within N seconds", with N generous.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
import urllib3
import yaml
from kubernetes import client, config, watch

from conftest import ROOT, SCENARIOS, snapshot_of
from gpuctl.apiserver.server import ReadOnlyAPIServer
from gpuctl.collect.files import iter_raw_objects

TAINT = snapshot_of(SCENARIOS / "untolerated-taint")
WITHIN = 10.0          # seconds: "arrives within" bound for every event


def pod(name: str, ns: str = "ml", labels: dict | None = None, phase: str = "Pending") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": dict(labels or {})},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": phase}}


def core(kubeconfig) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))


class Consumer:
    """Iterate a watch generator in a thread; events (or the end, or the exception)
    arrive on a queue, so the test thread can change objects meanwhile."""

    def __init__(self, gen):
        self.q: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, args=(gen,), daemon=True)
        self.thread.start()

    def _run(self, gen):
        try:
            for ev in gen:
                self.q.put(("event", ev))
            self.q.put(("end", None))
        except Exception as exc:  # noqa: BLE001 - handed to the test
            self.q.put(("error", exc))

    def next(self, timeout: float = WITHIN):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"nothing from the watch within {timeout} s")

    def event(self, skip_bookmarks: bool = True, timeout: float = WITHIN) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            what, ev = self.next(max(0.1, deadline - time.monotonic()))
            assert what == "event", (what, ev)
            if not (skip_bookmarks and ev["type"] == "BOOKMARK"):
                return ev

    def until_end(self, timeout: float = WITHIN) -> tuple[str, list, object]:
        events = []
        deadline = time.monotonic() + timeout
        while True:
            what, ev = self.next(max(0.1, deadline - time.monotonic()))
            if what == "event":
                events.append(ev)
            else:
                return what, events, ev


def raw_watch(srv, path: str, **headers):
    http = urllib3.PoolManager()
    hdrs = {"Authorization": f"Bearer {srv.token}"} if getattr(srv, "token", None) else {}
    hdrs.update(headers)
    return http.request("GET", srv.url + path, headers=hdrs, preload_content=False, timeout=urllib3.Timeout(30))


def lines(resp) -> list[dict]:
    return [json.loads(line) for line in resp.read().decode().splitlines() if line]


# ---------------------------------------------------------------------------
# (a) the kubernetes client sees ADDED, MODIFIED and DELETED as they happen
# ---------------------------------------------------------------------------


def test_the_kubernetes_client_streams_adds_updates_and_deletes_made_meanwhile(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    listed = api.list_pod_for_all_namespaces()
    rv = listed.metadata.resource_version
    assert rv == srv.resource_version        # a list answers the store's current resourceVersion
    w = watch.Watch()
    c = Consumer(w.stream(api.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=60))
    assert srv.wait_for_watches(1)

    srv.put(pod("new-pod"))
    added = c.event()
    assert added["type"] == "ADDED" and added["object"].metadata.name == "new-pod"
    assert int(added["object"].metadata.resource_version) > int(rv)

    changed = srv.get("pods", "ml", "new-pod")
    changed["status"]["phase"] = "Running"
    srv.put(changed)
    modified = c.event()
    assert modified["type"] == "MODIFIED" and modified["object"].status.phase == "Running"
    assert int(modified["object"].metadata.resource_version) > int(added["object"].metadata.resource_version)

    # a write verb over HTTP goes through the same log
    api.patch_namespaced_pod("pretrain-1a-gjf24", "ml-research", {"metadata": {"labels": {"seen": "yes"}}})
    patched = c.event()
    assert patched["type"] == "MODIFIED" and patched["object"].metadata.labels["seen"] == "yes"

    assert srv.delete("pods", "ml", "new-pod") is not None
    deleted = c.event()
    assert deleted["type"] == "DELETED" and deleted["object"].metadata.name == "new-pod"
    assert deleted["object"].status.phase == "Running"           # the last state
    assert int(deleted["object"].metadata.resource_version) > int(modified["object"].metadata.resource_version)
    assert w.resource_version == deleted["object"].metadata.resource_version
    srv.drop_watches(clean=True)        # (Watch.stop() from this thread would shut the client's socket)
    what, events, exc = c.until_end()
    assert what == "end" and events == [], repr(exc)


def test_a_watch_from_a_resource_version_replays_the_log_after_it(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    rv = api.list_node(_preload_content=False).json()["metadata"]["resourceVersion"]
    node = srv.get("nodes", name="gpu-a100-1")
    node["spec"]["unschedulable"] = True
    srv.put(node)
    srv.delete("nodes", name="gpu-a100-2")
    srv.put(pod("not-a-node"))                                   # another resource: not in this watch
    # (this client's V1Node model rejects the snapshot's nodes: plain JSON events)
    events = list(watch.Watch().stream(api.list_node, resource_version=rv, timeout_seconds=1, deserialize=False))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "gpu-a100-1"), ("DELETED", "gpu-a100-2")]
    assert events[0]["object"]["spec"]["unschedulable"] is True
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        events[0]["object"]["metadata"]["resourceVersion"]) > int(rv)


def test_without_a_resource_version_the_current_objects_come_first_as_added(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    c = Consumer(watch.Watch().stream(api.list_namespaced_pod, "ml-team", timeout_seconds=60))
    first = c.event()
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "ablation-4a-bq854")
    assert srv.wait_for_watches(1)
    srv.put(pod("late", ns="ml-team"))
    srv.put(pod("elsewhere", ns="ml"))                           # another namespace: not in this watch
    srv.put(pod("late2", ns="ml-team"))
    assert [(e["type"], e["object"].metadata.name) for e in (c.event(), c.event())] == [
        ("ADDED", "late"), ("ADDED", "late2")]
    srv.drop_watches(clean=True)
    assert c.until_end()[0] == "end"


def test_a_plain_urllib3_reader_gets_each_event_as_it_is_written(serve):
    """Chunked transfer encoding, one JSON event per line, flushed per event: the
    event is read while the watch (30 s) is still open."""
    srv, _ = serve(TAINT)
    rv = srv.resource_version
    resp = raw_watch(srv, f"/api/v1/namespaces/ml/pods?watch=true&resourceVersion={rv}&timeoutSeconds=30")
    assert resp.status == 200 and resp.headers["Transfer-Encoding"] == "chunked"
    assert resp.headers["Content-Type"] == "application/json"
    chunks = resp.read_chunked()
    assert srv.wait_for_watches(1)
    started = time.monotonic()
    srv.put(pod("one"))
    got = json.loads(next(chunks))
    assert got["type"] == "ADDED" and got["object"]["metadata"]["name"] == "one"
    srv.delete("pods", "ml", "one")
    got = json.loads(next(chunks))
    assert got["type"] == "DELETED" and got["object"]["metadata"]["name"] == "one"
    assert time.monotonic() - started < 20             # long before the watch's 30 s were up
    resp.release_conn()
    srv.drop_watches()


# ---------------------------------------------------------------------------
# (b) bookmarks
# ---------------------------------------------------------------------------


def test_bookmarks_arrive_when_asked_for_and_carry_the_current_resource_version(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    rv = api.list_pod_for_all_namespaces().metadata.resource_version
    w = watch.Watch()
    c = Consumer(w.stream(api.list_pod_for_all_namespaces, resource_version=rv, allow_watch_bookmarks=True,
                          timeout_seconds=60))
    bookmark = c.event(skip_bookmarks=False)
    assert bookmark["type"] == "BOOKMARK"                 # bookmark_interval is 1 s on the tests' server
    assert bookmark["raw_object"] == {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}
    srv.put(pod("p"))
    ev = c.event()
    assert ev["type"] == "ADDED"
    while True:                                         # the next bookmark has moved on with the log
        bookmark = c.event(skip_bookmarks=False)
        if bookmark["type"] == "BOOKMARK":
            break
    assert bookmark["raw_object"]["metadata"]["resourceVersion"] == ev["object"].metadata.resource_version
    assert w.resource_version == ev["object"].metadata.resource_version
    srv.drop_watches(clean=True)


def test_no_bookmarks_unless_asked_and_one_when_the_watch_times_out(serve):
    srv, _ = serve(TAINT)
    plain = lines(raw_watch(srv, f"/api/v1/nodes?watch=true&resourceVersion={srv.resource_version}"
                                 "&timeoutSeconds=2"))
    assert plain == []
    asked = lines(raw_watch(srv, f"/api/v1/nodes?watch=true&resourceVersion={srv.resource_version}"
                                 "&timeoutSeconds=2&allowWatchBookmarks=true"))
    assert asked and all(e["type"] == "BOOKMARK" for e in asked)
    assert asked[-1]["object"] == {"kind": "Node", "apiVersion": "v1",
                                   "metadata": {"resourceVersion": srv.resource_version}}


def test_send_initial_events_ends_them_with_an_annotated_bookmark(serve):
    srv, _ = serve(TAINT)
    got = lines(raw_watch(srv, "/api/v1/nodes?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                               "&allowWatchBookmarks=true&timeoutSeconds=1"))
    assert [e["type"] for e in got[:5]] == ["ADDED"] * 4 + ["BOOKMARK"]
    assert got[4]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


# ---------------------------------------------------------------------------
# (c) an expired resourceVersion
# ---------------------------------------------------------------------------


def test_a_resource_version_older_than_the_log_is_a_410_error_event(serve):
    srv, kubeconfig = serve(TAINT, event_log_size=3)
    api = core(kubeconfig)
    old = api.list_pod_for_all_namespaces().metadata.resource_version
    for i in range(4):                                  # 4 changes, 3 kept: the first is gone
        srv.put(pod(f"p{i}"))
    # HTTP 200 and one ERROR event, as kube-apiserver's watch cache answers
    resp = raw_watch(srv, f"/api/v1/pods?watch=true&resourceVersion={old}&timeoutSeconds=5")
    assert resp.status == 200
    floor = int(srv.resource_version) - 3
    assert lines(resp) == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: {old} ({floor})", "reason": "Expired", "code": 410}}]
    # the kubernetes client (with timeout_seconds it does not retry) raises ApiException 410
    with pytest.raises(client.ApiException) as err:
        list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=old, timeout_seconds=5))
    assert err.value.status == 410 and "too old resource version" in err.value.reason
    # the floor itself is still served: the last 3 changes
    events = list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=str(floor),
                                       timeout_seconds=1))
    assert [e["object"].metadata.name for e in events] == ["p1", "p2", "p3"]


def test_compact_expires_every_resource_version_handed_out(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    rv = api.list_pod_for_all_namespaces().metadata.resource_version
    srv.compact()
    with pytest.raises(client.ApiException) as err:
        list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=5))
    assert err.value.status == 410
    # relist, then watch from the new resourceVersion: fine again
    fresh = api.list_pod_for_all_namespaces().metadata.resource_version
    assert int(fresh) > int(rv)
    c = Consumer(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=fresh, timeout_seconds=30))
    assert srv.wait_for_watches(1)
    srv.put(pod("after"))
    assert c.event()["object"].metadata.name == "after"
    srv.drop_watches(clean=True)


def test_expire_watches_makes_the_next_watch_of_a_resource_a_410(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    rv = srv.resource_version
    srv.expire_watches("pods")
    assert list(watch.Watch().stream(api.list_node, resource_version=rv, timeout_seconds=1)) == []
    with pytest.raises(client.ApiException) as err:
        list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=5))
    assert err.value.status == 410
    # only once
    assert list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=1)) == []


def test_a_future_resource_version_is_a_504_too_large_after_a_wait(serve):
    srv, _ = serve(TAINT)
    ahead = int(srv.resource_version) + 100
    got = lines(raw_watch(srv, f"/api/v1/pods?watch=true&resourceVersion={ahead}&timeoutSeconds=30"))
    assert len(got) == 1 and got[0]["type"] == "ERROR"
    assert got[0]["object"]["code"] == 504
    assert got[0]["object"]["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    bad = raw_watch(srv, "/api/v1/pods?watch=true&resourceVersion=abc")
    assert bad.status == 400


# ---------------------------------------------------------------------------
# (d) dropped connections
# ---------------------------------------------------------------------------


def test_drop_watches_ends_the_stream_mid_response(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    rv = srv.resource_version
    c = Consumer(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=60))
    assert srv.wait_for_watches(1)
    srv.put(pod("before-drop"))
    assert c.event()["object"].metadata.name == "before-drop"
    assert srv.drop_watches() == 1
    what, events, exc = c.until_end()
    assert what == "error" and events == []
    # the response ended without its last chunk: urllib3 says so
    assert isinstance(exc, urllib3.exceptions.ProtocolError), repr(exc)
    assert srv.open_watches == 0
    # the server goes on: a new watch from the last resourceVersion resumes
    srv.put(pod("after-drop"))
    events = list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=1))
    assert [e["object"].metadata.name for e in events] == ["before-drop", "after-drop"]


def test_a_clean_drop_ends_the_stream_as_a_timeout_does(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    c = Consumer(watch.Watch().stream(api.list_node, resource_version=srv.resource_version, timeout_seconds=60))
    assert srv.wait_for_watches(1)
    assert srv.drop_watches(clean=True) == 1
    assert c.until_end()[:2] == ("end", [])


def test_slow_watches_delay_events_but_lose_none(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    srv.slow_watches(0.2)
    c = Consumer(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=srv.resource_version,
                                      timeout_seconds=60))
    assert srv.wait_for_watches(1)
    for i in range(3):
        srv.put(pod(f"s{i}"))
    assert [c.event()["object"].metadata.name for _ in range(3)] == ["s0", "s1", "s2"]
    srv.slow_watches(0)
    srv.drop_watches(clean=True)


# ---------------------------------------------------------------------------
# (e) selectors filter events, as the watch cache does
# ---------------------------------------------------------------------------


def test_label_selector_events_and_objects_moving_in_and_out_of_it(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    c = Consumer(watch.Watch().stream(api.list_pod_for_all_namespaces, label_selector="team=a",
                                      resource_version=srv.resource_version, timeout_seconds=60))
    assert srv.wait_for_watches(1)
    srv.put(pod("a1", labels={"team": "a"}))
    srv.put(pod("b1", labels={"team": "b"}))                   # never seen
    moved = srv.get("pods", "ml", "a1")
    moved["metadata"]["labels"]["team"] = "b"
    srv.put(moved)                                            # leaves the selection: DELETED
    back = srv.get("pods", "ml", "b1")
    back["metadata"]["labels"]["team"] = "a"
    srv.put(back)                                             # enters it: ADDED
    srv.delete("pods", "ml", "a1")                            # not in the selection any more: nothing
    srv.delete("pods", "ml", "b1")
    got = [(e["type"], e["object"].metadata.name, e["object"].metadata.labels["team"])
           for e in (c.event(), c.event(), c.event(), c.event())]
    assert got == [("ADDED", "a1", "a"), ("DELETED", "a1", "a"), ("ADDED", "b1", "a"), ("DELETED", "b1", "a")]
    srv.drop_watches(clean=True)
    assert c.until_end()[1] == []


def test_field_selector_pending_pods_that_get_scheduled_are_deleted_from_the_watch(serve):
    srv, kubeconfig = serve(TAINT)
    api = core(kubeconfig)
    srv.put(pod("waits"))
    c = Consumer(watch.Watch().stream(api.list_pod_for_all_namespaces, field_selector="status.phase=Pending",
                                      timeout_seconds=60))
    pending = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in srv.objects
                     if o["kind"] == "Pod" and (o.get("status") or {}).get("phase") == "Pending")
    assert ("ml", "waits") in pending and len(pending) > 1
    initial = []
    for _ in pending:
        ev = c.event()
        assert ev["type"] == "ADDED" and ev["object"].status.phase == "Pending"
        initial.append((ev["object"].metadata.namespace, ev["object"].metadata.name))
    assert initial == pending
    assert srv.wait_for_watches(1)
    running = srv.get("pods", "ml", "waits")
    running["status"]["phase"] = "Running"
    running["spec"]["nodeName"] = "gpu-a100-1"
    srv.put(running)
    ev = c.event()
    assert ev["type"] == "DELETED" and ev["object"].metadata.name == "waits"
    assert ev["object"].status.phase == "Pending"              # the state that matched, at the new version
    assert ev["object"].metadata.resource_version == srv.get("pods", "ml", "waits")["metadata"]["resourceVersion"]
    srv.drop_watches(clean=True)


def test_a_bad_selector_on_a_watch_is_the_lists_400(serve):
    srv, _ = serve(TAINT)
    resp = raw_watch(srv, "/api/v1/nodes?watch=true&fieldSelector=spec.nodeName%3Dx")
    assert resp.status == 400
    assert json.loads(resp.read())["message"] == "field label not supported: spec.nodeName"


# ---------------------------------------------------------------------------
# (f) the product server: read-only, initial ADDED events, bookmarks, timeoutSeconds
# ---------------------------------------------------------------------------


def test_the_product_server_streams_initial_events_and_bookmarks_and_ends_at_the_timeout():
    objects = list(iter_raw_objects(TAINT))
    pods = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Pod")
    with ReadOnlyAPIServer(objects, bookmark_interval=0.5) as srv:
        started = time.monotonic()
        got = lines(raw_watch(srv, "/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=2"))
        took = time.monotonic() - started
        assert 1.5 < took < WITHIN
        added = [e for e in got if e["type"] == "ADDED"]
        assert [(e["object"]["metadata"]["namespace"], e["object"]["metadata"]["name"]) for e in added] == pods
        marks = [e for e in got if e["type"] == "BOOKMARK"]
        assert len(marks) >= 2 and got[-1]["type"] == "BOOKMARK"
        assert {e["object"]["metadata"]["resourceVersion"] for e in marks} == {str(srv._store.rv)}
        assert [e["type"] for e in got] == ["ADDED"] * len(added) + ["BOOKMARK"] * len(marks)


def test_gpuctl_snapshot_serve_watch_with_the_kubernetes_client(tmp_path):
    """The real `gpuctl snapshot serve` process (bookmarks every 60 s: one, at the end)."""
    kubeconfig = tmp_path / "kubeconfig"
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GPUCTL_DEBUG")}
    env.update(HOME=str(ROOT / "tests" / "nohome"), NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "gpuctl", "snapshot", "serve", str(TAINT),
                             "--kubeconfig-out", str(kubeconfig)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (kubeconfig.exists() and yaml.safe_load(kubeconfig.read_text())) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.1)
        api = core(kubeconfig)
        listed = api.list_pod_for_all_namespaces()
        started = time.monotonic()
        events = list(watch.Watch().stream(api.list_pod_for_all_namespaces, allow_watch_bookmarks=True,
                                           timeout_seconds=2))
        assert 1.5 < time.monotonic() - started < WITHIN
        assert [e["type"] for e in events] == ["ADDED"] * len(listed.items) + ["BOOKMARK"]
        assert [e["object"].metadata.name for e in events[:-1]] == [p.metadata.name for p in listed.items]
        assert events[-1]["raw_object"] == {"kind": "Pod", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": listed.metadata.resource_version}}
        # from the list's resourceVersion: nothing happens to a snapshot, then the end
        assert list(watch.Watch().stream(api.list_pod_for_all_namespaces,
                                         resource_version=listed.metadata.resource_version, timeout_seconds=1)) == []
        # an older one is gone, as on a cluster whose watch cache started later
        with pytest.raises(client.ApiException) as err:
            list(watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version="1", timeout_seconds=2))
        assert err.value.status == 410
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
