"""``hm.predict(op, profile, layout, algorithm, sizes)``: the one public entry gives the numbers of the variant
``hnow predict`` uses (the flow engine's on a network profile, the paper's otherwise), for every kind of tree spec,
while ``hm.predict.bcast/scatter/gather`` stay the paper's closed-form engine."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import ops, search, trees
from hnowmodel.errors import InputError, LayoutError, TreeError
from hnowmodel.predictions import prediction_rows
from tests.helpers import network_profile

PAPER = hm.paper_profile()
FFSS = ["fast", "fast", "slow", "slow"]
SIZES = [0, 1024, 65536]
NET = network_profile()
NET_LAYOUT = ["fast", "mid", "slow", "slow", "mid", "fast"]


@pytest.mark.parametrize("op", ops.tree_names())  # by a tree; the others: tests/hnowmodel/test_ops_collectives.py
def test_network_profile_predicts_under_the_flow_default_as_hnow_predict(op):
    want_variant = ops.get(op).network_variant
    assert ops.default_variant(op, NET) == want_variant  # flow-rr (bcast, scatter) / flow (gather)
    tree = trees.binomial(len(NET_LAYOUT))
    got = hm.predict(op, NET, NET_LAYOUT, "binomial", SIZES)
    want = ops.predict(op, NET, NET_LAYOUT, tree, SIZES, variant=want_variant)
    np.testing.assert_array_equal(got, want)
    assert got.shape == (len(SIZES),)


def test_network_bcast_is_flow_rr_and_not_silently_the_paper_engine():
    got = hm.predict("bcast", NET, NET_LAYOUT, "binomial", SIZES)
    flow_rr = ops.predict("bcast", NET, NET_LAYOUT, trees.binomial(6), SIZES, variant="flow-rr")
    np.testing.assert_array_equal(got, flow_rr)
    paper = hm.predict.bcast(NET, NET_LAYOUT, trees.binomial(6), SIZES)  # the engine, kept by name
    np.testing.assert_array_equal(hm.predict("bcast", NET, NET_LAYOUT, "binomial", SIZES, variant="paper"), paper)


@pytest.mark.parametrize("op", ["bcast", "scatter"])
def test_paper_profile_equals_the_closed_form_engine(op):
    engine = getattr(hm.predict, op)
    for tree in (trees.binomial(4), trees.sequential(4), trees.chain(4)):
        np.testing.assert_array_equal(hm.predict(op, PAPER, FFSS, tree, SIZES), engine(PAPER, FFSS, tree, SIZES))


def test_paper_gather_default_is_link_and_paper_on_request():
    tree = trees.sequential(4)
    link = hm.predict.gather(PAPER, FFSS, tree, [1000], one_at_a_time=True)
    np.testing.assert_array_equal(hm.predict("gather", PAPER, FFSS, tree, [1000]), link)
    assert hm.predict("gather", PAPER, FFSS, "sequential", [1000]).tolist() == [614.0]  # tests/cli: by hand
    assert hm.predict("gather", PAPER, FFSS, "sequential", [1000], variant="paper").tolist() == [710.0]


def test_the_engine_names_and_the_module_stay():
    mod = importlib.import_module("hnowmodel.predict")
    assert mod is hm.predict and callable(mod)
    assert (
        mod.predict("bcast", PAPER, FFSS, "binomial", [0]).tolist()
        == hm.predict("bcast", PAPER, FFSS, "binomial", [0]).tolist()
    )
    assert hm.predict.ptp(PAPER, "fast", "slow", [0]).tolist() == [200.0]
    assert hm.predict.bcast is importlib.import_module("hnowmodel.closedform").bcast


def test_specs_layouts_profiles_and_sizes_as_hnow_predict_takes_them(tmp_path):
    p = PAPER.save(tmp_path / "p.json")
    want = hm.predict.bcast(PAPER, FFSS, trees.kary(4, 3), [0, 4096])
    for profile in (PAPER, str(p), "paper"):
        for layout in (FFSS, "FFSS", "fast*2,slow*2"):
            got = hm.predict("bcast", profile, layout, "kary:3", "0,4K")
            np.testing.assert_array_equal(got, want)
    f = tmp_path / "t.json"
    hm.io.write_json_atomic(f, trees.kary(4, 3).to_dict())
    np.testing.assert_array_equal(hm.predict("bcast", PAPER, FFSS, f"@{f}", [0, 4096]), want)


def test_a_bare_optimal_is_chosen_for_the_operation_at_each_size():
    got = hm.predict("scatter", PAPER, FFSS, "optimal", SIZES)
    for i, m in enumerate(SIZES):
        best = search.best_tree(PAPER, FFSS, op="scatter", size=m, compare=())
        assert got[i] == pytest.approx(best.time_us, rel=1e-12)
    per_rank = hm.predict("scatter", PAPER, FFSS, "optimal", SIZES, per_rank=True)
    assert per_rank.shape == (len(SIZES), 4)
    fixed = hm.predict("scatter", PAPER, FFSS, "optimal:scatter:64K", [65536])
    assert fixed[0] == pytest.approx(got[2], rel=1e-12)


def test_native_is_the_librarys_pinned_algorithm_for_a_library():
    want = ops.native_predict("bcast", "Open MPI", PAPER, FFSS, SIZES)
    np.testing.assert_array_equal(hm.predict("bcast", PAPER, FFSS, "native", SIZES, library="Open MPI"), want)
    np.testing.assert_array_equal(hm.predict("bcast", PAPER, FFSS, "native", SIZES, library="openmpi"), want)
    nat = ops.native_for("native:tree:kary:3", "bcast", "MPICH")
    want = ops.native_predict("bcast", "MPICH", PAPER, FFSS, SIZES, algorithm=nat)
    np.testing.assert_array_equal(hm.predict("bcast", PAPER, FFSS, "native:tree:kary:3", SIZES, library="mpich"), want)


def test_root_is_the_trees_own_or_the_one_asked_for():
    t = trees.binomial(4, root=2)
    want = hm.predict.bcast(PAPER, FFSS, t, SIZES)
    np.testing.assert_array_equal(hm.predict("bcast", PAPER, FFSS, t, SIZES), want)
    np.testing.assert_array_equal(hm.predict("bcast", PAPER, FFSS, "binomial", SIZES, root=2), want)


@pytest.mark.parametrize(
    "call, error, says",
    [
        (lambda: hm.predict("bcast", PAPER, FFSS, "native", [0]), InputError, "give one"),
        (lambda: hm.predict("bcast", PAPER, FFSS, "native", [0], library="lam"), InputError, "unknown MPI library"),
        (lambda: hm.predict("bcast", PAPER, FFSS, "binomial", [0], library="mpich"), InputError, "native"),
        (lambda: hm.predict("bcast", PAPER, FFSS, "binomial", [0], root=4), LayoutError, "root 4"),
        (lambda: hm.predict("bcast", PAPER, FFSS, "nosuchtree", [0]), TreeError, "nosuchtree"),
        (lambda: hm.predict("barrier", PAPER, FFSS, "binomial", [0]), InputError, "unknown operation"),
        (lambda: hm.predict("allreduce", PAPER, FFSS, "binomial", [0]), InputError, "unknown allreduce algorithm"),
        (lambda: hm.predict("gather", PAPER, FFSS, "binomial", [0], variant="flow-rr"), InputError, "flow-rr"),
        (lambda: hm.predict("bcast", PAPER, FFSS, "binomial", [-1]), InputError, "-1"),
        (lambda: hm.predict("bcast", PAPER, "FFMS", "binomial", [0]), LayoutError, "'M'"),
    ],
)
def test_bad_input_names_itself(call, error, says):
    with pytest.raises(error, match=says):
        call()


def test_prediction_rows_are_hm_predicts():
    rows = prediction_rows(NET, op="scatter", layout=NET_LAYOUT, trees="binomial,optimal", sizes=SIZES)
    for name in ("binomial", "optimal"):
        want = hm.predict("scatter", NET, NET_LAYOUT, name, SIZES)
        assert [r["time_us"] for r in rows if r["tree"] == name] == want.tolist()
    both = prediction_rows(PAPER, op="gather", layout=FFSS, trees="sequential", sizes=[1000], variant="gather=paper")
    assert both[0]["time_us"] == 710.0
