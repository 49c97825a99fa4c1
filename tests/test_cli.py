"""The contract's exit codes and one-line errors, offline: bad input never gives a
traceback, and hostile cluster text reaches the terminal harmlessly."""

from __future__ import annotations

import json

import pytest

from conftest import SCENARIOS, snapshot_of
from gpuctl import __version__
from gpuctl.errors import SourceError

TAINT = SCENARIOS / "untolerated-taint"


def _pod_of(scenario):
    exp = json.loads((scenario / "expected.json").read_text())
    return exp["pod"].split("/", 1)


def test_version_and_help(cli):
    r = cli("--version")
    assert (r.code, r.out.strip()) == (0, f"gpuctl {__version__}")
    assert cli("--help").code == 0
    assert "diagnose" in cli("--help").out


def test_usage_error_exits_2(cli):
    r = cli("diagnose", "pod", "x", "--output", "xml")
    assert r.code == 2
    assert "Traceback" not in r.err


def test_unknown_pod_exits_3_and_names_the_namespace_it_is_in(cli):
    ns, name = _pod_of(TAINT)
    r = cli("diagnose", "pod", name, "-n", "elsewhere", "--snapshot", str(snapshot_of(TAINT)))
    assert r.code == 3
    assert r.err.count("\n") == 1 and f"try -n {ns}" in r.err


def test_unknown_pod_suggests_close_names(cli):
    ns, name = _pod_of(TAINT)
    r = cli("diagnose", "pod", name[:-1], "-n", ns, "--snapshot", str(snapshot_of(TAINT)))
    assert r.code == 3 and f"did you mean {name}" in r.err


def test_missing_snapshot_exits_4(cli, tmp_path):
    r = cli("diagnose", "pod", "x", "--snapshot", str(tmp_path / "nope.json"))
    assert r.code == 4 and "nope.json" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize("content, problem", [
    (b"{not json", "not valid JSON"),
    (b'{"hello": "world"}', "holds no Kubernetes objects"),
    (b"- a\n- : b: c\n", "not valid YAML"),
])
def test_unreadable_snapshot_exits_4_naming_the_file(cli, tmp_path, content, problem):
    f = tmp_path / ("dump.yaml" if b"- a" in content else "dump.json")
    f.write_bytes(content)
    r = cli("diagnose", "pod", "x", "--snapshot", str(f))
    assert r.code == 4, r.err
    assert f.name in r.err and problem in r.err and "Traceback" not in r.err


def test_malformed_object_is_reported_not_fatal(cli, tmp_path):
    ns, name = _pod_of(TAINT)
    doc = json.loads((snapshot_of(TAINT) / "cluster.json").read_text())
    doc["items"].append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "broken-node"}, "spec": "oops"})
    (tmp_path / "cluster.json").write_text(json.dumps(doc))
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(tmp_path / "cluster.json"), "-o", "json")
    d = r.json()
    assert d["findings"][0]["code"] == "untolerated-taint"
    errors = [c for c in d["checks"] if c["status"] == "error"]
    assert errors and "broken-node" in errors[0]["detail"]


def test_debug_reraises(cli, tmp_path):
    with pytest.raises(SourceError):
        cli("diagnose", "pod", "x", "--snapshot", str(tmp_path / "nope"), "--debug")


def test_plain_kubectl_dump_file_is_enough(cli, tmp_path):
    """A single `kubectl get nodes,pods,events -A -o json` file, no logs or metadata."""
    ns, name = _pod_of(TAINT)
    data = json.loads((snapshot_of(TAINT) / "cluster.json").read_text())
    data["items"] = [i for i in data["items"] if i["kind"] in ("Node", "Pod", "Event")]
    (tmp_path / "dump.json").write_text(json.dumps(data))
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(tmp_path / "dump.json"), "-o", "json")
    assert r.json()["findings"][0]["code"] == "untolerated-taint"


def test_yaml_and_markdown_outputs(cli):
    import yaml

    ns, name = _pod_of(TAINT)
    snap = str(snapshot_of(TAINT))
    y = yaml.safe_load(cli("diagnose", "pod", name, "-n", ns, "--snapshot", snap, "-o", "yaml").out)
    assert y["schema"] == "gpuctl/diagnosis/v1" and y["findings"][0]["code"] == "untolerated-taint"
    md = cli("diagnose", "pod", name, "-n", ns, "--snapshot", snap, "-o", "markdown").out
    assert md.startswith("## gpuctl diagnosis") and "`untolerated-taint`" in md and "```" in md


def test_wide_shows_the_fit_matrix(cli):
    ns, name = _pod_of(TAINT)
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(snapshot_of(TAINT)), "-o", "wide")
    assert "Per-node fit" in r.out and "untolerated-taint" in r.out


def test_hostile_cluster_text_is_shown_literally(cli, tmp_path):
    ns, name = _pod_of(TAINT)
    doc = json.loads((snapshot_of(TAINT) / "cluster.json").read_text())
    for item in doc["items"]:
        if item["kind"] == "Node":
            for t in item.get("spec", {}).get("taints", []):
                if t["key"] not in ("node.kubernetes.io/unschedulable",):
                    t["value"] = "[bold red]pwn[/]\x1b[2J\x1b]0;owned\x07"
    (tmp_path / "cluster.json").write_text(json.dumps(doc))
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(tmp_path / "cluster.json"))
    assert "\x1b" not in r.out and "\x07" not in r.out
    assert "[bold red]pwn[/]" in r.out


def test_runbook_command(cli):
    r = cli("runbook", "untolerated-taint")
    assert r.code == 0 and "untolerated-taint" in r.out
    listing = cli("runbook", "-o", "json").json()
    assert {x["code"] for x in listing["runbooks"]} >= {"gpu-fragmentation", "insufficient-gpu"}
    assert all(x["runbook"] == "yes" for x in listing["runbooks"])
    missing = cli("runbook", "untolerated-taints")
    assert missing.code == 3 and "untolerated-taint" in missing.err


def test_pending_pod_with_no_identified_cause_is_inconclusive(cli, tmp_path):
    """Events say 'untolerated taint' but the taints are gone now: the nodes fit,
    nothing explains the wait, and gpuctl says so instead of 'healthy'."""
    ns, name = _pod_of(TAINT)
    doc = json.loads((snapshot_of(TAINT) / "cluster.json").read_text())
    for item in doc["items"]:
        if item["kind"] == "Node":
            item["spec"].pop("taints", None)
    (tmp_path / "cluster.json").write_text(json.dumps(doc))
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(tmp_path / "cluster.json"), "-o", "json")
    d = r.json()
    assert (r.code, d["verdict"]) == (1, "inconclusive")
    assert any(c["name"] == "cause-identified" and c["status"] == "skipped" for c in d["checks"])


def test_empty_list_files_do_not_spoil_a_directory_snapshot(cli, tmp_path):
    import shutil

    ns, name = _pod_of(TAINT)
    shutil.copytree(snapshot_of(TAINT), tmp_path / "snap")
    (tmp_path / "snap" / "resourcequotas.json").write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(tmp_path / "snap"), "-o", "json")
    assert r.json()["findings"][0]["code"] == "untolerated-taint"
    (tmp_path / "only.json").write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    assert cli("diagnose", "pod", name, "--snapshot", str(tmp_path / "only.json")).code == 4


def test_runbook_as_json(cli):
    d = cli("runbook", "gpu-fragmentation", "-o", "json").json()
    assert d["code"] == "gpu-fragmentation" and d["markdown"].startswith("# gpu-fragmentation")


def test_custom_device_plugin_selector_from_config(cli, tmp_path, monkeypatch):
    """A cluster running a plugin gpuctl does not know is not called 'device plugin
    missing' once the user's config names the plugin's pods."""
    import shutil

    from gpuctl import config
    from gpuctl.knowledge.catalog import _compiled_selectors

    src = SCENARIOS / "node-gke-managed-plugin"
    exp = json.loads((src / "expected.json").read_text())
    shutil.copytree(snapshot_of(src), tmp_path / "snap")
    doc = json.loads((tmp_path / "snap" / "cluster.json").read_text())
    for item in doc["items"]:
        if item["kind"] == "Pod" and item["metadata"].get("labels", {}).get("k8s-app") == "nvidia-gpu-device-plugin":
            item["metadata"]["labels"] = {"app": "acme-gpu-plugin"}
    (tmp_path / "snap" / "cluster.json").write_text(json.dumps(doc))

    def run():
        config.load.cache_clear()
        _compiled_selectors.cache_clear()
        return cli("diagnose", "node", exp["node"], "--snapshot", str(tmp_path / "snap"), "-o", "json").json()

    (tmp_path / "empty.yaml").write_text("")
    monkeypatch.setenv("GPUCTL_CONFIG", str(tmp_path / "empty.yaml"))
    assert run()["findings"][0]["code"] == "device-plugin-not-running"
    (tmp_path / "gpuctl.yaml").write_text("devicePlugins:\n  - name: acme\n    labelSelector: app=acme-gpu-plugin\n")
    monkeypatch.setenv("GPUCTL_CONFIG", str(tmp_path / "gpuctl.yaml"))
    assert run()["verdict"] == "healthy"
    config.load.cache_clear()
    _compiled_selectors.cache_clear()


def test_missing_named_config_file_is_one_error(cli, tmp_path, monkeypatch):
    from gpuctl import config

    config.load.cache_clear()
    monkeypatch.setenv("GPUCTL_CONFIG", str(tmp_path / "nope.yaml"))
    r = cli("runbook")
    config.load.cache_clear()
    assert r.code == 4 and "nope.yaml" in r.err and r.err.count("\n") == 1
