"""The calibration experiments of section 2 of Banikazemi et al. (the HNOW model), over a
:class:`~calibrate.transport.Transport`.

Each experiment involves two ranks, ``a`` and ``b``, and yields one sample (µs) per repetition on the measuring
rank; the other ranks sit out in a sleeping wait.

* :func:`pingpong` - eq. 5: a sends m bytes to b, b sends them back; half the round trip, measured at a. For a
  same-type pair that is ``S + X + R``; for a cross-type pair the mean of the two directions.
* :func:`consecutive_sends` - section 2.1: a sends ``burst`` messages back to back; the time per send, measured at
  a, is a's send overhead ``S_a(m)`` (b answers afterwards so bursts never pile up).
* :func:`receive_overhead` - b tells a to send, sleeps long enough for the message to have surely arrived, then
  times its receive call: ``R_b(m)``, with no waiting in it.

:func:`measure` repeats one experiment in batches until the 95 % confidence interval of the median is within the
requested precision or the time budget is spent; every rank takes part in the stop decision (a sleeping
broadcast from the measuring rank), so all ranks stay in step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .protocol import BYSTANDER_SLEEP_S
from .stats import converged
from .transport import Transport, sleep_wait

__all__ = ["pingpong", "consecutive_sends", "receive_overhead", "EXPERIMENTS", "Sampling", "measure"]

_TAG = 71
_GO = 72
_ACK = 73


def pingpong(tr: Transport, a: int, b: int, buf: np.ndarray, reps: int, **_: Any) -> list[float]:
    """Half round trips a -> b -> a, measured at a (µs)."""
    out: list[float] = []
    for _ in range(reps):
        if tr.rank == a:
            t0 = tr.now()
            tr.send(buf, b, _TAG)
            tr.recv(buf, b, _TAG)
            out.append((tr.now() - t0) / 2)
        elif tr.rank == b:
            tr.recv(buf, a, _TAG)
            tr.send(buf, a, _TAG)
    return out


def consecutive_sends(
    tr: Transport, a: int, b: int, buf: np.ndarray, reps: int, burst: int = 4, **_: Any
) -> list[float]:
    """Time per send of ``burst`` back-to-back sends a -> b, measured at a (µs): a's send overhead S_a(m)."""
    out: list[float] = []
    ack = np.zeros(0, dtype=np.uint8)
    for _ in range(reps):
        if tr.rank == a:
            t0 = tr.now()
            for _ in range(burst):
                tr.send(buf, b, _TAG)
            out.append((tr.now() - t0) / burst)
            tr.recv(ack, b, _ACK)
        elif tr.rank == b:
            for _ in range(burst):
                tr.recv(buf, a, _TAG)
            tr.send(ack, a, _ACK)
    return out


def receive_overhead(
    tr: Transport, a: int, b: int, buf: np.ndarray, reps: int, settle_us: float = 1000.0, **_: Any
) -> list[float]:
    """Duration of b's receive call when the message from a has already arrived, measured at b (µs): R_b(m).

    ``settle_us`` (model µs) must exceed a's wake-up plus send plus wire time; the caller passes a few ping-pong
    times.
    """
    out: list[float] = []
    go = np.zeros(0, dtype=np.uint8)
    for _ in range(reps):
        if tr.rank == b:
            tr.send(go, a, _GO)
            tr.idle(settle_us)
            t0 = tr.now()
            tr.recv(buf, a, _TAG)
            out.append(tr.now() - t0)
        elif tr.rank == a:
            tr.recv(go, b, _GO)
            tr.send(buf, b, _TAG)
    return out


Experiment = Callable[..., list[float]]
EXPERIMENTS: dict[str, tuple[Experiment, str]] = {
    # name: (function, which rank measures: "a" or "b")
    "pingpong": (pingpong, "a"),
    "sends": (consecutive_sends, "a"),
    "recv": (receive_overhead, "b"),
}


@dataclass(frozen=True)
class Sampling:
    """When :func:`measure` stops: the 95 % CI of the median within ``rel`` of it (with at least ``min_samples``),
    or ``max_samples`` samples, or the time budget spent (``budget_s`` seconds, past ``min_samples``). Samples come
    ``batch`` repetitions at a time, after ``warmup`` untimed repetitions."""

    rel: float = 0.025
    min_samples: int = 6
    max_samples: int = 40
    budget_s: float = 1.5
    batch: int = 3
    warmup: int = 1


def measure(
    tr: Transport, name: str, a: int, b: int, m: int, sampling: Sampling = Sampling(), **kw: Any
) -> list[float] | None:
    """Run experiment ``name`` between ranks a and b with m-byte messages until converged or out of budget
    (``sampling``); ``kw`` goes to the experiment.

    Call on every rank. Returns the raw samples (µs) on the measuring rank, None elsewhere.
    """
    rel, min_samples, max_samples = sampling.rel, sampling.min_samples, sampling.max_samples
    budget_s, batch, warmup = sampling.budget_s, sampling.batch, sampling.warmup
    fn, who = EXPERIMENTS[name]
    measurer = a if who == "a" else b
    buf = np.zeros(m, dtype=np.uint8)
    if tr.rank in (a, b):
        fn(tr, a, b, buf, warmup, **kw)
    samples: list[float] = []
    start = time.monotonic()
    flag = np.zeros(1, dtype=np.int8)
    while True:
        if tr.rank in (a, b):
            got = fn(tr, a, b, buf, batch, **kw)
            if tr.rank == measurer:
                samples += got
                done = (
                    converged(samples, rel, min_samples)
                    or len(samples) >= max_samples
                    or (len(samples) >= min_samples and time.monotonic() - start > budget_s)
                )
                flag[0] = 1 if done else 0
        req = tr.comm.Ibcast(flag, root=measurer)
        if tr.rank in (a, b):
            sleep_wait(req)
        else:
            sleep_wait(req, *BYSTANDER_SLEEP_S)
        if flag[0]:
            break
    return samples if tr.rank == measurer else None
