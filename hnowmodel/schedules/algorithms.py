"""The collective algorithms MPI libraries run, as message schedules (:mod:`hnowmodel.schedules.steps`): allgather
(ring, recursive doubling, Bruck), allreduce (recursive doubling, Rabenseifner's reduce-scatter + allgather, ring,
reduce then bcast), reduce-scatter (recursive halving), binomial reduce and bcast, each as MPICH runs it
(``src/mpi/coll/`` of MPICH 4: the steps, peers and byte counts of its ``MPIR_*_intra_*`` functions); the
alltoalls are in :mod:`hnowmodel.schedules.alltoall`.

Every generator takes the number of ranks ``n`` and a size ``m`` in bytes (what ``m`` is - a rank's block, the
whole vector - is in its docstring) and returns a :class:`~hnowmodel.schedules.steps.MessageSchedule`. The local
copies MPICH always makes are the steps' ``copy_bytes`` (copied at the step's start); the copy of a rank's input
into its output buffer that ``MPI_IN_PLACE`` skips is left out (the caller's choice). At ``m = 0`` MPICH returns
before any message; a schedule keeps its 0-byte messages (each costs the lines' constants: the model's latency, as
the tree predictors give it at 0 bytes). A generator given ``trace`` (a
:class:`BlockTrace`) also records which blocks each message carries, step by step: what the tests' symbolic
executor runs to prove that every rank ends up with the data the operation promises.

>>> s = ring_allgather(4, 1024)
>>> s.n_steps, s.bytes_sent().tolist()
(3, [3072.0, 3072.0, 3072.0, 3072.0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InputError
from .steps import MessageSchedule, Step, concat

__all__ = [
    "BlockTrace",
    "ring_allgather",
    "recursive_doubling_allgather",
    "bruck_allgather",
    "recursive_doubling_allreduce",
    "recursive_halving_reduce_scatter",
    "linear_reduce",
    "rabenseifner_allreduce",
    "ring_allreduce",
    "binomial_reduce",
    "binomial_bcast",
    "reduce_bcast_allreduce",
    "pof2_below",
]

Carry = Callable[[int], np.ndarray]


class BlockTrace:
    """Which blocks each message of a schedule carries, recorded by a generator for tests (a recorder the generator
    fills, hence not frozen): ``block_bytes[b]`` (bytes of block b; what the blocks are - ranks' contributions,
    chunks of a vector, (source, destination) pairs of an alltoall - is the generator's), and ``carries``: for
    each step as it runs (repeats unrolled), a boolean ``(messages, blocks)`` matrix in the step's message order.

    >>> tr = BlockTrace()
    >>> _ = ring_allgather(3, 8.0, trace=tr)
    >>> tr.block_bytes.tolist(), [np.flatnonzero(c[0]).tolist() for c in tr.carries]
    ([8.0, 8.0, 8.0], [[0], [2]])
    """

    def __init__(self) -> None:
        self.block_bytes: np.ndarray = np.zeros(0)
        self.carries: list[np.ndarray] = []


class _Builder:
    """Steps of one schedule, and their block trace when one is asked for (the carries computed only then)."""

    def __init__(self, n: int, name: str, trace: BlockTrace | None, block_bytes: Any) -> None:
        self.n, self.name, self.trace = n, name, trace
        self.steps: list[Step] = []
        self.pending: np.ndarray | None = None
        if trace is not None:
            trace.block_bytes = np.asarray(block_bytes, dtype=float).reshape(-1)
            trace.carries = []

    def add(self, src: Any, dst: Any, nbytes: Any, reduce_bytes: Any = 0.0, *, carry: Carry | None = None,
            waits: bool = True, repeat: int = 1, copy_bytes: Any = None, prepost: bool = False) -> None:  # fmt: skip
        """One step (``repeat`` times); ``carry(i)``: the blocks of its i-th repetition's messages. A copy left by
        :meth:`copy` is made at its start."""
        if self.pending is not None:
            copy_bytes = self.pending if copy_bytes is None else self.pending + copy_bytes
            self.pending = None
        step = Step.of(src, dst, nbytes, reduce_bytes, copy_bytes=copy_bytes, waits=waits, repeat=repeat,
                       prepost=prepost)  # fmt: skip
        self.steps.append(step)
        if self.trace is not None:
            nb = self.trace.block_bytes.size
            for i in range(repeat):
                c = np.zeros((step.n_messages, nb), dtype=bool) if carry is None else carry(i)
                self.trace.carries.append(np.asarray(c, dtype=bool).reshape(step.n_messages, nb))

    def copy(self, nbytes: Any) -> None:
        """Bytes each rank copies locally (one number, or one per rank) at the start of the next step added (a step
        of its own when none follows)."""
        got = np.broadcast_to(np.asarray(nbytes, dtype=float), (self.n,))
        self.pending = got.copy() if self.pending is None else self.pending + got

    def schedule(self) -> MessageSchedule:
        if self.pending is not None and self.pending.any():
            self.add([], [], 0.0)
        return MessageSchedule(self.n, tuple(self.steps), self.name)


def _ranks(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"number of ranks: must be a whole number >= 1, got {n!r}")
    return int(n)


def _size(m: Any) -> float:
    try:
        v = float(m)
    except (TypeError, ValueError):
        raise InputError(f"message size: must be a number of bytes, got {m!r}") from None
    if not np.isfinite(v) or v < 0:
        raise InputError(f"message size: must be a finite number of bytes >= 0, got {m!r}")
    return v


def _count(m: float, elem_bytes: Any) -> int:
    """The element count of an ``m``-byte vector of ``elem_bytes``-byte elements (MPICH splits counts, not bytes)."""
    if isinstance(elem_bytes, bool) or not isinstance(elem_bytes, (int, np.integer)) or elem_bytes < 1:
        raise InputError(f"elem_bytes: must be a whole number of bytes >= 1, got {elem_bytes!r}")
    count = m / elem_bytes
    if count != int(count):
        raise InputError(f"message size {m:g} bytes is not a whole number of {elem_bytes}-byte elements")
    return int(count)


def pof2_below(n: int) -> int:
    """The largest power of two <= ``n`` (MPICH's ``comm->pof2``).

    >>> [pof2_below(k) for k in (1, 2, 3, 7, 8, 9)]
    [1, 2, 2, 4, 8, 8]
    """
    return 1 << (int(n).bit_length() - 1)


def _at_least_pof2(name: str, count: int, n: int, pof2: int, library: str, below: str) -> None:
    """Refuse ``name`` on ``n`` ranks with fewer than ``pof2`` elements (:class:`InputError`): ``library`` runs it only
    from ``pof2`` elements on, and ``below`` (what it runs instead) under that."""
    if n > 1 and count < pof2:
        raise InputError(f"{name}: {count} elements on {n} ranks: {library} runs it only with at least {pof2} "
                         f"elements ({below} below that)")  # fmt: skip


def _rows(k: int, nb: int, rows: Any, cols: Any) -> np.ndarray:
    """A ``(k, nb)`` boolean matrix with True at ``(rows[i], cols[i])``."""
    out = np.zeros((k, nb), dtype=bool)
    out[np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)] = True
    return out


def _ranges(lo: np.ndarray, hi: np.ndarray, nb: int) -> np.ndarray:
    """A ``(len(lo), nb)`` boolean matrix, row i True on ``lo[i] <= b < hi[i]``."""
    b = np.arange(nb)
    return (b[None, :] >= lo[:, None]) & (b[None, :] < hi[:, None])


# ---- allgather ---------------------------------------------------------------------------------------------------
def ring_allgather(n: int, m: float, *, trace: BlockTrace | None = None, blocks: Any = None) -> MessageSchedule:
    """MPICH's ring allgather (``MPIR_Allgather_intra_ring``): ``n - 1`` steps, one step repeated, in which rank r
    sends ``m`` bytes (a rank's block) to ``(r + 1) % n``: first its own block, then the one it received last
    (each step waits for the previous receive). Every rank sends ``(n - 1)·m`` bytes. ``blocks`` (bytes, one per
    rank; None: ``m`` each): blocks of unequal sizes, rank r's block ``blocks[r]`` (the chunks of MPICH's scatter +
    ring allgather bcast, :mod:`hnowmodel.schedules.bcast`), then one step per ring step.

    >>> ring_allgather(3, 8.0).steps[0].repeat, ring_allgather(1, 8.0).n_steps
    (2, 0)
    >>> [s.nbytes.tolist() for s in ring_allgather(3, 0.0, blocks=[4, 2, 0]).steps]
    [[4.0, 2.0, 0.0], [0.0, 4.0, 2.0]]
    """
    n, m = _ranks(n), _size(m)
    bb = _block_bytes(n, m, blocks)
    b = _Builder(n, "ring_allgather", trace, bb)
    if n > 1 and blocks is None:
        r = np.arange(n)
        b.add(r, (r + 1) % n, m, carry=lambda i: _rows(n, n, r, (r - i) % n), repeat=n - 1)
    elif n > 1:  # the block each rank passes on changes size from step to step: one step each
        r = np.arange(n)
        for i in range(n - 1):
            b.add(r, (r + 1) % n, bb[(r - i) % n], carry=lambda _, i=i: _rows(n, n, r, (r - i) % n))
    return b.schedule()


def _block_bytes(n: int, m: float, blocks: Any) -> np.ndarray:
    """Each rank's block (bytes): ``m`` for every rank, or ``blocks`` (one finite number >= 0 per rank)."""
    if blocks is None:
        return np.full(n, m)
    bb = np.asarray(blocks, dtype=float)
    if bb.shape != (n,) or not np.all(np.isfinite(bb)) or np.any(bb < 0):
        raise InputError(f"blocks: one finite number of bytes >= 0 per rank ({n}), got {blocks!r}")
    return bb


def recursive_doubling_allgather(
    n: int, m: float, *, trace: BlockTrace | None = None, blocks: Any = None
) -> MessageSchedule:
    """MPICH's recursive-doubling allgather (``MPIR_Allgather_intra_recursive_doubling``), power-of-two ``n`` only:
    ``lg n`` steps; in step k rank r exchanges the ``2**k`` blocks of its subtree (``2**k·m`` bytes, ``m`` a rank's
    block) with ``r ^ 2**k``. For other ``n`` MPICH runs another algorithm (ring or Bruck): :class:`InputError`.

    >>> [int(s.nbytes[0]) for s in recursive_doubling_allgather(8, 10).steps]
    [10, 20, 40]
    >>> [s.nbytes.tolist() for s in recursive_doubling_allgather(4, 0.0, blocks=[3, 3, 2, 0]).steps]
    [[3.0, 3.0, 2.0, 0.0], [6.0, 6.0, 2.0, 2.0]]
    >>> recursive_doubling_allgather(6, 10)
    Traceback (most recent call last):
    ...
    hnowmodel.errors.InputError: recursive_doubling_allgather: 6 ranks is not a power of two (MPICH runs the ring \
or Bruck allgather then)
    """
    n, m = _ranks(n), _size(m)
    if n & (n - 1):
        raise InputError(f"recursive_doubling_allgather: {n} ranks is not a power of two (MPICH runs the ring or "
                         "Bruck allgather then)")  # fmt: skip
    bb = _block_bytes(n, m, blocks)
    b = _Builder(n, "recursive_doubling_allgather", trace, bb)
    upto = np.concatenate(([0.0], np.cumsum(bb)))  # bytes of the blocks before each rank's
    r = np.arange(n)
    mask = 1
    while mask < n:
        lo = (r // mask) * mask
        nbytes = mask * m if blocks is None else upto[lo + mask] - upto[lo]
        b.add(r, r ^ mask, nbytes, carry=lambda i, lo=lo, mask=mask: _ranges(lo, lo + mask, n))
        mask <<= 1
    return b.schedule()


def bruck_allgather(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """MPICH's Bruck allgather (``MPIR_Allgather_intra_brucks``): the rank copies its own block (``m`` bytes) to
    the top of a buffer, then ``ceil(lg n)`` steps: in step k (``d = 2**k``) rank r sends the first
    ``min(d, n - d)`` blocks it holds (its own and the ones after it, ``m`` bytes each) to ``(r - d) % n`` and
    receives as many from ``(r + d) % n``; last, a step without messages rotates the ``n`` blocks into place (a copy
    of ``n·m`` bytes). Every rank sends ``(n - 1)·m`` bytes; ``ceil(lg n) + 1`` steps.

    >>> s = bruck_allgather(6, 1)
    >>> [st.nbytes.tolist()[:1] for st in s.steps], s.steps[0].copy_bytes[0], s.steps[-1].copy_bytes[0]
    ([[1.0], [2.0], [2.0], []], np.float64(1.0), np.float64(6.0))
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "bruck_allgather", trace, np.full(n, m))
    r = np.arange(n)
    b.copy(m)
    d = 1
    while d < n:
        cnt = min(d, n - d)
        carry = lambda i, cnt=cnt: _rows(n, n, np.repeat(r, cnt), (r[:, None] + np.arange(cnt)).reshape(-1) % n)  # noqa: E731
        b.add(r, (r - d) % n, cnt * m, carry=carry)
        d <<= 1
    b.copy(n * m)
    return b.schedule()


# ---- reductions over a power of two, with MPICH's pre- and post-step --------------------------------------------
def _fold(n: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """MPICH's non-power-of-two fold: ``pof2``, ``rem``, the real rank of each new rank (``0..pof2-1``) and the new
    rank of each real rank (-1: an even rank below ``2·rem``, which sits out)."""
    pof2 = pof2_below(n)
    rem = n - pof2
    nr = np.arange(pof2)
    real = np.where(nr < rem, 2 * nr + 1, nr + rem)
    new = np.full(n, -1, dtype=np.int64)
    new[real] = nr
    return pof2, rem, real, new


def _pre_step(b: _Builder, rem: int, nbytes: float, nb: int) -> None:
    """Even ranks below ``2·rem`` send everything (``nbytes``, all ``nb`` blocks) to rank + 1, which reduces it."""
    if rem:
        ev = np.arange(0, 2 * rem, 2)
        b.add(ev, ev + 1, nbytes, nbytes, carry=lambda i: np.ones((ev.size, nb), dtype=bool))


def _post_step(b: _Builder, rem: int, nbytes: Any, carry: Carry) -> None:
    """Odd ranks below ``2·rem`` send the result back to rank - 1."""
    if rem:
        od = np.arange(1, 2 * rem, 2)
        b.add(od, od - 1, nbytes, carry=carry)


def recursive_doubling_allreduce(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """MPICH's recursive-doubling allreduce (``MPIR_Allreduce_intra_recursive_doubling``) of an ``m``-byte vector.

    ``pof2`` = the largest power of two <= n, ``rem = n - pof2``. Ranks below ``2·rem``: the even ones send their
    vector to rank + 1 (which reduces it) and sit out; the ``pof2`` others (new rank ``r // 2`` for the odd ones,
    ``r - rem`` above) exchange ``m`` bytes with new rank ``newrank ^ mask`` for mask = 1, 2, 4, … (each reducing
    ``m``); then each odd rank below ``2·rem`` sends the result back to rank - 1. ``lg pof2`` steps, + 2 when n is
    not a power of two.

    >>> s = recursive_doubling_allreduce(3, 8)
    >>> [(s.src.tolist(), s.dst.tolist()) for s in s.steps]
    [([0], [1]), ([1, 2], [2, 1]), ([1], [0])]
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "recursive_doubling_allreduce", trace, [m])
    pof2, rem, real, _ = _fold(n)
    _pre_step(b, rem, m, 1)
    nr = np.arange(pof2)
    mask = 1
    while mask < pof2:
        b.add(real, real[nr ^ mask], m, m, carry=lambda i: np.ones((pof2, 1), dtype=bool))
        mask <<= 1
    _post_step(b, rem, m, lambda i: np.ones((rem, 1), dtype=bool))
    return b.schedule()


def recursive_halving_reduce_scatter(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """MPICH's recursive-halving reduce-scatter for a commutative op (``MPIR_Reduce_scatter_intra_recursive_
    halving``): every rank contributes ``n`` blocks of ``m`` bytes and ends with the reduction of its own block.

    Non-power-of-two: the even ranks below ``2·rem`` first send their whole ``n·m`` bytes to rank + 1 (which reduces
    them and takes over their block: new block i covers blocks ``2i`` and ``2i + 1`` for ``i < rem``). Then
    ``lg pof2`` halving steps, from distance ``pof2 / 2`` down to 1: each rank sends the half of its current range
    of new blocks that its partner keeps, and reduces the half it keeps. Last, each odd rank below ``2·rem`` sends
    rank - 1 its ``m``-byte block. Every rank of a power of two sends ``(n - 1)·m`` bytes. Copies: every rank's
    ``n·m`` bytes into a work buffer first, and each rank of the ``pof2`` its result (``m``) before the post-step
    (a step of its own for a power of two).

    >>> [(s.nbytes.tolist(), s.copy_bytes.tolist()) for s in recursive_halving_reduce_scatter(2, 1).steps]
    [([1.0, 1.0], [2.0, 2.0]), ([], [1.0, 1.0])]
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "recursive_halving_reduce_scatter", trace, np.full(n, m))
    pof2, rem, real, _ = _fold(n)
    b.copy(n * m)
    _pre_step(b, rem, n * m, n)
    idx = np.arange(pof2)
    ncov = np.where(idx < rem, 2, 1)
    cum = np.r_[0, np.cumsum(ncov)]  # new blocks [i, j) cover real blocks [cum[i], cum[j])
    nr = np.arange(pof2)
    lo = np.zeros(pof2, dtype=np.int64)  # each new rank's range of new blocks: [lo, lo + 2·mask)
    mask = pof2 >> 1
    while mask > 0:
        lower = nr < (nr ^ mask)
        s_lo = np.where(lower, lo + mask, lo)  # the half the partner keeps
        bl, bh = cum[s_lo], cum[s_lo + mask]
        b.add(real, real[nr ^ mask], (bh - bl) * m, (bh - bl) * m, carry=lambda i, bl=bl, bh=bh: _ranges(bl, bh, n))
        lo = np.where(lower, lo, lo + mask)
        mask >>= 1
    od = np.arange(1, 2 * rem, 2)
    b.copy(np.where(np.isin(np.arange(n), real), m, 0.0))
    _post_step(b, rem, m, lambda i: _rows(rem, n, np.arange(rem), od - 1))
    return b.schedule()


def _rabenseifner_counts(count: int, pof2: int) -> np.ndarray:
    """MPICH's split of ``count`` elements over ``pof2`` ranks: ``count // pof2`` each, one more for the first
    ``count % pof2``."""
    cnts = np.full(pof2, count // pof2, dtype=np.int64)
    cnts[: count % pof2] += 1
    return cnts


def rabenseifner_allreduce(
    n: int, m: float, *, elem_bytes: int = 1, trace: BlockTrace | None = None
) -> MessageSchedule:
    """MPICH's reduce-scatter + allgather allreduce (Rabenseifner's; ``MPIR_Allreduce_intra_reduce_scatter_
    allgather``) of an ``m``-byte vector of ``elem_bytes``-byte elements.

    The non-power-of-two pre-step of :func:`recursive_doubling_allreduce` (``m`` bytes to rank + 1, reduced), then
    over the ``pof2`` remaining ranks a reduce-scatter by recursive halving from distance 1 (each step sends the
    half of the current range its partner keeps and reduces the other half) and an allgather by recursive doubling
    back (the same ranges the other way, not reduced), the vector split in ``pof2`` blocks as MPICH splits it
    (``count // pof2`` elements each, one more for the first ``count % pof2``); then the post-step (``m`` bytes back
    to rank - 1). ``2·lg pof2`` steps, + 2 when n is not a power of two. MPICH runs it only when the element count
    is at least ``pof2``: :class:`InputError` below that.

    >>> [s.nbytes.tolist() for s in rabenseifner_allreduce(4, 8).steps]
    [[4.0, 4.0, 4.0, 4.0], [2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0], [4.0, 4.0, 4.0, 4.0]]
    """
    n, m = _ranks(n), _size(m)
    count = _count(m, elem_bytes)
    pof2, rem, real, _ = _fold(n)
    _at_least_pof2("rabenseifner_allreduce", count, n, pof2, "MPICH", "it runs recursive doubling")
    cnts = _rabenseifner_counts(count, pof2) * elem_bytes
    cum = np.r_[0, np.cumsum(cnts)].astype(float)
    b = _Builder(n, "rabenseifner_allreduce", trace, cnts)
    _pre_step(b, rem, m, pof2)
    nr = np.arange(pof2)
    dst = lambda mask: real[nr ^ mask]  # noqa: E731
    si = np.zeros(pof2, dtype=np.int64)  # MPICH's send_idx, recv_idx, last_idx, per new rank
    ri = np.zeros(pof2, dtype=np.int64)
    li = np.full(pof2, pof2, dtype=np.int64)
    mask = 1
    while mask < pof2:  # reduce-scatter, ported index for index
        lower = nr < (nr ^ mask)
        half = pof2 // (mask * 2)
        si = np.where(lower, ri + half, si)
        ri = np.where(lower, ri, si + half)
        s_lo, s_hi = np.where(lower, si, si), np.where(lower, li, ri)
        nbytes = cum[s_hi] - cum[s_lo]
        b.add(real, dst(mask), nbytes, nbytes, carry=lambda i, a=s_lo, z=s_hi: _ranges(a, z, pof2))
        si = ri
        mask <<= 1
        if mask < pof2:
            li = ri + pof2 // mask
    mask >>= 1
    while mask > 0:  # allgather
        lower = nr < (nr ^ mask)
        half = pof2 // (mask * 2)
        if mask != pof2 // 2:
            li = np.where(lower, li + half, li)
        ri = np.where(lower, si + half, si - half)
        s_lo, s_hi = si, np.where(lower, ri, li)
        b.add(real, dst(mask), cum[s_hi] - cum[s_lo], carry=lambda i, a=s_lo, z=s_hi: _ranges(a, z, pof2))
        si = np.where(lower, si, ri)
        mask >>= 1
    _post_step(b, rem, m, lambda i: np.ones((rem, pof2), dtype=bool))
    return b.schedule()


def _ring_counts(count: int, n: int) -> np.ndarray:
    """MPICH's ring split of ``count`` elements over ``n`` chunks: ``ceil(count / n)`` each while they fit, the
    rest in the next chunk, none after."""
    per = -(-count // n)
    start = np.minimum(np.arange(n) * per, count)
    return np.minimum(start + per, count) - start


def ring_allreduce(
    n: int, m: float, *, elem_bytes: int = 1, intel: bool = False, trace: BlockTrace | None = None
) -> MessageSchedule:
    """MPICH's ring allreduce (``MPIR_Allreduce_intra_ring``) of an ``m``-byte vector of ``elem_bytes``-byte
    elements, cut in ``n`` chunks (``ceil(count / n)`` elements each while they fit, the rest in the next, none
    after: ``m / n`` bytes each when n divides the count).

    A reduce-scatter ring of ``n - 1`` steps (in step i rank r sends chunk ``(r - 1 - i) % n`` to ``r + 1`` and
    reduces the chunk ``(r - 2 - i) % n`` it receives from ``r - 1``; a chunk of 0 elements is still a message),
    then the allgather ring of ``MPIR_Allgatherv_intra_ring``: ``n - 1`` steps in which rank r passes chunk
    ``(r - i) % n`` on to ``r + 1`` (an empty chunk is not sent). Equal chunks make each phase one repeated step.
    Not modelled: the allgatherv's pipelining of chunks above ``MPIR_CVAR_ALLGATHERV_PIPELINE_MSG_SIZE`` when the
    chunks differ (only then does it cut them).

    ``intel``: Intel MPI's ring, as its default runs it on 6 ranks at 64 KiB (read off the wire): ``count // n``
    elements a chunk, the rest in the last, and every chunk index one higher (rank r sends chunk ``(r - i) % n``,
    then passes ``(r + 1 - i) % n``).

    >>> s = ring_allreduce(4, 4096)
    >>> [(st.repeat, float(st.nbytes[0])) for st in s.steps], s.bytes_sent().tolist()[0]
    ([(3, 1024.0), (3, 1024.0)], 6144.0)
    >>> ring_allreduce(3, 56, elem_bytes=8, intel=True).bytes_sent().tolist()
    [72.0, 72.0, 80.0]
    """
    n, m = _ranks(n), _size(m)
    count = _count(m, elem_bytes)
    counts = np.r_[[count // n] * (n - 1), count - (n - 1) * (count // n)] if intel else _ring_counts(count, n)
    chunk = (counts * elem_bytes).astype(float)
    b = _Builder(n, "ring_allreduce", trace, chunk)
    if n == 1:
        return b.schedule()
    r = np.arange(n)
    right = (r + 1) % n
    own = int(intel)  # Intel MPI's chunk indices: one higher

    def carry(shift: int) -> Carry:
        return lambda i: _rows(n, n, r, (r - shift - i) % n)

    equal = bool(np.all(chunk == chunk[0]))
    if equal:
        b.add(r, right, chunk[0], chunk[0], carry=carry(1 - own), repeat=n - 1)
        b.add(r, right, chunk[0], carry=carry(-own), repeat=n - 1)
        return b.schedule()
    for i in range(n - 1):
        c = chunk[(r - 1 - i + own) % n]
        b.add(r, right, c, c, carry=lambda _, i=i: carry(1 - own)(i))
    for i in range(n - 1):
        c = chunk[(r - i + own) % n]
        keep = c > 0
        b.add(r[keep], right[keep], c[keep], carry=lambda _, i=i, keep=keep: carry(-own)(i)[keep])
    return b.schedule()


# ---- binomial reduce and bcast ----------------------------------------------------------------------------------
def binomial_reduce(
    n: int, m: float, root: int = 0, *, trace: BlockTrace | None = None, prepost: bool = False
) -> MessageSchedule:
    """MPICH's binomial reduce (``MPIR_Reduce_intra_binomial``, a commutative op) of an ``m``-byte vector to
    ``root``: on relative ranks ``rel = (r - root) % n``, for mask = 1, 2, 4, …: a rank with ``rel & mask`` sends
    its (partly reduced) vector to ``rel - mask`` and stops; the others receive from ``rel + mask`` (if < n) and
    reduce ``m`` bytes. ``ceil(lg n)`` steps; every rank but the root sends ``m`` bytes once. A rank other than the
    root first copies its input (``m`` bytes) into its work buffer (MPICH does, ``MPI_IN_PLACE`` or not).

    ``prepost``: Open MPI's binomial reduce (``ompi_coll_base_reduce_generic`` over its in-order binomial tree, the
    same messages in the same order, one segment): it posts the next child's receive before it waits for the
    current one's (two receives posted, ``Step.prepost``), so a rendezvous vector from the next child flows beside
    the current one; MPICH receives one child after another.

    >>> [(s.src.tolist(), s.dst.tolist()) for s in binomial_reduce(4, 8).steps]
    [([1, 3], [0, 2]), ([2], [0])]
    """
    n, m = _ranks(n), _size(m)
    root = _root(root, n)
    b = _Builder(n, f"binomial_reduce(root={root})" if root else "binomial_reduce", trace, [m])
    rel = np.arange(n)
    b.copy(np.where((rel - root) % n > 0, m, 0.0))
    mask = 1
    while mask < n:
        snd = rel[(rel & mask).astype(bool) & ((rel & (mask - 1)) == 0)]
        src, dst = (snd + root) % n, (snd - mask + root) % n
        b.add(src, dst, m, m, carry=lambda i, k=snd.size: np.ones((k, 1), dtype=bool), prepost=prepost)
        mask <<= 1
    return b.schedule()


def linear_reduce(n: int, m: float, root: int = 0, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """Open MPI's linear reduce (``ompi_coll_base_reduce_intra_basic_linear``) of an ``m``-byte vector to ``root``:
    every other rank sends its vector (``m`` bytes, a blocking send) to the root, which receives them one at a time
    from rank n-1 down to rank 0 (blocking receives) and reduces each. ``n - 1`` steps of one message each. The
    root receives the first vector into its result buffer and reduces its own vector in turn instead: the same
    ``(n - 1)·m`` bytes reduced, each here with the message that precedes it (so its own last reduction, when the
    root is rank 0, is taken with the message from rank 1).

    >>> [(s.src.tolist(), s.dst.tolist(), s.reduce_bytes.tolist()) for s in linear_reduce(4, 8, root=1).steps]
    [([3], [1], [8.0]), ([2], [1], [8.0]), ([0], [1], [8.0])]
    """
    n, m = _ranks(n), _size(m)
    root = _root(root, n)
    b = _Builder(n, f"linear_reduce(root={root})" if root else "linear_reduce", trace, [m])
    for r in range(n - 1, -1, -1):
        if r != root:
            b.add([r], [root], m, m, carry=lambda i: np.ones((1, 1), dtype=bool))
    return b.schedule()


def binomial_bcast(n: int, m: float, root: int = 0, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """MPICH's binomial bcast (``MPIR_Bcast_intra_binomial``) of ``m`` bytes from ``root``: on relative ranks, for
    mask = ``2**(ceil(lg n) - 1)`` down to 1, every rank that holds the message (``rel % (2·mask) == 0``) sends it to
    ``rel + mask`` if < n. ``ceil(lg n)`` steps; the same sends, in the same order per rank, as
    ``from_tree(binomial(n, root), m)``.

    >>> [(s.src.tolist(), s.dst.tolist()) for s in binomial_bcast(4, 8).steps]
    [([0], [2]), ([0, 2], [1, 3])]
    """
    n, m = _ranks(n), _size(m)
    root = _root(root, n)
    b = _Builder(n, f"binomial_bcast(root={root})" if root else "binomial_bcast", trace, [m])
    rel = np.arange(n)
    mask = pof2_below(n - 1) if n > 1 else 0
    while mask > 0:
        snd = rel[(rel % (2 * mask) == 0) & (rel + mask < n)]
        b.add((snd + root) % n, (snd + mask + root) % n, m, carry=lambda i, k=snd.size: np.ones((k, 1), dtype=bool))
        mask >>= 1
    return b.schedule()


def _root(root: Any, n: int) -> int:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < n:
        raise InputError(f"root: must be a rank in 0..{n - 1}, got {root!r}")
    return int(root)


def reduce_bcast_allreduce(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """Allreduce as a binomial reduce to rank 0 followed by a binomial bcast from it (MPICH's allreduce for
    non-commutative or user-defined ops, and the intra-host part of its ``smp`` allreduce):
    ``concat(binomial_reduce(n, m), binomial_bcast(n, m))``, ``2·ceil(lg n)`` steps.

    >>> reduce_bcast_allreduce(5, 8).n_steps
    6
    """
    red = binomial_reduce(n, m, trace=trace)
    carries = list(trace.carries) if trace is not None else []
    bc = binomial_bcast(n, m, trace=trace)
    if trace is not None:
        trace.carries = carries + trace.carries
    return concat("reduce_bcast_allreduce", red, bc)
