"""The diagnosis for people: a Rich view for the terminal (verdict and top cause
first, then its evidence and fixes, then the rest ranked; readable at 80 columns)
and Markdown for pasting into a ticket.

Everything from the cluster goes through ``clean`` and into ``Text`` objects, so
markup in an event message prints literally and escape sequences never reach the
terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..findings import Diagnosis
from .safe import clean

VERDICT_STYLE = {
    "blocked": "bold white on red", "failing": "bold white on red", "at-risk": "bold black on yellow",
    "healthy": "bold white on green", "inconclusive": "bold black on cyan",
}
SEVERITY_STYLE = {"blocker": "bold red", "critical": "bold magenta", "warning": "yellow", "info": "cyan"}
STATUS_STYLE = {"passed": "green", "failed": "red", "skipped": "yellow", "error": "bold red"}
MAX_EVIDENCE = 8


def _pad(renderable: RenderableType, pad: tuple, expand: bool = False) -> Padding:
    return Padding(renderable, pad, expand=expand)


def _t(text: object, style: str = "") -> Text:
    return Text(clean(text), style=style)


def _target_line(d: Diagnosis) -> Text:
    t = d.target
    line = Text()
    line.append(f" {d.verdict.upper()} ", style=VERDICT_STYLE.get(d.verdict, "bold"))
    ref = f"{t.get('kind', 'Pod').lower()} " + (f"{t['namespace']}/" if t.get("namespace") else "") + str(t.get("name"))
    line.append(" ")
    line.append(clean(ref), style="bold")
    bits = []
    if t.get("phase"):
        bits.append(str(t["phase"]) + (f" {t['age']}" if t.get("age") else "")
                    + ("" if t.get("schedulable", True) else ", cordoned"))
    if t.get("node") and t.get("kind") != "Node":
        bits.append(f"on {t['node']}")
    for g in t.get("gpus") or []:
        exp = f"{g['expected']} expected, " if g.get("expected") is not None else ""
        n = {k: "?" if g.get(k) is None else g[k] for k in ("capacity", "allocatable", "allocated")}
        bits.append(f"{g['resource']}: {exp}{n['capacity']} advertised, {n['allocatable']} allocatable, {n['allocated']} allocated")
    if t.get("driver"):
        d = t["driver"]
        bits.append("driver " + " / CUDA ".join(x for x in (d.get("version"), d.get("cuda")) if x))
    req = t.get("requests") or {}
    if req:
        bits.append("wants " + ", ".join(f"{v} {k}" for k, v in req.items()))
    if bits:
        line.append("  (" + clean("; ".join(bits)) + ")", style="dim")
    return line


def _finding_block(f: dict[str, Any], index: int, lead: bool, wide: bool) -> list[RenderableType]:
    """The finding as printable parts; command lines are Text printed with soft wrap
    (never cropped or broken, so they copy-paste whole)."""
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{index}. " if not lead else "Root cause: ", style="bold")
    head.append(clean(f["code"]), style="bold")
    head.append(f" ({f['severity']})", style=SEVERITY_STYLE.get(f["severity"], ""))
    if f.get("symptomOf"):
        head.append(f"  symptom of {f['symptomOf']}", style="dim")
    parts.append(head)
    parts.append(_pad(_t(f["summary"]), (0, 0, 0, 3)))
    evidence = f["evidence"] if (lead or wide) else f["evidence"][:2]
    if evidence:
        parts.append(_pad(Text("Evidence:", style="bold"), (0, 0, 0, 3)))
        shown = evidence[:MAX_EVIDENCE] if not wide else evidence
        for line in shown:
            parts.append(_pad(_t("• " + line), (0, 0, 0, 5)))
        if len(evidence) > len(shown):
            parts.append(_pad(_t(f"… {len(evidence) - len(shown)} more (-o wide or -o json)", "dim"), (0, 0, 0, 5)))
    fixes = f["fixes"] if (lead or wide) else f["fixes"][:1]
    if fixes:
        parts.append(_pad(Text("Fix:", style="bold"), (0, 0, 0, 3)))
        for i, fix in enumerate(fixes, 1):
            parts.append(_pad(_t(f"{i}. {fix['summary']}"), (0, 0, 0, 5)))
            for cmd in fix["commands"]:
                for j, line in enumerate(clean(cmd).splitlines()):
                    prefix = "$ " if j == 0 and not cmd.startswith("tolerations:") else "  "
                    parts.append(Text(" " * 8 + prefix + line, style="green"))
    parts.append(_pad(Text(f"Runbook: {f['runbook']}", style="dim"), (0, 0, 0, 3)))
    return parts


def _fit_table(nodes: list[dict[str, Any]]) -> Table:
    table = Table(title="Per-node fit", title_justify="left", show_edge=False, pad_edge=False, expand=False)
    table.add_column("NODE", no_wrap=True)
    table.add_column("FITS")
    table.add_column("FREE")
    table.add_column("REASONS")
    for n in nodes:
        free = ", ".join(f"{v} {k}" for k, v in (n.get("free") or {}).items())
        table.add_row(_t(n["name"]), Text("yes" if n["fits"] else "no", style="green" if n["fits"] else "red"),
                      _t(free), _t(", ".join(n["reasons"])))
    return table


def render_diagnosis(d: Diagnosis, console: Console, wide: bool = False) -> None:
    doc = d.to_dict()
    console.print(_target_line(d))
    pods = d.target.get("pods")
    if d.target.get("operands"):
        console.print(_t("  GPU stack: " + "; ".join(f"{k} {v}" for k, v in d.target["operands"].items()), "dim"))
    pool = d.target.get("pool")
    if pool and len(pool.get("drivers") or {}) > 1:
        console.print(_t(f"  pool {pool['key']} drivers: " + ", ".join(f"{v} x{n}" for v, n in sorted(pool['drivers'].items())), "dim"))
    if pods and d.target.get("kind") == "Node":
        console.print(_t("  GPU pods: " + ", ".join(
            f"{p['namespace']}/{p['name']} ({p['phase']}, {sum(p['gpus'].values())} GPU)" for p in pods[:8])
            + (f", … {len(pods) - 8} more" if len(pods) > 8 else ""), "dim"))
    elif pods:
        for p in pods:
            console.print(_t(f"  pod {p['name']}: {p['phase']}, {p['verdict']}" + (f" ({p['top']})" if p.get("top") else ""), "dim"))
    console.print()
    findings = doc["findings"]
    if not findings:
        msg = {"healthy": "No problem found.", "inconclusive": "No cause could be confirmed: some data could not be read."}
        console.print(Text(msg.get(d.verdict, "No findings."), style="bold"))
    for i, f in enumerate(findings, 1):
        if i == 2:
            console.print(Text("Other findings, ranked:", style="bold underline"))
        for part in _finding_block(f, i, i == 1, wide):
            console.print(part, soft_wrap=isinstance(part, Text))
        console.print()
    if wide and doc["nodes"]:
        console.print(_fit_table(doc["nodes"]))
        console.print()
    counts: dict[str, int] = {}
    for c in doc["checks"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    summary = Text("Checks: ", style="bold")
    summary.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    console.print(summary)
    for c in doc["checks"]:
        if c["status"] in ("skipped", "error") or wide:
            line = Text("  ")
            line.append(c["status"], style=STATUS_STYLE.get(c["status"], ""))
            line.append(" " + clean(c["name"]))
            if c["detail"]:
                line.append(": " + clean(c["detail"]), style="dim")
            console.print(line)
    for note in d.notes:
        console.print(_t(note, "italic"))


def _md(text: object) -> str:
    return clean(text).replace("|", "\\|")


def render_markdown(d: Diagnosis) -> str:
    doc = d.to_dict()
    t = doc["target"]
    out = [f"## gpuctl diagnosis: {t.get('kind', 'Pod').lower()} `{_md(t.get('namespace'))}/{_md(t.get('name'))}` — **{d.verdict}**", ""]
    bits = [f"phase {t['phase']}" if t.get("phase") else "", f"node `{t['node']}`" if t.get("node") else "",
            ("requests " + ", ".join(f"{v} `{k}`" for k, v in (t.get("requests") or {}).items())) if t.get("requests") else ""]
    if any(bits):
        out += ["- " + "; ".join(b for b in bits if b), ""]
    for i, f in enumerate(doc["findings"], 1):
        out.append(f"### {i}. `{f['code']}` ({f['severity']})" + (" — root cause" if i == 1 else ""))
        out.append("")
        out.append(_md(f["summary"]))
        out.append("")
        if f["evidence"]:
            out.append("Evidence:")
            out += [f"- {_md(e)}" for e in f["evidence"]]
            out.append("")
        if f["fixes"]:
            out.append("Fix:")
            for j, fix in enumerate(f["fixes"], 1):
                out.append(f"{j}. {_md(fix['summary'])}")
                if fix["commands"]:
                    out.append("   ```")
                    for cmd in fix["commands"]:
                        out += ["   " + line for line in clean(cmd).splitlines()]
                    out.append("   ```")
            out.append("")
        out.append(f"Runbook: `{f['runbook']}`")
        out.append("")
    bad = [c for c in doc["checks"] if c["status"] in ("skipped", "error")]
    if bad:
        out.append("Checks not completed:")
        out += [f"- {c['status']} `{c['name']}`: {_md(c['detail'])}" for c in bad]
        out.append("")
    return "\n".join(out)

