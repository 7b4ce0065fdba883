"""A tree's run options (hnowmodel.runopts.Schedule) compiled by from_tree: fixed receive orders up a tree, messages
that wait for the posted receive (Step.rendezvous: relay_waits, sync) and segments down a tree (pipelining), under
both engines (no MPI).

Where the flow engine models the same thing (its gather with ``recv_order`` ``tree`` or ``smallest_first``,
``relay_waits``, ``sync``, ``root_copy``), the schedule's event-driven evaluation gives the same times (rtol 1e-12);
for that the evaluator sets an event where a rendezvous message is posted before its receiver has reached its step,
as the flow engine's gather offers the request there (the network notices a token bucket refilling only at its next
event: without it the calibrated cluster's gather with ``sync`` differed by up to 0.17 %)."""

from __future__ import annotations

import numpy as np
import pytest

from hnowmodel import flow as F
from hnowmodel import trees as T
from hnowmodel.errors import InputError
from hnowmodel.movement import SUBTREE_UP
from hnowmodel.params import Link, NodeType, Profile, paper_profile
from hnowmodel.runopts import Schedule
from hnowmodel.schedules import MessageSchedule, Step, closed
from hnowmodel.schedules.flowrounds import simulate_rounds
from hnowmodel.schedules.flows import simulate
from hnowmodel.schedules.fromtree import from_tree
from tests.golden_corpus import DATA
from tests.helpers import flow_profile

GOLDEN_CLUSTER = str(DATA / "cluster_profile.json")


def _cluster() -> tuple[Profile, list[str]]:
    prof = Profile.load(GOLDEN_CLUSTER)
    return prof, prof.host_layout  # the layout from its nodes


SETUPS = {
    "paper": lambda: (paper_profile(), ["fast", "slow", "fast", "slow", "slow", "fast", "fast", "slow"]),
    "cluster": _cluster,
}
TREES = {
    "sequential": T.sequential,
    "chain": T.chain,
    "binomial": T.binomial,
    "binomial@2": lambda n: T.binomial(n, root=2),
    "kary:3": lambda n: T.kary(n, 3),
}
FLAGS = [{}, {"relay_waits": True}, {"sync": True}, {"relay_waits": True, "root_copy": True}]


def _gather(tree: T.Tree, prof: Profile, m: float, recv_order: str, **kw) -> MessageSchedule:
    """The gather of ``tree`` at ``m`` bytes a rank as from_tree compiles it from a Schedule's fields."""
    return from_tree(
        tree, SUBTREE_UP.edge_bytes(tree, m), toward_root=True, recv_order=recv_order,
        relay_waits=kw.get("relay_waits", False), sync=kw.get("sync", False),
        rendezvous_from_bytes=prof.network_terms.struct_rendezvous_from,
        root_copy_bytes=m if kw.get("root_copy") else 0.0,
    )  # fmt: skip


# ---- equality with the flow engine's gather ------------------------------------------------------------------------
@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("tree_name", TREES)
@pytest.mark.parametrize("recv_order", ["tree", "smallest_first"])
def test_a_gather_with_its_options_as_steps_gives_the_flow_engines_gather(setup, tree_name, recv_order):
    prof, lay = SETUPS[setup]()
    tree = TREES[tree_name](len(lay))
    for kw in FLAGS:
        sched = Schedule(recv_order=recv_order, **kw)
        for m in (1.0, 1e4, 1e6):  # the cluster's struct rendezvous size is 37824 bytes: relays on both sides
            ref = F.simulate(SUBTREE_UP, prof, lay, tree, m, sched, sharing="maxmin")
            run = simulate(prof, lay, _gather(tree, prof, m, recv_order, **kw), sharing="maxmin")
            np.testing.assert_allclose(run.done_us, ref.done_us, rtol=1e-12, atol=0)
            assert run.completion_us == pytest.approx(ref.completion_us, rel=1e-12, abs=0)


# ---- receive orders -----------------------------------------------------------------------------------------------
def _pairs(ms: MessageSchedule) -> list[tuple[int, int]]:
    msgs = ms.messages()
    return [(int(a), int(b)) for a, b in zip(msgs["src"], msgs["dst"], strict=True)]


def test_smallest_first_takes_the_smallest_subtree_first_ties_in_reverse_send_order():
    """binomial(8): the root's children 4 (4 ranks), 2 (2), 1 (1) are received 1, 2, 4 (in send order: 4, 2, 1);
    sequential(4): three leaves, received in reverse send order 3, 2, 1."""
    up = from_tree(T.binomial(8), 1.0, toward_root=True, recv_order="smallest_first")
    into_root = [a for a, b in _pairs(up) if b == 0]
    assert into_root == [1, 2, 4]
    tree_order = from_tree(T.binomial(8), 1.0, toward_root=True)
    assert [a for a, b in _pairs(tree_order) if b == 0] == [4, 2, 1]
    seq = from_tree(T.sequential(4), 1.0, toward_root=True, recv_order="smallest_first")
    assert _pairs(seq) == [(3, 0), (2, 0), (1, 0)]


@pytest.mark.parametrize("order", ["posted", "arrival"])
def test_receive_orders_that_follow_arrivals_are_refused(order):
    with pytest.raises(InputError, match="arrival times"):
        from_tree(T.binomial(4), 1.0, toward_root=True, recv_order=order)
    # down a tree a rank receives once: the order says nothing and is not refused
    assert from_tree(T.binomial(4), 1.0, recv_order=order).n_messages == 3


# ---- messages that wait for the posted receive ---------------------------------------------------------------------
def test_relay_waits_marks_a_relays_message_from_the_threshold_and_sync_marks_every_message():
    """binomial(8) gather of 1 byte a rank: relays 2 -> 0 (2 bytes), 4 -> 0 (4), 6 -> 4 (2); from 3 bytes only
    4 -> 0 waits; leaves never. ``sync``: every message, down a tree too."""
    tree = T.binomial(8)
    up = from_tree(tree, SUBTREE_UP.edge_bytes(tree, 1.0), toward_root=True, relay_waits=True, rendezvous_from_bytes=3)
    msgs = up.messages()
    flagged = msgs["rendezvous"]
    assert list(zip(msgs["src"][flagged].tolist(), msgs["dst"][flagged].tolist(), strict=True)) == [(4, 0)]
    every = from_tree(tree, SUBTREE_UP.edge_bytes(tree, 1.0), toward_root=True, relay_waits=True)
    assert sorted(every.messages()["src"][every.messages()["rendezvous"]].tolist()) == [2, 4, 6]
    for toward_root in (True, False):
        assert from_tree(tree, 5.0, toward_root=toward_root, sync=True).messages()["rendezvous"].all()
    assert not from_tree(tree, 5.0, toward_root=True).messages()["rendezvous"].any()


def test_a_marked_message_waits_for_its_receiver_in_both_engines():
    """Rank 1 receives 2's message (step 0), then 0's (step 1, marked). S = 1, R = 2, X = 5 + 0.01·b µs (the flow
    engine: Xc = 5, 100 bytes/µs), 1000 bytes: 2's message is received at 1 + 15 + 2 = 18; marked, 0's flows only
    then (rank 1 reaches step 1 once that receive is complete): 18 + 15 + 2 = 35. Unmarked it arrives at 16 and is
    received at 18 + 2 = 20 (closed form; in the flow engine both share rank 1's ingress)."""
    m = 1000.0
    marked = MessageSchedule(3, (Step.of([2], [1], m), Step.of([0], [1], m, rendezvous=True)), "marked")
    plain = MessageSchedule(3, (Step.of([2], [1], m), Step.of([0], [1], m)), "plain")
    prof = Profile({"f": NodeType("f", 1, 0, 2, 0)}, Link(5, 0.01))
    assert closed.evaluate(prof, ["f"] * 3, marked, per_rank=True).tolist() == pytest.approx([0, 35, 0], rel=1e-12)
    assert closed.evaluate(prof, ["f"] * 3, plain, per_rank=True).tolist() == pytest.approx([0, 20, 0], rel=1e-12)
    fprof = flow_profile({"f": 100.0}, S=1.0, R=2.0, Xc=5.0)
    for fn in (simulate, simulate_rounds):
        assert fn(fprof, ["f"] * 3, marked).done_us.tolist() == pytest.approx([0, 35, 0], rel=1e-12)
    late = next(f for f in simulate(fprof, ["f"] * 3, marked).flows if f.src == 0)
    assert late.rendezvous and late.start_us == pytest.approx(18.0, rel=1e-12)
    # a receiver that reached its step already: the mark changes nothing
    early = MessageSchedule(2, (Step.of([0], [1], m, rendezvous=True),), "early")
    assert closed.evaluate(prof, ["f"] * 2, early) == pytest.approx(1 + 15 + 2, rel=1e-12)


# ---- segments (a pipelined tree) -----------------------------------------------------------------------------------
def test_a_chain_in_two_segments_under_the_closed_form():
    """chain(3), 2000 bytes in two segments of 1000: S = 0.01·b, R = 0.02·b, X = 5 + 0.001·b µs, so a segment's
    S = 10, X = 6, R = 20. Rank 1 holds segment 0 at 10 + 6 + 20 = 36 and passes it on (posted 46, at rank 2 at
    52, received 72); segment 1 (posted by the root at 20, at rank 1 at 26) is received at 46 + 20 = 66, passed on
    at 76, at rank 2 at 82, received at 102 = 3S + 2X + 3R of a segment: three sends and receives of a segment, not
    the four of the whole message twice (2·(20 + 7 + 40) = 134)."""
    prof = Profile({"f": NodeType("f", 0, 0.01, 0, 0.02)}, Link(5, 0.001))
    piped = from_tree(T.chain(3), 2000.0, segment_bytes=1000)
    assert closed.evaluate(prof, ["f"] * 3, piped, per_rank=True).tolist() == pytest.approx([0, 66, 102], rel=1e-12)
    assert closed.evaluate(prof, ["f"] * 3, from_tree(T.chain(3), 2000.0)) == pytest.approx(134, rel=1e-12)


def test_a_pairs_segments_take_its_wire_one_after_another_under_the_closed_form():
    """chain(3), 2000 bytes in two segments, S = 1, R = 2, X = 5 + 0.01·b µs: a segment's wire time W = 10,
    X = 15. Segment 0 is on 0 -> 1's wire 1..11 (received at 18), segment 1, posted at 2, only 11..21 (arrives 26,
    received max(18, 19, 26) + 2 = 28: rank 1 posted segment 0 to rank 2 at 18 + 1); rank 1's segment 0 is on its
    wire 19..29 (received at 34 + 2 = 36), segment 1 posted at 29, wire 29..39, received at 44 + 2 = 46. Each its
    own wire, segment 1 would be at rank 1 at 17, received at 21 and at rank 2 at 22 + 15 + 2 = 39; unsegmented,
    2·(1 + 25 + 2) = 56."""
    prof = Profile({"f": NodeType("f", 1, 0, 2, 0)}, Link(5, 0.01))
    piped = from_tree(T.chain(3), 2000.0, segment_bytes=1000)
    assert closed.evaluate(prof, ["f"] * 3, piped, per_rank=True).tolist() == pytest.approx([0, 28, 46], rel=1e-12)
    assert closed.evaluate(prof, ["f"] * 3, from_tree(T.chain(3), 2000.0)) == pytest.approx(56, rel=1e-12)


def test_a_chain_in_two_segments_under_the_flow_engine():
    """chain(3), hosts of their own, S = 3, R = 4, Xc = 20 µs, 100 bytes/µs, 2e5 bytes in two segments (T = 1000 µs
    each): segment 0 reaches rank 1 at 3 + T + 24 = 1027, segment 1 queues behind it on the pair (1003..2003) and
    is received at 2027; rank 1 passes segment 0 on at 1030 (through its own links, beside segment 1) and segment 1
    at 2030: rank 2 holds it at 2030 + T + 24 = 3T + 54, where the whole message takes 2·(3 + 2T + 24) = 4T + 54."""
    prof, t = flow_profile({"f": 100.0}, S=3.0, R=4.0, Xc=20.0), 1000.0
    piped = from_tree(T.chain(3), 2e5, segment_bytes=100_000)
    for fn in (simulate, simulate_rounds):
        assert fn(prof, ["f"] * 3, piped).done_us.tolist() == pytest.approx([0, 2 * t + 27, 3 * t + 54], rel=1e-12)
    whole = simulate(prof, ["f"] * 3, from_tree(T.chain(3), 2e5))
    assert whole.completion_us == pytest.approx(4 * t + 54, rel=1e-12)


def test_segments_follow_mpichs_order_receive_then_pass_on_to_each_child():
    """binomial(4) in two segments: the root sends segment 0 to 2 then 1, segment 1 to 2 then 1; rank 2 receives a
    segment, then passes it to 3. Each rank's messages in step order; a relay's first send of a segment and every
    later segment's receive wait, the root's sends do not."""
    ms = from_tree(T.binomial(4), 20.0, segment_bytes=10)
    msgs = ms.messages()
    per = {r: [(int(s), int(a), int(b)) for s, a, b in zip(msgs["step"], msgs["src"], msgs["dst"], strict=True)
               if r in (a, b)] for r in (0, 2)}  # fmt: skip
    assert [(a, b) for _, a, b in per[0]] == [(0, 2), (0, 1), (0, 2), (0, 1)]
    assert [(a, b) for _, a, b in per[2]] == [(0, 2), (2, 3), (0, 2), (2, 3)]
    assert msgs["nbytes"].tolist() == [10.0] * 6
    assert [s.waits for s in ms.steps] == [False, True, True, True]
    # a message of segment_bytes or fewer is one segment: the tree unsegmented
    one, plain = from_tree(T.binomial(4), 20.0, segment_bytes=64), from_tree(T.binomial(4), 20.0)
    assert _pairs(one) == _pairs(plain) and [s.waits for s in one.steps] == [s.waits for s in plain.steps]
    # the last segment carries the rest
    assert from_tree(T.chain(2), 25.0, segment_bytes=10).messages()["nbytes"].tolist() == [10.0, 10.0, 5.0]


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"segment_bytes": 10, "toward_root": True}, "down a tree only"),
        ({"segment_bytes": -1}, "whole number"),
        ({"segment_bytes": 1.5}, "whole number"),
        ({"relay_waits": True}, "up a tree"),
        ({"relay_waits": True, "toward_root": True, "rendezvous_from_bytes": float("nan")}, "rendezvous_from_bytes"),
        ({"recv_order": "lifo"}, "unknown receive order"),
    ],
)
def test_bad_options_are_input_errors(kw, match):
    with pytest.raises(InputError, match=match):
        from_tree(T.binomial(4), 10.0, **kw)


def test_segments_of_a_scatter_are_refused():
    """A scatter's edges carry different bytes: which segment a relay passes on first is not a prefix of what it
    received, so segments model a bcast only."""
    tree = T.binomial(4)
    with pytest.raises(InputError, match="one byte count on every edge"):
        from_tree(tree, tree.subtree_size * 10.0, segment_bytes=10)
