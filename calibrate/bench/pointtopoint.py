"""Latency and bandwidth family: ``latency``, ``bandwidth``, ``bilatency``, ``bibandwidth``, ``streaming``.

Papers: ping-pong latency (all; Liu et al. Fig. 2, Brightwell et al. Fig. 1), windowed bandwidth with queue size
Q (Liu et al. Fig. 3: the sender keeps between Q/2 and Q messages outstanding, refilling Q/2 at a time),
bidirectional latency and bandwidth (Liu et al. Fig. 4-5), streaming bandwidth and message rate (Brightwell et al.
Fig. 8-9: N back-to-back sends, then one reply).

On plain MPI the windowed tests use ``MPI_Isend`` on a duplicate communicator, as the papers do. The emulated
testbed's transport has blocking ``send`` (it returns when the sender's overhead is over, the message then
travels on its own) and no ``Isend``: there the window is flow control - the receiver acknowledges every Q/2
messages and the sender never has more than Q unacknowledged - which is what the window limits on a real NIC.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from hnowmodel.sizes import parse_sizes

from .common import TAG_ACK, TAG_DATA, TAG_DONE, Ctx, ratio, summarize

__all__ = [
    "latency",
    "bandwidth",
    "bilatency",
    "bibandwidth",
    "streaming",
    "pingpong_sample",
    "stream_sample",
    "iters_for",
    "rate_fields",
]

Buf = Callable[[int], np.ndarray]


def iters_for(ctx: Ctx, m: int) -> int:
    """Operations per sample: enough to dwarf the timer on plain MPI, few on the (slow) testbed."""
    if ctx.args.iters is not None:
        return int(ctx.args.iters)
    if ctx.emulated:
        return 1 if ctx.quick else 2
    n = max(10, min(200, int(2e6 / (m + 1000))))
    return max(2, n // 10) if ctx.quick else n


def rate_fields(samples_us: list[float], nbytes: int, prefix: str = "bandwidth") -> dict[str, float]:
    """Bandwidth in MB/s (10^6 bytes/s = bytes/µs) from times for ``nbytes``: median, worst (max time), best."""
    t = summarize(samples_us)

    def f(x: float) -> float:
        return nbytes / x if x > 0 else float("nan")

    return {
        f"{prefix}_MBps": f(t["median_us"]),
        f"{prefix}_min_MBps": f(t["max_us"]),
        f"{prefix}_max_MBps": f(t["min_us"]),
    }


def _sizes(ctx: Ctx, plain: str, testbed: str, quick: str) -> list[int]:
    return parse_sizes(ctx.opt("sizes", plain, testbed, quick))


# ---- ping-pong ----------------------------------------------------------------------------------------------------
def pingpong_sample(ctx: Ctx, m: int, iters: int, sbuf: Buf | None = None, rbuf: Buf | None = None) -> float:
    """``iters`` round trips between ranks 0 and 1 over the transport; rank 0 returns the one-way time in µs."""
    tr = ctx.tr
    s0, r0 = ctx.buffer(m), ctx.buffer(m, 0)
    sbuf = sbuf or (lambda i: s0)
    rbuf = rbuf or (lambda i: r0)
    if ctx.rank == 0:
        t0 = tr.now()
        for i in range(iters):
            tr.send(sbuf(i), 1, TAG_DATA)
            tr.recv(rbuf(i), 1, TAG_DATA)
        return (tr.now() - t0) / (2 * iters)
    for i in range(iters):
        tr.recv(rbuf(i), 0, TAG_DATA)
        tr.send(sbuf(i), 0, TAG_DATA)
    return 0.0


def _on_pair(ctx: Ctx, name: str, body: Callable[[Any], list[dict]]) -> list[dict]:
    """Run ``body(sub)`` on ranks 0 and 1; other ranks wait quietly."""
    ctx.need(2, name)
    sub = ctx.sub(2)
    rows = body(sub) if sub is not None else []
    ctx.idle_until_done()
    return rows if ctx.rank == 0 else []


def latency(ctx: Ctx) -> list[dict]:
    """One-way latency (half the round trip) vs size."""

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in _sizes(ctx, "0,1,16,256,1K,4K,16K,64K,256K", "0,256,1K,4K,16K", "0,1K"):
            it = iters_for(ctx, m)
            with ctx.rt.step(f"latency {m} B"):
                xs = ctx.repeat(sub, lambda m=m, it=it: pingpong_sample(ctx, m, it))
            rows.append({"size": m, "latency_us": summarize(xs)["median_us"], **summarize(xs), "iters": it})
            ctx.rt.progress(f"latency {m} B: {rows[-1]['latency_us']:.2f} us")
        return rows

    return _on_pair(ctx, "latency", body)


# ---- windowed bandwidth -------------------------------------------------------------------------------------------
def stream_sample(
    ctx: Ctx,
    m: int,
    count: int,
    window: int,
    compute_us: float = 0.0,
    sbuf: Buf | None = None,
    rbuf: Buf | None = None,
) -> float:
    """Rank 0 sends ``count`` messages of ``m`` bytes to rank 1 with at most ``window`` outstanding (refilled
    ``window/2`` at a time), optionally computing ``compute_us`` after each send; rank 1 replies once at the end.
    Rank 0 returns the elapsed µs (first send to the reply)."""
    tr, MPI = ctx.tr, ctx.MPI
    s0, r0 = ctx.buffer(m), ctx.buffer(m, 0)
    sbuf = sbuf or (lambda i: s0)
    rbuf = rbuf or (lambda i: r0)
    ack = ctx.buffer(0)
    half = max(window // 2, 1)
    if not ctx.emulated:  # the papers' method: nonblocking sends, wait for the oldest Q/2, send Q/2 more
        raw = ctx.raw
        if ctx.rank == 0:
            t0 = tr.now()
            reqs: deque = deque()
            for i in range(count):
                if len(reqs) >= window:
                    MPI.Request.Waitall([reqs.popleft() for _ in range(min(half, len(reqs)))])
                reqs.append(raw.Isend(sbuf(i), 1, TAG_DATA))
                if compute_us > 0:
                    tr.compute(compute_us)
            MPI.Request.Waitall(list(reqs))
            raw.Recv(ack, 1, TAG_DONE)
            return tr.now() - t0
        for i in range(count):
            raw.Recv(rbuf(i), 0, TAG_DATA)
        raw.Send(ack, 0, TAG_DONE)
        return 0.0
    # emulated testbed: flow control by acknowledgements every Q/2 messages
    waits = len(range(window, count, half))
    if ctx.rank == 0:
        t0 = tr.now()
        for i in range(count):
            if i >= window and (i - window) % half == 0:
                tr.recv(ack, 1, TAG_ACK)
            tr.send(sbuf(i), 1, TAG_DATA)
            if compute_us > 0:
                tr.compute(compute_us)
        tr.recv(ack, 1, TAG_DONE)
        return tr.now() - t0
    for i in range(count):
        tr.recv(rbuf(i), 0, TAG_DATA)
        if (i + 1) % half == 0 and (i + 1) // half <= waits:
            tr.send(ack, 0, TAG_ACK)
    tr.send(ack, 0, TAG_DONE)
    return 0.0


def count_for(ctx: Ctx, m: int, window: int) -> int:
    """Messages per bandwidth sample: a few windows, ~8 MB of data on plain MPI, little on the testbed."""
    if ctx.args.count is not None:
        return int(ctx.args.count)
    if ctx.emulated:
        return max(window, 8 if ctx.quick else 2 * window)
    n = int((1e6 if ctx.quick else 8e6) / max(m, 1))
    return max(2 * window, min(n, 20 * window))


def window_for(ctx: Ctx) -> int:
    return int(ctx.opt("window", 64, 8, 8))


def bandwidth(ctx: Ctx) -> list[dict]:
    """Unidirectional bandwidth with queue size Q (``--window``)."""
    window = window_for(ctx)

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in _sizes(ctx, "1K,4K,16K,64K,256K,1M", "1K,4K", "4K"):
            n = count_for(ctx, m, window)
            with ctx.rt.step(f"bandwidth {m} B"):
                xs = ctx.repeat(sub, lambda m=m, n=n: stream_sample(ctx, m, n, window))
            rows.append({"size": m, "window": window, "count": n, **rate_fields(xs, n * m), **summarize(xs)})
            ctx.rt.progress(f"bandwidth {m} B: {rows[-1]['bandwidth_MBps']:.1f} MB/s")
        return rows

    return _on_pair(ctx, "bandwidth", body)


# ---- bidirectional ------------------------------------------------------------------------------------------------
def _bi_latency_sample(ctx: Ctx, m: int, iters: int) -> float:
    tr, peer = ctx.tr, 1 - ctx.rank
    sbuf, rbuf = ctx.buffer(m), ctx.buffer(m, 0)
    t0 = tr.now()
    for _ in range(iters):
        if ctx.emulated:  # emulated send never blocks on the peer, so both may send first
            tr.send(sbuf, peer, TAG_DATA)
            tr.recv(rbuf, peer, TAG_DATA)
        else:  # pre-post the receive so that two blocking (possibly rendezvous) sends cannot deadlock
            r = ctx.raw.Irecv(rbuf, peer, TAG_DATA)
            ctx.raw.Send(sbuf, peer, TAG_DATA)
            r.Wait()
    return (tr.now() - t0) / iters


def bilatency(ctx: Ctx) -> list[dict]:
    """Both ranks send at once and wait for the other's message; time per exchange (one-way latency under load)."""

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in _sizes(ctx, "0,1,16,256,1K,4K,16K,64K", "0,1K,4K", "0,1K"):
            it = iters_for(ctx, m)
            with ctx.rt.step(f"bilatency {m} B"):
                sub.Barrier()
                xs = ctx.repeat(sub, lambda m=m, it=it: _bi_latency_sample(ctx, m, it))
            rows.append({"size": m, "latency_us": summarize(xs)["median_us"], **summarize(xs), "iters": it})
        return rows

    return _on_pair(ctx, "bilatency", body)


def _bi_bandwidth_sample(ctx: Ctx, m: int, count: int, window: int) -> float:
    tr, MPI, peer = ctx.tr, ctx.MPI, 1 - ctx.rank
    sbuf = ctx.buffer(m)
    rbufs = [ctx.buffer(m, 0) for _ in range(window)]
    t0 = tr.now()
    done = 0
    while done < count:
        q = min(window, count - done)
        if ctx.emulated:
            for _ in range(q):
                tr.send(sbuf, peer, TAG_DATA)
            for j in range(q):
                tr.recv(rbufs[j], peer, TAG_DATA)
        else:
            reqs = [ctx.raw.Irecv(rbufs[j], peer, TAG_DATA) for j in range(q)]
            reqs += [ctx.raw.Isend(sbuf, peer, TAG_DATA) for _ in range(q)]
            MPI.Request.Waitall(reqs)
        done += q
    return tr.now() - t0


def bibandwidth(ctx: Ctx) -> list[dict]:
    """Both ranks stream windows of Q messages to each other at once; aggregate bandwidth (both directions)."""
    window = window_for(ctx)

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in _sizes(ctx, "1K,4K,16K,64K,256K,1M", "1K,4K", "4K"):
            n = count_for(ctx, m, window)
            with ctx.rt.step(f"bibandwidth {m} B"):
                sub.Barrier()
                xs = ctx.repeat(sub, lambda m=m, n=n: _bi_bandwidth_sample(ctx, m, n, window))
            rows.append({"size": m, "window": window, "count": n, **rate_fields(xs, 2 * n * m), **summarize(xs)})
        return rows

    return _on_pair(ctx, "bibandwidth", body)


# ---- streaming ----------------------------------------------------------------------------------------------------
def streaming(ctx: Ctx) -> list[dict]:
    """N back-to-back sends (``--count``, default 160) then one reply: bandwidth and message rate."""
    count = int(ctx.args.count) if ctx.args.count is not None else (16 if ctx.quick else 160)

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in _sizes(ctx, "0,16,256,1K,4K,16K,64K", "0,1K", "0,1K"):
            with ctx.rt.step(f"streaming {m} B"):
                # all N sends initiated at once (window = N), as in Brightwell et al.
                xs = ctx.repeat(sub, lambda m=m: stream_sample(ctx, m, count, count))
            t = summarize(xs)
            rows.append(
                {
                    "size": m,
                    "count": count,
                    **rate_fields(xs, count * m),
                    "rate_msgs_per_s": ratio(count * 1e6, t["median_us"]),
                    **t,
                }
            )
        return rows

    return _on_pair(ctx, "streaming", body)
