"""The bytes queued ahead of a message in a fan-out (``extensions.network.queued_bytes``), measured.

The model's round-robin egress (``flow-rr``, docs/model.md) serves the messages queued on a sender's link in turn,
packet by packet, and a message posted behind others waits one round of the bytes each of them keeps queued below
it: its first byte leaves ``queued_bytes · Xm`` after it was posted (``Xm``: the link's per-byte cost) instead of at
once. That is observable without shared clocks, from round trips timed on the sender alone:

* **isolated**: rank ``a`` sends a small message (:data:`~calibrate.protocol.QUEUED_PROBE_BYTES`) to rank ``c``,
  which answers with 0 bytes; the round trip, with both buckets full after an idle gap;
* **behind a flow**: the same, but ``a`` first posts a large message to rank ``b`` (lasting about
  :data:`~calibrate.protocol.QUEUED_FLOW_US` on ``a``'s link) and lets it progress for
  :data:`~calibrate.protocol.QUEUED_LEAD_US` (its token-bucket burst passes, its connection fills its queue)
  before it sends to ``c``.

``b`` and ``c`` are on other hosts than ``a``; ``c``'s link carries nothing else, so the difference of the two
round trips is the small message's wait in ``a``'s egress: ``delay = queued · e_a + 2·s·e_a`` in the model (``e_a``:
``a``'s egress per-byte cost, the smallest measured cost of its outgoing pairs; ``s``: the small message, sharing
the link with the flow once it leaves). Both are timed in interleaved repetitions; ``queued_bytes = median(delay) /
e_a − 2·s`` (payload bytes, at least 0). The sender is the rank whose egress is the slowest (the longest wait,
the clearest signal). Nothing of a cluster's configuration is read.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .pairkernels import PairKernels
from .protocol import (
    BYSTANDER_SLEEP_S,
    NET_MAX_SIZE,
    QUEUED_FLOW_US,
    QUEUED_LEAD_US,
    QUEUED_PROBE_BYTES,
    QUEUED_REPS,
    refill_gap_us,
)
from .stats import median_ci
from .transport import sleep_wait

__all__ = ["choose_fanout", "fanout_round_trips", "measure_queued", "fit_queued"]

_READY, _LARGE, _SMALL, _ACK = 4731, 4732, 4733, 4734


def choose_fanout(hosts: Sequence[str], k_of: dict[tuple[int, int], float]) -> tuple[int, int, int, float] | None:
    """``(a, b, c, e_a)``: the sender ``a`` whose egress per-byte cost ``e_a`` (µs/byte; the smallest measured cost
    of its outgoing pairs) is the largest, and two ranks ``b``, ``c`` on other hosts (the flow's and the small
    message's receivers: the first two by rank); None without a sender and two such ranks.

    >>> choose_fanout(["h1", "h2", "h3"], {(0, 1): 0.1, (1, 0): 0.4, (2, 0): 0.2})
    (1, 0, 2, 0.4)
    """
    egress: dict[int, float] = {}
    for (a, _), k in k_of.items():
        egress[a] = min(egress.get(a, np.inf), float(k))
    for a in sorted(egress, key=lambda r: (-egress[r], r)):
        others = [r for r in range(len(hosts)) if hosts[r] != hosts[a]]
        if len(others) >= 2 and egress[a] > 0:
            return a, others[0], others[1], egress[a]
    return None


def fanout_round_trips(comm: Any, a: int, b: int, c: int, large: int, reps: int, gap_us: float) -> np.ndarray | None:
    """Run by ranks ``a``, ``b``, ``c`` of ``comm``: ``reps`` pairs (µs, on ``a``; None elsewhere) of the round trip
    ``a → c → a`` of a :data:`~calibrate.protocol.QUEUED_PROBE_BYTES` message, isolated and posted
    :data:`~calibrate.protocol.QUEUED_LEAD_US` after a ``large``-byte message ``a → b``, both after ``a`` idled
    ``gap_us``. One untimed pair first (it opens the connections)."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    big = np.zeros(max(large, 1), dtype=np.uint8)
    small = np.zeros(QUEUED_PROBE_BYTES, dtype=np.uint8)
    none = np.zeros(1, dtype=np.uint8)
    zero: Any = [none, 0, MPI.BYTE]
    out: list[list[float]] = []
    for i in range(-1, reps):
        row = []
        for behind in (False, True):
            if rank == a:
                comm.Recv(zero, source=c, tag=_READY)
                if behind:
                    comm.Recv(zero, source=b, tag=_READY)
                time.sleep(gap_us / 1e6)  # the buckets refill
                req = None
                if behind:
                    req = comm.Isend([big, large, MPI.BYTE], dest=b, tag=_LARGE)
                    end = time.perf_counter_ns() + int(QUEUED_LEAD_US * 1e3)
                    while time.perf_counter_ns() < end:
                        req.Test()  # the library moves the flow's bytes meanwhile
                t0 = time.perf_counter_ns()
                comm.Send([small, QUEUED_PROBE_BYTES, MPI.BYTE], dest=c, tag=_SMALL)
                comm.Recv(zero, source=c, tag=_ACK)
                row.append((time.perf_counter_ns() - t0) / 1e3)
                if req is not None:
                    req.Wait()
            elif rank == b and behind:
                req = comm.Irecv([big, large, MPI.BYTE], source=a, tag=_LARGE)
                comm.Send(zero, dest=a, tag=_READY)
                sleep_wait(req, *BYSTANDER_SLEEP_S)  # b leaves the CPU to a and c
            elif rank == c:
                req = comm.Irecv([small, QUEUED_PROBE_BYTES, MPI.BYTE], source=a, tag=_SMALL)
                comm.Send(zero, dest=a, tag=_READY)
                req.Wait()
                comm.Send(zero, dest=a, tag=_ACK)
        if rank == a and i >= 0:
            out.append(row)
    return np.asarray(out) if rank == a else None


def measure_queued(
    pk: PairKernels, rt: Any, hosts: Sequence[str], k_of: dict[tuple[int, int], float], gap_min_us: float, quick: bool
) -> dict[str, Any] | None:
    """The fan-out measurement (collective over ``pk``'s communicator): the chosen ranks and what they measured,
    with :func:`fit_queued`'s result, on rank 0 (None elsewhere, and on every rank when no fan-out can be made:
    fewer than three ranks, or all on fewer than two hosts)."""
    pick = choose_fanout(hosts, k_of) if hosts else None
    if pick is None:
        return None
    a, b, c, e_a = pick
    large = int(min(NET_MAX_SIZE, max(65536, QUEUED_FLOW_US / e_a)))
    gap = refill_gap_us(e_a, 32768, gap_min_us)
    reps = QUEUED_REPS[0] if quick else QUEUED_REPS[1]
    with rt.step("queued bytes (fan-out)"):
        pts = pk.call_group((a, b, c), fanout_round_trips, large, reps, gap)
        pts = pk.comm.bcast(None if pts is None else pts.tolist(), root=a)
    if pk.rank != 0:
        return None
    out = {
        "ranks": {"sender": a, "flow_to": b, "probe_to": c},
        "hosts": [hosts[a], hosts[b], hosts[c]],
        "egress_us_per_byte": e_a,
        "large_bytes": large,
        "small_bytes": QUEUED_PROBE_BYTES,
        "lead_us": QUEUED_LEAD_US,
        "gap_us": gap,
        "points_us": [[round(x, 2) for x in p] for p in pts],
    }
    return {**out, **fit_queued(out)}


def fit_queued(meas: dict[str, Any]) -> dict[str, Any]:
    """``queued_bytes`` (payload bytes, at least 0) from a fan-out's points: the delay (the lower quartile of the
    round trips behind the flow minus that of the isolated ones, µs; a busy machine only ever adds time) over the
    sender's egress cost, minus the probe's own share ``2·s``; with the 95 % CI of the per-repetition delays'
    median.

    >>> r = fit_queued({"points_us": [[100.0, 535.4]] * 7, "egress_us_per_byte": 0.1, "small_bytes": 8})
    >>> round(r["queued_bytes"], 1), r["delay_us"]
    (4338.0, 435.4)
    """
    pts = np.asarray(meas["points_us"], dtype=float)
    delay = pts[:, 1] - pts[:, 0]
    # scheduling on a loaded machine only ever adds time: each kind's lower quartile is its undisturbed value
    d = float(np.percentile(pts[:, 1], 25) - np.percentile(pts[:, 0], 25))
    lo, hi = median_ci(delay)
    e_a, s = float(meas["egress_us_per_byte"]), int(meas["small_bytes"])
    return {
        "delay_us": round(d, 2),
        "delay_ci95_us": [round(float(lo), 2), round(float(hi), 2)],
        "queued_bytes": max(0.0, d / e_a - 2 * s),
        "how": "the round trip a->c->a of a small message posted behind a large message a->b and the same round trip "
        "isolated (interleaved, buckets full); delay = difference of their lower quartiles; queued_bytes = delay / "
        "a's egress cost - 2 x small bytes (the model: the message's first byte leaves after one round of the "
        "flow's queued bytes)",
    }
