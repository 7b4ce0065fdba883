"""The machine's MPI lock: excludes a second holder, waits for another job, gives up with one line, and never waits
for its own ancestor."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from hnowmodel.errors import MPIRunError
from hnowmodel.jobs import mpi_lock

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/locks (Linux)")


def _holder(path, seconds: float) -> subprocess.Popen:
    """A separate process holding an flock on ``path`` for ``seconds``; returns once it holds it."""
    code = (
        "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
        "print('held', flush=True); time.sleep(float(sys.argv[2]))"
    )
    p = subprocess.Popen([sys.executable, "-c", code, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def _flock_holders_of(pid: int) -> int:
    """How many ``flock`` locks process ``pid`` holds now (from ``/proc/locks``; waiters, marked ``->``, not)."""
    lines = open("/proc/locks").read().splitlines()
    return sum(1 for ln in lines if len(f := ln.split()) >= 5 and f[1] == "FLOCK" and f[4] == str(pid))


def _try_flock(path) -> str:
    """In another process: try to take ``path`` without waiting; ``taken`` or ``busy``."""
    code = (
        "import fcntl, sys; f = open(sys.argv[1], 'a')\n"
        "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('taken')\n"
        "except BlockingIOError:\n    print('busy')"
    )
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True).stdout.strip()


def test_the_lock_excludes_a_second_holder_while_held_and_only_then(tmp_path):
    """While one process is inside ``mpi_lock``, another (not its descendant) can neither flock the file nor enter
    ``mpi_lock`` (it gives up naming the holder); once the holder leaves, it can - and then it excludes others."""
    path = tmp_path / "mpi.lock"
    code = (
        "import sys, time; from hnowmodel.jobs import mpi_lock\n"
        "with mpi_lock(sys.argv[1], wait_s=5):\n    print('inside', flush=True); sys.stdin.readline()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "inside"
        assert _try_flock(path) == "busy"
        with pytest.raises(MPIRunError, match=rf"stayed held by another job \(pid \[{holder.pid}\]\)"):
            with mpi_lock(str(path), wait_s=0.3):
                pytest.fail("entered a lock another process holds")
        holder.communicate("leave\n", timeout=30)  # the holder leaves its ``with``
        assert holder.returncode == 0
        assert _try_flock(path) == "taken"
        with mpi_lock(str(path), wait_s=5):
            assert _try_flock(path) == "busy"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


@pytest.mark.timing
def test_waits_for_another_job_then_gives_up(tmp_path):
    path = tmp_path / "mpi.lock"
    holder = _holder(path, 30)
    heard: list[str] = []
    try:
        t0 = time.monotonic()
        with pytest.raises(MPIRunError, match=r"stayed held by another job \(pid \[\d+\]\)"):
            with mpi_lock(str(path), wait_s=0.6, say=heard.append):
                pytest.fail("entered a lock another process holds")
        # it waited its 0.6 s (never less) and gave up soon after: polls every 0.2 s; 10 s of slack for a loaded
        # machine's scheduling, far below the 30 s the holder keeps the lock (a lock that never gives up)
        assert 0.6 <= time.monotonic() - t0 < 10
        assert len(heard) == 1 and str(holder.pid) in heard[0]
    finally:
        holder.kill()
        holder.wait()


def test_taken_once_the_other_job_ends(tmp_path):
    path = tmp_path / "mpi.lock"
    holder = _holder(path, 0.5)
    heard: list[str] = []
    with mpi_lock(str(path), wait_s=20, say=heard.append):
        assert holder.poll() is not None  # we got in only after it let go
        assert _try_flock(path) == "busy"  # and now we hold it
    assert len(heard) == 1 and f"held by pid {holder.pid}" in heard[0]  # it said once that it waited, for whom
    holder.wait()


def test_a_lock_held_by_an_ancestor_is_ours(tmp_path):
    """``flock FILE hnow …`` must not deadlock: the child sees its parent holds the lock and goes on."""
    path = tmp_path / "mpi.lock"
    code = (
        "import sys; from hnowmodel.jobs import mpi_lock\n"
        "with mpi_lock(sys.argv[1], wait_s=5): print('inside', flush=True)"
    )
    outer = (
        "import fcntl, subprocess, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
        "sys.exit(subprocess.run([sys.executable, '-c', sys.argv[2], sys.argv[1]]).returncode)"
    )
    p = subprocess.run([sys.executable, "-c", outer, str(path), code], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "inside"


def test_no_lock_file_set_is_a_no_op(monkeypatch, tmp_path):
    """No ``$HNOW_MPI_LOCK``: nothing is locked and no file is made (where a named lock is an flock of this
    process)."""
    monkeypatch.delenv("HNOW_MPI_LOCK", raising=False)
    monkeypatch.chdir(tmp_path)
    before = _flock_holders_of(os.getpid())
    with mpi_lock():
        assert _flock_holders_of(os.getpid()) == before
    assert list(tmp_path.iterdir()) == []
    with mpi_lock(str(tmp_path / "named.lock")):
        assert _flock_holders_of(os.getpid()) == before + 1


def test_unopenable_lock_file_is_one_line(tmp_path):
    with pytest.raises(MPIRunError, match="cannot open the MPI lock file"):
        with mpi_lock(str(tmp_path / "missing" / "x.lock")):
            pass
