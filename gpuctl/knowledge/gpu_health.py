"""GPU health knowledge: the Xid catalog and kernel-log Xid lines.

The facts live in ``xids.yaml`` next to this module (a source per entry, the
severity and action rules in its header); this module only loads and queries
them, plus two small parsers:

- ``parse_kernel_xid(line)`` reads an ``NVRM: Xid (PCI:0000:9b:00): 119, ...``
  kernel line (also the short ``NVRM: Xid (0000:03:00): 14, Channel ...`` form
  and the ``GPU has fallen off the bus`` lines without an Xid, which mean Xid
  79) and returns ``(xid, pci)`` with the PCI id as ``dddd:bb:dd`` (no function).
- ``pci_matches(kernel_pci, nvml_pci)`` compares that id with an NVML / nvidia-smi
  bus id such as ``00000000:07:00.0`` (domain width and function ignored).

Every function accepts arbitrary text and never raises on it; the regexes start
with a literal and bound every repetition, so a 1 MB line is scanned linearly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from .messages import load_yaml

__all__ = [
    "XidInfo",
    "XidCatalogError",
    "xid_info",
    "xids",
    "device_plugin_ignores",
    "application_class",
    "controller_action",
    "needs_no_hardware_action",
    "parse_kernel_xid",
    "pci_matches",
    "normalize_pci",
]

SEVERITIES = ("critical", "warning", "info")


class XidCatalogError(ValueError):
    """xids.yaml is malformed (names the entry)."""


@dataclass(frozen=True)
class XidInfo:
    xid: int
    mnemonic: str
    description: str
    immediate: str                  # Resolution Bucket (Immediate Action), as NVIDIA writes it
    investigatory: str              # Resolution Bucket (Investigatory Action)
    action: str                     # plain operator sentence
    severity: str                   # "critical" | "warning" | "info"
    ignored_by_device_plugin: bool  # ignored by the NVIDIA device plugin's health check (current plugin)
    source: str
    ignored_since: Optional[str] = None   # first plugin version that ignores it by default
    verified: bool = True
    note: Optional[str] = None
    application_class: bool = False  # an application's error: the GPU needs no hardware action (xids.yaml)


# --------------------------------------------------------------------------- loading


def _version_tuple(text: str) -> Optional[tuple[int, ...]]:
    m = re.match(r"\s{0,4}v?(\d{1,4})(?:\.(\d{1,4}))?(?:\.(\d{1,4}))?", str(text)[:64])
    if not m:
        return None
    return tuple(int(g) if g is not None else 0 for g in m.groups())


class _Catalog:
    def __init__(self, data: Any) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("xids"), list):
            raise XidCatalogError("xids.yaml: top-level 'xids' list is missing")
        sources: dict[str, str] = {str(k): str(v) for k, v in (data.get("sources") or {}).items()}
        buckets: dict[str, dict[str, Any]] = {str(k): v for k, v in (data.get("buckets") or {}).items()}
        overrides: dict[int, dict[str, Any]] = {int(k): v for k, v in (data.get("overrides") or {}).items()}
        self.ignored: dict[int, str] = {}
        for row in data.get("device_plugin_ignored") or []:
            self.ignored[int(row["xid"])] = str(row["since"])
        for b, spec in buckets.items():
            if spec.get("severity") not in SEVERITIES or not spec.get("action"):
                raise XidCatalogError(f"xids.yaml: bucket {b!r} needs a severity in {SEVERITIES} and an action")
        app = data.get("application_class") or {}
        app_buckets = {str(b) for b in app.get("buckets") or []}
        app_except = {int(x) for x in app.get("except") or []}
        self.no_action = {str(a).upper() for a in data.get("controller_no_action") or []}
        self.by_xid: dict[int, XidInfo] = {}
        for i, row in enumerate(data["xids"]):
            try:
                n = int(row["xid"])
                immediate = str(row.get("immediate") or "")
                bucket = buckets.get(immediate)
                if bucket is None:
                    raise XidCatalogError(f"xids.yaml: xid {n}: no bucket entry for immediate action {immediate!r}")
                ov = overrides.get(n, {})
                severity = str(ov.get("severity", bucket["severity"]))
                if severity not in SEVERITIES:
                    raise XidCatalogError(f"xids.yaml: xid {n}: bad severity {severity!r}")
                src_key = str(ov.get("source", row.get("source", "GPUD")))
                source = sources.get("GPUD", "GPUD")
                if src_key != "GPUD":
                    source += "; " + sources.get(src_key, src_key)
                action = str(bucket["action"])
                investigatory = str(row.get("investigatory") or "")
                if investigatory.startswith("WORKFLOW_") and investigatory != immediate and investigatory in buckets:
                    action += "; if it recurs, " + str(buckets[investigatory]["action"])
                verified = bool(row.get("verified", True)) and bool(ov.get("verified", True)) \
                    and bool(bucket.get("verified", True) or "action" in ov)
                info = XidInfo(
                    xid=n,
                    mnemonic=str(row["mnemonic"]),
                    description=str(row["description"]),
                    immediate=immediate,
                    investigatory=investigatory,
                    action=str(ov.get("action", action)),
                    severity=severity,
                    ignored_by_device_plugin=n in self.ignored,
                    source=source,
                    ignored_since=self.ignored.get(n),
                    verified=verified,
                    note=ov.get("note"),
                    application_class=severity != "critical" and n not in app_except
                    and (immediate in app_buckets or n in self.ignored),
                )
            except (KeyError, TypeError, ValueError) as exc:
                if isinstance(exc, XidCatalogError):
                    raise
                raise XidCatalogError(f"xids.yaml: xids[{i}] is malformed: {exc}") from exc
            if n in self.by_xid:
                raise XidCatalogError(f"xids.yaml: duplicate xid {n}")
            self.by_xid[n] = info


@lru_cache(maxsize=None)
def _catalog() -> _Catalog:
    return _Catalog(load_yaml("xids.yaml"))


# --------------------------------------------------------------------------- queries


def xid_info(n: Any) -> Optional[XidInfo]:
    """The catalog entry for Xid ``n`` (int or decimal string); None when unknown."""
    if isinstance(n, bool):
        return None
    if isinstance(n, str):
        s = n.strip()
        if not (0 < len(s) <= 6 and s.isascii() and s.isdigit()):
            return None
        n = int(s)
    if not isinstance(n, int):
        return None
    return _catalog().by_xid.get(n)


def xids() -> tuple[XidInfo, ...]:
    """Every catalog entry, by Xid number."""
    return tuple(_catalog().by_xid[k] for k in sorted(_catalog().by_xid))


def device_plugin_ignores(xid: int, plugin_version: Optional[str] = None) -> bool:
    """Whether the NVIDIA device plugin ignores ``xid`` by default.

    ``plugin_version`` (e.g. ``"v0.17.1"``) selects the behaviour of that release;
    None means the current one. Versions older than the oldest one read (v0.14.0)
    are treated like v0.14.0. DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS
    overrides are the caller's business.
    """
    since = _catalog().ignored.get(xid) if isinstance(xid, int) else None
    if since is None:
        return False
    if plugin_version is None:
        return True
    have, need = _version_tuple(plugin_version), _version_tuple(since)
    if have is None or need is None:
        return True
    oldest = _version_tuple("v0.14.0")
    return max(have, oldest) >= need if oldest else have >= need


def application_class(n: Any) -> bool:
    """Whether Xid ``n`` is an application's error that needs no hardware action."""
    info = xid_info(n)
    return bool(info and info.application_class)


# "Recommended Action=NONE;"  /  "RecommendedAction: COMPONENT_RESET"  /  "recommended_action=NONE"
_RECOMMENDED = re.compile(r"(?i)(?:recommended|suggested)[ _-]?actions?\s{0,3}[=:]\s{0,3}([A-Za-z_]{2,40})")


def controller_action(text: Any) -> Optional[str]:
    """The action a health controller recommends in a condition or event message
    (NVSentinel's "Recommended Action=NONE"), upper case; None when it names none."""
    if not isinstance(text, str):
        return None
    m = _RECOMMENDED.search(text[:4000])
    return m.group(1).upper() if m else None


def needs_no_hardware_action(n: Any, action: Optional[str] = None) -> bool:
    """Whether an Xid event needs nothing done to the GPU: a health controller that
    recommended no action (``action``, from ``controller_action``) for a non-critical
    Xid, or, when no controller said otherwise, an application-class Xid. A hardware
    action recommended by the controller always wins."""
    info = xid_info(n)
    if action:
        if action.upper() in _catalog().no_action:
            return info is None or info.severity != "critical"
        return False
    return bool(info and info.application_class)


# --------------------------------------------------------------------------- kernel lines

# NVRM: Xid (PCI:0000:9b:00): 119, pid=...   /   NVRM: Xid (0000:03:00): 14, Channel 00000001
# (GPUD kmsg.go RegexNVRMXidCombined, bounded: `NVRM: Xid \(((?:PCI:)?[0-9a-fA-F:]+)\).*?: (\d+),`)
_XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]{4,32})\):\s{0,4}(\d{1,5})\b")
# NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.   /   NVRM: GPU 18:00.0: GPU has fallen off the bus.
_FALLEN_GPU = re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?([0-9A-Fa-f:.]{4,32}):\s{0,4}GPU has fallen off the bus")
# NVRM: The NVIDIA GPU 0000:18:00.0 (PCI ID: 10de:2901) ... has fallen off the bus and is not responding ...
_FALLEN_THE = re.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f:.]{4,32})")
_FALLEN = "fallen off the bus"

_BDF = re.compile(r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?$")


def _bdf(text: str) -> Optional[tuple[int, int, int]]:
    t = text.strip()
    if t[:4].upper() == "PCI:":
        t = t[4:]
    m = _BDF.match(t)
    if not m:
        return None
    dom, bus, dev, _fn = m.groups()
    return int(dom or "0", 16), int(bus, 16), int(dev, 16)


def normalize_pci(text: str) -> Optional[str]:
    """``dddd:bb:dd`` (lower case, function dropped) for a kernel or NVML bus id; None if not one."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    b = _bdf(text)
    if b is None or b[0] > 0xFFFF:
        return None
    return f"{b[0]:04x}:{b[1]:02x}:{b[2]:02x}"


def parse_kernel_xid(line: str) -> Optional[tuple[int, str]]:
    """(xid, pci) from one kernel log line (or a short multi-line kmsg record).

    ``pci`` is ``dddd:bb:dd`` without the function. "GPU has fallen off the bus"
    lines without an Xid number count as Xid 79. None when the line is not an Xid.
    """
    if not isinstance(line, str) or "NVRM" not in line:
        return None
    m = _XID_LINE.search(line)
    if m:
        pci = normalize_pci(m.group(1))
        if pci is not None:
            return int(m.group(2)), pci
    if _FALLEN in line:
        for rx in (_FALLEN_GPU, _FALLEN_THE):
            m = rx.search(line)
            if m:
                pci = normalize_pci(m.group(1).rstrip(":."))
                if pci is not None:
                    return 79, pci
    return None


def pci_matches(kernel_pci: str, nvml_pci: str) -> bool:
    """Whether a kernel PCI id (``0000:07:00``, ``PCI:0000:07:00``) names the same
    GPU as an NVML / nvidia-smi bus id (``00000000:07:00.0``)."""
    if not isinstance(kernel_pci, str) or not isinstance(nvml_pci, str):
        return False
    if len(kernel_pci) > 64 or len(nvml_pci) > 64:
        return False
    a, b = _bdf(kernel_pci), _bdf(nvml_pci)
    return a is not None and a == b
