"""Every console example in README.md and docs/*.md, generated from the CLI.

A ``console`` block holds ``$ gpuctl …`` commands, each followed by what it prints
and, optionally, ``$ echo $?`` and its exit code. This script runs each command the
way the docs show it (from the repository root, no colour, 80 columns, no
kubeconfig) and compares or rewrites the text after it. A line ``…`` in an example
elides the middle: the lines above it are the head of the real output, the lines
below it the tail, and an update keeps the same numbers of each.

Not run: commands that read a live cluster (no ``--snapshot``; ``docs/rbac.md``'s
transcript is checked against the local API server by tests/test_rbac.py) and
``gpuctl node probe`` (its output is the machine's: tests/test_node_probe.py).

    python docs/examples.py            # check: exit 1 and a diff when a doc drifted
    python docs/examples.py --update   # rewrite the examples from the CLI
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
ELIDED = "…"
LIVE_COMMANDS = (("diagnose",), ("nodes",), ("label-nodes",), ("snapshot", "save"))


def runnable(argv: list[str]) -> bool:
    if argv[:2] == ["node", "probe"]:
        return False
    if any(a == "--snapshot" or a.startswith("--snapshot=") for a in argv):
        return True
    return not any(tuple(argv[:len(c)]) == c for c in LIVE_COMMANDS)


def run(argv: list[str]) -> tuple[str, int]:
    """The CLI in-process, as a terminal of 80 columns without colour shows it."""
    sys.path.insert(0, str(ROOT))
    from gpuctl.cli.app import main

    env = {"NO_COLOR": "1", "COLUMNS": "80", "HOME": str(ROOT / "tests" / "nohome")}
    saved = {k: os.environ.get(k) for k in (*env, "KUBECONFIG", "GPUCTL_NOW", "GPUCTL_DEBUG")}
    os.environ.update(env)
    for k in ("KUBECONFIG", "GPUCTL_NOW", "GPUCTL_DEBUG"):
        os.environ.pop(k, None)
    out, cwd = io.StringIO(), os.getcwd()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()), code


def _fit(shown: list[str], real: list[str]) -> list[str]:
    """The real output shaped like the example: head … tail when it elides."""
    if ELIDED not in shown:
        return real
    i = shown.index(ELIDED)
    head, tail = i, len(shown) - i - 1
    if head + tail >= len(real):
        return real
    return real[:head] + [ELIDED] + (real[len(real) - tail:] if tail else [])


def render_block(body: str) -> str:
    lines = body.rstrip("\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not line.startswith("$ gpuctl "):
            continue
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        argv = shlex.split(line[len("$ gpuctl "):])
        if not runnable(argv):
            out += shown
            continue
        for a in argv:   # a bundle the example writes is written afresh
            if a.startswith("/tmp/") and argv[:2] == ["snapshot", "save"] and "already exists" not in "\n".join(shown):
                Path(a).unlink(missing_ok=True)
        text, code = run(argv)
        out += _fit(shown, text.split("\n") if text else [])
        if i < len(lines) and lines[i] == "$ echo $?":
            out += ["$ echo $?", str(code)]
            i += 2
    return "\n".join(out) + "\n"


def render(path: Path) -> str:
    text = path.read_text()
    return BLOCK.sub(lambda m: "```console\n" + render_block(m.group(1)) + "```", text)


def main(argv: list[str]) -> int:
    update = "--update" in argv
    drift = 0
    for path in DOCS:
        old = path.read_text()
        new = render(path)
        if new == old:
            continue
        drift += 1
        if update:
            path.write_text(new)
            print(f"updated {path.relative_to(ROOT)}")
        else:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       str(path.relative_to(ROOT)), "from the CLI"))
    if drift and not update:
        print(f"\n{drift} file(s) drifted from the CLI: run python docs/examples.py --update", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
