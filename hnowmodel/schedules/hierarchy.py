"""Message schedules of two-level (hierarchical) algorithms: a schedule of a sub-communicator placed on the ranks
of the whole communicator, once per group at the same time (every host's ranks, or the hosts' leaders), and the
phases of such an algorithm run one after another (:func:`phases`): what Open MPI's coll/han runs (a reduce on each
host, an allreduce among the hosts' leaders, a bcast on each host); and the two-level compositions the search
chooses among (:func:`two_level`: each operation's levels, :class:`Levels`, named by its registry entry's
``two_level``).

>>> from hnowmodel.schedules.algorithms import binomial_reduce
>>> s = on_groups(binomial_reduce(2, 8.0), [[0, 1], [2, 3]], 4)
>>> [(s.src.tolist(), s.dst.tolist()) for s in s.steps]
[([1, 3], [0, 2])]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import InputError
from ..movement import SUBTREE_DOWN, SUBTREE_UP
from ..runopts import Schedule
from ..trees import binomial
from .algorithms import binomial_bcast, binomial_reduce
from .fromtree import tree_schedule
from .generator import Algorithm
from .steps import MessageSchedule, Step, concat

__all__ = [
    "on_groups",
    "on_hosts",
    "phases",
    "Levels",
    "two_level",
    "reduce_levels",
    "allreduce_levels",
    "allgather_levels",
    "reduce_scatter_levels",
]


def on_groups(part: MessageSchedule, groups: Sequence[Sequence[int]] | np.ndarray, n: int) -> MessageSchedule:
    """``part`` (a schedule of ``k`` ranks) run by every group of ``groups`` (each ``k`` ranks of ``0..n-1``, its
    local rank ``i`` the global rank ``group[i]``; the groups disjoint) at once, as one schedule of ``n`` ranks: step
    ``s`` holds every group's step ``s`` (bytes, reductions, copies, waits and repeats as ``part`` has them).

    >>> on_groups(MessageSchedule(2, (Step.of([0], [1], 8.0),)), [[3, 1]], 4).steps[0].src.tolist()
    [3]
    """
    g = np.asarray(groups, dtype=np.int64)
    if g.ndim != 2 or g.shape[1] != part.n:
        raise InputError(f"on_groups: every group must hold the schedule's {part.n} ranks")
    if g.size and (g.min() < 0 or g.max() >= n or np.unique(g).size != g.size):
        raise InputError(f"on_groups: the groups must be distinct ranks of 0..{n - 1}")
    steps = []
    for s in part.steps:
        copy = None
        if s.copy_bytes is not None:
            copy = np.zeros(n)
            copy[g] = s.copy_bytes  # each group's ranks copy what their local ranks do
        rdv = None if s.rendezvous is None else np.tile(s.rendezvous, len(g))
        steps.append(
            Step.of(
                g[:, s.src].ravel(),
                g[:, s.dst].ravel(),
                np.tile(s.nbytes, len(g)),
                np.tile(s.reduce_bytes, len(g)),
                copy_bytes=copy,
                waits=s.waits,
                repeat=s.repeat,
                rendezvous=rdv,
            )  # fmt: skip
        )
    return MessageSchedule(n, tuple(steps), part.name)


def on_hosts(part: Callable[[int], MessageSchedule], groups: Sequence[Sequence[int]], n: int) -> MessageSchedule:
    """``part(k)`` (a schedule of ``k`` ranks) run by every group of ``groups`` at once, the groups of any sizes
    (hosts holding different numbers of ranks): :func:`on_groups` for the groups of each size, their steps then
    merged index by index (the groups' ranks are disjoint, so a step holds each group's step of that index; a rank
    waits only for its own receives). Groups of one rank send nothing.

    >>> from hnowmodel.schedules.algorithms import binomial_reduce
    >>> s = on_hosts(lambda k: binomial_reduce(k, 8.0), [[0, 1, 2], [3, 4], [5]], 6)
    >>> [(s.src.tolist(), s.dst.tolist()) for s in s.steps]
    [([4, 1], [3, 0]), ([2], [0])]
    """
    sizes = sorted({len(g) for g in groups if len(g) > 1})
    parts = [on_groups(part(k), [list(g) for g in groups if len(g) == k], n) for k in sizes]
    if len(parts) == 1:
        return parts[0]
    name = parts[0].name if parts else ""
    unrolled = [list(p.unrolled()) for p in parts]
    steps = []
    for i in range(max((len(u) for u in unrolled), default=0)):
        here = [u[i] for u in unrolled if i < len(u)]
        if len({(s.waits, s.prepost) for s in here}) > 1:
            raise InputError("on_hosts: the groups' steps of one index must wait (and prepost) alike")
        copies = [s.copy_bytes for s in here if s.copy_bytes is not None]
        rdv = [np.zeros(s.n_messages, bool) if s.rendezvous is None else s.rendezvous for s in here]
        steps.append(
            Step.of(
                np.concatenate([s.src for s in here]),
                np.concatenate([s.dst for s in here]),
                np.concatenate([s.nbytes for s in here]),
                np.concatenate([s.reduce_bytes for s in here]),
                copy_bytes=np.sum(copies, axis=0) if copies else None,
                waits=here[0].waits,
                rendezvous=np.concatenate(rdv),
                prepost=here[0].prepost,
            )  # fmt: skip
        )
    return MessageSchedule(n, tuple(steps), name)


def _waiting(s: Step) -> Step:
    return s if s.waits else replace(s, waits=True, _recv={})


def phases(name: str, *parts: MessageSchedule) -> MessageSchedule:
    """``parts`` (schedules of the same ranks) run one after another, each phase's first step waiting for its
    senders' last receive of the phases before (a leader sends the hosts' allreduce result down only once it has
    it): :func:`~hnowmodel.schedules.steps.concat` with that wait.

    >>> a = MessageSchedule(2, (Step.of([1], [0], 8.0, 8.0),))
    >>> b = MessageSchedule(2, (Step.of([0], [1], 8.0, waits=False),))
    >>> [s.waits for s in phases("x", a, b).steps]
    [True, True]
    """
    fixed: list[Any] = []
    for i, p in enumerate(p for p in parts if p.steps):
        steps = (_waiting(p.steps[0]), *p.steps[1:]) if i else p.steps
        fixed.append(MessageSchedule(p.n, steps, p.name))
    if not fixed:
        return MessageSchedule(parts[0].n if parts else 1, (), name)
    return concat(name, *fixed)


@dataclass(frozen=True)
class Levels:
    """The three levels of a two-level algorithm on ``h`` hosts of ``k`` ranks each: ``low`` on every host's ranks
    (its local rank 0 the host's leader), ``up`` among the leaders, ``down`` (None: none) on every host's ranks again;
    ``low_name`` and ``down_name`` name the host levels' algorithms."""

    low: MessageSchedule
    up: MessageSchedule
    down: MessageSchedule | None
    low_name: str
    down_name: str = ""


def reduce_levels(up: Algorithm, k: int, h: int, m: float) -> Levels:
    """A reduce (m-byte vectors): a binomial reduce on each host, then ``up`` among the leaders (rooted at the first).

    >>> from hnowmodel.schedules.catalog import REDUCE
    >>> reduce_levels(REDUCE["binomial"], 2, 2, 8.0).up.n
    2
    """
    return Levels(binomial_reduce(k, m, 0), up.schedule(h, m, 0), None, "binomial")


def allreduce_levels(up: Algorithm, k: int, h: int, m: float) -> Levels:
    """An allreduce (m-byte vectors): a binomial reduce on each host, ``up`` among the leaders, a binomial bcast
    on each host (coll/han's simple allreduce, with binomial host levels)."""
    return Levels(binomial_reduce(k, m, 0), up.schedule(h, m), binomial_bcast(k, m, 0), "binomial", "binomial")


def allgather_levels(up: Algorithm, k: int, h: int, m: float) -> Levels:
    """An allgather (m-byte blocks): a binomial gather of each host's k blocks, ``up`` among the leaders on blocks
    of k·m bytes, a binomial bcast of all k·h blocks on each host."""
    low = tree_schedule(binomial(k), SUBTREE_UP, m, Schedule(recv_order="tree"))
    return Levels(low, up.schedule(h, k * m), binomial_bcast(k, k * h * m, 0), "gather", "binomial")


def reduce_scatter_levels(up: Algorithm, k: int, h: int, m: float) -> Levels:
    """A reduce-scatter (m-byte result blocks): a binomial reduce of each host's whole vectors (k·h blocks),
    ``up`` among the leaders on result blocks of k·m bytes, a binomial scatter of each host's k blocks."""
    down = tree_schedule(binomial(k), SUBTREE_DOWN, m)
    return Levels(binomial_reduce(k, k * h * m, 0), up.schedule(h, k * m), down, "binomial", "scatter")


def two_level(levels: Any, up: Algorithm, groups: Sequence[Sequence[int]] | np.ndarray, m: float):
    """``(name, schedule)`` of the two-level algorithm ``levels`` (one of this module's ``*_levels``) with ``up``
    among the hosts' leaders: ``groups`` holds one row per host (its ranks, the leader first; the first row's leader
    the root), every host the same number of ranks.

    >>> from hnowmodel.schedules.catalog import ALLREDUCE
    >>> name, s = two_level(allreduce_levels, ALLREDUCE["ring"], [[0, 1], [2, 3]], 64.0)
    >>> name, s.n
    ('two-level:binomial/ring/binomial', 4)
    """
    g = np.asarray(groups, dtype=np.int64)
    h, k = g.shape
    lv = levels(up, k, h, m)
    name = f"two-level:{lv.low_name}/{up.name}" + (f"/{lv.down_name}" if lv.down is not None else "")
    seq = [on_groups(lv.low, g, h * k), on_groups(lv.up, g[:, :1].T, h * k)]
    if lv.down is not None:
        seq.append(on_groups(lv.down, g, h * k))
    return name, phases(name, *seq)
