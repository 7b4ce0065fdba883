"""The :class:`Tree` type: a parent array and send positions over ranks ``0..n-1``, validated; its readers and
writers (:func:`from_parent`, :func:`from_children`, :func:`from_dict`, :func:`load_tree`, :func:`from_networkx`),
and the helpers every family's constructor shares (a size and root check, rotating a tree built over relative
ranks, reading a ``:K`` parameter).

A :class:`Tree` over ranks ``0..n-1`` is a parent array (``-1`` at the root) plus each rank's 1-based position in
its parent's send order (``childrank``, 0 at the root). ``children`` lists each rank's children in send order.
All per-rank data are numpy arrays, so trees of 2**20 ranks are cheap to build and to predict over.

>>> from_children([[2, 1], [], []]).parent.tolist()
[-1, 0, 0]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from ..errors import TreeError
from ..io import read_json

__all__ = [
    "Tree",
    "from_parent",
    "from_children",
    "from_dict",
    "load_tree",
    "from_file",
    "from_networkx",
    "subtree_preorder",
]

_T = TypeVar("_T")


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

    def cached(self, key: str, fn: Callable[[], _T]) -> _T:
        """``fn()``, computed on the first call for ``key`` and kept with the tree: data derived from the tree alone
        (a predictor's ranks by depth, sibling prefix sums, ...), built once however many predictions use it.
        Callers pick distinct keys (their module's name as a prefix); the value must not be modified.

        >>> t = from_parent([-1, 0, 0])
        >>> t.cached("doc:leaves", lambda: [r for r in range(t.n) if not t.nchildren[r]])
        [1, 2]
        """
        try:
            return self._cache[key]
        except KeyError:
            got = self._cache[key] = fn()
            return got

    def relabel(self, perm: Sequence[int], name: str | None = None) -> Tree:
        """The same shape with tree position ``i`` given to rank ``perm[i]``.

        >>> from hnowmodel.trees import sequential
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

    >>> from hnowmodel.trees import binomial
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


def _tree_arg(k: Any, name: str, lo: int = 2) -> int:
    try:
        k = int(k)
    except (TypeError, ValueError):
        raise TreeError(f"tree {name}:K needs an integer K >= {lo}, got {k!r}") from None
    if k < lo:
        raise TreeError(f"tree {name}:K needs an integer K >= {lo}, got {k}")
    return k
