"""Host-side costs: ``overhead``, ``cpu-availability``, ``completion``.

* ``overhead`` (Liu et al. Fig. 6): time the host spends inside the send call and inside the receive call of a
  latency test. Send: rank 0 times its ``send`` (returns when the sender is free). Receive: rank 1 replies, rank 0
  first waits (sleeping) well past the message's arrival and then times its ``recv``, so only the receive's own
  work is counted, not the wait for the message. Both wall time (``*_us``) and this process's CPU time
  (``*_cpu_us``, ``time.thread_time``) are reported; on the emulated testbed the busy periods are mostly sleep, so
  there only the wall time means anything.
* ``cpu-availability``, two methods:
  ``polling`` (COMB, Brightwell et al. Fig. 10): both ranks compute in chunks of ``poll_us`` and between chunks
  poll (``MPI_Test``) for the peer's message, answering each arrival with a new one; after a fixed amount of
  computation, availability = computation time / elapsed time, and bandwidth = bytes received / elapsed.
  ``bandwidth-loop`` (Liu et al. Fig. 7): the windowed bandwidth test with a computation loop of ``compute_us``
  after each send; availability = computation / elapsed, and the bandwidth shows where computing starts to cost.
  On the testbed the transport has no ``Test``: each poll there exchanges one message each way (blocking), so
  availability = computation / (computation + emulated send and receive overheads).
* ``completion`` (Liu et al. Fig. 8): ping-pong where the receiver learns of completion by ``recv`` (the
  baseline, MPI_Recv), by ``test`` (Irecv then a busy MPI_Test loop), by ``wait`` (Irecv then MPI_Wait) and by
  ``test-sleep`` (MPI_Test between 50 µs sleeps: the cost of being woken up, the analogue of interrupt-driven
  blocking). ``added_us`` is the latency minus the ``recv`` baseline. On the testbed the transport's ``recv`` is
  the only mode (it polls with short sleeps internally); the other modes are not emulated.
"""

from __future__ import annotations

import time
from typing import Any

from hnowmodel.sizes import parse_sizes

from .common import TAG_DATA, TAG_DONE, Ctx, ratio, summarize
from .pointtopoint import _on_pair, iters_for, pingpong_sample, rate_fields, stream_sample, window_for

__all__ = ["overhead", "cpu_availability", "completion", "COMPLETION_MODES"]

COMPLETION_MODES = ("recv", "test", "wait", "test-sleep")


def _floats(text: str) -> list[float]:
    from hnowmodel.errors import InputError

    out = []
    for t in str(text).split(","):
        t = t.strip()
        if not t:
            continue
        try:
            v = float(t)
        except ValueError:
            raise InputError(f"expected a number, got {t!r} in {text!r}") from None
        if v < 0:
            raise InputError(f"expected a number >= 0, got {t!r} in {text!r}")
        out.append(v)
    return out


# ---- overhead -----------------------------------------------------------------------------------------------------
def _overhead_sample(ctx: Ctx, m: int, iters: int, delay_us: float) -> tuple[float, float, float, float]:
    tr = ctx.tr
    sbuf, rbuf = ctx.buffer(m), ctx.buffer(m, 0)
    ts = tc_s = trv = tc_r = 0.0
    for _ in range(iters):
        if ctx.rank == 0:
            c0, t0 = time.thread_time(), tr.now()
            tr.send(sbuf, 1, TAG_DATA)
            t1, c1 = tr.now(), time.thread_time()
            tr.idle(delay_us)  # the reply has arrived by now
            c2, t2 = time.thread_time(), tr.now()
            tr.recv(rbuf, 1, TAG_DATA)
            t3, c3 = tr.now(), time.thread_time()
            ts += t1 - t0
            trv += t3 - t2
            tc_s += (c1 - c0) * 1e6 / tr.time_scale
            tc_r += (c3 - c2) * 1e6 / tr.time_scale
        else:
            tr.recv(rbuf, 0, TAG_DATA)
            tr.send(sbuf, 0, TAG_DATA)
    return ts / iters, trv / iters, tc_s / iters, tc_r / iters


def overhead(ctx: Ctx) -> list[dict]:
    """Host time inside send and receive calls of a latency test, vs size."""

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in parse_sizes(ctx.opt("sizes", "0,64,1K,4K,16K,64K", "0,1K,4K", "0,1K")):
            it = max(1, iters_for(ctx, m) // 2)
            with ctx.rt.step(f"overhead {m} B"):
                lat = ctx.repeat(sub, lambda m=m, it=it: pingpong_sample(ctx, m, max(1, it // 4)))
                lat_us = sub.bcast(summarize(lat)["median_us"] if ctx.rank == 0 else None, root=0)
                delay = 3 * lat_us + 20.0  # generous: the reply must be in before the timed receive starts
                got: list[tuple[float, float, float, float]] = []

                def once(m=m, it=it, delay=delay, got=got) -> float:
                    got.append(_overhead_sample(ctx, m, it, delay))
                    return got[-1][0] + got[-1][1]

                ctx.repeat(sub, once)
            if ctx.rank == 0:
                got = got[1:]  # the warm-up sample
                s = summarize([g[0] for g in got])
                r = summarize([g[1] for g in got])
                rows.append(
                    {
                        "size": m,
                        "send_us": s["median_us"],
                        "recv_us": r["median_us"],
                        "send_cpu_us": float(sorted(g[2] for g in got)[len(got) // 2]),
                        "recv_cpu_us": float(sorted(g[3] for g in got)[len(got) // 2]),
                        "latency_us": lat_us,
                        "send_min_us": s["min_us"],
                        "send_max_us": s["max_us"],
                        "recv_min_us": r["min_us"],
                        "recv_max_us": r["max_us"],
                        "samples": s["samples"],
                    }
                )
        return rows

    return _on_pair(ctx, "overhead", body)


# ---- CPU availability ---------------------------------------------------------------------------------------------
def _polling_sample_raw(ctx: Ctx, m: int, poll_us: float, work_us: float) -> tuple[float, float]:
    """COMB polling method on raw MPI: returns (elapsed µs, bytes received)."""
    tr, MPI, raw, peer = ctx.tr, ctx.MPI, ctx.raw, 1 - ctx.rank
    sbuf, rbuf = ctx.buffer(m), ctx.buffer(m, 0)
    polls = max(1, int(round(work_us / poll_us))) if poll_us > 0 else 1
    sends = [raw.Isend(sbuf, peer, TAG_DATA)]
    rreq = raw.Irecv(rbuf, peer, TAG_DATA)
    got = 0
    t0 = tr.now()
    for _ in range(polls):
        tr.compute(poll_us)
        if rreq.Test():
            got += 1
            rreq = raw.Irecv(rbuf, peer, TAG_DATA)
            sends = [r for r in sends if not r.Test()]
            sends.append(raw.Isend(sbuf, peer, TAG_DATA))
    elapsed = tr.now() - t0
    # drain: each side receives everything the other sent (counts exchanged on the side)
    sent = got + 1
    peer_sent = raw.sendrecv(sent, peer, TAG_DONE, source=peer, recvtag=TAG_DONE)
    if peer_sent == got:  # everything the peer sent is in: the posted receive will never match
        rreq.Cancel()
        rreq.Wait()
    else:
        for _ in range(peer_sent - got - 1):
            rreq.Wait()
            rreq = raw.Irecv(rbuf, peer, TAG_DATA)
        rreq.Wait()
    MPI.Request.Waitall(sends)
    return elapsed, float(got * m)


def _polling_sample_transport(ctx: Ctx, m: int, poll_us: float, work_us: float) -> tuple[float, float]:
    tr, peer = ctx.tr, 1 - ctx.rank
    sbuf, rbuf = ctx.buffer(m), ctx.buffer(m, 0)
    polls = max(1, int(round(work_us / poll_us))) if poll_us > 0 else 1
    t0 = tr.now()
    for _ in range(polls):
        tr.compute(poll_us)
        if ctx.rank == 0:
            tr.send(sbuf, peer, TAG_DATA)
            tr.recv(rbuf, peer, TAG_DATA)
        else:
            tr.recv(rbuf, peer, TAG_DATA)
            tr.send(sbuf, peer, TAG_DATA)
    return tr.now() - t0, float(polls * m)


def cpu_availability(ctx: Ctx) -> list[dict]:
    """Share of the CPU left for computation while communicating: polling (COMB) and bandwidth-loop methods."""
    both = "polling,bandwidth-loop"
    methods = [x.strip() for x in str(ctx.opt("methods", both, both)).split(",")]
    from hnowmodel.errors import InputError

    for x in methods:
        if x not in ("polling", "bandwidth-loop"):
            raise InputError(f"--methods: unknown method {x!r} (choose from: polling, bandwidth-loop)")

    def body(sub: Any) -> list[dict]:
        rows = []
        if "polling" in methods:
            m = parse_sizes(ctx.opt("sizes", "100K", "1K", "1K"))[0]
            work = float(ctx.opt("work", 20000.0, 6000.0, 3000.0 if ctx.emulated else 2000.0))
            quick = "1000,3000" if ctx.emulated else "10,1000"
            for poll in _floats(ctx.opt("intervals", "1,10,100,1000", "300,1000,3000", quick)):
                res: list[tuple[float, float]] = []
                fn = _polling_sample_transport if ctx.emulated else _polling_sample_raw

                def once(poll=poll, m=m, res=res, fn=fn) -> float:
                    res.append(fn(ctx, m, poll, work))
                    return res[-1][0]

                with ctx.rt.step(f"cpu-availability polling {poll:g} us"):
                    sub.Barrier()
                    xs = ctx.repeat(sub, once)
                if ctx.rank == 0:
                    res = res[1:]
                    polls = max(1, int(round(work / poll)))
                    comp = polls * poll
                    el = sorted(r[0] for r in res)[len(res) // 2]
                    byts = sorted(r[1] for r in res)[len(res) // 2]
                    rows.append(
                        {
                            "method": "polling",
                            "size": m,
                            "poll_us": poll,
                            "availability_pct": 100.0 * comp / el,
                            "bandwidth_MBps": byts / el,
                            **summarize(xs),
                        }
                    )
        if "bandwidth-loop" in methods:
            m = parse_sizes(ctx.opt("sizes", "256K", "4K", "1K" if ctx.emulated else "16K"))[0]
            window = window_for(ctx)
            n = int(ctx.opt("count", 64, 16, 16))
            for c in _floats(ctx.opt("intervals", "0,10,30,100,300", "0,100,1000", "0,100")):
                with ctx.rt.step(f"cpu-availability bandwidth-loop {c:g} us"):
                    xs = ctx.repeat(sub, lambda c=c, m=m: stream_sample(ctx, m, n, window, c))
                t = summarize(xs)
                rows.append(
                    {
                        "method": "bandwidth-loop",
                        "size": m,
                        "compute_us": c,
                        "availability_pct": ratio(100.0 * n * c, t["median_us"]),
                        **rate_fields(xs, n * m),
                        **t,
                    }
                )
        return rows

    return _on_pair(ctx, "cpu-availability", body)


# ---- completion ---------------------------------------------------------------------------------------------------
def _completion_sample(ctx: Ctx, m: int, iters: int, mode: str) -> float:
    """Ping-pong on raw MPI where rank 0 learns of the reply's arrival by ``mode``; one-way µs."""
    tr, raw, peer = ctx.tr, ctx.raw, 1 - ctx.rank
    sbuf, rbuf = ctx.buffer(m), ctx.buffer(m, 0)
    if ctx.rank == 1:
        for _ in range(iters):
            raw.Recv(rbuf, peer, TAG_DATA)
            raw.Send(sbuf, peer, TAG_DATA)
        return 0.0
    t0 = tr.now()
    for _ in range(iters):
        if mode == "recv":
            raw.Send(sbuf, peer, TAG_DATA)
            raw.Recv(rbuf, peer, TAG_DATA)
            continue
        r = raw.Irecv(rbuf, peer, TAG_DATA)
        raw.Send(sbuf, peer, TAG_DATA)
        if mode == "wait":
            r.Wait()
        elif mode == "test":
            while not r.Test():
                pass
        else:  # test-sleep
            while not r.Test():
                time.sleep(50e-6)
    return (tr.now() - t0) / (2 * iters)


def completion(ctx: Ctx) -> list[dict]:
    """Added latency of learning completion by polling (Test) vs blocking (Wait), vs size."""
    modes = ["recv"] if ctx.emulated else list(COMPLETION_MODES)

    def body(sub: Any) -> list[dict]:
        rows = []
        for m in parse_sizes(ctx.opt("sizes", "0,1K,16K,64K", "0,1K", "0,1K")):
            base = None
            for mode in modes:
                it = iters_for(ctx, m)
                with ctx.rt.step(f"completion {mode} {m} B"):
                    if ctx.emulated:
                        xs = ctx.repeat(sub, lambda m=m, it=it: pingpong_sample(ctx, m, it))
                    else:
                        xs = ctx.repeat(sub, lambda m=m, it=it, mode=mode: _completion_sample(ctx, m, it, mode))
                t = summarize(xs)
                base = t["median_us"] if mode == "recv" else base
                rows.append(
                    {"size": m, "mode": mode, "latency_us": t["median_us"], "added_us": t["median_us"] - base, **t}
                )
        return rows

    return _on_pair(ctx, "completion", body)
