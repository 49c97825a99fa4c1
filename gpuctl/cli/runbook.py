"""``gpuctl runbook [CODE]``: the on-call runbooks, offline."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from enum import Enum

from .common import Common, DebugOpt, NoColorOpt, set_debug
from .complete import complete_runbook


class RunbookOutput(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


RunbookOutputOpt = Annotated[RunbookOutput, typer.Option("--output", "-o", help="Output format: table (the list, or the runbook rendered), json, yaml (documents holding the list or the runbook's markdown), markdown (the runbook as written; the list as a table).", case_sensitive=False)]


def runbook(
    code: Annotated[Optional[str], typer.Argument(help="Finding code, e.g. untolerated-taint. Omit to list them all.", show_default=False, autocompletion=complete_runbook)] = None,
    output: RunbookOutputOpt = RunbookOutput.table,
    no_color: NoColorOpt = False,
    debug: DebugOpt = False,
) -> int:
    """List the finding codes, or show the runbook for one."""
    set_debug(debug)
    import sys

    from .. import runbooks
    from ..errors import TargetNotFound

    opts = Common(no_color=no_color)
    console = opts.console()
    if code is None:
        rows = runbooks.index()
        if output in (RunbookOutput.json, RunbookOutput.yaml):
            from ..render.data import dump_json, dump_yaml

            (dump_json if output == RunbookOutput.json else dump_yaml)({"schema": "gpuctl/runbooks/v1", "runbooks": rows})
            return 0
        if output == RunbookOutput.markdown:
            sys.stdout.write("| code | severity | meaning |\n|---|---|---|\n"
                             + "".join(f"| `{r['code']}` | {r['severity']} | {r['title']} |\n" for r in rows))
            return 0
        from rich.table import Table

        table = Table(show_edge=False, pad_edge=False)
        for col in ("CODE", "SEVERITY", "MEANING"):
            table.add_column(col)
        for r in rows:
            table.add_row(r["code"], r["severity"], r["title"])
        console.print(table)
        return 0
    text = runbooks.read(code)
    if text is None:
        close = runbooks.closest(code)
        raise TargetNotFound(f"no runbook for {code!r}", f"did you mean {', '.join(close)}?" if close else "run 'gpuctl runbook' to list the codes")
    if output in (RunbookOutput.json, RunbookOutput.yaml):
        from ..render.data import dump_json, dump_yaml

        doc = {"schema": "gpuctl/runbook/v1", "code": code, "markdown": text}
        (dump_json if output == RunbookOutput.json else dump_yaml)(doc)
        return 0
    if output == RunbookOutput.markdown:
        sys.stdout.write(text)
        return 0
    print_runbook(text, console)
    return 0


def print_runbook(text: str, console) -> None:
    """Markdown for people; fenced code blocks are printed line by line, never
    hard-wrapped, so a command copies whole at any width."""
    import re

    from rich.markdown import Markdown
    from rich.text import Text

    parts = re.split(r"^```[^\n]*\n(.*?)^```[ \t]*$", text, flags=re.S | re.M)
    for i, part in enumerate(parts):
        if i % 2:
            for line in part.rstrip("\n").splitlines():
                console.print(Text("    " + line, style="green"), soft_wrap=True)
            console.print()
        elif part.strip():
            console.print(Markdown(part))
