"""A tree (:class:`~hnowmodel.trees.Tree`) compiled to a message schedule: the bcast, scatter, gather and reduce
of every tree family as steps (:mod:`hnowmodel.schedules.steps`).

>>> from hnowmodel.trees import binomial
>>> s = from_tree(binomial(4), 8.0)
>>> [(int(a), int(b)) for a, b in zip(s.messages()["src"], s.messages()["dst"])]
[(0, 2), (0, 1), (2, 3)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..closedform import _path_sum
from ..errors import InputError
from ..trees import Tree
from .steps import MessageSchedule, Step

__all__ = ["from_tree"]


def _per_rank(value: Any, n: int, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return np.full(n, float(arr))
    if arr.shape != (n,):
        raise InputError(f"from_tree {what}: one number per rank ({n}) or one for all, got shape {arr.shape}")
    return arr


def _segmented_cummax(v: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Running maximum of whole numbers ``v`` restarting at each new value of ``seg`` (sorted, 0, 1, …): an offset
    per segment larger than the spread of ``v`` keeps each run's maximum inside its run."""
    if v.size == 0:
        return v
    big = int(v.max() - v.min()) + 1
    return np.maximum.accumulate(v + seg * big) - seg * big


def _upward_steps(tree: Tree) -> np.ndarray:
    """The step in which each non-root rank sends to its parent (root: -1): a parent receives its children one a
    step in send order, a child sends once its own last receive is done (leaves: from step 0)."""
    n = tree.n
    last = np.full(n, -1, dtype=np.int64)  # the step of each rank's last receive (-1: none)
    step = np.full(n, -1, dtype=np.int64)
    depth = tree.depth
    order = np.lexsort((tree.childrank, tree.parent, -depth))  # deepest level first, siblings in send order
    d_sorted = depth[order]
    bounds = np.flatnonzero(np.r_[True, d_sorted[1:] != d_sorted[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:], strict=False):
        kids = order[a:b]
        if depth[kids[0]] == 0:
            break
        par = tree.parent[kids]
        first = np.r_[True, par[1:] != par[:-1]]
        seg = np.cumsum(first) - 1
        j = np.arange(kids.size) - np.flatnonzero(first)[seg]  # position among siblings, 0-based
        # step_j = max(step_(j-1) + 1, last_j + 1) = j + max over i <= j of (last_i + 1 - i)
        step[kids] = j + _segmented_cummax(last[kids] + 1 - j, seg)
        ends = np.r_[first[1:], True]
        last[par[ends]] = step[kids[ends]]
    return step


def _steps_of(src: np.ndarray, dst: np.ndarray, when: np.ndarray, nbytes: np.ndarray, red: np.ndarray,
              waits: np.ndarray) -> tuple[Step, ...]:  # fmt: skip
    """Messages grouped by their step number ``when``, in increasing order (a number without a message is no step)."""
    o = np.argsort(when, kind="stable")
    cuts = np.flatnonzero(np.diff(when[o])) + 1
    return tuple(
        Step.of(src[g], dst[g], nbytes[g], red[g], waits=bool(waits[g].any())) for g in np.split(o, cuts) if g.size
    )


def _with_copy(steps: tuple[Step, ...], at: int, rank: int, nbytes: float, n: int) -> tuple[Step, ...]:
    """``steps`` with ``rank`` copying ``nbytes`` at the start of step ``at`` (a step of its own past the end)."""
    copy = np.zeros(n)
    copy[rank] = nbytes
    if at >= len(steps):
        return (*steps, Step.of([], [], 0.0, copy_bytes=copy))
    s = steps[at]
    if s.copy_bytes is not None:
        copy = copy + s.copy_bytes
    new = Step.of(s.src, s.dst, s.nbytes, s.reduce_bytes, copy_bytes=copy, waits=s.waits, repeat=s.repeat)
    return (*steps[:at], new, *steps[at + 1 :])


def from_tree(
    tree: Tree,
    edge_bytes: Any,
    *,
    toward_root: bool = False,
    reduce_bytes: Any = None,
    root_copy_bytes: float = 0.0,
    copy_first: bool = False,
    name: str = "",
) -> MessageSchedule:
    """The message schedule of ``tree``: ``edge_bytes`` (bytes; one number, or one per rank: the edge into that
    rank, root entry ignored) on every edge, down from the root or ``toward_root``.

    Down (bcast, scatter): a rank receives in the step of its parent's send to it, and sends its k-th message (its
    children in the tree's send order) k steps after its receive (the root from step 0), so each rank's sends
    follow one another, each after the previous send's ``S``: eq. 6-7. A step waits only when it holds a relay's
    first send (the data it forwards); the root's and the later sends need nothing new.

    Up (gather, reduce): each parent receives its children one a step in the tree's send order, and a child sends
    once its own subtree is complete (its last receive done); ``reduce_bytes`` (one number or one per rank, bytes
    the parent reduces of that child's message; None: 0) makes it a reduction. Every step waits.

    ``root_copy_bytes``: the root copies its own block locally (:class:`hnowmodel.runopts.Schedule`'s
    ``root_copy``): down, after its last send (MPICH's scatter), or before its first with ``copy_first`` (Open
    MPI's); up, before its first receive (MPICH's gather). A copy of 0 bytes is no copy (MPICH's local copy of
    nothing returns at once), where :func:`hnowmodel.closedform.scatter` charges the copy line's constant ``Cc`` even
    at 0 bytes: the one size at which the two differ.

    >>> from hnowmodel.trees import sequential, binomial
    >>> from_tree(sequential(3), 4.0).n_steps
    2
    >>> up = from_tree(binomial(4), 8.0, toward_root=True, reduce_bytes=8.0)
    >>> [(int(a), int(b)) for a, b in zip(up.messages()["src"], up.messages()["dst"])]
    [(3, 2), (2, 0), (1, 0)]
    """
    if not isinstance(tree, Tree):
        raise InputError(f"from_tree: expected a Tree, got {type(tree).__name__}")
    n = tree.n
    nb = _per_rank(edge_bytes, n, "edge_bytes")
    red = _per_rank(0.0 if reduce_bytes is None else reduce_bytes, n, "reduce_bytes")
    kids = np.flatnonzero(tree.parent >= 0)
    label = name or f"{'up' if toward_root else 'down'}:{tree.name or 'tree'}"
    copy = float(root_copy_bytes)
    if not np.isfinite(copy) or copy < 0:
        raise InputError(f"from_tree root_copy_bytes: must be a finite number of bytes >= 0, got {root_copy_bytes!r}")
    if kids.size == 0:
        return MessageSchedule(n, _with_copy((), 0, tree.root, copy, n) if copy else (), label)
    par = tree.parent[kids]
    if toward_root:
        when = _upward_steps(tree)[kids]
        steps = _steps_of(kids, par, when, nb[kids], red[kids], np.ones(kids.size, dtype=bool))
    else:
        rs = _path_sum(tree, tree.childrank.astype(float)).astype(np.int64) - 1  # the step each rank receives in
        relay_first = (tree.childrank[kids] == 1) & (par != tree.root)
        steps = _steps_of(par, kids, rs[kids], nb[kids], red[kids], relay_first)
    if copy:  # down, the steps are numbered without a gap: the root's last send is in step nchildren - 1
        at = 0 if toward_root or copy_first else int(tree.nchildren[tree.root])
        steps = _with_copy(steps, at, tree.root, copy, n)
    return MessageSchedule(n, steps, label)
