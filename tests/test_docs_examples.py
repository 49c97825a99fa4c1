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
import shlex
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
        f"{path.name}: an example differs from the CLI's output; refresh with: python docs/examples.py --update " \
        "(or python -m docs.examples --update), then review the diff"


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


# Where a `gpuctl` in a code block or span starts a command: at the start of a line or
# span, after a prompt, a shell operator, `kubectl` (the plugin) or `python -m`, or a
# label in the CLI's own output ("Runbook: gpuctl runbook CODE"). `-n gpuctl` is a
# namespace, and a word inside a sentence or a diagram's box is prose.
LEADS = ("$", "&&", "||", "|", ";", "(", "$(", "kubectl", "-m", ":", "then", "do", "watch", "sudo", "exec")
COLUMN = re.compile(r"\s{3,}|[│┃]")                      # a diagram's column, or a comment's indentation
END = re.compile(r"\s#\s|\s#$|&&|\|\||\||;|\)|`|\"|\s{3,}|[│┃]")


def _mentions(line: str):
    for m in re.finditer(r"\b(gpuctl|gpu)(?= )", line):
        before = line[:m.start()].rstrip()
        if m.group(1) == "gpu" and not before.endswith("kubectl"):
            continue
        if m.start() > 0 and line[m.start() - 1] not in " (`$\"":
            continue
        lead = COLUMN.split(before)[-1].strip()
        if lead and (not lead.endswith(LEADS) or lead.endswith(("-n", "--namespace"))):
            continue
        yield END.split(line[m.end():])[0].split()


def _gpuctl_commands(text: str):
    """Each command a doc names: (its words after `gpuctl`, whether the docs' example
    runner executes it and pins its output, intentional errors included)."""
    blocks = re.findall(r"^```([a-z]*)\n(.*?)^```", text, re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    for lang, body in blocks + [("", s) for s in spans]:
        for line in body.splitlines():
            for words in _mentions(line):
                pinned = False
                if lang == "console" and line.startswith("$ gpuctl "):
                    try:
                        pinned = examples.runnable(shlex.split(line[len("$ gpuctl "):]))
                    except ValueError:
                        pass
                yield words, pinned


def _problems(words: list, pinned: bool) -> list:
    import typer.main

    from gpuctl.cli.app import app
    from gpuctl.findings import CODES

    root = typer.main.get_command(app)
    cmd, path, i = root, [], 0
    while i < len(words) and getattr(cmd, "commands", None) and words[i] in cmd.commands:
        cmd = cmd.commands[words[i]]
        path.append(words[i])
        i += 1
    shown = " ".join(["gpuctl", *words])
    if i < len(words) and getattr(cmd, "commands", None) and re.fullmatch(r"[a-z][a-z-]*", words[i]):
        return [f"{shown}: no command {' '.join(['gpuctl', *path, words[i]])}"]
    if pinned:   # executed by docs/examples.py: its output (an error too) is what the doc shows
        return []
    known = {"--help", "-h"}
    for c in (root, cmd):
        for param in c.params:
            known.update(getattr(param, "opts", []), getattr(param, "secondary_opts", []))
    wrong = [f"{shown}: no option {w.split('=')[0]} for gpuctl {' '.join(path)}".rstrip()
             for w in words[i:] if re.fullmatch(r"--[a-z][a-z-]*(=.*)?", w) and w.split("=")[0] not in known]
    if path == ["runbook"] and i < len(words) and re.fullmatch(r"[a-z][a-z0-9-]*", words[i]) and words[i] not in CODES:
        wrong.append(f"{shown}: no finding code {words[i]}")
    return wrong


def test_every_gpuctl_command_the_docs_name_exists():
    """Each `gpuctl …`, `kubectl gpuctl …`, `kubectl gpu …` or `python -m gpuctl …` in
    a code block or span of README.md, docs/ and the runbooks names a command path of
    the Typer app (gpuctl/cli/app.py), options that command has, and real runbook codes."""
    wrong, seen = [], 0
    for p in examples.DOCS + sorted((ROOT / "docs" / "runbooks").glob("*.md")) + [ROOT / "deploy" / "krew" / "README.md"]:
        for words, pinned in _gpuctl_commands(p.read_text()):
            seen += 1
            wrong += [f"{p.relative_to(ROOT)}: {w}" for w in _problems(words, pinned)]
    assert seen > 150, seen
    assert not wrong, "\n".join(wrong)


def test_the_command_check_catches_what_it_should():
    found = lambda text: [" ".join(w) for w, _ in _gpuctl_commands(text)]  # noqa: E731
    assert found("`gpuctl diagnose pods x`") == ["diagnose pods x"]
    assert found("```bash\npython3 -m venv .venv && pip install . && gpuctl frobnicate --snapshot demo\n```") == \
        ["frobnicate --snapshot demo"]
    assert found("```\nkubectl gpuctl nodes capcity   # a typo\nkubectl -n gpuctl get pods\n```") == ["nodes capcity"]
    assert found("   Runbook: gpuctl runbook no-such-code") == []          # prose, not a span or block
    assert _problems(["nodes", "capcity"], False) and _problems(["diagnose", "pod", "x", "--frob"], False)
    assert _problems(["runbook", "no-such-code"], False)
    assert not _problems(["diagnose", "pod", "x", "-n", "ns", "--snapshot=demo", "-o", "wide"], False)
    assert not _problems(["label-nodes", "--apply", "--overwrite", "--context", "prod"], False)


NOT_PATHS = re.compile(
    r"gpuctl/[a-z]+/v\d+"                       # a document's schema name: gpuctl/diagnosis/v1
    r"|gpuctl/(demo|runbooks)/?"                 # where the wheel puts examples/demo-cluster and docs/runbooks
    r"|benchmarks/out/.*"                        # what a benchmark run writes
    r"|deploy/x"                                 # a Deployment named x, kubectl's KIND/NAME
    r"|deploy/krew/gpuctl\.yaml")                # the krew manifest install.md explains there is none of


def test_relative_links_and_repository_paths_in_the_docs_exist():
    """A Markdown link to a file, or a `path/like/this` in a code span naming one of the
    repository's top-level folders, points at something that is in the repository."""
    tops = ("gpuctl/", "tests/", "docs/", "deploy/", "examples/", "benchmarks/", "completions/", ".ci/")
    missing = []
    for p in examples.DOCS + sorted((ROOT / "docs" / "runbooks").glob("*.md")) + [ROOT / "deploy" / "krew" / "README.md"]:
        text = p.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            target = target.split("#", 1)[0]
            if target and not re.match(r"[a-z]+:", target) and not (p.parent / target).exists():
                missing.append(f"{p.relative_to(ROOT)}: link {target}")
        for span in re.findall(r"`([^`\n]+)`", text):
            for word in span.split():
                word = word.rstrip(".,:;)")
                if not word.startswith(tops) or re.search(r"[<>*{}…$]|[A-Z]{3,}", word) or NOT_PATHS.fullmatch(word):
                    continue
                base = word.split(":", 1)[0]
                if not (ROOT / base).exists() and not list(ROOT.glob(base + "*")):
                    missing.append(f"{p.relative_to(ROOT)}: {word}")
    assert not missing, "\n".join(missing)


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


def _tarball(tmp_path):
    import tarfile

    out = tmp_path / "demo.tar.gz"
    with tarfile.open(out, "w:gz") as tf:
        tf.add(ROOT / "examples" / "demo-cluster", arcname="demo")
    return out


@pytest.mark.parametrize("snapshot,nodes", [
    ("demo", 18),                                                     # the bundled demo, by name
    ("examples/kubectl-dump.json", 18),                               # a plain kubectl dump, one file
    ("tests/scenarios/insufficient-gpu/snapshot", None),              # a snapshot directory
    (_tarball, 18),                                                   # a .tar.gz bundle
], ids=["demo", "kubectl-dump", "scenario-dir", "tarball"])
def test_benchmarks_serve_serves_a_gpuctl_snapshot(tmp_path, snapshot, nodes):
    """`python -m benchmarks.serve --snapshot PATH` serves whatever `--snapshot` reads,
    and gpuctl reads it back over the Kubernetes API as it reads the file."""
    snapshot = str(snapshot(tmp_path)) if callable(snapshot) else snapshot
    kc = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.serve", "--snapshot", snapshot, "--kubeconfig", str(kc),
                             "--no-auth"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY "), proc.stderr.read() if proc.poll() is not None else line
        live = subprocess.run([sys.executable, "-m", "gpuctl", "nodes", "capacity", "--kubeconfig", str(kc), "-o", "json"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        offline = subprocess.run([sys.executable, "-m", "gpuctl", "nodes", "capacity", "--snapshot", snapshot, "-o", "json"],
                                 cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert live.returncode == offline.returncode == 0, live.stderr + offline.stderr
        rows = json.loads(live.stdout)["rows"]
        assert rows == json.loads(offline.stdout)["rows"]
        assert len(rows) == nodes if nodes else rows
    finally:
        proc.terminate()
        proc.wait(timeout=10)
