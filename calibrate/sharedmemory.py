"""The shared-memory run: ranks on one host, C kernels, everything in interleaved rounds.

The method (docs/model.md, "How the regimes are measured on real MPI"), per measured pair of ranks ``a -> b`` and
node type ``t``:

* ``T(m)``, the one-way time: an isolated ``m``-byte message answered by a 0-byte acknowledgement, both ranks
  spinning ``gap_us`` between repetitions (the same idle gap as the collective timing), ``T(m) = rtt(m) −
  rtt(0)/2`` (the acknowledgement's half of the 0-byte round trip is removed);
* ``S_t(m)``: consecutive sends (time per ``MPI_Send`` with the receives posted); ``R_t(m)``: ``MPI_Recv`` of a
  message that surely arrived, the receiver spinning, never sleeping; ``C_t(m)``: a local ``memcpy`` (MPICH's
  binomial scatter and gather copy the root's own block);
* whether a size is sent eagerly or by rendezvous (:func:`calibrate.sendmodes.shared_memory_protocol`);
* everything in **rounds**: each round measures every size (``T`` in :data:`calibrate.protocol.ONEWAY_PASSES`
  sweeps spread over the round, their median; the direction of the sweeps alternating), and, when asked, the
  native collectives and the plain C ping-pong reference in the same round, so that this machine's drift (30–65 %
  within seconds) is common to all of them; per-round medians, then medians over rounds.

The profile is fitted from :func:`run`'s raw medians by :func:`calibrate.shmprofile.fit_profile`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from .protocol import DEFAULT_GAP_US, ONEWAY_PASSES, REFERENCE_SIZES, SHM_REPS
from .rounds import gather_round
from .sendmodes import shared_memory_protocol
from .stats import center, median

__all__ = ["SharedMemoryRun", "default_sizes", "run"]


def default_sizes(quick: bool) -> list[int]:
    """0 B and a log grid to 4 MiB, three sizes per octave (one per octave to 1 MiB with ``quick``)."""
    from .fit import log_grid

    grid = log_grid(1, 1 << 20, 1) if quick else log_grid(1, 4 << 20, 3)
    return sorted({0, *grid, *REFERENCE_SIZES})


def _reps(m: int, quick: bool) -> int:
    """Repetitions of one kernel call in one round: fewer for big messages (they are long and steady)."""
    base = SHM_REPS[0] if quick else SHM_REPS[1]
    return base if m <= 65536 else max(5, base // 2)


def _count(m: int) -> int:
    """Consecutive sends per sample: enough to amortise the handshake, not so many that they fill memory."""
    return int(min(32, max(4, (1 << 22) // max(m, 1))))


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
                        ref[m] = median(pp)
            if k.rank == a:
                half0 = center(rtt[0]) / 2
                series = into.setdefault(f"{a}-{b}", {})
                for m, v in rtt.items():
                    series.setdefault(m, []).append(center(v) - half0)


@dataclass(frozen=True)
class SharedMemoryRun:
    """What :func:`run` measures: the ``pairs`` whose one-way time is timed (the first also gives the protocol
    and the reference), per node type its ``roles`` (measured rank, partner), the ``sizes`` (bytes), ``rounds``,
    the idle gap between isolated messages (``gap_us``, µs), ``quick`` (fewer repetitions), the native
    collectives timed in every round at ``native_sizes``, and whether the plain C ping-pong ``reference`` is."""

    pairs: Sequence[tuple[int, int]]
    roles: dict[str, tuple[int, int]]
    sizes: Sequence[int]
    rounds: int
    gap_us: float = DEFAULT_GAP_US
    quick: bool = False
    native_ops: Sequence[str] = ()
    native_sizes: Sequence[int] = ()
    reference: bool = True


def _overheads(k: Any, rt: Any, plan: SharedMemoryRun, rnd: int, order: Sequence[int], mine: dict[str, Any]) -> None:
    """Round ``rnd``'s S (consecutive sends), R (receive after arrival) and C (local copy) per type, in ``mine``."""
    quick, gap_us = plan.quick, plan.gap_us
    with rt.step(f"round {rnd + 1} overheads"):
        for t, (r, partner) in plan.roles.items():
            for m in order:
                s = k.sends(r, partner, m, _count(m), _reps(m, quick))
                rv = k.recv(partner, r, m, _reps(m, quick), settle_us=max(50.0, 4 * gap_us))
                if k.rank == r:
                    mine["S"].setdefault(t, {})[m] = center(s)
                    mine["R"].setdefault(t, {})[m] = center(rv)
                    mine["C"].setdefault(t, {})[m] = center(k.copy(m, _reps(m, quick)))


def _common_start_and_natives(
    k: Any, rt: Any, plan: SharedMemoryRun, rnd: int, order: Sequence[int], mine: dict[str, Any], common: bool
) -> None:
    """Round ``rnd``'s common-start one-way of the first pair (when ``common``) or its native collectives."""
    a0, b0 = plan.pairs[0]
    quick, gap_us = plan.quick, plan.gap_us
    if common:
        # the same message with both ranks starting at one instant (send and receive posted together), as the
        # collectives are timed: a receive posted as the message arrives takes the slower of two paths
        with rt.step(f"round {rnd + 1} common-start one-way"):
            for m in order:
                comp = k.completion("p2p", a0, m, _reps(m, quick), lead_us=gap_us)
                if comp is not None:
                    mine["P"].setdefault(f"{a0}-{b0}", {})[m] = center(comp)
        return
    for op in plan.native_ops:
        with rt.step(f"round {rnd + 1} native {op}"):
            for m in plan.native_sizes:
                comp = k.completion(op, 0, m, _reps(m, quick), lead_us=gap_us)
                if comp is not None:
                    mine["native"].setdefault(op, {})[m] = center(comp)


def run(k: Any, comm: Any, rt: Any, plan: SharedMemoryRun) -> dict[str, Any] | None:
    """Measure everything in ``plan.rounds`` interleaved rounds; rank 0 returns the raw per-round medians (µs)."""
    pairs, roles, sizes, rounds = plan.pairs, plan.roles, plan.sizes, plan.rounds
    a0, b0 = pairs[0]
    proto = shared_memory_protocol(k, comm, a0, b0, sizes, rt)
    common_start = b0 == (a0 + 1) % comm.Get_size()  # the kernel's p2p goes from its root to the next rank
    ref_sizes = [m for m in REFERENCE_SIZES if plan.reference]
    per_round: list[dict[str, Any]] = []
    for rnd in range(rounds):
        order = list(sizes) if rnd % 2 == 0 else list(reversed(sizes))
        mine: dict[str, Any] = {"T": {}, "S": {}, "R": {}, "C": {}, "ref": {}, "native": {}, "P": {}}
        passes: dict[str, dict[int, list[float]]] = {}
        sweep = partial(
            _oneway_sweep, k, rt, rnd, pairs, order, plan.gap_us, plan.quick, passes, mine["ref"], ref_sizes
        )
        rt.progress(
            f"round {rnd + 1}/{rounds}: {len(order)} sizes, {len(pairs)} pair(s), {len(roles)} type(s)"
            + (f", native {','.join(plan.native_ops)}" if plan.native_ops else "")
        )
        sweep(0)
        if common_start:
            _common_start_and_natives(k, rt, plan, rnd, order, mine, common=True)
        sweep(1)
        _overheads(k, rt, plan, rnd, order, mine)
        _common_start_and_natives(k, rt, plan, rnd, order, mine, common=False)
        for i in range(2, ONEWAY_PASSES):
            sweep(i)
        for name, per_size in passes.items():  # this round's one-way time: the median of its sweeps
            mine["T"][name] = {m: median(v) for m, v in per_size.items()}
        merged = gather_round(comm, mine)
        if merged is not None:
            per_round.append(merged)
    if comm.Get_rank() != 0:
        return None
    return {"protocol": proto, "rounds": per_round, "sizes": list(sizes), "gap_us": plan.gap_us}
