"""MPICH's ch4 composition alpha of allreduce and of reduce as two-level message schedules, and the layout rules
(:data:`~hnowmodel.libraries.native.LayoutRule`) that say what it runs on given hosts: what MPICH's default runs on
hosts with several ranks (its ch4 table, ``maint/tuning/coll/ch4/generic.json``: allreduce alpha at every size on a
node-aware communicator, reduce alpha above 2048 B; a commutative op).

``MPIDI_Allreduce_intra_composition_alpha`` (``src/mpid/ch4/src/ch4_coll_impl.h``, MPICH 5.0.x): a shared-memory
reduce on every ``node_comm`` (a host's ranks in rank order) to its rank 0, the host's lowest rank (its leader); the
netmod's allreduce (``MPI_IN_PLACE``) over ``node_roots_comm`` (the leaders in rank order), which is
``MPIR_Allreduce_impl``: MPIR's auto selection on a child communicator of ``h`` ranks (:data:`.defaults.RULES`);
then a shared-memory bcast on every ``node_comm`` from its leader. ``MPIDI_Reduce_intra_composition_alpha``: the
same reduce on every host, the netmod's reduce over ``node_roots_comm`` to its rank 0 (rank 0's host's leader, rank
0 itself), then, for a root other than rank 0, a blocking send from rank 0 to the root. The shared-memory calls
(``MPIDI_POSIX_mpi_reduce``/``_bcast``, ``posix_generic.json``) are release_gather: the first
``MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD - 1`` (4) calls on a ``node_comm`` fall back to MPIR's own, later ones move
the vector in 8 KiB cells of a shared buffer along a tree inside the host (flags, not messages). hnow models each host
level by MPICH's binomial reduce / bcast, an intra-host message costing one shared-memory message of the profile:
the approximation ``composition:alpha`` of bcast makes (release_gather is no binomial tree); the leaders' level is
exact (the same algorithm hnow models pinned).

On one rank per host the communicator is not node-aware: MPICH refuses alpha there (pinned with
``MPIR_CVAR_COLLECTIVE_FALLBACK=error``, the call fails), so the rules answer None, as where the leaders' algorithm
is one hnow does not model.

>>> from hnowmodel.layout import Layout
>>> lay = Layout(["f"] * 6, hosts=[0, 0, 1, 1, 2, 2])
>>> allreduce_alpha_run(lay, 65536)[0].name, reduce_alpha_run(lay, 65536)[0].name
('ch4-alpha:binomial/reduce_scatter_allgather/binomial', 'ch4-alpha:binomial/reduce_scatter_gather')
>>> allreduce_alpha_run(["f"] * 4, 65536) is None  # one rank per host: not a node-aware communicator
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputError
from ...runopts import DEFAULT, Schedule
from ...schedules.algorithms import binomial_bcast, binomial_reduce
from ...schedules.catalog import ALLREDUCE, REDUCE
from ...schedules.generator import Algorithm
from ...schedules.hierarchy import on_groups, on_hosts, phases
from ...schedules.steps import MessageSchedule, Step
from ...trees.nodeaware import host_members
from . import defaults as _defaults

__all__ = ["AlphaSchedule", "host_groups", "allreduce_alpha_run", "reduce_alpha_run"]

_LEADERS = {"allreduce": ALLREDUCE, "reduce": REDUCE}


@dataclass(frozen=True)
class AlphaSchedule:
    """The generator of composition alpha of ``op`` (``allreduce`` or ``reduce``) on ``hosts`` (each host's ranks in
    rank order, hosts by their lowest rank) with ``up`` (an algorithm of the operation's catalog, ``""`` on one host)
    among the leaders: ``(n, m[, root])`` -> the phases' schedule for ``m``-byte vectors (bytes per rank).

    >>> s = AlphaSchedule("reduce", ((0, 1), (2, 3)), "binomial")(4, 8.0, 3)
    >>> [(st.src.tolist(), st.dst.tolist()) for st in s.steps]
    [([1, 3], [0, 2]), ([2], [0]), ([0], [3])]
    """

    op: str
    hosts: tuple[tuple[int, ...], ...]
    up: str

    def __call__(self, n: int, m: float, root: int = 0) -> MessageSchedule:
        if self.op not in _LEADERS:
            raise InputError(f"composition alpha: no model for {self.op!r}")
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < n:
            raise InputError(f"root: must be a rank in 0..{n - 1}, got {root!r}")
        groups = [list(g) for g in self.hosts]
        parts = [on_hosts(lambda k: binomial_reduce(k, m, 0), groups, n)]
        if len(groups) > 1:
            alg = _LEADERS[self.op][self.up]
            up = alg.schedule(len(groups), m, 0) if alg.rooted else alg.schedule(len(groups), m)
            parts.append(on_groups(up, [[g[0] for g in groups]], n))
        if self.op == "allreduce":
            parts.append(on_hosts(lambda k: binomial_bcast(k, m, 0), groups, n))
        elif root != 0:  # MPIC_Send of the result from rank 0 to the root
            parts.append(MessageSchedule(n, (Step.of([0], [int(root)], m),)))
        return phases(f"ch4_{self.op}_alpha", *parts)


def host_groups(layout: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """Each host's ranks in rank order (MPICH's ``node_comm``), hosts by their lowest rank (``node_roots_comm``).

    >>> from hnowmodel.layout import Layout
    >>> host_groups(Layout(["f"] * 4, hosts=[0, 1, 0, 1]))
    ((0, 2), (1, 3))
    """
    # a Layout numbers its hosts in order of first appearance: host by host is by lowest rank
    return tuple(tuple(int(r) for r in members) for members in host_members(layout))


def _alpha_run(op: str, layout: Sequence[str], size: int) -> tuple[Any, Schedule] | None:
    """Composition alpha of ``op`` on ``layout`` at ``size`` bytes per rank as an
    :class:`~hnowmodel.schedules.generator.Algorithm` (named ``ch4-alpha:`` and its levels), None where MPICH
    refuses it (one rank per host) or the leaders run an algorithm hnow does not model."""
    groups = host_groups(layout)
    if len(groups) == len(layout):
        return None
    up = _defaults.RULES[op](len(groups), int(size), True) if len(groups) > 1 else ""
    if up is None or (up and up not in _LEADERS[op]):
        return None
    levels = ["binomial", *([up] if up else []), *(["binomial"] if op == "allreduce" else [])]
    what = "a reduce on each host, the leaders' " + op + (", a bcast on each host" if op == "allreduce" else "")
    name = "ch4-alpha:" + "/".join(levels)
    return Algorithm(name, f"MPICH's ch4 composition alpha: {what}", AlphaSchedule(op, groups, up), op == "reduce"), (
        DEFAULT
    )


def allreduce_alpha_run(layout: Sequence[str], size: int) -> tuple[Any, Schedule] | None:
    """What ``MPIDI_Allreduce_intra_composition_alpha`` runs on ``layout``'s ranks at ``size`` bytes per rank (see
    the module), None where not modelled."""
    return _alpha_run("allreduce", layout, size)


def reduce_alpha_run(layout: Sequence[str], size: int) -> tuple[Any, Schedule] | None:
    """What ``MPIDI_Reduce_intra_composition_alpha`` runs on ``layout``'s ranks at ``size`` bytes per rank (see the
    module), None where not modelled."""
    return _alpha_run("reduce", layout, size)
