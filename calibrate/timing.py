"""The timing methods of ``python -m calibrate measure`` (µs): ``fig2`` and ``sync``, and the clock they share.

Both methods run for every row, each repeated ``--reps`` times (min / median / max reported, µs; on the
emulated testbed every time is in testbed µs, i.e. divided by ``time_scale``):

* ``fig2`` - the paper's Figure 2: ``iters`` barriers timed to get the barrier cost, then ``iters`` rounds of
  (collective; barrier); each rank's mean round time, max over ranks, minus the barrier cost (also max over
  ranks). It includes whatever part of the barrier does not overlap the collective's tail: ranks that finish
  early enter the barrier early, so the subtraction removes a full barrier although only the last finisher's
  share of it was added, and on an oversubscribed machine the barrier's own noise lands in the result.
* ``sync`` - barrier-free: each rank's clock offset to rank 0 is measured once by ping-pong (the sample with the
  smallest round trip), rank 0 announces a start instant a few ms ahead, every rank waits for it on its own
  clock (sleeping, then spinning with sched_yield the last ~0.3 ms) and runs one collective; each rank's finish
  time is collected and the completion time is the last finish minus the root's actual start (gather: the
  earliest start). That is the model's definition (eq. 6: the max over ranks of the time each rank is done)
  for a single, cold collective; it also gives each rank's own finish time (``per_rank_us``). A rank that the
  OS schedules late shows up as ``sync_late_us``. Short collectives get extra repetitions (``sync_reps``).

How they differ here (2 cores): on the emulated testbed ``sync`` matches the model with the true parameters
within ~1 % at every size, ``fig2`` too from 1 KiB up but errs by up to ~9 % at 0 bytes, where the emulated
barrier's polling and the partial overlap of barrier and collective are a large share of the time. On plain
MPI with more ranks than cores ``sync`` reads 100-300 µs for collectives that ``fig2`` puts at 10-60 µs: a single
cold collective pays an OS wake-up for every rank that slept or was descheduled, which a hot loop does not -
so ``hnow measure``/``compare`` default to ``sync`` on a testbed and ``fig2`` on plain MPI (``--method auto``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["Clock", "time_sync", "time_sync_c", "time_fig2"]


class Clock:
    """Transport clock plus this rank's offset to rank 0's clock (µs), measured by ping-pong on a private comm."""

    def __init__(self, tr: Any, ctl: Any, samples: int = 12) -> None:
        self.tr, self.ctl = tr, ctl
        self.root = 0  # whose actual start is the reference of a synchronised run (set per tree)
        rank, size = ctl.Get_rank(), ctl.Get_size()
        ping = np.zeros(1)
        best = np.full(size, np.inf)
        off = np.zeros(size)
        for r in range(1, size):
            for _ in range(samples):
                if rank == 0:
                    t0 = tr.now()
                    ctl.Send(ping, r, 7)
                    ctl.Recv(ping, r, 7)
                    t1 = tr.now()
                    if t1 - t0 < best[r]:
                        best[r], off[r] = t1 - t0, ping[0] - (t0 + t1) / 2
                elif rank == r:
                    ctl.Recv(ping, 0, 7)
                    ping[0] = tr.now()
                    ctl.Send(ping, 0, 7)
        self.offsets_us = ctl.bcast(off, root=0)  # local clock of rank r ~ rank 0's clock + offsets_us[r]
        self.offset_us = float(self.offsets_us[rank])
        self.rtt_us = ctl.bcast(best, root=0)

    def wait_until(self, local_t: float) -> float:
        """Sleep, then spin (yielding the CPU), until this rank's clock reads ``local_t`` (model µs).

        Returns the clock then. The spin yields because ranks are oversubscribed on few cores: a rank that spins
        without yielding keeps a peer that is due to start (or to forward a message) off the CPU.
        """
        scale = float(getattr(self.tr, "time_scale", 1.0) or 1.0)
        while True:
            left_real_s = (local_t - self.tr.now()) * scale * 1e-6
            if left_real_s <= 0:
                return self.tr.now()
            if left_real_s > 3e-4:
                time.sleep(left_real_s - 3e-4)
            else:
                os.sched_yield()


def _stats(xs: Sequence[float]) -> tuple[float, float, float]:
    return float(min(xs)), float(statistics.median(xs)), float(max(xs))


def time_sync(
    clock: Clock,
    run: Callable[[], None],
    reps: int,
    lead_real_us: float = 4000.0,
    extra_budget_s: float = 0.25,
    first_start: bool = False,
) -> dict[str, Any]:
    """Barrier-free completion time (µs): synchronised start, then the last finish minus the root's start.

    Rank 0 announces a start instant ``lead_real_us`` real µs ahead; every rank waits for it on its own clock and
    runs one collective. Finish times are mapped to rank 0's clock with the measured offsets; the reference is the
    root's actual start (nothing can happen before the root starts), or with ``first_start`` (gather, where every
    rank starts work at once) the earliest rank's start, so a rank that wakes late costs only what it really
    delays. ``late_us`` is the median over repetitions of the latest rank's wake-up delay.

    At least ``reps`` repetitions; short collectives get up to ``3*reps`` while the row has used less than
    ``extra_budget_s`` real seconds, because they are the most exposed to scheduling noise and cost little.
    """
    tr, ctl = clock.tr, clock.ctl
    scale = float(getattr(tr, "time_scale", 1.0) or 1.0)
    me = ctl.Get_rank()
    comp, late, per_rank = [], [], []
    early = 0  # finishes before the reference start: clock offsets off by more than the collective lasts
    began = time.monotonic()
    for i in range(3 * reps):
        ctl.Barrier()
        t0 = None
        if me == 0 and (i < reps or time.monotonic() - began < extra_budget_s):
            t0 = tr.now() + lead_real_us / scale
        t0 = ctl.bcast(t0, root=0)
        if t0 is None:
            break
        target = t0 + clock.offset_us
        start = clock.wait_until(target)
        run()
        end = tr.now()
        got = ctl.gather((start - clock.offset_us, end - clock.offset_us, start - target), root=0)
        if me == 0:
            # bcast/scatter: nothing happens before the root starts; gather: the first rank to start begins it
            ref = min(g[0] for g in got) if first_start else got[clock.root][0]
            done = [g[1] - ref for g in got]
            early += sum(d < 0 for d in done)
            done = [max(0.0, d) for d in done]
            comp.append(max(done))
            late.append(max(g[2] for g in got))
            per_rank.append(done)
    if me != 0:
        return {}
    mn, md, mx = _stats(comp)
    return {
        "sync_min_us": mn,
        "sync_median_us": md,
        "sync_max_us": mx,
        "sync_late_us": float(statistics.median(late)),
        "sync_reps": len(comp),
        # said, not hidden: a rank whose finish, mapped to rank 0's clock, fell before the start counted as 0
        "sync_finish_before_start": early,
        "per_rank_us": [float(statistics.median(col)) for col in zip(*per_rank, strict=True)],
    }


def _c_kernels(comm: Any) -> Any:
    """The C kernels on ``comm`` when every rank can load them, else None (the Python timing is used)."""
    from .ckernels import Kernels, available

    if not all(comm.allgather(available()[0])):
        return None
    return Kernels(comm)


def time_sync_c(
    k: Any, ctl: Any, op: str, root: int, m: int, reps: int, lead_us: float, idle_us: float = 0.0
) -> dict[str, Any]:
    """The library's own collective timed in C with a common start (µs): every rank spins to one instant of the
    shared clock, calls it once, and the completion is the latest finish minus the earliest start; ``idle_us``:
    every rank sleeps that long before each timed repetition."""
    n = max(3 * reps, 11)  # cheap: a cold single collective is the noisiest case, so take more
    start, finish = k.coll(op, root, m, n, lead_us=lead_us, idle_us=idle_us)
    starts, finishes = ctl.gather(start, root=0), ctl.gather(finish, root=0)
    if ctl.Get_rank() != 0:
        return {}
    t0 = np.min(np.array(starts), axis=0)
    done = np.array(finishes) - t0  # (ranks, repetitions): when each rank finished, from the common start
    comp = done.max(axis=0)
    late = np.max(np.array(starts), axis=0) - t0
    mn, md, mx = _stats(comp.tolist())
    return {
        "sync_min_us": mn,
        "sync_median_us": md,
        "sync_max_us": mx,
        "sync_late_us": float(np.median(late)),
        "sync_reps": n,
        "sync_kernel": "C",
        "sync_lead_us": lead_us,
        "sync_idle_us": idle_us,
        "per_rank_us": [float(x) for x in np.median(done, axis=1)],
    }


def time_fig2(tr: Any, ctl: Any, run: Callable[[], None], reps: int, iters: int) -> dict[str, Any]:
    """The paper's Figure 2: (collective; barrier) loop minus a barrier loop, max over ranks (µs).

    A collective that synchronises its ranks (an allreduce) absorbs the barrier after it, so on a fast path the
    difference can fall below zero: such a repetition counts as 0 and ``fig2_below_barrier`` says how many did
    (as ``sync_finish_before_start`` does for the common-start method), never a negative time."""
    from mpi4py import MPI

    vals, barriers = [], []
    for _ in range(reps):
        tr.barrier()
        a = tr.now()
        for _ in range(iters):
            tr.barrier()
        barrier_us = (tr.now() - a) / iters
        tr.barrier()
        a = tr.now()
        for _ in range(iters):
            run()
            tr.barrier()
        local_us = (tr.now() - a) / iters
        glob = ctl.allreduce(local_us, op=MPI.MAX)
        bar = ctl.allreduce(barrier_us, op=MPI.MAX)
        vals.append(glob - bar)
        barriers.append(bar)
    mn, md, mx = _stats([max(0.0, v) for v in vals])
    return {
        "fig2_min_us": mn,
        "fig2_median_us": md,
        "fig2_max_us": mx,
        "barrier_us": float(statistics.median(barriers)),
        "fig2_below_barrier": sum(v < 0 for v in vals),
    }
