"""The flow engine over message schedules (hnowmodel.schedules.flows, .flowrounds): trees compiled to steps give the
flow engine's bcast and scatter times exactly; hand-computed pairwise exchange, ring and rendezvous; the vectorised
evaluator equal to the event-driven one where no link is shared (no MPI)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hnowmodel import flow as F
from hnowmodel import schedules as S
from hnowmodel import trees as T
from hnowmodel.errors import InputError
from hnowmodel.layout import Layout
from hnowmodel.movement import ONE_DOWN, SUBTREE_DOWN, SUBTREE_UP
from hnowmodel.params import Nic, Profile, paper_profile
from hnowmodel.runopts import Schedule
from hnowmodel.schedules import MessageSchedule, Step, closed, flowrounds, flows
from hnowmodel.schedules.flowrounds import simulate_rounds
from hnowmodel.schedules.flows import evaluate, simulate
from hnowmodel.schedules.fromtree import from_tree
from tests.golden_corpus import DATA
from tests.helpers import any_tree, flow_profile, paper_shm_profile

GOLDEN_CLUSTER = str(DATA / "cluster_profile.json")
M = 1e6  # bytes


def _cluster() -> tuple[Profile, Layout]:
    prof = Profile.load(GOLDEN_CLUSTER)
    return prof, prof.host_layout


# three setups: the paper's testbed, the calibrated cluster (token buckets, NICs from its pairs; layout from its
# nodes), and hosts of several ranks (shared memory inside, one NIC per host)
SETUPS = {
    "paper": lambda: (paper_profile(), ["fast", "slow", "fast", "slow", "slow", "fast", "fast", "slow"]),
    "cluster": _cluster,
    "hosts": lambda: (
        paper_shm_profile(),
        Layout(["fast"] * 3 + ["slow"] * 2 + ["fast"] * 3, [0, 0, 0, 1, 1, 2, 2, 2]),
    ),
}
TREES = {
    "sequential": T.sequential,
    "chain": T.chain,
    "binomial": T.binomial,
    "binomial@2": lambda n: T.binomial(n, root=2),
    "kary:3": lambda n: T.kary(n, 3),
}
MOVES = {"one-down": ONE_DOWN, "subtree-down": SUBTREE_DOWN}  # bcast, scatter


def _with_copy(ms: MessageSchedule, tree: T.Tree, m: float, first: bool) -> MessageSchedule:
    """``ms`` with the root's copy of its own ``m``-byte block: in its first step (``first``, Open MPI), else in a
    step of its own after its last send (MPICH)."""
    cb = np.zeros(ms.n)
    cb[tree.root] = m
    steps = list(ms.steps)
    if first:
        s = steps[0]
        steps[0] = Step.of(s.src, s.dst, s.nbytes, s.reduce_bytes, copy_bytes=cb, waits=s.waits)
    else:
        last = max(k for k, s in enumerate(steps) if np.any(s.src == tree.root))
        steps.insert(last + 1, Step.of([], [], [], copy_bytes=cb))
    return MessageSchedule(ms.n, tuple(steps), ms.name)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


# ---- trees: the same numbers as flow.bcast / flow.scatter ----------------------------------------------------------
@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("tree_name", TREES)
@pytest.mark.parametrize("move", MOVES)
@pytest.mark.parametrize("sharing", ["maxmin", "weighted"])
def test_a_tree_as_steps_gives_the_flow_engines_times(setup, tree_name, move, sharing):
    prof, lay = SETUPS[setup]()
    tree = TREES[tree_name](len(lay))
    for m in (0.0, 1.0, 1000.0, 1e5, 1e6):
        ms = from_tree(tree, MOVES[move].edge_bytes(tree, m))
        ref = F.simulate(MOVES[move], prof, lay, tree, m, sharing=sharing)
        run = simulate(prof, lay, ms, sharing=sharing)
        _same(run.done_us, ref.done_us)
        assert run.completion_us == pytest.approx(ref.completion_us, rel=1e-12, abs=0)
        assert run.method == "events" and len(run.flows) == tree.n - 1


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("first", [False, True])
def test_the_roots_copy_as_a_step_gives_the_flow_engines_scatter(setup, first):
    """MPICH's copy after the sends is a step of its own; Open MPI's copy first is in the root's first step (the
    flow engine counts the root done once it posted its sends, this module once it copied: the root is left out)."""
    prof, lay = SETUPS[setup]()
    sched = Schedule(root_copy=True, copy_first=first)
    for tree in (T.binomial(len(lay)), T.sequential(len(lay), root=1)):
        for m in (1.0, 1e4, 1e6):  # a copy of 0 bytes is no copy in a schedule; the flow engine would pay Cc
            ms = _with_copy(from_tree(tree, SUBTREE_DOWN.edge_bytes(tree, m)), tree, m, first)
            ref = F.simulate(SUBTREE_DOWN, prof, lay, tree, m, sched)
            run = simulate(prof, lay, ms)
            keep = np.arange(tree.n) != tree.root if first else slice(None)
            _same(run.done_us[keep], ref.done_us[keep])
            assert run.completion_us == pytest.approx(ref.completion_us, rel=1e-12, abs=0)


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("tree_name", TREES)
def test_a_gather_tree_as_steps_gives_the_flow_engines_gather_in_tree_order(setup, tree_name):
    """Up a tree (from_tree toward the root: each parent receives its children one a step in send order) is the
    flow engine's gather with ``recv_order="tree"`` (eager messages flow when sent, a rendezvous one in its turn)."""
    prof, lay = SETUPS[setup]()
    tree = TREES[tree_name](len(lay))
    for m in (1.0, 1e4, 1e6):
        ms = from_tree(tree, SUBTREE_UP.edge_bytes(tree, m), toward_root=True)
        ref = F.simulate(SUBTREE_UP, prof, lay, tree, m, Schedule(recv_order="tree"))
        run = simulate(prof, lay, ms)
        _same(run.done_us, ref.done_us)
        assert run.completion_us == pytest.approx(ref.completion_us, rel=1e-12, abs=0)


@st.composite
def _tree_case(draw):
    n = draw(st.integers(2, 9))
    return any_tree(draw, n), draw(st.sampled_from(list(MOVES))), draw(st.sampled_from([10.0, 5e3, 2e5]))


@settings(max_examples=30, deadline=None)
@given(_tree_case())
def test_any_tree_as_steps_gives_the_flow_engines_times_on_the_cluster_profile(case):
    tree, move, m = case
    prof = Profile.load(GOLDEN_CLUSTER)
    lay = [prof.layout[i % len(prof.layout)] for i in range(tree.n)]
    ref = F.simulate(MOVES[move], prof, lay, tree, m)
    _same(simulate(prof, lay, from_tree(tree, MOVES[move].edge_bytes(tree, m))).done_us, ref.done_us)


def test_a_binomial_tree_written_by_hand():
    """binomial(8): 0 -> 4; then 0 -> 2 and 4 -> 6; then 0 -> 1, 2 -> 3, 4 -> 5, 6 -> 7."""
    steps = (Step.of([0], [4], M), Step.of([0, 4], [2, 6], M), Step.of([0, 2, 4, 6], [1, 3, 5, 7], M))
    ms = MessageSchedule(8, steps, "binomial bcast")
    for prof, lay in (SETUPS["paper"](), SETUPS["hosts"]()):
        _same(simulate(prof, lay, ms).done_us, F.bcast(prof, lay, T.binomial(8), [M], per_rank=True)[0])


# ---- hand-computed cases -------------------------------------------------------------------------------------------
def _equal_nodes(**kw) -> Profile:
    """Type ``f``: S = 3, R = 4, Xc = 20 µs, 100 bytes/µs on every link (and ``kw``: rendezvous, burst)."""
    return flow_profile({"f": 100.0}, S=3.0, R=4.0, Xc=20.0, **kw)


def test_a_pairwise_exchange_between_two_hosts_shares_their_nics():
    """Ranks 0, 1 on host A, 2, 3 on host B, each NIC 50 bytes/µs (below the pair's 100): 0 <-> 2 and 1 <-> 3 at
    once. 0 -> 2 and 1 -> 3 share A's egress and B's ingress, 2 -> 0 and 3 -> 1 B's egress and A's ingress:
    25 bytes/µs each. Every rank posts at S = 3, its message's last byte is through at 3 + M/25, delivered Xc = 20
    later, received R = 4 later."""
    prof = dataclasses.replace(_equal_nodes(), nic={"f": Nic(50.0, 50.0)})
    lay = Layout(["f"] * 4, hosts=[0, 0, 1, 1])
    both = MessageSchedule(4, (Step.of([0, 1, 2, 3], [2, 3, 0, 1], M),), "pairwise")
    want = 3 + M / 25 + 20 + 4
    # the tandem of queues too: A's egress serves both in turn, B's ingress passes them as they come (interleaved)
    for fn in (simulate, simulate_rounds, functools.partial(simulate, sharing="rr")):
        run = fn(prof, lay, both)
        assert run.done_us.tolist() == pytest.approx([want] * 4, rel=1e-12)
        assert run.posted_us.tolist() == [3.0] * 4
    # one pair alone has the NICs to itself: M/50
    alone = MessageSchedule(4, (Step.of([0, 2], [2, 0], M),), "one pair")
    assert simulate(prof, lay, alone).done_us.tolist() == pytest.approx([3 + M / 50 + 24, 0, 3 + M / 50 + 24, 0])


@pytest.mark.parametrize("repeat", [True, False])
def test_a_ring_of_four_equal_nodes(repeat):
    """Ring allgather on 4 ranks, hosts of their own: 3 steps, each rank sends its latest block to the next one.
    A step is S + M/100 + Xc + R (a rank sends once it has received: each link carries one flow at a time), so
    every rank is done at 3·(3 + M/100 + 20 + 4); the closed-form engine gives the same (X = Xc + M/100)."""
    i = np.arange(4)
    steps = (Step.of(i, (i + 1) % 4, M, repeat=3),) if repeat else tuple(Step.of(i, (i + 1) % 4, M) for _ in range(3))
    ring = MessageSchedule(4, steps, "ring")
    prof = _equal_nodes()
    want = 3 * (3 + M / 100 + 20 + 4)
    for fn in (simulate, simulate_rounds, functools.partial(simulate, sharing="rr")):
        assert fn(prof, ["f"] * 4, ring).done_us.tolist() == pytest.approx([want] * 4, rel=1e-12)
    assert closed.evaluate(prof, ["f"] * 4, ring) == pytest.approx(want, rel=1e-12)


def test_recursive_doubling_on_three_ranks():
    """MPICH's recursive doubling allreduce on 3 ranks (m = 1e4 bytes, γ = 0.02 µs/byte: a reduction takes 200 µs,
    a transfer 100): 0 -> 1 (reduced), then 1 <-> 2 (reduced), then 1 -> 0. Rank 2 has nothing to do in step 1, so
    its message to 1 flows from 3 beside 0's: they share rank 1's ingress and are both through at 3 + 200. Rank 1
    completes step 1 at T1 = 203 + 24 + 200 = 427, posts to 2 at T1 + 3 and completes 2's message at T1 + 7 + 200;
    rank 2 receives at T1 + 3 + 100 + 24 + 200; rank 1 posts to 0 at T1 + 210 (its egress free again) and rank 0
    holds the result at T1 + 210 + 100 + 24."""
    ms = S.recursive_doubling_allreduce(3, 1e4)
    run = simulate(_equal_nodes(), ["f"] * 3, ms, reduce_us_per_byte=0.02)
    t1 = 3 + 200 + 24 + 200
    assert run.done_us.tolist() == pytest.approx([t1 + 334, t1 + 207, t1 + 327], rel=1e-12)
    assert run.completion_us == pytest.approx(t1 + 334, rel=1e-12)


def test_a_rendezvous_message_waits_for_its_receiver():
    """Rank 1 first receives 2's message (step 1), then 0's (step 2). A rendezvous message (from 1000 bytes) of
    step 2 flows only once rank 1 has completed step 1's receive, T1 = 3 + M/100 + 20 + 4: it is done at
    T1 + M/100 + 24. Eager, both messages flow from 3 and share rank 1's ingress (50 bytes/µs each): both are
    through at 3 + 2M/100 and rank 1 receives them one after the other: + 24, then + 4."""
    m = 1e5
    ms = MessageSchedule(3, (Step.of([2], [1], m), Step.of([0], [1], m)), "two into one")
    t1 = 3 + m / 100 + 24
    run = simulate(_equal_nodes(rendezvous=1000), ["f"] * 3, ms)
    assert run.done_us[1] == pytest.approx(t1 + m / 100 + 24, rel=1e-12)
    late = next(f for f in run.flows if f.src == 0)
    assert late.rendezvous and late.start_us == pytest.approx(t1, rel=1e-12)
    assert simulate_rounds(_equal_nodes(rendezvous=1000), ["f"] * 3, ms).done_us[1] == pytest.approx(
        t1 + m / 100 + 24, rel=1e-12
    )
    eager = simulate(_equal_nodes(), ["f"] * 3, ms)
    assert eager.done_us[1] == pytest.approx(3 + 2 * m / 100 + 20 + 8, rel=1e-12)
    assert all(f.start_us == 3.0 and not f.rendezvous for f in eager.flows)


def test_a_pairs_messages_flow_one_after_another():
    """Rank 0 posts two messages to rank 1 (a batch of sends: steps that do not wait), at 3 and 6: one connection,
    so the second flows once the first is through (3 + M/100), not beside it."""
    ms = MessageSchedule(2, (Step.of([0], [1], M), Step.of([0], [1], M, waits=False)), "two to one")
    run = simulate(_equal_nodes(), ["f"] * 2, ms)
    got = [t for f in run.flows for t in (f.start_us, f.end_us)]  # flat: newer pytest's approx takes no nesting
    assert got == pytest.approx([3, 3 + M / 100, 3 + M / 100, 3 + 2 * M / 100])
    assert run.done_us[1] == pytest.approx(3 + 2 * M / 100 + 24, rel=1e-12)


def test_the_reduction_costs_gamma_per_byte_of_the_receivers_type():
    """Two ranks exchange M bytes and reduce them: S + M/12.5 + Xc + R of the paper, then γ·M (per type)."""
    prof = paper_profile()
    ms = MessageSchedule(2, (Step.of([0, 1], [1, 0], M, M),), "exchange-reduce")
    base = simulate(prof, ["fast", "slow"], ms).done_us
    for fn in (simulate, simulate_rounds):
        got = fn(prof, ["fast", "slow"], ms, reduce_us_per_byte={"fast": 1e-3, "slow": 2e-3}).done_us
        assert (got - base).tolist() == pytest.approx([1e-3 * M, 2e-3 * M], rel=1e-12)
        one = fn(prof, ["fast", "slow"], ms, reduce_us_per_byte=1e-3).done_us
        assert (one - base).tolist() == pytest.approx([1e-3 * M] * 2, rel=1e-12)


# ---- the vectorised evaluator against the event-driven one ------------------------------------------------------
def _ring(n: int, m: float) -> MessageSchedule:
    i = np.arange(n)
    return MessageSchedule(n, (Step.of(i, (i + 1) % n, m, repeat=n - 1),), "ring")


def _doubling(n: int, m: float) -> MessageSchedule:
    i = np.arange(n)
    return MessageSchedule(n, tuple(Step.of(i, i ^ (1 << k), m, m) for k in range(n.bit_length() - 1)), "rd")


@pytest.mark.parametrize(
    "prof",
    [_equal_nodes(), _equal_nodes(burst=4000.0), paper_profile()],
    ids=["equal", "equal+burst", "paper"],
)
@pytest.mark.parametrize("make", [_ring, _doubling])
def test_rounds_equal_events_where_no_link_is_shared(prof, make):
    """Equal nodes on hosts of their own: in a ring and in recursive doubling every link carries one flow at a
    time (a rank sends once it has received, and its partner sent at the same time), so the two evaluators agree
    (the burst included: every flow's two links hold the same tokens). The paper's two types have one network."""
    for n in (4, 8, 16):
        lay = ["f"] * n if "f" in prof.types else [("fast", "slow")[i % 2] for i in range(n)]
        for m in (100.0, 1e4, 1e6):
            ms = make(n, m)
            _same(simulate_rounds(prof, lay, ms).done_us, simulate(prof, lay, ms).done_us)


def test_rounds_skip_ahead_exactly_over_a_periodic_regime(monkeypatch):
    """A ring of 64 ranks on hosts of 4 (shared memory inside, fast and slow hosts): the repeated step is run a few
    times only, until its repetitions advance uniformly, and that gives what running all 63 gives."""
    prof = paper_shm_profile()
    hosts = np.arange(64) // 4
    lay = Layout([("fast", "slow")[h % 2] for h in hosts], hosts=hosts)
    ring = _ring(64, 1e4)
    every = simulate_rounds(prof, lay, ring, max_period=0)
    ran = []
    step = flowrounds._Rounds.step
    monkeypatch.setattr(flowrounds._Rounds, "step", lambda self, p: ran.append(1) or step(self, p))
    _same(simulate_rounds(prof, lay, ring).done_us, every.done_us)
    assert len(ran) < 63
    # a rank that copies and receives in the repeated step (its done time moved once per repetition)
    i = np.arange(4)
    both = MessageSchedule(4, (Step.of(i, (i + 1) % 4, 1e3, copy_bytes=[1e3] * 4, repeat=50),), "copy+ring")
    cluster = Profile.load(GOLDEN_CLUSTER)
    want = simulate(cluster, ["fast"] * 4, both).done_us
    _same(simulate_rounds(cluster, ["fast"] * 4, both).done_us, want)


# ---- the public choice and bad input -------------------------------------------------------------------------------
def test_evaluate_picks_events_for_small_schedules_and_rounds_beyond(monkeypatch):
    prof, ring = _equal_nodes(), _ring(4, 1e4)
    assert evaluate(prof, ["f"] * 4, ring).method == "events"
    assert evaluate(prof, ["f"] * 4, ring, method="rounds").method == "rounds"
    monkeypatch.setattr(flows, "EVENTS_UP_TO", ring.n_messages - 1)
    auto = evaluate(prof, ["f"] * 4, ring)
    assert auto.method == "rounds" and auto.flows == ()
    _same(auto.done_us, evaluate(prof, ["f"] * 4, ring, method="events").done_us)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"sharing": "fifo"}, "link sharing"),
        ({"method": "exact"}, "evaluation method"),
        ({"reduce_us_per_byte": -1.0}, "reduce_us_per_byte"),
        ({"reduce_us_per_byte": {"g": 1.0}}, "unknown node type"),
    ],
)
def test_bad_input_is_an_input_error(kw, match):
    with pytest.raises(InputError, match=match):
        evaluate(_equal_nodes(), ["f"] * 4, _ring(4, 10.0), **kw)


def test_a_layout_of_another_size_is_an_input_error():
    with pytest.raises(InputError, match="layout has 3 ranks"):
        simulate(_equal_nodes(), ["f"] * 3, _ring(4, 10.0))


def test_open_mpis_linear_reduce_takes_the_vectors_one_after_another_above_its_eager_limit():
    """Open MPI's linear reduce on 4 ranks: a fast root (300 bytes/µs in and out), three slow senders (100); the
    root receives from 3, then 2, then 1 (blocking), S = 3, R = 4, Xc = 20 µs. Above the profile's rendezvous size
    (Open MPI over TCP: 64 KiB, ``btl_tcp_eager_limit`` with its header; ob1 then sends nothing before the receive
    is matched) rank 2's vector flows only once the root has received 3's, and so on: 3 + 3·(m/100 + 20 + 4).
    Eager (an MPICH profile, which export_gain_ops used for Open MPI too) the three flow at once from 3, each at
    its sender's 100 within the root's 300: 3 + m/100 + 20, then one R each: about a third of the time."""
    m = 1e5
    ms = S.linear_reduce(4, m)
    lay = ["fast", "slow", "slow", "slow"]
    prof = flow_profile({"fast": 300.0, "slow": 100.0}, S=3.0, R=4.0, Xc=20.0, rendezvous=65536)
    assert simulate(prof, lay, ms).done_us[0] == pytest.approx(3 + 3 * (m / 100 + 24), rel=1e-12)
    eager = dataclasses.replace(prof, rendezvous_from_bytes=None)
    assert simulate(eager, lay, ms).done_us[0] == pytest.approx(3 + m / 100 + 20 + 3 * 4, rel=1e-12)


def test_open_mpis_binomial_reduce_posts_the_next_childs_receive_early():
    """Open MPI's binomial reduce on 4 ranks (children of 0: 1, then 2, whose child is 3), rendezvous vectors of
    m = 1e5 bytes; rank 1 slow (50 bytes/µs), the others 300; S = 3, R = 4, Xc = 20 µs. Rank 2 has 3's vector at
    3 + m/300 + 24 and posts its own to 0 at + 3. Open MPI posted 0's receive from 2 before it waited for 1
    (``prepost``): 2's vector flows at once, arrives at 716.67 and is taken right after 1's, received at
    3 + m/50 + 24 = 2027: done at 2031. MPICH's (no prepost) posts it only at 2027: 2027 + m/300 + 24."""
    m = 1e5
    lay = ["fast", "slow", "fast", "fast"]
    prof = flow_profile({"fast": 300.0, "slow": 50.0}, S=3.0, R=4.0, Xc=20.0, rendezvous=65536)
    ompi = S.binomial_reduce(4, m, prepost=True)
    assert all(st.prepost for st in ompi.steps) and not any(st.prepost for st in S.binomial_reduce(4, m).steps)
    for fn in (simulate, simulate_rounds, functools.partial(simulate, sharing="rr")):
        assert fn(prof, lay, ompi).done_us[0] == pytest.approx(2027 + 4, rel=1e-12)
        assert fn(prof, lay, S.binomial_reduce(4, m)).done_us[0] == pytest.approx(2027 + m / 300 + 24, rel=1e-12)
    # eager, the early receive changes nothing
    eager = dataclasses.replace(prof, rendezvous_from_bytes=None)
    assert simulate(eager, lay, ompi).done_us[0] == simulate(eager, lay, S.binomial_reduce(4, m)).done_us[0]
