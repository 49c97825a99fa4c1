"""Every check, in the order the engine runs it: the one list (troubleshoot's
explicit switch). A new check is a function declared with ``@check`` in its
module and a line here; each finding code has its one room (``codes``), and
``gpuctl runbook CODE --debug`` names it."""

from __future__ import annotations

from typing import Any, Optional

from . import dra, node_health, pending, pod_state, runtime, workload
from .base import CheckSpec

CHECKS = (
    # diagnose node NAME
    node_health.node_ready,
    node_health.gpu_count,
    node_health.gpu_allocatable,
    node_health.device_plugin,
    node_health.operands,
    node_health.xid,
    node_health.ecc,
    node_health.driver_drift,
    node_health.mig,
    node_health.cordon,
    # diagnose pod NAME: scheduling
    pending.scheduler_verdict,
    pending.node_fit,
    pod_state.gpu_request,
    pod_state.queue_admission,
    pod_state.scheduler_activity,
    pod_state.preemption,
    pod_state.volumes,
    dra.dra_claims,
    pod_state.autoscaler,
    # diagnose pod NAME: runtime
    runtime.device_admission,
    runtime.container_start,
    runtime.runtime_class,
    runtime.image_pull,
    runtime.host_oom,
    runtime.container_logs,
    runtime.crash_loop,
    runtime.driver_cuda,
    runtime.node_gpu_health,
    # diagnose pod KIND/NAME: the workload's own objects and events
    workload.workload_events,
)

SPECS: tuple[CheckSpec, ...] = tuple(fn.spec for fn in CHECKS)
TARGETS = ("pod", "node", "workload")


_FOR: dict[str, tuple[tuple[CheckSpec, ...], list[CheckSpec]]] = {}


def checks_for(target: str) -> list[CheckSpec]:
    """The target's checks, in order (a new list; the selection is kept per target
    and SPECS: the engine asks for it once per diagnosis, thousands of times a report)."""
    got = _FOR.get(target)
    if got is None or got[0] is not SPECS:
        got = _FOR[target] = (SPECS, [s for s in SPECS if s.target == target])
    return list(got[1])


def deciding(code: str) -> Optional[CheckSpec]:
    """The check that decides ``code`` (its room), or None."""
    return next((s for s in SPECS if code in s.codes), None)


def reporting(code: str) -> list[CheckSpec]:
    """The other checks that may report ``code``, decided elsewhere."""
    return [s for s in SPECS if code in s.also]


def rooms(code: str) -> dict[str, Any]:
    """Which check decides ``code`` and which others also report it, with the file
    and function each is in (``gpuctl runbook CODE --debug``, docs/architecture.md)."""
    def row(spec: CheckSpec) -> dict[str, str]:
        return {"name": spec.name, "target": spec.target, "where": spec.where}

    spec = deciding(code)
    return {"decidedBy": row(spec) if spec else None, "alsoReportedBy": [row(s) for s in reporting(code)]}
