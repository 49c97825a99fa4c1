"""Kueue's quota arithmetic (gpuctl/model/kueue.py) against hand-computed cases and
properties, the flavor assigner's skips, the message parser, and the visibility API
the local server answers (tests/scenarios/kueue-* cover the whole diagnosis)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from gpuctl.checks.kueue import parse_message
from gpuctl.model import kueue as K
from gpuctl.model.objects import GenericObject, ObjectMeta

GPU = "nvidia.com/gpu"
FR = ("h100", GPU)
SCENARIOS = Path(__file__).parent / "scenarios"


def cq(name, nominal, used, cohort=None, borrowing=None, lending=None, flavor="h100", preemption=None):
    r = {"name": GPU, "nominalQuota": str(nominal)}
    if borrowing is not None:
        r["borrowingLimit"] = str(borrowing)
    if lending is not None:
        r["lendingLimit"] = str(lending)
    spec = {"resourceGroups": [{"coveredResources": [GPU], "flavors": [{"name": flavor, "resources": [r]}]}]}
    if cohort:
        spec["cohort"] = cohort
    if preemption:
        spec["preemption"] = preemption
    return GenericObject(apiVersion="kueue.x-k8s.io/v1beta1", kind="ClusterQueue", metadata=ObjectMeta(name=name), spec=spec,
                         status={"flavorsReservation": [{"name": flavor, "resources": [{"name": GPU, "total": str(used)}]}]})


def workload(name, gpus, priority=0, admitted_in=None, created="2026-11-20T00:00:00Z", queue="q", flavor="h100", template=None):
    status: dict = {}
    if admitted_in:
        status["admission"] = {"clusterQueue": admitted_in, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {GPU: flavor}, "resourceUsage": {GPU: str(gpus)}}]}
        status["conditions"] = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": created}]
    spec = {"priority": priority, "queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": dict(
        template or {}, containers=[{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}])}}]}
    return GenericObject(apiVersion="kueue.x-k8s.io/v1beta1", kind="Workload",
                         metadata=ObjectMeta(name=name, namespace="ns", creationTimestamp=created), spec=spec, status=status)


# ------------------------------------------------------------------ hand-computed


def test_a_queue_alone_has_its_nominal_less_its_usage():
    t = K.QuotaTree([cq("a", 32, 24)])
    room = t.room("a", FR)
    assert (room.nominal, room.used, room.free, room.available, room.potential, room.lendable) == (32, 24, 8, 8, 32, 0)


def test_the_cohort_lends_what_the_others_leave_unused_within_their_lending_limit():
    # b: 16 nominal, 4 used, lendingLimit 4 -> keeps 12, lends at most 4 of its 12 unused
    t = K.QuotaTree([cq("a", 32, 24, "co"), cq("b", 16, 4, "co", lending=4)])
    room = t.room("a", FR)
    assert (room.free, room.lendable, room.available) == (8, 4, 12)
    assert "flavor h100: needs 16 nvidia.com/gpu, queue has 8 free of 32 nominal (24 reserved), cohort co can lend 4" \
        in room.describe(16)


def test_a_borrowing_limit_caps_what_the_cohort_lends():
    t = K.QuotaTree([cq("a", 8, 8, "co", borrowing=2), cq("b", 16, 0, "co")])
    room = t.room("a", FR)
    assert (room.available, room.lendable, room.potential, room.cohort_free) == (2, 2, 10, 16)
    assert "can lend 2 of the 16 it has unused (borrowingLimit 2)" in room.describe(4)


def test_quota_another_queue_borrowed_is_not_free_until_reclaimed():
    # b borrowed 6 of a's unused 8 (no lendingLimit on a): a can get only 2 now
    t = K.QuotaTree([cq("a", 8, 0, "co"), cq("b", 4, 10, "co")])
    room = t.room("a", FR)
    assert (room.free, room.available, room.lent_out) == (8, 2, 6)
    assert "6 of its unused quota is borrowed by other queues of the cohort" in room.describe(4)


def test_a_cohort_object_adds_its_own_quota_and_hierarchy_is_followed():
    cohort = GenericObject(kind="Cohort", metadata=ObjectMeta(name="co"), spec={"parentName": "root", "resourceGroups": [
        {"coveredResources": [GPU], "flavors": [{"name": "h100", "resources": [{"name": GPU, "nominalQuota": "4"}]}]}]})
    t = K.QuotaTree([cq("a", 8, 8, "co"), cq("c", 8, 2, "root")], [cohort])
    assert t.subtree_quota("co/root", FR) == 20
    assert t.room("a", FR).available == 10      # the cohort's own 4 and c's 6 unused
    assert t.cohort_members("root") == ["a", "c"]


def test_a_cohort_cycle_does_not_hang():
    a = GenericObject(kind="Cohort", metadata=ObjectMeta(name="x"), spec={"parentName": "y"})
    b = GenericObject(kind="Cohort", metadata=ObjectMeta(name="y"), spec={"parentName": "x"})
    t = K.QuotaTree([cq("a", 8, 0, "x")], [a, b])
    assert t.room("a", FR).available >= 8


def test_flavors_are_tried_in_order_and_skipped_for_labels_and_taints():
    q = GenericObject(kind="ClusterQueue", metadata=ObjectMeta(name="a"), spec={"resourceGroups": [{
        "coveredResources": [GPU], "flavors": [{"name": n, "resources": [{"name": GPU, "nominalQuota": "8"}]}
                                               for n in ("tainted", "h100", "a100")]}]}, status={})
    flavors = {
        "tainted": GenericObject(kind="ResourceFlavor", metadata=ObjectMeta(name="tainted"),
                                 spec={"nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]}),
        "h100": GenericObject(kind="ResourceFlavor", metadata=ObjectMeta(name="h100"), spec={"nodeLabels": {"gpu": "h100"}}),
        "a100": GenericObject(kind="ResourceFlavor", metadata=ObjectMeta(name="a100"), spec={"nodeLabels": {"gpu": "a100"}}),
    }
    wl = workload("w", 4, template={"nodeSelector": {"gpu": "a100", "zone": "x"}})   # zone: no flavor's key, ignored
    [a] = K.assign_flavors(K.QuotaTree([q]), q, flavors, K.podset_needs(wl))
    assert [t.skipped for t in a.tries] == ["untolerated taint spot=true:NoSchedule in flavor tainted",
                                            "flavor h100 doesn't match node affinity", None]
    assert a.chosen is not None and a.chosen.flavor == "a100"
    tolerated = workload("w", 4, template={"tolerations": [{"key": "spot", "operator": "Exists"}]})
    [a] = K.assign_flavors(K.QuotaTree([q]), q, flavors, K.podset_needs(tolerated))
    assert a.chosen is not None and a.chosen.flavor == "tainted"


def test_a_missing_flavor_and_a_request_above_the_maximum():
    q = cq("a", 8, 0)
    [a] = K.assign_flavors(K.QuotaTree([q]), q, {}, K.podset_needs(workload("w", 4)))
    assert a.tries[0].skipped == "flavor h100 not found"
    flavors = {"h100": GenericObject(kind="ResourceFlavor", metadata=ObjectMeta(name="h100"), spec={})}
    [a] = K.assign_flavors(K.QuotaTree([q]), q, flavors, K.podset_needs(workload("w", 16)))
    assert a.tries[0].never == {GPU: 16}
    assert "insufficient quota for nvidia.com/gpu in flavor h100, request 16 > maximum capacity (8)" in a.tries[0].messages()


def test_preemption_within_the_queue_takes_the_fewest_lowest_priority_newest_first():
    q = cq("a", 8, 8, preemption={"withinClusterQueue": "LowerPriority"})
    me = workload("me", 4, priority=100)
    old = workload("old", 4, admitted_in="a", created="2026-11-19T00:00:00Z")
    new = workload("new", 4, admitted_in="a", created="2026-11-19T05:00:00Z")
    high = workload("high", 4, priority=200, admitted_in="a")
    [p] = K.preemption_options(K.QuotaTree([q]), q, me, [old, new, high, me], FR, 4, 4)
    assert p.helps and [v for v, _ in p.victims] == ["ns/new (priority 0, ClusterQueue a)"]
    [p] = K.preemption_options(K.QuotaTree([q]), q, me, [high, me], FR, 4, 4)
    assert not p.helps and p.victims == []


def test_reclaim_within_cohort_counts_only_what_the_others_borrow():
    q = cq("a", 8, 0, "co", preemption={"reclaimWithinCohort": "Any"})
    b = cq("b", 4, 10, "co")
    me = workload("me", 8)
    bw = [workload(f"b{i}", 5, admitted_in="b") for i in range(2)]
    [p] = K.preemption_options(K.QuotaTree([q, b]), q, me, [*bw, me], FR, 6, 8)
    assert p.frees == 6 and p.helps


def test_pending_order_is_priority_then_creation():
    ws = [workload("late-high", 1, priority=5, created="2026-11-20T03:00:00Z"),
          workload("early", 1, created="2026-11-20T01:00:00Z"),
          workload("later", 1, created="2026-11-20T02:00:00Z"),
          workload("admitted", 1, admitted_in="a"),
          workload("other-queue", 1, queue="elsewhere")]
    order = K.pending_order(ws, "a", {("ns", "q"): "a", ("ns", "elsewhere"): "b"})
    assert [w.metadata.name for w in order] == ["late-high", "early", "later"]


def test_kueue_messages_are_parsed():
    got = parse_message("couldn't assign flavors to pod set main: flavor h100 doesn't match node affinity, insufficient "
                        "unused quota for nvidia.com/gpu in flavor a100, 8 more needed; couldn't assign flavors to pod set "
                        "workers: insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets "
                        "requests (8) + current podset request (32) > maximum capacity (32). Pending the preemption of 2 workload(s)")
    assert "pod set main: flavor a100 lacks 8 nvidia.com/gpu of unused quota (Kueue's message)" in got
    assert any("more than the queue could ever get (32)" in g for g in got)
    assert any("preempting 2 workload(s)" in g for g in got)
    tas = parse_message('couldn\'t assign flavors to pod set main: topology "default" allows to fit only 3 out of 4 pod(s)')
    assert tas == ["topology-aware scheduling: topology default has room for only 3 of the 4 pods the pod set needs in one domain"]
    none = parse_message('couldn\'t assign flavors to pod set one: topology "tas-three-level" doesn\'t allow to fit any of 1 '
                         'pod(s). Total nodes: 6; excluded: resource "cpu": 1, topologyDomain: 5')
    assert none == ["topology-aware scheduling: topology tas-three-level has room for only 0 of the 1 pods the pod set needs "
                    'in one domain (6 nodes; excluded: resource "cpu": 1, topologyDomain: 5)']


# ------------------------------------------------------------------ properties

amounts = st.integers(min_value=0, max_value=64)
limits = st.one_of(st.none(), amounts)


@st.composite
def cohorts(draw):
    n = draw(st.integers(min_value=1, max_value=5))
    return [cq(f"q{i}", draw(amounts), draw(amounts), "co", draw(limits), draw(limits)) for i in range(n)]


@settings(max_examples=200, deadline=None)
@given(cohorts())
def test_free_and_lendable_are_never_negative_and_lending_stays_within_lending_limits(queues):
    t = K.QuotaTree(queues)
    for q in queues:
        room = t.room(q.metadata.name, FR)
        assert room.free >= 0 and room.available >= 0 and room.lendable >= 0 and room.lent_out >= 0
        assert room.free == max(0, room.nominal - room.used)
        # what the cohort lends is bounded by the others' unused quota, each within its lendingLimit
        others = 0.0
        for o in queues:
            if o is not q:
                r = t.room(o.metadata.name, FR)
                unused = r.nominal - r.used
                others += max(0.0, unused if r.lending_limit is None else min(r.lending_limit, unused))
        assert room.lendable <= others + 1e-9
        if room.borrowing_limit is not None:
            assert room.available <= room.free + room.borrowing_limit + (room.nominal if room.lending_limit is None else
                                                                         min(room.nominal, room.lending_limit)) + 1e-9
        assert room.available <= room.potential + 1e-9


@settings(max_examples=200, deadline=None)
@given(amounts, amounts, limits, amounts, amounts)
def test_borrowing_limit_bounds_borrowing(nominal, used, borrowing, other_nominal, other_used):
    t = K.QuotaTree([cq("a", nominal, used, "co", borrowing), cq("b", other_nominal, other_used, "co")])
    room = t.room("a", FR)
    if borrowing is not None:
        assert room.potential <= nominal + borrowing
        assert room.available <= max(0, nominal + borrowing - used) + 1e-9


# ------------------------------------------------------------------ the visibility API the local server answers


def test_the_local_server_answers_the_visibility_api_in_kueues_shape():
    from gpuctl.apiserver.server import ReadOnlyAPIServer
    from gpuctl.collect.files import iter_raw_objects

    objs = list(iter_raw_objects(SCENARIOS / "kueue-position-visibility/snapshot"))
    with ReadOnlyAPIServer(objs) as srv:
        base = f"{srv.url}/apis/visibility.kueue.x-k8s.io/v1beta1"
        doc = json.loads(urllib.request.urlopen(f"{base}/clusterqueues/team-a-cq/pendingworkloads").read())
        lq = json.loads(urllib.request.urlopen(f"{base}/namespaces/ml-team-a/localqueues/team-a/pendingworkloads?limit=1").read())
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{base}/clusterqueues/nope/pendingworkloads")
    assert doc["kind"] == "PendingWorkloadsSummary" and doc["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"], i["localQueueName"], i["priority"])
            for i in doc["items"]] == [("job-sft-a-3-4c1d0", 0, 0, "team-a", 100), ("job-eval-c-1-9a8b7", 1, 0, "team-c", 0),
                                       ("pod-llm-sft-7d4b9-3f1c2", 2, 1, "team-a", 0)]
    saved = next(o for o in objs if o["kind"] == "PendingWorkloadsSummary")
    assert saved["status"]["items"] == doc["items"]     # the fixture's record agrees with the server's computation
    assert [i["metadata"]["name"] for i in lq["items"]] == ["job-sft-a-3-4c1d0"]
    assert missing.value.code == 404


# ------------------------------------------------------------------ the reports: pending by queue, capacity by flavor


def test_pending_names_each_pods_queue_live_and_offline(cli, serve):
    snap = SCENARIOS / "kueue-quota-cohort-lends/snapshot"
    _, kubeconfig = serve(snap)
    for source in (["--snapshot", str(snap)], ["--kubeconfig", kubeconfig]):
        doc = cli("diagnose", "pending", "-A", *source, "-o", "json").json()
        [group] = doc["groups"]
        assert [(p["name"], p["queue"]) for p in group["pods"]] == [("llm-sft-7d4b9", "team-a-cq")]
    table = cli("diagnose", "pending", "-A", "--snapshot", str(snap), "--no-color").out
    assert "ml-team-a/llm-sft-7d4b9 (34m, queue team-a-cq)" in table


def test_capacity_shows_gpus_by_kueue_flavor(cli, serve):
    from gpuctl.collect.files import load_snapshot
    from gpuctl.reports.capacity import capacity_report

    snap = SCENARIOS / "kueue-quota-cohort-lends/snapshot"
    offline = capacity_report(load_snapshot(snap))["queues"]     # every kind of the snapshot read
    _, kubeconfig = serve(snap)
    live = cli("nodes", "capacity", "--kubeconfig", kubeconfig, "-o", "json").json()["queues"]
    assert live == offline
    assert offline["flavors"] == [{"flavor": "a100-80gb", "resource": GPU, "clusterQueues": 2, "nominal": 24, "reserved": 16,
                                   "free": 8, "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, "nodes": 3,
                                   "allocatable": 24}]
    assert [(r["clusterQueue"], r["cohort"], r["nominal"], r["reserved"], r["free"], r["lendingLimit"])
            for r in offline["clusterQueues"]] == [("team-a-cq", "research", 8, 8, 0, None), ("team-b-cq", "research", 16, 8, 8, 2)]
    table = cli("nodes", "capacity", "--kubeconfig", kubeconfig, "--no-color").out
    assert "Kueue quota by ResourceFlavor" in table and "team-b-cq" in table


# ------------------------------------------------------------------ refusals and hostile names


def _top(doc):
    return doc["findings"][0]


def test_a_refused_visibility_api_leaves_the_position_computed(cli, serve):
    snap = SCENARIOS / "kueue-position-visibility/snapshot"
    srv, kubeconfig = serve(snap)
    srv.forbid("clusterqueues/pendingworkloads", group="visibility.kueue.x-k8s.io")
    doc = cli("diagnose", "pod", "llm-sft-7d4b9", "-n", "ml-team-a", "--kubeconfig", kubeconfig, "-o", "json").json()
    assert [r.status for r in srv.requests if "pendingworkloads" in r.path] == [403]
    text = " ".join(_top(doc)["evidence"])
    assert "position 2 in ClusterQueue team-a-cq (0 is next; 3 pending), as BestEffortFIFO orders them" in text
    assert "visibility API" not in text and _top(doc)["code"] == "queue-not-admitted"


def test_refused_cohorts_are_a_gap_the_finding_names(cli, serve):
    snap = SCENARIOS / "kueue-quota-cohort-lends/snapshot"
    srv, kubeconfig = serve(snap)
    srv.forbid("cohorts", group="kueue.x-k8s.io")
    doc = cli("diagnose", "pod", "llm-sft-7d4b9", "-n", "ml-team-a", "--kubeconfig", kubeconfig, "-o", "json").json()
    top = _top(doc)
    assert top["code"] == "queue-not-admitted"
    assert any("cohorts" in e and "forbidden" in e for e in top["evidence"]), top["evidence"]


def test_names_from_the_cluster_never_reach_a_command_unchecked():
    from gpuctl.collect.files import load_snapshot
    from gpuctl.engine import diagnose_pod

    snap = load_snapshot(SCENARIOS / "kueue-quota-no-borrowing/snapshot")
    bad = "team-a-cq;touch /tmp/x"
    for o in snap.objects("ClusterQueue"):
        if o.metadata.name == "team-a-cq":
            o.metadata.name = bad
    for o in snap.objects("LocalQueue"):
        if o.metadata.name == "team-a":
            o.spec["clusterQueue"] = bad
    d = diagnose_pod(snap, "ml-team-a", "llm-sft-7d4b9")
    top = d.findings[0]
    assert top.code == "queue-not-admitted" and bad in top.summary
    commands = [c for fx in top.fixes for c in fx.commands]
    assert commands and not any(";" in c or "touch" in c for c in commands), commands


def test_the_explanation_is_available_for_a_workload_without_pods():
    """checks/workload.py can give a suspended Job the same numbers (explain_workload)."""
    from gpuctl.checks.kueue import explain_workload
    from gpuctl.collect.files import load_snapshot

    snap = load_snapshot(SCENARIOS / "kueue-quota-no-borrowing/snapshot")
    wl = next(w for w in snap.objects("Workload") if w.metadata.name == "pod-llm-sft-7d4b9-3f1c2")
    hold = explain_workload(snap, "ml-team-a", wl)
    assert hold.summary.startswith("Kueue cannot admit the workload in ClusterQueue team-a-cq: flavor a100-80gb: needs 4")
    assert any("borrowingLimit 0" in e for e in hold.evidence)


def test_strict_fifo_says_the_head_blocks():
    from gpuctl.checks.kueue import _position
    from gpuctl.model.snapshot import Snapshot

    snap = Snapshot()
    first, me = workload("first", 1, created="2026-11-20T01:00:00Z"), workload("me", 1, created="2026-11-20T02:00:00Z")
    for w in (first, me):
        snap.add("Workload", w)
    text = _position(snap, me, "a", {("ns", "q"): "a"}, "StrictFIFO")
    assert text.startswith("position 1 in ClusterQueue a (0 is next; 2 pending), as StrictFIFO orders them")
    assert "ahead: ns/first (priority 0)" in text and "the head of the queue blocks" in text
    assert "blocks" not in _position(snap, first, "a", {("ns", "q"): "a"}, "StrictFIFO")


def test_a_workload_that_fits_by_the_status_says_so_with_kueues_last_word():
    """kubernetes-sigs/kueue#1344 (a captured case): flav-1 is full, flav-2 has room, Kueue v0.5 still refused."""
    from gpuctl.checks.kueue import explain_workload
    from gpuctl.collect.files import load_snapshot

    snap = load_snapshot(Path(__file__).parent / "realworld/kueue-1344-borrowing-limit-message-second-flavor-free/snapshot")
    wl = next(w for w in snap.objects("Workload") if w.metadata.name == "job-sample-job-3-5c1e3")
    hold = explain_workload(snap, "default", wl)
    assert hold.summary.startswith("By ClusterQueue cluster-queue's status the workload fits now (flavor flav-2), yet Kueue "
                                   "has not admitted it (position 0 in ClusterQueue cluster-queue (0 is next; 1 pending))")
    assert "Kueue's last word: couldn't assign flavors to pod set main: borrowing limit for cpu in flavor flav-1 exceeded" \
        in hold.summary


def test_a_stopped_local_queue_is_named():
    from gpuctl.checks.kueue import explain_workload
    from gpuctl.collect.files import load_snapshot

    snap = load_snapshot(SCENARIOS / "kueue-quota-no-borrowing/snapshot")
    lq = next(o for o in snap.objects("LocalQueue") if o.metadata.name == "team-a")
    lq.spec["stopPolicy"] = "Hold"
    lq.status["conditions"] = [{"type": "Active", "status": "False", "reason": "Stopped", "message": "LocalQueue is stopped"}]
    wl = next(w for w in snap.objects("Workload") if w.metadata.name == "pod-llm-sft-7d4b9-3f1c2")
    hold = explain_workload(snap, "ml-team-a", wl)
    assert hold.summary == "LocalQueue team-a is stopped (spec.stopPolicy Hold): Kueue admits nothing from it"
    assert "localqueue/team-a Active=False reason Stopped: LocalQueue is stopped" in hold.evidence
    assert hold.fixes[0].needs_judgement
