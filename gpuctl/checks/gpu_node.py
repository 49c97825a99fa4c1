"""What a node's GPU stack looks like, from every source that may exist: the
driver and CUDA version (a probe, else GFD labels under their current and
deprecated names), and health evidence — Xids, ECC, row remapping, retired pages —
from device-plugin logs, DCGM exporter metrics, the probe, and the conditions and
taints health controllers (Node Problem Detector, NVSentinel) put on the node.

Used by the runtime checks of a bound pod and by ``diagnose node``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional

from ..knowledge import catalog
from ..model.objects import Node
from ..model.quantity import parse_quantity
from ..model.snapshot import Snapshot

DRIVER_FULL = "nvidia.com/cuda.driver-version.full"
RUNTIME_FULL = "nvidia.com/cuda.runtime-version.full"
# Deprecated GFD names: cuda.driver.* holds the DRIVER version parts.
OLD_DRIVER = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev")
OLD_RUNTIME = ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
KUBELET_CONDITIONS = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}
_GPU_WORDS = re.compile(r"(?i)\b(gpu|xid|nvml|ecc|nvlink|nvidia|row.?remap|dcgm)")
_ECC_WORDS = re.compile(r"(?i)(ecc|row.?remap|retired.?page|double.?bit|uncorrectable)")
_XID_WORDS = re.compile(r"(?i)xid")
# "Xid 79", "Xid=79", "XID 48 detected", "Detected XID 31 for GPU 4": never the GPU index in
# "DCGM_FR_XID_ERROR GPU:4" (NVIDIA/NVSentinel#911), which a looser pattern read as Xid 4
_XID_NUMBER = re.compile(r"(?i)\bxid[\s=:#(]{0,3}(\d{1,3})\b")
# NVSentinel's health-event message: "ErrorCode:119 PCI:0000:97:00 GPU:GPU-… GSP_RPC_TIMEOUT; …"
_GPU_IN_TEXT = re.compile(r"\b(?:GPU|PCI)[:=]\s?((?:GPU-)?[0-9a-fA-F][0-9a-fA-F:.-]{3,40})")
_ERROR_CODE = re.compile(r"ErrorCode[:=]\s*(\d{1,3})\b")


@dataclass
class DriverInfo:
    driver: Optional[str]
    cuda: Optional[Any]          # knowledge.cuda.CudaVersion
    source: str                  # "probe" | "gfd" | "gfd (deprecated labels)" | "driver branch"

    def describe(self) -> str:
        bits = [f"driver {self.driver}" if self.driver else "", f"CUDA {self.cuda}" if self.cuda else ""]
        return " / ".join(b for b in bits if b) + f" ({self.source})"


def driver_info(snap: Snapshot, node_name: str, memo: Optional[dict] = None) -> Optional[DriverInfo]:
    """Kept in the run's memo when one is given: checks ask for every candidate
    node, pod after pod."""
    if memo is None:
        return _driver_info(snap, node_name)
    key = ("driver", node_name)
    if key not in memo:
        memo[key] = _driver_info(snap, node_name)
    return memo[key]


def _driver_info(snap: Snapshot, node_name: str) -> Optional[DriverInfo]:
    from ..knowledge.cuda import driver_cuda, parse_cuda

    probe = snap.probes.get(node_name)
    if isinstance(probe, dict) and probe.get("driverVersion"):
        cuda = parse_cuda(str(probe.get("cudaDriverVersion") or "")) or driver_cuda(str(probe["driverVersion"]))
        return DriverInfo(str(probe["driverVersion"]), cuda, "probe")
    node = snap.nodes.get(node_name)
    if node is None:
        return None
    labels = node.metadata.labels
    driver, source = labels.get(DRIVER_FULL), "gfd"
    if not driver and all(k in labels for k in OLD_DRIVER[:2]):
        driver = ".".join(labels[k] for k in OLD_DRIVER if labels.get(k))
        source = "gfd (deprecated labels)"
    cuda = parse_cuda(labels.get(RUNTIME_FULL, ""))
    if cuda is None and all(k in labels for k in OLD_RUNTIME):
        cuda = parse_cuda(f"{labels[OLD_RUNTIME[0]]}.{labels[OLD_RUNTIME[1]]}")
    if cuda is None and driver:
        cuda = driver_cuda(driver)
        if cuda is not None and source == "gfd":
            source = "gfd driver label + driver branch table"
    if not driver and cuda is None:
        return None
    return DriverInfo(driver, cuda, source)


# ------------------------------------------------------------------ health evidence


@dataclass
class XidEvent:
    xid: int
    gpu: str          # index, UUID or PCI id, whatever the source gives
    source: str       # "device-plugin log", "DCGM metrics", "probe", "node condition"
    line: str
    pods: tuple[str, ...] = ()   # "ns/pod" the GPU is assigned to, where the source says (DCGM's pod labels)
    action: Optional[str] = None  # what the health controller recommends for it ("NONE", "COMPONENT_RESET"), where it says


@dataclass
class Health:
    xids: list[XidEvent] = field(default_factory=list)
    ecc: list[str] = field(default_factory=list)          # evidence lines of uncorrectable ECC / remap failure
    unhealthy: list[str] = field(default_factory=list)    # device marked unhealthy, health-controller conditions
    sources: list[str] = field(default_factory=list)      # what was read
    read: list[str] = field(default_factory=list)         # the logs read, with their sizes ("412 lines of ns/pod/c")
    gaps: list[str] = field(default_factory=list)         # what could not be read (metrics garbage, …)
    gpu_pods: dict[str, list[str]] = field(default_factory=dict)   # GPU index or UUID -> "ns/pod" (DCGM's pod labels)


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


_KERNEL_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]{4,20})\): (?P<xid>\d{1,3})")
_KERNEL_GPU = re.compile(r"NVRM: GPU (?P<pci>[0-9a-fA-F:.]{4,20}): (?P<text>.{1,200})")


def _from_node_events(h: Health, snap: Snapshot, node_name: str) -> None:
    """Kernel NVRM lines the node-problem-detector (or any monitor) posts as events
    on the Node: "NVRM: Xid (PCI:…): 79, …", or "NVRM: GPU …: GPU has fallen off
    the bus" whose text is an Xid's own description (knowledge/xids.yaml)."""
    from ..knowledge.gpu_health import xids

    for e in snap.events_for("Node", None, node_name):
        text = e.message or ""
        line = f"node event {e.reason or ''} from {e.component or 'unknown'}: {text[:300]}"
        m = _KERNEL_XID.search(text)
        if m:
            h.xids.append(XidEvent(int(m.group("xid")), m.group("pci"), "node event", line))
            continue
        m = _KERNEL_GPU.search(text)
        if m:
            said = m.group("text").lower()
            hit = next((x for x in xids() if len(x.description) > 12 and x.description.lower() in said), None)
            if hit is not None:
                h.xids.append(XidEvent(hit.xid, m.group("pci"), "node event", line))
    if snap.events_for("Node", None, node_name):
        h.sources.append("node events")


def node_health(snap: Snapshot, node_name: str, memo: Optional[dict] = None) -> Health:
    """Every source of the node's GPU health, read once per run when a memo is given
    (several checks of a pod ask for it)."""
    if memo is None:
        return _node_health(snap, node_name)
    key = ("health", node_name)
    if key not in memo:
        memo[key] = _node_health(snap, node_name)
    return memo[key]


def _node_health(snap: Snapshot, node_name: str) -> Health:
    from ..knowledge.gpu_health import controller_action
    from .device_plugin import device_plugin_state, log_extent

    h = Health()
    node = snap.nodes.get(node_name)
    # Device-plugin log.
    if node is not None:
        dp = device_plugin_state(snap, [node]).for_node(node_name)
        if dp.logs_read:   # a clean log is evidence too: no Xid in it
            h.sources.append("device-plugin log")
            h.read.extend(log_extent(where, scanned, total) for where, scanned, total in dp.logs_read)
        for lf in dp.log:
            if lf.xid is not None:
                h.xids.append(XidEvent(lf.xid, _device_of(lf.line), "device-plugin log", lf.line))
            if lf.kind == "unhealthy":
                h.unhealthy.append(f"log: {lf.line}")
    # DCGM exporter metrics.
    text = snap.metrics.get(node_name)
    if text:
        _from_metrics(h, text, node_name)
    # Probe.
    probe = snap.probes.get(node_name)
    if isinstance(probe, dict):
        _from_probe(h, probe)
    # Kernel lines on the Node's events (node-problem-detector's kernel monitor).
    _from_node_events(h, snap, node_name)
    # Conditions and taints set by health controllers.
    if node is not None:
        for c in node.status.conditions:
            if c.type in KUBELET_CONDITIONS or c.status != "True":
                continue
            text = f"{c.type} {c.reason or ''} {c.message or ''}"
            if not _GPU_WORDS.search(text):
                continue
            line = f"node condition {c.type}=True ({c.reason or ''}): {c.message or ''}".strip()
            m = _XID_NUMBER.search(text) or (_XID_WORDS.search(text) and _ERROR_CODE.search(text))
            if m:
                gpu = _GPU_IN_TEXT.search(text)
                h.xids.append(XidEvent(int(m.group(1)), gpu.group(1) if gpu else "?", "node condition", line,
                                       action=controller_action(c.message or "")))
            elif _ECC_WORDS.search(text):
                h.ecc.append(line)
            else:
                h.unhealthy.append(line)
        for t in node.spec.taints:
            if t.key in ("nvidia.com/gpu", "amd.com/gpu") or not _GPU_WORDS.search(t.key + " " + (t.value or "")):
                continue
            if _XID_WORDS.search(t.key) or _ECC_WORDS.search(t.key) or re.search(r"(?i)unhealthy|health|fault|error", t.key + (t.value or "")):
                h.unhealthy.append(f"node taint {t.key}={t.value or ''}:{t.effect} (set by a health controller)")
    return h


def _device_of(line: str) -> str:
    m = re.search(r"Device=(\S+?)[;,]", line) or re.search(r"(GPU-[0-9a-fA-F-]{8,})", line)
    return m.group(1) if m else "?"


def _from_metrics(h: Health, text: str, node_name: str) -> None:
    from ..model.gpu_metrics import MetricsError, parse_dcgm

    try:
        parsed = parse_dcgm(text, node_name)
    except MetricsError as e:
        h.gaps.append(f"DCGM metrics for {node_name} could not be parsed: {e}")
        return
    h.sources.append("DCGM metrics")
    for g in parsed.gpus:
        if g.pods:
            h.gpu_pods.update({i: g.pods for i in (g.gpu, g.uuid) if i})
        ref = f"GPU {g.gpu}" + (f" ({g.uuid})" if g.uuid else "")
        if g.xid_last:
            h.xids.append(XidEvent(int(g.xid_last), g.gpu, "DCGM metrics",
                                   f"DCGM_FI_DEV_XID_ERRORS on {ref} = {int(g.xid_last)} (the last Xid seen)", tuple(g.pods)))
        for xid, count in (g.xid_counts or {}).items():
            if count:
                h.xids.append(XidEvent(int(xid), g.gpu, "DCGM metrics", f"DCGM_EXP_XID_ERRORS_COUNT{{xid=\"{xid}\"}} on {ref} = {count:g}",
                                       tuple(g.pods)))
        if _num(g.ecc_dbe_volatile) > 0:
            h.ecc.append(f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL on {ref} = {g.ecc_dbe_volatile:g} uncorrectable (volatile)")
        if _num(g.row_remap_failure) > 0:
            h.ecc.append(f"DCGM_FI_DEV_ROW_REMAP_FAILURE on {ref} = {g.row_remap_failure:g}: row remapping failed")
        if _num(g.retired_pending) > 0:
            h.ecc.append(f"DCGM_FI_DEV_RETIRED_PENDING on {ref} = {g.retired_pending:g}: page retirement pending")
        if _num(g.remapped_rows_uncorrectable) > 0:
            h.ecc.append(f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS on {ref} = {g.remapped_rows_uncorrectable:g}")


def _from_probe(h: Health, probe: dict) -> None:
    h.sources.append("probe")
    for x in probe.get("xids") or []:
        if isinstance(x, dict) and isinstance(x.get("xid"), int):
            gpu = str(x.get("gpuIndex") if x.get("gpuIndex") is not None else x.get("pciBusId", "?"))
            h.xids.append(XidEvent(x["xid"], gpu, "probe (kernel log)", str(x.get("line", ""))))
    for g in probe.get("gpus") or []:
        if not isinstance(g, dict):
            continue
        ref = f"GPU {g.get('index')} ({g.get('pciBusId', '?')})"
        ecc = g.get("ecc") or {}
        vol = (ecc.get("volatile") or {}).get("uncorrected")
        if _num(vol) > 0:
            h.ecc.append(f"probe: {ref} volatile uncorrected ECC errors = {vol}")
        rows = g.get("remappedRows") or {}
        if rows.get("failure"):
            h.ecc.append(f"probe: {ref} row remapping failure occurred")
        if rows.get("pending"):
            h.ecc.append(f"probe: {ref} row remapping pending: reset the GPU to apply it")
        pages = g.get("retiredPages") or {}
        if pages.get("pending"):
            h.ecc.append(f"probe: {ref} page retirement pending: reset the GPU to apply it")
        action = g.get("recoveryAction")
        if action and action != "NONE":
            h.unhealthy.append(f"probe: {ref} NVML recovery action {action}")


# ------------------------------------------------------------------ expected GPUs


@dataclass
class Expected:
    count: Optional[int]
    source: str
    resource: str = "nvidia.com/gpu"
    mig: bool = False          # the count is of MIG devices, not whole GPUs


def expected_gpus(snap: Snapshot, node: Node) -> Optional[Expected]:
    """How many GPU devices the node should advertise: GFD count times replicas
    (sharing), the instance type's GPU count, or what identical nodes advertise."""
    labels = node.metadata.labels
    replicas = int(_num(labels.get("nvidia.com/gpu.replicas", 1)) or 1)
    product = labels.get("nvidia.com/gpu.product", "")
    if labels.get("nvidia.com/mig.strategy") in ("mixed",) or product.endswith("-MIG-INVALID"):
        return None   # mixed: devices per profile (expected_mig_devices); invalid: GFD counts 0
    resource = "nvidia.com/gpu.shared" if any(r == "nvidia.com/gpu.shared" for r in node.status.capacity) else "nvidia.com/gpu"
    count = labels.get("nvidia.com/gpu.count")
    if "-MIG-" in product:
        # single strategy: GFD overrides gpu.count with the number of MIG devices, which
        # nvidia.com/gpu then counts (GFD README, "MIG 'single' strategy")
        if not (count and _num(count) > 0):
            return None
        return Expected(int(_num(count)) * replicas, f"GFD nvidia.com/gpu.count={count} (MIG devices, single strategy)"
                        + (f" x replicas {replicas}" if replicas > 1 else ""), resource, mig=True)
    if count and _num(count) > 0:
        return Expected(int(_num(count)) * replicas, f"GFD nvidia.com/gpu.count={count}"
                        + (f" x replicas {replicas}" if replicas > 1 else ""), resource)
    itype = labels.get("node.kubernetes.io/instance-type") or labels.get("beta.kubernetes.io/instance-type")
    if itype:
        hit = catalog.match_instance_type(itype)
        if hit:
            return Expected(hit[1] * replicas, f"instance type {itype} has {hit[1]} GPUs", resource)
    peers = [n for n in snap.nodes.values() if n is not node and itype and
             (n.metadata.labels.get("node.kubernetes.io/instance-type") == itype)]
    counts = sorted(int(_num(n.status.capacity.get(resource, 0))) for n in peers)
    if len(counts) >= 2 and counts[len(counts) // 2] > 0:
        return Expected(counts[len(counts) // 2], f"identical {itype} nodes advertise {counts[len(counts) // 2]}", resource)
    return None


_MIG_COUNT_LABEL = re.compile(r"^nvidia\.com/(mig-[0-9]+g\.[0-9]+gb(?:\.me)?)\.count$")


def expected_mig_devices(node: Node) -> list[Expected]:
    """Mixed strategy: how many devices of each MIG profile the node should advertise.
    GFD labels ``nvidia.com/mig-<g>g.<mem>gb.count`` ("Number of MIG devices of this
    type", GFD README, "MIG 'mixed' strategy"), times ``….replicas`` when the profile
    is time-sliced; the device plugin advertises them as ``nvidia.com/mig-<profile>``."""
    labels = node.metadata.labels
    if labels.get("nvidia.com/mig.strategy") != "mixed":
        return []
    out = []
    for key, value in sorted(labels.items()):
        m = _MIG_COUNT_LABEL.match(key)
        if not m or _num(value) <= 0:
            continue
        replicas = int(_num(labels.get(f"nvidia.com/{m[1]}.replicas", 1)) or 1)
        out.append(Expected(int(_num(value)) * replicas, f"GFD {key}={value}"
                            + (f" x replicas {replicas}" if replicas > 1 else ""), f"nvidia.com/{m[1]}", mig=True))
    return out


@lru_cache(maxsize=None)
def _q(value: str) -> float:
    try:
        return parse_quantity(value)
    except ValueError:
        return 0.0


def advertised(node: Node, resource: str) -> tuple[float, float]:
    return _q(str(node.status.capacity.get(resource, 0))), _q(str(node.status.allocatable.get(resource, 0)))


def pool_key(n: Node) -> Optional[str]:
    """The node's pool, as peers for driver drift: its instance type, else its GPU product."""
    labels = n.metadata.labels
    return labels.get("node.kubernetes.io/instance-type") or labels.get("nvidia.com/gpu.product")
