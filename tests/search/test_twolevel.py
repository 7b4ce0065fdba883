"""The search over two-level trees for layouts with shared hosts (hnowmodel.search.twolevel, best_tree on hosts):
the exact host programme against brute force, and the choice under a host-aware toy model (a message inside a
host is cheap, one between hosts is dear), which must send every host its data once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hnowmodel import ops
from hnowmodel.errors import TreeError
from hnowmodel.layout import Layout, hosts_of
from hnowmodel.search import best_tree, rank_order
from hnowmodel.search.exact import edge_costs, exact_bcast
from hnowmodel.search.twolevel import exact_hosts_bcast, host_candidates, host_classes
from hnowmodel.trees import binomial, from_children, from_parent, make_tree
from hnowmodel.variants import Variant
from tests.helpers import paper_shm_profile


def _eq7_with_tails(tree, S, a, tail):
    """Completion of eq. 7 over ``tree`` (type index per node in S/a/tail) when a node finishes ``tail`` after its
    last send: the outside reference for exact_hosts_bcast."""
    t = np.zeros(tree.n)
    done = 0.0
    for v in tree.order.tolist():
        for i, c in enumerate(tree.children[v]):
            t[c] = t[v] + i * S[v] + a[v][c]
        done = max(done, t[v] + len(tree.children[v]) * S[v] + tail[v])
    return done


def _all_trees(n, root):
    """Every ordered tree over n nodes rooted at root (parents, then every send order)."""
    others = [r for r in range(n) if r != root]
    for parents in itertools.product(range(n), repeat=len(others)):
        parent = [-1] * n
        for r, p in zip(others, parents, strict=True):
            parent[r] = p
        if any(p == r for r, p in zip(others, parents, strict=True)):
            continue
        try:
            base = from_parent(parent)
        except TreeError:  # a cycle: not a tree
            continue
        kids = base.children
        for orders in itertools.product(*(itertools.permutations(k) for k in kids)):
            yield [list(o) for o in orders]


@pytest.mark.parametrize("root", [0, 2])
def test_exact_hosts_bcast_is_the_brute_force_optimum(root):
    p = paper_shm_profile()
    lay = Layout(["fast"] * 3 + ["slow"] * 3 + ["fast"], hosts=[0, 0, 1, 2, 2, 3, 4])
    classes = host_classes(lay)  # fast/2, fast/1, slow/2, slow/1, fast/1
    tails = {("fast", 2): 300.0, ("fast", 1): 0.0, ("slow", 2): 900.0, ("slow", 1): 0.0}
    types = [t for t, _ in classes]
    S, a = edge_costs(p.at(1024), ["fast", "slow"], 1024)
    ti = [0 if t == "fast" else 1 for t in types]
    Sh = [S[i] for i in ti]
    ah = [[a[ti[u]][ti[v]] for v in range(5)] for u in range(5)]
    tl = [tails[c] for c in classes]
    root_host = int(hosts_of(lay)[root])
    got = exact_hosts_bcast(p, lay, 1024, root, tails)
    assert got.root == root_host and got.n == 5
    best = min(_eq7_with_tails(from_children(ch), Sh, ah, tl) for ch in _all_trees(5, root_host))
    assert _eq7_with_tails(got, Sh, ah, tl) == pytest.approx(best, rel=1e-12)


def test_without_tails_it_is_the_exact_bcast():
    p = paper_shm_profile()
    lay = Layout(["fast", "fast", "slow", "fast", "slow", "slow"], hosts=[0, 0, 1, 2, 3, 4])
    tree = exact_hosts_bcast(p, lay, 0, 0, {c: 0.0 for c in host_classes(lay)})
    types = [t for t, _ in host_classes(lay)]
    _, opt = exact_bcast(p, types, 0, 0)
    S, a = edge_costs(p.at(0), ["fast", "slow"], 0)
    ti = [0 if t == "fast" else 1 for t in types]
    got = _eq7_with_tails(tree, [S[i] for i in ti], [[a[u][v] for v in ti] for u in ti], [0.0] * len(ti))
    assert got == pytest.approx(opt, rel=1e-12)


# ---- a host-aware toy model: eq. 7 with a cheap message inside a host and a dear one between hosts --------------
IN_S, IN_A, OUT_S, OUT_A = 1.0, 3.0, 10.0, 100.0


def _toy_bcast(profile, layout, tree, sizes, schedule=None, *, per_rank=False, root=0):
    tree = tree if not isinstance(tree, str) else make_tree(tree, len(layout))
    hosts = hosts_of(layout)
    t = np.zeros(tree.n)
    for v in tree.order.tolist():
        clock = t[v]
        for c in tree.children[v]:
            same = hosts[c] == hosts[v]
            t[c] = clock + (IN_A if same else OUT_A)
            clock += IN_S if same else OUT_S
    m = np.asarray(sizes, dtype=float)
    return np.repeat(t[None, :], m.size, axis=0) if per_rank else np.full(m.size, t.max())


TOY = Variant("toy-hosts", "eq. 7 with shared-memory edges", {ops.get("bcast").movement: _toy_bcast})


@pytest.mark.parametrize("slots,root", [((2, 2, 2), 0), ((2, 2, 2), 1), ((3, 3), 2), ((4, 1, 3, 2, 2), 5)])
def test_host_candidates_send_each_host_its_data_once(slots, root):
    hosts = [h for h, k in enumerate(slots) for _ in range(k)]
    lay = Layout(["fast"] * len(hosts), hosts=hosts)
    p = paper_shm_profile()

    def cost(t):
        return float(_toy_bcast(p, lay, t, [0])[0])

    scored = host_candidates(p, lay, "bcast", 0, root, TOY, cost)
    time_us, name, tree = min(scored, key=lambda s: s[0])
    assert tree.root == root and name.startswith("hosts:")
    inter = [c for c in range(tree.n) if tree.parent[c] >= 0 and hosts[tree.parent[c]] != hosts[c]]
    assert len(inter) == len(slots) - 1
    assert time_us <= cost(binomial(len(hosts), root)) and time_us <= cost(make_tree("hosts", len(hosts), root, lay))
    assert time_us == pytest.approx(cost(tree))


def test_best_tree_on_shared_hosts_never_loses_to_its_plain_candidates():
    p = paper_shm_profile()
    lay = Layout(["fast"] * 4 + ["slow"] * 6, hosts=[0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    for op in ("bcast", "scatter", "gather"):
        for root in (0, 3):
            b = best_tree(p, lay, op=op, size=4096, root=root)
            assert b.tree.root == root and not b.exact
            assert b.time_us <= min(b.compared.values()) + 1e-9
            hosts_tree = make_tree("hosts", 10, root=root, layout=lay)
            assert b.time_us <= float(ops.predict(op, p, lay, hosts_tree, [4096])[0]) + 1e-9


def test_rank_order_keeps_each_rank_on_its_host():
    p = paper_shm_profile()
    lay = Layout(["slow"] * 4 + ["fast"] * 2, hosts=[0, 0, 1, 1, 2, 2])
    ro = rank_order(p, lay, "binomial", "bcast", 1024)
    assert sorted(ro.perm) == list(range(6)) and ro.perm[0] == 0
    moved = lay.take(ro.perm)
    old = lay.hosts[list(ro.perm)]  # position i shares a host with j exactly when their ranks did
    assert (np.equal.outer(moved.hosts, moved.hosts) == np.equal.outer(old, old)).all()
    assert ro.time_us == pytest.approx(float(ops.predict("bcast", p, moved, binomial(6), [1024])[0]), rel=1e-12)
    assert ro.time_us <= ro.baseline_us
    assert ro.baseline_us == pytest.approx(float(ops.predict("bcast", p, lay, binomial(6), [1024])[0]), rel=1e-12)
