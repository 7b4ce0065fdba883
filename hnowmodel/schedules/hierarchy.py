"""Message schedules of two-level (hierarchical) algorithms: a schedule of a sub-communicator placed on the ranks
of the whole communicator, once per group at the same time (every host's ranks, or the hosts' leaders), and the
phases of such an algorithm run one after another (:func:`phases`): what Open MPI's coll/han runs (a reduce on each
host, an allreduce among the hosts' leaders, a bcast on each host).

>>> from hnowmodel.schedules.algorithms import binomial_reduce
>>> s = on_groups(binomial_reduce(2, 8.0), [[0, 1], [2, 3]], 4)
>>> [(s.src.tolist(), s.dst.tolist()) for s in s.steps]
[([1, 3], [0, 2])]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import InputError
from .steps import MessageSchedule, Step, concat

__all__ = ["on_groups", "phases"]


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
