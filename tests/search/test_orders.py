"""Exact orders for sequential scatter and gather, checked against brute force over all permutations (n <= 8)."""

from __future__ import annotations

import itertools

import pytest

from hnowmodel import predict, search, trees
from hnowmodel.errors import InputError

from .profiles import PROF, THREE

LAYOUTS = [
    ["fast", "slow", "fast", "slow", "slow", "fast", "slow", "fast"],  # n = 8: 5040 orders
    ["slow", "fast", "medium", "slow", "medium", "fast"],
    ["medium", "slow", "fast", "slow"],
]
SIZES = [0, 4096]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scatter_order_rule_equals_brute_force(layout):
    n = len(layout)
    brute = None
    for p in itertools.permutations(range(1, n)):
        v = predict.scatter(THREE, layout, trees.sequential(n, 0, list(p)), SIZES)
        brute = v if brute is None else [min(x, y) for x, y in zip(brute, v, strict=True)]
    for size, b in zip(SIZES, brute, strict=True):
        rule = predict.scatter(THREE, layout, search.best_sequential(THREE, layout, "scatter", size), [size])[0]
        assert rule == pytest.approx(b)


def fixed_order_gather(profile, layout, order, size, root=0):
    """Gather where the root posts its receives in ``order`` (not in arrival order): message j arrives at
    ``S_j + X`` (every sender starts at 0) and the root takes it at ``t_i = max(t_(i-1), arrival) + R_root``."""
    t = 0.0
    rt = layout[root]
    for j in order:
        arrive = profile.types[layout[j]].send_us(size) + profile.link(layout[j], rt).us(size)
        t = max(t, arrive) + profile.types[rt].recv_us(size)
    return t


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("root", [0, 2])
def test_gather_order_rule_equals_brute_force(layout, root):
    n = len(layout)
    others = [r for r in range(n) if r != root]
    for size in SIZES:
        rule = search.best_sequential_order(THREE, layout, "gather", size, root)
        brute = min(fixed_order_gather(THREE, layout, p, size, root) for p in itertools.permutations(others))
        assert fixed_order_gather(THREE, layout, rule, size, root) == pytest.approx(brute)
        # the predictor takes messages in arrival order, so the listed order cannot change its answer
        t_rule = predict.gather(THREE, layout, trees.sequential(n, root, rule), [size], one_at_a_time=True)[0]
        t_rank = predict.gather(THREE, layout, trees.sequential(n, root), [size], one_at_a_time=True)[0]
        assert t_rule == pytest.approx(t_rank)


def test_order_rule_examples_and_errors():
    # scatter: slowest receivers first (largest X + R); gather: earliest arrivals first
    assert search.best_sequential_order(PROF, ["fast", "fast", "slow", "slow"], "scatter", 1000) == [2, 3, 1]
    assert search.best_sequential_order(PROF, ["fast", "slow", "fast", "slow"], "gather", 1000) == [2, 1, 3]
    tree = search.best_sequential(PROF, ["fast", "slow", "fast"], "scatter", 0)
    assert tree.children[0] == (1, 2) and tree.name == "sequential:best"
    with pytest.raises(InputError, match="unknown operation 'barrier'"):
        search.best_sequential_order(PROF, ["fast", "slow"], "barrier")
    with pytest.raises(InputError, match="allreduce runs no tree"):
        search.best_sequential_order(PROF, ["fast", "slow"], "allreduce")
