"""Findings, fixes, checks and the diagnosis document, plus the registry of codes.

The registry below is the one table of finding codes (popeye style): every code a
check may emit is listed here with its default severity, the section of
``docs/runbooks/README.md`` it belongs to and a one-line title. A test fails when a
code lacks a runbook (``docs/runbooks/CODE.md``) or a runbook names no code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    BLOCKER = "blocker"
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def weight(self) -> int:
        return {"blocker": 0, "critical": 1, "warning": 2, "info": 3}[self.value]


@dataclass(frozen=True)
class CodeInfo:
    code: str
    severity: Severity
    section: str
    title: str


def _codes(section: str, rows: list[tuple[str, Severity, str]]) -> dict[str, CodeInfo]:
    return {code: CodeInfo(code, sev, section, title) for code, sev, title in rows}


B, C, W, I = Severity.BLOCKER, Severity.CRITICAL, Severity.WARNING, Severity.INFO

CODES: dict[str, CodeInfo] = {
    **_codes("scheduling", [
        ("unknown-resource-name", B, "The pod requests a resource no node advertises"),
        ("device-plugin-not-running", B, "GPU nodes advertise no GPUs: the device plugin is missing or down"),
        ("nvml-init-failed", B, "The device plugin cannot initialise NVML on the node"),
        ("insufficient-gpu", B, "Not enough free GPUs on the nodes the pod may use"),
        ("gpu-fragmentation", B, "Enough free GPUs in total, but no single node has enough"),
        ("untolerated-taint", B, "Nodes with free GPUs carry a taint the pod does not tolerate"),
        ("node-selector-mismatch", B, "The pod's nodeSelector excludes the nodes with free GPUs"),
        ("node-affinity-mismatch", B, "Required node affinity excludes the nodes with free GPUs"),
        ("node-unschedulable", B, "The nodes with free GPUs are cordoned"),
        ("node-not-ready", B, "The nodes with free GPUs are NotReady or unreachable"),
        ("insufficient-cpu", B, "GPU nodes with free GPUs lack free CPU for the pod"),
        ("insufficient-memory", B, "GPU nodes with free GPUs lack free memory for the pod"),
        ("insufficient-resource", B, "GPU nodes with free GPUs lack another resource the pod requests"),
        ("mig-profile-unavailable", B, "The requested MIG profile is not advertised or fully taken"),
        ("sharing-resource-mismatch", B, "The pod asks for the shared/unshared twin of what nodes advertise, or a sharing layer's resource its scheduler is not placing"),
        ("dra-claim-unallocatable", B, "A DRA ResourceClaim of the pod cannot be allocated"),
        ("dra-selector-invalid", B, "A DRA selector (claim or DeviceClass) is invalid CEL or fails on every device"),
        ("quota-exceeded", B, "A ResourceQuota blocks the pod"),
        ("queue-not-admitted", B, "A queueing system (Kueue, Volcano, scheduling gates) holds the pod"),
        ("preemption-in-progress", W, "The pod waits for preempted pods to leave its nominated node"),
        ("scheduler-not-found", B, "No running scheduler serves the pod's schedulerName"),
        ("volume-binding", B, "Volume constraints, not GPUs, block the pod"),
        ("pod-topology-constraint", B, "Pod (anti-)affinity or topology spread excludes the nodes with free GPUs"),
        ("autoscaler-no-scale-up", B, "The autoscaler will not add a node for this pod"),
        ("scale-up-in-progress", I, "The autoscaler is adding a node for this pod"),
        ("scheduling-in-progress", I, "The pod is new; the scheduler has not reported yet"),
        ("pod-requests-no-gpu", I, "The pod requests no GPU resource"),
    ]),
    **_codes("node", [
        ("gpu-unhealthy", C, "The device plugin marked GPUs unhealthy"),
        ("gpu-count-mismatch", W, "A node advertises fewer GPUs than it has"),
        ("xid-error", C, "Xid errors on the node's GPUs"),
        ("ecc-uncorrectable", C, "Uncorrectable ECC errors or row-remapping failure"),
    ]),
    **_codes("runtime", [
        ("unexpected-admission-error", B, "The kubelet's device manager refused the pod's devices"),
        ("nvidia-runtime-error", B, "The NVIDIA container toolkit failed to start the container"),
        ("runtime-class-missing", B, "The pod names a RuntimeClass that does not exist or has no handler"),
        ("driver-cuda-mismatch", B, "The image needs a newer CUDA than the node's driver supports"),
        ("gpu-not-requested", B, "The container wants a GPU but the pod requests none"),
        ("gpu-memory-exhausted", W, "CUDA ran out of GPU memory"),
        ("container-lost-gpu-access", C, "A running container lost access to its GPU (NVML Unknown Error)"),
        ("image-pull-failed", B, "The image cannot be pulled (not a GPU problem)"),
        ("container-oom-killed", B, "The container was killed for host memory, not GPU memory"),
        ("crash-loop", B, "The container keeps exiting for a reason no other code explains"),
    ]),
}

SCHEDULING_CODES = [c for c, info in CODES.items() if info.section == "scheduling"]


def runbook_ref(code: str) -> str:
    return f"gpuctl runbook {code}"


# Commands a person must adapt or watch before running them, recognised by form;
# a check may also name its own reason (``Fix.needs_judgement``).
_JUDGEMENT_FORMS: tuple[tuple[str, str], ...] = (
    (" edit ", "opens an editor: make the change its comment names"),
    (" -it ", "opens an interactive shell on the node"),
    ("kubectl drain ", "evicts every pod of the node: pick the moment"),
    (" -w", "watches until interrupted"),
    ("<", "fill in the <placeholder> first"),
)


def _judgement_of(commands: list[str]) -> str:
    for cmd in commands:
        first = cmd.split("#", 1)[0] + " "
        for form, why in _JUDGEMENT_FORMS:
            if form in first:
                return why
    return ""


@dataclass
class Fix:
    """What to do: ``commands`` are shell lines, each runnable as printed (one
    command per entry, a trailing ``# comment`` allowed); ``snippets`` are YAML to
    put into a manifest, never shell. ``needs_judgement`` says why a person must
    decide or adapt before running them; empty means the commands were built from
    the cluster's data and run as printed (the tests execute them against the local
    API server)."""

    summary: str
    commands: list[str] = field(default_factory=list)
    snippets: list[str] = field(default_factory=list)
    needs_judgement: str = ""

    def __post_init__(self) -> None:
        if not self.needs_judgement:
            self.needs_judgement = _judgement_of(self.commands)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"summary": self.summary, "commands": list(self.commands)}
        if self.snippets:
            d["snippets"] = list(self.snippets)
        if self.needs_judgement:
            d["needsJudgement"] = self.needs_judgement
        return d


@dataclass
class Finding:
    """One cause the diagnosis names. ``code`` must be a key of ``CODES``."""

    code: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    severity: Severity | None = None
    # Ranking hints set by checks: a root cause whose fix alone lets the pod run
    # ranks first; ``unblocks`` counts nodes that would fit once it is fixed;
    # ``disruption`` orders fixes (0 = edit the pod, 3 = change hardware).
    root_cause: bool = False
    unblocks: int = 0
    disruption: int = 1
    symptom_of: str | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown finding code {self.code!r}")
        if self.severity is None:
            self.severity = CODES[self.code].severity

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,  # type: ignore[union-attr]
            "summary": self.summary,
            "evidence": list(self.evidence),
            "nodes": list(self.nodes),
            "fixes": [f.to_dict() for f in self.fixes],
            "runbook": runbook_ref(self.code),
        }
        if self.symptom_of:
            d["symptomOf"] = self.symptom_of
        return d


class Status(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass
class CheckResult:
    name: str
    status: Status
    detail: str = ""
    # Whether the verdict depends on this check: a skipped essential check makes
    # an otherwise clean diagnosis ``inconclusive``.
    essential: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail}


VERDICTS = ("blocked", "failing", "at-risk", "healthy", "inconclusive")


@dataclass
class Diagnosis:
    target: dict[str, Any]
    verdict: str
    findings: list[Finding]
    checks: list[CheckResult]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # When no check recognised the cause: what gpuctl saw, verbatim, most telling first.
    observed: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """From the verdict (docs/exit-codes.md): 0 healthy, else 1."""
        return 0 if self.verdict == "healthy" else 1

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "Diagnosis":
        """The diagnosis a ``gpuctl/diagnosis/v1`` document describes (what ``gpuctl
        serve`` answers), for the renderers: ``to_dict`` of the result gives the
        document back. A finding code this version does not know is a ValueError."""
        def fix(f: dict[str, Any]) -> Fix:
            return Fix(summary=str(f.get("summary", "")), commands=list(f.get("commands") or []),
                       snippets=list(f.get("snippets") or []), needs_judgement=str(f.get("needsJudgement") or ""))

        findings = [Finding(code=str(f.get("code")), summary=str(f.get("summary", "")),
                            evidence=list(f.get("evidence") or []), nodes=list(f.get("nodes") or []),
                            fixes=[fix(x) for x in f.get("fixes") or []],
                            severity=Severity(f["severity"]) if f.get("severity") else None,
                            symptom_of=f.get("symptomOf"))
                    for f in doc.get("findings") or []]
        checks = [CheckResult(name=str(c.get("name", "")), status=Status(c.get("status", "passed")),
                              detail=str(c.get("detail", ""))) for c in doc.get("checks") or []]
        return cls(target=dict(doc.get("target") or {}), verdict=str(doc.get("verdict", "inconclusive")),
                   findings=findings, checks=checks, nodes=list(doc.get("nodes") or []),
                   notes=list(doc.get("notes") or []), observed=list(doc.get("observed") or []))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "gpuctl/diagnosis/v1",
            "target": self.target,
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            "checks": [c.to_dict() for c in self.checks],
            "nodes": self.nodes,
            "notes": list(self.notes),
            **({"observed": list(self.observed)} if self.observed else {}),
        }
