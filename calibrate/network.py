"""The network measurement: ranks on several hosts (TCP between them, possibly through token-bucket shaped links).

* :func:`probe_slope` - one pair's one-way per-byte cost from isolated messages at two sizes;
* :func:`plan_network` - which pairs and which (rank, partner) per type are measured;
* :func:`run_network` - every pair's one-way times and every type's overheads in interleaved rounds, with idle
  gaps that let the token buckets refill (:func:`calibrate.protocol.refill_gap_us`) and the protocol test
  (:func:`calibrate.sendmodes.network_protocol`).

The profile is fitted from :func:`run_network`'s raw medians by :func:`calibrate.netprofile.fit_network_profile`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .pairkernels import PairKernels, group_call
from .protocol import FANOUT_SIZES, NET_MAX_SIZE, NET_REPS, RESTED_SEND_MAX_BYTES, refill_gap_us
from .rounds import gather_round
from .sendmodes import network_protocol
from .stats import median
from .tcpstate import read_tcp_state

__all__ = [
    "NetworkRun",
    "net_grid",
    "probe_slope",
    "plan_network",
    "run_network",
]


def net_grid(quick: bool) -> list[int]:
    """0 B and a log grid from 256 B to 1 MiB (three sizes per octave; two with ``quick``); each pair measures the
    sizes its budget allows."""
    from .fit import log_grid

    return sorted({0, *log_grid(256, NET_MAX_SIZE, 2 if quick else 3)})


def probe_slope(
    pk: PairKernels,
    a: int,
    b: int,
    *,
    budget_us: float,
    gap_min_us: float,
    reps: int = 5,
    max_bytes: int = NET_MAX_SIZE,
) -> dict[str, float]:
    """One-way per-byte cost a → b (µs/byte) from isolated messages at two sizes, on every rank.

    A pilot (two back-to-back 32 KiB messages) bounds the cost; then ``m2`` = the largest 64 KiB·2^j up to
    ``max_bytes`` whose message fits half the budget (at least 64 KiB) and ``m1 = m2/4`` are timed ``reps`` times,
    each with the refill gap of its size (:func:`refill_gap_us`); the slope is the difference of the medians over
    ``m2 − m1``, with the distribution-free 95 % CI of the per-repetition slopes' median."""
    from .stats import median_ci

    comm = pk.comm
    pilot = pk.call(a, b, "oneway", 32768, 2, gap_us=gap_min_us)
    k0 = comm.bcast(None if pilot is None else float(np.max(pilot)) / 32768.0, root=a)
    m2 = 65536  # at least 64 KiB: the two sizes must differ by much more than the scheduling noise
    while m2 * 2 <= max_bytes and k0 * m2 * 2 <= budget_us / 2:
        m2 *= 2
    m1 = m2 // 4
    # each size with its own gap: the rule's bucket is drained by at most the message just sent
    r1 = pk.call(a, b, "oneway", m1, reps, gap_us=refill_gap_us(k0, m1, gap_min_us))
    r2 = pk.call(a, b, "oneway", m2, reps, gap_us=refill_gap_us(k0, m2, gap_min_us))
    out = None
    if r1 is not None:
        ks = (np.asarray(r2) - np.asarray(r1)) / (m2 - m1)
        lo, hi = median_ci(ks)
        k = (float(np.median(r2)) - float(np.median(r1))) / (m2 - m1)
        out = {"k_us_per_byte": k, "ci_low": min(lo, k), "ci_high": max(hi, k), "sizes": [m1, m2], "pilot": k0}
    return comm.bcast(out, root=a)


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


@dataclass(frozen=True)
class NetworkRun:
    """What :func:`run_network` measures: the ``pairs`` whose one-way time is timed, per node type its ``roles``
    (measured rank, a partner on another host), the ``sizes`` (bytes; each pair measures those its budget allows),
    ``rounds``, the smallest idle gap ``gap_min_us`` (µs), ``quick`` (fewer repetitions), the time ``budget_us``
    one message may take (µs), per-byte costs already measured per ordered pair (``slopes``, µs/byte; the others
    are probed), and the native collectives timed in every round at ``native_sizes``. ``fanout3``: rank 0, a rank
    of the host it reaches fastest and one of the host it reaches slowest, when ranks share hosts (the three-host
    fan-out, :func:`three_host_fanout`)."""

    pairs: Sequence[tuple[int, int]]
    roles: dict[str, tuple[int, int]]
    sizes: Sequence[int]
    rounds: int
    gap_min_us: float
    quick: bool
    budget_us: float
    slopes: dict[tuple[int, int], float] | None = None
    native_ops: Sequence[str] = ()
    native_sizes: Sequence[int] = ()
    fanout3: tuple[int, int, int] | None = None


def _link_costs(pk: PairKernels, rt: Any, plan: NetworkRun) -> dict[tuple[int, int], float]:
    """Per-byte cost (µs/byte) of every measured pair and both directions of every role: ``plan.slopes``, else
    probed (:func:`probe_slope`)."""
    k_of: dict[tuple[int, int], float] = dict(plan.slopes or {})
    probe = partial(probe_slope, pk, budget_us=plan.budget_us, gap_min_us=plan.gap_min_us)
    with rt.step("link probes"):
        for a, b in plan.pairs:
            if (a, b) not in k_of:
                k_of[(a, b)] = probe(a, b)["k_us_per_byte"]
        for r, partner in plan.roles.values():
            for key in ((r, partner), (partner, r)):
                if key not in k_of:
                    k_of[key] = probe(*key)["k_us_per_byte"]
    return k_of


@dataclass
class _Round:
    """What every round of :func:`run_network` shares: the pairs' costs and grids, the protocol's sizes."""

    plan: NetworkRun
    k_of: dict[tuple[int, int], float]
    grids: dict[tuple[int, int], list[int]]
    waits_from: int | None
    rdv_from: int | None
    reps: int
    lead: float


def _oneway(pk: PairKernels, rt: Any, ctx: _Round, rnd: int, mine: dict[str, Any]) -> None:
    """Round ``rnd``'s one-way times of every pair (µs, on the sender), its sizes in alternating directions."""
    with rt.step(f"round {rnd + 1} one-way"):
        for a, b in ctx.plan.pairs:
            grid = ctx.grids[(a, b)] if rnd % 2 == 0 else list(reversed(ctx.grids[(a, b)]))
            rtt = {}
            for m in grid:
                n = ctx.reps * 3 if m <= 16384 else ctx.reps  # small messages: cheap and noisy (scheduling)
                gap = refill_gap_us(ctx.k_of[(a, b)], m, ctx.plan.gap_min_us)
                rtt[m] = pk.call(a, b, "oneway", m, n, gap_us=gap)
            if pk.rank == a:
                half0 = median(rtt[0]) / 2
                mine["T"][f"{a}-{b}"] = {m: median(v) - half0 for m, v in rtt.items()}


def _overheads(pk: PairKernels, rt: Any, ctx: _Round, rnd: int, mine: dict[str, Any]) -> None:
    """Round ``rnd``'s C, S (below the size from which sends wait), the rested send F and R (below rendezvous)
    per type (µs, on the type's measured rank)."""
    reps, gap_min_us, rank = ctx.reps, ctx.plan.gap_min_us, pk.rank
    with rt.step(f"round {rnd + 1} overheads"):
        for t, (r, partner) in ctx.plan.roles.items():
            for m in ctx.grids[(r, partner)]:
                if rank == r:
                    mine["C"].setdefault(t, {})[m] = median(pk.world.copy(m, reps))
                if ctx.waits_from is not None and m >= ctx.waits_from:
                    continue  # the send lasts until the receiver has the message: the wire, not S
                s = pk.call(r, partner, "sends", m, 1, reps)
                if rank == r:
                    mine["S"].setdefault(t, {})[m] = median(s)
                if 0 < m <= RESTED_SEND_MAX_BYTES:  # the same send after both ranks idled: buckets full
                    idle = refill_gap_us(ctx.k_of[(r, partner)], m, gap_min_us)
                    f = pk.call(r, partner, "rested_send", m, reps, lead_us=ctx.lead, idle_us=idle)
                    if rank == r:
                        mine["F"].setdefault(t, {})[m] = median(f)
            for m in ctx.grids[(partner, r)]:
                if ctx.rdv_from is not None and m >= ctx.rdv_from:
                    continue
                settle = refill_gap_us(ctx.k_of[(partner, r)], m, gap_min_us) + 500.0
                rv = pk.call(partner, r, "recv", m, reps, settle_us=settle)
                if rank == r:
                    mine["R"].setdefault(t, {})[m] = median(rv)


def _natives(pk: PairKernels, rt: Any, ctx: _Round, rnd: int, mine: dict[str, Any]) -> None:
    """Round ``rnd``'s native collectives (completion µs, common start, on rank 0)."""
    slowest = max(ctx.k_of.values())
    for op in ctx.plan.native_ops:
        with rt.step(f"round {rnd + 1} native {op}"):
            for m in ctx.plan.native_sizes:
                lead = ctx.lead + refill_gap_us(slowest, m, 0)
                comp = pk.world.completion(op, 0, m, ctx.reps, lead_us=lead)
                if comp is not None:
                    mine["native"].setdefault(op, {})[m] = median(comp)


def fanout_sizes(size: int, waits_from: int | None, quick: bool = False) -> list[int]:
    """The sizes a fan-out is timed at (:data:`calibrate.protocol.FANOUT_SIZES`): none below 3 ranks (one message
    waits behind nothing), only sizes whose sends do not wait for the receiver (then they overlap on the link), and
    with ``quick`` only the two smallest (the larger ones only tell terms above 32 KiB apart, which hosts with
    Linux's default TCP have, and they cost seconds on a slow cluster).

    >>> fanout_sizes(6, None), fanout_sizes(6, 20000), fanout_sizes(2, None), fanout_sizes(6, None, quick=True)
    ([16384, 32768, 65536, 131072], [16384], [], [16384, 32768])
    """
    if size < 3:
        return []
    sizes = FANOUT_SIZES[:2] if quick else FANOUT_SIZES
    return [m for m in sizes if waits_from is None or m < waits_from]


def three_host_fanout(hosts: Sequence[str], cost: dict[tuple[int, int], float]) -> tuple[int, int, int] | None:
    """Where ranks share hosts and there are 3 hosts or more: rank 0, the first rank of the host rank 0 reaches
    fastest (``cost``: µs/byte per ordered pair of ranks) and the first rank of the host it reaches slowest (another
    host). Rank 0 sends to the fast one first, then to the slow one, whose message waits behind what the first keeps
    queued on rank 0's link: its completion shows the queued bytes where the full fan-out's does not (it ends when a
    host of several ranks has taken their messages, whatever the term). None otherwise.

    >>> three_host_fanout(["f", "f", "s", "m", "m"], {(0, 2): 0.4, (0, 3): 0.17})
    (0, 3, 2)
    >>> three_host_fanout(["a", "b", "c"], {(0, 1): 0.1, (0, 2): 0.4}) is None  # one rank per host: the full fan-out
    True
    """
    first: dict[str, int] = {}
    for r, h in enumerate(hosts):
        first.setdefault(h, r)
    others = [r for h, r in first.items() if h != hosts[0]]
    if len(set(hosts)) == len(hosts) or len(others) < 2:
        return None
    by_cost = sorted(others, key=lambda r: (cost[(0, r)], r))
    return (0, by_cost[0], by_cost[-1])


def _fanout(pk: PairKernels, rt: Any, ctx: _Round, rnd: int, mine: dict[str, Any]) -> None:
    """Round ``rnd``'s fan-out from rank 0 (completion µs, common start, on rank 0): rank 0 sends m bytes to every
    other rank in turn (:meth:`calibrate.ckernels.Kernels.coll` ``"fanout"``), its buckets full at the start."""
    slowest = max(ctx.k_of.values())
    sizes = fanout_sizes(pk.world.size, ctx.waits_from, ctx.plan.quick)
    if not sizes:
        return
    with rt.step(f"round {rnd + 1} fan-out"):
        for m in sizes:
            # the gap of a 32 KiB fan-out at most: rank 0's bucket refills in a fraction of it (the larger sizes
            # would add seconds of idling to every calibration)
            lead = ctx.lead + refill_gap_us(slowest, min(m, FANOUT_SIZES[1]) * (pk.world.size - 1), 0)
            comp = pk.world.completion("fanout", 0, m, ctx.reps, lead_us=lead)
            if comp is not None:
                mine["Q"].setdefault("0", {})[m] = median(comp)
        three = ctx.plan.fanout3
        for m in sizes if three else ():
            lead = ctx.lead + refill_gap_us(slowest, min(m, FANOUT_SIZES[1]) * 2, 0)
            comp = group_call(pk, three, lambda sub, m=m, lead=lead: _completion(sub, m, ctx.reps, lead))
            if pk.rank == 0 and comp is not None:
                mine["Q3"].setdefault("0", {})[m] = median(comp)


def _completion(sub: Any, m: int, reps: int, lead: float) -> Any:
    """The fan-out's completions on the communicator ``sub`` (its rank 0 the root; on that rank, else None)."""
    from .ckernels import Kernels

    return Kernels(sub).completion("fanout", 0, m, reps, lead_us=lead)


def run_network(pk: PairKernels, rt: Any, plan: NetworkRun) -> dict[str, Any] | None:
    """Measure every pair and type on the network in ``plan.rounds`` rounds; rank 0 returns the raw medians (µs).

    Per pair, the per-byte cost measured first (``plan.slopes``, else :func:`probe_slope`) sets which sizes fit the
    budget and the idle gap after each size (:func:`refill_gap_us`: the token buckets refill between repetitions).
    ``S`` is one ``MPI_Send`` with the receive posted (consecutive sends would time the wire once TCP's buffers
    are full), only at sizes whose send does not wait for the receiver
    (:func:`calibrate.sendmodes.network_protocol`: from ``waits_from_bytes`` on, a send lasts until the receiver
    has the message, so it times the wire); ``R`` a receive after the message surely arrived (not at rendezvous
    sizes: a rendezvous message does not move before its receive is posted); ``C`` a local copy. When sends wait
    from some size on, two sizes below it are added to every grid (:func:`_below_wait_sizes`) so that the regime
    below has points of its own."""
    t0 = time.monotonic()
    k_of = _link_costs(pk, rt, plan)

    def fits(key: tuple[int, int]) -> list[int]:
        k = max(k_of[key], 1e-6)
        return [m for m in plan.sizes if m == 0 or k * m <= plan.budget_us]

    grids = {key: fits(key) for key in k_of}
    # protocol: on the fastest measured pair, over the sizes its budget allows
    fastest = min(plan.pairs, key=lambda p: k_of[p])
    proto = network_protocol(pk, fastest, grids[fastest], k_of[fastest], plan.gap_min_us, rt)
    extra = _below_wait_sizes(proto["waits_from_bytes"], plan.sizes)
    if extra:  # the regime below the size from which sends wait gets sizes of its own
        grids = {key: sorted({*g, *extra}) for key, g in grids.items()}
    lead = max(refill_gap_us(max(k_of.values()), 8192, plan.gap_min_us), 2000.0)
    reps = NET_REPS[0] if plan.quick else NET_REPS[1]
    ctx = _Round(plan, k_of, grids, proto["waits_from_bytes"], proto["rendezvous_from_bytes"], reps, lead)
    per_round: list[dict[str, Any]] = []
    for rnd in range(plan.rounds):
        mine: dict[str, Any] = {
            "T": {}, "S": {}, "R": {}, "C": {}, "F": {}, "Q": {}, "Q3": {}, "ref": {}, "native": {}, "P": {},
        }  # fmt: skip
        rt.progress(f"round {rnd + 1}/{plan.rounds}: {len(plan.pairs)} pair(s), {len(plan.roles)} type(s)")
        _oneway(pk, rt, ctx, rnd, mine)
        _overheads(pk, rt, ctx, rnd, mine)
        _natives(pk, rt, ctx, rnd, mine)
        _fanout(pk, rt, ctx, rnd, mine)
        merged = gather_round(pk.comm, mine)
        if merged is not None:
            per_round.append(merged)
    with rt.step("TCP state"):  # the kernel's own numbers for the connections the rounds used (no timing)
        tcp_states = pk.comm.gather(read_tcp_state(), root=0)
    if pk.rank != 0:
        return None
    return {
        "protocol": proto,
        "extra_sizes": extra,
        "rounds": per_round,
        "sizes": sorted({m for g in grids.values() for m in g}),
        "grids": {f"{a}-{b}": g for (a, b), g in grids.items()},
        "slopes_us_per_byte": {f"{a}-{b}": k for (a, b), k in k_of.items()},
        "gap_min_us": plan.gap_min_us,
        "budget_us": plan.budget_us,
        "reps": reps,
        "native_lead_us": lead,
        "fanout3": list(plan.fanout3) if plan.fanout3 else None,
        "tcp_states": tcp_states,
        "wall_measure_s": round(time.monotonic() - t0, 2),
    }
