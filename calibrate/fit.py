"""From raw timing samples to model parameters: linear fits with confidence intervals, protocol breakpoints.

Cost-vs-size data are fitted per message size on the *median* of the samples (robust to the preempted runs that
timing on a shared machine produces), by least squares, with 95 % confidence intervals from the fit's standard
errors (Student t with n-2 degrees of freedom). A change of protocol (eager -> rendezvous) shows as a kink: the
size axis is split where two lines fit much better than one, and each regime is fitted on its own.

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
from scipy import stats as sps

__all__ = ["LineFit", "fit_line", "find_breakpoint", "fit_regimes"]


@dataclass(frozen=True)
class LineFit:
    """``value = intercept + slope * size`` with 95 % confidence half-widths; sizes in bytes, values in µs."""

    intercept: float
    slope: float
    intercept_ci: float
    slope_ci: float
    r2: float
    sizes: tuple[float, ...]
    values: tuple[float, ...]
    residuals: tuple[float, ...] = field(default=())

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
            "slope_us_per_byte": self.slope,
            "slope_ci95_us_per_byte": self.slope_ci,
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


def fit_line(sizes: Sequence[float], values: Sequence[float]) -> LineFit:
    """Least-squares line through (size, value) points with 95 % CIs (infinite with fewer than 3 points)."""
    x = np.asarray(sizes, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no points to fit")
    if x.size == 1 or np.ptp(x) == 0:
        c = float(np.mean(y))
        return LineFit(c, 0.0, math.inf, math.inf, 1.0, tuple(x), tuple(y), tuple(y - c))
    slope, intercept = np.polyfit(x, y, 1)
    fitted = intercept + slope * x
    res = y - fitted
    dof = x.size - 2
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum(res**2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    if dof > 0:
        s2 = ss_res / dof
        sxx = float(np.sum((x - x.mean()) ** 2))
        se_slope = math.sqrt(s2 / sxx)
        se_icept = math.sqrt(s2 * (1.0 / x.size + x.mean() ** 2 / sxx))
        t = float(sps.t.ppf(0.975, dof))
        ci_s, ci_i = t * se_slope, t * se_icept
    else:
        ci_s = ci_i = math.inf
    return LineFit(float(intercept), float(slope), ci_i, ci_s, r2, tuple(x), tuple(y), tuple(res))


def find_breakpoint(sizes: Sequence[float], values: Sequence[float], min_points: int = 3) -> int | None:
    """Index k where points ``[:k]`` and ``[k:]`` are two regimes (a protocol switch), or None.

    A split is accepted only when one line misfits (some point off by > 5 %) and two lines cut the squared
    residuals by 80 % or more.
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
