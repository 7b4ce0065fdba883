"""The paper's closed-form engine: point-to-point messages, broadcast, scatter and gather (Banikazemi et al.,
eq. 1-12), in closed form over a tree.

This is one engine, the predictor of the ``paper`` and ``link`` model variants (:mod:`hnowmodel.variants`); the
flow engine (:mod:`hnowmodel.flow`) is the other. To predict as ``hnow predict`` does - the operation's default
variant for the profile (the flow engine on a network profile), any tree spec - call :func:`hnowmodel.predict`
(``hm.predict(op, profile, layout, algorithm, sizes)``); ``hm.predict.bcast``/``scatter``/``gather`` are this
engine's functions, kept there by name.

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
* ``gather`` - eq. 10-12 on the sequential tree (the ``paper`` variant: the i-th arrival is the i-th smallest
  ``S_j(m)`` plus ``i*X(m)``); ``one_at_a_time`` (the ``link`` variant) lets the root's inbound link carry one
  message at a time (``arrival_i = max(S_(i)(m), arrival_(i-1)) + X(m)``). The root pays ``R_root(m)`` per
  message in arrival order (eq. 11). On any other tree a rank sends its subtree's data (``subtree_size * m``
  bytes) to its parent once it has received all of its children's, and every parent applies the same rules to its
  children.

Hosts (a :class:`~hnowmodel.layout.Layout` with several ranks on a host; docs/model.md, "Hosts"): an edge between
two ranks of one host costs the type's shared-memory ``S``, ``X`` and ``R`` (``profile.shm``) in place of the
sender's ``S``, the network's ``X`` and the receiver's ``R``, each at the edge's bytes and regime; a parent's k-th
send starts after the ``S`` of its earlier sends, each on its own edge's line. In a gather only inter-host messages
queue on the receiver's inbound link; a same-host message arrives at its departure plus its shared-memory ``X``, and
the receiver takes its messages in arrival order. With one rank per host every number is the paper's.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> ptp(prof, "fast", "slow", [0]).tolist()
[200.0]
>>> bcast(prof, ["fast", "fast"], hm.trees.binomial(2), [0]).tolist()
[170.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .errors import LayoutError
from .layout import hosts_of, one_per_host
from .params import Profile
from .runopts import Schedule, as_schedule, as_sizes, common_start_us
from .trees import Tree, make_tree

__all__ = ["ptp", "bcast", "scatter", "gather", "as_sizes", "common_start_us"]


def ptp(profile: Profile, src_type: str, dst_type: str, sizes: Any, *, same_host: bool = False) -> np.ndarray:
    """One-way time ``S_src(m) + X(m) + R_dst(m)`` (eq. 1-4) in µs, one per size; between two ranks of one host
    (``same_host``) the type's shared-memory ``S + X + R`` (:meth:`~hnowmodel.params.Profile.ptp_us`).

    >>> from hnowmodel.params import paper_profile
    >>> ptp(paper_profile(), "slow", "slow", [0, 1000]).tolist()
    [230.0, 570.0]
    """
    return np.asarray(profile.ptp_us(src_type, dst_type, as_sizes(sizes), same_host=same_host), dtype=float)


# ---- shared machinery ----------------------------------------------------------------------------------------
_COLS = ("Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte", "Cc_us", "Cm_us_per_byte")


def _tables(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of a regime-free profile: ``(ntypes, 6)`` per-type coefficients (order of ``_COLS``), ``(ntypes, ntypes, 2)``
    link coefficients ``(Xc, Xm)`` indexed by (sender type, receiver type), and ``(ntypes, 6)`` shared-memory
    coefficients ``(Sc, Sm, Rc, Rm, Xc, Xm)`` of each type (NaN where the profile has none)."""
    tt = np.array([[getattr(t, k) for k in _COLS] for t in profile.types.values()], dtype=float)
    xc, xm = profile.link_matrix()
    st = np.full((len(profile.types), 6), np.nan)
    for i, name in enumerate(profile.types):
        c = profile.shm.get(name)
        if c is not None:
            nd, lk = c.node, c.link
            st[i] = (nd.Sc_us, nd.Sm_us_per_byte, nd.Rc_us, nd.Rm_us_per_byte, lk.Xc_us, lk.Xm_us_per_byte)
    return tt, np.stack([xc, xm], axis=-1), st


class _Costs:
    """Cost coefficients of every tree edge for one group of message sizes (numpy arrays over ranks).

    Entry c describes the edge between rank c and its parent; it carries ``blocks[c] * m`` bytes, downward
    (parent sends, c receives: bcast, scatter) or ``toward_root`` (c sends, its parent receives: gather).
    ``Sc, Sm`` are the sender's send line, ``Rc, Rm`` the receiver's receive line and ``Xc, Xm`` the wire's, each
    the line in force at the edge's own byte count; the group's sizes are chosen (:func:`_each_group`) so that
    this is the same line for every size of the group, which keeps every time affine in m within the group.
    An edge between two ranks of one host (``same[c]``; None: no such edge) takes all six from the type's
    shared-memory costs (``profile.shm``) instead of the sender's, the network's and the receiver's.
    Root entries are 0. ``Cc, Cm`` are the root's local-copy line at m (its own block). ``uniform`` is True when
    every edge uses one regime segment and the network, so that all of a parent's sends share one line.
    """

    def __init__(
        self,
        profile: Profile,
        ti: np.ndarray,
        tree: Tree,
        blocks: Any,
        m0: float,
        toward_root: bool,
        same: np.ndarray | None = None,
    ) -> None:
        n = tree.n
        p = np.maximum(tree.parent, 0)
        bps = np.asarray(profile.breakpoints, dtype=float)
        eseg = None
        if bps.size == 0:
            tabs = [_tables(profile)]
        else:
            nbytes = np.array(np.broadcast_to(np.asarray(blocks, dtype=float) * m0, (n,)))
            other = (tree.root - 1 if tree.root else 1) if n > 1 else 0
            nbytes[tree.root] = nbytes[other]  # the root has no edge: give it another rank's byte count
            seg = np.searchsorted(bps, nbytes, side="left")
            if seg.min() == seg.max():
                tabs = [_tables(profile.at(float(nbytes[other])))]
            else:
                _, first, inv = np.unique(seg, return_index=True, return_inverse=True)
                tabs = [_tables(profile.at(float(nbytes[i]))) for i in first]
                eseg = inv.reshape(-1)
        self.uniform = eseg is None and same is None
        self.same = same
        snd_t, rcv_t = (ti, ti[p]) if toward_root else (ti[p], ti)
        if eseg is None:
            tt, lt, _ = tabs[0]
            self.Sc, self.Sm = tt[:, 0][snd_t], tt[:, 1][snd_t]
            self.Rc, self.Rm = tt[:, 2][rcv_t], tt[:, 3][rcv_t]
            if (lt == lt[0, 0]).all():  # one network for all pairs: skip the gather
                self.Xc, self.Xm = np.full(n, lt[0, 0, 0]), np.full(n, lt[0, 0, 1])
            else:
                self.Xc, self.Xm = lt[snd_t, rcv_t, 0], lt[snd_t, rcv_t, 1]
        else:
            TT = np.stack([t for t, _, _ in tabs])
            LT = np.stack([lk for _, lk, _ in tabs])
            self.Sc, self.Sm = TT[eseg, snd_t, 0], TT[eseg, snd_t, 1]
            self.Rc, self.Rm = TT[eseg, rcv_t, 2], TT[eseg, rcv_t, 3]
            self.Xc, self.Xm = LT[eseg, snd_t, rcv_t, 0], LT[eseg, snd_t, rcv_t, 1]
        if same is not None:
            self._shared_memory(profile, ti, tabs, eseg, same)
        for a in (self.Sc, self.Sm, self.Rc, self.Rm, self.Xc, self.Xm):
            a[tree.root] = 0.0
        root_type = profile.at(m0).types[list(profile.types)[int(ti[tree.root])]]
        self.Cc, self.Cm = root_type.Cc_us, root_type.Cm_us_per_byte

    def _shared_memory(
        self, profile: Profile, ti: np.ndarray, tabs: list, eseg: np.ndarray | None, same: np.ndarray
    ) -> None:
        """Give the same-host edges (``same``) their type's shared-memory lines (sender and receiver share it)."""
        st = np.stack([t for _, _, t in tabs])  # (segments, types, 6)
        lacking = np.isnan(st).any(axis=(0, 2))  # types without shared-memory costs
        if lacking.any():
            bad = same & lacking[ti]
            if bad.any():
                profile.shm_costs(list(profile.types)[int(ti[np.argmax(bad)])])  # raises: names the type
        for k, name in enumerate(("Sc", "Sm", "Rc", "Rm", "Xc", "Xm")):
            col = st[0, :, k][ti] if eseg is None else st[:, :, k][eseg, ti]
            np.copyto(getattr(self, name), col, where=same)


def _resolve(
    profile: Profile, layout: Sequence[str], tree: Tree | str, root: int
) -> tuple[Tree, np.ndarray, np.ndarray | None]:
    """The tree (built by name if need be), the type index of every rank, and which edges join two ranks of one
    host (``same[c]``: the edge into rank c; None when there is no such edge - one rank per host)."""
    if isinstance(tree, str):
        tree = make_tree(tree, len(layout), root=root, layout=layout, profile=profile)
    if len(layout) != tree.n:
        raise LayoutError(f"layout has {len(layout)} ranks but the tree has {tree.n}")
    ti = profile.type_index(layout)
    if one_per_host(layout):
        return tree, ti, None
    h = hosts_of(layout)
    same = (tree.parent >= 0) & (h == h[np.maximum(tree.parent, 0)])
    return tree, ti, (same if same.any() else None)


def _each_group(
    profile: Profile,
    ti: np.ndarray,
    tree: Tree,
    m: np.ndarray,
    blocks: Any,
    toward_root: bool,
    fn: Callable[[_Costs, np.ndarray], np.ndarray],
    same: np.ndarray | None = None,
) -> np.ndarray:
    """``fn(costs, sizes)`` over groups of sizes that use the same regime on every edge, back in ``m``'s order.

    Two sizes m1, m2 are in one group when, for every edge's block count b (and for b = 1, the root's own block),
    ``b*m1`` and ``b*m2`` fall in the same regime segment of the profile (:meth:`Profile.segments`). A regime-free
    profile is one group: one vectorised pass, as fast as before regimes existed. Without a same-host edge
    (``same`` None) the shared-memory regimes play no part: the groups, and so the numbers, are the profile's
    without them.
    """
    if same is None and profile.shm:
        profile = replace(profile, shm={})
    bps = np.asarray(profile.breakpoints, dtype=float)
    if bps.size == 0 or m.size <= 1:
        return fn(_Costs(profile, ti, tree, blocks, float(m[0]) if m.size else 0.0, toward_root, same), m)
    counts = np.asarray(blocks, dtype=float)
    if counts.ndim:
        counts = counts[tree.parent >= 0]
    counts = np.union1d(counts, [1.0])
    sig = np.searchsorted(bps, m[:, None] * counts[None, :], side="left")
    _, first, inv = np.unique(sig, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if first.size == 1:
        return fn(_Costs(profile, ti, tree, blocks, float(m[0]), toward_root, same), m)
    out: np.ndarray | None = None
    for g, i0 in enumerate(first):
        idx = np.flatnonzero(inv == g)
        res = fn(_Costs(profile, ti, tree, blocks, float(m[i0]), toward_root, same), m[idx])
        if out is None:
            out = np.empty((m.size, *res.shape[1:]))
        out[idx] = res
    return out


def _levels(tree: Tree) -> list[np.ndarray]:
    """Ranks grouped by depth (``levels[d]`` = ranks at depth d), cached per tree (:meth:`Tree.cached`)."""

    def levels() -> list[np.ndarray]:
        depth = tree.depth
        # a narrow integer key lets numpy use its O(n) radix sort
        key = depth.astype(np.uint16) if depth.max() < 2**16 else depth
        by_depth = np.argsort(key, kind="stable")
        bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
        return [by_depth[bounds[d] : bounds[d + 1]] for d in range(int(depth.max()) + 1)]

    return tree.cached("predict:levels", levels)


def _sibling_order(tree: Tree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-root ranks sorted by (parent, send position), the first of each sibling run, and each rank's run (cached)."""

    def order() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = np.flatnonzero(tree.parent >= 0)
        c = c[np.lexsort((tree.childrank[c], tree.parent[c]))]
        start = _group_starts(tree.parent[c])
        return c, np.flatnonzero(start), np.cumsum(start) - 1

    return tree.cached("predict:sibling-order", order)


def _prefix_over_siblings(tree: Tree, weight: np.ndarray) -> np.ndarray:
    """For each rank c: the sum of ``weight`` over c's siblings sent to before it, c included (root: 0)."""
    out = np.zeros(tree.n, dtype=weight.dtype)
    c, first, run_of = _sibling_order(tree)
    if c.size:
        w = weight[c]
        run = np.cumsum(w)
        out[c] = run - (run[first] - w[first])[run_of]
    return out


def _sibling_prefix(tree: Tree, weight: np.ndarray, key: str) -> np.ndarray:
    """:func:`_prefix_over_siblings` of a weight that depends only on the tree, cached under ``key``."""
    return tree.cached(f"predict:{key}", lambda: _prefix_over_siblings(tree, weight))


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
    tree: Tree,
    costs: _Costs,
    blocks: Any,
    before: np.ndarray,
    m: np.ndarray,
    per_rank: bool,
    schedule: Schedule,
) -> np.ndarray:
    """Store-and-forward receive times when the edge into rank c carries ``blocks[c] * m`` bytes.

    ``before[c]`` is the number of blocks c's parent sends up to and including c's turn (used when the parent's
    sends share one line, ``costs.uniform``; otherwise each earlier sibling's send is summed on its own line).

    The edge into c costs the parent's send overheads for every sibling up to c's turn, the wire and c's receive:
    ``k*Sc_p + Sm_p*(sum of earlier and own blocks)*m + Xc + Xm*blocks_c*m + Rc_c + Rm_c*blocks_c*m`` - affine in
    m within a group of sizes (:class:`_Costs`), so every rank's time is ``A + B*m`` with A and B two path sums over
    the tree (independent of len(m)). ``schedule.root_copy``: the root's entry is when it has finished its sends and
    then its local copy of its own block ``C(m)`` (MPICH's scatter order), else 0; with ``copy_first`` the root
    copies before its first send (Open MPI's binomial scatter), which delays every other rank by ``C(m)``.
    """
    if costs.uniform:
        a = tree.childrank * costs.Sc + costs.Xc + costs.Rc
        b = costs.Sm * before + (costs.Xm + costs.Rm) * blocks
    else:
        a = _prefix_over_siblings(tree, costs.Sc) + costs.Xc + costs.Rc
        b = _prefix_over_siblings(tree, costs.Sm * blocks) + (costs.Xm + costs.Rm) * blocks
    root = tree.root
    a[root] = b[root] = 0.0
    A, B = _path_sum(tree, a), _path_sum(tree, b)
    if schedule.root_copy:
        kids = np.flatnonzero(tree.parent == root)
        nb = blocks[kids] if np.ndim(blocks) else blocks
        A[root] = costs.Sc[kids].sum() + costs.Cc
        B[root] = (costs.Sm[kids] * nb).sum() + costs.Cm
        if schedule.copy_first:
            others = tree.parent >= 0
            A[others] += costs.Cc
            B[others] += costs.Cm
    if per_rank:
        return A[None, :] + m[:, None] * B[None, :]
    # max over ranks of A + B*m, size by size, without materialising (len(m), n) at once
    return np.array([np.max(A + mi * B) for mi in m])


# ---- collectives -----------------------------------------------------------------------------------------------
def bcast(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    schedule: Schedule | None = None,
    *,
    per_rank: bool = False,
    root: int = 0,
) -> np.ndarray:
    """Broadcast completion time (eq. 6-7) in µs for each message size; the max over ranks of the receive time.

    The paper's closed-form engine only (the ``paper`` variant): :func:`hnowmodel.predict`
    (``hm.predict("bcast", profile, layout, algorithm, sizes)``) predicts under the operation's default variant for
    the profile, as ``hnow predict`` does.

    Every parameter is evaluated at the size in question (its regime, :mod:`hnowmodel.params`).
    ``per_rank=True`` returns ``(len(sizes), n)``: when each rank has received the whole message (root: 0).
    ``root`` is used only when ``tree`` is a name. The schedule changes nothing here (a bcast's root copies
    nothing; eq. 7 has no protocol).

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import binomial
    >>> bcast(paper_profile(), ["fast"] * 4, binomial(4), [0], per_rank=True).tolist()
    [[0.0, 230.0, 170.0, 340.0]]
    """
    m = as_sizes(sizes)
    tree, ti, same = _resolve(profile, layout, tree, root)

    def run(costs: _Costs, mm: np.ndarray) -> np.ndarray:
        return _affine_push_down(tree, costs, 1.0, tree.childrank, mm, per_rank, Schedule())

    return _each_group(profile, ti, tree, m, 1.0, False, run, same)


def scatter(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    schedule: Schedule | None = None,
    *,
    per_rank: bool = False,
    root: int = 0,
    **fields: Any,
) -> np.ndarray:
    """Scatter completion time in µs; every rank receives its own ``m``-byte block (eq. 8-9 on a sequential tree).

    The paper's closed-form engine only (the ``paper`` variant): :func:`hnowmodel.predict`
    (``hm.predict("scatter", profile, layout, algorithm, sizes)``) predicts under the operation's default variant for
    the profile, as ``hnow predict`` does.

    On a deeper tree the edge into a rank carries its whole subtree's blocks, and every parameter of that edge is
    evaluated at the edge's own byte count (its regime). ``per_rank=True`` gives each rank's receive time,
    ``(len(sizes), n)``. ``schedule.root_copy`` adds the root's local copy of its own block after its sends
    (MPICH's binomial scatter; the profile's ``Cc_us``/``Cm_us_per_byte``): the root's entry is then when it is
    done; ``copy_first`` puts that copy before the root's first send, as Open MPI's binomial scatter does: every
    other rank then receives ``C(m)`` later. ``fields``: the schedule's fields as keywords (the old form).

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import sequential
    >>> scatter(paper_profile(), ["fast"] * 3, sequential(3), [0]).tolist()
    [230.0]
    """
    sched = as_schedule(schedule, **fields)
    m = as_sizes(sizes)
    tree, ti, same = _resolve(profile, layout, tree, root)
    blocks = tree.subtree_size.astype(float)
    before = _sibling_prefix(tree, tree.subtree_size, "subtree-prefix")

    def run(costs: _Costs, mm: np.ndarray) -> np.ndarray:
        return _affine_push_down(tree, costs, blocks, before, mm, per_rank, sched)

    return _each_group(profile, ti, tree, m, blocks, False, run, same)


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


def _queue(depart: np.ndarray, wire: np.ndarray, start: np.ndarray, one_at_a_time: bool) -> np.ndarray:
    """Arrival times of messages that share a receiver's inbound link, in departure order (runs of one receiver
    start where ``start`` is True): eq. 12 as printed (the i-th arrives at its departure plus the first i wire
    times), or ``one_at_a_time`` (``arrive_i = max(depart_i, arrive_(i-1)) + X_i``)."""
    if one_at_a_time:
        return _maxplus_scan(depart[None, :], wire[None, :], start)[0]
    return depart + _segmented_cumsum(wire[None, :], start)[0]


def _arrivals(
    depart: np.ndarray, wire: np.ndarray, par: np.ndarray, one_at_a_time: bool, shm: np.ndarray | None
) -> np.ndarray:
    """Arrival time of each message at its parent ``par`` (messages sorted by parent, then departure): the
    inter-host ones queue on the parent's inbound link (:func:`_queue`); the same-host ones (``shm``) come through
    shared memory at their departure plus their own wire time, and take no turn on the link."""
    if shm is None:
        return _queue(depart, wire, _group_starts(par), one_at_a_time)
    out = depart + wire
    net = np.flatnonzero(~shm)
    if net.size:
        out[net] = _queue(depart[net], wire[net], _group_starts(par[net]), one_at_a_time)
    return out


def _gather_group(
    tree: Tree, costs: _Costs, m: np.ndarray, one_at_a_time: bool, root_copy: bool, rendezvous_from: float | None
) -> np.ndarray:
    """Gather ready times ``(len(m), n)`` for sizes of one group (every edge on one line per parameter).

    An eager message (fewer bytes than ``rendezvous_from``, or every message when it is None) flows as soon as
    its sender is ready; a rendezvous one starts only when the parent has posted its receive - after its previous
    receive, or after the root's own copy - and then costs ``S + X + R``. A parent takes its messages in arrival
    order (:func:`_arrivals`; ties by departure, then rank), which is departure order when no edge joins two ranks
    of one host.
    """
    k = m.size
    ready = np.zeros((k, tree.n))
    levels = _levels(tree)
    # Bottom-up, one tree level at a time: all ranks at depth d report to their parents at once.
    for kids in reversed(levels[1:]):
        par = tree.parent[kids]
        shm = None if costs.same is None else costs.same[kids]
        shm = shm if shm is not None and shm.any() else None
        nbytes = tree.subtree_size[kids][None, :] * m[:, None]
        depart = ready[:, kids] + costs.Sc[kids] + costs.Sm[kids] * nbytes
        wire = costs.Xc[kids] + costs.Xm[kids] * nbytes
        rcv = costs.Rc[kids] + costs.Rm[kids] * nbytes  # the parent's receive line for this edge
        rdv = np.zeros_like(nbytes, dtype=bool) if rendezvous_from is None else nbytes >= rendezvous_from
        # Messages reach a parent in departure order (ties by rank), which may differ from size to size.
        for j in range(k):
            o = np.lexsort((kids, depart[j], par))
            arrive = _arrivals(depart[j, o], wire[j, o], par[o], one_at_a_time, None if shm is None else shm[o])
            if shm is not None:  # same-host messages may overtake: the parent takes them in arrival order
                o2 = np.lexsort((kids[o], depart[j, o], arrive, par[o]))
                o, arrive = o[o2], arrive[o2]
            start = _group_starts(par[o])
            r_o = rdv[j, o]
            a = np.where(r_o, ready[j, kids[o]], arrive)  # rendezvous: from when the sender is ready
            cost = np.where(r_o, depart[j, o] - ready[j, kids[o]] + wire[j, o] + rcv[j, o], rcv[j, o])
            if root_copy:
                first = start & (par[o] == tree.root)
                a = np.where(first, np.maximum(a, costs.Cc + costs.Cm * m[j]), a)  # the root's copy comes first
            done = _maxplus_scan(a[None, :], cost[None, :], start)[0]
            last = np.r_[start[1:], True]  # a parent is ready when its last message has been received
            ready[j, par[o][last]] = done[last]
    if root_copy:
        # a root without children still copies its own block
        ready[:, tree.root] = np.maximum(ready[:, tree.root], costs.Cc + costs.Cm * m)
    return ready


def gather(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    schedule: Schedule | None = None,
    *,
    per_rank: bool = False,
    root: int = 0,
    one_at_a_time: bool = False,
    **fields: Any,
) -> np.ndarray:
    """Gather completion time in µs (eq. 10-12): when the root has received every other rank's ``m`` bytes.

    The paper's closed-form engine only (the ``paper`` variant; ``link`` with ``one_at_a_time``):
    :func:`hnowmodel.predict` (``hm.predict("gather", profile, layout, algorithm, sizes)``) predicts under the
    operation's default variant for the profile, as ``hnow predict`` does.

    By default eq. 12 as printed (the i-th arrival is the i-th smallest send completion plus ``i`` wire times);
    ``one_at_a_time`` lets a receiver's link carry one message at a time (the ``link`` variant). ``per_rank=True``
    gives, for each rank, the time by which it holds its whole subtree's data (leaves: 0; the root: the completion
    time). Every parameter of an edge is evaluated at the edge's own byte count (its regime).
    ``schedule.root_copy`` makes the root copy its own block (``Cc_us``/``Cm_us_per_byte``) before it receives
    (MPICH's binomial gather). ``fields``: the schedule's fields as keywords.

    With hosts (a :class:`~hnowmodel.layout.Layout` with shared hosts) a receiver's inbound link is its NIC as
    that rank sees it: only the messages from other hosts queue on it (eq. 12's ``i*X`` counts them only; with
    ``one_at_a_time`` only they wait for the link), in departure order; a message from a rank of its own host
    comes through shared memory, at its departure (after the shm ``S``) plus the shm ``X``, taking no turn on the
    link. The receiver then pays each message's ``R`` (shm ``R`` for a same-host one) in arrival order, ties by
    departure then rank. Messages to different ranks of one host do not share a link here (the flow variants
    share a host's NIC); the rendezvous rule and the root's copy are as without hosts.

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import sequential
    >>> gather(paper_profile(), ["fast"] * 3, sequential(3), [0]).tolist()
    [264.0]
    """
    sched = as_schedule(schedule, **fields)
    m = as_sizes(sizes)
    tree, ti, same = _resolve(profile, layout, tree, root)

    def run(costs: _Costs, mm: np.ndarray) -> np.ndarray:
        return _gather_group(tree, costs, mm, one_at_a_time, sched.root_copy, profile.rendezvous_from_bytes)

    ready = _each_group(profile, ti, tree, m, tree.subtree_size.astype(float), True, run, same)
    return ready if per_rank else ready[:, tree.root].copy()
