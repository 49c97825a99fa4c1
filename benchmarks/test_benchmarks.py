"""Smoke tests of the benchmark tooling on a small cluster (no timings asserted).

    python -m pytest benchmarks -q
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import floor, synth  # noqa: E402
sys.path.insert(0, str(ROOT / "tests"))   # the tests' API server: tests/support/kubeapi.py
from support.kubeapi import SnapshotAPIServer  # noqa: E402

NODES, PODS = 40, 1200


@pytest.fixture(scope="module")
def cluster() -> synth.Cluster:
    return synth.generate(NODES, PODS)


@pytest.fixture(scope="module")
def server(cluster, tmp_path_factory):
    srv = SnapshotAPIServer(cluster.objects(), logs=cluster.logs, token="t").start()
    kubeconfig = tmp_path_factory.mktemp("kc") / "config"
    srv.write_kubeconfig(kubeconfig, context="bench", namespace="ml")
    yield srv, str(kubeconfig)
    srv.stop()


def _gpuctl(*args: str) -> tuple[int, dict]:
    from gpuctl.cli import app

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = app.main(list(args))
    return code, json.loads(out.getvalue())


def test_generation_is_deterministic_and_shaped(cluster):
    again = synth.generate(NODES, PODS)
    assert list(again.iter_json()) == list(cluster.iter_json())
    assert list(synth.generate(NODES, PODS, seed=1).iter_json()) != list(cluster.iter_json())
    objs = cluster.objects()
    nodes = [o for o in objs if o["kind"] == "Node"]
    pods = [o for o in objs if o["kind"] == "Pod"]
    assert len(nodes) == NODES and len(pods) == PODS
    assert len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}) == PODS  # no key collisions
    assert len({n["metadata"]["name"] for n in nodes}) == NODES
    assert 6_000 < sum(map(len, cluster.nodes)) / NODES < 10_000
    assert 4_000 < sum(map(len, cluster.pods)) / PODS < 7_000
    assert all(len(n["metadata"]["labels"]) >= 40 for n in nodes)
    plugins = [p for p in pods if p["metadata"]["labels"].get("app") == "nvidia-device-plugin-daemonset"]
    assert sorted(p["spec"]["nodeName"] for p in plugins) == sorted(n["metadata"]["name"] for n in nodes)
    assert all(p["metadata"]["namespace"] == "gpu-operator" for p in plugins)
    mig = [n for n in nodes if synth.MIG_RESOURCE in n["status"]["allocatable"]]
    assert len(mig) == min(synth.MIG_NODES, NODES)
    phases = [p["status"]["phase"] for p in pods]
    assert phases.count("Running") > 0.85 * PODS
    assert {"Succeeded", "Failed", "Pending"} <= set(phases)
    # no node has 8 free GPUs: the 8-GPU target cannot fit anywhere
    used: dict[str, int] = {}
    for p in pods:
        if p["spec"].get("nodeName") and p["status"]["phase"] not in ("Succeeded", "Failed"):
            for c in p["spec"]["containers"]:
                used[p["spec"]["nodeName"]] = used.get(p["spec"]["nodeName"], 0) + int(
                    c["resources"].get("requests", {}).get("nvidia.com/gpu", 0))
    for n in nodes:
        assert int(n["status"]["allocatable"]["nvidia.com/gpu"]) - used.get(n["metadata"]["name"], 0) < 8
    target = next(p for p in pods if p["metadata"]["name"] == synth.TARGET)
    assert target["metadata"]["namespace"] == synth.TARGET_NS and "nodeName" not in target["spec"]
    assert target["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "8"
    event = next(o for o in objs if o["kind"] == "Event" and o["involvedObject"]["name"] == synth.TARGET)
    assert event["reason"] == "FailedScheduling"
    assert event["message"].startswith(f"0/{NODES} nodes are available: ") and "Insufficient nvidia.com/gpu" in event["message"]


def test_snapshot_directory_diagnoses_offline(cluster, tmp_path):
    snap = cluster.write_snapshot(tmp_path / "snap")
    assert json.loads((snap / "snapshot.json").read_text())["schema"] == "gpuctl/snapshot/v1"
    assert len(json.loads((snap / "cluster.json").read_text())["items"]) == len(list(cluster.iter_json()))
    code, doc = _gpuctl("diagnose", "pod", synth.TARGET, "-n", synth.TARGET_NS, "--snapshot", str(snap), "-o", "json")
    assert code == 1 and doc["findings"]


def test_floor_and_gpuctl_read_the_served_cluster(cluster, server):
    srv, kubeconfig = server
    expected = sum(1 for o in cluster.objects() if o["kind"] == "Pod" and o["spec"].get("nodeName")
                   and o["status"]["phase"] not in ("Succeeded", "Failed"))
    for encoding in ("identity", "gzip"):
        got = floor.lean(kubeconfig, encoding)
        assert got["nodes"] == NODES and got["pods"] == expected
    for name in (synth.TARGET, synth.TARGET_MIG):
        code, doc = _gpuctl("diagnose", "pod", name, "-n", synth.TARGET_NS, "--kubeconfig", kubeconfig, "-o", "json")
        assert code == 1 and doc["findings"], name
    # the MIG target has 20 candidate nodes: gpuctl asks for their pods node by node
    srv.reset_requests()
    _gpuctl("diagnose", "pod", synth.TARGET_MIG, "-n", synth.TARGET_NS, "--kubeconfig", kubeconfig, "-o", "json")
    per_node = [r for r in srv.requests if r.path == "/api/v1/pods"
                and r.query.get("fieldSelector", [""])[0].startswith("spec.nodeName=")
                and "status.phase!=Succeeded" in r.query["fieldSelector"][0]]
    assert len(per_node) == min(synth.MIG_NODES, NODES)


def test_server_pages_match_the_unpaged_list_across_a_patch(server):
    from kubernetes import client

    srv, kubeconfig = server
    core = client.CoreV1Api(client.ApiClient(_configuration(kubeconfig)))

    def names(**kw):
        out, token = [], None
        while True:
            data = json.loads(core.list_pod_for_all_namespaces(_continue=token, _preload_content=False, **kw).read())
            out += [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in data["items"]]
            token = data["metadata"].get("continue")
            if not token:
                return out

    sel = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    whole = names(field_selector=sel)
    assert names(field_selector=sel, limit=7) == whole == sorted(whole)
    node = json.loads(core.list_node(limit=1, _preload_content=False).read())["items"][0]["metadata"]["name"]
    core.patch_node(node, {"metadata": {"labels": {"bench/patched": "yes"}}})
    patched = json.loads(core.list_node(label_selector="bench/patched=yes", _preload_content=False).read())
    assert [n["metadata"]["name"] for n in patched["items"]] == [node]


def _configuration(kubeconfig: str):
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
    return cfg
