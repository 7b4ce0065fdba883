"""The alltoall algorithms MPI libraries run, as message schedules: MPICH's pairwise exchange, Bruck's algorithm
and the scattered (non-blocking) exchange (``src/mpi/coll/alltoall/`` of MPICH 4).

Every generator takes the number of ranks ``n`` and ``m``, the bytes each rank sends to each other rank (a block),
and returns a :class:`~hnowmodel.schedules.steps.MessageSchedule`; with ``trace`` (a
:class:`~hnowmodel.schedules.algorithms.BlockTrace`) it records which blocks each message carries, block
``i·n + j`` being what rank i sends to rank j. Local copies are each step's ``copy_bytes`` (what the rank copies
in memory at the step's start, through its copy line).

>>> s = pairwise_alltoall(4, 100)
>>> s.n_steps, s.bytes_sent().tolist()
(3, [300.0, 300.0, 300.0, 300.0])
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .algorithms import BlockTrace, _Builder, _ranks, _rows, _size
from .steps import MessageSchedule

__all__ = ["pairwise_alltoall", "bruck_alltoall", "scattered_alltoall", "ALLTOALL_THROTTLE"]

#: MPICH's ``MPIR_CVAR_ALLTOALL_THROTTLE``: how many sends and receives the scattered alltoall posts at once.
ALLTOALL_THROTTLE = 32


def pairwise_alltoall(n: int, m: float, *, xor: bool = True, copy_last: bool = False, trace: BlockTrace | None = None
                      ) -> MessageSchedule:  # fmt: skip
    """MPICH's pairwise-exchange alltoall (``MPIR_Alltoall_intra_pairwise``): the rank first copies its own block
    (``m`` bytes, in the first step), then ``n - 1`` blocking send-receive steps: in step k = 1 … n-1 rank r sends
    its block to ``r ^ k`` and receives from it when n is a power of two, else sends to ``(r + k) % n`` and
    receives from ``(r - k) % n``. Every rank sends ``(n - 1)·m`` bytes.

    Open MPI's pairwise alltoall (``ompi_coll_base_alltoall_intra_pairwise``) is ``xor=False, copy_last=True``: the
    shifts ``(r + k) % n`` / ``(r - k) % n`` for every n, its own block last (its step k = n is a send-receive to
    itself: the copy, in a step of its own).

    >>> [s.dst.tolist() for s in pairwise_alltoall(4, 1).steps]
    [[1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]]
    >>> [(s.dst.tolist(), s.copy_bytes is not None) for s in pairwise_alltoall(3, 1, xor=False, copy_last=True).steps]
    [([1, 2, 0], False), ([2, 0, 1], False), ([], True)]
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "pairwise_alltoall", trace, np.full(n * n, m))
    r = np.arange(n)
    if not copy_last:
        b.copy(m)
    pof2 = xor and not n & (n - 1)
    for k in range(1, n):
        dst = r ^ k if pof2 else (r + k) % n
        b.add(r, dst, m, carry=lambda i, d=dst: _rows(n, n * n, r, r * n + d))
    if copy_last:
        b.copy(m)
    return b.schedule()


def bruck_alltoall(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """MPICH's Bruck alltoall (``MPIR_Alltoall_intra_brucks``): rank r first rotates its ``n`` blocks up by r (a
    copy of ``n·m`` bytes, at the start of the first step), so that position p holds its block for ``r + p``; then
    ``ceil(lg n)`` steps: in step k (``d = 2**k``) it packs the blocks at the positions with bit k set (a copy of
    ``count·m`` bytes at the step's start), sends them (``count·m`` bytes) to ``(r + d) % n`` and receives as many
    from ``(r - d) % n`` into the same positions; last, a step without messages copies ``2·n·m`` bytes (the
    rotation back and the reversal of the blocks' order). ``ceil(lg n) + 1`` steps.

    >>> [(s.nbytes.tolist()[:1], s.copy_bytes.tolist()[:1]) for s in bruck_alltoall(4, 1).steps]
    [([2.0], [6.0]), ([2.0], [2.0]), ([], [8.0])]
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "bruck_alltoall", trace, np.full(n * n, m))
    r = np.arange(n)
    pos = np.arange(n)
    b.copy(n * m)
    d = 1
    while d < n:
        moved = pos[(pos & d) > 0]
        cnt = moved.size

        def carry(i: int, moved: np.ndarray = moved, d: int = d) -> np.ndarray:
            # position p at rank r holds the block that left (r - (p & (d - 1))) for that rank + p
            origin = (r[:, None] - (moved[None, :] & (d - 1))) % n
            blocks = origin * n + (origin + moved[None, :]) % n
            return _rows(n, n * n, np.repeat(r, moved.size), blocks.reshape(-1))

        b.copy(cnt * m)  # packing the blocks to send
        b.add(r, (r + d) % n, cnt * m, carry=carry)
        d <<= 1
    b.copy(2 * n * m)
    return b.schedule()


def scattered_alltoall(n: int, m: float, *, throttle: int = ALLTOALL_THROTTLE, trace: BlockTrace | None = None
                       ) -> MessageSchedule:  # fmt: skip
    """MPICH's scattered alltoall (``MPIR_Alltoall_intra_scattered``): non-blocking sends and receives to every
    peer in turn, ``throttle`` at a time (``MPIR_CVAR_ALLTOALL_THROTTLE``; 0: all at once) with a wait for all of
    them after each batch. The i-th exchange (i = 0 … n-1) sends to ``(r - i) % n`` and receives from
    ``(r + i) % n``; i = 0 is the rank's own block, a copy of ``m`` bytes at the first step's start. The steps do
    not wait (the sends of a batch follow one another), but the first of each later batch does (``MPI_Waitall``).
    ``n - 1`` steps.

    >>> [s.waits for s in scattered_alltoall(5, 1, throttle=2).steps]
    [False, True, False, True]
    """
    n, m = _ranks(n), _size(m)
    if isinstance(throttle, bool) or not isinstance(throttle, (int, np.integer)) or throttle < 0:
        raise InputError(f"scattered_alltoall throttle: must be a whole number >= 0, got {throttle!r}")
    block = throttle or n
    b = _Builder(n, "scattered_alltoall", trace, np.full(n * n, m))
    r = np.arange(n)
    b.copy(m)
    for i in range(1, n):
        dst = (r - i) % n
        b.add(r, dst, m, carry=lambda _, d=dst: _rows(n, n * n, r, r * n + d), waits=i % block == 0)
    return b.schedule()
