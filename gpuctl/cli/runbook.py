"""``gpuctl runbook [CODE]``: the on-call runbooks, offline."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .common import Common, DebugOpt, NoColorOpt, Output, OutputOpt, set_debug
from .complete import complete_runbook


def runbook(
    code: Annotated[Optional[str], typer.Argument(help="Finding code, e.g. untolerated-taint. Omit to list them all.", show_default=False, autocompletion=complete_runbook)] = None,
    output: OutputOpt = Output.table,
    no_color: NoColorOpt = False,
    debug: DebugOpt = False,
) -> int:
    """List the finding codes, or show the runbook for one."""
    set_debug(debug)
    import sys

    from .. import runbooks
    from ..errors import TargetNotFound

    opts = Common(output=output, no_color=no_color)
    console = opts.console()
    if code is None:
        rows = runbooks.index()
        if output == Output.json:
            from ..render.data import dump_json

            dump_json({"schema": "gpuctl/runbooks/v1", "runbooks": rows})
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
    if output in (Output.json, Output.yaml):
        from ..render.data import dump_json, dump_yaml

        doc = {"schema": "gpuctl/runbook/v1", "code": code, "markdown": text}
        (dump_json if output == Output.json else dump_yaml)(doc)
        return 0
    if output == Output.markdown:
        sys.stdout.write(text)
        return 0
    from rich.markdown import Markdown

    console.print(Markdown(text))
    return 0
