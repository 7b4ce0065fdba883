"""The tandem of queues with TCP windows (hnowmodel.flow.windows), hand-computed: an acknowledgement that waits
behind the receiver's own egress queue holds its sender's window; Linux's idle restart; the profile's tcp terms
and what a calibration makes of the kernel's numbers (calibrate.tcpstate). No MPI."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.tcpstate import SAMPLE, parse_ss, tcp_window_terms
from hnowmodel.errors import ProfileError
from hnowmodel.fitreport import fit_report
from hnowmodel.flow.tandem import TandemNetwork
from hnowmodel.flow.windows import WindowNetwork, _Connection
from hnowmodel.params import NetworkTerms, Profile, Windows
from hnowmodel.schedules import MessageSchedule, Step
from hnowmodel.schedules.flows import simulate
from tests.helpers import flow_profile

W = Windows(initial_bytes=250.0, window_bytes=1000.0, ssthresh_bytes=1000.0, mss_bytes=500.0)


def _exchange(net: TandemNetwork) -> dict[tuple[int, int], float]:
    """Rank 0 (fast host) sends 3000 bytes to rank 1, whose host sends at 1 byte/µs, and rank 1 sends it 2000 bytes,
    both at 0: when each is through its receiver's ingress (µs)."""
    got: dict[tuple[int, int], float] = {}
    net.message(0.0, 0, 1, 3000.0, lambda t: None, lambda t, m: got.__setitem__((0, 1), t))
    net.message(0.0, 1, 0, 2000.0, lambda t: None, lambda t, m: got.__setitem__((1, 0), t))
    net.run()
    return got


def test_an_acknowledgement_waits_behind_the_receivers_egress_queue():
    """Windows of 1000 bytes. Rank 0's first 1000 bytes are through at 100, but their acknowledgement leaves rank
    1's host only behind the 1000 bytes rank 1 put in its 1 byte/µs egress at 0: at 1000. Rank 0 then sends 1500
    (the window grew by an MSS), through at 1150, whose acknowledgement waits behind rank 1's second 1000 bytes
    (queued at 1000, gone at 2000); the last 500 bytes are through at 2050. Without windows the 3000 bytes pass the
    10 bytes/µs links in 300 µs."""
    egress, ingress = np.array([10.0, 1.0]), np.array([10.0, 10.0])
    got = _exchange(WindowNetwork(egress, ingress, 0.0, W))
    assert got[(0, 1)] == pytest.approx(2050.0, rel=1e-12)
    assert got[(1, 0)] == pytest.approx(2000.0, rel=1e-12)
    plain = _exchange(TandemNetwork(egress, ingress, 0.0))
    assert plain[(0, 1)] == pytest.approx(300.0, rel=1e-12)


@pytest.mark.parametrize(("idle", "cwnd"), [(500.0, 1000.0), (1500.0, 500.0), (2500.0, 250.0), (1e6, 250.0)])
def test_an_idle_connection_halves_its_window_per_timeout_down_to_the_initial_one(idle, cwnd):
    """Linux's tcp_cwnd_restart with a timeout of 1000 µs (no round trip measured yet)."""
    conn = _Connection(1000.0, 0.0)
    conn.restart(idle, Windows(250.0, 1000.0, 1000.0, 500.0, restart_rto_min_us=1000.0))
    assert conn.cwnd == cwnd
    conn = _Connection(1000.0, 0.0)
    conn.restart(idle, W)  # no restart on hosts that keep their windows
    assert conn.cwnd == 1000.0


def test_a_profile_with_tcp_windows_runs_schedules_through_them():
    """The same exchange as a schedule, in a timed loop (the median call after the first): where idle connections
    keep their windows, rank 0's window grows over the calls until its 3000 bytes go at once (the round-robin
    tandem's 300 µs); where they restart between calls (a 100 µs timeout here) every call slow-starts again from
    1000 bytes and rank 0's message is through only after rank 1's 2000 bytes have left its egress. The fluid
    network has no connections: the terms change nothing there. A profile file's tcp terms parse."""
    sched = MessageSchedule(2, (Step.of([0, 1], [1, 0], [3000.0, 2000.0]),), "exchange")
    plain = flow_profile({"a": 10.0, "b": 1.0}, {"a": 10.0, "b": 10.0})
    tcp = {"tcp_window_bytes": 1000.0, "tcp_ssthresh_bytes": 1000.0, "tcp_mss_bytes": 500.0}
    keeps = Profile(plain.types, plain.network, plain.links, extensions={"network": tcp})
    restart = {**tcp, "tcp_initial_window_bytes": 1000.0, "tcp_restart_rto_min_us": 100.0}
    restarts = Profile(plain.types, plain.network, plain.links, extensions={"network": restart})
    assert keeps.network_terms.windows == Windows(5000.0, 1000.0, 1000.0, 500.0, None)
    assert simulate(plain, ["a", "b"], sched, sharing="rr").done_us.tolist() == pytest.approx([2000.0, 300.0])
    assert simulate(keeps, ["a", "b"], sched, sharing="rr").done_us.tolist() == pytest.approx([2000.0, 300.0])
    assert simulate(restarts, ["a", "b"], sched, sharing="rr").done_us[1] > 2000.0
    fluid = simulate(plain, ["a", "b"], sched).completion_us
    assert simulate(restarts, ["a", "b"], sched).completion_us == fluid
    burst = {**tcp, "burst_bytes": 100.0, "tcp_restart_rto_min_us": 200000.0}
    report = fit_report(Profile(plain.types, plain.network, plain.links, extensions={"network": burst}))
    assert any("TCP windows" in line and "200 ms" in line for line in report)
    assert not any("TCP windows" in line for line in fit_report(plain))
    with pytest.raises(ProfileError, match="tcp_window_bytes: must be a number of bytes >= 0"):
        NetworkTerms.from_doc({"tcp_window_bytes": -5})


def test_the_calibration_reads_windows_only_where_tcp_hands_them_whole_to_the_link():
    """The kernel's numbers (ss -tinp of the rank's own connections that carried 1 MiB) make the terms where every
    host keeps tcp_limit_output_bytes of at least 64 KiB and does not pace; the tuned cluster's 4096 bytes or BBR
    give none; the idle restart follows tcp_slow_start_after_idle."""
    socks = parse_ss(SAMPLE, pid=42)
    assert [s["peer"] for s in socks] == ["10.0.0.3"]  # another process's, a 43-byte one, one to this host: out
    host = {"sockets": socks, "limit_output_bytes": 1048576, "slow_start_after_idle": 1, "congestion_control": "cubic"}
    terms = tcp_window_terms([host, {**host, "initcwnd": 10}])
    assert terms == {
        "tcp_window_bytes": 48 * 1448.0,
        "tcp_ssthresh_bytes": 24 * 1448.0,
        "tcp_initial_window_bytes": 10 * 1448.0,
        "tcp_mss_bytes": 1448.0,
        "tcp_restart_rto_min_us": 200_000.0,
    }
    assert tcp_window_terms([host, {**host, "slow_start_after_idle": 0}])["tcp_restart_rto_min_us"] is None
    assert tcp_window_terms([host, {**host, "limit_output_bytes": 4096}]) is None
    assert tcp_window_terms([host, {**host, "congestion_control": "bbr"}]) is None
    assert tcp_window_terms([{**host, "sockets": []}]) is None


def test_flow_rr_trees_run_as_schedules_through_the_windows_on_a_window_profile():
    """Under flow-rr a bcast or scatter tree on a profile with TCP windows is its message schedule through the
    windowed tandem (the root's connections put their windows in its FIFO egress), not the tree engine's fitted
    queued bytes; on a profile without windows it is the tree engine's, as before."""
    from hnowmodel.flow import bcast as tree_bcast
    from hnowmodel.movement import ONE_DOWN, SUBTREE_DOWN
    from hnowmodel.schedules.fromtree import tree_schedule
    from hnowmodel.trees import make_tree
    from hnowmodel.variants import get

    plain = flow_profile({"f": 10.0, "s": 1.0}, {"f": 10.0, "s": 1.0}, burst=500.0)
    tcp = {"burst_bytes": 500.0, "tcp_window_bytes": 1000.0, "tcp_ssthresh_bytes": 1000.0, "tcp_mss_bytes": 500.0}
    windowed = Profile(plain.types, plain.network, plain.links, extensions={"network": tcp})
    layout, rr = ["f", "s", "s", "f"], get("flow-rr")
    tree = make_tree("sequential", 4)
    for move, op in ((ONE_DOWN, "bcast"), (SUBTREE_DOWN, "scatter")):
        got = rr.predict(move, windowed, layout, tree, [4000.0], per_rank=True)
        sched = tree_schedule(tree, move, 4000.0)
        want = simulate(windowed, layout, sched, sharing="rr").done_us
        assert got[0].tolist() == pytest.approx(want.tolist(), rel=1e-12), op
    assert rr.predict(ONE_DOWN, plain, layout, tree, [4000.0]).tolist() == pytest.approx(
        tree_bcast(plain, layout, tree, [4000.0], sharing="rr").tolist(), rel=1e-12
    )


def test_a_schedule_of_more_pieces_than_the_budget_goes_without_windows():
    """Past PIECES_UP_TO pieces a call (here one message of 4001 pieces of 8 × 500 bytes) the windows' events
    would cost seconds: the schedule runs on the tandem without them, as on a profile without windows."""
    from hnowmodel.flow.windows import PIECES_UP_TO
    from hnowmodel.schedules.flows import windowed

    plain = flow_profile({"a": 10.0, "b": 1.0}, {"a": 10.0, "b": 10.0})
    tcp = {"tcp_window_bytes": 1000.0, "tcp_mss_bytes": 500.0}
    prof = Profile(plain.types, plain.network, plain.links, extensions={"network": tcp})
    big = MessageSchedule(2, (Step.of([0], [1], (PIECES_UP_TO + 1) * 4000.0),), "big")
    small = MessageSchedule(2, (Step.of([0], [1], PIECES_UP_TO * 4000.0),), "small")
    assert windowed(prof, big) is None and windowed(prof, small) == prof.network_terms.windows
    assert simulate(prof, ["a", "b"], big, sharing="rr").completion_us == pytest.approx(
        simulate(plain, ["a", "b"], big, sharing="rr").completion_us, rel=1e-12
    )
