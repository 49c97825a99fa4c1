"""The engine's rules, tested on hand-built records: how findings are ranked and
merged (docs/output.md "findings", docs/runbooks/README.md "Reading the result"),
how the verdict is decided and which exit code it gives (docs/output.md
"Verdicts", docs/exit-codes.md, docs/decisions.md (a)), and how a check that
breaks is isolated (docs/output.md "checks": ``skipped`` / ``error``).

The engine's functions are looked up on ``gpuctl.engine`` inside the tests
(``_engine()``): a moved name fails the tests that use it, not the collection of
the whole file. Fake checks are handed to ``run_checks`` through the
``checks_for`` it calls, so the tests do not depend on where the registry lives."""

from __future__ import annotations

import dataclasses
import itertools
import random
from types import SimpleNamespace

import pytest

from gpuctl.findings import CODES, VERDICTS, CheckResult, Diagnosis, Finding, Fix, Severity, Status


def _engine():
    """``gpuctl.engine`` (a package since the engine was split up; its public names
    are re-exported there), imported when a test runs."""
    import gpuctl.engine

    return gpuctl.engine


def rank(findings: list[Finding]) -> list[str]:
    """The codes in the order the engine ranks (and merges) them."""
    return [f.code for f in _engine().merge(list(findings))]


def F(code: str, **kw) -> Finding:
    kw.setdefault("summary", f"summary of {code}")
    return Finding(code, kw.pop("summary"), **kw)


def C(name: str, status: Status, essential: bool = False, detail: str = "") -> CheckResult:
    return CheckResult(name, status, detail, essential)


def passed_checks() -> list[CheckResult]:
    return [C("scheduler-verdict", Status.PASSED), C("node-fit", Status.PASSED, essential=True)]


# ---------------------------------------------------------------- the records


def test_severities_and_verdicts_are_the_documented_sets():
    assert [s.value for s in sorted(Severity, key=lambda s: s.weight)] == ["blocker", "critical", "warning", "info"]
    assert set(VERDICTS) == {"blocked", "failing", "at-risk", "healthy", "inconclusive"}


def test_a_finding_takes_its_codes_default_severity_and_refuses_unknown_codes():
    assert F("insufficient-gpu").severity == Severity.BLOCKER
    assert F("gpu-unhealthy").severity == Severity.CRITICAL
    assert F("gpu-count-mismatch").severity == Severity.WARNING
    assert F("scheduling-in-progress").severity == Severity.INFO
    assert F("gpu-memory-exhausted", severity=Severity.BLOCKER).severity == Severity.BLOCKER
    with pytest.raises(ValueError, match="no-such-code"):
        F("no-such-code")


def test_a_fix_that_cannot_run_as_printed_says_why():
    assert Fix("look", ["kubectl get nodes"]).needs_judgement == ""
    assert "editor" in Fix("edit", ["kubectl -n ml edit deployment/x"]).needs_judgement
    assert "evicts" in Fix("drain", ["kubectl drain gpu-1 --ignore-daemonsets"]).needs_judgement
    assert "placeholder" in Fix("label", ["kubectl label node n a=<profile>"]).needs_judgement
    # a '<' inside the trailing comment is prose, not a placeholder
    assert Fix("ok", ["kubectl uncordon gpu-1   # when <ready>"]).needs_judgement == ""
    assert "needsJudgement" not in Fix("look", ["kubectl get nodes"]).to_dict()


# ---------------------------------------------------------------- ranking


def test_a_root_cause_ranks_before_its_symptom_whatever_the_input_order():
    def findings():
        cause = F("device-plugin-not-running", nodes=["gpu-1"], root_cause=True, unblocks=1, disruption=1)
        symptom = F("insufficient-gpu", nodes=["gpu-1", "gpu-2", "gpu-3"], symptom_of="device-plugin-not-running")
        return [cause, symptom]

    assert rank(findings()) == ["device-plugin-not-running", "insufficient-gpu"]
    assert rank(findings()[::-1]) == ["device-plugin-not-running", "insufficient-gpu"]


def test_a_symptom_ranks_below_its_cause_even_when_it_is_more_severe_and_wider():
    cause = F("gpu-unhealthy", nodes=["gpu-2"], root_cause=True, disruption=3)        # critical
    symptom = F("insufficient-gpu", nodes=["gpu-1", "gpu-2", "gpu-3", "gpu-4"],        # blocker
                symptom_of="gpu-unhealthy", root_cause=True, unblocks=4, disruption=0)
    assert rank([symptom, cause]) == ["gpu-unhealthy", "insufficient-gpu"]


def test_info_findings_rank_last_even_as_root_causes():
    info = F("scale-up-in-progress", root_cause=True, unblocks=9, disruption=0)
    warning = F("gpu-count-mismatch", nodes=["gpu-1"])
    symptom = F("insufficient-gpu", nodes=["gpu-1"], symptom_of="gpu-count-mismatch")
    assert rank([info, symptom, warning]) == ["gpu-count-mismatch", "insufficient-gpu", "scale-up-in-progress"]


def test_root_causes_whose_fix_alone_lets_the_pod_run_rank_first():
    root = F("gpu-count-mismatch", nodes=["gpu-1"], root_cause=True, unblocks=1)          # warning, 1 node
    other = F("insufficient-gpu", nodes=[f"gpu-{i}" for i in range(2, 7)])                  # blocker, 5 nodes
    assert rank([other, root]) == ["gpu-count-mismatch", "insufficient-gpu"]


def test_among_root_causes_the_least_disruptive_fix_ranks_first():
    edit_pod = F("untolerated-taint", nodes=["gpu-1"], root_cause=True, unblocks=1, disruption=0)
    hardware = F("node-not-ready", nodes=["gpu-2", "gpu-3", "gpu-4"], root_cause=True, unblocks=3, disruption=3)
    assert rank([hardware, edit_pod]) == ["untolerated-taint", "node-not-ready"]


def test_equally_disruptive_root_causes_rank_by_the_nodes_they_unblock():
    one = F("node-unschedulable", nodes=["gpu-1"], root_cause=True, unblocks=1, disruption=1)
    three = F("untolerated-taint", nodes=["gpu-2", "gpu-3", "gpu-4"], root_cause=True, unblocks=3, disruption=1)
    assert rank([one, three]) == ["untolerated-taint", "node-unschedulable"]


def test_other_causes_rank_by_how_many_nodes_they_involve():
    narrow = F("node-selector-mismatch", nodes=["gpu-1"])
    wide = F("untolerated-taint", nodes=["gpu-2", "gpu-3", "gpu-4"])
    assert rank([narrow, wide]) == ["untolerated-taint", "node-selector-mismatch"]


def test_severity_orders_findings_that_are_otherwise_equal():
    # alphabetical order of these codes is the reverse of their severity order
    findings = [F("gpu-count-mismatch", nodes=["n"]), F("untolerated-taint", nodes=["n"]), F("xid-error", nodes=["n"])]
    assert rank(findings) == ["untolerated-taint", "xid-error", "gpu-count-mismatch"]
    assert [f.severity for f in _engine().merge(findings)] == [Severity.BLOCKER, Severity.CRITICAL, Severity.WARNING]


def test_equal_findings_rank_by_code_whatever_the_input_order():
    def make():
        return [F(code, nodes=["gpu-1"]) for code in ("untolerated-taint", "node-unschedulable", "insufficient-gpu")]

    orders = {tuple(rank(list(p))) for p in itertools.permutations(make())}
    assert orders == {("insufficient-gpu", "node-unschedulable", "untolerated-taint")}


def test_the_ranking_does_not_depend_on_the_order_checks_reported_in():
    def make():
        return [
            F("scheduling-in-progress"),
            F("insufficient-gpu", nodes=["a", "b"], symptom_of="device-plugin-not-running"),
            F("device-plugin-not-running", nodes=["a", "b"], root_cause=True, unblocks=2, disruption=1),
            F("untolerated-taint", nodes=["c"], root_cause=True, unblocks=1, disruption=0),
            F("node-selector-mismatch", nodes=["d", "e", "f"]),
            F("gpu-count-mismatch", nodes=["g"]),
        ]

    expected = ["untolerated-taint", "device-plugin-not-running", "node-selector-mismatch", "gpu-count-mismatch",
                "insufficient-gpu", "scheduling-in-progress"]
    rng = random.Random(7)
    for _ in range(50):
        findings = make()
        rng.shuffle(findings)
        assert rank(findings) == expected


# ---------------------------------------------------------------- merging duplicates


def test_duplicates_become_one_finding_with_evidence_and_nodes_united():
    a = F("insufficient-gpu", evidence=["free on gpu-1: 2", "scheduler: Insufficient nvidia.com/gpu"], nodes=["gpu-1"])
    b = F("insufficient-gpu", evidence=["scheduler: Insufficient nvidia.com/gpu", "free on gpu-2: 1"],
          nodes=["gpu-1", "gpu-2"])
    c = F("insufficient-gpu", evidence=["free on gpu-3: 0"], nodes=["gpu-3"])
    merged = _engine().merge([a, b, c])
    assert len(merged) == 1
    # b involves the most nodes, so it ranks strongest: its lines lead, the others' new lines follow, none twice
    assert merged[0].evidence == ["scheduler: Insufficient nvidia.com/gpu", "free on gpu-2: 1", "free on gpu-1: 2",
                                  "free on gpu-3: 0"]
    assert merged[0].nodes == ["gpu-1", "gpu-2", "gpu-3"]


def test_a_merged_finding_keeps_the_strongest_ranked_words_and_fixes():
    weak = F("untolerated-taint", summary="from the scheduler's message", nodes=["gpu-1"],
             fixes=[Fix("remove the taint", ["kubectl taint nodes gpu-1 dedicated-"])])
    strong = F("untolerated-taint", summary="2 nodes carry a taint; fixing this alone frees 2 nodes",
               nodes=["gpu-1", "gpu-2"], root_cause=True, unblocks=2, disruption=0,
               fixes=[Fix("tolerate it", ["kubectl -n ml patch deployment/x --type=json -p '[]'"])])
    for order in ([weak, strong], [strong, weak]):
        weak.evidence, strong.evidence = [], []
        (m,) = _engine().merge(list(order))
        assert m.summary == "2 nodes carry a taint; fixing this alone frees 2 nodes"
        assert [fx.summary for fx in m.fixes] == ["tolerate it"]
        assert m.root_cause and m.unblocks == 2


def test_a_merged_finding_borrows_fixes_and_root_cause_it_lacks():
    bare = F("node-unschedulable", nodes=["gpu-1"], root_cause=True, unblocks=1, disruption=0)
    other = F("node-unschedulable", nodes=["gpu-1", "gpu-2"], unblocks=2,
              fixes=[Fix("uncordon", ["kubectl uncordon gpu-1"])])
    (m,) = _engine().merge([other, bare])
    assert [fx.commands for fx in m.fixes] == [["kubectl uncordon gpu-1"]]
    assert m.root_cause is True
    assert m.unblocks == 2
    assert m.nodes == ["gpu-1", "gpu-2"]


def test_merging_keeps_one_finding_per_code_among_others_and_ranks_the_result():
    findings = [F("insufficient-gpu", nodes=["a"]), F("untolerated-taint", nodes=["b"], root_cause=True, unblocks=1),
                F("insufficient-gpu", nodes=["c"]), F("scheduling-in-progress"), F("untolerated-taint", nodes=["d"])]
    merged = _engine().merge(findings)
    assert [f.code for f in merged] == ["untolerated-taint", "insufficient-gpu", "scheduling-in-progress"]
    assert merged[0].nodes == ["b", "d"] and merged[1].nodes == ["a", "c"]


def test_merging_duplicates_never_lowers_the_severity():
    warn = F("driver-cuda-mismatch", nodes=["gpu-1"], root_cause=True, disruption=2, severity=Severity.WARNING)
    block = F("driver-cuda-mismatch", nodes=["gpu-1", "gpu-2"], disruption=2)          # blocker, not a root cause
    (m,) = _engine().merge([block, warn])
    assert m.severity == Severity.BLOCKER
    assert _engine().verdict_for([m], passed_checks(), bound=False) == "blocked"


# ---------------------------------------------------------------- verdicts and exit codes


def verdict(severities: list[str], checks: list[CheckResult] | None = None, bound: bool = False) -> tuple[str, int]:
    codes = {"blocker": "insufficient-gpu", "critical": "xid-error", "warning": "gpu-count-mismatch",
             "info": "scheduling-in-progress"}
    findings = _engine().merge([F(codes[s]) for s in severities])
    checks = passed_checks() if checks is None else checks
    v = _engine().verdict_for(findings, checks, bound)
    target = {"kind": "Pod", "namespace": "ml", "name": "p", "node": "gpu-1" if bound else None}
    return v, Diagnosis(target=target, verdict=v, findings=findings, checks=checks).exit_code


@pytest.mark.parametrize("severities,bound,expected", [
    ([], False, ("healthy", 0)),
    ([], True, ("healthy", 0)),
    (["info"], False, ("healthy", 0)),                        # info findings may be present in a healthy diagnosis
    (["blocker"], False, ("blocked", 1)),
    (["blocker"], True, ("failing", 1)),
    (["critical"], False, ("at-risk", 1)),
    (["warning"], True, ("at-risk", 1)),
    (["warning", "info"], False, ("at-risk", 1)),
    (["warning", "critical", "blocker"], False, ("blocked", 1)),
    (["info", "blocker"], True, ("failing", 1)),
])
def test_the_verdict_follows_the_most_severe_finding(severities, bound, expected):
    assert verdict(severities, bound=bound) == expected


@pytest.mark.parametrize("severities", [[], ["info"], ["warning"], ["blocker"]])
def test_a_skipped_essential_check_makes_the_verdict_inconclusive_even_with_findings(severities):
    checks = [C("scheduler-verdict", Status.PASSED),
              C("node-fit", Status.SKIPPED, essential=True, detail="list nodes (cluster-wide): forbidden")]
    assert verdict(severities, checks) == ("inconclusive", 1)
    assert verdict(severities, checks, bound=True) == ("inconclusive", 1)


@pytest.mark.parametrize("severities,expected", [
    ([], ("healthy", 0)), (["info"], ("healthy", 0)), (["warning"], ("at-risk", 1)), (["blocker"], ("blocked", 1)),
])
def test_a_skipped_check_the_verdict_does_not_depend_on_leaves_the_verdict_to_the_findings(severities, expected):
    checks = [C("node-fit", Status.PASSED, essential=True), C("autoscaler", Status.SKIPPED, detail="forbidden"),
              C("read events", Status.SKIPPED, detail="list events: timeout")]
    assert verdict(severities, checks) == expected


@pytest.mark.parametrize("severities,bound,expected", [
    ([], False, ("inconclusive", 1)),
    (["info"], False, ("inconclusive", 1)),
    (["warning"], False, ("at-risk", 1)),
    (["critical"], True, ("at-risk", 1)),
    (["blocker"], False, ("blocked", 1)),
    (["blocker"], True, ("failing", 1)),
])
def test_an_essential_check_in_error_is_inconclusive_only_when_no_finding_decides(severities, bound, expected):
    checks = [C("containers-running" if bound else "node-fit", Status.ERROR, essential=True,
                detail="KeyError at fit while reading pod ml/p: 'x'"), C("autoscaler", Status.PASSED)]
    assert verdict(severities, checks, bound) == expected


@pytest.mark.parametrize("severities,expected", [([], ("healthy", 0)), (["blocker"], ("blocked", 1))])
def test_a_check_in_error_the_verdict_does_not_depend_on_leaves_the_verdict_to_the_findings(severities, expected):
    checks = passed_checks() + [C("decode objects", Status.ERROR, detail="Node gpu-1: spec.taints: not a list"),
                                C("autoscaler", Status.ERROR, detail="TypeError at scan while reading pod ml/p: x")]
    assert verdict(severities, checks) == expected


def test_a_failed_check_changes_nothing_by_itself_the_findings_decide():
    checks = [C("node-fit", Status.FAILED, essential=True, detail="insufficient-gpu")]
    assert verdict(["blocker"], checks) == ("blocked", 1)


def test_only_a_healthy_verdict_exits_0():
    seen = {}
    combos = [[], ["info"], ["warning"], ["critical"], ["blocker"]]
    check_sets = [passed_checks(), [C("node-fit", Status.SKIPPED, essential=True)],
                  [C("node-fit", Status.ERROR, essential=True)], [C("autoscaler", Status.SKIPPED)]]
    for severities, checks, bound in itertools.product(combos, check_sets, (False, True)):
        v, code = verdict(severities, checks, bound)
        seen.setdefault(v, set()).add(code)
    assert seen == {"healthy": {0}, "blocked": {1}, "failing": {1}, "at-risk": {1}, "inconclusive": {1}}


# ---------------------------------------------------------------- isolating checks


def _spec(name, fn, *, needs=(), applies=None, essential=False, target="pod"):
    """A check spec as ``@check(...)`` (gpuctl/checks/base.py) declares one; not in the
    registry."""
    from gpuctl.checks import base

    return base.check(name, needs=needs, applies=applies, essential=essential, target=target)(fn).spec


def _use_checks(monkeypatch, checks_for) -> None:
    """Make ``run_checks`` see these checks (it asks ``checks_for(target)``)."""
    monkeypatch.setitem(_engine().run_checks.__globals__, "checks_for", checks_for)


@pytest.fixture
def fake_checks(monkeypatch):
    """Checks of a target of their own, seen by ``run_checks`` only in this test."""
    specs: list = []
    target = "unit-test-target"

    def register(name, fn, *, needs=(), applies=None, essential=False):
        specs.append(_spec(name, fn, needs=needs, applies=applies, essential=essential, target=target))

    real = _engine().run_checks.__globals__["checks_for"]
    _use_checks(monkeypatch, lambda t: list(specs) if t == target else real(t))
    register.target = target
    return register


def ctx(gaps=None, ns="ml-research", name="train-0"):
    return SimpleNamespace(snap=SimpleNamespace(gaps=gaps or {}), ns=ns, name=name)


def run(register, **kw):
    return _engine().run_checks(kw.pop("context", None) or ctx(), register.target, **kw)


def test_a_check_that_raises_is_an_error_naming_what_it_read_and_the_rest_still_run(fake_checks):
    ran = []

    def before(c):
        ran.append("before")
        yield F("untolerated-taint", nodes=["gpu-1"])

    def broken(c):
        ran.append("broken")
        raise KeyError("allocatable")

    def after(c):
        ran.append("after")
        yield F("gpu-count-mismatch", nodes=["gpu-2"])

    fake_checks("before", before)
    fake_checks("broken", broken, essential=True)
    fake_checks("after", after)
    findings, results = run(fake_checks)
    assert ran == ["before", "broken", "after"]
    assert [f.code for f in findings] == ["untolerated-taint", "gpu-count-mismatch"]
    assert [(r.name, r.status) for r in results] == [("before", Status.FAILED), ("broken", Status.ERROR),
                                                      ("after", Status.FAILED)]
    detail = results[1].detail
    assert detail.startswith("KeyError") and "pod ml-research/train-0" in detail and "'allocatable'" in detail
    assert results[1].essential is True and results[0].essential is False


def test_a_check_that_raises_while_reading_a_node_names_the_node(fake_checks):
    def broken(c):
        raise ZeroDivisionError("no GPUs")
        yield

    fake_checks("broken", broken)
    _, (r,) = run(fake_checks, context=ctx(ns="", name="gpu-a100-5"))
    assert r.status == Status.ERROR
    assert "ZeroDivisionError" in r.detail and "node gpu-a100-5" in r.detail and "no GPUs" in r.detail


def test_a_broken_applies_is_a_broken_check_and_does_not_stop_the_others(fake_checks):
    def applies(c):
        raise AttributeError("spec")

    fake_checks("picky", lambda c: [F("insufficient-gpu")], applies=applies)
    fake_checks("plain", lambda c: [])
    findings, results = run(fake_checks)
    assert findings == []
    assert [(r.name, r.status) for r in results] == [("picky", Status.ERROR), ("plain", Status.PASSED)]
    assert "AttributeError" in results[0].detail


def test_a_check_that_does_not_apply_is_not_listed(fake_checks):
    fake_checks("elsewhere", lambda c: [F("insufficient-gpu")], applies=lambda c: False)
    fake_checks("here", lambda c: [])
    findings, results = run(fake_checks)
    assert findings == [] and [r.name for r in results] == ["here"]


def test_a_check_whose_data_is_missing_is_skipped_with_the_reason_without_running(fake_checks):
    from gpuctl.model.snapshot import Gap

    called = []
    gap = Gap("list nodes (cluster-wide)", "forbidden", verb="list", resource="nodes")
    fake_checks("needs-nodes", lambda c: called.append(1) or [F("insufficient-gpu")], needs=("nodes",), essential=True)
    fake_checks("needs-nothing", lambda c: [F("gpu-count-mismatch")])
    findings, results = run(fake_checks, context=ctx(gaps={"nodes": gap}))
    assert called == []
    assert [f.code for f in findings] == ["gpu-count-mismatch"]
    assert results[0].status == Status.SKIPPED and results[0].essential
    assert results[0].detail == "list nodes (cluster-wide): forbidden; needs RBAC verb 'list' on 'nodes' cluster-wide"
    assert _engine().verdict_for(findings, results, bound=False) == "inconclusive"


def test_a_check_that_finds_its_data_unavailable_while_running_is_skipped_not_error(fake_checks):
    from gpuctl.checks.base import DataUnavailable

    def logs(c):
        raise DataUnavailable("logs of container trainer: forbidden")

    fake_checks("container-logs", logs)
    _, (r,) = run(fake_checks)
    assert (r.status, r.detail) == (Status.SKIPPED, "logs of container trainer: forbidden")


def test_a_check_on_part_of_its_data_keeps_its_findings_and_is_error(fake_checks):
    from gpuctl.checks.base import Partial

    fake_checks("node-fit", lambda c: [F("insufficient-gpu", nodes=["gpu-1"]),
                                        Partial("Node gpu-2: status.allocatable: not a quantity")], essential=True)
    findings, (r,) = run(fake_checks)
    assert [f.code for f in findings] == ["insufficient-gpu"]
    assert r.status == Status.ERROR
    assert r.detail == "insufficient-gpu; Node gpu-2: status.allocatable: not a quantity"


def test_check_status_passed_for_info_or_nothing_failed_for_a_problem(fake_checks):
    from gpuctl.checks.base import Note

    fake_checks("quiet", lambda c: [])
    fake_checks("informative", lambda c: [F("scale-up-in-progress"), Note("karpenter is provisioning")])
    fake_checks("finder", lambda c: [F("untolerated-taint"), F("insufficient-gpu"), F("scheduling-in-progress")])
    _, results = run(fake_checks)
    assert [(r.status, r.detail) for r in results] == [
        (Status.PASSED, ""),
        (Status.PASSED, "scale-up-in-progress; karpenter is provisioning"),
        (Status.FAILED, "insufficient-gpu, scheduling-in-progress, untolerated-taint"),
    ]


def test_a_check_reading_an_unreadable_field_of_the_target_is_error_without_running(fake_checks):
    called = []
    fake_checks("node-fit", lambda c: called.append(1) or [], essential=True)
    fake_checks("volumes", lambda c: [])
    _, results = run(fake_checks, broken={"node-fit": "could not read Pod ml/p: spec.tolerations: not a list"})
    assert called == []
    assert [(r.name, r.status, r.detail) for r in results] == [
        ("node-fit", Status.ERROR, "could not read Pod ml/p: spec.tolerations: not a list"),
        ("volumes", Status.PASSED, ""),
    ]


# ---------------------------------------------------------------- isolation in a real diagnosis


def _snapshot(name: str):
    from pathlib import Path

    from gpuctl.collect.files import load_snapshot

    return load_snapshot(Path(__file__).parent / "scenarios" / name / "snapshot")


@pytest.fixture
def break_check(monkeypatch):
    """Make one real check raise, the others untouched."""
    broken: set[str] = set()
    real = _engine().run_checks.__globals__["checks_for"]

    def boom(ctx):
        raise KeyError("allocatable")

    def replaced(spec):
        if dataclasses.is_dataclass(spec):
            return dataclasses.replace(spec, fn=boom)
        return SimpleNamespace(**{**vars(spec), "fn": boom})

    _use_checks(monkeypatch, lambda t: [replaced(s) if s.name in broken else s for s in real(t)])
    return broken.add


def test_a_real_check_that_raises_leaves_the_rest_of_a_healthy_diagnosis_standing(break_check):
    engine = _engine()
    ns, pod = "ml-research", "finetune-phi3-g8xk2"
    clean = engine.diagnose(_snapshot("healthy-running"), ns, pod)
    assert clean.verdict == "healthy" and all(c.status == Status.PASSED for c in clean.checks)
    break_check("image-pull")
    d = engine.diagnose(_snapshot("healthy-running"), ns, pod)
    assert [c.name for c in d.checks] == [c.name for c in clean.checks]
    broken = next(c for c in d.checks if c.name == "image-pull")
    assert broken.status == Status.ERROR and "KeyError" in broken.detail and f"pod {ns}/{pod}" in broken.detail
    assert all(c.status == Status.PASSED for c in d.checks if c.name != "image-pull")
    # image-pull is not a check the verdict depends on (docs/output.md, "Verdicts" 4.)
    assert (d.verdict, d.exit_code) == ("healthy", 0)


def test_a_real_essential_check_that_raises_makes_a_pod_nothing_explains_inconclusive(break_check):
    engine = _engine()
    ns, pod = "ml-research", "rlhf-reward-model-2kfjd"
    clean = engine.diagnose(_snapshot("untolerated-taint"), ns, pod)
    assert clean.verdict == "blocked"
    break_check("node-fit")
    d = engine.diagnose(_snapshot("untolerated-taint"), ns, pod)
    status = {c.name: c.status for c in d.checks}
    assert status["node-fit"] == Status.ERROR
    for c in clean.checks:   # every other check still ran
        if c.name != "node-fit":
            assert status[c.name] == Status.PASSED, c.name
    assert not any(f.severity in (Severity.BLOCKER, Severity.CRITICAL, Severity.WARNING) for f in d.findings)
    assert (d.verdict, d.exit_code) == ("inconclusive", 1)
    assert d.nodes == []          # no per-node fit from a node-fit that did not run
    assert d.notes and "inconclusive" in d.notes[0]


def test_every_registered_code_is_one_a_finding_may_carry():
    # the ranking relies on Finding's own check of codes: every CODES entry builds
    for code in CODES:
        assert F(code).severity == CODES[code].severity
