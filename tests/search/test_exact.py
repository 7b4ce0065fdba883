"""Exact broadcast optimum: equals brute force over every tree, is never beaten, and reaches the issue's target."""

from __future__ import annotations

import functools
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hnowmodel import predict, search, trees
from hnowmodel.errors import InputError, TreeError
from hnowmodel.search.exact import EXACT_AUTO_WORK, exact_work

from .profiles import PROF, THREE, TYPES3


def brute_force_rank_sets(profile, layout, size, root):
    """Exhaustive over every ordered tree on the actual ranks (memoised on rank sets, not on type counts):
    ``f(x, R)`` = best time for rank x, holding the message at 0, to reach the set R, trying every first child y
    and every subset of the rest as y's subtree."""
    S = [profile.types[t].send_us(size) for t in layout]
    a = [
        [profile.types[u].send_us(size) + profile.link(u, v).us(size) + profile.types[v].recv_us(size) for v in layout]
        for u in layout
    ]

    @functools.cache
    def f(x, rest):
        if not rest:
            return 0.0
        best = float("inf")
        items = sorted(rest)
        for y in items:
            others = [r for r in items if r != y]
            for k in range(len(others) + 1):
                for sub in itertools.combinations(others, k):
                    left = frozenset(others) - frozenset(sub)
                    best = min(best, max(a[x][y] + f(y, frozenset(sub)), S[x] + f(x, left)))
        return best

    return f(root, frozenset(r for r in range(len(layout)) if r != root))


def all_ordered_trees(n, root):
    """Every ordered tree on ranks 0..n-1 rooted at ``root`` (parent arrays x child orders)."""
    others = [r for r in range(n) if r != root]
    for parents in itertools.product(range(n), repeat=len(others)):
        par = [-1] * n
        for r, p in zip(others, parents, strict=True):
            par[r] = p
        try:
            base = trees.from_parent(par)
        except TreeError:
            continue
        kids = [list(c) for c in base.children]
        for orders in itertools.product(*(list(itertools.permutations(c)) for c in kids)):
            yield trees.from_children([list(o) for o in orders])


@pytest.mark.parametrize("layout", [("fast", "slow", "slow", "fast", "slow"), ("slow", "fast", "fast", "slow")])
def test_exact_equals_enumeration_of_every_tree(layout):
    """Every labelled ordered tree, evaluated by hnowmodel.predict (the real predictor), two sizes at once."""
    layout = list(layout)
    sizes = [0, 4096]
    best = None
    for t in all_ordered_trees(len(layout), 0):
        v = predict.bcast(PROF, layout, t, sizes)
        best = v if best is None else [min(x, y) for x, y in zip(best, v, strict=True)]
    for size, b in zip(sizes, best, strict=True):
        tree, t = search.exact_bcast(PROF, layout, size, 0)
        assert t == pytest.approx(b)
        assert predict.bcast(PROF, layout, tree, [size])[0] == pytest.approx(t)


@settings(max_examples=25)
@given(st.lists(st.sampled_from(TYPES3), min_size=1, max_size=7), st.data())
def test_exact_equals_brute_force_up_to_7_ranks(layout, data):
    root = data.draw(st.integers(0, len(layout) - 1))
    size = data.draw(st.sampled_from([0, 1000, 16384]))
    tree, t = search.exact_bcast(THREE, layout, size, root)
    assert t == pytest.approx(brute_force_rank_sets(THREE, layout, size, root))
    assert tree.root == root and predict.bcast(THREE, layout, tree, [size])[0] == pytest.approx(t)


@settings(max_examples=30)
@given(st.lists(st.sampled_from(TYPES3), min_size=2, max_size=20), st.data())
def test_exact_is_never_slower_than_any_other_tree_or_method(layout, data):
    size = data.draw(st.sampled_from([0, 512, 8192]))
    root = data.draw(st.integers(0, len(layout) - 1))
    best = search.best_tree(THREE, layout, "bcast", size, "exact", root)
    assert best.exact and best.method == "exact"
    n = len(layout)
    others = [
        trees.make_tree(s, n, root, layout, THREE)
        for s in ("binomial", "sequential", "chain", "kary:3", "knomial:3", "hierarchical")
    ]
    others += [search.fnf(THREE, layout, size, root), search.ecef(THREE, layout, size, root)]
    others += [search.best_tree(THREE, layout, "bcast", size, m, root).tree for m in ("fnf", "ecef")]
    for t in others:
        assert best.time_us <= predict.bcast(THREE, layout, t, [size])[0] + 1e-9


def test_optimal_20_percent_below_papers_trees_on_4_plus_4():
    layout = ["fast"] * 4 + ["slow"] * 4
    for size in (0, 256, 1024):
        best = search.best_tree(PROF, layout, "bcast", size)
        assert best.exact and set(best.compared) == {"binomial", "sequential", "hierarchical"}
        assert best.time_us <= 0.8 * min(best.compared.values())
        assert best.gain_pct >= 20
    assert search.best_tree(PROF, layout, "bcast", 0).time_us == pytest.approx(410.0)


def test_auto_switches_to_heuristics_when_exact_is_too_big():
    small = ["fast", "slow"] * 8
    assert search.best_tree(PROF, small, method="auto").method == "exact"
    big = ["fast", "slow"] * 300
    assert exact_work([299, 300]) > EXACT_AUTO_WORK
    got = search.best_tree(PROF, big, method="auto")
    assert got.method in ("fnf", "ecef") and not got.exact
    with pytest.raises(InputError, match="too large"):
        search.exact_bcast(PROF, ["fast", "slow"] * 2000)


def test_exact_tree_uses_concrete_ranks_and_any_root():
    layout = ["slow", "fast", "slow", "fast", "fast", "slow"]
    tree, t = search.exact_bcast(PROF, layout, 0, root=4)
    assert tree.root == 4 and sorted(tree.parent.tolist()).count(-1) == 1
    assert predict.bcast(PROF, layout, tree, [0])[0] == pytest.approx(t)
    with pytest.raises(InputError, match="root 6"):
        search.exact_bcast(PROF, layout, 0, root=6)
