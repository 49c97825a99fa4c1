"""A Deployment's previous revision that did not have the problem.

When the pods of an older ReplicaSet of the pod's Deployment tolerated the taint
(or asked for what the nodes advertise, or selected the nodes with room) and the
current revision dropped it, the least surprising fix is to roll back:
``kubectl rollout undo deployment/NAME --to-revision=N``. It is offered before
adding a toleration by hand and before removing a GPU pool's taint from nodes,
which would let every other pod onto GPU nodes.

Revisions are read as ``kubectl rollout history`` reads them: the
``deployment.kubernetes.io/revision`` annotation of the ReplicaSets the
Deployment controls.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import msgspec

from ..findings import Fix
from ..model.matching import taint_text, tolerates
from ..model.objects import Taint, Toleration
from .context import PodContext
from .fixes import kubectl, workload_ref

REVISION = "deployment.kubernetes.io/revision"


def _revision(obj: Any) -> Optional[int]:
    try:
        return int(obj.metadata.annotations.get(REVISION, ""))
    except ValueError:
        return None


def revisions(ctx: PodContext) -> tuple[Optional[str], int, list[tuple[int, dict]]]:
    """The Deployment's name, its current revision and the older ones, newest first,
    each with its pod template spec."""
    ref = workload_ref(ctx)
    kind, _, name = ref.partition("/")
    if kind != "deployment":
        return None, 0, []
    dep = ctx.snap.find("Deployment", ctx.ns, name)
    owned = []
    for rs in ctx.snap.objects("ReplicaSet"):
        if rs.metadata.namespace not in (ctx.ns, None):
            continue
        owners = [o for o in rs.metadata.ownerReferences if o.kind == "Deployment" and o.name == name]
        if not owners or (dep is not None and dep.metadata.uid and owners[0].uid not in (None, dep.metadata.uid)):
            continue
        rev = _revision(rs)
        if rev is not None:
            owned.append((rev, ((rs.spec or {}).get("template") or {}).get("spec") or {}))
    if not owned:
        return name, 0, []
    current = _revision(dep) if dep is not None else None
    current = current or max(r for r, _ in owned)
    older = sorted(((r, s) for r, s in owned if r < current), key=lambda x: -x[0])
    return name, current, older


def _tolerations(spec: dict) -> list[Toleration]:
    try:
        return msgspec.convert(spec.get("tolerations") or [], list[Toleration])
    except msgspec.ValidationError:
        return []


def _rollback(ctx: PodContext, good: Callable[[dict], bool], what: str) -> Optional[Fix]:
    name, current, older = revisions(ctx)
    for rev, spec in older:
        if good(spec):
            return Fix(f"Revision {rev} of deployment/{name} {what}; revision {current} does not. "
                       "If that change was a mistake, roll back",
                       [f"{kubectl(ctx)} rollout history deployment/{name} --revision={rev}",
                        f"{kubectl(ctx)} rollout undo deployment/{name} --to-revision={rev}"])
    return None


def rollback_fix(ctx: PodContext, kind: str, taints: list[Taint]) -> Optional[Fix]:
    """A rollback when an older revision tolerated every one of ``taints``."""
    if kind != "toleration" or not taints:
        return None
    text = ", ".join(taint_text(t) for t in taints)
    return _rollback(ctx, lambda spec: all(any(tolerates(tol, t) for tol in _tolerations(spec)) for t in taints),
                     f"tolerated {text}")


def rollback_for_selector(ctx: PodContext, accepts: Callable[[dict[str, str]], bool], nodes_text: str) -> Optional[Fix]:
    """A rollback when an older revision's nodeSelector admitted the nodes with room."""
    return _rollback(ctx, lambda spec: bool(spec.get("nodeSelector") != ctx.pod.spec.nodeSelector)
                     and accepts(spec.get("nodeSelector") or {}), f"selected {nodes_text}")


def rollback_for_resource(ctx: PodContext, wrong: str, right: str) -> Optional[Fix]:
    """A rollback when an older revision requested ``right`` where this one asks ``wrong``."""
    def asked(spec: dict) -> bool:
        for c in spec.get("containers") or []:
            res = c.get("resources") or {}
            if any(right in (res.get(p) or {}) for p in ("limits", "requests")):
                return True
        return False

    return _rollback(ctx, asked, f"requested {right}")
