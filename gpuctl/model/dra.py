"""Dynamic Resource Allocation as plain data: the devices ResourceSlices publish,
who holds them, and why a ResourceClaim's requests find no device.

The rules follow the scheduler's structured allocator
(k8s.io/dynamic-resource-allocation/structured, stable channel:
https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/allocator_stable.go):

* only the newest generation of a pool counts (``GatherPools``);
* a device is a candidate for a request when it is not in use (unless the
  request has ``adminAccess``), every DeviceClass selector and then every request
  selector is true for it (``isSelectable``: the class's first, in order; a CEL
  runtime error on a device *aborts* the allocation on that node with
  "class C: selector #i on device D: CEL runtime error: ..."), its
  NoSchedule/NoExecute taints are tolerated by the request
  (``taintPreventsAllocation``) and its pool's shared counters still hold what it
  consumes (``checkAvailableCounters``: counters minus what allocated devices of
  the pool consume);
* ``ExactCount`` needs ``count`` such devices on one node; ``All`` needs every
  matching device of the node and at least one, so one allocated device blocks it;
* ``firstAvailable`` tries its subrequests in order and takes the first that fits;
* ``matchAttribute`` constraints: all devices of the named requests share that
  attribute's value.

Shapes served: resource.k8s.io/v1 and v1beta2 (``exactly`` / ``firstAvailable``,
flat devices) and v1beta1 (request fields flat on the request, device fields
under ``basic``). Everything here is a pure function of the snapshot.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

if TYPE_CHECKING:   # cel_env imports celpy (~65 ms): only when a selector runs
    from .cel_env import Compiled

from .matching import tolerates_raw
from .quantity import parse_quantity

GPU_DRIVERS = ("gpu.nvidia.com",)   # NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu)
# driver -> the kubelet-plugin container that publishes its ResourceSlices (the chart's
# templates/kubeletplugin.yaml: gpu-kubelet-plugin in "gpus", compute-domain-kubelet-plugin
# in "compute-domains" for ComputeDomain IMEX channels)
PLUGIN_CONTAINERS = {"gpu.nvidia.com": "gpus", "compute-domain.nvidia.com": "compute-domains"}
PLUGIN_LABEL = ("nvidia-dra-driver-gpu-component", "kubelet-plugin")   # its chart's kubelet-plugin pods
# a claim for a ComputeDomain's IMEX channel carries the driver's opaque ComputeDomainChannelConfig
# naming the ComputeDomain by UID (kubernetes-sigs/dra-driver-nvidia-gpu
# cmd/compute-domain-controller/resourceclaimtemplate.go: channelConfig.DomainID = cd.UID in the
# workload ResourceClaimTemplate the controller creates; generated claims copy it)
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
CHANNEL_CONFIG_KIND = "ComputeDomainChannelConfig"


# ---------------------------------------------------------------- attribute values


class Quantity:
    """``resource.Quantity`` in CEL (k8s.io/apiserver/pkg/cel/library/quantity.go)."""

    def __init__(self, text: str) -> None:
        self.text = str(text)
        self.value = parse_quantity(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"

    def __str__(self) -> str:
        return self.text


_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class Semver:
    """A semantic version (k8s.io/apiserver/pkg/cel/library/semverlib.go, blang/semver)."""

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(str(text))
        if not m:
            raise ValueError(f"invalid semver: {text}")
        self.text = str(text)
        self.parts = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        self.pre = m.group(4) or ""

    def key(self) -> tuple:
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre.split(".")) if self.pre else ()
        return (self.parts, 0 if self.pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"

    def __str__(self) -> str:
        return self.text


AttrValue = Union[int, bool, str, Semver]


def attribute_value(attr: Any) -> Optional[AttrValue]:
    """The one value of a ResourceSlice ``DeviceAttribute`` ({"string": ..},
    {"int": ..}, {"bool": ..}, {"version": ..}); None if it holds none."""
    if not isinstance(attr, dict):
        return None
    if "int" in attr and attr["int"] is not None and not isinstance(attr["int"], bool):
        try:
            return int(attr["int"])
        except (TypeError, ValueError):
            return None
    if isinstance(attr.get("bool"), bool):
        return attr["bool"]
    if isinstance(attr.get("string"), str):
        return attr["string"]
    if isinstance(attr.get("version"), str):
        try:
            return Semver(attr["version"])
        except ValueError:
            return None
    return None


def split_qualified(name: str, driver: str) -> tuple[str, str]:
    """``parseQualifiedName``: "domain/id" or the driver as domain."""
    if "/" in name:
        d, _, i = name.partition("/")
        return d, i
    return driver, name



# ---------------------------------------------------------------- devices


@dataclass
class Device:
    driver: str
    pool: str
    name: str
    node: str                      # spec.nodeName; "" for allNodes / nodeSelector slices
    slice: str
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)
    consumes: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    taints: list[dict[str, Any]] = field(default_factory=list)
    index: int = 0                 # order in the pool, as the allocator walks it
    multi: bool = False            # allowMultipleAllocations (consumable capacity): may serve several claims

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    @property
    def id(self) -> str:
        """``DeviceID.String()``: driver/pool/device."""
        return f"{self.driver}/{self.pool}/{self.name}"

    def attr(self, qualified: str) -> Optional[AttrValue]:
        """``lookupAttribute``: "domain/id" or, for the driver's own domain, the bare id."""
        if qualified in self.attributes:
            return self.attributes[qualified]
        dom, ident = split_qualified(qualified, self.driver)
        if dom == self.driver and ident in self.attributes:
            return self.attributes[ident]
        return None

    @property
    def is_gpu(self) -> bool:
        kind = self.attr(f"{self.driver}/type")
        if self.driver in GPU_DRIVERS:
            return kind in ("gpu", "mig", None)
        return False


def _d(x: Any) -> dict[str, Any]:
    """A field that should be a map, as one (cluster text is untrusted)."""
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _device_body(d: dict[str, Any]) -> dict[str, Any]:
    """v1beta1 keeps a device's fields under ``basic``."""
    return d.get("basic") if isinstance(d.get("basic"), dict) else d


def _counters(raw: Any) -> dict[str, float]:
    out = {}
    for name, c in (raw or {}).items() if isinstance(raw, dict) else ():
        try:
            out[str(name)] = parse_quantity(_d(c).get("value"))
        except (ValueError, AttributeError):
            continue
    return out


def _newest_slices(snap: Any) -> list[Any]:
    """The slices of each pool's newest generation (``GatherPools``)."""
    newest: dict[tuple[str, str], int] = {}
    slices = []
    for s in snap.objects("ResourceSlice"):
        spec = s.spec if isinstance(s.spec, dict) else {}
        pool = spec.get("pool") if isinstance(spec.get("pool"), dict) else {}
        key = (str(spec.get("driver") or ""), str(pool.get("name") or ""))
        gen = int(pool.get("generation") or 0) if str(pool.get("generation") or "0").isdigit() else 0
        newest[key] = max(newest.get(key, gen), gen)
        slices.append((key, gen, s))
    return [s for key, gen, s in slices if gen == newest[key]]


def slice_devices(snap: Any) -> list[Device]:
    """Every device of every ResourceSlice (newest pool generation), in pool order."""
    out: list[Device] = []
    for s in sorted(_newest_slices(snap), key=lambda s: s.metadata.name):
        spec = s.spec if isinstance(s.spec, dict) else {}
        driver = str(spec.get("driver") or "")
        pool = str(((spec.get("pool") or {}) if isinstance(spec.get("pool"), dict) else {}).get("name") or "")
        node = str(spec.get("nodeName") or "")
        for i, d in enumerate(_l(spec.get("devices"))):
            if not isinstance(d, dict):
                continue
            body = _device_body(d)
            attrs = {}
            for k, v in _d(body.get("attributes")).items():
                val = attribute_value(v)
                if val is not None:
                    attrs[str(k)] = val
            caps = {str(k): str(v.get("value")) for k, v in _d(body.get("capacity")).items()
                    if isinstance(v, dict) and v.get("value") is not None}
            consumes = [(str(c.get("counterSet") or ""), _counters(c.get("counters")))
                        for c in _l(body.get("consumesCounters")) if isinstance(c, dict)]
            taints = [t for t in _l(body.get("taints")) if isinstance(t, dict)]
            out.append(Device(driver, pool, str(d.get("name") or ""), str(body.get("nodeName") or node),
                              s.metadata.name, attrs, caps, consumes, taints, i, body.get("allowMultipleAllocations") is True))
    return out


def shared_counters(snap: Any) -> dict[tuple[str, str, str], dict[str, float]]:
    """(driver, pool, counter set) -> counters, from ``spec.sharedCounters``."""
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    for s in _newest_slices(snap):
        spec = s.spec if isinstance(s.spec, dict) else {}
        driver = str(spec.get("driver") or "")
        pool = str(((spec.get("pool") or {}) if isinstance(spec.get("pool"), dict) else {}).get("name") or "")
        for cs in _l(spec.get("sharedCounters")):
            if isinstance(cs, dict):
                out[(driver, pool, str(cs.get("name") or ""))] = _counters(cs.get("counters"))
    return out


@dataclass(frozen=True)
class Holder:
    claim: str          # namespace/name of the ResourceClaim
    request: str
    admin: bool = False


def allocations(snap: Any) -> dict[tuple[str, str, str], list[Holder]]:
    """(driver, pool, device) -> the claims whose ``status.allocation`` holds it."""
    out: dict[tuple[str, str, str], list[Holder]] = defaultdict(list)
    for c in snap.objects("ResourceClaim"):
        alloc = (c.status or {}).get("allocation") if isinstance(c.status, dict) else None
        for r in _l(_d(_d(alloc).get("devices")).get("results")):
            if isinstance(r, dict):
                out[(str(r.get("driver") or ""), str(r.get("pool") or ""), str(r.get("device") or ""))].append(
                    Holder(f"{c.metadata.namespace}/{c.metadata.name}", str(r.get("request") or ""), bool(r.get("adminAccess"))))
    return out


@dataclass(frozen=True)
class DraDevice:
    """One published device, for capacity reports: ``dra_devices(snap)``."""

    node: str            # the node whose slice publishes it ("" when the slice is not node-local)
    driver: str
    pool: str
    device: str
    gpu: bool            # a GPU or a MIG partition of one (NVIDIA's driver: attribute type gpu/mig)
    kind: str            # the driver's ``type`` attribute ("gpu", "mig", "channel", ...) or ""
    allocated: bool      # held by a ResourceClaim (non-admin) allocation
    claims: tuple[str, ...]   # namespace/name of the claims holding it
    blocked_by_counters: bool  # free, but its pool's shared counters no longer hold what it consumes


def dra_devices(snap: Any) -> list[DraDevice]:
    """Every device the ResourceSlices publish, per node and pool, with whether it is
    allocated (from ResourceClaim ``status.allocation.devices.results``) and whether
    it is a GPU. A MIG partition and its parent GPU are both listed; a free
    partition whose counters are used up (its parent allocated) has
    ``blocked_by_counters``."""
    held = allocations(snap)
    left = counters_left(snap, held)
    out = []
    for d in slice_devices(snap):
        holders = held.get(d.key, [])
        kind = d.attr(f"{d.driver}/type")
        allocated = any(not h.admin for h in holders)
        out.append(DraDevice(d.node, d.driver, d.pool, d.name, d.is_gpu, kind if isinstance(kind, str) else "",
                             allocated, tuple(sorted({h.claim for h in holders})),
                             not allocated and not _counters_fit(d, left, {})))
    return out


def counters_left(snap: Any, held: dict[tuple[str, str, str], list[Holder]]) -> dict[tuple[str, str, str], dict[str, float]]:
    """Shared counters minus what the allocated devices of each pool consume."""
    left = {k: dict(v) for k, v in shared_counters(snap).items()}
    for d in slice_devices(snap):
        if not held.get(d.key):
            continue
        for cs, counters in d.consumes:
            avail = left.get((d.driver, d.pool, cs))
            if avail is None:
                continue
            for name, v in counters.items():
                if name in avail:
                    avail[name] -= v
    return left


def _counters_fit(d: Device, left: dict, taking: dict) -> bool:
    for cs, counters in d.consumes:
        avail = left.get((d.driver, d.pool, cs))
        if avail is None:
            continue
        for name, v in counters.items():
            if name in avail and avail[name] - taking.get((d.driver, d.pool, cs, name), 0.0) < v:
                return False
    return True


def _counter_shortfall(d: Device, left: dict) -> Optional[str]:
    for cs, counters in d.consumes:
        avail = left.get((d.driver, d.pool, cs))
        for name, v in sorted(counters.items()):
            if avail is not None and name in avail and avail[name] < v:
                return f"{cs}/{name}"
    return None


# ---------------------------------------------------------------- claims


@dataclass
class Alternative:
    """A request, or one subrequest of ``firstAvailable``."""

    name: str                     # "req" or "req/sub"
    device_class: str
    selectors: list[str]
    mode: str                     # ExactCount | All
    count: int
    admin: bool
    tolerations: list[dict[str, Any]]


@dataclass
class Request:
    name: str
    alternatives: list[Alternative]
    first_available: bool


def _selectors(raw: Any) -> list[str]:
    out = []
    for s in _l(raw):
        cel = (s or {}).get("cel") if isinstance(s, dict) else None
        out.append(str((cel or {}).get("expression") or "") if isinstance(cel, dict) else "")
    return out


def _alternative(name: str, body: dict[str, Any]) -> Alternative:
    mode = str(body.get("allocationMode") or "ExactCount")
    try:
        count = int(body.get("count") or 1)
    except (TypeError, ValueError):
        count = 1
    return Alternative(name, str(body.get("deviceClassName") or ""), _selectors(body.get("selectors")), mode,
                       count if mode == "ExactCount" else 0, bool(body.get("adminAccess")),
                       [t for t in _l(body.get("tolerations")) if isinstance(t, dict)])


def claim_requests(spec: Any) -> list[Request]:
    """The requests of a ResourceClaim (or template) spec in any served shape."""
    devices = (spec or {}).get("devices") if isinstance(spec, dict) else None
    out = []
    for r in _l(_d(devices).get("requests")):
        if not isinstance(r, dict):
            continue
        name = str(r.get("name") or "")
        if r.get("firstAvailable"):
            out.append(Request(name, [_alternative(f"{name}/{s.get('name', '')}", s)
                                      for s in _l(r["firstAvailable"]) if isinstance(s, dict)], True))
        else:
            body = r.get("exactly") if isinstance(r.get("exactly"), dict) else r   # v1/v1beta2 vs v1beta1
            out.append(Request(name, [_alternative(name, body)], False))
    return out


def claim_constraints(spec: Any) -> list[tuple[list[str], str]]:
    """``matchAttribute`` constraints: (request names, fully qualified attribute)."""
    devices = (spec or {}).get("devices") if isinstance(spec, dict) else None
    return [([str(x) for x in _l(c.get("requests"))], str(c.get("matchAttribute")))
            for c in _l(_d(devices).get("constraints")) if isinstance(c, dict) and c.get("matchAttribute")]


def class_selectors(dc: Any) -> list[str]:
    return _selectors(((dc.spec or {}) if isinstance(dc.spec, dict) else {}).get("selectors"))


tolerates = tolerates_raw   # resourceclaim.ToleratesTaint: the rules of a pod's tolerations


def blocking_taint(d: Device, tolerations: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    for t in d.taints:
        if t.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates_raw(x, t) for x in tolerations):
            return t
    return None


# ---------------------------------------------------------------- why a request finds nothing


@dataclass
class SelectorReport:
    owner: str              # "class gpu.nvidia.com" or "claim ns/name"
    index: int
    expression: str
    compiled: Compiled
    evaluated: int = 0      # devices it ran on (those that passed the selectors before it)
    failed: int = 0         # ... for which it was false
    errors: int = 0         # ... for which it raised a runtime error
    first_error: str = ""
    first_error_device: str = ""
    values: dict[str, Counter] = field(default_factory=dict)   # attribute -> values where it was false
    error_values: dict[str, Counter] = field(default_factory=dict)   # ... where it raised an error

    @property
    def label(self) -> str:
        return f"{self.owner} selector #{self.index}"


@dataclass
class AlternativeReport:
    alt: Alternative
    class_missing: bool = False
    selectors: list[SelectorReport] = field(default_factory=list)
    considered: int = 0          # devices of the cluster's slices
    matching: list[Device] = field(default_factory=list)
    allocated: list[tuple[Device, list[Holder]]] = field(default_factory=list)
    tainted: list[tuple[Device, dict[str, Any]]] = field(default_factory=list)
    counters: list[tuple[Device, str]] = field(default_factory=list)
    usable: list[Device] = field(default_factory=list)
    errors_on: list[Device] = field(default_factory=list)   # devices whose selectors errored
    nodes_ok: list[str] = field(default_factory=list)       # nodes with enough usable devices
    constraint: str = ""                                     # a matchAttribute that cuts the count

    @property
    def invalid(self) -> list[SelectorReport]:
        """Selectors the API server would reject, or that fail on every device they run on."""
        return [s for s in self.selectors if s.compiled.error or (s.evaluated and s.errors == s.evaluated)]

    @property
    def unsupported(self) -> list[SelectorReport]:
        return [s for s in self.selectors if s.compiled.unsupported]


_ATTR_REF = re.compile(r"""device\.attributes\[\s*["']([^"']+)["']\s*\]\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*["']([^"']+)["']\s*\])""")
_CAP_REF = re.compile(r"""device\.capacity\[\s*["']([^"']+)["']\s*\]\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*["']([^"']+)["']\s*\])""")


def referenced(expression: str) -> list[tuple[str, str]]:
    """("attr"|"cap", "domain/id") the expression reads, in order."""
    out = []
    for kind, rx in (("attr", _ATTR_REF), ("cap", _CAP_REF)):
        for m in rx.finditer(expression):
            ref = (kind, f"{m.group(1)}/{m.group(2) or m.group(3)}")
            if ref not in out:
                out.append(ref)
    return out


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Semver):
        return f"semver {v.text}"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def _record_values(into: dict[str, Counter], rep: SelectorReport, d: Device) -> None:
    for kind, ref in referenced(rep.expression):
        if kind == "attr":
            v = d.attr(ref)
            shown = "(not set)" if v is None else _show(v)
        else:
            dom, ident = split_qualified(ref, d.driver)
            raw = d.capacity.get(ref if "/" in ref and dom != d.driver else ident) or d.capacity.get(ref)
            shown = "(not set)" if raw is None else raw
        into.setdefault(ref, Counter())[shown] += 1


_OTHER_DEVICE_USE = re.compile(r"\bdevice\b(?!\s*\.\s*(?:driver|allowMultipleAllocations)\b)")
_OUTCOMES: dict[tuple, Any] = {}
_OUTCOMES_MAX = 200_000


def _cache_key(expression: str, d: Device) -> Optional[tuple]:
    """What a selector's outcome on a device depends on, when the expression reads the
    device only through literal ``device.attributes["d"].n`` / ``device.capacity["d"].n``
    (and ``device.driver``): then devices that agree on those values share one
    evaluation (a cluster's GPUs differ mostly in uuid and index). None: evaluate."""
    refs = referenced(expression)
    if _OTHER_DEVICE_USE.search(_ATTR_REF.sub("", _CAP_REF.sub("", expression))):
        return None
    values = []
    for kind, ref in refs:
        if kind == "attr":
            v = d.attr(ref)
            values.append(None if v is None else (type(v).__name__, str(v)))
        else:
            dom, ident = split_qualified(ref, d.driver)
            values.append(d.capacity.get(ref) or (d.capacity.get(ident) if dom == d.driver else None))
    return (expression, d.driver, d.multi, tuple(values))


def _selector_pass(reports: list[SelectorReport], d: Device) -> tuple[bool, Optional[str]]:
    """Run the selectors in order on one device, as ``selectorsMatch`` does."""
    from .cel_env import evaluate
    for rep in reports:
        if not rep.compiled.ok:
            return False, None
        rep.evaluated += 1
        key = _cache_key(rep.expression, d)
        out = _OUTCOMES.get(key) if key is not None else None
        if out is None:
            out = evaluate(rep.compiled, d.driver, d.attributes, d.capacity, d.multi)
            if key is not None:
                if len(_OUTCOMES) >= _OUTCOMES_MAX:
                    _OUTCOMES.clear()
                _OUTCOMES[key] = out
        if out.error:
            rep.errors += 1
            _record_values(rep.error_values, rep, d)
            if not rep.first_error:
                rep.first_error, rep.first_error_device = out.error, d.id
            return False, out.error
        if not out.matches:
            rep.failed += 1
            _record_values(rep.values, rep, d)
            return False, None
    return True, None


def analyse_alternative(snap: Any, claim: Any, alt: Alternative, devices: list[Device],
                        held: dict[tuple[str, str, str], list[Holder]], left: dict,
                        constraints: list[tuple[list[str], str]], taken: set) -> AlternativeReport:
    rep = AlternativeReport(alt)
    dc = snap.find("DeviceClass", None, alt.device_class)
    if dc is None:
        rep.class_missing = True
        return rep
    from .cel_env import compile_selector

    owner_claim = f"claim {claim.metadata.namespace}/{claim.metadata.name}"
    rep.selectors = ([SelectorReport(f"class {alt.device_class}", i, e, compile_selector(e)) for i, e in enumerate(class_selectors(dc))]
                     + [SelectorReport(owner_claim, i, e, compile_selector(e)) for i, e in enumerate(alt.selectors)])
    if any(s.compiled.error or s.compiled.unsupported for s in rep.selectors):
        return rep
    rep.considered = len(devices)
    for d in devices:
        ok, err = _selector_pass(rep.selectors, d)
        if err is not None:
            in_use = not d.multi and (any(not h.admin for h in held.get(d.key, [])) or d.key in taken)
            # ExactCount checks "in use" before the selectors; All runs them on every device of the node
            if alt.admin or alt.mode == "All" or not in_use:
                rep.errors_on.append(d)
            continue
        if not ok:
            continue
        rep.matching.append(d)
        holders = [h for h in held.get(d.key, []) if not h.admin]
        if (holders or d.key in taken) and not alt.admin and not d.multi:
            rep.allocated.append((d, holders))
            continue
        t = blocking_taint(d, alt.tolerations)
        if t is not None:
            rep.tainted.append((d, t))
            continue
        short = _counter_shortfall(d, left)
        if short is not None:
            rep.counters.append((d, short))
            continue
        rep.usable.append(d)
    by_node: dict[str, list[Device]] = defaultdict(list)
    for d in rep.usable:
        by_node[d.node].append(d)
    matching_by_node: dict[str, int] = Counter(d.node for d in rep.matching)
    base = alt.name.split("/")[0]
    for node, devs in sorted(by_node.items()):
        devs = _fit_counters(devs, left)
        for names, attr in constraints:
            if names and base not in names and alt.name not in names:
                continue
            groups: dict[str, list[Device]] = defaultdict(list)
            for d in devs:
                v = d.attr(attr)
                if v is not None:
                    groups[_show(v)].append(d)
            best = max(groups.values(), key=len, default=[])
            if len(best) < len(devs):
                rep.constraint = attr
            devs = best
        if alt.mode == "All":
            if devs and len(devs) == matching_by_node.get(node, 0):
                rep.nodes_ok.append(node)
        elif len(devs) >= max(alt.count, 1):
            rep.nodes_ok.append(node)
    return rep


def _fit_counters(devs: list[Device], left: dict) -> list[Device]:
    """Greedy: the devices of one node that fit the shared counters together."""
    taking: dict = {}
    out = []
    for d in devs:
        if _counters_fit(d, left, taking):
            out.append(d)
            for cs, counters in d.consumes:
                for name, v in counters.items():
                    k = (d.driver, d.pool, cs, name)
                    taking[k] = taking.get(k, 0.0) + v
    return out


@dataclass
class RequestReport:
    request: Request
    alternatives: list[AlternativeReport]

    @property
    def chosen(self) -> Optional[AlternativeReport]:
        return next((a for a in self.alternatives if a.nodes_ok), None)


@dataclass(frozen=True)
class Inventory:
    """The cluster's devices, who holds them and the counters left: computed once per
    report (a check keeps it in its memo) and shared by every claim analysed."""

    devices: list[Device]
    held: dict[tuple[str, str, str], list[Holder]]
    left: dict[tuple[str, str, str], dict[str, float]]


def inventory(snap: Any) -> Inventory:
    held = allocations(snap)
    return Inventory(slice_devices(snap), held, counters_left(snap, held))


def analyse_claim(snap: Any, claim: Any, taken: Optional[set] = None, inv: Optional[Inventory] = None) -> list[RequestReport]:
    """Why each request of an unallocated claim does (not) find devices."""
    inv = inv or inventory(snap)
    devices, held, left = inv.devices, inv.held, inv.left
    constraints = claim_constraints(claim.spec)
    taken = set() if taken is None else taken
    out = []
    for req in claim_requests(claim.spec):
        alts = []
        for alt in req.alternatives:
            a = analyse_alternative(snap, claim, alt, devices, held, left, constraints, taken)
            alts.append(a)
            if a.nodes_ok:
                node = a.nodes_ok[0]
                need = [d for d in a.usable if d.node == node]
                for d in need[: (len(need) if alt.mode == "All" else max(alt.count, 1))]:
                    taken.add(d.key)
                break
        out.append(RequestReport(req, alts))
    return out


def plugin_pods(snap: Any) -> dict[str, list[Any]]:
    """node -> the DRA driver kubelet-plugin pods on it (label
    ``nvidia-dra-driver-gpu-component=kubelet-plugin`` of NVIDIA's chart)."""
    out: dict[str, list[Any]] = defaultdict(list)
    for p in snap.pods.values():
        labels = p.metadata.labels or {}
        if labels.get(PLUGIN_LABEL[0]) == PLUGIN_LABEL[1] and p.spec.nodeName:
            out[p.spec.nodeName].append(p)
    return out


def compute_domain_of(claim: Any) -> Optional[str]:
    """The UID of the ComputeDomain whose IMEX channel this claim asks for (the
    ``domainID`` of its opaque ComputeDomainChannelConfig), or None."""
    spec = _d(getattr(claim, "spec", None))
    for cfg in _l(_d(spec.get("devices")).get("config")):
        opaque = _d(_d(cfg).get("opaque"))
        params = _d(opaque.get("parameters"))
        if opaque.get("driver") == COMPUTE_DOMAIN_DRIVER and params.get("kind") == CHANNEL_CONFIG_KIND:
            uid = params.get("domainID")
            if isinstance(uid, str) and uid:
                return uid[:63]
    return None


def slice_nodes(snap: Any, driver: str) -> set[str]:
    return {str((s.spec or {}).get("nodeName") or "") for s in snap.objects("ResourceSlice")
            if isinstance(s.spec, dict) and s.spec.get("driver") == driver}


def drivers_of(snap: Any, class_names: Iterable[str]) -> set[str]:
    """The driver names a DeviceClass's selectors pin (``device.driver == "X"``)."""
    out = set()
    for name in class_names:
        dc = snap.find("DeviceClass", None, name)
        for e in class_selectors(dc) if dc is not None else []:
            out |= set(re.findall(r"""device\.driver\s*==\s*["']([^"']+)["']""", e))
    return out


def analyse_template(snap: Any, template: Any, inv: Optional[Inventory] = None) -> list[RequestReport]:
    """``analyse_claim`` for a ResourceClaimTemplate (the claim a pod would get from
    it): for ``gpuctl fit`` of a pod whose claims are not generated yet."""
    from types import SimpleNamespace

    spec = _d(template.spec).get("spec") if isinstance(template.spec, dict) else None
    return analyse_claim(snap, SimpleNamespace(metadata=template.metadata, spec=spec), inv=inv)
