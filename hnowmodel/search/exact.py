"""The exact broadcast optimum under eq. 7 for a few node types: dynamic programming over per-type counts.

Under eq. 7 a rank of type u that holds the message at time 0 and must still reach a multiset M of node types
(its subtree, itself excluded) sends to its children one after another. If its first child has type v and that
child's own subtree is M1 (a sub-multiset of M - {v}), the child holds the message at
``a(u, v) = S_u + X_uv + R_v`` and the parent is free again at ``S_u`` with ``M - {v} - M1`` still to reach:

    f(u, {}) = 0
    f(u, M)  = min over v in M, M1 <= M - {v} of  max( a(u, v) + f(v, M1),  S_u + f(u, M - {v} - M1) )

Ranks of one type are interchangeable, so the state is (type, count vector): ``k * prod(c_t + 1)`` states for
counts c_t, and the inner minimum over M1 runs over a box of counts, vectorised with numpy (the box of
``f(v, .)`` against the same box of ``f(u, .)`` reversed). Work: ``O(k^2 * prod((c_t+1)(c_t+2)/2))``
(:func:`exact_work`), memory ``O(k * prod(c_t+1))`` - 2 types x 64 ranks or 3 types x 16 ranks take about 0.1 s
(experiments/perf_search.py). The optimum is exact for eq. 7 (every schedule
is an ordered tree, and the recurrence enumerates every ordered tree up to swapping ranks of one type).

Hosts: the state knows node types, not hosts, so :func:`exact_bcast` refuses a layout with several ranks on a host
(:class:`~hnowmodel.errors.LayoutError`): with hosts an edge's cost depends on whether it stays on a host, and ranks
of one type are no longer interchangeable. :func:`edge_costs` gives the costs between two ranks of one host
(``same_host=True``: the types' shared-memory costs) for searches that know hosts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError, LayoutError
from ..layout import one_per_host
from ..params import Profile
from ..trees import Tree, from_children

__all__ = ["exact_bcast", "exact_cost", "exact_work", "edge_costs", "EXACT_AUTO_WORK", "EXACT_MAX_WORK"]

#: Above this much DP work (:func:`exact_work`), ``method="auto"`` uses the heuristics instead. Measured on this
#: project's 2-core machine at 10-40 ns per unit (experiments/perf_search.py): about a second at most.
EXACT_AUTO_WORK = 4e7
#: Above this much work even an explicit ``method="exact"`` is refused (it would take minutes).
EXACT_MAX_WORK = 3e9


def exact_cost(counts: Sequence[int]) -> int:
    """Number of DP states per type for these per-type counts (memory: ``k`` float arrays of this size)."""
    return int(np.prod([c + 1 for c in counts]))


def exact_work(counts: Sequence[int]) -> float:
    """Inner-loop work of the DP: ``k^2 * prod((c_t+1)(c_t+2)/2)`` (pairs M1 <= M over all M, per type pair).

    >>> exact_work([3, 4])
    600.0
    """
    return float(len(counts) ** 2 * np.prod([(c + 1) * (c + 2) / 2 for c in counts]))


def edge_costs(
    profile: Profile, types: Sequence[str], m: float, *, same_host: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``S[u]`` and ``a[u, v] = S_u + X_uv + R_v`` (µs, the one-way time :meth:`~hnowmodel.params.Profile.ptp_us`)
    at ``m`` bytes, over type indices: the costs of eq. 7 that the exact search and the heuristics share.

    ``same_host``: the costs between two ranks of one host instead - each type's shared-memory ``S`` and one-way
    time on the diagonal (``profile.shm``; :class:`~hnowmodel.errors.ProfileError` for a type without them), and
    ``inf`` off it (ranks of two types never share a host).

    >>> import dataclasses
    >>> from hnowmodel.params import Link, NodeType, ShmCosts, paper_profile
    >>> prof = dataclasses.replace(paper_profile(), shm={"fast": ShmCosts(NodeType("fast", 5, 0, 4, 0), Link(1, 0))})
    >>> S, a = edge_costs(prof, ["fast"], 0, same_host=True)
    >>> S.tolist(), a.tolist()
    ([5.0], [[10.0]])
    """
    if same_host:
        S = np.array([profile.shm_costs(t).node.send_us(m) for t in types], dtype=float)
        a = np.full((len(types), len(types)), np.inf)
        np.fill_diagonal(a, [profile.ptp_us(t, t, m, same_host=True) for t in types])
        return S, a
    S = np.array([profile.types[t].send_us(m) for t in types])
    a = np.array([[profile.ptp_us(u, v, m) for v in types] for u in types])
    return S, a


def exact_bcast(profile: Profile, layout: Sequence[str], size: float = 0.0, root: int = 0) -> tuple[Tree, float]:
    """The broadcast tree with the smallest eq.-7 completion time for this layout, and that time (µs).

    Every parameter is the one in force at ``size`` bytes (:meth:`~hnowmodel.params.Profile.at`).

    >>> from hnowmodel.params import paper_profile
    >>> tree, t = exact_bcast(paper_profile(), ["fast", "fast", "slow", "slow"], 0)
    >>> t
    290.0
    """
    n = len(layout)
    if not 0 <= root < n:
        raise InputError(f"root {root} is not a rank in 0..{n - 1}")
    if not one_per_host(layout):
        raise LayoutError(
            "the exact broadcast search (eq. 7 over node-type counts) does not model hosts: the layout puts several "
            "ranks on one host"
        )
    profile = profile.at(size)
    types = [t for t in profile.types if t in set(layout)]
    k = len(types)
    tix = {t: i for i, t in enumerate(types)}
    counts = [0] * k
    for r, t in enumerate(layout):
        if r != root:
            counts[tix[t]] += 1
    shape = tuple(c + 1 for c in counts)
    if exact_work(counts) > EXACT_MAX_WORK:
        raise InputError(
            f"exact search for per-type counts {counts} is too large ({exact_work(counts):.2g} steps, "
            f"limit {EXACT_MAX_WORK:.0g}); use method fnf or ecef"
        )
    S, a = edge_costs(profile, types, size)
    f, choice_v, choice_m1 = _fill(S, a, shape)
    root_t = tix[layout[root]]
    time_us = float(f[(root_t, *counts)])
    return _rebuild(layout, root, types, choice_v, choice_m1, shape), time_us


def _fill(S: np.ndarray, a: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The DP table ``f[u, M]`` (µs) over every count vector M of the box ``shape``, and each state's choice: the
    first child's type ``choice_v[u, M]`` and the flat index of its subtree's counts ``choice_m1[u, M]``."""
    k = len(shape)
    f = np.full((k, *shape), np.inf)
    # choice[u][M] = (v, flat index of M1 within the full shape)
    choice_v = np.full((k, *shape), -1, dtype=np.int64)
    choice_m1 = np.full((k, *shape), -1, dtype=np.int64)
    zero = (0,) * k
    f[(slice(None), *zero)] = 0.0
    flip = tuple(slice(None, None, -1) for _ in range(k))
    for M in np.ndindex(*shape):
        if M == zero:
            continue
        # all sender types u at once: vals[u, M1] for each first-child type v
        best = np.full(k, np.inf)
        best_v = np.full(k, -1, dtype=np.int64)
        best_m1 = np.full(k, -1, dtype=np.int64)
        for v in range(k):
            if M[v] == 0:
                continue
            rest = list(M)
            rest[v] -= 1
            box = tuple(slice(0, r + 1) for r in rest)
            child = f[(v, *box)]  # f(v, M1) for every M1 <= rest
            parent = f[(slice(None), *box)][(slice(None), *flip)]  # f(u, rest - M1), aligned with M1
            grow = (slice(None),) + (None,) * k
            vals = np.maximum(a[:, v][grow] + child[None], S[grow] + parent).reshape(k, -1)
            j = np.argmin(vals, axis=1)
            got = vals[np.arange(k), j]
            better = got < best
            if better.any():
                idx = np.ravel_multi_index(np.unravel_index(j, child.shape), shape)
                best = np.where(better, got, best)
                best_v = np.where(better, v, best_v)
                best_m1 = np.where(better, idx, best_m1)
        f[(slice(None), *M)] = best
        choice_v[(slice(None), *M)] = best_v
        choice_m1[(slice(None), *M)] = best_m1
    return f, choice_v, choice_m1


def _rebuild(
    layout: Sequence[str],
    root: int,
    types: Sequence[str],
    choice_v: np.ndarray,
    choice_m1: np.ndarray,
    shape: tuple[int, ...],
) -> Tree:
    """The optimal tree from the DP's choices, with concrete ranks."""
    n, k = len(layout), len(types)
    root_t = list(types).index(layout[root])
    full = tuple(c - 1 for c in shape)
    # Rebuild with concrete ranks: pools of ranks per type, handed out as the choices are replayed.
    pools = [[r for r in range(n) if r != root and layout[r] == t] for t in types]
    for p in pools:
        p.reverse()  # pop() hands out the lowest rank first
    children: list[list[int]] = [[] for _ in range(n)]
    stack = [(root, root_t, full)]
    while stack:
        rank, u, M = stack.pop()
        while any(M):
            v = int(choice_v[(u, *M)])
            m1 = tuple(int(x) for x in np.unravel_index(int(choice_m1[(u, *M)]), shape))
            child = pools[v].pop()
            children[rank].append(child)
            stack.append((child, v, m1))
            M = tuple(M[i] - m1[i] - (1 if i == v else 0) for i in range(k))
    return from_children(children, "optimal")
