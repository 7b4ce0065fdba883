"""The model engine's extension points: the variant registry (hnowmodel.variants), the schedule a variant is told
(hnowmodel.runopts), the movement an operation names (hnowmodel.movement) and the typed network terms
(hnowmodel.params.NetworkTerms)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import flow, ops, variants
from hnowmodel.errors import InputError, ProfileError
from hnowmodel.fitreport import fit_report
from hnowmodel.params import Link, NetworkTerms, NodeType, Profile, paper_profile
from hnowmodel.runopts import RECV_ORDERS, Schedule, as_schedule, common_start_us
from hnowmodel.variants import VARIANTS, Variant

LAYOUT = ["fast", "slow", "fast", "slow"]


# ---- the variant registry --------------------------------------------------------------------------------------
def test_every_entry_serves_its_operations_and_says_where_the_exact_search_applies():
    # the variants with an engine over message schedules also serve the operations whose algorithms are schedules
    schedules = ("reduce", "allreduce", "allgather", "reduce_scatter", "alltoall")
    want = {
        "link": (("gather",), set(), False),
        "paper": (("bcast", "scatter", "gather", *schedules), {"bcast"}, False),
        "flow": (("bcast", "scatter", "gather", *schedules), set(), True),
        "flow-weighted": (("bcast", "scatter", "gather", *schedules), set(), True),
        "flow-fifo": (("bcast", "scatter"), set(), True),
        "flow-rr": (("bcast", "scatter", *schedules), set(), True),  # schedules on the tandem of queues
    }
    assert variants.names() == tuple(want)
    for name, (served, exact, flow_level) in want.items():
        v = variants.get(name)
        assert v.name == name and v.summary, name
        assert tuple(op for op in ops.names() if v.serves(ops.get(op))) == served, name
        assert {op for op in ops.names() if v.exact_for(ops.get(op))} == exact, name
        assert v.flow_level is flow_level, name


def test_an_operation_lists_the_variants_that_serve_it_in_registry_order():
    for o in ops.OPERATIONS.values():
        # a tree operation is served through its movement; one whose algorithms are schedules by the engines
        engines = ("paper", "flow", "flow-weighted", "flow-rr")
        by_movement = variants.serving(o.movement) if o.movement is not None else engines
        assert tuple(o.variants) == variants.serving(o) == by_movement
        assert o.default_variant in o.variants and o.network_variant in o.variants


def test_unknown_variants_name_the_valid_ones():
    with pytest.raises(InputError, match=r"unknown model variant 'x' \(choose from: link, paper, flow"):
        variants.get("x")
    with pytest.raises(InputError, match=r"unknown gather model variant 'flow-rr' \(choose from: link, paper, flow, "):
        variants.check(ops.get("gather"), "flow-rr")
    with pytest.raises(InputError, match="does not predict gather .subtree blocks up; it serves: one message down"):
        variants.get("flow-fifo").predictor(ops.get("gather"))
    with pytest.raises(InputError, match="serves data movements: give an operation or a movement, got 'gather'"):
        variants.get("paper").predictor("gather")  # a name is the operation registry's to resolve


def test_adding_a_variant_is_one_entry_plus_its_predictor():
    """A toy variant (every rank done at m µs) joins a copy of the registry: the operation lists it, the checks
    accept it, and its predictions go through the one signature; the built-in registry is untouched."""

    def toy(profile, layout, tree, sizes, schedule, *, per_rank=False, root=0):
        m = np.asarray(sizes, dtype=float)
        return np.repeat(m[:, None], len(layout), axis=1) if per_rank else m

    bcast, scatter = ops.get("bcast"), ops.get("scatter")
    reg = variants.registered(Variant("toy", "every rank done at m µs", {bcast.movement: toy}))
    assert variants.serving(bcast, reg)[-1] == "toy" and "toy" not in VARIANTS
    v = variants.check(bcast, "toy", reg)
    assert v.predict(bcast, paper_profile(), LAYOUT, "binomial", [5, 7]).tolist() == [5.0, 7.0]
    assert v.predict(bcast, paper_profile(), LAYOUT, "binomial", [5], per_rank=True).shape == (1, 4)
    with pytest.raises(InputError, match="unknown scatter model variant 'toy'"):
        variants.check(scatter, "toy", reg)
    with pytest.raises(ValueError, match="exact for subtree blocks down, which it does not serve"):
        Variant("bad", "", {bcast.movement: toy}, exact=frozenset({scatter.movement}))


def test_every_predictor_takes_the_one_signature():
    prof, tree, sched = paper_profile(), hm.trees.binomial(4), Schedule()
    for v in VARIANTS.values():
        for op in v.movements:
            fn = v.predictor(op)
            t = fn(prof, LAYOUT, tree, [0, 4096], sched, per_rank=False, root=0)
            assert t.shape == (2,) and (t > 0).all(), (v.name, op)
            per = fn(prof, LAYOUT, tree, [4096], sched, per_rank=True, root=0)
            assert per.shape == (1, 4), (v.name, op)


def test_each_variant_takes_from_the_schedule_what_it_models():
    """The root's copy counts under every variant of scatter (made before its sends) and gather; the receive order
    only under the flow variants (the paper's equations have no posted receives)."""
    prof = Profile({k: NodeType(k, 1, 0.001, 1, 0.001, 500.0, 0.01) for k in ("fast", "slow")}, Link(1, 0.01))
    tree = hm.trees.binomial(4)
    for op in ("scatter", "gather"):
        for name in ops.get(op).variants:
            v = variants.get(name)
            plain = v.predict(ops.get(op), prof, LAYOUT, tree, [4096])
            copy = Schedule(root_copy=True, copy_first=op == "scatter")
            copied = v.predict(ops.get(op), prof, LAYOUT, tree, [4096], copy)
            assert copied[0] > plain[0], (op, name)
    ordered = Schedule(root_copy=True, recv_order="smallest_first", relay_waits=True)
    for name in ("link", "paper"):
        v = variants.get(name)
        same = v.predict(ops.get("gather"), prof, LAYOUT, tree, [4096], Schedule(root_copy=True))
        assert v.predict(ops.get("gather"), prof, LAYOUT, tree, [4096], ordered).tolist() == same.tolist(), name


def test_the_common_start_extra_is_the_schedules():
    doc = paper_profile().to_dict()
    doc["extensions"] = {"common_start": {"sizes_bytes": [0, 1000], "extra_us": [3.0, 1.0]}}
    prof = Profile.from_dict(doc)
    v, tree = variants.get("paper"), hm.trees.binomial(4)
    scatter = ops.get("scatter")
    plain = v.predict(scatter, prof, LAYOUT, tree, [0, 500, 4000])
    common = v.predict(scatter, prof, LAYOUT, tree, [0, 500, 4000], Schedule(common_start=True))
    np.testing.assert_allclose(common - plain, common_start_us(prof, [0, 500, 4000]), rtol=1e-12)
    assert (common - plain).tolist() == pytest.approx([3.0, 2.0, 1.0])
    per = v.predict(scatter, prof, LAYOUT, tree, [500], Schedule(common_start=True), per_rank=True)
    assert per[0].max() == pytest.approx(common[1])


def test_the_old_call_forms_fold_into_the_schedule():
    prof, tree = paper_profile(), hm.trees.binomial(4)
    new = ops.predict("scatter", prof, LAYOUT, tree, [4096], schedule=Schedule(root_copy=True, copy_first=True))
    old = ops.predict("scatter", prof, LAYOUT, tree, [4096], root_copy=True, copy_first=True)
    assert new.tolist() == old.tolist()
    assert (
        ops.predictor("scatter")(prof, LAYOUT, tree, [4096], root_copy=True, copy_first=True).tolist() == old.tolist()
    )
    assert hm.predict.gather(prof, LAYOUT, tree, [64], one_at_a_time=True).tolist() == (
        variants.get("link").predict(ops.get("gather"), prof, LAYOUT, tree, [64]).tolist()
    )
    with pytest.raises(InputError, match="unknown schedule field 'sharing'"):
        ops.predict("scatter", prof, LAYOUT, tree, [4096], sharing="rr")


def test_native_algorithms_carry_their_schedule():
    mpich = ops.get("gather").native["MPICH"]
    assert mpich.schedule == Schedule(root_copy=True, recv_order="smallest_first", relay_waits=True)
    assert mpich.root_copy and not mpich.copy_first
    assert ops.get("scatter").native["Open MPI"].schedule == Schedule(root_copy=True, copy_first=True)
    assert ops.get("bcast").native["MPICH"].schedule == Schedule()


# ---- the schedule --------------------------------------------------------------------------------------------
def test_a_schedule_refuses_what_no_implementation_does():
    with pytest.raises(InputError, match=r"unknown receive order \(recv_order\) 'lifo'.*smallest_first"):
        Schedule(recv_order="lifo")
    with pytest.raises(InputError, match="copy_first.*needs root_copy"):
        Schedule(copy_first=True)
    with pytest.raises(InputError, match="schedule sync: must be true or false"):
        Schedule(sync="yes")
    with pytest.raises(InputError, match="unknown schedule field 'root'"):
        as_schedule(None, root=1)
    with pytest.raises(InputError, match="must be a Schedule"):
        as_schedule({"root_copy": True})
    assert as_schedule(None) == Schedule() and RECV_ORDERS[0] == Schedule().recv_order


# ---- movements -----------------------------------------------------------------------------------------------
def test_an_operations_movement_is_the_one_the_flow_engine_simulates():
    for o in map(ops.get, ops.tree_names()):
        run = flow.simulate(o.movement, paper_profile(), ["fast"] * 3, hm.trees.chain(3), 100.0)
        assert run.movement == o.movement and o.edge_data == o.movement.edge_data
    with pytest.raises(InputError, match="simulate takes a data movement"):
        flow.simulate("bcast", paper_profile(), ["fast"] * 3, hm.trees.chain(3), 100.0)
    assert ops.get("bcast").movement.one_message and not ops.get("scatter").movement.one_message
    assert ops.get("gather").movement.toward_root and not ops.get("scatter").movement.toward_root
    tree = hm.trees.binomial(4)
    assert ops.get("scatter").movement.edge_bytes(tree, 10.0).tolist() == (tree.subtree_size * 10.0).tolist()
    assert ops.get("bcast").movement.edge_bytes(tree, 10.0).tolist() == [10.0] * 4


# ---- network terms -------------------------------------------------------------------------------------------
def _with_network(net):
    return Profile(paper_profile().types, paper_profile().network, extensions={"network": net})


def test_network_terms_absent_are_none_and_a_stated_zero_stays_zero():
    assert paper_profile().network_terms == NetworkTerms()
    got = _with_network({"burst_bytes": 0, "queued_bytes": 1500, "meaning": "not read"}).network_terms
    assert got.burst_bytes == 0.0 and got.queued_bytes == 1500.0 and got.burst_send_us is None
    assert got.burst == 0.0 and got.queued == 1500.0 and got.first_send_busy(10) == 0.0
    assert got.struct_rendezvous_from_bytes is None and got.struct_rendezvous_from == 0.0
    never = _with_network({"struct_rendezvous_from_bytes": None}).network_terms
    assert never.struct_rendezvous_from_bytes == math.inf and never.struct_rendezvous_from == math.inf
    prof = _with_network({"burst_bytes": 100})
    assert prof.network_terms is prof.network_terms  # parsed once


@pytest.mark.parametrize("key", list(NetworkTerms.UNITS))
@pytest.mark.parametrize("bad", [-1, "12", True, float("nan"), float("inf")])
def test_bad_network_terms_are_refused_by_name(key, bad):
    with pytest.raises(ProfileError, match=rf"profile\.extensions\.network\.{key}: must be a number of .* >= 0"):
        NetworkTerms.from_doc({key: bad})
    with pytest.raises(ProfileError, match=r"profile\.extensions\.network: must be an object"):
        _ = _with_network([1, 2]).network_terms


def test_the_fit_report_tells_an_absent_bucket_from_a_stated_one():
    assert not any("token bucket" in line for line in fit_report(_with_network({"burst_bytes": 0})))
    assert not any("token bucket" in line for line in fit_report(paper_profile()))
    assert any("token bucket: 3000 B" in line for line in fit_report(_with_network({"burst_bytes": 3000})))
