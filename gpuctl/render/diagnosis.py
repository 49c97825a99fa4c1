"""The diagnosis for people: a Rich view for the terminal (verdict and top cause
first, then its evidence and fixes, then the rest ranked; readable at 80 columns)
and Markdown for pasting into a ticket.

Everything from the cluster goes through ``clean`` and into ``Text`` objects, so
markup in an event message prints literally and escape sequences never reach the
terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
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


def _t(text: object, style: str = "") -> Text:
    return Text(clean(text), style=style)


class Para:
    """Prose wrapped at print time to the console's width with a hanging indent:
    continuation lines keep the indent, words (labels, paths, taints) are never
    split, and no line carries trailing padding."""

    def __init__(self, text: object, indent: int = 0, hang: int | None = None, style: str = "") -> None:
        self.text, self.indent, self.hang, self.style = clean(text), indent, indent if hang is None else hang, style

    def __rich_console__(self, console: Console, options):
        yield wrap_text(self.text, options.max_width, self.indent, self.hang, self.style)


def wrap_text(text: str, width: int, indent: int, hang: int, style: str = "") -> Text:
    import textwrap

    lines = textwrap.wrap(text, width=max(width, indent + 20), initial_indent=" " * indent,
                          subsequent_indent=" " * hang, break_long_words=False, break_on_hyphens=False) or [""]
    return Text("\n".join(lines), style=style, no_wrap=True, overflow="ignore")


def _target_line(d: Diagnosis) -> "_Header":
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
    return _Header(line, clean("; ".join(bits)) if bits else "")


class StyledPara:
    """A styled Text wrapped with a hanging indent, words never split, no padding."""

    def __init__(self, text: Text, hang: int) -> None:
        self.text, self.hang = text, hang

    def __rich_console__(self, console: Console, options):
        yield wrap_styled(self.text, max(options.max_width, self.hang + 20), self.hang)


def wrap_styled(text: Text, width: int, hang: int) -> Text:
    """Greedy word wrap of a styled Text: breaks only at spaces, a word longer than
    the line stays whole on a line of its own, continuation lines start with
    ``hang`` spaces, and no line ends in spaces. Styles follow their characters."""
    import re

    from rich.cells import cell_len

    plain = text.plain
    breaks: list[int] = []
    col, limit = len(plain) - len(plain.lstrip(" ")), width
    for m in re.finditer(r"\S+\s*", plain):
        word = m.group().rstrip()
        if col and col + cell_len(word) > limit:
            breaks.append(m.start())
            col, limit = 0, width - hang
        col += cell_len(m.group())
    out = Text()
    for i, line in enumerate(text.divide(breaks)):
        line.rstrip()
        if i:
            out.append("\n" + " " * hang)
        out.append_text(line)
    out.no_wrap, out.overflow = True, "ignore"
    return out


class _Header:
    """The verdict line; its details follow on the same line when they fit, else on
    indented lines below it."""

    def __init__(self, head: Text, details: str) -> None:
        self.head, self.details = head, details

    def __rich_console__(self, console: Console, options):
        if not self.details:
            yield self.head
            return
        one = self.head.copy()
        one.append(f"  ({self.details})", style="dim")
        if one.cell_len <= options.max_width:
            yield one
        else:
            yield self.head
            yield wrap_text(self.details, options.max_width, 2, 4, "dim")


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
    parts.append(Para(f["summary"], 3))
    evidence = f["evidence"] if (lead or wide) else f["evidence"][:2]
    if evidence:
        parts.append(Text("   Evidence:", style="bold"))
        shown = evidence[:MAX_EVIDENCE] if not wide else evidence
        for line in shown:
            parts.append(Para("• " + line, 5, 7))
        if len(evidence) > len(shown):
            parts.append(Para(f"… {len(evidence) - len(shown)} more (-o wide or -o json)", 5, 7, "dim"))
    fixes = f["fixes"] if (lead or wide) else f["fixes"][:1]
    if fixes:
        parts.append(Text("   Fix:", style="bold"))
        for i, fix in enumerate(fixes, 1):
            parts.append(Para(f"{i}. {fix['summary']}", 5, 8))
            if fix.get("needsJudgement"):
                parts.append(Para(f"(needs judgement: {fix['needsJudgement']})", 8, 8, "dim"))
            parts.extend(command_lines(fix, 8))
    parts.append(Text(f"   Runbook: {f['runbook']}", style="dim"))
    return parts


def command_lines(fix: dict[str, Any], indent: int) -> list[Text]:
    """A fix's commands, one per line and never wrapped (they copy whole, with no
    prompt to delete), then its YAML snippets under a label of their own."""
    out = [Text(" " * indent + line, style="green") for cmd in fix["commands"] for line in clean(cmd).splitlines()]
    for snippet in fix.get("snippets") or []:
        out.append(Text(" " * indent + "YAML for the manifest:", style="dim"))
        out += [Text(" " * (indent + 2) + line, style="green") for line in clean(snippet).splitlines()]
    return out


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
    console.print(_target_line(d), soft_wrap=True)
    pods = d.target.get("pods")
    if d.target.get("operands"):
        console.print(Para("GPU stack: " + "; ".join(f"{k} {v}" for k, v in d.target["operands"].items()), 2, 4, "dim"), soft_wrap=True)
    pool = d.target.get("pool")
    if pool and len(pool.get("drivers") or {}) > 1:
        console.print(Para(f"pool {pool['key']} drivers: " + ", ".join(f"{v} x{n}" for v, n in sorted(pool['drivers'].items())), 2, 4, "dim"), soft_wrap=True)
    if pods and d.target.get("kind") == "Node":
        console.print(Para("GPU pods: " + ", ".join(
            f"{p['namespace']}/{p['name']} ({p['phase']}, {sum(p['gpus'].values())} GPU)" for p in pods[:8])
            + (f", … {len(pods) - 8} more" if len(pods) > 8 else ""), 2, 4, "dim"), soft_wrap=True)
    elif pods:
        for p in pods:
            console.print(Para(f"pod {p['name']}: {p['phase']}, {p['verdict']}" + (f" ({p['top']})" if p.get("top") else ""), 2, 4, "dim"), soft_wrap=True)
    console.print()
    findings = doc["findings"]
    if not findings:
        msg = {"healthy": "No problem found.", "inconclusive": "No cause could be confirmed: some data could not be read."}
        if d.observed:
            msg["inconclusive"] = "No cause recognised: gpuctl read what it needs, and no check knows this state."
        console.print(Text(msg.get(d.verdict, "No findings."), style="bold"))
    print_findings(console, findings, wide)
    if d.observed:
        console.print(Text("What gpuctl saw, most telling first:", style="bold"))
        for line in d.observed:
            console.print(Para("• " + line, 2, 4), soft_wrap=True)
        console.print()
    if wide and doc["nodes"]:
        console.print(_fit_table(doc["nodes"]))
        console.print()
    counts: dict[str, int] = {}
    for c in doc["checks"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    if counts:
        summary = Text("Checks: ", style="bold")
        summary.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
        console.print(summary)
    print_checks(console, doc["checks"], wide)
    for note in d.notes:
        console.print(Para(note, 0, 2, "italic"), soft_wrap=True)


def _md(text: object) -> str:
    return clean(text).replace("|", "\\|")


def markdown_finding(f: dict) -> list[str]:
    """A finding of a ``-o json`` document as Markdown lines, below its heading:
    summary, evidence, numbered fixes with their commands, runbook (diagnosis and fit)."""
    out = [_md(f["summary"]), ""]
    if f["evidence"]:
        out += ["Evidence:"] + [f"- {_md(e)}" for e in f["evidence"]] + [""]
    if f["fixes"]:
        out.append("Fix:")
        for j, fix in enumerate(f["fixes"], 1):
            out.append(f"{j}. {_md(fix['summary'])}"
                       + (f" _(needs judgement: {_md(fix['needsJudgement'])})_" if fix.get("needsJudgement") else ""))
            out += markdown_fences(fix, "   ")
        out.append("")
    out += [f"Runbook: `{f['runbook']}`", ""]
    return out


def markdown_unfinished_checks(checks: list[dict]) -> list[str]:
    """The skipped or failed checks of a document, as Markdown lines (none when all ran)."""
    bad = [c for c in checks if c["status"] in ("skipped", "error")]
    if not bad:
        return []
    return ["Checks not completed:"] + [f"- {c['status']} `{c['name']}`: {_md(c['detail'])}" for c in bad] + [""]


def markdown_fences(fix: dict[str, Any], indent: str = "") -> list[str]:
    """Commands in a shell fence, YAML snippets in a fence of their own, so a pasted
    shell block never runs ``tolerations:``."""
    out: list[str] = []
    if fix["commands"]:
        out.append(indent + "```sh")
        out += [indent + line for cmd in fix["commands"] for line in clean(cmd).splitlines()]
        out.append(indent + "```")
    for snippet in fix.get("snippets") or []:
        out.append(indent + "```yaml")
        out += [indent + line for line in clean(snippet).splitlines()]
        out.append(indent + "```")
    return out


def render_markdown(d: Diagnosis) -> str:
    doc = d.to_dict()
    t = doc["target"]
    out = [f"## gpuctl diagnosis: {t.get('kind', 'Pod').lower()} `{_md(t.get('namespace'))}/{_md(t.get('name'))}` — **{d.verdict}**", ""]
    bits = [f"phase {_md(t['phase'])}" if t.get("phase") else "", f"node `{_md(t['node'])}`" if t.get("node") else "",
            ("requests " + ", ".join(f"{_md(v)} `{_md(k)}`" for k, v in (t.get("requests") or {}).items())) if t.get("requests") else ""]
    if any(bits):
        out += ["- " + "; ".join(b for b in bits if b), ""]
    for i, f in enumerate(doc["findings"], 1):
        out += [f"### {i}. `{f['code']}` ({f['severity']})" + (" — root cause" if i == 1 else ""), ""]
        out += markdown_finding(f)
    if d.observed:
        out.append("What gpuctl saw, most telling first:")
        out += [f"- {_md(line)}" for line in d.observed]
        out.append("")
    out += markdown_unfinished_checks(doc["checks"])
    return "\n".join(out)



def print_findings(console: Console, findings: list[dict], wide: bool) -> None:
    """Ranked findings of a document: the first as the root cause, then the others
    (diagnosis and fit)."""
    for i, f in enumerate(findings, 1):
        if i == 2:
            console.print(Text("Other findings, ranked:", style="bold underline"))
        for part in _finding_block(f, i, i == 1, wide):
            console.print(part, soft_wrap=not isinstance(part, Table))
        console.print()


def print_checks(console: Console, checks: list[dict[str, Any]], wide: bool) -> None:
    """The checks that were skipped or failed with an error (every check when wide),
    one line each, its detail dimmed: shared by the diagnosis and fit views."""
    for c in checks:
        if c["status"] in ("skipped", "error") or wide:
            line = Text("  ")
            line.append(c["status"], style=STATUS_STYLE.get(c["status"], ""))
            line.append(" " + clean(c["name"]))
            if c["detail"]:
                line.append(": " + clean(c["detail"]), style="dim")
            console.print(StyledPara(line, 4), soft_wrap=True)
