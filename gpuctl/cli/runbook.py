"""``gpuctl runbook [CODE]``: the on-call runbooks, offline."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from enum import Enum

from .common import LOCAL_OPTIONS, Common, common_options, emit
from .complete import complete_runbook


class RunbookOutput(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


RunbookOutputOpt = Annotated[RunbookOutput, typer.Option("--output", "-o", help="Output format: table (the list, or the runbook rendered), json, yaml (documents holding the list or the runbook's markdown), markdown (the runbook as written; the list as a table).", case_sensitive=False)]


@common_options(*LOCAL_OPTIONS)
def runbook(
    opts: Common,
    code: Annotated[Optional[str], typer.Argument(help="Finding code, e.g. untolerated-taint. Omit to list them all.", show_default=False, autocompletion=complete_runbook)] = None,
    output: RunbookOutputOpt = RunbookOutput.table,
) -> int:
    """List the finding codes, or show the runbook for one (with --debug, the check that decides it)."""
    from .. import runbooks
    from ..render.runbook import index_markdown, render_index, render_rooms, render_runbook

    if code is None:
        rows = runbooks.index()
        emit(opts, {"schema": "gpuctl/runbooks/v1", "runbooks": rows}, lambda console, wide: render_index(rows, console),
             markdown=lambda: index_markdown(rows))
        return 0
    text = runbooks.read(code)
    if text is None:
        from ..errors import TargetNotFound

        close = runbooks.closest(code)
        raise TargetNotFound(f"no runbook for {code!r}", f"did you mean {', '.join(close)}?" if close else "run 'gpuctl runbook' to list the codes")
    from ..checks.registry import rooms as rooms_of

    rooms = rooms_of(code)

    def table(console, wide):
        render_runbook(text, console)
        if opts.debug:
            render_rooms(rooms, console)

    emit(opts, lambda: {"schema": "gpuctl/runbook/v1", "code": code, "markdown": text, "checks": rooms}, table,
         markdown=lambda: text)
    return 0
