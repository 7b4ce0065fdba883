"""The search over node-aware trees for a layout with several ranks per host (:func:`host_candidates`): two-level
trees (:func:`hnowmodel.trees.two_level`: a tree over the hosts, each headed by one rank, then a tree inside each
host), which send every host its data once.

The heuristic, at one message size and under the operation's model variant:

1. **Inside a host**: for each family of :data:`INTRA_FAMILIES`, a host's *tail* is the variant's prediction of that
   family's tree over the host's ranks alone (µs; one host of ``slots`` ranks of its type: the time its head takes
   to reach its host-mates), per host class (node type, slots).
2. **Over the hosts**, for each intra family: broadcast (one message per edge) takes the exact optimum of eq. 7 over
   the host classes with each host's tail as its finishing cost (:func:`exact_hosts_bcast`: a head sends to its
   inter-host children first, then runs its host's tree, so a host finishes ``tail`` after its last inter-host
   send), when the dynamic programme is affordable (:data:`~hnowmodel.search.exact.EXACT_AUTO_WORK`); every
   operation also gets the candidates :func:`~hnowmodel.search.best_tree` builds for one rank per host over the
   hosts' node types (``inter``: the exact or heuristic broadcast shapes, the sequential tree in its best order, the
   binomial and hierarchical trees, FNF, ECEF), none of which sees the tails.
3. Each inter-host tree is combined with the intra family it was built for (the tails-aware one) or with the intra
   family whose tails-aware tree scored best (the others), and every combination is scored by the variant's
   predictor over all ranks (``cost``): the caller keeps the fastest, beside its plain candidates.

The tails enter the dynamic programme exactly: with base case ``f(u, {}) = tail_u`` instead of 0, the recurrence
of :mod:`~hnowmodel.search.exact` becomes the unchanged one for ``g(u, M) = f(u, M) - tail_u`` with edge costs
``a(u, v) + tail_v - tail_u``, so the same programme solves it. The optimum is exact for eq. 7 over the trees that
reach each host through its head, inter-host sends first, with the intra family fixed; the final choice is by the
variant's prediction, not a proof (``exact`` is False).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import ops as _ops
from ..layout import Layout, hosts_of
from ..params import Profile
from ..trees import Tree, host_members, make_tree, two_level
from ..variants import Variant
from .exact import EXACT_AUTO_WORK, _fill, _rebuild, edge_costs, exact_work

__all__ = ["INTRA_FAMILIES", "host_classes", "host_tails", "exact_hosts_bcast", "host_candidates"]

#: The families tried inside each host: binomial (MPICH's and Open MPI's intra-node bcast), sequential (the head
#: reaches each host-mate itself: best when a host-to-host message dwarfs the shared-memory ones) and chain.
INTRA_FAMILIES = ("binomial", "sequential", "chain")


def host_classes(layout: Sequence[str]) -> list[tuple[str, int]]:
    """Each host's class: its node type and its number of ranks.

    >>> host_classes(Layout(["f", "f", "s"], hosts=[0, 0, 1]))
    [('f', 2), ('s', 1)]
    """
    return [(layout[int(m[0])], int(m.size)) for m in host_members(layout)]


def host_tails(
    profile: Profile, layout: Sequence[str], op: str, size: float, family: str, var: Variant
) -> dict[tuple[str, int], float]:
    """The time (µs) a host's head takes to reach its host-mates with tree ``family``, alone, per host class: the
    variant's prediction of ``op`` over one host of that class (0 for a host of one rank)."""
    out: dict[tuple[str, int], float] = {}
    for t, k in set(host_classes(layout)):
        if k == 1:
            out[(t, k)] = 0.0
            continue
        one = Layout([t] * k, hosts=[0] * k)
        tree = make_tree(family, k, layout=one, profile=profile)
        out[(t, k)] = float(var.predict(_ops.get(op), profile, one, tree, [size])[0])
    return out


def exact_hosts_bcast(
    profile: Profile, layout: Sequence[str], size: float, root: int, tails: dict[tuple[str, int], float]
) -> Tree | None:
    """The eq.-7 optimal broadcast tree over the hosts (host ``h`` is position ``h``) when each host finishes
    ``tails[class]`` µs after its last inter-host send; None when the programme is too large for ``auto``.

    >>> from hnowmodel.params import paper_profile
    >>> lay = Layout(["fast"] * 4 + ["slow"] * 3, hosts=[0, 0, 1, 1, 2, 3, 4])
    >>> exact_hosts_bcast(paper_profile(), lay, 0, 0, {("fast", 2): 500.0, ("slow", 1): 0.0}).children[0]
    (1, 2)
    """
    classes = host_classes(layout)
    root_host = int(hosts_of(layout)[root])
    names = list(dict.fromkeys(classes))
    counts = [sum(1 for h, c in enumerate(classes) if c == cl and h != root_host) for cl in names]
    if exact_work(counts) > EXACT_AUTO_WORK:
        return None
    at = profile.at(size)
    S, a = edge_costs(at, [t for t, _ in names], size)
    tail = np.array([tails[cl] for cl in names])
    # f(u, {}) = tail_u: solve for g = f - tail_u, whose base case is 0, with a(u, v) + tail_v - tail_u
    _, choice_v, choice_m1 = _fill(S, a + tail[None, :] - tail[:, None], tuple(c + 1 for c in counts))
    labels = [f"{t}/{k}" for t, k in names]
    host_layout = [labels[names.index(c)] for c in classes]
    return _rebuild(host_layout, root_host, labels, choice_v, choice_m1, tuple(c + 1 for c in counts))


def host_candidates(
    profile: Profile,
    layout: Sequence[str],
    op: str,
    size: float,
    root: int,
    var: Variant,
    cost: Callable[[Tree], float],
    inter: Sequence[tuple[str, Tree]] = (),
) -> list[tuple[float, str, Tree]]:
    """Two-level candidates scored by ``cost`` (µs): ``(time, name, tree)``, as the module docstring describes;
    ``inter`` are further trees over the hosts (host ``h`` = position ``h``, rooted at the root's host)."""
    one_message = _ops.get(op).movement.one_message
    scored: list[tuple[float, str, Tree]] = []

    def add(top: Tree, intra: str, label: str) -> None:
        t = two_level(layout, lambda k, r: top, _family(intra), root, name=f"hosts:{label}/{intra}")
        scored.append((cost(t), t.name, t))

    for intra in INTRA_FAMILIES:
        tails = host_tails(profile, layout, op, size, intra, var)
        top = exact_hosts_bcast(profile, layout, size, root, tails) if one_message else None
        add(
            top if top is not None else make_tree("binomial", len(host_classes(layout)), int(hosts_of(layout)[root])),
            intra,
            "optimal" if top is not None else "binomial",
        )
    best_intra = min(scored, key=lambda s: s[0])[1].rpartition("/")[2]
    for label, top in inter:
        add(top, best_intra, label.replace(" ", "-"))
    return scored


def _family(name: str) -> Callable[[int, int], Tree]:
    return lambda k, r: make_tree(name, k, r)
