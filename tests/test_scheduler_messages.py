"""The FitError parser against every wording in the reference (§1): old and new
taint texts, the preemption suffix, the DRA prefix, double periods, PreFilter
messages, Volcano's variant."""

from __future__ import annotations

import pytest

from gpuctl.checks.scheduler_events import parse_fit_error

NEW_TAINT = ("0/5 nodes are available: 3 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s). "
             "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.")


def test_histogram_and_preemption_suffix():
    fe = parse_fit_error(NEW_TAINT)
    assert fe.total_nodes == 5
    assert [(r.count, r.code, r.resource) for r in fe.reasons] == [(3, "@resource", "nvidia.com/gpu"), (2, "untolerated-taint", None)]
    assert fe.postfilter.startswith("preemption:")
    assert fe.preemption_helpful is False


@pytest.mark.parametrize("reason, key, value", [
    ("node(s) had untolerated taint {nvidia.com/gpu: present}", "nvidia.com/gpu", "present"),
    ("node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }", "node-role.kubernetes.io/control-plane", ""),
    ("node(s) had taint {dedicated: ml-team}, that the pod didn't tolerate", "dedicated", "ml-team"),
])
def test_old_taint_wordings_carry_the_key(reason, key, value):
    fe = parse_fit_error(f"0/3 nodes are available: 3 {reason}.")
    rc = fe.reasons[0]
    assert (rc.count, rc.code, rc.taint_key, rc.taint_value) == (3, "untolerated-taint", key, value)


def test_legacy_taint_wording_without_key():
    fe = parse_fit_error("0/2 nodes are available: 2 node(s) had taints that the pod didn't tolerate.")
    assert fe.reasons[0].code == "untolerated-taint" and fe.reasons[0].taint_key is None


def test_comma_inside_reason_does_not_split_entries():
    fe = parse_fit_error("0/3 nodes are available: 1 node(s) had taint {dedicated: ml-team}, that the pod didn't tolerate, "
                         "2 Insufficient nvidia.com/mig-1g.10gb.")
    assert [r.count for r in fe.reasons] == [1, 2]
    assert fe.reasons[1].resource == "nvidia.com/mig-1g.10gb"


def test_double_period_from_old_releases():
    fe = parse_fit_error("0/4 nodes are available: 4 node(s) had untolerated taint {nvidia.com/gpu: present}. "
                         "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling..")
    assert fe.reasons[0].taint_key == "nvidia.com/gpu"
    assert fe.preemption_helpful is False


def test_dra_prefix_before_preemption():
    fe = parse_fit_error("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu, 2 Insufficient memory. "
                         "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert [r.resource for r in fe.reasons] == [None, "cpu", "memory"]
    assert fe.postfilter.startswith("no new claims to deallocate")


def test_prefilter_message():
    fe = parse_fit_error("0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
                         "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
    assert fe.reasons == [] and fe.prefilter_code == "volume-binding"


@pytest.mark.parametrize("reason, code", [
    ("node(s) didn't match Pod's node affinity/selector", "@selector-or-affinity"),
    ("node(s) were unschedulable", "node-unschedulable"),
    ("node(s) didn't match pod anti-affinity rules", "pod-topology-constraint"),
    ("node(s) didn't match pod topology spread constraints (missing required label)", "pod-topology-constraint"),
    ("node(s) had volume node affinity conflict", "volume-binding"),
    ("node(s) didn't match PersistentVolume's node affinity", "volume-binding"),
    ("cannot allocate all claims", "dra-claim-unallocatable"),
    ("Too many pods", "insufficient-resource"),
])
def test_reason_codes(reason, code):
    assert parse_fit_error(f"0/7 nodes are available: 7 {reason}.").reasons[0].code == code


def test_volcano_wording_and_non_fit_errors():
    fe = parse_fit_error("0/4 nodes are unavailable: 4 node(s) resource fit failed.")
    assert fe.total_nodes == 4 and fe.reasons[0].count == 4
    assert parse_fit_error("Successfully assigned ml/x to gpu-1") is None
    assert parse_fit_error("waiting for scheduling gates: [kueue.x-k8s.io/admission]").prefilter_code == "queue-not-admitted"
