"""Finding runbooks: ``docs/runbooks/CODE.md``, shipped inside the wheel as
``gpuctl/runbooks/`` (pyproject force-include) and read from the source tree when
running from a checkout."""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path
from typing import Optional

from .findings import CODES


def _dirs() -> list[Path]:
    out = []
    try:
        packaged = Path(str(resources.files("gpuctl").joinpath("runbooks")))
        out.append(packaged)
    except (ModuleNotFoundError, TypeError):
        pass
    out.append(Path(__file__).resolve().parent.parent / "docs" / "runbooks")
    return [d for d in out if d.is_dir()]


def path_for(code: str) -> Optional[Path]:
    if not code or "/" in code or "\\" in code or code.startswith("."):
        return None
    for d in _dirs():
        p = d / f"{code}.md"
        if p.is_file():
            return p
    return None


def read(code: str) -> Optional[str]:
    p = path_for(code)
    return p.read_text(encoding="utf-8") if p and code != "README" else None


def available() -> list[str]:
    seen: set[str] = set()
    for d in _dirs():
        seen |= {p.stem for p in d.glob("*.md") if p.stem != "README"}
    return sorted(seen)


def index() -> list[dict[str, str]]:
    return [{"code": c, "severity": info.severity.value, "section": info.section, "title": info.title,
             "runbook": "yes" if path_for(c) else "missing"} for c, info in CODES.items()]


def closest(code: str) -> list[str]:
    return difflib.get_close_matches(code, list(CODES), n=3, cutoff=0.5)

