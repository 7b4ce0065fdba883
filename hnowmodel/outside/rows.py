"""The rows an outside benchmark's output becomes (:class:`OutsideRow`), what an import returns
(:class:`OutsideResult`), and each row's message size as the operation registry's ``m`` (:func:`registry_m`).

What the suites' message size is (their sources: IMB-MPI1's ``src_c/IMB_<name>.c``, OSU's ``osu_<name>``): the
bytes of each rank's buffer for Bcast, each rank's block for Scatter, Gather, Allgather and Alltoall, each rank's
vector for Reduce and Allreduce (count · the datatype's bytes), each rank's result block for IMB's
Reduce_scatter_block (its recvcount) - in each case :mod:`hnowmodel.schedules.catalog`'s ``m``. IMB's Reduce_scatter
and OSU's osu_reduce_scatter and osu_reduce_scatter_block give the whole vector of all p blocks, split into
elements as evenly as they go (:attr:`~hnowmodel.ops.Operation.outside_total`): ``m`` = size / p where the split is
even, else no ``m`` (the blocks differ: not hnow's reduce-scatter). hnow's reductions are MPI_SUM on MPI_DOUBLE; IMB
reduces MPI_FLOAT unless run with ``-red_data_type double`` (its header says which: ``MPI_Datatype for reductions``),
OSU before 7 reduces MPI_FLOAT, OSU 7 its ``-T`` type (``# Datatype:``; MPI_CHAR becomes MPI_SIGNED_CHAR). The bytes
moved are the same at the same ``m``; only the combine may cost another γ per byte: :attr:`OutsideRow.as_hnow`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..ops import OPERATIONS
from ..ops import get as _get_op

__all__ = ["KINDS", "OutsideRow", "OutsideResult", "OPS_OF", "DATATYPE_BYTES", "HNOW_REDUCTION_DATATYPE", "registry_m"]

#: The outside benchmarks hnow reads (``hnow import KIND FILE``).
KINDS = ("imb", "osu")

#: hnow's name of what a benchmark measures: ``pingpong`` (one-way time of one message, half a round trip) or an
#: operation of :mod:`hnowmodel.ops`; keys are lower-case benchmark names of both suites.
OPS_OF: Mapping[str, str] = MappingProxyType(
    {"pingpong": "pingpong", "latency": "pingpong"}
    | {alias: o.name for o in OPERATIONS.values() for alias in o.outside_names}
)

#: Bytes of each MPI datatype the suites' output names.
DATATYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"MPI_BYTE": 1, "MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_INT": 4, "MPI_FLOAT": 4}
    | {"MPI_DOUBLE": 8, "MPIX_C_FLOAT16": 2, "MPIX_C_BF16": 2}
)
#: The datatype hnow's reductions combine (MPI_SUM), as the executors and the C kernels run them.
HNOW_REDUCTION_DATATYPE = "MPI_DOUBLE"


def registry_m(suite: str, name: str, size: int, np: int | None, datatype: str = "") -> int | None:
    """The operation registry's ``m`` (bytes) of a row of ``suite``'s benchmark ``name`` (a key of :data:`OPS_OF`:
    lower case, ``osu_`` dropped) at message ``size`` (bytes, as the suite prints it) on ``np`` ranks with elements
    of ``datatype``: ``size`` itself, or for a benchmark whose size is the whole vector
    (:attr:`~hnowmodel.ops.Operation.outside_total`) the block each rank ends with, when the vector splits into p
    equal blocks of whole elements (else None, also without ``np``); None for a benchmark hnow does not model.

    >>> registry_m("imb", "allreduce", 1024, 4), registry_m("imb", "reduce_scatter_block", 1024, 4)
    (1024, 1024)
    >>> registry_m("osu", "reduce_scatter", 4096, 4, "MPI_FLOAT"), registry_m("osu", "reduce_scatter", 12, 2)
    (1024, 6)
    >>> registry_m("osu", "reduce_scatter", 12, 2, "MPI_FLOAT") is None  # 3 floats do not split in 2
    True
    >>> registry_m("imb", "reduce_scatter", 1024, None), registry_m("imb", "barrier", 8, 2)
    (None, None)
    """
    op = OPS_OF.get(name)
    if op is None or op == "pingpong":
        return None if op is None else int(size)
    if f"{suite}:{name}" not in _get_op(op).outside_total:
        return int(size)
    elem = DATATYPE_BYTES.get(datatype, 1)
    count = int(size) // elem
    if not np or count % np or int(size) % elem:
        return None
    return count // np * elem


@dataclass(frozen=True)
class OutsideRow:
    """One measured line: ``benchmark`` as the suite names it (``PingPong``, ``Bcast``, ``osu_latency``...), ``op``
    (hnow's name, :data:`OPS_OF`; '' for what hnow does not model), ``np`` processes, ``size`` bytes (per rank for
    scatter/gather, as both suites count), and times in µs: ``t_us`` (the suite's headline: IMB's ``t[usec]`` or
    ``t_max``, OSU's average latency), ``t_min_us``/``t_max_us``/``t_avg_us`` where given; ``repetitions`` where
    given. ``m_bytes``: ``size`` as the registry's ``m`` of ``op`` (:func:`registry_m`; None where it has none),
    ``datatype``: the MPI datatype its buffers are of, where the output says (a reduction's: what it combines)."""

    suite: str
    benchmark: str
    op: str
    np: int | None
    size: int
    t_us: float
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_avg_us: float | None = None
    repetitions: int | None = None
    m_bytes: int | None = None
    datatype: str = ""

    @property
    def as_hnow(self) -> bool | None:
        """Whether the row ran what hnow runs at ``m_bytes``: for a reduction, whether it combined hnow's datatype
        (:data:`HNOW_REDUCTION_DATATYPE`; None when the output does not say); False for a row with no ``m``."""
        if self.op == "pingpong":
            return True
        if not self.op or self.m_bytes is None:
            return False
        if not _get_op(self.op).reduction:
            return True
        return self.datatype == HNOW_REDUCTION_DATATYPE if self.datatype else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "benchmark": self.benchmark,
            "op": self.op,
            "np": self.np,
            "size": self.size,
            "t_us": self.t_us,
            "t_min_us": self.t_min_us,
            "t_max_us": self.t_max_us,
            "t_avg_us": self.t_avg_us,
            "repetitions": self.repetitions,
            "m_bytes": self.m_bytes,
            "datatype": self.datatype,
            "as_hnow": self.as_hnow,
        }


@dataclass(frozen=True)
class OutsideResult:
    """What ``hnow import`` read: every row, and the ping-pong rows checked against a profile (``checks``; empty
    without one). ``source`` is the file, ``suite`` ``imb`` or ``osu``, ``header`` what the file says about itself
    (version, date, ...)."""

    suite: str
    source: str
    rows: tuple[OutsideRow, ...]
    checks: tuple[Any, ...] = ()
    header: Mapping[str, str] = field(default_factory=dict)

    def collective_rows(self) -> tuple[OutsideRow, ...]:
        """The rows of collectives (not ping-pong)."""
        return tuple(r for r in self.rows if r.op != "pingpong")

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "source": self.source,
            "header": dict(self.header),
            "rows": [r.to_dict() for r in self.rows],
            "checks": [c.to_dict() for c in self.checks],
        }
