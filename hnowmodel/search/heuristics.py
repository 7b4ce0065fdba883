"""Broadcast heuristics for many ranks or many node types, and a local improvement pass (eq. 7 costs).

* :func:`fnf` - Fastest Node First (Banikazemi, Moorthy, Panda, ICPP 1998): ranks sorted by speed; repeatedly the
  sender that can start a send earliest sends to the fastest rank still waiting.
* :func:`ecef` - Earliest Completing Edge First with look-ahead (Bhat, Raghavendra, Prasanna): repeatedly the
  (sender, receiver) edge that completes earliest, the receiver's own best next send counted as look-ahead.
  Ranks of one type are interchangeable, so each step compares one candidate per (sender type, receiver type).
* :func:`improve` - moves that re-attach the last rank to finish as the last child of the rank where it would
  finish earliest, while the broadcast time drops.

All are O(n log n) or O(n k^2) for k types, with a heap per type: 10**5 ranks take about a second.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from ..params import Profile
from ..trees import Tree, from_children, type_speed_order
from .exact import _edge_costs

__all__ = ["fnf", "ecef", "improve"]


def _setup(profile: Profile, layout: Sequence[str], size: float):
    types = type_speed_order(profile, size)
    types = [t for t in types if t in set(layout)]
    tix = {t: i for i, t in enumerate(types)}
    S, a = _edge_costs(profile, types, size)
    return types, tix, S, a


def fnf(profile: Profile, layout: Sequence[str], size: float = 0.0, root: int = 0) -> Tree:
    """Fastest Node First broadcast tree for ``size`` bytes.

    >>> from hnowmodel.params import paper_profile
    >>> fnf(paper_profile(), ["slow", "fast", "slow", "fast"]).children[0]
    (1, 3, 2)
    """
    n = len(layout)
    types, tix, S, a = _setup(profile, layout, size)
    # receivers, fastest type first (then by rank)
    waiting = sorted((r for r in range(n) if r != root), key=lambda r: (tix[layout[r]], r))
    children: list[list[int]] = [[] for _ in range(n)]
    ready = [(0.0, root)]  # (time the rank can start its next send, rank)
    for v in waiting:
        t, u = heapq.heappop(ready)
        tu, tv = tix[layout[u]], tix[layout[v]]
        children[u].append(v)
        heapq.heappush(ready, (t + S[tu], u))
        heapq.heappush(ready, (t + a[tu, tv], v))
    return from_children(children, "fnf")


def ecef(profile: Profile, layout: Sequence[str], size: float = 0.0, root: int = 0, lookahead: bool = True) -> Tree:
    """Earliest Completing Edge First (with look-ahead) broadcast tree for ``size`` bytes.

    >>> from hnowmodel.params import paper_profile
    >>> len(ecef(paper_profile(), ["fast"] * 4 + ["slow"] * 4).children[0]) >= 2
    True
    """
    n = len(layout)
    types, tix, S, a = _setup(profile, layout, size)
    k = len(types)
    # per type: heap of (ready time, rank) of ranks holding the message; ranks still waiting per type
    senders: list[list[tuple[float, int]]] = [[] for _ in range(k)]
    heapq.heappush(senders[tix[layout[root]]], (0.0, root))
    waiting: list[list[int]] = [[] for _ in range(k)]
    for r in range(n - 1, -1, -1):
        if r != root:
            waiting[tix[layout[r]]].append(r)  # pop() gives the lowest rank
    children: list[list[int]] = [[] for _ in range(n)]
    # look-ahead of a receiver of type v: its own fastest possible next edge to any type still waiting
    for _ in range(n - 1):
        live_v = [v for v in range(k) if waiting[v]]
        look = {v: (min(a[v, w] for w in live_v) if lookahead else 0.0) for v in live_v}
        best, pick = np.inf, None
        for u in range(k):
            if not senders[u]:
                continue
            t0 = senders[u][0][0]
            for v in live_v:
                arrive = t0 + a[u, v]
                score = arrive + look[v]
                if score < best or (score == best and pick is not None and arrive < pick[2]):
                    best, pick = score, (u, v, arrive)
        u, v, arrive = pick
        t0, src = heapq.heappop(senders[u])
        dst = waiting[v].pop()
        children[src].append(dst)
        heapq.heappush(senders[u], (t0 + S[u], src))
        heapq.heappush(senders[v], (arrive, dst))
    return from_children(children, "ecef")


def improve(profile: Profile, layout: Sequence[str], tree: Tree, size: float = 0.0, max_moves: int = 200) -> Tree:
    """Local improvement under eq. 7: move the last rank to finish to wherever it would finish earliest (as a
    last child), and accept while the broadcast time drops. Never returns a slower tree.

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import chain
    >>> from hnowmodel.predict import bcast
    >>> p, lay = paper_profile(), ["fast"] * 6
    >>> bool(bcast(p, lay, improve(p, lay, chain(6)), [0])[0] < bcast(p, lay, chain(6), [0])[0])
    True
    """
    from ..predict import bcast

    types, tix, S, a = _setup(profile, layout, size)
    ti = np.array([tix[t] for t in layout])
    children = [list(c) for c in tree.children]
    best_tree = tree
    times = bcast(profile, layout, tree, [size], per_rank=True)[0]
    best_time = float(times.max())
    for _ in range(max_moves):
        last = int(np.argmax(times))
        if last == best_tree.root:
            break
        # where could `last` (with its subtree) be received earliest as a new last child?
        subtree = _subtree_mask(best_tree, last)
        nsend = np.array([len(c) for c in children], dtype=float)
        cand = times + nsend * S[ti] + a[ti, ti[last]]  # after the target's current sends, one more edge
        cand[subtree] = np.inf
        target = int(np.argmin(cand))
        if cand[target] >= times[last] - 1e-9:
            break
        old_parent = int(best_tree.parent[last])
        trial = [list(c) for c in children]
        trial[old_parent].remove(last)
        trial[target].append(last)
        t = from_children(trial, tree.name or "improved")
        tt = bcast(profile, layout, t, [size], per_rank=True)[0]
        if tt.max() >= best_time - 1e-9:
            break
        children, best_tree, times, best_time = trial, t, tt, float(tt.max())
    return best_tree


def _subtree_mask(tree: Tree, r: int) -> np.ndarray:
    """Boolean mask of the ranks in r's subtree (r included)."""
    inside = np.zeros(tree.n, dtype=bool)
    inside[r] = True
    for d in range(int(tree.depth[r]) + 1, int(tree.depth.max()) + 1):
        at = np.flatnonzero(tree.depth == d)
        inside[at] = inside[tree.parent[at]]
    return inside
