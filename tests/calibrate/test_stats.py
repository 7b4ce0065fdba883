"""Statistics: order-statistic CIs of the median, convergence, adaptive repetition (synthetic samples)."""

from __future__ import annotations

import numpy as np

from calibrate.stats import _EXACT_MAX_SAMPLES, center, converged, median_ci, repeat_adaptive, summary
from tests.helpers import fresh_python


def test_median_ci_order_statistics():
    assert median_ci(list(range(100))) == (39.0, 60.0)  # x(40), x(61): the textbook 95 % interval for n = 100
    lo, hi = median_ci([5.0] * 10)
    assert lo == hi == 5.0


def test_summary_keys_carry_units():
    s = summary([1.0, 2.0, 3.0, 100.0])
    assert s["min_us"] == 1.0 and s["max_us"] == 100.0 and s["median_us"] == 2.5 and s["samples"] == 4


def test_converged():
    assert converged([100.0 + 0.1 * (i % 3) for i in range(20)])
    assert not converged([100.0, 150.0, 80.0, 120.0, 60.0, 140.0])
    assert not converged([100.0] * 3)  # too few


def test_repeat_adaptive_stops_early_when_quiet():
    calls = []
    out = repeat_adaptive(lambda: calls.append(1) or 10.0, warmup=2, min_samples=6, max_samples=50)
    assert len(out) == 6 and len(calls) == 8


def test_center_and_median_ci_are_scipys_statistics():
    """``center`` is scipy.stats.trim_mean(x, 0.2) and ``median_ci``'s order statistics are scipy.stats.binom's
    ppf and isf, to the last bit, though computed without scipy: every sample count up to 100 (the calibration's
    counts), some up to the exact range's end, one beyond it (scipy's own there)."""
    from scipy import stats as sps

    rng = np.random.default_rng(7)
    for n in [*range(1, 101), 173, 256, 499, 1000, 1999, _EXACT_MAX_SAMPLES, _EXACT_MAX_SAMPLES + 1]:
        x = rng.lognormal(3.0, 1.0, n) if n % 2 else rng.integers(0, 4, n).astype(float)  # ties too
        assert center(list(x)) == float(sps.trim_mean(x, 0.2)), n
        lo = max(int(sps.binom.ppf(0.025, n, 0.5)) - 1, 0)
        hi = min(int(sps.binom.isf(0.025, n, 0.5)), n - 1)
        s = np.sort(x)
        assert median_ci(list(x)) == (float(s[lo]), float(s[hi])), n


def test_a_measuring_rank_imports_no_scipy():
    """What every rank of a task imports loads no scipy (the fits import it when they run, on the fitting rank)."""
    code = (
        "import sys, calibrate.__main__, calibrate.calibration, calibrate.collectives, calibrate.bench, "
        "calibrate.info; print(' '.join(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    )
    assert fresh_python(code) == []
