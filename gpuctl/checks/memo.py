"""What one run of the engine has already computed, so it is computed once.

The engine makes a :class:`Memo` for a diagnosis (or one for a whole report, so
the replicas of a workload and the pods of ``diagnose pending`` share their fit
matrices) and hands it to the check contexts; the snapshot stays plain data.
Checks read and write it only through their context (``ctx.memo``)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Callable, Generic, Iterator, Optional, TypeVar, overload

T = TypeVar("T")


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


class lazy(Generic[T]):
    """``functools.cached_property`` without its lock: computed on the first read and
    kept in the instance's ``__dict__`` under the same name (later reads find it there
    and never reach the descriptor). Python 3.11's cached_property takes a lock on
    every first read; a pending report makes tens of thousands of check contexts, each
    reading a dozen of these once."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.attrname: Optional[str] = None
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: Optional[type] = None) -> "lazy[T]": ...

    @overload
    def __get__(self, instance: object, owner: Optional[type] = None) -> T: ...

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.attrname] = value
        return value
