"""Right on what real users paste (tests/realworld/, docs/realworld.md).

Each case is built around a message copied verbatim from a public thread, placed where
Kubernetes keeps it, in a cluster that agrees with it; the thread's resolution decides
the expected cause. For every case: the fragment is in the snapshot, word for word;
the diagnosis (offline and live, through the real client) puts the expected code first
(or an alternative the case allows, with why) and never a code the case forbids. A case
gpuctl still gets wrong says so (``known_miss: why``) and is listed in
docs/realworld.md; the test fails when such a case becomes right too, so the list
stays true. The score ``N/M right (top-1)`` in the README and docs/realworld.md is
checked against the cases; ``GPUCTL_UPDATE_DOCS=1`` rewrites both."""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, probe_args

from gpuctl.findings import CODES

REALWORLD = ROOT / "tests" / "realworld"
SCORE = re.compile(r"\d+/\d+ right \(top-1\)")


def cases() -> list[Path]:
    return sorted(p.parent for p in REALWORLD.glob("*/case.yaml"))


def meta(case: Path) -> dict:
    return yaml.safe_load((case / "case.yaml").read_text())


def argv(m: dict) -> list[str]:
    t = m["target"]
    if t.get("node"):
        return ["diagnose", "node", t["node"]]
    if t.get("pod"):
        ns, name = t["pod"].split("/", 1)
        return ["diagnose", "pod", name, "-n", ns]
    return ["diagnose", "pod", t["target"], "-n", t["namespace"]]


def outcome(doc: dict) -> str:
    """The top code, or ``inconclusive`` when no finding at warning or above explains it."""
    top = next((f for f in doc["findings"] if f["severity"] != "info"), None)
    if top is None and doc["verdict"] == "inconclusive":
        return "inconclusive"
    return (top or (doc["findings"][0] if doc["findings"] else {"code": "none"}))["code"]


def judge(m: dict, doc: dict) -> tuple[bool, str]:
    got = outcome(doc)
    codes = {f["code"] for f in doc["findings"]}
    forbidden = sorted(codes & set(m.get("must_not") or []))
    right = (got == m["expect"] or got in (m.get("also_ok") or {})) and not forbidden
    why = f"top {got}" + (f", forbidden {forbidden}" if forbidden else "")
    return right, why


@lru_cache(maxsize=None)
def _offline(case: Path) -> dict:
    from gpuctl.cli.app import main
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main([*argv(meta(case)), "--snapshot", str(case / "snapshot"), "-o", "json"])
        except SystemExit:
            pass
    return json.loads(out.getvalue())


def _snapshot_text(case: Path) -> str:
    parts = []
    for f in sorted((case / "snapshot").rglob("*")):
        if f.is_file() and f.suffix in (".json", ".log", ".yaml", ".prom"):
            text = f.read_text()
            parts.append(text)
            if f.suffix == ".json":   # the decoded strings, so a quoted or multi-line fragment matches too
                parts.extend(_strings(json.loads(text)))
    return "\n".join(parts)


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


CASES = cases()


def test_the_corpus_is_there():
    assert CASES, "tests/realworld holds no case"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case_is_real_and_placed_where_kubernetes_keeps_it(case):
    m = meta(case)
    assert m["id"] == case.name
    assert re.match(r"https://\S+", m["source"]), "a case names its public source"
    assert m["fragment"].strip() and m["resolution"].strip()
    assert m["fragment"].strip() in _snapshot_text(case), "the verbatim fragment sits in the snapshot"
    wanted = {m["expect"], *(m.get("also_ok") or {}), *(m.get("must_not") or [])} - {"inconclusive"}
    assert wanted <= set(CODES), sorted(wanted - set(CODES))
    assert all(why.strip() for why in (m.get("also_ok") or {}).values()), "an alternative says why it is defensible"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_offline_diagnosis_is_right_or_a_listed_miss(case):
    m = meta(case)
    right, why = judge(m, _offline(case))
    if m.get("known_miss"):
        assert not right, f"{case.name} is right now ({why}): remove its known_miss"
    else:
        assert right, f"{case.name}: expected {m['expect']}, got {why}"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_live_diagnosis_matches_offline(cli, serve, case):
    m = meta(case)
    _, kubeconfig = serve(case / "snapshot")
    r = cli(*argv(m), "--kubeconfig", kubeconfig, *probe_args(case / "snapshot"), "-o", "json")
    assert r.code in (0, 1), r.err
    assert outcome(r.json()) == outcome(_offline(case))


def score() -> tuple[int, int, list[tuple[str, str, str]]]:
    right, misses = 0, []
    for case in CASES:
        m = meta(case)
        ok, why = judge(m, _offline(case))
        right += ok
        if not ok:
            misses.append((case.name, why, m.get("known_miss", "")))
    return right, len(CASES), misses


def test_the_score_in_the_readme_and_docs_is_the_corpus_score():
    right, total, misses = score()
    line = f"{right}/{total} right (top-1)"
    readme, doc = ROOT / "README.md", ROOT / "docs" / "realworld.md"
    if os.environ.get("GPUCTL_UPDATE_DOCS") == "1":
        readme.write_text(SCORE.sub(line, readme.read_text(), count=1))
        text = doc.read_text()
        head = text[: text.index("## Misses")] if "## Misses" in text else text
        rows = "".join(f"| `{n}` | {why} | {known} |\n" for n, why, known in misses) or "| none | | |\n"
        doc.write_text(SCORE.sub(line, head, count=1) + "## Misses\n\n| case | gpuctl says | why |\n|---|---|---|\n" + rows)
    assert SCORE.search(readme.read_text()).group() == line
    assert SCORE.search(doc.read_text()).group() == line
    for name, _, _ in misses:
        assert f"`{name}`" in doc.read_text(), f"docs/realworld.md lists the miss {name}"
