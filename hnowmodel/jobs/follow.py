"""What a running job says and whether it is the job that was asked for: :class:`_Follow` reads the ranks' lines
(steps, errors, results, progress; protocol: :mod:`hnowmodel.jobs.wire`) and the launcher's own last lines, and
:func:`world_problem` says in one line why a started job is not the one asked for (a wrong number of ranks,
singletons, the wrong hosts).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .wire import ERROR_PREFIX, PROGRESS_PREFIX, RESULT_PREFIX, STEP_PREFIX, WORLD_PREFIX, parse_step, parse_world

__all__ = ["world_problem"]


@dataclass(frozen=True)
class _Expect:
    """What the job that starts must look like: ``hosts`` per rank (a virtual cluster), or a number of distinct
    ``nodes`` (``why``: where that number comes from, for the error line)."""

    hosts: tuple[str, ...] | None = None
    nodes: int | None = None
    why: str = ""


def world_problem(np: int, expect: _Expect, size: int, hosts: Sequence[str]) -> str:
    """The one-line reason a started job is not the one asked for, or '' when it is.

    >>> world_problem(4, _Expect(), 1, ["a"])[:60]
    'asked for 4 ranks but each rank started as a 1-rank job of i'
    >>> world_problem(2, _Expect(nodes=2, why="the hostfile"), 2, ["a", "a"])
    'asked for 2 ranks on 2 hosts (the hostfile) but they started on 1 host: a'
    """
    if size != np:
        if size == 1 and np > 1:
            return (
                f"asked for {np} ranks but each rank started as a 1-rank job of its own (singletons: the launcher "
                "and the MPI library do not speak the same process-manager interface, e.g. srun --mpi=none; "
                "MPICH and Intel MPI need srun --mpi=pmi2)"
            )
        return (
            f"asked for {np} ranks but the job that started has {size} (check the launcher's arguments, "
            "the hostfile's slots or the allocation)"
        )
    seen = sorted(set(hosts), key=list(hosts).index)
    if expect.hosts is not None and tuple(hosts) != tuple(expect.hosts):
        return (
            f"the ranks started on hosts {','.join(hosts)} but {expect.why or 'the placement'} puts them on "
            f"{','.join(expect.hosts)}"
        )
    if expect.nodes is not None and len(seen) != expect.nodes:
        shown = ",".join(seen[:8]) + (",…" if len(seen) > 8 else "")
        return (
            f"asked for {np} ranks on {expect.nodes} hosts ({expect.why}) but they started on "
            f"{len(seen)} host{'s' if len(seen) != 1 else ''}: {shown}"
        )
    return ""


def _is_chatter(line: str) -> bool:
    """MPICH hydra / Open MPI boilerplate printed around an abort; it names no cause."""
    t = line.strip()
    return not t or t.startswith(("=", "YOUR APPLICATION", "This typically", "Please see", "Abort(", "-----"))


class _Follow:
    """What the job said so far: steps per rank, errors, result lines, and the launcher's own last lines."""

    def __init__(self, np: int, progress: Callable[[str], None] | None, expect: _Expect | None = None) -> None:
        self.np = np
        self.expect = expect or _Expect()
        self.world: tuple[int, tuple[str, ...]] | None = None
        self.kill: Callable[[], None] = lambda: None
        self.progress = progress
        self.steps: dict[int, tuple[int, str]] = {}
        self.errors: list[str] = []
        self.results: list[str] = []
        self.result_at: float | None = None  # time.monotonic() when rank 0's result line arrived
        self.tail: deque[str] = deque(maxlen=40)
        self.lock = threading.Lock()

    def line(self, line: str) -> None:
        line = line.rstrip("\n")
        # the launcher forwards the ranks' output in chunks: two ranks' lines can arrive glued together
        for marker in (STEP_PREFIX, ERROR_PREFIX, WORLD_PREFIX, PROGRESS_PREFIX, RESULT_PREFIX):
            cut = line.find(marker, 1)
            if cut > 0:
                self.line(line[:cut])
                self.line(line[cut:])
                return
        step = parse_step(line)
        world = parse_world(line)
        if world is not None:
            problem = world_problem(self.np, self.expect, *world)
            with self.lock:
                self.world = world if self.world is None else self.world
                if problem and not self.errors:
                    self.errors.append(problem)
            if problem:
                self.kill()  # the wrong job: stop it now rather than after the whole run
            return
        with self.lock:
            if step is not None:
                rank, entered, name = step
                self.steps[rank] = (entered, name)
            elif line.startswith(RESULT_PREFIX):
                self.results.append(line[len(RESULT_PREFIX) :].strip())
                self.result_at = time.monotonic()
            elif line.startswith(ERROR_PREFIX):
                self.errors.append(line[len(ERROR_PREFIX) :].strip())
            elif line.startswith(PROGRESS_PREFIX):
                if self.progress is not None:
                    self.progress("[" + line[len(PROGRESS_PREFIX) :])
            else:
                self.tail.append(line)

    def where(self) -> str:
        """Where each rank was, the ranks furthest behind first: ``ranks 0,1 in step 'x' (furthest behind); …``."""
        groups: dict[tuple[int, str], list[int]] = {}
        for r in range(self.np):
            key = self.steps.get(r, (-1, "start-up, before MPI was initialised"))
            groups.setdefault(key, []).append(r)
        parts = []
        for i, ((_, step), ranks) in enumerate(sorted(groups.items())):
            who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ",".join(map(str, ranks))
            behind = " (furthest behind)" if i == 0 and len(groups) > 1 else ""
            parts.append(f"{who} in step {step!r}{behind}")
        return "; ".join(parts)

    def last_words(self) -> str:
        """The launcher's (or the MPI library's) last meaningful line for a failure message; its last three
        lines when the job never got as far as MPI (a start-up failure or hang is the launcher's to explain)."""
        said = [t.strip()[:200] for t in self.tail if not _is_chatter(t)]
        if not said:
            return ""
        if self.world is None:
            return "; the launcher's last output: " + " | ".join(said[-3:])
        return f"; last output: {said[-1]}"


def _pump(stream: Any, follow: _Follow) -> None:
    for line in stream:
        follow.line(line)
