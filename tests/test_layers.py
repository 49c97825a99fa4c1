"""Every arrow points down (docs/architecture.md).

    cli -> reports -> engine -> checks  -> knowledge -> model, config -> findings, errors
    cli -> apiserver ---------> collect -> (the same ground floor)
    cli -> render -------------------------> (the same ground floor)

A module may import its own package and any floor below its own, never a floor
above it nor a sibling on its own floor (checks, collect and render do not know
each other): at module level or inside a function. The test reads the source with
``ast``, so a lazy import counts too."""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT

PKG = ROOT / "gpuctl"

# package (or root module) -> floor; higher floors may import lower ones.
FLOORS = {
    "errors": 0, "findings": 0,                  # the ground floor: records, codes, errors
    "config": 1, "model": 1, "runbooks": 1,
    "knowledge": 2,                              # data and rules (reads the user's config)
    "collect": 3, "checks": 3, "render": 3,      # siblings: none imports another
    "engine": 4, "apiserver": 4,
    "reports": 5,
    "serve": 6,                                  # the exporter: serves the reports' documents
    "mcp": 6,                                    # the MCP tool server: the reports' documents as tools
    "cli": 7,
    "__main__": 8,
}


def _module(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imports(path):
    mod = _module(path)
    package = mod.rsplit(".", 1)[0]      # the package of a module, or of an __init__ itself
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
            for a in node.names:   # from . import x: x is a module, or a name of the package
                sub = ROOT.joinpath(*f"{target}.{a.name}".split("."))
                yield f"{target}.{a.name}" if sub.is_dir() or sub.with_suffix(".py").is_file() else target


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "gpuctl" or len(parts) < 2 or parts[1] == "__init__":
        return None
    return parts[1]


def wrong_imports(path) -> list[str]:
    here = _room(_module(path))
    if here is None:
        return []
    out = []
    for target in _imports(path):
        there = _room(target)
        if there is None or there == here:
            continue
        if FLOORS[there] >= FLOORS[here]:
            out.append(f"{target} ({there}, floor {FLOORS[there]} >= {here}, floor {FLOORS[here]})")
    return sorted(set(out))


FILES = sorted(p for p in PKG.rglob("*.py"))


def test_every_package_has_a_floor():
    rooms = {_room(_module(p)) for p in FILES} - {None}
    assert rooms <= set(FLOORS), f"give {sorted(rooms - set(FLOORS))} a floor in FLOORS (and in docs/architecture.md)"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_point_down(path):
    wrong = wrong_imports(path)
    assert not wrong, f"{_module(path)} imports against the direction: {wrong}"


@pytest.mark.parametrize("line, culprit", [
    ("from ..checks.context import PodContext", "gpuctl.checks.context"),     # collect -> checks: sideways
    ("from ..engine import diagnose", "gpuctl.engine"),                       # collect -> engine: upward
    ("import gpuctl.cli.app", "gpuctl.cli.app"),                              # upward, absolute
])
def test_the_rule_catches_a_wrong_import(tmp_path, monkeypatch, line, culprit):
    probe = tmp_path / "gpuctl" / "collect" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text((PKG / "collect" / "live.py").read_text() + f"\ndef later():\n    {line}\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert any(w.startswith(culprit) for w in wrong_imports(probe))


def test_a_downward_import_is_allowed(tmp_path, monkeypatch):
    probe = tmp_path / "gpuctl" / "engine" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from ..checks.registry import checks_for\nfrom ..model.snapshot import Snapshot\nfrom .ranking import merge\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert wrong_imports(probe) == []
