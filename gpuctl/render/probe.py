"""``gpuctl node probe``'s table: one ``gpuctl/probe/v1`` document for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..knowledge.gpu_health import xid_info
from .safe import clean


def _positive(v: Any) -> bool:
    try:
        return float(v) > 0
    except (TypeError, ValueError):
        return False


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
    mode, vol, agg = (ecc.get(k) if isinstance(ecc.get(k), dict) else {} for k in ("mode", "volatile", "aggregate"))
    if mode.get("current") == "disabled":
        return "off", False
    vol, agg = vol.get("uncorrected"), agg.get("uncorrected")
    return f"{'-' if vol is None else vol}/{'-' if agg is None else agg}", _positive(vol) or _positive(agg)


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


def render_probe(doc: dict[str, Any], console: Console, problems: list[str]) -> None:
    """The document's table; ``problems`` (reports.probe.problems) close it."""
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
    console.print()
    if problems:
        console.print(Text("Needs attention:", style="bold red"))
        for p in problems:
            console.print(Text(f"  - {clean(p)}"))
    else:
        console.print(Text("No GPU health problem found.", style="bold green"))
