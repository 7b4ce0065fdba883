"""Communication trees: one representation, validated, with constructors and interop.

A :class:`Tree` over ranks ``0..n-1`` is a parent array (``-1`` at the root) plus each rank's 1-based position in
its parent's send order (``childrank``, 0 at the root). ``children`` lists each rank's children in send order.
All per-rank data are numpy arrays, so trees of 2**20 ranks are cheap to build and to predict over. MPICH's trees
are :func:`binomial` and :func:`knomial`; Open MPI's (``ompi-*``) follow its ``coll_base_topo.c`` builders.

>>> t = binomial(8)
>>> t.children[0], t.children[4]
((4, 2, 1), (6, 5))
>>> t.parent.tolist()
[-1, 0, 0, 2, 0, 4, 4, 6]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .errors import TreeError

__all__ = [
    "Tree",
    "from_parent",
    "from_children",
    "from_dict",
    "load_tree",
    "from_file",
    "from_networkx",
    "binomial",
    "sequential",
    "chain",
    "kary",
    "knomial",
    "mpich_knomial1",
    "mpich_knomial2",
    "ompi_binomial",
    "ompi_in_order_binomial",
    "ompi_tree",
    "ompi_chain",
    "ompi_linear",
    "ompi_in_order_bintree",
    "hierarchical",
    "type_speed_order",
    "TREES",
    "make_tree",
    "tree_names",
    "subtree_preorder",
]


@dataclass(frozen=True, eq=False)
class Tree:
    """A rooted tree over ranks ``0..n-1`` with an ordered child list per rank (the send order).

    Build it with a constructor (:func:`binomial`, :func:`sequential`, ...), :func:`from_parent` or
    :func:`from_children`; the constructor validates it (one root, every rank reached exactly once, no cycles).
    """

    parent: np.ndarray
    childrank: np.ndarray
    name: str = ""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        parent = np.ascontiguousarray(self.parent, dtype=np.int64)
        childrank = np.ascontiguousarray(self.childrank, dtype=np.int64)
        parent.flags.writeable = False
        childrank.flags.writeable = False
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "childrank", childrank)
        self.__dict__["depth"] = _validate(parent, childrank)  # seeds the cached ``depth``

    # ---- shape -------------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of ranks."""
        return int(self.parent.shape[0])

    @cached_property
    def root(self) -> int:
        return int(np.flatnonzero(self.parent < 0)[0])

    @cached_property
    def depth(self) -> np.ndarray:
        """Number of edges from the root to each rank."""
        return _depths(self.parent)

    @cached_property
    def order(self) -> np.ndarray:
        """Ranks sorted so that every parent comes before its children (by depth, then send order)."""
        return np.lexsort((self.childrank, self.parent, self.depth))

    @cached_property
    def nchildren(self) -> np.ndarray:
        """Number of children of each rank."""
        p = self.parent[self.parent >= 0]
        return np.bincount(p, minlength=self.n)

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Each rank's children, in send order (a tuple of tuples; built on first use)."""
        nonroot = np.flatnonzero(self.parent >= 0)
        srt = nonroot[np.lexsort((self.childrank[nonroot], self.parent[nonroot]))]
        ptr = np.concatenate([[0], np.cumsum(self.nchildren)])
        flat = srt.tolist()
        return tuple(tuple(flat[ptr[i] : ptr[i + 1]]) for i in range(self.n))

    @cached_property
    def subtree_size(self) -> np.ndarray:
        """Number of ranks in each rank's subtree (itself included)."""
        size = np.ones(self.n, dtype=np.int64)
        order = self.order
        for d in range(int(self.depth.max()), 0, -1):
            nodes = order[self.depth[order] == d]
            np.add.at(size, self.parent[nodes], size[nodes])
        return size

    def relabel(self, perm: Sequence[int], name: str | None = None) -> Tree:
        """The same shape with tree position ``i`` given to rank ``perm[i]``.

        >>> sequential(3).relabel([2, 0, 1]).parent.tolist()
        [2, 2, -1]
        """
        perm = np.asarray(perm, dtype=np.int64)
        if sorted(perm.tolist()) != list(range(self.n)):
            raise TreeError(f"relabel: expected a permutation of 0..{self.n - 1}")
        parent = np.empty(self.n, dtype=np.int64)
        childrank = np.empty(self.n, dtype=np.int64)
        parent[perm] = np.where(self.parent >= 0, perm[np.maximum(self.parent, 0)], -1)
        childrank[perm] = self.childrank
        return Tree(parent, childrank, self.name if name is None else name)

    # ---- interop -----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"name", "root", "parent": [...], "children": [[...], ...]}`` (children in send order)."""
        return {
            "name": self.name,
            "root": self.root,
            "parent": self.parent.tolist(),
            "children": [list(c) for c in self.children],
        }

    def to_networkx(self):
        """A ``networkx.DiGraph`` with edges parent -> child carrying ``order`` (1-based send position)."""
        import networkx as nx

        g = nx.DiGraph(name=self.name)
        g.add_nodes_from(range(self.n))
        for c in np.flatnonzero(self.parent >= 0).tolist():
            g.add_edge(int(self.parent[c]), c, order=int(self.childrank[c]))
        return g

    def __repr__(self) -> str:
        return f"Tree(name={self.name!r}, n={self.n}, root={self.root})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Tree)
            and np.array_equal(self.parent, other.parent)
            and np.array_equal(self.childrank, other.childrank)
        )

    def __hash__(self) -> int:
        return hash((self.parent.tobytes(), self.childrank.tobytes()))


def _depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every rank by pointer jumping (O(n log depth)); raises TreeError on a cycle."""
    n = parent.shape[0]
    dist = (parent >= 0).astype(np.int64)  # edges from each rank up to its current ancestor ``anc``
    anc = parent.copy()
    for _ in range(max(1, int(n).bit_length()) + 1):
        live = anc >= 0
        if not live.any():
            return dist
        a = anc[live]
        new_dist, new_anc = dist.copy(), anc.copy()
        new_dist[live] = dist[live] + dist[a]
        new_anc[live] = anc[a]
        dist, anc = new_dist, new_anc
    bad = int(np.flatnonzero(anc >= 0)[0])
    raise TreeError(f"tree has a cycle through rank {bad} (not every rank is reached from the root)")


def _validate(parent: np.ndarray, childrank: np.ndarray) -> np.ndarray:
    """Raise TreeError unless the arrays form a valid tree; return the depth of every rank."""
    n = parent.shape[0]
    if parent.ndim != 1 or n == 0:
        raise TreeError("tree needs a 1-D parent array with at least one rank")
    if childrank.shape != parent.shape:
        raise TreeError(f"tree childrank has {childrank.shape[0]} entries for {n} ranks")
    roots = np.flatnonzero(parent < 0)
    if len(roots) != 1:
        raise TreeError(f"tree must have exactly one root (parent -1), found {len(roots)}")
    if (parent < -1).any() or (parent >= n).any():
        bad = int(np.flatnonzero((parent < -1) | (parent >= n))[0])
        raise TreeError(f"tree rank {bad}: parent {int(parent[bad])} is not a rank in 0..{n - 1}")
    if (parent == np.arange(n)).any():
        bad = int(np.flatnonzero(parent == np.arange(n))[0])
        raise TreeError(f"tree rank {bad} is its own parent")
    if childrank[roots[0]] != 0:
        raise TreeError("tree root must have childrank 0")
    nonroot = np.flatnonzero(parent >= 0)
    p, k = parent[nonroot], childrank[nonroot]
    counts = np.bincount(p, minlength=n)
    if (k < 1).any() or (k > counts[p]).any():
        bad = int(nonroot[np.flatnonzero((k < 1) | (k > counts[p]))[0]])
        raise TreeError(f"tree rank {bad}: send position {int(childrank[bad])} is not in 1..{counts[parent[bad]]}")
    # Positions among siblings must be distinct: each (parent, position) slot is used exactly once.
    offset = np.cumsum(counts) - counts
    if (np.bincount(offset[p] + k - 1, minlength=nonroot.size) != 1).any():
        raise TreeError("tree has two children with the same send position under one parent")
    return _depths(parent)  # raises on cycles (a cycle means some rank is never reached from the root)


def from_parent(parent: Sequence[int], childrank: Sequence[int] | None = None, name: str = "") -> Tree:
    """A tree from a parent array; without ``childrank`` children are sent to in increasing rank order.

    >>> from_parent([-1, 0, 0]).children
    ((1, 2), (), ())
    """
    parent = _int_array(parent, "parent")
    if childrank is None:
        childrank = np.zeros_like(parent)
        nonroot = np.flatnonzero(parent >= 0)
        if nonroot.size:
            srt = nonroot[np.lexsort((nonroot, parent[nonroot]))]
            ps = parent[srt]
            start = np.r_[True, ps[1:] != ps[:-1]]
            grp = np.cumsum(start) - 1
            first = np.flatnonzero(start)
            childrank[srt] = np.arange(srt.size) - first[grp] + 1
    return Tree(parent, _int_array(childrank, "childrank"), name)


def _int_array(values: Any, what: str) -> np.ndarray:
    """``values`` as an int64 array; floats (even ``1.0``), booleans and strings are refused, not truncated."""
    arr = np.asarray(values)
    if arr.size and arr.dtype.kind not in "iu":
        raise TreeError(f"tree {what} must hold integer ranks, got {arr.dtype} values")
    return arr.astype(np.int64)


def from_children(children: Sequence[Sequence[int]], name: str = "") -> Tree:
    """A tree from each rank's ordered child list (the send order).

    >>> from_children([[2, 1], [], []]).childrank.tolist()
    [0, 2, 1]
    """
    n = len(children)
    parent = np.full(n, -1, dtype=np.int64)
    childrank = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    for p, kids in enumerate(children):
        for k, c in enumerate(kids, start=1):
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < n:
                raise TreeError(f"tree children[{p}]: {c!r} is not a rank in 0..{n - 1}")
            if seen[c]:
                raise TreeError(f"tree rank {c} has more than one parent")
            seen[c] = True
            parent[c], childrank[c] = p, k
    return Tree(parent, childrank, name)


def _int_list(value: Any, field: str) -> list[int]:
    """``value`` as a list of ints; :class:`TreeError` names ``field`` (and the index) for anything else.

    JSON numbers with a fraction or a ``.0`` (``1.5``, ``1.0``), booleans and strings are not ranks.
    """
    if not isinstance(value, list):
        raise TreeError(f"field {field!r} must be a list of integers, got {type(value).__name__}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TreeError(f"field {field!r}[{i}]: {v!r} is not an integer rank")
    return [int(v) for v in value]


def from_dict(doc: Any, where: str = "tree") -> Tree:
    """A tree from its JSON form, as :meth:`Tree.to_dict` and ``hnow best-tree -o`` write it.

    ``parent`` (``-1`` at the root) and/or ``children`` (each rank's children in send order) give the shape; when
    both are present they must agree, and ``children`` gives the send order. ``childrank`` (1-based send
    positions) may replace ``children``; ``root``, when present, must be the root. Other keys (``name``,
    ``time_us``, ...) are kept as the name or ignored. Every rank must be a JSON integer (``1.0`` and ``true``
    are refused); :class:`TreeError` names the field. ``where`` prefixes the messages (e.g. the file name).

    >>> from_dict({"parent": [-1, 0, 0], "children": [[2, 1], [], []], "time_us": 12.5}).children[0]
    (2, 1)
    >>> from_dict({"parent": [-1, 1.5]})
    Traceback (most recent call last):
    ...
    hnowmodel.errors.TreeError: tree: field 'parent'[1]: 1.5 is not an integer rank
    """
    try:
        return _from_dict(doc)
    except TreeError as e:
        raise TreeError(f"{where}: {e}") from None


def _from_dict(doc: Any) -> Tree:
    if not isinstance(doc, dict):
        raise TreeError(f"tree document must be a JSON object with 'children' or 'parent', got {type(doc).__name__}")
    if "children" not in doc and "parent" not in doc:
        raise TreeError("tree document needs 'children' or 'parent'")
    name = doc.get("name", "")
    if not isinstance(name, str):
        raise TreeError(f"field 'name' must be a string, got {name!r}")
    children = None
    if "children" in doc:
        kids = doc["children"]
        if not isinstance(kids, list):
            raise TreeError(f"field 'children' must be a list of lists, got {type(kids).__name__}")
        children = [_int_list(k, f"children[{i}]") for i, k in enumerate(kids)]
    if "parent" in doc:
        parent = _int_list(doc["parent"], "parent")
        if children is not None:
            if len(children) != len(parent):
                raise TreeError(f"field 'children' has {len(children)} entries, 'parent' has {len(parent)}")
            listed_under = [-1] * len(parent)
            for p, kids in enumerate(children):
                for c in kids:
                    if 0 <= c < len(parent):
                        if parent[c] != p:
                            raise TreeError(f"field 'children'[{p}] lists rank {c}, whose 'parent' is {parent[c]}")
                        listed_under[c] = p
            for r, p in enumerate(parent):
                if p >= 0 and listed_under[r] != p:
                    raise TreeError(f"rank {r}: field 'parent' is {p} but 'children'[{p}] does not list it")
            tree = from_children(children, name)
        else:
            childrank = _int_list(doc["childrank"], "childrank") if "childrank" in doc else None
            tree = from_parent(parent, childrank, name)
    else:
        tree = from_children(children, name)
    if "root" in doc:
        root = doc["root"]
        if isinstance(root, bool) or not isinstance(root, int) or root != tree.root:
            raise TreeError(f"field 'root' is {root!r} but the tree's root is rank {tree.root}")
    return tree


def subtree_preorder(tree: Tree, rank: int) -> list[int]:
    """``rank`` and every rank below it, each child's subtree one contiguous run, children in send order: the block
    order in which scatter and gather move a subtree's data in one message per edge.

    >>> subtree_preorder(binomial(8), 0)
    [0, 4, 6, 7, 5, 2, 3, 1]
    """
    out, stack = [], [int(rank)]
    while stack:
        r = stack.pop()
        out.append(r)
        stack.extend(reversed([int(c) for c in tree.children[r]]))
    return out


def load_tree(path: str | os.PathLike, n: int | None = None, root: int | None = None) -> Tree:
    """Read a tree file (see :func:`from_dict`) with :func:`hnowmodel.io.read_json`.

    With ``n`` and/or ``root`` the tree must have that many ranks and that root; :class:`TreeError` says which
    does not match. An unreadable or non-JSON file raises :class:`~hnowmodel.errors.InputError` naming it.
    """
    from .io import read_json

    where = f"tree file {str(path)!r}"
    tree = from_dict(read_json(path, "tree file"), where)
    if n is not None and tree.n != n:
        raise TreeError(f"{where} has {tree.n} ranks, expected {n}")
    if root is not None and tree.root != root:
        raise TreeError(f"{where} is rooted at rank {tree.root}, expected root {root}")
    return tree


from_file = load_tree


def from_networkx(g, name: str = "") -> Tree:
    """A tree from a ``networkx.DiGraph`` with nodes 0..n-1 and parent->child edges (``order`` attribute optional)."""
    n = g.number_of_nodes()
    if sorted(g.nodes) != list(range(n)):
        raise TreeError("networkx tree nodes must be 0..n-1")
    parent = np.full(n, -1, dtype=np.int64)
    for u, v in g.edges:
        if parent[v] >= 0:
            raise TreeError(f"tree rank {v} has more than one parent")
        parent[v] = u
    if all("order" in d for _, _, d in g.edges(data=True)) and g.number_of_edges():
        childrank = np.zeros(n, dtype=np.int64)
        for _, v, d in g.edges(data=True):
            childrank[v] = d["order"]
        return Tree(parent, childrank, name or g.graph.get("name", ""))
    return from_parent(parent, None, name or g.graph.get("name", ""))


def _check_n_root(n: int, root: int) -> None:
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise TreeError(f"tree size must be a positive integer, got {n!r}")
    if not 0 <= root < n:
        raise TreeError(f"root {root} is not a rank in 0..{n - 1}")


def _rotate(parent_rel: np.ndarray, childrank: np.ndarray, root: int, name: str) -> Tree:
    """Map a tree over relative ranks (root at 0) to actual ranks ``(rel + root) % n``."""
    n = parent_rel.shape[0]
    rank = (np.arange(n) + root) % n
    parent = np.full(n, -1, dtype=np.int64)
    cr = np.zeros(n, dtype=np.int64)
    parent[rank] = np.where(parent_rel >= 0, (parent_rel + root) % n, -1)
    cr[rank] = childrank
    return Tree(parent, cr, name)


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


def _tree_arg(k: Any, name: str, lo: int = 2) -> int:
    try:
        k = int(k)
    except (TypeError, ValueError):
        raise TreeError(f"tree {name}:K needs an integer K >= {lo}, got {k!r}") from None
    if k < lo:
        raise TreeError(f"tree {name}:K needs an integer K >= {lo}, got {k}")
    return k


# ---- Open MPI's trees (ompi/mca/coll/base/coll_base_topo.c, v5.0.x) ---------------------------------------------
# Each constructor follows one topology builder of Open MPI's coll/base; the send order is the builder's
# ``tree_next`` order, which is the order the bcast algorithms post their sends in (coll_base_bcast.c:
# ``ompi_coll_base_bcast_intra_generic`` isends to tree_next[0], [1], ... and then waits for all). Open MPI's
# k-nomial tree (``ompi_coll_base_topo_build_kmtree``) is :func:`knomial`: the same parents and the same order.


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


def type_speed_order(profile: Any, m: float = 0.0) -> list[str]:
    """Node type names from fastest to slowest: by send plus receive overhead at ``m`` bytes (name breaks ties).

    >>> from hnowmodel.params import paper_profile
    >>> type_speed_order(paper_profile())
    ['fast', 'slow']
    """
    return sorted(profile.types, key=lambda t: (profile.types[t].send_us(m) + profile.types[t].recv_us(m), t))


def hierarchical(layout: Sequence[str], profile: Any, root: int = 0, m: float = 0.0) -> Tree:
    """The paper's hierarchical tree (Fig. 6c): the root reaches the ranks of the fastest type by a binomial tree
    among them; then each of those sends, one after another, to its share of the other ranks.

    The fastest type is the one with the smallest send + receive overhead at ``m`` bytes. The root heads the
    fast group whatever its own type. Slower ranks are dealt out round-robin, slowest types first, to the fast
    ranks in the order they receive, so early receivers serve the ranks that need the most time.

    >>> from hnowmodel.params import paper_profile
    >>> hierarchical(["fast", "fast", "slow", "slow"], paper_profile()).children
    ((1, 2), (3,), (), ())
    """
    if profile is None or layout is None:
        raise TreeError("tree 'hierarchical' needs a layout and a profile (it groups ranks by node type)")
    n = len(layout)
    _check_n_root(n, root)
    speed = type_speed_order(profile, m)
    fastest = speed[0]
    rank_of_type = {t: i for i, t in enumerate(speed)}
    fast = [root] + [r for r in range(n) if r != root and layout[r] == fastest]
    others = sorted((r for r in range(n) if r != root and layout[r] != fastest), key=lambda r: -rank_of_type[layout[r]])
    inner = binomial(len(fast), 0)
    children: list[list[int]] = [[] for _ in range(n)]
    for i, kids in enumerate(inner.children):
        children[fast[i]] = [fast[j] for j in kids]
    # fast ranks in the order their binomial tree reaches them (depth, then send position)
    reached = [fast[i] for i in np.lexsort((inner.childrank, inner.depth)).tolist()]
    for i, r in enumerate(others):
        children[reached[i % len(reached)]].append(r)
    return from_children(children, "hierarchical")


TreeFactory = Callable[..., Tree]


def _chosen_tree(method: str) -> TreeFactory:
    """``fnf`` / ``optimal[:OP][:SIZE]``: trees chosen for the layout's node types by :mod:`hnowmodel.search`,
    imported when such a tree is asked for (so the registry is complete without importing search first, and
    no module fills it in at import time)."""

    def factory(n: int, root: int = 0, arg: str | None = None, layout: Any = None, profile: Any = None) -> Tree:
        from . import search

        return search.chosen_tree_factory(method)(n, root=root, arg=arg, layout=layout, profile=profile)

    return factory


# Name -> constructor(n, root, arg, layout, profile). ``arg`` is the text after ':' in e.g. ``kary:4``.
TREES: dict[str, TreeFactory] = {
    "binomial": lambda n, root=0, arg=None, layout=None, profile=None: binomial(n, root),
    "sequential": lambda n, root=0, arg=None, layout=None, profile=None: sequential(n, root),
    "chain": lambda n, root=0, arg=None, layout=None, profile=None: chain(n, root),
    "kary": lambda n, root=0, arg=None, layout=None, profile=None: kary(n, 2 if arg is None else arg, root),
    "knomial": lambda n, root=0, arg=None, layout=None, profile=None: knomial(n, 2 if arg is None else arg, root),
    "mpich-knomial1": lambda n, root=0, arg=None, layout=None, profile=None: mpich_knomial1(
        n, 2 if arg is None else arg, root
    ),
    "mpich-knomial2": lambda n, root=0, arg=None, layout=None, profile=None: mpich_knomial2(
        n, 2 if arg is None else arg, root
    ),
    "ompi-binomial": lambda n, root=0, arg=None, layout=None, profile=None: ompi_binomial(n, root),
    "ompi-in-order-binomial": lambda n, root=0, arg=None, layout=None, profile=None: ompi_in_order_binomial(n, root),
    "ompi-tree": lambda n, root=0, arg=None, layout=None, profile=None: ompi_tree(n, 2 if arg is None else arg, root),
    "ompi-chain": lambda n, root=0, arg=None, layout=None, profile=None: ompi_chain(n, 4 if arg is None else arg, root),
    "ompi-linear": lambda n, root=0, arg=None, layout=None, profile=None: ompi_linear(n, root),
    "hierarchical": lambda n, root=0, arg=None, layout=None, profile=None: _sized_hierarchical(
        n, root, layout, profile
    ),
    "fnf": _chosen_tree("fnf"),
    "optimal": _chosen_tree("optimal"),
}


def _sized_hierarchical(n: int, root: int, layout: Any, profile: Any) -> Tree:
    if layout is not None and len(layout) != n:
        raise TreeError(f"tree 'hierarchical': layout has {len(layout)} ranks, expected {n}")
    return hierarchical(layout, profile, root)


def tree_names() -> list[str]:
    """Names accepted by :func:`make_tree` (``kary:K``, ``knomial:K``, ``mpich-knomial1:K``, ``mpich-knomial2:K``
    and ``ompi-tree:K`` take a parameter, default 2; ``ompi-chain:K`` default 4, Open MPI's default chain fanout)."""
    args = {
        "kary": ":K",
        "knomial": ":K",
        "mpich-knomial1": ":K",
        "mpich-knomial2": ":K",
        "ompi-tree": ":K",
        "ompi-chain": ":K",
        "fnf": "[:SIZE]",
        "optimal": "[:SIZE]",
    }
    return [t + args.get(t, "") for t in TREES] + ["@file.json"]


def make_tree(
    spec: str, n: int, root: int | None = None, layout: Sequence[str] | None = None, profile: Any = None
) -> Tree:
    """Build a tree by name (``binomial``, ``kary:4``, ...) over ``n`` ranks rooted at ``root`` (default 0), or load
    one from a tree file (``@tree.json``, as :meth:`Tree.to_dict` and ``hnow best-tree -o`` write it: see
    :func:`load_tree`); a file must have ``n`` ranks and, when ``root`` is given, that root. :class:`TreeError`
    names the valid choices or what does not match.

    >>> make_tree("sequential", 3).children[0]
    (1, 2)
    """
    if str(spec).startswith("@"):
        return load_tree(str(spec)[1:], n, root)
    root = 0 if root is None else root
    name, _, arg = str(spec).partition(":")
    if name not in TREES:
        raise TreeError(f"unknown tree {spec!r} (choose from: {', '.join(tree_names())})")
    return TREES[name](n, root=root, arg=arg or None, layout=layout, profile=profile)
