"""Fits on synthetic data with known lines: least squares with CIs, protocol breakpoints, per-regime fits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate.fit import find_breakpoint, fit_line, fit_regimes


@given(
    st.floats(0, 500), st.floats(0, 1), st.lists(st.integers(0, 2**20), min_size=3, max_size=12, unique=True)
)
def test_fit_recovers_exact_lines(c, k, sizes):
    f = fit_line(sizes, [c + k * m for m in sizes])
    assert f.intercept == pytest.approx(c, abs=1e-6 + 1e-9 * k * max(sizes))
    assert f.slope == pytest.approx(k, abs=1e-9)


def test_fit_ci_covers_truth_on_noisy_data():
    rng = np.random.default_rng(7)
    sizes = np.array([0, 1024, 2048, 4096, 8192, 16384], dtype=float)
    hits = 0
    for _ in range(200):
        y = 60 + 0.05 * sizes + rng.normal(0, 2.0, sizes.size)
        f = fit_line(sizes, y)
        hits += abs(f.intercept - 60) <= f.intercept_ci and abs(f.slope - 0.05) <= f.slope_ci
    assert hits >= 170  # both 95 % intervals hold together in at least 85 % of trials


def test_breakpoint_found_and_regimes_fitted():
    sizes = [0, 1024, 4096, 16384, 65536, 262144, 1048576]
    eager = [2 + 0.0002 * m for m in sizes[:4]]
    rndv = [20 + 0.0001 * m for m in sizes[4:]]
    k = find_breakpoint(sizes, eager + rndv)
    assert k == 4
    below, above = fit_regimes(sizes, eager + rndv, k)
    assert below.intercept == pytest.approx(2) and above.intercept == pytest.approx(20)
    assert find_breakpoint(sizes, [5 + 0.001 * m for m in sizes]) is None
