"""What one run of the engine has already computed, so it is computed once.

The engine makes a :class:`Memo` for a diagnosis (or one for a whole report, so
the replicas of a workload and the pods of ``diagnose pending`` share their fit
matrices) and hands it to the check contexts; the snapshot stays plain data.
Checks read and write it only through their context (``ctx.memo``)."""

from __future__ import annotations

from typing import Any


class Memo(dict):
    """key -> computed value. ``share_across_owners``: pods with the same scheduling
    constraints share node-fit findings even when different workloads own them (a
    group report that shows each group's first fix only)."""

    def __init__(self, share_across_owners: bool = False) -> None:
        super().__init__()
        self.share_across_owners = share_across_owners

    def __repr__(self) -> str:   # a memo can hold thousands of fit matrices
        return f"Memo({len(self)} entries, share_across_owners={self.share_across_owners})"

    def get_or(self, key: Any, compute):
        if key not in self:
            self[key] = compute()
        return self[key]
