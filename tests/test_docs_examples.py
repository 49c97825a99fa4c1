"""The docs cannot drift and cannot point outside the repository.

Every console example is generated from the CLI (docs/examples.py) and compared here;
every `gpuctl …` command a doc mentions exists; nothing cites files outside the
repository; the README's first bash block is exactly the two set-up commands, and
`.ci/run` runs the second; `--snapshot demo` and `python -m benchmarks.serve
--snapshot` work as documented."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("doc_examples", ROOT / "docs" / "examples.py")
examples = importlib.util.module_from_spec(spec)
spec.loader.exec_module(examples)


@pytest.mark.parametrize("path", examples.DOCS, ids=lambda p: p.name)
def test_console_examples_are_what_the_cli_prints(path):
    assert examples.render(path) == path.read_text(), \
        f"{path.name}: an example differs from the CLI's output; run: python docs/examples.py --update"


def test_the_examples_cover_every_doc_with_console_blocks():
    blocks = sum(len(examples.BLOCK.findall(p.read_text())) for p in examples.DOCS)
    assert blocks >= 24


def _tracked() -> list:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    return [ROOT / f for f in files] if files else [p for p in ROOT.rglob("*") if ".git" not in p.parts]


def test_nothing_cites_files_outside_the_repository():
    bad = re.compile(r"\.\./shared|shared/(spec|reference)/|python-stack\.md|gpu-on-kubernetes\.md|reference §")
    hits = []
    for p in _tracked():
        if p.suffix not in (".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt") or p == ROOT / "tests" / "test_docs_examples.py":
            continue
        if p.is_file() and bad.search(p.read_text(errors="replace")):
            hits.append(str(p.relative_to(ROOT)))
    assert not hits, f"these cite files outside the repository: {hits}"


def _commands():
    from gpuctl.cli.app import app
    import typer.main

    group = typer.main.get_command(app)
    paths = set()
    for name, cmd in group.commands.items():
        paths.add((name,))
        for sub in getattr(cmd, "commands", {}) or {}:
            paths.add((name, sub))
    return paths


def test_every_gpuctl_command_the_docs_name_exists():
    paths = _commands()
    mention = re.compile(r"(?:`|^\$ |^)(?:gpuctl|kubectl gpu) ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)", re.M)
    wrong = []
    for p in examples.DOCS + sorted((ROOT / "docs" / "runbooks").glob("*.md")):
        text = p.read_text()
        code = "\n".join(re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M))
        spans = "\n".join("`" + m for m in re.findall(r"`([^`\n]+)`", text))
        for m in mention.finditer(code + "\n" + spans):
            words = m.group(1).split()
            if (words[0],) not in paths:
                wrong.append(f"{p.name}: gpuctl {m.group(1)}")
            elif len(words) > 1 and any(k[0] == words[0] and len(k) == 2 for k in paths) and (words[0], words[1]) not in paths \
                    and words[0] != "runbook":
                wrong.append(f"{p.name}: gpuctl {m.group(1)}")
    assert not wrong, wrong


def test_readme_opens_with_exactly_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) == 2
    install, test = lines
    assert "venv" in install and "pip install ." in install and "--snapshot demo" in install and "gpuctl diagnose pod" in install
    assert "venv" in test and 'pip install ".[test]"' in test and test.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and "bash -c" in ci


def test_snapshot_demo_is_bundled_and_a_real_path_wins(cli, tmp_path, monkeypatch):
    r = cli("diagnose", "pod", "llama-finetune-0", "-n", "ml-research", "--snapshot", "demo", "-o", "json")
    assert r.code == 1 and json.loads(r.out)["findings"][0]["code"] == "gpu-fragmentation"
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "dump.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "only-here"}}]}))
    monkeypatch.chdir(tmp_path)
    r = cli("diagnose", "node", "only-here", "--snapshot", "demo", "-o", "json")
    assert r.code in (0, 1) and json.loads(r.out)["target"]["name"] == "only-here"


def test_the_wheel_carries_the_demo_and_the_runbooks():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"examples/demo-cluster" = "gpuctl/demo"' in text and '"docs/runbooks" = "gpuctl/runbooks"' in text


def test_benchmarks_serve_serves_a_gpuctl_snapshot(tmp_path):
    kc = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.serve", "--snapshot", "demo", "--kubeconfig", str(kc),
                             "--no-auth"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY "), proc.stderr.read() if proc.poll() is not None else line
        r = subprocess.run([sys.executable, "-m", "gpuctl", "nodes", "capacity", "--kubeconfig", str(kc), "-o", "json"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert len(json.loads(r.stdout)["rows"]) == 18
    finally:
        proc.terminate()
        proc.wait(timeout=10)
