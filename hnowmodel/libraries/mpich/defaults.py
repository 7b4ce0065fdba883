"""MPICH's default choice among the algorithms of the operations whose algorithms are message schedules, and of
bcast (binomial, or a binomial scatter + an allgather, which are message schedules too): its
built-in collective selection (``MPIR_Csel``, the JSON compiled into libmpi of MPICH 5.0.2, the same as
``maint/tuning/coll/mpir/generic.json``), for an intra-communicator, a built-in commutative op (MPI_SUM on
doubles), buffers not in place, with the device's own collectives off (``MPIR_CVAR_DEVICE_COLLECTIVES=none``, as
hnow pins it: ch4's compositions would run otherwise). Each rule is a :data:`~hnowmodel.libraries.native.SizeRule`:
``(ranks, m bytes as the operation's registry entry defines m, one rank per host)`` -> the name of the operation's
schedule algorithm (bcast: or ``binomial``, the model tree) that runs, None where MPICH runs one hnow does not model.

The selection's sizes: ``avg_msg_size`` is the call's count × type size (allreduce, reduce: the vector; alltoall:
one peer's block), ``total_msg_size`` that × the communicator's size (allgather: p blocks; reduce_scatter_block: p
result blocks), ``count<pow2`` compares the element count with the largest power of two ≤ p. ``comm_size<N`` is
tested two ways (src/mpi/coll/src/csel.c): ``MPIR_Csel_prune``, which resolves a communicator's conditions once when
it is made, as written (``size < N``: bcast's ``comm_size<8`` at the top of its table, so 8 ranks run scatter +
allgather above 12288 B); ``MPIR_Csel_search``, which tests what pruning left (a condition below a call's
condition: alltoall's under ``is_sendbuf_inplace``), as ``size <= N`` (so 8 ranks are alltoall's "<8").

>>> RULES["allreduce"](4, 8, True), RULES["allreduce"](4, 16384, True)
('recursive_doubling', 'reduce_scatter_allgather')
>>> RULES["allgather"](4, 1024, True), RULES["allgather"](6, 16384, True)
('recursive_doubling', 'ring')
>>> RULES["alltoall"](2, 1024, True), RULES["alltoall"](16, 128, True), RULES["reduce"](2, 65536, True)
('scattered', 'brucks', 'reduce_scatter_gather')
>>> RULES["bcast"](7, 65536, True), RULES["bcast"](8, 65536, True), RULES["bcast"](9, 12289, True)
('binomial', 'scatter_recursive_doubling_allgather', 'scatter_ring_allgather')
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...schedules.catalog import ELEM_BYTES
from ..native import SizeRule

__all__ = ["RULES"]


def _pof2(n: int) -> int:
    return 1 << (int(n).bit_length() - 1)


def _allreduce(n: int, m: int, one_per_host: bool) -> str | None:
    # avg_msg_size<=8 (and 0): recursive doubling; then count<pow2: recursive doubling; else Rabenseifner
    if m <= 8 or m // ELEM_BYTES < _pof2(n):
        return "recursive_doubling"
    return "reduce_scatter_allgather"


def _reduce(n: int, m: int, one_per_host: bool) -> str | None:
    # avg_msg_size<=2048 or count<pow2: binomial; else reduce_scatter_gather
    return "binomial" if m <= 2048 or m // ELEM_BYTES < _pof2(n) else "reduce_scatter_gather"


def _allgather(n: int, m: int, one_per_host: bool) -> str | None:
    if not n & (n - 1):
        return "recursive_doubling" if n * m < 524288 else "ring"
    return "brucks" if n * m < 81920 else "ring"


def _reduce_scatter(n: int, m: int, one_per_host: bool) -> str | None:
    # is_commutative=yes: total_msg_size<524288 recursive halving, else pairwise
    return "recursive_halving" if n * m < 524288 else "pairwise"


def _bcast(n: int, m: int, one_per_host: bool) -> str | None:
    # comm_size<8 (pruned: as written, so 8 ranks are not below it): binomial; then avg_msg_size<=12288: binomial;
    # a power of two up to 524288 B: scatter + recursive doubling; else scatter + ring. A node-aware communicator
    # (comm_hierarchy=parent) runs smp at 0 B only, a call MPICH returns from at once.
    if m <= 0 and not one_per_host:
        return None
    if n < 8 or m <= 12288:
        return "binomial"
    return "scatter_recursive_doubling_allgather" if not n & (n - 1) and m <= 524288 else "scatter_ring_allgather"


def _alltoall(n: int, m: int, one_per_host: bool) -> str | None:
    if n <= 8:  # "comm_size<8" below is_sendbuf_inplace: left to MPIR_Csel_search, which tests it as <=
        return "scattered" if m <= 32768 else "pairwise"
    if m <= 256:
        return "brucks"
    return "scattered" if m <= 32768 else "pairwise"


#: operation -> its default's :data:`SizeRule`.
RULES: Mapping[str, SizeRule] = MappingProxyType(
    {
        "bcast": _bcast,
        "reduce": _reduce,
        "allreduce": _allreduce,
        "allgather": _allgather,
        "reduce_scatter": _reduce_scatter,
        "alltoall": _alltoall,
    }
)
