"""``gpuctl label-nodes``' table: the ``gpuctl/labels/v1`` document for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .capacity import print_unreadable
from .safe import clean


def render_labels(doc: dict[str, Any], console: Console) -> None:
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("NODE", no_wrap=True)
    table.add_column("SKU (SOURCE)", overflow="fold")
    table.add_column("LABELS", overflow="fold")
    for n in doc["nodes"]:
        changes = n.get("changed", {})
        lines = [Text(f"+ {k}={v}", style="green") for k, v in n["set"].items() if k not in changes]
        lines += [Text(f"~ {k}: {v['from']} -> {v['to']}", style="yellow") for k, v in changes.items()]
        lines += [Text(f"! {k}: {v['from']} (wants {v['to']})", style="red") for k, v in n.get("needs_overwrite", {}).items()]
        lines += [Text(f"= {k}={v}", style="dim") for k, v in n["unchanged"].items()]
        if n["status"] != "ok":
            lines.append(Text(n["status"], style={"unknown": "yellow", "conflict": "red"}.get(n["status"], "dim")))
        if n.get("result"):
            lines.append(Text(n["result"], style="bold"))
        cell = Text("\n").join(Text(clean(str(t)), style=t.style) for t in lines) if lines else Text("-")
        table.add_row(Text(clean(n["node"])), Text(clean(f"{n['sku'] or '?'} ({n['source'] or '-'})")), cell)
    console.print(table)
    print_unreadable(doc, console)
    for n in doc["nodes"]:
        for problem in n.get("problems", []):
            console.print(Text(f"  {clean(n['node'])}: {clean(problem)}", style="yellow"))
    if not doc["applied"] and not any(n.get("result") for n in doc["nodes"]) and any(n["set"] for n in doc["nodes"]):
        console.print(Text("Dry run: nothing was sent. Add --apply to write these labels.", style="bold"))
