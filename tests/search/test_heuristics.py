"""FNF and ECEF give valid trees; the improvement pass leaves no better send order and finds the optimum on the
paper case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import predict, search, trees

from .profiles import PROF, THREE, TYPES3


def _swap_siblings(t, p, i):
    """``t`` with ``p``'s i-th and (i+1)-th children sending order exchanged."""
    kids = [list(c) for c in t.children]
    kids[p][i], kids[p][i + 1] = kids[p][i + 1], kids[p][i]
    return trees.from_children(kids)


@given(st.lists(st.sampled_from(TYPES3), min_size=1, max_size=30), st.data())
def test_heuristics_give_valid_trees_and_improve_leaves_no_better_send_order(layout, data):
    """FNF/ECEF trees span the layout from the root. ``improve``, run to its end on those and on a random tree,
    keeps the root and leaves every parent sending in the best order for its children: exchanging two consecutive
    children never predicts a shorter broadcast (the re-sort step is exact for a fixed parent assignment)."""
    n = len(layout)
    size = data.draw(st.sampled_from([0, 4096]))
    root = data.draw(st.integers(0, n - 1))
    parent = [-1] + [data.draw(st.integers(0, i - 1)) for i in range(1, n)]
    perm = data.draw(st.permutations(range(n)))
    perm[perm.index(root)], perm[0] = perm[0], root  # position 0 (the root) goes to rank ``root``
    random_tree = trees.from_parent(parent).relabel(perm)

    def bcast(t):
        return predict.bcast(THREE, layout, t, [size])[0]

    inputs = []
    for h in (search.fnf, search.ecef):
        t = h(THREE, layout, size, root)
        assert t.n == n and t.root == root and t.subtree_size[root] == n
        inputs.append(t)
    for t in [*inputs, random_tree]:
        better = search.improve(THREE, layout, t, size, max_evals=5000)
        assert better.root == root and better.n == n
        best_time = bcast(better)
        assert best_time <= bcast(t) + 1e-9
        for p, kids in enumerate(better.children):
            for i in range(len(kids) - 1):
                assert bcast(_swap_siblings(better, p, i)) >= best_time - 1e-9, (t.name, p, kids, i)


def test_fnf_serves_fast_ranks_first():
    # FNF: the root's first child is the fastest waiting rank; all fast ranks are reached before any slow one
    t = search.fnf(PROF, ["slow", "fast", "slow", "fast"])
    assert t.children[0] == (1, 3, 2)


def test_improve_reaches_the_optimum_on_4_plus_4_at_4k():
    layout = ["fast"] * 4 + ["slow"] * 4
    opt = search.exact_bcast(PROF, layout, 4096)[1]
    for h in (search.fnf, search.ecef):
        raw = predict.bcast(PROF, layout, h(PROF, layout, 4096), [4096])[0]
        imp = predict.bcast(PROF, layout, search.improve(PROF, layout, h(PROF, layout, 4096), 4096), [4096])[0]
        assert raw > opt + 1 and imp == pytest.approx(opt)


def test_improve_fixes_a_bad_tree():
    layout = ["slow"] * 3 + ["fast"] * 5
    bad = trees.chain(8)
    t0 = predict.bcast(PROF, layout, bad, [0])[0]
    t1 = predict.bcast(PROF, layout, search.improve(PROF, layout, bad, 0, max_evals=400), [0])[0]
    assert t1 < 0.6 * t0


def test_heuristics_scale_to_many_ranks():
    layout = ["fast", "slow", "medium"] * 3000
    for h in (search.fnf, search.ecef):
        t = h(THREE, layout, 1024)
        assert t.n == 9000 and (t.parent >= 0).sum() == 8999
