"""The ground floors import nothing above them.

`gpuctl/model` and `gpuctl/knowledge` (records, rules, data) and `gpuctl/collect` (the
only code that talks to the outside) must not import the analysis, reporting,
rendering or command layers, nor the test API server, at module level or inside a
function: `collect -> model/knowledge`, never `collect -> checks`. (The rest of the
one-way contract, `cli -> reports/engine -> checks -> model`, is issue 13's.)"""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT

PKG = ROOT / "gpuctl"
ABOVE = ("gpuctl.checks", "gpuctl.engine", "gpuctl.reports", "gpuctl.render", "gpuctl.cli", "gpuctl.apiserver")
FLOORS = ("collect", "model", "knowledge")


def _module(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imports(path):
    mod = _module(path)
    package = mod.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{a.name}" for a in node.names)


FILES = sorted(p for floor in FLOORS for p in (PKG / floor).rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_ground_floors_do_not_import_upward(path):
    wrong = sorted({t for t in _imports(path) if t.startswith(ABOVE)})
    assert not wrong, f"{_module(path)} imports {wrong}"


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    fake = PKG / "collect" / "live.py"
    text = fake.read_text() + "\nfrom ..checks.context import PodContext\n"
    probe = tmp_path / "gpuctl" / "collect" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(text)
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert any(t.startswith("gpuctl.checks") for t in _imports(probe))
