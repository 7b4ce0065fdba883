"""The readable report of a calibration (``hnow calibrate`` prints it): what measured, every regime's parameters
± 95 % CI, the protocol switch, the self-check, the plain C ping-pong reference, the reduction cost γ, the
run-to-run spread, warnings."""

from __future__ import annotations

import math
from typing import Any

from .params import Profile
from .tables import table_text

__all__ = ["fit_report"]


def _pm(value: float, ci: Any, digits: int) -> str:
    """``value ± half-width`` from a CI given as a half-width or as a ``[low, high]`` pair."""
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(c, (int, float)) for c in ci):
        ci = (ci[1] - ci[0]) / 2
    return (
        f"{value:.{digits}g} ± {ci:.2g}"
        if isinstance(ci, (int, float)) and math.isfinite(ci)
        else f"{value:.{digits}g}"
    )


def _span(lo: int, hi: int | None) -> str:
    return f"{lo}.." + ("" if hi is None else str(hi))


def _regime_rows(profile: Profile, fits: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per node type and regime: S, R, C and X lines (± 95 % CI half-widths where the fit has them)."""
    rows = []
    for name, t in profile.types.items():
        lo = 0
        for i, reg in enumerate(t.regimes):
            ci = {k: _fit_of(fits, k, name, i) for k in ("S", "R", "C")}
            x = profile.link(name, name).regime_at(reg.upto_bytes if reg.upto_bytes is not None else lo)
            rows.append(
                {
                    "type": name,
                    "bytes": _span(lo, reg.upto_bytes),
                    "Sc_us": _pm(reg.Sc_us, ci["S"].get("intercept_ci95_us", math.inf), 3),
                    "Sm_us_per_byte": _pm(reg.Sm_us_per_byte, ci["S"].get("slope_ci95_us_per_byte", math.inf), 3),
                    "Rc_us": _pm(reg.Rc_us, ci["R"].get("intercept_ci95_us", math.inf), 3),
                    "Rm_us_per_byte": _pm(reg.Rm_us_per_byte, ci["R"].get("slope_ci95_us_per_byte", math.inf), 3),
                    "Xc_us": f"{x.Xc_us:.3g}",
                    "Xm_us_per_byte": f"{x.Xm_us_per_byte:.3g}",
                    "Cm_us_per_byte": f"{reg.Cm_us_per_byte:.3g}",
                }
            )
            lo = (reg.upto_bytes or 0) + 1
    return rows


def _fit_of(fits: dict[str, Any], key: str, name: str, i: int) -> dict[str, Any]:
    """The fit behind regime ``i`` of parameter ``key`` (S, R, C) of type ``name``: piecewise fits are stored as
    ``fits[key][name]["regimes"]``, the Python kernels' single lines as ``fits[name][key]``."""
    regs = fits.get(key, {}).get(name, {}).get("regimes")
    if regs is not None:
        return regs[i] if i < len(regs) else {}
    return fits.get(name, {}).get(key, {}) if i == 0 else {}


def fit_report(profile: Profile) -> list[str]:
    """Readable lines: what measured (MPI library, transport, kernels), every regime's parameters ± 95 % CI, the
    protocol switch, the self-check and the plain C ping-pong reference, warnings."""
    prov: dict[str, Any] = dict(profile.provenance)
    lines = _measured_lines(prov)
    lines.append(table_text(_regime_rows(profile, prov.get("fits", {}))))
    for (a, b), link in profile.links.items():
        regs = ", ".join(f"{r.Xc_us:.3g} µs + {r.Xm_us_per_byte:.3g} µs/B" for r in link.regimes)
        lines.append(f"link {a}->{b}: X = {regs}")
    lines += _network_lines(profile, prov)
    if profile.rendezvous_from_bytes is not None:
        lines.append(f"protocol: eager below {profile.rendezvous_from_bytes} B, rendezvous from there on")
    lines += _check_lines(prov)
    lines += _reduce_lines(profile, prov.get("reduce", {}))
    lines += _spread_lines(prov)
    lines += _pair_lines(prov)
    for w in prov.get("warnings", []):
        lines.append(f"warning: {w}")
    if "wall_s" in prov:
        lines.append(f"calibration took {prov['wall_s']:.1f} s on {len(profile.nodes)} ranks")
    return lines


def _measured_lines(prov: dict[str, Any]) -> list[str]:
    """What measured: the MPI library, transport and kernels, and the timing style."""
    kern = prov.get("kernels", {})
    lines = [
        f"MPI: {prov.get('mpi_library', '?')}; transport: {prov.get('transport', prov.get('mode', '?'))}; "
        f"kernels: {kern.get('kind', '?')}" + (f" ({kern['why']})" if kern.get("why") else "")
    ]
    if "timing" in prov:
        lines.append(
            f"timing: {prov['timing'].get('style')}; gap {prov['timing'].get('gap_us')} µs; "
            f"{prov.get('rounds', '?')} interleaved rounds; buffers: {prov.get('buffers', '?')}"
        )
    return lines


def _network_lines(profile: Profile, prov: dict[str, Any]) -> list[str]:
    """The token bucket and the first send's busy time (:class:`~hnowmodel.params.NetworkTerms`), where the
    profile states a non-zero burst; the busy time only where both of its terms are stated."""
    terms = profile.network_terms
    if not terms.burst_bytes:  # absent, or no bucket: nothing passes at once
        return []
    line = f"token bucket: {terms.burst_bytes:.0f} B pass at once"
    fit = prov.get("burst_send", {}).get("fit")
    if fit and terms.burst_send_us is not None and terms.burst_send_us_per_byte is not None:
        us = _pm(terms.burst_send_us, fit["intercept_ci95_us"], 3)
        per_byte = _pm(terms.burst_send_us_per_byte, fit["slope_ci95_us_per_byte"], 3)
        line += (
            f"; a first send after idling keeps its sender busy {us} µs + {per_byte} µs/B × min(bytes, burst) "
            f"beyond S ({len(fit.get('sizes', []))} points)"
        )
    return [line, *_queued_lines(terms.queued_bytes, prov.get("queued_bytes")), *_window_lines(terms)]


def _window_lines(terms: Any) -> list[str]:
    """The TCP windows the tandem keeps per connection (docs/model.md, "TCP windows"), where the profile has them."""
    w = terms.windows
    if w is None:
        return []
    restart = (
        f"restarted after {w.restart_rto_min_us / 1e3:.0f} ms + a round trip idle"
        if w.restart_rto_min_us is not None
        else "never restarted"
    )
    return [
        f"TCP windows (read off the kernel): {w.window_bytes:.0f} B per connection as the calibration left them, "
        f"slow start to {w.ssthresh_bytes:.0f} B, {w.initial_bytes:.0f} B after a restart ({restart})"
    ]


def _queued_lines(queued: float | None, fitted: Any) -> list[str]:
    """What a message posted behind others waits for (the fan-out fit), or why the fan-out did not say."""
    if queued is not None and isinstance(fitted, dict) and fitted.get("at_least"):
        lo, hi = fitted["undetermined_bytes"]
        return [f"a message posted behind others waits one round of {queued:.0f} B queued per connection: the "
                f"fan-out fits as well from {lo:.0f} to {hi:.0f} B (its messages queued whole), the least "
                "taken"]  # fmt: skip
    if queued is not None and isinstance(fitted, dict) and fitted.get("points"):
        sizes = ", ".join(f"{p['bytes'] // 1024} KiB" for p in fitted["points"])
        return [f"a message posted behind others waits one round of {queued:.0f} B queued per connection (fitted to a "
                f"fan-out at {sizes})"]  # fmt: skip
    if isinstance(fitted, dict) and fitted.get("undetermined_bytes"):
        lo, hi = fitted["undetermined_bytes"]
        return [f"queued bytes per connection not determined: the fan-out fits as well from {lo:.0f} to {hi:.0f} B"]
    return []


def _check_lines(prov: dict[str, Any]) -> list[str]:
    """The self-check and the plain C ping-pong reference."""
    lines = []
    sc = prov.get("self_check")
    if sc:
        worst = max(sc["rows"], key=lambda r: abs(r["miss_pct"]) if math.isfinite(r["miss_pct"]) else -1)
        lines.append(
            f"self-check: the profile predicts the {len(sc['rows'])} measured one-way times back with a "
            f"worst miss of {sc['worst_miss_pct']:.1f} % ({worst['pair']} at {worst['size']} B)"
        )
    ref = prov.get("reference_pingpong")
    if ref:
        lines.append("plain C ping-pong (half round trip, median of batches, median over rounds) vs the profile:")
        rows = [
            {
                "size": r["size"],
                "reference_us": round(r["reference_us"], 3),
                "spread_us": f"{r['reference_min_us']:.3g}-{r['reference_max_us']:.3g}",
                "profile_us": round(r["profile_us"], 3),
                "error_pct": round(r["error_pct"], 1),
            }
            for r in ref
        ]
        lines.append(table_text(rows))
    return lines


def _reduce_lines(profile: Profile, prov: dict[str, Any]) -> list[str]:
    """The reduction cost per node type (``extensions.reduce``): its lines ± 95 % CI, γ at 64 KiB, the self-check."""
    terms = profile.reduce_terms if profile.has_reduce_cost else None
    if terms is None:
        return []
    lines = [f"reduction cost G(m) per node type ({terms.op} on {terms.datatype}; γ(m) = G(m)/m):"]
    for t, cost in terms.costs.items():
        fits = prov.get("types", {}).get(t, {})
        regs = fits.get("fit", {}).get("regimes", [])
        parts = []
        for i, r in enumerate(cost.regimes):
            f = regs[i] if i < len(regs) else {}
            c = _pm(r.Gc_us, f.get("intercept_ci95_us"), 3)
            k = _pm(r.Gm_us_per_byte, f.get("slope_ci95_us_per_byte"), 3)
            parts.append(
                f"{c} µs + {k} µs/B·m "
                + (f"up to {r.upto_bytes} B" if r.upto_bytes is not None else "above" if i else "at every size")
            )
        check = fits.get("self_check", {}).get("worst_miss_pct")
        lines.append(
            f"  {t}: " + "; ".join(parts) + f"; γ {cost.us_per_byte(65536):.3g} µs/B at 64 KiB"
            + (f"; self-check worst miss {check:.1f} %" if isinstance(check, (int, float)) else "")
        )  # fmt: skip
    return lines


def _spread_lines(prov: dict[str, Any]) -> list[str]:
    """The run-to-run spread: each round fitted alone, min / median / max over rounds, per regime."""
    spread = prov.get("spread_over_rounds")
    if not spread:
        return []
    rows = []
    for name, sp in spread.items():
        for i, reg in enumerate(sp["regimes"]):
            c, k = reg["intercept_us"], reg["slope_us_per_byte"]
            rows.append(
                {
                    "series": name,
                    "regime": i + 1,
                    "intercept_us": f"{c[0]:.3g} / {c[1]:.3g} / {c[2]:.3g}",
                    "slope_us_per_byte": f"{k[0]:.3g} / {k[1]:.3g} / {k[2]:.3g}",
                }
            )
    return [
        "run-to-run spread (each round fitted alone; min / median / max over rounds, per regime):",
        table_text(rows),
    ]


def _pair_lines(prov: dict[str, Any]) -> list[str]:
    """The additivity check: ping-pong vs S + X + R of the fitted parameters, per pair."""
    pairs = prov.get("pairs", [])
    if not pairs:
        return []
    rows = [
        {
            "ranks": "-".join(map(str, p["ranks"])),
            "types": "->".join(p["types"]),
            "max |residual| %": round(p["max_abs_residual_pct"], 2),
        }
        for p in pairs
    ]
    return ["additivity check (ping-pong vs S + X + R of the fitted parameters):", table_text(rows)]
