"""What MPICH's two-level bcasts run on given hosts, and what its ch4 device runs by default on hosts with several
ranks: the layout rules (:data:`~hnowmodel.libraries.native.LayoutRule`) of ``MPIR_Bcast_intra_smp`` and of ch4's
compositions, and which model stands for each composition MPICH's ch4 table picks (:func:`composition_model`).

Both two-level bcasts broadcast among the hosts' leaders (each host's lowest rank) with ``MPIR_Bcast`` on the
leaders' communicator, a child communicator, where MPICH's own table (``comm_hierarchy=any``) picks binomial below 8
ranks or up to 12288 B, else a scatter + allgather (:data:`.defaults.RULES`); then each host's bcast from its leader
(binomial: below 8 ranks on a host). hnow models the two-level run by the tree ``mpich-smp:binomial/binomial``
(:mod:`hnowmodel.trees`), so where the leaders' or a host's bcast is a scatter + allgather the rule answers None
(not modelled).

>>> from hnowmodel.layout import Layout
>>> lay = Layout(["f"] * 12, hosts=[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
>>> smp_run(lay, 8192)[0], smp_run(lay, 16384)[0], leaders_run(lay, 16384)[0]
('mpich-smp:binomial/binomial', 'scatter_ring_allgather', 'mpich-smp:binomial/binomial')
>>> smp_run(["f"] * 8, 65536)[0]  # one rank per host: MPIR's own choice
'scatter_recursive_doubling_allgather'
>>> composition_model("bcast", "gamma"), composition_model("bcast", "beta"), composition_model("reduce", "beta")
('mpir', 'composition:alpha', None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from ...layout import hosts_of
from ...runopts import DEFAULT, Schedule
from . import defaults as _defaults
from . import selection as _selection

__all__ = ["TWO_LEVEL", "MPIR", "comm_hierarchy", "composition", "leaders_run", "smp_run", "composition_model"]

#: The model tree of a two-level bcast whose levels are binomial.
TWO_LEVEL = "mpich-smp:binomial/binomial"
#: :func:`composition_model`'s answer for a composition that is the netmod's call on the whole communicator, which
#: is MPIR's own selection there (``MPIDI_NM_mpi_<coll>`` -> ``MPIR_<Coll>_impl``, MPICH 5.0's ofi netmod).
MPIR = "mpir"

# MPIR_CVAR_BCAST_SHORT_MSG_SIZE, MPIR_CVAR_BCAST_MIN_PROCS, MPIR_CVAR_BCAST_LONG_MSG_SIZE (their defaults)
_SHORT, _MIN_PROCS, _LONG = 12288, 8, 524288


def _pof2(n: int) -> bool:
    return n > 0 and not n & (n - 1)


def comm_hierarchy(hosts: Sequence[Any]) -> str:
    """What MPICH's ``comm_hierarchy`` sees for ranks on ``hosts`` (each rank's host, by name or number): ``flat``
    (one rank per host), ``node`` (one host) or ``parent``.

    >>> comm_hierarchy(["a", "b"]), comm_hierarchy(["a", "a"]), comm_hierarchy([0, 0, 1])
    ('flat', 'node', 'parent')
    """
    distinct = len(set(hosts))
    return "flat" if distinct == len(hosts) else "node" if distinct == 1 else "parent"


def composition(table: Mapping[str, Any], op: str, n: int, size: int, hierarchy: str) -> str | None:
    """The ch4 composition (``alpha``, ``beta``, ...) that ch4's ``table`` (:attr:`.selection.DefaultTable.ch4`)
    picks for ``op`` on ``n`` ranks at ``size`` bytes on a ``hierarchy`` communicator; None where it picks none (or
    the table is empty)."""
    leaf = _selection.select(table, op, comm_size=n, msg_bytes=int(size), hierarchy=hierarchy) if table else None
    return None if leaf is None else next(iter(leaf)).rpartition("_")[2]


def leaders_run(layout: Sequence[str], size: int) -> tuple[str, Schedule] | None:
    """ch4's compositions alpha and beta (with root 0, a host's leader, beta runs alpha's steps): the leaders' bcast
    (MPIR's auto selection on a child communicator), then each host's shared-memory bcast (release_gather, no tree:
    modelled as a binomial inside the host, docs/native-algorithms.md): the two-level binomial tree where the
    leaders' bcast is binomial, else None."""
    return _two_levels(layout, size, hosts_too=False)


def _two_levels(layout: Sequence[str], size: int, hosts_too: bool) -> tuple[str, Schedule] | None:
    """The two-level binomial tree where MPIR's auto selection picks binomial among the leaders (and, with
    ``hosts_too``, on every host), else None."""
    hosts = hosts_of(layout)
    counts = [len(np.unique(hosts)), *(np.bincount(hosts).tolist() if hosts_too else [])]
    binomial = all(c < 2 or _defaults.RULES["bcast"](c, int(size), True) == "binomial" for c in counts)
    return (TWO_LEVEL, DEFAULT) if binomial else None


def smp_run(layout: Sequence[str], size: int) -> tuple[str, Schedule] | None:
    """What ``MPIR_Bcast_intra_smp`` runs on ``layout``'s ranks at ``size`` bytes (src/mpi/coll/bcast/
    bcast_intra_smp.c): the two levels (the leaders' bcast, then each host's, both MPIR's auto selection on a child
    communicator) below 12288 B or on fewer than 8 ranks, and on a power
    of two of ranks below 524288 B (the root's host first when the root is no leader: not so for root 0); else a
    flat scatter + ring allgather over all the ranks. On one rank per host (no node-aware communicator) smp does
    not run: the fallback (``MPIR_CVAR_COLLECTIVE_FALLBACK=silent``) runs MPIR's own selection."""
    n, m = len(layout), int(size)
    if comm_hierarchy(hosts_of(layout).tolist()) == "flat":  # no node-aware communicator: the fallback, MPIR's own
        name = _defaults.RULES["bcast"](n, m, True)
        return None if name is None else (name, DEFAULT)
    if m < _SHORT or n < _MIN_PROCS or (m < _LONG and _pof2(n)):
        return _two_levels(layout, m, hosts_too=True)
    return ("scatter_ring_allgather", DEFAULT)


# MPICH 5.0's ch4 compositions (src/mpid/ch4/src/ch4_coll_impl.h) that its ch4 table (maint/tuning/coll/ch4/
# generic.json) picks on a node-aware communicator, and the model hnow runs for each: bcast alpha and beta are the two
# levels (``composition:alpha``, beta's steps being alpha's for root 0); bcast gamma, allgather beta, alltoall beta,
# reduce_scatter_block, scatter and gather alpha are the netmod's call on the whole communicator: MPIR's own selection
# (:data:`MPIR`); allreduce and reduce alpha are a reduce on each host, the leaders' allreduce / reduce, and a bcast
# on each host (``composition:alpha`` of the operation, where hnow has one). Anything else: not modelled.
_MODELS: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("bcast", "alpha"): "composition:alpha",
        ("bcast", "beta"): "composition:alpha",
        ("bcast", "gamma"): MPIR,
        ("allgather", "beta"): MPIR,
        ("alltoall", "beta"): MPIR,
        ("reduce_scatter", "alpha"): MPIR,
        ("scatter", "alpha"): MPIR,
        ("gather", "alpha"): MPIR,
        ("allreduce", "beta"): MPIR,
        ("reduce", "gamma"): MPIR,
        ("allreduce", "alpha"): "composition:alpha",
        ("reduce", "alpha"): "composition:alpha",
    }
)


def composition_model(op: str, composition: str) -> str | None:
    """How hnow models ch4's composition ``composition`` (``alpha``, ``beta``, …) of ``op``: the name of the
    operation's MPICH algorithm that runs the same steps (``composition:alpha``), :data:`MPIR` (MPIR's own selection
    on the whole communicator), or None (not modelled)."""
    return _MODELS.get((op, composition))
