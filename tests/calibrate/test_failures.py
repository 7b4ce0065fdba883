"""A rank that raises, dies or hangs ends the whole job with one line naming the rank and the step."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.mpi


def _hnow_with_fault(fault: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, HNOW_FAULT=fault)
    return subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    # a progress line saying the job waited for the machine's MPI lock is not an error line
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("waiting for the MPI lock")]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def _no_stray_ranks() -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return not any("-m calibrate info" in line for line in out.splitlines())


def test_exception_names_rank_and_step():
    line = _one_line(_hnow_with_fault("1:barrier:raise", "info", "--np", "3"))
    assert "rank 1" in line and "step barrier" in line and "injected fault" in line


def test_silent_death_names_where_ranks_were():
    line = _one_line(_hnow_with_fault("2:barrier:exit", "info", "--np", "3"))
    # rank 2 dies entering 'barrier'; the launcher then kills the others wherever they are (exit 17 or 9)
    assert "without an error report" in line and "rank" in line and "'barrier'" in line


def test_hang_is_killed_within_timeout_and_names_the_laggard():
    line = _one_line(_hnow_with_fault("1:gather hosts:hang", "info", "--np", "3", "--timeout", "4"))
    assert "did not finish within 4 s" in line
    # rank 1 never left 'gather hosts': it must be in the group reported furthest behind
    behind = line.split("(furthest behind)")[0]
    assert "gather hosts" in behind and "1" in behind.split("in step")[0]
    time.sleep(0.5)
    assert _no_stray_ranks()


def test_bad_fault_spec_is_reported():
    proc = _hnow_with_fault("garbage", "info", "--np", "2")
    assert proc.returncode == 2 and "HNOW_FAULT" in proc.stderr
