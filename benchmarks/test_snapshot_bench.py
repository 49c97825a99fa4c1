"""Smoke tests of the offline-snapshot benchmark's tooling (no timings asserted)."""

from __future__ import annotations

import json

from benchmarks import snapshot_bench as B
from gpuctl.collect.files import load_snapshot, need_for


def test_list_files_and_floors(tmp_path):
    data = B.write_lists(tmp_path, 12, 400)
    assert {p.name for p in (tmp_path / "lists").iterdir()} == {"nodes.json", "pods.json", "other.json", "snapshot.json"}
    for src in (data["dir"], data["tgz"]):
        assert B.floor_read(src)["objects"] > 400
        snap = load_snapshot(src, need_for("collect_cluster", {}))
        assert len(snap.nodes) == 12 and len(snap.pods) == 400
    out = tmp_path / "floor.tar.gz"
    assert B.floor_gzip(data["dir"], str(out))["bytes"] > 0


def test_table_lists_each_measurement_once():
    rows = [{"label": "a", "wall_s": 1.0, "cpu_s": 1.5, "peak_mb": 10}, {"label": "a", "wall_s": 2.0, "cpu_s": 2.5, "peak_mb": 12},
            {"label": "b", "wall_s": 3.0, "cpu_s": 0.5, "peak_mb": 1}]
    text = B.table(rows)
    assert text.count("| a |") == 1 and "| b |" in text and json.dumps(rows)
    assert "| a | 2.00 s | 1.00 s | 2.50 s | 12 MB |" in text
