"""Docs cannot fall behind (sqlite-utils style): every finding code has a runbook,
every runbook names real codes, and every command and option has help text."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from gpuctl.cli.app import app
from gpuctl.findings import CODES

RUNBOOKS = Path(__file__).resolve().parent.parent / "docs" / "runbooks"
SECTIONS = ["## What you see", "## How gpuctl decides", "## Confirm by hand", "## Fix", "## Escalate", "## Related"]


def test_every_code_has_a_runbook_with_the_sections():
    for code in CODES:
        path = RUNBOOKS / f"{code}.md"
        assert path.is_file(), f"no runbook for {code}"
        text = path.read_text()
        assert text.startswith(f"# {code}\n"), code
        positions = [text.find(s) for s in SECTIONS]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), f"{code}: sections missing or out of order"


def test_runbooks_name_only_real_codes():
    for path in RUNBOOKS.glob("*.md"):
        if path.name == "README.md":
            continue
        assert path.stem in CODES, f"runbook {path.name} has no finding code"
        for link in re.findall(r"\]\(([a-z0-9-]+)\.md\)", path.read_text()):
            assert link in CODES, f"{path.name} links to unknown code {link}"


def test_index_lists_every_code():
    index = (RUNBOOKS / "README.md").read_text()
    for code in CODES:
        assert f"({code}.md)" in index, f"runbooks/README.md does not list {code}"


def _walk(cmd, path: str):
    """Commands and groups, duck-typed: Typer may vendor its own trimmed Click."""
    yield path, cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from _walk(sub, f"{path} {name}")


def test_every_command_and_option_has_help():
    root = typer.main.get_command(app)
    for path, cmd in _walk(root, "gpuctl"):
        assert (cmd.help or cmd.short_help), f"{path} has no help"
        for p in cmd.params:
            kind = getattr(p, "param_type_name", "")
            assert kind in ("option", "argument"), (path, p)
            assert getattr(p, "help", None), f"{path} {kind} {p.opts[0]} has no help"
