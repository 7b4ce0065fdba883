"""``hnow demo`` on a virtual cluster whose hosts have several slots (3 hosts at 3 speeds, the fast one with 2 ranks:
the built-in ``demoslots`` in small, so the suite stays short): the calibration gets the shared-memory and NIC terms,
the node-aware tree is compared beside the others, and the gains table has its predicted and measured gain.
Behaviour only, never timing.

Skipped, with the reason, where there is no root or no network namespaces (or no MPI launcher: marker ``mpi``)."""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest

from hnowmodel import ops
from hnowmodel.demo import CLUSTER_NODE_AWARE, schedules
from hnowmodel.params import Profile
from tests.helpers import check_compared_row, run_hnow

from . import needs_netns

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


@needs_netns
def test_cluster_demo_with_a_two_rank_host_reports_the_node_aware_gain(tmp_path, cleanup):
    name = f"d{os.getpid() % 100000}"  # never touches anyone else's cluster (the built-in's name may be in use)
    rates = {"f1": (200, 2), "m1": (100, 1), "s1": (50, 1)}
    hosts = [{"name": h, "egress_mbit": r, "ingress_mbit": r, "slots": k} for h, (r, k) in rates.items()]
    doc = {"schema": "hnowmodel.cluster/1", "name": name, "hosts": hosts}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(doc))
    cleanup.append(name)
    out = tmp_path / "rep"
    proc = run_hnow(
        *("demo", "--cluster", str(spec), "-o", str(out), "--sizes", "16K", "--reps", "1", "--json"), timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    # the calibration told the hosts apart: f1's two ranks share a host, with its type's shared memory and every NIC
    prof = Profile.load(out / "profile.json")
    lay = prof.host_layout
    assert sorted(lay.slots.tolist()) == [1, 1, 2]
    shared = lay.host_types[int(lay.slots.argmax())]
    assert set(prof.shm) == {shared}
    assert set(prof.nic) == set(lay)
    # every operation over the node-aware tree, beside binomial and the chosen tree, predicted and measured
    got = {(r["op"], r["tree"]) for r in res["rows"]}
    for op in ops.tree_names():  # the demo measures the operations trees run
        assert {(op, "binomial"), (op, CLUSTER_NODE_AWARE), (op, "optimal")} <= got
    for r in res["rows"]:
        check_compared_row(r)
    # its gain over binomial, predicted and measured, for every operation
    node_aware = [g for g in res["gains"] if g["what"] == "node-aware tree vs binomial"]
    assert sorted(g["op"] for g in node_aware) == sorted(ops.tree_names())
    for g in node_aware:
        assert g["size"] == 16384
        assert math.isfinite(g["predicted_gain_pct"]) and math.isfinite(g["measured_gain_pct"]), g
    summary = (out / "summary.md").read_text()
    assert "| node-aware tree vs binomial |" in summary
    # allreduce (the message-schedule operation): the library's default and the algorithm hnow chooses among those
    # it runs, in its rank order, both predicted (the calibration measured γ) and measured
    mine = {r["tree"]: r for r in res["rows"] if r["op"] == schedules.OP}
    assert set(mine) == {ops.NATIVE, "optimal"}
    for r in mine.values():
        assert r["size"] == 16384 and r["predicted_us"] is not None, r
    assert mine["optimal"]["predicted_us"] <= mine[ops.NATIVE]["predicted_us"] * (1 + 1e-9)  # never predicted slower
    assert mine["optimal"]["note"].startswith("hnow's choice: ")  # a pinned algorithm, or the default
    (gain,) = [g for g in res["gains"] if g["what"] == schedules.WHAT]
    assert (gain["op"], gain["size"]) == (schedules.OP, 16384)
    assert gain["predicted_gain_pct"] >= -1e-9 and math.isfinite(gain["measured_gain_pct"]), gain
    assert f"## {schedules.OP}: " in summary and "| 16K |" in summary.split(f"## {schedules.OP}: ")[1]
    links = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"hnow-{name}-" not in links  # the demo took its cluster down
