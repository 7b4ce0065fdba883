"""The tree executor: one rank's part of bcast, scatter and gather over any :class:`hnowmodel.trees.Tree`, on a
:class:`~calibrate.transport.Transport` (plain MPI or the emulated testbed).

The schedule :mod:`hnowmodel.predict` assumes: store-and-forward, a rank receives from its parent, then sends to its
children one after another in the tree's send order; scatter sends each child its whole subtree's blocks in one
message (this rank's subtree in preorder, so every child's subtree is one contiguous run); gather takes the
children's subtrees in arrival order. ``python -m calibrate measure`` times it (:mod:`calibrate.collectives`). The
application helper :mod:`calibrate.treecoll` moves the same messages in the same order with mpi4py's blocking calls
on the user's own buffers; it is kept apart from this executor (which works on a transport and its own staging
buffer): with the helper running through this executor, the export run's Open MPI scatter and gather at 64 KiB
measured 28 % and 16 % slower than predicted (docs/exporting.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hnowmodel.trees import subtree_preorder

__all__ = ["TAG", "TreeExecutor", "payload_block", "bcast_payload"]

#: The tag of the executor's messages in ``python -m calibrate measure``.
TAG = 4242


def payload_block(rank: int, m: int) -> np.ndarray:
    """The ``m`` bytes that belong to ``rank`` (scatter/gather) - distinct per rank and per position.

    >>> payload_block(1, 4).tolist()
    [32, 39, 46, 53]
    """
    return ((np.arange(m, dtype=np.int64) * 7 + rank * 31 + 1) % 251).astype(np.uint8)


def bcast_payload(m: int) -> np.ndarray:
    """The ``m`` bytes the root broadcasts in ``python -m calibrate measure``.

    >>> bcast_payload(3).tolist()
    [5, 18, 31]
    """
    return ((np.arange(m, dtype=np.int64) * 13 + 5) % 256).astype(np.uint8)


class TreeExecutor:
    """One rank's part of bcast/scatter/gather over a tree on a transport, for one message size ``m`` (bytes).

    ``buf``: the staging buffer (bytes, this rank's subtree's blocks in preorder; bcast uses its first ``m``),
    allocated when not given; ``tag``: the tag of every message."""

    def __init__(self, tr: Any, tree: Any, m: int, buf: np.ndarray | None = None, tag: int = TAG) -> None:
        self.tr, self.tree, self.m, self.tag = tr, tree, int(m), tag
        rank = tr.rank
        self.parent = int(tree.parent[rank])
        self.children = tuple(int(c) for c in tree.children[rank])
        self.subsize = tree.subtree_size
        # Preorder of this rank's subtree (itself first, then each child's subtree in send order): every child's
        # subtree is one contiguous run, so scatter/gather move one contiguous slice per edge.
        self.sub = subtree_preorder(tree, rank)
        self.pos = {r: i for i, r in enumerate(self.sub)}
        self.buf = np.zeros(len(self.sub) * self.m, dtype=np.uint8) if buf is None else buf

    # ops (the timed part) ---------------------------------------------------------------------------------
    def bcast(self) -> None:
        buf = self.buf[: self.m]
        if self.parent >= 0:
            self.tr.recv(buf, self.parent, self.tag)
        for c in self.children:
            self.tr.send(buf, c, self.tag)

    def scatter(self) -> None:
        m, buf = self.m, self.buf
        if self.parent >= 0:
            self.tr.recv(buf, self.parent, self.tag)
        for c in self.children:
            i = self.pos[c]
            self.tr.send(buf[i * m : (i + int(self.subsize[c])) * m], c, self.tag)

    def gather(self) -> None:
        m, buf = self.m, self.buf
        if self.children:  # each child's subtree data lands in place, taken in arrival order
            slots = [(c, buf[self.pos[c] * m : (self.pos[c] + int(self.subsize[c])) * m]) for c in self.children]
            self.tr.recv_each(slots, self.tag)
        if self.parent >= 0:
            self.tr.send(buf, self.parent, self.tag)

    # payload set-up and checks (untimed) ------------------------------------------------------------------
    def setup(self, op: str) -> None:
        m, rank, root = self.m, self.tr.rank, self.tree.root
        self.buf[:] = 0
        if op == "bcast" and rank == root:
            self.buf[:m] = bcast_payload(m)
        elif op == "scatter" and rank == root:
            for i, r in enumerate(self.sub):
                self.buf[i * m : (i + 1) * m] = payload_block(r, m)
        elif op == "gather":
            self.buf[:m] = payload_block(rank, m)

    def check(self, op: str) -> str:
        """'' if this rank holds the right bytes after ``op``, else what is wrong."""
        m, rank, root = self.m, self.tr.rank, self.tree.root
        if op == "bcast":
            ok = np.array_equal(self.buf[:m], bcast_payload(m))
        elif op == "scatter":
            ok = np.array_equal(self.buf[:m], payload_block(rank, m))
        elif rank == root:
            ok = all(np.array_equal(self.buf[i * m : (i + 1) * m], payload_block(r, m)) for i, r in enumerate(self.sub))
        else:
            ok = True
        return "" if ok else f"{op} over {self.tree.name or 'tree'} delivered wrong bytes ({m} B) on rank {rank}"
