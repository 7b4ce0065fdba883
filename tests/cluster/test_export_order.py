"""The hostfile ``hnow export`` writes puts the ranks where it says: hydra on a virtual cluster, through hnow's own
hostfile check, starts rank i on the exported order's i-th host."""

from __future__ import annotations

import json

import pytest

import hnowmodel.cluster as hc
from tests.helpers import profile_with_hosts as _profile
from tests.helpers import run_hnow

from . import needs_netns


@pytest.mark.mpi
@needs_netns
def test_hydra_starts_the_ranks_in_the_exported_order(tmp_path, cleanup):
    name = f"ex{tmp_path.name[-6:].replace('_', '')}"[:10]
    cleanup.append(name)
    spec = {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": h, "egress_mbit": 100, "ingress_mbit": 100, "slots": 1} for h in ("n1", "n2", "n3", "n4")],
    }
    st = hc.up(spec)
    res = run_hnow("export", "--profile", _profile(tmp_path), "-o", str(tmp_path / "ex"))
    assert res.returncode == 0, res.stderr
    args = hc.launch_settings(st, 4).mpiexec_args
    i = args.index("-hosts")
    wrapper_only = " ".join(args[:i] + args[i + 2 :])  # the cluster's launcher; the hostfile says where
    res = run_hnow(
        "info", "--np", "4", "--launcher-args", wrapper_only, "--hostfile", str(tmp_path / "ex" / "hostfile"), "--json"
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["hosts"] == ["n1", "n3", "n2", "n4"]
