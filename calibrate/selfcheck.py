"""What a fitted profile is checked against: the measured one-way times predicted back, the plain C ping-pong
reference (shared memory), the native collectives measured in the same rounds, and the measured reduction costs
predicted back."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .protocol import REFERENCE_SIZES, SELF_CHECK_WARN_PCT
from .rounds import over_rounds

__all__ = ["self_check", "reference_rows", "native_rows", "net_ptp_us", "net_self_check", "reduce_self_check"]


def self_check(
    doc: dict[str, Any], raw: dict[str, Any], pairs: Sequence[tuple[int, int]], layout: Sequence[str], profile: Any
) -> dict[str, Any]:
    """Predict every measured one-way time back from the fitted profile: rows, worst miss (%), warning."""
    rows = []
    for a, b in pairs:
        ms, ts = over_rounds(raw, "T", f"{a}-{b}", raw["sizes"])
        pred = profile.ptp_us(layout[a], layout[b], np.array(ms, dtype=float))
        for m, t, p in zip(ms, ts, pred, strict=True):
            rows.append(
                {
                    "pair": f"{a}->{b}",
                    "size": int(m),
                    "measured_us": float(t),
                    "profile_us": float(p),
                    "miss_pct": 100.0 * (float(p) - float(t)) / float(t) if t > 0 else math.nan,
                }
            )
    finite = [abs(r["miss_pct"]) for r in rows if math.isfinite(r["miss_pct"])]
    worst = max(finite) if finite else math.nan
    out = {"rows": rows, "worst_miss_pct": worst, "warn_above_pct": SELF_CHECK_WARN_PCT}
    if finite and worst > SELF_CHECK_WARN_PCT:
        w = max(rows, key=lambda r: abs(r["miss_pct"]) if math.isfinite(r["miss_pct"]) else -1)
        doc["provenance"]["warnings"].append(
            f"self-check: the profile misses a measured one-way time by {worst:.1f} % (pair {w['pair']} at "
            f"{w['size']} B: {w['profile_us']:.3g} vs {w['measured_us']:.3g} µs), above {SELF_CHECK_WARN_PCT:g} %"
        )
    return out


def reference_rows(
    raw: dict[str, Any], pairs: Sequence[tuple[int, int]], layout: Sequence[str], profile: Any
) -> list[dict[str, Any]]:
    """The plain C ping-pong (half round trip, median of batches; median over rounds) vs the profile's one-way
    time at the reference sizes: error = 100·(profile − reference)/reference, with the rounds' spread."""
    a, b = pairs[0]
    out = []
    for m in REFERENCE_SIZES:
        vals = [r["ref"][m] for r in raw["rounds"] if m in r["ref"]]
        if not vals:
            continue
        ref = float(np.median(vals))
        prof = float(profile.ptp_us(layout[a], layout[b], float(m)))
        out.append(
            {
                "size": m,
                "reference_us": ref,
                "reference_min_us": float(min(vals)),
                "reference_max_us": float(max(vals)),
                "profile_us": prof,
                "error_pct": 100.0 * (prof - ref) / ref,
            }
        )
    return out


def native_rows(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Native collectives measured in the rounds: per (op, size) the median over rounds of the per-round median
    completion (µs), with min/max over rounds and every round's value."""
    out = []
    ops: dict[str, set[int]] = {}
    for r in raw["rounds"]:
        for op, series in r["native"].items():
            ops.setdefault(op, set()).update(series)
    for op, ms in ops.items():
        for m in sorted(ms):
            vals = [r["native"][op][m] for r in raw["rounds"] if m in r["native"].get(op, {})]
            out.append(
                {
                    "op": op,
                    "size": int(m),
                    "rounds_us": vals,
                    "median_us": float(np.median(vals)),
                    "min_us": float(min(vals)),
                    "max_us": float(max(vals)),
                }
            )
    return out


def net_ptp_us(doc: dict[str, Any], ta: str, tb: str, m: float) -> float:
    """One-way time (µs) from a network profile document, with the burst term:
    ``S_a(m) + Xc + Xm·max(0, m − burst) + R_b(m)`` (the link's own burst, else the network's)."""

    def regime(regs: list[dict[str, Any]]) -> dict[str, Any]:
        return next(r for r in regs if r["upto_bytes"] is None or m <= r["upto_bytes"])

    ext = doc.get("extensions", {}).get("network", {})
    link = next((lk for lk in doc.get("links", []) if lk["from"] == ta and lk["to"] == tb), None)
    xr = regime((link or doc["network"])["regimes"])
    burst = ext.get("burst_bytes_by_link", {}).get(f"{ta}->{tb}", ext.get("burst_bytes", 0))
    s = regime(doc["types"][ta]["regimes"])
    r = regime(doc["types"][tb]["regimes"])
    return float(
        s["Sc_us"]
        + s["Sm_us_per_byte"] * m
        + xr["Xc_us"]
        + xr["Xm_us_per_byte"] * max(0.0, m - burst)
        + r["Rc_us"]
        + r["Rm_us_per_byte"] * m
    )


def net_self_check(
    doc: dict[str, Any], raw: dict[str, Any], pairs: Sequence[tuple[int, int]], layout: Sequence[str]
) -> dict[str, Any]:
    """Predict every measured one-way time back from the network profile (with its burst term): rows, the worst
    miss, and the worst miss at and above each link's one-way burst (``worst_miss_from_burst_pct``; below it a
    link's one-way time still grows a little with the size, which the burst form leaves out)."""
    rows = []
    fits = doc.get("provenance", {}).get("fits", {}).get("T", {})
    for a, b in pairs:
        name = f"{a}-{b}"
        burst = float(fits.get(name, {}).get("burst_bytes", 0.0))
        ms, ts = over_rounds(raw, "T", name, raw["grids"][name])
        for m, t in zip(ms, ts, strict=True):
            p = net_ptp_us(doc, layout[a], layout[b], float(m))
            rows.append(
                {
                    "pair": f"{a}->{b}",
                    "size": int(m),
                    "measured_us": float(t),
                    "profile_us": p,
                    "miss_pct": 100.0 * (p - float(t)) / float(t) if t > 0 else math.nan,
                    "from_burst": bool(burst > 0 and m >= burst),
                }
            )
    finite = [abs(r["miss_pct"]) for r in rows if math.isfinite(r["miss_pct"])]
    worst = max(finite) if finite else math.nan
    above = [abs(r["miss_pct"]) for r in rows if r["from_burst"] and math.isfinite(r["miss_pct"])]
    out = {
        "rows": rows,
        "worst_miss_pct": worst,
        "worst_miss_from_burst_pct": max(above) if above else math.nan,
        "warn_above_pct": SELF_CHECK_WARN_PCT,
        "burst_term": True,
    }
    if finite and worst > SELF_CHECK_WARN_PCT:
        w = max(rows, key=lambda r: abs(r["miss_pct"]) if math.isfinite(r["miss_pct"]) else -1)
        doc["provenance"]["warnings"].append(
            f"self-check: the profile misses a measured one-way time by {worst:.1f} % (pair {w['pair']} at "
            f"{w['size']} B: {w['profile_us']:.4g} vs {w['measured_us']:.4g} µs), above {SELF_CHECK_WARN_PCT:g} %"
            + (f"; from each link's burst up the worst miss is {max(above):.1f} %" if above else "")
        )
    return out


def reduce_self_check(
    entry: dict[str, Any], sizes: Sequence[int], measured: dict[str, Sequence[float]], warnings: list[str]
) -> dict[str, dict[str, Any]]:
    """Predict every measured combine (µs, per node type and size) back from the profile's ``extensions.reduce``
    ``entry``, read as the library reads it (:class:`hnowmodel.params.ReduceTerms`): per type its rows and worst miss
    (%); a warning into ``warnings`` above :data:`~calibrate.protocol.SELF_CHECK_WARN_PCT`.

    >>> entry = {"types": {"f": {"Gc_us": 0.0, "Gm_us_per_byte": 1e-3}}}
    >>> reduce_self_check(entry, [1000, 2000], {"f": [1.0, 2.5]}, w := [])["f"]["worst_miss_pct"], len(w)
    (20.0, 1)
    """
    from hnowmodel.params import ReduceTerms

    terms = ReduceTerms.from_doc(entry, list(measured), "reduce self-check")
    out = {}
    for t, values in measured.items():
        cost = terms.costs[t]
        rows = [
            {
                "size": int(m),
                "measured_us": float(v),
                "profile_us": cost.us(m),
                "miss_pct": 100.0 * (cost.us(m) - v) / v,
            }
            for m, v in zip(sizes, values, strict=True)
            if v > 0
        ]
        worst = max((abs(r["miss_pct"]) for r in rows), default=math.nan)
        out[t] = {"rows": rows, "worst_miss_pct": worst, "warn_above_pct": SELF_CHECK_WARN_PCT}
        if worst > SELF_CHECK_WARN_PCT:
            w = max(rows, key=lambda r: abs(r["miss_pct"]))
            warnings.append(
                f"self-check: the reduction cost of {t} misses a measured combine by {worst:.1f} % (at {w['size']} B: "
                f"{w['profile_us']:.3g} vs {w['measured_us']:.3g} µs), above {SELF_CHECK_WARN_PCT:g} %"
            )
    return out
