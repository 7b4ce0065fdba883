"""Tree search: exact = brute force, exact is never beaten, order rules = brute force, heuristics are valid."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hnowmodel import predict, search, trees
from hnowmodel.errors import InputError, TreeError
from hnowmodel.params import NodeType, Profile, paper_profile

PROF = paper_profile()
THREE = Profile(
    {"fast": PROF.types["fast"], "slow": PROF.types["slow"], "medium": NodeType("medium", 75, 0.1, 110, 0.05)},
    PROF.network,
    {("fast", "slow"): type(PROF.network)(30, 0.08)},
)


def brute_force_rank_sets(profile, layout, size, root):
    """Exhaustive over every ordered tree on the actual ranks (memoised on rank sets, not on type counts)."""
    S = [profile.types[t].send_us(size) for t in layout]
    a = [[profile.types[u].send_us(size) + profile.link(u, v).us(size) + profile.types[v].recv_us(size)
          for v in layout] for u in layout]

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
@pytest.mark.parametrize("size", [0, 4096])
def test_exact_equals_enumeration_of_every_tree(layout, size):
    best = min(predict.bcast(PROF, list(layout), t, [size])[0] for t in all_ordered_trees(len(layout), 0))
    tree, t = search.exact_bcast(PROF, list(layout), size, 0)
    assert t == pytest.approx(best)
    assert predict.bcast(PROF, list(layout), tree, [size])[0] == pytest.approx(t)


@settings(max_examples=25)
@given(st.lists(st.sampled_from(["fast", "slow", "medium"]), min_size=1, max_size=7), st.data())
def test_exact_equals_brute_force_up_to_7_ranks(layout, data):
    root = data.draw(st.integers(0, len(layout) - 1))
    size = data.draw(st.sampled_from([0, 1000, 16384]))
    tree, t = search.exact_bcast(THREE, layout, size, root)
    assert t == pytest.approx(brute_force_rank_sets(THREE, layout, size, root))
    assert tree.root == root and predict.bcast(THREE, layout, tree, [size])[0] == pytest.approx(t)


@settings(max_examples=30)
@given(st.lists(st.sampled_from(["fast", "slow", "medium"]), min_size=2, max_size=20), st.data())
def test_exact_is_never_slower_than_any_other_tree(layout, data):
    size = data.draw(st.sampled_from([0, 512, 8192]))
    root = data.draw(st.integers(0, len(layout) - 1))
    best = search.best_tree(THREE, layout, "bcast", size, "exact", root)
    n = len(layout)
    others = [trees.make_tree(s, n, root, layout, THREE) for s in
              ("binomial", "sequential", "chain", "kary:3", "knomial:3", "hierarchical")]
    others += [search.fnf(THREE, layout, size, root), search.ecef(THREE, layout, size, root)]
    for t in others:
        assert best.time_us <= predict.bcast(THREE, layout, t, [size])[0] + 1e-9


def test_optimal_20_percent_below_papers_trees_on_4_plus_4():
    layout = ["fast"] * 4 + ["slow"] * 4
    for size in (0, 256, 1024):
        best = search.best_tree(PROF, layout, "bcast", size)
        assert best.exact and best.time_us <= 0.8 * min(best.compared.values())


@pytest.mark.parametrize("op", ["scatter", "gather"])
@pytest.mark.parametrize("layout", [["fast", "slow", "fast", "slow", "slow", "fast", "slow"],
                                    ["slow", "fast", "medium", "slow", "medium", "fast"]])
@pytest.mark.parametrize("size", [0, 4096])
def test_sequential_order_rule_equals_brute_force(op, layout, size):
    n = len(layout)
    others = list(range(1, n))
    kw = {"variant": "link"} if op == "gather" else {}
    brute = min(predict.predict(op, THREE, layout, trees.sequential(n, 0, list(p)), [size], **kw)[0]
                for p in itertools.permutations(others))
    rule = predict.predict(op, THREE, layout, search.best_sequential(THREE, layout, op, size), [size], **kw)[0]
    assert rule == pytest.approx(brute)


@given(st.lists(st.sampled_from(["fast", "slow", "medium"]), min_size=2, max_size=60), st.data())
def test_heuristics_give_valid_trees_and_improve_never_hurts(layout, data):
    size = data.draw(st.sampled_from([0, 4096]))
    for h in (search.fnf, search.ecef):
        t = h(THREE, layout, size, 0)
        assert t.n == len(layout) and t.root == 0
        better = search.improve(THREE, layout, t, size)
        assert predict.bcast(THREE, layout, better, [size])[0] <= predict.bcast(THREE, layout, t, [size])[0] + 1e-9


@given(st.lists(st.sampled_from(["fast", "slow"]), min_size=2, max_size=24), st.sampled_from(["bcast", "scatter"]))
def test_rank_order_never_worse_than_identity(layout, op):
    ro = search.rank_order(PROF, layout, "binomial", op, 1024)
    assert ro.time_us <= ro.baseline_us + 1e-9
    assert sorted(ro.perm) == list(range(len(layout))) and ro.perm[0] == 0
    moved = [layout[r] for r in ro.perm]
    assert predict.predict(op, PROF, moved, trees.binomial(len(layout)), [1024])[0] == pytest.approx(ro.time_us)
    assert [ro.keys[r] for r in ro.perm] == list(range(len(layout)))


def test_rank_order_helps_a_bad_layout():
    # binomial(8): position 4 heads the largest subtree; here a slow rank sits there
    ro = search.rank_order(PROF, ["fast", "slow", "slow", "slow", "slow", "fast", "fast", "fast"], "binomial",
                           "bcast", 0)
    assert ro.gain_pct > 5


def test_plan_prefers_fast_nodes_and_honours_target():
    best, cands = search.plan(PROF, {"fast": 4, "slow": 12}, 8, "bcast", 0)
    assert best.mix == {"fast": 4, "slow": 4} and best.time_us == min(c.time_us for c in cands)
    cheap, _ = search.plan(PROF, {"fast": 4, "slow": 12}, 8, "bcast", 0, target_us=500)
    assert cheap.meets_target and cheap.mix["fast"] < 4 and cheap.time_us <= 500
    with pytest.raises(InputError, match="fewer than"):
        search.plan(PROF, {"fast": 1}, 3)


def test_registered_trees_and_errors():
    layout = ["fast", "slow", "slow", "fast"]
    assert trees.make_tree("optimal", 4, 0, layout, PROF).n == 4
    assert trees.make_tree("fnf:1024", 4, 0, layout, PROF).n == 4
    with pytest.raises(TreeError, match="layout and a profile"):
        trees.make_tree("optimal", 4)
    with pytest.raises(InputError, match="exact"):
        search.best_tree(PROF, layout, method="magic")


def test_heuristics_scale():
    layout = np.array(["fast", "slow"] * 5000).tolist()
    t = search.fnf(PROF, layout, 0)
    assert t.n == 10000
