"""Shared test set-up: a deterministic hypothesis profile and helpers to run the CLI and MPI jobs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Every MPI job the tests start (through hnow or the library) holds the machine's MPI lock while it runs, so a test
# never times a collective while another session's job busy-polls the same two cores. Not for raw mpiexec below.
os.environ.setdefault("HNOW_MPI_LOCK", "/tmp/hnow-mpi.lock")


def _mpi_launcher_missing() -> str:
    """Why MPI tests cannot run here ('' when they can): no ``mpiexec`` beside this Python or on PATH."""
    from hnowmodel.errors import MPIRunError
    from hnowmodel.jobs import find_launcher

    try:
        find_launcher("mpiexec")
    except MPIRunError as e:
        return f"no MPI launcher: {e}"
    return ""


def pytest_collection_modifyitems(config, items):
    """Tests marked ``mpi`` are skipped, with the reason, where no MPI launcher is found."""
    reason = _mpi_launcher_missing()
    if reason:
        for item in items:
            if item.get_closest_marker("mpi") is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


def one_error_line(stderr: str) -> bool:
    """``stderr`` holds one error line and nothing else but progress (a wait for the machine's MPI lock, say)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(("waiting for the MPI lock", "["))]
    return len(lines) == 1 and " error: " in lines[0]


def run_hnow(
    *args: str, timeout: float = 300, check: bool = False, env: dict | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``hnow ARGS`` as a subprocess (as a user would; ``env`` added to this environment) and return it."""
    proc = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hnow {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def run_mpi_module(np: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n NP python -m calibrate ARGS`` (holding the machine's MPI lock) and return the completed
    process."""
    from hnowmodel.jobs import mpi_lock

    with mpi_lock():
        return subprocess.run(
            ["mpiexec", "-n", str(np), sys.executable, "-m", "calibrate", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture
def hnow():
    return run_hnow
