"""How far YAML aliases expand, counted before anything is built from the document.

A "billion laughs" file (nine levels of nine aliases are 387 million nodes) is small
on disk but every walk of the data it becomes visits each expanded node. Both readers
of untrusted YAML, snapshots (collect/files.py) and `gpuctl fit` manifests
(model/manifests.py), refuse one before building it, each with its own limit and
message.
"""

from __future__ import annotations

from typing import Any, Iterable


def expands_beyond(docs: Iterable[Any], limit: int) -> bool:
    """Whether composed YAML documents (``yaml.compose_all``) hold more than ``limit``
    nodes once their aliases are expanded. Sizes are memoised per node, so the count
    costs one pass over the composed graph, not over its expansion."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        value = node.value
        n = 1
        if isinstance(value, list):
            for child in value:
                n += sum(size(c) for c in child) if isinstance(child, tuple) else size(child)
                if n > limit:
                    break
        sizes[id(node)] = n
        return n

    total = 0
    for doc in docs:
        if doc is not None:
            total += size(doc)
        if total > limit:
            return True
    return False
