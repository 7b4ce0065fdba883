"""The network as shared links: a flow-level simulation of bcast, scatter and gather over any tree.

The paper's model (:mod:`hnowmodel.closedform`) keeps a sender busy ``S`` per message and sends one message after
another. Over TCP that is not what happens: ``MPI_Send`` of tens to hundreds of KiB returns as soon as the kernel's
socket buffers take the data, so a rank's messages to its children are **on the wire at the same time** and share
its outgoing link, and messages converging on one rank share its incoming link. This module models that the way
SimGrid's flow-level network model does:

* every **host** has one **egress** and one **ingress** link, its NIC (bytes/µs): ``profile.nic[type]``
  (:class:`~hnowmodel.params.Nic`) where the profile states it, else derived per node type from the profile's
  pairwise per-byte costs (:func:`host_capacities`, :func:`capacities`). With one rank per host (a plain list of
  type names is that) every rank has links of its own, as in SimGrid;
* a message between two ranks of **one host** touches no NIC: it goes through shared memory, at the type's
  ``profile.shm`` costs (:class:`~hnowmodel.params.ShmCosts`): the sender's ``S`` as a posting cost, then a fixed
  transfer ``X(m)`` whatever the NICs carry, then the receiver's ``R``;
* a message between hosts is a **flow** through its sender host's egress and its receiver host's ingress, shared
  by all the flows of that host's ranks; concurrent flows share every link by **max-min fairness** (progressive
  filling), recomputed at every flow start and finish; a flow is also capped at its own pair's rate ``1/Xm`` (so
  a lone flow takes exactly the profile's ``Xm·bytes``);
* a sender **posts all its sends at once** once it holds the data: the k-th send starts after the first k send
  overheads ``S`` (in the tree's send order); a message is delivered ``Xc`` after its last byte left, and the
  receiver then pays ``R``;
* how a sender host's egress is shared (:data:`SHARINGS`): the fluid network above, or a queue discipline
  (:mod:`~hnowmodel.flow.disciplines`: ``fifo``, ``rr``) for bcast and scatter, which drains the inter-host messages
  of all that host's ranks;
* **eager vs rendezvous** from ``profile.rendezvous_from_bytes``: a rendezvous message flows only once its receiver
  has posted the matching receive. That matters for gather (the schedule's ``recv_order``,
  :class:`~hnowmodel.runopts.Schedule`): the tree executor posts one receive per child up front, so they all
  flow at once; a parent that posts its receives one after another (in arrival order, as ``MPI_ANY_SOURCE``
  receives do, or in a fixed order such as MPICH's binomial gather, smallest subtree first) lets each flow only in
  its turn; in bcast and scatter a receiver has always posted its one receive already;
* a **token bucket** per NIC link (Linux ``tbf``): every link starts with a full bucket of ``burst_bytes``
  (``profile.extensions["network"]["burst_bytes"]``, default 0); bytes pass a link with tokens at memory speed
  (instantly here) and use them up; a bucket refills at the link's capacity minus what the link carries, up to
  ``burst_bytes``. A lone message of ``b`` bytes thus takes ``(b - burst)·Xm`` instead of ``b·Xm``;
* what passes at once costs its **sender** time: a rank's first send to another host finds its egress bucket full,
  and its own kernel pushes those packets through the network inside the call, so it posts its next send
  ``burst_send_us + burst_send_us_per_byte · min(b, burst_bytes)`` later (``profile.extensions["network"]``,
  default 0; measured by a calibration on a network as a send after idling minus ``S``:
  :class:`~hnowmodel.params.NetworkTerms`).

Evaluated per size, event by event (a flow's start and end, a message's delivery, a bucket running out or
refilling: a few events per message). An event costs what it touches, not the whole network: max-min fairness
decomposes over connected components (flows linked by shared links), so only the components of the links whose
flows or shaping changed are refilled; a flow's bytes and a bucket's tokens are kept as a value at a time plus a
rate, and the next finish and bucket event come from heaps; shared-memory messages are timers. A binomial bcast
takes about 0.03 s per size for 64 hosts x 32 ranks (2048 ranks) and 0.2-0.65 s for 2048 ranks on hosts of their
own, depending on the profile (``experiments/perf_flow.py``; 6-15 s before this design); the paper's closed-form
variants, vectorised over ranks, are some 10^3 times faster still and reach a million ranks.

Modules: :mod:`~hnowmodel.flow.network` (capacities, max-min sharing, the event-driven fluid network),
:mod:`~hnowmodel.flow.costs` (what each message costs), :mod:`~hnowmodel.flow.downward` (bcast, scatter through the
fluid network), :mod:`~hnowmodel.flow.disciplines` (queue disciplines of the egress), :mod:`~hnowmodel.flow.gather`
(gather); this package's functions are the predictors (:mod:`hnowmodel.variants`' flow variants).

>>> import hnowmodel as hm
>>> from hnowmodel.params import Link, NodeType, Profile
>>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))   # 100 bytes/µs on every link
>>> tree = hm.trees.sequential(3)                                     # the root sends to ranks 1 and 2 at once
>>> bcast(prof, ["f"] * 3, tree, [1000], per_rank=True).round(6).tolist()   # they share its egress: 2·m/c each
[[0.0, 20.0, 20.0]]
>>> from hnowmodel.layout import Layout
>>> from hnowmodel.params import ShmCosts
>>> prof = Profile(prof.types, prof.network, shm={"f": ShmCosts(NodeType("f", 0, 0, 0, 0), Link(0.5, 0.0))})
>>> two_hosts = Layout(["f"] * 3, hosts=[0, 0, 1])                     # ranks 0 and 1 share a host
>>> bcast(prof, two_hosts, tree, [1000], per_rank=True).round(6).tolist()   # shared memory: 0.5; the NIC alone: m/c
[[0.0, 0.5, 10.0]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..layout import hosts_of
from ..movement import ONE_DOWN, SUBTREE_DOWN, SUBTREE_UP, Movement
from ..params import Profile
from ..runopts import RECV_ORDERS, Schedule, as_schedule, as_sizes
from ..trees import Tree, make_tree
from .costs import MessageCosts
from .disciplines import LINK_SHARINGS, Sharing, downward_queued
from .downward import downward
from .gather import upward
from .network import FlowRecord, Network, capacities, host_capacities, max_min_rates

__all__ = [
    "RECV_ORDERS",
    "SHARINGS",
    "LINK_SHARINGS",
    "FlowRecord",
    "FlowRun",
    "burst_bytes",
    "queued_bytes",
    "burst_send",
    "capacities",
    "host_capacities",
    "max_min_rates",
    "simulate",
    "over_sizes",
    "bcast",
    "scatter",
    "gather",
]

#: The names of the link sharings (:data:`~hnowmodel.flow.disciplines.LINK_SHARINGS`).
SHARINGS = tuple(LINK_SHARINGS)


# ---- inputs from the profile (old readers: use ``profile.network_terms``) ---------------------------------------
def burst_bytes(profile: Profile) -> float:
    """The links' token-bucket burst (bytes); 0 when absent (:class:`~hnowmodel.params.NetworkTerms`).

    >>> from hnowmodel.params import paper_profile
    >>> burst_bytes(paper_profile())
    0.0
    """
    return profile.network_terms.burst


def queued_bytes(profile: Profile) -> float:
    """How many bytes of each message a sender hands its link's queue at once; 0 when absent. Used by ``rr``."""
    return profile.network_terms.queued


def burst_send(profile: Profile) -> tuple[float, float]:
    """A first send's busy time beyond ``S``: ``(burst_send_us, burst_send_us_per_byte)``, each 0 when absent."""
    t = profile.network_terms
    return t.burst_send_us or 0.0, t.burst_send_us_per_byte or 0.0


@dataclass(frozen=True)
class FlowRun:
    """One simulated collective (its data ``movement``) at one size: ``done_us[i]`` is when rank i holds its data
    (bcast/scatter: its message, after ``R``; the root 0, or with ``root_copy`` when its sends are posted and its
    own block copied; gather: its whole subtree's data, leaves 0), ``completion_us`` the max over ranks (gather:
    the root's), and every message's :class:`FlowRecord` in the order the flows finished."""

    movement: Movement
    size_bytes: float
    done_us: np.ndarray
    completion_us: float
    flows: tuple[FlowRecord, ...]


def _choice(table: Mapping[str, Any], name: str, what: str) -> Any:
    try:
        return table[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown {what} {name!r} (choose from: {', '.join(table)})") from None


def simulate(
    movement: Movement,
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    size: float,
    schedule: Schedule | None = None,
    *,
    root: int = 0,
    sharing: str = "maxmin",
    **fields: Any,
) -> FlowRun:
    """Simulate a collective whose data moves as ``movement`` (:mod:`hnowmodel.movement`: one message down every
    edge, a subtree's blocks down or up; an operation's ``.movement``) of ``size`` bytes (per rank for a subtree's
    blocks) over ``tree``.

    Returns a :class:`FlowRun` (times in µs from the root's start; gather: from the common start). The
    :class:`~hnowmodel.runopts.Schedule` (or its fields as keywords, the old form) says how the MPI implementation
    runs the tree: ``root_copy`` adds the root's local copy of its own block (scatter: after posting its sends, or
    before them with ``copy_first`` as Open MPI does; gather: before its first receive), ``recv_order`` is how a
    gather's parents post their receives. ``relay_waits`` (gather): a rank that forwards its children's data sends
    it only once its parent has posted the receive, from the profile's struct rendezvous size. MPICH's binomial
    gather does that: a relay sends its own block and the received ones as one struct datatype, which MPICH over
    UCX/TCP moves only into a posted receive (measured on the virtual cluster: the root's later children wait for
    its earlier receives), while a leaf's contiguous block flows when ready. ``sync`` (gather): every message, at
    any size, flows only once its parent has posted the receive for it, as Open MPI's linear_sync gather does (the
    root signals each rank in turn with an empty message; the signal's round trip is left out). ``sharing``: how
    concurrent messages share a link (:data:`SHARINGS`).

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(5, 0.01))
    >>> run = simulate(SUBTREE_UP, prof, ["f"] * 3, "sequential", 1000)
    >>> run.completion_us, [(r.src, r.start_us, r.end_us) for r in run.flows]
    (25.0, [(1, 0.0, 20.0), (2, 0.0, 20.0)])
    """
    if not isinstance(movement, Movement):
        raise InputError(
            f"simulate takes a data movement (hnowmodel.movement, an operation's .movement), got {movement!r}"
        )
    move = movement
    how: Sharing = _choice(LINK_SHARINGS, sharing, "link sharing")
    sched = as_schedule(schedule, **fields)
    if isinstance(tree, str):
        tree = make_tree(tree, len(layout), root=root, layout=layout, profile=profile)
    if len(layout) != tree.n:
        raise InputError(f"layout has {len(layout)} ranks but the tree has {tree.n}")
    if np.ndim(size) != 0:
        raise InputError(f"simulate takes one size in bytes, got {size!r}")
    m = float(as_sizes(size)[0])
    per_edge = move.edge_bytes(tree, m)
    biggest = float(per_edge[tree.parent >= 0].max()) if tree.n > 1 else m
    egress, ingress = host_capacities(profile, layout, biggest)
    cost = MessageCosts(profile, layout)
    if how.queued:
        if move.toward_root:
            raise InputError(
                f"{sharing} sharing models bcast and scatter (one message into each rank); use maxmin for gather"
            )
        done, records = downward_queued(cost, tree, per_edge, m, sched, egress, how.serve, ingress)
        done.flags.writeable = False
        return FlowRun(move, m, done, float(np.max(done)), tuple(records))
    sim = Network(egress, ingress, cost.burst, how.weighted, hosts_of(layout))
    if move.toward_root:
        done = upward(sim, cost, tree, m, sched)
        completion = float(done[tree.root])
    else:
        done = downward(sim, cost, tree, per_edge, m, sched)
        completion = float(np.max(done))
    done.flags.writeable = False
    return FlowRun(move, m, done, completion, tuple(sim.records))


def _predict(
    move: Movement,
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    per_rank: bool,
    root: int,
    **kw: Any,
) -> np.ndarray:
    """:func:`simulate` at every size: completion times (µs), or ``(len(sizes), n)`` per rank."""

    def one(t: Tree, m: float) -> FlowRun:
        return simulate(move, profile, layout, t, m, root=root, **kw)

    return over_sizes(one, profile, layout, tree, sizes, per_rank, root)


def over_sizes(
    one: Any, profile: Profile, layout: Sequence[str], tree: Tree | str, sizes: Any, per_rank: bool, root: int
) -> np.ndarray:
    """``one(tree, m)`` (a run with ``done_us`` and ``completion_us``, µs) at every size of ``sizes`` (bytes): the
    completion times, or ``(len(sizes), n)`` per rank; a tree given by name is made for ``layout`` first."""
    m = as_sizes(sizes)
    if isinstance(tree, str):
        tree = make_tree(tree, len(layout), root=root, layout=layout, profile=profile)
    runs = [one(tree, float(mi)) for mi in m]
    if per_rank:
        return np.array([r.done_us for r in runs]).reshape(m.size, tree.n)
    return np.array([r.completion_us for r in runs], dtype=float)


def bcast(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    schedule: Schedule | None = None,
    *,
    per_rank: bool = False,
    root: int = 0,
    sharing: str = "maxmin",
    **fields: Any,
) -> np.ndarray:
    """Broadcast completion time (µs per size) under the flow model; ``per_rank=True``: ``(len(sizes), n)``, when
    each rank holds the message (root: 0). ``schedule`` (or its fields as keywords): see :func:`simulate`.

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))
    >>> bcast(prof, ["f"] * 3, "chain", [1000, 2000]).tolist()   # one message at a time: 2 · Xm · m
    [20.0, 40.0]
    """
    return _predict(
        ONE_DOWN, profile, layout, tree, sizes, per_rank, root, schedule=schedule, sharing=sharing, **fields
    )


def scatter(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    schedule: Schedule | None = None,
    *,
    per_rank: bool = False,
    root: int = 0,
    sharing: str = "maxmin",
    **fields: Any,
) -> np.ndarray:
    """Scatter completion time (µs per size) under the flow model: the edge into a rank carries its subtree's
    blocks; ``schedule.root_copy`` adds the root's copy of its own block after it posted its sends (MPICH), or
    before its first send with ``copy_first`` (Open MPI)."""
    return _predict(
        SUBTREE_DOWN, profile, layout, tree, sizes, per_rank, root, schedule=schedule, sharing=sharing, **fields
    )


def gather(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    schedule: Schedule | None = None,
    *,
    per_rank: bool = False,
    root: int = 0,
    sharing: str = "maxmin",
    **fields: Any,
) -> np.ndarray:
    """Gather completion time (µs per size) under the flow model; ``per_rank=True`` gives when each rank holds its
    whole subtree's data (leaves 0). ``schedule.root_copy``: the root copies its own block before its first
    receive (MPICH); ``recv_order``: :data:`RECV_ORDERS` (MPICH's binomial gather is ``smallest_first``);
    ``relay_waits``, ``sync``: see :func:`simulate`."""
    return _predict(
        SUBTREE_UP, profile, layout, tree, sizes, per_rank, root, schedule=schedule, sharing=sharing, **fields
    )
