"""What docs/install.md and the README promise about installing is what the build
delivers: the console scripts it names exist, `kubectl <plugin>` names an installed
`kubectl-<plugin>`, no doc tells users to install the unrelated PyPI project called
`gpuctl`, the krew decision is written down, and a wheel built from this checkout
carries the demo and the runbooks so `--snapshot demo` works after a non-editable
install, from any directory, with a real `demo` path still winning."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "krew" / "README.md"]
INSTALL = ROOT / "docs" / "install.md"


def _scripts() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text()
    if tomllib is not None:
        return tomllib.loads(text)["project"]["scripts"]
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w.-]+)\s*=\s*"([^"]+)"', section, re.M))


def test_the_console_scripts_are_gpuctl_and_the_kubectl_plugin():
    scripts = _scripts()
    assert scripts["gpuctl"] == "gpuctl.cli.app:run"
    assert scripts["kubectl-gpuctl"] == "gpuctl.cli.app:run"
    assert scripts["kubectl_complete-gpuctl"] == "gpuctl.cli.complete:run_kubectl_complete"
    # every kubectl-<name> plugin has its kubectl_complete-<name>
    for name in scripts:
        if name.startswith("kubectl-"):
            assert scripts.get("kubectl_complete-" + name[len("kubectl-"):]) == "gpuctl.cli.complete:run_kubectl_complete", name


def test_every_kubectl_plugin_the_docs_name_is_installed():
    scripts = _scripts()
    plugins = {n[len("kubectl-"):] for n in scripts if n.startswith("kubectl-")}
    builtin = {"get", "describe", "logs", "label", "apply", "auth", "plugin", "krew", "create", "delete", "patch",
               "cordon", "uncordon", "drain", "taint", "top", "edit", "scale", "rollout", "annotate", "exec", "debug",
               "config", "version", "explain", "wait", "events", "api-resources", "proxy", "run", "set", "replace",
               "kustomize", "certificate", "cluster-info", "port-forward", "cp", "attach", "autoscale", "expose",
               "diff", "completion", "options", "api-versions", "alpha"}
    wrong = []
    for p in DOCS:
        text = p.read_text()
        for m in re.finditer(r"\bkubectl[ -](gpu[a-z-]*)", text):
            name = m.group(1)
            if name not in plugins and name not in builtin:
                wrong.append(f"{p.relative_to(ROOT)}: kubectl {name}")
        for m in re.finditer(r"\bkubectl(?:_complete)?-([a-z][a-z-]*[a-z])", text):
            if m.group(1) not in plugins and not m.group(1).startswith(tuple(builtin)):
                wrong.append(f"{p.relative_to(ROOT)}: {m.group(0)}")
    assert not wrong, f"docs name kubectl plugins that pyproject does not install: {wrong}"
    install = INSTALL.read_text()
    for name in plugins:
        assert f"kubectl-{name}" in install and f"kubectl {name}" in install, f"install.md does not explain kubectl {name}"


def test_no_doc_installs_the_unrelated_pypi_gpuctl():
    """`gpuctl` on PyPI is another project: a bare `pip install gpuctl` installs it."""
    bare = re.compile(r"\b(?:pip|pipx|pip3)\s+install\s+(?:-U\s+|--upgrade\s+)?gpuctl\b(?![./\w-])|uv tool install gpuctl\b(?![./\w-])"
                      r"|uvx gpuctl\b")
    hits = []
    for p in DOCS:
        text = p.read_text()
        code = "\n".join(re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M))
        prose = [par for par in re.split(r"\n\s*\n", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
                 if "unrelated" not in par]   # the warning against it may quote it
        hits += [f"{p.relative_to(ROOT)}: {m.group(0)}" for m in bare.finditer("\n".join([code, *prose]))]
    assert not hits, hits
    text = INSTALL.read_text()
    assert "pipx install ." in text and "uv tool install ." in text and "git+" in text


def test_the_krew_decision_is_written_down():
    manifests = sorted((ROOT / "deploy" / "krew").glob("*.yaml"))
    text = INSTALL.read_text()
    if manifests:   # a manifest must point at a release artefact the docs name
        assert "krew install" in text
    else:
        assert "## Why there is no krew manifest" in text
        assert (ROOT / "deploy" / "krew" / "README.md").is_file()


def test_install_docs_name_the_packaged_demo():
    text = INSTALL.read_text()
    assert "--snapshot demo" in text and "gpuctl/demo/" in text and "examples/demo-cluster/" in text
    assert (ROOT / "examples" / "demo-cluster" / "cluster.json").is_file()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if importlib.util.find_spec("hatchling") is None:
        pytest.skip("hatchling is not installed (it is in the [test] extra): the wheel is not built")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (whl,) = out.glob("gpuctl-*.whl")
    return whl


def test_the_wheel_carries_the_demo_the_runbooks_and_the_scripts(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    demo = ROOT / "examples" / "demo-cluster"
    for f in demo.rglob("*"):
        if f.is_file():
            assert "gpuctl/demo/" + f.relative_to(demo).as_posix() in names, f
    for f in (ROOT / "docs" / "runbooks").glob("*.md"):
        assert f"gpuctl/runbooks/{f.name}" in names, f.name
    for script in _scripts():
        assert re.search(rf"^{re.escape(script)} = ", entry_points, re.M), script
    assert not any(n.startswith(("tests/", "examples/", "benchmarks/")) for n in names)


def test_snapshot_demo_works_from_the_installed_wheel_anywhere(wheel, tmp_path):
    """The wheel unpacked on sys.path, run from a directory with no checkout around it:
    `demo` is the packaged copy; a `demo` directory where the user stands wins."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("KUBECONFIG", None)

    def gpuctl(*args):
        return subprocess.run([sys.executable, "-m", "gpuctl", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=120)

    where = subprocess.run([sys.executable, "-c", "import gpuctl.collect.files as f; print(f.bundled_demo())"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(site / "gpuctl" / "demo"), where.stderr
    r = gpuctl("diagnose", "pod", "llama-finetune-0", "-n", "ml-research", "--snapshot", "demo", "-o", "json")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["findings"][0]["code"] == "gpu-fragmentation"
    r = gpuctl("runbook", "gpu-fragmentation")
    assert r.returncode == 0 and "gpu-fragmentation" in r.stdout, r.stderr

    (work / "demo").mkdir()
    (work / "demo" / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mine"}}]}))
    r = gpuctl("diagnose", "node", "mine", "--snapshot", "demo", "-o", "json")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["target"]["name"] == "mine"
