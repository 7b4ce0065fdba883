"""The generic families: :func:`binomial` (MPICH's binomial tree), :func:`sequential` (the root sends to every
rank in turn), :func:`chain` (a pipeline), :func:`kary` (a k-ary heap) and :func:`knomial` (the k-nomial tree,
also Open MPI's ``ompi_coll_base_topo_build_kmtree``).

>>> t = binomial(8)
>>> t.children[0], t.children[4]
((4, 2, 1), (6, 5))
>>> t.parent.tolist()
[-1, 0, 0, 2, 0, 4, 4, 6]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import TreeError
from .tree import Tree, _check_n_root, _rotate, _tree_arg, from_children

__all__ = ["binomial", "sequential", "chain", "kary", "knomial"]


def binomial(n: int, root: int = 0) -> Tree:
    """MPICH's binomial tree: relative rank r's parent is r with its lowest set bit cleared; a rank sends to
    its farthest child first (largest mask first), exactly as ``MPIR_Bcast_intra_binomial``.

    >>> binomial(4, root=1).children
    ((), (3, 2), (), (0,))
    """
    _check_n_root(n, root)
    rel = np.arange(n, dtype=np.int64)
    low = rel & -rel  # lowest set bit; 0 for the root
    parent_rel = np.where(rel > 0, rel - low, -1)
    # Children of p are p + 2**j for 2**j < u, u = min(lowbit(p), n - p) (any j below n for the root), sent in
    # decreasing j. So the child c = p + 2**j has send position 1 + #{j' > j: 2**j' < u} = bit_length(u - 1) - j,
    # computed in closed form (no loop over bits: this is most of the build time at 2**20 ranks).
    childrank = np.zeros(n, dtype=np.int64)
    nonroot = rel > 0
    p = parent_rel[nonroot]
    u = np.where(p > 0, np.minimum(p & -p, n - p), n)
    j = np.frexp(low[nonroot].astype(float))[1] - 1  # log2 of c's own mask (exact for powers of two)
    childrank[nonroot] = np.frexp((u - 1).astype(float))[1] - j  # frexp exponent = bit_length for ints < 2**53
    return _rotate(parent_rel, childrank, root, f"binomial(root={root})" if root else "binomial")


def sequential(n: int, root: int = 0, order: Sequence[int] | None = None) -> Tree:
    """The root sends to every other rank in turn (MPICH's old linear scatter/gather; eq. 9).

    ``order`` gives the send order (default: increasing rank after the root, wrapping around).

    >>> sequential(4, root=2).children[2]
    (3, 0, 1)
    """
    _check_n_root(n, root)
    if order is None:
        order = [(root + i) % n for i in range(1, n)]
    order = [int(r) for r in order]
    if sorted(order) != sorted(set(range(n)) - {root}):
        raise TreeError(f"sequential order must list every rank except the root {root} once")
    children: list[list[int]] = [[] for _ in range(n)]
    children[root] = order
    return from_children(children, "sequential")


def chain(n: int, root: int = 0) -> Tree:
    """A pipeline: root -> root+1 -> ... (relative ranks), each forwarding to the next.

    >>> chain(3, root=1).parent.tolist()
    [2, -1, 1]
    """
    _check_n_root(n, root)
    rel = np.arange(n, dtype=np.int64)
    return _rotate(rel - 1, (rel > 0).astype(np.int64), root, "chain")


def kary(n: int, k: int = 2, root: int = 0) -> Tree:
    """A k-ary heap-shaped tree: relative rank r's parent is ``(r-1)//k``; children in increasing rank order.

    >>> kary(7, 3).children[0]
    (1, 2, 3)
    """
    _check_n_root(n, root)
    k = _tree_arg(k, "kary")
    rel = np.arange(n, dtype=np.int64)
    parent_rel = np.where(rel > 0, (rel - 1) // k, -1)
    childrank = np.where(rel > 0, (rel - 1) % k + 1, 0)
    return _rotate(parent_rel, childrank, root, f"kary:{k}")


def knomial(n: int, k: int = 2, root: int = 0) -> Tree:
    """The k-nomial tree: relative rank r's parent clears r's lowest non-zero base-k digit; a rank sends to its
    farthest children first (largest power of k first, then increasing multiples). ``knomial(n, 2)`` is
    :func:`binomial`. MPICH's ``tree_type=knomial_2`` has the same parents but sends the multiples of a power in
    decreasing order: :func:`mpich_knomial2`.

    >>> knomial(9, 3).children[0]
    (3, 6, 1, 2)
    """
    _check_n_root(n, root)
    k = _tree_arg(k, "knomial")
    rel = np.arange(n, dtype=np.int64)
    # lowest non-zero digit position (as a power of k) of every relative rank
    low = np.ones(n, dtype=np.int64)
    rest = rel.copy()
    while True:
        move = (rest > 0) & (rest % k == 0)
        if not move.any():
            break
        low[move] *= k
        rest[move] //= k
    digit = np.where(rel > 0, (rel // low) % k, 0)
    parent_rel = np.where(rel > 0, rel - digit * low, -1)
    # send order of the children of p: masks from large to small, multiples j = 1..k-1 ascending within a mask
    p = parent_rel
    plow = np.where(p > 0, low[np.maximum(p, 0)], np.int64(1) << 62)
    childrank = np.zeros(n, dtype=np.int64)
    nonroot = rel > 0
    before = np.zeros(n, dtype=np.int64)
    mask = np.int64(1)
    while mask < n:
        for j in range(1, k):
            exists = (mask < plow) & (p + j * mask < n)
            before += nonroot & exists & (mask > low)
        mask *= k
    childrank[nonroot] = before[nonroot] + digit[nonroot]
    return _rotate(parent_rel, childrank, root, f"knomial:{k}")
