"""The machine's MPI lock: waits for another job, gives up with one line, and never waits for its own ancestor."""

from __future__ import annotations

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


def test_waits_for_another_job_then_gives_up(tmp_path):
    path = tmp_path / "mpi.lock"
    holder = _holder(path, 30)
    heard: list[str] = []
    try:
        t0 = time.monotonic()
        with pytest.raises(MPIRunError, match=r"stayed held by another job \(pid \[\d+\]\)"):
            with mpi_lock(str(path), wait_s=0.6, say=heard.append):
                pytest.fail("entered a lock another process holds")
        assert time.monotonic() - t0 >= 0.6
        assert len(heard) == 1 and str(holder.pid) in heard[0]
    finally:
        holder.kill()
        holder.wait()


def test_taken_once_the_other_job_ends(tmp_path):
    path = tmp_path / "mpi.lock"
    holder = _holder(path, 0.5)
    with mpi_lock(str(path), wait_s=20):
        assert holder.poll() is not None  # we got in only after it let go
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


def test_no_lock_file_set_is_a_no_op(monkeypatch):
    monkeypatch.delenv("HNOW_MPI_LOCK", raising=False)
    with mpi_lock():
        pass


def test_unopenable_lock_file_is_one_line(tmp_path):
    with pytest.raises(MPIRunError, match="cannot open the MPI lock file"):
        with mpi_lock(str(tmp_path / "missing" / "x.lock")):
            pass
