"""``diagnose pending`` shared with forked copies of gpuctl gives the report one process
gives: the same groups in the same order, the same first fix and summary of each cause,
the same pods, checks and exit code (reports/pending.py ``_outcomes``).

Pods that share a fit share node-fit's findings, those of the first of them diagnosed,
so each such class is diagnosed whole and in order by one process; the tests would
catch a class split across processes (its later pods would carry another pod's
scheduler events). Each report runs in its own process (tests/support/forked_probe.py),
as gpuctl does, with the threshold lowered so that a report of two pods is shared."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT, scenario_dirs, snapshot_of
from test_forked_read import json_by_processes, probe

REALWORLD = sorted(p / "snapshot" for p in (ROOT / "tests" / "realworld").iterdir() if (p / "snapshot").is_dir())
EVERY_SNAPSHOT = [str(snapshot_of(s)) for s in scenario_dirs()] + [str(p) for p in REALWORLD] + \
    [str(ROOT / "examples" / "demo-cluster")]


def _reports(got: dict) -> dict:
    return {path: (code, doc) for path, code, doc in got["reports"]}


PLAIN = 10 ** 9   # min_pods: the report of one process, pod after pod, without reading the bound pods ahead


@pytest.fixture(scope="module")
def one_process() -> dict:
    return _reports(probe(1, mode="pending", paths=EVERY_SNAPSHOT, min_pods=PLAIN))


def test_every_scenario_and_real_case_gets_the_same_report_from_several_processes(one_process):
    got = probe(3, mode="pending", paths=EVERY_SNAPSHOT)
    several = _reports(got)
    pending = [p for p, (_, doc) in one_process.items() if doc["pods"] >= 2]
    assert len(pending) >= 10, "the snapshots should hold reports of several Pending pods"
    assert got["forked"] >= len(pending)      # each of those was shared with the copies
    for path in EVERY_SNAPSHOT:
        assert several[path] == one_process[path], path


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    """The benchmark's generated cluster: many Pending pods in interleaved classes."""
    from benchmarks.snapshot_bench import write_lists

    return write_lists(tmp_path_factory.mktemp("pending"), 60, 3000)["dir"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> str:
    """Two classes of Pending pods, interleaved, whose scheduler messages differ from pod
    to pod, and pods with required anti-affinity of their own, which share no fit."""
    sys.path.insert(0, str(ROOT / "tests" / "realworld"))
    from kit import gpu_node, pod, taint, unschedulable, write_snapshot

    a = ("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {dedicated: train}. "
         "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not "
         "helpful for scheduling.")
    b = ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No "
         "preemption victims found for incoming pod.")
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    objs = [gpu_node("gpu-a"), gpu_node("gpu-b", taints=[taint("dedicated", "train")]),
            pod("busy", "ml", gpus=8, phase="Running", node="gpu-a", labels={"app": "solo"})]
    for i in range(40):
        msg = a if i % 3 == 0 else b
        objs += [pod(f"p-{i:02d}-x", "ml", gpus=8, conditions=[unschedulable(msg)]),
                 pod(f"p-{i:02d}-y", "ml", gpus=4, conditions=[unschedulable(msg)]),
                 pod(f"p-{i:02d}-z", "ml", gpus=2, labels={"app": "solo"}, affinity=anti,
                     conditions=[unschedulable(msg)])]
    return str(write_snapshot(tmp_path_factory.mktemp("mixed"), *objs))


@pytest.mark.parametrize("lone", [1, 64])
@pytest.mark.parametrize("cluster", ["big", "mixed"])
def test_interleaved_classes_of_a_large_report(request, cluster, lone):
    src = request.getfixturevalue(cluster)
    one = _reports(probe(1, mode="pending", paths=[src], min_pods=PLAIN))
    got = probe(2, mode="pending", paths=[src], lone=lone, who=True)
    assert got["forked"] == 1
    assert _reports(got) == one
    (code, doc), = one.values()
    assert doc["pods"] >= 100 and code == 1
    # each class whole, in order, in one process; and both processes took classes
    by_class: dict = {}
    for w in sorted(got["who"].values(), key=lambda w: w["index"]):
        by_class.setdefault(w["class"], []).append(w["by"])
    first = next(w["by"] for w in got["who"].values() if w["index"] == 0)
    assert len(by_class) >= (5 if cluster == "big" else 40)
    for c, pids in by_class.items():
        assert len(set(pids[1:] if c == 0 else pids)) == 1, c   # the first pod is diagnosed before the fork
    assert len({pids[-1] for pids in by_class.values()}) == 2 and first in {pids[-1] for pids in by_class.values()}


def test_copies_that_die_leave_their_classes_to_this_process(big):
    one = _reports(probe(1, mode="pending", paths=[big], min_pods=PLAIN))
    dying = probe(3, mode="pending", paths=[big], kill_children=True)
    assert dying["forked"] == 1 and _reports(dying) == one


def test_a_process_with_another_thread_is_never_forked(big):
    one = _reports(probe(1, mode="pending", paths=[big], min_pods=PLAIN))
    threaded = probe(3, mode="pending", paths=[big], thread=True)
    assert threaded["forked"] == 0 and _reports(threaded) == one


def test_the_command_prints_the_same_at_the_real_threshold(tmp_path_factory):
    """``gpuctl diagnose pending -A`` as a user runs it, on a cluster with more Pending
    GPU pods than the default threshold: the same output and exit code with several
    processes as with one."""
    from benchmarks.snapshot_bench import write_lists
    from gpuctl.reports import pending as P

    src = write_lists(tmp_path_factory.mktemp("real-pending"), 200, 30000)["dir"]
    got = json_by_processes(["diagnose", "pending", "-A"], src, timeout=300)
    assert got[2] == got[1]
    assert json.loads(got[1][1])["pods"] >= P.FORK_MIN_PODS
