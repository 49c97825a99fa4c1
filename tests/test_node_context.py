"""`diagnose node` reads what it has: a clean device-plugin log is evidence of no
Xid (only a log never collected is a missing source), and a cordoned node says
when and by whom, and which Pending GPU pods would run on it once uncordoned.

The node-unschedulable scenario holds both cases: gpu-a100-3 (cordoned 2h40m
ago by kubectl, its kubelet event expired, no plugin log collected) and
gpu-a100-4 (cordoned 57m ago, kubelet's NodeNotSchedulable event still there, a
clean 53-line plugin log)."""

from __future__ import annotations

import json
import shutil

import msgspec

from conftest import ROOT, SCENARIOS, snapshot_of

DEMO = ROOT / "examples" / "demo-cluster"
CORDONED = snapshot_of(SCENARIOS / "node-unschedulable")
PLUGIN_LOG = "logs/gpu-operator/nvidia-device-plugin-daemonset-csrzv/nvidia-device-plugin.log"


def _check(doc, name):
    return next(c for c in doc["checks"] if c["name"] == name)


def _node(cli, name, snap=CORDONED, *more):
    r = cli("diagnose", "node", name, "--snapshot", str(snap), *more, "-o", "json")
    assert r.err == "", r.err
    return r.json()


def _cordon(doc):
    return next(f for f in doc["findings"] if f["code"] == "node-unschedulable")


def _copy(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(CORDONED, snap)
    return snap


# ------------------------------------------------------------------ device-plugin log


def test_a_clean_device_plugin_log_is_a_passed_check_with_its_size(cli):
    doc = _node(cli, "gpu-a100-4")
    dp = _check(doc, "device-plugin")
    assert dp["status"] == "passed"
    assert dp["detail"] == ("device-plugin log: no Xid/NVML errors in 53 lines of "
                            "gpu-operator/nvidia-device-plugin-daemonset-csrzv")
    xid = _check(doc, "xid")
    assert xid["status"] == "passed" and "no Xid in 53 lines of gpu-operator/nvidia-device-plugin-daemonset-csrzv" in xid["detail"]


def test_the_demo_clean_log_is_evidence_too(cli):
    doc = _node(cli, "ip-10-42-66-141.us-west-2.compute.internal", DEMO)
    assert _check(doc, "device-plugin")["detail"].startswith("device-plugin log: no Xid/NVML errors in ")
    xid = _check(doc, "xid")
    assert xid["status"] == "passed" and "lines of gpu-operator/nvidia-device-plugin-daemonset" in xid["detail"]


def test_only_a_log_never_collected_is_a_missing_source(cli):
    doc = _node(cli, "gpu-a100-3")
    assert _check(doc, "device-plugin")["detail"] == \
        "device-plugin log of gpu-operator/nvidia-device-plugin-daemonset-m2zb5 was not collected"
    xid = _check(doc, "xid")
    assert xid["status"] == "skipped" and "no device-plugin log" in xid["detail"]


def test_an_empty_log_is_read_not_missing(cli, tmp_path):
    snap = _copy(tmp_path)
    (snap / PLUGIN_LOG).write_text("")
    doc = _node(cli, "gpu-a100-4", snap)
    assert _check(doc, "device-plugin")["detail"].endswith(
        "no Xid/NVML errors in the empty log of gpu-operator/nvidia-device-plugin-daemonset-csrzv")
    assert _check(doc, "xid")["status"] == "passed"


def test_a_long_log_says_only_its_tail_was_searched(cli, tmp_path):
    snap = _copy(tmp_path)
    text = (snap / PLUGIN_LOG).read_text()
    filler = "".join(f"I1120 01:{i // 60:02d}:{i % 60:02d}.000000       1 server.go:300] ListAndWatch heartbeat\n"
                     for i in range(1000))
    (snap / PLUGIN_LOG).write_text(text + filler)
    doc = _node(cli, "gpu-a100-4", snap)
    assert "no Xid/NVML errors in the last 400 of 1053 lines of" in _check(doc, "device-plugin")["detail"]
    assert "no Xid in the last 400 of 1053 lines of" in _check(doc, "xid")["detail"]


def test_a_log_the_collector_could_not_read_says_why(cli, tmp_path):
    snap = _copy(tmp_path)
    meta = json.loads((snap / "snapshot.json").read_text())
    meta["logGaps"] = {"gpu-operator/nvidia-device-plugin-daemonset-m2zb5/nvidia-device-plugin": {
        "what": "read log of nvidia-device-plugin-daemonset-m2zb5/nvidia-device-plugin", "reason": "forbidden",
        "detail": 'pods "nvidia-device-plugin-daemonset-m2zb5" is forbidden: cannot get resource "pods/log"',
        "verb": "get", "resource": "pods/log", "namespace": "gpu-operator"}}
    (snap / "snapshot.json").write_text(json.dumps(meta))
    detail = _check(_node(cli, "gpu-a100-3", snap), "device-plugin")["detail"]
    assert detail.startswith("device-plugin log of gpu-operator/nvidia-device-plugin-daemonset-m2zb5 could not be read: ")
    assert "pods/log" in detail


def test_a_log_with_an_xid_is_not_called_clean(cli, tmp_path):
    snap = _copy(tmp_path)
    with (snap / PLUGIN_LOG).open("a") as f:
        f.write("I1120 02:58:10.000000       1 health.go:164] XidCriticalError: Xid=79 on Device=GPU-97a8596e-568f-5888-213b-ef953b2ac2e6; "
                "marking device as unhealthy.\n")
    doc = _node(cli, "gpu-a100-4", snap)
    assert _check(doc, "device-plugin")["detail"].startswith("device-plugin log: 1 Xid/unhealthy line(s) in 54 lines of ")
    assert "xid-error" in [f["code"] for f in doc["findings"]]


# ------------------------------------------------------------------ cordon


def test_who_cordoned_it_and_when_from_managed_fields_and_the_taint(cli):
    f = _cordon(_node(cli, "gpu-a100-3"))
    ev = f["evidence"]
    assert "cordoned by kubectl (managedFields; its last write 2026-11-20T00:32:00Z, 2h40m ago)" in ev, ev
    assert "unschedulable taint added 2026-11-20T00:32:00Z, 2h40m ago" in ev, ev
    # the kubelet's status entry and GFD's labels entry are not "who cordoned it"
    assert not any("kubelet" in e or "gpu-feature-discovery" in e for e in ev), ev


def test_the_kubelet_event_says_when_while_it_is_kept(cli):
    ev = _cordon(_node(cli, "gpu-a100-4"))["evidence"]
    assert "kubelet event NodeNotSchedulable 2026-11-20T02:15:03Z, 56m ago" in ev, ev
    assert "cordoned by kubectl (managedFields; its last write 2026-11-20T02:15:00Z, 57m ago)" in ev, ev


def test_the_pending_gpu_pods_that_would_fit_are_counted_and_named(cli):
    f = _cordon(_node(cli, "gpu-a100-3"))
    assert f["summary"] == "gpu-a100-3 is cordoned while 2 Pending GPU pod(s) would fit on it"
    waiting = f["evidence"][-1]
    assert waiting == ("each would fit once uncordoned: ml-research/pretrain-1b-sweep-r4n7t (8 GPU), "
                       "ml-research/pretrain-1c-sweep-x2kq9 (8 GPU)")
    assert "eval-h100-sft" not in " ".join(f["evidence"])    # wants H100s: the cordon is not what holds it
    assert any(c == "kubectl uncordon gpu-a100-3" for fx in f["fixes"] for c in fx["commands"])


def test_live_reads_the_same_cordon_story(cli, serve):
    offline = _node(cli, "gpu-a100-4")
    srv, kc = serve(CORDONED)
    r = cli("diagnose", "node", "gpu-a100-4", "--kubeconfig", kc, "-o", "json")
    assert r.err == "", r.err
    live = r.json()
    assert _cordon(live) == _cordon(offline)
    assert _check(live, "device-plugin")["detail"] == _check(offline, "device-plugin")["detail"]


def test_the_demo_nightly_eval_waits_for_the_cordoned_a100(cli):
    f = _cordon(_node(cli, "ip-10-42-50-173.us-west-2.compute.internal", DEMO))
    assert "batch/nightly-eval-28811" in " ".join(f["evidence"])


def test_a_cordoned_node_nobody_waits_for_is_a_note(cli, tmp_path):
    snap = _copy(tmp_path)
    doc = json.loads((snap / "cluster.json").read_text())
    doc["items"] = [o for o in doc["items"] if not (o["kind"] == "Pod" and o["status"].get("phase") == "Pending")]
    (snap / "cluster.json").write_text(json.dumps(doc))
    out = _node(cli, "gpu-a100-3", snap)
    assert "node-unschedulable" not in [f["code"] for f in out["findings"]]
    c = _check(out, "cordon")
    assert c["status"] == "passed" and "no Pending GPU pod waits" in c["detail"] and "00:32:00Z" in c["detail"]


def test_pending_pods_that_could_not_be_listed_are_not_read_as_none(cli, tmp_path):
    snap = _copy(tmp_path)
    doc = json.loads((snap / "cluster.json").read_text())
    doc["items"] = [o for o in doc["items"] if not (o["kind"] == "Pod" and o["status"].get("phase") == "Pending")]
    (snap / "cluster.json").write_text(json.dumps(doc))
    meta = json.loads((snap / "snapshot.json").read_text())
    meta["gaps"] = {"pending-pods": {"what": "list Pending pods", "reason": "forbidden",
                                     "detail": 'pods is forbidden: cannot list resource "pods" at the cluster scope',
                                     "verb": "list", "resource": "pods"}}
    (snap / "snapshot.json").write_text(json.dumps(meta))
    detail = _check(_node(cli, "gpu-a100-3", snap), "cordon")["detail"]
    assert "Pending pods could not be listed" in detail and "no Pending GPU pod waits" not in detail


def test_a_node_record_keeps_only_the_managed_fields_entry_of_the_cordon():
    """A node's managedFields (kubelet status, NFD/GFD labels) weigh more than the
    node itself; a node record keeps the entry that owns spec.unschedulable only."""
    from gpuctl.model.objects import Node

    raw = json.loads((CORDONED / "cluster.json").read_text())
    node = next(o for o in raw["items"] if o["kind"] == "Node" and o["metadata"]["name"] == "gpu-a100-3")
    assert len(node["metadata"]["managedFields"]) == 5
    rec = msgspec.json.decode(json.dumps(node).encode(), type=Node)
    assert [(m.manager, m.time, m.fieldsV1) for m in rec.metadata.managedFields] == \
        [("kubectl", "2026-11-20T00:32:00Z", {"f:spec": {"f:unschedulable": {}}})]
