"""``hotspot`` (Liu et al. Fig. 11): one master (rank 0) and k slaves (ranks 1..k), latency vs k.

* ``send``: the master keeps sending ``m``-byte messages to its k slaves in turn (``iters`` rounds, one closing
  acknowledgement from each slave at the end); ``latency_us`` is the time per round.
* ``receive``: as in the paper, the master sends a 0-byte synchronising message to each slave, then receives one
  ``m``-byte message from every slave (in arrival order, ``ANY_SOURCE``); ``latency_us`` is the time per round.
  ``fanin_us`` measures the fan-in alone: every rank's clock offset to the master is measured (ping-pong), all
  ranks start at the same instant, the slaves send at once, and ``fanin_us`` is the time until the master holds
  all k messages. That is exactly the gather model's question (eq. 10-12 on the sequential tree, every sender
  starting at 0), so with ``--profile`` each receive row also gets ``predicted_us`` =
  :func:`hnowmodel.predict.gather` on ranks 0..k, sequential tree, ``variant`` (``--variant``, default ``link``:
  the emulated inbound link carries one message at a time) and ``error_pct`` = (fanin_min - predicted)/predicted,
  from the minimum over repetitions as in the paper's Figure 2 (a descheduled rank only ever adds time).

Default message 4 bytes as in the paper. Here the "network" is shared memory on 2 cores: with 4 ranks the ranks
also compete for the CPU, so plain-MPI growth with k mixes contention for the master with CPU oversubscription.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hnowmodel.ops import predictor
from hnowmodel.sizes import parse_sizes
from hnowmodel.trees import sequential

from .common import TAG_ACK, TAG_DATA, TAG_SYNC, Ctx, summarize

__all__ = ["hotspot", "VARIANTS"]

VARIANTS = ("send", "receive")


def _send_round(ctx: Ctx, k: int, m: int, iters: int) -> float:
    tr = ctx.tr
    buf, ack = ctx.buffer(m), ctx.buffer(0)
    if ctx.rank == 0:
        t0 = tr.now()
        for _ in range(iters):
            for j in range(1, k + 1):
                tr.send(buf, j, TAG_DATA)
        for j in range(1, k + 1):
            tr.recv(ack, j, TAG_ACK)
        return (tr.now() - t0) / iters
    for _ in range(iters):
        tr.recv(buf, 0, TAG_DATA)
    tr.send(ack, 0, TAG_ACK)
    return 0.0


def _receive_round(ctx: Ctx, k: int, m: int, iters: int) -> float:
    tr = ctx.tr
    buf, sync = ctx.buffer(m), ctx.buffer(0)
    if ctx.rank == 0:
        t0 = tr.now()
        for _ in range(iters):
            for j in range(1, k + 1):
                tr.send(sync, j, TAG_SYNC)
            for _ in range(k):
                tr.recv(buf, tr.ANY_SOURCE, TAG_DATA)
        return (tr.now() - t0) / iters
    for _ in range(iters):
        tr.recv(sync, 0, TAG_SYNC)
        tr.send(buf, 0, TAG_DATA)
    return 0.0


def _fanin(ctx: Ctx, sub: Any, clock: Any, k: int, m: int) -> float:
    """Synchronised start, slaves send at once; the master's time (µs) until it holds all k messages."""
    tr = ctx.tr
    buf = ctx.buffer(m)
    sub.Barrier()
    t0 = tr.now() + 4000.0 / tr.time_scale if ctx.rank == 0 else None
    t0 = sub.bcast(t0, root=0)
    clock.wait_until(t0 + clock.offset_us)
    if ctx.rank == 0:
        for _ in range(k):
            tr.recv(buf, tr.ANY_SOURCE, TAG_DATA)
        return tr.now() - t0
    tr.send(buf, 0, TAG_DATA)
    return 0.0


def _predict(ctx: Ctx, k: int, m: int) -> float | None:
    prepared = ctx.prepared
    prof = prepared.get("profile") if prepared else None
    if prof is None:
        return None
    layout = getattr(ctx.tr, "layout", None) or prepared.get("layout") or prof.layout
    if not layout:
        return None
    lay = list(layout)[: k + 1]
    return float(predictor("gather", ctx.args.variant or "link")(prof, lay, sequential(k + 1), [m])[0])


def hotspot(ctx: Ctx) -> list[dict]:
    from calibrate.timing import Clock
    from hnowmodel.errors import InputError

    ctx.need(2, "hotspot")
    m = parse_sizes(ctx.opt("sizes", "4", "4", "4"))[0]
    slaves = ctx.args.slaves
    ks = [int(x) for x in str(slaves).split(",") if x.strip()] if slaves else list(range(1, ctx.size))
    for k in ks:
        if k < 1 or k >= ctx.size:
            raise InputError(f"--slaves: {k} is not in 1..{ctx.size - 1} (the job has {ctx.size} ranks)")
    iters = int(ctx.args.iters) if ctx.args.iters is not None else (1 if ctx.emulated or ctx.quick else 20)
    rows: list[dict] = []
    for k in ks:
        sub = ctx.sub(k + 1)
        if sub is not None:
            clock = Clock(ctx.tr, sub)
            with ctx.rt.step(f"hotspot send k={k}"):
                xs = ctx.repeat(sub, lambda k=k: _send_round(ctx, k, m, iters))
            t = summarize(xs)
            rows.append({"variant": "send", "slaves": k, "size": m, "latency_us": t["median_us"], **t})
            with ctx.rt.step(f"hotspot receive k={k}"):
                xs = ctx.repeat(sub, lambda k=k: _receive_round(ctx, k, m, iters))
                fs = ctx.repeat(sub, lambda k=k, sub=sub, clock=clock: _fanin(ctx, sub, clock, k, m))
            t, f = summarize(xs), summarize(fs)
            row = {
                "variant": "receive",
                "slaves": k,
                "size": m,
                "latency_us": t["median_us"],
                "fanin_us": f["median_us"],
                "fanin_min_us": f["min_us"],
                "fanin_max_us": f["max_us"],
                **t,
            }
            pred = _predict(ctx, k, m) if ctx.rank == 0 else None
            if pred is not None:
                row["predicted_us"] = pred
                # minimum over repetitions (the paper's Figure 2 convention): a descheduled rank only adds time
                row["error_pct"] = 100.0 * (f["min_us"] - pred) / pred
            rows.append(row)
            ctx.rt.progress(f"hotspot k={k}: send {rows[-2]['latency_us']:.1f} us, fan-in {f['median_us']:.1f} us")
            sub.Free()
        ctx.idle_until_done()
    return rows if ctx.rank == 0 else []


def fanin_extension(rows: list[dict]) -> dict[str, Any] | None:
    """Profile ``extensions.hotspot``: measured fan-in and send latency per k, and the slopes (µs per slave)."""
    rec = [r for r in rows if r.get("variant") == "receive"]
    snd = [r for r in rows if r.get("variant") == "send"]
    if not rec:
        return None
    ks = np.array([r["slaves"] for r in rec], float)
    fan = np.array([r["fanin_us"] for r in rec], float)
    out: dict[str, Any] = {
        "size": rec[0]["size"],
        "slaves": [int(k) for k in ks],
        "fanin_us": fan.tolist(),
        "send_round_us": [r["latency_us"] for r in snd],
    }
    if len(ks) >= 2:
        out["fanin_us_per_slave"] = float(np.polyfit(ks, fan, 1)[0])
        out["send_us_per_slave"] = float(np.polyfit(ks, [r["latency_us"] for r in snd], 1)[0])
    return out
