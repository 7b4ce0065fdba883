"""Fixtures of the virtual-cluster tests."""

from __future__ import annotations

import pytest

import hnowmodel.cluster as hc

from . import WHY


@pytest.fixture
def cleanup():
    """Names of clusters to take down after the test whatever happens."""
    names: list[str] = []
    yield names
    if not WHY:
        for n in names:
            hc.down(n)
