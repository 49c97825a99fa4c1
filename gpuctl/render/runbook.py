"""``gpuctl runbook``'s views: the list of finding codes and one runbook, for people
(table) and as Markdown."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text


def render_index(rows: list[dict[str, Any]], console: Console) -> None:
    table = Table(show_edge=False, pad_edge=False)
    for col in ("CODE", "SEVERITY", "MEANING"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["code"], r["severity"], r["title"])
    console.print(table)


def index_markdown(rows: list[dict[str, Any]]) -> str:
    return ("| code | severity | meaning |\n|---|---|---|\n"
            + "".join(f"| `{r['code']}` | {r['severity']} | {r['title']} |\n" for r in rows))


def render_runbook(text: str, console: Console) -> None:
    """Markdown for people; fenced code blocks are printed line by line, never
    hard-wrapped, so a command copies whole at any width."""
    parts = re.split(r"^```[^\n]*\n(.*?)^```[ \t]*$", text, flags=re.S | re.M)
    for i, part in enumerate(parts):
        if i % 2:
            for line in part.rstrip("\n").splitlines():
                console.print(Text("    " + line, style="green"), soft_wrap=True)
            console.print()
        elif part.strip():
            console.print(Markdown(part))


def render_rooms(rooms: dict[str, Any], console: Console) -> None:
    """``gpuctl runbook CODE --debug``: the check that decides the code, then the
    others that also report it."""
    d = rooms.get("decidedBy")
    line = Text("Decided by: ", style="bold")
    line.append(f"{d['name']} ({d['target']} check, {d['where']})" if d else "no check")
    console.print(line, soft_wrap=True)
    for s in rooms.get("alsoReportedBy") or []:
        console.print(Text(f"Also reported by: {s['name']} ({s['target']} check, {s['where']})", style="dim"), soft_wrap=True)
