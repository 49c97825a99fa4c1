"""The bundled demo the README runs: each Pending pod gets its intended cause,
from the snapshot directory and from the plain kubectl dump alike."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

EXPECTED = json.loads((ROOT / "examples" / "demo-cluster.expected.json").read_text())
CASES = EXPECTED["cases"]


@pytest.mark.parametrize("source", ["examples/demo-cluster", "examples/kubectl-dump.json"])
@pytest.mark.parametrize("case", CASES, ids=[c["pod"] for c in CASES])
def test_demo_pods(cli, case, source):
    ns, name = case["pod"].split("/", 1)
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(ROOT / source), "-o", "json")
    doc = r.json()
    assert r.code == case["exit_code"]
    assert doc["verdict"] == case["verdict"]
    assert doc["findings"][0]["code"] == case["top_code"]
    text = " ".join([doc["findings"][0]["summary"], *doc["findings"][0]["evidence"]])
    for needle in case.get("evidence", []):
        assert needle in text


def test_readme_demo_command_is_the_first_case():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(block) == 2
    ns, name = CASES[0]["pod"].split("/", 1)
    assert f"gpuctl diagnose pod {name} -n {ns} --snapshot demo" in block[0]
    assert "pytest" in block[1]
