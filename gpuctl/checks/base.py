"""The check registry. A check is a pure function ``(ctx) -> Iterable[Finding]``
registered with the data sets it needs; the engine runs it isolated and turns a
missing data set (a Gap) into ``skipped`` and a crash into ``error``."""

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
    target: str       # "pod" (more targets in later issues)


REGISTRY: list[CheckSpec] = []


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


def check(name: str, *, needs: tuple[str, ...] = (), applies: Callable[[Any], bool] | None = None,
          essential: bool = False, target: str = "pod"):
    def register(fn: Callable[[Any], Iterable[Finding]]):
        REGISTRY.append(CheckSpec(name, fn, needs, applies or (lambda ctx: True), essential, target))
        return fn

    return register


def checks_for(target: str) -> list[CheckSpec]:
    # Importing the modules registers their checks.
    from . import node_health, pending, pod_state, runtime  # noqa: F401

    return [c for c in REGISTRY if c.target == target]
