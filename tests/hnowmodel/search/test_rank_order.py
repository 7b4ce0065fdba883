"""Rank orders for native (fixed-shape) trees: never worse than the identity, consistent keys/perm/hostfile."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import predict, search, trees

from .profiles import PROF


@given(st.lists(st.sampled_from(["fast", "slow"]), min_size=2, max_size=24), st.sampled_from(["bcast", "scatter",
                                                                                             "gather"]))
def test_rank_order_never_worse_than_identity(layout, op):
    ro = search.rank_order(PROF, layout, "binomial", op, 1024)
    assert ro.time_us <= ro.baseline_us + 1e-9
    assert sorted(ro.perm) == list(range(len(layout))) and ro.perm[0] == 0
    moved = [layout[r] for r in ro.perm]
    assert predict.predict(op, PROF, moved, trees.binomial(len(layout)), [1024])[0] == pytest.approx(ro.time_us)
    assert [ro.keys[r] for r in ro.perm] == list(range(len(layout)))


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

    with pytest.raises(InputError, match="allreduce"):
        search.rank_order(PROF, ["fast", "slow"], "binomial", "allreduce")
    with pytest.raises(LayoutError, match="tree has 3"):
        search.rank_order(PROF, ["fast", "slow"], trees.binomial(3))
