"""Calibration on real MPI with the C kernels: isolated messages, interleaved rounds, piecewise regimes.

The method (DESIGN.md, "Measuring on real MPI"), per measured pair of ranks ``a -> b`` and node type ``t``:

* ``T(m)``, the one-way time: an isolated ``m``-byte message answered by a 0-byte acknowledgement, both ranks
  spinning ``gap_us`` between repetitions (the same idle gap as the collective timing), ``T(m) = rtt(m) −
  rtt(0)/2`` (the acknowledgement's half of the 0-byte round trip is removed);
* ``S_t(m)``: consecutive sends (time per ``MPI_Send`` with the receives posted); ``R_t(m)``: ``MPI_Recv`` of a
  message that surely arrived, the receiver spinning, never sleeping; ``C_t(m)``: a local ``memcpy`` (MPICH's
  binomial scatter and gather copy the root's own block);
* whether a size is sent eagerly or by rendezvous: ``MPI_Send`` timed while the receiver posts its receive late;
* everything in **rounds**: each round measures every size (``T`` in :data:`ONEWAY_PASSES` sweeps spread over
  the round, their median; the direction of the sweeps alternating), and,
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
from functools import partial
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_GAP_US",
    "ONEWAY_PASSES",
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
    "raw_rounds",
    "raw_from_profile",
]

#: Idle gap between isolated messages, µs; also the lead of the collectives' common start on shared memory.
DEFAULT_GAP_US = 10.0
#: Sizes at which the plain C ping-pong reference is measured in every round.
REFERENCE_SIZES = (8, 1024, 65536, 1 << 20)
#: Sweeps of the one-way sizes per round, spread over the round (at its start, after the common-start one-way,
#: after the overheads, after the native collectives): a sweep costs ~0.1 s on shared memory, and on this machine
#: the one-way time of one size moves 10-15 % between moments a few hundred ms apart; eight sweeps a round bring
#: the self-check's worst miss from ~10 % to under 5 % (docs/model.md, "How the regimes are measured on real MPI").
ONEWAY_PASSES = 8
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


def _oneway_sweep(
    k: Any,
    rt: Any,
    rnd: int,
    pairs: Sequence[tuple[int, int]],
    order: Sequence[int],
    gap_us: float,
    quick: bool,
    into: dict[str, dict[int, list[float]]],
    ref: dict[int, float],
    ref_sizes: Sequence[int],
    i: int,
) -> None:
    """Sweep ``i`` of round ``rnd`` over the sizes (``order``, reversed on odd sweeps) for every pair:
    ``into[pair][m]`` gets this sweep's T (µs) on the pair's sender; the first sweep also times the plain C
    ping-pong right beside it at ``ref_sizes`` (first pair only) into ``ref`` (µs, on its sender)."""
    a0, b0 = pairs[0]
    sweep = list(order) if i % 2 == 0 else list(order)[::-1]
    with rt.step(f"round {rnd + 1} one-way {i + 1}/{ONEWAY_PASSES}"):
        for a, b in pairs:
            rtt = {}
            for m in sweep:
                rtt[m] = k.oneway(a, b, m, _reps(m, quick), gap_us=gap_us)
                if i == 0 and (a, b) == (a0, b0) and m in ref_sizes:  # the same moment
                    pp = k.pingpong(a0, b0, m, 11, batch=int(min(100, max(1, (4 << 20) // max(m, 1)))))
                    if k.rank == a0:
                        ref[m] = _median(pp)
            if k.rank == a:
                half0 = _center(rtt[0]) / 2
                series = into.setdefault(f"{a}-{b}", {})
                for m, v in rtt.items():
                    series.setdefault(m, []).append(_center(v) - half0)


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
        passes: dict[str, dict[int, list[float]]] = {}
        sweep = partial(_oneway_sweep, k, rt, rnd, pairs, order, gap_us, quick, passes, mine["ref"], ref_sizes)

        rt.progress(
            f"round {rnd + 1}/{rounds}: {len(order)} sizes, {len(pairs)} pair(s), {len(roles)} type(s)"
            + (f", native {','.join(native_ops)}" if native_ops else "")
        )
        sweep(0)
        if common_start:
            # the same message with both ranks starting at one instant (send and receive posted together), as the
            # collectives are timed: a receive posted as the message arrives takes the slower of two paths
            with rt.step(f"round {rnd + 1} common-start one-way"):
                for m in order:
                    comp = k.completion("p2p", a0, m, _reps(m, quick), lead_us=gap_us)
                    if comp is not None:
                        mine["P"].setdefault(f"{a0}-{b0}", {})[m] = _center(comp)
        sweep(1)
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
                    comp = k.completion(op, 0, m, _reps(m, quick), lead_us=gap_us)
                    if comp is not None:
                        mine["native"].setdefault(op, {})[m] = _center(comp)
        for i in range(2, ONEWAY_PASSES):
            sweep(i)
        for name, per_size in passes.items():  # this round's one-way time: the median of its sweeps
            mine["T"][name] = {m: _median(v) for m, v in per_size.items()}
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
    """Median over rounds of the per-round medians of one series, on the sizes every round that has it has."""
    have = [r[key][name] for r in raw["rounds"] if name in r.get(key, {})]
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

    def call(self, a: int, b: int, name: Any, *args: Any, **kw: Any) -> Any:
        """``name``: a kernel's name, or a Python function ``f(pair_comm, a, b, *args, **kw)`` run by the pair."""
        k, key = self._sub(a, b)
        out = None
        if self.rank in key:
            fn = name if callable(name) else getattr(k, name)
            pre = (k.comm,) if callable(name) else ()
            out = fn(*pre, key.index(a), key.index(b), *args, **kw)
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

    def sweep(vec: np.ndarray, idx: list[int], value: Any) -> bool:
        """Try, for each host k, every other host o as the one setting ``vec[k] = value(k, o)``; keep improvements."""
        nonlocal best
        improved = False
        for k in range(n):
            for o in range(n):
                if o == k:
                    continue
                old = vec[k]
                vec[k] = value(k, o)
                got = loss(e, nn)
                if got < best - 1e-12:
                    best, idx[k], improved = got, o, True
                else:
                    vec[k] = old
        return improved

    for _ in range(sweeps):
        egress = sweep(e, e_idx, lambda i, j: cost[i, j])
        ingress = sweep(nn, i_idx, lambda j, i: cost[i, j])
        if not (egress or ingress):
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


def _below_wait_sizes(waits_from: int | None, sizes: Sequence[int]) -> list[int]:
    """Sizes added below ``waits_from`` (the size from which an ``MPI_Send`` waits for the receiver) when the grid
    has fewer than two non-zero sizes there: a quarter and a half of it (at least 1 B)."""
    if waits_from is None or waits_from <= 1:
        return []
    have = [m for m in sizes if 0 < m < waits_from]
    if len(have) >= 2:
        return []
    return sorted({max(1, waits_from // 4), max(1, waits_from // 2)} - set(sizes))


#: The rested send (:meth:`calibrate.ckernels.Kernels.rested_send`) is timed up to this size (bytes): what it
#: adds to ``S`` comes from the token bucket's burst (a few KiB), the same from a few KiB on.
RESTED_SEND_MAX_BYTES = 65536


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
    are full), only at sizes whose send does not wait for the receiver (:func:`_net_protocol`: from
    ``waits_from_bytes`` on, a send lasts until the receiver has the message, so it times the wire); ``R`` a
    receive after the message surely arrived (not at rendezvous sizes: a rendezvous message does not move before
    its receive is posted); ``C`` a local copy. When sends wait from some size on, two sizes below it are added
    to every grid (:func:`_below_wait_sizes`) so that the regime below has points of its own."""
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
    waits_from = proto["waits_from_bytes"]
    extra = _below_wait_sizes(waits_from, sizes)
    if extra:  # the regime below the size from which sends wait gets sizes of its own
        grids = {key: sorted({*g, *extra}) for key, g in grids.items()}
    lead = max(_gap_us(max(k_of.values()), 8192, gap_min_us), 2000.0)
    per_round: list[dict[str, Any]] = []
    for rnd in range(rounds):
        mine: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}, "F": {}, "ref": {}, "native": {}, "P": {}}
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
                    if rank == r:
                        mine["C"].setdefault(t, {})[m] = _median(pk.world.copy(m, reps))
                    if waits_from is not None and m >= waits_from:
                        continue  # the send lasts until the receiver has the message: the wire, not S
                    s = pk.call(r, partner, "sends", m, 1, reps)
                    if rank == r:
                        mine["S"].setdefault(t, {})[m] = _median(s)
                    if 0 < m <= RESTED_SEND_MAX_BYTES:  # the same send after both ranks idled: buckets full
                        idle = _gap_us(k_of[(r, partner)], m, gap_min_us)
                        f = pk.call(r, partner, "rested_send", m, reps, lead_us=lead, idle_us=idle)
                        if rank == r:
                            mine["F"].setdefault(t, {})[m] = _median(f)
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
                    comp = pk.world.completion(op, 0, m, reps, lead_us=lead + _gap_us(max(k_of.values()), m, 0))
                    if comp is not None:
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
        "extra_sizes": extra,
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


def _late_progress(
    comm: Any, a: int, b: int, m: int, reps: int, delay_us: float, struct: bool = False
) -> np.ndarray | None:
    """``MPI_Send`` a → b of ``m`` bytes timed (µs, on ``a``) while ``b`` keeps calling MPI for ``delay_us``
    (``MPI_Iprobe`` on an unrelated tag: its library makes progress) before it posts the matching receive.

    The counterpart of the C kernel ``late`` (whose receiver spins without calling MPI): a send that waits here
    waits for the *posted receive* (rendezvous); one that waits only in ``late`` waits for the receiver's library
    to take the message (delivery). Timed in Python: the delays are milliseconds. One untimed repetition first.

    ``struct``: the sender sends its ``m`` bytes as two halves in separate buffers, one struct datatype at absolute
    addresses (``MPI_BOTTOM``), as MPICH's binomial gather sends a relay's own block with the blocks it received;
    the receiver takes them contiguously."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    buf = np.zeros(max(m, 1), dtype=np.uint8)
    none = np.zeros(1, dtype=np.uint8)
    msg: Any = [buf, m, MPI.BYTE]
    dtype = None
    if struct and rank == a:
        half = np.zeros(max(m - m // 2, 1), dtype=np.uint8)
        dtype = MPI.Datatype.Create_struct(
            [m // 2, m - m // 2], [MPI.Get_address(buf), MPI.Get_address(half)], [MPI.BYTE, MPI.BYTE]
        ).Commit()
        msg = [MPI.BOTTOM, 1, dtype]
    out: list[float] = []
    tag_data, tag_sync, tag_ack, tag_other = 4721, 4722, 4723, 4724
    for i in range(-1, reps):
        if rank == a:
            comm.Recv([none, 0, MPI.BYTE], source=b, tag=tag_sync)
            t0 = time.perf_counter_ns()
            comm.Send(msg, dest=b, tag=tag_data)
            t1 = time.perf_counter_ns()
            comm.Recv([none, 0, MPI.BYTE], source=b, tag=tag_ack)
            if i >= 0:
                out.append((t1 - t0) / 1e3)
        elif rank == b:
            comm.Send([none, 0, MPI.BYTE], dest=a, tag=tag_sync)
            end = time.perf_counter_ns() + int(delay_us * 1e3)
            while time.perf_counter_ns() < end:
                comm.Iprobe(source=a, tag=tag_other)
            comm.Recv([buf, m, MPI.BYTE], source=a, tag=tag_data)
            comm.Send([none, 0, MPI.BYTE], dest=a, tag=tag_ack)
    if dtype is not None:
        dtype.Free()
    return np.asarray(out) if rank == a else None


#: Struct-datatype sends are probed from this size (bytes): below MPIR_CVAR_GATHER_VSMALL_MSG_SIZE (1 KiB) MPICH's
#: gather copies a relay's blocks together and sends them contiguously.
STRUCT_FROM_BYTES = 1024
#: How an ``MPI_Send`` of one size behaves (:func:`_net_protocol`).
EAGER, DELIVERY, RENDEZVOUS = "eager", "delivery", "rendezvous"


def _split(by_size: dict[int, bool]) -> tuple[int | None, list[int]]:
    """The size from which sends wait that disagrees with the fewest tested sizes (ties: the smallest), and the
    sizes that disagree with it. ``None``: no size waits (or fewest disagreements that way)."""
    ms = sorted(by_size)
    best: tuple[int, int | None] = (sum(by_size.values()), None)  # no size waits
    for tau in reversed(ms):
        cost = sum(1 for m in ms if (m >= tau) != by_size[m])
        if cost <= best[0]:
            best = (cost, tau)
    tau = best[1]
    return tau, [m for m in ms if (tau is not None and m >= tau) != by_size[m]]


def _net_protocol(
    pk: PairKernels, pair: tuple[int, int], sizes: Sequence[int], k: float, gap_min_us: float, rt: Any
) -> dict[str, Any]:
    """What an ``MPI_Send`` a → b waits for, per size, from the data. Timed with b's receive posted at once and
    posted ``delay`` later, b meanwhile either not calling MPI at all (C kernel ``late``) or calling it without
    posting the receive (:func:`_late_progress`):

    * ``eager``: neither late receive lengthens the send (the library or TCP's buffers took the message);
    * ``delivery``: only the receiver that does not call MPI lengthens it: the send returns once the receiver's
      library has taken the whole message (MPICH's ofi netmod over libfabric's tcp provider does this above its
      inject size), so it lasts the message's whole transfer, wire included;
    * ``rendezvous``: both lengthen it: the data moves only once the matching receive is posted.

    Every grid size is classified (when the smallest one already waits, smaller sizes are tried by halving, down
    to 1 B); the size from which sends wait (``waits_from_bytes``) and the one from which they are rendezvous
    (``rendezvous_from_bytes``) are then bisected to 1 % of the size."""
    a, b = pair
    comm = pk.comm
    cache: dict[tuple[int, str], bool] = {}
    record: list[list[Any]] = []  # [size, receiver, send µs with the receive posted at once, delay µs, late send µs]

    def waits(m: int, progress: str, reps: int = 3) -> bool:
        # progress: "silent" (the receiver does not call MPI), "progress" (it does), "struct" (it does, and the
        # sender sends a two-block struct datatype)
        if (m, progress) in cache:
            return cache[(m, progress)]
        if progress == "struct":
            t0 = pk.call(a, b, _late_progress, m, reps, 0.0, True)
        else:
            t0 = pk.call(a, b, "late", m, reps, delay_us=0.0)
        base = comm.bcast(None if t0 is None else _median(t0), root=a)
        delay = max(3.0 * base, 2.0 * k * m) + 2000.0
        if progress == "silent":
            t1 = pk.call(a, b, "late", m, reps, delay_us=delay)
        else:
            t1 = pk.call(a, b, _late_progress, m, reps, delay, progress == "struct")
        late = comm.bcast(None if t1 is None else _median(t1), root=a)
        got = bool(late - base > delay / 2)
        cache[(m, progress)] = got
        record.append([m, progress, round(base, 1), round(delay, 1), round(late, 1)])
        return got

    def threshold(by: dict[int, bool], progress: str) -> tuple[int | None, bool]:
        """Bisected size from which sends wait; sizes that disagree with the best split are tested again once."""
        first, odd = _split(by)
        for m in odd:
            del cache[(m, progress)]
            by[m] = waits(m, progress, reps=7)
        first, odd = _split(by)
        if first is None:
            return None, bool(odd)
        below = [m for m in by if m < first]
        lo = max(below) if below else None
        if lo is None:  # the smallest size tried already waits: halve down to one that does not (or 1 B)
            hi = first
            while hi > 1:
                mid = hi // 2
                by[mid] = waits(mid, progress)
                if not by[mid]:
                    lo = mid
                    break
                hi = mid
            if lo is None:
                return hi, bool(odd)
            first = hi
        hi = first
        while hi - lo > max(1, hi // 100):
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if waits(mid, progress) else (mid, hi)
        return hi, bool(odd)

    with rt.step("protocol"):
        tested = [m for m in sizes if m > 0]
        spin = {m: waits(m, "silent") for m in tested}
        waits_from, mixed_wait = threshold(spin, "silent")
        # a send that does not wait for a receiver that never calls MPI does not wait for a posted receive either
        poll = {m: waits(m, "progress") if spin[m] else False for m in tested}
        rdv_from, mixed_rdv = threshold(poll, "progress") if any(poll.values()) else (None, False)
    with rt.step("protocol of struct sends"):
        # MPICH's binomial gather sends a relay's blocks as one struct datatype (from 1 KiB): over TCP such a send
        # may wait for the posted receive where a contiguous one of the same size does not
        structs = {m: waits(m, "struct") for m in tested if m >= STRUCT_FROM_BYTES}
        struct_from, mixed_struct = threshold(structs, "struct") if any(structs.values()) else (None, False)
    by_size = {m: RENDEZVOUS if poll[m] else DELIVERY if spin[m] else EAGER for m in tested}
    return {
        "by_size": by_size,
        "waits_from_bytes": waits_from,
        "rendezvous_from_bytes": rdv_from,
        "struct_rendezvous_from_bytes": struct_from,
        "struct_sizes_tested": sorted(structs),
        "mixed": bool(mixed_wait or mixed_rdv or mixed_struct),
        "pair": [a, b],
        "largest_tested_bytes": max(tested, default=0),
        "bisected": sorted({m for (m, _) in cache} - set(tested)),
        "tests": record,
    }


# ---- fitting the network mode (rank 0) -------------------------------------------------------------------------
#: Ethernet frame bytes per TCP payload bytes at MTU 1500 (1514-byte frames carry 1448 bytes of payload).
FRAMING = 1514 / 1448


#: One-way times at and above this size (bytes) are beyond the token bucket's burst: they give the per-byte cost.
ABOVE_BURST_BYTES = 16384
#: ... and at or below this size they give the small-message constant.
SMALL_BYTES = 2048


def _regime_of(m: float, breaks: Sequence[int]) -> int:
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
    from .fit import fit_line

    m = np.asarray(sizes, dtype=float)
    t = np.asarray(values, dtype=float)
    brk = sorted(int(b) for b in breaks)
    n = len(brk) + 1
    reg = np.array([_regime_of(x, brk) for x in m], dtype=int)
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
    smalls = [(reg == i) & (m <= SMALL_BYTES) for i in range(n)]
    cs: list[float | None] = [float(np.median(t[sm])) if sm.any() else None for sm in smalls]
    both = [i for i in range(n) if own[i] and cs[i] is not None]
    b = both[0] if both else next((i for i in range(n) if cs[i] is not None), next(i for i in range(n) if own[i]))
    k = float(lines[b].slope)
    c_line = float(lines[b].intercept)
    c_b = cs[b] if cs[b] is not None else c_line
    burst0 = max(0.0, (c_b - c_line) / k) if k > 0 else 0.0
    burst = burst0
    pts = (reg == b) & (m > SMALL_BYTES)
    if burst0 >= MIN_BURST_BYTES and pts.any():
        grid = np.linspace(0.5 * burst0, 1.5 * burst0, 2001)
        pred = c_b + k * np.maximum(0.0, m[pts][None, :] - grid[:, None])
        loss = np.sum((pred / np.maximum(t[pts], 1e-3) - 1.0) ** 2, axis=1)
        burst = float(grid[int(np.argmin(loss))])
    if burst < MIN_BURST_BYTES:
        burst = 0.0
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


def hinge_predict(h: dict[str, Any], m: float) -> float:
    """The one-way time (µs) at ``m`` bytes of a :func:`hinge_fit` result: ``c_i + k_i·max(0, m − burst)``."""
    regs = h["regimes"]
    r = regs[_regime_of(m, [g["from_bytes"] for g in regs[1:]])]
    return float(r["c_us"] + r["k_us_per_byte"] * max(0.0, m - h["burst_bytes"]))


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

    Regimes: split where the protocol test (:func:`_net_protocol`) found that ``MPI_Send`` starts to wait for the
    receiver (``waits_from_bytes``) and where it starts to wait for the posted receive (``rendezvous_from_bytes``);
    one regime when it never waits. Per type ``S``, ``R`` and ``C`` are fitted per regime: ``S`` only where the
    send does not wait (where it waits it lasts the whole transfer, which is the wire's time: the sender's own
    cost is then the last measured ``S``, held constant), ``R`` not at rendezvous sizes (the regime below's line
    is used there). Per measured pair of types (both directions) the one-way times are fitted with the burst
    term (:func:`hinge_fit`) and ``X = T − S − R`` is stored in burst form: ``X(m) = Xc + Xm·max(0, m − burst)``,
    ``Xm = k − Sm − Rm`` (``k``: the one-way per-byte cost above the burst), ``Xc = c − Sc − Rc``, and ``burst =
    k·β / Xm`` (β: the one-way burst) so the line above the burst is exactly the fitted one. Where the
    separately timed ``Sc + Rc`` exceed a link's constant ``c`` (they overlap the wire inside a one-way time),
    ``R`` and then ``S`` are capped so that ``Xc ≥ 0`` and ``S + X + R`` stays ``T``. The burst (median over
    links) goes to ``extensions.network.burst_bytes``; every link's own to ``burst_bytes_by_link``."""
    from .fit import fit_line

    warnings: list[str] = []
    proto = raw["protocol"]
    all_sizes = raw["sizes"]
    top = max(all_sizes) if all_sizes else 0
    waits_from = proto.get("waits_from_bytes")
    rdv_from = proto["rendezvous_from_bytes"]
    struct_from = proto.get("struct_rendezvous_from_bytes", rdv_from)
    by_size = proto["by_size"]

    def kind(v: Any) -> str:  # older raw documents: True = rendezvous
        return v if isinstance(v, str) else (RENDEZVOUS if v else EAGER)

    if proto["mixed"]:
        warnings.append(
            "the protocol test classified the sizes non-monotonically (noise?): the sizes from which sends wait "
            "are taken from the largest run of waiting sizes; no rendezvous regime"
        )
        rdv_from = None
    if waits_from is not None and waits_from > top:
        waits_from = None
    if rdv_from is not None and rdv_from > top:
        rdv_from = None
    breaks = sorted({b for b in (waits_from, rdv_from) if b is not None and b > 0})
    uptos: list[int | None] = [b - 1 for b in breaks] + [None]
    lows = [0] + breaks
    nreg = len(uptos)

    def in_regime(m: int, i: int) -> bool:
        return _regime_of(m, breaks) == i

    def lines(key: str, name: str) -> list[list[float]]:
        xs, ys = _over_rounds(raw, key, name, sorted({m for r in raw["rounds"] for m in r[key].get(name, {})}))
        out: list[list[float] | None] = []
        for i in range(nreg):
            held = (key == "S" and waits_from is not None and lows[i] >= waits_from) or (
                key == "R" and rdv_from is not None and lows[i] >= rdv_from
            )
            sel = [] if held else [j for j, m in enumerate(xs) if in_regime(m, i)]
            if held and i > 0 and out[-1] is not None:
                prev = out[-1]
                # S where the send waits: the sender's own cost at the largest size it was timed, held constant;
                # R at rendezvous sizes: the line of the regime below
                out.append([prev[0] + prev[1] * uptos[i - 1], 0.0] if key == "S" else list(prev))
            elif len(sel) >= 2:
                f = fit_line(
                    [xs[j] for j in sel], [ys[j] for j in sel], weights=[1 / max(ys[j], 1e-3) ** 2 for j in sel]
                )
                if f.slope - f.slope_ci > 0:
                    out.append([max(f.intercept, 0.0), max(f.slope, 0.0)])
                else:  # no per-byte cost distinguishable from 0 (e.g. a regime of a few small sizes): a constant
                    out.append([max(float(np.median([ys[j] for j in sel])), 0.0), 0.0])
            elif len(sel) == 1:
                out.append([max(float(ys[sel[0]]), 0.0), 0.0])
            else:
                out.append(None)
        known = [o for o in out if o is not None]
        if not known:
            warnings.append(f"{key}_{name}: too few sizes measured; set to 0")
            known = [[0.0, 0.0]]
        return [list(o) if o is not None else list(known[-1]) for o in out]

    lines_t = {t: {k: lines(k, t) for k in ("S", "R", "C")} for t in roles}
    if waits_from is not None:
        warnings.append(
            f"from {waits_from} B an MPI_Send returns only once the receiver's MPI library has taken the message "
            + (
                "(it waits for the posted receive: rendezvous)"
                if waits_from == rdv_from
                else "(it waits for the receiver to call MPI, not for a posted receive)"
            )
            + ": it lasts the whole transfer, so S is timed below that size only and held at its last value above "
            "(the transfer is in X); a sender's consecutive messages do not overlap there"
        )
    if rdv_from is not None:
        warnings.append(
            f"R at rendezvous sizes (>= {rdv_from} B) cannot be timed after arrival (the data moves only once the "
            "receive is posted): the line of the regime below is used there"
        )
    # per link: the one-way fit and the constant each regime must reproduce with S + Xc + R
    fits: dict[str, Any] = {}
    for a, b in pairs:
        name = f"{a}-{b}"
        xs, ys = _over_rounds(raw, "T", name, raw["grids"][name])
        fits[name] = hinge_fit(xs, ys, breaks)

    def xm_of(h: dict[str, Any], ta: str, tb: str, i: int) -> float:
        return h["regimes"][i]["k_us_per_byte"] - lines_t[ta]["S"][i][1] - lines_t[tb]["R"][i][1]

    def burst_x(h: dict[str, Any], ta: str, tb: str) -> float:
        bi = h["burst_regime"]
        xm = xm_of(h, ta, tb, bi)
        return h["regimes"][bi]["k_us_per_byte"] * h["burst_bytes"] / xm if xm > 0 else 0.0

    def budget(h: dict[str, Any], ta: str, tb: str, i: int) -> float:
        """What Sc + Xc + Rc must add up to in regime i (a regime above the burst continues its line)."""
        r = h["regimes"][i]
        corr = 0.0
        if h["burst_bytes"] > 0 and lows[i] >= h["burst_bytes"]:
            corr = max(xm_of(h, ta, tb, i), 0.0) * burst_x(h, ta, tb) - r["k_us_per_byte"] * h["burst_bytes"]
        return r["c_us"] + corr

    capped: list[str] = []

    def cap(key: str, t: str, i: int, room: list[float]) -> None:
        """Lower type t's constant term ``key`` (S or R) of regime i to the least room its pairs leave."""
        cur = lines_t[t][key][i][0]
        if room and cur > min(room):
            new = max(0.0, min(room))
            capped.append(f"{key}_{t} {cur:.3g} -> {new:.3g} µs" + (f" (regime {i + 1})" if nreg > 1 else ""))
            lines_t[t][key][i][0] = new

    for i in range(nreg):  # R first (as on shared memory), then S
        for tb in roles:
            cap(
                "R",
                tb,
                i,
                [
                    budget(fits[f"{a}-{b}"], layout[a], tb, i) - lines_t[layout[a]]["S"][i][0]
                    for a, b in pairs
                    if layout[b] == tb
                ],
            )
        for ta in roles:
            cap(
                "S",
                ta,
                i,
                [
                    budget(fits[f"{a}-{b}"], ta, layout[b], i) - lines_t[layout[b]]["R"][i][0]
                    for a, b in pairs
                    if layout[a] == ta
                ],
            )
    if capped:
        warnings.append(
            "Sc + Rc, each timed alone, exceed a link's one-way constant (inside a one-way time they overlap the "
            "wire): capped so that S + X + R reproduces it (" + ", ".join(capped) + ")"
        )
    links: list[dict[str, Any]] = []
    by_link: dict[str, float] = {}
    per_link_cost: dict[str, Any] = {}
    first_regimes = None
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        h = fits[f"{a}-{b}"]
        bx = burst_x(h, ta, tb)
        regs = []
        for i in range(nreg):
            sl, rl = lines_t[ta]["S"][i], lines_t[tb]["R"][i]
            xm = xm_of(h, ta, tb, i)
            if xm <= 0:
                warnings.append(
                    f"link {ta}->{tb} regime {i + 1}: S and R per-byte terms exceed the one-way cost; Xm = 0"
                )
                xm = 0.0
            xc = max(0.0, budget(h, ta, tb, i) - sl[0] - rl[0])
            regs.append({"upto_bytes": uptos[i], "Xc_us": xc, "Xm_us_per_byte": xm})
        by_link[f"{ta}->{tb}"] = round(bx, 1)
        links.append({"from": ta, "to": tb, "regimes": regs})
        if first_regimes is None:
            first_regimes = regs
        k = h["k_us_per_byte"]
        per_link_cost[f"{ta}->{tb}"] = {
            "ranks": [a, b],
            "hosts": [hosts[a], hosts[b]],
            "one_way_us_per_byte": k,
            "Xm_us_per_byte": regs[h["burst_regime"]]["Xm_us_per_byte"],
            "payload_mbit_s": 8.0 / k if k > 0 else None,
            "line_rate_mbit_s_with_ethernet_framing": 8.0 / k * FRAMING if k > 0 else None,
            "burst_bytes": bx,
            "one_way_burst_bytes": h["burst_bytes"],
            "fit_rms_rel": h["rms_rel"],
        }
    bursts = [v for v in by_link.values()]
    burst_all = float(np.median(bursts)) if bursts else 0.0
    burst_send = _burst_send(raw, roles, burst_all)
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
                "send_waits_from_bytes": waits_from,
                "send_waits_meaning": "from this size an MPI_Send returns only once the receiver's MPI library has "
                "taken the whole message (measured; null: never up to the largest size tested), so a sender's "
                "consecutive messages go one after another",
                "struct_rendezvous_from_bytes": struct_from,
                "struct_rendezvous_meaning": "from this size a message sent as a struct datatype (MPICH's binomial "
                "gather sends a relay's blocks so) moves only once the receiver has posted the matching receive "
                "(measured with two blocks; null: never up to the largest size tested)",
            }
        },
    }
    if burst_send["us_per_byte"] is not None:
        doc["extensions"]["network"]["burst_send_us"] = burst_send["us"]
        doc["extensions"]["network"]["burst_send_us_per_byte"] = burst_send["us_per_byte"]
        doc["extensions"]["network"]["burst_send_meaning"] = (
            "a rank's first send after idling (its link's token bucket full) keeps it busy burst_send_us + "
            "burst_send_us_per_byte · min(bytes, burst_bytes) beyond S: the bytes that pass at once go through "
            "the sender's own kernel inside the call; measured as a send after idling minus S"
        )
    if rdv_from is not None:
        doc["protocol"] = {"rendezvous_from_bytes": int(rdv_from)}
    doc["provenance"] = {
        "method": "network mode (ranks on several hosts): per pair, isolated messages a->b + 0-byte "
        "acknowledgement, T = rtt(m) - rtt(0)/2, fitted per regime as T = c + k·max(0, m - beta) (token-bucket "
        "burst beta); S = one MPI_Send with the receive posted, at sizes whose send does not wait for the "
        "receiver; R = a receive after arrival (not at rendezvous sizes); C = local memcpy; X = T - S - R in burst "
        "form X = Xc + Xm·max(0, m - burst), burst in extensions.network",
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
            "rendezvous_from_bytes": rdv_from,
            "send_waits_from_bytes": waits_from,
            "struct_rendezvous_from_bytes": struct_from,
            "struct_sizes_tested": proto.get("struct_sizes_tested", []),
            "how": "MPI_Send timed with the receive posted at once and posted late, the receiver meanwhile not "
            "calling MPI or calling it (MPI_Iprobe on another tag): a send that waits only for the former waits for "
            "delivery (the receiver's library must take the message), one that waits for both is a rendezvous",
            "pair": proto["pair"],
            "largest_tested_bytes": proto["largest_tested_bytes"],
            "eager_sizes": sorted(m for m, v in by_size.items() if kind(v) == EAGER),
            "delivery_sizes": sorted(m for m, v in by_size.items() if kind(v) == DELIVERY),
            "rendezvous_sizes": sorted(m for m, v in by_size.items() if kind(v) == RENDEZVOUS),
            "sizes_added_below_the_wait": raw.get("extra_sizes", []),
            "tests": proto.get("tests", []),
        },
        "burst": {
            "burst_bytes": burst_all,
            "by_link": by_link,
            "how": "fitted per link from the one-way times (hinge; its corner refined on the sizes around it), "
            "stored in extensions.network.burst_bytes",
        },
        "burst_send": burst_send,
        "link_costs": per_link_cost,
        "regime_breaks_bytes": [u for u in uptos if u is not None],
        "fits": {"T": fits},
        "spread_over_rounds": _net_spread(raw, pairs, breaks),
        "raw_rounds": raw_rounds(raw),
        "warnings": warnings,
    }
    return doc


def _burst_send(raw: dict[str, Any], roles: dict[str, Any], burst: float) -> dict[str, Any]:
    """What a send after idling costs its sender beyond ``S`` (µs): per type and size, the send timed after both
    ranks idled (``F``, :meth:`calibrate.ckernels.Kernels.rested_send`: buckets full) minus the send timed back to
    back (``S``), fitted over every type as ``us + us_per_byte · min(m, burst)`` (each at least 0; the bytes its
    full bucket passes at once go through the sender's own kernel inside the call). Both None without points."""
    from .fit import fit_line

    points = []
    for t in roles:
        ms, f = _over_rounds(
            raw, "F", t, sorted({m for r in raw["rounds"] for m in r.get("F", {}).get(t, {}) if m > 0})
        )
        s = dict(zip(*_over_rounds(raw, "S", t, ms), strict=True))
        points += [
            {"type": t, "bytes": int(m), "rested_send_us": float(fm), "S_us": float(s[m])}
            for m, fm in zip(ms, f, strict=True)
            if m in s
        ]
    out: dict[str, Any] = {"us": None, "us_per_byte": None, "points": points}
    if points:
        fit = fit_line([min(p["bytes"], burst) for p in points], [p["rested_send_us"] - p["S_us"] for p in points])
        out.update(
            us=max(0.0, fit.intercept),
            us_per_byte=max(0.0, fit.slope),
            fit=fit.to_dict(),
        )
    out["how"] = (
        "per type and size: one MPI_Send after both ranks idled (buckets full; a common start as the collectives "
        "are timed) minus S (the send back to back); a line over min(bytes, burst_bytes), all types together"
    )
    return out


def raw_rounds(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-round medians a network profile was fitted on (µs; ``T`` per pair ``"a-b"``, ``S``/``R``/``C`` per
    type; sizes as strings, as JSON has them), so that it can be fitted again (:func:`raw_from_profile`)."""
    return [
        {key: {name: {str(m): float(v) for m, v in series.items()} for name, series in r[key].items()}
         for key in ("T", "S", "R", "C", "F") if key in r}
        for r in raw["rounds"]
    ]  # fmt: skip


def raw_from_profile(doc: dict[str, Any]) -> dict[str, Any]:
    """What :func:`fit_network_profile` needs, rebuilt from a network profile's provenance (``raw_rounds``,
    ``protocol``, ``grids``, ``timing``): fit a recorded calibration again offline."""
    prov = doc["provenance"]
    pr = prov["protocol"]
    by_size: dict[int, str] = {}
    for kind_, key in ((EAGER, "eager_sizes"), (DELIVERY, "delivery_sizes"), (RENDEZVOUS, "rendezvous_sizes")):
        by_size.update({int(m): kind_ for m in pr.get(key, [])})
    rounds = [
        {key: {name: {int(m): float(v) for m, v in series.items()} for name, series in r.get(key, {}).items()}
         for key in ("T", "S", "R", "C", "F")}
        for r in prov["raw_rounds"]
    ]  # fmt: skip
    timing = prov.get("timing", {})
    return {
        "protocol": {
            "by_size": by_size,
            "waits_from_bytes": pr.get("send_waits_from_bytes"),
            "rendezvous_from_bytes": pr.get("rendezvous_from_bytes"),
            "mixed": False,
            "pair": pr.get("pair", [0, 1]),
            "largest_tested_bytes": pr.get("largest_tested_bytes", max(by_size, default=0)),
            "tests": pr.get("tests", []),
        },
        "extra_sizes": pr.get("sizes_added_below_the_wait", []),
        "rounds": rounds,
        "sizes": list(prov["sizes"]),
        "grids": {k: [int(m) for m in g] for k, g in prov["grids"].items()},
        "slopes_us_per_byte": prov.get("probe_slopes_us_per_byte", {}),
        "gap_min_us": timing.get("gap_min_us"),
        "budget_us": timing.get("budget_us"),
        "reps": timing.get("reps_per_round"),
        "native_lead_us": timing.get("native_lead_us"),
    }


def _net_spread(raw: dict[str, Any], pairs: Sequence[tuple[int, int]], breaks: Sequence[int]) -> dict[str, Any]:
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
            h = hinge_fit(ms, [series[m] for m in ms], breaks)
            ks.append(h["k_us_per_byte"])
            cs.append(h["c_us"])
        if ks:  # one "regime": the constant c and the per-byte cost k above the burst (of the burst regime)
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
    """Predict every measured one-way time back from the network profile (with its burst term): rows, the worst
    miss, and the worst miss at and above each link's one-way burst (``worst_miss_from_burst_pct``; below it a
    link's one-way time still grows a little with the size, which the burst form leaves out)."""
    rows = []
    fits = doc.get("provenance", {}).get("fits", {}).get("T", {})
    for a, b in pairs:
        name = f"{a}-{b}"
        burst = float(fits.get(name, {}).get("burst_bytes", 0.0))
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
