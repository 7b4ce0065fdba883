"""An operation whose algorithms are message schedules is one registry entry: its generators, evaluated by every
variant that has an engine over schedules (hnowmodel.ops.Operation.algorithms, hnowmodel.variants.Variant.evaluate),
and reached through hm.predict like any tree."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import ops, variants
from hnowmodel.errors import InputError
from hnowmodel.layout import Layout
from hnowmodel.params import Link, NodeType, Profile, paper_profile
from hnowmodel.schedules import Algorithm, binomial_bcast, bruck_allgather, closed, flows, ring_allgather
from tests.golden_corpus import DATA

ALLGATHER = ops.Operation(
    "allgather",
    "every rank's m bytes to every rank",
    "paper",
    algorithms={
        "ring": Algorithm("ring", "p - 1 steps to the right-hand neighbour", ring_allgather),
        "bruck": Algorithm("bruck", "ceil(lg p) steps of doubling distance", bruck_allgather),
    },
)
LAYOUT = ["fast", "slow", "fast", "slow", "fast"]


@pytest.fixture
def registered(monkeypatch):
    """The registry with ALLGATHER added: what adding its one entry to hnowmodel/ops.py does."""
    monkeypatch.setattr(ops, "OPERATIONS", MappingProxyType({**ops.OPERATIONS, "allgather": ALLGATHER}))


def test_every_variant_with_an_engine_over_schedules_serves_it_and_the_others_say_which_do():
    assert ALLGATHER.variants_names() == ("paper", "flow", "flow-weighted", "flow-rr")
    assert variants.serving(ALLGATHER) == ALLGATHER.variants_names()
    with pytest.raises(InputError, match=r"unknown allgather model variant 'flow-fifo' \(choose from: paper, flow, "):
        ALLGATHER.predict(paper_profile(), LAYOUT, "ring", [0], variant="flow-fifo")
    with pytest.raises(InputError, match="predicts trees only, not the algorithm 'ring'.*flow-weighted, flow-rr"):
        variants.get("flow-fifo").predict_algorithm(paper_profile(), LAYOUT, ALLGATHER.algorithms["ring"], [0])


def test_its_predictions_are_the_engines_over_the_generated_schedule():
    prof, sizes = paper_profile(), [0.0, 1024.0, 65536.0]
    for name, alg in ALLGATHER.algorithms.items():
        got = ALLGATHER.predict(prof, LAYOUT, name, sizes)
        want = [closed.evaluate(prof, LAYOUT, alg.schedule(5, m)) for m in sizes]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = ALLGATHER.predict(prof, LAYOUT, name, sizes, variant="flow")
        want = [flows.evaluate(prof, LAYOUT, alg.schedule(5, m)).completion_us for m in sizes]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        per = ALLGATHER.predict(prof, LAYOUT, alg, sizes, per_rank=True)
        assert per.shape == (3, 5) and np.allclose(per.max(axis=1), ALLGATHER.predict(prof, LAYOUT, name, sizes))


def test_a_ring_of_four_equal_ranks_by_hand():
    """Three steps, each a message of m bytes to the right: S + X + R = (1 + 0.01 m) + (5 + 0.02 m) + (2 + 0.01 m)
    per step, each step waiting for the previous one's receive."""
    prof = Profile({"f": NodeType("f", 1.0, 0.01, 2.0, 0.01)}, Link(5.0, 0.02))
    m = 1000.0
    assert ALLGATHER.predict(prof, ["f"] * 4, "ring", [m]).tolist() == pytest.approx([3 * (8.0 + 0.04 * m)])


def test_hm_predict_reaches_it_through_the_registry(registered):
    prof = paper_profile()
    got = hm.predict("allgather", prof, "FSFSF", "ring", [0, 4096])
    np.testing.assert_allclose(got, ALLGATHER.predict(prof, LAYOUT, "ring", [0, 4096]), rtol=1e-12)
    net = hm.predict("allgather", prof, LAYOUT, "bruck", [4096], variant="flow")
    assert net.shape == (1,) and net[0] > 0
    with pytest.raises(InputError, match=r"unknown allgather algorithm 'binomial' \(choose from: ring, bruck\)"):
        hm.predict("allgather", prof, LAYOUT, "binomial", [0])
    with pytest.raises(InputError, match="is a message schedule: schedule= and library= apply to trees"):
        hm.predict("allgather", prof, LAYOUT, "ring", [0], library="mpich")


def test_a_tree_operation_may_add_a_schedule_algorithm_and_both_paths_agree():
    """bcast given MPICH's binomial as a message schedule predicts what its binomial tree does (eq. 7), on hosts of
    several ranks too; its trees stay on the tree engines."""
    bcast = dataclasses.replace(
        ops.get("bcast"), algorithms={"binomial-steps": Algorithm("binomial-steps", "", binomial_bcast, rooted=True)}
    )
    prof = hm.Profile.load(DATA / "realmpi_profile.json")
    types = sorted(prof.types)
    lay = Layout([types[i % 2] for i in range(6)])
    for root in (0, 4):
        steps = bcast.predict(prof, lay, "binomial-steps", [8, 4096, 65536], root=root, variant="paper")
        tree = bcast.predict(prof, lay, hm.trees.binomial(6, root=root), [8, 4096, 65536], variant="paper")
        np.testing.assert_allclose(steps, tree, rtol=1e-12)


def test_an_entry_needs_a_movement_or_algorithms():
    with pytest.raises(ValueError, match="neither a movement .tree algorithms. nor algorithms"):
        ops.Operation("nothing", "moves nothing", "paper")
    with pytest.raises(InputError, match="allgather has no tree algorithms .its algorithms: ring, bruck."):
        variants.get("paper").predictor(ALLGATHER)
