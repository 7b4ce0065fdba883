"""Typed, frozen results of the MPI jobs: measured rows, comparison rows, and the documents that hold them.

Every time is in µs, every size in bytes. ``error_pct = 100·(predicted − measured)/measured`` everywhere
(positive: the model is pessimistic), with the spread of the measurement (``min_us``, ``max_us`` over
repetitions) beside it.

>>> r = ComparisonRow(op="bcast", tree="binomial", size=0, predicted_us=110.0, measured_us=100.0)
>>> r.error_pct
10.0
>>> summarize([r])["median_abs_error_pct"]
10.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from ..report import error_pct
from ..report import error_stats as summarize

__all__ = [
    "MeasuredRow",
    "Measurement",
    "ComparisonRow",
    "Comparison",
    "BenchResult",
    "error_pct",
    "summarize",
    "rows_as_dicts",
]


def _frozen_extra(obj: Any) -> None:
    object.__setattr__(obj, "extra", MappingProxyType(dict(obj.extra)))


def _row_dict(obj: Any) -> dict[str, Any]:
    out = {f.name: getattr(obj, f.name) for f in fields(obj) if f.name != "extra"}
    out.update(obj.extra)
    return out


@dataclass(frozen=True)
class MeasuredRow:
    """One measured (op, tree, size): ``measured_us`` is the ``stat`` (median or min) of ``method``'s repetitions;
    ``min_us``/``median_us``/``max_us`` are its spread. ``extra`` keeps everything else the job reported (both
    timing methods' numbers, per-rank finish times, the tree that ran)."""

    op: str
    tree: str
    size: int
    measured_us: float
    min_us: float
    median_us: float
    max_us: float
    method: str
    stat: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _frozen_extra(self)

    def to_dict(self) -> dict[str, Any]:
        return _row_dict(self)


@dataclass(frozen=True)
class Measurement:
    """What ``hm.measure`` returns: the rows and the job's description (MPI library, ranks, testbed, timing)."""

    rows: tuple[MeasuredRow, ...]
    run: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows], "run": dict(self.run)}


@dataclass(frozen=True)
class ComparisonRow:
    """Predicted vs measured for one (op, tree, size); ``error_pct`` is derived, never stored separately.

    ``predicted_us`` is None where the model has nothing to say (a native collective of 0 bytes returns at once
    in MPICH; ``note`` says why). ``chosen_for_bytes`` is set on a tree chosen at one size and measured at others.
    """

    op: str
    tree: str
    size: int
    predicted_us: float | None
    measured_us: float
    min_us: float = math.nan
    median_us: float = math.nan
    max_us: float = math.nan
    method: str = ""
    stat: str = ""
    variant: str = ""
    model_tree: str = ""
    chosen_for_bytes: int | None = None
    note: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _frozen_extra(self)

    @property
    def error_pct(self) -> float | None:
        """``100·(predicted − measured)/measured`` (%), None when there is no prediction."""
        return error_pct(self.predicted_us, self.measured_us)

    def to_dict(self) -> dict[str, Any]:
        d = _row_dict(self)
        d["error_pct"] = self.error_pct
        return d


@dataclass(frozen=True)
class Comparison:
    """What ``hm.compare`` returns: rows, their error summary, the profile used, the job's description, and the
    report folder if one was written."""

    rows: tuple[ComparisonRow, ...]
    profile: Any
    run: Mapping[str, Any]
    context: Mapping[str, Any] = field(default_factory=dict)
    report: str | None = None

    @property
    def summary(self) -> dict[str, Any]:
        return summarize(self.rows)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "rows": [r.to_dict() for r in self.rows],
            "summary": self.summary,
            "run": dict(self.run),
        }
        if self.report:
            doc["report"] = self.report
        return doc


@dataclass(frozen=True)
class BenchResult:
    """What ``hm.bench`` returns: one dict per measured point (keys carry units), per-benchmark notes, the
    profile extensions measured, and the job's description."""

    rows: tuple[Mapping[str, Any], ...]
    benchmarks: Mapping[str, Any]
    extensions: Mapping[str, Any]
    run: Mapping[str, Any]
    outputs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [dict(r) for r in self.rows],
            "benchmarks": dict(self.benchmarks),
            "extensions": dict(self.extensions),
            **dict(self.run),
        }


def rows_as_dicts(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Rows (dataclasses with ``to_dict``, or dicts) as plain dicts."""
    return [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in rows]
