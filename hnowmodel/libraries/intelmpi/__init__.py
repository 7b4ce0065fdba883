"""Intel MPI (2021.16), everything hnow knows about it: its algorithms and how each is pinned (:mod:`.algorithms`:
``I_MPI_ADJUST_<OP>`` numbers, model trees, schedules; :mod:`.schedules` for the operations whose algorithms are
message schedules), its default's choice where the wire showed it (:class:`TuningRows`, :mod:`.rows`; the bcast's
chunks), its tuning format (:mod:`.adjust`: the ``I_MPI_ADJUST_<OP>`` strings, read as Intel's reference says) and its
export backend (:mod:`.export`, format ``impi-env``). Its trees are MPICH's (``binomial``, ``kary``,
``mpich-knomial1``) and Open MPI's linear one, from :mod:`hnowmodel.trees`; its schedules MPICH's, from
:mod:`hnowmodel.schedules.catalog`. docs/intel-mpi.md."""

from __future__ import annotations

from .algorithms import ALGORITHMS, TuningRows

__all__ = ["ALGORITHMS", "TuningRows"]
