"""Processes of a virtual cluster: is one running, wait for a condition, and stop a set of them for good.

A process that is killed first becomes a zombie (it has exited; its parent has not collected its status yet) and
is gone only when its parent reaps it. The cluster's daemons outlive ``hnow cluster up``, so their parent is the
machine's init (pid 1), which reaps them when it gets to it (at once under systemd; up to seconds under some
container inits). :func:`stop_processes` returns only when every process has left the process table, so nothing
of a cluster that is down still shows in ``ps`` or answers ``kill -0``.

>>> running(os.getpid()), exists(os.getpid())
(True, True)
>>> stop_processes([])
[]
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterable

from ..errors import HnowError

__all__ = ["EXIT_WAIT_S", "REAP_WAIT_S", "running", "exists", "poll", "stop_processes"]

#: How long :func:`stop_processes` waits for the processes to exit after each SIGKILL, seconds.
EXIT_WAIT_S = 5.0
#: How long :func:`stop_processes` then waits for the exited processes' parents to reap them, seconds (a zombie
#: whose parent never reaps it has exited all the same: it is left to its parent after this).
REAP_WAIT_S = 10.0


def _stat(pid: int) -> tuple[str, int] | None:
    """The state letter (``R``, ``S``, ``D``, ``Z`` …) and parent pid of ``pid``; None when it is not in the process
    table."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[-1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str | None:
    got = _stat(pid)
    return None if got is None else got[0]


def running(pid: int) -> bool:
    """True while ``pid`` exists and has not exited (a zombie has exited; only its parent's wait is missing)."""
    return _state(pid) not in (None, "Z", "X")


def exists(pid: int) -> bool:
    """True while ``pid`` is in the process table: running, or a zombie its parent has not reaped yet."""
    return _state(pid) is not None


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip() or "?"
    except OSError:
        return "?"


def _gone(pid: int) -> bool:
    """True once ``pid`` has left the process table, or has exited and is a child of this process (whose own
    ``wait``, a ``subprocess.Popen``'s say, collects it: reaping it here would steal its exit status)."""
    got = _stat(pid)
    return got is None or (got[0] in ("Z", "X") and got[1] == os.getpid())


def poll(cond: Callable[[], bool], timeout_s: float, each: Callable[[], None] | None = None) -> bool:
    """Wait until ``cond()`` holds or ``timeout_s`` seconds pass, checking every 5..50 ms and calling ``each()``
    (which may raise) after every check that fails; True when it holds."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        if cond():
            return True
        if each is not None:
            each()
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)


def stop_processes(
    pids: Iterable[int], who: str = "processes", wait_s: float = EXIT_WAIT_S, reap_s: float = REAP_WAIT_S
) -> list[int]:
    """SIGKILL every process of ``pids`` and return when each has exited and left the process table: wait up to
    ``wait_s`` seconds for them to exit, SIGKILL those still running and wait as long again, then wait up to
    ``reap_s`` seconds for their parents to reap them (this process's own children are left to it: its
    ``subprocess.Popen.wait`` collects their status). Returns the pids (once each, in order).

    :class:`HnowError` (``who``: what they are, for the message) naming each process, with its command, that is
    still running after the second SIGKILL."""
    pids = list(dict.fromkeys(int(p) for p in pids))
    names = {p: _command(p) for p in pids}  # read now: gone with the process
    left = pids
    for _ in range(2):
        for p in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        poll(lambda: not any(running(p) for p in pids), wait_s)
        left = [p for p in pids if running(p)]
        if not left:
            break
    if left:
        raise HnowError(
            f"{who} did not exit after SIGKILL: {', '.join(f'{p} ({names[p]})' for p in left)}"
            f" (still running {2 * wait_s:g} s after the first)"
        )
    poll(lambda: all(_gone(p) for p in pids), reap_s)
    return pids
