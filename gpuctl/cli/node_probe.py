"""``gpuctl node probe``: run on a GPU node (or in a privileged pod), read NVML and
the kernel log, and print the ``gpuctl/probe/v1`` document (docs/probe.md).

NVML is read by ``gpuctl.collect.nvml`` (the one module that imports pynvml, and
only when the command runs), Xid lines by ``gpuctl.collect.kernel_log``.
``build_probe_doc`` assembles the document so tests can hand it a fake NVML.

Exit codes: 0 healthy; 1 the probe shows uncorrectable ECC errors since the driver
loaded, a pending page retirement or row remap, a row-remap failure, a recovery
action other than NONE, or a critical Xid in the kernel log; 4 NVML cannot start
(no driver, driver not loaded, driver/library mismatch), as one line on stderr.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Any, Optional, Union

import typer
from typing_extensions import Annotated

from .common import DebugOpt, NoColorOpt, set_debug

SCHEMA = "gpuctl/probe/v1"

app = typer.Typer(help="Commands that run on a GPU node itself (or in a privileged pod there).", no_args_is_help=True,
                  rich_markup_mode=None)


class ProbeOutput(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


NodeNameOpt = Annotated[Optional[str], typer.Option("--node", help="Node name to record in the document (default: NODE_NAME, as the downward API sets it, else the host name).", show_default=False)]
KernelLogOpt = Annotated[Optional[str], typer.Option("--kernel-log", help="Read Xid lines from this file ('-' for standard input) instead of journalctl -k or dmesg.", show_default=False)]
ProbeOutputOpt = Annotated[ProbeOutput, typer.Option("--output", "-o", help="Output format: table, json (the gpuctl/probe/v1 document that snapshots keep as probes/<node>.json), yaml.", case_sensitive=False)]


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

    if captured_at is None:
        captured_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    part = probe_gpus(nvml)
    if isinstance(kernel_log, (list, tuple)):
        lines, source = list(kernel_log), "given lines"
    else:
        lines, source = read_kernel_log(kernel_log)
    return {
        "schema": SCHEMA,
        "node": node,
        "capturedAt": captured_at,
        "driverVersion": part["driverVersion"],
        "cudaDriverVersion": part["cudaDriverVersion"],
        "nvmlVersion": part["nvmlVersion"],
        "gpus": part["gpus"],
        "xids": xids_from_lines(lines, part["gpus"]),
        "kernelLogSource": source,
        "unsupported": part["unsupported"],
        "errors": part["errors"],
    }


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _sub(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def problems(doc: dict[str, Any]) -> list[str]:
    """Why the probe exits 1: one sentence per problem; empty when healthy."""
    from ..knowledge.gpu_health import xid_info

    out: list[str] = []
    for g in doc.get("gpus") or []:
        if not isinstance(g, dict):
            continue
        ref = f"GPU {g.get('index')}"
        unc = _sub(g, "ecc", "volatile", "uncorrected")
        if _num(unc) > 0:
            out.append(f"{ref}: {unc} uncorrectable ECC error(s) since the driver loaded")
        if _sub(g, "remappedRows", "failure"):
            out.append(f"{ref}: row remapping failed (no spare rows left): drain, reset, plan replacement")
        if _sub(g, "remappedRows", "pending"):
            out.append(f"{ref}: row remapping pending: reset the GPU to apply it")
        if _sub(g, "retiredPages", "pending"):
            out.append(f"{ref}: page retirement pending: reset the GPU to apply it")
        action = g.get("recoveryAction")
        if action and action != "NONE":
            out.append(f"{ref}: NVML asks for recovery action {action}")
    seen: dict[tuple[int, str], int] = {}
    actions: dict[tuple[int, str], str] = {}
    for x in doc.get("xids") or []:
        info = xid_info(x.get("xid")) if isinstance(x, dict) else None
        if info is not None and info.severity == "critical":
            where = f"GPU {x['gpuIndex']}" if x.get("gpuIndex") is not None else f"PCI {x.get('pciBusId')}"
            key = (info.xid, where)
            seen[key] = seen.get(key, 0) + 1
            actions[key] = f"Xid {info.xid} ({info.mnemonic}) on {where}"
            actions[key] += "{times}: " + info.action
    for key, n in seen.items():
        out.append(actions[key].replace("{times}", f" ({n} lines)" if n > 1 else "", 1))
    return out


@app.command("probe")
def probe(
    node: NodeNameOpt = None,
    kernel_log: KernelLogOpt = None,
    output: ProbeOutputOpt = ProbeOutput.table,
    no_color: NoColorOpt = False,
    debug: DebugOpt = False,
) -> int:
    """Read this node's GPUs through NVML (driver, CUDA, ECC, row remapping, MIG, throttling) and its kernel log's Xids."""
    set_debug(debug)
    from ..collect.nvml import NvmlUnavailable
    from ..errors import SourceError

    name = node_name(node)
    try:
        doc = build_probe_doc(name, kernel_log=kernel_log)
    except NvmlUnavailable as e:
        if e.no_driver:
            raise SourceError(f"no NVIDIA driver on this machine: NVML library not found ({e.error})", e.hint) from None
        raise
    if output == ProbeOutput.json:
        from ..render.data import dump_json

        dump_json(doc, sys.stdout)
    elif output == ProbeOutput.yaml:
        from ..render.data import dump_yaml

        dump_yaml(doc, sys.stdout)
    else:
        from .common import Common

        render_probe(doc, Common(no_color=no_color).console())
    return 1 if problems(doc) else 0


# ------------------------------------------------------------------ human output


def _mem(mib: Any) -> str:
    if not isinstance(mib, int):
        return "?"
    gib = mib / 1024
    return f"{gib:.0f} GiB" if abs(gib - round(gib)) < 0.05 else f"{gib:.1f} GiB"


def _mode(d: Any) -> str:
    if not isinstance(d, dict):
        return "n/a"
    cur, pend = d.get("current"), d.get("pending")
    if pend is not None and pend != cur:
        return f"{cur} -> {pend} (reset)"
    return str(cur)


def _ecc(g: dict[str, Any]) -> tuple[str, bool]:
    """("volatile/aggregate uncorrected", any of them above zero)."""
    ecc = g.get("ecc")
    if not isinstance(ecc, dict):
        return "n/a", False
    if _sub(ecc, "mode", "current") == "disabled":
        return "off", False
    vol, agg = _sub(ecc, "volatile", "uncorrected"), _sub(ecc, "aggregate", "uncorrected")
    return f"{'-' if vol is None else vol}/{'-' if agg is None else agg}", _num(vol) > 0 or _num(agg) > 0


def _rows(g: dict[str, Any]) -> str:
    r = g.get("remappedRows")
    if not isinstance(r, dict):
        return "n/a"
    text = f"{r.get('corrected')}c {r.get('uncorrected')}u"
    if r.get("pending"):
        text += " pending"
    if r.get("failure"):
        text += " FAILED"
    return text


def _retired(g: dict[str, Any]) -> str:
    p = g.get("retiredPages")
    if not isinstance(p, dict) or p.get("pending") is None:
        return "n/a"
    return "yes" if p["pending"] else "no"


def render_probe(doc: dict[str, Any], console) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..knowledge.gpu_health import xid_info
    from ..render.safe import clean

    head = Text(f"Node {clean(doc.get('node'))}", style="bold")
    head.append(f"  driver {clean(doc.get('driverVersion') or '?')}, CUDA {clean(doc.get('cudaDriverVersion') or '?')}, "
                f"NVML {clean(doc.get('nvmlVersion') or '?')}, captured {clean(doc.get('capturedAt'))}", style="")
    console.print(head)
    gpus = [g for g in doc.get("gpus") or [] if isinstance(g, dict)]
    if not gpus:
        console.print(Text("NVML reports no GPU.", style="bold yellow"))
    else:
        names = {(g.get("name"), g.get("memoryTotalMiB")) for g in gpus}
        same = len(names) == 1   # 8 identical GPUs: name and memory once, above the table
        if same:
            console.print(Text(f"{len(gpus)}x {clean(gpus[0].get('name') or '?')}, "
                               f"{_mem(gpus[0].get('memoryTotalMiB'))} each"))
        table = Table(show_edge=False, pad_edge=False, box=None)
        columns = [("GPU", True)] + ([] if same else [("NAME", False), ("MEMORY", True)]) + [
            ("MIG", True), ("ECC UNC", True), ("ROW REMAP", True), ("RETIRE", True), ("TEMP", True), ("THROTTLE", False)]
        for col, fixed in columns:
            table.add_column(col, no_wrap=fixed, overflow="fold")
        for g in gpus:
            (ecc, ecc_bad), rows, retired, mig = _ecc(g), _rows(g), _retired(g), _mode(g.get("migMode"))
            temp = g.get("temperatureC")
            throttle = g.get("throttleReasons")
            cells = [Text(str(g.get("index")))]
            if not same:
                cells += [Text(clean(g.get("name") or "?")), Text(_mem(g.get("memoryTotalMiB")))]
            cells += [
                Text(clean(mig), style="yellow" if "(reset)" in mig else ""),
                Text(ecc, style="bold red" if ecc_bad else ""),
                Text(rows, style="bold red" if ("pending" in rows or "FAILED" in rows) else ""),
                Text(retired, style="bold red" if retired == "yes" else ""),
                Text("n/a" if temp is None else f"{temp} C"),
                Text(clean(", ".join(str(t) for t in throttle) if isinstance(throttle, list) else "n/a")),
            ]
            table.add_row(*cells)
        console.print(table)
        console.print(Text("ECC UNC: uncorrectable ECC errors, volatile/aggregate; ROW REMAP: corrected (c) and "
                           "uncorrectable (u) remapped rows; RETIRE: page retirement pending.", style="dim"))
    xids = [x for x in doc.get("xids") or [] if isinstance(x, dict)]
    console.print()
    src = Text(f"Kernel log: {len(xids)} Xid line(s)", style="bold")
    src.append(f" (from {clean(doc.get('kernelLogSource') or '?')})", style="")
    console.print(src)
    if xids:
        t = Table(show_edge=False, pad_edge=False, box=None)
        for col in ("TIME", "GPU", "XID", "SEVERITY", "MEANING"):
            t.add_column(col, overflow="fold")
        for x in xids[-50:]:
            info = xid_info(x.get("xid"))
            gpu = str(x["gpuIndex"]) if x.get("gpuIndex") is not None else f"? ({clean(x.get('pciBusId'))})"
            sev = info.severity if info else "unknown"
            meaning = f"{info.mnemonic}: {info.description}" if info else "not in the Xid catalog"
            t.add_row(Text(clean(x.get("time") or "-")), Text(gpu), Text(str(x.get("xid"))),
                      Text(sev, style={"critical": "bold red", "warning": "yellow"}.get(sev, "")),
                      Text(clean(meaning)))
        console.print(t)
        if len(xids) > 50:
            console.print(Text(f"(the last 50 of {len(xids)} shown; -o json has them all)", style="dim"))
    unsupported = doc.get("unsupported") or []
    if unsupported:
        console.print(Text("Not supported here: " + clean(", ".join(str(u) for u in unsupported)), style="dim"))
    for e in doc.get("errors") or []:
        if isinstance(e, dict):
            where = f"GPU {e.get('gpuIndex')}: " if e.get("gpuIndex") is not None else ""
            console.print(Text(f"NVML error: {where}{clean(e.get('call'))}: {clean(e.get('error'))}", style="yellow"))
    found = problems(doc)
    console.print()
    if found:
        console.print(Text("Needs attention:", style="bold red"))
        for p in found:
            console.print(Text(f"  - {clean(p)}"))
    else:
        console.print(Text("No GPU health problem found.", style="bold green"))
