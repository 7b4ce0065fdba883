"""What every ``python -m calibrate`` task runs inside: the communicator, rank-0 progress, named steps.

A task names its current step (``with rt.step("ping-pong fast->slow"):``) so that a failure anywhere is
reported as one line naming the rank and the step, after which the whole job is aborted (no rank hangs).
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Any

__all__ = ["Runtime"]


class Runtime:
    """Per-process context of a running task (holds the communicator and the current step name)."""

    def __init__(self, comm: Any, quiet: bool = False) -> None:
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.quiet = quiet
        self.current_step = "start-up"
        self._t0 = time.monotonic()

    @contextmanager
    def step(self, name: str):
        """Name the work in progress (used in error lines); nests by joining names with ' / '."""
        outer = self.current_step
        self.current_step = name if outer in ("start-up", "") else f"{outer} / {name}"
        try:
            yield
        finally:
            self.current_step = outer

    def progress(self, message: str) -> None:
        """Print a progress line on rank 0 only (to stderr, with elapsed seconds)."""
        if self.rank == 0 and not self.quiet:
            print(f"[{time.monotonic() - self._t0:6.1f}s] {message}", file=sys.stderr, flush=True)
