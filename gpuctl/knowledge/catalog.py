"""GPU SKU catalog, cloud instance types and device-plugin facts.

The facts live in ``skus.yaml`` and ``device_plugins.yaml`` next to this module;
this module only loads, indexes and queries them. It imports nothing from the
Kubernetes client: callers pass plain ``dict[str, str]`` node labels.

Matching rules (``match_product``)
- Case-insensitive; spaces and underscores count as '-'; runs of '-' collapse.
- GFD suffixes are ignored: ``-SHARED``, ``-MIG-<profile>``, ``-MIG-INVALID``
  (NVML MIG device names, "... MIG 1g.10gb", are handled the same way).
- The exact normalised alias is tried first; then the name with leading
  ``nvidia-`` / ``tesla-`` prefixes removed, compared with aliases stripped the
  same way (so "A100-SXM4-40GB" matches "NVIDIA A100-SXM4-40GB").
- A name shared by several SKUs (``generic_names``, e.g. Karpenter's ``a100``)
  resolves only with a GPU-memory hint, unless all candidates share type and
  memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Optional

__all__ = [
    "Sku",
    "GpuEvidence",
    "InstanceType",
    "DevicePluginKind",
    "EmbeddedDevicePlugin",
    "EVIDENCE_SOURCES",
    "CatalogError",
    "skus",
    "sku_by_id",
    "instance_types",
    "instance_type_info",
    "match_product",
    "match_instance_type",
    "gpu_evidence_from_labels",
    "node_has_gpus",
    "device_plugin_selectors",
    "embedded_device_plugins",
    "gpu_resource_names",
    "gpu_resource_patterns",
    "is_gpu_resource",
    "mig_resource_name",
    "label_key",
]

EVIDENCE_SOURCES = frozenset({"gfd", "gke-accelerator", "karpenter", "instance-type", "probe", "nfd"})

# A memory hint (MiB) selects a candidate whose nominal memory is within this
# relative distance; NVML reports a little less than nominal (T4: 15360 MiB).
_MEMORY_TOLERANCE = 0.15


class CatalogError(ValueError):
    """A knowledge data file is malformed (names the file and the entry)."""


@dataclass(frozen=True)
class Sku:
    id: str
    type: str
    vendor: str
    family: str
    memory_gib: int
    mig_capable: bool
    mig_profiles: tuple[str, ...]
    source: str
    form_factor: str | None = None
    verified: bool = True


@dataclass(frozen=True)
class GpuEvidence:
    sku: Sku | None
    count: int | None
    source: str  # one of EVIDENCE_SOURCES
    raw: str


@dataclass(frozen=True)
class InstanceType:
    name: str
    cloud: str
    sku: Sku
    gpus: int
    fraction: float | None
    source: str
    verified: bool = True


@dataclass(frozen=True)
class DevicePluginKind:
    name: str
    namespaces: tuple[str, ...]
    label_selector: str
    resources: tuple[str, ...]
    source: str
    vendor: str = "nvidia"
    daemonset: str | None = None
    container: str | None = None
    node_selector: str | None = None
    verified: bool = True
    node_label: str | None = None   # "key=value" of the nodes it should serve (other_device_plugins)


@dataclass(frozen=True)
class EmbeddedDevicePlugin:
    name: str
    vendor: str
    resources: tuple[str, ...]
    where: str
    source: str


# --------------------------------------------------------------------------- loading


def _load_yaml(name: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    text = resources.files("gpuctl.knowledge").joinpath(name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=loader)


def _norm(text: str) -> str:
    """Lower case, spaces/underscores -> '-', collapse dashes, drop GFD suffixes."""
    t = str(text).strip().lower()
    t = re.sub(r"[\s_]+", "-", t)
    t = re.sub(r"-{2,}", "-", t).strip("-")
    # GFD: "<model>-MIG-<profile>[-SHARED]", "<model>-MIG-INVALID", "<model>-SHARED";
    # NVML MIG devices: "<model> MIG 1g.10gb".
    t = re.sub(r"-shared$", "", t)
    t = re.sub(r"-mig-.*$", "", t)
    t = re.sub(r"-shared$", "", t)
    return t


def _short(key: str) -> str:
    """Strip leading vendor/brand prefixes ("nvidia-", "tesla-")."""
    while True:
        for prefix in ("nvidia-", "tesla-"):
            if key.startswith(prefix) and len(key) > len(prefix):
                key = key[len(prefix):]
                break
        else:
            return key


class _Catalog:
    def __init__(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("skus"), list):
            raise CatalogError("skus.yaml: top-level 'skus' list is missing")
        self.skus: dict[str, Sku] = {}
        self.raw_skus: dict[str, dict[str, Any]] = {}
        self.full: dict[str, set[str]] = {}
        self.short: dict[str, set[str]] = {}
        self.alias_owner: dict[str, str] = {}
        self.order: dict[str, int] = {}
        for i, entry in enumerate(data["skus"]):
            sku = self._sku(entry, i)
            if sku.id in self.skus:
                raise CatalogError(f"skus.yaml: duplicate sku id {sku.id!r}")
            self.skus[sku.id] = sku
            self.raw_skus[sku.id] = entry
            self.order[sku.id] = i
            for alias in _aliases_of(entry):
                key = _norm(alias)
                if not key:
                    raise CatalogError(f"skus.yaml: empty alias in {sku.id!r}")
                owner = self.alias_owner.get(key)
                if owner is not None and owner != sku.id:
                    raise CatalogError(
                        f"skus.yaml: alias {alias!r} maps to both {owner!r} and {sku.id!r}"
                    )
                self.alias_owner[key] = sku.id
                self.full.setdefault(key, set()).add(sku.id)
                self.short.setdefault(_short(key), set()).add(sku.id)
        for entry in data.get("generic_names") or []:
            name = entry.get("name")
            cands = entry.get("candidates") or []
            if not name or not cands:
                raise CatalogError(f"skus.yaml: generic name entry {entry!r} needs name and candidates")
            missing = [c for c in cands if c not in self.skus]
            if missing:
                raise CatalogError(f"skus.yaml: generic name {name!r} names unknown skus {missing}")
            key = _norm(name)
            if key in self.alias_owner:
                raise CatalogError(
                    f"skus.yaml: generic name {name!r} is also an alias of {self.alias_owner[key]!r}"
                )
            self.full.setdefault(key, set()).update(cands)
            self.short.setdefault(_short(key), set()).update(cands)
        self.instance_types: dict[str, InstanceType] = {}
        for entry in data.get("instance_types") or []:
            it = self._instance_type(entry)
            k = it.name.lower()
            if k in self.instance_types:
                raise CatalogError(f"skus.yaml: duplicate instance type {it.name!r}")
            self.instance_types[k] = it

    def _sku(self, e: Any, i: int) -> Sku:
        if not isinstance(e, dict):
            raise CatalogError(f"skus.yaml: skus[{i}] is not a mapping")
        try:
            mig = e.get("mig") or {}
            return Sku(
                id=str(e["id"]),
                type=str(e["type"]),
                vendor=str(e["vendor"]),
                family=str(e["family"]),
                memory_gib=int(e["memory_gib"]),
                mig_capable=bool(mig.get("capable", False)),
                mig_profiles=tuple(str(p) for p in (mig.get("profiles") or ())),
                source=str(e["source"]),
                form_factor=e.get("form_factor"),
                verified=bool(e.get("verified", True)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"skus.yaml: skus[{i}] ({e.get('id')!r}) is malformed: {exc}") from exc

    def _instance_type(self, e: Any) -> InstanceType:
        if not isinstance(e, dict) or "name" not in e:
            raise CatalogError(f"skus.yaml: instance type entry {e!r} has no name")
        sku = self.skus.get(e.get("sku"))
        if sku is None:
            raise CatalogError(f"skus.yaml: instance type {e['name']!r} names unknown sku {e.get('sku')!r}")
        try:
            gpus = int(e["gpus"])
            fraction = e.get("fraction")
            return InstanceType(
                name=str(e["name"]),
                cloud=str(e["cloud"]),
                sku=sku,
                gpus=gpus,
                fraction=float(fraction) if fraction is not None else None,
                source=str(e["source"]),
                verified=bool(e.get("verified", True)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"skus.yaml: instance type {e['name']!r} is malformed: {exc}") from exc

    # -------------------------------------------------------------- resolution

    def pick(self, ids: Iterable[str], memory_mib: float | None) -> Sku | None:
        cands = sorted({self.skus[i] for i in ids}, key=lambda s: self.order[s.id])
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        if memory_mib is not None and memory_mib > 0:
            scored = []
            for s in cands:
                nominal = s.memory_gib * 1024
                rel = abs(nominal - memory_mib) / nominal
                if rel <= _MEMORY_TOLERANCE:
                    scored.append((rel, s))
            if not scored:
                return None
            best = min(r for r, _ in scored)
            # Candidates as close as the best (same nominal memory) must agree on type.
            tied = [s for r, s in scored if abs(r - best) < 1e-9]
            return tied[0] if len({s.type for s in tied}) == 1 else None
        if len({(s.type, s.memory_gib) for s in cands}) == 1:
            return cands[0]
        return None

    def match(self, text: str, memory_mib: float | None) -> Sku | None:
        key = _norm(text)
        if not key:
            return None
        ids = self.full.get(key)
        if ids:
            return self.pick(ids, memory_mib)
        ids = self.short.get(_short(key))
        if ids:
            return self.pick(ids, memory_mib)
        return None


def _aliases_of(entry: dict[str, Any]) -> list[str]:
    aliases = entry.get("aliases") or {}
    out: list[str] = []
    if isinstance(aliases, dict):
        for values in aliases.values():
            out.extend(str(v) for v in (values or []))
    else:  # a flat list is accepted too
        out.extend(str(v) for v in aliases)
    return out


@lru_cache(maxsize=None)
def _catalog() -> _Catalog:
    return _Catalog(_load_yaml("skus.yaml"))


@lru_cache(maxsize=None)
def _plugins() -> dict[str, Any]:
    data = _load_yaml("device_plugins.yaml")
    if not isinstance(data, dict):
        raise CatalogError("device_plugins.yaml: not a mapping")
    for section in ("device_plugins", "gpu_resources", "node_gpu_labels"):
        if section not in data:
            raise CatalogError(f"device_plugins.yaml: section {section!r} is missing")
    return data


@lru_cache(maxsize=None)
def _label_keys() -> dict[str, str]:
    out: dict[str, str] = {}
    for row in _plugins()["node_gpu_labels"]:
        out[str(row["role"])] = str(row["key"])
    return out


def label_key(role: str) -> str:
    """The node-label key for a role named in device_plugins.yaml (e.g. 'gfd-product')."""
    try:
        return _label_keys()[role]
    except KeyError:
        raise CatalogError(f"device_plugins.yaml: no node_gpu_labels entry with role {role!r}") from None


# --------------------------------------------------------------------------- SKUs


def skus() -> tuple[Sku, ...]:
    """Every SKU, in catalog order."""
    return tuple(_catalog().skus.values())


def sku_by_id(sku_id: str) -> Sku | None:
    return _catalog().skus.get(sku_id)


def match_product(text: str, memory_mib: float | None = None) -> Sku | None:
    """The SKU named by an NVML name, GFD product, GKE accelerator or Karpenter GPU name.

    ``memory_mib`` (GFD ``nvidia.com/gpu.memory`` or Karpenter
    ``instance-gpu-memory``) disambiguates names shared by several SKUs.
    Returns None for unknown or ambiguous names.
    """
    if not text or not isinstance(text, str):
        return None
    return _catalog().match(text, memory_mib)


def instance_types() -> tuple[InstanceType, ...]:
    return tuple(_catalog().instance_types.values())


def instance_type_info(instance_type: str) -> InstanceType | None:
    """The full instance-type record (including fractional GPU sizes), case-insensitive."""
    if not instance_type:
        return None
    return _catalog().instance_types.get(instance_type.strip().lower())


@lru_cache(maxsize=1)
def _cpu_only_rules() -> tuple[tuple[re.Pattern[str], str, str], ...]:
    data = _load_yaml("skus.yaml") or {}
    return tuple((re.compile(r["pattern"]), str(r.get("cloud", "")), str(r["source"]))
                 for r in data.get("cpu_only_instance_types") or [])


INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


def cpu_only_instance_type(labels: dict[str, str]) -> Optional[str]:
    """The node's instance type when its cloud's naming says it has no NVIDIA GPU
    (m5.xlarge on AWS, Standard_D4s_v3 on Azure); None when it may have one or is unknown."""
    it = next((labels[k] for k in INSTANCE_TYPE_LABELS if labels.get(k)), None)
    if not it or instance_type_info(it) is not None:
        return None
    return it if any(rx.match(it) for rx, _, _ in _cpu_only_rules()) else None


def match_instance_type(instance_type: str) -> tuple[Sku, int] | None:
    """(SKU, whole GPUs) for a known GPU instance type; None when unknown or fractional."""
    it = instance_type_info(instance_type)
    if it is None or it.fraction is not None:
        return None
    return it.sku, it.gpus


# --------------------------------------------------------------------------- node labels


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _is_mig_product(product: str) -> bool:
    return re.search(r"-mig-", re.sub(r"[\s_]+", "-", product.strip().lower())) is not None


def gpu_evidence_from_labels(labels: dict[str, str]) -> list[GpuEvidence]:
    """Every piece of GPU evidence in a node's labels, best first.

    Order: GFD product (+count), GKE accelerator (+count label when present),
    Karpenter GPU name/count, instance type (node.kubernetes.io, then the beta
    key), then presence-only labels (NFD PCI 10de, operator gpu.present /
    gpu.deploy.device-plugin) with sku and count None.
    """
    if not labels:
        return []
    labels = {str(k): str(v) for k, v in labels.items() if v is not None}
    out: list[GpuEvidence] = []

    product = labels.get(label_key("gfd-product"), "").strip()
    if product:
        mig = _is_mig_product(product)
        # Under the MIG single strategy gpu.count and gpu.memory describe MIG devices.
        count = None if mig else _int(labels.get(label_key("gfd-count")))
        memory = None if mig else _int(labels.get(label_key("gfd-memory")))
        if count == 0:
            count = None
        out.append(GpuEvidence(match_product(product, memory), count, "gfd", product))

    gke = labels.get(label_key("gke-accelerator"), "").strip()
    if gke:
        out.append(
            GpuEvidence(match_product(gke), _int(labels.get(label_key("gke-accelerator-count"))), "gke-accelerator", gke)
        )

    kname = labels.get(label_key("karpenter-gpu-name"), "").strip()
    kcount = _int(labels.get(label_key("karpenter-gpu-count")))
    if kname or (kcount is not None and kcount > 0):
        memory = _int(labels.get(label_key("karpenter-gpu-memory")))
        sku = match_product(kname, memory) if kname else None
        out.append(GpuEvidence(sku, kcount if kcount else None, "karpenter", kname or f"count={kcount}"))

    seen_types: set[str] = set()
    for role in ("instance-type", "instance-type-beta"):
        name = labels.get(label_key(role), "").strip()
        if not name or name.lower() in seen_types:
            continue
        seen_types.add(name.lower())
        info = instance_type_info(name)
        if info is None:
            continue
        if info.fraction is not None:
            out.append(GpuEvidence(None, None, "instance-type", name))
        else:
            out.append(GpuEvidence(info.sku, info.gpus, "instance-type", name))

    for role in ("nfd-nvidia-pci", "nfd-nvidia-pci-3d", "nfd-nvidia-pci-vga", "operator-gpu-present"):
        key = label_key(role)
        if labels.get(key, "").strip().lower() == "true":
            out.append(GpuEvidence(None, None, "nfd", f"{key}=true"))
    key = label_key("operator-deploy-device-plugin")
    if key in labels:
        out.append(GpuEvidence(None, None, "nfd", f"{key}={labels[key]}"))
    return out


_EVIDENCE_ROLES = ("gfd-product", "gfd-count", "gfd-memory", "gke-accelerator", "gke-accelerator-count",
                   "karpenter-gpu-name", "karpenter-gpu-count", "karpenter-gpu-memory", "instance-type",
                   "instance-type-beta", "nfd-nvidia-pci", "nfd-nvidia-pci-3d", "nfd-nvidia-pci-vga",
                   "operator-gpu-present", "operator-deploy-device-plugin")


@lru_cache(maxsize=None)
def _evidence_keys() -> tuple[str, ...]:
    return tuple(label_key(role) for role in _EVIDENCE_ROLES)


def node_has_gpus(labels: dict[str, str]) -> GpuEvidence | None:
    """The best evidence that the node physically has GPUs (SKU-bearing first), or None.

    Cached on the labels it reads: the nodes of one pool share them, and this runs
    for every node of a 5,000-node cluster, more than once per command."""
    return _best_evidence(tuple((k, labels[k]) for k in _evidence_keys() if k in labels))


@lru_cache(maxsize=4096)
def _best_evidence(relevant: tuple[tuple[str, str], ...]) -> GpuEvidence | None:
    evidence = gpu_evidence_from_labels(dict(relevant))
    for ev in evidence:
        if ev.sku is not None:
            return ev
    return evidence[0] if evidence else None


# --------------------------------------------------------------------------- device plugins


def _plugin_kinds(section: str, default_vendor: str, what: str) -> tuple[DevicePluginKind, ...]:
    """The device-plugin rows of one section of device_plugins.yaml, checked."""
    out = []
    for row in _plugins().get(section) or []:
        try:
            out.append(DevicePluginKind(
                name=str(row["name"]),
                namespaces=tuple(str(n) for n in (row.get("namespaces") or ())),
                label_selector=str(row["label_selector"]),
                resources=tuple(str(r) for r in (row.get("resources") or ())),
                source=str(row["source"]),
                vendor=str(row.get("vendor") or default_vendor),
                daemonset=row.get("daemonset"),
                container=row.get("container"),
                node_selector=row.get("node_selector"),
                verified=bool(row.get("verified", True)),
                node_label=row.get("node_label"),
            ))
        except (KeyError, TypeError) as exc:
            raise CatalogError(f"device_plugins.yaml: {what} {row!r} is malformed: {exc}") from exc
    return tuple(out)


@lru_cache(maxsize=None)
def _device_plugin_kinds() -> tuple[DevicePluginKind, ...]:
    return _plugin_kinds("device_plugins", "nvidia", "device plugin")


def device_plugin_selectors() -> list[DevicePluginKind]:
    """Known device-plugin deployment styles with their pod label selectors, plus
    the user's own from the gpuctl config file (gpuctl/config.py)."""
    from ..config import extra_device_plugins

    extra = [DevicePluginKind(name=str(r.get("name") or r["labelSelector"]),
                              namespaces=tuple(str(n) for n in r.get("namespaces") or ()),
                              label_selector=str(r["labelSelector"]),
                              resources=tuple(str(x) for x in r.get("resources") or ("nvidia.com/gpu",)),
                              source="user config", verified=False)
             for r in extra_device_plugins()]
    return list(_device_plugin_kinds()) + extra


@lru_cache(maxsize=None)
def other_device_plugins() -> tuple[DevicePluginKind, ...]:
    """Device plugins of non-GPU resources (EFA, RDMA, SR-IOV, Neuron: device_plugins.yaml
    other_device_plugins). Never part of ``device_plugin_selectors()``: their pods are
    not GPU device plugins."""
    return _plugin_kinds("other_device_plugins", "", "other device plugin")


def serving_kinds(resource: str) -> list[DevicePluginKind]:
    """The plugin kinds that serve ``resource``: the GPU device plugins that do, else
    the non-GPU ones (EFA, RDMA, ...)."""
    kinds = [k for k in device_plugin_selectors() if plugin_serves(k, resource)]
    return kinds or [k for k in other_device_plugins() if plugin_serves(k, resource)]


def served_resource_vendor(resource: str) -> Optional[str]:
    """The vendor device_plugins.yaml names for a well-known resource, if any."""
    for section in (_plugins()["gpu_resources"].get("names") or [], _plugins().get("served_resources") or []):
        for r in section:
            if str(r.get("name")) == resource and r.get("vendor"):
                return str(r["vendor"])
    return None


@lru_cache(maxsize=None)
def placing_scheduler(resource: str) -> Optional[str]:
    """The scheduler whose extender places a resource no node advertises (HAMi's
    nvidia.com/gpumem: hami-scheduler), from device_plugins.yaml ``placed_by``."""
    for r in _plugins().get("served_resources") or []:
        if str(r.get("name")) == resource and r.get("placed_by"):
            return str(r["placed_by"])
    return None


def embedded_device_plugins() -> tuple[EmbeddedDevicePlugin, ...]:
    """Device plugins built into node images (no pod to find)."""
    return tuple(
        EmbeddedDevicePlugin(
            name=str(r["name"]),
            vendor=str(r.get("vendor") or ""),
            resources=tuple(str(x) for x in (r.get("resources") or ())),
            where=str(r.get("where") or ""),
            source=str(r["source"]),
        )
        for r in (_plugins().get("embedded_device_plugins") or [])
    )


@lru_cache(maxsize=None)
def gpu_resource_names() -> tuple[str, ...]:
    """Exact GPU resource names. MIG resources follow gpu_resource_patterns()."""
    return tuple(str(r["name"]) for r in _plugins()["gpu_resources"]["names"])


@lru_cache(maxsize=None)
def _gpu_resource_regexes() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(str(p["pattern"])) for p in (_plugins()["gpu_resources"].get("patterns") or []))


def gpu_resource_patterns() -> tuple[str, ...]:
    """Regular expressions (full match) for GPU resource families, e.g. nvidia.com/mig-*."""
    return tuple(r.pattern for r in _gpu_resource_regexes())


def is_gpu_resource(name: str) -> bool:
    """True for the exact GPU resource names and any nvidia.com/mig-<g>g.<mem>gb[.me] name."""
    if not name:
        return False
    if name in gpu_resource_names():
        return True
    return any(r.fullmatch(name) for r in _gpu_resource_regexes())


def mig_resource_name(profile: str) -> str:
    """Resource name the device plugin advertises for a MIG profile under the mixed strategy.

    "1g.10gb+me" -> "nvidia.com/mig-1g.10gb.me" ('+' becomes '.').
    """
    return "nvidia.com/mig-" + profile.strip().replace("+", ".")


# Device-plugin identification: is this pod (by its labels and namespace) a GPU device plugin?
@lru_cache(maxsize=None)
def _compiled_selectors() -> tuple[tuple[tuple[tuple[str, str], ...], frozenset[str]], ...]:
    """Each known plugin's selector as ((key, value), …) plus its namespaces, parsed once."""
    return tuple((_selector_pairs(kind.label_selector), frozenset(kind.namespaces)) for kind in device_plugin_selectors())


@lru_cache(maxsize=None)
def _selector_pairs(selector: str) -> tuple[tuple[str, str], ...]:
    """An equality-based label selector ("a=b,c=d") as its (key, value) pairs."""
    return tuple((k.strip(), v.strip()) for k, _, v in (p.partition("=") for p in selector.split(",")))


def kind_selects(kind: DevicePluginKind, labels: dict[str, str]) -> bool:
    """Whether these pod labels match this device-plugin kind's selector."""
    return all(labels.get(k) == v for k, v in _selector_pairs(kind.label_selector))


_SelectorIndex = dict[str, dict[str, list[tuple[tuple[tuple[str, str], ...], frozenset[str]]]]]
_index: tuple[Any, _SelectorIndex] = ((), {})


def _selectors_by_first_pair() -> _SelectorIndex:
    """The selectors indexed by their first (key, value): a pod's labels are looked up
    once per distinct first key instead of testing every selector (this runs for
    every pod of a 150,000-pod snapshot save). Rebuilt whenever _compiled_selectors
    is (its cache is cleared when the config's selectors change)."""
    global _index
    compiled = _compiled_selectors()
    if _index[0] is not compiled:
        index: _SelectorIndex = {}
        for pairs, namespaces in compiled:
            k, v = pairs[0]
            index.setdefault(k, {}).setdefault(v, []).append((pairs[1:], namespaces))
        _index = (compiled, index)
    return _index[1]


def labels_mark_device_plugin(labels: dict[str, str], namespace: Optional[str]) -> bool:
    if not labels:
        return False
    for key, by_value in _selectors_by_first_pair().items():
        value = labels.get(key)
        if value is None or value not in by_value:
            continue
        for rest, namespaces in by_value[value]:
            if all(labels.get(k) == v for k, v in rest):
                if not namespaces or "*" in namespaces or namespace in namespaces:
                    return True
    return False


def plugin_serves(kind: DevicePluginKind, resource: str) -> bool:
    """Whether this device-plugin kind serves ``resource`` (its names and patterns)."""
    import fnmatch

    return any(fnmatch.fnmatchcase(resource, pattern) for pattern in kind.resources)


def served_resource_names() -> tuple[str, ...]:
    """Accelerator and GPU-sharing resources a vendor's plugin serves that do not
    count whole GPUs (device_plugins.yaml served_resources)."""
    return tuple(str(r["name"]) for r in _plugins().get("served_resources") or [])


def well_known_gpu_resource(resource: str) -> bool:
    """A name a GPU vendor's device plugin serves, or a vendor-fixed accelerator or network
    resource (device_plugins.yaml served_resources: Neuron, TPU, AWS EFA): never a typo,
    whoever advertises it."""
    return (is_gpu_resource(resource) or resource in served_resource_names()
            or any(plugin_serves(k, resource) for k in device_plugin_selectors()))
