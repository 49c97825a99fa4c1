"""kubectl's habits on the demo: argv rewriting, target forms and "did you mean"
(tests/test_kubectl_habits.py has the live and failure cases)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, SCENARIOS, snapshot_of
from gpuctl.cli.app import kubectl_argv

DEMO = str(ROOT / "examples" / "demo-cluster")
TAINT = SCENARIOS / "untolerated-taint"


@pytest.mark.parametrize("given,want", [
    (["diagnose", "pod", "x", "-o=json", "-n=ml"], ["diagnose", "pod", "x", "-o", "json", "-n", "ml"]),
    (["-n", "ml", "diagnose", "pod", "x"], ["diagnose", "pod", "-n", "ml", "x"]),
    (["--context=prod", "-o", "json", "nodes", "capacity"], ["nodes", "capacity", "--context=prod", "-o", "json"]),
    (["--debug", "-A", "diagnose", "pending"], ["--debug", "diagnose", "pending", "-A"]),
    (["--version"], ["--version"]),
    (["diagnose", "pod", "--", "-o=x"], ["diagnose", "pod", "--", "-o=x"]),
    (["-n", "ml", "nosuch"], ["-n", "ml", "nosuch"]),
])
def test_argv_is_rewritten_as_click_reads_it(given, want):
    assert kubectl_argv(given) == want


def test_equals_forms_and_options_before_the_command(cli):
    a = cli("diagnose", "pod", "llama-finetune-0", "-n=ml-research", "-o=json", "--snapshot", DEMO)
    b = cli("-n", "ml-research", "--snapshot", DEMO, "-o", "json", "diagnose", "pod", "llama-finetune-0")
    c = cli("--snapshot=" + DEMO, "nodes", "capacity", "-o=csv")
    assert a.code == b.code == 1, (a.err, b.err)
    assert json.loads(a.out)["findings"][0]["code"] == json.loads(b.out)["findings"][0]["code"] == "gpu-fragmentation"
    assert c.code == 0 and c.out.startswith("node,pool,")


@pytest.mark.parametrize("target,extra", [
    ("ml-research/llama-finetune-0", []),
    ("pod/llama-finetune-0", ["-n", "ml-research"]),
    ("llama-finetune-0", ["-A"]),
])
def test_target_forms_kubectl_prints(cli, target, extra):
    r = cli("diagnose", "pod", target, *extra, "--snapshot", DEMO, "-o", "json")
    assert r.code == 1, r.err
    assert json.loads(r.out)["target"]["name"] == "llama-finetune-0"


def test_kind_group_name_as_kubectl_get_o_name_prints(cli):
    plain = cli("diagnose", "pod", "job/rlhf-reward-model", "-n", "ml-research", "--snapshot", str(snapshot_of(TAINT)))
    grouped = cli("diagnose", "pod", "job.batch/rlhf-reward-model", "-n", "ml-research", "--snapshot", str(snapshot_of(TAINT)))
    assert plain.code == grouped.code and plain.out == grouped.out


def test_namespace_twice_and_differently_is_a_usage_error(cli):
    r = cli("diagnose", "pod", "ml-research/llama-finetune-0", "-n", "inference", "--snapshot", DEMO)
    assert r.code == 2 and "-n says inference" in r.err


def test_all_namespaces_not_found_and_ambiguous(cli, tmp_path):
    assert cli("diagnose", "pod", "-A", "nope", "--snapshot", DEMO).code == 3
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "twin", "namespace": "a"},
           "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}}
    other = json.loads(json.dumps(pod))
    other["metadata"]["namespace"] = "b"
    (tmp_path / "dump.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, other]}))
    r = cli("diagnose", "pod", "-A", "twin", "--snapshot", str(tmp_path / "dump.json"))
    assert r.code == 2 and "a/twin" in r.err and "b/twin" in r.err


@pytest.mark.parametrize("argv,hint", [
    (["diagnose", "node", "ip-10-42-50-173"], "ip-10-42-50-173.us-west-2.compute.internal"),
    (["diagnose", "pod", "llama-finetune", "-n", "ml-research"], "statefulset/llama-finetune"),
    (["diagnose", "pod", "llama-finetun-0", "-n", "ml-research"], "llama-finetune-0"),
    (["diagnose", "pod", "bert-train-7d9f", "-n", "ml-research"], "bert-train-7d9f-x2k4q"),
])
def test_did_you_mean(cli, argv, hint):
    r = cli(*argv, "--snapshot", DEMO)
    assert r.code == 3 and hint in r.err, r.err


def test_live_all_namespaces_and_context_equals(cli, serve):
    srv, kc = serve(snapshot_of(TAINT))
    r = cli("diagnose", "pod", "-A", "rlhf-reward-model-2kfjd", "--kubeconfig", kc, "--context=incident", "-o", "json")
    assert r.code == 1, r.err
    assert json.loads(r.out)["target"]["namespace"] == "ml-research"
    assert any(q.path == "/api/v1/pods" and q.query.get("fieldSelector") == ["metadata.name=rlhf-reward-model-2kfjd"]
               for q in srv.requests)
