"""Statistics: order-statistic CIs of the median, convergence, adaptive repetition (synthetic samples)."""

from __future__ import annotations

from calibrate.stats import converged, median_ci, repeat_adaptive, summary


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
