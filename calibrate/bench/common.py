"""What every benchmark of ``python -m calibrate bench`` shares: its context, repetition and summaries.

A benchmark is a function ``fn(ctx) -> list[row]`` (rows are dicts; rank 0's rows are the result, other ranks
return ``[]``). :class:`Ctx` carries the transport (plain MPI or the emulated testbed), a duplicate of the world
communicator for raw MPI features the transport does not have (``Isend`` windows, ``Test``, queues; never mixed
with the transport's own messages), the parsed options and the repetition policy.

Repetition: each measurement is one *sample* (itself a loop of ``iters`` operations, averaged); after ``warmup``
discarded samples, samples are taken until the 95 % confidence interval of their median is within 2.5 % of it
(:func:`calibrate.stats.converged`), or ``max_reps`` samples, or the time budget - rank 0 decides and tells the
other participating ranks. Rows report ``min/median/max`` and the CI of the median (:func:`calibrate.stats.summary`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate import stats

__all__ = ["Ctx", "summarize", "ratio", "TAG_DATA", "TAG_ACK", "TAG_DONE", "TAG_SYNC", "TAG_DUMMY"]

TAG_DATA, TAG_ACK, TAG_DONE, TAG_SYNC, TAG_DUMMY = 11, 12, 13, 14, 15


def summarize(samples: Sequence[float], unit: str = "us") -> dict[str, Any]:
    """min / median / max / CI of the median of ``samples`` (the one place the bench calls the stats module)."""
    return stats.summary(samples, unit)


def ratio(a: float, b: float) -> float:
    """a / b, NaN when b is 0 (ranks other than 0 return 0 µs samples)."""
    return a / b if b else float("nan")


@dataclass
class Ctx:
    """One benchmark run's context (see the module docstring)."""

    tr: Any  # calibrate.transport.Transport
    raw: Any  # duplicate of COMM_WORLD for raw MPI
    rt: Any  # calibrate.runtime.Runtime
    args: Any  # parsed options
    MPI: Any
    quick: bool = False
    prepared: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return self.tr.rank

    @property
    def size(self) -> int:
        return self.tr.size

    @property
    def emulated(self) -> bool:
        return bool(getattr(self.tr, "emulated", False))

    def need(self, n: int, name: str) -> None:
        if self.size < n:
            from hnowmodel.errors import InputError

            raise InputError(f"benchmark {name!r} needs at least {n} ranks, the job has {self.size}")

    def sub(self, n: int) -> Any:
        """Communicator of ranks 0..n-1 (None on the others); collective over the world."""
        color = 0 if self.rank < n else self.MPI.UNDEFINED
        c = self.raw.Split(color, self.rank)
        return None if c == self.MPI.COMM_NULL else c

    def idle_until_done(self) -> None:
        """Ranks that sit out a measurement wait here without burning a core (and the others join them)."""
        self.tr.quiet_barrier()

    def opt(self, name: str, plain: Any, testbed: Any, quick: Any = None) -> Any:
        """An option's value: what the user gave, else the default for plain MPI / the testbed / --quick."""
        v = getattr(self.args, name, None)
        if v is not None:
            return v
        if self.quick and quick is not None:
            return quick
        return testbed if self.emulated else plain

    def buffer(self, m: int, fill: int = 1) -> np.ndarray:
        return np.full(max(int(m), 0), fill, dtype=np.uint8)

    def repeat(self, comm: Any, once: Callable[[], float]) -> list[float]:
        """Run ``once()`` on every rank of ``comm`` (warm-up, then samples until converged); rank 0's samples.

        ``once`` returns rank 0's sample (other ranks' return values are ignored).
        """
        a = self.args
        warmup = 1
        min_reps = a.min_reps if a.min_reps is not None else (2 if self.quick else 5)
        max_reps = a.max_reps if a.max_reps is not None else (3 if self.quick else (10 if self.emulated else 30))
        min_reps = min(min_reps, max_reps)
        budget_s = 0.5 if self.quick else 2.5
        for _ in range(warmup):
            once()
        out: list[float] = []
        start = time.monotonic()
        while True:
            out.append(float(once()))
            stop = None
            if comm.Get_rank() == 0:
                n = len(out)
                stop = n >= max_reps or (
                    n >= min_reps and (stats.converged(out) or time.monotonic() - start > budget_s)
                )
            if comm.bcast(stop, root=0):
                return out
