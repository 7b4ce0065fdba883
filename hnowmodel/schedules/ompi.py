"""Open MPI's own versions of algorithms MPICH runs differently, as message schedules: Rabenseifner's allreduce
(``ompi_coll_base_allreduce_intra_redscat_allgather``, ``ompi/mca/coll/base/coll_base_allreduce.c``, Open MPI
5.0.x), ported index for index. Open MPI's coll/tuned runs it as its allreduce algorithm 6 (``rabenseifner``), the
fixed rules' choice on 6 ranks from 256 KiB (:mod:`hnowmodel.libraries.openmpi.tuned`).

It differs from MPICH's (:func:`~hnowmodel.schedules.algorithms.rabenseifner_allreduce`) where the number of ranks
is not a power of two: Open MPI keeps the **even** ranks below ``2·rem`` (MPICH the odd ones), and its fold moves
halves (each pair swaps halves, then the odd rank sends its reduced half back) where MPICH's moves the whole
vector; and it halves the vector window by window (``wsize / 2`` elements to the lower rank), not in ``pof2`` blocks
of ``count / pof2``. On 6 ranks the ranks that go on are 0, 2, 4, 5 (MPICH: 1, 3, 4, 5).

>>> s = ompi_rabenseifner_allreduce(3, 64)
>>> [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist()) for st in s.steps]  # doctest: +NORMALIZE_WHITESPACE
[([0, 1], [1, 0], [32.0, 32.0]), ([1], [0], [32.0]), ([0, 2], [2, 0], [32.0, 32.0]),
 ([0, 2], [2, 0], [32.0, 32.0]), ([0], [1], [64.0])]
"""

from __future__ import annotations

import numpy as np

from .algorithms import BlockTrace, _at_least_pof2, _Builder, _count, _ranges, _ranks, _root, _size, pof2_below
from .steps import MessageSchedule

__all__ = ["ompi_rabenseifner_allreduce", "ompi_rabenseifner_reduce", "window_counts"]


def window_counts(count: int, levels: int) -> np.ndarray:
    """The element counts of the ``2**levels`` windows Open MPI's recursive halving leaves, left to right: each
    window of ``w`` elements split into ``w // 2`` and ``w - w // 2``, ``levels`` times.

    >>> window_counts(7, 2).tolist(), window_counts(8, 0).tolist()
    ([1, 2, 2, 2], [8])
    """
    w = np.array([count], dtype=np.int64)
    for _ in range(levels):
        w = np.stack([w // 2, w - w // 2], axis=1).reshape(-1)
    return w


def ompi_rabenseifner_allreduce(
    n: int, m: float, *, elem_bytes: int = 1, trace: BlockTrace | None = None
) -> MessageSchedule:
    """Open MPI's Rabenseifner allreduce (``redscat_allgather``) of an ``m``-byte vector of ``elem_bytes``-byte
    elements (a commutative op).

    ``pof2`` = the largest power of two <= n, ``rem = n - pof2``. Ranks below ``2·rem`` pair up (r, r + 1), r even:
    they swap halves (the even rank sends the right half, ``count - count // 2`` elements, the odd one the left,
    ``count // 2``; each reduces the half it got), then the odd rank sends its reduced right half to the even one
    and sits out. The even ones (new rank ``r // 2``) and the ranks from ``2·rem`` (new rank ``r - rem``) then run a
    reduce-scatter by recursive halving from distance 1 (the lower of the two new ranks keeps the left
    ``wsize // 2`` elements of its window, sends the rest, and reduces what it gets) and an allgather by recursive
    doubling back (each sends the window it holds). Last, each even rank below ``2·rem`` sends the whole result
    (``m`` bytes) to rank + 1. ``2·lg pof2`` steps, + 3 when n is not a power of two. Open MPI runs it only when
    the element count is at least ``pof2`` (else its basic linear allreduce): :class:`InputError` below that.

    >>> [st.nbytes.tolist() for st in ompi_rabenseifner_allreduce(2, 24, elem_bytes=8).steps]  # 3 doubles: 1 | 2
    [[16.0, 8.0], [8.0, 16.0]]
    """
    n, m = _ranks(n), _size(m)
    count = _count(m, elem_bytes)
    b, leaf, st = _fold_and_halve(n, m, count, elem_bytes, "ompi_rabenseifner_allreduce", "allreduce", trace)
    if n == 1:
        return b.schedule()
    pof2, rem, real, v, lo, width, cum = st
    half = pof2 // 2
    mask = half
    while mask > 0:  # allgather: each sends the window it holds, the two windows join
        nb = cum[lo + width] - cum[lo]
        b.add(real, real[v ^ mask], nb, carry=lambda i, a=lo, w=width: _ranges(a, a + w, pof2))
        lo = np.minimum(lo, lo[v ^ mask])
        width *= 2
        mask >>= 1
    if rem:
        ev = np.arange(0, 2 * rem, 2)
        b.add(ev, ev + 1, m, carry=lambda i: np.ones((rem, pof2), dtype=bool))
    return b.schedule()


def _fold_and_halve(n: int, m: float, count: int, elem_bytes: int, name: str, op: str, trace: BlockTrace | None):
    """The fold and the reduce-scatter by recursive halving that Open MPI's Rabenseifner allreduce and reduce share
    (``redscat_allgather``, ``redscat_gather``): the builder, the leaf windows' bytes and, past one rank, ``(pof2,
    rem, real rank of each new rank, new ranks, each one's window start and width in leaf windows, cumulated leaf
    bytes)``."""
    pof2 = pof2_below(n)
    rem = n - pof2
    _at_least_pof2(name, count, n, pof2, "Open MPI", f"its basic linear {op}")
    levels = pof2.bit_length() - 1
    leaf = (window_counts(count, levels) * elem_bytes).astype(float)
    cum = np.r_[0.0, np.cumsum(leaf)]
    b = _Builder(n, name, trace, leaf)
    if n == 1:
        return b, leaf, None
    half = pof2 // 2
    if rem:  # the pairs swap halves, then the odd rank hands its reduced right half to the even one
        r = np.arange(2 * rem)
        even = r % 2 == 0
        lo, hi = np.where(even, half, 0), np.where(even, pof2, half)
        b.add(r, r ^ 1, cum[hi] - cum[lo], cum[hi] - cum[lo], carry=lambda i: _ranges(lo, hi, pof2))
        od = np.arange(1, 2 * rem, 2)
        b.add(od, od - 1, cum[pof2] - cum[half], carry=lambda i: _ranges(np.full(rem, half), np.full(rem, pof2), pof2))
    v = np.arange(pof2)
    real = np.where(v < rem, 2 * v, v + rem)
    lo, width = np.zeros(pof2, dtype=np.int64), pof2
    mask = 1
    while mask < pof2:  # reduce-scatter: the lower keeps the left half of its window
        lower = v < (v ^ mask)
        width //= 2
        s_lo = np.where(lower, lo + width, lo)
        nb = cum[s_lo + width] - cum[s_lo]
        b.add(real, real[v ^ mask], nb, nb, carry=lambda i, a=s_lo, w=width: _ranges(a, a + w, pof2))
        lo = np.where(lower, lo, lo + width)
        mask <<= 1
    return b, leaf, (pof2, rem, real, v, lo, width, cum)


def ompi_rabenseifner_reduce(
    n: int, m: float, root: int = 0, *, elem_bytes: int = 1, trace: BlockTrace | None = None
) -> MessageSchedule:
    """Open MPI's Rabenseifner reduce (``ompi_coll_base_reduce_intra_redscat_gather``, coll/tuned's reduce 7) of an
    ``m``-byte vector of ``elem_bytes``-byte elements to ``root`` (a commutative op): the fold and the
    reduce-scatter of :func:`ompi_rabenseifner_allreduce` (the even ranks below ``2·rem`` go on), then a binomial
    gather of the windows to the root's new rank, in the reverse order of the halving (distance ``pof2 / 2`` down
    to 1: the rank whose partner lies in the root's half sends the window it holds and stops, the other receives;
    no reduction). A root among the odd ranks below ``2·rem`` first receives new rank 0's window from rank 0 and
    takes its place. ``2·lg pof2`` steps, + 2 when n is not a power of two, + 1 for such a root. Open MPI runs it
    only when the element count is at least ``pof2`` (else its basic linear reduce): :class:`InputError` below.

    >>> s = ompi_rabenseifner_reduce(3, 64)
    >>> [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist()) for st in s.steps]  # doctest: +NORMALIZE_WHITESPACE
    [([0, 1], [1, 0], [32.0, 32.0]), ([1], [0], [32.0]), ([0, 2], [2, 0], [32.0, 32.0]), ([2], [0], [32.0])]
    """
    n, m = _ranks(n), _size(m)
    root = _root(root, n)
    count = _count(m, elem_bytes)
    name = f"ompi_rabenseifner_reduce(root={root})" if root else "ompi_rabenseifner_reduce"
    b, leaf, st = _fold_and_halve(n, m, count, elem_bytes, name, "reduce", trace)
    if n == 1:
        return b.schedule()
    pof2, rem, real, v, lo, width, cum = st
    vroot = root // 2 if root < 2 * rem else root - rem
    if root < 2 * rem and root % 2:  # an odd root sat out: it takes new rank 0's window, and its place
        vroot, real = 0, np.where(v == 0, root, real)
        b.add([0], [root], cum[lo[0] + width] - cum[lo[0]], carry=lambda i: _ranges(lo[:1], lo[:1] + width, pof2))
    alive = np.ones(pof2, dtype=bool)
    mask = pof2 // 2
    while mask > 0:  # gather: the one whose partner is in the root's half (at this distance) sends and stops
        step_bits = mask.bit_length() - 1
        sends = alive & (((v ^ mask) >> step_bits) == (vroot >> step_bits))
        snd = v[sends]
        nb = cum[lo[snd] + width] - cum[lo[snd]]
        b.add(real[snd], real[snd ^ mask], nb, carry=lambda i, a=lo[snd], w=width: _ranges(a, a + w, pof2))
        alive &= ~sends
        lo = np.minimum(lo, lo[v ^ mask])
        width *= 2
        mask >>= 1
    return b.schedule()
