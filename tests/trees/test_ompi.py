"""Open MPI's trees equal Open MPI's own topology builders (ompi/mca/coll/base/coll_base_topo.c, v5.0.x).

Each ``_ompi_*`` below transcribes one builder's per-rank loop, as Open MPI runs it on every rank (its parent
``tree_prev`` and its children ``tree_next`` in order); the constructors in :mod:`hnowmodel.trees` build the whole
tree at once and must agree with it rank by rank, parent and send order alike, for many sizes and roots. The shapes
were also seen on the wire: Open MPI 5.0.11's pml monitoring on 6 ranks showed exactly these edges for bcast
algorithms 2, 3, 5, 6 and 7 (docs/open-mpi.md).
"""

from __future__ import annotations

import pytest

from hnowmodel import trees as T
from hnowmodel.errors import TreeError

SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 16, 17, 31, 33, 64, 100]


def _roots(n):
    return sorted({0, min(1, n - 1), n // 2, n - 1})


def _next_pow2(v):
    """opal_next_poweroftwo: the smallest power of two strictly greater than v (1 for 0)."""
    p = 1
    while p <= v:
        p <<= 1
    return p


def _ompi_bmtree(n, root):
    out = []
    for rank in range(n):
        index = (rank - root) % n
        mask = _next_pow2(index)
        prev = -1 if rank == root else ((index ^ (mask >> 1)) + root) % n
        kids = []
        while mask < n:
            remote = index ^ mask
            if remote >= n:
                break
            kids.append((remote + root) % n)
            mask <<= 1
        out.append((prev, tuple(kids)))
    return out


def _ompi_in_order_bmtree(n, root):
    out = []
    for rank in range(n):
        vrank = (rank - root) % n
        prev, kids, mask = -1, [], 1
        while mask < n:
            remote = vrank ^ mask
            if remote < vrank:
                prev = (remote + root) % n
                break
            if remote < n:
                kids.append((remote + root) % n)
            mask <<= 1
        out.append((prev, tuple(kids)))
    return out


def _pown(f, num):
    return f**num if num >= 0 else 0


def _ompi_build_tree(f, n, root):
    out = []
    for rank in range(n):
        s = (rank - root) % n
        level, num = 0, 0
        while num <= s:
            num += _pown(f, level)
            level += 1
        level -= 1
        delta = _pown(f, level)
        kids = []
        for i in range(f):
            c = s + delta * (i + 1)
            if c >= n:
                break
            kids.append((c + root) % n)
        slimit = level if f == 1 else (_pown(f, level) - 1) // (f - 1)
        sp = s
        if sp < f:
            sp = 0
        else:
            while sp >= slimit:
                sp -= delta // f
        out.append((-1 if rank == root else (sp + root) % n, tuple(kids)))
    return out


def _ompi_build_chain(fanout, n, root):
    out = []
    fanout = max(fanout, 1)
    if n - 1 < fanout:
        fanout = n - 1
    for rank in range(n):
        s = (rank - root) % n
        if fanout <= 1:  # the builder's fanout == 1 case (and the 1-rank communicator)
            prev = -1 if s == 0 else (s - 1 + root) % n
            kids = () if s + 1 >= n else ((s + 1 + root) % n,)
            out.append((prev, kids))
            continue
        maxlen = (n - 1) // fanout
        if (n - 1) % fanout:
            maxlen += 1
            mark = (n - 1) % fanout
        else:
            mark = fanout + 1
        if s == 0:
            nxt = [(root + 1) % n]
            for i in range(1, fanout):
                v = nxt[i - 1] + maxlen
                if i > mark:
                    v -= 1
                nxt.append(v % n)
            out.append((-1, tuple(nxt)))
            continue
        if s - 1 < mark * maxlen:
            column = (s - 1) // maxlen
            head, length = 1 + column * maxlen, maxlen
        else:
            column = mark + (s - 1 - mark * maxlen) // (maxlen - 1)
            head, length = mark * maxlen + 1 + (column - mark) * (maxlen - 1), maxlen - 1
        prev = 0 if s == head else s - 1
        kids = () if s == head + length - 1 or s + 1 >= n else (((s + 1) + root) % n,)
        out.append(((prev + root) % n, kids))
    return out


def _ompi_kmtree(n, root, radix):
    out = []
    for rank in range(n):
        vrank = (rank - root) % n
        prev, mask = -1, 1
        while mask < n:
            if vrank % (radix * mask):
                prev = (vrank // (radix * mask) * (radix * mask) + root) % n
                break
            mask *= radix
        mask //= radix
        kids = []
        while mask > 0:
            for r in range(1, radix):
                c = vrank + mask * r
                if c < n:
                    kids.append((c + root) % n)
            mask //= radix
        out.append((prev, tuple(kids)))
    return out


def _as_builder(tree):
    return [(int(tree.parent[r]), tree.children[r]) for r in range(tree.n)]


@pytest.mark.parametrize("n", SIZES)
def test_ompi_binomial_is_build_bmtree(n):
    for root in _roots(n):
        assert _as_builder(T.ompi_binomial(n, root)) == _ompi_bmtree(n, root), root


@pytest.mark.parametrize("n", SIZES)
def test_ompi_in_order_binomial_is_build_in_order_bmtree(n):
    for root in _roots(n):
        got = T.ompi_in_order_binomial(n, root)
        assert _as_builder(got) == _ompi_in_order_bmtree(n, root), root
        # Open MPI's binomial scatter walks tree_next backwards: that is MPICH's binomial order
        assert got.children == tuple(tuple(reversed(k)) for k in T.binomial(n, root).children)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fanout", [1, 2, 3, 4])
def test_ompi_tree_is_build_tree(n, fanout):
    for root in _roots(n):
        assert _as_builder(T.ompi_tree(n, fanout, root)) == _ompi_build_tree(fanout, n, root), root


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fanout", [1, 2, 3, 4, 8])
def test_ompi_chain_is_build_chain(n, fanout):
    for root in _roots(n):
        assert _as_builder(T.ompi_chain(n, fanout, root)) == _ompi_build_chain(fanout, n, root), root


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("radix", [2, 3, 4])
def test_knomial_is_build_kmtree(n, radix):
    for root in _roots(n):
        assert _as_builder(T.knomial(n, radix, root)) == _ompi_kmtree(n, root, radix), root


def test_the_examples_drawn_in_open_mpis_source():
    # build_tree, fanout 2, 7 ranks: 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6
    assert T.ompi_tree(7, 2).children[:3] == ((1, 2), (3, 5), (4, 6))
    # build_bmtree, 8 ranks (drawn 4 2 1 under 0; tree_next holds them nearest first)
    assert T.ompi_binomial(8).children[:4] == ((1, 2, 4), (3, 5), (6,), (7,))
    # build_in_order_bmtree, 8 ranks: 0 -> 1 2 4; 2 -> 3; 4 -> 5 6; 6 -> 7
    t = T.ompi_in_order_binomial(8)
    assert (t.children[0], t.children[2], t.children[4], t.children[6]) == ((1, 2, 4), (3,), (5, 6), (7,))
    # build_kmtree, 10 ranks: radix 2 -> 8 4 2 1; radix 3 -> 9 3 6 1 2; radix 4 -> 4 8 1 2 3, 4 -> 5 6 7
    assert T.knomial(10, 2).children[0] == (8, 4, 2, 1)
    assert T.knomial(10, 3).children[0] == (9, 3, 6, 1, 2) and T.knomial(10, 3).children[3] == (4, 5)
    assert T.knomial(10, 4).children[0] == (4, 8, 1, 2, 3) and T.knomial(10, 4).children[4] == (5, 6, 7)
    # build_in_order_bintree, 9 ranks: 8 -> 7 3; 7 -> 6 5; 3 -> 2 1; 5 -> 4; 1 -> 0
    t = T.ompi_in_order_bintree(9)
    assert (t.children[8], t.children[7], t.children[3], t.children[5], t.children[1]) == (
        (7, 3),
        (6, 5),
        (2, 1),
        (4,),
        (0,),
    )
    assert [T.ompi_in_order_bintree(k).root for k in (1, 2, 3, 4)] == [0, 1, 2, 3]


def test_pipeline_is_chain_and_linear_starts_at_rank_0():
    for n in (1, 2, 5, 9):
        assert T.ompi_chain(n, 1, root=n - 1) == T.chain(n, root=n - 1)
    assert T.ompi_linear(5, root=3).children[3] == (0, 1, 2, 4)
    assert T.ompi_linear(5) == T.sequential(5)


def test_registered_names_and_bad_fanouts():
    assert T.make_tree("ompi-binomial", 8).children[0] == (1, 2, 4)
    assert T.make_tree("ompi-tree", 7).children[1] == (3, 5)
    assert T.make_tree("ompi-tree:3", 10).children[0] == (1, 2, 3)
    assert T.make_tree("ompi-chain", 6).children[0] == (1, 3, 4, 5)  # Open MPI's default chain fanout, 4
    assert T.make_tree("ompi-in-order-binomial", 4, root=1).children[1] == (2, 3)
    assert T.make_tree("ompi-linear", 3, root=1).children[1] == (0, 2)
    assert "ompi-chain:K" in T.tree_names() and "ompi-tree:K" in T.tree_names()
    with pytest.raises(TreeError, match="ompi-chain:K needs an integer K >= 1"):
        T.make_tree("ompi-chain:0", 4)
    with pytest.raises(TreeError, match="ompi-tree:K needs an integer K >= 1"):
        T.make_tree("ompi-tree:x", 4)
