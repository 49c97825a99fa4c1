"""What one run of the engine has already computed, so it is computed once.

The engine makes a :class:`Memo` for a diagnosis (or one for a whole report, so
the replicas of a workload and the pods of ``diagnose pending`` share their fit
matrices) and hands it to the check contexts; the snapshot stays plain data.
Checks read and write it only through their context (``ctx.memo``)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Iterator


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


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a diagnosis or report runs (restored
    after, if it was on). A report over a large cluster allocates a few million small
    records (fit matrices, findings) and almost no cycles; left on, the collector
    walks them again and again (about a third of the report's time on 5,000 nodes),
    and frees next to nothing. The snapshot itself is frozen after loading."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
