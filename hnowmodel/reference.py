"""Straightforward per-rank reference implementations of the predictions (one Python step per rank and size).

They follow the paper's recurrences literally and exist to check :mod:`hnowmodel.predict` (tests compare the
two on random trees) and to measure its speed-up (``experiments/perf_predict.py``). Not for production use.
Every send, wire and receive term is evaluated with the profile's piecewise methods at that message's own byte
count (``m`` for a broadcast, the subtree's ``blocks * m`` on a scatter/gather edge): the regime in force for it.

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


def _push_down(
    profile: Profile, layout: Sequence[str], tree: Tree, nbytes: Sequence[float], copy_bytes: float | None = None
) -> list[float]:
    """Receive time of every rank; with ``copy_bytes``, the root's entry is when it has finished its sends and
    then its local copy of ``copy_bytes`` bytes."""
    types = [profile.node_type(t) for t in layout]
    children = tree.children
    t = [0.0] * tree.n

    def visit(p: int) -> float:
        clock = t[p]
        for c in children[p]:
            clock += types[p].send_us(nbytes[c])
            link = profile.link(layout[p], layout[c])
            t[c] = clock + link.us(nbytes[c]) + types[c].recv_us(nbytes[c])
            visit(c)
        return clock

    sent = visit(tree.root)
    if copy_bytes is not None:
        t[tree.root] = sent + types[tree.root].copy_us(copy_bytes)
    return t


def bcast_reference(profile: Profile, layout: Sequence[str], tree: Tree, m: float) -> list[float]:
    """Eq. 7 rank by rank: each rank's receive time in µs for one message size ``m`` bytes."""
    return _push_down(profile, layout, tree, [m] * tree.n)


def scatter_reference(
    profile: Profile, layout: Sequence[str], tree: Tree, m: float, root_copy: bool = False
) -> list[float]:
    """Eq. 9 generalised rank by rank: the edge into a rank carries its subtree's ``m``-byte blocks.

    ``root_copy``: the root copies its own block after its sends; its entry is then when it is done.
    """
    sub = tree.subtree_size
    return _push_down(profile, layout, tree, [float(sub[i]) * m for i in range(tree.n)], m if root_copy else None)


def gather_reference(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree,
    m: float,
    one_at_a_time: bool = False,
    root_copy: bool = False,
) -> list[float]:
    """Eq. 10-12 generalised rank by rank: when each rank holds its subtree's data (root: completion), µs.

    ``root_copy``: the root copies its own ``m``-byte block before it receives (its receive clock starts then).
    A message of at least ``profile.rendezvous_from_bytes`` bytes waits for its receive to be posted: it starts when
    both the sender is ready and the parent's previous receive (or copy) is done, and costs ``S + X + R``.
    """
    rdv = profile.rendezvous_from_bytes
    types = [profile.node_type(t) for t in layout]
    children = tree.children
    sub = tree.subtree_size
    ready = [0.0] * tree.n

    def visit(p: int) -> float:
        msgs = []
        for c in children[p]:
            nb = float(sub[c]) * m
            got = visit(c)
            depart = got + types[c].send_us(nb)
            msgs.append((depart, c, profile.link(layout[c], layout[p]).us(nb), types[p].recv_us(nb), got, nb))
        msgs.sort()
        wire_total = 0.0
        link_free = float("-inf")
        clock = float("-inf") if msgs else 0.0
        if root_copy and p == tree.root:
            clock = types[p].copy_us(m)
        for depart, _, wire, recv, got, nb in msgs:
            if not one_at_a_time:  # eq. 12 as printed: the i-th arrival is S_(i) + i·X
                wire_total += wire
                arrive = depart + wire_total
            else:
                arrive = max(depart, link_free) + wire
                link_free = arrive
            if rdv is not None and nb >= rdv:  # (its wire time still occupies the link for later eager ones)
                clock = max(clock, got) + (depart - got) + wire + recv
            else:
                clock = max(clock, arrive) + recv
        ready[p] = clock
        return clock

    visit(tree.root)
    return ready
