"""Pool planning: the chosen mix is the fastest candidate, or the one meeting a target with fewest fast nodes."""

from __future__ import annotations

import pytest

from hnowmodel import search
from hnowmodel.errors import InputError

from .profiles import PROF


def test_plan_prefers_fast_nodes_and_honours_target():
    best, cands = search.plan(PROF, {"fast": 4, "slow": 12}, 8, "bcast", 0)
    assert best.mix == {"fast": 4, "slow": 4} and best.time_us == min(c.time_us for c in cands)
    assert len(cands) == 5 and all(sum(c.mix.values()) == 8 for c in cands)
    cheap, _ = search.plan(PROF, {"fast": 4, "slow": 12}, 8, "bcast", 0, target_us=500)
    assert cheap.meets_target and cheap.mix["fast"] < 4 and cheap.time_us <= 500
    never, _ = search.plan(PROF, {"fast": 4, "slow": 12}, 8, "bcast", 0, target_us=1)
    assert never.meets_target is False and never.mix == best.mix


def test_more_fast_nodes_never_make_the_plan_slower():
    times = [search.plan(PROF, {"fast": f, "slow": 8}, 8, "bcast", 1024)[0].time_us for f in range(0, 6)]
    assert all(b <= a + 1e-9 for a, b in zip(times, times[1:], strict=False))


@pytest.mark.parametrize("op", ["scatter", "gather"])
def test_plan_other_ops(op):
    best, cands = search.plan(PROF, {"fast": 2, "slow": 4}, 4, op, 4096)
    assert best.time_us == min(c.time_us for c in cands) and sum(best.mix.values()) == 4


def test_plan_bad_input():
    with pytest.raises(InputError, match="fewer than"):
        search.plan(PROF, {"fast": 1}, 3)
    with pytest.raises(InputError, match="turbo"):
        search.plan(PROF, {"turbo": 3}, 2)
    with pytest.raises(InputError, match="--ranks 0"):
        search.plan(PROF, {"fast": 3}, 0)
