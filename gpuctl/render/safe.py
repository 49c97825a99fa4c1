"""Cluster text is untrusted: event messages, logs, labels and names may carry
terminal escape sequences (CSI, OSC — which can retitle a terminal or hide text),
other control characters, or Rich markup. ``clean`` removes the former; renderers
build ``rich.text.Text`` objects (never markup strings) so the latter prints literally."""

from __future__ import annotations

import re

# ESC [ ... final byte (CSI), ESC ] ... BEL or ESC \ (OSC), ESC P/X/^/_ ... ST, lone ESC + char, C1 controls.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b.?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
# C0/C1 controls, and the Unicode bidirectional controls (embeddings, overrides,
# isolates, marks): they reorder how a line is displayed, so a fix command quoting
# cluster text could read differently from what a paste runs ("Trojan Source",
# CVE-2021-42574).
_C0 = r"\x00-\x08\x0b-\x1f"                                          # all but \n and \t
_BEYOND_C0 = r"\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # DEL, C1, bidi controls
_CONTROL = re.compile(f"[{_C0}{_BEYOND_C0}]")
# The same in the compact text json.dumps(..., ensure_ascii=False) writes: a C0 control
# there is an escape (\u00XX, \b, \f, \r), the others are themselves; every sequence
# _ANSI removes starts with one of them. An escaped backslash before "u00" matches too.
_CONTROL_IN_JSON = re.compile(rf"\\(?:u00[01]|[bfr])|[{_BEYOND_C0}]")


def clean(text: object) -> str:
    """Printable text: escape sequences, control characters and bidi controls removed
    (\\n and \\t kept)."""
    s = text if isinstance(text, str) else str(text)
    s = _ANSI.sub("", s)
    s = _CONTROL.sub("", s)
    return s


def json_needs_clean(text: str) -> bool:
    """Whether ``clean_data`` might change the document whose compact JSON text (as
    json.dumps writes it with ensure_ascii=False) is ``text``; False: it would not."""
    return _CONTROL_IN_JSON.search(text) is not None


def clean_data(obj: object) -> object:
    """The same, recursively, for JSON/YAML documents."""
    if isinstance(obj, str):
        return clean(obj)
    if isinstance(obj, list):
        return [clean_data(x) for x in obj]
    if isinstance(obj, dict):
        return {clean(k) if isinstance(k, str) else k: clean_data(v) for k, v in obj.items()}
    return obj
