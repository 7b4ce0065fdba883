"""Open MPI 5.0.x's fixed rules: which coll/tuned algorithm runs by default for bcast, scatter and gather, by
communicator size and message size (``coll_tuned_decision_fixed.c``), and what an algorithm number runs as
(:func:`canonical`). The model's registry (:mod:`.algorithms`: coll/han's default runs these rules on each of its
levels) and the rules file (:mod:`.rules`, which says "the fixed rules" for a range) both read it.

>>> default_algorithm("bcast", 3, 16384), default_algorithm("scatter", 3, 32768)
(1, 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...errors import InputError

__all__ = ["OPS", "default_algorithm", "canonical", "boundaries"]

#: The operations whose fixed rules are known.
OPS = ("bcast", "scatter", "gather")


def _op(op: str) -> str:
    if op not in OPS:
        raise InputError(f"Open MPI fixed rules: unknown operation {op!r} (choose from: {', '.join(OPS)})")
    return op


#: ``MAXTREEFANOUT`` (coll_base_topo.h): build_chain clamps its fanout to 1..32.
_MAX_FANOUT = 32

# Open MPI 5.0.x's fixed rules (coll_tuned_decision_fixed.c: ompi_coll_tuned_{bcast,scatter,gather}_intra_dec_fixed),
# as (communicator size below, ((size below, algorithm), ...)); None: no upper bound. The size is the message's
# bytes for bcast and the block's bytes (count x type size on the rank; the root's receive/send block) for
# scatter and gather. Each runs with faninout 0 and segsize 0.
_Steps = tuple[tuple[int | None, int], ...]
_FIXED_RULES: Mapping[str, tuple[tuple[int | None, _Steps], ...]] = MappingProxyType(
    {
        "bcast": (
            (4, ((32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2), (524288, 1),
                 (1048576, 6), (None, 5))),
            (8, ((64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1), (None, 2))),
            (16, ((8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6), (None, 1))),
            (32, ((4096, 7), (1048576, 6), (None, 8))),
            (64, ((2048, 6), (None, 7))),
            (128, ((None, 7),)),
            (256, ((2, 6), (16384, 5), (32768, 1), (65536, 5), (None, 7))),
            (1024, ((16384, 7), (32768, 4), (None, 7))),
            (2048, ((524288, 7), (None, 8))),
            (4096, ((262144, 7), (None, 8))),
            (None, ((8192, 7), (16384, 5), (262144, 7), (None, 8))),
        ),
        "scatter": (
            (4, ((2, 3), (131072, 1), (262144, 3), (None, 1))),
            (8, ((2048, 2), (4096, 1), (8192, 2), (32768, 1), (1048576, 3), (None, 1))),
            (16, ((16384, 2), (1048576, 3), (None, 1))),
            (32, ((16384, 2), (32768, 1), (None, 3))),
            (64, ((512, 2), (8192, 3), (16384, 2), (None, 3))),
            (None, ((512, 2), (None, 3))),
        ),
        "gather": (
            (4, ((2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2), (None, 3))),
            (8, ((1024, 2), (8192, 1), (32768, 2), (262144, 1), (None, 3))),
            (256, ((None, 2),)),
            (512, ((2048, 2), (8192, 1), (None, 2))),
            (None, ((None, 2),)),
        ),
    }
)  # fmt: skip


def default_algorithm(op: str, comm_size: int, size_bytes: int) -> int:
    """The algorithm number Open MPI 5.0.x's fixed rules run for ``op`` on ``comm_size`` ranks with ``size_bytes``
    per rank (bcast: the message; scatter/gather: one rank's block), with faninout 0 and segsize 0.

    >>> default_algorithm("bcast", 4, 262144), default_algorithm("scatter", 4, 65536)
    (1, 3)
    >>> default_algorithm("gather", 6, 4096), default_algorithm("bcast", 6, 1 << 20)
    (1, 2)
    """
    for below, steps in _FIXED_RULES[_op(op)]:
        if below is None or comm_size < below:
            return next(alg for upto, alg in steps if upto is None or size_bytes < upto)
    raise AssertionError("unreachable: the last communicator range is open")


def boundaries(op: str, comm_size: int) -> tuple[int, ...]:
    """The sizes (bytes per rank) from which the fixed rules for ``op`` on ``comm_size`` ranks run another algorithm:
    0 and each step's upper bound (each algorithm runs from one of these up to the next).

    >>> boundaries("bcast", 12)
    (0, 8, 64, 4096, 16384, 32768)
    """
    for below, steps in _FIXED_RULES[_op(op)]:
        if below is None or comm_size < below:
            return (0, *(upto for upto, _ in steps if upto is not None))
    raise AssertionError("unreachable: the last communicator range is open")


def canonical(op: str, algorithm: int, faninout: int = 0, segsize: int = 0) -> tuple[int, int, int]:
    """``(algorithm, faninout, segsize)`` as what runs: the faninout only where the algorithm reads it (bcast's
    chain, clamped to 1..32 as ``ompi_coll_base_topo_build_chain`` does, so the fixed rules' chain with faninout 0
    is the pipeline's tree), the segment size only where it segments (every algorithm but the linear ones).

    >>> canonical("bcast", 2, 0), canonical("bcast", 5, 3), canonical("gather", 1, 0, 4096)
    ((2, 1, 0), (5, 0, 0), (1, 0, 0))
    """
    if _op(op) == "bcast" and algorithm == 2:
        faninout = min(max(faninout, 1), _MAX_FANOUT)
    else:
        faninout = 0
    if algorithm in (0, 1) or (op == "scatter" and algorithm in (2, 3)) or (op == "gather" and algorithm == 2):
        segsize = 0
    return (int(algorithm), int(faninout), int(segsize))
