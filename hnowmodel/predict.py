"""Predicted completion times of point-to-point messages, broadcast, scatter and gather (papers/003, eq. 1-12).

Every function takes a :class:`~hnowmodel.params.Profile`, a layout (the node type of each rank), a
:class:`~hnowmodel.trees.Tree` (or a tree name) and message sizes in bytes, and returns times in µs: one per size,
or with ``per_rank=True`` an array ``(len(sizes), n)`` with each rank's own time. The work is vectorised over
sizes and over ranks (pointer jumping up the tree, segmented scans over siblings), so a 2**20-rank binomial
broadcast takes a fraction of a second.

Which schedule each prediction assumes (store-and-forward everywhere; a rank sends to its children one after
another in the tree's send order):

* ``bcast`` - eq. 6-7: ``T[i] = T[parent] + k*S_parent(m) + X(m) + R_i(m)``, k = i's send position.
* ``scatter`` - eq. 8-9 on the sequential tree; on any other tree the edge into a rank carries its whole subtree's
  data (``subtree_size * m`` bytes), as MPICH's binomial scatter does, and a rank forwards only after it has
  received its own block.
* ``gather`` - eq. 10-12 on the sequential tree (``variant="paper"``: the i-th arrival is the i-th smallest
  ``S_j(m)`` plus ``i*X(m)``); ``variant="link"`` lets the root's inbound link carry one message at a time
  (``arrival_i = max(S_(i)(m), arrival_(i-1)) + X(m)``). The root pays ``R_root(m)`` per message in arrival order
  (eq. 11). On any other tree a rank sends its subtree's data (``subtree_size * m`` bytes) to its parent once it
  has received all of its children's, and every parent applies the same rules to its children.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> ptp(prof, "fast", "slow", [0]).tolist()
[200.0]
>>> bcast(prof, ["fast", "fast"], hm.trees.binomial(2), [0]).tolist()
[170.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import InputError, LayoutError
from .params import Profile
from .trees import Tree, make_tree

__all__ = ["ptp", "bcast", "scatter", "gather", "predict", "OPS", "GATHER_VARIANTS", "as_sizes"]

GATHER_VARIANTS = ("paper", "link")


def as_sizes(sizes: Any) -> np.ndarray:
    """Message sizes in bytes as a 1-D float array; :class:`InputError` on negative or non-finite sizes.

    >>> as_sizes(4096).tolist()
    [4096.0]
    """
    try:
        m = np.atleast_1d(np.asarray(sizes, dtype=float))
    except (TypeError, ValueError):
        raise InputError(f"message sizes must be numbers of bytes, got {sizes!r}") from None
    if m.ndim != 1:
        raise InputError("message sizes must be a flat list of byte counts")
    bad = ~np.isfinite(m) | (m < 0)
    if bad.any():
        raise InputError(f"message size {m[bad][0]:g} is not a non-negative number of bytes")
    return m


def ptp(profile: Profile, src_type: str, dst_type: str, sizes: Any) -> np.ndarray:
    """One-way time ``S_src(m) + X(m) + R_dst(m)`` (eq. 1-4) in µs, one per size.

    >>> from hnowmodel.params import paper_profile
    >>> ptp(paper_profile(), "slow", "slow", [0, 1000]).tolist()
    [230.0, 570.0]
    """
    return np.asarray(profile.ptp_us(src_type, dst_type, as_sizes(sizes)), dtype=float)


# ---- shared machinery ----------------------------------------------------------------------------------------
class _Costs:
    """Per-rank cost coefficients of a layout (numpy arrays over ranks)."""

    def __init__(self, profile: Profile, layout: Sequence[str], tree: Tree) -> None:
        if len(layout) != tree.n:
            raise LayoutError(f"layout has {len(layout)} ranks but the tree has {tree.n}")
        a = profile.arrays(layout)
        self.Sc, self.Sm, self.Rc, self.Rm = a["Sc_us"], a["Sm_us_per_byte"], a["Rc_us"], a["Rm_us_per_byte"]
        self._xc, self._xm = profile.link_matrix()
        self._ti = a["type_index"]
        self._tree = tree

    def wire(self, toward_root: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(Xc, Xm)`` per rank for the edge between it and its parent (root: 0), in the given direction."""
        c = np.flatnonzero(self._tree.parent >= 0)
        src, dst = self._ti[self._tree.parent[c]], self._ti[c]
        if toward_root:
            src, dst = dst, src
        xc, xm = np.zeros(self._tree.n), np.zeros(self._tree.n)
        if (self._xc == self._xc.flat[0]).all() and (self._xm == self._xm.flat[0]).all():
            xc[c], xm[c] = self._xc.flat[0], self._xm.flat[0]  # one network for all pairs: skip the gather
        else:
            xc[c], xm[c] = self._xc[src, dst], self._xm[src, dst]
        return xc, xm


def _resolve(profile: Profile, layout: Sequence[str], tree: Tree | str, root: int) -> tuple[Tree, _Costs]:
    if isinstance(tree, str):
        tree = make_tree(tree, len(layout), root=root, layout=layout, profile=profile)
    return tree, _Costs(profile, layout, tree)


def _levels(tree: Tree) -> list[np.ndarray]:
    """Ranks grouped by depth (``levels[d]`` = ranks at depth d), cached on the tree."""
    got = tree._cache.get("levels")
    if got is None:
        depth = tree.depth
        # a narrow integer key lets numpy use its O(n) radix sort
        key = depth.astype(np.uint16) if depth.max() < 2**16 else depth
        by_depth = np.argsort(key, kind="stable")
        bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
        got = [by_depth[bounds[d] : bounds[d + 1]] for d in range(int(depth.max()) + 1)]
        tree._cache["levels"] = got
    return got


def _sibling_prefix(tree: Tree, weight: np.ndarray, key: str) -> np.ndarray:
    """For each rank c: the sum of ``weight`` over c's siblings sent to before it, c included (root: 0)."""
    got = tree._cache.get(key)
    if got is None:
        got = np.zeros(tree.n, dtype=weight.dtype)
        c = np.flatnonzero(tree.parent >= 0)
        if c.size:
            c = c[np.lexsort((tree.childrank[c], tree.parent[c]))]
            run = np.cumsum(weight[c])
            start = _group_starts(tree.parent[c])
            first = np.flatnonzero(start)
            got[c] = run - (run[first] - weight[c][first])[np.cumsum(start) - 1]
        tree._cache[key] = got
    return got


def _group_starts(keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the first element of each run of equal ``keys``."""
    start = np.ones(keys.shape[0], dtype=bool)
    start[1:] = keys[1:] != keys[:-1]
    return start


def _path_sum(tree: Tree, w: np.ndarray) -> np.ndarray:
    """Sum of ``w[i]`` (the weight of the edge into rank i; 0 at the root) along the path from the root to i."""
    levels = _levels(tree)
    acc = w.astype(float, copy=True)
    if len(levels) <= 64:
        for nodes in levels[1:]:  # parents are final before their children are visited
            acc[nodes] += acc[tree.parent[nodes]]
        return acc
    anc = tree.parent.copy()  # deep trees (chains): pointer jumping, O(n log depth)
    while True:
        live = np.flatnonzero(anc >= 0)
        if live.size == 0:
            return acc
        a = anc[live]
        acc[live] = acc[live] + acc[a]  # fancy indexing reads the old values: a simultaneous update
        anc[live] = anc[a]


def _affine_push_down(
    tree: Tree, costs: _Costs, blocks: Any, before: np.ndarray, m: np.ndarray, per_rank: bool
) -> np.ndarray:
    """Store-and-forward receive times when the edge into rank c carries ``blocks[c] * m`` bytes.

    ``before[c]`` is the number of blocks c's parent sends up to and including c's turn.

    The edge into c costs the parent's send overheads for every sibling up to c's turn, the wire and c's receive:
    ``k*Sc_p + Sm_p*(sum of earlier and own blocks)*m + Xc + Xm*blocks_c*m + Rc_c + Rm_c*blocks_c*m`` - affine in
    m, so every rank's time is ``A + B*m`` with A and B two path sums over the tree (independent of len(m)).
    """
    p = np.maximum(tree.parent, 0)
    xc, xm = costs.wire(toward_root=False)
    a = tree.childrank * costs.Sc[p] + xc + costs.Rc
    b = costs.Sm[p] * before + (xm + costs.Rm) * blocks
    root = tree.root
    a[root] = b[root] = 0.0
    A, B = _path_sum(tree, a), _path_sum(tree, b)
    if per_rank:
        return A[None, :] + m[:, None] * B[None, :]
    # max over ranks of A + B*m, size by size, without materialising (len(m), n) at once
    return np.array([np.max(A + mi * B) for mi in m])


# ---- collectives -----------------------------------------------------------------------------------------------
def bcast(
    profile: Profile, layout: Sequence[str], tree: Tree | str, sizes: Any, *, per_rank: bool = False, root: int = 0
) -> np.ndarray:
    """Broadcast completion time (eq. 6-7) in µs for each message size; the max over ranks of the receive time.

    ``per_rank=True`` returns ``(len(sizes), n)``: when each rank has received the whole message (root: 0).
    ``root`` is used only when ``tree`` is a name.

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import binomial
    >>> bcast(paper_profile(), ["fast"] * 4, binomial(4), [0], per_rank=True).tolist()
    [[0.0, 230.0, 170.0, 340.0]]
    """
    m = as_sizes(sizes)
    tree, costs = _resolve(profile, layout, tree, root)
    return _affine_push_down(tree, costs, 1.0, tree.childrank, m, per_rank)


def scatter(
    profile: Profile, layout: Sequence[str], tree: Tree | str, sizes: Any, *, per_rank: bool = False, root: int = 0
) -> np.ndarray:
    """Scatter completion time in µs; every rank receives its own ``m``-byte block (eq. 8-9 on a sequential tree).

    On a deeper tree the edge into a rank carries its whole subtree's blocks. ``per_rank=True`` gives each rank's
    receive time, ``(len(sizes), n)``.

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import sequential
    >>> scatter(paper_profile(), ["fast"] * 3, sequential(3), [0]).tolist()
    [230.0]
    """
    m = as_sizes(sizes)
    tree, costs = _resolve(profile, layout, tree, root)
    blocks = tree.subtree_size
    return _affine_push_down(tree, costs, blocks, _sibling_prefix(tree, blocks, "subtree-prefix"), m, per_rank)


def _segmented_cumsum(x: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Cumulative sum along axis 1 of ``x`` (K, r) restarting where ``start`` (r,) is True."""
    c = np.cumsum(x, axis=1)
    first = np.flatnonzero(start)
    seg = np.cumsum(start) - 1
    return c - (c[:, first] - x[:, first])[:, seg]


def _segmented_cummax(x: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Running maximum along axis 1 of ``x`` (K, r) restarting where ``start`` is True (exact; O(r log run))."""
    out = x.copy()
    seg = np.cumsum(start) - 1
    r = x.shape[1]
    shift = 1
    while shift < r:
        same = seg[shift:] == seg[:-shift]
        if not same.any():
            break
        out[:, shift:] = np.where(same, np.maximum(out[:, shift:], out[:, :-shift]), out[:, shift:])
        shift *= 2
    return out


def _maxplus_scan(a: np.ndarray, r: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``t_i = max(t_(i-1), a_i) + r_i`` within each run (``t`` before a run = -inf), for all runs at once.

    Unrolled: ``t_i = C_i + max_{l<=i}(a_l - C_(l-1))`` with ``C`` the running sum of ``r``.
    """
    c = _segmented_cumsum(r, start)
    return c + _segmented_cummax(a - (c - r), start)


def gather(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    *,
    variant: str = "paper",
    per_rank: bool = False,
    root: int = 0,
) -> np.ndarray:
    """Gather completion time in µs (eq. 10-12): when the root has received every other rank's ``m`` bytes.

    ``variant="paper"`` is eq. 12 as printed (the i-th arrival is the i-th smallest send completion plus ``i``
    wire times); ``"link"`` lets a receiver's link carry one message at a time. ``per_rank=True`` gives, for each
    rank, the time by which it holds its whole subtree's data (leaves: 0; the root: the completion time).

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import sequential
    >>> gather(paper_profile(), ["fast"] * 3, sequential(3), [0]).tolist()
    [264.0]
    """
    if variant not in GATHER_VARIANTS:
        raise InputError(f"unknown gather variant {variant!r} (choose from: {', '.join(GATHER_VARIANTS)})")
    m = as_sizes(sizes)
    tree, costs = _resolve(profile, layout, tree, root)
    k = m.size
    ready = np.zeros((k, tree.n))
    levels = _levels(tree)
    up_xc, up_xm = costs.wire(toward_root=True)
    # Bottom-up, one tree level at a time: all ranks at depth d report to their parents at once.
    for kids in reversed(levels[1:]):
        par = tree.parent[kids]
        nbytes = tree.subtree_size[kids][None, :] * m[:, None]
        depart = ready[:, kids] + costs.Sc[kids] + costs.Sm[kids] * nbytes
        wire = up_xc[kids] + up_xm[kids] * nbytes
        rcv = costs.Rc[par] + costs.Rm[par] * nbytes
        # Messages reach a parent in departure order (ties by rank), which may differ from size to size.
        for j in range(k):
            o = np.lexsort((kids, depart[j], par))
            start = _group_starts(par[o])
            if variant == "paper":
                arrive = depart[j, o] + _segmented_cumsum(wire[j, o][None, :], start)[0]
            else:
                arrive = _maxplus_scan(depart[j, o][None, :], wire[j, o][None, :], start)[0]
            done = _maxplus_scan(arrive[None, :], rcv[j, o][None, :], start)[0]
            last = np.r_[start[1:], True]  # a parent is ready when its last message has been received
            ready[j, par[o][last]] = done[last]
    return ready if per_rank else ready[:, tree.root].copy()


OPS: dict[str, Callable[..., np.ndarray]] = {"bcast": bcast, "scatter": scatter, "gather": gather}


def predict(op: str, profile: Profile, layout: Sequence[str], tree: Tree | str, sizes: Any, **kw: Any) -> np.ndarray:
    """Dispatch to :data:`OPS` by name; :class:`InputError` names the valid operations.

    >>> from hnowmodel.params import paper_profile
    >>> predict("bcast", paper_profile(), ["slow", "slow"], "sequential", [0]).tolist()
    [230.0]
    """
    if op not in OPS:
        raise InputError(f"unknown operation {op!r} (choose from: {', '.join(OPS)})")
    return OPS[op](profile, layout, tree, sizes, **kw)
