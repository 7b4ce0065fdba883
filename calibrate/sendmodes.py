"""Protocol detection: what an ``MPI_Send`` of each size waits for (eager, delivery, rendezvous), from the data.

* :func:`shared_memory_protocol` - ranks on one host: which sizes are sent by rendezvous (a receive posted late
  lengthens the send), the threshold bisected to the byte;
* :func:`network_protocol` - ranks on several hosts: a send that waits for a receiver that does not call MPI
  (``delivery``: the receiver's library must take the message) or for the posted receive (``rendezvous``), and
  the same for the struct-datatype sends of MPICH's binomial gather; thresholds bisected to 1 % of the size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .pairkernels import PairKernels
from .protocol import STRUCT_FROM_BYTES
from .stats import median

__all__ = ["EAGER", "DELIVERY", "RENDEZVOUS", "shared_memory_protocol", "network_protocol"]

#: How an ``MPI_Send`` of one size behaves (:func:`network_protocol`).
EAGER, DELIVERY, RENDEZVOUS = "eager", "delivery", "rendezvous"


def shared_memory_protocol(k: Any, comm: Any, a: int, b: int, sizes: Sequence[int], rt: Any) -> dict[str, Any]:
    """Which sizes are sent by rendezvous (the send waits for the posted receive), and the threshold.

    A late receive (posted ``delay`` after the send starts) lengthens a rendezvous send by the delay and an eager
    one not at all. Every grid size is classified; the threshold between the largest eager and the smallest
    rendezvous size is then found by bisection, to the byte."""

    def rendezvous(m: int) -> bool:
        if m == 0:
            return False
        t0 = k.late(a, b, m, 5, delay_us=0.0)
        delay = comm.bcast(300.0 + 3.0 * (median(t0) if t0 is not None else 0.0), root=a)
        t1 = k.late(a, b, m, 5, delay_us=delay)
        return bool(comm.bcast(None if t1 is None else median(t1) - median(t0) > delay / 2, root=a))

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


class _WaitProbe:
    """The late-receive tests of one pair ``a → b`` (collective over ``pk``'s communicator), cached per size and
    receiver behaviour, each recorded as ``[size, receiver, send µs with the receive posted at once, delay µs,
    late send µs]``."""

    def __init__(self, pk: PairKernels, pair: tuple[int, int], k: float) -> None:
        self.pk, (self.a, self.b), self.k = pk, pair, k
        self.cache: dict[tuple[int, str], bool] = {}
        self.record: list[list[Any]] = []

    def waits(self, m: int, progress: str, reps: int = 3) -> bool:
        """Whether an ``m``-byte send waits for a receive posted late; ``progress``: ``"silent"`` (the receiver
        does not call MPI), ``"progress"`` (it does), ``"struct"`` (it does, and the sender sends a two-block struct
        datatype)."""
        if (m, progress) in self.cache:
            return self.cache[(m, progress)]
        pk, a, b, comm = self.pk, self.a, self.b, self.pk.comm
        if progress == "struct":
            t0 = pk.call(a, b, _late_progress, m, reps, 0.0, True)
        else:
            t0 = pk.call(a, b, "late", m, reps, delay_us=0.0)
        base = comm.bcast(None if t0 is None else median(t0), root=a)
        delay = max(3.0 * base, 2.0 * self.k * m) + 2000.0
        if progress == "silent":
            t1 = pk.call(a, b, "late", m, reps, delay_us=delay)
        else:
            t1 = pk.call(a, b, _late_progress, m, reps, delay, progress == "struct")
        late = comm.bcast(None if t1 is None else median(t1), root=a)
        got = bool(late - base > delay / 2)
        self.cache[(m, progress)] = got
        self.record.append([m, progress, round(base, 1), round(delay, 1), round(late, 1)])
        return got

    def threshold(self, by: dict[int, bool], progress: str) -> tuple[int | None, bool]:
        """Bisected size from which sends wait; sizes that disagree with the best split are tested again once."""
        first, odd = _split(by)
        for m in odd:
            del self.cache[(m, progress)]
            by[m] = self.waits(m, progress, reps=7)
        first, odd = _split(by)
        if first is None:
            return None, bool(odd)
        below = [m for m in by if m < first]
        lo = max(below) if below else None
        if lo is None:  # the smallest size tried already waits: halve down to one that does not (or 1 B)
            hi = first
            while hi > 1:
                mid = hi // 2
                by[mid] = self.waits(mid, progress)
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
            lo, hi = (lo, mid) if self.waits(mid, progress) else (mid, hi)
        return hi, bool(odd)


def network_protocol(
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
    probe = _WaitProbe(pk, pair, k)
    with rt.step("protocol"):
        tested = [m for m in sizes if m > 0]
        spin = {m: probe.waits(m, "silent") for m in tested}
        waits_from, mixed_wait = probe.threshold(spin, "silent")
        # a send that does not wait for a receiver that never calls MPI does not wait for a posted receive either
        poll = {m: probe.waits(m, "progress") if spin[m] else False for m in tested}
        rdv_from, mixed_rdv = probe.threshold(poll, "progress") if any(poll.values()) else (None, False)
    with rt.step("protocol of struct sends"):
        # MPICH's binomial gather sends a relay's blocks as one struct datatype (from 1 KiB): over TCP such a send
        # may wait for the posted receive where a contiguous one of the same size does not
        structs = {m: probe.waits(m, "struct") for m in tested if m >= STRUCT_FROM_BYTES}
        struct_from, mixed_struct = probe.threshold(structs, "struct") if any(structs.values()) else (None, False)
    by_size = {m: RENDEZVOUS if poll[m] else DELIVERY if spin[m] else EAGER for m in tested}
    return {
        "by_size": by_size,
        "waits_from_bytes": waits_from,
        "rendezvous_from_bytes": rdv_from,
        "struct_rendezvous_from_bytes": struct_from,
        "struct_sizes_tested": sorted(structs),
        "mixed": bool(mixed_wait or mixed_rdv or mixed_struct),
        "pair": list(pair),
        "largest_tested_bytes": max(tested, default=0),
        "bisected": sorted({m for (m, _) in probe.cache} - set(tested)),
        "tests": probe.record,
    }
