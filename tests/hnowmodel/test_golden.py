"""Every prediction recorded before the model engine's refactor is the same number now (tests/golden_corpus.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.golden_corpus import load, outcome, profiles

CASES = load()


@pytest.fixture(scope="module")
def profs():
    return profiles()


def test_the_corpus_is_large_and_covers_every_kind():
    kinds = {r["case"]["kind"] for r in CASES}
    assert len(CASES) >= 300
    assert kinds == {"predict", "per_rank", "native", "best_tree", "optimal", "rank_order", "common_start"}
    assert {r["case"]["profile"] for r in CASES} == {"paper", "cluster", "realmpi"}
    assert sum("values" in r for r in CASES) >= 300


@pytest.mark.parametrize("row", CASES, ids=lambda r: "-".join(str(v) for v in r["case"].values()))
def test_same_numbers_as_before(row, profs):
    got = outcome(row["case"], profs)
    if "error" in row:
        assert got == {"error": row["error"]}
        return
    assert "values" in got, got
    got, want = np.asarray(got["values"], dtype=float), np.asarray(row["values"], dtype=float)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
