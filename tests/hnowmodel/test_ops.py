"""The operation registry is the one place an operation is defined: every entry is complete and everything that
lists operations reads it."""

from __future__ import annotations

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError


@pytest.mark.parametrize("name", ops.tree_names())
def test_every_tree_entry_is_complete(name):
    o = ops.get(name)
    assert o.name == name and o.summary
    assert o.default_variant in o.variants
    # what an edge carries is read by the engines from the operation's movement: the flow engine simulates it
    assert o.edge_data == o.movement.edge_data
    tree = hm.trees.chain(3)
    run = hm.flow.simulate(o.movement, hm.paper_profile(), ["fast"] * 3, tree, 100.0)
    moved = {(r.src, r.dst): r.nbytes for r in run.flows}
    edge = {c: 100.0 * (1 if o.edge_data == "one" else tree.subtree_size[c]) for c in (1, 2)}
    assert moved == (
        {(1, 0): edge[1], (2, 1): edge[2]} if o.movement.toward_root else {(0, 1): edge[1], (1, 2): edge[2]}
    )
    layout = ["fast", "slow", "fast"]
    for variant, fn in o.variants.items():
        t = fn(hm.paper_profile(), layout, hm.trees.binomial(3), [0, 1024])
        assert t.shape == (2,) and (t > 0).all() and t[1] > t[0], (name, variant)
    for library, nat in o.native.items():
        # pinned by its environment, or (a default) by the variables it needs unset; a tree hnow builds
        assert nat.env or nat.unset, (name, library)
        assert hm.trees.make_tree(nat.model_tree, 6).n == 6, (name, library)
        # a default known by size (Intel MPI's, read off the wire for its ranks and sizes) is predicted there
        n, m = nat.by_size.rows[0][:2] if nat.by_size else (len(layout), 1024)
        got = ops.native_predict(name, library, hm.paper_profile(), (layout * n)[:n], [m])
        assert got is not None and got[0] > 0, (name, library)


@pytest.mark.parametrize("name", [o for o in ops.names() if o not in ops.tree_names()])
def test_every_schedule_entry_is_complete(name):
    """An operation whose algorithms are message schedules: each algorithm predicted by every variant that serves
    it (a reduction given its γ), a C kernel code, and MPICH's default and pinned algorithms modelled by them."""
    o = ops.get(name)
    assert o.movement is None and o.algorithms and o.kernel == name and o.kernel_code >= 5
    assert o.variants_names() == ("paper", "flow", "flow-weighted", "flow-rr")
    gamma = 0.001 if o.reduction else None
    for alg in o.algorithms:
        for variant in o.variants_names():
            t = o.predict(hm.paper_profile(), ["fast", "slow"] * 2, alg, [64, 1024], variant=variant,
                          reduce_us_per_byte=gamma)  # fmt: skip
            assert t.shape == (2,) and (t > 0).all() and t[1] > t[0], (name, alg, variant)
    for nat in ops.native_algorithms(name, "MPICH"):
        modelled = nat.tree_on(["fast"] * 4, 8) if nat.varies else nat.model_tree
        if modelled is None and nat.per_layout is not None:
            continue  # depends on the hosts (a ch4 composition needs nodes shared): not run on one rank per host
        assert modelled in o.algorithms, (name, nat.algorithm)
        got = ops.native_predict(name, "MPICH", hm.paper_profile(), ["fast"] * 4, [64], algorithm=nat,
                                 reduce_us_per_byte=gamma)  # fmt: skip
        assert got is not None and got[0] > 0, (name, nat.algorithm)


def test_a_reduction_needs_its_reduction_cost_and_never_assumes_one():
    with pytest.raises(InputError, match="allreduce combines buffers: .*reduce_us_per_byte"):
        ops.get("allreduce").predict(hm.paper_profile(), ["fast"] * 2, "ring", [1024])
    assert ops.get("allgather").reduce_costs(hm.paper_profile(), [8, 16]) == [0.0, 0.0]
    no_gamma = ops.get("allreduce").predict(hm.paper_profile(), ["fast"] * 2, "ring", [1024], reduce_us_per_byte=0)
    with_gamma = ops.get("allreduce").predict(hm.paper_profile(), ["fast"] * 2, "ring", [1024], reduce_us_per_byte=1)
    assert with_gamma[0] > no_gamma[0]


def test_the_executors_run_every_registered_kernel():
    from calibrate.collectives import TreeExecutor
    from calibrate.nativedata import NativeDataExecutor
    from calibrate.nativeexec import NativeExecutor

    for o in ops.OPERATIONS.values():
        if o.movement is not None:
            assert callable(getattr(TreeExecutor, o.kernel)) and callable(getattr(NativeExecutor, o.kernel)), o.name
        else:  # no tree runs it: the library's own only
            assert callable(getattr(NativeDataExecutor, o.kernel)), o.name
            assert callable(getattr(NativeDataExecutor, f"_buffers_{o.kernel}")), o.name


def test_everything_that_lists_operations_reads_the_registry():
    from hnowmodel.options import MEASURE_OPS
    from hnowmodel.predictions import OPS_AND_PTP

    assert MEASURE_OPS == ops.names() and OPS_AND_PTP == ("ptp", *ops.names())
    assert set(ops.tree_names()) == {"bcast", "scatter", "gather"}
    assert set(ops.names()) - set(ops.tree_names()) == {
        "reduce",
        "allreduce",
        "allgather",
        "reduce_scatter",
        "alltoall",
    }


def test_unknown_operation_and_variant_name_the_choices():
    with pytest.raises(InputError, match="unknown operation 'barrier'.*bcast, scatter, gather, reduce, allreduce, al"):
        ops.get("barrier")
    with pytest.raises(InputError, match="unknown gather model variant 'x'.*link"):
        ops.check_variant("gather", "x")


def test_a_tree_is_chosen_under_the_variant_it_is_compared_under():
    """optimal:gather is chosen with the gather entry's default variant: the predictor under that variant finds it
    no slower than every standard tree."""
    prof, layout = hm.paper_profile(), ["fast", "slow", "slow", "fast", "slow", "fast"]
    best = hm.search.best_tree(prof, layout, op="gather", size=4096)
    fn = ops.predictor("gather")
    t_best = fn(prof, layout, best.tree, [4096])[0]
    assert best.time_us == pytest.approx(t_best)
    for name in ("binomial", "sequential", "hierarchical"):
        tree = hm.trees.make_tree(name, 6, layout=layout, profile=prof)
        assert t_best <= fn(prof, layout, tree, [4096])[0] + 1e-9, name
