"""Calibration on real MPI with the C kernels: isolated messages, interleaved rounds, piecewise regimes.

The method (DESIGN.md, "Measuring on real MPI"), per measured pair of ranks ``a -> b`` and node type ``t``:

* ``T(m)``, the one-way time: an isolated ``m``-byte message answered by a 0-byte acknowledgement, both ranks
  spinning ``gap_us`` between repetitions (the same idle gap as the collective timing), ``T(m) = rtt(m) −
  rtt(0)/2`` (the acknowledgement's half of the 0-byte round trip is removed);
* ``S_t(m)``: consecutive sends (time per ``MPI_Send`` with the receives posted); ``R_t(m)``: ``MPI_Recv`` of a
  message that surely arrived, the receiver spinning, never sleeping; ``C_t(m)``: a local ``memcpy`` (MPICH's
  binomial scatter and gather copy the root's own block);
* whether a size is sent eagerly or by rendezvous: ``MPI_Send`` timed while the receiver posts its receive late;
* everything in **rounds**: each round measures every size once (direction of the size sweep alternating), and,
  when asked, the native collectives and the plain C ping-pong reference in the same round, so that this
  machine's drift (30–65 % within seconds) is common to all of them; per-round medians, then medians over rounds.

Then, on rank 0: the protocol switches are found on ``T`` (:func:`calibrate.fit.fit_piecewise`, relative
weighting, the eager/rendezvous threshold always a break), and ``S``, ``R``, ``C`` and every pair's ``T`` are
fitted on those same breaks. ``X = T − S − R`` per regime; where the data would make ``X`` (or ``R``) negative —
the rendezvous copy counted in both ``S`` and ``R`` — ``R`` is capped at ``T − S`` (and ``S`` at ``T``), which
keeps ``S + X + R = T`` and is said in the warnings. The profile therefore reproduces ``T``: the self-check
predicts every measured one-way time back and reports the worst miss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DEFAULT_GAP_US", "REFERENCE_SIZES", "default_sizes", "run", "fit_profile"]

#: Idle gap between isolated messages, µs; also the lead of the collectives' common start on shared memory.
DEFAULT_GAP_US = 10.0
#: Sizes at which the plain C ping-pong reference is measured in every round.
REFERENCE_SIZES = (8, 1024, 65536, 1 << 20)
#: The self-check warns above this worst miss (%).
SELF_CHECK_WARN_PCT = 10.0


def default_sizes(quick: bool) -> list[int]:
    """0 B and a log grid to 4 MiB, three sizes per octave (one per octave to 1 MiB with ``quick``)."""
    from .fit import log_grid

    grid = log_grid(1, 1 << 20, 1) if quick else log_grid(1, 4 << 20, 3)
    return sorted({0, *grid, *REFERENCE_SIZES})


def _reps(m: int, quick: bool) -> int:
    """Repetitions of one kernel call in one round: fewer for big messages (they are long and steady)."""
    base = 11 if quick else 51
    return base if m <= 65536 else max(5, base // 2)


def _count(m: int) -> int:
    """Consecutive sends per sample: enough to amortise the handshake, not so many that they fill memory."""
    return int(min(32, max(4, (1 << 22) // max(m, 1))))


def _median(x: Any) -> float:
    return float(np.median(np.asarray(x, dtype=float)))


# ---- measuring (all ranks) ----------------------------------------------------------------------------------------
def _protocol(k: Any, comm: Any, a: int, b: int, sizes: Sequence[int], rt: Any) -> dict[str, Any]:
    """Which sizes are sent by rendezvous (the send waits for the posted receive), and the threshold.

    A late receive (posted ``delay`` after the send starts) lengthens a rendezvous send by the delay and an eager
    one not at all. Every grid size is classified; the threshold between the largest eager and the smallest
    rendezvous size is then found by bisection, to the byte."""

    def rendezvous(m: int) -> bool:
        if m == 0:
            return False
        t0 = k.late(a, b, m, 5, delay_us=0.0)
        delay = comm.bcast(300.0 + 3.0 * (_median(t0) if t0 is not None else 0.0), root=a)
        t1 = k.late(a, b, m, 5, delay_us=delay)
        return bool(comm.bcast(None if t1 is None else _median(t1) - _median(t0) > delay / 2, root=a))

    with rt.step("protocol"):
        by_size = {m: rendezvous(m) for m in sizes}
        eager = [m for m, r in by_size.items() if not r]
        rdv = [m for m, r in by_size.items() if r]
        threshold = None
        if eager and rdv and max(eager) < min(rdv):
            lo, hi = max(eager), min(rdv)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if rendezvous(mid) else (mid, hi)
            threshold = hi
        elif rdv and not eager:
            threshold = min(rdv)
    return {
        "by_size": by_size,
        "rendezvous_from_bytes": threshold,
        "mixed": bool(eager and rdv and max(eager) > min(rdv)),
    }


def run(
    k: Any,
    comm: Any,
    rt: Any,
    *,
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
    sizes: Sequence[int],
    rounds: int,
    gap_us: float,
    quick: bool,
    native_ops: Sequence[str] = (),
    native_sizes: Sequence[int] = (),
    reference: bool = True,
) -> dict[str, Any] | None:
    """Measure everything in ``rounds`` interleaved rounds; rank 0 returns the raw per-round medians (µs)."""
    rank = comm.Get_rank()
    a0, b0 = pairs[0]
    proto = _protocol(k, comm, a0, b0, sizes, rt)
    ref_sizes = [m for m in REFERENCE_SIZES if reference]
    per_round: list[dict[str, Any]] = []
    for rnd in range(rounds):
        order = list(sizes) if rnd % 2 == 0 else list(reversed(sizes))
        mine: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}, "ref": {}, "native": {}}
        rt.progress(
            f"round {rnd + 1}/{rounds}: {len(order)} sizes, {len(pairs)} pair(s), {len(roles)} type(s)"
            + (f", native {','.join(native_ops)}" if native_ops else "")
        )
        with rt.step(f"round {rnd + 1} one-way"):
            for a, b in pairs:
                rtt = {}
                for m in order:
                    rtt[m] = k.oneway(a, b, m, _reps(m, quick), gap_us=gap_us)
                    if (a, b) == (a0, b0) and m in ref_sizes:  # the reference right beside it: same moment
                        pp = k.pingpong(a0, b0, m, 11, batch=int(min(100, max(1, (4 << 20) // max(m, 1)))))
                        if rank == a0:
                            mine["ref"][m] = _median(pp)
                if rank == a:
                    half0 = _median(rtt[0]) / 2
                    mine["T"][f"{a}-{b}"] = {m: _median(v) - half0 for m, v in rtt.items()}
        with rt.step(f"round {rnd + 1} overheads"):
            for t, (r, partner) in roles.items():
                for m in order:
                    s = k.sends(r, partner, m, _count(m), _reps(m, quick))
                    rv = k.recv(partner, r, m, _reps(m, quick), settle_us=max(50.0, 4 * gap_us))
                    if rank == r:
                        mine["S"].setdefault(t, {})[m] = _median(s)
                        mine["R"].setdefault(t, {})[m] = _median(rv)
                        mine["C"].setdefault(t, {})[m] = _median(k.copy(m, _reps(m, quick)))
        for op in native_ops:
            with rt.step(f"round {rnd + 1} native {op}"):
                for m in native_sizes:
                    start, finish = k.coll(op, 0, m, _reps(m, quick), lead_us=gap_us)
                    starts, finishes = comm.gather(start, root=0), comm.gather(finish, root=0)
                    if rank == 0:
                        comp = np.max(np.array(finishes), axis=0) - np.min(np.array(starts), axis=0)
                        mine["native"].setdefault(op, {})[m] = _median(comp)
        parts = comm.gather(mine, root=0)
        if rank == 0:
            merged: dict[str, Any] = {key: {} for key in mine}
            for part in parts:
                for key, val in part.items():
                    for name, series in val.items():
                        if isinstance(series, dict):
                            merged[key].setdefault(name, {}).update(series)
                        else:
                            merged[key][name] = series
            per_round.append(merged)
    if rank != 0:
        return None
    return {"protocol": proto, "rounds": per_round, "sizes": list(sizes), "gap_us": gap_us}


# ---- fitting (rank 0) --------------------------------------------------------------------------------------------
def _over_rounds(raw: dict[str, Any], key: str, name: str, sizes: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """Median over rounds of the per-round medians of one series, on the sizes every round has."""
    have = [r[key][name] for r in raw["rounds"] if name in r[key]]
    ms = [m for m in sizes if all(m in h for h in have)]
    return ms, np.array([np.median([h[m] for h in have]) for m in ms])


def _line(fit: Any, i: int) -> tuple[float, float]:
    reg = fit.regimes[i]
    return float(reg.intercept), float(reg.slope)


def fit_profile(
    raw: dict[str, Any],
    layout: Sequence[str],
    hosts: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
) -> dict[str, Any]:
    """The ``hnowmodel.profile/2`` document from :func:`run`'s raw medians (see the module docstring)."""
    from .fit import fit_piecewise

    warnings: list[str] = []
    sizes = raw["sizes"]
    proto = raw["protocol"]
    threshold = proto["rendezvous_from_bytes"]
    key0 = f"{pairs[0][0]}-{pairs[0][1]}"
    ms, t0 = _over_rounds(raw, "T", key0, sizes)
    eager = [m for m in ms if not proto["by_size"].get(m, False)]
    rendezvous = [m for m in ms if proto["by_size"].get(m, False)]
    switch = max((m for m in eager if threshold is None or m < threshold), default=None) if threshold else None
    if proto["mixed"]:
        warnings.append(
            "the eager/rendezvous test gave no single threshold (some larger sizes went eagerly): "
            "the profile treats every message as eager"
        )
        threshold = None
    positive = np.maximum(t0, 1e-3)
    ft = fit_piecewise(ms, positive, known_breaks=[switch] if switch else None, max_regimes=5)
    breaks = list(ft.breaks)
    uptos: list[int | None] = [*breaks, None]
    nreg = len(uptos)
    # the protocol's own regime bound: unmeasured sizes below the threshold are eager, like the sizes below them
    doc_uptos = [threshold - 1 if (switch is not None and u == switch) else u for u in uptos]

    def fitted(series: np.ndarray, xs: Sequence[int], what: str) -> Any:
        f = fit_piecewise(xs, np.maximum(series, 1e-4), breaks=breaks)
        warnings.extend(f"{what}: {w}" for w in f.warnings)
        return f

    fits: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}}
    lines: dict[str, dict[str, list[list[float]]]] = {"S": {}, "R": {}, "C": {}, "T": {}}
    for t in roles:
        for key in ("S", "R", "C"):
            xs, ys = _over_rounds(raw, key, t, sizes)
            f = fitted(ys, xs, f"{key}_{t}")
            fits[key][t] = f
            lines[key][t] = [list(_line(f, i)) for i in range(nreg)]
    for a, b in pairs:
        name = f"{a}-{b}"
        xs, ys = _over_rounds(raw, "T", name, sizes)
        f = fitted(ys, xs, f"T {name}")
        fits["T"][name] = f
        lines["T"][name] = [list(_line(f, i)) for i in range(nreg)]
    # X = T - S - R per regime and coefficient; cap S at T, then R at T - S, where the data would make X negative
    capped: dict[int, set[str]] = {}
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        for i in range(nreg):
            for j, coef in ((0, "constant"), (1, "per-byte")):
                room = lines["T"][f"{a}-{b}"][i][j] - lines["S"][ta][i][j]
                if room < 0:
                    capped.setdefault(i, set()).add(f"S_{ta} {coef} term capped at T's")
                    lines["S"][ta][i][j] += room
                    room = 0.0
                if lines["R"][tb][i][j] > room:
                    capped.setdefault(i, set()).add(f"R_{tb} {coef} term capped at T - S (X = 0)")
                    lines["R"][tb][i][j] = max(room, 0.0)
    for i, what in sorted(capped.items()):
        kind = "rendezvous" if threshold is not None and (uptos[i] is None or uptos[i] >= threshold) else "eager"
        warnings.append(
            f"regime {i + 1} ({_span(doc_uptos, i)}, {kind}): {'; '.join(sorted(what))} - the measured overheads add "
            "up to more than the one-way time (at a blocking rendezvous the receiver's copy is inside the send and "
            "inside the receive), so S + X + R is kept equal to the measured T"
        )
    x_lines = {}
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        x_lines[(ta, tb)] = [
            [max(0.0, lines["T"][f"{a}-{b}"][i][j] - lines["S"][ta][i][j] - lines["R"][tb][i][j]) for j in (0, 1)]
            for i in range(nreg)
        ]
    types_doc = {
        t: {
            "regimes": [
                {
                    "upto_bytes": doc_uptos[i],
                    "Sc_us": max(lines["S"][t][i][0], 0.0),
                    "Sm_us_per_byte": max(lines["S"][t][i][1], 0.0),
                    "Rc_us": max(lines["R"][t][i][0], 0.0),
                    "Rm_us_per_byte": max(lines["R"][t][i][1], 0.0),
                    "Cc_us": max(lines["C"][t][i][0], 0.0),
                    "Cm_us_per_byte": max(lines["C"][t][i][1], 0.0),
                }
                for i in range(nreg)
            ]
        }
        for t in roles
    }

    def link_regimes(xl: list[list[float]]) -> list[dict[str, Any]]:
        return [{"upto_bytes": doc_uptos[i], "Xc_us": xl[i][0], "Xm_us_per_byte": xl[i][1]} for i in range(nreg)]

    first = (layout[pairs[0][0]], layout[pairs[0][1]])
    network = {"regimes": link_regimes(x_lines[first])}
    links = []
    for (ta, tb), xl in x_lines.items():
        if (ta, tb) != first and ta != tb:
            for src, dst in ((ta, tb), (tb, ta)):
                links.append({"from": src, "to": dst, "regimes": link_regimes(xl)})
    doc: dict[str, Any] = {
        "schema": "hnowmodel.profile/2",
        "types": types_doc,
        "network": network,
        **({"links": links} if links else {}),
        "nodes": [{"rank": r, "host": hosts[r], "type": t} for r, t in enumerate(layout)],
    }
    if threshold is not None:
        doc["protocol"] = {"rendezvous_from_bytes": int(threshold)}
    prov: dict[str, Any] = {
        "method": "C kernels: isolated message a->b + 0-byte acknowledgement, T = rtt(m) - rtt(0)/2; S from "
        "consecutive sends; R from a receive after arrival (receiver spinning); C from a local memcpy; X = T - S - R;"
        " regimes found on T (relative weights, modified BIC) and shared by S, R, C, X",
        "timing": {
            "style": "isolated messages, both ranks spinning gap_us between them; native collectives: common start "
            "on the shared CLOCK_MONOTONIC, completion = latest finish - earliest start",
            "gap_us": raw["gap_us"],
        },
        "buffers": "page-aligned (posix_memalign 4096), separate send and receive buffers",
        "sizes": list(sizes),
        "rounds": len(raw["rounds"]),
        "protocol": {
            "rendezvous_from_bytes": threshold,
            "how": "MPI_Send timed with the receive posted late: a rendezvous send waits for it; threshold bisected",
            "eager_sizes": eager,
            "rendezvous_sizes": rendezvous,
        },
        "regime_breaks_bytes": breaks,
        "fits": {key: {name: f.to_dict() for name, f in val.items()} for key, val in fits.items()},
        "warnings": warnings,
    }
    doc["provenance"] = prov
    return doc


def _span(uptos: Sequence[int | None], i: int) -> str:
    lo = 0 if i == 0 else int(uptos[i - 1]) + 1
    hi = uptos[i]
    return f"{lo} B and up" if hi is None else f"{lo}-{hi} B"


def self_check(
    doc: dict[str, Any], raw: dict[str, Any], pairs: Sequence[tuple[int, int]], layout: Sequence[str], profile: Any
) -> dict[str, Any]:
    """Predict every measured one-way time back from the fitted profile: rows, worst miss (%), warning."""
    rows = []
    for a, b in pairs:
        ms, ts = _over_rounds(raw, "T", f"{a}-{b}", raw["sizes"])
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


def elapsed(t0: float) -> float:
    return round(time.monotonic() - t0, 2)
