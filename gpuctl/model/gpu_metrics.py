"""DCGM exporter metrics (Prometheus text exposition) -> per-GPU health records.

Pure: no I/O. The text comes from the exporter itself (through the API server's pod
proxy or ``--dcgm-url``), from a Prometheus query rendered back to exposition lines
(gpuctl/collect/metrics.py), or from a snapshot's ``metrics/<node>.prom``.

Parsing is done by ``prometheus_client``'s text parser (dependency
``prometheus-client>=0.17``); every failure becomes a :class:`MetricsError` naming
the offending line. Two defences sit in front of the library, because its parser
has super-linear paths that hostile or broken input could hit:

* lines longer than :data:`MAX_LINE_CHARS` are refused (a DCGM exporter line, pod
  attribution and Prometheus target labels included, is well under 2 KB);
* comment lines are handled here: ``# HELP`` and free comments are dropped (they
  carry nothing a diagnosis uses) and ``# TYPE`` lines are passed on with their
  whitespace collapsed.

What is understood (dcgm-exporter's default counters):

* metric names of dcgm-exporter 2.x-4.x (``DCGM_FI_DEV_*``, ``DCGM_EXP_XID_ERRORS_COUNT``)
  and of the 1.x compatibility CSV (lowercase ``dcgm_*``);
* labels ``gpu``, ``UUID`` (``uuid`` with ``--use-old-namespace``), ``pci_bus_id``,
  ``device``, ``modelName``, ``Hostname`` (tags 4.5.3-4.8.2; ``hostname`` at HEAD)
  and ``DCGM_FI_DRIVER_VERSION``;
* MIG series (``GPU_I_PROFILE``/``GPU_I_ID``) are folded into their parent GPU:
  the device-level fields read here are the same for every instance, so the
  largest value seen is kept (never a sum, which would count one error N times);
* DCGM "blank" sentinels (e.g. 9223372036854775794 for a field the GPU does not
  support) and non-finite values read as absent (None), never as a count.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

__all__ = ["GpuMetrics", "MetricsError", "NodeGpuMetrics", "parse_dcgm", "MAX_LINE_CHARS"]

MAX_LINE_CHARS = 16 * 1024

# Metric name -> GpuMetrics field. 2.x+ names first, then the 1.x compatibility names.
_FIELDS: dict[str, str] = {
    "DCGM_FI_DEV_XID_ERRORS": "xid_last",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "ecc_sbe_volatile",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "ecc_dbe_volatile",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": "ecc_sbe_aggregate",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "ecc_dbe_aggregate",
    "DCGM_FI_DEV_RETIRED_SBE": "retired_sbe",
    "DCGM_FI_DEV_RETIRED_DBE": "retired_dbe",
    "DCGM_FI_DEV_RETIRED_PENDING": "retired_pending",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "remapped_rows_correctable",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "remapped_rows_uncorrectable",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "row_remap_failure",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
    "DCGM_FI_DEV_MEMORY_TEMP": "memory_temperature_c",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "pcie_replay",
    # etc/1.x-compatibility-metrics.csv
    "dcgm_xid_errors": "xid_last",
    "dcgm_ecc_sbe_volatile_total": "ecc_sbe_volatile",
    "dcgm_ecc_dbe_volatile_total": "ecc_dbe_volatile",
    "dcgm_ecc_sbe_aggregate_total": "ecc_sbe_aggregate",
    "dcgm_ecc_dbe_aggregate_total": "ecc_dbe_aggregate",
    "dcgm_retired_pages_sbe": "retired_sbe",
    "dcgm_retired_pages_dbe": "retired_dbe",
    "dcgm_retired_pages_pending": "retired_pending",
    "dcgm_gpu_temp": "temperature_c",
    "dcgm_memory_temp": "memory_temperature_c",
    "dcgm_pcie_replay_counter": "pcie_replay",
}
XID_COUNT_METRIC = "DCGM_EXP_XID_ERRORS_COUNT"
_XID_COUNT_NAMES = {XID_COUNT_METRIC, "dcgm_exp_xid_errors_count"}

# Every series name worth asking a Prometheus server for (gpuctl/collect/metrics.py).
DCGM_HEALTH_METRICS: tuple[str, ...] = tuple(n for n in _FIELDS if n.startswith("DCGM_")) + (XID_COUNT_METRIC,) \
    + tuple(n for n in _FIELDS if n.startswith("dcgm_"))

_HOSTNAME_KEYS = ("Hostname", "hostname")
_UUID_KEYS = ("UUID", "uuid")
_DRIVER_KEYS = ("DCGM_FI_DRIVER_VERSION", "driver_version")

# DCGM blank values (dcgm_structs.h): int64 and int32 blanks with their
# NOT_FOUND/NOT_SUPPORTED/NOT_PERMISSIONED siblings, and the fp64 ones.
_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
_INT32_BLANK = 0x7FFFFFF0
_FP64_BLANK = 140737488355328.0
_SMALL_INT = re.compile(r"[0-9]{1,9}")


class MetricsError(ValueError):
    """Text that is not Prometheus exposition format; names the line."""

    def __init__(self, message: str, line_no: Optional[int] = None, line: Optional[str] = None):
        where = f"line {line_no}: " if line_no is not None else ""
        shown = f" in {_clip(line)!r}" if line is not None else ""
        super().__init__(f"{where}{message}{shown}")
        self.line_no = line_no
        self.line = line


@dataclass
class GpuMetrics:
    gpu: str                                     # index label ("0"); the UUID when no index was given
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    model: Optional[str] = None
    hostname: Optional[str] = None
    xid_last: Optional[int] = None               # DCGM_FI_DEV_XID_ERRORS: the code of the last Xid, 0 = none
    xid_counts: dict[int, float] = field(default_factory=dict)   # DCGM_EXP_XID_ERRORS_COUNT{xid=...} in its window
    ecc_sbe_volatile: Optional[float] = None
    ecc_dbe_volatile: Optional[float] = None
    ecc_sbe_aggregate: Optional[float] = None
    ecc_dbe_aggregate: Optional[float] = None
    retired_sbe: Optional[float] = None
    retired_dbe: Optional[float] = None
    retired_pending: Optional[float] = None
    remapped_rows_correctable: Optional[float] = None
    remapped_rows_uncorrectable: Optional[float] = None
    row_remap_failure: Optional[float] = None
    temperature_c: Optional[float] = None
    memory_temperature_c: Optional[float] = None
    pcie_replay: Optional[float] = None
    device: Optional[str] = None                 # "nvidia0"
    mig_instances: list[str] = field(default_factory=list)   # "1g.10gb/3" for each folded MIG instance
    pods: list[str] = field(default_factory=list)   # "ns/pod" the exporter's Kubernetes mapping assigns the GPU to


@dataclass
class NodeGpuMetrics:
    gpus: list[GpuMetrics]
    hostname_label: Optional[str] = None         # the label key seen: "Hostname" (<= 4.8.2) or "hostname" (HEAD)
    driver_version: Optional[str] = None         # DCGM_FI_DRIVER_VERSION label
    other_nodes: set[str] = field(default_factory=set)   # hostnames of series dropped by the node filter

    def gpu(self, key: str) -> Optional[GpuMetrics]:
        """The record for a GPU index, UUID or PCI bus id."""
        for g in self.gpus:
            if key in (g.gpu, g.uuid, g.pci_bus_id):
                return g
        return None


def _clip(text: Optional[str], n: int = 160) -> str:
    text = text or ""
    return text if len(text) <= n else text[:n] + "…"


def _value(raw: object) -> Optional[float]:
    """A sample value as a float; None for NaN/Inf and DCGM blank sentinels."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        if raw >= _INT64_BLANK or _INT32_BLANK <= raw <= _INT32_BLANK + 3 or _FP64_BLANK <= raw <= _FP64_BLANK + 3:
            return None
        return float(raw)
    try:
        v = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(v) or v >= float(_INT64_BLANK) or _FP64_BLANK <= v <= _FP64_BLANK + 3:
        return None
    if float(_INT32_BLANK) <= v <= float(_INT32_BLANK + 3) and v.is_integer():
        return None
    return v


def _same_host(a: str, b: str) -> bool:
    """Node name vs exporter hostname: equal, or equal up to the domain when one is short."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    if "." in a and "." in b:
        return False
    return a.split(".", 1)[0] == b.split(".", 1)[0]


def _field_for(name: str) -> Optional[str]:
    f = _FIELDS.get(name)
    if f is None and name.endswith("_total"):
        # prometheus_client renames the samples of a `# TYPE x counter` family to x_total
        f = _FIELDS.get(name[:-6])
    return f


def _is_xid_count(name: str) -> bool:
    return name in _XID_COUNT_NAMES or (name.endswith("_total") and name[:-6] in _XID_COUNT_NAMES)


class _Lines:
    """The text's lines for the library, pre-screened, remembering which was read last."""

    def __init__(self, text: str):
        self.text = text
        self.no = 0
        self.current: Optional[str] = None

    def __iter__(self) -> Iterator[str]:
        for no, line in enumerate(self.text.split("\n"), 1):
            self.no, self.current = no, line
            if len(line) > MAX_LINE_CHARS:
                raise MetricsError(f"line longer than {MAX_LINE_CHARS} characters", no, line)
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                parts = s.split(None, 3)
                if len(parts) >= 2 and parts[0] == "#" and parts[1] == "TYPE":
                    yield " ".join(parts) + "\n"
                continue
            yield line + "\n"


def _samples(text: str) -> Iterator[tuple[str, dict[str, str], object]]:
    from prometheus_client.parser import text_fd_to_metric_families

    lines = _Lines(text)
    families = text_fd_to_metric_families(lines)  # type: ignore[arg-type]
    while True:
        try:
            family = next(families)
        except StopIteration:
            return
        except MetricsError:
            raise
        except RecursionError:
            raise MetricsError("not Prometheus text (nesting too deep)", lines.no, lines.current) from None
        except Exception as e:  # the library raises ValueError, but any failure here is bad input
            detail = str(e).split("\n", 1)[0] or type(e).__name__
            raise MetricsError(f"not Prometheus text ({_clip(detail, 120)})", lines.no, lines.current) from None
        for s in family.samples:
            yield s.name, s.labels, s.value


def parse_dcgm(text: str, node: Optional[str] = None) -> NodeGpuMetrics:
    """Per-GPU health records from DCGM exporter text.

    ``node``: keep only series whose ``Hostname``/``hostname`` label names this node
    (or that carry no hostname label); the other hostnames seen go to ``other_nodes``.
    Raises :class:`MetricsError` for text that is not Prometheus exposition format.
    """
    if not isinstance(text, str):
        raise MetricsError(f"expected text, got {type(text).__name__}")
    gpus: dict[tuple[str, str], GpuMetrics] = {}
    hostname_label: Optional[str] = None
    driver: Optional[str] = None
    others: set[str] = set()
    for name, labels, raw in _samples(text):
        fname = _field_for(name)
        xid_count = fname is None and _is_xid_count(name)
        if fname is None and not xid_count:
            continue
        host_key = next((k for k in _HOSTNAME_KEYS if k in labels), None)
        host = labels.get(host_key) if host_key else None
        if node is not None and host and not _same_host(node, host):
            others.add(host)
            continue
        if host_key and hostname_label is None:
            hostname_label = host_key
        if driver is None:
            driver = next((labels[k] for k in _DRIVER_KEYS if labels.get(k)), None)
        uuid = next((labels[k] for k in _UUID_KEYS if labels.get(k)), None)
        index = labels.get("gpu") or None
        if index is None and uuid is None:
            continue  # not a per-GPU series (NVSwitch, CPU, ...)
        key = (host or "", index if index is not None else uuid)
        rec = gpus.get(key)
        if rec is None:
            rec = gpus[key] = GpuMetrics(gpu=index if index is not None else uuid, hostname=host)  # type: ignore[arg-type]
        rec.uuid = rec.uuid or uuid
        rec.pci_bus_id = rec.pci_bus_id or labels.get("pci_bus_id") or None
        rec.model = rec.model or labels.get("modelName") or labels.get("model_name") or None
        rec.device = rec.device or labels.get("device") or None
        pod = labels.get("pod") or labels.get("exported_pod")
        if pod:
            owner = f"{labels.get('namespace') or labels.get('exported_namespace') or ''}/{pod}"
            if owner not in rec.pods:
                rec.pods.append(owner)
        profile = labels.get("GPU_I_PROFILE")
        if profile:
            inst = f"{profile}/{labels.get('GPU_I_ID', '?')}"
            if inst not in rec.mig_instances:
                rec.mig_instances.append(inst)
        v = _value(raw)
        if v is None:
            continue
        if xid_count:
            xid = labels.get("xid", "")
            if _SMALL_INT.fullmatch(xid):
                code = int(xid)
                rec.xid_counts[code] = max(rec.xid_counts.get(code, v), v)
            continue
        if fname == "xid_last":
            if v >= 0:
                iv = int(v)
                rec.xid_last = iv if rec.xid_last is None else max(rec.xid_last, iv)
            continue
        old = getattr(rec, fname)
        setattr(rec, fname, v if old is None else max(old, v))
    ordered = sorted(gpus.values(), key=lambda g: (g.hostname or "", _index_key(g.gpu)))
    return NodeGpuMetrics(ordered, hostname_label, driver, others)


def _index_key(gpu: str) -> tuple[int, int, str]:
    return (0, int(gpu), "") if _SMALL_INT.fullmatch(gpu) else (1, 0, gpu)
