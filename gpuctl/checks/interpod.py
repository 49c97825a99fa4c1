"""Inter-pod constraints per node: required pod affinity, required pod
anti-affinity (the pod's own and the pods' already placed), and topology spread
with ``whenUnsatisfiable: DoNotSchedule``, evaluated from the current pods as the
scheduler's filters do (kubernetes pkg/scheduler/framework/plugins/
interpodaffinity/filtering.go and podtopologyspread/filtering.go; the runbook
docs/runbooks/pod-topology-constraint.md says the same for operators).

- A term's topology domain is the value of its ``topologyKey`` label on a node; a
  node without the label is outside every domain of that key.
- Affinity: a node passes when, for every term, a matching pod runs in the node's
  domain; when no pod anywhere matches any term and the pod matches all its own
  terms (the first replica of a group), any node with the keys passes.
- Anti-affinity: a node fails when a pod in its domain matches one of the pod's
  terms, or when a pod in its domain has a term that matches this pod.
- Spread: domains are the values of the key on the nodes that pass the pod's
  nodeSelector and required node affinity (``nodeAffinityPolicy: Honor``, the
  default) and carry every spread key; a node fails when it lacks a key, or when
  placing the pod there makes its domain's count of matching pods exceed the
  emptiest domain's by more than ``maxSkew`` (the emptiest counts 0 while there
  are fewer domains than ``minDomains``).

Namespaces: a term matches pods in its ``namespaces`` and those its
``namespaceSelector`` selects, else the namespace of the pod that carries it. Namespace
labels are not collected: an empty selector selects every namespace, one on
``kubernetes.io/metadata.name`` is decided by the name, any other is assumed to select.

Pure: every result is a function of the pod, the nodes and the pods on them.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..model.matching import (
    label_selector_matches, node_selector_mismatches, required_affinity_matches, untolerated_taints,
)
from ..model.objects import LabelSelector, Node, Pod, PodAffinityTerm, TopologySpreadConstraint
from .memo import Memo, lazy

CODE = "pod-topology-constraint"
NAMESPACE_NAME = "kubernetes.io/metadata.name"
MAX_NAMED = 2


def selector_text(sel: Optional[LabelSelector]) -> str:
    """A label selector as ``kubectl`` writes one: ``app=a, tier in (x,y), !gone``."""
    if sel is None:
        return "nothing"
    parts = [f"{k}={v}" for k, v in sorted(sel.matchLabels.items())]
    for e in sel.matchExpressions:
        op = e.operator
        parts.append(e.key if op == "Exists" else f"!{e.key}" if op == "DoesNotExist"
                     else f"{e.key} {op.lower()} ({','.join(e.values)})")
    return ", ".join(parts) or "every pod"


def namespace_matches(term: PodAffinityTerm, owner_ns: str, ns: str) -> bool:
    """Whether pods in ``ns`` are in the term's namespaces (the term carried by a pod in ``owner_ns``)."""
    sel = term.namespaceSelector
    if sel is None:
        return ns in (term.namespaces or [owner_ns])
    if ns in term.namespaces or (not sel.matchLabels and not sel.matchExpressions):
        return True
    keys = set(sel.matchLabels) | {e.key for e in sel.matchExpressions}
    if keys <= {NAMESPACE_NAME}:
        return label_selector_matches(sel, {NAMESPACE_NAME: ns})
    return True


def _key(term: PodAffinityTerm, owner_ns: str) -> tuple:
    import msgspec
    return (msgspec.json.encode(term), owner_ns)


class InterPod:
    """One pod's inter-pod constraints against the current placement of the others.

    ``pods_by_node``: the non-terminated pods per node, without the pod itself.
    Indexes that do not depend on the node are built once (and shared through
    ``memo`` between pods with the same terms), so each node costs a few lookups."""

    def __init__(self, pod: Pod, nodes: dict[str, Node], pods_by_node: dict[str, list], memo: Optional[Memo] = None):
        self.pod = pod
        self.nodes = nodes
        self.pods_by_node = pods_by_node
        shared = memo is not None and pods_by_node is memo.get("pods_by_node")
        self.memo: Memo = memo if shared else Memo()   # indexes over another pod list are not shared
        self.ns = pod.metadata.namespace or "default"
        self.labels = pod.metadata.labels

    # ------------------------------------------------------------ what the pod asks
    @lazy
    def affinity_terms(self) -> list[PodAffinityTerm]:
        aff = self.pod.spec.affinity
        return list(aff.podAffinity.requiredDuringSchedulingIgnoredDuringExecution) if aff and aff.podAffinity else []

    @lazy
    def anti_terms(self) -> list[PodAffinityTerm]:
        aff = self.pod.spec.affinity
        return list(aff.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution) if aff and aff.podAntiAffinity else []

    @lazy
    def spread(self) -> list[TopologySpreadConstraint]:
        return [c for c in self.pod.spec.topologySpreadConstraints if c.whenUnsatisfiable == "DoNotSchedule"]

    @property
    def own_rules(self) -> bool:
        return bool(self.affinity_terms or self.anti_terms or self.spread)

    @lazy
    def idle(self) -> bool:
        """No rule to evaluate on any node (``reasons`` yields nothing anywhere): no
        terms or spread of the pod's own, and no placed pod's anti-affinity excludes it."""
        return not self.own_rules and not self.excluded_by_placed

    # ------------------------------------------------------------ indexes
    def _domain(self, node_name: Optional[str], key: str) -> Optional[str]:
        node = self.nodes.get(node_name or "")
        return node.metadata.labels.get(key) if node is not None else None

    def _matching(self, term: PodAffinityTerm) -> dict[str, list[str]]:
        """Domain value -> keys of the pods (other than this one) the term matches."""
        key = ("interpod-term",) + _key(term, self.ns)
        out = self.memo.get(key)
        if out is None:
            out = {}
            for node_name, pods in self.pods_by_node.items():
                value = self._domain(node_name, term.topologyKey)
                if value is None:
                    continue
                for p in pods:
                    if namespace_matches(term, self.ns, p.metadata.namespace or "default") and \
                            label_selector_matches(term.labelSelector, p.metadata.labels):
                        out.setdefault(value, []).append(p.key)
            self.memo[key] = out
        return out

    @lazy
    def _affinity(self) -> list[tuple[PodAffinityTerm, dict[str, list[str]]]]:
        return [(t, self._matching(t)) for t in self.affinity_terms]

    @lazy
    def _first_of_group(self) -> bool:
        """No pod matches any affinity term, and the pod matches all of them itself."""
        return all(not m for _, m in self._affinity) and all(
            namespace_matches(t, self.ns, self.ns) and label_selector_matches(t.labelSelector, self.labels)
            for t in self.affinity_terms)

    @lazy
    def _anti(self) -> list[tuple[PodAffinityTerm, dict[str, list[str]]]]:
        return [(t, self._matching(t)) for t in self.anti_terms]

    @lazy
    def _placed_anti_groups(self) -> list[tuple[PodAffinityTerm, str, dict[tuple[str, str], str]]]:
        """The required anti-affinity terms of the placed pods, grouped by term and
        namespace (the replicas of a workload share one): (term, the namespace of the
        pods that carry it, (topologyKey, value) -> the first such pod there). Built
        once per snapshot; each pod then matches every distinct term once."""
        import msgspec

        out = self.memo.get("placed-anti-affinity")
        if out is None:
            groups: dict[tuple, tuple[PodAffinityTerm, str, dict[tuple[str, str], str]]] = {}
            # the placed pods with required anti-affinity, where a report of many Pending
            # pods listed them per node (context.warm_bound_pods): the same pods in the same order
            found = self.memo.get("placed-anti-candidates")
            by_node = self.pods_by_node
            if found is not None and found[0] is by_node:
                anti = found[1]
                by_node = {n: anti[n] for n in by_node if n in anti}
            for node_name, pods in by_node.items():
                for p in pods:
                    aff = p.spec.affinity
                    if aff is None:   # most pods (a loop over every placed pod)
                        continue
                    anti = aff.podAntiAffinity
                    for t in anti.requiredDuringSchedulingIgnoredDuringExecution if anti is not None else ():
                        value = self._domain(node_name, t.topologyKey)
                        if value is None:
                            continue
                        ns = p.metadata.namespace or "default"
                        g = groups.setdefault((msgspec.json.encode(t), ns), (t, ns, {}))
                        g[2].setdefault((t.topologyKey, value), p.key)
            out = list(groups.values())
            self.memo["placed-anti-affinity"] = out
        return out

    @lazy
    def excluded_by_placed(self) -> dict[tuple[str, str], str]:
        """(topologyKey, value) -> the placed pod whose anti-affinity excludes this pod there."""
        out: dict[tuple[str, str], str] = {}
        for t, ns, domains in self._placed_anti_groups:
            if namespace_matches(t, ns, self.ns) and label_selector_matches(t.labelSelector, self.labels):
                for pair, key in domains.items():
                    out.setdefault(pair, key)
        return out

    def _spread_selector(self, c: TopologySpreadConstraint) -> LabelSelector:
        extra = {k: self.labels[k] for k in c.matchLabelKeys if k in self.labels}
        sel = c.labelSelector or LabelSelector()
        if not extra:
            return sel
        return LabelSelector(matchLabels={**sel.matchLabels, **extra}, matchExpressions=list(sel.matchExpressions))

    def _spread_eligible(self, node: Node, c: TopologySpreadConstraint) -> bool:
        spec = self.pod.spec
        if c.nodeAffinityPolicy != "Ignore":
            if node_selector_mismatches(spec.nodeSelector, node):
                return False
            na = spec.affinity.nodeAffinity if spec.affinity else None
            req = na.requiredDuringSchedulingIgnoredDuringExecution if na else None
            if req is not None and not required_affinity_matches(req.nodeSelectorTerms, node):
                return False
        if c.nodeTaintsPolicy == "Honor" and untolerated_taints(node, spec.tolerations):
            return False
        labels = node.metadata.labels
        return all(x.topologyKey in labels for x in self.spread)

    @lazy
    def _spread(self) -> list[tuple[TopologySpreadConstraint, dict[str, int], int, int]]:
        """(constraint, matching pods per domain, the emptiest domain's count, 1 if the pod matches itself)."""
        import msgspec
        enc = msgspec.json.encode
        spec = self.pod.spec
        out = []
        for c in self.spread:
            sel = self._spread_selector(c)
            key = ("interpod-spread", self.ns, enc(c), enc(sel), tuple(x.topologyKey for x in self.spread),
                   enc(spec.nodeSelector), enc(spec.affinity.nodeAffinity if spec.affinity else None),
                   enc(spec.tolerations) if c.nodeTaintsPolicy == "Honor" else b"")
            counts = self.memo.get(key)
            if counts is None:
                counts = {}
                for name, node in self.nodes.items():
                    if not self._spread_eligible(node, c):
                        continue
                    value = node.metadata.labels[c.topologyKey]
                    counts[value] = counts.get(value, 0) + sum(
                        1 for p in self.pods_by_node.get(name, ())
                        if (p.metadata.namespace or "default") == self.ns and not p.metadata.deletionTimestamp
                        and label_selector_matches(sel, p.metadata.labels))
                self.memo[key] = counts
            least = min(counts.values()) if counts else 0
            if c.minDomains and len(counts) < c.minDomains:
                least = 0
            out.append((c, counts, least, int(label_selector_matches(sel, self.labels))))
        return out

    @lazy
    def signature(self) -> tuple:
        """What the per-node result depends on besides the nodes: shared by the
        replicas of one workload (same rules, namespace and matched labels)."""
        if not self.spread and not self.excluded_by_placed:
            return ("", (), ())   # what the lines below make of no rule, without them
        import msgspec
        enc = msgspec.json.encode
        spread = tuple((enc(c), enc(sel), label_selector_matches(sel, self.labels))
                       for c, sel in ((c, self._spread_selector(c)) for c in self.spread))
        # the namespace matters only to the spread's counts (the pod's own terms make the
        # fit unshared; the placed pods' terms are already matched in excluded_by_placed)
        return (self.ns if spread else "", tuple(sorted(self.excluded_by_placed.items())), spread)

    # ------------------------------------------------------------ per node
    def reasons(self, node: Node) -> Iterable[str]:
        """Why each rule keeps the pod off ``node``, one line per rule, naming the pods it is tied to."""
        name = node.metadata.name
        labels = node.metadata.labels
        named: set[str] = set()
        for t, m in self._anti:
            value = labels.get(t.topologyKey)
            if value is not None and m.get(value):
                named.update(m[value])
                where = "runs" if t.topologyKey == "kubernetes.io/hostname" else f"is in {t.topologyKey}={value} with"
                yield (f"node/{name} {where} pod {_named(m[value])}, which the pod's required anti-affinity "
                       f"({selector_text(t.labelSelector)}) excludes")
        for (key, value), other in sorted(self.excluded_by_placed.items()):
            if labels.get(key) == value and other not in named:   # mutual anti-affinity is named once
                where = "runs" if key == "kubernetes.io/hostname" else f"is in {key}={value} with"
                yield f"node/{name} {where} pod {other}, whose required anti-affinity excludes this pod"
        for t, m in self._affinity:
            value = labels.get(t.topologyKey)
            if value is None:
                yield f"node/{name} has no label {t.topologyKey}, the topologyKey of the pod's required pod affinity"
            elif not m.get(value) and not self._first_of_group:
                there = (f"; matching pods run in {t.topologyKey}=" + ", ".join(
                    f"{v} ({_named(ks)})" for v, ks in sorted(m.items())[:MAX_NAMED]) if m
                    else "; no pod matches it anywhere")
                yield (f"node/{name}: no pod matching the pod's required pod affinity ({selector_text(t.labelSelector)}) "
                       f"runs in its {t.topologyKey}={value}{there}")
        for c, counts, least, me in self._spread:
            value = labels.get(c.topologyKey)
            if value is None:
                yield f"node/{name} has no label {c.topologyKey}, which the pod's topology spread constraint requires"
                continue
            if value not in counts:
                continue   # outside the constraint's domains: the nodeSelector/affinity finding covers it
            skew = counts[value] + me - least
            if skew > c.maxSkew:
                emptiest = sorted(v for v, n in counts.items() if n == least)
                yield (f"node/{name}: placing the pod in {c.topologyKey}={value} makes the skew {skew} "
                       f"(maxSkew {c.maxSkew}): {counts[value]} matching pods there, {least} in "
                       + (f"{c.topologyKey}={emptiest[0]}" if emptiest and least == min(counts.values())
                          else f"a missing domain (minDomains {c.minDomains})"))


def _named(keys: list[str]) -> str:
    return ", ".join(keys[:MAX_NAMED]) + (f" (+{len(keys) - MAX_NAMED} more)" if len(keys) > MAX_NAMED else "")
