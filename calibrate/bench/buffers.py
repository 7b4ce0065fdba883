"""``buffer-reuse`` (Liu et al. Fig. 9-10): latency and bandwidth when the application's buffers change.

Two patterns: ``fifo`` - N buffers of the same size used in FIFO order (``--buffers N[,N...]``), message i uses
buffer ``i mod N``; ``percent`` - of the messages of a sample, a share R (``--reuse R[,R...]``, percent) reuse one
buffer and all the others use a buffer of their own. Each pattern runs the ping-pong latency test (``size``,
default 4 KiB as in Fig. 10a) and the windowed bandwidth test (default 256 KiB; the paper used 512 KiB).

On NICs that translate or register user addresses, new buffers cost (registration, address-translation cache
misses). Here MPI runs over shared memory with copies, so the only effect left is the CPU cache; on the emulated
testbed the cost model has no notion of addresses, so no effect is expected there at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hnowmodel.sizes import parse_sizes

from .common import Ctx, summarize
from .pointtopoint import _on_pair, iters_for, pingpong_sample, rate_fields, stream_sample

__all__ = ["buffer_reuse", "reuse_pattern"]


def reuse_pattern(n: int, reuse_pct: float) -> list[int]:
    """Buffer index of each of ``n`` messages: index 0 is the shared buffer; a share ``reuse_pct`` of the
    messages (spread evenly) use it, every other message gets a buffer of its own.

    >>> reuse_pattern(4, 50)
    [1, 0, 2, 0]
    """
    out, fresh = [], 1
    for i in range(n):
        if int((i + 1) * reuse_pct / 100.0) > int(i * reuse_pct / 100.0):
            out.append(0)
        else:
            out.append(fresh)
            fresh += 1
    return out


def _ints(text: str, what: str) -> list[int]:
    from hnowmodel.errors import InputError

    try:
        out = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--{what}: expected whole numbers, got {text!r}") from None
    if not out:
        raise InputError(f"--{what}: give at least one value")
    return out


def buffer_reuse(ctx: Ctx) -> list[dict]:
    from hnowmodel.errors import InputError

    nbufs = _ints(ctx.opt("buffers", "1,4,16,64", "1,8", "1,8"), "buffers")
    reuse = _ints(ctx.opt("reuse", "100,50,0", "100,0", "100,0"), "reuse")
    if any(n < 1 for n in nbufs):
        raise InputError(f"--buffers: each N must be >= 1, got {nbufs}")
    if any(r < 0 or r > 100 for r in reuse):
        raise InputError(f"--reuse: each R must be a percentage 0..100, got {reuse}")
    sizes = parse_sizes(ctx.opt("sizes", "4K,256K", "1K,4K", "1K,4K"))
    m_lat, m_bw = sizes[0], sizes[-1]
    window = int(ctx.opt("window", 16, 8, 4))
    count = int(ctx.opt("count", 64, 16, 8))

    def run(pattern: str, value: int, index: list[int] | None, nb: int) -> list[dict]:
        rows = []
        for test, m in (("latency", m_lat), ("bandwidth", m_bw)):
            it = iters_for(ctx, m) if test == "latency" else count
            idx = index if index is not None else [i % nb for i in range(it)]
            if index is not None and test == "latency":
                idx = reuse_pattern(it, value)
            bufs_s = [np.full(m, 1, np.uint8) for _ in range(max(idx) + 1)]
            bufs_r = [np.zeros(m, np.uint8) for _ in range(max(idx) + 1)]

            def sb(i: int, idx=idx, b=bufs_s) -> np.ndarray:
                return b[idx[i % len(idx)]]

            def rb(i: int, idx=idx, b=bufs_r) -> np.ndarray:
                return b[idx[i % len(idx)]]

            with ctx.rt.step(f"buffer-reuse {pattern} {value} {test}"):
                if test == "latency":
                    xs = ctx.repeat(sub_, lambda m=m, it=it: pingpong_sample(ctx, m, it, sb, rb))
                    t = summarize(xs)
                    rows.append(
                        {
                            "pattern": pattern,
                            pattern_key[pattern]: value,
                            "test": test,
                            "size": m,
                            "latency_us": t["median_us"],
                            **t,
                        }
                    )
                else:
                    xs = ctx.repeat(sub_, lambda m=m: stream_sample(ctx, m, count, window, 0.0, sb, rb))
                    rows.append(
                        {
                            "pattern": pattern,
                            pattern_key[pattern]: value,
                            "test": test,
                            "size": m,
                            **rate_fields(xs, count * m),
                            **summarize(xs),
                        }
                    )
        return rows

    pattern_key = {"fifo": "buffers", "percent": "reuse_pct"}
    sub_: Any = None

    def body(sub: Any) -> list[dict]:
        nonlocal sub_
        sub_ = sub
        rows: list[dict] = []
        for nb in nbufs:
            rows += run("fifo", nb, None, nb)
        for r in reuse:
            rows += run("percent", r, reuse_pattern(count, r), 0)
        return rows

    return _on_pair(ctx, "buffer-reuse", body)
