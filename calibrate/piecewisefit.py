"""Piecewise-linear fits. The cost of an MPI message is not one line in m: it changes slope and intercept where the
library switches protocol (eager -> rendezvous, a copy mechanism, a cache size). The sizes are split into regimes by
an exact dynamic program over all segmentations of the sorted distinct sizes, the number of regimes is chosen by BIC
on the weighted residuals, each regime is fitted on its own (no continuity imposed: protocols jump), with relative
weights (errors in %, not in µs), and no parameter comes out negative without a warning (:func:`fit_piecewise`);
several series fitted on the breaks found on one of them (:func:`fit_shared_breaks`). Sizes in bytes, times in µs.

>>> pw = fit_piecewise([0, 1, 2, 3, 10, 11, 12, 13], [1, 2, 3, 4, 30, 31, 32, 33])
>>> pw.breaks
(3,)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .linefit import _finite_or_none, _t95, _wls

__all__ = ["RegimeFit", "PiecewiseFit", "fit_piecewise", "fit_shared_breaks"]


_SSR_FLOOR = 1e-12  # SSR_w / N floor, relative to the weighted mean square of the values


def _fmt_bytes(m: float) -> str:
    m = int(m)
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if m >= size and m % (size // 16) == 0:
            return f"{m / size:g} {unit}"
    return f"{m} B"


@dataclass(frozen=True)
class RegimeFit:
    """One regime of a piecewise fit: ``value = intercept + slope * m`` for sizes up to ``upto_bytes``.

    ``from_bytes``/``to_bytes`` are the smallest and largest measured sizes in the regime; ``upto_bytes`` is
    ``to_bytes``, or None for the last regime (it holds for every larger size). ``*_ci95`` are (low, high) bounds;
    a parameter that was clamped at 0 (listed in ``constrained``) keeps the standard error of the unconstrained
    fit and its interval is ``(0, max(0, unconstrained + t * se))``. ``r2`` is the weighted R²; ``points`` counts
    the samples, ``sizes`` the distinct sizes; ``dof`` the residual degrees of freedom of the t quantile.
    """

    intercept: float
    slope: float
    intercept_se: float
    slope_se: float
    intercept_ci95: tuple[float, float]
    slope_ci95: tuple[float, float]
    r2: float
    points: int
    sizes: int
    dof: int
    from_bytes: int
    to_bytes: int
    upto_bytes: int | None
    constrained: tuple[str, ...] = ()

    def predict(self, m: Any) -> np.ndarray:
        """Fitted value (µs) at size(s) ``m`` (bytes), whatever regime they fall in."""
        return self.intercept + self.slope * np.asarray(m, dtype=float)

    @property
    def bandwidth_gbps(self) -> float:
        """1 / slope in GB/s (10⁹ bytes per second); inf for a zero slope."""
        return 1e-3 / self.slope if self.slope > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (non-finite numbers become None); units in the key names."""

        def pair(p: tuple[float, float]) -> list[float | None]:
            return [_finite_or_none(p[0]), _finite_or_none(p[1])]

        return {
            "upto_bytes": self.upto_bytes,
            "sizes_bytes": [self.from_bytes, self.to_bytes],
            "intercept_us": self.intercept,
            "intercept_stderr_us": _finite_or_none(self.intercept_se),
            "intercept_ci95_us": pair(self.intercept_ci95),
            "slope_us_per_byte": self.slope,
            "slope_stderr_us_per_byte": _finite_or_none(self.slope_se),
            "slope_ci95_us_per_byte": pair(self.slope_ci95),
            "r2": self.r2,
            "points": self.points,
            "distinct_sizes": self.sizes,
            "constrained": list(self.constrained),
        }


@dataclass(frozen=True)
class PiecewiseFit:
    """Piecewise-linear fit of a cost (µs) against the message size (bytes), one line per protocol regime.

    A size m falls in the first regime whose ``upto_bytes`` is >= m (the last regime takes everything above).
    ``bic`` maps each number of regimes tried to its BIC (lower is better; the chosen one is ``len(regimes)``
    unless the breaks were forced); ``weights`` is ``"relative"``, ``"absolute"`` or ``"given"``.
    """

    regimes: tuple[RegimeFit, ...]
    warnings: tuple[str, ...] = ()
    weights: str = "relative"
    n_points: int = 0
    bic: tuple[tuple[int, float], ...] = ()
    forced_breaks: bool = False

    @property
    def breaks(self) -> tuple[int, ...]:
        """The ``upto_bytes`` of every regime but the last (bytes)."""
        return tuple(int(r.upto_bytes) for r in self.regimes[:-1] if r.upto_bytes is not None)

    def regime_index(self, m: Any) -> np.ndarray:
        """Index of the regime each size in ``m`` (bytes) falls in."""
        return np.searchsorted(np.asarray(self.breaks, dtype=float), np.asarray(m, dtype=float), side="left")

    def predict(self, m: Any) -> np.ndarray:
        """Fitted values (µs) at sizes ``m`` (bytes, scalar or array), each from its own regime.

        >>> fit_piecewise([0, 1, 2, 10, 11, 12], [1.0, 2.0, 3.0, 20.0, 21.0, 22.0]).predict([1.5, 12])
        array([ 2.5, 22. ])
        """
        mm = np.asarray(m, dtype=float)
        idx = self.regime_index(mm)
        c = np.array([r.intercept for r in self.regimes])[idx]
        k = np.array([r.slope for r in self.regimes])[idx]
        return c + k * mm

    def max_abs_rel_error_pct(self, sizes: Sequence[float], values: Sequence[float]) -> float:
        """The self-check: worst ``|fitted - measured| / |measured|`` in % over the points (measured 0 skipped)."""
        x = np.asarray(sizes, dtype=float)
        y = np.asarray(values, dtype=float)
        ok = y != 0
        if not np.any(ok):
            return 0.0
        return float(np.max(np.abs(self.predict(x[ok]) - y[ok]) / np.abs(y[ok])) * 100.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"regimes": [...], "warnings": [...], "weights", "points", "bic"}``."""
        return {
            "regimes": [r.to_dict() for r in self.regimes],
            "warnings": list(self.warnings),
            "weights": self.weights,
            "points": self.n_points,
            "breaks_forced": self.forced_breaks,
            "bic": {str(k): _finite_or_none(v) for k, v in self.bic},
        }

    def report(self, name: str = "") -> str:
        """Readable multi-line summary in the style of lmfit's ``fit_report``: one line per regime, value ± stderr."""
        how = "forced" if self.forced_breaks else "chosen by modified BIC"
        lines = [f"[[Piecewise fit{' ' + name if name else ''}]]"]
        lines.append(f"    # data points      = {self.n_points}")
        lines.append(f"    # regimes          = {len(self.regimes)} ({how})")
        lines.append(f"    weights            = {self.weights}")
        if self.bic:
            lines.append("    BIC                = " + ", ".join(f"{k}: {v:.1f}" for k, v in self.bic))
        lines.append("[[Regimes]]")
        for i, r in enumerate(self.regimes, 1):
            upto = "above" if r.upto_bytes is None else f"<= {_fmt_bytes(r.upto_bytes)}"
            rng = f"{_fmt_bytes(r.from_bytes)} .. {_fmt_bytes(r.to_bytes)}"
            lines.append(
                f"    {i}  {upto:<14} ({rng}, {r.points} pts)  "
                f"c = {r.intercept:.4g} +/- {r.intercept_se:.2g} µs ({_pct(r.intercept_se, r.intercept)})  "
                f"m = {r.slope:.5g} +/- {r.slope_se:.2g} µs/B ({_pct(r.slope_se, r.slope)}, "
                f"{r.bandwidth_gbps:.3g} GB/s)  R² {r.r2:.4f}" + ("  [clamped: " + ", ".join(r.constrained) + "]"
                                                              if r.constrained else "")
            )  # fmt: skip
        if self.warnings:
            lines.append("[[Warnings]]")
            lines += [f"    {w}" for w in self.warnings]
        return "\n".join(lines)


def _pct(se: float, v: float) -> str:
    return f"{100 * se / abs(v):.2f}%" if v != 0 and math.isfinite(se) else "n/a"


def _prepare(
    sizes: Sequence[float], values: Sequence[float], weights: str | Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Sorted sizes, values and weights (stable sort: samples of one size keep their order)."""
    x = np.asarray(sizes, dtype=float).ravel()
    y = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("no points to fit")
    if x.shape != y.shape:
        raise ValueError(f"sizes ({x.size}) and values ({y.size}) differ in length")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("sizes and values must be finite numbers (no NaN or inf)")
    if np.any(x < 0):
        raise ValueError(f"sizes must be >= 0 bytes, got {float(x.min()):g}")
    if isinstance(weights, str):
        if weights == "relative":
            a = np.abs(y)
            pos = a[a > 0]
            floor = float(pos.min()) if pos.size else 1.0
            w = 1.0 / np.maximum(a, floor) ** 2
        elif weights in ("absolute", "none"):
            w = np.ones_like(y)
            weights = "absolute"
        else:
            raise ValueError(f"weights must be 'relative', 'absolute' or a sequence of numbers, got {weights!r}")
        kind = weights
    else:
        w = np.asarray(weights, dtype=float).ravel()
        if w.shape != y.shape or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("weights must be one positive finite number per point")
        kind = "given"
    order = np.argsort(x, kind="stable")
    return x[order], y[order], w[order], kind


def _constrained_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float, float, int, str]:
    """Non-negative weighted least squares of ``y = c + k x`` (c, k >= 0) when the unconstrained optimum is not.

    The problem is convex and its unconstrained optimum is infeasible, so the optimum lies on the boundary: the
    better feasible one of "c = 0" (line through the origin) and "k = 0" (a constant), or both zero -- the
    solution ``scipy.optimize.nnls`` finds, in closed form with its standard errors. Returns
    ``(c, k, se of the free parameter, ssr, dof, which parameter(s) were clamped)``.
    """
    n = x.size
    cands: list[tuple[float, float, float, float, int, str]] = []
    sxx0 = float(np.sum(w * x * x))
    if sxx0 > 0:
        k = float(np.sum(w * x * y) / sxx0)
        if k >= 0:
            ssr = float(np.sum(w * (y - k * x) ** 2))
            dof = n - 1
            se = math.sqrt(ssr / dof / sxx0) if dof > 0 else math.inf
            cands.append((0.0, k, se, ssr, dof, "intercept"))
    sw = float(np.sum(w))
    c = float(np.sum(w * y) / sw)
    if c >= 0:
        ssr = float(np.sum(w * (y - c) ** 2))
        dof = n - 1
        se = math.sqrt(ssr / dof / sw) if dof > 0 else math.inf
        cands.append((c, 0.0, se, ssr, dof, "slope"))
    if not cands:
        return 0.0, 0.0, math.inf, float(np.sum(w * y * y)), n, "intercept,slope"
    return min(cands, key=lambda t: t[3])


def _fit_regime(x: np.ndarray, y: np.ndarray, w: np.ndarray, number: int, last: bool, warnings: list[str]) -> RegimeFit:
    """Fit one regime, clamping a negative parameter at 0 (with a warning that says which and why)."""
    f = _wls(x, y, w)
    t = _t95(f.dof)
    c, k, se_c, se_k = f.intercept, f.slope, f.intercept_se, f.slope_se
    ci_c = (c - t * se_c, c + t * se_c)
    ci_k = (k - t * se_k, k + t * se_k)
    ssr, dof = f.ssr, f.dof
    clamped: tuple[str, ...] = ()
    where = f"regime {number} ({_fmt_bytes(x[0])} .. {_fmt_bytes(x[-1])})"
    if c < 0 or k < 0:
        c2, k2, se_free, ssr, dof, which = _constrained_fit(x, y, w)
        clamped = tuple(which.split(","))
        t2 = _t95(dof)
        for name in clamped:
            est, se, unit = (c, se_c, "µs") if name == "intercept" else (k, se_k, "µs/B")
            hi = est + t * se
            if name == "intercept":
                why = (
                    "the intercept is below the noise of the smallest sizes"
                    if hi >= 0
                    else "the data put it below zero beyond its 95 % CI: the regime's smallest sizes do not lie "
                    "on its line (a protocol switch inside the regime, or a timing offset)"
                )
            else:
                why = (
                    "the time does not grow with the size here, within the noise"
                    if hi >= 0
                    else "the time falls with the size beyond its 95 % CI: a protocol switch inside the regime "
                    "or a timing problem"
                )
            warnings.append(
                f"{where}: {name} fitted as {est:.4g} ± {se:.2g} {unit}, below zero; refitted with {name} = 0 "
                f"(non-negative least squares): {why}"
            )
        if "intercept" in clamped:
            ci_c = (0.0, max(0.0, c + t * se_c))
        if "slope" in clamped:
            ci_k = (0.0, max(0.0, k + t * se_k))
        if "intercept" not in clamped:
            se_c = se_free
            ci_c = (max(0.0, c2 - t2 * se_free), c2 + t2 * se_free)
        if "slope" not in clamped:
            se_k = se_free
            ci_k = (max(0.0, k2 - t2 * se_free), k2 + t2 * se_free)
        c, k = c2, k2
    r2 = 1.0 - ssr / f.sst if f.sst > 0 else 1.0
    return RegimeFit(
        intercept=c, slope=k, intercept_se=se_c, slope_se=se_k, intercept_ci95=ci_c, slope_ci95=ci_k, r2=r2,
        points=int(x.size), sizes=int(np.unique(x).size), dof=dof, from_bytes=int(x[0]), to_bytes=int(x[-1]),
        upto_bytes=None if last else int(x[-1]), constrained=clamped,
    )  # fmt: skip


def _segmentations(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, starts: np.ndarray, max_regimes: int, min_points: int,
    known: Sequence[float],
) -> dict[int, tuple[float, list[int]]]:  # fmt: skip
    """Exact DP: for each number of regimes k, the least total weighted SSR and its regime starts (size indices).

    ``starts[i]`` is the first sample of the i-th distinct size (plus a sentinel at the end). A regime is a run of
    at least ``min_points`` consecutive distinct sizes, never straddling a ``known`` break. O(k n²) segment
    costs, each an O(points) closed-form fit.
    """
    n = starts.size - 1
    u = x[starts[:-1]]
    inf = math.inf
    cost = np.full((n + 1, n + 1), inf)
    scale = max(float(x[-1]), 1.0)
    for i in range(n - min_points + 1):
        # prefix sums of the samples from size i on, shifted to that size's first point (keeps cancellation small)
        a = starts[i]
        xs = (x[a:] - x[a]) / scale
        ys = y[a:] - y[a]
        ws = w[a:]
        sw, sx, sy = np.cumsum(ws), np.cumsum(ws * xs), np.cumsum(ws * ys)
        sxx, sxy, syy = np.cumsum(ws * xs * xs), np.cumsum(ws * xs * ys), np.cumsum(ws * ys * ys)
        e = starts[i + min_points :] - a - 1  # last sample of each candidate segment [i, j)
        cxx = sxx[e] - sx[e] ** 2 / sw[e]
        cxy = sxy[e] - sx[e] * sy[e] / sw[e]
        cyy = syy[e] - sy[e] ** 2 / sw[e]
        ssr = np.maximum(cyy - np.where(cxx > 0, cxy**2 / np.where(cxx > 0, cxx, 1.0), 0.0), 0.0)
        js = np.arange(i + min_points, n + 1)
        ok = np.ones(js.size, dtype=bool)
        for b in known:
            ok &= ~((u[i] <= b) & (b < u[js - 1]))
        cost[i, js[ok]] = ssr[ok]
    best = np.full((max_regimes + 1, n + 1), inf)
    arg = np.zeros((max_regimes + 1, n + 1), dtype=int)
    best[0, 0] = 0.0
    for k in range(1, max_regimes + 1):
        for j in range(1, n + 1):
            tot = best[k - 1, :j] + cost[:j, j]
            i = int(np.argmin(tot))
            best[k, j], arg[k, j] = tot[i], i
    out: dict[int, tuple[float, list[int]]] = {}
    for k in range(1, max_regimes + 1):
        if math.isfinite(best[k, n]):
            cuts, j = [], n
            for kk in range(k, 0, -1):
                j = int(arg[kk, j])
                cuts.append(j)
            out[k] = (float(best[k, n]), sorted(cuts))
    return out


def _forced_pieces(x: np.ndarray, breaks: Sequence[float]) -> list[tuple[int, int]]:
    """The index ranges of the sorted sizes ``x`` in the regimes that ``breaks`` force (each at least two sizes)."""
    bounds = sorted(float(b) for b in breaks)
    edges = np.searchsorted(x, bounds, side="right")
    pieces = [(a, e) for a, e in zip(np.r_[0, edges], np.r_[edges, x.size], strict=True)]
    for a, e in pieces:
        if e - a == 0 or np.unique(x[a:e]).size < 2:
            raise ValueError(
                f"breaks {[int(b) for b in bounds]} leave a regime with fewer than 2 distinct measured sizes "
                f"(sizes {[int(v) for v in np.unique(x)]})"
            )
    return pieces


def _searched_pieces(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    max_regimes: int,
    min_points: int,
    known_breaks: Sequence[float] | None,
    break_penalty: float,
) -> tuple[list[tuple[int, int]], list[tuple[int, float]]]:
    """The index ranges of the regimes the modified BIC chooses (see :func:`fit_piecewise`), and the BIC of every
    number of regimes tried."""
    starts = np.flatnonzero(np.r_[True, np.diff(x) > 0])
    starts = np.r_[starts, x.size]
    known = sorted(float(b) for b in (known_breaks or ()))
    if len(known) + 1 > max_regimes:
        raise ValueError(f"{len(known)} known breaks need max_regimes >= {len(known) + 1}, got {max_regimes}")
    segs = _segmentations(x, y, w, starts, max_regimes, min_points, known)
    if not segs:
        n_sizes = starts.size - 1
        if known:
            raise ValueError(
                f"known breaks {[int(b) for b in known]} leave a regime with fewer than min_points={min_points} "
                f"of the {n_sizes} distinct sizes"
            )
        segs = {1: (_wls(x, y, w).ssr, [0])}  # too few sizes to split: one regime, whatever min_points says
        if n_sizes < 2:
            raise ValueError("a line needs at least two distinct sizes")
    n = x.size
    floor = _SSR_FLOOR * float(np.sum(w * y * y)) / n
    bic: list[tuple[int, float]] = []
    for k, (ssr, _) in sorted(segs.items()):
        bic.append((k, n * math.log(max(ssr / n, floor, 1e-300)) + (2 * k + break_penalty * (k - 1)) * math.log(n)))
    k_best = min(bic, key=lambda kb: (kb[1], kb[0]))[0]
    cut_sizes = segs[k_best][1]
    idx = [int(starts[i]) for i in cut_sizes] + [x.size]
    return list(zip(idx[:-1], idx[1:], strict=True)), bic


def fit_piecewise(
    sizes: Sequence[float],
    values: Sequence[float],
    *,
    weights: str | Sequence[float] = "relative",
    max_regimes: int = 4,
    min_points: int = 3,
    breaks: Sequence[float] | None = None,
    known_breaks: Sequence[float] | None = None,
    break_penalty: float = 3.0,
) -> PiecewiseFit:
    """Fit piecewise-linear regimes ``value = c_i + k_i m`` to costs (µs) against message sizes (bytes).

    **Input.** ``sizes`` and ``values`` pair up one point each: either one median per size, or raw samples with
    a size per sample (sizes may repeat; breaks always fall between distinct sizes). The standard errors and
    CIs assume the points' errors are independent: true enough for per-size medians measured interleaved, but
    raw samples taken back to back share the machine's drift, so their CIs come out too narrow -- pass medians
    for honest CIs.

    **Weights.** ``"relative"`` (default) minimises the squared *relative* error, weights ``1 / value²`` (a value
    of 0 or below is weighted like the smallest nonzero |value|); ``"absolute"`` minimises µs²; or give one
    positive weight per point. The residual scale is estimated from the data (only weight ratios matter).

    **Regimes.** An exact dynamic program finds, for every k <= ``max_regimes``, the segmentation of the sorted
    distinct sizes into k runs of at least ``min_points`` sizes that minimises the total weighted squared
    residual (each run its own line; lines need not meet: protocols jump). k is chosen by a BIC for segmented
    regression, ``N ln(SSR_w / N) + (2k + b (k - 1)) ln N``. With relative weights the weighted residuals are the
    relative errors, modelled as independent normal with one unknown variance, so ``N ln(SSR_w / N)`` is
    -2 ln L up to a constant; each regime has 2 coefficients and each break costs ``b = break_penalty``
    coefficients. Plain BIC (b = 1) under-prices a break, whose position is the best of ~N candidates: on noisy
    straight lines it invents a regime in ~10 % of fits. The default b = 3 is the modified BIC of Hall, Osborn &
    Sakkas (2013, "Inference on structural breaks using information criteria", The Manchester School), where a
    break counts as three coefficients: a new regime must cut SSR_w by a factor ``N^(-5/N)`` (27 % for 65
    sizes). On the 0..4 MiB grid (65 sizes) it invented a regime in 1 of 2000 noisy lines (1-5 % noise) and
    found all four regimes of an MPICH shared-memory profile (docs/model.md, "Regimes") at 1 % noise in 100 of
    100 seeds; at 2-3 % noise it may merge the two middle regimes (they differ by <= 7 %) but keeps the eager
    and cache switches.
    SSR_w / N is floored at 1e-12 of the weighted mean square of the values, so that on exact data the fewest
    regimes that fit exactly win. The smallest k wins ties.

    ``breaks`` forces the regimes instead (no search): sorted sizes in bytes, each the ``upto_bytes`` of a regime
    (it holds sizes <= the break and > the previous one): use the breaks found on one series to fit another
    (:func:`fit_shared_breaks`). ``known_breaks`` are breaks that must be present (e.g. a threshold read from the
    MPI library's settings) while the search may add others. ``break_penalty``: see above.

    **Negative parameters.** A regime whose unconstrained intercept or slope is negative is refitted with both
    >= 0 (non-negative least squares) and a warning names the parameter, the regime and why.

    >>> pw = fit_piecewise([0, 1, 2, 3, 10, 11, 12, 13], [1, 2, 3, 4, 30, 31, 32, 33])
    >>> [(r.upto_bytes, round(r.intercept, 9), round(r.slope, 9)) for r in pw.regimes]
    [(3, 1.0, 1.0), (None, 20.0, 1.0)]
    """
    x, y, w, kind = _prepare(sizes, values, weights)
    if max_regimes < 1:
        raise ValueError(f"max_regimes must be >= 1, got {max_regimes}")
    if min_points < 2:
        raise ValueError(f"min_points must be >= 2 (a line needs two sizes), got {min_points}")
    warnings: list[str] = []
    bic: list[tuple[int, float]] = []
    if breaks is not None:
        pieces, forced = _forced_pieces(x, breaks), True
    else:
        pieces, bic = _searched_pieces(x, y, w, max_regimes, min_points, known_breaks, break_penalty)
        forced = False
    regimes = tuple(
        _fit_regime(x[a:e], y[a:e], w[a:e], i + 1, i == len(pieces) - 1, warnings) for i, (a, e) in enumerate(pieces)
    )
    return PiecewiseFit(regimes, tuple(warnings), kind, int(x.size), tuple(bic), forced)


def fit_shared_breaks(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    on: str,
    **options: Any,
) -> dict[str, PiecewiseFit]:
    """Fit several series on the same regimes: the breaks are found on ``series[on]``, the others reuse them.

    ``series`` maps a name to ``(sizes, values)`` (bytes, µs; medians or raw samples as in :func:`fit_piecewise`),
    e.g. ``{"T": …, "S": …, "RX": …}`` with ``on="T"``: the one-way time shows the protocol switches most
    clearly, and S, R and X must switch at the same sizes for the profile's regimes to be per protocol.
    ``options`` (``weights``, ``max_regimes``, ``min_points``, ``known_breaks``) go to the search on ``on``;
    ``weights`` also to the other fits. A warning of any fit is prefixed by its series' name.

    >>> s = [0, 1, 2, 3, 10, 11, 12, 13]
    >>> out = fit_shared_breaks({"T": (s, [1, 2, 3, 4, 30, 31, 32, 33]), "S": (s, [1, 1, 1, 1, 5, 5, 5, 5])}, on="T")
    >>> out["S"].breaks, round(out["S"].regimes[1].intercept, 9)
    ((3,), 5.0)
    """
    if on not in series:
        raise ValueError(f"series {on!r} (to find the breaks on) is not among {sorted(series)}")
    if "breaks" in options:
        raise ValueError("fit_shared_breaks finds the breaks itself: pass known_breaks to impose some")
    lead = fit_piecewise(*series[on], **options)
    out: dict[str, PiecewiseFit] = {}
    weights = options.get("weights", "relative")
    for name, (sz, vals) in series.items():
        f = lead if name == on else fit_piecewise(sz, vals, weights=weights, breaks=lead.breaks)
        out[name] = PiecewiseFit(
            f.regimes, tuple(f"{name}: {w}" for w in f.warnings), f.weights, f.n_points, f.bic, f.forced_breaks
        )
    return out
