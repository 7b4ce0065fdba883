"""Straightforward per-rank reference implementations of the predictions (one Python step per rank and size).

They follow the paper's recurrences literally and exist to check :mod:`hnowmodel.predict` (tests compare the
two on random trees) and to measure its speed-up (``experiments/perf_predict.py``). Not for production use.

>>> from hnowmodel.params import paper_profile
>>> from hnowmodel.trees import binomial
>>> bcast_reference(paper_profile(), ["fast"] * 4, binomial(4), 0)
[0.0, 230.0, 170.0, 340.0]
"""

from __future__ import annotations

from collections.abc import Sequence

from .params import Profile
from .trees import Tree

__all__ = ["bcast_reference", "scatter_reference", "gather_reference"]


def _push_down(profile: Profile, layout: Sequence[str], tree: Tree, nbytes: Sequence[float]) -> list[float]:
    types = [profile.node_type(t) for t in layout]
    children = tree.children
    t = [0.0] * tree.n

    def visit(p: int) -> None:
        clock = t[p]
        for c in children[p]:
            clock += types[p].send_us(nbytes[c])
            link = profile.link(layout[p], layout[c])
            t[c] = clock + link.us(nbytes[c]) + types[c].recv_us(nbytes[c])
            visit(c)

    visit(tree.root)
    return t


def bcast_reference(profile: Profile, layout: Sequence[str], tree: Tree, m: float) -> list[float]:
    """Eq. 7 rank by rank: each rank's receive time in µs for one message size ``m`` bytes."""
    return _push_down(profile, layout, tree, [m] * tree.n)


def scatter_reference(profile: Profile, layout: Sequence[str], tree: Tree, m: float) -> list[float]:
    """Eq. 9 generalised rank by rank: the edge into a rank carries its subtree's ``m``-byte blocks."""
    sub = tree.subtree_size
    return _push_down(profile, layout, tree, [float(sub[i]) * m for i in range(tree.n)])


def gather_reference(
    profile: Profile, layout: Sequence[str], tree: Tree, m: float, variant: str = "paper"
) -> list[float]:
    """Eq. 10-12 generalised rank by rank: when each rank holds its subtree's data (root: completion), µs."""
    types = [profile.node_type(t) for t in layout]
    children = tree.children
    sub = tree.subtree_size
    ready = [0.0] * tree.n

    def visit(p: int) -> float:
        msgs = []
        for c in children[p]:
            nb = float(sub[c]) * m
            depart = visit(c) + types[c].send_us(nb)
            msgs.append((depart, c, profile.link(layout[c], layout[p]).us(nb), types[p].recv_us(nb)))
        msgs.sort()
        wire_total = 0.0
        link_free = float("-inf")
        clock = float("-inf") if msgs else 0.0
        for depart, _, wire, recv in msgs:
            if variant == "paper":
                wire_total += wire
                arrive = depart + wire_total
            else:
                arrive = max(depart, link_free) + wire
                link_free = arrive
            clock = max(clock, arrive) + recv
        ready[p] = clock
        return clock

    visit(tree.root)
    return ready
