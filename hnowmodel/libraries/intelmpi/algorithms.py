"""Intel MPI's algorithms as hnow pins them (Intel MPI 2021.16): ``I_MPI_ADJUST_<OP>=<number>`` forces one, and
its default (nothing pinned: its tuning file decides) is modelled where the wire showed which tree runs
(:class:`TuningRows`). Each forced algorithm's ``leaf`` is its number in the ``I_MPI_ADJUST_<OP>`` strings that
``hnow export`` writes (:mod:`.export`); the default has none (0 in those strings: the tuning file's choice).
:data:`ALGORITHMS` is what the operation registry reads.

>>> nat = ALGORITHMS["bcast"].alternatives[0]
>>> nat.env, nat.leaf, nat.model_tree
({'I_MPI_ADJUST_BCAST': '1'}, 1, 'binomial')
>>> ALGORITHMS["gather"].native.tree_at(6, 65536)
'ompi-linear'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ...layout import one_per_host as _one_per_host
from ...runopts import DEFAULT, Schedule
from ..native import NativeAlgorithm, OpAlgorithms
from .adjust import adjust_variable
from .rows import TuningRows
from .schedules import OP_ALGORITHMS as _SCHEDULE_OPS

__all__ = ["ALGORITHMS", "TuningRows"]


# Intel MPI 2021.16 (I_MPI_ADJUST_<OP>, read in MPI_Init; numbers from Intel's developer reference): bcast 1 binomial,
# 2 recursive doubling, 3 ring, 4-6 topology-aware binomial / recursive doubling / ring, 7 Shumilin's, 8 k-nomial,
# 9-14 shared-memory (NUMA-aware) ones; scatter and gather 1 binomial, 2 topology-aware binomial, 3 Shumilin's.
# Intel MPI is MPICH's code underneath: its binomial algorithms are MPICH's MPIR_{Bcast,Scatter,Gather}_intra_binomial
# (the same tree, MPICH's binomial, and the same schedule as MPICH's pinned ones: the root's copy, the gather's
# receives posted smallest subtree first and relays that wait for them); pinned, they are ``native:binomial``.
# Recursive doubling and ring bcasts are scatter + allgather (no tree); k-nomial's radix (at least 4: its root sent
# all three messages on 4 hosts) can be read from the wire but not its send order; the topology-aware, Shumilin's
# and shared-memory ones are not documented well enough to model (docs/intel-mpi.md).
def _impi(op: str, number: int, model_tree: str, name: str, schedule: Schedule = DEFAULT) -> NativeAlgorithm:
    """Intel MPI's ``op`` algorithm ``number``, forced by ``I_MPI_ADJUST_<OP>=<number>`` (every size, every
    communicator)."""
    return NativeAlgorithm(name, {adjust_variable(op): str(number)}, model_tree, schedule, leaf=number)


# Intel MPI's default (no I_MPI_ADJUST_*: its tuning file tuning_generic_shm-ofi.dat decides by collective,
# processes per node, communicator size and message size). Read off the wire, one rank per host on a 6-host virtual
# cluster (every rank's TCP bytes to every peer around one call, docs/intel-mpi.md): bcast runs MPICH's tree bcast
# over knomial_1 radix 4 up to 20200 B, knomial_1 radix 2 from 20300 B, kary radix 2 from 139000 B and binomial from
# 360000 B (each switch found within 100, 500 and 5000 bytes; inside those gaps, not modelled); MPICH's control
# variables that hnow sets for MPICH do not change it. Scatter and gather run linear over the hosts (the root
# exchanges with every rank directly, all at once) from 1 KiB to 1 MiB. Only these communicator sizes and sizes are
# modelled; elsewhere not (None). The bcast trees are pipelined: measured on the 6-host accuracy cluster (2026-11-26,
# experiments/intel_accuracy.py) a relay's children got the message as soon as the relay's own egress allowed, not
# after it held the whole message (knomial_1 radix 2 at 64 KiB: 52.6 ms, store-and-forward predicts 84.0 ms), as
# MPICH's pipelined_tree bcast runs them, in chunks. Intel's chunk is not documented and its libmpi's
# I_MPI_ADJUST_BCAST_NETWORK_{TREE,KARY,KNOMIAL}_SEGSIZE (default -1: the tuning file's) do not reach the default
# (4096 B set: every time within 0.1 %), so it was read off the times: of 1024-65536 B, the chunk whose prediction
# misses the measured default bcast least (max |error|) over both clusters it was measured on (the accuracy cluster
# and the export cluster in two rank orders, docs/intel-mpi.md): 2048 B for knomial_1 (16-128 KiB rows: max 6.2 %,
# MPICH's 8192 B: 37.9 %), 32768 B for kary (256 KiB rows: -0.1, +0.3, +2.0 %; 8192 B: -4.4, -8.2, -5.1 %). The
# binomial from 360000 B was not measured: MPICH's 8192 B (MPIR_CVAR_BCAST_TREE_PIPELINE_CHUNK_SIZE).
_IMPI_BCAST_CHUNK_BYTES: Mapping[str, int] = MappingProxyType({"mpich-knomial1": 2048, "kary": 32768, "binomial": 8192})
_IMPI_DEFAULT_BCAST = (
    (6, 8192, 20200, "mpich-knomial1:4"),
    (6, 20300, 138500, "mpich-knomial1:2"),
    (6, 139000, 355000, "kary:2"),
    (6, 360000, 1396108, "binomial"),
)
_IMPI_DEFAULT_LINEAR = ((6, 1024, 1048576, "ompi-linear"),)


def _impi_default(
    op: str, rows: tuple[tuple[int, int, int, str], ...], schedule: Schedule = DEFAULT
) -> NativeAlgorithm:
    """Intel MPI's own choice for ``op`` (nothing pinned), modelled where ``rows`` say which tree runs."""
    unset = (adjust_variable(op),)
    return NativeAlgorithm("default", {}, rows[0][3], schedule, by_size=TuningRows(rows), unset=unset)


def _impi_default_bcast() -> NativeAlgorithm:
    """Intel MPI's default bcast: :data:`_IMPI_DEFAULT_BCAST`'s trees, each pipelined in its family's chunk
    (:data:`_IMPI_BCAST_CHUNK_BYTES`).

    >>> nat = _impi_default_bcast()
    >>> [(t, s.segment_bytes) for t, s in (nat.on(("a",) * 6, m) for m in (16384, 65536, 262144))]
    [('mpich-knomial1:4', 2048), ('mpich-knomial1:2', 2048), ('kary:2', 32768)]
    >>> nat.on(("a",) * 5, 65536) is None
    True
    """
    rows = _IMPI_DEFAULT_BCAST
    base = _impi_default("bcast", rows, Schedule(segment_bytes=_IMPI_BCAST_CHUNK_BYTES[rows[0][3].partition(":")[0]]))

    def run(layout: Any, size: int) -> tuple[str, Schedule] | None:
        tree = base.tree_at(len(layout), size, _one_per_host(layout))
        if tree is None:
            return None
        return tree, Schedule(segment_bytes=_IMPI_BCAST_CHUNK_BYTES[tree.partition(":")[0]])

    return replace(base, per_layout=run)


_BINOMIAL_GATHER = Schedule(root_copy=True, recv_order="smallest_first", relay_waits=True)
#: Intel MPI's algorithms by operation: for bcast, scatter and gather its default (``native``) and its binomial
#: (MPICH's), forced; for the operations whose algorithms are message schedules, :mod:`.schedules`.
ALGORITHMS: Mapping[str, OpAlgorithms] = MappingProxyType(
    {
        "bcast": OpAlgorithms(_impi_default_bcast(), (_impi("bcast", 1, "binomial", "binomial"),)),
        "scatter": OpAlgorithms(
            _impi_default("scatter", _IMPI_DEFAULT_LINEAR, Schedule(root_copy=True)),
            (_impi("scatter", 1, "binomial", "binomial", Schedule(root_copy=True)),),
        ),
        "gather": OpAlgorithms(
            _impi_default("gather", _IMPI_DEFAULT_LINEAR, Schedule(root_copy=True)),
            (_impi("gather", 1, "binomial", "binomial", _BINOMIAL_GATHER),),
        ),
        **_SCHEDULE_OPS,
    }
)
