"""The rendezvous handshake's waits in the FIFO queues (hnowmodel.schedules.handshake), hand-computed on the tandem of
queues: a go-ahead behind the sender's ingress queue, and an exchange that runs one way when the late rank read its
partner's request while it waited, both ways when the request came behind what it waited for (no MPI)."""

from __future__ import annotations

import pytest

from hnowmodel.schedules import MessageSchedule, Step
from hnowmodel.schedules.algorithms import recursive_doubling_allreduce
from hnowmodel.schedules.flows import simulate
from tests.helpers import flow_profile

# bytes/µs: a slow host behind fast ones; no S, R, Xc or burst, so each time below is bytes over a rate
RATES = {"fast": 100.0, "slow": 10.0, "medium": 50.0}
M = 1e4  # bytes: 1000 µs through the slow host, 100 through a fast one


def _flows(layout: list[str], schedule: MessageSchedule, sharing: str = "rr", rendezvous: int | None = 1000) -> dict:
    """(src, dst) -> (start, end) of each flow (µs; the last one of a pair)."""
    prof = flow_profile(RATES, rendezvous=rendezvous)
    return {(f.src, f.dst): (f.start_us, f.end_us) for f in simulate(prof, layout, schedule, sharing=sharing).flows}


def test_a_go_ahead_waits_behind_the_senders_ingress_queue():
    """Rank 0 sends the slow rank 1 an eager 4000 bytes at 0 (all in its ingress queue by 40 µs, through at 400);
    rank 1 asks rank 2 to take 1e4 bytes at once, and rank 2 posts that receive at 100 (once rank 3's 1e4 bytes are
    in): its go-ahead is through rank 1's ingress only at 400, so the data leaves then and is in at 400 + 1000."""
    steps = (Step.of([3], [2], M), Step.of([0, 1], [1, 2], [4000.0, M]))
    sched = MessageSchedule(4, steps, "go-ahead behind a queue")
    lay = ["fast", "slow", "fast", "fast"]
    assert _flows(lay, sched, rendezvous=5000)[(1, 2)] == pytest.approx((400.0, 1400.0), rel=1e-9)
    # the fluid network has no queue to wait in: the data leaves at 100
    assert _flows(lay, sched, "maxmin", rendezvous=5000)[(1, 2)] == pytest.approx((100.0, 1100.0), rel=1e-9)


def test_an_exchange_whose_request_was_read_early_runs_one_way():
    """Recursive doubling on 3 ranks: rank 0 folds its vector into the slow rank 1 (in at 1000) while rank 2, which
    skips the fold, asks rank 1 to exchange at once. Rank 1 reads that request while it waits for the fold, so at
    1000 its go-ahead leaves before its own request: rank 2's vector flows 1000-2000, and rank 1's only then (rank
    2's go-ahead for it waits behind rank 2's data on their connection), beside the unfold to rank 0 (both through
    rank 1's egress at 5 bytes/µs each: in at 4000). As Open MPI's link trace shows it (docs/open-mpi.md)."""
    lay = ["fast", "slow", "medium"]
    got = _flows(lay, recursive_doubling_allreduce(3, M))
    assert got[(2, 1)] == pytest.approx((1000.0, 2000.0), rel=1e-9)
    assert got[(1, 2)] == pytest.approx((2000.0, 4000.0), rel=1e-9)
    # the fluid network keeps no handshake: the exchange flows both ways from 1000
    fluid = _flows(lay, recursive_doubling_allreduce(3, M), "maxmin")
    assert fluid[(2, 1)][0] == fluid[(1, 2)][0] == pytest.approx(1000.0)


def test_an_exchange_whose_request_came_behind_what_the_rank_waited_for_runs_both_ways():
    """Recursive doubling on 4 ranks. Rank 3 is done with its first exchange at 200 and asks the slow rank 1, whose
    ingress still holds rank 0's first-step vector (in at 1000): the request gets in behind it, after rank 1 has
    posted its own, and both vectors of that exchange flow at once, 1000-2000. Rank 2 asks the fast rank 0 at 200
    too, but nothing is queued in rank 0's ingress (rank 1 sends it 10 bytes/µs): rank 0 reads the request while it
    waits, and that exchange runs one way (as the link trace shows for hosts f1 and m1)."""
    got = _flows(["fast", "slow", "medium", "medium"], recursive_doubling_allreduce(4, M))
    assert got[(3, 1)] == got[(1, 3)] == pytest.approx((1000.0, 2000.0), rel=1e-9)
    assert got[(2, 0)] == pytest.approx((1000.0, 1200.0), rel=1e-9)
    assert got[(0, 2)] == pytest.approx((1200.0, 1400.0), rel=1e-9)
