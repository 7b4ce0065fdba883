"""Message schedules on the tandem of queues (hnowmodel.flow.tandem; variant flow-rr): hand-computed cases of a
round-robin egress feeding a FIFO ingress, trees as steps equal to the flow engine's flow-rr bcast and scatter, and
what the tandem changes from the max-min network on a pairwise exchange (no MPI)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hnowmodel import flow as F
from hnowmodel import trees as T
from hnowmodel.errors import ProfileError
from hnowmodel.flow.tandem import TandemNetwork
from hnowmodel.layout import Layout
from hnowmodel.movement import ONE_DOWN, SUBTREE_DOWN
from hnowmodel.params import Profile
from hnowmodel.schedules import pairwise_alltoall
from hnowmodel.schedules.flows import evaluate, simulate
from hnowmodel.schedules.fromtree import from_tree
from tests.golden_corpus import DATA
from tests.helpers import flow_profile, network_profile, paper_shm_profile


def _net(egress, ingress, burst=0.0):
    return TandemNetwork(np.array(egress, dtype=float), np.array(ingress, dtype=float), burst)


def _run(net, msgs):
    """Each (t, src, dst, bytes) joins at t; returns {index: (left egress, through ingress)}."""
    got: dict[int, list] = {}
    for i, (t, s, d, b) in enumerate(msgs):
        got[i] = [None, None]
        net.message(t, s, d, b, lambda t, i=i: got[i].__setitem__(0, t), lambda t, m, i=i: got[i].__setitem__(1, t))
    net.run()
    return {i: tuple(v) for i, v in got.items()}


def test_a_fast_egress_serves_its_messages_in_turn_whoever_receives_them():
    """Host 0 (10 bytes/µs) sends 100 bytes to host 1 (ingress 1 byte/µs) and 100 to host 2 (10): each leaves the
    egress at 5 bytes/µs, both by 20 µs; host 2's is through then, host 1's ingress drains its 100 bytes by 100."""
    got = _run(_net([10, 10, 10], [10, 1, 10]), [(0, 0, 1, 100), (0, 0, 2, 100)])
    assert got == {0: (20.0, 100.0), 1: (20.0, 20.0)}


def test_an_ingress_passes_first_what_came_first():
    """Host 2's ingress (1 byte/µs) gets 100 bytes from host 0 at 0 (all in by 10 µs) and 100 from host 1 at 10: the
    first are through at 100, the second wait behind them, through at 200 (max-min would share the ingress from 10
    on: the first through at 190)."""
    got = _run(_net([10, 10, 10], [10, 10, 1]), [(0, 0, 2, 100), (10, 1, 2, 100)])
    assert got[0] == (10.0, 100.0) and got[1] == (20.0, 200.0)


def test_tokens_pass_at_once_and_an_idle_ingress_forgets_its_backlog():
    """Burst 50: the first 50 bytes of host 0's message pass its egress at once and host 1's ingress (full bucket)
    at once; the other 50 at 10 bytes/µs (5 µs), then the ingress (1 byte/µs) has no tokens left: 50 µs. A message
    long after, once both buckets refilled, does the same."""
    got = _run(_net([10, 10], [10, 1], burst=50.0), [(0, 0, 1, 100), (1000, 0, 1, 100)])
    assert got[0] == (5.0, pytest.approx(50.0)) and got[1] == (1005.0, pytest.approx(1050.0))


def test_a_zero_byte_message_waits_behind_the_bytes_that_reached_the_ingress_before_it():
    """At 1 µs 10 bytes of the first message have reached host 1's ingress (1 byte/µs): an empty message sent then
    (on another connection: the egress passes it at once) is through once they are, at 10."""
    got = _run(_net([10, 10], [10, 1]), [(0, 0, 1, 100), (1, 0, 1, 0)])
    assert got[1] == (1.0, pytest.approx(10.0)) and got[0] == (10.0, pytest.approx(100.0))


def test_a_path_without_a_finite_capacity_is_refused_as_the_max_min_network_refuses_it():
    with pytest.raises(ProfileError, match="no finite capacity"):
        _run(_net([np.inf, 10], [10, np.inf]), [(0, 0, 1, 100)])


def _no_queued(prof: Profile) -> Profile:
    """``prof`` without its fitted queued bytes (a message behind others waits for none: the fluid share)."""
    net = {**prof.extensions.get("network", {}), "queued_bytes": 0.0}
    return dataclasses.replace(prof, extensions={**prof.extensions, "network": net})


@pytest.mark.parametrize("tree_name", ["sequential", "binomial", "kary:3"])
@pytest.mark.parametrize("move", [ONE_DOWN, SUBTREE_DOWN], ids=["bcast", "scatter"])
def test_a_tree_as_steps_on_the_tandem_gives_the_flow_engines_round_robin(tree_name, move):
    """One rank per host: the tandem is flow-rr's model of a tree (an egress served round-robin, each receiver's
    ingress draining what reaches it, in order), so a tree compiled to steps gives the same times as flow.simulate
    under ``rr`` - exactly on three speeds whose pairs run at the slower NIC (no queued bytes: the tandem is the fluid
    share), and on hosts of several ranks (shared memory inside, one NIC per host); on the calibrated cluster within
    2e-4, where flow-rr also shapes each message at its own pair's fitted rate, a little below its receiver's NIC
    (the tandem's ingress runs at the fastest pair's)."""
    mixed = ["fast", "slow", "mid", "mid", "fast", "slow", "slow"]
    hosts = Layout(["fast"] * 3 + ["slow"] * 2 + ["fast"] * 3, [0, 0, 0, 1, 1, 2, 2, 2])
    cluster = _no_queued(Profile.load(str(DATA / "cluster_profile.json")))
    cases = ((network_profile(), mixed, 1e-9), (paper_shm_profile(), hosts, 1e-9), (cluster, cluster.host_layout, 2e-4))
    for prof, lay, rtol in cases:
        tree = T.make_tree(tree_name, len(lay))
        for m in (10.0, 5e3, 65536.0, 1e6):
            ms = from_tree(tree, move.edge_bytes(tree, m))
            ref = F.simulate(move, prof, lay, tree, m, sharing="rr")
            run = simulate(prof, lay, ms, sharing="rr")
            np.testing.assert_allclose(run.done_us, ref.done_us, rtol=rtol)


def test_a_pairwise_alltoall_on_the_calibrated_cluster_is_faster_on_the_tandem():
    """MPICH's pairwise alltoall on the calibrated 6-host cluster at 64 KiB: under max-min a slow receiver's ingress
    is shared by the message it waits for now and the ones ranks ahead sent for later steps; the tandem passes them
    in the order they came (measured 175 ms where max-min gave 224 and the tandem 171: docs/accuracy.md)."""
    prof = Profile.load(str(DATA / "cluster_profile.json"))
    ms = pairwise_alltoall(6, 65536)
    fifo, share = simulate(prof, prof.host_layout, ms, sharing="rr"), simulate(prof, prof.host_layout, ms)
    assert fifo.completion_us < 0.9 * share.completion_us
    assert evaluate(prof, prof.host_layout, ms, sharing="rr").method == "events"
    big = pairwise_alltoall(120, 8.0)  # 14 280 messages: the vectorised evaluator, max-min
    assert evaluate(flow_profile({"f": 10.0}), ["f"] * 120, big, sharing="rr").method == "rounds"
