"""Output a person can read and copy: every view of every scenario, at 80 and 60
columns and piped.

No line ends in padding; wrapped prose keeps its indent; commands are never split;
``-o wide`` off a terminal is not hundreds of columns; YAML snippets are not
commands; JSON keys are camelCase (snake_case v1 keys kept as aliases); CSV booleans
are ``true``/``false``."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from conftest import ROOT, argv_of, expected_of, scenario_dirs, snapshot_of

DEMO = str(ROOT / "examples" / "demo-cluster")
CASES = [(sc.name, [*argv_of(expected_of(sc)), "--snapshot", str(snapshot_of(sc))]) for sc in scenario_dirs()] + [
    ("demo-pending", ["diagnose", "pending", "-A", "--snapshot", DEMO]),
    ("demo-capacity", ["nodes", "capacity", "--snapshot", DEMO]),
    ("demo-vllm", ["diagnose", "pod", "vllm-7b-5c8d-pq2lm", "-n", "inference", "--snapshot", DEMO]),
]


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("columns", ["80", "60"])
def test_no_padding_and_wrapped_lines_keep_their_indent(cli, monkeypatch, name, argv, columns):
    monkeypatch.setenv("COLUMNS", columns)
    for view in ("table", "wide", "markdown"):
        r = cli(*argv, "-o", view)
        assert r.code in (0, 1), r.err
        for line in r.out.splitlines():
            assert line == line.rstrip(), f"{view}: trailing padding in {line!r}"
        if view == "table" and argv[0] == "diagnose" and argv[1] != "pending":
            body = r.out.split("\n\n", 1)[1] if "\n\n" in r.out else ""
            for line in body.splitlines():
                if not line or line.startswith(("Root cause:", "Other findings", "Checks:", "No ", " ")):
                    continue
                assert re.match(r"\d+\. ", line) or line.endswith(("found.", "read.", "findings.")), \
                    f"a wrapped line lost its indent: {line!r}"


@pytest.mark.parametrize("name,argv", CASES[:-2], ids=[c[0] for c in CASES[:-2]])
def test_commands_print_whole_and_snippets_are_not_commands(cli, monkeypatch, name, argv):
    monkeypatch.setenv("COLUMNS", "60")
    doc = cli(*argv, "-o", "json").json()
    fixes = [fx for f in doc.get("findings", []) for fx in f["fixes"]]
    table = cli(*argv, "-o", "wide").out
    md = cli(*argv, "-o", "markdown").out
    for fx in fixes:
        for cmd in fx["commands"]:
            assert "\n" not in cmd, f"a command spans lines: {cmd!r}"
            assert not cmd.lstrip().startswith(("tolerations:", "- key:")), f"YAML in commands: {cmd!r}"
            assert any(line.strip() == cmd for line in table.splitlines()), f"command split or missing: {cmd}"
            assert not any(line.startswith("$ ") for line in table.splitlines())
        for snippet in fx.get("snippets", []):
            block = re.search(r"```yaml\n(.*?)```", md, re.S)
            assert block and snippet.splitlines()[0] in block.group(1)
        sh = "\n".join(re.findall(r"```sh\n(.*?)```", md, re.S))
        assert "tolerations:" not in sh


def test_wide_output_off_a_terminal_uses_columns_or_120(cli, monkeypatch):
    argv = ["diagnose", "pod", "llama-finetune-0", "-n", "ml-research", "--snapshot", DEMO, "-o", "wide"]
    monkeypatch.delenv("COLUMNS")
    lines = cli(*argv).out.splitlines()
    table = [line for line in lines if "│" in line]
    assert table and max(len(line) for line in table) <= 120
    monkeypatch.setenv("COLUMNS", "150")
    assert max(len(line) for line in cli(*argv).out.splitlines() if "│" in line) <= 150


def test_no_empty_counts_and_no_list_of_zeros(cli):
    for name, argv in CASES:
        out = cli(*argv).out
        assert "Only 0 " not in out, name
        assert not re.search(r"(=0, [^,]+=0, )", out), f"{name}: a list of nodes with nothing free"
        assert not re.search(r"^Checks: *$", out, re.M), name


def test_a_node_blocked_twice_is_listed_once_with_both_reasons(cli):
    doc = cli("diagnose", "pod", "llama-finetune-0", "-n", "ml-research", "--snapshot", DEMO, "-o", "json").json()
    node = "ip-10-42-50-173.us-west-2.compute.internal"
    lines = [e for f in doc["findings"] for e in f["evidence"] if node in e]
    # outside the pool the pod names (gpu-type=h100) and cordoned: one line, both reasons
    assert len(lines) == 1 and "cordoned" in lines[0] and "gpu-type=h100" in lines[0], lines


def _keys(doc, out=None):
    out = set() if out is None else out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(k)
            if k not in ("labels", "free_histogram", "freeHistogram", "free", "requests", "operands", "drivers",
                         "apply", "annotations"):
                _keys(v, out)
    elif isinstance(doc, list):
        for v in doc:
            _keys(v, out)
    return out


@pytest.mark.parametrize("argv", [
    ["nodes", "capacity", "--snapshot", DEMO],
    ["diagnose", "pending", "-A", "--snapshot", DEMO],
    ["diagnose", "pod", "llama-finetune-0", "-n", "ml-research", "--snapshot", DEMO],
    ["label-nodes", "--snapshot", DEMO],
], ids=["capacity", "pending", "diagnosis", "labels"])
def test_json_keys_are_camel_case_with_snake_aliases(cli, argv):
    r = cli(*argv, "-o", "json")
    keys = _keys(r.json())
    for k in keys:
        if "_" in k:
            camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k)
            assert camel in keys, f"{k} has no camelCase twin"


def test_capacity_keeps_the_v1_snake_case_keys_as_aliases(cli):
    pool = cli("nodes", "capacity", "--snapshot", DEMO, "-o", "json").json()["pools"][0]
    frag = pool["fragmentation"]
    assert frag["largestFreeBlock"] == frag["largest_free_block"]
    assert frag["freeHistogram"] == frag["free_histogram"]


def test_csv_booleans_are_lowercase(cli):
    rows = list(csv.DictReader(io.StringIO(cli("nodes", "capacity", "--snapshot", DEMO, "-o", "csv").out)))
    assert rows and {r["schedulable"] for r in rows} <= {"true", "false"} and {r["ready"] for r in rows} <= {"true", "false"}


@pytest.mark.parametrize("view", ["json", "yaml", "markdown", "table"])
def test_runbook_list_and_one_runbook_in_every_format(cli, view):
    assert cli("runbook", "-o", view).code == 0
    r = cli("runbook", "untolerated-taint", "-o", view)
    assert r.code == 0 and "untolerated" in r.out


def test_runbook_code_blocks_are_not_hard_wrapped(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out = cli("runbook", "untolerated-taint").out
    long = "kubectl get nodes -o custom-columns='NAME:.metadata.name,GPU:.status.allocatable.nvidia\\.com/gpu,TAINTS:.spec.taints[*].key'"
    assert any(line.strip() == long for line in out.splitlines())


def test_runbook_refuses_wide(cli):
    r = cli("runbook", "-o", "wide")
    assert r.code == 2


def test_each_command_describes_its_own_output_values(cli):
    helps = {c: " ".join(cli(*c.split(), "-h").out.split()) for c in ("diagnose pod", "diagnose node", "diagnose pending",
                                                    "nodes capacity", "runbook", "label-nodes")}
    assert "csv" in helps["nodes capacity"] and "taints and labels" in helps["nodes capacity"]
    assert "csv" not in helps["diagnose pod"].split("--output")[1].split("--")[0]
    assert "every pod and every fix" in helps["diagnose pending"]
    assert "every check" in helps["diagnose node"]
    assert "wide" not in helps["runbook"].split("--output")[1].split("--")[0]
