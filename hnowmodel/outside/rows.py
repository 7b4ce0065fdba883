"""The rows an outside benchmark's output becomes (:class:`OutsideRow`) and what an import returns
(:class:`OutsideResult`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..ops import OPERATIONS

__all__ = ["KINDS", "OutsideRow", "OutsideResult", "OPS_OF"]

#: The outside benchmarks hnow reads (``hnow import KIND FILE``).
KINDS = ("imb", "osu")

#: hnow's name of what a benchmark measures: ``pingpong`` (one-way time of one message, half a round trip) or an
#: operation of :mod:`hnowmodel.ops`; keys are lower-case benchmark names of both suites.
OPS_OF: Mapping[str, str] = MappingProxyType(
    {"pingpong": "pingpong", "latency": "pingpong"}
    | {alias: o.name for o in OPERATIONS.values() for alias in o.outside_names}
)


@dataclass(frozen=True)
class OutsideRow:
    """One measured line: ``benchmark`` as the suite names it (``PingPong``, ``Bcast``, ``osu_latency``...), ``op``
    (hnow's name, :data:`OPS_OF`; '' for what hnow does not model), ``np`` processes, ``size`` bytes (per rank for
    scatter/gather, as both suites count), and times in µs: ``t_us`` (the suite's headline: IMB's ``t[usec]`` or
    ``t_max``, OSU's average latency), ``t_min_us``/``t_max_us``/``t_avg_us`` where given; ``repetitions`` where
    given."""

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
