"""What Intel MPI's default (nothing pinned: its tuning file decides) runs, where the wire showed it:
:class:`TuningRows`, the one form for every operation (a tree for bcast, scatter and gather; a message schedule's
name for the others). docs/intel-mpi.md says how each row was read."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TuningRows"]


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
