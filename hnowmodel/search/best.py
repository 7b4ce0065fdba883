"""The fastest tree found for an operation at one size: the candidates (the exact broadcast optimum or the
heuristics, the sequential tree in its best order, the standard shapes), scored under the operation's model
variant, and improved by a local search under a flow-level variant (which has no exact search).

>>> import hnowmodel as hm
>>> best = best_tree(hm.paper_profile(), ["fast"] * 4 + ["slow"] * 4, op="bcast", size=0)
>>> best.method, best.time_us
('exact', 410.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops as _ops
from .. import trees as _trees
from ..errors import InputError
from ..layout import hosts_of, one_per_host
from ..params import Profile
from ..trees import Tree
from ..variants import Variant
from .algorithms import best_algorithm
from .exact import EXACT_AUTO_WORK, exact_bcast, exact_work
from .heuristics import ecef, fnf, improve, improve_under
from .orders import best_sequential
from .rank_order import rank_order
from .result import BestTree
from .twolevel import host_candidates, host_classes

__all__ = [
    "BestTree",
    "best_tree",
    "METHODS",
    "LOCAL_SEARCH_MAX_RANKS",
    "SEED_SHAPES",
    "SEED_MAX_RANKS",
    "LOCAL_SEARCH_STARTS",
    "HOSTS_PLAIN_MAX_RANKS",
]


def _counts(layout: Sequence[str], root: int) -> list[int]:
    out: dict[str, int] = {}
    for r, t in enumerate(layout):
        if r != root:
            out[t] = out.get(t, 0) + 1
    return list(out.values())


def _bcast_candidates(profile: Profile, layout: Sequence[str], size: float, root: int, method: str):
    if method == "exact":
        tree, _ = exact_bcast(profile, tuple(layout), size, root)
        return [("exact", tree)]
    if method == "fnf":
        return [("fnf", improve(profile, layout, fnf(profile, layout, size, root), size))]
    if method == "ecef":
        return [("ecef", improve(profile, layout, ecef(profile, layout, size, root), size))]
    # auto: exact when affordable, else the better of the improved heuristics
    if exact_work(_counts(layout, root)) <= EXACT_AUTO_WORK:
        return _bcast_candidates(profile, layout, size, root, "exact")
    return _bcast_candidates(profile, layout, size, root, "fnf") + _bcast_candidates(
        profile, layout, size, root, "ecef"
    )


METHODS = ("auto", "exact", "fnf", "ecef")
#: Trees up to this many ranks are improved locally under a flow variant (O(n²) neighbours).
LOCAL_SEARCH_MAX_RANKS = 64
#: Under a flow variant these library shapes, each in its best rank order (:func:`rank_order`), and a root → relay
#: → everyone-else tree (:func:`_relay`) join the candidates as starts of the local search (up to
#: :data:`SEED_MAX_RANKS` ranks, operations whose data moves away from the root), and the best of the others and
#: the best candidates overall, :data:`LOCAL_SEARCH_STARTS` in all, are each improved (else only the best
#: candidate). Not for data moving toward the root (gather): its flow model is an event simulation, too slow for a
#: rank-order search per shape (32 ranks: minutes), and its single start reached the same times in the checks of
#: docs/model.md.
SEED_SHAPES = ("binomial", "knomial:3", "knomial:4", "kary:2", "kary:3", "chain", "mpich-knomial1:2")
SEED_MAX_RANKS = 32
LOCAL_SEARCH_STARTS = 3
#: On a layout with several ranks per host, the candidates built for one rank per host are searched over all ranks
#: up to this many ranks; beyond, only the binomial tree joins the two-level candidates (the searches over every
#: rank cost O(n²) there, and a tree that ignores the hosts sends a host's data over its NIC more than once).
HOSTS_PLAIN_MAX_RANKS = 256


def _relay(n: int, root: int) -> Tree:
    """The root sends once, to a relay that sends to every other rank (a seed of the flow-variant search: under
    round-robin egress sharing a fast relay can beat every library shape, measured on the virtual cluster)."""
    others = [r for r in range(n) if r != root]
    parent = [-1] * n
    for r in others:
        parent[r] = others[0] if r != others[0] else root
    return _trees.from_parent(parent, name="relay")


def best_tree(
    profile: Profile,
    layout: Sequence[str],
    op: str = "bcast",
    size: float = 0,
    method: str = "auto",
    root: int | None = 0,
    compare: Sequence[str] = ("binomial", "sequential", "hierarchical"),
    variant: str | None = None,
    reduce_us_per_byte: Any = None,
) -> BestTree:
    """The fastest tree found for ``op`` at ``size`` bytes on this layout (``method``: auto, exact, fnf, ecef).

    Broadcast (every edge carries the one message): ``exact`` is the proven optimum under eq. 7 (DP over per-type
    counts); ``fnf``/``ecef`` are the heuristics followed by local improvement; ``auto`` is exact when the DP is
    small enough. Scatter and gather: the sequential tree in its exact best order
    (:mod:`~hnowmodel.search.orders`; exact among sequential trees), the binomial and hierarchical trees and the
    FNF/ECEF shapes (``auto``: both; ``fnf``/``ecef``: that one) are compared under the op's own model
    (:mod:`hnowmodel.closedform`: subtree data per edge off the sequential tree) and the fastest is returned; ``exact``
    is then False (not a proof over all trees). ``variant`` is the operation's model variant
    (:mod:`hnowmodel.variants`; None: its default for ``profile``, the one ``hnow compare`` compares under). The
    candidates are built under the paper's equations; under a flow-level variant (the default on a network
    profile) the best of them is improved by a local search under that variant (:func:`improve_under`, up to
    :data:`LOCAL_SEARCH_MAX_RANKS` ranks), together with the library shapes of :data:`SEED_SHAPES` in their best
    rank order (the :data:`LOCAL_SEARCH_STARTS` best starts, each improved); ``method`` names the start that won
    and the search, and ``exact`` is False.

    Every parameter is evaluated at ``size`` (profile regimes): the searches work on ``profile.at(size)``, and
    candidates are scored with the variant's predictor on the full profile, where an edge carrying k blocks
    (scatter/gather) uses the regime of its own ``k*size`` bytes - so ``time_us`` equals the prediction of the tree.

    On a layout with several ranks per host (:class:`~hnowmodel.layout.Layout`) the two-level trees of
    :func:`~hnowmodel.search.twolevel.host_candidates` join the candidates (a tree over the hosts, exact over host
    classes for bcast where affordable, combined with the best family inside the hosts: the heuristic is in that
    module's docstring), beside the plain candidates (all of them up to :data:`HOSTS_PLAIN_MAX_RANKS` ranks, else
    the binomial tree); the fastest under the variant wins, so the result is never slower than a plain candidate,
    and ``exact`` is False.

    An operation whose algorithms are message schedules (:attr:`hnowmodel.ops.Operation.algorithms`: ring,
    recursive doubling, …) has no tree: :func:`~hnowmodel.search.algorithms.best_algorithm` searches its
    algorithms with their rank order, root (``root`` None: chosen, else kept) and two-level compositions under the
    variant (``reduce_us_per_byte``: γ of a reduction, None: the profile's), beside the MPI libraries' defaults
    (``method`` the algorithm, ``params`` and ``perm`` its parameters and rank order, ``tree`` None, ``compared``
    the other algorithms' best times, ``defaults_us`` the defaults'; ``method`` and ``compare`` do not apply).
    A tree's ``root`` None is rank 0.
    """
    if _ops.get(op).movement is None:
        return best_algorithm(profile, layout, op, size, root, variant, reduce_us_per_byte)
    root = 0 if root is None else root
    if method not in METHODS:
        raise InputError(f"unknown method {method!r} (choose from: {', '.join(METHODS)})")
    o = _ops.get(op)
    n = len(layout)
    if not 0 <= root < n:
        raise InputError(f"root {root} is not a rank in 0..{n - 1}")
    var = _ops.variant_of(op, variant, profile)

    seen: dict[Tree, float] = {}  # a tree met again (a candidate, a compared tree) is not predicted again

    def cost(t: Tree) -> float:
        if t not in seen:
            seen[t] = float(var.predict(_ops.get(op), profile, layout, t, [size])[0])
        return seen[t]

    if one_per_host(layout):
        scored = [(cost(t), name, t) for name, t in _candidates(profile, layout, o, size, root, method)]
    else:
        scored = _scored_on_hosts(profile, layout, o, size, root, method, var, cost)
    first = min(range(len(scored)), key=lambda i: (scored[i][0], i))  # the best candidate, the earliest on ties
    time_us, name, tree = scored[first]
    exact = name == "exact" and var.exact_for(_ops.get(op)) and one_per_host(layout)
    if var.flow_level and n <= LOCAL_SEARCH_MAX_RANKS:
        time_us, name, tree = _improve_under_variant(profile, layout, o, size, root, var, cost, scored, first)
    compared = {}
    for spec in compare:
        t = _trees.make_tree(spec, n, root=root, layout=layout, profile=profile)
        compared[spec] = cost(t)
    return BestTree(tree, time_us, name, op, int(size), exact, compared)


def _scored_on_hosts(
    profile: Profile,
    layout: Sequence[str],
    o: _ops.Operation,
    size: float,
    root: int,
    method: str,
    var: Variant,
    cost: Callable[[Tree], float],
) -> list[tuple[float, str, Tree]]:
    """The scored candidates for a layout with shared hosts: the plain ones (every one up to
    :data:`HOSTS_PLAIN_MAX_RANKS` ranks, else binomial), then the two-level ones, whose inter-host trees include
    the plain candidates built over the hosts' node types."""
    n = len(layout)
    if n <= HOSTS_PLAIN_MAX_RANKS:
        plain = _candidates(profile, layout, o, size, root, method)
    else:
        plain = [("binomial", _trees.binomial(n, root))]
    scored = [(cost(t), name, t) for name, t in plain]
    host_types = [t for t, _ in host_classes(layout)]
    inter = _candidates(profile, host_types, o, size, int(hosts_of(layout)[root]), method)
    return scored + host_candidates(profile, layout, o.name, size, root, var, cost, inter)


def _candidates(
    profile: Profile, layout: Sequence[str], o: _ops.Operation, size: float, root: int, method: str
) -> list[tuple[str, Tree]]:
    """The named candidate trees of ``method`` for operation ``o`` (built under the paper's equations)."""
    if o.movement.one_message:
        return _bcast_candidates(profile, layout, size, root, method)
    n = len(layout)
    cands = [("sequential:best", best_sequential(profile, layout, o.name, size, root))]
    # the subtree-data shapes MPICH uses can win at small sizes (fewer root sends): always in the running
    cands += [(name, _trees.make_tree(name, n, root, layout, profile)) for name in ("binomial", "hierarchical")]
    if method in ("auto", "fnf"):
        cands.append(("fnf", fnf(profile, layout, size, root)))
    if method in ("auto", "ecef"):
        cands.append(("ecef", ecef(profile, layout, size, root)))
    # the broadcast optimum's shape (exact or heuristic) also carries scatter/gather data well at small sizes
    cands += [(f"{name} (bcast shape)", t) for name, t in _bcast_candidates(profile, layout, size, root, method)]
    return cands


def _improve_under_variant(
    profile: Profile,
    layout: Sequence[str],
    o: _ops.Operation,
    size: float,
    root: int,
    var: Variant,
    cost: Callable[[Tree], float],
    scored: list[tuple[float, str, Tree]],
    first: int,
) -> tuple[float, str, Tree]:
    """The best few starts improved locally under the flow-level variant ``var``: (time µs, method, tree).

    The candidates are built under the paper's equations and a flow variant has no exact search here, so the best
    few starts are improved locally under the variant itself. One start is not enough: the local search stops
    where every single move leaves the completion as it is (two critical paths), which on a 6-host cluster with a
    60 Mbit/s root left bcast 16-41 % above the brute-force optimum; the library shapes in their best rank order
    reach it there (docs/model.md, "Choosing a tree under a flow variant")."""
    n = len(layout)
    seeded = n <= SEED_MAX_RANKS and not o.movement.toward_root
    if seeded:
        for shape in (*SEED_SHAPES, "relay"):
            sh = _relay(n, root) if shape == "relay" else _trees.make_tree(shape, n, root=root)
            perm = rank_order(profile, layout, sh, o.name, size, variant=var.name).perm
            t = sh.relabel(perm, f"{shape} in its best rank order")
            scored.append((cost(t), t.name, t))
    starts = dict.fromkeys([first, *sorted(range(len(scored)), key=lambda i: (scored[i][0], i))])
    best: tuple[float, str, Tree] | None = None
    for i in list(starts)[: LOCAL_SEARCH_STARTS if seeded else 1]:
        t, c, _ = improve_under(cost, scored[i][2])
        if best is None or c < best[0] * (1 - 1e-12):
            best = (c, scored[i][1], t)
    assert best is not None
    return best[0], f"{best[1]} + local search ({var.name})", best[2]
