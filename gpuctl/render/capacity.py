"""Capacity and pending reports for people: Rich tables that read at a glance
(usage bars; cordoned, NotReady and unhealthy in colour), CSV and Markdown."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .safe import clean
from .diagnosis import Para, StyledPara, command_lines, markdown_fences

BAR_WIDTH = 10


def _n(v: Any) -> str:
    """A figure, or "?" where it could not be read."""
    return "?" if v is None else str(v)


def unreadable_lines(doc: dict[str, Any]) -> list[str]:
    """One line per object that could not be fully read (doc["unreadable"]):
    ``Node gpu-a-1: spec.taints: expected a list, got a map``."""
    out = []
    for u in doc.get("unreadable") or []:
        if u.get("kind") is None:
            out.append(clean(u["problem"]))
            continue
        ref = f"{u['kind']} {u['namespace'] + '/' if u.get('namespace') else ''}{u.get('name') or '?'}"
        line = f"{ref}: {u['field'] + ': ' if u.get('field') else ''}{u['problem']}"
        if u.get("kept") is False:
            line += " (left out of the report)"
        out.append(clean(line))
    return out


def print_unreadable(doc: dict[str, Any], console: Console) -> None:
    lines = unreadable_lines(doc)
    if not lines:
        return
    console.print()
    console.print(Text(f"Could not be read fully ({len(lines)}); the report leaves these fields out:", style="bold yellow"))
    for line in lines:
        console.print(Para(line, 2, 4, "yellow"), soft_wrap=True)


def unreadable_markdown(doc: dict[str, Any]) -> list[str]:
    lines = unreadable_lines(doc)
    if not lines:
        return []
    return ["", f"Could not be read fully ({len(lines)}); the report leaves these fields out:", ""] + \
        [f"- {_md(line)}" for line in lines]


def _bar(used: Any, total: Any) -> Text:
    if used is None or total is None:
        return Text("?" * BAR_WIDTH, style="dim")
    if total <= 0:
        return Text("·" * BAR_WIDTH, style="dim")
    filled = min(BAR_WIDTH, round(BAR_WIDTH * used / total))
    style = "red" if used >= total else "yellow" if used / total >= 0.75 else "green"
    return Text("█" * filled, style=style) + Text("░" * (BAR_WIDTH - filled), style="dim")


def _state(row: dict[str, Any]) -> Text:
    bits = []
    if not row["ready"]:
        bits.append(("NotReady", "bold red"))
    if not row["schedulable"]:
        bits.append(("cordoned", "yellow"))
    if row["unhealthy"]:
        bits.append((f"{row['unhealthy']} unhealthy", "magenta"))
    if row.get("unreadable"):
        bits.append(("partly unreadable", "bold yellow"))
    if not bits:
        return Text("ok", style="green")
    out = Text()
    for i, (t, s) in enumerate(bits):
        out.append((", " if i else "") + t, style=s)
    return out


def render_capacity(doc: dict[str, Any], console: Console, wide: bool = False) -> None:
    console.print(Text(f"GPU capacity by pool (pool label: {clean(doc['pool_label'])})", style="bold"))
    if not doc["rows"]:
        console.print(Text("No node advertises a GPU resource.", style="bold"))
        print_unreadable(doc, console)
        return
    for pool in doc["pools"]:
        rows = [r for r in doc["rows"] if r["pool"] == pool["pool"] and r["resource"] == pool["resource"]]
        console.print()
        skus = sorted({r["sku"] or "?" for r in rows})
        one_sku = len(skus) == 1
        head = Text(f"{clean(pool['pool'])}" + (f" ({clean(skus[0])})" if one_sku and skus[0] != pool["pool"] else ""),
                    style="bold cyan")
        head.append(f"  {clean(pool['resource'])}: {pool['allocated']}/{pool['allocatable']} allocated, {pool['free']} free"
                    f"{', ' + str(pool['unhealthy']) + ' unhealthy' if pool['unhealthy'] else ''} on {pool['nodes']} node(s)")
        console.print(StyledPara(head, 2), soft_wrap=True)
        table = Table(show_edge=False, pad_edge=False, box=None)
        sharing = any(r.get("replicas") for r in rows)
        columns = ["NODE"] + ([] if one_sku and not sharing else ["SKU"]) + ["USED", "ALLOC", "FREE", "STATE"]
        for col in columns:
            table.add_column(col, no_wrap=col == "NODE", overflow="ignore" if col == "NODE" else "fold")
        for r in rows:
            share = f" ({r['physical_gpus']} GPUs x{r['replicas']})" if r.get("replicas") else ""
            cells = [Text(clean(r["node"]))]
            if "SKU" in columns:
                cells.append(Text(clean((r["sku"] or "?") + share)))
            cells += [_bar(r["allocated"], r["allocatable"]), Text(f"{_n(r['allocated'])}/{_n(r['allocatable'])}"),
                      Text(_n(r["free"])), _state(r)]
            table.add_row(*cells)
        console.print(table)
        if wide:   # one node at a time, wrapped between items: a label or taint is never split
            console.print(Text("  TAINTS and LABELS", style="bold"))
            for r in rows:
                console.print(Para(r["node"], 2, 4), soft_wrap=True)
                console.print(Para("taints: " + (", ".join(r.get("taints") or []) or "-"), 4, 12, "dim"), soft_wrap=True)
                console.print(Para("labels: " + (", ".join(f"{k}={v}" for k, v in (r.get("labels") or {}).items()) or "-"),
                                   4, 12, "dim"), soft_wrap=True)
        frag = pool["fragmentation"]
        hist = ", ".join(f"{k} free: {v}" for k, v in frag["free_histogram"].items()) or "no usable node"
        line = Text(f"  largest free block {frag['largest_free_block']}; nodes by free GPUs: {hist}", style="dim")
        if frag.get("stranded"):
            line.append(f"; stranded {frag['stranded']} (below the {frag['request_basis']} of {frag['request_size']})", style="yellow")
        console.print(StyledPara(line, 4), soft_wrap=True)
        if frag.get("summary"):
            console.print(Para(frag["summary"], 2, 4, "bold yellow"), soft_wrap=True)
        if pool.get("consolidation_hint"):
            console.print(Para(pool["consolidation_hint"], 2, 4, "italic"), soft_wrap=True)
    console.print()
    totals = Table(title="Cluster totals", title_justify="left", show_edge=False, pad_edge=False, box=None)
    for col in ("RESOURCE", "NODES", "CAPACITY", "ALLOCATABLE", "ALLOCATED", "FREE", "UNHEALTHY"):
        totals.add_column(col)
    for t in doc["totals"]:
        totals.add_row(clean(t["resource"]), str(t["nodes"]), str(t["capacity"]), str(t["allocatable"]), str(t["allocated"]),
                       str(t["free"]), str(t["unhealthy"]))
    console.print(totals)
    render_queues(doc, console)
    print_unreadable(doc, console)


def render_queues(doc: dict[str, Any], console: Console) -> None:
    """GPUs by Kueue ResourceFlavor: quota next to the nodes that carry the flavor."""
    q = doc.get("queues")
    if not q:
        return
    console.print()
    table = Table(title="Kueue quota by ResourceFlavor", title_justify="left", show_edge=False, pad_edge=False, box=None)
    for col in ("FLAVOR", "RESOURCE", "QUEUES", "NOMINAL", "RESERVED", "FREE", "NODES", "ALLOCATABLE"):
        table.add_column(col)
    for f in q["flavors"]:
        table.add_row(clean(f["flavor"]), clean(f["resource"]), str(f["clusterQueues"]), _n(f["nominal"]), _n(f["reserved"]),
                      _n(f["free"]), _n(f["nodes"]), _n(f["allocatable"]))
    console.print(table)
    # one small table per ClusterQueue under its name and cohort: nine columns in one
    # table do not fit 80 columns without cutting names
    from rich.padding import Padding

    by_queue: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in q["clusterQueues"]:
        by_queue.setdefault((r["clusterQueue"], r["cohort"] or ""), []).append(r)
    for (name, cohort), rows in by_queue.items():
        console.print(Text(f"ClusterQueue {clean(name)}" + (f" (cohort {clean(cohort)})" if cohort else "")))
        per = Table(show_edge=False, pad_edge=False, box=None)
        for col in ("FLAVOR", "RESOURCE", "NOMINAL", "RESERVED", "FREE", "BORROW", "LEND"):
            per.add_column(col)
        for r in rows:
            per.add_row(clean(r["flavor"]), clean(r["resource"]), _n(r["nominal"]), _n(r["reserved"]), _n(r["free"]),
                        "-" if r["borrowingLimit"] is None else str(r["borrowingLimit"]),
                        "-" if r["lendingLimit"] is None else str(r["lendingLimit"]))
        console.print(Padding(per, (0, 0, 0, 2)))


CSV_COLUMNS = ("node", "pool", "resource", "sku", "capacity", "allocatable", "allocated", "free", "unhealthy",
               "schedulable", "ready", "replicas", "physical_gpus", "unreadable")


def capacity_csv(doc: dict[str, Any]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in doc["rows"]:
        row = {k: clean(v) if isinstance(v, str) else ("true" if v is True else "false" if v is False else v)
               for k, v in r.items()}
        row["unreadable"] = clean("; ".join(r.get("unreadable") or []))
        w.writerow(row)
    return out.getvalue()


def _md(v: Any) -> str:
    return clean(str(v)).replace("|", "\\|")


def capacity_markdown(doc: dict[str, Any]) -> str:
    lines = [f"## GPU capacity (pool label `{_md(doc['pool_label'])}`)", ""]
    lines += ["| pool | resource | nodes | allocated / allocatable | free | unhealthy | largest free block | stranded |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in doc["pools"]:
        f = p["fragmentation"]
        lines.append(f"| {_md(p['pool'])} | `{_md(p['resource'])}` | {p['nodes']} | {p['allocated']} / {p['allocatable']} | "
                     f"{p['free']} | {p['unhealthy']} | {f['largest_free_block']} | {f['stranded']} |")
    lines += ["", "| node | resource | sku | allocated / allocatable | free | state |", "| --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        state = ", ".join(s for s, on in (("NotReady", not r["ready"]), ("cordoned", not r["schedulable"]),
                                           (f"{r['unhealthy']} unhealthy", bool(r["unhealthy"])),
                                           ("partly unreadable", bool(r.get("unreadable")))) if on) or "ok"
        lines.append(f"| {_md(r['node'])} | `{_md(r['resource'])}` | {_md(r['sku'] or '?')} | {_n(r['allocated'])} / {_n(r['allocatable'])} | "
                     f"{_n(r['free'])} | {state} |")
    if doc.get("queues"):
        lines += ["", "| Kueue flavor | resource | ClusterQueues | nominal | reserved | free | nodes | allocatable |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {_md(f['flavor'])} | `{_md(f['resource'])}` | {f['clusterQueues']} | {_n(f['nominal'])} | {_n(f['reserved'])} | "
                  f"{_n(f['free'])} | {_n(f['nodes'])} | {_n(f['allocatable'])} |" for f in doc["queues"]["flavors"]]
    lines += unreadable_markdown(doc)
    return "\n".join(lines) + "\n"


def _age(seconds: Any) -> str:
    from ..model.snapshot import human_age

    return human_age(seconds) if seconds is not None else "?"


def _queue(p: dict[str, Any]) -> str:
    """``, queue Q`` for a pod that waits in a queue (Kueue ClusterQueue, Volcano or KAI queue)."""
    return f", queue {clean(p['queue'])}" if p.get("queue") else ""


def _pending_unlisted(doc: dict[str, Any]) -> bool:
    """The Pending pods themselves could not be listed: no count is a true count."""
    return any(c.get("name") == "read pending-pods" for c in doc.get("checks") or [])


def render_pending(doc: dict[str, Any], console: Console, wide: bool = False) -> None:
    if _pending_unlisted(doc) and not doc["groups"]:
        console.print(Text(f"Pending GPU pods in {clean(doc['scope'])}: could not be listed (see below)", style="bold yellow"))
    else:
        console.print(Text(f"{doc['pods']} Pending GPU pod(s) in {clean(doc['scope'])}, by cause", style="bold"))
    if not doc["groups"] and not _pending_unlisted(doc):
        console.print(Text("Nothing Pending.", style="green"))
    for i, g in enumerate(doc["groups"], 1):
        console.print()
        head = Text(f"{i}. {g['code']}", style="bold")
        head.append(f"  {len(g['pods'])} pod(s), waiting up to {_age(g['oldestPendingSeconds'])}", style="dim")
        console.print(head)
        console.print(Para(g["summary"], 3), soft_wrap=True)
        shown = g["pods"] if wide else g["pods"][:6]
        console.print(Para(", ".join(f"{p['namespace']}/{p['name']} ({_age(p['pendingSeconds'])}{_queue(p)})"
                                     for p in shown) + (f", … {len(g['pods']) - len(shown)} more" if len(g["pods"]) > len(shown) else ""),
                           3, 3, "dim"), soft_wrap=True)
        for fx in g["fixes"][:1 if not wide else None]:
            console.print(Para("Fix: " + fx["summary"], 3, 8), soft_wrap=True)
            if fx.get("needsJudgement"):
                console.print(Para(f"(needs judgement: {fx['needsJudgement']})", 6, 6, "dim"), soft_wrap=True)
            for line in command_lines(fx, 6):
                console.print(line, soft_wrap=True)
        if g.get("runbook"):
            console.print(Text(f"   Runbook: {g['runbook']}", style="dim"))
    for c in doc.get("checks") or []:
        console.print(Para(f"{c['status']} {c['name']}: {c['detail']}", 2, 4, "yellow"), soft_wrap=True)
    print_unreadable(doc, console)


def pending_markdown(doc: dict[str, Any]) -> str:
    count = "could not be listed" if _pending_unlisted(doc) and not doc["groups"] else doc["pods"]
    lines = [f"## Pending GPU pods in {_md(doc['scope'])}: {count}", ""]
    for i, g in enumerate(doc["groups"], 1):
        lines += [f"### {i}. `{g['code']}` — {len(g['pods'])} pod(s), oldest {_age(g['oldestPendingSeconds'])}", "",
                  _md(g["summary"]), ""]
        lines += [f"- `{_md(p['namespace'])}/{_md(p['name'])}` ({_age(p['pendingSeconds'])}{_md(_queue(p))})" for p in g["pods"]]
        for fx in g["fixes"][:1]:
            lines += ["", f"Fix: {_md(fx['summary'])}", ""] + markdown_fences(fx)
        lines.append("")
    if doc.get("checks"):
        lines += ["Not read or not decided:", ""]
        lines += [f"- {_md(c['status'])} {_md(c['name'])}: {_md(c['detail'])}" for c in doc["checks"]]
        lines.append("")
    unreadable = unreadable_markdown(doc)
    if unreadable:
        lines += unreadable[1:] + [""]
    return "\n".join(lines)
