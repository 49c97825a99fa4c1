"""Quantities, effective requests and the scheduling predicates, against the
semantics of the upstream scheduler plugins."""

from __future__ import annotations

import msgspec
import pytest

from gpuctl.model.matching import required_affinity_matches, tolerates, untolerated_taints
from gpuctl.model.objects import Node, NodeSelector, NodeSpec, Pod, Taint, Toleration
from gpuctl.model.quantity import format_quantity, parse_quantity
from gpuctl.model.requests import pod_requests


@pytest.mark.parametrize("text, value", [("500m", 0.5), ("2", 2), ("16Gi", 16 * 2**30), ("1e3", 1000), ("0.5", 0.5),
                                         ("100Mi", 100 * 2**20), ("1k", 1000), (8, 8)])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "NaN", "1Zi", None, True])
def test_parse_quantity_rejects(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_format_quantity():
    assert format_quantity("cpu", 0.5) == "500m" and format_quantity("memory", 16 * 2**30) == "16Gi"
    assert format_quantity("nvidia.com/gpu", 8) == "8"


def pod(spec: dict) -> Pod:
    return msgspec.convert({"metadata": {"name": "p", "namespace": "ml"}, "spec": spec}, Pod)


def test_effective_requests_with_init_sidecars_and_overhead():
    p = pod({
        "initContainers": [
            {"name": "fetch", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
            {"name": "warm", "resources": {"requests": {"cpu": "3"}}},
        ],
        "containers": [
            {"name": "train", "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "2", "memory": "8Gi"}}},
        ],
        "overhead": {"cpu": "100m"},
    })
    req = pod_requests(p)
    # max(init fetch 4, warm 3 + sidecar 0.5, apps 2 + sidecar 0.5) + overhead
    assert req["cpu"] == pytest.approx(4.1)
    assert req["memory"] == 8 * 2**30 + 256 * 2**20
    assert req["nvidia.com/gpu"] == 8   # limit stands in for the request of an extended resource


def test_tolerations():
    t = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
    assert tolerates(Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"), t)
    assert tolerates(Toleration(key="nvidia.com/gpu", operator="Equal", value="present"), t)
    assert not tolerates(Toleration(key="nvidia.com/gpu", operator="Equal", value="absent"), t)
    assert tolerates(Toleration(operator="Exists"), t)          # empty key + Exists tolerates everything
    assert not tolerates(Toleration(operator="Equal"), t)
    assert not tolerates(Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoExecute"), t)
    node = Node(spec=msgspec.convert({"taints": [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "NoExecute"}]},
                                     NodeSpec))
    assert [x.key for x in untolerated_taints(node, [])] == ["b"]   # PreferNoSchedule never blocks


def node(labels: dict, name: str = "gpu-1") -> Node:
    return msgspec.convert({"metadata": {"name": name, "labels": labels}}, Node)


def terms(*exprs, fields=()):
    sel = {"nodeSelectorTerms": [{"matchExpressions": list(exprs), "matchFields": list(fields)}]}
    return msgspec.convert(sel, NodeSelector).nodeSelectorTerms


@pytest.mark.parametrize("expr, ok", [
    ({"key": "gpu-type", "operator": "In", "values": ["a100", "h100"]}, True),
    ({"key": "gpu-type", "operator": "NotIn", "values": ["a100"]}, False),
    ({"key": "gpu-type", "operator": "Exists"}, True),
    ({"key": "zone", "operator": "DoesNotExist"}, True),
    ({"key": "gpu-memory-gib", "operator": "Gt", "values": ["40"]}, True),
    ({"key": "gpu-memory-gib", "operator": "Lt", "values": ["40"]}, False),
    ({"key": "gpu-type", "operator": "Gt", "values": ["1"]}, False),   # not an integer
])
def test_affinity_operators(expr, ok):
    n = node({"gpu-type": "a100", "gpu-memory-gib": "80"})
    assert required_affinity_matches(terms(expr), n) is ok


def test_match_fields_and_terms_are_ored():
    n = node({}, name="gpu-7")
    assert required_affinity_matches(terms(fields=[{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}]), n)
    both = terms({"key": "x", "operator": "Exists"}) + terms(fields=[{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}])
    assert required_affinity_matches(both, n)
