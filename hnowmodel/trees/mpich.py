"""MPICH's own tree shapes beyond :func:`~hnowmodel.trees.binomial`: the ``MPIR_Bcast_intra_tree`` trees of
``tree_type=knomial_1`` (:func:`mpich_knomial1`) and ``knomial_2`` (:func:`mpich_knomial2`); ``tree_type=kary`` is
:func:`~hnowmodel.trees.kary`.

>>> mpich_knomial2(9, 3).children[0]
(6, 3, 2, 1)
"""

from __future__ import annotations

import numpy as np

from .generic import knomial
from .tree import Tree, _check_n_root, _rotate, _tree_arg

__all__ = ["mpich_knomial1", "mpich_knomial2"]


def mpich_knomial2(n: int, k: int = 2, root: int = 0) -> Tree:
    """MPICH's ``tree_type=knomial_2`` tree (``MPII_Treeutil_tree_knomial_2_init``, MPICH 5.0): the parents of
    :func:`knomial`, children sent largest power of k first and, within a power, **largest multiple first** (the
    C loops run digit positions from high to low and digit values from k-1 down to 1). For k = 2 it is
    :func:`binomial`.

    >>> mpich_knomial2(9, 3).children[0]
    (6, 3, 2, 1)
    """
    base = knomial(n, k, root)
    k = _tree_arg(k, "mpich-knomial2")
    rel = (np.arange(n, dtype=np.int64) - root) % n  # relative rank of every rank
    prel = np.where(base.parent >= 0, (base.parent - root) % n, -1)
    nonroot = prel >= 0
    step = rel - np.where(nonroot, prel, 0)  # digit * k**j of the child below its parent
    # a child's power k**j: the largest power of k dividing its step (its lowest non-zero digit is its only one)
    power = np.ones(n, dtype=np.int64)
    rest = step.copy()
    while True:
        move = nonroot & (rest % k == 0) & (rest > 0)
        if not move.any():
            break
        power[move] *= k
        rest[move] //= k
    digit = np.where(nonroot, step // power, 0)
    space = (n - 1) - np.where(nonroot, prel, 0)  # the largest step that still lands on a rank
    # siblings at the same power with a larger digit, then every sibling at a larger power (below the parent's
    # own lowest non-zero digit, any power for the root)
    childrank = np.minimum(k - 1, space // power) - digit + 1
    plow = np.where(prel > 0, _lowest_power(np.maximum(prel, 0), k), np.int64(1) << 62)
    q = power * k
    while True:
        live = nonroot & (q < plow) & (q <= space)
        if not live.any():
            break
        childrank[live] += np.minimum(k - 1, space[live] // q[live])
        q = q * k
    childrank = np.where(nonroot, childrank, 0)
    return Tree(base.parent, childrank, f"mpich-knomial2:{k}")


def _lowest_power(values: np.ndarray, k: int) -> np.ndarray:
    """k ** (position of the lowest non-zero base-k digit) of every value (1 for 0)."""
    low = np.ones(values.shape, dtype=np.int64)
    rest = values.copy()
    while True:
        move = (rest > 0) & (rest % k == 0)
        if not move.any():
            return low
        low[move] *= k
        rest[move] //= k


def mpich_knomial1(n: int, k: int = 2, root: int = 0) -> Tree:
    """MPICH's ``tree_type=knomial_1`` tree (``MPII_Treeutil_tree_knomial_1_init``, MPICH 5.0): a k-nomial tree
    numbered depth first, every subtree a contiguous run of relative ranks. With ``L`` base-k digits in n-1, a
    rank found at step s has the children ``r + 1`` and then every ``k**(L-i-1)``-th rank after it, k-1 per step
    ``i = s..L-1`` (a child added at step i is at step i+1), so it sends to its largest subtree first.

    >>> mpich_knomial1(8, 2).children[0], mpich_knomial1(8, 2).children[1]
    ((1, 5, 7), (2, 4))
    """
    _check_n_root(n, root)
    k = _tree_arg(k, "mpich-knomial1")
    levels = 0
    t = n - 1
    while t:
        levels += 1
        t //= k
    parent_rel = np.full(n, -1, dtype=np.int64)
    childrank = np.zeros(n, dtype=np.int64)
    found: list[list[np.ndarray]] = [[] for _ in range(levels + 1)]  # relative ranks found at each step
    found[0].append(np.zeros(1, dtype=np.int64))
    for s in range(levels):  # a child's step is above its parent's: every step is complete when it is reached
        if not found[s]:
            continue
        nodes = np.concatenate(found[s])
        offset, pos = 1, 1
        for i in range(s, levels):
            for _ in range(1, k):
                c = nodes + offset
                ok = c < n
                if ok.any():
                    parent_rel[c[ok]] = nodes[ok]
                    childrank[c[ok]] = pos
                    found[i + 1].append(c[ok])
                offset += k ** (levels - i - 1)
                pos += 1
    return _rotate(parent_rel, childrank, root, f"mpich-knomial1:{k}")
