"""What every ``python -m calibrate`` task runs inside: the communicator, rank-0 progress, named steps.

A task names its current step (``with rt.step("ping-pong fast->slow"):``) so that a failure anywhere is
reported as one line naming the rank and the step, after which the whole job is aborted (no rank hangs).
Every rank also announces each step it enters on stderr (:func:`hnowmodel.jobs.wire.step_line`), so that a
rank which hangs or dies without a word can still be named by the launcher (:mod:`hnowmodel.jobs.launcher`).
Steps are meant to be coarse (a benchmark, a size, a tree), never one per timed repetition.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from contextlib import contextmanager
from typing import Any

from hnowmodel.jobs.wire import FAULT_ENV, PROGRESS_PREFIX, step_line

__all__ = ["Runtime", "FAULT_ENV", "PROGRESS_PREFIX", "node_name"]


def node_name() -> str:
    """This rank's node name: Slurm's name for the node when Slurm started the rank (``SLURMD_NODENAME``, which is
    what the profile's ``nodes`` and a user's ``--nodelist`` speak of), else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


class Runtime:
    """Per-process context of a running task (holds the communicator and the current step name)."""

    def __init__(self, comm: Any, quiet: bool = False) -> None:
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.quiet = quiet
        self.current_step = "start-up"
        self._entered = 0
        self._t0 = time.monotonic()
        self._fault = _parse_fault(os.environ.get(FAULT_ENV, ""))
        self._record()

    @contextmanager
    def step(self, name: str):
        """Name the work in progress (used in error lines); nests by joining names with ' / '."""
        outer = self.current_step
        self.current_step = name if outer in ("start-up", "") else f"{outer} / {name}"
        self._entered += 1
        self._record()
        if self._fault is not None:
            self._inject(name)
        try:
            yield
        finally:
            self.current_step = outer
            self._record(done=name)

    def progress(self, message: str) -> None:
        """Print a progress line on rank 0 only (to stderr, with elapsed seconds)."""
        if self.rank == 0 and not self.quiet:
            print(f"{PROGRESS_PREFIX}{time.monotonic() - self._t0:6.1f}s] {message}", file=sys.stderr, flush=True)

    def _record(self, done: str = "") -> None:
        where = self.current_step
        if done and where == "start-up":  # between top-level steps: say which one was finished last
            where = f"after {done}"
        print(step_line(self.rank, self._entered, where), file=sys.stderr, flush=True)

    def _inject(self, name: str) -> None:
        rank, step, kind = self._fault
        if rank != self.rank or step not in name:
            return
        if kind == "exit":
            os._exit(17)
        if kind == "hang":
            while True:
                time.sleep(3600)
        raise RuntimeError(f"injected fault ({FAULT_ENV})")


def _parse_fault(spec: str) -> tuple[int, str, str] | None:
    if not spec:
        return None
    try:
        rank, step, kind = spec.split(":", 2)
        if kind not in ("raise", "exit", "hang"):
            raise ValueError
        return int(rank), step, kind
    except ValueError:
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected RANK:STEP:raise|exit|hang") from None
