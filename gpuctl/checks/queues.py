"""What every queueing system's module hands ``pod_state.queue_admission``: why its
queue holds the pod (``QueueHold``), and the helpers they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import Fix


@dataclass
class QueueHold:
    """One queueing system's explanation of why it holds the pod; an empty ``summary``
    is evidence only (e.g. its objects could not be read), never a hold by itself."""

    summary: str
    evidence: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)


def conditions(obj: Any) -> list[dict]:
    """The status conditions of an object, as dicts (malformed entries dropped)."""
    conds = (obj.status or {}).get("conditions") if obj is not None else None
    return [c for c in conds or [] if isinstance(c, dict)]
