"""A large List file read by several processes gives the snapshot one process gives:
the same records in the same order, the same problems, the same errors; and falls back
to one process whenever it cannot be sure (a child dies, another thread runs). Both
ways: a directory's file cut into jobs (gpuctl.collect.forked.run, files.
_read_rest_forked) and a ``.tar.gz`` streamed to workers (forked.Pool, files._open_pool).

Each read runs in its own process (tests/support/forked_probe.py), as gpuctl does,
with the fork thresholds lowered so that a small file is cut into many jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

PROBE = Path(__file__).parent / "support" / "forked_probe.py"


def probe(processes: int, **args) -> dict:
    env = {**os.environ, "GPUCTL_PROCESSES": str(processes)}
    p = subprocess.run([sys.executable, str(PROBE), json.dumps(args)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def lists(tmp_path_factory) -> Path:
    """The benchmark's generated cluster, small: kubectl List files, one item a line."""
    from benchmarks.snapshot_bench import write_lists

    return Path(write_lists(tmp_path_factory.mktemp("forked"), 30, 900)["dir"])


def _tgz(d: Path) -> Path:
    out = d.parent / (d.name + ".tar.gz")
    with tarfile.open(out, "w:gz") as tf:
        for f in sorted(d.iterdir()):
            tf.add(f, arcname=f"{d.name}/{f.name}")
    return out


def _source(d: Path, how: str) -> str:
    return str(d if how == "dir" else _tgz(d))


def _took_part(got: dict, how: str) -> bool:
    """Whether other processes read some of it: a directory's file cut into jobs, or
    jobs a .tar.gz's workers took."""
    return got["forked"] >= 1 if how == "dir" else got["pool_sent"] >= 1


SOURCES = ["dir", "tar.gz"]


def _bound_pod(lists: Path) -> tuple[str, str]:
    for line in (lists / "pods.json").read_text().splitlines()[400:]:
        d = json.loads(line.rstrip(","))
        if d["spec"].get("nodeName") and not d["metadata"]["name"].startswith("nvidia"):
            return d["metadata"]["namespace"], d["metadata"]["name"]
    raise AssertionError("no bound pod")


NEEDS = {
    "capacity": ("collect_cluster", {}),
    "pending": ("collect_cluster", {"for_pending": True}),
    "pod (Pending target)": ("collect_for_pod", {"ns": "ml", "name": "bench-target"}),
    "workload": ("collect_for_workload", {"ns": "ml"}),
    "everything": ("everything", {}),
}


@pytest.mark.parametrize("how", SOURCES)
@pytest.mark.parametrize("need", NEEDS, ids=list(NEEDS))
def test_several_processes_read_what_one_reads(lists, need, how):
    collector, args = NEEDS[need]
    src = _source(lists, how)
    one = probe(1, mode="read", path=src, collector=collector, args=args)
    several = probe(3, mode="read", path=src, collector=collector, args=args)
    assert not _took_part(one, how)
    assert _took_part(several, how)          # pods.json at least was read by several processes
    assert several["snap"] == one["snap"]
    assert len(one["snap"]["pods"]) > 100


@pytest.mark.parametrize("how", SOURCES)
def test_a_bound_target_found_by_any_process_stops_the_read_as_one_process_does(lists, how):
    ns, name = _bound_pod(lists)
    args = {"ns": ns, "name": name}
    src = _source(lists, how)
    one = probe(1, mode="read", path=src, collector="collect_for_pod", args=args)
    several = probe(3, mode="read", path=src, collector="collect_for_pod", args=args)
    assert several["snap"] == one["snap"]
    target = [p for p in one["snap"]["pods"] if p[0] == f"{ns}/{name}"]
    assert target and target[0][1] == "Pod"


def _with_pods(tmp_path: Path, lists: Path, edit) -> Path:
    d = tmp_path / "edited"
    d.mkdir()
    for f in lists.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    lines = (d / "pods.json").read_text().splitlines()
    edit(lines)
    (d / "pods.json").write_text("\n".join(lines) + "\n")
    return d


@pytest.mark.parametrize("how", SOURCES)
def test_an_unreadable_field_mid_file_is_the_same_problem(lists, tmp_path, how):
    def edit(lines):
        d = json.loads(lines[500].rstrip(","))
        d["spec"]["containers"] = "not a list"
        lines[500] = json.dumps(d, separators=(",", ":")) + ","

    src = _source(_with_pods(tmp_path, lists, edit), how)
    one = probe(1, mode="read", path=src, collector="collect_cluster", args={"for_pending": True})
    several = probe(3, mode="read", path=src, collector="collect_cluster", args={"for_pending": True})
    assert several["snap"] == one["snap"]
    assert any("containers" in m for m in one["snap"]["malformed"])


@pytest.mark.parametrize("how", SOURCES)
@pytest.mark.parametrize("damage", ["truncated item", "stray bracket"])
def test_broken_json_mid_file_gives_what_one_process_gives(lists, tmp_path, damage, how):
    def edit(lines):
        lines[600] = lines[600][:200] + ("," if damage == "truncated item" else "]],")

    src = _source(_with_pods(tmp_path, lists, edit), how)
    one = probe(1, mode="read", path=src, collector="collect_cluster", args={})
    several = probe(3, mode="read", path=src, collector="collect_cluster", args={})
    assert several["snap"] == one["snap"]


@pytest.mark.parametrize("how", SOURCES)
def test_a_child_that_dies_leaves_its_work_to_this_process(lists, how):
    src = _source(lists, how)
    one = probe(1, mode="read", path=src, collector="collect_cluster", args={"for_pending": True})
    dying = probe(3, mode="read", path=src, collector="collect_cluster", args={"for_pending": True},
                  kill_children=True)
    if how == "dir":
        assert dying["gave_up"] >= 1        # pods.json, at least: its jobs outnumber what the parent takes first
    else:
        assert dying["pool_sent"] >= 1      # jobs went to workers that died: done here again
    assert dying["snap"] == one["snap"]


@pytest.mark.parametrize("how", SOURCES)
def test_a_process_with_another_thread_is_never_forked(lists, how):
    src = _source(lists, how)
    one = probe(1, mode="read", path=src, collector="collect_cluster", args={})
    threaded = probe(3, mode="read", path=src, collector="collect_cluster", args={}, thread=True)
    assert not _took_part(threaded, how)
    assert threaded["snap"] == one["snap"]


@pytest.mark.parametrize("how", SOURCES)
def test_the_commands_print_the_same_at_the_real_thresholds(tmp_path_factory, how):
    """``gpuctl`` itself, as a user runs it, on a cluster just large enough that its
    pods.json (or its bundle) is shared at the default thresholds: the same output
    and exit code with several processes as with one."""
    from benchmarks.snapshot_bench import write_lists
    from gpuctl.collect import files as F

    data = write_lists(tmp_path_factory.mktemp("real"), 120, 4000)
    assert os.path.getsize(Path(data["dir"]) / "pods.json") >= F.FORK_MIN_BYTES
    assert os.path.getsize(data["tgz"]) >= F.FORK_MIN_TARBALL
    src = data["dir"] if how == "dir" else data["tgz"]
    for argv in (["diagnose", "pending", "-A"], ["nodes", "capacity"], ["diagnose", "pod", "bench-target", "-n", "ml"]):
        got = json_by_processes(argv, src)
        assert got[2] == got[1], argv
        assert got[1][0] in (0, 1) and got[1][1].startswith("{")


def json_by_processes(argv: list[str], src: str, timeout: int = 120) -> dict[int, tuple[int, str]]:
    """``gpuctl ARGV -o json --snapshot SRC`` in its own process, as a user runs it, with
    GPUCTL_PROCESSES 1 and 2: {processes: (exit code, stdout)}; nothing on stderr."""
    got = {}
    for n in (1, 2):
        p = subprocess.run([sys.executable, "-m", "gpuctl", *argv, "-o", "json", "--snapshot", src],
                           capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "GPUCTL_NOW": "2026-11-20T03:12:00Z", "GPUCTL_PROCESSES": str(n)})
        assert p.stderr == "", p.stderr
        got[n] = (p.returncode, p.stdout)
    return got


# ------------------------------------------------------------------ forked.run itself


def test_jobs_come_back_in_order_from_every_process():
    got = probe(1, mode="run", jobs=40, workers=3)
    assert got["outcome"] == "returned" and not got["children_left"]
    assert [r[1]["job"] for r in got["results"]] == list(range(40))
    assert all(r[0] for r in got["results"])
    by_parent = [r[1]["by_parent"] for r in got["results"]]
    assert any(by_parent) and not all(by_parent)       # the parent and its children both took jobs


def test_a_job_that_is_not_ok_stops_the_process_that_ran_it():
    got = probe(1, mode="run", jobs=40, workers=2, fail=[3])
    results = got["results"]
    assert results[3] is not None and results[3][0] is False
    assert all(r is None or r[0] for i, r in enumerate(results) if i != 3)
    assert None in results[4:]                           # no process went on to every later job
    assert not got["children_left"]


def test_a_child_that_dies_loses_its_jobs_not_the_others():
    got = probe(1, mode="run", jobs=30, workers=3, die=[5], parent_sleep=0.05)   # the children take most jobs
    results = got["results"]
    assert results[5] is None or results[5][1]["by_parent"]    # a child took it and died, or this process took it
    assert sum(r is not None for r in results) >= 10
    assert all(r[1]["job"] == i for i, r in enumerate(results) if r is not None)
    assert not got["children_left"]


def test_the_results_a_dead_child_sent_before_it_died_do_not_count():
    """This process reads the copies' results while it works; a copy that then dies has
    none of its jobs counted, those it finished included (the caller redoes them)."""
    got = probe(1, mode="run", jobs=30, workers=3, die_second=True, parent_sleep=0.05)
    results = got["results"]
    assert all(r is None or r[1]["by_parent"] for r in results), results
    assert sum(r is None for r in results) >= 2      # each copy's first job (done, then lost) and its second
    assert not got["children_left"]


def test_an_error_in_the_parent_kills_and_reaps_the_children():
    got = probe(1, mode="run", jobs=40, workers=3, **{"raise": 6})
    assert got["outcome"] == "raised"
    assert not got["children_left"]


# ------------------------------------------------------------------ forked.Pool itself


def _pool(**args) -> dict:
    got = probe(1, mode="pool", **args)
    if got["results"] is not None:
        assert [r[1]["job"] for r in got["results"]] == list(range(args["jobs"]))
        assert [r[1]["text"] for r in got["results"]] == [f"text {j}" for j in range(args["jobs"])]
    assert not got["children_left"]
    return got


def test_a_pool_gives_every_job_back_in_order_from_workers_and_this_process():
    got = _pool(jobs=40, workers=2)
    by = [r[1]["by"] for r in got["results"]]
    assert "worker" in by and "parent" in by
    assert [j for j, b in enumerate(by) if b == "worker"] == got["sent"]


def test_a_pool_worker_that_dies_has_its_job_done_here():
    got = _pool(jobs=30, workers=2, die=[5])
    assert 5 in got["sent"]
    assert got["results"][5][1]["by"] == "parent"


def test_a_job_a_pool_worker_fails_is_done_here():
    got = _pool(jobs=30, workers=2, fail=[3])
    assert 3 in got["sent"]                     # two workers, two jobs each: the first four go to them
    assert got["results"][3][1]["by"] == "parent"
    assert got["results"][4][1]["by"] in ("worker", "parent")


def test_an_error_here_kills_and_reaps_the_pool():
    got = _pool(jobs=40, workers=2, **{"raise": 12})
    assert got["outcome"] == "raised"


def test_read_processes_setting(monkeypatch):
    from gpuctl.collect import forked

    monkeypatch.setenv("GPUCTL_PROCESSES", "1")
    assert forked.processes() == 1
    monkeypatch.setenv("GPUCTL_PROCESSES", "3")
    assert forked.processes() == 3
    monkeypatch.setenv("GPUCTL_PROCESSES", "many")
    assert forked.processes() == 1                        # not a number: one process, never a guess
    monkeypatch.delenv("GPUCTL_PROCESSES")
    assert 1 <= forked.processes() <= forked.MAX_PROCESSES
