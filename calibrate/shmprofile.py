"""The shared-memory profile: regimes, lines and the ``X = T − S − R`` split fitted from
:func:`calibrate.sharedmemory.run`'s raw medians (rank 0).

The protocol switches are found on ``T`` (:func:`calibrate.fit.fit_piecewise`, relative weighting, the
eager/rendezvous threshold always a break), and ``S``, ``R``, ``C`` and every pair's ``T`` are fitted on those
same breaks. ``X = T − S − R`` per regime; where the data would make ``X`` (or ``R``) negative — the rendezvous
copy counted in both ``S`` and ``R`` — ``R`` is capped at ``T − S`` (and ``S`` at ``T``), which keeps ``S + X + R
= T`` and is said in the warnings. The profile therefore reproduces ``T``: the self-check
(:func:`calibrate.selfcheck.self_check`) predicts every measured one-way time back and reports the worst miss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .fit import fit_piecewise
from .profiledoc import profile_document, type_regime
from .rounds import over_rounds

__all__ = ["fit_profile"]


def fit_profile(
    raw: dict[str, Any],
    layout: Sequence[str],
    hosts: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
) -> dict[str, Any]:
    """The ``hnowmodel.profile/2`` document from :func:`calibrate.sharedmemory.run`'s raw medians (see the module
    docstring)."""
    warnings: list[str] = []
    reg = _regimes(raw, pairs, warnings)
    fits, lines = _fit_lines(raw, roles, pairs, reg, warnings)
    _cap_overheads(lines, layout, pairs, reg, warnings)
    x_lines = {}
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        x_lines[(ta, tb)] = [
            [max(0.0, lines["T"][f"{a}-{b}"][i][j] - lines["S"][ta][i][j] - lines["R"][tb][i][j]) for j in (0, 1)]
            for i in range(reg.n)
        ]
    nonneg = {key: {t: [[max(v, 0.0) for v in ln] for ln in val] for t, val in lines[key].items()} for key in "SRC"}
    types_doc = {
        t: {"regimes": [type_regime(reg.doc_uptos[i], *(nonneg[key][t][i] for key in "SRC")) for i in range(reg.n)]}
        for t in roles
    }

    def link_regimes(xl: list[list[float]]) -> list[dict[str, Any]]:
        return [{"upto_bytes": reg.doc_uptos[i], "Xc_us": xl[i][0], "Xm_us_per_byte": xl[i][1]} for i in range(reg.n)]

    first = (layout[pairs[0][0]], layout[pairs[0][1]])
    links = []
    for (ta, tb), xl in x_lines.items():
        if (ta, tb) != first and ta != tb:
            for src, dst in ((ta, tb), (tb, ta)):
                links.append({"from": src, "to": dst, "regimes": link_regimes(xl)})
    cs = _common_start(raw, reg.key0, raw["sizes"])
    return profile_document(
        types_doc,
        {"regimes": link_regimes(x_lines[first])},
        links or None,
        layout,
        hosts,
        _provenance(raw, roles, pairs, reg, fits, warnings),
        protocol=None if reg.threshold is None else {"rendezvous_from_bytes": int(reg.threshold)},
        extensions=None if cs is None else {"common_start": cs},
    )


@dataclass(frozen=True)
class _Regimes:
    """The regimes found on the first pair's one-way time: its breaks (bytes), each regime's upper bound
    (``uptos``; None: unbounded) and the bound written in the document (``doc_uptos``: the protocol's own bound
    where a break is the eager/rendezvous switch), the threshold (None: all eager), the eager and rendezvous sizes."""

    key0: str
    breaks: list[int]
    uptos: list[int | None]
    doc_uptos: list[int | None]
    threshold: int | None
    eager: list[int]
    rendezvous: list[int]

    @property
    def n(self) -> int:
        return len(self.uptos)


def _regimes(raw: dict[str, Any], pairs: Sequence[tuple[int, int]], warnings: list[str]) -> _Regimes:
    """The protocol switches found on ``T`` of the first pair (relative weighting, the eager/rendezvous threshold
    always a break)."""
    proto = raw["protocol"]
    threshold = proto["rendezvous_from_bytes"]
    key0 = f"{pairs[0][0]}-{pairs[0][1]}"
    ms, t0 = over_rounds(raw, "T", key0, raw["sizes"])
    eager = [m for m in ms if not proto["by_size"].get(m, False)]
    rendezvous = [m for m in ms if proto["by_size"].get(m, False)]
    switch = max((m for m in eager if threshold is None or m < threshold), default=None) if threshold else None
    if proto["mixed"]:
        warnings.append(
            "the eager/rendezvous test gave no single threshold (some larger sizes went eagerly): "
            "the profile treats every message as eager"
        )
        threshold = None
    ft = fit_piecewise(ms, np.maximum(t0, 1e-3), known_breaks=[switch] if switch else None, max_regimes=5)
    breaks = list(ft.breaks)
    uptos: list[int | None] = [*breaks, None]
    # the protocol's own regime bound: unmeasured sizes below the threshold are eager, like the sizes below them
    doc_uptos = [threshold - 1 if (switch is not None and u == switch) else u for u in uptos]
    return _Regimes(key0, breaks, uptos, doc_uptos, threshold, eager, rendezvous)


def _fit_lines(
    raw: dict[str, Any],
    roles: dict[str, tuple[int, int]],
    pairs: Sequence[tuple[int, int]],
    reg: _Regimes,
    warnings: list[str],
) -> tuple[dict[str, Any], dict[str, dict[str, list[list[float]]]]]:
    """``S``, ``R``, ``C`` per type and ``T`` per pair fitted on the regimes' breaks: the fits and their lines
    ``[intercept µs, slope µs/byte]`` per regime."""
    sizes = raw["sizes"]
    fits: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}}
    lines: dict[str, dict[str, list[list[float]]]] = {"S": {}, "R": {}, "C": {}, "T": {}}
    series = [(key, t, f"{key}_{t}") for t in roles for key in ("S", "R", "C")]
    series += [("T", f"{a}-{b}", f"T {a}-{b}") for a, b in pairs]
    for key, name, what in series:
        xs, ys = over_rounds(raw, key, name, sizes)
        f = fit_piecewise(xs, np.maximum(ys, 1e-4), breaks=reg.breaks)
        warnings.extend(f"{what}: {w}" for w in f.warnings)
        fits[key][name] = f
        lines[key][name] = [list(_line(f, i)) for i in range(reg.n)]
    return fits, lines


def _cap_overheads(
    lines: dict[str, dict[str, list[list[float]]]],
    layout: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    reg: _Regimes,
    warnings: list[str],
) -> None:
    """X = T - S - R per regime and coefficient: cap S at T, then R at T - S, where the data would make X
    negative (in place), and say so in ``warnings``."""
    capped: dict[int, set[str]] = {}
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        for i in range(reg.n):
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
        up = reg.uptos[i]
        kind = "rendezvous" if reg.threshold is not None and (up is None or up >= reg.threshold) else "eager"
        warnings.append(
            f"regime {i + 1} ({_span(reg.doc_uptos, i)}, {kind}): {'; '.join(sorted(what))} - the measured overheads "
            "add up to more than the one-way time (at a blocking rendezvous the receiver's copy is inside the send "
            "and inside the receive), so S + X + R is kept equal to the measured T"
        )


def _provenance(
    raw: dict[str, Any],
    roles: dict[str, tuple[int, int]],
    pairs: Sequence[tuple[int, int]],
    reg: _Regimes,
    fits: dict[str, Any],
    warnings: list[str],
) -> dict[str, Any]:
    """How the shared-memory profile was measured and fitted."""
    sizes = raw["sizes"]
    return {
        "spread_over_rounds": _spread(raw, reg.breaks, roles, pairs, sizes),
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
            "rendezvous_from_bytes": reg.threshold,
            "how": "MPI_Send timed with the receive posted late: a rendezvous send waits for it; threshold bisected",
            "eager_sizes": reg.eager,
            "rendezvous_sizes": reg.rendezvous,
        },
        "regime_breaks_bytes": reg.breaks,
        "fits": {key: {name: f.to_dict() for name, f in val.items()} for key, val in fits.items()},
        "warnings": warnings,
    }


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


def _line(fit: Any, i: int) -> tuple[float, float]:
    reg = fit.regimes[i]
    return float(reg.intercept), float(reg.slope)
