"""Processes of a virtual cluster: is one running, wait for a condition, and stop a set of them for good.

A process that is killed first becomes a zombie (it has exited; its parent has not collected its status yet) and
is gone only when its parent reaps it. The cluster's daemons outlive ``hnow cluster up``; their parent is a
:class:`Keeper`, a small process that reaps each of them, and every orphan of theirs, the moment it exits (the
machine's init, which would reap them otherwise, does so when it gets to it: at once under systemd, only every ~2 s
under some VM and container inits). :func:`stop_processes` returns only when every process has left the process
table, so nothing of a cluster that is down still shows in ``ps`` or answers ``kill -0``.

>>> running(os.getpid()), exists(os.getpid())
(True, True)
>>> stop_processes([])
[]
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..errors import HnowError

__all__ = [
    "EXIT_WAIT_S",
    "REAP_WAIT_S",
    "KEEPER_ENV",
    "running",
    "exists",
    "poll",
    "stop_processes",
    "Keeper",
    "keeper_pids",
    "stop_keepers",
]

#: How long :func:`stop_processes` waits for the processes to exit after each SIGKILL, seconds.
EXIT_WAIT_S = 5.0
#: How long :func:`stop_processes` then waits for the exited processes' parents to reap them, seconds (a zombie
#: whose parent never reaps it has exited all the same: it is left to its parent after this).
REAP_WAIT_S = 10.0
#: The environment variable a :class:`Keeper` carries (its value: the keeper's tag), by which it is found.
KEEPER_ENV = "HNOW_KEEPER"


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


class Keeper:
    """The parent of a set of long-lived daemons: a small process (``hnowmodel/cluster/keeper.py``, run by this
    Python with ``-I -S``: ~30 ms to start) of its own session that starts each daemon
    (:meth:`spawn`) and reaps it, and every orphan it leaves, the moment it exits, so a killed daemon leaves the
    process table at once, whatever the machine's init does. It outlives this process (then init is its parent;
    here a thread waits for it) and exits by itself once :meth:`close` was called and its last child is gone. It
    carries ``KEEPER_ENV=tag`` (found by :func:`keeper_pids`) and nothing else of its caller's environment."""

    def __init__(self, tag: str):
        self.tag = tag
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.join(os.path.dirname(__file__), "keeper.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={KEEPER_ENV: tag},
            start_new_session=True,
            text=True,
        )
        # collects its exit status (no zombie left in this process) whenever it exits
        threading.Thread(target=self.proc.wait, name="hnow-keeper-wait", daemon=True).start()

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], log: str | os.PathLike) -> int:
        """Start ``argv`` with the environment ``env`` (and nothing else), stdin ``/dev/null`` and its stdout and
        stderr appended to the file ``log``; its pid. :class:`HnowError` with why when it could not start."""
        req = {"argv": list(argv), "env": dict(env), "log": os.fspath(log)}
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline().strip()
        except (OSError, ValueError):
            answer = "! the keeper process is gone"
        if not answer.isdigit():
            raise HnowError(answer.lstrip("! ") or "the keeper process exited")
        return int(answer)

    def close(self) -> None:
        """No more daemons: from now on the keeper only reaps, and exits after its last child."""
        for fh in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                fh.close()


def keeper_pids(tag: str) -> list[int]:
    """The running :class:`Keeper` processes tagged ``tag``."""
    want, out = f"{KEEPER_ENV}={tag}\0".encode(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and running(int(entry)):
            with contextlib.suppress(OSError), open(f"/proc/{entry}/environ", "rb") as fh:
                if want in fh.read():
                    out.append(int(entry))
    return out


def stop_keepers(pids: Iterable[int], reap_s: float = REAP_WAIT_S) -> None:
    """Return when the keepers ``pids``, whose daemons were stopped, have exited by themselves and left the process
    table (each exits once its last child is reaped); any still running after ``reap_s`` seconds is stopped
    (:func:`stop_processes`)."""
    pids = list(pids)
    poll(lambda: all(_gone(p) for p in pids), reap_s)
    stop_processes([p for p in pids if running(p)], "keeper processes")
