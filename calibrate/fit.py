"""From timing samples to model parameters: weighted line fits with CIs, piecewise regimes found from the data.

Sizes are in bytes, times in µs, per-byte costs in µs per byte.

* :func:`fit_line` -- one least-squares line with standard errors and 95 % confidence intervals (Student t with
  n - 2 degrees of freedom); checked against the NIST StRD certified values (``tests/calibrate/test_fit.py``).
* :func:`fit_piecewise` -- the cost of an MPI message is not one line in m: it changes slope and intercept where
  the library switches protocol (eager -> rendezvous, a copy mechanism, a cache size). The sizes are split into
  regimes by an exact dynamic program over all segmentations of the sorted distinct sizes, the number of regimes is
  chosen by BIC on the weighted residuals, each regime is fitted on its own (no continuity imposed: protocols jump),
  with relative weights (errors in %, not in µs), and no parameter comes out negative without a warning.
* :func:`fit_shared_breaks` -- several series (S, R + X, T) fitted on the break positions found on one of them.
* :func:`log_grid` -- the message sizes to measure: about three per octave, powers of two included.

The line fits live in :mod:`calibrate.linefit`, the piecewise ones in :mod:`calibrate.piecewisefit`; this module
re-exports both.

>>> f = fit_line([0, 1000, 2000, 4000], [60.0, 110.0, 160.0, 260.0])
>>> round(f.intercept, 6), round(f.slope, 6)
(60.0, 0.05)
>>> sizes = log_grid(0, 1 << 20)
>>> times = [(2.0 + m / 10_000) if m < 8192 else (5.0 + m / 5_000) for m in sizes]
>>> pw = fit_piecewise(sizes, times)
>>> pw.breaks, [round(r.intercept, 6) for r in pw.regimes]
((6502,), [2.0, 5.0])
"""

from __future__ import annotations

import math

from .linefit import LineFit, find_breakpoint, fit_line, fit_regimes
from .piecewisefit import PiecewiseFit, RegimeFit, fit_piecewise, fit_shared_breaks

__all__ = [
    "LineFit",
    "fit_line",
    "find_breakpoint",
    "fit_regimes",
    "RegimeFit",
    "PiecewiseFit",
    "fit_piecewise",
    "fit_shared_breaks",
    "log_grid",
]


# ------------------------------------------------------------------------------------------------------ log grid


def log_grid(lo: int, hi: int, per_octave: int = 3) -> list[int]:
    """Message sizes (bytes) from ``lo`` to ``hi``: ``round(2**(j / per_octave))`` for whole j, plus 0 if ``lo == 0``.

    Sorted, unique, whole bytes. Every power of two in range is on the grid (j a multiple of ``per_octave``), so
    protocol thresholds such as 8192 fall on a measured size; only grid points inside ``[lo, hi]`` are returned.

    >>> log_grid(0, 64)
    [0, 1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 32, 40, 51, 64]
    >>> log_grid(4096, 16384)
    [4096, 5161, 6502, 8192, 10321, 13004, 16384]
    """
    lo, hi, per_octave = int(lo), int(hi), int(per_octave)
    if lo < 0 or hi < lo:
        raise ValueError(f"log_grid needs 0 <= lo <= hi, got lo={lo}, hi={hi}")
    if per_octave < 1:
        raise ValueError(f"log_grid needs per_octave >= 1, got {per_octave}")
    out: set[int] = {0} if lo == 0 else set()
    if hi >= 1:
        j_hi = math.ceil(math.log2(hi) * per_octave) + 1
        for j in range(0, j_hi + 1):
            q, r = divmod(j, per_octave)
            m = 1 << q if r == 0 else round(2.0 ** (j / per_octave))
            if lo <= m <= hi:
                out.add(m)
    return sorted(out)
