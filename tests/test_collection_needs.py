"""Needs drive collection: for every scenario, the live collector of its command
(through the real client, against the local API server) covers every data set
that the checks which apply to the target declare they read (``CheckSpec.reads``):
it read it, recorded a gap saying why not, or found from the target that there is
none of it to read. A new check that reads a data set no collector fetches fails
here instead of silently reading an empty list. ``snapshot save`` keeps them: a
bundle saved live holds each data set the scenario's checks read, object for object."""

from __future__ import annotations

import pytest

from conftest import SCENARIOS, expected_of, snapshot_of, target_of

from gpuctl.checks import registry
from gpuctl.checks.memo import Memo
from gpuctl.model.snapshot import DATA_SETS


def _scenarios():
    return sorted(s for s in SCENARIOS.iterdir() if (s / "expected.json").is_file())


def test_checks_read_only_known_data_sets():
    for spec in registry.SPECS:
        assert set(spec.reads) <= set(DATA_SETS), spec.name
        assert set(spec.needs) <= set(spec.reads), spec.name


def _contexts(snap, exp):
    """(target, context) for every check run of the scenario's diagnosis."""
    from gpuctl.checks.context import PodContext
    from gpuctl.checks.node_health import NodeContext
    from gpuctl.checks.workload import WorkloadContext
    from gpuctl.engine import split_target
    from gpuctl.engine.workload import find_workload
    from gpuctl.model.workloads import pods_of, resolve_kind

    memo = Memo()
    if exp.get("node"):
        return [("node", NodeContext(snap, snap.nodes[exp["node"]], memo))]
    ns, target = target_of(exp)
    kind, name = split_target(target)
    if kind in (None, "pod"):
        return [("pod", PodContext(snap, snap.pods[f"{ns}/{name}"], memo))]
    obj = find_workload(snap, resolve_kind(kind), kind, ns, name)
    pods = pods_of(snap, obj, kind)
    return [("workload", WorkloadContext(snap, obj, f"{kind}/{name}", bool(pods), memo))] + \
        [("pod", PodContext(snap, p, memo)) for p in pods]


def _collect(api, exp):
    from gpuctl.collect.live import collect_for_node, collect_for_pod, collect_for_workload
    from gpuctl.engine import split_target

    if exp.get("node"):
        return collect_for_node(api, exp["node"])
    ns, target = target_of(exp)
    kind, name = split_target(target)
    if kind in (None, "pod"):
        return collect_for_pod(api, ns, name)
    return collect_for_workload(api, ns, kind, name)


@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda p: p.name)
def test_the_live_collector_covers_what_the_checks_read(serve, scenario):
    from gpuctl.collect.kube import KubeAPI

    _, kubeconfig = serve(snapshot_of(scenario))
    exp = expected_of(scenario)
    snap = _collect(KubeAPI(kubeconfig, None, 15.0), exp)
    assert snap.collected is not None
    missing = {}
    for target, ctx in _contexts(snap, exp):
        for spec in registry.checks_for(target):
            if not spec.applies(ctx):
                continue
            lost = sorted(set(spec.reads) - snap.collected - set(snap.gaps))
            if lost:
                missing[f"{spec.name} ({getattr(ctx, 'name', '')})"] = lost
    assert missing == {}, "checks read data sets the live collector never fetched"


def test_the_rule_catches_a_check_reading_what_nobody_collects(serve):
    from gpuctl.collect.kube import KubeAPI

    scenario = SCENARIOS / "untolerated-taint"
    _, kubeconfig = serve(snapshot_of(scenario))
    exp = expected_of(scenario)
    snap = _collect(KubeAPI(kubeconfig, None, 15.0), exp)
    # a check of the pod declaring it reads the node's pool peers (collected only for diagnose node)
    assert "pool" not in snap.collected and "pool" not in snap.gaps


def _views(snap):
    """What each data set holds, comparably (objects by name; logs and metrics by key)."""
    from gpuctl.knowledge.catalog import labels_mark_device_plugin

    def names(*kinds):
        return sorted(f"{k}/{o.metadata.namespace}/{o.metadata.name}" for k in kinds for o in snap.objects(k))

    return {
        "nodes": sorted(snap.nodes), "pods": sorted(snap.pods),
        "events": sorted((e.involvedObject.kind, e.involvedObject.name, e.reason or "", e.message or "") for e in snap.events),
        "resourcequotas": sorted(q.metadata.name for q in snap.quotas),
        "device-plugin-pods": sorted(k for k, p in snap.pods.items()
                                     if labels_mark_device_plugin(p.metadata.labels, p.metadata.namespace)),
        "persistentvolumeclaims": sorted(snap.pvcs), "runtimeclasses": sorted(snap.runtime_classes),
        "queues": names("Workload", "PodGroup", "ClusterQueue", "LocalQueue", "Queue"),
        "dra": names("ResourceClaim", "DeviceClass", "ResourceSlice"),
        "dcgm-metrics": sorted(snap.metrics),
    }


@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda p: p.name)
def test_snapshot_save_keeps_what_the_checks_read(cli, serve, scenario, tmp_path):
    """A bundle saved live holds, for every data set the checks read, what the
    cluster held, and diagnoses the same as the cluster it was saved from."""
    from gpuctl.collect.files import load_snapshot

    _, kubeconfig = serve(snapshot_of(scenario))
    exp = expected_of(scenario)
    out = tmp_path / "b.tar.gz"
    r = cli("snapshot", "save", str(out), "--kubeconfig", kubeconfig)
    assert r.code == 0, r.err
    saved, original = _views(load_snapshot(str(out))), _views(load_snapshot(str(snapshot_of(scenario))))
    read = {d for s in registry.SPECS for d in s.reads}
    for key in sorted(read & set(original)):
        if key == "dcgm-metrics":    # the bundle reads the exporters of the nodes whose GPU health matters
            assert set(saved[key]) <= set(original[key]), key
            continue
        assert saved[key] == original[key], key
    argv = ["diagnose", "node", exp["node"]] if exp.get("node") else \
        ["diagnose", "pod", target_of(exp)[1], "-n", target_of(exp)[0]]
    live = cli(*argv, "--kubeconfig", kubeconfig, "-o", "json").json()
    back = cli(*argv, "--snapshot", str(out), "-o", "json").json()
    assert [f["code"] for f in back["findings"]] == [f["code"] for f in live["findings"]]
    assert back["verdict"] == live["verdict"]
