"""Shell completion: the scripts in completions/ are current, names complete from
the cluster (and silently to nothing when it is unreachable), `kubectl gpu <TAB>`
answers in Cobra's format, and `kubectl plugin list` finds the plugin."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from types import SimpleNamespace

from conftest import ROOT, SCENARIOS, snapshot_of
from gpuctl.cli import complete


def test_completion_scripts_are_current():
    for shell in complete.SHELLS:
        path = ROOT / "completions" / f"gpuctl.{shell}"
        assert path.read_text() == complete.script(shell), \
            f"{path} is stale: run python -m gpuctl.cli.complete --write"


def _ctx(**params):
    return SimpleNamespace(params=params, parent=None)


def test_dynamic_names_from_the_cluster(serve):
    srv, kc = serve(snapshot_of(SCENARIOS / "untolerated-taint"))
    pods = complete.complete_pod(_ctx(kubeconfig=kc, namespace="ml-research"), "")
    assert pods and all(isinstance(p, str) for p in pods)
    first = pods[0]
    assert complete.complete_pod(_ctx(kubeconfig=kc, namespace="ml-research"), first[:4]) == \
        [p for p in pods if p.startswith(first[:4])]
    assert "gpu-a100-1" in complete.complete_node(_ctx(kubeconfig=kc), "gpu-a100")
    assert complete.complete_runbook("gpu-") == ["gpu-fragmentation", "gpu-unhealthy", "gpu-count-mismatch",
                                                  "gpu-not-requested", "gpu-memory-exhausted"] or \
        set(complete.complete_runbook("gpu-")) >= {"gpu-fragmentation", "gpu-unhealthy"}


def test_unreachable_cluster_completes_to_nothing_quickly(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kc"
    kc.write_text('{"apiVersion": "v1", "kind": "Config", "current-context": "x", '
                  f'"clusters": [{{"name": "c", "cluster": {{"server": "http://127.0.0.1:{port}"}}}}], '
                  '"users": [{"name": "u", "user": {"token": "t"}}], '
                  '"contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}')
    start = time.monotonic()
    assert complete.complete_node(_ctx(kubeconfig=str(kc)), "") == []
    assert complete.complete_pod(_ctx(kubeconfig=str(tmp_path / "missing")), "") == []
    assert time.monotonic() - start < 10
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""


def test_kubectl_plugin_completion_speaks_cobra(capsys):
    complete.kubectl_complete(["diagnose", ""])
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == ":4"
    assert {ln.split("\t")[0] for ln in lines[:-1]} >= {"pod", "node", "pending"}
    complete.kubectl_complete(["runbook", "untolerated"])
    assert capsys.readouterr().out.splitlines() == ["untolerated-taint", ":4"]


def test_kubectl_plugin_list_finds_gpuctl():
    """After `pip install .`, `kubectl-gpu` and `kubectl_complete-gpu` are on PATH next to
    the interpreter's scripts; kubectl (when installed) lists the plugin."""
    from importlib.metadata import entry_points

    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts") if "gpu" in ep.name}
    assert scripts.get("kubectl-gpu") == "gpuctl.cli.app:run"
    assert scripts.get("kubectl_complete-gpu") == "gpuctl.cli.complete:run_kubectl_complete"
    plugin = shutil.which("kubectl-gpu")
    kubectl = shutil.which("kubectl")
    if plugin and kubectl:
        env = dict(os.environ, PATH=os.path.dirname(os.path.realpath(plugin)) + os.pathsep + os.environ.get("PATH", ""))
        out = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env, timeout=60)
        assert "kubectl-gpu" in out.stdout
        version = subprocess.run([kubectl, "gpu", "--version"], capture_output=True, text=True, env=env, timeout=60)
        assert version.stdout.startswith("gpuctl ")


def test_fit_assumptions_complete_their_forms_then_node_names(serve):
    srv, kc = serve(snapshot_of(SCENARIOS / "untolerated-taint"))
    ctx = _ctx(kubeconfig=kc)
    assert complete.complete_assumption(ctx, "") == ["uncordon=", "untaint=", "free="]
    assert complete.complete_assumption(ctx, "un") == ["uncordon=", "untaint="]
    nodes = complete.complete_node(ctx, "")
    assert nodes
    assert complete.complete_assumption(ctx, "uncordon=") == [f"uncordon={n}" for n in nodes]
    assert f"untaint={nodes[0]}:" in complete.complete_assumption(ctx, "untaint=" + nodes[0])
    assert complete.complete_assumption(ctx, "drain=") == []
