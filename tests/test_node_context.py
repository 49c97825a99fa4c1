"""`diagnose node` reads what it has: a clean device-plugin log is evidence of no Xid,
and a cordoned node says when and by whom, and which Pending pods wait for it."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT, SCENARIOS, snapshot_of

DEMO = ROOT / "examples" / "demo-cluster"
CORDONED = snapshot_of(SCENARIOS / "node-unschedulable")


def _check(doc, name):
    return next(c for c in doc["checks"] if c["name"] == name)


def test_a_clean_device_plugin_log_is_evidence_not_a_missing_source(cli):
    doc = cli("diagnose", "node", "ip-10-42-66-141.us-west-2.compute.internal", "--snapshot", str(DEMO), "-o", "json").json()
    xid = _check(doc, "xid")
    assert xid["status"] == "passed", xid
    assert "no Xid in" in xid["detail"] and "lines of gpu-operator/nvidia-device-plugin-daemonset" in xid["detail"]


def test_without_any_log_the_source_is_named_missing(cli):
    doc = cli("diagnose", "node", "gpu-a100-3", "--snapshot", str(CORDONED), "-o", "json").json()
    assert _check(doc, "xid")["status"] == "skipped"


def test_a_cordoned_node_says_since_when_and_who_waits(cli):
    doc = cli("diagnose", "node", "gpu-a100-3", "--snapshot", str(CORDONED), "-o", "json").json()
    f = next(f for f in doc["findings"] if f["code"] == "node-unschedulable")
    assert "1 Pending GPU pod" in f["summary"]
    assert any("2026-11-20T00:32:00Z" in e for e in f["evidence"])
    assert any("ml-research/pretrain-1b-sweep-r4n7t" in e for e in f["evidence"])
    assert any(c.endswith("kubectl uncordon gpu-a100-3") for fx in f["fixes"] for c in fx["commands"])


def test_who_cordoned_it_from_managed_fields_and_the_kubelet_event(cli, tmp_path, serve):
    snap = tmp_path / "snap"
    shutil.copytree(CORDONED, snap)
    doc = json.loads((snap / "cluster.json").read_text())
    node = next(o for o in doc["items"] if o["kind"] == "Node" and o["metadata"]["name"] == "gpu-a100-3")
    node["metadata"]["managedFields"] = [
        {"manager": "kubelet", "operation": "Update", "time": "2026-10-05T09:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:status": {"f:conditions": {}}}},
        {"manager": "kubectl-cordon", "operation": "Update", "time": "2026-11-20T00:32:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:unschedulable": {}}}}]
    # kubelet's recordNodeSchedulableEvent: reason NodeNotSchedulable, "Node %s status is now: %s"
    doc["items"].append({"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "NodeNotSchedulable",
                         "message": "Node gpu-a100-3 status is now: NodeNotSchedulable",
                         "metadata": {"name": "gpu-a100-3.1879a", "namespace": "default"},
                         "involvedObject": {"kind": "Node", "name": "gpu-a100-3", "uid": "gpu-a100-3"},
                         "source": {"component": "kubelet", "host": "gpu-a100-3"},
                         "firstTimestamp": "2026-11-20T00:32:01Z", "lastTimestamp": "2026-11-20T00:32:01Z", "count": 1})
    (snap / "cluster.json").write_text(json.dumps(doc))
    out = cli("diagnose", "node", "gpu-a100-3", "--snapshot", str(snap), "-o", "json").json()
    ev = next(f for f in out["findings"] if f["code"] == "node-unschedulable")["evidence"]
    assert any("set by kubectl-cordon at 2026-11-20T00:32:00Z" in e for e in ev), ev
    assert any("NodeNotSchedulable from kubelet" in e for e in ev), ev
    assert not any("kubelet at 2026-10-05" in e for e in ev)
    # live: the same, through the API server (managedFields come with a live read)
    srv, kc = serve(snap)
    live = cli("diagnose", "node", "gpu-a100-3", "--kubeconfig", kc, "-o", "json").json()
    lev = next(f for f in live["findings"] if f["code"] == "node-unschedulable")["evidence"]
    assert any("kubectl-cordon" in e for e in lev) and any("pretrain-1b-sweep" in e for e in lev), lev


def test_the_demo_nightly_eval_waits_for_the_cordoned_a100(cli):
    doc = cli("diagnose", "node", "ip-10-42-50-173.us-west-2.compute.internal", "--snapshot", str(DEMO), "-o", "json").json()
    f = next(f for f in doc["findings"] if f["code"] == "node-unschedulable")
    assert "batch/nightly-eval-28811" in " ".join(f["evidence"])


def test_a_cordoned_node_nobody_waits_for_is_a_note(cli, tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(CORDONED, snap)
    doc = json.loads((snap / "cluster.json").read_text())
    doc["items"] = [o for o in doc["items"] if not (o["kind"] == "Pod" and o["status"].get("phase") == "Pending")]
    (snap / "cluster.json").write_text(json.dumps(doc))
    out = cli("diagnose", "node", "gpu-a100-3", "--snapshot", str(snap), "-o", "json").json()
    assert "node-unschedulable" not in [f["code"] for f in out["findings"]]
    c = _check(out, "cordon")
    assert c["status"] == "passed" and "no Pending GPU pod waits" in c["detail"] and "00:32:00Z" in c["detail"]
