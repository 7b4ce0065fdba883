"""Tests of the virtual cluster; what they share: whether a cluster can be made here."""

from __future__ import annotations

import os

import pytest

from hnowmodel.cluster import netns
from hnowmodel.errors import HnowError


def why_no_cluster() -> str:
    """Why no virtual cluster can be made here ('' when one can): not root, or no network namespaces."""
    if os.geteuid() != 0:
        return "not root"
    try:
        netns.require()
    except HnowError as e:
        return str(e)
    return ""


WHY = why_no_cluster()
needs_netns = pytest.mark.skipif(bool(WHY), reason=f"needs root and network namespaces: {WHY}")


def four_hosts_spec(name: str, mbit: float = 200) -> dict:
    """A cluster spec of 4 hosts ``h1``..``h4`` at ``mbit`` Mbit/s each way, one slot each (the export proofs)."""
    return {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": f"h{i}", "egress_mbit": mbit, "ingress_mbit": mbit, "slots": 1} for i in range(1, 5)],
    }
