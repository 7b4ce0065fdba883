"""Run any tree inside an application: broadcast, scatter and gather over a :class:`hnowmodel.trees.Tree` with mpi4py.

For when no native algorithm of the MPI library matches the tree ``hnow best-tree`` chose: every rank calls the
same function with the same tree (an object, or a tree file ``hnow best-tree -o tree.json`` wrote), as it would call
``comm.Bcast``. Buffers are NumPy arrays (any dtype; bytes are moved); sizes are per rank, as in MPI:

* ``bcast(comm, buf, tree)`` — the root's ``buf`` into every rank's ``buf`` (in place);
* ``scatter(comm, sendbuf, recvbuf, tree)`` — block ``r`` of the root's ``sendbuf`` (``comm.size`` equal blocks, rank
  order) into rank ``r``'s ``recvbuf``; ``sendbuf`` matters only on the root;
* ``gather(comm, sendbuf, recvbuf, tree)`` — every rank's ``sendbuf`` into block ``r`` of the root's ``recvbuf``.

A rank receives from its parent, then sends to its children in the tree's order (scatter: each child gets its whole
subtree's blocks in one message); gather receives the children's subtrees in arrival order. The root is
``tree.root``. Messages use tag :data:`TAG` on ``comm`` (pass a ``comm.Dup()`` to keep them apart from yours).

Example (``mpiexec -n 8 python app.py``)::

    import numpy as np
    from mpi4py import MPI
    from calibrate.treecoll import bcast, gather

    comm = MPI.COMM_WORLD
    data = np.zeros(1 << 16, dtype=np.uint8)
    if comm.rank == 0:
        data[:] = 7
    bcast(comm, data, "tree.json")              # the tree hnow best-tree -o tree.json chose
    mine = np.full(4, comm.rank, dtype=np.int32)
    every = np.empty(4 * comm.size, dtype=np.int32) if comm.rank == 0 else None
    gather(comm, mine, every, "tree.json")
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hnowmodel.errors import TreeError
from hnowmodel.trees import Tree, load_tree, subtree_preorder

__all__ = ["bcast", "scatter", "gather", "TAG"]

#: The tag of every message these functions send.
TAG = 0x7E57


def _tree(comm: Any, tree: Tree | str | os.PathLike) -> Tree:
    t = tree if isinstance(tree, Tree) else load_tree(tree, n=comm.Get_size())
    if t.n != comm.Get_size():
        raise TreeError(f"the tree has {t.n} ranks, the communicator {comm.Get_size()}")
    return t


def _bytes(a: Any, what: str) -> np.ndarray:
    if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
        raise TypeError(f"{what} must be a C-contiguous NumPy array")
    return a.reshape(-1).view(np.uint8)


def bcast(comm: Any, buf: np.ndarray, tree: Tree | str | os.PathLike) -> None:
    """Broadcast the root's ``buf`` to every rank's ``buf`` over ``tree`` (in place)."""
    t, b = _tree(comm, tree), _bytes(buf, "buf")
    rank = comm.Get_rank()
    if t.parent[rank] >= 0:
        comm.Recv(b, int(t.parent[rank]), TAG)
    for c in t.children[rank]:
        comm.Send(b, int(c), TAG)


def scatter(comm: Any, sendbuf: np.ndarray | None, recvbuf: np.ndarray, tree: Tree | str | os.PathLike) -> None:
    """Block ``r`` of the root's ``sendbuf`` (``comm.size`` blocks of ``recvbuf``'s size) into rank ``r``'s
    ``recvbuf``, over ``tree``."""
    t, out = _tree(comm, tree), _bytes(recvbuf, "recvbuf")
    rank, m = comm.Get_rank(), out.size
    sub = subtree_preorder(t, rank)
    stage = np.empty(len(sub) * m, dtype=np.uint8)  # this subtree's blocks, in preorder
    if rank == t.root:
        src = _bytes(sendbuf, "sendbuf")
        if src.size != m * t.n:
            raise ValueError(f"sendbuf holds {src.size} bytes, expected {t.n} blocks of {m}")
        for i, r in enumerate(sub):
            stage[i * m : (i + 1) * m] = src[r * m : (r + 1) * m]
    else:
        comm.Recv(stage, int(t.parent[rank]), TAG)
    pos = {r: i for i, r in enumerate(sub)}
    for c in t.children[rank]:
        i = pos[c]
        comm.Send(stage[i * m : (i + int(t.subtree_size[c])) * m], int(c), TAG)
    out[:] = stage[:m]


def gather(comm: Any, sendbuf: np.ndarray, recvbuf: np.ndarray | None, tree: Tree | str | os.PathLike) -> None:
    """Every rank's ``sendbuf`` into block ``r`` of the root's ``recvbuf`` (``comm.size`` blocks), over ``tree``;
    each rank takes its children's subtrees in arrival order."""
    from mpi4py import MPI

    t, mine = _tree(comm, tree), _bytes(sendbuf, "sendbuf")
    rank, m = comm.Get_rank(), mine.size
    sub = subtree_preorder(t, rank)
    pos = {r: i for i, r in enumerate(sub)}
    stage = np.empty(len(sub) * m, dtype=np.uint8)
    stage[:m] = mine
    kids = [int(c) for c in t.children[rank]]
    reqs = [comm.Irecv(stage[pos[c] * m : (pos[c] + int(t.subtree_size[c])) * m], c, TAG) for c in kids]
    for _ in kids:
        MPI.Request.Waitany(reqs)
    if rank != t.root:
        comm.Send(stage, int(t.parent[rank]), TAG)
        return
    dst = _bytes(recvbuf, "recvbuf")
    if dst.size != m * t.n:
        raise ValueError(f"recvbuf holds {dst.size} bytes, expected {t.n} blocks of {m}")
    for i, r in enumerate(sub):
        dst[r * m : (r + 1) * m] = stage[i * m : (i + 1) * m]
