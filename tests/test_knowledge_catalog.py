"""Tests for gpuctl.knowledge.catalog and its data files (skus.yaml, device_plugins.yaml)."""

from __future__ import annotations

import re

import pytest

from gpuctl.knowledge import catalog
from gpuctl.knowledge.catalog import (
    GpuEvidence,
    Sku,
    _load_yaml,
    _norm,
    device_plugin_selectors,
    gpu_evidence_from_labels,
    gpu_resource_names,
    is_gpu_resource,
    match_instance_type,
    match_product,
    node_has_gpus,
)

SKUS = _load_yaml("skus.yaml")
PLUGINS = _load_yaml("device_plugins.yaml")


# --------------------------------------------------------------------------- product matching


@pytest.mark.parametrize(
    ("text", "type_", "memory"),
    [
        # GFD nvidia.com/gpu.product values, with and without suffixes
        ("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "a100", 80),
        ("NVIDIA-A100-SXM4-80GB", "a100", 80),
        ("A100-SXM4-40GB-MIG-1g.5gb", "a100", 40),  # GFD README example (older driver naming)
        ("A100-SXM4-40GB-MIG-1g.5gb-SHARED", "a100", 40),
        ("NVIDIA-A100-SXM4-40GB-MIG-INVALID", "a100", 40),
        ("Tesla-T4-SHARED", "t4", 16),
        ("Tesla-T4", "t4", 16),
        ("NVIDIA-H100-80GB-HBM3", "h100", 80),
        ("NVIDIA-H100-80GB-HBM3-MIG-3g.40gb-SHARED", "h100", 80),
        ("NVIDIA-L40S", "l40s", 48),
        ("NVIDIA-A10G", "a10g", 24),
        # NVML names
        ("NVIDIA A100-SXM4-80GB", "a100", 80),
        ("NVIDIA A100 80GB PCIe", "a100", 80),
        ("Tesla T4", "t4", 16),
        ("NVIDIA H100 80GB HBM3", "h100", 80),
        ("NVIDIA H100 PCIe", "h100", 80),
        ("NVIDIA H100 NVL", "h100-nvl", 94),
        ("NVIDIA H200", "h200", 141),
        ("NVIDIA L4", "l4", 24),
        ("NVIDIA A10G", "a10g", 24),
        ("NVIDIA L40S", "l40s", 48),
        ("Tesla V100-SXM2-32GB", "v100", 32),
        ("NVIDIA B200", "b200", 180),
        ("NVIDIA A100-SXM4-80GB MIG 1g.10gb", "a100", 80),  # NVML MIG device name
        # GKE cloud.google.com/gke-accelerator values
        ("nvidia-tesla-a100", "a100", 40),
        ("nvidia-a100-80gb", "a100", 80),
        ("nvidia-h100-80gb", "h100", 80),
        ("nvidia-h100-mega-80gb", "h100", 80),
        ("nvidia-h200-141gb", "h200", 141),
        ("nvidia-l4", "l4", 24),
        ("nvidia-tesla-t4", "t4", 16),
        ("nvidia-tesla-v100", "v100", 16),
        ("nvidia-b200", "b200", 180),
        ("nvidia-gb200", "gb200", 186),
        ("nvidia-rtx-pro-6000", "rtx-pro-6000", 96),
        # Karpenter karpenter.k8s.aws/instance-gpu-name values
        ("t4", "t4", 16),
        ("a10g", "a10g", 24),
        ("l4", "l4", 24),
        ("l40s", "l40s", 48),
        ("h100", "h100", 80),
        ("h200", "h200", 141),
        # case and prefix tolerance
        ("nvidia-a100-sxm4-80gb", "a100", 80),
        ("  NVIDIA_A100_SXM4_80GB  ", "a100", 80),
        ("H100 80GB HBM3", "h100", 80),
    ],
)
def test_match_product_real_strings(text: str, type_: str, memory: int) -> None:
    sku = match_product(text)
    assert sku is not None, text
    assert (sku.type, sku.memory_gib) == (type_, memory), (text, sku)


def test_match_product_distinguishes_form_factor() -> None:
    assert match_product("NVIDIA A100-SXM4-80GB").id == "a100-sxm4-80gb"
    assert match_product("NVIDIA A100 80GB PCIe").id == "a100-pcie-80gb"
    assert match_product("NVIDIA-A100-PCIE-40GB").id == "a100-pcie-40gb"
    assert match_product("NVIDIA H100 NVL").id == "h100-nvl"
    assert match_product("NVIDIA H100 PCIe").id == "h100-pcie-80gb"


@pytest.mark.parametrize(
    "text",
    ["", "   ", "foo", "nvidia-tesla-k80", "NVIDIA GeForce RTX 4090", "NVIDIA-A10X", "nvidia-h100-40gb", "A100-SXM4"],
)
def test_match_product_unknown_is_none(text: str) -> None:
    assert match_product(text) is None


def test_ambiguous_generic_name_needs_memory() -> None:
    # Karpenter's `a100` covers p4d (40 GiB) and p4de (80 GiB).
    assert match_product("a100") is None
    assert match_product("a100", memory_mib=40960).memory_gib == 40
    assert match_product("a100", memory_mib=81920).memory_gib == 80
    assert match_product("v100", memory_mib=16384).memory_gib == 16
    assert match_product("v100", memory_mib=32768).memory_gib == 32
    assert match_product("a100", memory_mib=2048) is None  # no candidate within tolerance


def test_mig_profiles_and_resource_name() -> None:
    a100_80 = match_product("NVIDIA A100-SXM4-80GB")
    assert a100_80.mig_capable and "1g.10gb" in a100_80.mig_profiles and "7g.80gb" in a100_80.mig_profiles
    assert "1g.5gb" in match_product("NVIDIA A100-SXM4-40GB").mig_profiles
    assert "7g.141gb" in match_product("NVIDIA H200").mig_profiles
    assert not match_product("Tesla T4").mig_capable
    assert catalog.mig_resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"


# --------------------------------------------------------------------------- instance types


@pytest.mark.parametrize(
    ("instance_type", "type_", "memory", "count"),
    [
        ("p4d.24xlarge", "a100", 40, 8),
        ("p4de.24xlarge", "a100", 80, 8),
        ("p3.2xlarge", "v100", 16, 1),
        ("p3.8xlarge", "v100", 16, 4),
        ("p3.16xlarge", "v100", 16, 8),
        ("p3dn.24xlarge", "v100", 32, 8),
        ("p5.48xlarge", "h100", 80, 8),
        ("p5e.48xlarge", "h200", 141, 8),
        ("p5en.48xlarge", "h200", 141, 8),
        ("p6-b200.48xlarge", "b200", 180, 8),
        ("g4dn.xlarge", "t4", 16, 1),
        ("g4dn.12xlarge", "t4", 16, 4),
        ("g4dn.16xlarge", "t4", 16, 1),
        ("g4dn.metal", "t4", 16, 8),
        ("g5.xlarge", "a10g", 24, 1),
        ("g5.12xlarge", "a10g", 24, 4),
        ("g5.24xlarge", "a10g", 24, 4),
        ("g5.48xlarge", "a10g", 24, 8),
        ("g6.xlarge", "l4", 24, 1),
        ("g6.48xlarge", "l4", 24, 8),
        ("g6e.xlarge", "l40s", 48, 1),
        ("g6e.12xlarge", "l40s", 48, 4),
        ("g6e.48xlarge", "l40s", 48, 8),
        ("a2-highgpu-1g", "a100", 40, 1),
        ("a2-highgpu-8g", "a100", 40, 8),
        ("a2-megagpu-16g", "a100", 40, 16),
        ("a2-ultragpu-1g", "a100", 80, 1),
        ("a2-ultragpu-8g", "a100", 80, 8),
        ("a3-highgpu-8g", "h100", 80, 8),
        ("a3-megagpu-8g", "h100", 80, 8),
        ("a3-ultragpu-8g", "h200", 141, 8),
        ("a4-highgpu-8g", "b200", 180, 8),
        ("g2-standard-4", "l4", 24, 1),
        ("g2-standard-24", "l4", 24, 2),
        ("g2-standard-96", "l4", 24, 8),
        ("Standard_NC24ads_A100_v4", "a100", 80, 1),
        ("Standard_NC96ads_A100_v4", "a100", 80, 4),
        ("Standard_ND96asr_v4", "a100", 40, 8),
        ("Standard_ND96amsr_A100_v4", "a100", 80, 8),
        ("Standard_ND96isr_H100_v5", "h100", 80, 8),
        ("Standard_NC40ads_H100_v5", "h100-nvl", 94, 1),
        ("Standard_NC80adis_H100_v5", "h100-nvl", 94, 2),
        ("Standard_NV36ads_A10_v5", "a10", 24, 1),
        ("Standard_ND96isr_H200_v5", "h200", 141, 8),
        ("standard_nd96isr_h200_v5", "h200", 141, 8),  # case-insensitive
        ("BM.GPU.A100-v2.8", "a100", 80, 8),
        ("BM.GPU4.8", "a100", 40, 8),
        ("BM.GPU.H100.8", "h100", 80, 8),
        ("VM.GPU.A10.1", "a10", 24, 1),
        ("VM.GPU.A10.2", "a10", 24, 2),
    ],
)
def test_match_instance_type(instance_type: str, type_: str, memory: int, count: int) -> None:
    got = match_instance_type(instance_type)
    assert got is not None, instance_type
    sku, n = got
    assert (sku.type, sku.memory_gib, n) == (type_, memory, count)


@pytest.mark.parametrize(
    "instance_type",
    ["m5.large", "n1-standard-4", "", "Standard_D4s_v5", "Standard_NV6ads_A10_v5", "g6f.large", "g4-standard-6"],
)
def test_match_instance_type_unknown_or_fractional_is_none(instance_type: str) -> None:
    assert match_instance_type(instance_type) is None


def test_fractional_instance_types_are_recorded() -> None:
    info = catalog.instance_type_info("Standard_NV6ads_A10_v5")
    assert info is not None and info.fraction is not None and 0 < info.fraction < 1


# --------------------------------------------------------------------------- node evidence


def test_evidence_gfd_first_with_count() -> None:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81920",
        "node.kubernetes.io/instance-type": "p4de.24xlarge",
        "feature.node.kubernetes.io/pci-10de.present": "true",
    }
    ev = gpu_evidence_from_labels(labels)
    assert [e.source for e in ev] == ["gfd", "instance-type", "nfd"]
    assert ev[0].sku.id == "a100-sxm4-80gb" and ev[0].count == 8 and ev[0].raw == "NVIDIA-A100-SXM4-80GB"
    assert ev[1].count == 8 and ev[1].sku.memory_gib == 80
    assert ev[2].sku is None and ev[2].count is None
    assert node_has_gpus(labels) == ev[0]


def test_evidence_mig_single_count_is_not_gpu_count() -> None:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "56",
        "nvidia.com/gpu.memory": "4864",
    }
    (ev,) = gpu_evidence_from_labels(labels)
    assert ev.sku.id == "a100-sxm4-40gb" and ev.count is None


def test_evidence_gke() -> None:
    ev = gpu_evidence_from_labels({"cloud.google.com/gke-accelerator": "nvidia-h100-80gb", "node.kubernetes.io/instance-type": "a3-highgpu-8g"})
    assert [e.source for e in ev] == ["gke-accelerator", "instance-type"]
    assert ev[0].sku.type == "h100" and ev[0].count is None
    assert ev[1].count == 8
    ev = gpu_evidence_from_labels(
        {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "cloud.google.com/gke-accelerator-count": "2"}
    )
    assert ev[0].count == 2 and ev[0].sku.type == "t4"


def test_evidence_karpenter_disambiguates_by_memory() -> None:
    labels = {
        "karpenter.k8s.aws/instance-gpu-name": "a100",
        "karpenter.k8s.aws/instance-gpu-count": "8",
        "karpenter.k8s.aws/instance-gpu-memory": "40960",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
    }
    (ev,) = gpu_evidence_from_labels(labels)
    assert ev.source == "karpenter" and ev.count == 8 and ev.sku.memory_gib == 40


def test_evidence_beta_instance_type_and_dedup() -> None:
    ev = gpu_evidence_from_labels(
        {"node.kubernetes.io/instance-type": "g5.xlarge", "beta.kubernetes.io/instance-type": "g5.xlarge"}
    )
    assert len(ev) == 1 and ev[0].sku.type == "a10g"
    ev = gpu_evidence_from_labels({"beta.kubernetes.io/instance-type": "g4dn.metal"})
    assert ev[0].count == 8


def test_evidence_presence_only_labels() -> None:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.device-plugin": "false"}
    ev = gpu_evidence_from_labels(labels)
    assert all(e.source == "nfd" and e.sku is None for e in ev) and len(ev) == 2
    best = node_has_gpus(labels)
    assert best is not None and best.sku is None


def test_unknown_product_still_evidence_and_sku_first() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-Some-Future-GPU", "node.kubernetes.io/instance-type": "g6.xlarge"}
    ev = gpu_evidence_from_labels(labels)
    assert ev[0].source == "gfd" and ev[0].sku is None
    assert node_has_gpus(labels).source == "instance-type"


def test_no_gpu_labels() -> None:
    labels = {"node.kubernetes.io/instance-type": "m5.large", "kubernetes.io/os": "linux"}
    assert gpu_evidence_from_labels(labels) == []
    assert node_has_gpus(labels) is None
    assert node_has_gpus({}) is None


def test_fractional_instance_type_is_evidence_without_sku() -> None:
    (ev,) = gpu_evidence_from_labels({"node.kubernetes.io/instance-type": "Standard_NV12ads_A10_v5"})
    assert ev.source == "instance-type" and ev.sku is None and ev.count is None


def test_evidence_sources_are_known() -> None:
    labels = {
        "nvidia.com/gpu.product": "Tesla-T4",
        "cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
        "karpenter.k8s.aws/instance-gpu-name": "t4",
        "node.kubernetes.io/instance-type": "g4dn.xlarge",
        "feature.node.kubernetes.io/pci-10de.present": "true",
    }
    for ev in gpu_evidence_from_labels(labels):
        assert isinstance(ev, GpuEvidence) and ev.source in catalog.EVIDENCE_SOURCES


# --------------------------------------------------------------------------- resources and plugins


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
        "amd.com/gpu",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
        "habana.ai/gaudi",
        "nvidia.com/mig-1g.5gb",
        "nvidia.com/mig-3g.40gb",
        "nvidia.com/mig-1g.10gb.me",
        "nvidia.com/mig-7g.141gb",
        "nvidia.com/mig-1g.5gb.shared",
    ],
)
def test_is_gpu_resource(name: str) -> None:
    assert is_gpu_resource(name)


@pytest.mark.parametrize(
    "name", ["cpu", "memory", "nvidia.com/mig", "nvidia.com/mig-foo", "nvidia.com/gpux", "example.com/gpu", ""]
)
def test_is_not_gpu_resource(name: str) -> None:
    assert not is_gpu_resource(name)


def test_gpu_resource_names() -> None:
    names = gpu_resource_names()
    for n in ("nvidia.com/gpu", "nvidia.com/gpu.shared", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe", "habana.ai/gaudi"):
        assert n in names
    assert len(names) == len(set(names))


def test_device_plugin_selectors() -> None:
    kinds = device_plugin_selectors()
    by_name = {k.name: k for k in kinds}
    assert len(by_name) == len(kinds)
    assert by_name["nvidia-gpu-operator"].label_selector == "app=nvidia-device-plugin-daemonset"
    assert by_name["nvidia-device-plugin-static"].label_selector == "name=nvidia-device-plugin-ds"
    assert by_name["nvidia-device-plugin-static"].container == "nvidia-device-plugin-ctr"
    gke = by_name["gke-nvidia-gpu-device-plugin"]
    assert gke.label_selector == "k8s-app=nvidia-gpu-device-plugin" and gke.namespaces == ("kube-system",)
    assert by_name["volcano-device-plugin"].label_selector == "name=volcano-device-plugin"
    for k in kinds:
        assert re.fullmatch(r"[A-Za-z0-9./_-]+=[A-Za-z0-9._-]+(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]+)*", k.label_selector), k
        assert k.source.strip() and k.resources
        for r in k.resources:
            assert is_gpu_resource(r) or r.endswith("*") or r.startswith("volcano.sh/"), (k.name, r)


# --------------------------------------------------------------------------- data integrity


def _aliases(entry: dict) -> list[str]:
    a = entry.get("aliases") or {}
    return [v for vals in a.values() for v in (vals or [])] if isinstance(a, dict) else list(a)


def test_every_entry_has_a_source() -> None:
    for e in SKUS["skus"]:
        assert str(e.get("source", "")).strip(), e["id"]
    for e in SKUS.get("generic_names") or []:
        assert str(e.get("source", "")).strip(), e["name"]
    for e in SKUS["instance_types"]:
        assert str(e.get("source", "")).strip(), e["name"]
    for section in ("device_plugins", "node_gpu_labels", "embedded_device_plugins"):
        for e in PLUGINS[section]:
            assert str(e.get("source", "")).strip(), e
    for e in PLUGINS["gpu_resources"]["names"] + PLUGINS["gpu_resources"]["patterns"]:
        assert str(e.get("source", "")).strip(), e


def test_ids_are_unique_and_fields_valid() -> None:
    ids = [e["id"] for e in SKUS["skus"]]
    assert len(ids) == len(set(ids))
    for e in SKUS["skus"]:
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", e["id"]), e["id"]
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", e["type"]), e["type"]
        assert e["vendor"] in {"nvidia", "amd", "intel", "habana"}
        assert isinstance(e["memory_gib"], int) and e["memory_gib"] > 0
        assert isinstance(e.get("verified"), bool), e["id"]
        mig = e["mig"]
        assert isinstance(mig["capable"], bool)
        if mig["profiles"]:
            assert mig["capable"], e["id"]
        for p in mig["profiles"]:
            assert re.fullmatch(r"[0-9]+g\.[0-9]+gb(\+me)?", p), (e["id"], p)
            assert is_gpu_resource(catalog.mig_resource_name(p)), p
        if e["vendor"] == "nvidia":
            assert e["family"] in {"pascal", "volta", "turing", "ampere", "ada-lovelace", "hopper", "blackwell"}
    assert len({e["name"] for e in SKUS["instance_types"]}) == len(SKUS["instance_types"])


def test_no_alias_maps_to_two_skus() -> None:
    owner: dict[str, str] = {}
    for e in SKUS["skus"]:
        for alias in _aliases(e):
            key = _norm(alias)
            assert key, (e["id"], alias)
            assert owner.setdefault(key, e["id"]) == e["id"], (alias, owner[key], e["id"])
    for g in SKUS.get("generic_names") or []:
        assert _norm(g["name"]) not in owner, g["name"]


def test_every_alias_resolves_to_its_own_sku() -> None:
    for e in SKUS["skus"]:
        for alias in _aliases(e):
            sku = match_product(alias)
            assert sku is not None and sku.id == e["id"], (alias, e["id"], sku)


def test_every_instance_type_names_an_existing_sku() -> None:
    ids = {e["id"] for e in SKUS["skus"]}
    for it in SKUS["instance_types"]:
        assert it["sku"] in ids, it
        assert isinstance(it["gpus"], int) and it["gpus"] >= 1, it
        if "fraction" in it:
            assert 0 < it["fraction"] < 1, it
    for g in SKUS.get("generic_names") or []:
        assert set(g["candidates"]) <= ids, g


def test_required_coverage() -> None:
    types = {e["type"] for e in SKUS["skus"]}
    for t in ("v100", "t4", "a10", "a10g", "a30", "a40", "a100", "a800", "l4", "l40", "l40s", "h100", "h100-nvl",
              "h800", "h200", "gh200", "b200", "gb200", "mi300x"):
        assert t in types, t
    names = {e["name"] for e in SKUS["instance_types"]}
    for n in ("p3.2xlarge", "p3.8xlarge", "p3.16xlarge", "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge",
              "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "a2-highgpu-1g", "a2-megagpu-16g", "a2-ultragpu-8g",
              "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g", "Standard_NC24ads_A100_v4",
              "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5", "Standard_NC40ads_H100_v5",
              "Standard_NV36ads_A10_v5", "Standard_ND96isr_H200_v5", "BM.GPU.A100-v2.8", "BM.GPU4.8", "BM.GPU.H100.8",
              "VM.GPU.A10.1", "VM.GPU.A10.2"):
        assert n in names, n


def test_label_roles_used_by_code_exist() -> None:
    for role in ("gfd-product", "gfd-count", "gfd-memory", "gke-accelerator", "gke-accelerator-count",
                 "karpenter-gpu-name", "karpenter-gpu-count", "karpenter-gpu-memory", "instance-type",
                 "instance-type-beta", "nfd-nvidia-pci", "operator-gpu-present", "operator-deploy-device-plugin"):
        assert catalog.label_key(role)


def test_sku_dataclass_shape() -> None:
    sku = match_product("NVIDIA H200")
    assert isinstance(sku, Sku)
    assert sku.id == "h200" and sku.vendor == "nvidia" and sku.family == "hopper" and sku.source
    assert isinstance(sku.mig_profiles, tuple)


def test_catalog_does_not_import_kubernetes() -> None:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(catalog))
    imported = {n.names[0].name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "kubernetes" not in imported
