"""One room per code: every finding code of the catalogue is decided by exactly one
declared check, has a runbook and a scenario; no check reports a code it does not
declare; the registry lists every declared check, once, in order."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import pytest

from conftest import ROOT, SCENARIOS, expected_of, target_of

from gpuctl.checks import registry
from gpuctl.findings import CODES


def test_every_code_is_decided_by_exactly_one_check():
    owners = defaultdict(list)
    for spec in registry.SPECS:
        for code in spec.codes:
            owners[code].append(spec.name)
    assert {c: o for c, o in owners.items() if len(o) != 1} == {}
    assert sorted(set(CODES) - set(owners)) == [], "codes no check decides"


def test_declared_codes_are_catalogued_and_not_both_decided_and_also():
    for spec in registry.SPECS:
        assert set(spec.codes) | set(spec.also) <= set(CODES), spec.name
        assert not set(spec.codes) & set(spec.also), spec.name


def test_check_names_are_unique_and_targets_known():
    names = [s.name for s in registry.SPECS]
    assert len(names) == len(set(names))
    assert {s.target for s in registry.SPECS} <= set(registry.TARGETS)


def test_the_registry_lists_every_declared_check():
    import gpuctl.checks as pkg

    declared = set()
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"gpuctl.checks.{info.name}")
        for _, fn in inspect.getmembers(mod, inspect.isfunction):
            if getattr(fn, "spec", None) is not None and fn.__module__ == mod.__name__:
                declared.add(fn.spec.name)
    assert declared == {s.name for s in registry.SPECS}


def test_every_code_has_a_runbook_and_a_scenario():
    covered = set()
    for s in SCENARIOS.iterdir():
        if (s / "expected.json").is_file():
            exp = expected_of(s)
            covered |= {exp["top_code"], *exp.get("codes", [])}
    assert sorted(c for c in CODES if not (ROOT / "docs" / "runbooks" / f"{c}.md").is_file()) == []
    assert sorted(set(CODES) - covered) == [], "codes no scenario shows (tests/scenarios/*/expected.json)"


def test_where_names_the_file_and_function():
    spec = registry.deciding("untolerated-taint")
    assert spec.name == "node-fit"
    assert spec.where == "gpuctl/checks/pending.py:node_fit"
    assert (ROOT / spec.where.split(":")[0]).is_file()
    assert [s.name for s in registry.reporting("untolerated-taint")] == ["scheduler-verdict"]
    assert registry.deciding("no-such-code") is None


def _scenarios():
    return sorted(s for s in SCENARIOS.iterdir() if (s / "expected.json").is_file())


@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda p: p.name)
def test_checks_report_only_what_they_declare(scenario, monkeypatch):
    """Every finding a check yields on a scenario is one of its declared codes."""
    from gpuctl import engine
    from gpuctl.checks.base import CheckSpec
    from gpuctl.collect.files import load_snapshot
    from gpuctl.engine import run

    seen: dict[str, set[str]] = defaultdict(set)

    def recording(target):
        out = []
        for spec in registry.checks_for(target):
            def fn(ctx, _spec=spec):
                found = list(_spec.fn(ctx))
                seen[_spec.name].update(f.code for f in found if hasattr(f, "code"))
                return found
            out.append(CheckSpec(spec.name, fn, spec.needs, spec.applies, spec.essential, spec.target, spec.codes, spec.also))
        return out

    monkeypatch.setattr(run, "checks_for", recording)
    exp = expected_of(scenario)
    snap = load_snapshot(str(scenario / "snapshot"))
    if exp.get("node"):
        d = engine.diagnose_node(snap, exp["node"])
    else:
        ns, target = target_of(exp)
        d = engine.diagnose(snap, ns, target)
    by_name = {s.name: s for s in registry.SPECS}
    wrong = {name: sorted(codes - set(by_name[name].codes) - set(by_name[name].also)) for name, codes in seen.items()}
    assert {k: v for k, v in wrong.items() if v} == {}
    assert {f.code for f in d.findings} <= set().union(*seen.values()), "a finding made outside the checks"


@pytest.mark.parametrize("code", sorted(CODES))
def test_runbook_debug_names_the_check_that_decides_a_code(cli, code):
    spec = registry.deciding(code)
    r = cli("runbook", code, "--debug")
    assert r.code == 0, r.err
    assert f"Decided by: {spec.name} ({spec.target} check, {spec.where})" in r.out
    doc = cli("runbook", code, "-o", "json").json()
    assert doc["checks"]["decidedBy"] == {"name": spec.name, "target": spec.target, "where": spec.where}
    assert [s["name"] for s in doc["checks"]["alsoReportedBy"]] == [s.name for s in registry.reporting(code)]
    assert "Decided by" not in cli("runbook", code).out     # only with --debug
