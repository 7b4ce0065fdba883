"""Open MPI 5.0.x's coll/tuned algorithms for the operations whose algorithms are message schedules (reduce,
allreduce, allgather, reduce_scatter, alltoall): what each algorithm id runs, which of the operation's schedule
algorithms (:mod:`hnowmodel.schedules.catalog`) models it, how it is pinned, and tuned's fixed decision rules
(``coll_tuned_decision_fixed.c``), which pick the default size by size.

The ids are ``coll_tuned_<op>_decision.c``'s (``reduce_scatter`` is ``MPI_Reduce_scatter_block``, tuned's
``reduce_scatter_block`` component: 1 basic_linear, 2 recursive_doubling, 3 recursive_halving, 4 butterfly); what
each runs is ``ompi/mca/coll/base/coll_base_<op>.c``'s. An algorithm's model is a
:data:`~hnowmodel.libraries.native.SizeRule` ``(ranks, m bytes, one rank per host)`` -> the schedule algorithm's
name, None where Open MPI runs one hnow does not model (there: no prediction, a note). ``m`` is what the fixed
rules test as ``total_dsize``: count × type size of the call (allreduce, reduce: the vector; allgather, alltoall:
one block; reduce_scatter_block: the result block), the registry's ``m``.

>>> default_model("allreduce", 2, 1024), default_model("allreduce", 2, 65536), default_model("reduce", 2, 1024)
('recursive_doubling', 'ring', 'linear')
>>> fixed_algorithm("alltoall", 2, 65536), default_model("alltoall", 2, 65536)
(4, 'linear')
>>> [(a.algorithm, a.leaf) for a in OP_ALGORITHMS["allgather"].alternatives][:3]
[('linear', (1, 0, 0)), ('bruck', (2, 0, 0)), ('recursive_doubling', (3, 0, 0))]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ...schedules.catalog import ELEM_BYTES
from ..native import NativeAlgorithm, OpAlgorithms, SizeRule

__all__ = ["OP_ALGORITHMS", "MCA_NAMES", "ALGORITHM_NAMES", "fixed_algorithm", "default_model", "model_of", "canonical"]

# The reductions' element is MPI_DOUBLE (ELEM_BYTES; MPI_SUM, commutative: the fixed rules' commutative branch).
#: The name of each operation in tuned's MCA parameters (``coll_tuned_<name>_algorithm``).
MCA_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "reduce": "reduce",
        "allreduce": "allreduce",
        "allgather": "allgather",
        "reduce_scatter": "reduce_scatter_block",
        "alltoall": "alltoall",
    }
)

_Steps = tuple[tuple[int | None, int], ...]
# ompi_coll_tuned_<op>_intra_dec_fixed (v5.0.10, the same in 5.0.11's libmpi), for a commutative op, as
# (communicator size below, ((m below, algorithm), ...)); None: no upper bound. ``_TWO_RANKS``: the rules' own
# branch for a communicator of exactly 2 ranks (allgather, alltoall), tested before the others.
_FIXED: Mapping[str, tuple[tuple[int | None, _Steps], ...]] = MappingProxyType(
    {
        "allreduce": (
            (4, ((8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (None, 6))),
            (8, ((16, 4), (8192, 3), (None, 6))),
            (16, ((8192, 3), (None, 6))),
            (32, ((64, 5), (4096, 3), (None, 6))),
            (64, ((128, 5), (None, 6))),
            (128, ((262144, 3), (None, 6))),
            (256, ((131072, 2), (262144, 3), (None, 6))),
            (512, ((4096, 2), (None, 6))),
            (2048, ((2048, 2), (16384, 3), (None, 6))),
            (4096, ((2048, 2), (4096, 5), (16384, 3), (None, 6))),
            (None, ((2048, 2), (16384, 5), (32768, 3), (None, 6))),
        ),
        "allgather": (
            (32, ((None, 3),)),
            (64, ((1024, 3), (65536, 5), (None, 4))),
            (128, ((512, 3), (65536, 5), (None, 4))),
            (256, ((512, 3), (131072, 5), (524288, 4), (1048576, 5), (None, 4))),
            (512, ((32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5), (None, 4))),
            (1024, ((64, 3), (256, 2), (2048, 3), (None, 5))),
            (2048, ((4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (None, 5))),
            (4096, ((32, 2), (128, 3), (512, 2), (4096, 3), (None, 5))),
            (None, ((2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (None, 5))),
        ),
        "alltoall": (
            (8, ((8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (None, 1))),
            (16, ((262144, 4), (None, 1))),
            (32, ((4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (None, 4))),
            (64, ((512, 3), (524288, 1), (None, 4))),
            (128, ((1024, 3), (2048, 1), (4096, 4), (262144, 1), (None, 2))),
            (256, ((1024, 3), (2048, 4), (262144, 1), (None, 2))),
            (512, ((1024, 3), (8192, 4), (32768, 1), (None, 2))),
            (1024, ((512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (None, 2))),
            (2048, ((512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (None, 4))),
            (4096, ((1024, 3), (4096, 4), (8192, 1), (131072, 4), (None, 1))),
            (None, ((2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (None, 4))),
        ),
        "reduce": (
            (4, ((8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3), (1048576, 2), (None, 3))),
            (8, ((4096, 4), (65536, 2), (262144, 5), (524288, 1), (1048576, 5), (None, 1))),
            (16, ((8192, 4), (None, 5))),
            (32, ((4096, 4), (None, 5))),
            (256, ((None, 5),)),
            (512, ((8192, 5), (16384, 6), (None, 5))),
            (2048, ((None, 5),)),
            (4096, ((512, 5), (1024, 6), (8192, 5), (16384, 6), (None, 5))),
            (None, ((16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16384, 6), (None, 5))),
        ),
        "reduce_scatter": (
            (4, ((4, 2), (8, 4), (16, 3), (128, 4), (256, 3), (4096, 4), (8192, 3), (131072, 4), (None, 1))),
            (8, ((8, 3), (32, 2), (256, 4), (8192, 3), (16384, 4), (1048576, 3), (None, 1))),
            (16, ((4, 1), (32, 3), (128, 4), (524288, 3), (4194304, 1), (None, 4))),
            (32, ((32, 1), (524288, 3), (2097152, 1), (4194304, 3), (None, 4))),
            (None, ((4, 3), (16, 1), (65536, 4), (262144, 1), (None, 4))),
        ),
    }
)  # fmt: skip
_TWO_RANKS: Mapping[str, _Steps] = MappingProxyType(
    {
        "allgather": ((None, 6),),
        "alltoall": ((2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4), (1048576, 5),
                     (None, 2)),
    }
)  # fmt: skip


def fixed_algorithm(op: str, n: int, m: int) -> int:
    """The coll/tuned algorithm id Open MPI 5.0.x's fixed rules run for ``op`` on ``n`` ranks at ``m`` bytes (a
    commutative op: MPI_SUM).

    >>> fixed_algorithm("allreduce", 2, 1024), fixed_algorithm("allgather", 2, 1024), fixed_algorithm("reduce", 8, 1)
    (3, 6, 4)
    """
    rows = ((None, _TWO_RANKS[op]),) if n == 2 and op in _TWO_RANKS else _FIXED[op]
    for below, steps in rows:
        if below is None or n < below:
            return next(alg for upto, alg in steps if upto is None or m < upto)
    raise AssertionError("unreachable: the last communicator range is open")


def _pof2(n: int) -> int:
    return 1 << (int(n).bit_length() - 1)


def _is_pof2(n: int) -> bool:
    return not n & (n - 1)


def _always(name: str | None) -> SizeRule:
    return lambda n, m, one_per_host: name


#: The algorithm only a 2-rank communicator runs (allgather's, alltoall's): ``NativeAlgorithm.only_ranks`` 2.
_TWO_PROCS = "two_proc"


def _on_two(name: str) -> SizeRule:
    # two_proc: only a 2-rank communicator runs it (on others it returns MPI_ERR_UNSUPPORTED_OPERATION)
    return lambda n, m, one_per_host: name if n == 2 else None


def _ring_allreduce(n: int, m: int, one_per_host: bool) -> str | None:
    # ompi_coll_base_allreduce_intra_ring: fewer elements than ranks -> recursive doubling
    return "ring" if m // ELEM_BYTES >= n else "recursive_doubling"


def _rabenseifner_else(fallback: str | None) -> SizeRule:
    """Rabenseifner's, and ``fallback`` on fewer elements than the largest power of two <= n: allreduce's
    ompi_coll_base_allreduce_intra_redscat_allgather falls back to linear (not modelled: None), reduce's
    ompi_coll_base_reduce_intra_redscat_gather to basic linear. Open MPI's own schedules, not MPICH's: the fold keeps
    the even ranks and swaps halves (hnowmodel/schedules/ompi.py)."""

    def rule(n: int, m: int, one_per_host: bool) -> str | None:
        return "rabenseifner" if m // ELEM_BYTES >= _pof2(n) else fallback

    return rule


def _rd_allgather(n: int, m: int, one_per_host: bool) -> str | None:
    # ompi_coll_base_allgather_intra_recursivedoubling: not a power of two -> Bruck
    return "recursive_doubling" if _is_pof2(n) else "brucks"


def _neighbor(n: int, m: int, one_per_host: bool) -> str | None:
    # ompi_coll_base_allgather_intra_neighborexchange: an odd number of ranks -> ring; else neighbour exchange
    return "ring" if n % 2 else None


# id -> (tuned's name, model). Models, as coll_base_<op>.c runs each (segment size 0, as hnow pins them and the
# fixed rules run them; faninout 0; coll_tuned_alltoall_algorithm_max_requests 0):
# allreduce: 3 recursive doubling (MPICH's fold for non-powers of two: recursive_doubling); 4 ring (the
#   reduce-scatter ring then the allgather ring, chunks of ceil/floor(count/n) elements); 5 segmented ring with
#   segment size 0 is one segment, i.e. the ring; 6 Rabenseifner's (recursive halving + recursive doubling; its own
#   fold, which keeps the even ranks: rabenseifner, not MPICH's reduce_scatter_allgather); not modelled:
#   1 basic_linear (linear reduce + linear bcast), 2 nonoverlapping (tuned's own reduce then bcast, each by its
#   fixed rules).
# allgather: 2 Bruck (sends to r - d, receives from r + d: brucks); 3 recursive doubling (powers of two); 4 ring;
#   6 two_proc (one exchange, the own block copied after it) = the 2-rank recursive doubling; not modelled:
#   1 linear (gather + bcast), 5 neighbour exchange (even n), 7 sparbit.
# alltoall: 1 linear (the own block copied, then every receive from r+1, r+2, ... and every send to r-1, r-2, ...
#   posted at once, one wait: MPICH's scattered order without a throttle, linear); 2 pairwise (shifts, never XOR, the
#   own block last: pairwise_shift); 3 modified Bruck (rotation, ceil(lg n) steps to r + d of the blocks with bit k
#   set, packed by a datatype, rotation back: brucks); 4 linear_sync with max_requests 0 (every request at once: the
#   linear order); 5 two_proc = the 2-rank pairwise.
# reduce: 1 linear (linear); 5 binomial over the in-order binomial tree (parent: the lowest set bit cleared,
#   children r+1, r+2, r+4 received in that order: MPICH's binomial's messages, but ompi_coll_base_reduce_generic
#   posts the next child's receive before it waits for the current one: in_order_binomial); 7 Rabenseifner's
#   (its allreduce's fold and halving, then a binomial gather: rabenseifner; fewer elements than pof2 -> linear);
#   not modelled: 2 chain, 3 pipeline, 4 binary, 6 in-order binary.
# reduce_scatter (MPI_Reduce_scatter_block): 3 recursive halving (MPICH's, with its fold); not modelled:
#   1 basic_linear (reduce + scatterv), 2 recursive doubling, 4 butterfly.
_IDS: Mapping[str, Mapping[int, tuple[str, SizeRule]]] = MappingProxyType(
    {
        "allreduce": {
            1: ("basic_linear", _always(None)),
            2: ("nonoverlapping", _always(None)),
            3: ("recursive_doubling", _always("recursive_doubling")),
            4: ("ring", _ring_allreduce),
            5: ("segmented_ring", _ring_allreduce),
            6: ("rabenseifner", _rabenseifner_else(None)),
        },
        "allgather": {
            1: ("linear", _always(None)),
            2: ("bruck", _always("brucks")),
            3: ("recursive_doubling", _rd_allgather),
            4: ("ring", _always("ring")),
            5: ("neighbor", _neighbor),
            6: ("two_proc", _on_two("recursive_doubling")),
            7: ("sparbit", _always(None)),
        },
        "alltoall": {
            1: ("linear", _always("linear")),
            2: ("pairwise", _always("pairwise_shift")),
            3: ("modified_bruck", _always("brucks")),
            4: ("linear_sync", _always("linear")),
            5: ("two_proc", _on_two("pairwise_shift")),
        },
        "reduce": {
            1: ("linear", _always("linear")),
            2: ("chain", _always(None)),
            3: ("pipeline", _always(None)),
            4: ("binary", _always(None)),
            5: ("binomial", _always("in_order_binomial")),
            6: ("in-order_binary", _always(None)),
            7: ("rabenseifner", _rabenseifner_else("linear")),
        },
        "reduce_scatter": {
            1: ("basic_linear", _always(None)),
            2: ("recursive_doubling", _always(None)),
            3: ("recursive_halving", _always("recursive_halving")),
            4: ("butterfly", _always(None)),
        },
    }
)


#: Each operation's algorithm names by number (``coll_tuned_<op>_decision.c``'s; 0 is "ignore", which in a rules file
#: means the fixed rules): what a rules file may name (a number past the end makes the collective fail).
ALGORITHM_NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {op: ("fixed rules", *(ids[k][0] for k in sorted(ids))) for op, ids in _IDS.items()}
)
# What each algorithm reads of a rule besides its number (coll_tuned_<op>_decision.c, *_intra_do_this, v5.0.10):
# the segment size (allreduce's segmented ring; reduce's chain, pipeline, binary, binomial, in-order binary) and the
# fanout (reduce's chain); every other one reads neither.
_READS_SEGSIZE = MappingProxyType({"allreduce": frozenset({5}), "reduce": frozenset({2, 3, 4, 5, 6})})
_READS_FANINOUT = MappingProxyType({"reduce": frozenset({2})})


def canonical(op: str, algorithm: int, faninout: int = 0, segsize: int = 0) -> tuple[int, int, int]:
    """``(algorithm, faninout, segsize)`` of a rule for ``op`` as what runs: the fanout and the segment size only
    where the algorithm reads them.

    >>> canonical("allreduce", 4, 2, 8192), canonical("allreduce", 5, 2, 8192), canonical("reduce", 2, 3, 0)
    ((4, 0, 0), (5, 0, 8192), (2, 3, 0))
    """
    fan = int(faninout) if algorithm in _READS_FANINOUT.get(op, ()) else 0
    seg = int(segsize) if algorithm in _READS_SEGSIZE.get(op, ()) else 0
    return (int(algorithm), fan, seg)


def model_of(op: str, algorithm: int) -> SizeRule:
    """The model of tuned's ``op`` algorithm ``algorithm``: ``(ranks, m, one rank per host)`` -> the schedule
    algorithm's name, None where hnow does not model what runs.

    >>> model_of("allreduce", 4)(4, 16, True), model_of("allreduce", 4)(4, 64, True)
    ('recursive_doubling', 'ring')
    """
    return _IDS[op][algorithm][1]


def default_model(op: str, n: int, m: int, one_per_host: bool = True) -> str | None:
    """The schedule algorithm that models what Open MPI's fixed rules run for ``op`` on ``n`` ranks at ``m`` bytes
    (None: one hnow does not model). A :data:`~hnowmodel.libraries.native.SizeRule` once ``op`` is bound."""
    return model_of(op, fixed_algorithm(op, n, m))(n, m, one_per_host)


# coll/han (priority 35) is excluded, as for bcast/scatter/gather: it would run allreduce, allgather and reduce on
# several hosts with equal ranks each (its own two-level algorithms, not modelled here). Forced algorithms are read
# with dynamic rules on; the segment size is pinned to 0 (its default) so that a segmented algorithm runs whole.
_COMMON = {"OMPI_MCA_coll": "^han"}


def _pinned(op: str, number: int) -> NativeAlgorithm:
    """tuned's ``op`` algorithm ``number``, forced by its MCA parameters, or by the rules-file leaf
    ``(number, 0, 0)`` (the fixed rules run it so too: no fanout, no segments)."""
    name, model = _IDS[op][number]
    mca = f"OMPI_MCA_coll_tuned_{MCA_NAMES[op]}_algorithm"
    env = {mca: str(number), f"{mca}_segmentsize": "0", "OMPI_MCA_coll_tuned_use_dynamic_rules": "1", **_COMMON}
    only = 2 if name == _TWO_PROCS else None
    return NativeAlgorithm(name, env, "by size", leaf=(number, 0, 0), by_size=model, only_ranks=only)


def _default(op: str) -> NativeAlgorithm:
    """tuned's fixed rules (its forced algorithm unset: with dynamic rules on or off, no forced algorithm and no
    rules file means the fixed rules), coll/han off: what ``--tree native`` runs for ``op``, size by size."""
    rule: Callable[[int, int, bool], str | None] = lambda n, m, one, op=op: default_model(op, n, m, one)  # noqa: E731
    unset = (f"OMPI_MCA_coll_tuned_{MCA_NAMES[op]}_algorithm",)
    return NativeAlgorithm("default", dict(_COMMON), "by size", by_size=rule, unset=unset)


#: Open MPI's algorithms for these operations: the default (the fixed rules) and every tuned algorithm, pinned by
#: its MCA parameters or selected by a rules file (``hnow export --format ompi-rules`` chooses among the modelled
#: ones); an algorithm hnow does not model is pinnable all the same (``hnow compare`` measures it and notes that
#: nothing predicts it; the export never chooses it).
OP_ALGORITHMS: Mapping[str, OpAlgorithms] = MappingProxyType(
    {op: OpAlgorithms(_default(op), tuple(_pinned(op, k) for k in ids)) for op, ids in _IDS.items()}
)
