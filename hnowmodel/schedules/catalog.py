"""The named algorithms of the operations whose algorithms are message schedules, as the operation registry
(:data:`hnowmodel.ops.OPERATIONS`) lists them: each a :class:`~hnowmodel.schedules.generator.Algorithm` over a
generator of :mod:`~hnowmodel.schedules.algorithms` or :mod:`~hnowmodel.schedules.alltoall`, named as MPICH's
``MPIR_CVAR_<OP>_INTRA_ALGORITHM`` names it (``brucks``, ``reduce_scatter_allgather``) where MPICH runs it; the ones
only Intel MPI's default runs (reduce ``pipelined_knomial1``, ``pipelined_knomial1_4``, ``pipelined_chain`` and
``pipelined_chain_4k``, allgather ``recursive_doubling_fold``: :mod:`~hnowmodel.schedules.impi`; allreduce
``ring_rest_last``); the few that only Open MPI runs (reduce ``linear``,
``in_order_binomial`` and ``rabenseifner``, allreduce ``rabenseifner``, alltoall ``linear`` and ``pairwise_shift``)
as its coll/tuned does (``in_order_binomial``: its ``binomial``, whose name MPICH's has)
(:mod:`hnowmodel.libraries.openmpi.tuned`).

What ``m`` is, in bytes per rank: a bcast's message (MPICH's scatter + allgather bcasts), a reduction's vector
(reduce, allreduce: the m bytes each rank contributes, doubles summed, 8-byte elements where the split is by
elements), an allgather's block (each rank's m bytes), a reduce-scatter's result block (each rank contributes p blocks
of m bytes, ends with one), an alltoall's block (the m bytes each rank sends to each rank).

>>> sorted(ALLREDUCE)
['rabenseifner', 'recursive_doubling', 'reduce_bcast', 'reduce_scatter_allgather', 'ring', 'ring_rest_last']
>>> ALLREDUCE["ring"].schedule(4, 64).steps[0].nbytes.tolist()
[16.0, 16.0, 16.0, 16.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from types import MappingProxyType

from .algorithms import (
    binomial_reduce,
    bruck_allgather,
    linear_reduce,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
    reduce_bcast_allreduce,
    ring_allgather,
    ring_allreduce,
)
from .alltoall import bruck_alltoall, pairwise_alltoall, scattered_alltoall
from .bcast import scatter_recursive_doubling_allgather, scatter_ring_allgather
from .generator import Algorithm
from .impi import fold_recursive_doubling_allgather, pipelined_tree_reduce
from .ompi import ompi_rabenseifner_allreduce, ompi_rabenseifner_reduce
from .reduce import pairwise_reduce_scatter, rabenseifner_reduce

__all__ = ["BCAST", "REDUCE", "ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER", "ALLTOALL", "ELEM_BYTES"]

#: The reductions' element: MPI_DOUBLE (MPI_SUM), 8 bytes; MPICH splits a vector by elements.
ELEM_BYTES = 8


def _named(*algs: Algorithm) -> Mapping[str, Algorithm]:
    return MappingProxyType({a.name: a for a in algs})


#: m = the message (bytes). A bcast's trees need no entry (any tree spec runs it); these are MPICH's bcasts that are
#: no tree (:mod:`~hnowmodel.schedules.bcast`).
BCAST = _named(
    Algorithm("scatter_ring_allgather", "a binomial scatter of m/p chunks, then a ring allgather of them",
              scatter_ring_allgather, rooted=True),
    Algorithm("scatter_recursive_doubling_allgather",
              "a binomial scatter of m/p chunks, then a recursive doubling allgather (p a power of two)",
              scatter_recursive_doubling_allgather, rooted=True),
)  # fmt: skip
#: m = each rank's vector (bytes).
REDUCE = _named(
    Algorithm("binomial", "ceil(lg p) steps up a binomial tree", binomial_reduce, rooted=True),
    Algorithm("linear", "the root receives every vector in turn, from rank p-1 down (Open MPI)", linear_reduce,
              rooted=True),
    Algorithm("reduce_scatter_gather", "Rabenseifner's: a reduce-scatter by recursive halving, a binomial gather",
              partial(rabenseifner_reduce, elem_bytes=ELEM_BYTES), rooted=True),
    Algorithm("in_order_binomial", "Open MPI's binomial: MPICH's messages, the next child's receive posted early",
              partial(binomial_reduce, prepost=True), rooted=True),
    Algorithm("pipelined_knomial1", "up MPICH's knomial_1 tree (radix 2) in 8 KiB segments (Intel MPI)",
              pipelined_tree_reduce, rooted=True),
    Algorithm("pipelined_knomial1_4", "up MPICH's knomial_1 tree of radix 4 in 8 KiB segments (Intel MPI)",
              partial(pipelined_tree_reduce, tree="mpich-knomial1:4"), rooted=True),
    Algorithm("pipelined_chain", "up a chain in 14000-byte segments (Intel MPI)",
              partial(pipelined_tree_reduce, tree="chain", segment_bytes=14000), rooted=True),
    Algorithm("pipelined_chain_4k", "up a chain in 4096-byte segments (Intel MPI, hosts of several ranks)",
              partial(pipelined_tree_reduce, tree="chain", segment_bytes=4096), rooted=True),
    Algorithm("rabenseifner", "Open MPI's Rabenseifner's: its allreduce's fold and halving, a binomial gather",
              partial(ompi_rabenseifner_reduce, elem_bytes=ELEM_BYTES), rooted=True),
)  # fmt: skip
#: m = each rank's vector (bytes).
ALLREDUCE = _named(
    Algorithm("recursive_doubling", "lg p exchanges of the whole vector", recursive_doubling_allreduce),
    Algorithm(
        "reduce_scatter_allgather",
        "Rabenseifner's: a reduce-scatter by recursive halving, an allgather by recursive doubling",
        partial(rabenseifner_allreduce, elem_bytes=ELEM_BYTES),
    ),
    Algorithm(
        "ring",
        "a reduce-scatter ring, then an allgather ring, of m/p chunks",
        partial(ring_allreduce, elem_bytes=ELEM_BYTES),
    ),  # fmt: skip
    Algorithm(
        "ring_rest_last",
        "the ring of m/p chunks, the rest in the last, each rank ending with the next chunk (Intel MPI)",
        partial(ring_allreduce, elem_bytes=ELEM_BYTES, intel=True),
    ),
    Algorithm("reduce_bcast", "a binomial reduce to rank 0, then a binomial bcast", reduce_bcast_allreduce),
    Algorithm(
        "rabenseifner",
        "Open MPI's Rabenseifner's: halves swapped in the fold (the even ranks go on), windows halved",
        partial(ompi_rabenseifner_allreduce, elem_bytes=ELEM_BYTES),
    ),
)
#: m = each rank's block (bytes).
ALLGATHER = _named(
    Algorithm("ring", "p - 1 steps to the right-hand neighbour", ring_allgather),
    Algorithm("recursive_doubling", "lg p exchanges of doubling size (p a power of two)", recursive_doubling_allgather),
    Algorithm("brucks", "ceil(lg p) steps of doubling distance", bruck_allgather),
    Algorithm("recursive_doubling_fold", "the odd ranks fold into the even, recursive doubling, unfold (Intel MPI)",
              fold_recursive_doubling_allgather),
)  # fmt: skip
#: m = each rank's result block (bytes); each rank contributes p·m.
REDUCE_SCATTER = _named(
    Algorithm("recursive_halving", "lg p steps of halving distance", recursive_halving_reduce_scatter),
    Algorithm(
        "pairwise", "p - 1 send-receive steps, each rank's block to r + k, reduced there", pairwise_reduce_scatter
    ),
)
#: m = the block each rank sends to each rank (bytes).
ALLTOALL = _named(
    Algorithm("pairwise", "p - 1 blocking exchanges", pairwise_alltoall),
    Algorithm("brucks", "ceil(lg p) steps of doubling distance, blocks packed", bruck_alltoall),
    Algorithm("scattered", "non-blocking sends and receives to every peer, 32 at a time", scattered_alltoall),
    Algorithm(
        "pairwise_shift",
        "p - 1 blocking exchanges with r + k / r - k, the own block last (Open MPI's pairwise)",
        partial(pairwise_alltoall, xor=False, copy_last=True),
    ),
    Algorithm(
        "linear",
        "non-blocking sends and receives to every peer, all at once (Open MPI's linear)",
        partial(scattered_alltoall, throttle=0),
    ),
)
