"""What an MPI library's own collective algorithm is to hnow, whatever the library: how it is pinned, which tree
models it, the schedule it runs it by, and the library's own leaf that selects it in its tuning file.

Every library package (:mod:`hnowmodel.libraries.mpich`, ``.openmpi``, ``.intelmpi``) describes its algorithms as
:class:`NativeAlgorithm` s, per operation as an :class:`OpAlgorithms` (the pinned one, the ones a tuning file can
choose, the ones only the environment can pin); the operation registry (:mod:`hnowmodel.ops`) reads them from
:data:`hnowmodel.libraries.LIBRARIES`. This module knows no library: a library's file format is its package's.

>>> nat = NativeAlgorithm("binomial", {"MY_MPI_BCAST": "binomial"}, "binomial", leaf=("my", "leaf"))
>>> nat.tree_at(6, 1024), nat.varies, nat.leaf
('binomial', False, ('my', 'leaf'))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..layout import one_per_host as _one_per_host
from ..runopts import DEFAULT, Schedule

__all__ = ["NativeAlgorithm", "OpAlgorithms", "SizeRule", "LayoutRule"]

#: A library default's choice by communicator size and message size: ``(ranks, bytes per rank, one rank per host)``
#: -> the model tree that runs there, None where hnow does not know which does (e.g. Intel MPI's tuning file:
#: :class:`hnowmodel.libraries.intelmpi.TuningRows`).
SizeRule = Callable[[int, int, bool], "str | None"]
#: A library default's choice by the hosts it runs on: ``(layout, bytes per rank)`` -> (model tree, schedule), None
#: where hnow does not know which tree runs (e.g. Open MPI's coll/han: its levels run coll/tuned's fixed rules).
LayoutRule = Callable[[Any, int], "tuple[str, Schedule] | None"]


@dataclass(frozen=True)
class NativeAlgorithm:
    """How one MPI library's own collective is pinned, and which tree models it.

    ``env`` is set before ``MPI_Init`` (MPICH control variables, Open MPI MCA parameters as ``OMPI_MCA_*``, Intel
    MPI's ``I_MPI_ADJUST_*``); ``model_tree`` names the :mod:`hnowmodel.trees` tree that the pinned algorithm runs;
    ``schedule`` says how it runs it (:class:`~hnowmodel.runopts.Schedule`: the root's local copy where it makes
    one, MPICH's binomial scatter/gather do, before its first send for Open MPI's scatter; how its receives are
    posted, whether a relay waits: MPICH's binomial gather posts its receives in a fixed order and its relays wait
    for them). ``leaf``: what the library's own tuning file says to run it, in that file's terms, defined by the
    library's package (MPICH: a selection-JSON leaf, Open MPI: a rules-file ``(algorithm, faninout, segsize)``,
    Intel MPI: its ``I_MPI_ADJUST_<OP>`` number); None where no file the library reads can select it (an
    algorithm pinned only by the environment, a library's default). ``empty_is_noop``: the library returns at once
    from a 0-byte call (MPICH and Open MPI both do), so a 0-byte native row measures only the call and has nothing
    to predict. ``by_size``: for a library's **default**, which runs different trees by communicator size and
    message size, which runs where (a :data:`SizeRule`; None: ``model_tree`` everywhere); :meth:`tree_at` asks it.
    ``unset``: variables that must not be set for it to run (a default: the variables that would pin another
    algorithm), so that a job that sets them for another algorithm cannot also run this one
    (:func:`hnowmodel.ops.native_spec_unset`). ``per_layout``: for a default whose tree depends on the hosts
    (coll/han's: its levels run tuned's fixed rules on the hosts and on each host's ranks) or whose schedule
    depends on the tree that runs (Intel MPI's bcast: its chunk), a :data:`LayoutRule`; it overrides ``by_size``
    and ``schedule`` (:meth:`on`). ``only_ranks``: the one communicator size the library runs it on (Open MPI's
    ``two_proc``: 2), None for any; on another it fails or runs something that is not the operation, so nothing
    that measures every algorithm (``experiments/tune_vs_exhaustive.py``) pins it there.
    """

    algorithm: str
    env: Mapping[str, str]
    model_tree: str = "binomial"
    schedule: Schedule = DEFAULT
    leaf: Any = None
    empty_is_noop: bool = True
    by_size: SizeRule | None = None
    unset: tuple[str, ...] = ()
    per_layout: LayoutRule | None = field(default=None, compare=False)
    only_ranks: int | None = None

    @property
    def varies(self) -> bool:
        """True when the tree that runs depends on the size or the hosts (:meth:`on`)."""
        return self.by_size is not None or self.per_layout is not None

    def on(self, layout: Any, size: int) -> tuple[str, Schedule] | None:
        """The model tree and schedule that run on ``layout``'s ranks (with their hosts) at ``size`` bytes per rank;
        None where hnow does not know which tree runs.

        >>> from hnowmodel import ops
        >>> ops.get("bcast").native["Open MPI"].on(["a", "b"], 1024)[0]
        'ompi-binomial'
        """
        if self.per_layout is not None:
            return self.per_layout(layout, int(size))
        spec = self.tree_at(len(layout), int(size), _one_per_host(layout))
        return None if spec is None else (spec, self.schedule)

    def tree_on(self, layout: Any, size: int) -> str | None:
        """The model tree of :meth:`on` (None where not modelled)."""
        got = self.on(layout, size)
        return None if got is None else got[0]

    def schedule_on(self, layout: Any, size: int) -> Schedule:
        """The schedule of :meth:`on` (where nothing is modelled, :attr:`schedule`)."""
        got = self.on(layout, size)
        return self.schedule if got is None else got[1]

    def tree_at(self, n: int, size: int, one_per_host: bool = True) -> str | None:
        """The model tree that runs on ``n`` ranks at ``size`` bytes per rank (``one_per_host``: each rank on a
        host of its own); None where :attr:`by_size` knows none.

        >>> from hnowmodel import ops
        >>> ops.get("bcast").native["Intel MPI"].tree_at(6, 65536)
        'mpich-knomial1:2'
        >>> ops.get("bcast").native["Intel MPI"].tree_at(5, 65536) is None
        True
        """
        if self.by_size is None:
            return self.model_tree
        return self.by_size(int(n), int(size), bool(one_per_host))

    # ---- the schedule's fields under their old names (deprecated: read ``schedule``) --------------------------
    @property
    def root_copy(self) -> bool:
        return self.schedule.root_copy

    @property
    def copy_first(self) -> bool:
        return self.schedule.copy_first

    @property
    def flow_kw(self) -> dict[str, Any]:
        """The schedule's gather fields that differ from the default (what only the flow variants model)."""
        return {k: getattr(self.schedule, k) for k in _FLOW_FIELDS if getattr(self.schedule, k) != getattr(DEFAULT, k)}


_FLOW_FIELDS = ("recv_order", "relay_waits", "sync")


@dataclass(frozen=True)
class OpAlgorithms:
    """One library's algorithms for one operation: ``native`` is what ``--tree native`` runs (pinned, or the
    library's default; None: hnow pins none); ``alternatives`` what else the library can be told to run for it that
    its tuning file can select too (what ``hnow export`` chooses among, with ``native``); ``pinned_only`` what hnow
    can pin by environment and model (``native:ALGO``) but no file ``hnow export`` writes can select (a ch4
    composition, an Open MPI component other than coll/tuned)."""

    native: NativeAlgorithm | None = None
    alternatives: tuple[NativeAlgorithm, ...] = ()
    pinned_only: tuple[NativeAlgorithm, ...] = ()

    @property
    def choices(self) -> tuple[NativeAlgorithm, ...]:
        """``native`` (when there is one), then ``alternatives``: what a tuning file can choose among."""
        return ((self.native,) if self.native else ()) + self.alternatives
