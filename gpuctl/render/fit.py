"""``gpuctl fit`` for people: per workload, the verdict and how many replicas fit,
where they would go, and, when they do not all fit, the ranked findings of the
replica that stays Pending (as ``diagnose pod`` prints them); Markdown for a
ticket. Cluster text goes through ``clean`` into ``Text`` objects."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .diagnosis import Para, _md, markdown_finding, markdown_unfinished_checks, print_checks, print_findings
from .safe import clean

VERDICT_STYLE = {"fits": "bold white on green", "partial": "bold black on yellow", "blocked": "bold white on red",
                 "inconclusive": "bold black on cyan"}
MAX_NODES = 5


def _free(n: dict[str, Any]) -> str:
    return ", ".join(f"{v} {k}" for k, v in (n.get("free") or {}).items())


def _node_table(nodes: list[dict[str, Any]], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, expand=False)
    table.add_column("NODE", no_wrap=True)
    table.add_column("FITS")
    table.add_column("SCORE", justify="right")
    table.add_column("FREE")
    table.add_column("REASONS")
    for n in nodes:
        table.add_row(Text(clean(n["name"])), Text("yes" if n["fits"] else "no", style="green" if n["fits"] else "red"),
                      Text(str(n["score"]) if n.get("score") is not None else "-"), Text(clean(_free(n))),
                      Text(clean(", ".join(n["reasons"]))))
    return table


def render_fit(doc: dict[str, Any], console: Console, wide: bool = False) -> None:
    for a in doc.get("assumptions") or []:
        console.print(Para(f"Assuming {a['text']}", 0, 2, "dim"), soft_wrap=True)
    for i, w in enumerate(doc["workloads"]):
        if i:
            console.print()
        head = Text()
        head.append(f" {w['verdict'].upper()} ", style=VERDICT_STYLE.get(w["verdict"], "bold"))
        head.append(" ")
        head.append(clean(f"{w['workload']} -n {w['namespace']}"), style="bold")
        console.print(head, soft_wrap=True)
        console.print(Para(w["summary"], 2, 4), soft_wrap=True)
        q = w.get("queue")
        if q:
            state = {True: "would admit it", False: "would not admit it", None: "cannot tell"}[q["admitted"]]
            console.print(Para(f"{q['system']} queue {q['name']}: {state}", 2, 4, "dim"), soft_wrap=True)
            for line in (q["evidence"] if wide else q["evidence"][:2]):
                console.print(Para("• " + line, 4, 6, "dim"), soft_wrap=True)
        for t in w["templates"]:
            _template(t, w, console, wide)
    for note in doc.get("notes") or []:
        console.print(Para(note, 0, 2, "italic"), soft_wrap=True)


def _template(t: dict[str, Any], w: dict[str, Any], console: Console, wide: bool) -> None:
    label = (t["role"] + ": " if t.get("role") else "")
    reqs = ", ".join(f"{v} {k}" for k, v in (t.get("requests") or {}).items() if "/" in k) or "no extended resources"
    console.print(Para(f"{label}{t['fit']} of {t['replicas']} fit (each pod requests {reqs})"
                       + (f"; quota admits {t['quotaAdmits']}" if t.get("quotaAdmits") is not None and t["quotaAdmits"] < t["replicas"] else ""),
                       2, 4, "bold"), soft_wrap=True)
    if t["placements"]:
        shown = t["placements"] if wide else t["placements"][:8]
        console.print(Para("placed: " + ", ".join(f"{p['pod']} -> {p['node']} ({p['score']})" for p in shown)
                           + (f", … {len(t['placements']) - len(shown)} more" if len(t["placements"]) > len(shown) else ""),
                           4, 6), soft_wrap=True)
    fitting = [n for n in t["nodes"] if n["fits"]]
    if fitting and not wide:
        console.print(Para("nodes that fit, most allocated after placement first: " + ", ".join(
            f"{n['name']} ({n['score']})" for n in fitting[:MAX_NODES])
            + (f", … {len(fitting) - MAX_NODES} more (-o wide)" if len(fitting) > MAX_NODES else ""), 4, 6), soft_wrap=True)
    problems = [f for f in t["findings"] if f["severity"] != "info" or wide]
    if problems and not w["fits"]:
        console.print()
        print_findings(console, problems, wide)
    if wide and t["nodes"]:
        console.print(_node_table(t["nodes"], "Per-node fit of the first replica"))
    print_checks(console, t["checks"], wide)
    for note in t.get("notes") or []:
        console.print(Para(note, 2, 4, "italic"), soft_wrap=True)


def fit_markdown(doc: dict[str, Any]) -> str:
    out = ["## gpuctl fit: " + ("**fits**" if doc["fits"] else "**does not fit**"), "", _md(doc["summary"]), ""]
    if doc.get("assumptions"):
        out += ["Assuming: " + "; ".join(_md(a["text"]) for a in doc["assumptions"]), ""]
    for w in doc["workloads"]:
        out += [f"### `{_md(w['workload'])}` in `{_md(w['namespace'])}` — **{w['verdict']}**", "", _md(w["summary"]), ""]
        if w.get("queue"):
            q = w["queue"]
            out += [f"- {q['system']} queue `{_md(q['name'])}`: admitted {q['admitted']}"]
            out += [f"  - {_md(e)}" for e in q["evidence"]]
            out.append("")
        for t in w["templates"]:
            out.append(f"#### {(_md(t['role']) + ': ') if t.get('role') else ''}{t['fit']} of {t['replicas']} fit")
            out.append("")
            if t["placements"]:
                out += [f"- `{_md(p['pod'])}` → `{_md(p['node'])}` (score {p['score']})" for p in t["placements"]]
                out.append("")
            fitting = [n for n in t["nodes"] if n["fits"]]
            if fitting:
                out += ["| node | score | free |", "| --- | --- | --- |"]
                out += [f"| `{_md(n['name'])}` | {n['score']} | {_md(_free(n))} |" for n in fitting[:20]]
                out.append("")
            for i, f in enumerate(t["findings"], 1):
                if w["fits"] and f["severity"] == "info":
                    continue
                out += [f"##### {i}. `{f['code']}` ({f['severity']})", ""] + markdown_finding(f)
            out += markdown_unfinished_checks(t["checks"])
    for note in doc.get("notes") or []:
        out += [f"_{_md(note)}_", ""]
    return "\n".join(out)
