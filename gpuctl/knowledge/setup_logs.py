"""Lines a GPU program logs while it sets up NCCL / CUDA / its process group.

The patterns live in ``setup_logs.yaml`` (a source per entry, the rule in its
header). ``stalled_in_setup(lines)`` returns the trailing setup lines of a log
that ends in setup (nothing after them, no "setup finished" line among them), else
an empty list. Never raises on text; patterns are bounded.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .messages import load_yaml

__all__ = ["is_setup_line", "stalled_in_setup", "SetupLogsError"]

MAX_LINE = 2000   # characters of a line looked at


class SetupLogsError(ValueError):
    """setup_logs.yaml is malformed."""


@lru_cache(maxsize=None)
def _patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    data = load_yaml("setup_logs.yaml")
    sources = data.get("sources") or {}
    out = []
    for key in ("setup", "done"):
        rows = data.get(key)
        if not isinstance(rows, list) or not rows:
            raise SetupLogsError(f"setup_logs.yaml: '{key}' must be a non-empty list")
        compiled = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or row.get("source") not in sources:
                raise SetupLogsError(f"setup_logs.yaml: {key}[{i}] needs a pattern and a known source")
            compiled.append(re.compile(str(row["pattern"])))
        out.append(tuple(compiled))
    return out[0], out[1]


def is_setup_line(line: str) -> bool:
    setup, _ = _patterns()
    text = line[:MAX_LINE]
    return any(p.search(text) for p in setup)


def _done(line: str) -> bool:
    _, done = _patterns()
    text = line[:MAX_LINE]
    return any(p.search(text) for p in done)


def stalled_in_setup(lines: list[str]) -> list[str]:
    """The trailing run of setup lines when a log ends with them and the last of them
    does not say setup finished (only the lines after the last "finished" one count);
    [] when the log ends with anything else (progress, a prompt, output)."""
    tail: list[str] = []
    for line in reversed([ln for ln in lines if ln.strip()]):
        if not is_setup_line(line):
            break
        tail.append(line)
    tail.reverse()
    done = [i for i, ln in enumerate(tail) if _done(ln)]
    if done:   # a communicator finished setting up: only a later setup that never finished counts
        tail = tail[done[-1] + 1:]
    return tail
