"""``gpuctl node probe``: run on a GPU node (or in a privileged pod), read NVML and
the kernel log, and print the ``gpuctl/probe/v1`` document (docs/probe.md).

NVML is read by ``gpuctl.collect.nvml`` (the one module that imports pynvml, and
only when the command runs), Xid lines by ``gpuctl.collect.kernel_log``; the
document is ``gpuctl.reports.probe``'s, its table ``gpuctl.render.probe``'s.
``build_probe_doc`` wires them so tests can hand it a fake NVML.

Exit codes: 0 healthy; 1 the probe shows uncorrectable ECC errors since the driver
loaded, a pending page retirement or row remap, a row-remap failure, a recovery
action other than NONE, or a critical Xid in the kernel log; 4 NVML cannot start
(no driver, driver not loaded, driver/library mismatch), as one line on stderr.
"""

from __future__ import annotations

import os
from enum import Enum
from typing import Any, Optional, Union

import typer
from typing_extensions import Annotated

from .common import LOCAL_OPTIONS, Common, common_options, emit

app = typer.Typer(help="Commands that run on a GPU node itself (or in a privileged pod there).", no_args_is_help=True,
                  rich_markup_mode=None)


class ProbeOutput(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


NodeNameOpt = Annotated[Optional[str], typer.Option("--node", help="Node name to record in the document (default: NODE_NAME, as the downward API sets it, else the host name).", show_default=False)]
KernelLogOpt = Annotated[Optional[str], typer.Option("--kernel-log", help="Read Xid lines from this file ('-' for standard input) instead of journalctl -k or dmesg.", show_default=False)]
ProbeOutputOpt = Annotated[ProbeOutput, typer.Option("--output", "-o", help="Output format: table, json (the gpuctl/probe/v1 document that snapshots keep as probes/<node>.json), yaml.", case_sensitive=False)]


def __getattr__(name: str) -> Any:
    """``SCHEMA`` and ``problems`` are gpuctl.reports.probe's, read from there only
    when asked for (``gpuctl --help`` does not load them)."""
    if name in ("SCHEMA", "problems"):
        from ..reports import probe as report

        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def node_name(given: Optional[str] = None) -> str:
    if given:
        return given
    env = os.environ.get("NODE_NAME", "").strip()
    if env:
        return env
    import socket

    return socket.gethostname()


def build_probe_doc(node: str, nvml: Any = None, kernel_log: Union[str, list[str], None] = None,
                    captured_at: Optional[str] = None) -> dict[str, Any]:
    """The whole ``gpuctl/probe/v1`` document.

    ``nvml``: a module with pynvml's API (None: the real one). ``kernel_log``: a
    file path (``-``: stdin), the lines themselves, or None to read journalctl/dmesg.
    Raises ``NvmlUnavailable`` (a SourceError, exit 4) when NVML cannot start.
    """
    from datetime import datetime, timezone

    from ..collect.kernel_log import read_kernel_log, xids_from_lines
    from ..collect.nvml import probe_gpus
    from ..reports.probe import probe_document

    if captured_at is None:
        captured_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    part = probe_gpus(nvml)
    if isinstance(kernel_log, (list, tuple)):
        lines, source = list(kernel_log), "given lines"
    else:
        lines, source = read_kernel_log(kernel_log)
    return probe_document(node, captured_at, part, xids_from_lines(lines, part["gpus"]), source)


@app.command("probe")
@common_options(*LOCAL_OPTIONS)
def probe(
    opts: Common,
    node: NodeNameOpt = None,
    kernel_log: KernelLogOpt = None,
    output: ProbeOutputOpt = ProbeOutput.table,
) -> int:
    """Read this node's GPUs through NVML (driver, CUDA, ECC, row remapping, MIG, throttling) and its kernel log's Xids."""
    from ..collect.nvml import NvmlUnavailable
    from ..errors import SourceError
    from ..reports.probe import problems

    name = node_name(node)
    try:
        doc = build_probe_doc(name, kernel_log=kernel_log)
    except NvmlUnavailable as e:
        if e.no_driver:
            raise SourceError(f"no NVIDIA driver on this machine: NVML library not found ({e.error})", e.hint) from None
        raise
    found = problems(doc)

    def table(console, wide: bool) -> None:
        from ..render.probe import render_probe

        render_probe(doc, console, found)

    emit(opts, doc, table)
    return 1 if found else 0
