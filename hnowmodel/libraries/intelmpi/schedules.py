"""Intel MPI 2021.16's algorithms for the operations whose algorithms are message schedules (reduce, allreduce,
allgather, reduce_scatter, alltoall): the ``I_MPI_ADJUST_<OP>`` number that pins each, the schedule algorithm of
:mod:`hnowmodel.schedules.catalog` that models it, and Intel MPI's default (nothing pinned: its tuning file).

The numbers are Intel's developer reference's ("I_MPI_ADJUST Family", the preset identifiers; the same numbering
since Intel MPI 4): allreduce 1 recursive doubling, 2 Rabenseifner's, 3 Reduce + Bcast, 4 topology-aware Reduce +
Bcast, 5 binomial gather + scatter, 6 its topology-aware one, 7 Shumilin's ring, 8 ring, 9 k-nomial, 10 and on
topology-aware / shared-memory ones (libmpi accepts 0-32); reduce 1 Shumilin's, 2 binomial, 3 and 4 their
topology-aware ones, 5 Rabenseifner's, 6 its topology-aware one, 7 k-nomial, 8 and on shared-memory ones (0-19);
allgather 1 recursive doubling, 2 Bruck's, 3 ring, 4 topology-aware Gatherv + Bcast, 5 k-nomial (0-6); alltoall 1
Bruck's, 2 Isend/Irecv + Waitall, 3 pairwise exchange, 4 Plum's (0-13). ``MPI_Reduce_scatter_block`` (hnow's
``reduce_scatter``) reads a variable of its own, ``I_MPI_ADJUST_REDUCE_SCATTER_BLOCK`` (1 recursive halving, 2
pairwise exchange, 3 recursive doubling, 4 Reduce + Scatter; libmpi accepts 0-4), not ``I_MPI_ADJUST_REDUCE_SCATTER``
(``MPI_Reduce_scatter``'s, 0-6): :func:`~.adjust.adjust_variable`.

Intel MPI is MPICH's code underneath (its libmpi names ``MPIR_Allreduce_intra_recursive_doubling``,
``MPIR_Allgather_intra_brucks``, ``MPIR_Reduce_scatter_block_intra_recursive_halving``, ...): the algorithms that
are MPICH's are modelled by MPICH's schedules, each seen on the wire sending exactly its schedule's messages
(docs/intel-mpi.md). A model is a :data:`~hnowmodel.libraries.native.SizeRule` ``(ranks, m bytes, one rank per
host)`` -> the schedule algorithm's name, None where hnow does not model what runs (there: no prediction, a note).
The default (nothing pinned) is modelled where the wire showed which schedule it runs (:data:`_DEFAULT_ROWS`: 2 and
4 ranks, and reduce, allreduce, allgather and reduce_scatter at some sizes on 12, one per host).

>>> [a.algorithm for a in OP_ALGORITHMS["allreduce"].alternatives]
['recursive_doubling', 'rabenseifner', 'ring']
>>> nat = OP_ALGORITHMS["reduce_scatter"].alternatives[0]
>>> nat.env, nat.leaf, nat.tree_at(4, 1024)
({'I_MPI_ADJUST_REDUCE_SCATTER_BLOCK': '1'}, 1, 'recursive_halving')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ...schedules.catalog import ELEM_BYTES
from ..native import NativeAlgorithm, OpAlgorithms, SizeRule
from .adjust import adjust_variable
from .rows import SharedRows, TuningRows

__all__ = ["OP_ALGORITHMS", "model_of"]


def _pof2(n: int) -> int:
    return 1 << (int(n).bit_length() - 1)


#: Where a modelled algorithm runs as which schedule, when not everywhere as its own: ``(ranks, m bytes)`` -> the
#: schedule's name, None where what runs is not known.
_Where = Callable[[int, int], "str | None"]


def _rabenseifner(n: int, m: int) -> str | None:
    # on 2 ranks Intel's Rabenseifner's sends the whole vector once each way (the wire, 4 and 64 KiB): recursive
    # doubling's schedule; from 4 ranks MPICH's reduce_scatter_allgather, which runs only from as many elements as
    # the largest power of two <= n (below that what Intel MPI runs instead is not known)
    if n == 2:
        return "recursive_doubling"
    return "reduce_scatter_allgather" if m // ELEM_BYTES >= _pof2(n) else None


def _pof2_ranks(n: int, m: int) -> str | None:
    # the recursive doubling allgather's schedule is the power-of-two one; MPICH's code has extra steps otherwise
    return "recursive_doubling" if not n & (n - 1) else None


def _not_modelled(n: int, m: int) -> str | None:
    return None


# number -> (name, the schedule algorithm that models it, where it does when not everywhere). Modelled: those that
# are MPICH's (the schedules of hnowmodel/schedules/catalog.py), each checked on the wire on 4 ranks, one per host
# (docs/intel-mpi.md). Alltoall 2 (Isend/Irecv + Waitall) is pinned but not modelled: besides a scattered exchange
# with every peer each rank sends its own block to itself as a message (the wire, 4 ranks), which no schedule has.
# Not registered (hnow does not model them, and a number it cannot predict is no candidate for the export):
# allreduce 3-7, 9 and on (Reduce + Bcast runs Intel's own reduce and bcast selections inside; Shumilin's,
# k-nomial, topology-aware and shared-memory ones are not documented well enough); reduce 1, 3 and on; allgather
# 4-6; alltoall 4 (Plum's) and on; reduce_scatter 2 and 4 (on 4 ranks at 4 KiB they ran recursive halving's
# messages: the preset falls back there) and 3 (recursive doubling: no schedule generator for it yet).
_IDS: Mapping[str, Mapping[int, tuple[str, str, _Where | None]]] = MappingProxyType(
    {
        "reduce": {2: ("binomial", "binomial", None)},
        "allreduce": {
            1: ("recursive_doubling", "recursive_doubling", None),
            2: ("rabenseifner", "reduce_scatter_allgather", _rabenseifner),
            8: ("ring", "ring", None),
        },
        "allgather": {
            1: ("recursive_doubling", "recursive_doubling", _pof2_ranks),
            2: ("brucks", "brucks", None),
            3: ("ring", "ring", None),
        },
        "reduce_scatter": {1: ("recursive_halving", "recursive_halving", None)},
        "alltoall": {
            1: ("brucks", "brucks", None),
            2: ("isend_irecv", "scattered", _not_modelled),
            3: ("pairwise", "pairwise", None),
        },
    }
)


def model_of(op: str, number: int) -> SizeRule:
    """The model of Intel MPI's ``op`` algorithm ``number``: ``(ranks, m, one rank per host)`` -> the schedule
    algorithm's name, None where hnow does not model what runs.

    >>> [model_of("allreduce", 2)(n, m, True) for n, m in ((2, 8), (4, 16), (4, 64))]
    ['recursive_doubling', None, 'reduce_scatter_allgather']
    """
    _, name, where = _IDS[op][number]
    return lambda n, m, one_per_host: name if where is None else where(int(n), int(m))


def _pinned(op: str, number: int) -> NativeAlgorithm:
    """``I_MPI_ADJUST_<OP>=<number>`` (every size, every communicator); its leaf is the number (None for one hnow
    does not model). A rule says where it runs as which schedule (``by_size``) when that is not everywhere its
    own."""
    name, model, where = _IDS[op][number]
    rule = None if where is None else model_of(op, number)
    leaf = None if where is _not_modelled else number  # no candidate of the export: nothing predicts it
    return NativeAlgorithm(name, {adjust_variable(op): str(number)}, model, by_size=rule, leaf=leaf)


# Intel MPI's default, read off the wire (docs/intel-mpi.md): 2 and 4 ranks, each on a host of its own (hydra's
# hosts h1..hN started through an exec wrapper that gives each its own host name, so Intel MPI runs its network
# algorithms between them, over libfabric's TCP on the loopback), every rank's sendmsg/sendto on its TCP sockets
# (strace) around one call of each operation: sender, receiver and payload of every message, compared with every
# schedule of the operation. Seen at 8, 1024, 4096, 16384, 65536 and 262144 bytes (m); a row spans the sizes seen
# with the same messages, so its switch to the next lies somewhere in the gap (not modelled there). On 2 ranks
# several schedules send the same messages (one exchange): the row names the one 4 ranks run at those sizes
# (allgather's recursive doubling; reduce_scatter_allgather for the two halves each way, which the ring sends too).
# Not modelled where the messages match no schedule hnow has: reduce at 4 KiB on 4 ranks (Rabenseifner's: a
# reduce-scatter, then a gather to the root) and from 16 KiB (the vector in 8 KiB or 32 KiB segments, a pipelined
# tree), allreduce at 64 KiB (segmented), alltoall on 4 ranks (Isend/Irecv with each rank's own block sent to
# itself as a message); alltoall on 2 ranks is one exchange, modelled as the Isend/Irecv family's schedule
# (scattered). Reduce_scatter at 256 KiB on 4 ranks sends every rank's block to every rank: MPICH's pairwise. On 12
# ranks (the same reading, 16384, 65536 and 262144 bytes: experiments/intel_schedules_wire.py --np 12) allreduce
# runs MPICH's reduce_scatter_allgather at 16, 64 and 256 KiB (at 64 KiB one socket read as another rank's in the
# first reading), reduce_scatter recursive halving at 16 KiB and pairwise from 64 KiB, reduce MPICH's knomial_1 tree
# (radix 2) in 8 KiB segments at 16 and 64 KiB and a chain in 14000-byte segments at 256 KiB, allgather a recursive
# doubling that folds 12 ranks to 8 first (the last three: Intel's own, hnowmodel/schedules/impi.py); each sends its
# schedule's messages exactly, besides a few 16-byte ones not modelled. Alltoall (Isend/Irecv, the own block sent to
# itself) is not modelled there. On 6 ranks (the same reading, experiments/intel_schedules_wire.py --np 6, at 16384,
# 65536 and 262144 bytes): reduce up knomial_1 of radix 4 in 8 KiB segments at 16 and 64 KiB (0 <- 1, 5; 1 <- 2, 3,
# 4) and the chain of 14000-byte segments at 256 KiB, allreduce reduce_scatter_allgather at 16 and 256 KiB and at 64
# KiB a ring of its own (ring_rest_last: the rest in the last chunk, every chunk index one higher than MPICH's),
# allgather the folded recursive doubling, reduce_scatter recursive halving to 64 KiB and pairwise at 256 KiB;
# alltoall Isend/Irecv with the own block sent to itself (on 6 and 12 ranks modelled as ``linear``, below).
_DEFAULT_ROWS: Mapping[str, tuple[tuple[int, int, int, str], ...]] = MappingProxyType(
    {
        "reduce": (
            (2, 8, 4096, "binomial"),
            (4, 8, 1024, "binomial"),
            (6, 16384, 65536, "pipelined_knomial1_4"),
            (6, 262144, 262144, "pipelined_chain"),
            (12, 16384, 65536, "pipelined_knomial1"),
            (12, 262144, 262144, "pipelined_chain"),
        ),
        "allreduce": tuple(
            row
            for n in (2, 4)
            for row in (
                (n, 8, 4096, "recursive_doubling"),
                (n, 16384, 16384, "reduce_scatter_allgather"),
                (n, 262144, 262144, "reduce_scatter_allgather"),
            )
        )
        + (
            (6, 16384, 16384, "reduce_scatter_allgather"),
            (6, 65536, 65536, "ring_rest_last"),
            (6, 262144, 262144, "reduce_scatter_allgather"),
        )
        + tuple((12, m, m, "reduce_scatter_allgather") for m in (16384, 65536, 262144)),
        "allgather": (
            (2, 8, 262144, "recursive_doubling"),
            (4, 8, 262144, "recursive_doubling"),
            (6, 16384, 262144, "recursive_doubling_fold"),
            (12, 16384, 262144, "recursive_doubling_fold"),
        ),
        "reduce_scatter": (
            (2, 8, 262144, "recursive_halving"),
            (4, 8, 65536, "recursive_halving"),
            (4, 262144, 262144, "pairwise"),
            (6, 16384, 65536, "recursive_halving"),
            (6, 262144, 262144, "pairwise"),
            (12, 16384, 16384, "recursive_halving"),
            (12, 65536, 262144, "pairwise"),
        ),
        # every send and receive posted at once (Isend/Irecv, as the wire shows), modelled by the all-at-once
        # schedule whose own block is a copy, not a message to itself; on 6 ranks its time agrees (-2.2 ... -3.4 %,
        # docs/intel-mpi.md)
        "alltoall": ((2, 8, 262144, "scattered"), (6, 16384, 262144, "linear"), (12, 16384, 262144, "linear")),
    }
)


# On hosts of several ranks (in blocks) Intel MPI's default read off the wire between hosts
# (experiments/intel_schedules_wire.py: the messages between ranks of one host go through shared memory, unseen;
# each schedule below sends exactly the messages seen between hosts, besides the 16-byte ones; docs/intel-mpi.md,
# "Hosts of several ranks"):
# * 4 hosts x 3 ranks (``--np 12 --ppn 3``; the hosts of experiments/tune_vs_exhaustive.py's 4x3 shape): allreduce
#   reduce_scatter_allgather at 16-256 KiB, allgather the folded recursive doubling at 16 and 64 KiB and the ring at
#   256 KiB, reduce_scatter recursive halving at 16 KiB and pairwise from 64 KiB, reduce the knomial_1 tree at
#   16 KiB, Rabenseifner's at 64 KiB and a chain in 4096-byte segments at 256 KiB;
# * hosts of 2, 1 and 3 ranks (``--slots 2,1,3``; the hosts of experiments/hosts_accuracy.py's mixed cluster):
#   allreduce reduce_scatter_allgather at 16-256 KiB, allgather the folded recursive doubling at 16 and 64 KiB and
#   the ring at 256 KiB, reduce_scatter recursive halving at 16 and 64 KiB and pairwise at 256 KiB, reduce the chain
#   of 14000-byte segments at 256 KiB (at 16 and 64 KiB the hosts' second ranks send to rank 0 within and across
#   hosts, which no schedule here does: not modelled); alltoall Isend/Irecv with the own block sent to itself, as on
#   6 ranks of their own hosts: ``linear`` (below).
# Elsewhere on hosts of several ranks: not modelled.
_BLOCKS_4X3 = (3, 3, 3, 3)
_MIXED = (2, 1, 3)
_SHARED_ROWS: Mapping[str, tuple[tuple[tuple[int, ...], int, int, str], ...]] = MappingProxyType(
    {
        "reduce": (
            (_BLOCKS_4X3, 16384, 16384, "pipelined_knomial1"),
            (_BLOCKS_4X3, 65536, 65536, "reduce_scatter_gather"),
            (_BLOCKS_4X3, 262144, 262144, "pipelined_chain_4k"),
            (_MIXED, 262144, 262144, "pipelined_chain"),
        ),
        "allreduce": tuple((per, 16384, 262144, "reduce_scatter_allgather") for per in (_BLOCKS_4X3, _MIXED)),
        "allgather": tuple(
            row
            for per in (_BLOCKS_4X3, _MIXED)
            for row in ((per, 16384, 65536, "recursive_doubling_fold"), (per, 262144, 262144, "ring"))
        ),
        "reduce_scatter": (
            (_BLOCKS_4X3, 16384, 16384, "recursive_halving"),
            (_BLOCKS_4X3, 65536, 262144, "pairwise"),
            (_MIXED, 16384, 65536, "recursive_halving"),
            (_MIXED, 262144, 262144, "pairwise"),
        ),
        "alltoall": ((_MIXED, 16384, 262144, "linear"),),
    }
)


def _default(op: str) -> NativeAlgorithm:
    """Intel MPI's own choice (its ``I_MPI_ADJUST_<OP>`` unset: the tuning file decides), modelled where the wire
    showed which schedule runs (:data:`_DEFAULT_ROWS`, one rank per host) or its time did (:data:`_SHARED_ROWS`,
    hosts of several ranks), else not (None)."""
    rows = TuningRows(_DEFAULT_ROWS[op])
    return NativeAlgorithm(
        "default",
        {},
        rows.rows[0][3],
        by_size=rows,
        unset=(adjust_variable(op),),
        per_layout=SharedRows(rows, _SHARED_ROWS[op]),
    )


#: Intel MPI's algorithms for these operations: its default (``native``, modelled where the wire showed it), the
#: algorithms hnow models, each pinned by its number (``native:ALGO``) and selected by it in an
#: ``I_MPI_ADJUST_<OP>`` string (what ``hnow export --format impi-env`` chooses among), and the one it pins without
#: a model (``pinned_only``: alltoall's Isend/Irecv).
OP_ALGORITHMS: Mapping[str, OpAlgorithms] = MappingProxyType(
    {
        op: OpAlgorithms(
            _default(op),
            tuple(_pinned(op, k) for k, (_, _, where) in ids.items() if where is not _not_modelled),
            pinned_only=tuple(_pinned(op, k) for k, (_, _, where) in ids.items() if where is _not_modelled),
        )
        for op, ids in _IDS.items()
    }
)
