"""Issue 7, fault matrix: every read command x each endpoint it calls x each fault
(persistent), against the local API server. Each cell must end full, degraded
(honestly) or in a one-line error with a contract exit code; never a traceback,
an unbounded wait or a retry storm. The outcome table is docs/reliability.md
(regenerate with GPUCTL_UPDATE_RELIABILITY=1 or --update-golden).

All cells run once, each in its own gpuctl process (tests/cell_runner.py), in
parallel, in a module-scoped fixture; each
cell is then its own test so a known bug can be a strict xfail."""

from __future__ import annotations

import os

import pytest

import fault_matrix as fm

# Real gpuctl bugs the matrix found; strict xfail keeps them visible until fixed.
KNOWN_BUGS: dict[tuple[str, str], tuple[str, set[str]]] = {}

_BASES: dict | None = None


def _bases() -> dict:
    global _BASES
    if _BASES is None:
        _BASES = fm.baselines()
    return _BASES


def pytest_generate_tests(metafunc):
    if "cell_key" not in metafunc.fixturenames:
        return
    params = []
    for key, ep, fault in fm.cell_jobs(_bases()):
        marks = []
        bug = KNOWN_BUGS.get((key, ep))
        if (key, ep, fault) in fm.FLAKY:
            marks.append(pytest.mark.xfail(strict=False, reason="flaky"))
        elif bug and fault in bug[1]:
            marks.append(pytest.mark.xfail(strict=True, reason=bug[0]))
        params.append(pytest.param((key, ep, fault), id=f"{key}-{fm.endpoint_label(ep)}-{fault}", marks=marks))
    metafunc.parametrize("cell_key", params)


@pytest.fixture(scope="module")
def matrix():
    bases = _bases()
    return bases, fm.run_matrix(bases)


def test_fault_free_runs_are_clean():
    for key, base in _bases().items():
        run = base.run
        assert "Traceback" not in run.out + run.err, key
        assert run.code in (0, 1), (key, run.code, run.err)
        assert base.endpoints, key
        assert base.paged.doc() == run.doc() or not base.cmd.json_output, f"{key}: paging changes the result"


def test_cell(matrix, cell_key):
    bases, cells = matrix
    cell = cells[cell_key]
    assert cell.outcome in ("full", "degraded", "error", "n/a"), cell
    assert not cell.problems, f"{cell_key}: {cell.label} | {' | '.join(cell.details)}"


def test_reliability_doc(matrix, update_golden):
    bases, cells = matrix
    text = fm.render(bases, cells)
    if update_golden or os.environ.get("GPUCTL_UPDATE_RELIABILITY"):
        fm.DOC.parent.mkdir(exist_ok=True)
        fm.DOC.write_text(text)
    assert fm.DOC.is_file(), "docs/reliability.md missing: run with GPUCTL_UPDATE_RELIABILITY=1"
    assert fm.DOC.read_text() == text, "docs/reliability.md is stale: run with GPUCTL_UPDATE_RELIABILITY=1"
