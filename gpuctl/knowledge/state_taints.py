"""Taints that are state, not preference (state_taints.yaml): never tolerated, the
fix is to finish or repair what set them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from .messages import load_yaml


@dataclass(frozen=True)
class StateTaint:
    code: str
    set_by: str
    fix: str
    source: str
    key: Optional[str] = None
    prefix: Optional[str] = None


@lru_cache(maxsize=None)
def state_taints() -> tuple[StateTaint, ...]:
    return tuple(StateTaint(r["code"], r["set_by"], r["fix"], r["source"], r.get("key"), r.get("prefix"))
                 for r in load_yaml("state_taints.yaml")["taints"])


def state_taint(key: Optional[str]) -> Optional[StateTaint]:
    """The state a taint key means, or None for an ordinary (preference) taint."""
    if not key:
        return None
    for t in state_taints():
        if (t.key and key == t.key) or (t.prefix and key.startswith(t.prefix)):
            return t
    return None
