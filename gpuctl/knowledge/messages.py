"""Loads the message-pattern tables (scheduler FitError reasons, device-plugin log lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


def load_yaml(name: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = resources.files("gpuctl.knowledge").joinpath(name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=loader)


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    code: str
    source: str
    # False where gpuctl's node-fit does not evaluate the constraint itself (host
    # ports, required pod affinity): the scheduler's word is then the evidence.
    state_checked: bool = True


@lru_cache(maxsize=None)
def scheduler_patterns() -> tuple[tuple[Pattern, ...], tuple[Pattern, ...]]:
    data = load_yaml("scheduler_messages.yaml")

    def compile_all(rows: list[dict[str, str]]) -> tuple[Pattern, ...]:
        return tuple(Pattern(re.compile(r["pattern"]), r["code"], r["source"], bool(r.get("state_checked", True)))
                     for r in rows)

    return compile_all(data["reasons"]), compile_all(data["messages"])
