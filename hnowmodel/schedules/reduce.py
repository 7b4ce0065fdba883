"""MPICH's reductions for long vectors as message schedules: Rabenseifner's reduce-scatter + gather reduce
(``MPIR_Reduce_intra_reduce_scatter_gather``, ``src/mpi/coll/reduce/reduce_intra_reduce_scatter_gather.c``), the
algorithm MPICH's default selection runs for a commutative built-in op above 2048 bytes when the element count is at
least the largest power of two <= p (:mod:`hnowmodel.libraries.mpich.defaults`), and the pairwise reduce-scatter
(:func:`pairwise_reduce_scatter`), its default reduce-scatter from 512 KiB in all.

>>> s = rabenseifner_reduce(4, 64)
>>> [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist()) for st in s.steps]  # doctest: +NORMALIZE_WHITESPACE
[([0, 1, 2, 3], [1, 0, 3, 2], [32.0, 32.0, 32.0, 32.0]),
 ([0, 1, 2, 3], [2, 3, 0, 1], [16.0, 16.0, 16.0, 16.0]),
 ([2, 3], [0, 1], [16.0, 16.0]),
 ([1], [0], [32.0])]
"""

from __future__ import annotations

import numpy as np

from .algorithms import (
    BlockTrace,
    _at_least_pof2,
    _Builder,
    _count,
    _rabenseifner_counts,
    _ranges,
    _ranks,
    _root,
    _rows,
    _size,
    pof2_below,
)
from .steps import MessageSchedule

__all__ = ["rabenseifner_reduce", "pairwise_reduce_scatter"]


def rabenseifner_reduce(
    n: int, m: float, root: int = 0, *, elem_bytes: int = 1, trace: BlockTrace | None = None
) -> MessageSchedule:
    """MPICH's reduce-scatter + gather reduce (Rabenseifner's) of an ``m``-byte vector of ``elem_bytes``-byte
    elements to ``root``, a commutative op, ported index for index.

    Every rank but the root first copies its vector (``m`` bytes) into its work buffer. ``pof2`` = the largest power
    of two <= n, ``rem = n - pof2``: the odd ranks below ``2·rem`` send their vector to rank - 1, which reduces it
    (the opposite of the allreduce's fold: the even ranks stay, new rank ``r // 2``; ``r - rem`` above); then over
    the ``pof2`` ranks a reduce-scatter by recursive halving from distance 1 (each sends the half of its current
    range its partner keeps and reduces the half it keeps; the vector in ``pof2`` blocks as MPICH splits it,
    ``count // pof2`` elements each, one more for the first ``count % pof2``), and a binomial gather of the blocks
    to the root's new rank (distance ``pof2 / 2`` down to 1: the rank whose partner lies in the root's half sends
    what it holds and stops, the other receives; no reduction). A root among the odd ranks below ``2·rem`` first
    receives block 0 from rank 0 and takes new rank 0's place in the gather. ``2·lg pof2`` steps, + 1 (the fold)
    when n is not a power of two, + 1 for such a root. MPICH runs it only when the element count is at least
    ``pof2``: :class:`InputError` below that.

    >>> rabenseifner_reduce(3, 32, elem_bytes=8).n_steps, rabenseifner_reduce(3, 32, root=1).n_steps
    (3, 4)
    """
    n, m = _ranks(n), _size(m)
    root = _root(root, n)
    count = _count(m, elem_bytes)
    pof2 = pof2_below(n)
    rem = n - pof2
    _at_least_pof2("rabenseifner_reduce", count, n, pof2, "MPICH", "it runs the binomial reduce")
    cnts = _rabenseifner_counts(count, pof2) * elem_bytes
    cum = np.r_[0, np.cumsum(cnts)].astype(float)
    b = _Builder(n, f"rabenseifner_reduce(root={root})" if root else "rabenseifner_reduce", trace, cnts)
    b.copy(np.where(np.arange(n) != root, m, 0.0))
    if n == 1:
        return b.schedule()
    if rem:  # the odd ranks below 2·rem hand their vector to rank - 1
        od = np.arange(1, 2 * rem, 2)
        b.add(od, od - 1, m, m, carry=lambda i: np.ones((od.size, pof2), dtype=bool))
    nr = np.arange(pof2)
    real = np.where(nr < rem, 2 * nr, nr + rem)
    si, li = _reduce_scatter(b, real, cum)
    if root < 2 * rem and root % 2:  # new rank 0 hands block 0 to the root, which takes its place
        b.add([0], [root], cum[1], carry=lambda i: _ranges(np.array([0]), np.array([1]), pof2))
        real = real.copy()
        real[0] = root
        newroot = 0
    else:
        newroot = root // 2 if root < 2 * rem else root - rem
    _gather(b, real, cum, si, li, newroot)
    return b.schedule()


def _reduce_scatter(b: _Builder, real: np.ndarray, cum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The recursive halving over the ``pof2`` new ranks (``real``: each one's rank), MPICH's ``send_idx``,
    ``recv_idx`` and ``last_idx`` per new rank; returns ``send_idx`` and ``last_idx`` as the gather takes them."""
    pof2 = real.size
    nr = np.arange(pof2)
    si = np.zeros(pof2, dtype=np.int64)
    ri = np.zeros(pof2, dtype=np.int64)
    li = np.full(pof2, pof2, dtype=np.int64)
    mask = 1
    while mask < pof2:
        lower = nr < (nr ^ mask)
        half = pof2 // (mask * 2)
        si = np.where(lower, ri + half, si)
        ri = np.where(lower, ri, si + half)
        s_lo, s_hi = si, np.where(lower, li, ri)
        nbytes = cum[s_hi] - cum[s_lo]
        b.add(real, real[nr ^ mask], nbytes, nbytes, carry=lambda i, a=s_lo, z=s_hi: _ranges(a, z, pof2))
        si = ri
        mask <<= 1
        if mask < pof2:
            li = ri + pof2 // mask
    return si, li


def _gather(b: _Builder, real: np.ndarray, cum: np.ndarray, si: np.ndarray, li: np.ndarray, newroot: int) -> None:
    """The binomial gather of the reduced blocks to new rank ``newroot``, from distance ``pof2 / 2`` down to 1."""
    pof2 = real.size
    nr = np.arange(pof2)
    live = np.ones(pof2, dtype=bool)
    j = pof2.bit_length() - 2
    mask = pof2 >> 1
    while mask > 0:
        newdst = nr ^ mask
        lower = nr < newdst
        half = pof2 // (mask * 2)
        if mask != pof2 // 2:
            li = np.where(lower, li + half, li)
        ri = np.where(lower, si + half, si - half)
        sends = live & ((newdst >> j) == (newroot >> j))  # the partner is in the root's half: send and stop
        s_lo, s_hi = si[sends], np.where(lower, ri, li)[sends]
        nbytes = cum[s_hi] - cum[s_lo]
        b.add(real[nr[sends]], real[newdst[sends]], nbytes, carry=lambda i, a=s_lo, z=s_hi: _ranges(a, z, pof2))
        si = np.where(lower, si, ri)
        live &= ~sends
        mask >>= 1
        j -= 1


def pairwise_reduce_scatter(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """MPICH's pairwise reduce-scatter for a commutative op (``MPIR_Reduce_scatter_block_intra_pairwise``): every
    rank contributes ``n`` blocks of ``m`` bytes and ends with the reduction of its own block. It first copies its
    own contribution to its result (``m`` bytes), then ``n - 1`` send-receive steps: in step k = 1 … n-1 rank r
    sends its contribution to block ``(r + k) % n`` to that rank and receives rank ``(r - k) % n``'s contribution to
    its own block, which it reduces into its result (``m`` bytes). Every rank sends ``(n - 1)·m`` bytes; Intel MPI's
    default sends these messages on 12 ranks from 64 KiB (docs/intel-mpi.md).

    >>> s = pairwise_reduce_scatter(3, 8)
    >>> [(st.dst.tolist(), st.nbytes.tolist()[0], st.reduce_bytes.tolist()[0]) for st in s.steps]
    [([1, 2, 0], 8.0, 8.0), ([2, 0, 1], 8.0, 8.0)]
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "pairwise_reduce_scatter", trace, np.full(n, m))
    r = np.arange(n)
    b.copy(m)
    for k in range(1, n):
        dst = (r + k) % n
        b.add(r, dst, m, m, carry=lambda i, d=dst: _rows(n, n, r, d))
    return b.schedule()
