"""The fit of the Python-kernel calibration (Banikazemi et al., section 2): ``S`` and ``R`` per type, ``X`` per
network, from ping-pong, consecutive sends and receives after arrival (rank 0).

* ``S_t(m)`` and ``R_t(m)`` are fitted per type (median per size, least squares, 95 % CIs);
* the wire time of every pair is what the ping-pong leaves over, ``X = T_ptp - S - R`` (both directions
  averaged), fitted for all pairs together; a pair whose own line differs beyond the confidence intervals (and by
  more than 5 %) gets a ``links`` entry;
* each pair's residual (measured ping-pong vs ``S + X + R`` from the fitted parameters) is the check of the
  model's additivity (Table 2's point);
* a protocol switch (eager -> rendezvous) is detected on the ping-pong times; the profile's numbers come from the
  regime that holds at most of the calibrated sizes (``--regime`` to choose), the other regime's fits go into
  ``provenance``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .fit import LineFit, find_breakpoint, fit_line
from .profiledoc import profile_document
from .stats import summary

__all__ = ["fit_paper_profile"]


def fit_paper_profile(
    recs: list[dict[str, Any]],
    layout: Sequence[str],
    hosts: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
    sizes: Sequence[int],
    prepared: dict[str, Any],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The profile document from the Python kernels' records (``experiment``, ``a``, ``b``, ``size``,
    ``samples_us``); ``prepared`` and ``args`` of ``python -m calibrate calibrate`` (``--network``, ``--regime``)."""
    warnings: list[str] = []
    k, pp_sizes, regime_sizes, main_idx = _protocol_split(recs, pairs, args.regime, warnings)
    per_regime = [_fits_for(recs, layout, pairs, roles, sel) for sel in regime_sizes]
    main = per_regime[main_idx]
    types_doc, network, x_source = _types_and_network(main, prepared["network"], warnings)
    links, pair_rows = _pairs(main, types_doc, network, prepared["network"] is not None, regime_sizes[main_idx])
    sample_rows = _sample_rows(recs, warnings)
    fits_doc = {t: {"S": f["S"].to_dict(), "R": f["R"].to_dict()} for t, f in main["types"].items()}
    fits_doc["network"] = main["X"].to_dict()
    other = [
        {
            "sizes": sorted(regime_sizes[i]),
            "types": {t: {"S": f["S"].to_dict(), "R": f["R"].to_dict()} for t, f in per_regime[i]["types"].items()},
            "network": per_regime[i]["X"].to_dict(),
        }
        for i in range(len(per_regime))
        if i != main_idx
    ]
    testbed = prepared["testbed"]
    provenance = {
        "method": "Banikazemi et al., Communication Modeling of Heterogeneous Networks of Workstations for "
        "Performance Characterization of Collective Operations, section 2: ping-pong (eq. 5), consecutive "
        "sends (S), receive after arrival (R); "
        "X = T_ptp - S - R",
        "x_source": x_source,
        "mode": prepared["mode"],
        "testbed": None if testbed is None else {"name": testbed.name, "time_scale": testbed.time_scale},
        "sizes": sizes,
        "precision": args.precision,
        "protocol_breakpoint_bytes": None if k is None else [pp_sizes[k - 1], pp_sizes[k]],
        "regime_sizes": sorted(regime_sizes[main_idx]),
        "fits": fits_doc,
        "other_regimes": other,
        "pairs": pair_rows,
        "warnings": warnings,
        "samples": sample_rows,
    }
    return profile_document(types_doc, network, links or None, layout, hosts, provenance)


def _medians(recs: list[dict[str, Any]], exp: str, a: int, b: int) -> tuple[list[int], list[float]]:
    pts = sorted(
        (r["size"], float(np.median(r["samples_us"])))
        for r in recs
        if r["experiment"] == exp and r["a"] == a and r["b"] == b
    )
    return [p[0] for p in pts], [p[1] for p in pts]


def _nonneg(x: float, what: str, warnings: list[str]) -> float:
    if x < 0:
        warnings.append(f"{what} fitted as {x:.4g}, below zero: set to 0 (the overhead is too small to measure)")
        return 0.0
    return x


def _protocol_split(
    recs: list[dict[str, Any]], pairs: Sequence[tuple[int, int]], regime: str, warnings: list[str]
) -> tuple[int | None, list[int], list[set[int]], int]:
    """The protocol switch seen on the first pair's ping-pong: its index (None: none), the ping-pong sizes, the
    sizes of each regime, and which regime the profile takes (``regime``: ``auto``, ``below``, ``above``)."""
    a0, b0 = pairs[0]
    pp_sizes, pp_vals = _medians(recs, "pingpong", a0, b0)
    k = find_breakpoint(pp_sizes, pp_vals)
    regimes = [slice(0, None)] if k is None else [slice(0, k), slice(k, None)]
    if k is None or regime == "below":
        main_idx = 0
    elif regime == "above":
        main_idx = 1
    else:
        main_idx = 0 if k >= len(pp_sizes) - k else 1
    regime_sizes = [set(pp_sizes[s]) for s in regimes]
    few = len(regime_sizes[main_idx])
    if few < 3:
        warnings.append(
            f"the profile's lines are fitted through only {few} message sizes: a line through 2 points has no "
            "confidence interval and nothing checks it; calibrate with 3 or more sizes (--sizes) in each regime"
        )
    return k, pp_sizes, regime_sizes, main_idx


def _fits_for(
    recs: list[dict[str, Any]],
    layout: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
    sel: set[int],
) -> dict[str, Any]:
    """The lines of one regime (its sizes ``sel``): ``S`` and ``R`` per type, ``X`` per pair and for all pairs."""
    out: dict[str, Any] = {"types": {}, "pairs": []}
    for t, (r, partner) in roles.items():
        s_x, s_y = _medians(recs, "sends", r, partner)
        r_x, r_y = _medians(recs, "recv", partner, r)
        out["types"][t] = {
            "S": fit_line(*zip(*[(x, y) for x, y in zip(s_x, s_y, strict=True) if x in sel], strict=True)),
            "R": fit_line(*zip(*[(x, y) for x, y in zip(r_x, r_y, strict=True) if x in sel], strict=True)),
            "S_points": dict(zip(s_x, s_y, strict=True)),
            "R_points": dict(zip(r_x, r_y, strict=True)),
        }
    x_all: list[tuple[int, float]] = []
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        ts = out["types"]
        xs, ys = _medians(recs, "pingpong", a, b)
        pts = []
        for m, half_rtt in zip(xs, ys, strict=True):
            if m not in sel:
                continue
            sr = ts[ta]["S_points"][m] + ts[tb]["R_points"][m] + ts[tb]["S_points"][m] + ts[ta]["R_points"][m]
            pts.append((m, half_rtt - sr / 2))
        x_all += pts
        out["pairs"].append(
            {
                "a": a,
                "b": b,
                "types": (ta, tb),
                "X": fit_line(*zip(*pts, strict=True)),
                "pingpong": dict(zip(xs, ys, strict=True)),
            }
        )
    out["X"] = fit_line(*zip(*x_all, strict=True))
    return out


def _types_and_network(
    main: dict[str, Any], given: tuple[float, float] | None, warnings: list[str]
) -> tuple[dict[str, Any], dict[str, float], str]:
    """The profile's ``types`` and ``network`` from the chosen regime's lines (``given``: ``--network``'s
    ``(Xc_us, Xm_us_per_byte)``), and where ``X`` came from."""
    types_doc: dict[str, dict[str, float]] = {}
    for t, f in main["types"].items():
        S: LineFit = f["S"]
        R: LineFit = f["R"]
        types_doc[t] = {
            "Sc_us": _nonneg(S.intercept, f"{t}.Sc_us", warnings),
            "Sm_us_per_byte": _nonneg(S.slope, f"{t}.Sm_us_per_byte", warnings),
            "Rc_us": _nonneg(R.intercept, f"{t}.Rc_us", warnings),
            "Rm_us_per_byte": _nonneg(R.slope, f"{t}.Rm_us_per_byte", warnings),
        }
    X: LineFit = main["X"]
    if given is not None:
        return types_doc, {"Xc_us": given[0], "Xm_us_per_byte": given[1]}, "network configuration (--network)"
    network = {
        "Xc_us": _nonneg(X.intercept, "network.Xc_us", warnings),
        "Xm_us_per_byte": _nonneg(X.slope, "network.Xm_us_per_byte", warnings),
    }
    return types_doc, network, "ping-pong minus measured S and R, all pairs fitted together"


def _differs(px: LineFit, X: LineFit) -> bool:
    """Whether a pair's own ``X`` line differs from all pairs' beyond both CIs and by more than 5 % (the per-byte
    term compared at 64 KiB)."""
    return any(
        abs(v_pair - v_all) > (ci_pair + ci_all) and abs(v_pair - v_all) > 0.05 * max(abs(v_all), 1e-9)
        for v_pair, v_all, ci_pair, ci_all in (
            (px.intercept, X.intercept, px.intercept_ci, X.intercept_ci),
            (px.slope * 65536, X.slope * 65536, px.slope_ci * 65536, X.slope_ci * 65536),
        )
        if math.isfinite(ci_pair) and math.isfinite(ci_all)
    )


def _pairs(
    main: dict[str, Any], types_doc: dict[str, Any], network: dict[str, float], given: bool, sizes: set[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``links`` of pairs whose ``X`` differs (not with ``--network``), and per pair its fit and the
    additivity check: measured half round trip vs the fitted ``S + X + R`` of both directions, at ``sizes``."""
    links, pair_rows = [], []
    for pf in main["pairs"]:
        px: LineFit = pf["X"]
        ta, tb = pf["types"]
        if _differs(px, main["X"]) and not given and ta != tb:
            for src, dst in ((ta, tb), (tb, ta)):
                links.append(
                    {"from": src, "to": dst, "Xc_us": max(px.intercept, 0.0), "Xm_us_per_byte": max(px.slope, 0.0)}
                )
        resid = []
        for m, meas in pf["pingpong"].items():
            if m not in sizes:
                continue
            net = network["Xc_us"] + network["Xm_us_per_byte"] * m
            pred = 0.0
            for s_t, r_t in ((ta, tb), (tb, ta)):
                s, r = types_doc[s_t], types_doc[r_t]
                pred += (s["Sc_us"] + s["Sm_us_per_byte"] * m + net + r["Rc_us"] + r["Rm_us_per_byte"] * m) / 2
            resid.append({"size": m, "measured_us": meas, "model_us": pred, "residual_pct": 100 * (meas - pred) / pred})
        pair_rows.append(
            {
                "ranks": [pf["a"], pf["b"]],
                "types": [ta, tb],
                "X_fit": px.to_dict(),
                "max_abs_residual_pct": max((abs(r["residual_pct"]) for r in resid), default=0.0),
                "residuals": resid,
            }
        )
    return links, pair_rows


def _sample_rows(recs: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
    """Every record's summary and raw samples; a warning where the CI of the median is wider than 10 % of it."""
    sample_rows = []
    for r in recs:
        s = summary(r["samples_us"])
        spread = (s["ci_high_us"] - s["ci_low_us"]) / max(s["median_us"], 1e-9)
        sample_rows.append(
            {
                "experiment": r["experiment"],
                "a": r["a"],
                "b": r["b"],
                "size": r["size"],
                **s,
                "ci_rel": spread,
                "raw_us": [round(v, 3) for v in r["samples_us"]],
            }
        )
    noisy = sorted((row for row in sample_rows if row["ci_rel"] > 0.10), key=lambda row: -row["ci_rel"])
    if noisy:
        w = noisy[0]
        warnings.append(
            f"{len(noisy)} of {len(sample_rows)} measurements have a 95% CI of the median wider than 10% of it "
            f"(worst: {w['experiment']} {w['a']}->{w['b']} at {w['size']} B, {100 * w['ci_rel']:.0f}%); "
            "a quieter machine narrows them, and a smaller --precision takes more samples"
        )
    return sample_rows
