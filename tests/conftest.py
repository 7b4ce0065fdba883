"""Shared test set-up: a deterministic hypothesis profile, MPI tests skipped where no launcher is found, the ``hnow``
fixture. The helpers test modules share are in :mod:`tests.helpers`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import MACHINE_LOCK_ENV, machine_share, run_hnow

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


def pytest_configure(config):
    """On a pytest-xdist worker: the run's machine lock is a file in the run's temporary folder (the workers' own
    folders are inside it: ``--basetemp`` as xdist passes it), for :func:`tests.helpers.machine_share`."""
    if os.environ.get("PYTEST_XDIST_WORKER") and config.option.basetemp:
        os.environ[MACHINE_LOCK_ENV] = str(Path(config.option.basetemp).parent / "machine.lock")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups off the items
def pytest_collection_modifyitems(config, items):
    """Tests marked ``mpi`` are skipped, with the reason, where no MPI launcher is found. Under pytest-xdist
    (``-n 2 --dist loadgroup``, the README's command) they form one group, run one after another by one worker,
    while the other worker runs the rest: MPI jobs never share the two cores with one another."""
    reason = _mpi_launcher_missing()
    for item in items:
        if item.get_closest_marker("mpi") is not None:
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
            item.add_marker(pytest.mark.xdist_group("mpi"))


@pytest.fixture(autouse=True)
def _machine_share(request):
    """Under pytest-xdist, a test marked ``timing`` has the machine to itself and every other test shares it
    (:func:`tests.helpers.machine_share`). Nothing in a serial run."""
    with machine_share(exclusive=request.node.get_closest_marker("timing") is not None):
        yield


@pytest.fixture
def hnow():
    """``run_hnow``: run the CLI as a subprocess."""
    return run_hnow
