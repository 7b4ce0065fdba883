"""Two-level trees for hosts (hnowmodel.trees.nodeaware), their specs, and the native algorithms that run on several
ranks per host (MPICH smp and composition alpha, Open MPI coll/han): structure, not timing."""

from __future__ import annotations

import numpy as np
import pytest

from hnowmodel import ops
from hnowmodel.errors import TreeError
from hnowmodel.layout import Layout
from hnowmodel.trees import TREES, binomial, make_tree, sequential, tree_names, two_level
from hnowmodel.treespec import parse_spec, resolve
from tests.helpers import paper_shm_profile

L32 = Layout(["fast"] * 6, hosts=[0, 0, 1, 1, 2, 2])  # 3 hosts x 2
L23 = Layout(["fast"] * 6, hosts=[0, 0, 0, 1, 1, 1])  # 2 hosts x 3
LEVELS = [name for name in TREES if name not in ("hierarchical", "hosts", "mpich-smp", "ompi-han")]


def _inter_edges(tree, lay):
    hosts = lay.hosts
    return [
        (int(tree.parent[c]), c) for c in range(tree.n) if tree.parent[c] >= 0 and hosts[tree.parent[c]] != hosts[c]
    ]


@pytest.mark.parametrize("lay", [L32, L23], ids=["3x2", "2x3"])
@pytest.mark.parametrize("root", range(6))
@pytest.mark.parametrize("family", ["hosts", "mpich-smp", "ompi-han"])
def test_every_host_gets_the_data_once(lay, root, family):
    """One inter-host edge into every host but the root's, none within a host that leaves it, and every host's
    ranks below its head; the root's host is entered by no edge."""
    t = make_tree(family, 6, root=root, layout=lay)
    assert t.root == root
    edges = _inter_edges(t, lay)
    assert len(edges) == lay.n_hosts - 1
    assert sorted(int(lay.hosts[c]) for _, c in edges) == sorted(set(range(lay.n_hosts)) - {int(lay.hosts[root])})


def test_three_hosts_of_two_exact_trees():
    # hosts: root 0 heads host 0; binomial over hosts (0 -> 2, 0 -> 1), inter before intra
    assert make_tree("hosts", 6, layout=L32).children == ((4, 2, 1), (), (3,), (), (5,), ())
    # root 1 (not a leader) heads its host itself
    assert make_tree("hosts", 6, root=1, layout=L32).children == ((), (4, 2, 0), (3,), (), (5,), ())
    # MPICH smp: root 1 first sends to its leader 0, which runs the leaders' binomial bcast
    assert make_tree("mpich-smp", 6, root=1, layout=L32).children == ((4, 2), (0,), (3,), (), (5,), ())
    # coll/han: the hosts are headed by local position 1 (ranks 1, 3, 5); up comm rank i is host i
    assert make_tree("ompi-han", 6, root=1, layout=L32).children == ((), (5, 3, 0), (), (2,), (), (4,))
    assert make_tree("hosts:sequential/binomial", 6, root=1, layout=L32).children == ((), (2, 4, 0), (3,), (), (5,), ())


def test_two_hosts_of_three_exact_trees():
    assert make_tree("hosts", 6, layout=L23).children == ((3, 2, 1), (), (), (5, 4), (), ())
    assert make_tree("hosts:binomial/sequential", 6, layout=L23).children == ((3, 1, 2), (), (), (4, 5), (), ())
    # smp, root 2: 2 -> 0; 0 -> 3 (leaders); node binomial from 0 over (0, 1, 2) is 0 -> 2, 0 -> 1 without the
    # duplicate back to the root
    assert make_tree("mpich-smp", 6, root=2, layout=L23).children == ((3, 1), (), (0,), (5, 4), (), ())
    # hosts, root 2: the root heads host 0 (binomial(3, root=2) over (0, 1, 2): 2 -> 1, 2 -> 0, MPICH's order)
    assert make_tree("hosts", 6, root=2, layout=L23).children == ((), (), (3, 1, 0), (5, 4), (), ())
    # coll/han, root 2: hosts headed by local position 2 (ranks 2 and 5)
    assert make_tree("ompi-han", 6, root=2, layout=L23).children == ((), (), (5, 1, 0), (), (), (4, 3))


@pytest.mark.parametrize("inter", LEVELS)
@pytest.mark.parametrize("intra", LEVELS)
def test_every_family_at_every_level(inter, intra):
    """Each level is the family's own tree: the heads' tree relabelled, and each host's tree relabelled."""
    lay = Layout(["fast"] * 12, hosts=[0] * 4 + [1] * 3 + [2] * 5)
    t = make_tree(f"hosts:{inter}/{intra}", 12, layout=lay)
    top = make_tree(inter, 3)
    heads = [0, 4, 7]
    for h in range(3):
        assert [c for c in t.children[heads[h]] if lay.hosts[c] != h] == [heads[c] for c in top.children[h]]
    for h, ranks in enumerate([[0, 1, 2, 3], [4, 5, 6], [7, 8, 9, 10, 11]]):
        local = make_tree(intra, len(ranks))
        for i, r in enumerate(ranks):
            assert [c for c in t.children[r] if lay.hosts[c] == h] == [ranks[c] for c in local.children[i]]


@pytest.mark.parametrize("family", ["hosts", "mpich-smp", "ompi-han"])
@pytest.mark.parametrize("inter", ["binomial", "sequential", "kary:3", "ompi-binomial"])
def test_one_rank_per_host_is_the_inter_tree(family, inter):
    for layout in (["fast"] * 7, Layout(["fast"] * 7), None):
        for root in (0, 3):
            assert make_tree(f"{family}:{inter}", 7, root=root, layout=layout) == make_tree(inter, 7, root=root)


def test_two_level_takes_tree_builders():
    assert two_level(L32, binomial, sequential) == make_tree("hosts:binomial/sequential", 6, layout=L32)
    assert two_level(["fast"] * 5, sequential) == sequential(5)


def test_inter_level_hierarchical_sees_host_types():
    lay = Layout(["slow", "slow", "fast", "fast", "slow"], hosts=[0, 0, 1, 1, 2])
    t = make_tree("hosts:hierarchical/binomial", 5, layout=lay, profile=paper_shm_profile())
    assert t.children[0] == (2, 4, 1)  # hierarchical over host types (slow, fast, slow) from host 0


def test_bad_specs():
    with pytest.raises(TreeError, match="inter-host level only"):
        make_tree("hosts:binomial/hierarchical", 6, layout=L32)
    with pytest.raises(TreeError, match="each level is a tree family"):
        make_tree("hosts:hosts/binomial", 6, layout=L32)
    with pytest.raises(TreeError, match="unknown tree 'nope'"):
        make_tree("hosts:nope", 6, layout=L32)
    with pytest.raises(TreeError, match="same number of ranks on every host"):
        make_tree("ompi-han", 5, layout=Layout(["fast"] * 5, hosts=[0, 0, 0, 1, 1]))
    with pytest.raises(TreeError, match="layout has 6 ranks, expected 5"):
        make_tree("hosts", 5, layout=L32)
    assert "hosts[:INTER[/INTRA]]" in tree_names()


def test_spec_resolution_keeps_hosts():
    spec = parse_spec("hosts:sequential/chain")
    assert spec.kind == "family"
    t = resolve(spec, 6, root=0, layout=L23)
    assert t == make_tree("hosts:sequential/chain", 6, layout=L23)
    assert len(_inter_edges(t, L23)) == 1


def test_native_entries_on_hosts():
    smp = ops.native_for("native:smp", "bcast", "MPICH")
    assert smp.env["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "smp"
    assert smp.env["MPIR_CVAR_COLLECTIVE_FALLBACK"] == "silent"  # its inner calls run on child communicators
    assert smp.leaf == {"algorithm=MPIR_Bcast_intra_smp": {}}
    alpha = ops.native_for("native:composition:alpha", "bcast", "MPICH")
    assert alpha.env["MPIR_CVAR_BCAST_COMPOSITION"] == "1"
    assert alpha not in ops.native_choices("bcast", "MPICH")  # no selection file names a composition
    assert ops.native_for("native:smp", "scatter", "MPICH") is None  # MPICH has no smp scatter/gather
    for op in ("bcast", "scatter", "gather"):
        han = ops.native_for("native:han", op, "Open MPI")
        assert han.env["OMPI_MCA_coll_han_priority"] == "100" and "han" in han.model_tree
        assert han not in ops.native_choices(op, "Open MPI")
    for root in (0, 1):
        assert make_tree(smp.model_tree, 6, root=root, layout=L32) == make_tree(
            "mpich-smp:binomial/binomial", 6, root=root, layout=L32
        )


def test_native_predict_builds_the_hosts_tree():
    """native_predict gives the model tree the layout: on shared hosts the smp tree differs from binomial (on one
    rank per host it is the same tree), so the predictions differ for a non-leader root."""
    p = paper_shm_profile()
    smp = ops.native_for("native:smp", "bcast", "MPICH")
    flat = ops.native_predict("bcast", "MPICH", p, ["fast"] * 6, [1024], root=1, algorithm=smp)
    bino = ops.predict("bcast", p, ["fast"] * 6, binomial(6, 1), [1024])
    assert np.allclose(flat, bino)
    tree = make_tree(smp.model_tree, 6, root=1, layout=L32)
    shared = ops.native_predict("bcast", "MPICH", p, L32, [1024], root=1, algorithm=smp)
    assert np.allclose(shared, ops.predict("bcast", p, L32, tree, [1024]))


def test_smp_root_keeps_its_children_in_the_leaders_node_tree():
    """4 ranks on the root's host, root 2: MPICH's node binomial from leader 0 is 0 -> 2, 0 -> 1, 2 -> 3; the root
    (which has the message) sends to the leader first, then to its own child 3; the leader's edge to it is gone."""
    lay = Layout(["fast"] * 6, hosts=[0, 0, 0, 0, 1, 1])
    t = make_tree("mpich-smp", 6, root=2, layout=lay)
    assert t.children == ((4, 1), (), (0, 3), (), (5,), ())


def test_hosts_not_in_blocks():
    """Ranks placed round robin (host of rank r = r mod 2): heads are each host's lowest rank, levels in rank order."""
    lay = Layout(["fast"] * 6, hosts=[0, 1, 0, 1, 0, 1])
    assert make_tree("hosts:binomial/sequential", 6, layout=lay).children == ((1, 2, 4), (3, 5), (), (), (), ())
    # smp, root 3 on host 1 = (1, 3, 5): 3 -> leader 1 -> leader 0, then 1 -> 5 (its node binomial without 1 -> 3)
    assert make_tree("mpich-smp", 6, root=3, layout=lay).children == ((4, 2), (0, 5), (), (1,), (), ())
    # han, root 3 at local position 1: heads 3 and 2
    assert make_tree("ompi-han", 6, root=3, layout=lay).children == ((), (), (0, 4), (2, 1, 5), (), ())
