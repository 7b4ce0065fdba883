"""Trees: MPICH's binomial order, the other constructors, validation, and JSON/networkx interop."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import trees as T
from hnowmodel.errors import InputError, TreeError
from hnowmodel.params import paper_profile
from tests.helpers import any_tree as _any_tree


def test_binomial_matches_mpich_order():
    # MPIR_Bcast_intra_binomial, 8 ranks: 0 sends to 4, 2, 1; 4 to 6, 5; 2 to 3; 6 to 7.
    t = T.binomial(8)
    assert t.children[0] == (4, 2, 1) and t.children[4] == (6, 5) and t.children[2] == (3,) and t.children[6] == (7,)
    # any root: relative ranks rotate with the root
    assert T.binomial(8, root=3).children[3] == (7, 5, 4)


def _mpich_binomial_children(n, root):
    """MPIR_Bcast_intra_binomial's loops, literally: receive from rank - mask, then send to rank + mask, mask
    decreasing from the one below the receive mask."""
    kids = [[] for _ in range(n)]
    for rank in range(n):
        rel = (rank - root) % n
        mask = 1
        while mask < n and not rel & mask:
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < n:
                kids[rank].append((rel + mask + root) % n)
            mask >>= 1
    return tuple(tuple(k) for k in kids)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 9, 31, 33, 100, 257])
def test_binomial_equals_mpich_loops(n):
    for root in {0, min(1, n - 1), n // 2, n - 1}:
        assert T.binomial(n, root).children == _mpich_binomial_children(n, root)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100])
def test_knomial_2_is_binomial(n):
    for root in {0, n // 2, n - 1}:
        assert T.knomial(n, 2, root) == T.binomial(n, root)


def test_kary_and_knomial_shapes():
    assert T.kary(7, 2).parent.tolist() == [-1, 0, 0, 1, 1, 2, 2]
    assert T.knomial(9, 3).children[0] == (3, 6, 1, 2)


def test_sequential_and_chain():
    assert T.sequential(4, root=2).children[2] == (3, 0, 1)
    assert T.sequential(4, order=[3, 1, 2]).children[0] == (3, 1, 2)
    assert T.chain(4).parent.tolist() == [-1, 0, 1, 2]


def test_hierarchical_is_the_papers_figure_6c():
    layout = ["fast"] * 4 + ["slow"] * 4
    t = T.hierarchical(layout, paper_profile())
    # binomial among fast ranks 0-3, then each fast rank serves one slow rank, in the order fast ranks are reached
    assert t.children[0] == (2, 1, 4) and t.children[2] == (3, 5) and t.children[1] == (6,) and t.children[3] == (7,)
    with pytest.raises(TreeError, match="layout"):
        T.make_tree("hierarchical", 4)


@pytest.mark.parametrize(
    "parent, needle",
    [
        ([-1, -1], "exactly one root"),
        ([0, 0], "exactly one root"),
        ([-1, 5], "not a rank"),
        ([-1, 2, 1], "cycle"),
        ([1, -1, 2], "own parent"),
    ],
)
def test_invalid_trees(parent, needle):
    with pytest.raises(TreeError, match=needle):
        T.from_parent(parent)


def test_duplicate_send_positions_rejected():
    with pytest.raises(TreeError, match="same send position"):
        T.Tree(np.array([-1, 0, 0]), np.array([0, 1, 1]))


def test_make_tree_names_choices():
    with pytest.raises(TreeError, match="binomial"):
        T.make_tree("foo", 4)
    with pytest.raises(TreeError, match="K >= 2"):
        T.make_tree("kary:1", 4)


def test_tree_file(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps(T.binomial(6, root=2).to_dict()))
    assert T.make_tree(f"@{f}", 6) == T.binomial(6, root=2)
    assert T.make_tree(f"@{f}", 6, root=2) == T.binomial(6, root=2)
    assert T.load_tree(f) == T.from_file(str(f)) == T.binomial(6, root=2)
    with pytest.raises(TreeError, match="has 6 ranks, expected 5"):
        T.make_tree(f"@{f}", 5)
    with pytest.raises(TreeError, match="rooted at rank 2, expected root 0"):
        T.make_tree(f"@{f}", 6, root=0)
    with pytest.raises(InputError, match="no such file"):
        T.make_tree(f"@{tmp_path / 'none.json'}", 6)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        T.load_tree(bad)


def test_best_tree_output_file_loads(tmp_path):
    """What ``hnow best-tree -o`` writes: the tree's JSON form plus ``name`` and ``time_us``."""
    from hnowmodel import search

    layout = ["fast", "slow", "slow", "fast", "slow"]
    best = search.best_tree(paper_profile(), layout, "bcast", 1024)
    f = tmp_path / "best.json"
    f.write_text(json.dumps({**best.tree.to_dict(), "name": best.method, "time_us": best.time_us}))
    t = T.make_tree(f"@{f}", 5)
    assert t == best.tree and t.name == best.method
    # also the full result document (op, size, compared_us, ...)
    f.write_text(json.dumps(best.to_dict()))
    assert T.load_tree(f, n=5, root=0) == best.tree


@pytest.mark.parametrize(
    "doc, needle",
    [
        ({"parent": [-1, 0, 1.5]}, r"field 'parent'\[2\]: 1.5 is not an integer"),
        ({"parent": [-1, 0.0, 1]}, r"field 'parent'\[1\]: 0.0 is not an integer"),
        ({"parent": [-1, True]}, r"field 'parent'\[1\]: True is not an integer"),
        ({"parent": [-1, "0"]}, r"field 'parent'\[1\]: '0' is not an integer"),
        ({"parent": "-1,0"}, "field 'parent' must be a list"),
        ({"parent": {"0": -1}}, "field 'parent' must be a list"),
        ({"children": [[1], 2, []]}, r"field 'children\[1\]' must be a list"),
        ({"children": {"0": [1]}}, "field 'children' must be a list of lists"),
        ({"children": [[1.0], []]}, r"field 'children\[0\]'\[0\]: 1.0 is not an integer"),
        ({"children": [[False], []]}, r"'children\[0\]'\[0\]: False is not an integer"),
        ({"parent": [-1, 0], "childrank": [0, 1.0]}, r"field 'childrank'\[1\]"),
        ({"parent": [-1, 0, 0], "children": [[1], [2], []]}, r"'children'\[1\] lists rank 2, whose 'parent' is 0"),
        ({"parent": [-1, 0, 0], "children": [[1], [], []]}, r"rank 2: field 'parent' is 0 but 'children'\[0\]"),
        ({"parent": [-1, 0, 1], "children": [[1, 2], [], []]}, "lists rank 2, whose 'parent' is 1"),
        ({"parent": [-1, 0], "children": [[1], [], []]}, "'children' has 3 entries, 'parent' has 2"),
        ({"parent": [-1, 0], "root": 1}, "field 'root' is 1 but the tree's root is rank 0"),
        ({"parent": [-1, 0], "name": 3}, "field 'name' must be a string"),
        ({"name": "x"}, "needs 'children' or 'parent'"),
        ([-1, 0], "must be a JSON object"),
    ],
)
def test_bad_tree_documents_name_the_field(tmp_path, doc, needle):
    with pytest.raises(TreeError, match=needle):
        T.from_dict(doc)
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(TreeError, match="tree file '.*t.json'"):
        T.make_tree(f"@{f}", 3)


def test_python_api_refuses_fractional_ranks():
    with pytest.raises(TreeError, match="integer ranks"):
        T.from_parent([-1, 0, 1.5])
    with pytest.raises(TreeError, match="integer ranks"):
        T.from_parent(np.array([-1.0, 0.0]))
    with pytest.raises(TreeError, match="integer ranks"):
        T.from_parent([-1, 0], childrank=[0, 1.0])
    with pytest.raises(TreeError, match="True"):
        T.from_children([[True], []])
    assert T.from_parent(np.array([-1, 0], dtype=np.int32)).children == ((1,), ())


@st.composite
def trees(draw, max_n=40):
    return _any_tree(draw, draw(st.integers(1, max_n)))


@given(trees())
def test_constructors_give_valid_trees(t):
    # every rank reached once: depths finite, subtree of root = n, children lists partition the non-roots
    assert t.subtree_size[t.root] == t.n
    kids = sorted(c for cs in t.children for c in cs)
    assert kids == sorted(set(range(t.n)) - {t.root})
    for p, cs in enumerate(t.children):
        assert [int(t.childrank[c]) for c in cs] == list(range(1, len(cs) + 1))
        assert all(t.parent[c] == p and t.depth[c] == t.depth[p] + 1 for c in cs)


@given(trees())
def test_json_and_networkx_roundtrip(t):
    assert T.from_dict(json.loads(json.dumps(t.to_dict()))) == t
    assert T.from_networkx(t.to_networkx()) == t
    assert T.from_children(t.children) == t


def test_chosen_trees_are_not_tree_families():
    """``fnf``/``optimal`` are chosen by the search, a layer above the trees: :mod:`hnowmodel.treespec` resolves
    them, and the trees' own registry refuses them (naming the families it has)."""
    assert "fnf" not in T.TREES and "optimal" not in T.TREES
    with pytest.raises(TreeError, match="choose from: binomial"):
        T.make_tree("optimal:4K", 4)


def test_cached_computes_once_per_tree_and_key():
    t, calls = T.binomial(8), []
    leaves = t.cached("test:leaves", lambda: calls.append(1) or [r for r in range(t.n) if not t.nchildren[r]])
    assert t.cached("test:leaves", lambda: calls.append(1) or []) is leaves and calls == [1]
    assert leaves == [1, 3, 5, 7] and T.binomial(8).cached("test:leaves", lambda: "other") == "other"
