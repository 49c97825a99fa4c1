"""The consolidation hint is a plan that works: each pod it moves fits, whole, on a
node that still has room for it after the earlier moves, and the moves free enough
GPUs on one node for the Pending pod. Where no such plan exists, there is no hint."""

from __future__ import annotations

import re

from conftest import ROOT

STRANDED = ROOT / "tests" / "capacity" / "fragmentation-stranded" / "snapshot"
DEMO = ROOT / "examples" / "demo-cluster"
MOVE = re.compile(r"(?P<pod>[\w.-]+/[\w.-]+) \((?P<q>\d+)\) to (?P<dest>[\w.-]+)")


def test_every_move_fits_after_the_earlier_ones(cli):
    doc = cli("nodes", "capacity", "--snapshot", str(STRANDED), "-o", "json").json()
    pool = doc["pools"][0]
    hint = pool["consolidationHint"]
    free = {r["node"]: r["free"] for r in doc["rows"] if r["pool"] == pool["pool"]}
    target = re.search(r"on (\S+) for a Pending (\d+)-GPU pod", hint)
    node, need = target.group(1), int(target.group(2))
    moves = list(MOVE.finditer(hint))
    assert moves
    for m in moves:
        q, dest = int(m["q"]), m["dest"]
        assert dest != node and free[dest] >= q, f"{m['pod']} ({q}) does not fit on {dest} ({free[dest]} free)"
        free[dest] -= q
        free[node] += q
    assert free[node] >= need


def test_no_hint_when_a_pod_to_move_fits_nowhere(cli):
    # The demo's h100 pool: freeing ip-10-42-34-122 means moving a 4-GPU pod, and the other nodes have 2, 2 and 1 free
    # (the hint once added those up to "5 free to take them").
    doc = cli("nodes", "capacity", "--snapshot", str(DEMO), "-o", "json").json()
    h100 = next(p for p in doc["pools"] if p["pool"] == "h100")
    assert h100["pendingPods"] == 1 and h100["fragmentation"]["largestFreeBlock"] == 3
    assert "consolidationHint" not in h100


def _place_reference(movers, free):
    """The plain first-fit decreasing the fast _place must agree with: sort the pool for every pod."""
    left = dict(free)
    plan = []
    for q, p in sorted(movers, key=lambda x: -x[0]):
        dest = next((n for n, f in sorted(left.items(), key=lambda kv: (kv[1], kv[0])) if f >= q), None)
        if dest is None:
            return None
        left[dest] -= q
        plan.append((q, p, dest))
    return plan


def test_the_fast_placement_is_first_fit_decreasing():
    from hypothesis import given, settings, strategies as st

    from gpuctl.reports.capacity import _place

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.dictionaries(st.sampled_from([f"n{i}" for i in range(8)]), st.integers(0, 8).map(float), min_size=1),
           st.lists(st.integers(1, 8).map(float), min_size=1, max_size=5), st.sampled_from([f"n{i}" for i in range(8)]))
    def check(free, sizes, exclude):
        movers = [(q, f"p{i}") for i, q in enumerate(sizes)]
        order = sorted((f, n) for n, f in free.items())
        expected = _place_reference(movers, {n: f for n, f in free.items() if n != exclude})
        assert _place(movers, order, free, exclude) == expected

    check()


def _first_plan_reference(movers, size, missing, order, free, exclude):
    """The straightforward search _first_plan must agree with: every combination of
    ``size`` pods that frees enough, by sum then in ``combinations`` order, placed in turn."""
    from itertools import combinations

    from gpuctl.reports.capacity import _place

    options = sorted((c for c in combinations(movers, size) if sum(q for q, _ in c) >= missing),
                     key=lambda c: sum(q for q, _ in c))
    return next((pl for c in options if (pl := _place(list(c), order, free, exclude)) is not None), None)


def test_the_plan_search_by_request_sizes_is_the_search_over_every_combination():
    from hypothesis import example, given, settings, strategies as st

    from gpuctl.reports.capacity import MAX_MOVERS, _first_plan

    nodes = [f"n{i}" for i in range(6)]
    # equal sums of different sizes ({1, 3} and {2, 2}) where the order of the ties decides;
    # fractions, whose sums must be added in the same order
    sizes = st.sampled_from([0.1, 0.2, 0.5, 1.0, 1.0, 2.0, 2.0, 3.0, 4.0, 8.0])

    @settings(max_examples=500, deadline=None, derandomize=True)
    @example({"n1": 8.0, "n2": 8.0}, [1.0, 1.0, 2.0, 2.0, 3.0], 2, 4.0, "n0")
    @given(st.dictionaries(st.sampled_from(nodes), st.sampled_from([0.0, 0.3, 1.0, 2.0, 3.0, 3.5, 4.0, 8.0, 8.0]), min_size=1),
           st.lists(sizes, min_size=1, max_size=MAX_MOVERS), st.integers(1, MAX_MOVERS),
           st.sampled_from([0.1, 0.3, 0.7, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0, 9.0]), st.sampled_from(nodes))
    def check(free, qs, size, missing, exclude):
        movers = sorted(((q, f"p{i:02d}") for i, q in enumerate(qs)), key=lambda x: (x[0], x[1]))
        size = min(size, len(movers))
        order = sorted((f, n) for n, f in free.items())
        assert (_first_plan(movers, size, missing, order, free, exclude)
                == _first_plan_reference(movers, size, missing, order, free, exclude))

    check()
