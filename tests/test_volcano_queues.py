"""Volcano queue and gang arithmetic (gpuctl/model/queues_math.py) and what
checks/volcano.py says with it, on variants of the volcano-* scenario snapshots.
Message shapes are Volcano's own (pkg/scheduler/plugins/gang/gang.go,
pkg/scheduler/api/job_info.go FitError, v1.9-v1.11 validJobFn)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpuctl.model.queues_math import gang_fit, gang_need, parse_gang_message, pods_that_fit, queue_room, quantities

SCENARIOS = Path(__file__).parent / "scenarios"


# ------------------------------------------------------------------ messages


def test_the_gang_message_gives_tasks_and_min_available():
    m = parse_gang_message("4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
                           "Pending: 4 Unschedulable")
    assert (m.unready, m.tasks, m.min_available, m.histogram) == (4, 4, 4, {"Pending": 4})


def test_the_gang_plugin_form_with_more_unready_than_tasks():
    # gang.go: unready = minAvailable - schedulable, over len(job.Tasks)
    m = parse_gang_message("4/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 4 minAvailable; "
                           "Pending: 3 Unschedulable")
    assert (m.tasks, m.min_available) == (3, 4)


def test_a_histogram_with_running_tasks_and_an_origin_reason():
    m = parse_gang_message("2/4 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 Running, 4 minAvailable. "
                           "Origin reason is: queue resource quota insufficient")
    assert (m.tasks, m.min_available, m.histogram) == (4, 4, {"Pending": 2, "Running": 2})


def test_the_old_not_enough_tasks_message():
    m = parse_gang_message("Not enough valid tasks for gang-scheduling, valid: 3, min: 4")
    assert (m.tasks, m.min_available, m.unready) == (3, 4, 1)


@pytest.mark.parametrize("text", ["", "all nodes are unavailable", "queue resource quota insufficient: insufficient nvidia.com/gpu"])
def test_other_texts_are_not_gang_messages(text):
    assert parse_gang_message(text) is None


# ------------------------------------------------------------------ queue


def test_queue_capability_less_allocation_against_the_gang():
    [r] = queue_room({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 16}, {"nvidia.com/gpu": 12})
    assert (r.free, r.short, r.never) == (4, True, False)
    [r] = queue_room({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 16}, {"nvidia.com/gpu": 8})
    assert (r.free, r.short) == (8, False)


def test_a_gang_bigger_than_the_whole_capability_is_never_admitted():
    [r] = queue_room({"nvidia.com/gpu": 40}, {"nvidia.com/gpu": 32}, {})
    assert r.never and r.short


def test_only_the_dimensions_the_capability_lists_count():
    rooms = queue_room({"nvidia.com/gpu": 8, "cpu": 64, "memory": 1}, {"nvidia.com/gpu": 16}, {"cpu": 1000})
    assert [r.resource for r in rooms] == ["nvidia.com/gpu"]


def test_min_resources_win_over_min_member_times_one_pod():
    assert gang_need({"nvidia.com/gpu": 32}, 4, {"nvidia.com/gpu": 2}) == {"nvidia.com/gpu": 32}
    assert gang_need({}, 4, {"nvidia.com/gpu": 2, "cpu": 16}) == {"nvidia.com/gpu": 8, "cpu": 64}


def test_quantities_parse_and_drop_what_does_not_parse():
    assert quantities({"nvidia.com/gpu": "8", "memory": "1Gi", "bad": "x1"}) == {"nvidia.com/gpu": 8.0, "memory": 2.0 ** 30}
    assert quantities(None) == {} and quantities("junk") == {}


# ------------------------------------------------------------------ cluster


def test_pods_of_a_shape_per_node_take_every_resource_into_account():
    assert pods_that_fit({"nvidia.com/gpu": 2, "cpu": 48}, {"nvidia.com/gpu": 8, "cpu": 96}) == 2
    assert pods_that_fit({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 7}) == 0


def test_a_gang_that_must_wait_and_one_that_never_fits():
    nodes = [({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": f}) for f in (0, 0, 8, 8)]
    wait = gang_fit(4, {"nvidia.com/gpu": 8}, nodes)
    assert (wait.slots_empty, wait.slots_now, wait.wait, wait.never) == (4, 2, True, False)
    never = gang_fit(5, {"nvidia.com/gpu": 8}, nodes)
    assert never.never and not never.wait
    fits = gang_fit(2, {"nvidia.com/gpu": 8}, nodes)
    assert not fits.never and not fits.wait


# ------------------------------------------------------------------ what the check says


def _variant(tmp_path: Path, scenario: str, change) -> Path:
    dst = tmp_path / scenario
    shutil.copytree(SCENARIOS / scenario / "snapshot", dst)
    doc = json.loads((dst / "cluster.json").read_text())
    for obj in doc["items"]:
        change(obj)
    (dst / "cluster.json").write_text(json.dumps(doc))
    return dst


def _top(cli, snap: Path, pod: str, ns: str = "research") -> dict:
    r = cli("diagnose", "pod", pod, "-n", ns, "--snapshot", str(snap), "-o", "json")
    assert r.err == ""
    return r.json()["findings"][0]


def test_a_closed_queue_is_its_own_summary(cli, tmp_path):
    def close(obj):
        if obj["kind"] == "Queue":
            obj["status"]["state"] = "Closed"
    top = _top(cli, _variant(tmp_path, "volcano-queue-closing", close), "llama-8b-sft-master-0")
    assert top["code"] == "queue-not-admitted"
    assert top["summary"].startswith("Volcano queue research is Closed: it admits no PodGroup")


def test_an_open_queue_with_room_is_not_blamed(cli, tmp_path):
    def room(obj):
        if obj["kind"] == "Queue":
            obj["spec"]["capability"] = {"nvidia.com/gpu": "64"}
    top = _top(cli, _variant(tmp_path, "volcano-queue-capability-exhausted", room), "llama-8b-sft-master-0")
    assert "capability" not in top["summary"]
    assert "queue/research state Open" in " ".join(top["evidence"])


def test_a_capability_smaller_than_the_gang_says_never(cli, tmp_path):
    def small(obj):
        if obj["kind"] == "Queue":
            obj["spec"]["capability"] = {"nvidia.com/gpu": "6"}
            obj["status"]["allocated"] = {"nvidia.com/gpu": "0"}
    top = _top(cli, _variant(tmp_path, "volcano-queue-capability-exhausted", small), "llama-8b-sft-master-0")
    assert "capability nvidia.com/gpu 6, allocated 0, the gang needs 8 (minMember 4 x 2)" in top["summary"]
    assert "never admitted" in top["summary"]


def test_a_hostile_queue_name_never_reaches_a_command(cli, tmp_path):
    bad = "research;rm -rf ~"

    def rename(obj):
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "research":
            obj["metadata"]["name"] = bad
        if obj["kind"] == "PodGroup":
            obj["spec"]["queue"] = bad
    top = _top(cli, _variant(tmp_path, "volcano-queue-capability-exhausted", rename), "llama-8b-sft-master-0")
    assert bad in top["summary"]            # said, as text
    assert all(bad not in c for fx in top["fixes"] for c in fx["commands"])


def test_a_pod_group_that_is_running_is_no_queue_hold(cli, tmp_path):
    def run(obj):
        if obj["kind"] == "PodGroup":
            obj["status"]["phase"] = "Running"
    r = cli("diagnose", "pod", "llama-70b-master-0", "-n", "research", "--snapshot",
            str(_variant(tmp_path, "volcano-gang-must-wait", run)), "-o", "json")
    assert "queue-not-admitted" not in [f["code"] for f in r.json()["findings"]]


# ------------------------------------------------------------------ live: what is read, and what a refusal leaves


def test_live_reads_the_queue_the_pod_group_names(cli, serve):
    srv, kc = serve(SCENARIOS / "volcano-queue-capability-exhausted" / "snapshot")
    r = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--kubeconfig", kc, "-o", "json")
    assert "capability nvidia.com/gpu 16, allocated 12" in r.json()["findings"][0]["summary"]
    paths = [q.path for q in srv.requests]
    assert "/apis/scheduling.volcano.sh/v1beta1/queues/research" in paths
    assert not any(p.endswith("/queues") and "volcano" in p for p in paths)     # one GET, never the list


def test_live_a_forbidden_queue_is_a_gap_and_the_gang_is_still_held(cli, serve):
    srv, kc = serve(SCENARIOS / "volcano-queue-capability-exhausted" / "snapshot")
    srv.forbid("queues", "get", group="scheduling.volcano.sh")
    r = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--kubeconfig", kc, "-o", "json")
    doc = r.json()
    top = doc["findings"][0]
    assert top["code"] == "queue-not-admitted"
    assert "capability" not in top["summary"]          # the queue's numbers were not read, so not claimed
    assert "queue resource quota insufficient: insufficient nvidia.com/gpu" in " ".join(top["evidence"])
    assert any("queues" in (c.get("detail") or "") for c in doc["checks"]), doc["checks"]


def test_an_inqueue_gang_is_not_blamed_on_its_queue(cli, tmp_path):
    def inqueue(obj):
        if obj["kind"] == "PodGroup" and obj["metadata"]["name"] == "llama-8b-sft":
            obj["status"]["phase"] = "Inqueue"
    top = _top(cli, _variant(tmp_path, "volcano-queue-capability-exhausted", inqueue), "llama-8b-sft-master-0")
    assert "capability" not in top["summary"]
    assert "podgroup/llama-8b-sft is Inqueue: queue research admitted it; the pods wait to be placed 4 at once" in top["evidence"]


def _with_parent(tmp_path: Path) -> Path:
    """The capability-exhausted cluster, with the leaf queue roomy and a full parent
    (hierarchical queues: spec.parent; the capacity plugin checks every level)."""
    dst = tmp_path / "hier"
    shutil.copytree(SCENARIOS / "volcano-queue-capability-exhausted" / "snapshot", dst)
    doc = json.loads((dst / "cluster.json").read_text())
    leaf = next(o for o in doc["items"] if o["kind"] == "Queue")
    parent = json.loads(json.dumps(leaf))
    parent["metadata"].update(name="ai", uid="0b7c2a51-9d7e-4c1f-8a55-1c2f3e4d5a6b")
    parent["spec"] = {"capability": {"nvidia.com/gpu": "16"}, "reclaimable": False, "weight": 1}
    leaf["spec"]["capability"] = {"nvidia.com/gpu": "64"}
    leaf["spec"]["parent"] = "ai"
    doc["items"].append(parent)
    (dst / "cluster.json").write_text(json.dumps(doc))
    return dst


def test_a_full_parent_queue_is_named(cli, tmp_path):
    top = _top(cli, _with_parent(tmp_path), "llama-8b-sft-master-0")
    assert top["summary"].startswith("Volcano queue research's parent queue ai: capability nvidia.com/gpu 16, allocated 12, "
                                     "the gang needs 8 (minMember 4 x 2)")
    assert "queue/research state Open, parent ai, reclaimable false; capability nvidia.com/gpu 64; allocated" in " ".join(top["evidence"])


def test_live_walks_up_to_the_parent_queue(cli, serve, tmp_path):
    snap = _with_parent(tmp_path)
    srv, kc = serve(snap)
    live = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--kubeconfig", kc, "-o", "json").json()
    offline = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--snapshot", str(snap), "-o", "json").json()
    assert live["findings"] == offline["findings"]
    assert "/apis/scheduling.volcano.sh/v1beta1/queues/ai" in [q.path for q in srv.requests]


def _with_stale(tmp_path: Path) -> Path:
    """A roomy queue, and a finished job's PodGroup left Running with no pod (volcano#2633)."""
    dst = tmp_path / "stale"
    shutil.copytree(SCENARIOS / "volcano-queue-capability-exhausted" / "snapshot", dst)
    doc = json.loads((dst / "cluster.json").read_text())
    for o in doc["items"]:
        if o["kind"] == "Queue":
            o["spec"]["capability"] = {"nvidia.com/gpu": "64"}
    bert = next(o for o in doc["items"] if o["kind"] == "PodGroup" and o["metadata"]["name"] == "bert-ft")
    done = json.loads(json.dumps(bert))
    done["metadata"].update(name="bert-ft-old", uid="5d0c1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f")
    done["status"] = {"phase": "Running", "running": 0, "succeeded": 3, "conditions": bert["status"]["conditions"]}
    doc["items"].append(done)
    (dst / "cluster.json").write_text(json.dumps(doc))
    return dst


def test_pod_groups_of_finished_jobs_holding_the_queue_are_named(cli, tmp_path):
    top = _top(cli, _with_stale(tmp_path), "llama-8b-sft-master-0")
    assert top["summary"].startswith("Volcano queue research: 1 PodGroup(s) of finished jobs still hold cpu 48, memory 384Gi, "
                                     "nvidia.com/gpu 12 as minResources")
    assert "kubectl -n research delete podgroups.scheduling.volcano.sh bert-ft-old" in [c for f in top["fixes"] for c in f["commands"]]
    assert all(f.get("needsJudgement") for f in top["fixes"] if any(" delete " in c for c in f["commands"]))


def test_live_lists_the_namespace_pod_groups_once_and_matches_offline(cli, serve, tmp_path):
    snap = _with_stale(tmp_path)
    srv, kc = serve(snap)
    live = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--kubeconfig", kc, "-o", "json").json()
    offline = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--snapshot", str(snap), "-o", "json").json()
    assert live["findings"] == offline["findings"]
    assert [q.path for q in srv.requests].count("/apis/scheduling.volcano.sh/v1beta1/namespaces/research/podgroups") == 1


def test_live_a_forbidden_pod_group_list_still_diagnoses_the_gang(cli, serve, tmp_path):
    srv, kc = serve(_with_stale(tmp_path))
    srv.forbid("podgroups", "list", group="scheduling.volcano.sh")
    r = cli("diagnose", "pod", "llama-8b-sft-master-0", "-n", "research", "--kubeconfig", kc, "-o", "json")
    top = r.json()["findings"][0]
    assert top["code"] == "queue-not-admitted" and "finished jobs" not in top["summary"]
