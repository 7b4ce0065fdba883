"""One weighted least-squares line with standard errors and 95 % confidence intervals (Student t with n - 2 degrees of
freedom), checked against the NIST StRD certified values (``tests/calibrate/test_fit.py``), and the simple
two-regime detector. Sizes in bytes, times in µs, per-byte costs in µs per byte.

>>> f = fit_line([0, 1000, 2000, 4000], [60.0, 110.0, 160.0, 260.0])
>>> round(f.intercept, 6), round(f.slope, 6)
(60.0, 0.05)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LineFit", "fit_line", "find_breakpoint", "fit_regimes"]


# ----------------------------------------------------------------------------------------------- weighted least squares


@dataclass(frozen=True)
class _WLS:
    """Closed-form weighted least squares of ``y = c + k x`` (two-pass, centred sums: accurate to ~1e-13)."""

    intercept: float
    slope: float
    intercept_se: float
    slope_se: float
    ssr: float  # sum of w * residual², in the units of w * y²
    sst: float  # sum of w * (y - weighted mean)²
    dof: int
    sw: float  # sum of weights
    xm: float  # weighted mean of x
    sxx: float  # sum of w * (x - xm)²


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> _WLS:
    n = x.size
    sw = float(np.sum(w))
    xm = float(np.sum(w * x) / sw)
    ym = float(np.sum(w * y) / sw)
    dx = x - xm
    dy = y - ym
    sxx = float(np.sum(w * dx * dx))
    sst = float(np.sum(w * dy * dy))
    if sxx <= 0.0:  # one distinct size: a constant, no slope to speak of
        ssr = sst
        dof = n - 1
        s2 = ssr / dof if dof > 0 else math.inf
        return _WLS(ym, 0.0, math.sqrt(s2 / sw), math.inf, ssr, sst, dof, sw, xm, sxx)
    slope = float(np.sum(w * dx * dy) / sxx)
    intercept = ym - slope * xm
    res = y - (intercept + slope * x)
    ssr = float(np.sum(w * res * res))
    dof = n - 2
    if dof > 0:
        s2 = ssr / dof
        se_s = math.sqrt(s2 / sxx)
        se_i = math.sqrt(s2 * (1.0 / sw + xm * xm / sxx))
    else:
        se_s = se_i = math.inf
    return _WLS(intercept, slope, se_i, se_s, ssr, sst, dof, sw, xm, sxx)


def _t95(dof: int) -> float:
    """Two-sided 95 % Student-t quantile (inf without degrees of freedom)."""
    from scipy import stats as sps  # here: only the fitting rank loads it (calibrate.stats says why)

    return float(sps.t.ppf(0.975, dof)) if dof > 0 else math.inf


# ------------------------------------------------------------------------------------------------------ one line


@dataclass(frozen=True)
class LineFit:
    """``value = intercept + slope * size`` with 95 % confidence half-widths; sizes in bytes, values in µs.

    ``intercept_se`` / ``slope_se`` are the standard errors (``*_ci`` = t(0.975, n - 2) times them).
    """

    intercept: float
    slope: float
    intercept_ci: float
    slope_ci: float
    r2: float
    sizes: tuple[float, ...]
    values: tuple[float, ...]
    residuals: tuple[float, ...] = field(default=())
    intercept_se: float = math.inf
    slope_se: float = math.inf

    def at(self, m: Any) -> Any:
        return self.intercept + self.slope * np.asarray(m, dtype=float)

    @property
    def max_rel_residual(self) -> float:
        """Largest |residual| relative to the fitted value (0 when the fit is exact)."""
        fitted = np.abs(self.at(self.sizes))
        res = np.abs(np.asarray(self.residuals))
        return float(np.max(res / np.maximum(fitted, 1e-9))) if res.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "intercept_us": self.intercept,
            "intercept_ci95_us": self.intercept_ci,
            "intercept_stderr_us": _finite_or_none(self.intercept_se),
            "slope_us_per_byte": self.slope,
            "slope_ci95_us_per_byte": self.slope_ci,
            "slope_stderr_us_per_byte": _finite_or_none(self.slope_se),
            "r2": self.r2,
            "sizes": [int(s) for s in self.sizes],
            "values_us": list(self.values),
            "residuals_us": list(self.residuals),
        }

    def describe(self, name: str = "") -> str:
        """``Sc = 60.00 ± 0.40 µs, Sm = 0.05000 ± 0.00010 µs/B (R² 1.0000)``-style text."""
        return (
            f"{name}c = {self.intercept:.2f} ± {self.intercept_ci:.2f} µs, "
            f"{name}m = {self.slope:.5f} ± {self.slope_ci:.5f} µs/B (R² {self.r2:.4f})"
        )


def fit_line(sizes: Sequence[float], values: Sequence[float], *, weights: Sequence[float] | None = None) -> LineFit:
    """Least-squares line through (size, value) points with standard errors and 95 % CIs.

    ``weights`` (default: all 1) multiply the squared residuals; the residual variance is estimated from the data,
    so only their ratios matter. CIs are infinite with fewer than 3 points (no degrees of freedom left).

    >>> f = fit_line([0, 1, 2, 3], [1.0, 3.1, 4.9, 7.0])
    >>> round(f.slope, 3), round(f.intercept, 3), round(f.slope_se, 4)
    (1.98, 1.03, 0.0424)
    """
    x = np.asarray(sizes, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no points to fit")
    if x.shape != y.shape:
        raise ValueError(f"sizes ({x.size}) and values ({y.size}) differ in length")
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    if x.size == 1 or np.ptp(x) == 0:
        c = float(np.average(y, weights=w))
        return LineFit(c, 0.0, math.inf, math.inf, 1.0, tuple(x), tuple(y), tuple(y - c))
    f = _wls(x, y, w)
    r2 = 1.0 - f.ssr / f.sst if f.sst > 0 else 1.0
    t = _t95(f.dof)
    res = y - (f.intercept + f.slope * x)
    return LineFit(
        f.intercept, f.slope, t * f.intercept_se, t * f.slope_se, r2, tuple(x), tuple(y), tuple(res),
        f.intercept_se, f.slope_se,
    )  # fmt: skip


def find_breakpoint(sizes: Sequence[float], values: Sequence[float], min_points: int = 3) -> int | None:
    """Index k where points ``[:k]`` and ``[k:]`` are two regimes (a protocol switch), or None.

    A split is accepted only when one line misfits (some point off by > 5 %) and two lines cut the squared
    residuals by 80 % or more. (The simple two-regime detector; :func:`fit_piecewise` is the general one.)
    """
    x = np.asarray(sizes, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.size < 2 * min_points:
        return None
    one = fit_line(x, y)
    if one.max_rel_residual < 0.05:
        return None
    sse_one = float(np.sum(np.square(one.residuals)))
    best, best_k = math.inf, None
    for k in range(min_points, x.size - min_points + 1):
        sse = sum(float(np.sum(np.square(fit_line(x[a], y[a]).residuals))) for a in (slice(0, k), slice(k, None)))
        if sse < best:
            best, best_k = sse, k
    return best_k if best <= 0.2 * sse_one else None


def fit_regimes(sizes: Sequence[float], values: Sequence[float], breakpoint: int | None) -> list[LineFit]:
    """One fit per regime: ``[all]`` without a breakpoint, else ``[below, above]``."""
    if breakpoint is None:
        return [fit_line(sizes, values)]
    return [fit_line(sizes[:breakpoint], values[:breakpoint]), fit_line(sizes[breakpoint:], values[breakpoint:])]


def _finite_or_none(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None
