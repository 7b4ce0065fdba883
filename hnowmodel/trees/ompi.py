"""Open MPI's tree shapes (``ompi/mca/coll/base/coll_base_topo.c``, v5.0.x).

Each constructor follows one topology builder of Open MPI's coll/base; the send order is the builder's
``tree_next`` order, which is the order the bcast algorithms post their sends in (coll_base_bcast.c:
``ompi_coll_base_bcast_intra_generic`` isends to tree_next[0], [1], ... and then waits for all). Open MPI's
k-nomial tree (``ompi_coll_base_topo_build_kmtree``) is :func:`~hnowmodel.trees.knomial`: the same parents and the
same order.

>>> ompi_binomial(8).children[0]
(1, 2, 4)
"""

from __future__ import annotations

import numpy as np

from ..errors import TreeError
from .generic import sequential
from .tree import Tree, _check_n_root, _rotate, _tree_arg, from_children

__all__ = [
    "ompi_binomial",
    "ompi_in_order_binomial",
    "ompi_tree",
    "ompi_chain",
    "ompi_linear",
    "ompi_in_order_bintree",
]


def ompi_binomial(n: int, root: int = 0) -> Tree:
    """Open MPI's binomial tree, ``ompi_coll_base_topo_build_bmtree`` (bcast algorithm 6, ``binomial``).

    Relative rank v's parent clears v's *highest* set bit (MPICH's clears the lowest); v's children are
    ``v + 2**j`` for every ``2**j > v``, sent to in increasing j - the nearest child first, which heads the largest
    subtree. The same shape as :func:`binomial`, labelled differently: with 8 ranks Open MPI's root sends to 1, 2,
    4 and rank 1 to 3, 5, 7, where MPICH's sends to 4, 2, 1.

    >>> t = ompi_binomial(8)
    >>> t.children[0], t.children[1], t.children[2], t.children[3]
    ((1, 2, 4), (3, 5), (6,), (7,))
    >>> ompi_binomial(4, root=2).children[2]
    (3, 0)
    """
    _check_n_root(n, root)
    rel = np.arange(n, dtype=np.int64)
    high = np.zeros(n, dtype=np.int64)
    nz = rel > 0
    high[nz] = np.int64(1) << (np.frexp(rel[nz].astype(float))[1] - 1).astype(np.int64)  # highest set bit
    parent_rel = np.where(nz, rel - high, -1)
    # child c = p + 2**j with 2**j > p: its position is j - bit_length(p) + 1
    j = np.frexp(high.astype(float))[1] - 1
    pbits = np.frexp(np.maximum(parent_rel, 0).astype(float))[1]  # bit_length (0 for the root)
    childrank = np.where(nz, j - pbits + 1, 0)
    return _rotate(parent_rel, childrank, root, f"ompi-binomial(root={root})" if root else "ompi-binomial")


def ompi_in_order_binomial(n: int, root: int = 0) -> Tree:
    """Open MPI's in-order binomial tree, ``ompi_coll_base_topo_build_in_order_bmtree``, in its ``tree_next``
    order: the shape and labels of :func:`binomial` (parent clears the lowest set bit) with the children in
    increasing distance - the smallest subtree first.

    Open MPI's binomial gather (``ompi_coll_base_gather_intra_binomial``) receives from the children in this
    order; its binomial scatter (``ompi_coll_base_scatter_intra_binomial``) walks ``tree_next`` backwards and so
    sends in :func:`binomial`'s order, the farthest child first.

    >>> ompi_in_order_binomial(8).children[0], ompi_in_order_binomial(8).children[4]
    ((1, 2, 4), (5, 6))
    >>> from hnowmodel.trees import binomial
    >>> ompi_in_order_binomial(8).parent.tolist() == binomial(8).parent.tolist()
    True
    """
    _check_n_root(n, root)
    rel = np.arange(n, dtype=np.int64)
    low = rel & -rel
    parent_rel = np.where(rel > 0, rel - low, -1)
    childrank = np.where(rel > 0, np.frexp(low.astype(float))[1], 0)  # child p + 2**j is sent to (j + 1)-th
    return _rotate(parent_rel, childrank, root, "ompi-in-order-binomial")


def ompi_tree(n: int, fanout: int = 2, root: int = 0) -> Tree:
    """Open MPI's n-ary tree, ``ompi_coll_base_topo_build_tree(fanout)``; with fanout 2 the binary tree of
    bcast algorithms 5 (``binary_tree``) and 4 (``split_binary_tree``).

    Ranks fill the tree level by level: relative rank v on level L (``delta = fanout**L``) sends to
    ``v + delta``, ``v + 2*delta``, … ``v + fanout*delta``, in that order. Unlike :func:`kary` (a heap), the
    children of one parent are ``delta`` apart.

    >>> t = ompi_tree(7, 2)
    >>> t.children[0], t.children[1], t.children[2]
    ((1, 2), (3, 5), (4, 6))
    >>> ompi_tree(10, 3).children[1]
    (4, 7)
    """
    _check_n_root(n, root)
    f = _tree_arg(fanout, "ompi-tree", lo=1)
    parent_rel = np.full(n, -1, dtype=np.int64)
    childrank = np.zeros(n, dtype=np.int64)
    start, delta = 0, 1  # first relative rank of the level, fanout**level
    while start < n:
        level = np.arange(start, min(start + delta, n), dtype=np.int64)
        for i in range(1, f + 1):
            kids = level + delta * i
            kids = kids[kids < n]
            parent_rel[kids] = kids - delta * i
            childrank[kids] = i
        start, delta = start + delta, delta * f
    return _rotate(parent_rel, childrank, root, f"ompi-tree:{f}")


def ompi_chain(n: int, fanout: int = 4, root: int = 0) -> Tree:
    """Open MPI's chains, ``ompi_coll_base_topo_build_chain(fanout)``: the root heads ``fanout`` chains of
    consecutive relative ranks, the first ``(n-1) % fanout`` of them one rank longer, and sends to the heads in
    order. Bcast algorithm 2 (``chain``, fanout ``coll_tuned_bcast_algorithm_chain_fanout``, default 4);
    fanout 1 is algorithm 3 (``pipeline``), which is :func:`chain`.

    >>> ompi_chain(6, 4).children[0], ompi_chain(6, 4).children[1]
    ((1, 3, 4, 5), (2,))
    >>> from hnowmodel.trees import chain
    >>> ompi_chain(5, 1) == chain(5)
    True
    """
    _check_n_root(n, root)
    f = min(_tree_arg(fanout, "ompi-chain", lo=1), max(n - 1, 1))
    children: list[list[int]] = [[] for _ in range(n)]
    longest, extra = divmod(n - 1, f)
    head = 1
    for c in range(f if n > 1 else 0):
        length = longest + (1 if c < extra else 0)
        run = list(range(head, head + length))
        children[0].append(run[0])
        for a, b in zip(run[:-1], run[1:], strict=True):
            children[a].append(b)
        head += length
    rel = from_children(children)
    return _rotate(rel.parent, rel.childrank, root, f"ompi-chain:{f}")


def ompi_linear(n: int, root: int = 0) -> Tree:
    """The root sends to every other rank in rank order 0, 1, …, n-1, skipping itself: Open MPI's basic linear
    bcast/scatter (``ompi_coll_base_bcast_intra_basic_linear``, ``..._scatter_intra_basic_linear``). Differs from
    :func:`sequential` (which starts after the root) only for a root other than 0.

    >>> ompi_linear(4, root=2).children[2]
    (0, 1, 3)
    """
    _check_n_root(n, root)
    return sequential(n, root, [r for r in range(n) if r != root])


def ompi_in_order_bintree(n: int) -> Tree:
    """Open MPI's in-order binary tree, ``ompi_coll_base_topo_build_in_order_bintree``: always rooted at rank
    ``n - 1``, whose left child ``n - 2`` heads the upper half of the ranks below it and right child
    ``n//2 - 1`` the lower half, recursively. Open MPI builds it for non-commutative reductions only (no bcast,
    scatter or gather runs over it), so it is not in :data:`TREES`, whose trees take any root.

    >>> ompi_in_order_bintree(9).children[8], ompi_in_order_bintree(9).children[7], ompi_in_order_bintree(9).children[5]
    ((7, 3), (6, 5), (4,))
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise TreeError(f"tree size must be a positive integer, got {n!r}")
    children: list[list[int]] = [[] for _ in range(n)]
    # (size, delta, parent) of each subtree still to split, as the builder's loop walks it for every rank
    todo = [(n, 0)]
    while todo:
        size, delta = todo.pop()
        parent = size - 1
        right = size >> 1
        if size - 1 > 0:
            left = parent - 1
            children[parent + delta].append(left + delta)
            todo.append((size - right - 1, delta + right))
            if left > 0:
                children[parent + delta].append(right - 1 + delta)
                todo.append((right, delta))
    return from_children(children, "ompi-in-order-bintree")
