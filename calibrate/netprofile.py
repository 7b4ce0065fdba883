"""The network profile: ``S``, ``R``, ``C`` per type and ``X`` per link in burst form, fitted from
:func:`calibrate.network.run_network`'s raw medians (rank 0); the raw rounds kept in the provenance so that a
recorded calibration can be fitted again offline (:func:`raw_from_profile`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hnowmodel.params import PROFILE_SCHEMA_V3
from hnowmodel.units import FRAMING

from .fit import fit_line
from .hinge import hinge_fit, regime_of
from .profiledoc import profile_document, type_regime
from .protocol import REFILL_SAFETY
from .queued import fit_queued_bytes
from .rounds import over_rounds
from .sendmodes import DELIVERY, EAGER, RENDEZVOUS
from .tcpstate import tcp_window_terms

__all__ = ["fit_network_profile", "raw_rounds", "raw_from_profile"]


def fit_network_profile(
    raw: dict[str, Any],
    layout: Sequence[str],
    hosts: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
    hosts_section: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``hnowmodel.profile/2`` document of a network calibration (the raw medians of
    :func:`calibrate.network.run_network`); ``hnowmodel.profile/3`` with ``hosts_section`` (the hosts' shared-memory
    and NIC terms, :mod:`calibrate.host_probes`), which is in place before ``queued_bytes`` is fitted through the model.

    Regimes: split where the protocol test (:func:`calibrate.sendmodes.network_protocol`) found that ``MPI_Send``
    starts to wait for the receiver (``waits_from_bytes``) and where it starts to wait for the posted receive
    (``rendezvous_from_bytes``); one regime when it never waits. Per type ``S``, ``R`` and ``C`` are fitted per
    regime: ``S`` only where the send does not wait (where it waits it lasts the whole transfer, which is the
    wire's time: the sender's own cost is then the last measured ``S``, held constant), ``R`` not at rendezvous
    sizes (the regime below's line is used there). Per measured pair of types (both directions) the one-way times
    are fitted with the burst term (:func:`calibrate.hinge.hinge_fit`) and ``X = T − S − R`` is stored in burst
    form: ``X(m) = Xc + Xm·max(0, m − burst)``, ``Xm = k − Sm − Rm`` (``k``: the one-way per-byte cost above the
    burst), ``Xc = c − Sc − Rc``, and ``burst = k·β / Xm`` (β: the one-way burst) so the line above the burst is
    exactly the fitted one. Where the separately timed ``Sc + Rc`` exceed a link's constant ``c`` (they overlap
    the wire inside a one-way time), ``R`` and then ``S`` are capped so that ``Xc ≥ 0`` and ``S + X + R`` stays
    ``T``. The burst (median over links) goes to ``extensions.network.burst_bytes``; every link's own to
    ``burst_bytes_by_link``."""
    warnings: list[str] = []
    reg = _regimes(raw["protocol"], raw["sizes"], warnings)
    lines_t = {t: {k: _type_lines(raw, k, t, reg, warnings) for k in ("S", "R", "C")} for t in roles}
    _regime_warnings(reg, warnings)
    # per link: the one-way fit and the constant each regime must reproduce with S + Xc + R
    fits: dict[str, Any] = {}
    for a, b in pairs:
        xs, ys = over_rounds(raw, "T", f"{a}-{b}", raw["grids"][f"{a}-{b}"])
        fits[f"{a}-{b}"] = hinge_fit(xs, ys, reg.breaks)
    xa = _XAlgebra(lines_t, reg)
    _cap_constants(xa, fits, layout, pairs, roles, warnings)
    links, by_link, per_link_cost = _links(xa, fits, layout, hosts, pairs, warnings)
    burst_all = float(np.median(list(by_link.values()))) if by_link else 0.0
    burst_send = _burst_send(raw, roles, burst_all)
    types_doc = {
        t: {"regimes": [type_regime(reg.uptos[i], *(lines_t[t][k][i] for k in "SRC")) for i in range(reg.n)]}
        for t in roles
    }
    network = {"regimes": links[0]["regimes"] if links else [{"upto_bytes": None, "Xc_us": 0.0, "Xm_us_per_byte": 0.0}]}
    prov = _provenance(raw, reg, fits, pairs, warnings)
    prov.update(burst={"burst_bytes": burst_all, "by_link": by_link, "how": BURST_HOW}, burst_send=burst_send)
    prov.update(link_costs=per_link_cost, regime_breaks_bytes=[u for u in reg.uptos if u is not None])
    prov.update(fits={"T": fits}, spread_over_rounds=_net_spread(raw, pairs, reg.breaks), raw_rounds=raw_rounds(raw))
    prov["warnings"] = warnings
    net_ext = _network_extension(reg, burst_all, by_link, burst_send)
    protocol = None if reg.rdv_from is None else {"rendezvous_from_bytes": int(reg.rdv_from)}
    doc = profile_document(
        types_doc, network, links, layout, hosts, prov, extensions={"network": net_ext}, protocol=protocol
    )
    if hosts_section:
        doc["schema"] = PROFILE_SCHEMA_V3
        doc["hosts"] = hosts_section
    _tcp_windows(raw, doc)
    queued = fit_queued_bytes(raw, doc)  # the one term fitted through the model, with everything else in place
    doc["provenance"]["queued_bytes"] = queued
    if queued["bytes"] is not None:
        doc["extensions"]["network"]["queued_bytes"] = queued["bytes"]
        doc["extensions"]["network"]["queued_meaning"] = (
            "bytes a sender's link keeps queued per connection: a message posted behind others waits one round of "
            "them (flow-rr); fitted to a measured fan-out (provenance.queued_bytes)"
        )
    return doc


def _tcp_windows(raw: dict[str, Any], doc: dict[str, Any]) -> None:
    """The hosts' TCP windows (:func:`calibrate.tcpstate.tcp_window_terms`) into ``extensions.network`` where their
    TCP hands whole windows to the link's queue; every rank's reading into ``provenance.tcp`` either way."""
    states = raw.get("tcp_states") or []
    terms = tcp_window_terms(states)
    doc["provenance"]["tcp"] = {"states": states, "terms": terms, "how": TCP_HOW}
    if terms is not None:
        doc["extensions"]["network"].update({k: v for k, v in terms.items() if v is not None})
        doc["extensions"]["network"]["tcp_meaning"] = (
            "each connection keeps at most a window in flight (tcp_window_bytes warm, tcp_initial_window_bytes after "
            "an idle restart, slow start to tcp_ssthresh_bytes); read off the kernel with ss -tin (provenance.tcp)"
        )


#: How the TCP terms are found (the provenance's ``tcp.how``).
TCP_HOW = (
    "each rank's ss -tinp of its own established connections to other hosts after the rounds (those that carried "
    "at least 1 MiB): median cwnd and ssthresh times the median mss; the route's initcwnd; restart when every host "
    "has net.ipv4.tcp_slow_start_after_idle = 1; no terms when a host keeps tcp_limit_output_bytes below 64 KiB "
    "or paces (BBR)"
)

#: How the burst is found (the provenance's ``burst.how``).
BURST_HOW = (
    "fitted per link from the one-way times (hinge; its corner refined on the sizes around it), "
    "stored in extensions.network.burst_bytes"
)


@dataclass(frozen=True)
class _NetRegimes:
    """The network profile's regimes: split where sends start to wait for the receiver (``waits_from``) and for
    the posted receive (``rdv_from``); each regime's lower and upper bound (bytes; None: unbounded)."""

    proto: dict[str, Any]
    waits_from: int | None
    rdv_from: int | None
    struct_from: int | None
    breaks: list[int]

    @property
    def uptos(self) -> list[int | None]:
        return [b - 1 for b in self.breaks] + [None]

    @property
    def lows(self) -> list[int]:
        return [0] + self.breaks

    @property
    def n(self) -> int:
        return len(self.breaks) + 1


def _kind(v: Any) -> str:
    """A protocol class of one size (older raw documents: True = rendezvous)."""
    return v if isinstance(v, str) else (RENDEZVOUS if v else EAGER)


def _regimes(proto: dict[str, Any], all_sizes: Sequence[int], warnings: list[str]) -> _NetRegimes:
    """The regimes from the protocol test, its thresholds dropped above the largest size measured."""
    top = max(all_sizes) if all_sizes else 0
    waits_from = proto.get("waits_from_bytes")
    rdv_from = proto["rendezvous_from_bytes"]
    struct_from = proto.get("struct_rendezvous_from_bytes", rdv_from)
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
    return _NetRegimes(proto, waits_from, rdv_from, struct_from, breaks)


def _type_lines(raw: dict[str, Any], key: str, name: str, reg: _NetRegimes, warnings: list[str]) -> list[list[float]]:
    """One type's ``S``, ``R`` or ``C`` line per regime, ``[intercept µs, slope µs/byte]`` (see
    :func:`fit_network_profile`)."""
    xs, ys = over_rounds(raw, key, name, sorted({m for r in raw["rounds"] for m in r[key].get(name, {})}))
    out: list[list[float] | None] = []
    for i in range(reg.n):
        held = (key == "S" and reg.waits_from is not None and reg.lows[i] >= reg.waits_from) or (
            key == "R" and reg.rdv_from is not None and reg.lows[i] >= reg.rdv_from
        )
        sel = [] if held else [j for j, m in enumerate(xs) if regime_of(m, reg.breaks) == i]
        if held and i > 0 and out[-1] is not None:
            prev = out[-1]
            # S where the send waits: the sender's own cost at the largest size it was timed, held constant;
            # R at rendezvous sizes: the line of the regime below
            out.append([prev[0] + prev[1] * reg.uptos[i - 1], 0.0] if key == "S" else list(prev))
        elif len(sel) >= 2:
            f = fit_line([xs[j] for j in sel], [ys[j] for j in sel], weights=[1 / max(ys[j], 1e-3) ** 2 for j in sel])
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


def _regime_warnings(reg: _NetRegimes, warnings: list[str]) -> None:
    """What the regimes from the protocol test mean for S and R."""
    if reg.waits_from is not None:
        warnings.append(
            f"from {reg.waits_from} B an MPI_Send returns only once the receiver's MPI library has taken the message "
            + (
                "(it waits for the posted receive: rendezvous)"
                if reg.waits_from == reg.rdv_from
                else "(it waits for the receiver to call MPI, not for a posted receive)"
            )
            + ": it lasts the whole transfer, so S is timed below that size only and held at its last value above "
            "(the transfer is in X); a sender's consecutive messages do not overlap there"
        )
    if reg.rdv_from is not None:
        warnings.append(
            f"R at rendezvous sizes (>= {reg.rdv_from} B) cannot be timed after arrival (the data moves only once the "
            "receive is posted): the line of the regime below is used there"
        )


class _XAlgebra:
    """``X = T − S − R`` in burst form for one link's hinge fit ``h`` between types ``ta → tb``."""

    def __init__(self, lines_t: dict[str, dict[str, list[list[float]]]], reg: _NetRegimes) -> None:
        self.lines_t, self.reg = lines_t, reg

    def xm(self, h: dict[str, Any], ta: str, tb: str, i: int) -> float:
        """``Xm`` of regime ``i`` (µs/byte): the one-way per-byte cost minus ``Sm`` and ``Rm``."""
        return h["regimes"][i]["k_us_per_byte"] - self.lines_t[ta]["S"][i][1] - self.lines_t[tb]["R"][i][1]

    def burst(self, h: dict[str, Any], ta: str, tb: str) -> float:
        """The link's burst in ``X`` (bytes): ``k·β / Xm`` on the burst regime, 0 when ``Xm ≤ 0``."""
        bi = h["burst_regime"]
        xm = self.xm(h, ta, tb, bi)
        return h["regimes"][bi]["k_us_per_byte"] * h["burst_bytes"] / xm if xm > 0 else 0.0

    def budget(self, h: dict[str, Any], ta: str, tb: str, i: int) -> float:
        """What Sc + Xc + Rc must add up to in regime i (µs; a regime above the burst continues its line)."""
        r = h["regimes"][i]
        corr = 0.0
        if h["burst_bytes"] > 0 and self.reg.lows[i] >= h["burst_bytes"]:
            corr = max(self.xm(h, ta, tb, i), 0.0) * self.burst(h, ta, tb) - r["k_us_per_byte"] * h["burst_bytes"]
        return r["c_us"] + corr


def _cap_constants(
    xa: _XAlgebra,
    fits: dict[str, Any],
    layout: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    roles: dict[str, tuple[int, int]],
    warnings: list[str],
) -> None:
    """Lower each type's ``Rc`` (first, as on shared memory), then ``Sc``, to the least room its links leave, so
    that ``Xc ≥ 0`` and ``S + X + R`` stays ``T`` (in place); say so in ``warnings``."""
    lines_t, nreg = xa.lines_t, xa.reg.n
    capped: list[str] = []

    def cap(key: str, t: str, i: int, room: list[float]) -> None:
        cur = lines_t[t][key][i][0]
        if room and cur > min(room):
            new = max(0.0, min(room))
            capped.append(f"{key}_{t} {cur:.3g} -> {new:.3g} µs" + (f" (regime {i + 1})" if nreg > 1 else ""))
            lines_t[t][key][i][0] = new

    for i in range(nreg):
        for tb in roles:
            room = [
                xa.budget(fits[f"{a}-{b}"], layout[a], tb, i) - lines_t[layout[a]]["S"][i][0]
                for a, b in pairs
                if layout[b] == tb
            ]
            cap("R", tb, i, room)
        for ta in roles:
            room = [
                xa.budget(fits[f"{a}-{b}"], ta, layout[b], i) - lines_t[layout[b]]["R"][i][0]
                for a, b in pairs
                if layout[a] == ta
            ]
            cap("S", ta, i, room)
    if capped:
        warnings.append(
            "Sc + Rc, each timed alone, exceed a link's one-way constant (inside a one-way time they overlap the "
            "wire): capped so that S + X + R reproduces it (" + ", ".join(capped) + ")"
        )


def _links(
    xa: _XAlgebra,
    fits: dict[str, Any],
    layout: Sequence[str],
    hosts: Sequence[str],
    pairs: Sequence[tuple[int, int]],
    warnings: list[str],
) -> tuple[list[dict[str, Any]], dict[str, float], dict[str, Any]]:
    """Every measured link's ``X`` regimes (the profile's ``links``), its burst in ``X`` per ``"ta->tb"`` (bytes),
    and what its fit says (the provenance's ``link_costs``)."""
    links: list[dict[str, Any]] = []
    by_link: dict[str, float] = {}
    per_link_cost: dict[str, Any] = {}
    for a, b in pairs:
        ta, tb = layout[a], layout[b]
        h = fits[f"{a}-{b}"]
        bx = xa.burst(h, ta, tb)
        regs = []
        for i in range(xa.reg.n):
            sl, rl = xa.lines_t[ta]["S"][i], xa.lines_t[tb]["R"][i]
            xm = xa.xm(h, ta, tb, i)
            if xm <= 0:
                warnings.append(
                    f"link {ta}->{tb} regime {i + 1}: S and R per-byte terms exceed the one-way cost; Xm = 0"
                )
                xm = 0.0
            xc = max(0.0, xa.budget(h, ta, tb, i) - sl[0] - rl[0])
            regs.append({"upto_bytes": xa.reg.uptos[i], "Xc_us": xc, "Xm_us_per_byte": xm})
        by_link[f"{ta}->{tb}"] = round(bx, 1)
        links.append({"from": ta, "to": tb, "regimes": regs})
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
    return links, by_link, per_link_cost


def _network_extension(
    reg: _NetRegimes,
    burst_all: float,
    by_link: dict[str, float],
    burst_send: dict[str, Any],
) -> dict[str, Any]:
    """The profile's ``extensions.network``: the burst, where sends wait, the struct sends' rendezvous, the rested
    send's extra busy time (where measured), with what each means."""
    net: dict[str, Any] = {
        "burst_bytes": burst_all,
        "burst_bytes_by_link": by_link,
        "meaning": "X(m) = Xc + Xm·max(0, m - burst_bytes): the first burst_bytes of a message pass at "
        "memory speed when the link's token bucket is full (fitted from the one-way times; 0 = no burst)",
        "send_waits_from_bytes": reg.waits_from,
        "send_waits_meaning": "from this size an MPI_Send returns only once the receiver's MPI library has "
        "taken the whole message (measured; null: never up to the largest size tested), so a sender's "
        "consecutive messages go one after another",
        "struct_rendezvous_from_bytes": reg.struct_from,
        "struct_rendezvous_meaning": "from this size a message sent as a struct datatype (MPICH's binomial "
        "gather sends a relay's blocks so) moves only once the receiver has posted the matching receive "
        "(measured with two blocks; null: never up to the largest size tested)",
    }
    if burst_send["us_per_byte"] is not None:
        net["burst_send_us"] = burst_send["us"]
        net["burst_send_us_per_byte"] = burst_send["us_per_byte"]
        net["burst_send_meaning"] = (
            "a rank's first send after idling (its link's token bucket full) keeps it busy burst_send_us + "
            "burst_send_us_per_byte · min(bytes, burst_bytes) beyond S: the bytes that pass at once go through "
            "the sender's own kernel inside the call; measured as a send after idling minus S"
        )
    return net


def _provenance(
    raw: dict[str, Any],
    reg: _NetRegimes,
    fits: dict[str, Any],
    pairs: Sequence[tuple[int, int]],
    warnings: list[str],
) -> dict[str, Any]:
    """How the network profile was measured (the method, timing, sizes and the protocol test)."""
    proto, by_size = reg.proto, reg.proto["by_size"]
    return {
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
        "sizes": list(raw["sizes"]),
        "grids": raw["grids"],
        "probe_slopes_us_per_byte": raw["slopes_us_per_byte"],
        "rounds": len(raw["rounds"]),
        "protocol": {
            "rendezvous_from_bytes": reg.rdv_from,
            "send_waits_from_bytes": reg.waits_from,
            "struct_rendezvous_from_bytes": reg.struct_from,
            "struct_sizes_tested": proto.get("struct_sizes_tested", []),
            "how": "MPI_Send timed with the receive posted at once and posted late, the receiver meanwhile not "
            "calling MPI or calling it (MPI_Iprobe on another tag): a send that waits only for the former waits for "
            "delivery (the receiver's library must take the message), one that waits for both is a rendezvous",
            "pair": proto["pair"],
            "largest_tested_bytes": proto["largest_tested_bytes"],
            "eager_sizes": sorted(m for m, v in by_size.items() if _kind(v) == EAGER),
            "delivery_sizes": sorted(m for m, v in by_size.items() if _kind(v) == DELIVERY),
            "rendezvous_sizes": sorted(m for m, v in by_size.items() if _kind(v) == RENDEZVOUS),
            "sizes_added_below_the_wait": raw.get("extra_sizes", []),
            "tests": proto.get("tests", []),
        },
    }


def _burst_send(raw: dict[str, Any], roles: dict[str, Any], burst: float) -> dict[str, Any]:
    """What a send after idling costs its sender beyond ``S`` (µs): per type and size, the send timed after both
    ranks idled (``F``, :meth:`calibrate.ckernels.Kernels.rested_send`: buckets full) minus the send timed back to
    back (``S``), fitted over every type as ``us + us_per_byte · min(m, burst)`` (each at least 0; the bytes its
    full bucket passes at once go through the sender's own kernel inside the call). Both None without points."""
    points = []
    for t in roles:
        ms, f = over_rounds(raw, "F", t, sorted({m for r in raw["rounds"] for m in r.get("F", {}).get(t, {}) if m > 0}))
        s = dict(zip(*over_rounds(raw, "S", t, ms), strict=True))
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
         for key in ("T", "S", "R", "C", "F", "Q", "Q3") if key in r}
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
         for key in ("T", "S", "R", "C", "F", "Q", "Q3")}
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
        "fanout3": prov.get("queued_bytes", {}).get("ranks"),
        "gap_min_us": timing.get("gap_min_us"),
        "budget_us": timing.get("budget_us"),
        "reps": timing.get("reps_per_round"),
        "native_lead_us": timing.get("native_lead_us"),
        "tcp_states": prov.get("tcp", {}).get("states", []),
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
