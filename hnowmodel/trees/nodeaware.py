"""Node-aware trees for layouts with several ranks per host: :func:`two_level` (a tree over one rank per host, then
a tree inside each host from that rank), with the host heads of hnow's own trees (``head="root"``), of MPICH's
``smp`` bcast and ch4's composition alpha (``"leader"``) and of Open MPI's coll/han (``"local"``), and what each is
built from (:func:`host_members`, :func:`host_heads`).

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
>>> two_level(lay, binomial, binomial, root=1, head="leader").children
((4, 2), (0,), (3,), (), (5,), ())
>>> two_level(lay, binomial, binomial, root=1, head="local").children
((), (5, 3, 0), (), (2,), (), (4,))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..errors import TreeError
from ..layout import hosts_of
from .generic import binomial
from .tree import Tree, _check_n_root, from_children

__all__ = ["two_level", "host_members", "host_heads", "HEADS"]

#: Which rank heads each host (:func:`host_heads`): ``root`` (its lowest rank; the root heads its own host),
#: ``leader`` (its lowest rank, the root's host too: the root first sends to that leader, as MPICH's smp bcast),
#: ``local`` (the rank whose position on its host is the root's position on the root's host, as Open MPI's
#: coll/han, whose inter-host communicator joins the ranks of one local position).
HEADS = ("root", "leader", "local")

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


def host_heads(layout: Sequence[str], root: int = 0, head: str = "root") -> np.ndarray:
    """The rank that heads each host in a two-level tree rooted at ``root``, by the rule ``head`` (:data:`HEADS`);
    :class:`TreeError` for an unknown rule, or ``local`` on hosts of different sizes (coll/han does not run there).

    >>> from hnowmodel.layout import Layout
    >>> lay = Layout(["a"] * 4, hosts=[0, 0, 1, 1])
    >>> host_heads(lay, root=3).tolist(), host_heads(lay, 3, "leader").tolist(), host_heads(lay, 3, "local").tolist()
    ([0, 3], [0, 2], [1, 3])
    """
    if head not in HEADS:
        raise TreeError(f"unknown host head {head!r} (choose from: {', '.join(HEADS)})")
    members = host_members(layout)
    root_host = int(hosts_of(layout)[root])
    if head == "local":
        if len({m.size for m in members}) > 1:
            raise TreeError("a coll/han tree needs the same number of ranks on every host (han falls back otherwise)")
        pos = int(np.flatnonzero(members[root_host] == root)[0])
        return np.array([int(m[pos]) for m in members], dtype=np.int64)
    heads = np.array([int(m[0]) for m in members], dtype=np.int64)
    if head == "root":
        heads[root_host] = root
    return heads


def two_level(
    layout: Sequence[str],
    inter: TreeBuild = binomial,
    intra: TreeBuild = binomial,
    root: int = 0,
    *,
    head: str = "root",
    name: str = "",
) -> Tree:
    """A tree of family ``inter`` over the hosts, then a tree of family ``intra`` inside each host from its head.

    Which rank heads each host is ``head`` (:data:`HEADS`). With ``root`` (hnow's own trees) the root heads its
    own host: it reaches its host-mates itself, one message fewer than going through the leader. With ``leader``,
    as MPICH's ``smp`` bcast and ch4's composition alpha do, the root first sends the message to its host's leader
    (the host's lowest rank), which heads the host; the intra-host tree of the root's host is then the one rooted
    at the leader, as MPICH builds it. MPICH's leader also sends the message back to the root (which holds it
    already): that duplicate is no tree edge and is left out, so the root's intra-host children (if any) get the
    message from the root right after its send to the leader. With ``local`` (Open MPI's coll/han) every host is
    headed by the rank at the root's position on its host.

    A layout with one rank per host (or a plain sequence of type names) gives the ``inter`` tree over all ranks.
    """
    hosts = hosts_of(layout)
    n = int(hosts.shape[0])
    _check_n_root(n, root)
    members = host_members(layout)
    root_host = int(hosts[root])
    heads = host_heads(layout, root, head)
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
    if heads[root_host] != root:  # head="leader": the root hands the message to its host's leader first
        children[root] = [int(heads[root_host]), *children[root]]
    return from_children(children, name or f"two-level({top.name})")
