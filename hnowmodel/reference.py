"""Straightforward per-rank reference implementations of the predictions (one Python step per rank and size).

They follow the paper's recurrences literally and exist to check :mod:`hnowmodel.closedform` (tests compare the
two on random trees) and to measure its speed-up (``experiments/perf_predict.py``). Not for production use.
Every send, wire and receive term is evaluated with the profile's piecewise methods at that message's own byte
count (``m`` for a broadcast, the subtree's ``blocks * m`` on a scatter/gather edge): the regime in force for it.
A message between two ranks of one host (a :class:`~hnowmodel.layout.Layout` with hosts) costs the type's
shared-memory ``S``, ``X`` and ``R`` (``profile.shm``) instead of the sender's, the network's and the receiver's,
and takes no turn on the receiver's inbound link (docs/model.md, "Hosts").

>>> from hnowmodel.params import paper_profile
>>> from hnowmodel.trees import binomial
>>> bcast_reference(paper_profile(), ["fast"] * 4, binomial(4), 0)
[0.0, 230.0, 170.0, 340.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .layout import hosts_of
from .params import Profile
from .trees import Tree

__all__ = ["bcast_reference", "scatter_reference", "gather_reference"]


def _edges(profile: Profile, layout: Sequence[str]) -> Callable[[int, int], tuple[Any, Any, Any]]:
    """``edge(snd, rcv)``: the send, wire and receive cost functions (bytes -> µs) of a message from rank ``snd`` to
    rank ``rcv`` - the type's shared-memory costs when both are on one host, else the sender's, the network's and
    the receiver's (looked up once per type pair)."""
    hosts = hosts_of(layout).tolist()
    known: dict[tuple[str, str, bool], tuple[Any, Any, Any]] = {}

    def edge(snd: int, rcv: int) -> tuple[Any, Any, Any]:
        a, b, same = layout[snd], layout[rcv], hosts[snd] == hosts[rcv]
        got = known.get((a, b, same))
        if got is None:
            if same:
                c = profile.shm_costs(a)
                got = (c.node.send_us, c.link.us, c.node.recv_us)
            else:
                got = (profile.node_type(a).send_us, profile.link(a, b).us, profile.node_type(b).recv_us)
            known[(a, b, same)] = got
        return got

    return edge


def _push_down(
    profile: Profile, layout: Sequence[str], tree: Tree, nbytes: Sequence[float], copy_bytes: float | None = None
) -> list[float]:
    """Receive time of every rank; with ``copy_bytes``, the root's entry is when it has finished its sends and
    then its local copy of ``copy_bytes`` bytes."""
    edge = _edges(profile, layout)
    children = tree.children
    t = [0.0] * tree.n
    clock = [0.0] * tree.n  # when each rank is free for its next send
    order = [tree.root]
    for p in order:  # parents before children: a rank's receive time is final before it sends
        clock[p] = t[p]
        for c in children[p]:
            send, wire, recv = edge(p, c)
            clock[p] += send(nbytes[c])
            t[c] = clock[p] + wire(nbytes[c]) + recv(nbytes[c])
            order.append(c)
    if copy_bytes is not None:
        t[tree.root] = clock[tree.root] + profile.node_type(layout[tree.root]).copy_us(copy_bytes)
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
    Inter-host messages to a parent queue on its inbound link in departure order; same-host ones arrive at their
    departure plus their shared-memory wire time. The parent receives in arrival order (ties: departure, rank).
    """
    rdv = profile.rendezvous_from_bytes
    hosts = hosts_of(layout).tolist()
    edge = _edges(profile, layout)
    children = tree.children
    sub = tree.subtree_size
    ready = [0.0] * tree.n
    order = [tree.root]
    for p in order:
        order.extend(children[p])
    for p in reversed(order):  # children before parents
        msgs = []
        for c in children[p]:
            nb = float(sub[c]) * m
            send, wire, recv = edge(c, p)
            depart = ready[c] + send(nb)
            msgs.append((depart, c, float(wire(nb)), float(recv(nb)), ready[c], nb, hosts[c] == hosts[p]))
        msgs.sort()
        wire_total = 0.0
        link_free = float("-inf")
        arrivals = []
        for depart, c, wire, recv, got, nb, shm in msgs:
            if shm:  # through shared memory: no turn on the link
                arrive = depart + wire
            elif not one_at_a_time:  # eq. 12 as printed: the i-th arrival is S_(i) + i·X
                wire_total += wire
                arrive = depart + wire_total
            else:
                arrive = max(depart, link_free) + wire
                link_free = arrive
            arrivals.append((arrive, depart, c, wire, recv, got, nb))
        arrivals.sort()
        clock = float("-inf") if msgs else 0.0
        if root_copy and p == tree.root:
            clock = profile.node_type(layout[p]).copy_us(m)
        for arrive, depart, _, wire, recv, got, nb in arrivals:
            if rdv is not None and nb >= rdv:  # (its wire time still occupies the link for later eager ones)
                clock = max(clock, got) + (depart - got) + wire + recv
            else:
                clock = max(clock, arrive) + recv
        ready[p] = clock
    return ready
