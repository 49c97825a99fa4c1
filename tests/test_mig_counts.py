"""gpu-count-mismatch on MIG nodes: the expected device count comes from GFD's
labels (single: nvidia.com/gpu.count is overridden with the number of MIG devices;
mixed: nvidia.com/mig-<profile>.count per profile, times .replicas), per the GFD
README's "MIG 'single' strategy" / "MIG 'mixed' strategy" tables."""

from __future__ import annotations

import json

import pytest

from conftest import SCENARIOS

BASE = SCENARIOS / "node-mig-count-mismatch" / "snapshot" / "cluster.json"


def _cluster(tmp_path, edit):
    doc = json.loads(BASE.read_text())
    node = next(o for o in doc["items"] if o["kind"] == "Node" and o["metadata"]["name"] == "gpu-a100-mig-2")
    edit(node["metadata"]["labels"], node["status"])
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    return path


def _single(labels, status, count="56", advertised="49", product="A100-SXM4-80GB-MIG-1g.10gb"):
    for k in [k for k in labels if k.startswith("nvidia.com/mig-")]:
        del labels[k]
    labels.update({"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": product,
                   "nvidia.com/gpu.count": count, "nvidia.com/mig.config": "all-1g.10gb"})
    for key in ("capacity", "allocatable"):
        for r in [r for r in status[key] if r.startswith("nvidia.com/mig-")]:
            del status[key][r]
        status[key]["nvidia.com/gpu"] = advertised


def _codes(cli, path):
    r = cli("diagnose", "node", "gpu-a100-mig-2", "--snapshot", str(path), "-o", "json")
    return r, [f["code"] for f in r.json()["findings"]]


def test_single_strategy_counts_mig_devices(cli, tmp_path):
    r, codes = _codes(cli, _cluster(tmp_path, _single))
    assert codes[0] == "gpu-count-mismatch"
    f = r.json()["findings"][0]
    assert f["summary"].startswith("gpu-a100-mig-2 advertises 49 of the 56 nvidia.com/gpu MIG devices")
    assert "GFD nvidia.com/gpu.count=56 (MIG devices, single strategy)" in f["evidence"][0]
    gpus = {g["resource"]: g for g in r.json()["target"]["gpus"]}
    assert gpus["nvidia.com/gpu"]["expected"] == 56


def test_single_strategy_in_step_and_invalid_are_quiet(cli, tmp_path):
    _, codes = _codes(cli, _cluster(tmp_path, lambda l, s: _single(l, s, advertised="56")))
    assert "gpu-count-mismatch" not in codes
    # -MIG-INVALID: GFD sets gpu.count=0 and nothing is comparable
    _, codes = _codes(cli, _cluster(tmp_path, lambda l, s: _single(l, s, count="0", advertised="0",
                                                                   product="A100-SXM4-80GB-MIG-INVALID")))
    assert "gpu-count-mismatch" not in codes


@pytest.mark.parametrize("replicas,advertised,flagged", [("1", "24", False), ("2", "24", True), ("2", "48", False)])
def test_mixed_strategy_replicas_multiply_the_count(cli, tmp_path, replicas, advertised, flagged):
    def edit(labels, status):
        labels["nvidia.com/mig-1g.10gb.replicas"] = replicas
        for key in ("capacity", "allocatable"):
            status[key]["nvidia.com/mig-1g.10gb"] = advertised

    _, codes = _codes(cli, _cluster(tmp_path, edit))
    assert ("gpu-count-mismatch" in codes) is flagged


def test_mig_layout_still_being_applied_is_not_a_root_cause(cli, tmp_path):
    def edit(labels, status):
        labels["nvidia.com/mig.config.state"] = "pending"
        for key in ("capacity", "allocatable"):
            status[key]["nvidia.com/mig-2g.20gb"] = "8"

    r, codes = _codes(cli, _cluster(tmp_path, edit))
    f = next(f for f in r.json()["findings"] if f["code"] == "gpu-count-mismatch")
    assert "still applying the layout" in f["summary"]
