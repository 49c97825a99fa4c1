"""`label-nodes`: detection for every alias in the catalog, and labelling through
the local API server, which records what was written: only the label keys, nothing
on the default dry run, dryRun=All with --dry-run=server, nothing on a second apply."""

from __future__ import annotations

import json

import msgspec
import pytest

from conftest import ROOT
from support.kubeapi import Fault
from gpuctl.knowledge import catalog
from gpuctl.model.objects import Node
from gpuctl.reports.labels import DEFAULT_INCLUDED, plan_node, resolve_keys

DEMO = ROOT / "examples" / "demo-cluster"


def _node(labels: dict, name: str = "gpu-1") -> Node:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Node)


def _aliases():
    """(sku, kind, alias) for every alias of every SKU in the catalog (nvml, gfd, gke, karpenter, …)."""
    import yaml

    data = yaml.safe_load((ROOT / "gpuctl" / "knowledge" / "skus.yaml").read_text())
    for sku in data["skus"]:
        for kind, values in (sku.get("aliases") or {}).items():
            for text in values or []:
                yield sku, kind, str(text)


ALIASES = list(_aliases())


@pytest.mark.parametrize("sku, kind, alias", ALIASES, ids=[f"{s['id']}:{k}:{a}" for s, k, a in ALIASES])
def test_every_catalog_alias_is_detected(sku, kind, alias):
    """A node whose only GPU evidence is this alias is labelled with the alias's SKU
    type and memory (given the memory figure GFD or Karpenter would also publish)."""
    memory_mib = sku["memory_gib"] * 1024
    label = {"gke": ("cloud.google.com/gke-accelerator", None),
             "karpenter": ("karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-memory")}.get(
        kind, ("nvidia.com/gpu.product", "nvidia.com/gpu.memory"))
    labels = {label[0]: alias}
    if label[1]:
        labels[label[1]] = str(memory_mib)
    plan = plan_node(_node(labels), None, DEFAULT_INCLUDED, resolve_keys("", {}), overwrite=False)
    assert plan.status == "ok", (plan.status, plan.problems)
    assert plan.set == {"gpu-type": sku["type"], "gpu-memory": f"{sku['memory_gib']}Gi"}


def test_precedence_conflict_unknown_and_variants():
    keys = resolve_keys("", {})
    probe = {"gpus": [{"name": "NVIDIA H100 NVL", "memoryTotalMiB": 95830}] * 2}
    p = plan_node(_node({"node.kubernetes.io/instance-type": "p5.48xlarge"}), probe, DEFAULT_INCLUDED, keys, False)
    assert p.status == "conflict" and "probe says" in p.problems[0]          # probe h100-nvl vs p5 h100: reported
    p = plan_node(_node({}), probe, ("type", "memory", "count", "memory-gib"), keys, False)
    assert (p.source, p.set) == ("probe", {"gpu-type": "h100-nvl", "gpu-memory": "94Gi", "gpu-count": "2",
                                           "gpu-memory-gib": "94"})
    mixed = {"gpus": [{"name": "NVIDIA A100-SXM4-80GB"}, {"name": "NVIDIA L4"}]}
    assert plan_node(_node({}), mixed, DEFAULT_INCLUDED, keys, False).status == "conflict"
    assert plan_node(_node({"nvidia.com/gpu.product": "NVIDIA-Z9000"}), None, DEFAULT_INCLUDED, keys, False).status == "unknown"
    assert plan_node(_node({"kubernetes.io/os": "linux"}), None, DEFAULT_INCLUDED, keys, False).status == "no-gpu"
    p = plan_node(_node({"node.kubernetes.io/instance-type": "p4de.24xlarge", "example.com/gpu-type": "old"}), None,
                  DEFAULT_INCLUDED, resolve_keys("example.com/", {}), False)
    assert p.blocked == {"example.com/gpu-type": {"from": "old", "to": "a100"}} and "example.com/gpu-memory" in p.set


def _patches(srv):
    return [r for r in srv.requests if r.method == "PATCH"]


def test_dry_run_apply_idempotence_and_server_dry_run(cli, serve):
    srv, kc = serve(DEMO)
    r = cli("label-nodes", "--kubeconfig", kc, "-o", "json")
    assert r.code == 0 and _patches(srv) == [] and r.json()["applied"] is False
    to_set = {n["node"]: n["set"] for n in r.json()["nodes"] if n["set"]}
    assert to_set

    srv.reset_requests()
    r = cli("label-nodes", "--kubeconfig", kc, "--dry-run", "server", "-o", "json")
    patches = _patches(srv)
    assert patches and all(p.query.get("dryRun") == ["All"] for p in patches)
    assert {n["node"]: n["set"] for n in cli("label-nodes", "--kubeconfig", kc, "-o", "json").json()["nodes"] if n["set"]} == to_set

    srv.reset_requests()
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 0 and r.json()["applied"] is True
    patches = _patches(srv)
    assert len(patches) == len(to_set)
    for p in patches:
        assert p.headers.get("Content-Type", p.headers.get("content-type")) == "application/merge-patch+json"
        body = json.loads(p.body)
        node = p.path.rsplit("/", 1)[-1]
        assert set(body) == {"metadata"} and set(body["metadata"]) == {"labels", "resourceVersion"}
        assert body["metadata"]["labels"] == to_set[node]          # only the gpuctl keys
    srv.reset_requests()
    again = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert again.code == 0 and _patches(srv) == []                 # idempotent


def test_overwrite_needed_to_change_and_403_names_the_rule(cli, serve, tmp_path):
    from gpuctl.collect.files import iter_raw_objects
    from support.kubeapi import SnapshotAPIServer

    objs = list(iter_raw_objects(DEMO))
    target = next(o for o in objs if o["kind"] == "Node" and "gpu-type" in o["metadata"].get("labels", {}))
    target["metadata"]["labels"]["gpu-type"] = "wrong"
    name = target["metadata"]["name"]
    with SnapshotAPIServer(objs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        r = cli("label-nodes", name, "--kubeconfig", kc, "--apply", "-o", "json")
        plan = r.json()["nodes"][0]
        assert plan["needs_overwrite"]["gpu-type"]["from"] == "wrong"
        assert all("gpu-type" not in json.loads(p.body)["metadata"]["labels"] for p in _patches(srv))
        r = cli("label-nodes", name, "--kubeconfig", kc, "--apply", "--overwrite", "-o", "json")
        assert r.json()["nodes"][0]["changed"]["gpu-type"] == {"from": "wrong", "to": plan["needs_overwrite"]["gpu-type"]["to"]}
        srv.forbid("nodes", "patch")
        target_labels = next(o for o in srv.objects if o["metadata"]["name"] == name)["metadata"]["labels"]
        target_labels["gpu-type"] = "wrong-again"
        denied = cli("label-nodes", name, "--kubeconfig", kc, "--apply", "--overwrite")
        assert denied.code == 4 and "gpuctl-label-nodes" in denied.err and "'patch' on 'nodes'" in denied.err


def test_conflict_409_is_replanned_not_clobbered(cli, serve):
    srv, kc = serve(DEMO)
    srv.add_fault(Fault(path_regex="/api/v1/nodes/", method="PATCH", status=409, times=1))
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 0
    assert all(n.get("result", "").startswith(("patched", "unchanged")) or not n["set"] for n in r.json()["nodes"])


def test_unknown_node_exit_1_and_snapshot_refuses_apply(cli, tmp_path):
    doc = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "odd-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-Z9000"}},
         "status": {"capacity": {"nvidia.com/gpu": "8"}}}]}
    (tmp_path / "n.json").write_text(json.dumps(doc))
    r = cli("label-nodes", "--snapshot", str(tmp_path / "n.json"), "-o", "json")
    assert r.code == 1 and r.json()["nodes"][0]["status"] == "unknown"
    assert cli("label-nodes", "--snapshot", str(tmp_path / "n.json"), "--apply").code == 2


def test_probes_from_pods_fresh_own_node_only(cli, tmp_path, monkeypatch):
    from support.kubeapi import SnapshotAPIServer
    from gpuctl.collect.files import iter_raw_objects

    objs = list(iter_raw_objects(DEMO))
    gpu_nodes = [o["metadata"]["name"] for o in objs if o["kind"] == "Node" and "gpu-type" in o["metadata"].get("labels", {})]
    fresh_node, stale_node, liar_node = gpu_nodes[:3]
    monkeypatch.setenv("GPUCTL_NOW", "2026-11-20T03:12:00Z")
    logs = {}

    def probe_pod(name, node, doc_node, captured):
        objs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": "gpuctl", "labels": {"app.kubernetes.io/name": "gpuctl-probe"}},
                     "spec": {"nodeName": node, "containers": [{"name": "probe", "image": "gpuctl"}]},
                     "status": {"phase": "Running"}})
        doc = {"schema": "gpuctl/probe/v1", "node": doc_node, "capturedAt": captured,
               "gpus": [{"index": i, "name": "NVIDIA H100 NVL", "memoryTotalMiB": 95830} for i in range(8)]}
        logs[("gpuctl", name, "probe", False)] = "starting\n" + json.dumps(doc) + "\n"

    probe_pod("probe-a", fresh_node, fresh_node, "2026-11-20T03:05:00Z")
    probe_pod("probe-b", stale_node, stale_node, "2026-11-20T01:00:00Z")      # older than 30 minutes
    probe_pod("probe-c", liar_node, fresh_node, "2026-11-20T03:05:00Z")       # speaks for another node
    with SnapshotAPIServer(objs, logs=logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        doc = cli("label-nodes", fresh_node, stale_node, liar_node, "--kubeconfig", kc,
                  "--probes-from-pods", "gpuctl/app.kubernetes.io/name=gpuctl-probe", "-o", "json").json()
    by = {n["node"]: n for n in doc["nodes"]}
    assert by[fresh_node]["source"] == "probe" and by[fresh_node]["status"] == "conflict"   # NVL probe vs A100/H100 labels
    assert by[stale_node]["source"] == "gfd" and by[liar_node]["source"] == "gfd"


def test_interrupted_apply_leaves_nodes_whole_and_a_rerun_finishes(cli, serve):
    """One merge patch per node: a node is either untouched or fully labelled; a
    failure on one node does not stop the others, and a re-run completes the job."""
    srv, kc = serve(DEMO)
    plan = {n["node"]: n["set"] for n in cli("label-nodes", "--kubeconfig", kc, "-o", "json").json()["nodes"] if n["set"]}
    victim = sorted(plan)[1]
    srv.add_fault(Fault(path_regex=f"/api/v1/nodes/{victim}$", method="PATCH", status=500, times=None))
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 1
    results = {n["node"]: n.get("result", "") for n in r.json()["nodes"]}
    assert results[victim].startswith("failed") and sum(v == "patched" for v in results.values()) == len(plan) - 1
    for o in srv.objects:
        if o["kind"] == "Node" and o["metadata"]["name"] in plan:
            labels = o["metadata"].get("labels", {})
            present = [k for k in plan[o["metadata"]["name"]] if k in labels]
            assert present in ([], list(plan[o["metadata"]["name"]])), o["metadata"]["name"]
    srv.clear_faults()
    again = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert again.code == 0 and [n["node"] for n in again.json()["nodes"] if n.get("result") == "patched"] == [victim]


def test_a_label_changed_in_between_is_not_overwritten(cli, serve):
    """Another writer sets gpu-memory between gpuctl's read and its patch: the
    resourceVersion precondition fails (409), gpuctl re-reads, and without
    --overwrite leaves the other writer's value alone."""
    srv, kc = serve(DEMO)
    target = next(n["node"] for n in cli("label-nodes", "--kubeconfig", kc, "-o", "json").json()["nodes"]
                  if "gpu-memory" in n["set"])
    node = next(o for o in srv.objects if o["kind"] == "Node" and o["metadata"]["name"] == target)
    original = node["metadata"]["resourceVersion"]

    # Simulate the race: the first PATCH finds the node already changed by someone else.
    def race():
        node["metadata"]["labels"]["gpu-memory"] = "someone-else"
        node["metadata"]["resourceVersion"] = str(int(original) + 1000)

    srv.add_fault(Fault(path_regex=f"/api/v1/nodes/{target}$", method="PATCH", status=409, times=1))
    race()
    r = cli("label-nodes", target, "--kubeconfig", kc, "--apply", "-o", "json")
    n = r.json()["nodes"][0]
    assert n["needs_overwrite"]["gpu-memory"]["from"] == "someone-else"
    assert node["metadata"]["labels"]["gpu-memory"] == "someone-else"
    for p in _patches(srv):
        assert "gpu-memory" not in json.loads(p.body)["metadata"]["labels"]
