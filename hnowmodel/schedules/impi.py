"""Intel MPI 2021.16's own message schedules, read off the wire where its default runs something MPICH has not
(docs/intel-mpi.md, "12 ranks"): a recursive doubling allgather that folds the ranks to a power of two first, and a
reduce pipelined up a tree in segments.

>>> s = fold_recursive_doubling_allgather(3, 8)
>>> [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist()) for st in s.steps]
[([1], [0], [8.0]), ([0, 2], [2, 0], [16.0, 8.0]), ([0], [1], [24.0])]
"""

from __future__ import annotations

import math

import numpy as np

from ..trees import Tree
from ..trees.registry import make_tree
from .algorithms import BlockTrace, _Builder, _ranges, _ranks, _root, _size, pof2_below
from .steps import MessageSchedule

__all__ = ["fold_recursive_doubling_allgather", "pipelined_tree_reduce"]


def fold_recursive_doubling_allgather(n: int, m: float, *, trace: BlockTrace | None = None) -> MessageSchedule:
    """Intel MPI's recursive doubling allgather of ``m``-byte blocks on any ``n`` (seen on 12 ranks, 16-256 KiB):
    ``pof2`` = the largest power of two <= n, ``rem = n - pof2``; the odd ranks below ``2·rem`` send their block
    to rank - 1 (new rank ``r // 2``, holding two blocks; the ranks above: new rank ``r - rem``, one block); the
    ``pof2`` new ranks exchange all they hold with new rank ``v ^ mask`` for mask = 1, 2, 4, …; then each even rank
    below ``2·rem`` sends all ``n·m`` bytes to rank + 1. ``lg pof2`` steps, + 2 when n is not a power of two (then
    MPICH's recursive doubling, power-of-two only).

    >>> [st.nbytes.tolist()[:2] for st in fold_recursive_doubling_allgather(12, 1).steps]
    [[1.0, 1.0], [2.0, 2.0], [4.0, 4.0], [8.0, 8.0], [12.0, 12.0]]
    """
    n, m = _ranks(n), _size(m)
    b = _Builder(n, "fold_recursive_doubling_allgather", trace, np.full(n, m))
    pof2 = pof2_below(n)
    rem = n - pof2
    nr = np.arange(pof2)
    real = np.where(nr < rem, 2 * nr, nr + rem)
    first = real.copy()  # each new rank's first real block; it holds first .. first of the next new rank
    ends = np.r_[first, n]
    if rem:
        od = np.arange(1, 2 * rem, 2)
        b.add(od, od - 1, m, carry=lambda i: _ranges(od, od + 1, n))
    mask = 1
    while mask < pof2:
        lo = (nr // mask) * mask  # the new ranks whose blocks the rank holds: lo .. lo + mask
        blo, bhi = ends[lo], ends[lo + mask]
        b.add(real, real[nr ^ mask], (bhi - blo) * m, carry=lambda i, a=blo, z=bhi: _ranges(a, z, n))
        mask <<= 1
    if rem:
        ev = np.arange(0, 2 * rem, 2)
        b.add(ev, ev + 1, n * m, carry=lambda i: np.ones((ev.size, n), dtype=bool))
    return b.schedule()


def pipelined_tree_reduce(
    n: int,
    m: float,
    root: int = 0,
    *,
    tree: str = "mpich-knomial1:2",
    segment_bytes: int = 8192,
    trace: BlockTrace | None = None,
) -> MessageSchedule:
    """A reduce of an ``m``-byte vector to ``root`` up ``tree`` (a tree spec of :mod:`hnowmodel.trees`, over ranks
    relative to the root) in segments of ``segment_bytes`` (the last one the rest): for each segment in turn, each
    rank receives it from its children in the tree's order, reducing each, then sends the reduced segment to its
    parent; a rank goes on to the next segment once it sent this one, so segments follow each other up the tree
    (Intel MPI's default reduce on 12 ranks: ``mpich-knomial1:2`` in 8 KiB segments at 16 and 64 KiB, a ``chain``
    in 14000-byte segments at 256 KiB, read off the wire). Every rank but the root sends ``m`` bytes.

    >>> s = pipelined_tree_reduce(3, 10, tree="chain", segment_bytes=6)
    >>> [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist()) for st in s.steps]
    [([2], [1], [6.0]), ([1], [0], [6.0]), ([2], [1], [4.0]), ([1], [0], [4.0])]
    """
    n, m = _ranks(n), _size(m)
    root = _root(root, n)
    t = make_tree(tree, n)
    b = _Builder(n, f"pipelined_tree_reduce({tree}, {segment_bytes})", trace, [m])
    steps = _reduce_steps(t)
    k = max(1, math.ceil(m / segment_bytes)) if segment_bytes else 1
    for j in range(k):
        seg = min(float(segment_bytes), m - j * segment_bytes) if k > 1 else m
        for edges in steps:
            src = (np.array([c for c, _ in edges]) + root) % n
            dst = (np.array([p for _, p in edges]) + root) % n
            b.add(src, dst, seg, seg, carry=lambda i, e=src.size: np.ones((e, 1), dtype=bool))
    return b.schedule()


def _reduce_steps(t: Tree) -> list[list[tuple[int, int]]]:
    """The tree's edges ``(child, parent)`` in steps: a parent receives from one child a step, in its children's
    order, and a child sends once it has received from all of its own (the step after its last receive)."""
    pre, stack = [], [int(t.root)]
    while stack:  # children pushed in send order, so popped last first: reversed, a post-order in send order
        v = stack.pop()
        pre.append(v)
        stack.extend(t.children[v])
    at: dict[int, int] = {}  # the step each rank sends to its parent (no recursion: 2048-rank chains)
    ready = [0] * t.n  # the first step each rank can send in: after its last receive
    for v in reversed(pre):  # every child before its parent
        nxt = 0  # the first step v can receive in
        for c in t.children[v]:
            at[c] = max(ready[c], nxt)
            nxt = at[c] + 1
        ready[v] = nxt
    out: list[list[tuple[int, int]]] = [[] for _ in range(max(at.values(), default=-1) + 1)]
    for c in reversed(pre[1:]):  # each step's edges in post-order
        out[at[c]].append((c, int(t.parent[c])))
    return [e for e in out if e]
