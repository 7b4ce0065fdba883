"""The token-bucket hinge: a one-way time on a shaped network link, ``T(m) ≈ c + k·max(0, m − burst)``, per regime.

The first ``burst`` bytes of a message pass at once when the link's token bucket is full; the rest at the link's
per-byte cost ``k`` (µs/byte). :func:`hinge_fit` fits it robustly from one-way times; :func:`hinge_predict`
evaluates a fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .fit import fit_line
from .protocol import ABOVE_BURST_BYTES, MIN_BURST_BYTES, SMALL_BYTES

__all__ = ["regime_of", "hinge_fit", "hinge_predict"]


def regime_of(m: float, breaks: Sequence[int]) -> int:
    """Index of the regime of size ``m`` when regime i > 0 starts at ``breaks[i - 1]`` (increasing)."""
    return int(sum(1 for b in breaks if m >= b))


def hinge_fit(sizes: Sequence[int], values: Sequence[float], breaks: Sequence[int] = ()) -> dict[str, Any]:
    """Fit the one-way time with a token-bucket burst, per regime (regime i > 0 starts at ``breaks[i - 1]``):
    ``T(m) ≈ c_i + k_i·max(0, m − burst)`` (µs, bytes), robustly.

    * ``k_i`` and the extended-back intercept ``c'_i``: a relative-weighted line through the regime's sizes ≥
      :data:`ABOVE_BURST_BYTES` (a regime with fewer than two takes the line of the nearest regime that has one);
    * ``c_i``: the median of the regime's times at ≤ :data:`SMALL_BYTES`; a regime without such sizes continues
      its own line (``c_i = c'_i + k_i·burst``) or, without one, the regime below it;
    * the burst, on the first regime with both (the *burst regime*): first ``(c − c')/k``, then refined to the
      size within ±50 % of it that minimises the squared relative misses of that regime's sizes above
      :data:`SMALL_BYTES` (the corner of the hinge is where the token bucket's packets make the one-way time
      bend; the line's slope ``k`` is kept); below :data:`MIN_BURST_BYTES` it is 0 (no burst).

    Returns ``regimes`` (``from_bytes``, ``c_us``, ``k_us_per_byte``, ``line_intercept_us`` (``c'``),
    ``own_line``, ``points``), ``burst_bytes``, ``burst_first_bytes`` (before refining), ``burst_regime``, and for
    the burst regime ``c_us``, ``k_us_per_byte``, ``k_ci95_us_per_byte``, ``rms_rel`` (the line's root-mean-square
    relative residual) and ``points`` (sizes in its line)."""
    m = np.asarray(sizes, dtype=float)
    t = np.asarray(values, dtype=float)
    brk = sorted(int(b) for b in breaks)
    n = len(brk) + 1
    reg = np.array([regime_of(x, brk) for x in m], dtype=int)
    lines, sels, own = _regime_lines(m, t, reg, n)
    smalls = [(reg == i) & (m <= SMALL_BYTES) for i in range(n)]
    cs: list[float | None] = [float(np.median(t[sm])) if sm.any() else None for sm in smalls]
    both = [i for i in range(n) if own[i] and cs[i] is not None]
    b = both[0] if both else next((i for i in range(n) if cs[i] is not None), next(i for i in range(n) if own[i]))
    k = float(lines[b].slope)
    c_line = float(lines[b].intercept)
    c_b = cs[b] if cs[b] is not None else c_line
    burst0 = max(0.0, (c_b - c_line) / k) if k > 0 else 0.0
    burst = _refine_burst(m[(reg == b) & (m > SMALL_BYTES)], t[(reg == b) & (m > SMALL_BYTES)], c_b, k, burst0)
    regimes = []
    for i in range(n):
        ki = float(lines[i].slope)
        if i == b:
            ci = c_b
        elif cs[i] is not None:
            ci = cs[i]
        elif own[i]:
            ci = float(lines[i].intercept) + ki * burst
        else:
            ci = regimes[-1]["c_us"] if regimes else c_b
        regimes.append(
            {
                "from_bytes": 0 if i == 0 else brk[i - 1],
                "c_us": float(ci),
                "k_us_per_byte": ki,
                "line_intercept_us": float(lines[i].intercept),
                "own_line": own[i],
                "points": int(sels[i].sum()),
            }
        )
    sel = sels[b]
    resid = (c_line + k * m[sel] - t[sel]) / np.maximum(t[sel], 1e-3)
    return {
        "regimes": regimes,
        "burst_regime": b,
        "c_us": c_b,
        "s_us_per_byte": 0.0,
        "k_us_per_byte": k,
        "k_ci95_us_per_byte": float(lines[b].slope_ci),
        "beta_bytes": burst,
        "burst_bytes": burst,
        "burst_first_bytes": burst0,
        "rms_rel": float(np.sqrt(np.mean(resid**2))) if resid.size else math.nan,
        "points": int(sel.sum()),
    }


def _regime_lines(
    m: np.ndarray, t: np.ndarray, reg: np.ndarray, n: int
) -> tuple[list[Any], list[np.ndarray], list[bool]]:
    """Per regime the relative-weighted line through its sizes ≥ :data:`ABOVE_BURST_BYTES` (without two of its
    own, the nearest regime's, from above first), the sizes in it, and whether the line is the regime's own."""
    lines: list[Any] = [None] * n
    sels: list[np.ndarray] = [np.zeros(m.size, dtype=bool)] * n
    for i in range(n):
        sel = (reg == i) & (m >= ABOVE_BURST_BYTES)
        if sel.sum() >= 2:
            lines[i] = fit_line(m[sel], t[sel], weights=1.0 / np.maximum(t[sel], 1e-3) ** 2)
            sels[i] = sel
    if not any(f is not None for f in lines) and m.size >= 2:  # no two sizes above the burst: the largest three
        sel = m >= np.sort(m)[max(0, m.size - 3)]
        i = int(reg[np.argmax(m)])
        lines[i] = fit_line(m[sel], t[sel], weights=1.0 / np.maximum(t[sel], 1e-3) ** 2)
        sels[i] = sel
    own = [f is not None for f in lines]
    if not any(own):
        raise ValueError("hinge_fit: needs at least two sizes")
    for i in range(n):  # borrow the nearest line, from above first (a small regime lies below the burst)
        if lines[i] is None:
            near = sorted((j for j in range(n) if own[j]), key=lambda j: (abs(j - i), j < i))
            lines[i] = lines[near[0]]
            sels[i] = sels[near[0]]
    return lines, sels, own


def _refine_burst(m: np.ndarray, t: np.ndarray, c: float, k: float, burst0: float) -> float:
    """The hinge's corner: the burst within ±50 % of ``burst0`` that minimises the squared relative misses of
    ``c + k·max(0, m − burst)`` at sizes ``m`` (bytes) with one-way times ``t`` (µs); 0 below
    :data:`MIN_BURST_BYTES`."""
    burst = burst0
    if burst0 >= MIN_BURST_BYTES and m.size:
        grid = np.linspace(0.5 * burst0, 1.5 * burst0, 2001)
        pred = c + k * np.maximum(0.0, m[None, :] - grid[:, None])
        loss = np.sum((pred / np.maximum(t, 1e-3) - 1.0) ** 2, axis=1)
        burst = float(grid[int(np.argmin(loss))])
    return 0.0 if burst < MIN_BURST_BYTES else burst


def hinge_predict(h: dict[str, Any], m: float) -> float:
    """The one-way time (µs) at ``m`` bytes of a :func:`hinge_fit` result: ``c_i + k_i·max(0, m − burst)``."""
    regs = h["regimes"]
    r = regs[regime_of(m, [g["from_bytes"] for g in regs[1:]])]
    return float(r["c_us"] + r["k_us_per_byte"] * max(0.0, m - h["burst_bytes"]))
