"""FNF and ECEF give valid trees; the improvement pass never hurts and finds the optimum on the paper case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import predict, search, trees

from .profiles import PROF, THREE, TYPES3


@given(st.lists(st.sampled_from(TYPES3), min_size=1, max_size=60), st.data())
def test_heuristics_give_valid_trees_and_improve_never_hurts(layout, data):
    size = data.draw(st.sampled_from([0, 4096]))
    root = data.draw(st.integers(0, len(layout) - 1))
    for h in (search.fnf, search.ecef):
        t = h(THREE, layout, size, root)
        assert t.n == len(layout) and t.root == root
        better = search.improve(THREE, layout, t, size)
        assert better.root == root
        assert predict.bcast(THREE, layout, better, [size])[0] <= predict.bcast(THREE, layout, t, [size])[0] + 1e-9


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
