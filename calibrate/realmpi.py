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

__all__ = [
    "DEFAULT_GAP_US",
    "REFERENCE_SIZES",
    "NET_BUDGET_US",
    "PairKernels",
    "default_sizes",
    "run",
    "fit_profile",
    "net_grid",
    "probe_slope",
    "network_auto_layout",
    "plan_network",
    "run_network",
    "hinge_fit",
    "net_ptp_us",
    "fit_network_profile",
    "net_self_check",
]

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


def _center(x: Any) -> float:
    """One round's summary of a kernel's repetitions: the 20 %-trimmed mean. Small messages take one of two times
    (the receive posted before or after the message arrives); a median flips between the two modes from round to
    round, the trimmed mean follows their mix smoothly and still drops the outliers."""
    from scipy.stats import trim_mean

    return float(trim_mean(np.asarray(x, dtype=float), 0.2))


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
    common_start = b0 == (a0 + 1) % comm.Get_size()  # the kernel's p2p goes from its root to the next rank
    ref_sizes = [m for m in REFERENCE_SIZES if reference]
    per_round: list[dict[str, Any]] = []
    for rnd in range(rounds):
        order = list(sizes) if rnd % 2 == 0 else list(reversed(sizes))
        mine: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}, "ref": {}, "native": {}, "P": {}}
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
                    half0 = _center(rtt[0]) / 2
                    mine["T"][f"{a}-{b}"] = {m: _center(v) - half0 for m, v in rtt.items()}
        if common_start:
            # the same message with both ranks starting at one instant (send and receive posted together), as the
            # collectives are timed: a receive posted as the message arrives takes the slower of two paths
            with rt.step(f"round {rnd + 1} common-start one-way"):
                for m in order:
                    start, finish = k.coll("p2p", a0, m, _reps(m, quick), lead_us=gap_us)
                    starts, finishes = comm.gather(start, root=0), comm.gather(finish, root=0)
                    if rank == 0:
                        comp = np.max(np.array(finishes), axis=0) - np.min(np.array(starts), axis=0)
                        mine["P"][f"{a0}-{b0}"] = {**mine["P"].get(f"{a0}-{b0}", {}), m: _center(comp)}
        with rt.step(f"round {rnd + 1} overheads"):
            for t, (r, partner) in roles.items():
                for m in order:
                    s = k.sends(r, partner, m, _count(m), _reps(m, quick))
                    rv = k.recv(partner, r, m, _reps(m, quick), settle_us=max(50.0, 4 * gap_us))
                    if rank == r:
                        mine["S"].setdefault(t, {})[m] = _center(s)
                        mine["R"].setdefault(t, {})[m] = _center(rv)
                        mine["C"].setdefault(t, {})[m] = _center(k.copy(m, _reps(m, quick)))
        for op in native_ops:
            with rt.step(f"round {rnd + 1} native {op}"):
                for m in native_sizes:
                    start, finish = k.coll(op, 0, m, _reps(m, quick), lead_us=gap_us)
                    starts, finishes = comm.gather(start, root=0), comm.gather(finish, root=0)
                    if rank == 0:
                        comp = np.max(np.array(finishes), axis=0) - np.min(np.array(starts), axis=0)
                        mine["native"].setdefault(op, {})[m] = _center(comp)
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
    cs = _common_start(raw, key0, sizes)
    if cs is not None:
        doc["extensions"] = {"common_start": cs}
    prov: dict[str, Any] = {
        "spread_over_rounds": _spread(raw, breaks, roles, pairs, sizes),
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


def _common_start(raw: dict[str, Any], key: str, sizes: Sequence[int]) -> dict[str, Any] | None:
    """Per size, the median over rounds of (common-start one-way − isolated one-way) measured in the same round
    (µs; the profile's ``extensions.common_start``, see :func:`hnowmodel.predict.common_start_us`); None when the
    rounds measured no common-start one-way."""
    xs, extra = [], []
    for m in sizes:
        d = [r["P"][key][m] - r["T"][key][m] for r in raw["rounds"] if m in r.get("P", {}).get(key, {})]
        if d:
            xs.append(int(m))
            extra.append(round(float(np.median(d)), 4))
    if not xs:
        return None
    return {
        "sizes_bytes": xs,
        "extra_us": extra,
        "how": "one MPI_Send/MPI_Recv with both ranks starting at one instant of the shared clock (completion = "
        "receiver's finish - earliest start) minus the isolated one-way time, same round, median over rounds",
    }


def _spread(
    raw: dict[str, Any],
    breaks: list[int],
    roles: dict[str, tuple[int, int]],
    pairs: Sequence[tuple[int, int]],
    sizes: Sequence[int],
) -> dict[str, Any]:
    """Every series fitted again on each round alone (same breaks): per regime, the min / median / max over rounds
    of its intercept (µs) and slope (µs/byte) - how much a parameter moves from one run to the next."""
    from .fit import fit_piecewise

    names = [("T", f"{a}-{b}") for a, b in pairs] + [(k, t) for t in roles for k in ("S", "R", "C")]
    out: dict[str, Any] = {}
    for key, name in names:
        per: list[list[tuple[float, float]]] = []
        for r in raw["rounds"]:
            series = r[key].get(name, {})
            ms = [m for m in sizes if m in series]
            if len(ms) < 2:
                continue
            try:
                f = fit_piecewise(ms, np.maximum([series[m] for m in ms], 1e-4), breaks=breaks)
            except ValueError:
                continue
            per.append([(reg.intercept, reg.slope) for reg in f.regimes])
        if not per:
            continue
        regs = []
        for i in range(len(per[0])):
            c = np.array([p[i][0] for p in per])
            k = np.array([p[i][1] for p in per])
            regs.append(
                {
                    "intercept_us": [float(c.min()), float(np.median(c)), float(c.max())],
                    "slope_us_per_byte": [float(k.min()), float(np.median(k)), float(k.max())],
                }
            )
        out[f"{key} {name}"] = {"rounds": len(per), "regimes": regs}
    return out


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


# ======================================================================================================================
# Network mode: ranks on several hosts (TCP between them, possibly through token-bucket shaped links)
# ======================================================================================================================
#: One isolated message may take at most this long (µs) on a pair: larger sizes are not measured there.
NET_BUDGET_US = 40_000.0
#: ... with ``quick``.
NET_BUDGET_QUICK_US = 25_000.0
#: Smallest idle gap between isolated messages on the network (µs).
NET_GAP_MIN_US = 1_000.0
#: The gap after an m-byte message is this many times the measured per-byte cost × m (µs), at least the minimum.
REFILL_SAFETY = 1.5
#: Sizes above this are never measured on the network (bytes).
NET_MAX_SIZE = 1 << 20
#: A fitted token-bucket burst below this (bytes) is taken as no burst at all.
MIN_BURST_BYTES = 512
#: Two hosts' per-byte costs agree (same group) when they differ by at most this fraction, or within their CIs.
GROUP_TOLERANCE = 0.05


def _sleep_wait(request: Any, first_s: float = 1e-4, cap_s: float = 2e-3) -> None:
    """Complete ``request`` testing it between growing sleeps: waiting ranks leave the CPU to the measuring pair
    (2 cores, 6 ranks: a busy-polling bystander delays the pair's messages by whole scheduler time slices)."""
    poll = first_s
    while not request.Test():
        time.sleep(poll)
        poll = min(2 * poll, cap_s)


class PairKernels:
    """The C kernels run by two ranks on their own two-rank communicator while every other rank sleeps.

    ``call(a, b, name, *args)`` is collective over the whole communicator: ranks ``a`` and ``b`` run
    ``Kernels.<name>`` on their pair communicator (world ranks translated), the others wait in a sleeping
    ``Ibarrier``; every rank returns the kernel's result on the rank that measures (None elsewhere). The pair
    communicators are made once per unordered pair (``MPI_Comm_split``, collective)."""

    def __init__(self, comm: Any) -> None:
        from .ckernels import Kernels

        self.comm = comm
        self.rank = comm.Get_rank()
        self.world = Kernels(comm)  # collectives over every rank, and the local copy
        self._subs: dict[tuple[int, int], Any] = {}

    def _sub(self, a: int, b: int) -> tuple[Any, tuple[int, int]]:
        from mpi4py import MPI

        from .ckernels import Kernels

        key = (min(a, b), max(a, b))
        if key not in self._subs:
            color = 0 if self.rank in key else MPI.UNDEFINED
            sub = self.comm.Split(color, key=self.rank)
            self._subs[key] = Kernels(sub) if sub != MPI.COMM_NULL else None
        return self._subs[key], key

    def call(self, a: int, b: int, name: str, *args: Any, **kw: Any) -> Any:
        k, key = self._sub(a, b)
        out = None
        if self.rank in key:
            out = getattr(k, name)(key.index(a), key.index(b), *args, **kw)
        _sleep_wait(self.comm.Ibarrier())
        return out

    def free(self) -> None:
        for k in self._subs.values():
            if k is not None:
                k.comm.Free()
        self._subs.clear()


def net_grid(quick: bool) -> list[int]:
    """0 B and a log grid from 256 B to 1 MiB (three sizes per octave; two with ``quick``); each pair measures the
    sizes its budget allows."""
    from .fit import log_grid

    return sorted({0, *log_grid(256, NET_MAX_SIZE, 2 if quick else 3)})


def _gap_us(k_us_per_byte: float, m: int, gap_min_us: float) -> float:
    """Idle gap (µs) after an ``m``-byte message: long enough for a token bucket drained by the message to refill
    (``m`` bytes at the measured per-byte cost, with :data:`REFILL_SAFETY`), never shorter than ``gap_min_us``."""
    return float(max(gap_min_us, REFILL_SAFETY * k_us_per_byte * m * 1.05 + 200.0))


def probe_slope(
    pk: PairKernels, a: int, b: int, *, budget_us: float, gap_min_us: float, reps: int = 5
) -> dict[str, float]:
    """One-way per-byte cost a → b (µs/byte) from isolated messages at two sizes, on every rank.

    A pilot (two back-to-back 32 KiB messages) bounds the cost; then ``m2`` = the largest 64 KiB·2^j whose message
    fits half the budget (at least 64 KiB) and ``m1 = m2/4`` are timed ``reps`` times with a refill gap; the slope
    is the difference of the medians over ``m2 − m1``, with the distribution-free 95 % CI of the per-repetition
    slopes' median."""
    from .stats import median_ci

    comm = pk.comm
    pilot = pk.call(a, b, "oneway", 32768, 2, gap_us=gap_min_us)
    k0 = comm.bcast(None if pilot is None else float(np.max(pilot)) / 32768.0, root=a)
    m2 = 65536  # at least 64 KiB: the two sizes must differ by much more than the scheduling noise
    while m2 * 2 <= NET_MAX_SIZE and k0 * m2 * 2 <= budget_us / 2:
        m2 *= 2
    m1 = m2 // 4
    gap = _gap_us(k0, m2, gap_min_us)
    r1 = pk.call(a, b, "oneway", m1, reps, gap_us=gap)
    r2 = pk.call(a, b, "oneway", m2, reps, gap_us=gap)
    out = None
    if r1 is not None:
        ks = (np.asarray(r2) - np.asarray(r1)) / (m2 - m1)
        lo, hi = median_ci(ks)
        k = (float(np.median(r2)) - float(np.median(r1))) / (m2 - m1)
        out = {"k_us_per_byte": k, "ci_low": min(lo, k), "ci_high": max(hi, k), "sizes": [m1, m2], "pilot": k0}
    return comm.bcast(out, root=a)


def network_auto_layout(
    pk: PairKernels, rt: Any, hosts: Sequence[str], *, budget_us: float, gap_min_us: float
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Host groups discovered by measuring the links (never from a cluster spec).

    For every ordered pair of hosts (their first ranks) the one-way per-byte cost is measured
    (:func:`probe_slope`). A message i → j is as slow as the slower of i's egress and j's ingress, so host i's
    own egress cost is the smallest cost of its outgoing pairs and its ingress cost the smallest of its incoming
    ones (exact whenever another host is at least as fast; a single fastest host is indistinguishable from the
    next group by any one-flow measurement and joins it). Hosts are sorted by (egress, ingress) cost and a new
    group starts where either differs from the group's first host by more than their confidence intervals and
    :data:`GROUP_TOLERANCE`. Ranks take their host's group; names ``node`` (one group), ``fast``/``slow``,
    ``fast``/``medium``/``slow``, else ``type1``… (fastest first). Returns the layout and what was measured."""
    first: dict[str, int] = {}
    for r, h in enumerate(hosts):
        first.setdefault(h, r)
    names = list(first)
    n = len(names)
    cost = np.full((n, n), np.nan)
    half = np.full((n, n), np.nan)  # CI half-width
    rt.progress(f"auto layout: measuring the links between {n} hosts ({n * (n - 1)} directed pairs)")
    with rt.step("auto layout (links)"):
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                p = probe_slope(pk, first[names[i]], first[names[j]], budget_us=budget_us, gap_min_us=gap_min_us)
                cost[i, j] = p["k_us_per_byte"]
                half[i, j] = max(p["ci_high"] - p["k_us_per_byte"], p["k_us_per_byte"] - p["ci_low"], 0.0)
    cost = np.where(np.isfinite(cost), np.maximum(cost, 1e-6), np.nan)
    e_idx, i_idx = _link_model(cost)
    egress = [float(cost[i, j]) for i, j in enumerate(e_idx)]
    e_ci = [float(half[i, j]) for i, j in enumerate(e_idx)]
    ingress = [float(cost[j, i]) for i, j in enumerate(i_idx)]
    i_ci = [float(half[j, i]) for i, j in enumerate(i_idx)]

    def close(x: float, y: float, cx: float, cy: float) -> bool:
        return abs(x - y) <= max(cx + cy, GROUP_TOLERANCE * max(abs(x), abs(y)))

    order = sorted(range(n), key=lambda i: (egress[i], ingress[i]))
    groups: list[list[int]] = []
    for i in order:
        if groups:
            g = groups[-1][0]
            if close(egress[i], egress[g], e_ci[i], e_ci[g]) and close(ingress[i], ingress[g], i_ci[i], i_ci[g]):
                groups[-1].append(i)
                continue
        groups.append([i])
    label = (
        ["node"]
        if len(groups) == 1
        else ["fast", "slow"]
        if len(groups) == 2
        else ["fast", "medium", "slow"]
        if len(groups) == 3
        else [f"type{g + 1}" for g in range(len(groups))]
    )
    host_type = {names[i]: label[g] for g, members in enumerate(groups) for i in members}
    layout = tuple(host_type[h] for h in hosts)
    mbit = [8.0 / e if e > 0 else math.inf for e in egress]
    rt.progress(
        "auto layout: "
        + ", ".join(f"{names[i]} {host_type[names[i]]} ({mbit[i]:.0f} Mbit/s payload out)" for i in range(n))
    )
    info = {
        "method": "one-way per-byte cost of every ordered host pair (isolated messages at two sizes, refill gap); "
        "host egress = min over its outgoing pairs, ingress = min over its incoming pairs; grouped within CIs "
        f"and {100 * GROUP_TOLERANCE:g} %",
        "hosts": names,
        "pair_cost_us_per_byte": [[None if i == j else float(cost[i, j]) for j in range(n)] for i in range(n)],
        "egress_us_per_byte": egress,
        "ingress_us_per_byte": ingress,
        "groups": {label[g]: [names[i] for i in members] for g, members in enumerate(groups)},
    }
    return layout, info


def _link_model(cost: np.ndarray, sweeps: int = 6) -> tuple[list[int], list[int]]:
    """Per host, which measured pair gives its egress and its ingress cost: the fit of ``cost[i, j] ≈ max(e_i,
    n_j)`` (µs/byte) minimising the summed relative |error| (robust to a stray measurement), each ``e_i`` chosen
    among row i's costs and each ``n_j`` among column j's, by coordinate descent from the row / column minima.
    Returns the column index behind each ``e_i`` and the row index behind each ``n_j``."""
    n = cost.shape[0]
    off = ~np.eye(n, dtype=bool)
    big = np.where(off, cost, np.inf)
    e_idx = [int(np.argmin(big[i])) for i in range(n)]
    i_idx = [int(np.argmin(big[:, j])) for j in range(n)]
    e = np.array([cost[i, e_idx[i]] for i in range(n)])
    nn = np.array([cost[i_idx[j], j] for j in range(n)])

    def loss(ev: np.ndarray, nv: np.ndarray) -> float:
        model = np.maximum(ev[:, None], nv[None, :])
        return float(np.nansum(np.where(off, np.abs(cost - model) / cost, 0.0)))

    best = loss(e, nn)
    for _ in range(sweeps):
        improved = False
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                old_e = e[i]
                e[i] = cost[i, j]
                got = loss(e, nn)
                if got < best - 1e-12:
                    best, e_idx[i], improved = got, j, True
                else:
                    e[i] = old_e
        for j in range(n):
            for i in range(n):
                if i == j:
                    continue
                old_n = nn[j]
                nn[j] = cost[i, j]
                got = loss(e, nn)
                if got < best - 1e-12:
                    best, i_idx[j], improved = got, i, True
                else:
                    nn[j] = old_n
        if not improved:
            break
    return e_idx, i_idx


def plan_network(
    layout: Sequence[str], hosts: Sequence[str]
) -> tuple[list[tuple[int, int]], dict[str, tuple[int, int]]]:
    """Measured pairs and per-type roles on several hosts: per type one pair of ranks on two of its hosts (when it
    has two), and every ordered pair of types in both directions; each type's role partner is on another host."""
    by_type: dict[str, list[int]] = {}
    for r, t in enumerate(layout):
        by_type.setdefault(t, []).append(r)
    pairs: list[tuple[int, int]] = []
    roles: dict[str, tuple[int, int]] = {}
    for t, rs in by_type.items():
        a = rs[0]
        other = [r for r in rs if hosts[r] != hosts[a]]
        if other:
            pairs.append((a, other[0]))
        elsewhere = other or [r for r in range(len(layout)) if hosts[r] != hosts[a]] or [r for r in rs if r != a]
        roles[t] = (a, elsewhere[0])
    types = list(by_type)
    for i, ta in enumerate(types):
        for tb in types[i + 1 :]:
            a, b = by_type[ta][0], by_type[tb][0]
            pairs += [(a, b), (b, a)]
    return pairs, roles


def run_network(
    pk: PairKernels,
    rt: Any,
    *,
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
    sizes: Sequence[int],
    rounds: int,
    gap_min_us: float,
    quick: bool,
    budget_us: float,
    slopes: dict[tuple[int, int], float] | None = None,
    native_ops: Sequence[str] = (),
    native_sizes: Sequence[int] = (),
) -> dict[str, Any] | None:
    """Measure every pair and type on the network in ``rounds`` rounds; rank 0 returns the raw medians (µs).

    Per pair, the per-byte cost measured first (``slopes``, else :func:`probe_slope`) sets which sizes fit the
    budget and the idle gap after each size (:func:`_gap_us`: the token buckets refill between repetitions).
    ``S`` is one ``MPI_Send`` with the receive posted (consecutive sends would time the wire once TCP's buffers
    are full), ``R`` a receive after the message surely arrived (eager sizes only: a rendezvous message does not
    move before its receive is posted), ``C`` a local copy."""
    comm = pk.comm
    rank = comm.Get_rank()
    reps = 3 if quick else 5
    t0 = time.monotonic()
    k_of: dict[tuple[int, int], float] = dict(slopes or {})
    with rt.step("link probes"):
        for a, b in pairs:
            if (a, b) not in k_of:
                k_of[(a, b)] = probe_slope(pk, a, b, budget_us=budget_us, gap_min_us=gap_min_us)["k_us_per_byte"]
        for r, partner in roles.values():
            for key in ((r, partner), (partner, r)):
                if key not in k_of:
                    k_of[key] = probe_slope(pk, *key, budget_us=budget_us, gap_min_us=gap_min_us)["k_us_per_byte"]

    def fits(key: tuple[int, int]) -> list[int]:
        k = max(k_of[key], 1e-6)
        return [m for m in sizes if m == 0 or k * m <= budget_us]

    grids = {key: fits(key) for key in k_of}
    # protocol: on the fastest measured pair, over the sizes its budget allows
    fastest = min(pairs, key=lambda p: k_of[p])
    proto = _net_protocol(pk, fastest, grids[fastest], k_of[fastest], gap_min_us, rt)
    rdv_from = proto["rendezvous_from_bytes"]
    lead = max(_gap_us(max(k_of.values()), 8192, gap_min_us), 2000.0)
    per_round: list[dict[str, Any]] = []
    for rnd in range(rounds):
        mine: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}, "ref": {}, "native": {}, "P": {}}
        rt.progress(f"round {rnd + 1}/{rounds}: {len(pairs)} pair(s), {len(roles)} type(s)")
        with rt.step(f"round {rnd + 1} one-way"):
            for a, b in pairs:
                grid = grids[(a, b)] if rnd % 2 == 0 else list(reversed(grids[(a, b)]))
                rtt = {}
                for m in grid:
                    n = reps * 3 if m <= 16384 else reps  # small messages: cheap and noisy (scheduling), take more
                    rtt[m] = pk.call(a, b, "oneway", m, n, gap_us=_gap_us(k_of[(a, b)], m, gap_min_us))
                if rank == a:
                    half0 = _median(rtt[0]) / 2
                    mine["T"][f"{a}-{b}"] = {m: _median(v) - half0 for m, v in rtt.items()}
        with rt.step(f"round {rnd + 1} overheads"):
            for t, (r, partner) in roles.items():
                for m in grids[(r, partner)]:
                    s = pk.call(r, partner, "sends", m, 1, reps)
                    if rank == r:
                        mine["S"].setdefault(t, {})[m] = _median(s)
                        mine["C"].setdefault(t, {})[m] = _median(pk.world.copy(m, reps))
                for m in grids[(partner, r)]:
                    if rdv_from is not None and m >= rdv_from:
                        continue
                    settle = _gap_us(k_of[(partner, r)], m, gap_min_us) + 500.0
                    rv = pk.call(partner, r, "recv", m, reps, settle_us=settle)
                    if rank == r:
                        mine["R"].setdefault(t, {})[m] = _median(rv)
        for op in native_ops:
            with rt.step(f"round {rnd + 1} native {op}"):
                for m in native_sizes:
                    start, finish = pk.world.coll(op, 0, m, reps, lead_us=lead + _gap_us(max(k_of.values()), m, 0))
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
                        merged[key].setdefault(name, {}).update(series)
            per_round.append(merged)
    if rank != 0:
        return None
    return {
        "protocol": proto,
        "rounds": per_round,
        "sizes": sorted({m for g in grids.values() for m in g}),
        "grids": {f"{a}-{b}": g for (a, b), g in grids.items()},
        "slopes_us_per_byte": {f"{a}-{b}": k for (a, b), k in k_of.items()},
        "gap_min_us": gap_min_us,
        "budget_us": budget_us,
        "reps": reps,
        "native_lead_us": lead,
        "wall_measure_s": round(time.monotonic() - t0, 2),
    }


def _net_protocol(
    pk: PairKernels, pair: tuple[int, int], sizes: Sequence[int], k: float, gap_min_us: float, rt: Any
) -> dict[str, Any]:
    """Which sizes are sent by rendezvous on the network, from the data: ``MPI_Send`` a → b timed with b's receive
    posted at once and posted ``delay`` later; a rendezvous send waits for the receive (longer by about the delay),
    an eager one does not (TCP's buffers take it). Every grid size is classified, then the threshold between the
    largest eager and the smallest rendezvous size is bisected to 1 % of the size."""
    a, b = pair
    comm = pk.comm

    def rendezvous(m: int) -> bool:
        t0 = pk.call(a, b, "late", m, 3, delay_us=0.0)
        base = comm.bcast(None if t0 is None else _median(t0), root=a)
        delay = max(3.0 * base, 2.0 * k * m) + 2000.0
        t1 = pk.call(a, b, "late", m, 3, delay_us=delay)
        return bool(comm.bcast(None if t1 is None else _median(t1) - base > delay / 2, root=a))

    with rt.step("protocol"):
        by_size = {m: rendezvous(m) for m in sizes if m > 0}
        eager = [m for m, r in by_size.items() if not r]
        rdv = [m for m, r in by_size.items() if r]
        threshold = None
        if eager and rdv and max(eager) < min(rdv):
            lo, hi = max(eager), min(rdv)
            while hi - lo > max(1, hi // 100):
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if rendezvous(mid) else (mid, hi)
            threshold = hi
        elif rdv and not eager:
            threshold = min(rdv)
    return {
        "by_size": by_size,
        "rendezvous_from_bytes": threshold,
        "mixed": bool(eager and rdv and max(eager) > min(rdv)),
        "pair": [a, b],
        "largest_tested_bytes": max(by_size, default=0),
    }


# ---- fitting the network mode (rank 0) -------------------------------------------------------------------------
#: Ethernet frame bytes per TCP payload bytes at MTU 1500 (1514-byte frames carry 1448 bytes of payload).
FRAMING = 1514 / 1448


#: One-way times at and above this size (bytes) are beyond the token bucket's burst: they give the per-byte cost.
ABOVE_BURST_BYTES = 16384
#: ... and at or below this size they give the small-message constant.
SMALL_BYTES = 2048


def hinge_fit(sizes: Sequence[int], values: Sequence[float], rendezvous_from: int | None = None) -> dict[str, Any]:
    """Fit the one-way time with a token-bucket burst, ``T(m) ≈ c + k·max(0, m − burst) [+ δ·(m ≥ rendezvous)]``
    (µs, bytes), robustly: ``k`` and the extended-back intercept ``c'`` from a relative-weighted line through the
    sizes ≥ :data:`ABOVE_BURST_BYTES` (one line per protocol when both have ≥ 2 sizes there: ``δ`` is the
    difference of their intercepts), ``c`` the median of the times at ≤ :data:`SMALL_BYTES`, and
    ``burst = (c − c')/k`` (0 when negative: no burst). Returns ``c_us, s_us_per_byte`` (0), ``k_us_per_byte``,
    ``beta_bytes`` (= burst), ``burst_bytes``, ``delta_us``, ``rms_rel`` (the line's root-mean-square relative
    residual), ``points``."""
    from .fit import fit_line

    m = np.asarray(sizes, dtype=float)
    t = np.asarray(values, dtype=float)
    small = t[m <= SMALL_BYTES]
    c = float(np.median(small)) if small.size else float(t[np.argmin(m)])
    big = m >= ABOVE_BURST_BYTES
    if big.sum() < 2:
        big = m >= np.sort(m)[max(0, m.size - 3)]
    eager_big = big & ((m < rendezvous_from) if rendezvous_from is not None else True)
    rdv_big = big & ((m >= rendezvous_from) if rendezvous_from is not None else False)
    use_rdv = rendezvous_from is not None and eager_big.sum() >= 2 and rdv_big.sum() >= 2
    sel = eager_big if use_rdv else big
    w = 1.0 / np.maximum(t[sel], 1e-3) ** 2
    f = fit_line(m[sel], t[sel], weights=w)
    k, c_line = float(f.slope), float(f.intercept)
    delta = 0.0
    if use_rdv:
        g = fit_line(m[rdv_big], t[rdv_big], weights=1.0 / np.maximum(t[rdv_big], 1e-3) ** 2)
        delta = float(g.intercept + g.slope * rendezvous_from - (c_line + k * rendezvous_from))
    burst = max(0.0, (c - c_line) / k) if k > 0 else 0.0
    resid = (c_line + k * m[sel] - t[sel]) / np.maximum(t[sel], 1e-3)
    return {
        "c_us": c,
        "s_us_per_byte": 0.0,
        "k_us_per_byte": k,
        "k_ci95_us_per_byte": float(f.slope_ci),
        "beta_bytes": burst,
        "burst_bytes": burst,
        "delta_us": delta,
        "rms_rel": float(np.sqrt(np.mean(resid**2))) if resid.size else math.nan,
        "points": int(sel.sum()),
    }


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


def fit_network_profile(
    raw: dict[str, Any],
    layout: Sequence[str],
    hosts: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
) -> dict[str, Any]:
    """The ``hnowmodel.profile/2`` document of a network calibration (:func:`run_network`'s raw medians).

    Regimes: one, or two split at the measured rendezvous threshold. Per type ``S``, ``R`` (eager sizes; its line
    also serves rendezvous sizes, where a receive cannot be timed after arrival) and ``C`` are fitted per regime.
    Per measured pair of types (both directions) the one-way times are fitted with the burst term
    (:func:`hinge_fit`) and ``X = T − S − R`` is stored in burst form: ``X(m) = Xc + Xm·max(0, m − burst)``,
    ``Xm = k − Sm − Rm`` (``k``: the one-way per-byte cost above the burst), ``Xc = c − Sc − Rc``, and
    ``burst = d·β / Xm`` so the line above the burst is exactly the fitted one. The burst (median over links)
    goes to ``extensions.network.burst_bytes``; every link's own to ``burst_bytes_by_link``."""
    from .fit import fit_line

    warnings: list[str] = []
    proto = raw["protocol"]
    threshold = proto["rendezvous_from_bytes"]
    if proto["mixed"]:
        warnings.append("the eager/rendezvous test gave no single threshold: the profile treats every size as eager")
        threshold = None
    all_sizes = raw["sizes"]
    if threshold is not None and not any(m >= threshold for m in all_sizes):
        threshold = None
    uptos: list[int | None] = [None] if threshold is None else [threshold - 1, None]
    nreg = len(uptos)

    def in_regime(m: int, i: int) -> bool:
        lo = -1 if i == 0 else uptos[i - 1]
        hi = uptos[i]
        return m > lo and (hi is None or m <= hi)

    def lines(key: str, name: str, eager_only: bool = False) -> list[list[float]]:
        xs, ys = _over_rounds(raw, key, name, sorted({m for r in raw["rounds"] for m in r[key].get(name, {})}))
        out: list[list[float] | None] = []
        for i in range(nreg):
            sel = [j for j, m in enumerate(xs) if in_regime(m, i)]
            if eager_only and i > 0:
                sel = []
            if len(sel) >= 2:
                f = fit_line(
                    [xs[j] for j in sel], [ys[j] for j in sel], weights=[1 / max(ys[j], 1e-3) ** 2 for j in sel]
                )
                out.append([max(f.intercept, 0.0), max(f.slope, 0.0)])
            else:
                out.append(None)
        known = [o for o in out if o is not None]
        if not known:
            warnings.append(f"{key}_{name}: too few sizes measured; set to 0")
            known = [[0.0, 0.0]]
        return [o if o is not None else known[-1] for o in out]

    lines_t = {
        t: {k: lines(k, t, eager_only=(k == "R" and threshold is not None)) for k in ("S", "R", "C")} for t in roles
    }
    if threshold is not None:
        warnings.append(
            f"R at rendezvous sizes (>= {threshold} B) cannot be timed after arrival (the data moves only once the "
            "receive is posted): the eager regime's R line is used there"
        )
    links: list[dict[str, Any]] = []
    fits: dict[str, Any] = {}
    by_link: dict[str, float] = {}
    per_link_cost: dict[str, Any] = {}
    first_regimes = None
    clamped: list[str] = []
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        name = f"{a}-{b}"
        xs, ys = _over_rounds(raw, "T", name, raw["grids"][name])
        h = hinge_fit(xs, ys, threshold)
        fits[name] = h
        regs = []
        sm_rm = []
        for i in range(nreg):
            sl, rl = lines_t[ta]["S"][i], lines_t[tb]["R"][i]
            xm = h["k_us_per_byte"] - sl[1] - rl[1]
            if xm <= 0:
                warnings.append(
                    f"link {ta}->{tb} regime {i + 1}: S and R per-byte terms exceed the one-way cost; Xm = 0"
                )
                xm = 0.0
            c = h["c_us"] + (h["delta_us"] if i > 0 else 0.0)
            xc = c - sl[0] - rl[0]
            if xc < 0:
                clamped.append(f"{ta}->{tb} by {-xc:.3g} µs")
                xc = 0.0
            regs.append({"upto_bytes": uptos[i], "Xc_us": xc, "Xm_us_per_byte": xm})
            sm_rm.append(sl[1] + rl[1])
        d_beta = (h["k_us_per_byte"] - h["s_us_per_byte"]) * h["beta_bytes"]
        xm_last = regs[-1]["Xm_us_per_byte"]
        burst = d_beta / xm_last if xm_last > 0 else 0.0
        burst = burst if burst >= MIN_BURST_BYTES else 0.0
        by_link[f"{ta}->{tb}"] = round(burst, 1)
        links.append({"from": ta, "to": tb, "regimes": regs})
        if first_regimes is None:
            first_regimes = regs
        k = h["k_us_per_byte"]
        per_link_cost[f"{ta}->{tb}"] = {
            "ranks": [a, b],
            "hosts": [hosts[a], hosts[b]],
            "one_way_us_per_byte": k,
            "Xm_us_per_byte": regs[-1]["Xm_us_per_byte"],
            "payload_mbit_s": 8.0 / k if k > 0 else None,
            "line_rate_mbit_s_with_ethernet_framing": 8.0 / k * FRAMING if k > 0 else None,
            "burst_bytes": burst,
            "fit_rms_rel": h["rms_rel"],
        }
    if clamped:
        warnings.append(
            "Xc set to 0 where the measured Sc + Rc exceed the fitted one-way constant ("
            + ", ".join(clamped)
            + "): S and R are each timed alone and include a few µs of the clock and call overhead"
        )
    bursts = [v for v in by_link.values()]
    burst_all = float(np.median(bursts)) if bursts else 0.0
    types_doc = {
        t: {
            "regimes": [
                {
                    "upto_bytes": uptos[i],
                    "Sc_us": lines_t[t]["S"][i][0],
                    "Sm_us_per_byte": lines_t[t]["S"][i][1],
                    "Rc_us": lines_t[t]["R"][i][0],
                    "Rm_us_per_byte": lines_t[t]["R"][i][1],
                    "Cc_us": lines_t[t]["C"][i][0],
                    "Cm_us_per_byte": lines_t[t]["C"][i][1],
                }
                for i in range(nreg)
            ]
        }
        for t in roles
    }
    doc: dict[str, Any] = {
        "schema": "hnowmodel.profile/2",
        "types": types_doc,
        "network": {"regimes": first_regimes or [{"upto_bytes": None, "Xc_us": 0.0, "Xm_us_per_byte": 0.0}]},
        "links": links,
        "nodes": [{"rank": r, "host": hosts[r], "type": t} for r, t in enumerate(layout)],
        "extensions": {
            "network": {
                "burst_bytes": burst_all,
                "burst_bytes_by_link": by_link,
                "meaning": "X(m) = Xc + Xm·max(0, m - burst_bytes): the first burst_bytes of a message pass at "
                "memory speed when the link's token bucket is full (fitted from the one-way times; 0 = no burst)",
            }
        },
    }
    if threshold is not None:
        doc["protocol"] = {"rendezvous_from_bytes": int(threshold)}
    doc["provenance"] = {
        "method": "network mode (ranks on several hosts): per pair, isolated messages a->b + 0-byte "
        "acknowledgement, T = rtt(m) - rtt(0)/2, fitted as T = c + s·m + d·max(0, m - beta) (token-bucket burst); "
        "S = one MPI_Send with the receive posted; R = a receive after arrival (eager sizes); C = local memcpy; "
        "X = T - S - R in burst form X = Xc + Xm·max(0, m - burst), burst in extensions.network",
        "timing": {
            "style": "isolated messages; after an m-byte message both ranks spin max(gap_min_us, "
            f"{REFILL_SAFETY:g} × 1.05 × measured per-byte cost × m + 200 µs) so the token buckets refill; "
            "ranks outside the measured pair sleep",
            "gap_min_us": raw["gap_min_us"],
            "budget_us": raw["budget_us"],
            "reps_per_round": raw["reps"],
            "native_lead_us": raw["native_lead_us"],
        },
        "buffers": "page-aligned (posix_memalign 4096), separate send and receive buffers",
        "sizes": list(all_sizes),
        "grids": raw["grids"],
        "probe_slopes_us_per_byte": raw["slopes_us_per_byte"],
        "rounds": len(raw["rounds"]),
        "protocol": {
            "rendezvous_from_bytes": threshold,
            "how": "MPI_Send timed with the receive posted at once and late: a rendezvous send waits for it",
            "pair": proto["pair"],
            "largest_tested_bytes": proto["largest_tested_bytes"],
            "eager_sizes": sorted(m for m, r in proto["by_size"].items() if not r),
            "rendezvous_sizes": sorted(m for m, r in proto["by_size"].items() if r),
        },
        "burst": {
            "burst_bytes": burst_all,
            "by_link": by_link,
            "how": "fitted per link from the one-way times (hinge), stored in extensions.network.burst_bytes",
        },
        "link_costs": per_link_cost,
        "regime_breaks_bytes": [u for u in uptos if u is not None],
        "fits": {"T": fits},
        "spread_over_rounds": _net_spread(raw, pairs, threshold),
        "warnings": warnings,
    }
    return doc


def _net_spread(raw: dict[str, Any], pairs: Sequence[tuple[int, int]], threshold: int | None) -> dict[str, Any]:
    """Each pair's per-byte cost and constant fitted on every round alone: min / median / max over rounds."""
    out: dict[str, Any] = {}
    for a, b in pairs:
        name = f"{a}-{b}"
        ks, cs = [], []
        for r in raw["rounds"]:
            series = r["T"].get(name, {})
            ms = sorted(series)
            if len(ms) < 4:
                continue
            h = hinge_fit(ms, [series[m] for m in ms], threshold)
            ks.append(h["k_us_per_byte"])
            cs.append(h["c_us"])
        if ks:  # one "regime": the constant c and the per-byte cost k above the burst
            out[f"T {name}"] = {
                "rounds": len(ks),
                "regimes": [
                    {
                        "intercept_us": [min(cs), float(np.median(cs)), max(cs)],
                        "slope_us_per_byte": [min(ks), float(np.median(ks)), max(ks)],
                    }
                ],
            }
    return out


def net_self_check(
    doc: dict[str, Any], raw: dict[str, Any], pairs: Sequence[tuple[int, int]], layout: Sequence[str]
) -> dict[str, Any]:
    """Predict every measured one-way time back from the network profile (with its burst term): rows, worst miss."""
    rows = []
    for a, b in pairs:
        name = f"{a}-{b}"
        ms, ts = _over_rounds(raw, "T", name, raw["grids"][name])
        for m, t in zip(ms, ts, strict=True):
            p = net_ptp_us(doc, layout[a], layout[b], float(m))
            rows.append(
                {
                    "pair": f"{a}->{b}",
                    "size": int(m),
                    "measured_us": float(t),
                    "profile_us": p,
                    "miss_pct": 100.0 * (p - float(t)) / float(t) if t > 0 else math.nan,
                }
            )
    finite = [abs(r["miss_pct"]) for r in rows if math.isfinite(r["miss_pct"])]
    worst = max(finite) if finite else math.nan
    out = {"rows": rows, "worst_miss_pct": worst, "warn_above_pct": SELF_CHECK_WARN_PCT, "burst_term": True}
    if finite and worst > SELF_CHECK_WARN_PCT:
        w = max(rows, key=lambda r: abs(r["miss_pct"]) if math.isfinite(r["miss_pct"]) else -1)
        doc["provenance"]["warnings"].append(
            f"self-check: the profile misses a measured one-way time by {worst:.1f} % (pair {w['pair']} at "
            f"{w['size']} B: {w['profile_us']:.4g} vs {w['measured_us']:.4g} µs), above {SELF_CHECK_WARN_PCT:g} %"
        )
    return out
