"""Node-aware trees for layouts with several ranks per host: :func:`two_level` (a tree over one rank per host, then
a tree inside each host from that rank), the shape MPICH's ``smp`` bcast and ch4's composition alpha run
(``via_leader``), and what each is built from (:func:`host_members`).

A two-level tree is an ordinary :class:`~hnowmodel.trees.Tree` over all ranks (parent array, send order), so
every predictor and the tree executor run it unchanged. Each level is any tree family: ``inter`` is built over
the hosts (host ``h`` is relative position ``h`` of it, hosts numbered in order of first appearance, as MPICH's
``node_roots_comm`` numbers its node leaders), ``intra`` over the ranks of each host in increasing rank order (as
MPICH's ``node_comm`` numbers them). A host's head sends to its inter-host children first, then to its
intra-host children (MPICH's order: the inter-node bcast, then the intra-node one), so the longer inter-host
paths start first.

>>> from hnowmodel.layout import Layout
>>> from hnowmodel.trees import binomial, sequential
>>> lay = Layout(["f"] * 6, hosts=[0, 0, 1, 1, 2, 2])
>>> two_level(lay, binomial, sequential).children
((4, 2, 1), (), (3,), (), (5,), ())
>>> two_level(lay, binomial, binomial, root=1, via_leader=True).children
((4, 2), (0,), (3,), (), (5,), ())
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..layout import hosts_of
from .generic import binomial
from .tree import Tree, _check_n_root, from_children

__all__ = ["two_level", "host_members", "host_heads"]

#: ``build(n, root) -> Tree``: a tree family over ``n`` relative positions rooted at ``root`` (:func:`binomial`,
#: or a closure over :func:`~hnowmodel.trees.make_tree` for a named family).
TreeBuild = Callable[[int, int], Tree]


def host_members(layout: Sequence[str]) -> list[np.ndarray]:
    """The ranks of each host, host by host, each in increasing rank order (a plain sequence: one per rank).

    >>> from hnowmodel.layout import Layout
    >>> [m.tolist() for m in host_members(Layout(["a", "b", "a"], hosts=[0, 1, 0]))]
    [[0, 2], [1]]
    """
    hosts = hosts_of(layout)
    order = np.argsort(hosts, kind="stable")
    cuts = np.cumsum(np.bincount(hosts, minlength=int(hosts.max()) + 1 if hosts.size else 0))[:-1]
    return np.split(order.astype(np.int64), cuts)


def host_heads(layout: Sequence[str], root: int = 0, via_leader: bool = False) -> np.ndarray:
    """The rank that heads each host in a two-level tree rooted at ``root``: its lowest rank (its leader), except
    that the root heads its own host unless ``via_leader`` (then the root first sends to its host's leader).

    >>> from hnowmodel.layout import Layout
    >>> host_heads(Layout(["a"] * 4, hosts=[0, 0, 1, 1]), root=3).tolist()
    [0, 3]
    """
    heads = np.array([int(m[0]) for m in host_members(layout)], dtype=np.int64)
    if not via_leader:
        heads[int(hosts_of(layout)[root])] = root
    return heads


def two_level(
    layout: Sequence[str],
    inter: TreeBuild = binomial,
    intra: TreeBuild = binomial,
    root: int = 0,
    *,
    via_leader: bool = False,
    name: str = "",
) -> Tree:
    """A tree of family ``inter`` over the hosts, then a tree of family ``intra`` inside each host from its head.

    The root heads its own host (it reaches its host-mates itself: one message fewer than going through the
    leader) unless ``via_leader``: then, as MPICH's ``smp`` bcast and ch4's composition alpha do, the root first
    sends the message to its host's leader (the host's lowest rank), which heads the host. The intra-host tree of
    the root's host is then the one rooted at the leader, as MPICH builds it; MPICH's leader also sends the message
    back to the root (which holds it already): that duplicate is no tree edge and is left out, so the root's
    intra-host children (if any) get the message from the root right after its send to the leader.

    A layout with one rank per host (or a plain sequence of type names) gives the ``inter`` tree over all ranks.
    """
    hosts = hosts_of(layout)
    n = int(hosts.shape[0])
    _check_n_root(n, root)
    members = host_members(layout)
    root_host = int(hosts[root])
    heads = host_heads(layout, root, via_leader)
    children: list[list[int]] = [[] for _ in range(n)]
    top = inter(len(members), root_host)
    for h, kids in enumerate(top.children):
        children[int(heads[h])] = [int(heads[c]) for c in kids]
    for h, ranks in enumerate(members):
        if ranks.size == 1:
            continue
        head = int(heads[h])
        local = intra(int(ranks.size), int(np.flatnonzero(ranks == head)[0]))
        for i, kids in enumerate(local.children):
            children[int(ranks[i])] += [int(ranks[c]) for c in kids if int(ranks[c]) != root]
    if via_leader and heads[root_host] != root:
        children[root] = [int(heads[root_host]), *children[root]]
    return from_children(children, name or f"two-level({top.name})")
