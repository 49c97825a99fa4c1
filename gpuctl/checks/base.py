"""What a check is. A check is a pure function ``(ctx) -> Iterable[Finding]`` that
declares, with :func:`check`:

* ``codes``: the finding codes it decides - it is their one room (a test proves
  every code of the catalogue has exactly one such check, a runbook and a scenario);
* ``also``: codes decided elsewhere that it may also report, seen from another
  target or another source (the scheduler's own words, a container's log);
* ``needs``: the data sets it cannot decide without (keys of ``Snapshot.gaps``): a
  missing one makes it ``skipped``; ``reads``: the others it reads when present.
  A test proves the live collector of each command fetches (or records a gap for)
  every data set its checks read, and that ``snapshot save`` keeps them;
* ``target``: ``pod``, ``node`` or ``workload``; ``essential``: the verdict depends on it.

Checks are listed, in order, in ``gpuctl/checks/registry.py``; the engine runs them
isolated and turns a missing data set into ``skipped`` and a crash into ``error``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..findings import Finding


@dataclass(frozen=True)
class CheckSpec:
    name: str
    fn: Callable[[Any], Iterable[Finding]]
    needs: tuple[str, ...]
    applies: Callable[[Any], bool]
    essential: bool   # the verdict depends on it: skipped -> inconclusive
    target: str       # "pod" | "node" | "workload"
    codes: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()   # every data set it reads, its needs included

    @property
    def where(self) -> str:
        """``gpuctl/checks/FILE.py:function``, for ``gpuctl runbook CODE --debug``."""
        return f"gpuctl/checks/{self.fn.__module__.rsplit('.', 1)[-1]}.py:{self.fn.__name__}"


@dataclass(frozen=True)
class Note:
    """Something a check has to say without a finding (its result's detail)."""

    text: str


@dataclass(frozen=True)
class Partial:
    """Yielded by a check that ran on part of its data because some object it needed
    could not be fully read: its findings stand for the rest, and the engine marks
    it ``error`` with this text naming the object and the field."""

    text: str


class DataUnavailable(Exception):
    """Raised by a check that finds, while running, that the data it needs could
    not be read (a per-container log, say); the engine marks it skipped."""


def check(name: str, *, codes: Iterable[str] = (), also: Iterable[str] = (), needs: tuple[str, ...] = (),
          reads: tuple[str, ...] = (), applies: Callable[[Any], bool] | None = None, essential: bool = False,
          target: str = "pod"):
    """Declare a check: the function keeps working as itself and carries its
    :class:`CheckSpec` as ``fn.spec`` for the registry."""
    def declare(fn: Callable[[Any], Iterable[Finding]]):
        fn.spec = CheckSpec(name, fn, tuple(needs), applies or (lambda ctx: True), essential, target,  # type: ignore[attr-defined]
                            tuple(codes), tuple(c for c in also if c not in tuple(codes)),
                            tuple(dict.fromkeys((*needs, *reads))))
        return fn

    return declare
