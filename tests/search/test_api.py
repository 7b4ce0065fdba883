"""best_tree for every op and method, the registered `fnf`/`optimal` tree names, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import ops, predict, search, trees, treespec
from hnowmodel.errors import InputError, TreeError

from .profiles import PROF, THREE, TYPES3


@given(
    st.lists(st.sampled_from(TYPES3), min_size=2, max_size=6),
    st.sampled_from(["scatter", "gather"]),
    st.sampled_from(["auto", "exact", "fnf", "ecef"]),
    st.sampled_from([0, 4096]),
    st.data(),
)
def test_scatter_gather_best_beats_every_sequential_order(layout, op, method, size, data):
    """Scatter/gather: the best tree is at least as fast as the sequential tree in *every* order (checked by
    enumerating them all), its time is its own prediction, and the compared times are those trees' predictions
    (all under the operation's default model variant, as ``best_tree`` chooses)."""
    import itertools

    from hnowmodel import ops

    n = len(layout)
    root = data.draw(st.integers(0, n - 1))
    best = search.best_tree(THREE, layout, op, size, method, root=root)
    assert not best.exact and best.op == op and best.tree.root == root
    assert best.time_us == pytest.approx(ops.predict(op, THREE, layout, best.tree, [size])[0])
    others = [r for r in range(n) if r != root]
    every_order = [
        ops.predict(op, THREE, layout, trees.sequential(n, root, order), [size])[0]
        for order in itertools.permutations(others)
    ]
    assert best.time_us <= min(every_order) + 1e-9
    seq = search.best_sequential(THREE, layout, op, size, root)
    assert ops.predict(op, THREE, layout, seq, [size])[0] == pytest.approx(min(every_order))
    for name in ("sequential", "binomial", "hierarchical"):
        t = trees.make_tree(name, n, root, layout, THREE)
        assert best.compared[name] == pytest.approx(ops.predict(op, THREE, layout, t, [size])[0])


def chosen(spec, n, root=0, layout=None, profile=None):
    """A chosen tree (``optimal``/``fnf`` specs) as the tree-spec resolver builds it."""
    return treespec.resolve(treespec.parse_spec(spec), n, root=root, layout=layout, profile=profile)


def test_best_tree_result_shape():
    best = search.best_tree(PROF, ["fast", "slow"] * 3, "bcast", 1024, root=1)
    d = best.to_dict()
    assert d["parent"][1] == -1 and d["method"] == "exact" and d["exact"] is True
    assert set(d) >= {"time_us", "parent", "children", "compared_us", "method", "op", "size"}
    with pytest.raises(AttributeError):
        best.time_us = 0  # frozen


def test_registered_trees_and_errors():
    layout = ["fast", "slow", "slow", "fast"]
    assert chosen("optimal", 4, 0, layout, PROF).n == 4
    assert chosen("fnf:1024", 4, 0, layout, PROF).n == 4
    opt = chosen("optimal:4K", 4, 2, layout, PROF)
    assert opt.root == 2
    assert predict.bcast(PROF, layout, opt, [4096])[0] == pytest.approx(search.exact_bcast(PROF, layout, 4096, 2)[1])
    sc = chosen("optimal:scatter:1K", 4, 0, layout, PROF)
    assert sc == search.best_tree(PROF, layout, "scatter", 1024).tree
    with pytest.raises(TreeError, match="layout and a profile"):
        chosen("optimal", 4)
    with pytest.raises(TreeError, match="'xx'"):
        chosen("optimal:xx", 4, 0, layout, PROF)
    with pytest.raises(TreeError, match="layout has 4 ranks"):
        chosen("fnf", 5, 0, layout, PROF)
    with pytest.raises(InputError, match="magic"):
        search.best_tree(PROF, layout, method="magic")
    with pytest.raises(InputError, match="unknown operation 'barrier'"):
        search.best_tree(PROF, layout, op="barrier")
    with pytest.raises(InputError, match="allreduce combines buffers"):  # its algorithms need γ: never assumed
        search.best_tree(PROF, layout, op="allreduce")
    with pytest.raises(InputError, match="root 4"):
        search.best_tree(PROF, layout, root=4)


@pytest.mark.parametrize("op", ["scatter", "gather"])
@pytest.mark.parametrize("size", [0, 1024, 4096])
def test_op_optimal_never_worse_than_the_broadcast_optimum_on_that_op(op, size):
    from hnowmodel import paper_profile

    prof, layout = paper_profile(), ["fast"] * 4 + ["slow"] * 4
    own = chosen(f"optimal:{op}:{size}", 8, 0, layout, prof)
    bshape = chosen(f"optimal:bcast:{size}", 8, 0, layout, prof)
    assert ops.predict(op, prof, layout, own, [size])[0] <= ops.predict(op, prof, layout, bshape, [size])[0]
