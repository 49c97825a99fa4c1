"""Scheduling predicates, as the scheduler's plugins evaluate them.

Pure functions over the slim records: taints vs tolerations (TaintToleration),
``nodeSelector`` and required node affinity (NodeAffinity, including Gt/Lt and
``matchFields``), label selectors for pod (anti-)affinity. Each mirrors the
upstream plugin's semantics so the fit matrix agrees with the scheduler.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .objects import LabelSelector, Node, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")

# Taints Kubernetes itself sets for a node's state; they belong to the state's
# finding code, never to untolerated-taint (docs/runbooks/README.md, precedence).
STATE_TAINTS = {
    "node.kubernetes.io/not-ready": "node-not-ready",
    "node.kubernetes.io/unreachable": "node-not-ready",
    "node.kubernetes.io/unschedulable": "node-unschedulable",
    "node.kubernetes.io/memory-pressure": "node-not-ready",
    "node.kubernetes.io/disk-pressure": "node-not-ready",
    "node.kubernetes.io/pid-pressure": "node-not-ready",
    "node.kubernetes.io/network-unavailable": "node-not-ready",
    "node.cloudprovider.kubernetes.io/uninitialized": "node-not-ready",
    "node.cloudprovider.kubernetes.io/shutdown": "node-not-ready",
}


def tolerates(tol: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint`` from k8s.io/api/core/v1/toleration.go."""
    return _tolerates(tol.key, tol.operator, tol.value, tol.effect, taint.key, taint.value, taint.effect)


def tolerates_raw(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``tolerates`` for a toleration and a taint as the API's dicts (DRA device taints,
    Kueue ResourceFlavor taints: the same rules as a pod's)."""
    return _tolerates(tol.get("key"), tol.get("operator"), tol.get("value"), tol.get("effect"),
                      taint.get("key"), taint.get("value"), taint.get("effect"))


def _tolerates(key: Any, operator: Any, value: Any, effect: Any, taint_key: Any, taint_value: Any, taint_effect: Any) -> bool:
    if effect and effect != taint_effect:
        return False
    op = operator or "Equal"
    if not key:
        # An empty key with operator Exists matches every taint.
        return op == "Exists"
    if key != taint_key:
        return False
    if op == "Exists":
        return True
    if op == "Equal":
        return (value or "") == (taint_value or "")
    return False


def untolerated_taints(node: Node, tolerations: list[Toleration]) -> list[Taint]:
    return [
        t for t in node.spec.taints
        if t.effect in SCHEDULING_EFFECTS and not any(tolerates(tol, t) for tol in tolerations)
    ]


def taint_text(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def _int(text: str) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(req.values) != 1:
            return False
        a, b = _int(value), _int(req.values[0])
        if a is None or b is None:
            return False
        return a > b if op == "Gt" else a < b
    return False


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """All expressions and fields of one term (AND); an empty term matches nothing."""
    if not term.matchExpressions and not term.matchFields:
        return False
    labels = node.metadata.labels
    for req in term.matchExpressions:
        if not requirement_matches(req, labels.get(req.key)):
            return False
    for req in term.matchFields:
        # The only supported field is metadata.name.
        value = node.metadata.name if req.key == "metadata.name" else None
        if not requirement_matches(req, value):
            return False
    return True


def node_selector_mismatches(selector: dict[str, str], node: Node) -> dict[str, str | None]:
    """The nodeSelector keys the node does not satisfy, with the node's value (None: absent)."""
    labels = node.metadata.labels
    return {k: labels.get(k) for k, v in selector.items() if labels.get(k) != v}


def required_affinity_matches(terms: list[NodeSelectorTerm], node: Node) -> bool:
    """Terms are ORed; no terms means no constraint."""
    if not terms:
        return True
    return any(term_matches(t, node) for t in terms)


def describe_requirement(req: NodeSelectorRequirement) -> str:
    if req.operator in ("Exists", "DoesNotExist"):
        return f"{req.key} {req.operator}"
    return f"{req.key} {req.operator} ({', '.join(req.values)})"


def label_selector_matches(sel: LabelSelector | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector: a nil selector matches nothing, an empty one everything."""
    if sel is None:
        return False
    for k, v in sel.matchLabels.items():
        if labels.get(k) != v:
            return False
    for req in sel.matchExpressions:
        value = labels.get(req.key)
        op = req.operator
        if op == "In" and (value is None or value not in req.values):
            return False
        if op == "NotIn" and value is not None and value in req.values:
            return False
        if op == "Exists" and value is None:
            return False
        if op == "DoesNotExist" and value is not None:
            return False
    return True


_PUNCT = re.compile(r"[^a-z0-9]")


def near_miss(want: str, have: str) -> str | None:
    """How a label value (or key) that is not the wanted one nearly is, in the words an
    expert would quote ("only by case", "only by the suffix '-SHARED'"); None when they
    are equal or simply different. The usual slips: case (``a100`` for ``A100``),
    ``-``/``_``/``.`` swapped, a short form of a GFD product name
    (``NVIDIA-A100`` for ``NVIDIA-A100-SXM4-80GB``), a sharing suffix (``-SHARED``)."""
    if want == have or not want or not have:
        return None
    if want.lower() == have.lower():
        return "only by case"
    if want.strip() == have.strip():
        return "only by surrounding spaces"
    if _PUNCT.sub("", want.lower()) == _PUNCT.sub("", have.lower()):
        return "only by punctuation"
    if min(len(want), len(have)) >= 3:
        if have.startswith(want):
            return f"only by the suffix '{have[len(want):]}'"
        if want.startswith(have):
            return f"only by the suffix '{want[len(have):]}' the node lacks"
        if have.endswith(want):
            return f"only by the prefix '{have[:-len(want)]}'"
        if want.endswith(have):
            return f"only by the prefix '{want[:-len(have)]}' the node lacks"
    return None


def near_label(want_key: str, want_value: str | None, labels: dict[str, str]) -> str | None:
    """The node's label that nearly satisfies ``want_key[=want_value]``, described
    ("has gpu-type=A100, which differs only by case"); None when none does."""
    have = labels.get(want_key)
    if have is not None and want_value is not None:
        why = near_miss(want_value, have)
        return f"has {want_key}={have}, which differs from {want_value} {why}" if why else None
    if have is None:
        for k, v in labels.items():
            why = near_miss(want_key, k)
            if why in ("only by case", "only by punctuation", "only by surrounding spaces"):
                return f"has the label {k}={v}, whose key differs from {want_key} {why}"
    return None
