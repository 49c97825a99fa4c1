"""Not understood is not unreadable (issue 14, capability 1): when every read succeeded
and no check explains the pod, the diagnosis is inconclusive, says so without claiming
missing data, and shows what gpuctl saw, verbatim and ranked."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "realworld"))

from kit import write_snapshot, container, event, gpu_node, pod, terminated, unschedulable, waiting  # noqa: E402

PORTS = "0/2 nodes are available: 2 node(s) were rejected by the acme.example.com/gpu-budget plugin: team budget spent."


def _write(tmp_path, *objs, logs=()):
    return write_snapshot(tmp_path, *objs, logs=logs)


def test_an_unrecognised_scheduler_message_is_evidence_not_a_gap(cli, tmp_path):
    snap = _write(tmp_path, gpu_node("gpu-1", gpus=8), gpu_node("gpu-2", gpus=8),
                  pod("p", "ml", gpus=1, conditions=[unschedulable(PORTS)]),
                  event("Pod", "p", "ml", "FailedScheduling", PORTS, count=4),
                  event("Pod", "p", "ml", "FailedMount", "MountVolume.SetUp failed for volume \"cfg\" : "
                        "configmap \"trainer-cfg\" not found"))
    doc = cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()
    assert doc["verdict"] == "inconclusive"
    assert doc["observed"][0] == f"scheduler (PodScheduled Unschedulable): {PORTS}"
    assert any("FailedMount" in line and "trainer-cfg" in line for line in doc["observed"])
    assert not any(PORTS in line for line in doc["observed"][1:]), "the same message is shown once"
    skipped = {c["name"]: c["detail"] for c in doc["checks"] if c["status"] == "skipped"}
    assert "every read succeeded" in skipped["cause-identified"]
    assert "read everything" in doc["notes"][0] and "could not be read" not in doc["notes"][0]
    table = cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(snap)).out
    assert "No cause recognised" in table and "some data could not be read" not in table
    assert "What gpuctl saw, most telling first:" in table and "gpu-budget plugin" in table
    md = cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(snap), "-o", "markdown").out
    assert "What gpuctl saw, most telling first:" in md


def test_a_container_state_nobody_recognises_is_shown_with_its_error_lines(cli, tmp_path):
    c = container("app", image="registry.example.com/trainer:1", gpus=1)
    msg = 'secret "hf-token" not found'
    p = pod("p", "ml", phase="Pending", node="gpu-1", containers=[c],
            statuses=[waiting("app", "CreateContainerConfigError", msg, restarts=1,
                              last_exit={"reason": "Error", "exitCode": 3})])
    log = "starting\nloading shards\nERROR: shard 17 checksum mismatch in /data/shard-17.bin\nexiting\n"
    snap = _write(tmp_path, gpu_node("gpu-1"), p, logs=[("ml", "p", "app", log, True)])
    doc = cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()
    assert doc["verdict"] == "inconclusive", [f["code"] for f in doc["findings"]]
    assert doc["observed"][0] == f"container app (now): waiting CreateContainerConfigError: {msg} (restarts 1)"
    assert any("exit code 3" in line for line in doc["observed"])
    assert doc["observed"][-1] == "log of app (previous): ERROR: shard 17 checksum mismatch in /data/shard-17.bin"
    running = {c["name"]: c["detail"] for c in doc["checks"]}["containers-running"]
    assert "every read succeeded" in running


def test_missing_data_still_says_so(cli, tmp_path):
    """Without nodes the verdict is inconclusive because of the gap: it says what could
    not be read and lists nothing as 'seen but not recognised'."""
    snap = _write(tmp_path, pod("p", "ml", gpus=1, conditions=[unschedulable(PORTS)]))
    doc = cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()
    assert doc["verdict"] == "inconclusive"
    assert "observed" not in doc
    assert "could not be read" in doc["notes"][0]


def test_observed_ranks_and_bounds():
    from gpuctl.checks import observed as O

    assert O.MAX_LINES >= 10
    assert O._ERRORISH.search("RuntimeError: CUDA error: out of memory")
    assert not O._ERRORISH.search("epoch 3 loss 0.25")


def test_a_running_pod_whose_program_died_is_not_healthy(cli, tmp_path):
    from kit import running

    p = pod("p", "ml", phase="Running", node="gpu-1", containers=[container("app", gpus=1)], statuses=[running("app")])
    log = ("epoch 1\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
           "RuntimeError: unable to write to file </torch_1394_2747491098>\n")
    snap = _write(tmp_path, gpu_node("gpu-1"), p, logs=[("ml", "p", "app", log)])
    doc = cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(snap), "-o", "json").json()
    assert doc["verdict"] == "inconclusive"
    assert any("unable to write to file" in line for line in doc["observed"])
    clean = _write(tmp_path / "clean", gpu_node("gpu-1"), p, logs=[("ml", "p", "app", "epoch 1\nepoch 2: 0 errors\n")])
    assert cli("diagnose", "pod", "p", "-n", "ml", "--snapshot", str(clean), "-o", "json").json()["verdict"] == "healthy"
