"""Typed, frozen descriptions of what runs under MPI: one per ``python -m calibrate`` task.

A job is built and fully validated where ``hnow`` runs (bad input is found before any rank starts); the wire
protocol (:mod:`hnowmodel.jobs.wire`) turns it into the task's flags. Sizes are bytes.

>>> MeasureJob(ops=("bcast",), trees={"native": None}, sizes=(0, 4096)).methods
('fig2', 'sync')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..options import TIMING_METHODS
from ..trees import Tree

__all__ = ["CalibrateJob", "MeasureJob", "BenchJob", "InfoJob", "TIMING_METHODS"]


@dataclass(frozen=True)
class CalibrateJob:
    """Measure S, R per node type and X (``calibrate`` task). ``layout`` is a layout spec or ``auto``;
    ``sizes`` None = the task's default grid; ``network`` = ``bandwidth_MBps=…,latency_us=…`` to take X from the
    network's configuration instead of measuring it. On plain MPI: ``kernels`` (``auto``: C when a compiler is
    found), ``rounds`` and ``gap_us`` of the interleaved measurement, and ``native_ops`` timed at ``native_sizes``
    in the same rounds. ``steps``: the folder where the ranks save each finished step and from which a rerun
    takes them (:mod:`hnowmodel.stepfiles`; None: nothing saved), and ``steps_context`` what the launch adds to
    what the steps depend on (the virtual cluster's spec, the hostfile, the launcher's arguments, the MPI library)."""

    testbed: str | None = None
    layout: str | None = None
    sizes: tuple[int, ...] | None = None
    network: str | None = None
    regime: str = "auto"
    precision: float = 0.025
    quick: bool = False
    kernels: str = "auto"
    rounds: int | None = None
    gap_us: float | None = None
    native_ops: tuple[str, ...] = ()
    native_sizes: tuple[int, ...] = ()
    steps: str | None = None
    steps_context: Mapping[str, Any] | None = None

    task = "calibrate"

    def default_timeout_s(self, np: int) -> float:
        return 600.0


@dataclass(frozen=True)
class MeasureJob:
    """Run and time collectives (``measure`` task): ``trees`` maps each tree's name to the :class:`Tree` that runs
    (``None``: the MPI library's own collective, ``native``); ``keys`` reorders the ranks (rank i joins the
    measuring communicator with key i)."""

    ops: tuple[str, ...]
    trees: Mapping[str, Tree | None]
    sizes: tuple[int, ...]
    testbed: str | None = None
    layout: tuple[str, ...] | None = None
    root: int = 0
    reps: int = 7
    iters: int = 50
    methods: tuple[str, ...] = TIMING_METHODS
    keys: tuple[int, ...] | None = None

    task = "measure"

    def __post_init__(self) -> None:
        object.__setattr__(self, "trees", MappingProxyType(dict(self.trees)))

    def default_timeout_s(self, np: int) -> float:
        runs = len(self.ops) * len(self.trees) * max(1, len(self.sizes))
        return 60.0 + 3.0 * runs * (self.reps + self.iters) * len(self.methods)


@dataclass(frozen=True)
class BenchJob:
    """The seeds' microbenchmarks (``bench`` task); ``options`` are the benchmark options by name (see
    :data:`hnowmodel.bench_registry.OPTIONS`)."""

    names: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    testbed: str | None = None
    quick: bool = False

    task = "bench"

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def default_timeout_s(self, np: int) -> float:
        return 120.0 + 120.0 * len(self.names)


@dataclass(frozen=True)
class InfoJob:
    """Which MPI library runs, on how many ranks and which hosts (``info`` task)."""

    task = "info"

    def default_timeout_s(self, np: int) -> float:
        return 60.0
