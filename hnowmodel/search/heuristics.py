"""Broadcast heuristics for many ranks or many node types, and a local improvement pass (eq. 7 costs).

* :func:`fnf` - Fastest Node First (Banikazemi, Moorthy, Panda, ICPP 1998): ranks sorted by speed; repeatedly the
  sender that can start a send earliest sends to the fastest rank still waiting.
* :func:`ecef` - Earliest Completing Edge First with look-ahead (Bhat, Raghavendra, Prasanna): repeatedly the
  (sender, receiver) edge that completes earliest, the receiver's own best next send counted as look-ahead.
  Ranks of one type are interchangeable, so each step compares one candidate per (sender type, receiver type).
* :func:`improve` - local search under eq. 7: exact re-sorting of every parent's send order, moves of the last
  rank to finish, and swaps of critical-path ranks with ranks of other types, while the broadcast time drops.

Each works at one message size and evaluates every parameter at it (:meth:`~hnowmodel.params.Profile.at`).

FNF is O(n log n), ECEF O(n k^2) for k types (a heap per type); improve is capped by a budget of tree
evaluations. See experiments/perf_search.py for timings at 10**5 ranks.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from ..closedform import bcast
from ..params import Profile
from ..trees import Tree, from_children, type_speed_order
from .exact import edge_costs

__all__ = ["fnf", "ecef", "improve", "improve_under"]


def _setup(profile: Profile, layout: Sequence[str], size: float):
    types = type_speed_order(profile, size)
    types = [t for t in types if t in set(layout)]
    tix = {t: i for i, t in enumerate(types)}
    S, a = edge_costs(profile, types, size)
    return types, tix, S, a


def fnf(profile: Profile, layout: Sequence[str], size: float = 0.0, root: int = 0) -> Tree:
    """Fastest Node First broadcast tree for ``size`` bytes.

    >>> from hnowmodel.params import paper_profile
    >>> fnf(paper_profile(), ["slow", "fast", "slow", "fast"]).children[0]
    (1, 3, 2)
    """
    n = len(layout)
    profile = profile.at(size)
    types, tix, S, a = _setup(profile, layout, size)
    # receivers, fastest type first (then by rank)
    waiting = sorted((r for r in range(n) if r != root), key=lambda r: (tix[layout[r]], r))
    children: list[list[int]] = [[] for _ in range(n)]
    ready = [(0.0, root)]  # (time the rank can start its next send, rank)
    ti = [tix[t] for t in layout]
    A, Sl = a.tolist(), S.tolist()  # plain floats: this loop runs n times
    for v in waiting:
        t, u = heapq.heappop(ready)
        children[u].append(v)
        heapq.heappush(ready, (t + Sl[ti[u]], u))
        heapq.heappush(ready, (t + A[ti[u]][ti[v]], v))
    return from_children(children, "fnf")


def ecef(profile: Profile, layout: Sequence[str], size: float = 0.0, root: int = 0, lookahead: bool = True) -> Tree:
    """Earliest Completing Edge First (with look-ahead) broadcast tree for ``size`` bytes.

    >>> from hnowmodel.params import paper_profile
    >>> len(ecef(paper_profile(), ["fast"] * 4 + ["slow"] * 4).children[0]) >= 2
    True
    """
    n = len(layout)
    profile = profile.at(size)
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
    A, Sl = a.tolist(), S.tolist()  # plain floats: this loop runs n times
    live_v: list[int] = []
    look: dict[int, float] = {}
    for _ in range(n - 1):
        now_live = [v for v in range(k) if waiting[v]]
        if now_live != live_v:  # look-ahead of a receiver of type v: its own fastest next edge to a waiting type
            live_v = now_live
            look = {v: (min(A[v][w] for w in live_v) if lookahead else 0.0) for v in live_v}
        best, pick = np.inf, None
        for u in range(k):
            if not senders[u]:
                continue
            t0 = senders[u][0][0]
            Au = A[u]
            for v in live_v:
                arrive = t0 + Au[v]
                score = arrive + look[v]
                if score < best or (score == best and pick is not None and arrive < pick[2]):
                    best, pick = score, (u, v, arrive)
        u, v, arrive = pick
        t0, src = heapq.heappop(senders[u])
        dst = waiting[v].pop()
        children[src].append(dst)
        heapq.heappush(senders[u], (t0 + Sl[u], src))
        heapq.heappush(senders[v], (arrive, dst))
    return from_children(children, "ecef")


def improve(
    profile: Profile, layout: Sequence[str], tree: Tree, size: float = 0.0, max_evals: int | None = None
) -> Tree:
    """Local improvement under eq. 7; never returns a slower tree. Each round tries, in turn:

    1. *re-sort siblings*: every parent sends to its children in decreasing order of their tails (time from the
       parent's send slot to the end of the child's subtree). For a fixed parent assignment this order is exact
       (exchange argument: child k finishes at ``T_parent + k*S_parent + tail``).
    2. *move*: the last rank to finish (with its subtree) becomes the last child of the rank where it would be
       received earliest.
    3. *swap*: a rank on the critical path (the last rank and its ancestors, root excluded) trades places with
       the earliest-reached leaf / inner rank of another type.

    A step is kept only if the broadcast time drops; the pass stops when a round keeps nothing or after
    ``max_evals`` tree evaluations (default ``clip(10**6 // n, 8, 400)``, so 10**5 ranks stay well under a second).

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.trees import chain
    >>> from hnowmodel.closedform import bcast
    >>> p, lay = paper_profile(), ["fast"] * 6
    >>> bool(bcast(p, lay, improve(p, lay, chain(6)), [0])[0] < bcast(p, lay, chain(6), [0])[0])
    True
    """
    n = tree.n
    if n <= 2:
        return tree
    run = _Improver(profile, layout, tree, size, max_evals)
    while run.budget > 0:
        kept = run.resort_siblings()
        if run.budget <= 0:
            break
        moved = run.move_last()
        if moved is None:
            break
        if moved:
            continue
        if not (run.swap_critical() or kept):
            break
    return run.best


class _Improver:
    """The state of :func:`improve`: the best tree so far, its per-rank times, and the evaluation budget."""

    def __init__(self, profile: Profile, layout: Sequence[str], tree: Tree, size: float, max_evals: int | None) -> None:
        self.profile = profile.at(size)  # one regime for every evaluation below: exact at ``size``, and fast
        self.layout, self.size, self.n = layout, size, tree.n
        self.types, tix, S, self.a = _setup(self.profile, layout, size)
        self.ti = np.array([tix[t] for t in layout])
        self.Sr = S[self.ti]  # per-rank send overhead (µs)
        self.budget = int(np.clip(10**6 // self.n, 8, 400)) if max_evals is None else max_evals
        self.name = tree.name or "improved"
        self.best, self.times = tree, self.times_of(tree)
        self.best_time = float(self.times.max())

    def times_of(self, t: Tree) -> np.ndarray:
        self.budget -= 1
        return bcast(self.profile, self.layout, t, [self.size], per_rank=True)[0]

    def accept(self, t: Tree) -> bool:
        """Keep ``t`` if it is faster than the best so far."""
        tt = self.times_of(t)
        if tt.max() < self.best_time - 1e-9:
            self.best, self.times, self.best_time = t, tt, float(tt.max())
            return True
        return False

    def resort_siblings(self) -> bool:
        """1. siblings by decreasing tail (subtree max finish time measured from the parent's send slot)."""
        best, times, Sr = self.best, self.times, self.Sr
        sub = times.copy()
        depth = best.depth
        for d in range(int(depth.max()), 0, -1):
            at = np.flatnonzero(depth == d)
            np.maximum.at(sub, best.parent[at], sub[at])
        nonroot = np.flatnonzero(best.parent >= 0)
        par, k = best.parent[nonroot], best.childrank[nonroot]
        tail = sub[nonroot] - times[par] - k * Sr[par]
        o = np.lexsort((k, -tail, par))
        starts = np.r_[True, par[o][1:] != par[o][:-1]]
        pos = np.arange(o.size) - np.maximum.accumulate(np.where(starts, np.arange(o.size), 0)) + 1
        if not (pos != k[o]).any():
            return False
        cr = best.childrank.copy()
        cr[nonroot[o]] = pos
        return self.accept(Tree(best.parent, cr, self.name))

    def move_last(self) -> bool | None:
        """2. move the last rank to where it would be received earliest, as a new last child: whether it was
        kept; None when the last rank is the root (nothing to move: the pass ends)."""
        best, times, ti = self.best, self.times, self.ti
        last = int(np.argmax(times))
        if last == best.root:
            return None
        cand = times + best.nchildren * self.Sr + self.a[ti, ti[last]]
        cand[_subtree_mask(best, last)] = np.inf
        target = int(np.argmin(cand))
        if cand[target] >= times[last] - 1e-9:
            return False
        parent, cr = best.parent.copy(), best.childrank.copy()
        old = parent[last]
        cr[(parent == old) & (cr > cr[last])] -= 1
        parent[last] = target
        cr[last] = np.count_nonzero(parent == target)
        return self.accept(Tree(parent, cr, self.name))

    def swap_critical(self) -> bool:
        """3. swap a critical-path rank with an early rank of another type: whether one was kept."""
        best, times, ti = self.best, self.times, self.ti
        path = []
        r = int(np.argmax(times))
        while best.parent[r] >= 0:
            path.append(r)
            r = int(best.parent[r])
        onpath = np.zeros(self.n, dtype=bool)
        onpath[path] = True
        onpath[best.root] = True
        leaf = best.nchildren == 0
        for p in reversed(path):  # nearest the root first: the biggest effect
            for w in range(len(self.types)):
                if w == ti[p]:
                    continue
                for group in (leaf, ~leaf):
                    ok = (ti == w) & group & ~onpath
                    if not ok.any() or self.budget <= 0:
                        continue
                    q = int(np.flatnonzero(ok)[np.argmin(times[ok])])
                    perm = np.arange(self.n)
                    perm[p], perm[q] = q, p
                    if self.accept(best.relabel(perm, self.name)):
                        return True
        return False


def _subtree_mask(tree: Tree, r: int) -> np.ndarray:
    """Boolean mask of the ranks in r's subtree (r included)."""
    inside = np.zeros(tree.n, dtype=bool)
    inside[r] = True
    for d in range(int(tree.depth[r]) + 1, int(tree.depth.max()) + 1):
        at = np.flatnonzero(tree.depth == d)
        inside[at] = inside[tree.parent[at]]
    return inside


def improve_under(
    cost: Callable[[Tree], float], tree: Tree, *, max_evals: int = 3000, name: str | None = None
) -> tuple[Tree, float, int]:
    """Local improvement of ``tree`` under any model: ``cost(tree)`` is its predicted completion (µs).

    For models without an exact search (the flow-sharing variants, where a root's sends share its link), first
    improvement over two neighbourhoods until neither improves or ``max_evals`` evaluations are spent:

    1. *re-order siblings*: swap two children of one parent in the send order;
    2. *move*: a non-root rank (with its subtree) becomes the child of another rank outside its subtree, at any
       position in that rank's send order.

    Returns (tree, cost µs, evaluations). Never returns a slower tree.

    >>> from hnowmodel.trees import chain
    >>> t, c, _ = improve_under(lambda t: float(t.depth.max()), chain(5))  # shallowest tree: a star
    >>> c, sorted(t.children[0])
    (1.0, [1, 2, 3, 4])
    """
    evals = 1
    best, best_cost = tree, float(cost(tree))
    label = tree.name if name is None else name
    improved = True
    while improved and evals < max_evals:
        improved = False
        for cand in _neighbours(best, label):
            if evals >= max_evals:
                break
            evals += 1
            c = float(cost(cand))
            if c < best_cost * (1 - 1e-9):
                best, best_cost, improved = cand, c, True
                break
    return best, best_cost, evals


def _neighbours(t: Tree, name: str):
    """Trees one sibling swap or one subtree move away from ``t`` (see :func:`improve_under`)."""
    children = [list(c) for c in t.children]
    for p, kids in enumerate(children):
        for i in range(len(kids)):
            for j in range(i + 1, len(kids)):
                new = [list(c) for c in children]
                new[p][i], new[p][j] = new[p][j], new[p][i]
                yield from_children(new, name)
    for v in np.flatnonzero(t.parent >= 0).tolist():
        inside = _subtree_mask(t, v)
        old = int(t.parent[v])
        for p in np.flatnonzero(~inside).tolist():
            base = [[c for c in kids if c != v] for kids in children]
            for pos in range(len(base[p]) + 1):
                if p == old and pos == children[old].index(v):
                    continue  # the tree itself
                new = [list(c) for c in base]
                new[p].insert(pos, v)
                yield from_children(new, name)
