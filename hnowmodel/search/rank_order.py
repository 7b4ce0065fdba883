"""Rank orders for native collectives: which rank should take which position of a fixed tree shape.

A native algorithm (e.g. MPICH's binomial tree) fixes the shape by rank number; what a user controls is which
node gets which rank (the order of the hostfile, or ``MPI_Comm_split`` keys). :func:`rank_order` assigns node
types to tree positions: fastest types to the positions with the biggest subtrees first (those ranks send the
most), then pairwise swaps of differently-typed positions while the predicted time drops. The result is never
slower than the identity order (it is returned unchanged when nothing helps). Speeds and predicted times are
evaluated at the size being optimised (profile regimes).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import ops as _ops
from ..errors import InputError, LayoutError
from ..layout import Layout, hosts_of, one_per_host
from ..libraries.native import NativeAlgorithm
from ..params import Profile
from ..trees import Tree, make_tree, type_speed_order

__all__ = [
    "RankOrder",
    "rank_order",
    "host_block_order",
    "best_host_order",
    "pairwise_swaps",
    "SWAP_MAX_RANKS",
    "HOST_ORDERS_ALL_MAX",
]

#: Above this many ranks only the greedy assignment is made (said in :attr:`RankOrder.method`).
SWAP_MAX_RANKS = 128
#: Up to this many hosts :func:`host_block_order` tries every order of the hosts (6! = 720 predictions); above,
#: pairwise swaps of hosts while the predicted time drops.
HOST_ORDERS_ALL_MAX = 6


@dataclass(frozen=True)
class RankOrder:
    """``perm[p]`` = the current rank that should take tree position (new rank) p; ``keys[r]`` = the
    ``MPI_Comm_split`` key of current rank r (its new rank); times in µs."""

    perm: tuple[int, ...]
    keys: tuple[int, ...]
    time_us: float
    baseline_us: float
    #: How the order was found: ``greedy + pairwise swaps``, or ``greedy only`` above :data:`SWAP_MAX_RANKS` ranks
    #: (the swaps cost O(n^2) predictions per round), or ``identity`` when nothing beat the current order.
    method: str = "greedy + pairwise swaps"

    @property
    def gain_pct(self) -> float:
        return 100.0 * (self.baseline_us - self.time_us) / self.baseline_us if self.baseline_us else 0.0

    def hostfile(self, hosts: Sequence[str]) -> str:
        """Hostfile lines in the new rank order, given each current rank's host."""
        return "\n".join(hosts[r] for r in self.perm) + "\n"

    def to_dict(self) -> dict:
        return {
            "perm": list(self.perm),
            "keys": list(self.keys),
            "time_us": self.time_us,
            "baseline_us": self.baseline_us,
            "gain_pct": self.gain_pct,
            "method": self.method,
        }


def _tree_op(op: str) -> _ops.Operation:
    """The operation ``op``, which trees must run (a rank order is a tree's); :class:`InputError` otherwise."""
    o = _ops.get(op)
    if o.movement is None:
        raise InputError(f"{op} runs no tree (its algorithms are message schedules): no rank order to choose")
    return o


def rank_order(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str = "binomial",
    op: str = "bcast",
    size: float = 0.0,
    max_rounds: int = 20,
    native: NativeAlgorithm | None = None,
    variant: str | None = None,
) -> RankOrder:
    """The rank permutation minimising the predicted time of ``op`` over a fixed tree shape, under the operation's
    model ``variant`` (None: its default for ``profile``). ``native``: the tree is that MPI library algorithm's,
    and it is predicted run by its schedule, as :func:`hnowmodel.ops.native_predict` predicts it (the root's copy,
    the order its messages move in). On a layout with several ranks per host (:class:`~hnowmodel.layout.Layout`)
    every rank keeps its host: position p of the tree goes to rank ``perm[p]`` on that rank's host, so the order
    also chooses which positions share a host (ranks of one type on different hosts are swapped too).

    >>> from hnowmodel.params import paper_profile
    >>> ro = rank_order(paper_profile(), ["slow", "slow", "fast", "fast"], "binomial", "bcast", 0)
    >>> ro.time_us <= ro.baseline_us
    True
    """
    o = _tree_op(op)
    n = len(layout)
    if isinstance(tree, str):
        tree = make_tree(tree, n, layout=layout, profile=profile)
    if tree.n != n:
        raise LayoutError(f"layout has {n} ranks but the tree has {tree.n}")
    var = _ops.variant_of(op, variant, profile)
    # a default's schedule can depend on the size and hosts (Intel MPI's chunks)
    schedule = None if native is None else native.schedule_on(layout, int(size))
    # one message per edge (bcast): every edge carries ``size`` bytes, so the lines in force at ``size`` are exact
    # (and one pass is fast); scatter/gather edges carry subtrees' data, each at its own regime: the predictor
    # handles the full profile
    model = profile.at(size) if o.movement.one_message else profile

    shared = not one_per_host(layout)

    def cost(pos_types: Sequence[str]) -> float:
        return float(var.predict(_ops.get(op), model, list(pos_types), tree, [size], schedule)[0])

    def cost_of(perm: Sequence[int]) -> float:
        """The time with tree position p given to rank perm[p] (which keeps its host: ``Layout.take``)."""
        if shared:
            return float(var.predict(_ops.get(op), model, layout.take(perm), tree, [size], schedule)[0])  # type: ignore[attr-defined]
        return cost([layout[r] for r in perm])

    baseline = cost(layout) if not shared else cost_of(np.arange(n))
    perm = _greedy_perm(profile, layout, tree, size)
    cur = cost_of(perm)
    method = (
        "greedy + pairwise swaps" if n <= SWAP_MAX_RANKS else f"greedy only (no swaps above {SWAP_MAX_RANKS} ranks)"
    )
    rounds = max_rounds if n <= SWAP_MAX_RANKS else 0  # pairwise swaps cost O(n^2) predictions per round
    cur = pairwise_swaps(perm, cur, cost_of, layout, shared, tree.root, rounds)
    if cur >= baseline:
        perm, cur, method = np.arange(n), baseline, "identity (no order found that beats the current one)"
    keys = np.empty(n, dtype=np.int64)
    keys[perm] = np.arange(n)
    return RankOrder(tuple(int(x) for x in perm), tuple(int(x) for x in keys), cur, baseline, method)


def _greedy_perm(profile: Profile, layout: Sequence[str], tree: Tree, size: float) -> np.ndarray:
    """The greedy assignment, ``perm[p]`` = the rank at tree position p: positions by subtree size (desc), depth
    (asc); ranks by their type's speed at ``size`` bytes (fastest first); the root's rank fixed."""
    n = tree.n
    speed = {t: i for i, t in enumerate(type_speed_order(profile, size))}
    positions = sorted((p for p in range(n) if p != tree.root), key=lambda p: (-tree.subtree_size[p], tree.depth[p], p))
    ranks = sorted((r for r in range(n) if r != tree.root), key=lambda r: (speed[layout[r]], r))
    perm = np.empty(n, dtype=np.int64)
    perm[tree.root] = tree.root
    perm[positions] = ranks
    return perm


def pairwise_swaps(
    perm: np.ndarray,
    cur: float,
    cost_of: Callable[[Sequence[int]], float],
    layout: Sequence[str],
    shared: bool,
    root: int,
    rounds: int,
) -> float:
    """Swap pairs of positions of ``perm`` (in place; the root's excepted) while the predicted time ``cur`` (µs,
    ``cost_of(perm)``) drops, for at most ``rounds`` rounds; returns the time of the order kept."""
    n = len(perm)
    hosts = hosts_of(layout)
    for _ in range(rounds):
        improved = False
        for i in range(n):
            for j in range(i + 1, n):
                # ranks of one type are interchangeable, unless they are on different hosts
                if root in (i, j) or (
                    layout[perm[i]] == layout[perm[j]] and (not shared or hosts[perm[i]] == hosts[perm[j]])
                ):
                    continue
                perm[i], perm[j] = perm[j], perm[i]
                c = cost_of(perm)
                if c < cur - 1e-9:
                    cur, improved = c, True
                else:
                    perm[i], perm[j] = perm[j], perm[i]
        if not improved:
            break
    return cur


def host_block_order(
    profile: Profile,
    layout: Layout,
    tree: str = "binomial",
    op: str = "bcast",
    size: float = 0.0,
    native: NativeAlgorithm | None = None,
    variant: str | None = None,
) -> RankOrder:
    """The order of whole hosts minimising the predicted time of ``op`` over the tree spec ``tree`` (rebuilt for
    each order: a node-aware tree depends on which ranks share a host), each host's ranks kept together and in
    their order: what a hostfile with slots (``host:K``) or a rankfile fills. Every order of the hosts up to
    :data:`HOST_ORDERS_ALL_MAX` hosts, else pairwise swaps of hosts from the current order. Never slower than the
    current order (``arange(n)``); ``perm``, ``keys`` and times (µs) as :func:`rank_order`.

    >>> from hnowmodel.params import paper_profile
    >>> import dataclasses
    >>> from hnowmodel.params import Link, NodeType, ShmCosts
    >>> p = paper_profile()
    >>> shm = ShmCosts(NodeType("x", 2.0, 1e-4, 2.0, 1e-4), Link(0.5, 2e-4))
    >>> p = dataclasses.replace(p, shm={t: shm for t in p.type_names})
    >>> ro = host_block_order(p, Layout(["slow", "slow", "fast", "fast"], [0, 0, 1, 1]), "binomial", "bcast", 65536)
    >>> ro.perm, ro.time_us <= ro.baseline_us
    ((2, 3, 0, 1), True)
    """
    n = len(layout)
    var = _ops.variant_of(op, variant, profile)
    # a default's schedule can depend on the size and hosts (Intel MPI's chunks)
    schedule = None if native is None else native.schedule_on(layout, int(size))
    model = profile.at(size) if _tree_op(op).movement.one_message else profile
    blocks = [np.flatnonzero(layout.hosts == h) for h in range(layout.n_hosts)]

    def cost(order: Sequence[int]) -> float:
        perm = np.concatenate([blocks[h] for h in order])
        lay = layout.take(perm)
        t = make_tree(tree, n, layout=lay, profile=profile)
        return float(var.predict(_ops.get(op), model, lay, t, [size], schedule)[0])

    best, cur, baseline, method = best_host_order(cost, layout.n_hosts)
    perm = np.concatenate([blocks[h] for h in best])
    keys = np.empty(n, dtype=np.int64)
    keys[perm] = np.arange(n)
    return RankOrder(tuple(int(x) for x in perm), tuple(int(x) for x in keys), cur, baseline, method)


def best_host_order(
    cost: Callable[[Sequence[int]], float], n_hosts: int, keep_first: bool = False
) -> tuple[tuple[int, ...], float, float, str]:
    """The order of ``n_hosts`` hosts minimising ``cost(order)`` (µs): every order up to :data:`HOST_ORDERS_ALL_MAX`
    hosts, else pairwise swaps from ``0..n_hosts-1`` while the time drops; ``keep_first``: host 0 stays first (the
    root's host). Returns (order, its time, the time of ``0..n_hosts-1``, how it was found); never slower than
    ``0..n_hosts-1``.

    >>> best_host_order(lambda o: float(o[0]), 3)[:3]
    ((0, 1, 2), 0.0, 0.0)
    >>> best_host_order(lambda o: float(abs(o[1] - 2)), 3, keep_first=True)[:2]
    ((0, 2, 1), 0.0)
    """
    ident = tuple(range(n_hosts))
    baseline = cost(ident)
    best, cur = ident, baseline
    lo = 1 if keep_first else 0  # positions before lo stay
    if n_hosts <= HOST_ORDERS_ALL_MAX:
        method = f"every order of the {n_hosts} hosts (each host's ranks together)"
        for tail in itertools.permutations(ident[lo:]):
            c = cost(ident[:lo] + tail)
            if c < cur - 1e-9:
                best, cur = ident[:lo] + tail, c
    else:
        method = "pairwise swaps of hosts (each host's ranks together)"
        order_l = list(ident)
        improved = True
        while improved:
            improved = False
            for i, j in itertools.combinations(range(lo, len(order_l)), 2):
                order_l[i], order_l[j] = order_l[j], order_l[i]
                c = cost(order_l)
                if c < cur - 1e-9:
                    best, cur, improved = tuple(order_l), c, True
                else:
                    order_l[i], order_l[j] = order_l[j], order_l[i]
    if best == ident:
        method = "identity (no order of the hosts beats the current one)"
    return best, cur, baseline, method
