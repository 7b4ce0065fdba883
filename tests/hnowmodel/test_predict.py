"""Predictions: the paper's equations on hand-worked cases, and invariants on random trees."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import ops
from hnowmodel import predict as P
from hnowmodel import reference as R
from hnowmodel import trees as T
from hnowmodel.errors import InputError, LayoutError
from hnowmodel.params import Link, NodeType, Profile, paper_profile
from tests.helpers import any_tree as _any_tree

PROF = paper_profile()
FFSS = ["fast", "fast", "slow", "slow"]
# Hand-worked terms at m = 1000 bytes (paper profile, Table-2 convention):
# S_fast = 60+50 = 110, S_slow = 90+180 = 270, X = 16+80 = 96, R_fast = 94+30 = 124, R_slow = 124+80 = 204.


def test_ptp_table2():
    assert P.ptp(PROF, "fast", "fast", [0, 1000]).tolist() == pytest.approx([170.0, 330.0])
    assert P.ptp(PROF, "slow", "slow", 0).tolist() == [230.0]


def test_bcast_eq7_binomial_ffss():
    # binomial(4): 0 -> 2 (k=1), 0 -> 1 (k=2), 2 -> 3 (k=1)
    t = P.bcast(PROF, FFSS, T.binomial(4), [1000], per_rank=True)[0]
    assert t.tolist() == pytest.approx([0, 2 * 110 + 96 + 124, 110 + 96 + 204, (110 + 96 + 204) + 270 + 96 + 204])
    assert P.bcast(PROF, FFSS, T.binomial(4), [1000]).tolist() == pytest.approx([980.0])


def test_bcast_configurations_b_and_d_differ_observation_2():
    fsfs = ["fast", "slow", "fast", "slow"]
    b = P.bcast(PROF, FFSS, "binomial", [0])[0]
    d = P.bcast(PROF, fsfs, "binomial", [0])[0]
    # B: 0->2 (slow) 200, 0->1 at 120+16+94 = 230, 2->3 (slow->slow) 200+230 = 430
    # D: 0->2 (fast) 170, 0->1 (slow) at 120+16+124 = 260, 2->3 (fast->slow) 170+200 = 370
    assert b == pytest.approx(430.0) and d == pytest.approx(370.0)
    assert b != d


def test_scatter_eq9_sequential_ffss():
    t = P.scatter(PROF, FFSS, T.sequential(4), [1000], per_rank=True)[0]
    assert t.tolist() == pytest.approx([0, 110 + 96 + 124, 220 + 96 + 204, 330 + 96 + 204])


def test_scatter_binomial_edges_carry_subtrees():
    # binomial(4): edge 0->2 carries ranks 2,3 (2000 bytes), 0->1 carries 1000, 2->3 carries 1000
    s2k = 60 + 0.05 * 2000
    t = P.scatter(PROF, ["fast"] * 4, T.binomial(4), [1000], per_rank=True)[0]
    t2 = s2k + (16 + 160) + (94 + 60)
    assert t.tolist() == pytest.approx([0, s2k + 110 + 96 + 124, t2, t2 + 110 + 96 + 124])


def test_gather_eq10_12_as_printed():
    # senders finish S at 110 (rank 1), 270, 270; i-th arrival = S_(i) + i*96; root pays R_fast = 124 each
    assert P.gather(PROF, FFSS, T.sequential(4), [1000]).tolist() == pytest.approx([710.0])


def test_gather_link_variant():
    # arrivals 206, max(270, 206)+96 = 366, max(270, 366)+96 = 462; receives end 330, 490, 614
    assert P.gather(PROF, FFSS, T.sequential(4), [1000], one_at_a_time=True).tolist() == pytest.approx([614.0])


def test_gather_binomial_forwards_subtrees():
    # binomial(4), all fast, m=0: rank 3 -> 2 arrives at 60+16, rank 2 holds its subtree at 76+94 = 170 and
    # departs at 230. The root took rank 1's message at 60+16 (done 170). As printed, the 2nd arrival adds 2*X:
    # 230+32 = 262, done 356; with one message at a time on the link: 230+16 = 246, done 340.
    fast4 = ["fast"] * 4
    assert P.gather(PROF, fast4, T.binomial(4), [0]).tolist() == pytest.approx([356.0])
    assert P.gather(PROF, fast4, T.binomial(4), [0], one_at_a_time=True).tolist() == pytest.approx([340.0])


def test_single_rank_is_free():
    for op in ops.tree_names():
        assert ops.predict(op, PROF, ["slow"], T.sequential(1), [0, 100]).tolist() == [0.0, 0.0]
    for op in (o for o in ops.names() if o not in ops.tree_names()):  # a schedule: no message (local copies only)
        for alg in ops.get(op).algorithms.values():
            assert alg.schedule(1, 96.0).n_messages == 0, (op, alg.name)


@pytest.mark.parametrize(
    "call, err, needle",
    [
        (lambda: P.bcast(PROF, FFSS, T.binomial(5), [0]), LayoutError, "4 ranks but the tree has 5"),
        (lambda: P.bcast(PROF, FFSS, T.binomial(4), [-1]), InputError, "-1"),
        (lambda: ops.predict("barrier", PROF, FFSS, "binomial", [0]), InputError, "bcast"),
        (lambda: ops.predict("allreduce", PROF, FFSS, "binomial", [0]), InputError, "choose from: recursive_doubl"),
        (lambda: P.bcast(PROF, ["fast", "medium"], T.binomial(2), [0]), LayoutError, "medium"),
    ],
)
def test_bad_input(call, err, needle):
    with pytest.raises(err, match=needle):
        call()


@st.composite
def cases(draw, max_n=24):
    n = draw(st.integers(1, max_n))
    tree = _any_tree(draw, n)
    layout = draw(st.lists(st.sampled_from(["fast", "slow"]), min_size=n, max_size=n))
    return tree, layout


SIZES = [0, 1, 100, 1000, 65536]


@given(cases())
def test_vectorised_equals_scalar_reference(case):
    tree, layout = case
    vec = {
        "bcast": P.bcast(PROF, layout, tree, SIZES, per_rank=True),
        "scatter": P.scatter(PROF, layout, tree, SIZES, per_rank=True),
        **{v: P.gather(PROF, layout, tree, SIZES, per_rank=True, one_at_a_time=v) for v in (False, True)},
    }
    for j, m in enumerate(SIZES):
        assert vec["bcast"][j] == pytest.approx(R.bcast_reference(PROF, layout, tree, m))
        assert vec["scatter"][j] == pytest.approx(R.scatter_reference(PROF, layout, tree, m))
        for v in (False, True):
            assert vec[v][j] == pytest.approx(R.gather_reference(PROF, layout, tree, m, v))


_cost = st.floats(0, 200, allow_nan=False).map(lambda v: round(v, 2))
_per_byte = st.floats(0, 0.5, allow_nan=False).map(lambda v: round(v, 4))


@st.composite
def random_cases(draw, max_n=20):
    """A random profile (1-3 types, optional per-pair links), layout and tree (hierarchical included)."""
    names = ["a", "b", "c"][: draw(st.integers(1, 3))]
    types = {t: NodeType(t, draw(_cost), draw(_per_byte), draw(_cost), draw(_per_byte)) for t in names}
    links = {(x, y): Link(draw(_cost), draw(_per_byte)) for x in names for y in names if draw(st.booleans())}
    prof = Profile(types, Link(draw(_cost), draw(_per_byte)), links)
    n = draw(st.integers(1, max_n))
    layout = draw(st.lists(st.sampled_from(names), min_size=n, max_size=n))
    if draw(st.booleans()):
        tree = T.make_tree("hierarchical", n, draw(st.integers(0, n - 1)), layout, prof)
    else:
        tree = _any_tree(draw, n)
    return prof, layout, tree


@given(random_cases())
def test_vectorised_equals_reference_random_profiles(case):
    prof, layout, tree = case
    vec = {
        "bcast": P.bcast(prof, layout, tree, SIZES, per_rank=True),
        "scatter": P.scatter(prof, layout, tree, SIZES, per_rank=True),
        **{v: P.gather(prof, layout, tree, SIZES, per_rank=True, one_at_a_time=v) for v in (False, True)},
    }
    for j, m in enumerate(SIZES):
        assert vec["bcast"][j] == pytest.approx(R.bcast_reference(prof, layout, tree, m))
        assert vec["scatter"][j] == pytest.approx(R.scatter_reference(prof, layout, tree, m))
        for v in (False, True):
            assert vec[v][j] == pytest.approx(R.gather_reference(prof, layout, tree, m, v))


@given(cases())
def test_time_never_decreases_with_size(case):
    tree, layout = case
    for op in ops.tree_names():  # over trees (the schedule operations: tests/hnowmodel/test_ops.py)
        t = ops.predict(op, PROF, layout, tree, SIZES)
        assert (np.diff(t) >= -1e-9).all(), (op, t)


@given(cases(), st.data())
def test_adding_a_last_child_never_speeds_a_broadcast(case, data):
    tree, layout = case
    p = data.draw(st.integers(0, tree.n - 1))
    kids = [list(c) for c in tree.children] + [[]]
    kids[p].append(tree.n)
    bigger = T.from_children(kids)
    new_type = data.draw(st.sampled_from(["fast", "slow"]))
    before = P.bcast(PROF, layout, tree, SIZES)
    after = P.bcast(PROF, [*layout, new_type], bigger, SIZES)
    assert (after >= before - 1e-9).all()


def test_large_binomial_runs():
    n = 2**16
    layout = np.array(["fast", "slow"] * (n // 2))
    t = P.bcast(PROF, layout, T.binomial(n), [0, 1024])
    assert t.shape == (2,) and t[0] > 0 and t[1] > t[0]
