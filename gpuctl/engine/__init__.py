"""The engine: what a diagnosis is made of, above the checks.

``gpuctl/engine`` picks the checks for a target, runs each isolated, ranks the
findings and builds the diagnosis document; it owns the run's :class:`Memo`.

* ``targets.py``  what the user named (pod, node, workload), with did-you-mean hints
* ``run.py``      running a target's checks: skipped on a gap, error on a crash
* ``ranking.py``  ranking and verdict rules
* ``pod.py``      ``diagnose pod NAME``
* ``node.py``     ``diagnose node NAME`` and the node document
* ``workload.py`` ``diagnose pod KIND/NAME``: its pods' diagnoses and its own check

Imports go one way: ``cli -> reports -> engine -> checks -> model/knowledge``."""

from __future__ import annotations

from ..checks.memo import Memo
from ..findings import Diagnosis
from ..model.snapshot import Snapshot
from .node import diagnose_node
from .pod import diagnose_pod
from .ranking import merge, rank_key, verdict_for
from .run import run_checks
from .targets import (OTHER_KINDS, find_node, find_pod, find_pod_anywhere, parse_target, resolve_pod_target,
                      split_target)
from .workload import diagnose_workload

__all__ = ["Memo", "OTHER_KINDS", "diagnose", "diagnose_node", "diagnose_pod", "diagnose_workload", "find_node",
           "find_pod", "find_pod_anywhere", "merge", "parse_target", "rank_key", "resolve_pod_target", "run_checks",
           "split_target",
           "verdict_for"]


def diagnose(snap: Snapshot, namespace: str, target: str) -> Diagnosis:
    kind, name = split_target(target)
    if kind in (None, "pod", "pods", "po"):
        return diagnose_pod(snap, namespace, name)
    return diagnose_workload(snap, namespace, kind, name)
