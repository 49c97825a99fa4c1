"""A Running GPU container whose log ends with NCCL / CUDA / process-group setup lines
and nothing after them, long after it started, is stuck in setup (a hang no Kubernetes
object explains): the diagnosis is inconclusive with those lines shown, never healthy.
A log that moves past setup, a pod without GPUs, or a container that just started
stays healthy."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import NOW, gpu_node, pod, write_snapshot  # noqa: E402

from gpuctl.knowledge.setup_logs import is_setup_line, stalled_in_setup  # noqa: E402

NCCL_HANG = """\
[I 21:14:02.118 NotebookApp] Kernel started: 0c8d1f4e
host-0:1203:1405 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.17<0>
host-0:1203:1405 [0] NCCL INFO NET/IB : No device found.
host-0:1203:1405 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.17<0>
NCCL version 2.18.3+cuda12.2
"""
NCCL_DONE = NCCL_HANG + "host-0:1203:1405 [0] NCCL INFO comm 0x55d4 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
PROGRESS = NCCL_HANG + "epoch 1 step 100 loss 2.314\n"
C10D_HANG = """\
INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 0
INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)
"""
NCCL_WARN = "host-0:9:9 [0] NCCL INFO Bootstrap : Using eth0\nhost-0:9:9 [0] misc/socket.cc:538 NCCL WARN Net : Connect to 10.0.0.9<43817> failed : Connection refused\n"


@pytest.mark.parametrize("text,stalled", [
    (NCCL_HANG, True), (C10D_HANG, True), (NCCL_WARN, True),
    (NCCL_DONE, False), (PROGRESS, False), ("", False), ("serving on :8000\n", False),
], ids=["nccl-socket", "c10d-barrier", "nccl-warn", "init-complete", "progress", "empty", "app-output"])
def test_stalled_in_setup(text, stalled):
    tail = stalled_in_setup(text.splitlines())
    assert bool(tail) is stalled
    if stalled:
        assert tail[-1] == text.splitlines()[-1]


def test_a_second_communicator_that_never_finishes_counts():
    lines = (NCCL_DONE + "host-0:1203:1405 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.17<0>\n").splitlines()
    assert stalled_in_setup(lines) == [lines[-1]]


def test_setup_lines_are_bounded():
    assert is_setup_line("x NCCL INFO y")
    assert not is_setup_line("NCCL" * 100000)


def _running(tmp_path, log, gpus=1, started="2026-11-19T09:00:00Z"):
    p = pod("trainer-0", "ml", gpus=gpus, phase="Running", node="gpu-1", created=started)
    return write_snapshot(tmp_path, gpu_node("gpu-1", gpus=8), p, logs=[("ml", "trainer-0", "main", log)])


def _diagnose(cli, snap):
    return cli("diagnose", "pod", "trainer-0", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()


@pytest.mark.parametrize("log", [NCCL_HANG, C10D_HANG, NCCL_WARN], ids=["nccl", "c10d", "nccl-warn"])
def test_a_gpu_pod_stuck_in_setup_is_inconclusive_with_the_lines(cli, tmp_path, log):
    doc = _diagnose(cli, _running(tmp_path, log))
    assert doc["verdict"] == "inconclusive", doc["verdict"]
    assert not [f for f in doc["findings"] if f["severity"] != "info"]
    check = next(c for c in doc["checks"] if c["name"] == "containers-running")
    assert check["status"] == "skipped" and "setup" in check["detail"]
    last = log.splitlines()[-1].strip()
    assert any(last[:80] in line for line in doc.get("observed") or []), doc.get("observed")


@pytest.mark.parametrize("log", [NCCL_DONE, PROGRESS, "serving on :8000\n", ""], ids=["init-complete", "progress", "app", "empty"])
def test_a_gpu_pod_past_setup_stays_healthy(cli, tmp_path, log):
    assert _diagnose(cli, _running(tmp_path, log))["verdict"] == "healthy"


def test_a_pod_without_gpus_is_not_judged_by_its_nccl_lines(cli, tmp_path):
    assert _diagnose(cli, _running(tmp_path, NCCL_HANG, gpus=0))["verdict"] != "inconclusive"


def test_a_container_that_just_started_is_still_setting_up(cli, tmp_path):
    assert _diagnose(cli, _running(tmp_path, NCCL_HANG, started=NOW))["verdict"] == "healthy"
