"""A tree (:class:`~hnowmodel.trees.Tree`) compiled to a message schedule: the bcast, scatter, gather and reduce
of every tree family as steps (:mod:`hnowmodel.schedules.steps`), with the run options of
:class:`hnowmodel.runopts.Schedule` that are a fixed order of messages: the root's copy, a fixed receive order up a
tree, messages that wait for the posted receive (relays' struct datatypes, synchronous sends) and segments down a
tree (pipelining). The receive orders ``posted`` and ``arrival`` take messages as they arrive, which no fixed order
of steps says: :func:`from_tree` refuses them.

>>> from hnowmodel.trees import binomial
>>> s = from_tree(binomial(4), 8.0)
>>> [(int(a), int(b)) for a, b in zip(s.messages()["src"], s.messages()["dst"])]
[(0, 2), (0, 1), (2, 3)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..closedform import _path_sum
from ..errors import InputError
from ..movement import Movement
from ..runopts import RECV_ORDERS, Schedule
from ..trees import Tree
from .steps import MessageSchedule, Step

__all__ = ["from_tree", "tree_schedule"]


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


def _receive_keys(tree: Tree, recv_order: str) -> np.ndarray:
    """A number per rank that sorts each parent's children in the order it receives them up a tree: the tree's send
    order (``tree``), or ascending subtree size, ties in reverse send order (``smallest_first``: MPICH's binomial
    gather, as :mod:`hnowmodel.flow.gather` orders them)."""
    if recv_order == "tree":
        return tree.childrank.astype(np.int64)
    n = tree.n
    return tree.subtree_size.astype(np.int64) * (n + 1) + (n - tree.childrank.astype(np.int64))


def _upward_steps(tree: Tree, key: np.ndarray) -> np.ndarray:
    """The step in which each non-root rank sends to its parent (root: -1): a parent receives its children one a
    step in the order of ``key`` (:func:`_receive_keys`), a child sends once its own last receive is done (leaves:
    from step 0)."""
    n = tree.n
    last = np.full(n, -1, dtype=np.int64)  # the step of each rank's last receive (-1: none)
    step = np.full(n, -1, dtype=np.int64)
    depth = tree.depth
    order = np.lexsort((key, tree.parent, -depth))  # deepest level first, siblings in receive order
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


@dataclass(frozen=True)
class _Messages:
    """A tree's messages before they are grouped into steps: per message its sender, receiver, step number, bytes,
    bytes reduced, whether its step waits and whether it is marked rendezvous."""

    src: np.ndarray
    dst: np.ndarray
    when: np.ndarray
    nbytes: np.ndarray
    red: np.ndarray
    waits: np.ndarray
    rdv: np.ndarray

    def steps(self) -> tuple[tuple[Step, ...], np.ndarray]:
        """The messages grouped by their step number, in increasing order (a number without a message is no step),
        and the step numbers that are steps."""
        o = np.argsort(self.when, kind="stable")
        cuts = np.flatnonzero(np.diff(self.when[o])) + 1
        groups = [g for g in np.split(o, cuts) if g.size]
        steps = tuple(
            Step.of(self.src[g], self.dst[g], self.nbytes[g], self.red[g], waits=bool(self.waits[g].any()),
                    rendezvous=self.rdv[g])
            for g in groups
        )  # fmt: skip
        return steps, np.array([self.when[g[0]] for g in groups], dtype=np.int64)


def _with_copy(steps: tuple[Step, ...], at: int, rank: int, nbytes: float, n: int) -> tuple[Step, ...]:
    """``steps`` with ``rank`` copying ``nbytes`` at the start of step ``at`` (a step of its own past the end)."""
    copy = np.zeros(n)
    copy[rank] = nbytes
    if at >= len(steps):
        return (*steps, Step.of([], [], 0.0, copy_bytes=copy))
    s = steps[at]
    if s.copy_bytes is not None:
        copy = copy + s.copy_bytes
    new = Step.of(s.src, s.dst, s.nbytes, s.reduce_bytes, copy_bytes=copy, waits=s.waits, repeat=s.repeat,
                  rendezvous=s.rendezvous)  # fmt: skip
    return (*steps[:at], new, *steps[at + 1 :])


def _up(tree: Tree, nb: np.ndarray, red: np.ndarray, recv_order: str, relay_from: float, sync: bool) -> _Messages:
    """Up a tree: each parent receives its children in ``recv_order``; a relay's message of ``relay_from`` bytes or
    more (``math.inf``: none), or with ``sync`` every message, waits for the posted receive. Every step waits."""
    kids = np.flatnonzero(tree.parent >= 0)
    when = _upward_steps(tree, _receive_keys(tree, recv_order))[kids]
    rdv = np.full(kids.size, bool(sync)) | ((tree.nchildren[kids] > 0) & (nb[kids] >= relay_from))
    ones = np.ones(kids.size, dtype=bool)
    return _Messages(kids, tree.parent[kids], when, nb[kids], red[kids], ones, rdv)


def _down(tree: Tree, nb: np.ndarray, red: np.ndarray, segment_bytes: int, sync: bool) -> _Messages:
    """Down a tree, each edge's message in segments of ``segment_bytes`` (0: whole). With ``D`` the most children
    of any rank, a rank receives its segment ``j`` in step ``j·D + r`` (``r``: the step of its first segment, the
    sum of the child ranks on its path minus 1) and sends it to its i-th child in step ``j·D + r + i`` (the root:
    ``j·D + i - 1``): each rank receives segment ``j``, passes it to its children in send order, then receives
    segment ``j + 1`` (MPICH's pipelined tree bcast, whose blocking receive of a chunk is posted after the previous
    chunk's sends). A step waits when it holds a relay's first send of a segment (the data it forwards) or a later
    segment's receive (posted once the previous one is complete); the other sends need nothing new."""
    kids = np.flatnonzero(tree.parent >= 0)
    par = tree.parent[kids]
    rs = _path_sum(tree, tree.childrank.astype(float)).astype(np.int64) - 1  # the step each rank receives in
    b = nb[kids]
    if segment_bytes and b.size and np.any(b != b[0]):
        raise InputError("from_tree segment_bytes: segments model a pipelined bcast, one byte count on every edge")
    whole = float(b[0]) if b.size else 0.0
    k = max(1, math.ceil(whole / segment_bytes)) if segment_bytes else 1
    span = max(1, int(tree.nchildren.max()))
    j = np.repeat(np.arange(k), kids.size)  # segment of each message, segment by segment
    e = np.tile(np.arange(kids.size), k)  # its edge
    seg_b = np.minimum(float(segment_bytes), whole - j * float(segment_bytes)) if k > 1 else b[e]
    relay_first = (tree.childrank[kids] == 1) & (par != tree.root)
    return _Messages(par[e], kids[e], j * span + rs[kids][e], seg_b, red[kids][e], relay_first[e] | (j >= 1),
                     np.full(e.size, bool(sync)))  # fmt: skip


def _check_options(
    toward_root: bool, recv_order: str, relay_waits: bool, relay_from: float, seg: Any, copy: Any
) -> None:
    """:class:`InputError` on a run option :func:`from_tree` cannot compile (each named)."""
    if not np.isfinite(float(copy)) or float(copy) < 0:
        raise InputError(f"from_tree root_copy_bytes: must be a finite number of bytes >= 0, got {copy!r}")
    if recv_order not in RECV_ORDERS:
        raise InputError(f"from_tree recv_order: unknown receive order {recv_order!r} (choose from: "
                         f"{', '.join(RECV_ORDERS)})")  # fmt: skip
    if toward_root and recv_order in ("posted", "arrival"):
        raise InputError(
            f"from_tree recv_order {recv_order!r}: a parent takes its messages as they arrive, which depends on "
            "arrival times, not on a fixed order of steps (use 'tree' or 'smallest_first', or the flow engine's "
            "gather)"
        )
    if isinstance(seg, (bool, np.bool_)) or not isinstance(seg, (int, np.integer)) or seg < 0:
        raise InputError(f"from_tree segment_bytes: must be a whole number of bytes >= 0, got {seg!r}")
    if toward_root and seg:
        raise InputError("from_tree segment_bytes: segments (a pipelined tree) are modelled down a tree only")
    if relay_waits and not toward_root:
        raise InputError("from_tree relay_waits: a relay's struct datatype is a gather's, up a tree (toward_root)")
    if not (relay_from >= 0):  # NaN included; math.inf: never
        raise InputError(f"from_tree rendezvous_from_bytes: must be a number of bytes >= 0, got {relay_from!r}")


def from_tree(
    tree: Tree,
    edge_bytes: Any,
    *,
    toward_root: bool = False,
    reduce_bytes: Any = None,
    root_copy_bytes: float = 0.0,
    copy_first: bool = False,
    recv_order: str = "tree",
    relay_waits: bool = False,
    rendezvous_from_bytes: float = 0.0,
    sync: bool = False,
    segment_bytes: int = 0,
    name: str = "",
) -> MessageSchedule:
    """The message schedule of ``tree``: ``edge_bytes`` (bytes; one number, or one per rank: the edge into that
    rank, root entry ignored) on every edge, down from the root or ``toward_root``.

    Down (bcast, scatter): a rank receives in the step of its parent's send to it, and sends its k-th message (its
    children in the tree's send order) k steps after its receive (the root from step 0), so each rank's sends
    follow one another, each after the previous send's ``S``: eq. 6-7. A step waits only when it holds a relay's
    first send (the data it forwards); the root's and the later sends need nothing new. ``segment_bytes`` (> 0,
    every edge the same bytes: a bcast) splits each edge's message in segments of that many bytes (the last one
    the rest), a relay passing segment ``j`` to its children once it holds it (:func:`_down`: MPICH's pipelined
    tree, Intel MPI's default bcast); a message of ``segment_bytes`` or fewer is one segment, the tree unsegmented.

    Up (gather, reduce): each parent receives its children one a step in ``recv_order`` (``tree``: the tree's send
    order; ``smallest_first``: ascending subtree size, ties in reverse send order), and a child sends once its own
    subtree is complete (its last receive done); ``reduce_bytes`` (one number or one per rank, bytes the parent
    reduces of that child's message; None: 0) makes it a reduction. Every step waits. ``relay_waits``: a relay's
    message (a rank with children sends its subtree as a struct datatype) of ``rendezvous_from_bytes`` or more
    (the caller takes it from ``profile.network_terms.struct_rendezvous_from``) flows only once its parent has
    reached its step (``Step.rendezvous``). ``recv_order`` ``posted`` and ``arrival`` are refused: a parent taking
    its messages as they arrive is no fixed order of steps.

    ``sync`` (both ways): every message flows only once its receiver has reached its step (synchronous sends: Open
    MPI's linear_sync gather; the signal's round trip is left out, as :func:`hnowmodel.flow.simulate` leaves it).

    ``root_copy_bytes``: the root copies its own block locally (:class:`hnowmodel.runopts.Schedule`'s
    ``root_copy``): down, after its last send (MPICH's scatter), or before its first with ``copy_first`` (Open
    MPI's); up, before its first receive (MPICH's gather). A copy of 0 bytes is no copy (MPICH's local copy of
    nothing returns at once), where :func:`hnowmodel.closedform.scatter` charges the copy line's constant ``Cc`` even
    at 0 bytes: the one size at which the two differ.

    >>> from hnowmodel.trees import sequential, binomial, chain
    >>> from_tree(sequential(3), 4.0).n_steps
    2
    >>> up = from_tree(binomial(4), 8.0, toward_root=True, reduce_bytes=8.0)
    >>> [(int(a), int(b)) for a, b in zip(up.messages()["src"], up.messages()["dst"])]
    [(3, 2), (2, 0), (1, 0)]
    >>> small = from_tree(binomial(4), 8.0, toward_root=True, recv_order="smallest_first")
    >>> [(int(a), int(b)) for a, b in zip(small.messages()["src"], small.messages()["dst"])]
    [(1, 0), (3, 2), (2, 0)]
    >>> piped = from_tree(chain(3), 2000.0, segment_bytes=1000)     # 0 -> 1 -> 2 in two segments: 3 steps
    >>> [[(int(a), int(b)) for a, b in zip(s.src, s.dst)] for s in piped.steps]
    [[(0, 1)], [(1, 2), (0, 1)], [(1, 2)]]
    """
    if not isinstance(tree, Tree):
        raise InputError(f"from_tree: expected a Tree, got {type(tree).__name__}")
    relay_from = float(rendezvous_from_bytes) if relay_waits else math.inf
    _check_options(toward_root, recv_order, relay_waits, relay_from, segment_bytes, root_copy_bytes)
    n = tree.n
    nb = _per_rank(edge_bytes, n, "edge_bytes")
    red = _per_rank(0.0 if reduce_bytes is None else reduce_bytes, n, "reduce_bytes")
    label = name or f"{'up' if toward_root else 'down'}:{tree.name or 'tree'}"
    copy = float(root_copy_bytes)
    if n == 1:
        return MessageSchedule(n, _with_copy((), 0, tree.root, copy, n) if copy else (), label)
    if toward_root:
        msgs = _up(tree, nb, red, recv_order, relay_from, sync)
    else:
        msgs = _down(tree, nb, red, int(segment_bytes), sync)
    steps, numbers = msgs.steps()
    if copy:  # down, after the step of the root's last send (the step numbers may have gaps)
        at = 0
        if not (toward_root or copy_first):
            at = int(np.searchsorted(numbers, msgs.when[msgs.src == tree.root].max(), side="right"))
        steps = _with_copy(steps, at, tree.root, copy, n)
    return MessageSchedule(n, steps, label)


def tree_schedule(tree: Tree, movement: Movement, m: float, run: Schedule | None = None, *, profile: Any = None):
    """The message schedule of an operation whose data moves as ``movement`` (:mod:`hnowmodel.movement`) over
    ``tree``, ``m`` bytes per rank's block, run as ``run`` says (:class:`hnowmodel.runopts.Schedule`, None: the
    tree executor's): what a native algorithm (its model tree and run options) compiles to. ``root_copy`` copies
    the root's own ``m`` bytes, ``recv_order``, ``relay_waits`` (from ``profile``'s struct rendezvous size),
    ``sync`` and ``segment_bytes`` as :func:`from_tree` takes them; ``common_start`` is a measuring convention, not
    a message. A gather whose parents take their messages as they arrive (``recv_order`` ``posted``, the tree
    executor's, or ``arrival``) is no fixed order of steps: :class:`InputError` says so.

    >>> from hnowmodel.movement import SUBTREE_DOWN
    >>> from hnowmodel.trees import binomial
    >>> tree_schedule(binomial(4), SUBTREE_DOWN, 100.0, Schedule(root_copy=True)).bytes_sent().tolist()
    [300.0, 0.0, 100.0, 0.0]
    """
    run = Schedule() if run is None else run
    relay_from = 0.0
    if run.relay_waits and movement.toward_root:
        if profile is None:
            raise InputError("tree_schedule: relay_waits needs the profile (its struct rendezvous size)")
        relay_from = float(profile.network_terms.struct_rendezvous_from)
    return from_tree(
        tree,
        movement.edge_bytes(tree, float(m)),
        toward_root=movement.toward_root,
        root_copy_bytes=float(m) if run.root_copy else 0.0,
        copy_first=run.copy_first,
        recv_order=run.recv_order if movement.toward_root else "tree",
        relay_waits=run.relay_waits and movement.toward_root,
        rendezvous_from_bytes=relay_from,
        sync=run.sync,
        segment_bytes=run.segment_bytes if movement.one_message and not movement.toward_root else 0,
        name=f"{movement.label}:{tree.name or 'tree'}",
    )
