"""The closed-form engine over message schedules (hnowmodel.schedules.closed) and trees compiled to schedules
(hnowmodel.schedules.fromtree): hand-computed cases (a 4-rank ring allgather, a 3-rank recursive-doubling allreduce,
a reduce followed by a bcast, local copies), and the paper's equations: a bcast or scatter tree of every family,
compiled and evaluated, gives hnowmodel.predict's number (rtol 1e-12) on the paper profile, on a measured piecewise
profile and on hosts with shared memory.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hnowmodel import ops, treespec
from hnowmodel import predict as P
from hnowmodel import schedules as S
from hnowmodel.errors import InputError, LayoutError, ProfileError
from hnowmodel.layout import Layout
from hnowmodel.params import Link, LinkRegime, NodeType, Profile, Regime, ShmCosts, paper_profile
from hnowmodel.runopts import Schedule
from hnowmodel.schedules.closed import evaluate
from hnowmodel.schedules.steps import MessageSchedule, Step
from hnowmodel.trees import binomial, make_tree, sequential, tree_names
from tests.golden_corpus import load, profiles
from tests.helpers import any_tree

PAPER = paper_profile()
REALMPI = Profile.load(Path(__file__).parent.parent / "data" / "golden" / "realmpi_profile.json")  # piecewise
SHM = {
    "fast": ShmCosts(NodeType("fast", 5, 0.001, 4, 0.002), Link(1, 0.0005)),
    "slow": ShmCosts(NodeType("slow", 8, 0.002, 10, 0.001), Link(2, 0.001)),
}
HOSTS = dataclasses.replace(PAPER, shm=SHM)
# the paper profile at 1000 bytes, fast nodes: S = 60 + 50 = 110, X = 16 + 80 = 96, R = 94 + 30 = 124 (µs)
S_F, X_F, R_F = 110.0, 96.0, 124.0


def test_ring_allgather_on_4_equal_nodes_by_hand():
    # each of the 3 steps: a rank sends once it has received (S), the wire (X), the receive (R); all in lockstep
    s = S.ring_allgather(4, 1000)
    assert evaluate(PAPER, ["fast"] * 4, s) == pytest.approx(3 * (S_F + X_F + R_F), rel=1e-12)  # 990
    assert evaluate(PAPER, ["fast"] * 4, s, per_rank=True).tolist() == [990.0] * 4


def test_recursive_doubling_allreduce_on_3_ranks_by_hand():
    # gamma 0.01 µs/byte: a reduction of 1000 bytes costs 10 µs on top of R
    # step 1: 0 -> 1: posted 110, arrives 206, rank 1 done 206 + 124 + 10 = 340
    # step 2: 1 <-> 2: rank 1 posts at 340 + 110 = 450, rank 2 at 110; rank 2 done max(110, 450 + 96) + 134 = 680,
    #         rank 1 done max(340, 450, 110 + 96) + 134 = 584
    # step 3: 1 -> 0: posted max(450, 584) + 110 = 694, arrives 790, rank 0 done 790 + 124 = 914 (no reduction)
    s = S.recursive_doubling_allreduce(3, 1000)
    got = evaluate(PAPER, ["fast"] * 3, s, reduce_us_per_byte=0.01, per_rank=True)
    assert got.tolist() == pytest.approx([914.0, 584.0, 680.0], rel=1e-12)
    assert evaluate(PAPER, ["fast"] * 3, s, reduce_us_per_byte={"fast": 0.01}) == pytest.approx(914.0, rel=1e-12)


def test_reduce_then_bcast_by_hand():
    # binomial reduce on 3: 1 -> 0 (done 110 + 96 + 124 + 10 = 340), 2 -> 0 (arrives 206: done 340 + 134 = 474);
    # binomial bcast: 0 -> 2 (posted 474 + 110 = 584, done 584 + 96 + 124 = 804), 0 -> 1 (posted 694, done 914)
    s = S.reduce_bcast_allreduce(3, 1000)
    got = evaluate(PAPER, ["fast"] * 3, s, reduce_us_per_byte=0.01, per_rank=True)
    assert got.tolist() == pytest.approx([474.0, 914.0, 804.0], rel=1e-12)
    assert evaluate(PAPER, ["fast"] * 3, s, reduce_us_per_byte=0.01) == pytest.approx(914.0, rel=1e-12)


def test_linear_reduce_by_hand():
    # Open MPI's linear reduce on 3 fast ranks, 1000 B, γ 0.01 µs/B: ranks 2 and 1 both send at 0 (S 110), both
    # messages arrive at 206; the root takes rank 2's first (206 + 124 + 10 = 340), then rank 1's (474). The same as
    # the binomial reduce on 3 ranks (test_reduce_then_bcast_by_hand), where rank 1's arrives first
    got = evaluate(PAPER, ["fast"] * 3, S.linear_reduce(3, 1000), reduce_us_per_byte=0.01, per_rank=True)
    assert got[0] == pytest.approx(474.0, rel=1e-12)
    assert evaluate(PAPER, ["fast"] * 3, S.linear_reduce(3, 1000), reduce_us_per_byte=0.01) == pytest.approx(474.0)


def test_local_copies_by_hand():
    # Bruck alltoall on 2 ranks, 100-byte blocks, copy line 1 + 0.01/byte: first step copies 2 + 1 blocks (4 µs),
    # then S 65, X 24, R 97: done 4 + 65 + 24 + 97 = 190; the last step copies 4 blocks (5 µs): 195
    fast = dataclasses.replace(PAPER.types["fast"], Cc_us=1.0, Cm_us_per_byte=0.01, regimes=())
    prof = dataclasses.replace(PAPER, types={"fast": fast, "slow": PAPER.types["slow"]})
    assert evaluate(prof, ["fast"] * 2, S.bruck_alltoall(2, 100)) == pytest.approx(195.0, rel=1e-12)


def test_a_step_that_does_not_wait_sends_at_once():
    # scattered alltoall on 3 fast ranks at 0 bytes: the second send follows the first (S = 60 each), not its
    # receive. Receives: 60 + 16 + 94 = 170, then max(170, 120 + 16) + 94 = 264
    assert evaluate(PAPER, ["fast"] * 3, S.scattered_alltoall(3, 0)) == pytest.approx(264.0, rel=1e-12)
    # the pairwise exchange waits: 170, then 170 + 170
    assert evaluate(PAPER, ["fast"] * 3, S.pairwise_alltoall(3, 0)) == pytest.approx(340.0, rel=1e-12)


def test_shared_memory_between_ranks_of_one_host():
    # ring on 2 hosts x 2 fast ranks at 0 bytes: 0 -> 1 and 2 -> 3 by shared memory (5 + 1 + 4 = 10), 1 -> 2 and
    # 3 -> 0 over the network (60 + 16 + 94 = 170). Ranks 0 and 2 are done at 170; ranks 1 and 3 first post their
    # network send (S 60), then complete the shared-memory receive that arrived at 6: 60 + 4 = 64
    lay = Layout(["fast"] * 4, hosts=[0, 0, 1, 1])
    one = MessageSchedule(4, (Step.of([0, 1, 2, 3], [1, 2, 3, 0], 0.0),))
    assert evaluate(HOSTS, lay, one, per_rank=True).tolist() == [170.0, 64.0, 170.0, 64.0]
    with pytest.raises(ProfileError, match="shared-memory"):
        evaluate(PAPER, lay, one)


def test_repeated_ring_settles_to_its_unrolled_value_on_hosts():
    lay = Layout(["fast"] * 16 + ["slow"] * 16, hosts=np.repeat(np.arange(8), 4))
    for m in (0, 1000, 100000):
        s = S.ring_allgather(32, m)
        flat = MessageSchedule(32, tuple(s.unrolled()))
        for prof in (HOSTS,):
            got = evaluate(prof, lay, s, per_rank=True)
            np.testing.assert_allclose(got, evaluate(prof, lay, flat, per_rank=True), rtol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_repeated_steps_settle_to_their_unrolled_value(seed):
    # random repeated steps (some ranks idle, some only sending or only receiving, copies, steps that do not wait)
    # on hosts with shared memory: the max-plus shortcut gives the number of running every repetition
    rng = np.random.default_rng(seed)
    n = 10
    lay = Layout([str(t) for t in rng.choice(["fast", "slow"], 5).repeat(2)], hosts=np.arange(10) // 2)
    steps = []
    for _ in range(3):
        k = int(rng.integers(1, n + 1))
        src, dst = rng.permutation(n)[:k], rng.permutation(n)[:k]
        keep = src != dst
        copy = rng.choice([0.0, 500.0], n) if rng.random() < 0.3 else None
        steps.append(
            Step.of(src[keep], dst[keep], rng.uniform(0, 5000, keep.sum()), rng.uniform(0, 100, keep.sum()),
                    copy_bytes=copy, waits=bool(rng.random() < 0.7), repeat=int(rng.integers(1, 40)))
        )  # fmt: skip
    fast = dataclasses.replace(HOSTS.types["fast"], Cc_us=3.0, Cm_us_per_byte=0.002, regimes=())
    prof = dataclasses.replace(HOSTS, types={"fast": fast, "slow": HOSTS.types["slow"]})
    s = MessageSchedule(n, tuple(steps))
    flat = MessageSchedule(n, tuple(s.unrolled()))
    got = evaluate(prof, lay, s, reduce_us_per_byte=0.003, per_rank=True)
    np.testing.assert_allclose(got, evaluate(prof, lay, flat, reduce_us_per_byte=0.003, per_rank=True), rtol=1e-12)
    assert evaluate(prof, lay, s) == pytest.approx(evaluate(prof, lay, flat), rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_repeated_permutation_steps_settle_to_their_unrolled_value(seed):
    # every rank sends one message and receives one (a ring's shape, here random derangements) runs on the engine's
    # message-order loop: the same numbers as running every repetition of the general rules
    rng = np.random.default_rng(100 + seed)
    n = 12
    lay = Layout([str(t) for t in rng.choice(["fast", "slow"], 6).repeat(2)], hosts=np.arange(n) // 2)
    steps = []
    for _ in range(2):
        src = rng.permutation(n)
        dst = np.roll(src, int(rng.integers(1, n)))  # a derangement: src[i] -> dst[i], never to itself
        steps.append(
            Step.of(src, dst, rng.uniform(0, 5000, n), rng.uniform(0, 100, n), repeat=int(rng.integers(2, 60)))
        )
    s = MessageSchedule(n, (Step.of([0], [1], 100.0), *steps))
    flat = MessageSchedule(n, tuple(s.unrolled()))
    got = evaluate(HOSTS, lay, s, reduce_us_per_byte=0.003, per_rank=True)
    np.testing.assert_allclose(got, evaluate(HOSTS, lay, flat, reduce_us_per_byte=0.003, per_rank=True), rtol=1e-12)
    assert evaluate(HOSTS, lay, s) == pytest.approx(evaluate(HOSTS, lay, flat), rel=1e-12)


def test_evaluate_refuses_bad_input():
    s = S.ring_allgather(3, 8)
    with pytest.raises(LayoutError, match="3"):
        evaluate(PAPER, ["fast"] * 4, s)
    with pytest.raises(InputError, match="unknown node type"):
        evaluate(PAPER, ["fast"] * 3, s, reduce_us_per_byte={"medium": 0.1})
    with pytest.raises(InputError, match=">= 0"):
        evaluate(PAPER, ["fast"] * 3, s, reduce_us_per_byte=-1.0)
    with pytest.raises(InputError, match="MessageSchedule"):
        evaluate(PAPER, ["fast"] * 3, binomial(3))


# ---- the paper's equations: every tree family ----------------------------------------------------------------
FAMILIES = [t for t in tree_names() if not t.startswith("@")]
SIZES = [0, 100, 1000, 5000, 70000]


def _families():
    for spec in FAMILIES:  # "kary:K" -> "kary:3", "hosts[:INTER[/INTRA]]" -> "hosts"
        name, _, arg = spec.split("[")[0].partition(":")
        yield f"{name}:3" if arg == "K" else name


@pytest.mark.parametrize("family", list(_families()))
@pytest.mark.parametrize("prof", [PAPER, REALMPI], ids=["paper", "realmpi"])
def test_bcast_and_scatter_trees_are_the_paper_equations(family, prof):
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 9, 16):
        lay = [str(t) for t in rng.choice(["fast", "slow"], n)]
        for root in sorted({0, n - 1}):
            tree = make_tree(family, n, root=root, layout=lay, profile=prof)
            for m in SIZES:
                bc = evaluate(prof, lay, S.from_tree(tree, m), per_rank=True)
                np.testing.assert_allclose(bc, P.bcast(prof, lay, tree, [m], per_rank=True)[0], rtol=1e-12)
                sc = evaluate(prof, lay, S.from_tree(tree, tree.subtree_size * m), per_rank=True)
                np.testing.assert_allclose(sc, P.scatter(prof, lay, tree, [m], per_rank=True)[0], rtol=1e-12)
                assert evaluate(prof, lay, S.from_tree(tree, m)) == pytest.approx(
                    P.bcast(prof, lay, tree, [m])[0], rel=1e-12
                )


@pytest.mark.parametrize("family", ["binomial", "sequential", "chain", "kary:3", "hosts", "mpich-smp", "ompi-han"])
def test_bcast_and_scatter_trees_on_hosts(family):
    lay = Layout(["fast"] * 6 + ["slow"] * 6, hosts=[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    tree = make_tree(family, 12, root=4, layout=lay, profile=HOSTS)
    for m in SIZES:
        bc = evaluate(HOSTS, lay, S.from_tree(tree, m), per_rank=True)
        np.testing.assert_allclose(bc, P.bcast(HOSTS, lay, tree, [m], per_rank=True)[0], rtol=1e-12)
        sc = evaluate(HOSTS, lay, S.from_tree(tree, tree.subtree_size * m), per_rank=True)
        np.testing.assert_allclose(sc, P.scatter(HOSTS, lay, tree, [m], per_rank=True)[0], rtol=1e-12)


@pytest.mark.parametrize("family", ["binomial", "sequential", "kary:3", "chain", "ompi-binomial"])
def test_scatter_with_the_roots_copy_is_the_paper_equations(family):
    # the root copies its own block after its sends (MPICH) or before them (Open MPI: everyone else is C later)
    types = {k: dataclasses.replace(t, Cc_us=7.0, Cm_us_per_byte=0.03, regimes=()) for k, t in PAPER.types.items()}
    prof = dataclasses.replace(PAPER, types=types)
    lay = ["slow", "fast", "fast", "slow", "fast", "slow", "slow"]
    tree = make_tree(family, 7, root=3)
    for m in SIZES[1:]:  # a copy of 0 bytes is no copy here, while eq. 8-9's root copy costs Cc even then
        for first in (False, True):
            sched = S.from_tree(tree, tree.subtree_size * m, root_copy_bytes=m, copy_first=first)
            want = P.scatter(prof, lay, tree, [m], Schedule(root_copy=True, copy_first=first), per_rank=True)[0]
            got = evaluate(prof, lay, sched, per_rank=True)
            others = np.arange(7) != 3
            np.testing.assert_allclose(got[others], want[others], rtol=1e-12)
            assert evaluate(prof, lay, sched) == pytest.approx(want.max(), rel=1e-12)
            if not first:  # the root is done once it has copied, after its sends (copy first: its done clock is
                # the copy's end, its sends come after; the completion above is the same)
                assert got[3] == pytest.approx(want[3], rel=1e-12)
    lone = S.from_tree(make_tree("binomial", 1), 0.0, root_copy_bytes=100.0)
    assert evaluate(prof, ["fast"], lone) == pytest.approx(7.0 + 3.0, rel=1e-12)
    zero = S.from_tree(tree, 0.0, root_copy_bytes=0.0)
    want = P.scatter(prof, lay, tree, [0], Schedule(root_copy=True), per_rank=True)[0]
    got = evaluate(prof, lay, zero, per_rank=True)  # no copy: the root, which only sends, is done at 0
    np.testing.assert_allclose(got[others], want[others], rtol=1e-12)
    assert got[3] == 0.0 and want[3] > 7.0


def test_golden_corpus_bcast_and_scatter_through_schedules():
    # every closed-form (paper) bcast and scatter case of the golden corpus - trees of every family, per-rank
    # times, the libraries' pinned natives with their root copies and common-start extras - compiled to a schedule
    # and evaluated: the recorded number (rtol 1e-12). Gather is not among them: eq. 12 queues a parent's messages
    # on its inbound link (i·X) and takes them in arrival order; a schedule fixes the order of the receives.
    profs, checked = profiles(), 0
    for row in load():
        c = row["case"]
        if c["kind"] not in ("predict", "per_rank", "native") or c["op"] == "gather" or c.get("variant") != "paper":
            continue
        prof, layout, sizes = profs[c["profile"]]
        if c["kind"] == "native":
            nat = next(a for a in ops.native_choices(c["op"], c["library"]) if a.algorithm == c["algorithm"])
            assert not nat.varies
            tree, sched = make_tree(nat.model_tree, len(layout), root=0, layout=layout), nat.schedule
        else:
            spec = treespec.parse_spec(c["tree"])
            tree = treespec.resolve(spec, len(layout), root=c["root"], layout=layout, profile=prof)
            sched = Schedule()
        got = []
        for m in sizes:
            if c["op"] == "bcast":
                s = S.from_tree(tree, m)
            else:
                copy = m if sched.root_copy else 0.0
                s = S.from_tree(tree, tree.subtree_size * m, root_copy_bytes=copy, copy_first=sched.copy_first)
            per_rank = c["kind"] == "per_rank"
            extra = 0.0 if per_rank else sched.extra_us(prof, [m])[0]
            got.append(np.asarray(evaluate(prof, layout, s, per_rank=per_rank)) + extra)
        np.testing.assert_allclose(np.ravel(got), row["values"], rtol=1e-12, err_msg=str(c))
        checked += 1
    assert checked == 306  # 84 + 84 tree cases, 3 + 3 per-rank, 120 + 12 natives


_cost = st.floats(0, 200, allow_nan=False).map(lambda v: round(v, 2))
_per_byte = st.floats(0, 0.5, allow_nan=False).map(lambda v: round(v, 4))


def _lines(draw, bounds=(1000, None)):
    return [(b, draw(_cost), draw(_per_byte)) for b in bounds]


@st.composite
def random_cases(draw):
    """A random piecewise profile (1-3 types split at 1000 bytes, per-pair links, copy lines, shared memory), a
    layout of random hosts (ranks maybe interleaved) and a tree of any family or shape."""
    names = ["a", "b", "c"][: draw(st.integers(1, 3))]
    types, shm = {}, {}
    for t in names:
        s_, r_, c_ = _lines(draw), _lines(draw), _lines(draw)
        types[t] = NodeType.piecewise(t, [Regime(s[0], s[1], s[2], r[1], r[2], c[1], c[2]) for s, r, c in
                                          zip(s_, r_, c_, strict=True)])  # fmt: skip
        xs, ss, rs = _lines(draw, (500, None)), _lines(draw, (500, None)), _lines(draw, (500, None))
        shm[t] = ShmCosts(
            NodeType.piecewise(t, [Regime(a[0], a[1], a[2], b[1], b[2]) for a, b in zip(ss, rs, strict=True)]),
            Link.piecewise([LinkRegime(*x) for x in xs]),
        )
    links = {(x, y): Link.piecewise([LinkRegime(*v) for v in _lines(draw, (4000, None))])
             for x in names for y in names if draw(st.booleans())}  # fmt: skip
    prof = Profile(types, Link.piecewise([LinkRegime(*v) for v in _lines(draw)]), links, shm=shm)
    slots = draw(st.lists(st.integers(1, 4), min_size=1, max_size=6))
    host_types = [draw(st.sampled_from(names)) for _ in slots]
    layout = Layout([t for t, k in zip(host_types, slots, strict=True) for _ in range(k)],
                    [h for h, k in enumerate(slots) for _ in range(k)])  # fmt: skip
    if draw(st.booleans()):
        layout = layout.take(draw(st.permutations(range(len(layout)))))
    return prof, layout, any_tree(draw, len(layout))


@settings(max_examples=60, deadline=None)
@given(random_cases())
def test_random_trees_and_profiles_are_the_paper_equations(case):
    prof, layout, tree = case
    for m in (0, 7, 300, 1000, 1001, 5000):
        want = P.bcast(prof, layout, tree, [m], per_rank=True)[0]
        np.testing.assert_allclose(evaluate(prof, layout, S.from_tree(tree, m), per_rank=True), want, rtol=1e-12)
        sub = tree.subtree_size * m
        want = P.scatter(prof, layout, tree, [m], per_rank=True)[0]
        np.testing.assert_allclose(evaluate(prof, layout, S.from_tree(tree, sub), per_rank=True), want, rtol=1e-12)
        if m:  # the root's copy of its own block, after its sends
            want = P.scatter(prof, layout, tree, [m], Schedule(root_copy=True), per_rank=True)[0]
            got = evaluate(prof, layout, S.from_tree(tree, sub, root_copy_bytes=m), per_rank=True)
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_binomial_bcast_generator_is_the_binomial_tree():
    lay = ["fast", "slow", "slow", "fast", "slow", "fast", "fast"]
    for m in SIZES:
        want = P.bcast(REALMPI, lay, binomial(7, 2), [m], per_rank=True)[0]
        np.testing.assert_allclose(evaluate(REALMPI, lay, S.binomial_bcast(7, m, 2), per_rank=True), want, rtol=1e-12)


def test_gather_tree_receives_in_send_order_not_arrival_order():
    # sequential(3) with a slow first child: the schedule receives 1 (slow: S 90) before 2 (fast: S 60):
    # 90 + 16 + 94 = 200, then max(200, 76) + 94 = 294. Eq. 12 takes them in arrival order: 76 + 94 = 170, then
    # max(170, 90 + 2*16) + 94 = 264. A real difference of receive order, not of arithmetic.
    lay = ["fast", "slow", "fast"]
    up = S.from_tree(sequential(3), 0.0, toward_root=True)
    assert evaluate(PAPER, lay, up) == pytest.approx(294.0, rel=1e-12)
    assert P.gather(PAPER, lay, sequential(3), [0]).tolist() == [264.0]
    # in the tree's order the two agree when the first child is ready first (equal nodes: 264 both)
    assert evaluate(PAPER, ["fast"] * 3, up) == pytest.approx(P.gather(PAPER, ["fast"] * 3, sequential(3), [0])[0])


def test_from_tree_reduce_and_gather_steps():
    # binomial(4) up: 3 -> 2 first; the root takes its children in send order (2, then 1), one a step
    up = S.from_tree(binomial(4), 8.0, toward_root=True, reduce_bytes=8.0)
    assert [(st.src.tolist(), st.dst.tolist()) for st in up.steps] == [([3], [2]), ([2], [0]), ([1], [0])]
    assert all(st.waits for st in up.steps)
    assert up.steps[0].reduce_bytes.tolist() == [8.0]
    tree = binomial(9)
    gat = S.from_tree(tree, tree.subtree_size * 10.0, toward_root=True)
    assert gat.bytes_received()[0] == 80.0
    with pytest.raises(InputError, match="one number per rank"):
        S.from_tree(tree, [1.0, 2.0])
