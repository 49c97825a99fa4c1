"""The node's kernel log, for Xid lines.

``read_kernel_log(path)`` reads, in this order: the file given (``-`` is standard
input), else ``journalctl -k -o short-iso --no-pager -n 20000``, else ``dmesg -T``,
else plain ``dmesg``; the first that yields lines wins. Commands run without a
shell, with a timeout and ``LC_ALL=C``; output is decoded as UTF-8 with
replacement, only the last 20,000 lines are kept and every line is cut at 4 KiB.
When nothing can be read the lines are empty and the source says why
(``"unavailable (journalctl: no entries; dmesg -T: Operation not permitted; …)"``).

``xids_from_lines(lines, gpus)`` turns the lines into the probe document's ``xids``
entries, mapping each kernel PCI id to a GPU of ``gpus`` (their NVML ``pciBusId``).
Neither function raises on arbitrary text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Optional

from ..errors import SourceError
from ..knowledge.gpu_health import parse_kernel_xid, pci_matches

__all__ = ["read_kernel_log", "xids_from_lines", "parse_log_time", "MAX_LINES", "MAX_LINE_CHARS"]

MAX_LINES = 20_000
MAX_LINE_CHARS = 4096
MAX_FILE_BYTES = 64 * 2**20      # only the tail of a bigger file is read

_COMMANDS = (
    ("journalctl -k", ["journalctl", "-k", "-o", "short-iso", "--no-pager", "-n", str(MAX_LINES)]),
    ("dmesg -T", ["dmesg", "-T"]),
    ("dmesg", ["dmesg"]),
)


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()
    return [ln.rstrip("\r")[:MAX_LINE_CHARS] for ln in out[-MAX_LINES:]]


def _read_file(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read(MAX_FILE_BYTES * 2)[-MAX_FILE_BYTES:]
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_FILE_BYTES:
            f.seek(size - MAX_FILE_BYTES)
        return f.read(MAX_FILE_BYTES)


def _first_line(data: bytes) -> str:
    for ln in data.decode("utf-8", "replace").splitlines():
        if ln.strip():
            return ln.strip()[:200]
    return ""


def _run(argv: list[str], timeout: float) -> tuple[Optional[bytes], str]:
    """(stdout, "") on success, (None, why) when the command could not give the log."""
    if shutil.which(argv[0]) is None:
        return None, "not installed"
    env = dict(os.environ, LC_ALL="C", SYSTEMD_COLORS="0", SYSTEMD_PAGER="", PAGER="cat")
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:g}s"
    except OSError as e:
        return None, e.strerror or str(e)
    if r.returncode != 0:
        return None, _first_line(r.stderr) or f"exit status {r.returncode}"
    return r.stdout, ""


def read_kernel_log(path: Optional[str] = None, timeout: float = 5) -> tuple[list[str], str]:
    """(lines, source). A file that cannot be read is a ``SourceError`` (exit 4):
    the user asked for it. Commands that fail fall through to the next one."""
    if path is not None:
        try:
            data = _read_file(path)
        except OSError as e:
            raise SourceError(f"kernel log {path}: cannot be read ({e.strerror or e})") from None
        return _lines(data), ("stdin" if path == "-" else f"file {path}")
    why: list[str] = []
    for source, argv in _COMMANDS:
        if source == "dmesg" and any(w.startswith("dmesg -T: not installed") for w in why):
            break
        out, reason = _run(argv, timeout)
        if out is None:
            why.append(f"{source}: {reason}")
            continue
        lines = _lines(out)
        if source.startswith("journalctl"):
            # "-- No entries --", "-- Logs begin at …", "-- Boot …" are journalctl's own markers.
            lines = [ln for ln in lines if not ln.startswith("-- ")]
        if lines:
            return lines, source
        why.append(f"{source}: no entries")
    return [], f"unavailable ({'; '.join(why)})"


# ------------------------------------------------------------------ timestamps

# journalctl -o short-iso: 2026-11-20T02:58:11+0000 host kernel: …   (newer systemd: +00:00;
# short-iso-precise and dmesg --time-format iso add a fraction: .123456 or ,123456)
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,]\d{1,9})?(Z|[+-]\d{2}:?\d{2})?(?=\s|$)")
# dmesg -T: [Wed Nov 20 02:58:11 2026] NVRM: …   (local time)
_CTIME = re.compile(r"^\[\s{0,3}[A-Z][a-z]{2}\s{1,3}([A-Z][a-z]{2})\s{1,3}(\d{1,2})\s{1,3}(\d{2}):(\d{2}):(\d{2})\s{1,3}(\d{4})\]")
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}


def _utc(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_log_time(line: str) -> Optional[str]:
    """UTC RFC 3339 time of a journalctl short-iso or ``dmesg -T`` line; None when
    the line has no wall-clock prefix (plain dmesg, syslog without a year).
    ``dmesg -T`` prints local time: it is read in this machine's time zone."""
    if not isinstance(line, str):
        return None
    head = line[:64]
    try:
        m = _ISO.match(head)
        if m:
            y, mo, d, hh, mm, ss = (int(g) for g in m.groups()[:6])
            tz = m.group(7)
            if tz is None:
                dt = datetime(y, mo, d, hh, mm, ss).astimezone()   # no offset: local time
            elif tz == "Z":
                dt = datetime(y, mo, d, hh, mm, ss, tzinfo=timezone.utc)
            else:
                sign = -1 if tz[0] == "-" else 1
                digits = tz[1:].replace(":", "")
                off = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
                if off >= timedelta(hours=24):
                    return None
                dt = datetime(y, mo, d, hh, mm, ss, tzinfo=timezone(sign * off))
            return _utc(dt)
        m = _CTIME.match(head)
        if m:
            mon = _MONTHS.get(m.group(1))
            if mon is None:
                return None
            d, hh, mm, ss, y = (int(g) for g in m.groups()[1:])
            return _utc(datetime(y, mon, d, hh, mm, ss).astimezone())
    except (ValueError, OverflowError, OSError):
        return None
    return None


# ------------------------------------------------------------------ Xids


def _message(line: str) -> str:
    """The kernel message without the journalctl/dmesg prefix (from ``NVRM:``)."""
    i = line.find("NVRM")
    return line[i:] if i >= 0 else line


def xids_from_lines(lines: Iterable[Any], gpus: Any) -> list[dict[str, Any]]:
    """``{"xid", "pciBusId", "gpuIndex", "time", "line"}`` for every Xid line, in
    log order. ``pciBusId`` is the kernel's id (``0000:07:00``); ``gpuIndex`` the
    ``index`` of the GPU in ``gpus`` whose ``pciBusId`` names the same device, else None."""
    known: list[tuple[Any, str]] = []
    if isinstance(gpus, (list, tuple)):
        for g in gpus:
            if isinstance(g, dict) and isinstance(g.get("pciBusId"), str):
                idx = g.get("index")
                known.append((idx if isinstance(idx, int) and not isinstance(idx, bool) else None, g["pciBusId"]))
    out: list[dict[str, Any]] = []
    try:
        iterator = iter(lines)
    except TypeError:
        return out
    for n, line in enumerate(iterator):
        if n >= MAX_LINES * 5:
            break
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        if not isinstance(line, str):
            continue
        line = line[:MAX_LINE_CHARS]
        hit = parse_kernel_xid(line)
        if hit is None:
            continue
        xid, pci = hit
        index = next((i for i, bus in known if pci_matches(pci, bus)), None)
        out.append({"xid": xid, "pciBusId": pci, "gpuIndex": index, "time": parse_log_time(line),
                    "line": _message(line)})
    return out
