"""Classify kubelet, container-runtime, NVIDIA toolkit and CUDA/framework messages.

The patterns live in ``runtime_messages.yaml`` (a source per entry); this module
compiles them once and matches text against them:

    classify(text, where) -> list[RuntimeMatch]

``where`` is "event" (event messages), "status" (pod status message, container
state messages) or "log" (container log lines). The result has at most one match
per finding code (the first matching entry in file order), and entries marked
``fallback`` only count when nothing more specific matched. ``classify`` never
raises on input text; patterns are linear-time (literal prefixes, bounded
repetitions), so even a 1 MB line is cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .messages import load_yaml

__all__ = ["RuntimeMatch", "RuntimeMessagesError", "CODES", "WHERE", "classify", "codes_in", "patterns"]

CODES = frozenset({
    "unexpected-admission-error", "nvidia-runtime-error", "runtime-class-missing", "driver-cuda-mismatch",
    "gpu-not-requested", "gpu-memory-exhausted", "container-lost-gpu-access", "image-pull-failed",
    "container-oom-killed", "crash-loop", "xid-error", "ecc-uncorrectable",
})
WHERE = ("event", "status", "log")

_LINE_MAX = 400          # characters of the matched line kept in RuntimeMatch.line
_GROUP_MAX = 120         # characters of a named group inserted into a detail
_TOKEN = re.compile(r"\{([a-z_]{1,32})\}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class RuntimeMessagesError(ValueError):
    """runtime_messages.yaml is malformed (names the entry)."""


@dataclass(frozen=True)
class RuntimeMatch:
    code: str
    detail: str     # operator meaning, with the message's specifics filled in
    line: str       # the line of the text that matched (trimmed)
    source: str


@dataclass(frozen=True)
class _Entry:
    code: str
    where: frozenset[str]
    regex: re.Pattern[str]
    detail: str
    source: str
    fallback: bool
    cut: str | None = None


@lru_cache(maxsize=None)
def patterns() -> tuple[_Entry, ...]:
    """Every compiled entry, in file order."""
    data: Any = load_yaml("runtime_messages.yaml")
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise RuntimeMessagesError("runtime_messages.yaml: top-level 'messages' list is missing")
    out = []
    for i, row in enumerate(data["messages"]):
        try:
            code = str(row["code"])
            where = frozenset(str(w) for w in row["where"])
            regex = re.compile(str(row["pattern"]))
            cut = row.get("cut")
            entry = _Entry(code, where, regex, str(row["detail"]), str(row["source"]), bool(row.get("fallback", False)),
                           str(cut) if cut else None)
        except (KeyError, TypeError, re.error) as exc:
            raise RuntimeMessagesError(f"runtime_messages.yaml: messages[{i}] is malformed: {exc}") from exc
        if code not in CODES:
            raise RuntimeMessagesError(f"runtime_messages.yaml: messages[{i}]: unknown code {code!r}")
        if not where or not where <= set(WHERE):
            raise RuntimeMessagesError(f"runtime_messages.yaml: messages[{i}]: bad where {sorted(where)}")
        missing = set(_TOKEN.findall(entry.detail)) - set(regex.groupindex)
        if missing:
            raise RuntimeMessagesError(f"runtime_messages.yaml: messages[{i}]: detail names unknown groups {sorted(missing)}")
        out.append(entry)
    return tuple(out)


def _group_text(name: str, value: str | None, cut: str | None = None) -> str:
    if value is None:
        return "?"
    if cut:
        value = value.split(cut, 1)[0]
    if name == "cuda_int" and value.isascii() and value.isdigit() and 4 <= len(value) <= 6:
        v = int(value)
        return f"{v // 1000}.{(v % 1000) // 10}"
    v = _CONTROL.sub(" ", value)[:_GROUP_MAX]
    return v.strip() or "?"


def _fill(detail: str, m: re.Match[str], cut: str | None = None) -> str:
    groups = m.groupdict()
    return _TOKEN.sub(lambda t: _group_text(t.group(1), groups.get(t.group(1)), cut), detail)


def _line_of(text: str, start: int, end: int) -> str:
    lo = text.rfind("\n", max(0, start - 4 * _LINE_MAX), start) + 1
    hi = text.find("\n", end, end + 4 * _LINE_MAX)
    if hi == -1:
        hi = min(len(text), end + 4 * _LINE_MAX)
    line = text[lo:hi]
    if len(line) > _LINE_MAX:   # keep a window around the match
        s = max(0, start - lo - _LINE_MAX // 4)
        line = ("…" if s else "") + line[s:s + _LINE_MAX] + ("…" if s + _LINE_MAX < len(line) else "")
    return _CONTROL.sub(" ", line).strip()


def classify(text: str, where: str) -> list[RuntimeMatch]:
    """Finding codes that ``text`` (an event message, a status message or a log
    line) points at, most specific first; [] when nothing matches."""
    if not isinstance(text, str) or not text or where not in WHERE:
        return []
    specific: dict[str, RuntimeMatch] = {}
    generic: dict[str, RuntimeMatch] = {}
    for e in patterns():
        if where not in e.where:
            continue
        bucket = generic if e.fallback else specific
        if e.code in bucket:
            continue
        m = e.regex.search(text)
        if m is None:
            continue
        bucket[e.code] = RuntimeMatch(e.code, _fill(e.detail, m, e.cut), _line_of(text, m.start(), m.end()), e.source)
    if specific:
        return list(specific.values())
    return list(generic.values())


def codes_in(where: str) -> tuple[str, ...]:
    """The codes a message found in ``where`` (event, status, log) can mean, as the
    patterns say: what a check classifying that text may report."""
    return tuple(sorted({e.code for e in patterns() if where in e.where}))
