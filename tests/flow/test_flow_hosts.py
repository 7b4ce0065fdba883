"""The flow engine with several ranks per host (hnowmodel.flow): one NIC per host shared by its ranks' inter-host
flows, shared memory between ranks of one host; hand-computed cases and properties that hold (no MPI)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hnowmodel import flow as F
from hnowmodel import ops
from hnowmodel import trees as T
from hnowmodel.errors import ProfileError
from hnowmodel.flow import disciplines as D
from hnowmodel.layout import Layout
from hnowmodel.params import Link, Nic, NodeType, Profile, ShmCosts
from tests.helpers import any_tree as _any_tree
from tests.helpers import flow_profile as _profile

BCAST, SCATTER, GATHER = (ops.get(o).movement for o in ("bcast", "scatter", "gather"))
MOVES = {"bcast": BCAST, "scatter": SCATTER, "gather": GATHER}

M = 1e6  # bytes


def _with_shm(prof: Profile, S: float = 0.0, R: float = 0.0, Xc: float = 0.0, Xm: float = 0.0, **kw) -> Profile:
    """``prof`` with the same shared-memory costs for every type (µs, µs/byte) and ``kw`` (e.g. ``nic``)."""
    shm = {t: ShmCosts(NodeType(t, S, 0.0, R, 0.0), Link(Xc, Xm)) for t in prof.types}
    return dataclasses.replace(prof, shm=shm, **kw)


# rank 0 and rank 1 on host 0, rank 2 on host 1, rank 3 on host 2; 0 -> 1 (same host) -> 3, and 0 -> 2
TWO_OUT = T.from_parent([-1, 0, 0, 1])
HOSTS = Layout(["f"] * 4, hosts=[0, 0, 1, 2])


# ---- hand-computed cases -------------------------------------------------------------------------------------
def test_two_ranks_of_one_host_share_its_egress():
    prof = _with_shm(_profile({"f": 100.0}))  # shared memory costs nothing: rank 1 holds the data at 0
    got = F.bcast(prof, HOSTS, TWO_OUT, [M], per_rank=True)[0]
    assert got.tolist() == pytest.approx([0.0, 0.0, 2 * M / 100, 2 * M / 100])
    # the same ranks on hosts of their own: the root's two messages share its egress, then 1 -> 3 alone
    apart = F.bcast(prof, ["f"] * 4, TWO_OUT, [M], per_rank=True)[0]
    assert apart.tolist() == pytest.approx([0.0, 2 * M / 100, 2 * M / 100, 3 * M / 100])


def test_queue_disciplines_work_on_the_host_egress():
    prof = _with_shm(_profile({"f": 100.0}))
    fifo = F.bcast(prof, HOSTS, TWO_OUT, [M], per_rank=True, sharing="fifo")[0]
    assert fifo.tolist() == pytest.approx([0.0, 0.0, M / 100, 2 * M / 100])  # 0 -> 2 was queued first
    rr = F.bcast(prof, HOSTS, TWO_OUT, [M], per_rank=True, sharing="rr")[0]
    assert rr.tolist() == pytest.approx([0.0, 0.0, 2 * M / 100, 2 * M / 100])


def test_two_flows_into_one_host_share_its_ingress():
    # gather: ranks 2 and 3 (hosts 1 and 2) send at 0 to ranks 0 and 1 of host 0, whose ingress they share
    prof = _with_shm(_profile({"f": 100.0}))
    got = F.gather(prof, HOSTS, TWO_OUT, [M], per_rank=True)[0]
    # rank 1 holds its subtree at 2M/100; its 2 MB go to rank 0 through shared memory at no cost
    assert got.tolist() == pytest.approx([2 * M / 100, 2 * M / 100, 0.0, 0.0])


def test_messages_into_one_host_share_its_ingress_under_every_sharing():
    """Root 0 (fast, a host of its own) sends 1 MB each to ranks 1 and 2, two ranks of one slow host (ingress 25
    bytes/µs): whatever the egress does, 2 MB go through that host's one ingress. rr: both leave the egress
    together at 50 each, so both finish with the last byte, at 2M/25; fifo: whole messages, M/25 then 2M/25;
    the fluid sharings: 12.5 each, 2M/25."""
    prof = _with_shm(_profile({"f": 100.0, "s": 100.0}, {"f": 100.0, "s": 25.0}))
    lay = Layout(["f", "s", "s"], hosts=[0, 1, 1])
    seq = T.sequential(3)
    want = {"rr": [2 * M / 25] * 2, "fifo": [M / 25, 2 * M / 25], "maxmin": [2 * M / 25] * 2}
    for sharing, times in want.items():
        got = F.bcast(prof, lay, seq, [M], per_rank=True, sharing=sharing)[0]
        assert got[1:].tolist() == pytest.approx(times), sharing
    # on hosts of their own each slow rank has an ingress of its own: the two messages overlap
    apart = F.bcast(prof, ["f", "s", "s"], seq, [M], per_rank=True, sharing="rr")[0]
    assert apart[1:].tolist() == pytest.approx([M / 25, M / 25])


def test_many_messages_into_one_host_share_its_ingress_under_every_sharing():
    """As above with 12 slow ranks on one host (more than the 8 messages an earlier cap summed): rr leaves the
    egress together at 100/12 each and 12 MB pass the one ingress at 25, all finishing at 12M/25; fifo: the k-th
    at kM/25 (the ingress, slower than the egress, sets the pace); the fluid sharings: 12M/25."""
    k = 12
    prof = _with_shm(_profile({"f": 100.0, "s": 100.0}, {"f": 100.0, "s": 25.0}))
    lay = Layout(["f"] + ["s"] * k, hosts=[0] + [1] * k)
    seq = T.sequential(k + 1)
    want = {"rr": [k * M / 25] * k, "fifo": [j * M / 25 for j in range(1, k + 1)], "maxmin": [k * M / 25] * k}
    for sharing, times in want.items():
        got = F.bcast(prof, lay, seq, [M], per_rank=True, sharing=sharing)[0]
        assert got[1:].tolist() == pytest.approx(times), sharing


def test_the_nic_capacity_of_the_profile_is_the_hosts_link():
    nic = {"f": Nic(50.0, 50.0)}
    prof = _with_shm(_profile({"f": 100.0}), nic=nic)
    got = F.bcast(prof, HOSTS, TWO_OUT, [M], per_rank=True)[0]
    assert got.tolist() == pytest.approx([0.0, 0.0, 2 * M / 50, 2 * M / 50])
    eg, ig = F.host_capacities(prof, HOSTS, M)
    assert eg.tolist() == ig.tolist() == [50.0, 50.0, 50.0]
    # a lone flow: the NIC (50) is below the pair's rate (100)
    assert F.bcast(prof, ["f", "f"], T.chain(2), [M]).tolist() == pytest.approx([M / 50])
    # a slow receiving NIC limits a lone message under every sharing
    slow_in = _with_shm(_profile({"f": 100.0}), nic={"f": Nic(100.0, 25.0)})
    for sharing in F.SHARINGS:
        assert F.bcast(slow_in, ["f", "f"], T.chain(2), [M], sharing=sharing).tolist() == pytest.approx([M / 25])


def test_a_same_host_message_takes_its_shared_memory_time_whatever_the_nic_load():
    prof = _with_shm(_profile({"f": 10.0}, S=3.0, R=4.0, Xc=20.0, burst=4000.0), S=0.5, R=0.7, Xc=0.2, Xm=1e-4)
    # root 0 (host 0) sends to rank 1 on its host first, then to 6 ranks of other hosts; rank 1 to two more
    tree = T.from_parent([-1, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    lay = Layout(["f"] * 10, hosts=[0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
    shm_one_way = float(prof.ptp_us("f", "f", M, same_host=True))
    assert shm_one_way == pytest.approx(0.5 + 0.2 + 1e-4 * M + 0.7)
    run = F.simulate(BCAST, prof, lay, tree, M)
    assert run.done_us[1] == pytest.approx(shm_one_way, rel=1e-12)
    rec = next(r for r in run.flows if (r.src, r.dst) == (0, 1))
    assert (rec.start_us, rec.end_us, rec.delivered_us) == pytest.approx((0.5, 0.5 + 0.2 + 1e-4 * M, 0.7 + 1e-4 * M))
    # the same with the shared-memory child last: it waits for the root's six network posts, not for the NIC
    lay2 = lay.take([0, 2, 3, 4, 5, 6, 7, 1, 8, 9])
    run2 = F.simulate(BCAST, prof, lay2, T.from_parent([-1, 0, 0, 0, 0, 0, 0, 0, 7, 7]), M)
    assert run2.done_us[7] == pytest.approx(6 * 3.0 + shm_one_way, rel=1e-12)


def test_missing_shared_memory_costs_name_the_type():
    prof = _profile({"f": 100.0})
    with pytest.raises(ProfileError, match="shared-memory"):
        F.bcast(prof, HOSTS, TWO_OUT, [M])
    # ranks of one host that never send to each other need none (0 and 3 share host 0)
    got = F.bcast(prof, Layout(["f"] * 4, hosts=[0, 1, 2, 0]), T.from_parent([-1, 0, 0, 2]), [M])
    assert got.tolist() == pytest.approx([3 * M / 100])


# ---- properties ------------------------------------------------------------------------------------------------
@st.composite
def host_cases(draw, max_n: int = 8):
    """A profile with shared-memory costs, a layout of ``n`` ranks on hosts (each host one type), and a tree."""
    n = draw(st.integers(2, max_n))
    eg = {"f": draw(st.floats(1, 100)), "s": draw(st.floats(1, 100))}
    prof = _profile(
        eg,
        S=draw(st.floats(0, 20)),
        R=draw(st.floats(0, 20)),
        Xc=draw(st.floats(0, 20)),
        burst=draw(st.sampled_from([0.0, 512.0, 8192.0])),
    )
    prof = _with_shm(prof, S=draw(st.floats(0, 5)), R=draw(st.floats(0, 5)), Xc=draw(st.floats(0, 5)), Xm=1e-4)
    hosts = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
    host_type = draw(st.lists(st.sampled_from(["f", "s"]), min_size=n, max_size=n))
    lay = Layout([host_type[h] for h in hosts], hosts=hosts)
    return prof, lay, _any_tree(draw, n)


@settings(max_examples=60, deadline=None)
@given(host_cases(), st.floats(0, 2e5))
def test_same_host_messages_take_exactly_their_shared_memory_transfer(case, m):
    prof, lay, tree = case
    shm = prof.shm_costs("f").link
    for op in ("bcast", "scatter", "gather"):
        run = F.simulate(MOVES[op], prof, lay, tree, m)
        for r in run.flows:
            if lay.hosts[r.src] == lay.hosts[r.dst]:
                assert r.end_us - r.start_us == pytest.approx(float(shm.us(r.nbytes)), rel=1e-9, abs=1e-9)
                assert r.delivered_us == r.end_us


def _lone(prof: Profile, lay: Layout, p: int, c: int, b: float) -> float:
    """The time of edge p -> c carrying b bytes if nothing else were on the network (shared memory on one host)."""
    if lay.hosts[p] == lay.hosts[c]:
        return float(prof.ptp_us(lay[p], lay[c], b, same_host=True))
    lk = prof.link(lay[p], lay[c])
    s, r = prof.node_type(lay[p]).send_us(b), prof.node_type(lay[c]).recv_us(b)
    return s + lk.Xc_us + max(b - F.burst_bytes(prof), 0.0) * lk.Xm_us_per_byte + r


@settings(max_examples=60, deadline=None)
@given(host_cases(), st.floats(0, 2e5))
def test_never_faster_than_a_lone_message(case, m):
    prof, lay, tree = case
    for op, sharing in (("bcast", "maxmin"), ("scatter", "maxmin"), ("bcast", "fifo"), ("scatter", "rr")):
        done = getattr(F, op)(prof, lay, tree, [m], per_rank=True, sharing=sharing)[0]
        for c in range(tree.n):
            p = int(tree.parent[c])
            if p >= 0:
                b = m if op == "bcast" else float(tree.subtree_size[c]) * m
                assert done[c] >= done[p] + _lone(prof, lay, p, c, b) - 1e-6 * (1 + done[c])
    ready = F.gather(prof, lay, tree, [m], per_rank=True)[0]
    for c in range(tree.n):
        p = int(tree.parent[c])
        if p >= 0:
            b = float(tree.subtree_size[c]) * m
            assert ready[p] >= ready[c] + _lone(prof, lay, c, p, b) - 1e-6 * (1 + ready[p])


@settings(max_examples=40, deadline=None)
@given(host_cases(), st.floats(0, 2e5), st.randoms(use_true_random=False))
def test_one_rank_per_host_is_the_plain_layout(case, m, rnd):
    prof, lay, tree = case
    types = list(lay)
    labels = list(range(len(types)))
    rnd.shuffle(labels)  # any host numbers, one host per rank
    own = Layout(types, hosts=labels)
    # the NIC a profile states equal to the one derived from the pairwise costs changes nothing
    eg, ig = F.capacities(prof, ["f", "s"], m)
    nic = {t: Nic(float(e), float(i)) for t, e, i in zip(["f", "s"], eg, ig, strict=True)}
    with_nic = dataclasses.replace(prof, nic=nic)
    for op in ("bcast", "scatter", "gather"):
        for sharing in ("maxmin", "weighted") + (("fifo", "rr") if op != "gather" else ()):
            want = getattr(F, op)(prof, types, tree, [m], per_rank=True, sharing=sharing)
            np.testing.assert_array_equal(getattr(F, op)(prof, own, tree, [m], per_rank=True, sharing=sharing), want)
            got = getattr(F, op)(with_nic, own, tree, [m], per_rank=True, sharing=sharing)
            np.testing.assert_allclose(got, want, rtol=1e-12)


@st.composite
def chains_in_blocks(draw):
    """A chain over ranks placed on hosts in blocks (ranks fill hosts in order), shared memory much cheaper than
    the network (no constant, 1e-6 µs/byte, against the network's Xc ≥ 1 µs and S, R ≥ its own)."""
    n = draw(st.integers(2, 10))
    eg = {"f": draw(st.floats(1, 100)), "s": draw(st.floats(1, 100))}
    prof = _profile(
        eg,
        S=draw(st.floats(0, 20)),
        R=draw(st.floats(0, 20)),
        Xc=draw(st.floats(1, 20)),
        burst=draw(st.sampled_from([0.0, 512.0, 8192.0])),
    )
    prof = _with_shm(prof, Xm=1e-6)
    slots = draw(st.lists(st.integers(1, 4), min_size=1, max_size=n))
    types = draw(st.lists(st.sampled_from(["f", "s"]), min_size=len(slots), max_size=len(slots)))
    names = [t for t, k in zip(types, slots, strict=True) for _ in range(k)][:n]
    hosts = [h for h, k in enumerate(slots) for _ in range(k)][:n]
    names += [types[-1]] * (n - len(names))
    hosts += [hosts[-1]] * (n - len(hosts))
    return prof, Layout(names, hosts=hosts), T.chain(n)


@settings(max_examples=60, deadline=None)
@given(chains_in_blocks(), st.floats(0, 2e5))
def test_a_chain_is_never_slower_with_its_ranks_together(case, m):
    # one message at a time, each host's NIC used once each way: every message is the same or cheaper. (Not true of
    # every tree: two ranks of one host sending at once share its NIC.)
    prof, lay, tree = case
    for op in ("bcast", "scatter", "gather"):
        together = getattr(F, op)(prof, lay, tree, [m], per_rank=True)[0]
        apart = getattr(F, op)(prof, list(lay), tree, [m], per_rank=True)[0]
        assert (together <= apart + 1e-9 * (1 + apart)).all()


def test_a_binomial_bcast_on_shared_hosts_can_be_slower_than_apart():
    # why the property above is about chains: ranks 1 and 2 of one host, both children of the root (whose egress
    # they share anyway: 2M/c), then both send 1 MB to other hosts at once: 2M/c more together, M/c apart
    prof = _with_shm(_profile({"f": 100.0}))
    tree = T.from_parent([-1, 0, 0, 1, 2])
    together = F.bcast(prof, Layout(["f"] * 5, hosts=[0, 1, 1, 2, 3]), tree, [M])[0]
    assert together == pytest.approx(4 * M / 100)
    assert F.bcast(prof, ["f"] * 5, tree, [M])[0] == pytest.approx(3 * M / 100)


# ---- a host's ingress against a plain per-message reference -------------------------------------------------
def _at(curve: list[tuple[float, float]], tau: float, left: bool) -> float:
    """Bytes a departure curve has passed by ``tau`` (µs): 0 before its first point, linear between points; at a
    time listed twice its later value, or with ``left`` its value just before."""
    if tau < curve[0][0] or (left and tau == curve[0][0]):
        return 0.0
    if tau >= curve[-1][0]:
        return curve[-1][1] if not left or tau > curve[-1][0] else _before(curve, tau)
    return _before(curve, tau) if left else _after(curve, tau)


def _after(curve, tau):
    j = max(i for i, (t, _) in enumerate(curve) if t <= tau)
    (t0, d0), (t1, d1) = curve[j], curve[j + 1]
    return d0 if tau == t0 else d0 + (d1 - d0) * (tau - t0) / (t1 - t0)


def _before(curve, tau):
    j = min(i for i, (t, _) in enumerate(curve) if t >= tau)
    (t0, d0), (t1, d1) = curve[j - 1], curve[j]
    return d1 if tau == t1 else d0 + (d1 - d0) * (tau - t0) / (t1 - t0)


def _plain_host_ingress(msgs: list[tuple], mine: int, rate: float, burst: float) -> float:
    """The host's FIFO greedy shaper, message by message: ``max(end, τ + (D(end) - D(τ⁻) - burst)/rate)`` over
    every breakpoint and first byte time ``τ ≤ end`` of the summed curve ``D`` (docs/model.md, "Hosts")."""
    end = msgs[mine][0][-1][0]
    taus = {t for c, t1 in msgs for t in [t1] + [p[0] for p in c] if t <= end}
    x = sum(_at(c, end, left=False) for c, _ in msgs)
    return max(
        [end] + [tau + max(0.0, x - sum(_at(c, tau, left=True) for c, _ in msgs) - burst) / rate for tau in taus]
    )


@settings(max_examples=40, deadline=None)
@given(
    st.integers(9, 16),
    st.sampled_from(["rr", "fifo"]),
    st.floats(0.0, 5e4),
    st.floats(5.0, 200.0),
    st.integers(0, 2**31),
)
def test_the_host_ingress_equals_the_plain_formula_for_each_message(k, sharing, burst, rate, seed):
    """More than 8 messages into one host from two egresses (their departure curves as the disciplines draw
    them, token-bucket jumps included): every message's last byte through the shared ingress is what the plain
    per-message formula gives."""
    rnd = np.random.default_rng(seed)
    serve = D.LINK_SHARINGS[sharing].serve
    msgs = []
    for n in (k // 2, k - k // 2):
        arrive = np.sort(rnd.uniform(0.0, 1e4, n))
        curves, first = serve(arrive, rnd.uniform(1e3, 1e6, n), float(rnd.uniform(20.0, 400.0)), burst, 1500.0)
        msgs += list(zip(curves, first, strict=True))
    parts = [(D._left_right(c), t1) for c, t1 in msgs]
    got = D._through_host_ingress(parts, [c[-1][0] for c, _ in msgs], rate, burst)
    want = [_plain_host_ingress(msgs, i, rate, burst) for i in range(k)]
    assert got == pytest.approx(want, rel=1e-12)
    assert all(g >= c[-1][0] for g, (c, _) in zip(got, msgs, strict=True))
