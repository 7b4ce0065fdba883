"""The search's pair costs with hosts: same-host pairs cost shared memory (orders, rank order, edge costs), and the
exact broadcast search, which knows node types only, refuses a layout with several ranks on a host."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import ops, predict, search, trees
from hnowmodel.errors import LayoutError, ProfileError
from hnowmodel.layout import Layout
from hnowmodel.params import Link, NodeType, ShmCosts
from hnowmodel.search.exact import edge_costs

from .profiles import PROF, THREE

SHM = {
    "fast": ShmCosts(NodeType("fast", 5, 0.001, 4, 0.002), Link(1, 0.0005)),
    "slow": ShmCosts(NodeType("slow", 30, 0.004, 40, 0.003), Link(8, 0.001)),
    "medium": ShmCosts(NodeType("medium", 10, 0.01, 10, 0.01), Link(3, 0.01)),
}
HPROF = dataclasses.replace(PROF, shm={t: SHM[t] for t in ("fast", "slow")})
HTHREE = dataclasses.replace(THREE, shm=SHM)
SIZES = [0, 4096]
LAYOUTS = [
    Layout(["fast", "fast", "slow", "slow", "fast", "fast", "slow"], hosts=[0, 0, 1, 1, 2, 2, 3]),
    Layout(["slow", "fast", "slow", "medium", "medium", "fast"], hosts=[0, 1, 0, 2, 2, 1]),
    Layout(["medium"] * 5, hosts=[0, 0, 0, 1, 1]),
]


def test_exact_search_refuses_shared_hosts_in_one_line():
    lay = Layout(["fast", "fast", "slow"], hosts=[0, 0, 1])
    with pytest.raises(LayoutError, match="does not model hosts") as e:
        search.exact_bcast(HPROF, lay, 0)
    assert "\n" not in str(e.value)
    own = Layout(["fast", "fast", "slow", "slow"])  # one rank per host: as before
    assert search.exact_bcast(HPROF, own, 0)[1] == search.exact_bcast(PROF, list(own), 0)[1] == 290.0


def test_edge_costs_between_ranks_of_one_host():
    S, a = edge_costs(HPROF, ["fast", "slow"], 1000, same_host=True)
    assert S.tolist() == pytest.approx([5 + 1, 30 + 4])
    assert a[0, 0] == pytest.approx(5 + 1 + 1 + 0.5 + 4 + 2) and a[1, 1] == pytest.approx(34 + 9 + 43)
    assert a[0, 1] == a[1, 0] == float("inf")
    S0, a0 = edge_costs(HPROF, ["fast", "slow"], 1000)  # between hosts: the network, as always
    assert S0.tolist() == pytest.approx([110, 270]) and a0[0, 1] == pytest.approx(PROF.ptp_us("fast", "slow", 1000))
    with pytest.raises(ProfileError, match="'medium'"):
        edge_costs(dataclasses.replace(THREE, shm={}), ["medium"], 0, same_host=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("root", [0, 2])
def test_scatter_order_rule_with_hosts_equals_brute_force(layout, root):
    n = len(layout)
    others = [r for r in range(n) if r != root]
    for size in SIZES:
        brute = min(
            predict.scatter(HTHREE, layout, trees.sequential(n, root, list(p)), [size])[0]
            for p in itertools.permutations(others)
        )
        rule = predict.scatter(HTHREE, layout, search.best_sequential(HTHREE, layout, "scatter", size, root), [size])
        assert rule[0] == pytest.approx(brute)


def fixed_order_gather(profile, layout, order, size, root=0):
    """Gather where the root posts its receives in ``order``: a same-host message arrives at its shm ``S + X``, an
    inter-host one at ``S_j + X``; the root takes it at ``t = max(t, arrival) + R`` (shm R for a same-host one)."""
    t = 0.0
    rt = layout[root]
    for j in order:
        if layout.hosts[j] == layout.hosts[root]:
            c = profile.shm[rt]
            arrive, recv = c.node.send_us(size) + c.link.us(size), c.node.recv_us(size)
        else:
            arrive = profile.types[layout[j]].send_us(size) + profile.link(layout[j], rt).us(size)
            recv = profile.types[rt].recv_us(size)
        t = max(t, arrive) + recv
    return t


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("root", [0, 2])
def test_gather_order_rule_with_hosts_equals_brute_force(layout, root):
    n = len(layout)
    others = [r for r in range(n) if r != root]
    for size in SIZES:
        rule = search.best_sequential_order(HTHREE, layout, "gather", size, root)
        brute = min(fixed_order_gather(HTHREE, layout, p, size, root) for p in itertools.permutations(others))
        assert fixed_order_gather(HTHREE, layout, rule, size, root) == pytest.approx(brute)


@st.composite
def host_layouts(draw):
    slots = draw(st.lists(st.integers(1, 3), min_size=1, max_size=6))
    types = [draw(st.sampled_from(["fast", "slow"])) for _ in slots]
    lay = Layout(
        [t for t, s in zip(types, slots, strict=True) for _ in range(s)],
        [h for h, s in enumerate(slots) for _ in range(s)],
    )
    if len(lay) < 2:
        lay = Layout([lay[0], lay[0]], [0, 0])
    return lay.take(draw(st.permutations(range(len(lay)))))


@given(host_layouts(), st.sampled_from(["bcast", "scatter", "gather"]), st.sampled_from([0, 4096]))
def test_rank_order_with_hosts_is_a_local_optimum_or_the_identity(layout, op, size):
    """Ranks keep their hosts when they move; the result is the identity or faster than it, and no swap of two
    ranks on different hosts (root excluded) predicts a shorter time."""
    n = len(layout)
    tree = trees.binomial(n)

    def cost(order):
        return ops.predict(op, HPROF, layout.take(order), tree, [size])[0]

    ro = search.rank_order(HPROF, layout, "binomial", op, size)
    assert sorted(ro.perm) == list(range(n)) and ro.perm[0] == 0
    assert ro.baseline_us == pytest.approx(cost(range(n)))
    assert ro.time_us == pytest.approx(cost(ro.perm))
    if ro.perm == tuple(range(n)):
        return
    assert ro.time_us < ro.baseline_us - 1e-9
    for i in range(1, n):
        for j in range(i + 1, n):
            if layout.hosts[ro.perm[i]] != layout.hosts[ro.perm[j]]:
                swapped = list(ro.perm)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                assert cost(swapped) >= ro.time_us - 1e-9, (i, j)


def test_rank_order_puts_tree_edges_on_hosts():
    # 2 hosts x 2 fast ranks placed 0,3 | 1,2: binomial(4) sends 0 -> 2, 0 -> 1, 2 -> 3, every edge across hosts:
    # rank 3 has it at 170 + 170 = 340 (m = 0). Renumbered so that one edge per host stays on it (shm S 5, S+X+R
    # 10), the last rank has it at 170 + 10 = 180 (hosts 0,0,1,1) or 10 + 170 (hosts 0,1,0,1).
    lay = Layout(["fast"] * 4, hosts=[0, 1, 1, 0])
    ro = search.rank_order(HPROF, lay, "binomial", "bcast", 0)
    assert ro.baseline_us == pytest.approx(340.0) and ro.time_us == pytest.approx(180.0)
    assert lay.take(ro.perm).hosts.tolist() in ([0, 0, 1, 1], [0, 1, 0, 1])
