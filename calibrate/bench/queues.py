"""MPI queue benchmarks of Underwood & Brightwell: ``posted-queue`` (Figure 1) and ``unexpected-queue`` (Figure 2).

``posted-queue``: each of the two ranks pre-posts ``L*f`` receives that do not match the latency message (other
tag, same source), then the latency receives, then the remaining ``L*(1-f)`` non-matching receives; after a
barrier the ping-pong is timed. An arriving latency message is compared against the ``L*f`` entries in front of
its receive, so latency rises with the traversed part (``--lengths L,...``, ``--fractions PCT,...``). Differences
from the paper, for speed: one batch of ``iters`` latency receives is posted behind the traversed entries (each
is consumed in order, so every message still traverses exactly ``L*f``), and the non-matching receives are
removed by ``MPI_Cancel`` instead of a stream of matching messages (outside the timed region either way).

``unexpected-queue``: each rank first sends the peer ``L`` messages it will not receive until the end (they sit
in the peer's unexpected-message queue); after a barrier rank 0 times ``Isend`` + post ``Irecv`` + wait, rank 1
``Recv`` + ``Send``: every receive posting is inside the timed loop and searches the ``L`` unexpected entries.

Both work on plain MPI with the MPI library's real queues. On the emulated testbed the queue entries are posted /
sent for real on a separate communicator while the ping-pong runs over the emulated transport, whose model has no
queue cost: expect a flat curve there (the emulated times dwarf the real matching cost, which is unscaled).
``us_per_entry`` (least-squares slope of latency vs traversed/queued entries) goes into the profile's
``extensions`` with ``--profile-out``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hnowmodel.sizes import parse_sizes

from .common import TAG_DATA, TAG_DUMMY, Ctx, summarize
from .pointtopoint import _on_pair, pingpong_sample

__all__ = ["posted_queue", "unexpected_queue", "queue_extension"]


def _ints(text: str, what: str, hi: int | None = None) -> list[int]:
    from hnowmodel.errors import InputError

    try:
        out = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--{what}: expected whole numbers, got {text!r}") from None
    if not out or any(v < 0 or (hi is not None and v > hi) for v in out):
        raise InputError(f"--{what}: expected whole numbers in 0..{hi if hi is not None else 'N'}, got {text!r}")
    return out


def _iters(ctx: Ctx) -> int:
    if ctx.args.iters is not None:
        return int(ctx.args.iters)
    return 1 if ctx.emulated else (20 if ctx.quick else 100)


def _posted_sample(ctx: Ctx, sub: Any, m: int, nt: int, nu: int, iters: int) -> float:
    raw, MPI, peer = ctx.raw, ctx.MPI, 1 - ctx.rank
    dbuf = np.zeros(max(m, 1), np.uint8)
    sbuf = ctx.buffer(m)
    dummies = [raw.Irecv(dbuf, peer, TAG_DUMMY) for _ in range(nt)]
    lat = []
    if not ctx.emulated:
        rbufs = np.zeros((iters, m), np.uint8)
        lat = [raw.Irecv(rbufs[i], peer, TAG_DATA) for i in range(iters)]
    dummies += [raw.Irecv(dbuf, peer, TAG_DUMMY) for _ in range(nu)]
    sub.Barrier()
    out = 0.0
    if ctx.emulated:
        out = pingpong_sample(ctx, m, iters)
    elif ctx.rank == 0:
        t0 = ctx.tr.now()
        for i in range(iters):
            raw.Send(sbuf, peer, TAG_DATA)
            lat[i].Wait()
        out = (ctx.tr.now() - t0) / (2 * iters)
    else:
        for i in range(iters):
            lat[i].Wait()
            raw.Send(sbuf, peer, TAG_DATA)
    for d in dummies:
        d.Cancel()
    MPI.Request.Waitall(dummies)
    return out


def posted_queue(ctx: Ctx) -> list[dict]:
    """Latency with L pre-posted non-matching receives, a fraction f of them in front of the matching one."""
    lengths = _ints(ctx.opt("lengths", "0,10,100,1000", "0,100,1000", "0,300"), "lengths")
    fracs = _ints(ctx.opt("fractions", "0,50,100", "0,100", "0,100"), "fractions", 100)
    m = parse_sizes(ctx.opt("sizes", "0", "0", "0"))[0]
    iters = _iters(ctx)

    def body(sub: Any) -> list[dict]:
        rows = []
        for L in lengths:
            for f in fracs if L else [0]:
                nt = int(round(L * f / 100.0))
                with ctx.rt.step(f"posted-queue L={L} f={f}%"):
                    xs = ctx.repeat(sub, lambda nt=nt, L=L: _posted_sample(ctx, sub, m, nt, L - nt, iters))
                t = summarize(xs)
                rows.append(
                    {"length": L, "traversed_pct": f, "traversed": nt, "size": m, "latency_us": t["median_us"], **t}
                )
            ctx.rt.progress(f"posted-queue L={L}: {rows[-1]['latency_us']:.2f} us (all traversed)")
        return rows

    return _on_pair(ctx, "posted-queue", body)


def _unexpected_sample(ctx: Ctx, sub: Any, m: int, L: int, iters: int) -> float:
    raw, MPI, peer = ctx.raw, ctx.MPI, 1 - ctx.rank
    ubuf = ctx.buffer(m)
    sends = [raw.Isend(ubuf, peer, TAG_DUMMY) for _ in range(L)]
    if m <= 1024:  # eager sends complete locally; big ones complete when they are cleared at the end
        MPI.Request.Waitall(sends)
    sub.Barrier()
    sbuf, rbuf = ctx.buffer(m), ctx.buffer(m, 0)
    out = 0.0
    if ctx.emulated:
        out = pingpong_sample(ctx, m, iters)
    elif ctx.rank == 0:
        t0 = ctx.tr.now()
        for _ in range(iters):
            s = raw.Isend(sbuf, peer, TAG_DATA)
            r = raw.Irecv(rbuf, peer, TAG_DATA)  # posting searches the L unexpected messages
            MPI.Request.Waitall([s, r])
        out = (ctx.tr.now() - t0) / (2 * iters)
    else:
        for _ in range(iters):
            raw.Recv(rbuf, peer, TAG_DATA)
            raw.Send(sbuf, peer, TAG_DATA)
    dbuf = np.zeros(max(m, 1), np.uint8)
    for _ in range(L):
        raw.Recv(dbuf, peer, TAG_DUMMY)
    if m > 1024:
        MPI.Request.Waitall(sends)
    return out


def unexpected_queue(ctx: Ctx) -> list[dict]:
    """Latency with L unexpected messages queued; the receive posting is inside the timed loop."""
    lengths = _ints(ctx.opt("lengths", "0,10,100,1000", "0,100,1000", "0,300"), "lengths")
    m = parse_sizes(ctx.opt("sizes", "0", "0", "0"))[0]
    iters = _iters(ctx)

    def body(sub: Any) -> list[dict]:
        rows = []
        for L in lengths:
            with ctx.rt.step(f"unexpected-queue L={L}"):
                xs = ctx.repeat(sub, lambda L=L: _unexpected_sample(ctx, sub, m, L, iters))
            t = summarize(xs)
            rows.append({"length": L, "size": m, "latency_us": t["median_us"], **t})
            ctx.rt.progress(f"unexpected-queue L={L}: {t['median_us']:.2f} us")
        return rows

    return _on_pair(ctx, "unexpected-queue", body)


def queue_extension(rows: list[dict], key: str) -> dict[str, Any] | None:
    """Least-squares latency cost per queue entry (µs) from rows' minimum latency; ``key`` = the entries column."""
    xs = np.array([r[key] for r in rows], float)
    # minimum over samples (the paper's Figure 2 convention): interference on a shared machine only adds time
    ys = np.array([r.get("min_us", r["latency_us"]) for r in rows], float)
    if len(rows) < 2 or np.ptp(xs) == 0:
        return None
    slope, icpt = np.polyfit(xs, ys, 1)
    return {
        "us_per_entry": float(slope),
        "base_latency_us": float(icpt),
        "size": int(rows[0]["size"]),
        "entries": [int(x) for x in xs],
        "min_latency_us": ys.tolist(),
    }
