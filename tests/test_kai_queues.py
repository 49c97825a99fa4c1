"""KAI Scheduler queue arithmetic (gpuctl/model/queues_math.py), in the order of
KAI's capacity policy (pkg/scheduler/plugins/proportion/capacity_policy: limits over
the queue and its parents, then non-preemptible quotas), and what checks/kai.py
says on variants of the kai-* scenario snapshots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gpuctl.model.queues_math import KaiLevel, kai_block, kai_chain, kai_level, kai_over_quota, num

SCENARIOS = Path(__file__).parent / "scenarios"


def lv(name, parent="", quota=None, limit=None, alloc=0.0, alloc_np=0.0):
    return KaiLevel(name, parent, quota, limit, 1.0, alloc, alloc_np)


def test_queue_fields_as_kai_writes_them():
    q = kai_level("team-cv", {"parentQueue": "dept", "resources": {"gpu": {"quota": 8, "limit": -1, "overQuotaWeight": 2}}},
                  {"allocated": {"nvidia.com/gpu": "6"}, "allocatedNonPreemptible": {"nvidia.com/gpu": "0.5"}})
    assert (q.parent, q.quota, q.limit, q.over_quota_weight, q.allocated, q.allocated_np) == ("dept", 8, -1, 2, 6, 0.5)
    bare = kai_level("x", {}, None)
    assert (bare.quota, bare.limit, bare.allocated, bare.allocated_np) == (None, None, None, None)


def test_the_chain_runs_leaf_to_top_and_survives_a_cycle():
    levels = {"a": lv("a", "b"), "b": lv("b", "c"), "c": lv("c", "a")}
    assert [x.name for x in kai_chain("a", levels)] == ["a", "b", "c"]
    assert kai_chain("missing", levels) == []


def test_a_full_parent_limit_blocks_even_a_preemptible_job():
    chain = [lv("team-cv", "dept", quota=8, limit=-1, alloc=6), lv("dept", "", quota=16, limit=16, alloc=16)]
    b = kai_block(chain, 4, preemptible=True)
    assert (b.reason, b.level.name, b.cap, b.used, b.requested) == ("OverLimit", "dept", 16, 16, 4)


def test_limits_come_before_quotas():
    chain = [lv("team", "dept", quota=4, limit=6, alloc=4, alloc_np=4)]
    assert kai_block(chain, 4, preemptible=False).reason == "OverLimit"


def test_a_non_preemptible_job_over_quota_is_refused_and_a_preemptible_one_is_not():
    chain = [lv("team-nlp", "dept", quota=4, limit=-1, alloc=4, alloc_np=4), lv("dept", "", quota=16, limit=-1, alloc=4, alloc_np=4)]
    b = kai_block(chain, 2, preemptible=False)
    assert (b.reason, b.level.name, b.cap, b.used) == ("NonPreemptibleOverQuota", "team-nlp", 4, 4)
    assert kai_block(chain, 2, preemptible=True) is None
    assert kai_over_quota(chain[0], 2)


def test_exact_quota_fits():
    # KAI: Deserved < AllocatedNotPreemptible + requested refuses; equal is allowed
    chain = [lv("q", "p", quota=4, limit=-1, alloc=2, alloc_np=2)]
    assert kai_block(chain, 2, preemptible=False) is None


def test_unlimited_and_unknown_never_block():
    chain = [lv("q", "p", quota=-1, limit=-1, alloc=100, alloc_np=100), lv("p", "", quota=None, limit=None, alloc=None, alloc_np=None)]
    assert kai_block(chain, 8, preemptible=False) is None


def test_numbers_print_like_kai():
    assert (num(4.0), num(0.5), num(1 / 3)) == ("4", "0.5", "0.333")


# ------------------------------------------------------------------ what the check says


def _variant(tmp_path: Path, scenario: str, change) -> Path:
    dst = tmp_path / scenario
    shutil.copytree(SCENARIOS / scenario / "snapshot", dst)
    doc = json.loads((dst / "cluster.json").read_text())
    for obj in doc["items"]:
        change(obj)
    (dst / "cluster.json").write_text(json.dumps(doc))
    return dst


def _top(cli, snap: Path, ns: str, pod: str) -> dict:
    r = cli("diagnose", "pod", pod, "-n", ns, "--snapshot", str(snap), "-o", "json")
    assert r.err == ""
    return r.json()["findings"][0]


def test_a_leaf_at_its_own_limit_is_named_as_the_leaf(cli, tmp_path):
    def leaf_limit(obj):
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "team-cv":
            obj["spec"]["resources"]["gpu"]["limit"] = 8
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "research-dept":
            obj["spec"]["resources"]["gpu"]["limit"] = -1
    top = _top(cli, _variant(tmp_path, "kai-parent-queue-full", leaf_limit), "cv", "resnet-sweep-x7k2p")
    assert top["summary"].startswith("KAI queue team-cv has no room under its GPU limit: limit 8, allocated 6, the job requests 4")


def test_the_pod_naming_a_top_level_queue_keeps_its_explanation(cli, tmp_path):
    def top_level(obj):
        if obj.get("metadata", {}).get("labels", {}).get("kai.scheduler/queue") == "team-cv":
            obj["metadata"]["labels"]["kai.scheduler/queue"] = "research-dept"
        if obj["kind"] == "PodGroup":
            obj["spec"]["queue"] = "research-dept"
    top = _top(cli, _variant(tmp_path, "kai-parent-queue-full", top_level), "cv", "resnet-sweep-x7k2p")
    assert "research-dept is a top-level queue" in top["summary"]


def test_an_unknown_queue_is_said_with_the_ones_that_exist(cli, tmp_path):
    def unknown(obj):
        if obj.get("metadata", {}).get("labels", {}).get("kai.scheduler/queue") == "team-cv":
            obj["metadata"]["labels"]["kai.scheduler/queue"] = "team-cvv"
    top = _top(cli, _variant(tmp_path, "kai-parent-queue-full", unknown), "cv", "resnet-sweep-x7k2p")
    assert top["summary"] == "The pod names KAI queue team-cvv, which does not exist"
    assert "queues: research-dept, team-cv, team-nlp" in top["evidence"]


def test_kai_numbers_stand_when_the_queue_status_is_missing(cli, tmp_path):
    def no_status(obj):
        if obj["kind"] == "Queue":
            obj.pop("status", None)
    top = _top(cli, _variant(tmp_path, "kai-nonpreemptible-over-quota", no_status), "nlp", "tokenizer-build-x7k2p")
    assert top["summary"].startswith("KAI queue team-nlp refuses the non-preemptible job over quota: quota 4 GPUs, "
                                     "4 already allocated to non-preemptible pods, the job requests 2")
    assert "numbers from KAI's message: 4 quota, 4 allocated, 2 requested" in top["evidence"]
    assert any("no status.allocated reported" in e for e in top["evidence"])


def test_kai_words_stand_when_neither_status_nor_message_has_gpu_numbers(cli, tmp_path):
    cpu = ("Non-preemptible workload is over quota. Workload requested 8 CPU cores, but team-nlp quota is 4 cores, "
           "while 4 cores are already allocated for non-preemptible pods. Use a preemptible workload to go over quota.")

    def cpu_refusal(obj):
        if obj["kind"] == "Queue":
            obj.pop("status", None)
        if obj["kind"] == "PodGroup":
            c = obj["status"]["schedulingConditions"][0]
            c["message"] = f"NonPreemptibleOverQuota: {cpu}."
            c["reasons"][0]["message"] = cpu
            c["reasons"][0].pop("details")
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "tokenizer-build-x7k2p":
            obj["status"]["conditions"][0]["message"] = f"NonPreemptibleOverQuota: {cpu}."
    top = _top(cli, _variant(tmp_path, "kai-nonpreemptible-over-quota", cpu_refusal), "nlp", "tokenizer-build-x7k2p")
    assert top["summary"] == f"KAI's queue team-nlp refuses the job (NonPreemptibleOverQuota): {cpu}"


def test_an_exact_fit_refused_by_kai_is_named_as_its_float_bug():
    from gpuctl.model.queues_math import KaiBlock, parse_kai_refusal
    got = parse_kai_refusal("NonPreemptibleOverQuota: Non-preemptible workload is over quota. Workload requested 0.2 GPUs, "
                            "but aafa quota is 0.3 GPUs, while 0.1 GPUs are already allocated for non-preemptible pods.")
    assert got == ("NonPreemptibleOverQuota", "aafa", 0.3, 0.1, 0.2)
    assert KaiBlock(got[0], lv("aafa"), got[2], got[3], got[4]).exact
    assert not KaiBlock("OverLimit", lv("x"), 16, 16, 4).exact
    assert parse_kai_refusal("research-dept quota has reached the allowable limit of GPUs. Limit is 16 GPUs, currently 16 GPUs "
                             "allocated and workload requested 4 GPUs") == ("OverLimit", "research-dept", 16, 16, 4)


def test_a_preemptible_job_is_not_refused_over_quota(cli, tmp_path):
    def preemptible(obj):
        if obj["kind"] == "PodGroup":
            obj["spec"]["preemptibility"] = "preemptible"
            obj["status"].pop("schedulingConditions")
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "tokenizer-build-x7k2p":
            obj["status"]["conditions"][0]["message"] = "Unable to schedule pod"
    r = cli("diagnose", "pod", "tokenizer-build-x7k2p", "-n", "nlp", "--snapshot",
            str(_variant(tmp_path, "kai-nonpreemptible-over-quota", preemptible)), "-o", "json")
    assert "queue-not-admitted" not in [f["code"] for f in r.json()["findings"]]


def test_live_reads_the_queues_once_and_the_pods_pod_group(cli, serve):
    srv, kc = serve(SCENARIOS / "kai-parent-queue-full" / "snapshot")
    r = cli("diagnose", "pod", "resnet-sweep-x7k2p", "-n", "cv", "--kubeconfig", kc, "-o", "json")
    assert "parent queue research-dept has no room" in r.json()["findings"][0]["summary"]
    paths = [q.path for q in srv.requests]
    assert paths.count("/apis/scheduling.run.ai/v2/queues") == 1
    assert any(p.startswith("/apis/scheduling.run.ai/v2alpha2/namespaces/cv/podgroups/pg-resnet-sweep-") for p in paths)


def test_live_a_forbidden_pod_group_leaves_the_queue_arithmetic(cli, serve):
    srv, kc = serve(SCENARIOS / "kai-nonpreemptible-over-quota" / "snapshot")
    srv.forbid("podgroups", "get", group="scheduling.run.ai")
    r = cli("diagnose", "pod", "tokenizer-build-x7k2p", "-n", "nlp", "--kubeconfig", kc, "-o", "json")
    top = r.json()["findings"][0]
    assert top["summary"].startswith("KAI queue team-nlp refuses the non-preemptible job over quota: quota 4 GPUs, "
                                     "4 already allocated to non-preemptible pods, the job requests 2")
