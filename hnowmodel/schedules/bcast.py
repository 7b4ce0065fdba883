"""MPICH's bcasts that are no tree, as message schedules: a binomial scatter of the message's chunks from the root
(``MPII_Scatter_for_bcast``, ``src/mpi/coll/bcast/bcast_utils.c``), then an allgather of the chunks, by a ring
(``MPIR_Bcast_intra_scatter_ring_allgather``) or by recursive doubling
(``MPIR_Bcast_intra_scatter_recursive_doubling_allgather``): what MPICH's default runs from 8 ranks above
12288 B (MPICH 5.0.x). Composed from the allgather generators of :mod:`~hnowmodel.schedules.algorithms` (with
blocks of unequal sizes) and the binomial tree's scatter (:func:`~hnowmodel.schedules.fromtree.from_tree`).

MPICH's chunking: ``scatter_size = ceil(m / n)`` bytes, relative rank ``i`` (``(rank - root) mod n``) owns bytes
``[i·scatter_size, min((i + 1)·scatter_size, m))``: the last chunks are short or empty. The scatter sends a child its
subtree's chunks, nothing at all where they are empty (MPICH skips a send of 0 bytes); the allgather's
``MPIC_Sendrecv`` sends every message, an empty chunk as a 0-byte message. Both run on relative ranks, placed on
the communicator by :func:`~hnowmodel.schedules.hierarchy.on_groups`.

>>> bcast_chunks(4, 10).tolist()
[3.0, 3.0, 3.0, 1.0]
>>> s = scatter_ring_allgather(4, 10)
>>> s.n_steps, s.bytes_sent().tolist()
(5, [14.0, 7.0, 10.0, 7.0])
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..trees import binomial
from .algorithms import _ranks, _root, _size, recursive_doubling_allgather, ring_allgather
from .fromtree import from_tree
from .hierarchy import on_groups
from .steps import MessageSchedule, Step, concat

__all__ = ["bcast_chunks", "scatter_for_bcast", "scatter_ring_allgather", "scatter_recursive_doubling_allgather"]


def bcast_chunks(n: int, m: float) -> np.ndarray:
    """Bytes of each relative rank's chunk of an ``m``-byte message on ``n`` ranks, as MPICH splits it:
    ``scatter_size = ceil(m / n)``, chunk ``i`` = ``min(scatter_size, m - i·scatter_size)``, at least 0.

    >>> bcast_chunks(16, 97).tolist()[-4:]
    [7.0, 6.0, 0.0, 0.0]
    """
    n, m = _ranks(n), _size(m)
    if m != int(m):
        raise InputError(f"bcast: {m:g} bytes is not a whole number of bytes (MPICH splits bytes)")
    ss = -(-int(m) // n)
    return np.clip(int(m) - np.arange(n) * ss, 0, ss).astype(float)


def _nonempty(s: MessageSchedule) -> MessageSchedule:
    """``s`` without its 0-byte messages (and the steps left with nothing): the sends MPICH's scatter skips."""
    steps = []
    for st in s.steps:
        keep = st.nbytes > 0
        if not keep.any() and st.copy_bytes is None:
            continue
        rdv = None if st.rendezvous is None else st.rendezvous[keep]
        steps.append(Step.of(st.src[keep], st.dst[keep], st.nbytes[keep], st.reduce_bytes[keep],
                             copy_bytes=st.copy_bytes, waits=st.waits, repeat=st.repeat, rendezvous=rdv))  # fmt: skip
    return MessageSchedule(s.n, tuple(steps), s.name)


def _relative(n: int, m: float) -> tuple[np.ndarray, MessageSchedule]:
    """The chunks and MPICH's binomial scatter of them on relative ranks (root 0): the edge into relative rank
    ``r`` carries the chunks of its subtree, ``r`` up to ``r + lowbit(r)`` (the binomial tree's subtree)."""
    chunks = bcast_chunks(n, m)
    rel = np.arange(n)
    upto = np.concatenate(([0.0], np.cumsum(chunks)))
    end = np.minimum(rel + (rel & -rel), n)
    edge = upto[end] - upto[rel]  # the root's entry (0) is ignored
    return chunks, _nonempty(from_tree(binomial(n), edge, name="scatter_for_bcast"))


def _placed(s: MessageSchedule, root: int, name: str) -> MessageSchedule:
    """``s`` (on relative ranks) on the communicator's ranks: relative rank i is rank ``(i + root) % n``."""
    placed = s if root == 0 else on_groups(s, [(np.arange(s.n) + root) % s.n], s.n)
    return MessageSchedule(s.n, placed.steps, name if root == 0 else f"{name}(root={root})")


def scatter_for_bcast(n: int, m: float, root: int = 0) -> MessageSchedule:
    """MPICH's binomial scatter of an ``m``-byte message's chunks (:func:`bcast_chunks`) from ``root``
    (``MPII_Scatter_for_bcast``): a rank receives its subtree's chunks from its binomial parent, then sends each
    child (largest subtree first) that child's subtree's chunks; a send of no bytes is skipped.

    >>> [(s.src.tolist(), s.dst.tolist(), s.nbytes.tolist()) for s in scatter_for_bcast(4, 10).steps]
    [([0], [2], [4.0]), ([0, 2], [1, 3], [3.0, 1.0])]
    """
    n = _ranks(n)
    return _placed(_relative(n, m)[1], _root(root, n), "scatter_for_bcast")


def scatter_ring_allgather(n: int, m: float, root: int = 0) -> MessageSchedule:
    """MPICH's ``MPIR_Bcast_intra_scatter_ring_allgather`` of ``m`` bytes from ``root``: :func:`scatter_for_bcast`,
    then a ring allgather of the chunks on relative ranks (:func:`~hnowmodel.schedules.algorithms.ring_allgather`
    with the chunks as blocks: ``n - 1`` steps, rank r sending to ``r + 1`` the chunk it received last).

    >>> [s.nbytes.tolist() for s in scatter_ring_allgather(3, 5).steps[-2:]]
    [[2.0, 2.0, 1.0], [1.0, 2.0, 2.0]]
    """
    n = _ranks(n)
    root = _root(root, n)
    chunks, scatter = _relative(n, m)
    ring = ring_allgather(n, 0.0, blocks=chunks)
    return _placed(concat("scatter_ring_allgather", scatter, ring), root, "scatter_ring_allgather")


def scatter_recursive_doubling_allgather(n: int, m: float, root: int = 0) -> MessageSchedule:
    """MPICH's ``MPIR_Bcast_intra_scatter_recursive_doubling_allgather`` of ``m`` bytes from ``root``, ``n`` a power
    of two (what MPICH's default selects it for; :class:`InputError` otherwise, its other branch is not modelled):
    :func:`scatter_for_bcast`, then ``lg n`` exchanges on relative ranks, in step k of the ``2**k`` chunks each
    holds (:func:`~hnowmodel.schedules.algorithms.recursive_doubling_allgather` with the chunks as blocks).

    >>> [s.nbytes.tolist() for s in scatter_recursive_doubling_allgather(4, 10).steps[-2:]]
    [[3.0, 3.0, 3.0, 1.0], [6.0, 6.0, 4.0, 4.0]]
    """
    n = _ranks(n)
    root = _root(root, n)
    if n & (n - 1):
        raise InputError(
            f"scatter_recursive_doubling_allgather: {n} ranks is not a power of two (MPICH's default runs "
            "scatter_ring_allgather then; its recursive doubling for other counts is not modelled)"
        )
    chunks, scatter = _relative(n, m)
    rd = recursive_doubling_allgather(n, 0.0, blocks=chunks)
    name = "scatter_recursive_doubling_allgather"
    return _placed(concat(name, scatter, rd), root, name)
