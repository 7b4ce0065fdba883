"""Shared test set-up: a deterministic hypothesis profile, MPI tests skipped where no launcher is found, the ``hnow``
fixture. The helpers test modules share are in :mod:`tests.helpers`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import run_hnow

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


def _share_bytecode() -> None:
    """Compile the project's sources once into the ``__pycache__`` folders every Python the tests start reads.

    The suite starts several hundred Pythons (``hnow`` subprocesses, MPI ranks). Where ``PYTHONDONTWRITEBYTECODE``
    is set (CI's sandbox sets it) the editable install has no ``.pyc`` files, so each of them compiled hnowmodel
    from source again: ~0.2 s of CPU each. A Python reads caches even where it may not write them, so the sources
    are compiled here (``py_compile`` ignores that setting), beside them as usual (``__pycache__/`` is git-ignored;
    not ``PYTHONPYCACHEPREFIX``, which would hide numpy's own caches and cost more than it saves). A cache is used
    only while its source's mtime and size match, so an edited file is compiled afresh, never stale.
    """
    import compileall
    import sys
    from pathlib import Path

    if not sys.dont_write_bytecode or sys.pycache_prefix:
        return  # Python writes and reuses its own caches
    root = Path(__file__).resolve().parent.parent
    for pkg in ("hnowmodel", "calibrate"):
        compileall.compile_dir(root / pkg, quiet=1)
    # and this process keeps pytest's assertion-rewritten test modules (tests/**/__pycache__, git-ignored): the
    # collection of the ~190 test files took ~4 s rewriting and compiling them each run, ~1.5 s reading them
    sys.dont_write_bytecode = False


_share_bytecode()


def _mpi_launcher_missing() -> str:
    """Why MPI tests cannot run here ('' when they can): no ``mpiexec`` beside this Python or on PATH."""
    from hnowmodel.errors import MPIRunError
    from hnowmodel.jobs import find_launcher

    try:
        find_launcher("mpiexec")
    except MPIRunError as e:
        return f"no MPI launcher: {e}"
    return ""


#: Markers of the tests that must run alone on the machine (real MPI jobs, durations against tolerances, the virtual
#: cluster's namespaces and daemons): each also gets ``serial``. The README's test command runs the others two at a
#: time first (``-n 2 -m "not serial"``, pytest-xdist), then these one at a time (``-m serial``).
SERIAL_MARKERS = ("mpi", "timing", "slow")


#: Every test under this folder is ``serial`` too: it brings virtual clusters up and down.
CLUSTER_TESTS = Path(__file__).resolve().parent / "cluster"


def _serial(item) -> bool:
    return item.path.is_relative_to(CLUSTER_TESTS) or any(item.get_closest_marker(m) for m in SERIAL_MARKERS)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``mpi`` are skipped, with the reason, where no MPI launcher is found; the tests that must run
    alone are marked ``serial`` (:data:`SERIAL_MARKERS`, and every test of tests/cluster)."""
    reason = _mpi_launcher_missing()
    for item in items:
        if reason and item.get_closest_marker("mpi") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
        if _serial(item):
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def hnow():
    """``run_hnow``: run the CLI as a subprocess."""
    return run_hnow
