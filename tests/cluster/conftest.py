"""Fixtures of the virtual-cluster tests: clusters taken down after a test; whether a Slurm can run here."""

from __future__ import annotations

import pytest

import hnowmodel.cluster as hc
from hnowmodel.cluster import slurm as hs
from hnowmodel.errors import HnowError
from tests.helpers import node_local_paths

from . import WHY


@pytest.fixture
def cleanup():
    """Names of clusters to take down after the test whatever happens."""
    names: list[str] = []
    yield names
    if not WHY:
        for n in names:
            hc.down(n)


@pytest.fixture(scope="module")
def slurm_ok() -> None:
    """Skip, with the reason, where a Slurm cannot run on a virtual cluster here; installs it where it can."""
    if WHY:
        pytest.skip(f"needs root and network namespaces: {WHY}")
    try:
        hs.ensure_installed()
    except HnowError as e:
        pytest.skip(f"needs Slurm: {e}")


@pytest.fixture(scope="module")
def python_on_hosts(slurm_ok) -> None:
    """Skip, with the reason, the tests that start this Python on the Slurm hosts where it cannot start there."""
    local = node_local_paths()
    if local:
        pytest.skip(
            f"{', '.join(local)} under /tmp, which is node-local on the Slurm hosts (as on real compute nodes): "
            "the ranks could not start there; use an environment and a source tree outside /tmp"
        )
