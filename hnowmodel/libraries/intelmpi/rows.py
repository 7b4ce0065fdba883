"""What Intel MPI's default (nothing pinned: its tuning file decides) runs, where the wire showed it:
:class:`TuningRows`, the one form for every operation (a tree for bcast, scatter and gather; a message schedule's
name for the others). docs/intel-mpi.md says how each row was read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...layout import one_per_host
from ...runopts import DEFAULT, Schedule

__all__ = ["TuningRows", "SharedRows"]


@dataclass(frozen=True)
class TuningRows:
    """What Intel MPI's default runs, where it is known (read off the wire, one rank per host): ``rows`` of
    ``(ranks, from_bytes, upto_bytes, model_tree)``, both ends included. Called as a
    :data:`~hnowmodel.libraries.native.SizeRule`: ``(ranks, bytes per rank, one rank per host)`` -> the tree, None
    where no row holds or ranks share hosts (not modelled there).

    >>> rule = TuningRows(((6, 1024, 2048, "ompi-linear"),))
    >>> rule(6, 1500, True), rule(6, 4096, True), rule(6, 1500, False)
    ('ompi-linear', None, None)
    """

    rows: tuple[tuple[int, int, int, str], ...]

    def __call__(self, n: int, size: int, one_per_host: bool = True) -> str | None:
        if not one_per_host:
            return None
        return next((t for r, lo, hi, t in self.rows if r == n and lo <= size <= hi), None)


@dataclass(frozen=True)
class SharedRows:
    """What Intel MPI's default runs on hosts of several ranks, where it is known: ``rows`` of ``(ranks per host,
    from_bytes, upto_bytes, schedule)``, ranks per host a tuple in host order (``(3, 3, 3, 3)``: 4 hosts of 3;
    ``(2, 1, 3)``: hosts of unequal counts), both ends included, beside ``one`` (:class:`TuningRows`, one rank per
    host). Called as a :data:`~hnowmodel.libraries.native.LayoutRule`: ``(layout, bytes per rank)`` ->
    ``(schedule, Schedule())``, None where no row holds.

    >>> from hnowmodel.layout import Layout
    >>> rule = SharedRows(TuningRows(((4, 8, 64, "ring"),)), (((2, 2), 8, 64, "brucks"), ((3, 1), 8, 8, "ring")))
    >>> rule(["a"] * 4, 8)[0], rule(Layout(["a"] * 4, [0, 0, 1, 1]), 8)[0], rule(Layout(["a"] * 4, [0, 0, 0, 1]), 8)[0]
    ('ring', 'brucks', 'ring')
    >>> rule(Layout(["a"] * 4, [0, 1, 1, 1]), 8) is None  # (1, 3): no row
    True
    """

    one: TuningRows
    rows: tuple[tuple[tuple[int, ...], int, int, str], ...]

    def __call__(self, layout: Any, size: int) -> tuple[str, Schedule] | None:
        if one_per_host(layout):
            got = self.one(len(layout), size, True)
        else:
            counts = tuple(layout.slots.tolist())  # a Layout numbers its hosts in order of their first rank
            got = next((t for per, lo, hi, t in self.rows if per == counts and lo <= size <= hi), None)
        return None if got is None else (got, DEFAULT)
