"""Rank orders for native (fixed-shape) trees: never worse than the identity, consistent keys/perm/hostfile."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import ops, search, trees

from .profiles import PROF


@given(
    st.lists(st.sampled_from(["fast", "slow"]), min_size=2, max_size=20),
    st.sampled_from(["bcast", "scatter", "gather"]),
    st.sampled_from([0, 1024, 4096]),
)
def test_rank_order_is_a_local_optimum_or_the_identity(layout, op, size):
    """The order returned is either the identity (nothing found beats it) or strictly faster than the identity and
    a local optimum: no swap of two ranks of different types (root excluded) predicts a shorter time."""
    n = len(layout)
    tree = trees.binomial(n)

    def cost(order):
        return ops.predict(op, PROF, [layout[r] for r in order], tree, [size])[0]

    ro = search.rank_order(PROF, layout, "binomial", op, size)
    assert sorted(ro.perm) == list(range(n)) and ro.perm[0] == 0
    assert ro.baseline_us == pytest.approx(cost(range(n)))
    assert ro.time_us == pytest.approx(cost(ro.perm))
    assert [ro.keys[r] for r in ro.perm] == list(range(n))
    if ro.perm == tuple(range(n)):
        assert ro.time_us == ro.baseline_us and ro.gain_pct == 0
        return
    assert ro.time_us < ro.baseline_us - 1e-9 and ro.gain_pct > 0
    for i in range(1, n):
        for j in range(i + 1, n):
            if layout[ro.perm[i]] != layout[ro.perm[j]]:
                swapped = list(ro.perm)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                assert cost(swapped) >= ro.time_us - 1e-9, (i, j)


def test_rank_order_helps_a_bad_layout_and_writes_a_hostfile():
    # binomial(8): position 4 heads the largest subtree; here a slow rank sits there
    layout = ["fast", "slow", "slow", "slow", "slow", "fast", "fast", "fast"]
    ro = search.rank_order(PROF, layout, "binomial", "bcast", 0)
    assert ro.gain_pct > 5
    hosts = [f"n{r:02d}" for r in range(8)]
    lines = ro.hostfile(hosts).split()
    assert lines == [hosts[r] for r in ro.perm]
    assert layout[ro.perm[4]] == "fast"
    assert set(ro.to_dict()) >= {"perm", "keys", "time_us", "baseline_us", "gain_pct"}


def test_rank_order_returns_identity_when_nothing_helps():
    ro = search.rank_order(PROF, ["fast"] * 8, "binomial", "bcast", 0)
    assert ro.perm == tuple(range(8)) and ro.time_us == ro.baseline_us and ro.gain_pct == 0


def test_rank_order_bad_input():
    from hnowmodel.errors import InputError, LayoutError

    with pytest.raises(InputError, match="unknown operation 'barrier'"):
        search.rank_order(PROF, ["fast", "slow"], "binomial", "barrier")
    with pytest.raises(InputError, match="allreduce runs no tree"):
        search.rank_order(PROF, ["fast", "slow"], "binomial", "allreduce")
    with pytest.raises(LayoutError, match="tree has 3"):
        search.rank_order(PROF, ["fast", "slow"], trees.binomial(3))


def test_rank_order_says_how_it_was_found():
    """No silent limit: above SWAP_MAX_RANKS only the greedy step runs, and the result says so."""
    from hnowmodel.search.rank_order import SWAP_MAX_RANKS

    prof = PROF
    small = search.rank_order(prof, ["slow", "fast"] * 4, "binomial", "bcast", 0)
    assert small.method.startswith(("greedy + pairwise swaps", "identity"))
    n = SWAP_MAX_RANKS + 2
    big = search.rank_order(prof, ["slow", "fast"] * (n // 2), "binomial", "bcast", 0)
    assert f"no swaps above {SWAP_MAX_RANKS} ranks" in big.method or big.method.startswith("identity")
    assert big.to_dict()["method"] == big.method


@pytest.mark.parametrize("op", ["bcast", "scatter", "gather"])
def test_rank_order_for_a_native_algorithm_is_predicted_as_it_runs(op):
    """With ``native`` the order is chosen for the library's algorithm as :func:`ops.native_predict` predicts it (the
    root's copy, the flow variants' message order), so the times it reports are that prediction's."""
    from hnowmodel import ops

    layout = ["fast", "slow", "slow", "fast", "slow", "fast"]
    nat = ops.get(op).native["MPICH"]
    ro = search.rank_order(PROF, layout, nat.model_tree, op, 4096, native=nat)
    assert ro.baseline_us == pytest.approx(ops.native_predict(op, "MPICH", PROF, layout, [4096])[0])
    moved = [layout[r] for r in ro.perm]
    assert ro.time_us == pytest.approx(ops.native_predict(op, "MPICH", PROF, moved, [4096])[0])
