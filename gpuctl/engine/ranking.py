"""Ranking and verdicts (docs/runbooks/README.md, docs/output.md).

* Ranking: root causes whose fix alone lets the pod run first, least disruptive fix
  first, more nodes unblocked first; then the other causes by how many nodes they
  block; symptoms below their cause; info last.
* Verdict: blocker -> blocked (unbound) / failing (bound); critical or warning ->
  at-risk; else healthy - unless a check the verdict depends on was skipped, which
  makes it ``inconclusive``: gpuctl never says healthy on missing data.
"""

from __future__ import annotations

from ..findings import CheckResult, Finding, Severity, Status


def rank_key(f: Finding) -> tuple:
    info = f.severity == Severity.INFO
    root = f.root_cause and f.symptom_of is None
    return (
        info,
        f.symptom_of is not None,
        not root,
        f.disruption if root else 0,
        -(f.unblocks if root else len(f.nodes)),
        f.severity.weight,  # type: ignore[union-attr]
        f.code,
    )


def merge(findings: list[Finding]) -> list[Finding]:
    """One finding per code: evidence and nodes united, the strongest ranking and the
    highest severity kept."""
    by_code: dict[str, Finding] = {}
    for f in findings:
        have = by_code.get(f.code)
        if have is None:
            by_code[f.code] = f
            continue
        first, second = (have, f) if rank_key(have) <= rank_key(f) else (f, have)
        for line in second.evidence:
            if line not in first.evidence:
                first.evidence.append(line)
        for n in second.nodes:
            if n not in first.nodes:
                first.nodes.append(n)
        if not first.fixes:
            first.fixes = second.fixes
        first.root_cause = first.root_cause or second.root_cause
        if second.severity.weight < first.severity.weight:   # never lowered by a milder duplicate
            first.severity = second.severity
        first.unblocks = max(first.unblocks, second.unblocks)
        by_code[f.code] = first
    return sorted(by_code.values(), key=rank_key)


def verdict_for(findings: list[Finding], checks: list[CheckResult], bound: bool) -> str:
    essential_missing = any(c.essential and c.status == Status.SKIPPED for c in checks)
    essential_broken = any(c.essential and c.status == Status.ERROR for c in checks)
    if essential_missing:
        return "inconclusive"
    if any(f.severity == Severity.BLOCKER for f in findings):
        return "failing" if bound else "blocked"
    if any(f.severity in (Severity.CRITICAL, Severity.WARNING) for f in findings):
        return "at-risk"
    if essential_broken:
        return "inconclusive"
    return "healthy"
