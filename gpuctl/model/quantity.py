"""Kubernetes resource quantities (``resource.Quantity``) as plain numbers.

``parse_quantity("500m") == 0.5``, ``parse_quantity("16Gi") == 17179869184``.
Quantities repeat a lot across 150,000 pods, so parsing is cached. A value the API
server would reject raises ``ValueError``; callers decide what that means.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

_SUFFIX = {
    "": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "P": 1e15, "E": 1e18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
    "Pi": 2**50, "Ei": 2**60,
}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")


def parse_quantity(text: object) -> float:
    """The value of a quantity; ``ValueError`` for anything that is not one (a
    string that does not parse, null, a boolean, a list, a map)."""
    try:
        return _parse(text)
    except TypeError:   # unhashable: a list or a map where a quantity belongs
        raise ValueError(f"not a quantity: {text!r}") from None


@lru_cache(maxsize=4096)
def _parse(text: object) -> float:
    if isinstance(text, bool) or text is None:
        raise ValueError(f"not a quantity: {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _RE.match(str(text).strip())
        if not m:
            raise ValueError(f"not a quantity: {text!r}")
        number, exponent, suffix = m.groups()
        value = float(number + (exponent or "")) * _SUFFIX[suffix or ""]
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"not a quantity: {text!r}")
    return value


def format_quantity(resource: str, value: float) -> str:
    """Human form of an amount of ``resource`` (cpu in cores/millicores, memory in Gi)."""
    if resource == "cpu":
        if value and value < 1 or value != int(value):
            return f"{round(value * 1000)}m"
        return str(int(value))
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if abs(value) >= size:
                amount = value / size
                return f"{amount:.0f}{unit}" if amount == int(amount) else f"{amount:.1f}{unit}"
        return str(int(value))
    return str(int(value)) if value == int(value) else f"{value:g}"
