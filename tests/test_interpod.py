"""Inter-pod constraints per node (gpuctl/checks/interpod.py): required pod affinity,
anti-affinity in both directions and topology spread, re-evaluated from the current
pods as the scheduler's filters do, and named in the diagnosis with the pod each is
tied to. Each test fails when one rule of the evaluator is lost."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import container, event, gpu_node, pod, unschedulable, write_snapshot  # noqa: E402

from gpuctl.checks.interpod import InterPod, namespace_matches, selector_text  # noqa: E402
from gpuctl.model.objects import LabelSelector, PodAffinityTerm, convert  # noqa: E402

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _node(name, zone=None, **kw):
    n = gpu_node(name, **kw)
    if zone:
        n["metadata"]["labels"][ZONE] = zone
    return n


def _placed(name, ns, node, labels, gpus=1, affinity=None):
    return pod(name, ns, gpus=gpus, phase="Running", node=node, labels=labels, affinity=affinity)


def _term(labels, key=HOST, **extra):
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def _evaluator(target, nodes, placed):
    nodes = {n["metadata"]["name"]: convert("Node", n) for n in nodes}
    by_node: dict = {}
    for p in placed:
        rec = convert("Pod", p)
        by_node.setdefault(rec.spec.nodeName, []).append(rec)
    return InterPod(convert("Pod", target), nodes, by_node)


def _reasons(ip, nodes):
    return {n["metadata"]["name"]: list(ip.reasons(convert("Node", n))) for n in nodes}


# ------------------------------------------------------------------ the evaluator


def test_required_affinity_passes_only_where_the_matching_pod_runs():
    nodes = [_node("a"), _node("b")]
    target = pod("t", "ml", gpus=1, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "cache"})]}})
    ip = _evaluator(target, nodes, [_placed("cache-0", "ml", "b", {"app": "cache"}, gpus=0)])
    r = _reasons(ip, nodes)
    assert r["b"] == []
    assert len(r["a"]) == 1 and "ml/cache-0" in r["a"][0] and "kubernetes.io/hostname=b" in r["a"][0]


def test_the_first_pod_of_a_group_may_go_anywhere_its_own_affinity_matches_itself():
    nodes = [_node("a"), _node("b")]
    target = pod("t", "ml", gpus=1, labels={"app": "cache"},
                 affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "cache"})]}})
    ip = _evaluator(target, nodes, [])
    assert _reasons(ip, nodes) == {"a": [], "b": []}


def test_affinity_to_a_pod_in_another_namespace_needs_the_namespace_listed():
    nodes = [_node("a")]
    term = _term({"app": "cache"})
    placed = [_placed("cache-0", "infra", "a", {"app": "cache"}, gpus=0)]
    plain = pod("t", "ml", gpus=1, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    assert _reasons(_evaluator(plain, nodes, placed), nodes)["a"]
    listed = pod("t", "ml", gpus=1, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {**term, "namespaces": ["infra"]}]}})
    assert _reasons(_evaluator(listed, nodes, placed), nodes)["a"] == []


def test_namespace_selectors_are_decided_by_name_or_assumed_to_select():
    term = PodAffinityTerm(namespaceSelector=LabelSelector(matchLabels={"kubernetes.io/metadata.name": "infra"}))
    assert namespace_matches(term, "ml", "infra") and not namespace_matches(term, "ml", "ml")
    assert namespace_matches(PodAffinityTerm(namespaceSelector=LabelSelector()), "ml", "anything")
    assert namespace_matches(PodAffinityTerm(namespaceSelector=LabelSelector(matchLabels={"team": "x"})), "ml", "other")
    assert not namespace_matches(PodAffinityTerm(), "ml", "other") and namespace_matches(PodAffinityTerm(), "ml", "ml")


def test_zone_anti_affinity_excludes_every_node_of_the_zone():
    nodes = [_node("a1", "z-a"), _node("a2", "z-a"), _node("b1", "z-b")]
    target = pod("t", "ml", gpus=1, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"app": "trainer"}, key=ZONE)]}})
    ip = _evaluator(target, nodes, [_placed("trainer-0", "ml", "a1", {"app": "trainer"})])
    r = _reasons(ip, nodes)
    assert r["b1"] == [] and r["a1"] and r["a2"]
    assert "is in topology.kubernetes.io/zone=z-a with pod ml/trainer-0" in r["a2"][0]


def test_a_placed_pods_anti_affinity_excludes_this_pod_from_its_domain():
    nodes = [_node("a"), _node("b")]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"tier": "gpu"})]}}
    ip = _evaluator(pod("t", "ml", gpus=1, labels={"tier": "gpu"}), nodes,
                    [_placed("big-0", "ml", "a", {"app": "big"}, affinity=anti)])
    r = _reasons(ip, nodes)
    assert r["b"] == []
    assert r["a"] == ["node/a runs pod ml/big-0, whose required anti-affinity excludes this pod"]
    # a pod its selector does not match is not excluded
    other = _evaluator(pod("t", "ml", gpus=1, labels={"tier": "cpu"}), nodes,
                       [_placed("big-0", "ml", "a", {"app": "big"}, affinity=anti)])
    assert _reasons(other, nodes)["a"] == []


def test_a_node_without_the_topology_key_fails_affinity_and_spread():
    nodes = [_node("a")]   # no zone label
    aff = pod("t", "ml", gpus=1, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term({"app": "x"}, key=ZONE)]}})
    assert "has no label topology.kubernetes.io/zone" in _reasons(_evaluator(aff, nodes, []), nodes)["a"][0]
    spread = pod("t", "ml", gpus=1, labels={"app": "x"}, spec={"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}}}]})
    assert "topology spread constraint requires" in _reasons(_evaluator(spread, nodes, []), nodes)["a"][0]


def _spread_pod(**c):
    return pod("t", "ml", gpus=1, labels={"app": "x"}, spec={"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "x"}}, **c}]})


def test_spread_skew_is_counted_against_the_emptiest_zone():
    nodes = [_node("a1", "z-a"), _node("b1", "z-b")]
    placed = [_placed("x-0", "ml", "a1", {"app": "x"}), _placed("x-1", "ml", "a1", {"app": "x"}),
              _placed("x-2", "ml", "b1", {"app": "x"})]
    r = _reasons(_evaluator(_spread_pod(), nodes, placed), nodes)
    assert r["b1"] == []
    assert r["a1"] == ["node/a1: placing the pod in topology.kubernetes.io/zone=z-a makes the skew 2 (maxSkew 1): "
                       "2 matching pods there, 1 in topology.kubernetes.io/zone=z-b"]


def test_spread_counts_only_nodes_the_pods_node_affinity_admits():
    # z-b's only node is outside the pod's nodeSelector: it is not a domain, so z-a is not over-full
    nodes = [_node("a1", "z-a"), _node("b1", "z-b", labels={"pool": "other"})]
    nodes[0]["metadata"]["labels"]["pool"] = "gpu"
    placed = [_placed("x-0", "ml", "a1", {"app": "x"})]
    target = _spread_pod()
    target["spec"]["nodeSelector"] = {"pool": "gpu"}
    assert _reasons(_evaluator(target, nodes, placed), nodes)["a1"] == []
    ignore = _spread_pod(nodeAffinityPolicy="Ignore")
    ignore["spec"]["nodeSelector"] = {"pool": "gpu"}
    assert _reasons(_evaluator(ignore, nodes, placed), nodes)["a1"]


def test_min_domains_counts_missing_zones_as_empty():
    nodes = [_node("a1", "z-a"), _node("b1", "z-b")]
    placed = [_placed("x-0", "ml", "a1", {"app": "x"}), _placed("x-1", "ml", "b1", {"app": "x"})]
    assert _reasons(_evaluator(_spread_pod(), nodes, placed), nodes) == {"a1": [], "b1": []}
    r = _reasons(_evaluator(_spread_pod(minDomains=3), nodes, placed), nodes)
    assert "a missing domain (minDomains 3)" in r["a1"][0] and r["b1"]


def test_schedule_anyway_spread_is_not_enforced():
    nodes = [_node("a1", "z-a"), _node("b1", "z-b")]
    placed = [_placed(f"x-{i}", "ml", "a1", {"app": "x"}) for i in range(3)]
    assert _reasons(_evaluator(_spread_pod(whenUnsatisfiable="ScheduleAnyway"), nodes, placed), nodes)["a1"] == []


def test_selector_text_reads_like_kubectl():
    sel = convert("Pod", pod("x", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "a"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["x", "y"]}, {"key": "gone", "operator": "DoesNotExist"}]},
         "topologyKey": HOST}]}})).spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector
    assert selector_text(sel) == "app=a, tier in (x,y), !gone"


# ------------------------------------------------------------------ in the diagnosis


def _diagnose(cli, tmp_path, *objs):
    snap = write_snapshot(tmp_path, *objs)
    return cli("diagnose", "pod", "t", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()


def test_the_only_free_gpu_on_a_node_the_affinity_excludes_is_named_with_the_pod(cli, tmp_path):
    msg = "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match pod affinity rules."
    full = _node("gpu-a", gpus=1)
    target = pod("t", "ml", gpus=1, conditions=[unschedulable(msg)],
                 affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "cache"})]}})
    doc = _diagnose(cli, tmp_path, full, _node("gpu-b", gpus=1), target,
                    _placed("cache-0", "ml", "gpu-a", {"app": "cache"}), event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert top["code"] == "pod-topology-constraint", [f["code"] for f in doc["findings"]]
    assert any("node/gpu-b" in e and "ml/cache-0" in e for e in top["evidence"]), top["evidence"]


def test_existing_pods_anti_affinity_is_why_a_pod_without_gpus_waits(cli, tmp_path):
    msg = "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules."
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"part-of": "llm"})]}}
    target = pod("t", "ml", labels={"part-of": "llm"}, conditions=[unschedulable(msg)],
                 containers=[container(gpus=0, requests={"cpu": "1"})])
    doc = _diagnose(cli, tmp_path, _node("gpu-a"), _node("gpu-b"), target,
                    _placed("prefill-0", "ml", "gpu-a", {"part-of": "llm"}, affinity=anti),
                    _placed("decode-0", "ml", "gpu-b", {"part-of": "llm"}, affinity=anti),
                    event("Pod", "t", "ml", "FailedScheduling", msg))
    top = doc["findings"][0]
    assert top["code"] == "pod-topology-constraint" and top["severity"] == "blocker", doc["findings"]
    assert "whose required anti-affinity excludes this pod" in " ".join(top["evidence"])


def test_gpu_nodes_in_one_zone_cannot_satisfy_a_zone_spread(cli, tmp_path):
    msg = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
           "2 node(s) didn't match pod topology spread constraints.")
    nodes = [_node("gpu-a1", "z-a", gpus=1), _node("gpu-a2", "z-a", gpus=2), _node("gpu-b1", "z-b", gpus=1)]
    placed = [_placed("x-0", "ml", "gpu-a1", {"app": "x"}), _placed("x-2", "ml", "gpu-a2", {"app": "x"}),
              _placed("x-1", "ml", "gpu-b1", {"app": "x"})]
    target = _spread_pod()
    target["metadata"]["name"] = "t"
    target["status"]["conditions"] = [unschedulable(msg)]
    doc = _diagnose(cli, tmp_path, *nodes, *placed, target, event("Pod", "t", "ml", "FailedScheduling", msg))
    codes = [f["code"] for f in doc["findings"]]
    # gpu-a2 has a free GPU, but z-a would hold 3 against z-b's 1 (b1's GPU is taken): the spread, not the GPUs
    assert codes[0] == "pod-topology-constraint", codes
    assert any("node/gpu-a2" in e and "makes the skew 2" in e for e in doc["findings"][0]["evidence"]), doc["findings"][0]
