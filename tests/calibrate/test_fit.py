"""Tests of the fitters in ``calibrate.fit`` on known inputs: published reference data and synthetic series.

These are tests of a fitter, not fake measurements: the data are either the NIST StRD "Norris" linear-regression
dataset with its certified values (as lmfit tests against NIST), or series generated from a known piecewise-linear
model -- the MPICH shared-memory regimes fitted on a 2-core VM with the MPICH wheel (docs/model.md, "How the
regimes are measured on real MPI") -- with seeded multiplicative noise, so the truth the fit must recover is known
exactly. Everything is deterministic (fixed seeds,
hypothesis' derandomized "ci" profile from ``tests/conftest.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.optimize import nnls

from calibrate.fit import (
    PiecewiseFit,
    find_breakpoint,
    fit_line,
    fit_piecewise,
    fit_regimes,
    fit_shared_breaks,
    log_grid,
)

DATA = Path(__file__).parent / "data"
KiB, MiB = 1 << 10, 1 << 20

# ------------------------------------------------------------------------------------------ existing behaviour


@given(st.floats(0, 500), st.floats(0, 1), st.lists(st.integers(0, 2**20), min_size=3, max_size=12, unique=True))
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


# ------------------------------------------------------------------------------------ NIST StRD certified values

# Certified values of NIST StRD "Norris" (https://www.itl.nist.gov/div898/strd/lls/data/Norris.shtml), also in the
# header of data/norris.txt.
NORRIS_B0, NORRIS_B0_SD = -0.262323073774029, 0.232818234301152
NORRIS_B1, NORRIS_B1_SD = 1.00211681802045, 0.429796848199937e-03
NORRIS_RESID_SD, NORRIS_R2 = 0.884796396144373, 0.999993745883712


def _norris() -> tuple[np.ndarray, np.ndarray]:
    d = np.loadtxt(DATA / "norris.txt")  # columns: y x
    assert d.shape == (36, 2)
    return d[:, 1], d[:, 0]


def test_fit_line_reproduces_nist_norris_certified_values():
    x, y = _norris()
    f = fit_line(x, y)
    assert f.intercept == pytest.approx(NORRIS_B0, rel=1e-9)
    assert f.slope == pytest.approx(NORRIS_B1, rel=1e-9)
    assert f.intercept_se == pytest.approx(NORRIS_B0_SD, rel=1e-9)
    assert f.slope_se == pytest.approx(NORRIS_B1_SD, rel=1e-9)
    assert f.r2 == pytest.approx(NORRIS_R2, rel=1e-12)
    res = np.asarray(f.residuals)
    assert np.sqrt(res @ res / 34) == pytest.approx(NORRIS_RESID_SD, rel=1e-9)
    # the 95 % half-widths are t(0.975, 34) standard errors (t = 2.0322445093177…)
    assert f.intercept_ci == pytest.approx(2.032244509317718 * NORRIS_B0_SD, rel=1e-9)


def test_piecewise_single_regime_matches_nist_and_clamps_its_negative_intercept():
    """One absolute-weighted regime is the same least squares; Norris' B0 < 0 then triggers the NNLS refit."""
    x, y = _norris()
    f = fit_piecewise(x, y, weights="absolute", max_regimes=1)
    (r,) = f.regimes
    # the certified B0 is -0.26 ± 0.23: below zero but within its noise, so it is clamped at 0 with a warning
    assert r.constrained == ("intercept",)
    assert r.intercept == 0.0
    assert r.intercept_se == pytest.approx(NORRIS_B0_SD, rel=1e-9)  # the unconstrained standard error is kept
    assert r.intercept_ci95[0] == 0.0 and r.intercept_ci95[1] == pytest.approx(
        NORRIS_B0 + 2.032244509317718 * NORRIS_B0_SD, rel=1e-9
    )
    # the constrained slope is what scipy's non-negative least squares finds
    sol, _ = nnls(np.c_[np.ones_like(x), x], y)
    assert sol[0] == 0.0
    assert r.slope == pytest.approx(sol[1], rel=1e-12)
    assert len(f.warnings) == 1
    assert "intercept" in f.warnings[0] and "regime 1" in f.warnings[0]
    assert "below the noise of the smallest sizes" in f.warnings[0]


# ------------------------------------------------------------------------------------------------------ log grid


def test_log_grid_three_per_octave_with_powers_of_two():
    g = log_grid(0, 4 * MiB)
    assert g[0] == 0 and g[-1] == 4 * MiB
    assert g == sorted(set(g)) and all(isinstance(m, int) for m in g)
    assert all(1 << q in g for q in range(23))  # every power of two: 1 B .. 4 MiB
    big = [m for m in g if m >= 16]  # above the smallest sizes (where rounding merges points), exactly 3 per octave
    assert len(big) == 3 * (22 - 4) + 1
    assert all(abs(b / a - 2 ** (1 / 3)) < 0.025 for a, b in zip(big, big[1:], strict=False))
    assert 8192 in g and 6502 in g and 10321 in g
    assert log_grid(1000, 5000) == [1024, 1290, 1625, 2048, 2580, 3251, 4096]
    assert log_grid(0, 0) == [0]
    assert 0 not in log_grid(1, 16)
    assert log_grid(0, 16, per_octave=1) == [0, 1, 2, 4, 8, 16]
    for bad in ((-1, 8), (8, 4)):
        with pytest.raises(ValueError, match="lo"):
            log_grid(*bad)
    with pytest.raises(ValueError, match="per_octave"):
        log_grid(0, 8, per_octave=0)


# ---------------------------------------------------------------------------------------- piecewise regimes

# MPICH over shared memory, fitted on this machine. Eager up to 8191 B; from
# 8192 B CMA; a copy-mechanism change above ~52 KiB; cache effect from 2 MiB (intercept 0).
DESIGN = [(1.26, 1e-3 / 12.2), (3.23, 1e-3 / 10.5), (2.41, 1e-3 / 9.7), (0.0, 1e-3 / 6.9)]
GRID = np.array(log_grid(0, 4 * MiB))
TRUE_BREAKS = (6502, 52016, 1664511)  # largest grid size in each regime: < 8192, <= 52 KiB, <= 1.6 MiB


def design_truth(m) -> np.ndarray:
    m = np.asarray(m, dtype=float)
    lines = [c + k * m for c, k in DESIGN]
    return np.select([m < 8192, m <= 52 * KiB, m <= 1.6 * MiB], lines[:3], lines[3])


def noisy(truth: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    return truth * (1 + sigma * np.random.default_rng(seed).standard_normal(truth.size))


def grid_steps(a: int, b: int) -> int:
    return abs(int(np.searchsorted(GRID, a)) - int(np.searchsorted(GRID, b)))


def test_design_regimes_recovered_at_1pct_noise():
    """4 regimes every time; the two big switches exactly; the 52 KiB one (a <= 7 % change) within one step."""
    seeds = range(20)
    within, covered, checks = 0, 0, 0
    for seed in seeds:
        y = noisy(design_truth(GRID), 0.01, seed)
        f = fit_piecewise(GRID, y)
        assert len(f.regimes) == 4, (seed, f.report())
        assert f.breaks[0] == TRUE_BREAKS[0] and f.breaks[2] == TRUE_BREAKS[2], (seed, f.breaks)
        within += grid_steps(f.breaks[1], TRUE_BREAKS[1]) <= 1
        assert f.regimes[-1].upto_bytes is None
        for r, (c, k) in zip(f.regimes, DESIGN, strict=True):
            covered += (r.intercept_ci95[0] <= c <= r.intercept_ci95[1]) + (r.slope_ci95[0] <= k <= r.slope_ci95[1])
            checks += 2
        assert f.max_abs_rel_error_pct(GRID, y) < 5.0  # the self-check: the fit reproduces its own data
    assert within >= 18  # 19/20 with these seeds; ~93 % over 100 seeds
    assert covered >= 0.85 * checks  # 95 % intervals: 152 of these 160 checks hold


@pytest.mark.parametrize("sigma", [0.02, 0.03])
def test_design_big_switches_found_at_a_few_pct_noise(sigma):
    """At 2-3 % noise the eager->CMA and cache switches are still exact; the 52 KiB switch may merge (<= 7 %)."""
    for seed in range(20):
        f = fit_piecewise(GRID, noisy(design_truth(GRID), sigma, seed))
        assert len(f.regimes) in (3, 4)
        assert TRUE_BREAKS[0] in f.breaks and TRUE_BREAKS[2] in f.breaks, (seed, f.breaks)
        assert f.regimes[0].intercept == pytest.approx(1.26, rel=0.1)
        assert 1e-3 / f.regimes[0].slope == pytest.approx(12.2, rel=0.15)


def test_one_line_over_all_sizes_would_inflate_the_small_message_intercept():
    """Why regimes: one relative-weighted line over 0..1 MiB misses the small sizes; the regimes do not."""
    g = GRID[GRID <= MiB]
    y = design_truth(g)
    one = fit_piecewise(g, y, max_regimes=1)
    pw = fit_piecewise(g, y)
    assert one.max_abs_rel_error_pct(g, y) > 30
    assert pw.max_abs_rel_error_pct(g, y) < 1e-9
    assert pw.regimes[0].intercept == pytest.approx(1.26, rel=1e-9)


@pytest.mark.parametrize("sigma", [0.01, 0.02, 0.03, 0.05])
def test_a_noisy_line_gives_one_regime(sigma):
    for seed in range(20):
        for c, k in ((3.0, 1 / 9000), (1.26, 1e-3 / 12.2), (50.0, 1e-6)):
            y = noisy(c + k * GRID, sigma, seed)
            f = fit_piecewise(GRID, y)
            assert len(f.regimes) == 1, (sigma, seed, c, f.report())
            assert f.breaks == () and f.regimes[0].upto_bytes is None


def test_raw_samples_and_their_order():
    """Several samples per size (sizes repeat) give the same regimes as their medians; input order is irrelevant."""
    rng = np.random.default_rng(3)
    sizes = np.repeat(GRID, 7)
    y = design_truth(sizes) * (1 + 0.03 * rng.standard_normal(sizes.size))
    f = fit_piecewise(sizes, y)
    assert f.n_points == sizes.size
    assert sum(r.points for r in f.regimes) == sizes.size
    assert sum(r.sizes for r in f.regimes) == GRID.size
    assert f.breaks[0] == TRUE_BREAKS[0] and f.breaks[-1] == TRUE_BREAKS[2]
    perm = rng.permutation(sizes.size)
    g = fit_piecewise(sizes[perm], y[perm])
    assert g.breaks == f.breaks
    assert [r.intercept for r in g.regimes] == pytest.approx([r.intercept for r in f.regimes], rel=1e-12)
    med = np.median(y.reshape(GRID.size, 7), axis=1)
    assert fit_piecewise(GRID, med).breaks[0] == TRUE_BREAKS[0]


def test_negative_intercept_refit_with_nnls_and_a_warning():
    """A regime whose line meets the axis below 0 is refitted through the origin, and says so."""
    g = np.array(log_grid(64 * KiB, MiB))
    y = -3.0 + g / 5000  # noise-free: the intercept is significantly negative
    f = fit_piecewise(g, y, max_regimes=1)
    (r,) = f.regimes
    assert r.constrained == ("intercept",)
    assert r.intercept == 0.0 and r.intercept_ci95 == (0.0, 0.0)
    w = 1 / y**2  # relative weights
    sol, _ = nnls(np.sqrt(w)[:, None] * np.c_[np.ones_like(g), g / MiB], np.sqrt(w) * y)
    assert sol[0] == 0.0 and r.slope == pytest.approx(sol[1] / MiB, rel=1e-12)
    assert r.slope_ci95[0] <= r.slope <= r.slope_ci95[1]
    (msg,) = f.warnings
    assert "regime 1" in msg and "intercept" in msg and "64 KiB .. 1 MiB" in msg
    assert "beyond its 95 % CI" in msg  # significant, not noise


def test_zero_intercept_regime_in_noise_is_clamped_with_the_noise_reason():
    """The cache regime's true intercept is 0: with noise its estimate is often below 0, within the noise."""
    g = np.array(log_grid(2 * MiB, 64 * MiB))
    k = DESIGN[3][1]
    hits = quiet = 0
    for seed in range(20):
        y = noisy(k * g, 0.02, seed)
        f = fit_piecewise(g, y, max_regimes=1)
        (r,) = f.regimes
        assert r.intercept >= 0 and r.slope > 0
        unconstrained = fit_line(g, y, weights=1 / y**2)
        if unconstrained.intercept < 0:
            hits += 1
            assert r.constrained == ("intercept",) and r.intercept == 0.0
            (msg,) = f.warnings
            assert "regime 1" in msg and "intercept" in msg
            hi = unconstrained.intercept + unconstrained.intercept_ci
            assert r.intercept_ci95 == (0.0, pytest.approx(max(0.0, hi)))
            noise = hi >= 0  # the interval reaches 0: a negative estimate is just noise
            assert ("below the noise of the smallest sizes" in msg) == noise
            assert ("beyond its 95 % CI" in msg) == (not noise)
            quiet += noise
        else:
            assert not r.constrained and not f.warnings
            assert r.intercept == pytest.approx(unconstrained.intercept, rel=1e-12)
        assert r.slope_ci95[0] <= r.slope <= r.slope_ci95[1]
    assert 3 <= hits <= 17 and quiet >= hits - 2  # about half the seeds, nearly all within the noise


def test_negative_slope_refit():
    g = np.array(log_grid(0, 4 * KiB))
    y = 10.0 - g / 4e4  # falls with the size
    f = fit_piecewise(g, y, max_regimes=1)
    (r,) = f.regimes
    assert r.constrained == ("slope",) and r.slope == 0.0
    assert r.intercept == pytest.approx(np.average(y, weights=1 / y**2), rel=1e-12)
    assert "slope" in f.warnings[0] and "falls with the size" in f.warnings[0]


def test_forced_and_known_breaks():
    y = design_truth(GRID)
    forced = fit_piecewise(GRID, y, breaks=[8000, 52 * KiB, int(1.6 * MiB)])
    assert forced.breaks == TRUE_BREAKS and forced.forced_breaks and forced.bic == ()
    assert forced.max_abs_rel_error_pct(GRID, y) < 1e-9
    # a line: a known break is imposed, nothing else is added
    line = noisy(3 + GRID / 9000, 0.02, 0)
    known = fit_piecewise(GRID, line, known_breaks=[8192])
    assert known.breaks == (8192,)
    with pytest.raises(ValueError, match="fewer than 2 distinct"):
        fit_piecewise(GRID, y, breaks=[0])
    with pytest.raises(ValueError, match="max_regimes"):
        fit_piecewise(GRID, y, known_breaks=[1, 2, 3, 4])


def test_shared_breaks_found_on_T_reused_for_S_and_RX():
    rng = np.random.default_rng(11)
    s_true = np.where(GRID < 8192, 0.3 + GRID / 40000, 0.9 + GRID / 60000)  # S jumps at the same switch
    rx_true = design_truth(GRID) - s_true
    s = s_true * (1 + 0.01 * rng.standard_normal(GRID.size))
    rx = rx_true * (1 + 0.01 * rng.standard_normal(GRID.size))
    t = s + rx
    out = fit_shared_breaks({"T": (GRID, t), "S": (GRID, s), "RX": (GRID, rx)}, on="T")
    assert set(out) == {"T", "S", "RX"}
    assert out["T"].breaks[0] == TRUE_BREAKS[0] and len(out["T"].breaks) == 3
    assert out["S"].breaks == out["RX"].breaks == out["T"].breaks
    assert out["S"].forced_breaks and not out["T"].forced_breaks
    assert out["S"].regimes[0].intercept == pytest.approx(0.3, rel=0.05)
    assert out["S"].regimes[1].intercept == pytest.approx(0.9, rel=0.1)
    assert all(w.startswith(("T: ", "S: ", "RX: ")) for f in out.values() for w in f.warnings)
    with pytest.raises(ValueError, match="not among"):
        fit_shared_breaks({"S": (GRID, s)}, on="T")


def test_predict_to_dict_and_report():
    y = design_truth(GRID)
    f = fit_piecewise(GRID, y)
    # sizes between two regimes' measured sizes belong to the lower one (m <= upto_bytes)
    assert list(f.regime_index([0, 6502, 7000, 8192, 2 * MiB, 1 << 30])) == [0, 0, 1, 1, 3, 3]
    assert f.predict(100) == pytest.approx(1.26 + 100 / 12200)
    assert f.predict(GRID).shape == GRID.shape
    assert f.max_abs_rel_error_pct(GRID, y) < 1e-9
    assert f.max_abs_rel_error_pct(GRID, y * 1.1) == pytest.approx(100 / 11, rel=1e-6)
    d = json.loads(json.dumps(f.to_dict(), allow_nan=False))
    regs = d["regimes"]
    assert [r["upto_bytes"] for r in regs] == [*TRUE_BREAKS, None]
    for r in regs:
        for key in ("intercept_us", "slope_us_per_byte", "intercept_ci95_us", "slope_ci95_us_per_byte", "points", "r2"):
            assert key in r
        assert r["intercept_ci95_us"][0] <= r["intercept_us"] <= r["intercept_ci95_us"][1]
    assert d["points"] == GRID.size and set(d["bic"]) == {"1", "2", "3", "4"}
    text = f.report("T")
    assert text.startswith("[[Piecewise fit T]]")
    assert text.count("+/-") == 2 * len(f.regimes)
    assert "<= 6502 B" in text and "above" in text
    clamped = fit_piecewise(GRID, noisy(design_truth(GRID), 0.02, 1))
    if clamped.warnings:
        assert "[[Warnings]]" in clamped.report()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="differ in length"):
        fit_piecewise([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        fit_piecewise([1, 2, 3], [1, float("nan"), 3])
    with pytest.raises(ValueError, match="weights"):
        fit_piecewise([1, 2, 3], [1, 2, 3], weights="percent")
    with pytest.raises(ValueError, match="two distinct sizes"):
        fit_piecewise([8, 8, 8], [1, 2, 3])


# ------------------------------------------------------------------------------------------------- property


@st.composite
def piecewise_models(draw):
    """1-3 regimes on the 0..4 MiB log grid, >= 6 sizes each, neighbours >= 10 % apart at their common border."""
    n = GRID.size
    k = draw(st.integers(1, 3))
    cuts = sorted(draw(st.lists(st.integers(6, n - 6), min_size=k - 1, max_size=k - 1, unique=True)))
    assume(all(b - a >= 6 for a, b in zip([0, *cuts], [*cuts, n], strict=True)))
    lines = [(draw(st.floats(0.1, 100.0)), draw(st.floats(1e-6, 1e-2))) for _ in range(k)]
    for i, cut in enumerate(cuts):
        (c1, k1), (c2, k2) = lines[i], lines[i + 1]
        for m in (GRID[cut - 1], GRID[cut]):  # each line misses the other's border point by >= 10 %
            v1, v2 = c1 + k1 * m, c2 + k2 * m
            assume(abs(v1 - v2) >= 0.1 * max(v1, v2))
    return cuts, lines


@given(piecewise_models())
def test_noise_free_piecewise_data_is_fitted_exactly(model):
    cuts, lines = model
    edges = [0, *cuts, GRID.size]
    y = np.concatenate([c + k * GRID[a:b] for (c, k), a, b in zip(lines, edges, edges[1:], strict=False)])
    f = fit_piecewise(GRID, y)
    assert len(f.regimes) == len(lines)
    assert f.breaks == tuple(int(GRID[c - 1]) for c in cuts)
    assert f.max_abs_rel_error_pct(GRID, y) < 1e-7  # relative error < 1e-9
    for r, (c, k) in zip(f.regimes, lines, strict=True):
        assert r.slope == pytest.approx(k, rel=1e-9)
        assert r.intercept == pytest.approx(c, rel=1e-6)
        assert not r.constrained
    assert not f.warnings
    assert isinstance(f, PiecewiseFit)
