"""A collective algorithm as the registry names it (:class:`Algorithm`): a named generator of its message schedule.

An operation's entry (:class:`hnowmodel.ops.Operation`) lists the algorithms that are not trees (ring, recursive
doubling, Bruck, pairwise exchange, compositions) as :class:`Algorithm` s; a tree-shaped algorithm needs no entry
(any tree spec, compiled by :func:`~hnowmodel.schedules.fromtree.from_tree`). The model variants evaluate what
:meth:`Algorithm.schedule` builds (:meth:`hnowmodel.variants.Variant.predict_algorithm`).

>>> from hnowmodel.schedules.algorithms import ring_allgather
>>> ring = Algorithm("ring", "each rank passes the block it got last to its right neighbour", ring_allgather)
>>> ring.schedule(4, 1024.0).n_steps
3
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .steps import MessageSchedule

__all__ = ["Algorithm", "Generator"]

#: ``build(n, m)`` (``build(n, m, root)`` for a rooted algorithm) -> the schedule of ``n`` ranks for ``m`` bytes per
#: rank's block.
Generator = Callable[..., MessageSchedule]


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of an operation: its ``name`` (what ``--tree``/``algorithm`` names it by), a one-line
    ``summary``, its generator ``build`` (:data:`Generator`) and whether it takes a root (``rooted``: reduce, a
    bcast that is not a tree)."""

    name: str
    summary: str
    build: Generator
    rooted: bool = False

    def schedule(self, n: int, m: float, root: int = 0) -> MessageSchedule:
        """The message schedule of ``n`` ranks for ``m`` bytes per rank's block (from ``root``, if rooted; an
        unrooted algorithm refuses another root than 0)."""
        if self.rooted:
            return self.build(n, m, root)
        if root != 0:
            raise InputError(f"algorithm {self.name!r} has no root (got root {root})")
        return self.build(n, m)

    def __call__(self, *args: Any, **kwargs: Any) -> MessageSchedule:
        return self.schedule(*args, **kwargs)
