"""Repetition and summary statistics shared by the calibration, the collectives and the benchmarks.

Timing samples are skewed (a preempted run is only ever slower), so the summaries are order statistics: minimum,
median, maximum, and a distribution-free 95 % confidence interval of the median from the binomial distribution.
They are computed without scipy (the same floats as scipy.stats: tests/calibrate/test_stats.py), so a rank that only
measures never imports scipy.stats, the costliest import of a rank's start-up; the fits import scipy when they run.

>>> summary([10.0, 11.0, 12.0, 13.0, 100.0])["median_us"]
12.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["median", "center", "median_ci", "summary", "converged", "repeat_adaptive"]


def median(x: Any) -> float:
    """The median of the samples, as a float.

    >>> median([3, 1, 2])
    2.0
    """
    return float(np.median(np.asarray(x, dtype=float)))


def center(x: Any) -> float:
    """One round's summary of a kernel's repetitions: the 20 %-trimmed mean. Small messages take one of two times
    (the receive posted before or after the message arrives); a median flips between the two modes from round to
    round, the trimmed mean follows their mix smoothly and still drops the outliers.

    >>> center([1.0, 2.0, 3.0, 4.0, 100.0])
    3.0
    """
    # scipy.stats.trim_mean's computation, step for step (the same float): a rank that only measures then never
    # imports scipy.stats, which costs more CPU at start-up than everything else the rank imports
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return math.nan
    n = a.shape[0]
    cut = int(0.2 * n)
    return float(np.mean(np.partition(a, (cut, n - cut - 1), 0)[cut : n - cut], axis=0))


def median_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median (order statistics, binomial(n, 1/2)).

    With fewer than 6 samples no interval at 95 % exists; the sample range is returned.

    >>> median_ci(list(range(100)))
    (39.0, 60.0)
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = x.size
    if n == 0:
        return (math.nan, math.nan)
    exact = level == 0.95 and n <= _EXACT_MAX_SAMPLES
    lo, hi = _half_quantiles(n, (1 - level) / 2) if exact else _scipy(n, level)
    lo = max(lo - 1, 0)
    hi = min(hi, n - 1)
    return float(x[lo]), float(x[hi])


#: Sample counts up to which :func:`median_ci` at 95 % takes its binomial quantiles from :func:`_half_quantiles`
#: (exact, in integers: there they are scipy.stats.binom's ppf and isf, tests/calibrate/test_stats.py); larger counts
#: and other levels ask scipy.stats, imported then (its import is the costliest of a rank's start-up).
_EXACT_MAX_SAMPLES = 2000


def _half_quantiles(n: int, q: float) -> tuple[int, int]:
    """X ~ binomial(n, 1/2), 0 <= q < 1/2: the smallest k with P(X <= k) >= q and the smallest k with P(X > k) <= q,
    exactly (q as the float's own rational value; in integers scaled by 2**n and q's denominator).

    >>> _half_quantiles(100, 0.025)
    (40, 60)
    """
    num, den = q.as_integer_ratio()
    total = 1 << n
    k, below, count = -1, 0, 1  # below = 2**n * P(X <= k), count = C(n, k + 1)

    def step() -> None:
        nonlocal k, below, count
        k += 1
        below += count
        count = count * (n - k) // (k + 1)

    while below * den < num * total:
        step()
    lo = k
    while (total - below) * den > num * total:
        step()
    return lo, k


def _scipy(n: int, level: float) -> tuple[int, int]:
    """scipy.stats.binom's ppf and isf of ``(1 - level) / 2`` for binomial(n, 1/2)."""
    from scipy import stats as sps

    return int(sps.binom.ppf((1 - level) / 2, n, 0.5)), int(sps.binom.isf((1 - level) / 2, n, 0.5))


def summary(samples: Sequence[float], unit: str = "us") -> dict[str, Any]:
    """min / median / max / 95 % CI of the median / count of samples, keys carrying the unit."""
    x = np.asarray(samples, dtype=float)
    lo, hi = median_ci(x)
    return {
        f"min_{unit}": float(x.min()),
        f"median_{unit}": float(np.median(x)),
        f"max_{unit}": float(x.max()),
        f"ci_low_{unit}": lo,
        f"ci_high_{unit}": hi,
        "samples": int(x.size),
    }


def converged(samples: Sequence[float], rel: float = 0.025, min_samples: int = 6) -> bool:
    """True when the 95 % CI of the median lies within ``rel`` (relative) of the median on both sides."""
    if len(samples) < min_samples:
        return False
    med = float(np.median(samples))
    lo, hi = median_ci(samples)
    scale = max(abs(med), 1e-9)
    return (med - lo) <= rel * scale and (hi - med) <= rel * scale


def repeat_adaptive(
    once: Callable[[], float],
    *,
    warmup: int = 1,
    min_samples: int = 6,
    max_samples: int = 60,
    rel: float = 0.025,
    budget_s: float = 2.0,
    clock: Callable[[], float] | None = None,
) -> list[float]:
    """Call ``once()`` (returns one sample) after ``warmup`` discarded calls until :func:`converged`,
    ``max_samples`` or the time budget is reached; returns the raw samples.

    For single-process loops; MPI experiments where several ranks must agree on stopping use
    :func:`converged` on one rank and share the decision.
    """
    import time

    clock = clock or time.monotonic
    for _ in range(warmup):
        once()
    start = clock()
    out: list[float] = []
    while len(out) < max_samples:
        out.append(float(once()))
        if converged(out, rel, min_samples) or (len(out) >= min_samples and clock() - start > budget_s):
            break
    return out
