"""One MPI timing job at a time on a machine: an ``flock`` file shared by every user of the machine's MPI.

Timings are disturbed by anything else running, so jobs that time things take the machine's MPI lock first. The
lock file is ``$HNOW_MPI_LOCK`` (unset or empty: no lock, the default for users on their own allocation); the test
suite and the experiments set it to ``/tmp/hnow-mpi.lock``, the file the shell idiom
``flock /tmp/hnow-mpi.lock CMD`` holds. A lock already held by one of our own ancestors (``flock FILE pytest``) is
ours: it is not waited for, which would deadlock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator

from ..errors import MPIRunError

__all__ = ["mpi_lock", "lock_path", "LOCK_ENV"]

LOCK_ENV = "HNOW_MPI_LOCK"


def lock_path() -> str | None:
    """The MPI lock file named by ``$HNOW_MPI_LOCK``, or None when none is set.

    >>> os.environ.pop(LOCK_ENV, None) and None
    >>> lock_path() is None
    True
    """
    p = os.environ.get(LOCK_ENV, "").strip()
    return p or None


def _ancestors() -> set[int]:
    """Process ids of this process's ancestors (parent, its parent, …), read from ``/proc``."""
    out: set[int] = set()
    pid = os.getppid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def _holders(path: str) -> set[int]:
    """Process ids holding an ``flock`` on ``path`` (from ``/proc/locks``; empty where that is unreadable)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return set()
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    out = set()
    for ln in lines:
        f = ln.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF" (blocked waiters are marked "->" and skipped)
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == want:
            with contextlib.suppress(ValueError):
                out.add(int(f[4]))
    return out


@contextlib.contextmanager
def mpi_lock(
    path: str | None = None, *, wait_s: float = 3600.0, say: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the machine's MPI lock (``path``, default ``$HNOW_MPI_LOCK``; none set: a no-op) for the ``with`` body.

    Waits up to ``wait_s`` seconds for another job to finish (``say`` hears once that it waits, and for whom), then
    raises :class:`~hnowmodel.errors.MPIRunError`. A lock held by this process or an ancestor of it is taken as ours.
    """
    path = path or lock_path()
    if not path:
        yield
        return
    try:
        fh = open(path, "a")  # noqa: SIM115 - held for the whole body
    except OSError as e:
        raise MPIRunError(f"cannot open the MPI lock file {path} ({e.strerror}); unset {LOCK_ENV}") from None
    try:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holders = _holders(path)
                if holders and holders & (_ancestors() | {os.getpid()}):
                    break  # ``flock FILE <this>``, or this process nesting jobs: the lock is already ours
                if time.monotonic() > deadline:
                    raise MPIRunError(
                        f"the MPI lock {path} stayed held by another job (pid {sorted(holders)}) for {wait_s:g} s"
                    ) from None
                if say is not None and not told:
                    say(f"waiting for the MPI lock {path} (held by pid {', '.join(map(str, sorted(holders)))})")
                    told = True
                time.sleep(0.2)
        yield
    finally:
        fh.close()  # closing the file releases an flock we took
