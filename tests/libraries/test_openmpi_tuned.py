"""Open MPI's coll/tuned algorithms for the operations whose algorithms are message schedules
(hnowmodel/libraries/openmpi/tuned.py): the fixed rules read off coll_tuned_decision_fixed.c (v5.0.x), what each
algorithm id is modelled by, and how each is pinned."""

from __future__ import annotations

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.libraries.openmpi.tuned import MCA_NAMES, OP_ALGORITHMS, default_model, fixed_algorithm


def test_the_fixed_rules_follow_open_mpis_source():
    # commutative branch of each ompi_coll_tuned_<op>_intra_dec_fixed, at the bounds of a few ranges
    assert [fixed_algorithm("allreduce", 2, m) for m in (4, 8, 4095, 4096, 8192, 65535, 65536, 262144)] == [
        4, 3, 3, 4, 3, 4, 5, 6
    ]  # fmt: skip
    assert [fixed_algorithm("allreduce", n, 16384) for n in (6, 12, 24, 100)] == [6, 6, 6, 3]
    # allgather and alltoall have a branch of their own for exactly 2 ranks
    assert fixed_algorithm("allgather", 2, 1 << 20) == 6 and fixed_algorithm("allgather", 3, 1 << 20) == 3
    assert [fixed_algorithm("alltoall", 2, m) for m in (1, 2, 1024, 4096, 65536, 262144)] == [2, 5, 5, 2, 4, 5]
    assert [fixed_algorithm("alltoall", 6, m) for m in (1024, 8192, 16384, 1 << 20)] == [4, 1, 4, 1]
    assert [fixed_algorithm("reduce", 2, m) for m in (4, 8, 16, 1024, 262144, 524288, 1 << 20)] == [
        7, 4, 3, 1, 3, 2, 3
    ]  # fmt: skip
    assert fixed_algorithm("reduce", 40, 1) == 5
    assert [fixed_algorithm("reduce_scatter", 2, m) for m in (2, 4, 8, 1024, 4096, 131072)] == [2, 4, 3, 4, 3, 1]


def test_each_algorithm_is_modelled_by_its_schedule_or_open_mpis_own():
    nat = {op: {a.algorithm: a for a in OP_ALGORITHMS[op].alternatives} for op in OP_ALGORITHMS}
    assert nat["allreduce"]["ring"].tree_at(4, 64) == "ring"
    assert nat["allreduce"]["ring"].tree_at(4, 16) == "recursive_doubling"  # fewer elements than ranks
    assert nat["allreduce"]["segmented_ring"].tree_at(4, 4096) == "ring"  # segment size 0: one segment
    # Open MPI's own Rabenseifner (its fold keeps the even ranks) and binomial reduce (two receives posted)
    assert nat["allreduce"]["rabenseifner"].tree_at(6, 32) == "rabenseifner"
    assert nat["allreduce"]["rabenseifner"].tree_at(6, 24) is None  # basic linear then
    assert nat["allgather"]["recursive_doubling"].tree_at(6, 8) == "brucks"  # not a power of two
    assert nat["allgather"]["two_proc"].tree_at(2, 8) == "recursive_doubling"
    assert nat["allgather"]["two_proc"].tree_at(3, 8) is None
    assert nat["alltoall"]["pairwise"].tree_at(4, 8) == "pairwise_shift"
    assert nat["alltoall"]["linear_sync"].tree_at(4, 8) == "linear"
    assert nat["reduce"]["binomial"].tree_at(5, 8) == "in_order_binomial"
    assert nat["reduce"]["rabenseifner"].tree_at(4, 4096) == "rabenseifner"
    assert nat["reduce"]["rabenseifner"].tree_at(6, 24) == "linear"  # fewer elements than pof2: the linear reduce
    not_modelled = {(op, a.algorithm) for op in nat for a in nat[op].values() if a.tree_at(4, 4096) is None}
    assert not_modelled == {
        ("allreduce", "basic_linear"), ("allreduce", "nonoverlapping"),
        ("allgather", "linear"), ("allgather", "neighbor"), ("allgather", "two_proc"), ("allgather", "sparbit"),
        ("alltoall", "two_proc"),
        ("reduce", "chain"), ("reduce", "pipeline"), ("reduce", "binary"), ("reduce", "in-order_binary"),
        ("reduce_scatter", "basic_linear"), ("reduce_scatter", "recursive_doubling"), ("reduce_scatter", "butterfly"),
    }  # fmt: skip
    # every model is an algorithm of the operation's registry entry
    for op, by_name in nat.items():
        for a in by_name.values():
            for n in (2, 3, 4, 8):
                name = a.tree_at(n, 4096)
                assert name is None or ops.get(op).schedule_algorithm(name) is not None, (op, a.algorithm, n)


@pytest.mark.parametrize("op", list(OP_ALGORITHMS))
def test_pinned_by_tuned_mca_parameters_and_the_default_is_the_fixed_rules(op):
    var = f"OMPI_MCA_coll_tuned_{MCA_NAMES[op]}_algorithm"
    default = ops.get(op).native["Open MPI"]
    assert default.algorithm == "default" and var in default.unset and default.env == {"OMPI_MCA_coll": "^han"}
    assert default.tree_at(2, 1024) == default_model(op, 2, 1024)
    for number, a in enumerate(OP_ALGORITHMS[op].alternatives, start=1):
        assert a.env[var] == str(number) and a.env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
        assert a.leaf == (number, 0, 0)  # what a rules file says to run it, as the fixed rules run it
        got = ops.native_for(f"native:{a.algorithm}", op, "Open MPI")  # basic_linear reduce_scatter: per layout
        assert (got.env, got.leaf, got.algorithm) == (a.env, a.leaf, a.algorithm)
    assert MCA_NAMES["reduce_scatter"] == "reduce_scatter_block"  # MPI_Reduce_scatter_block: tuned's own component


def test_han_simple_allreduce_is_a_reduce_on_each_host_an_allreduce_of_leaders_and_a_bcast_on_each_host():
    """``native:han:simple`` (coll/han's simple allreduce) on 2 hosts x 2 ranks, the hosts' ranks interleaved (host
    0: ranks 0, 2; host 1: ranks 1, 3): each level runs tuned's fixed rules for its ranks (at 1 KiB: linear reduce on
    2, recursive doubling on 2 leaders, basic linear bcast on 2), placed on the job's ranks, one phase after another."""
    from hnowmodel.layout import Layout
    from tests.helpers import paper_shm_profile

    nat = ops.native_for("native:han:simple", "allreduce", "Open MPI")
    assert nat.env["OMPI_MCA_coll_han_use_allreduce_algorithm"] == "simple" and nat.leaf is None
    assert "OMPI_MCA_coll_tuned_allreduce_algorithm" in nat.unset  # the levels run the fixed rules
    lay = Layout(["fast", "slow", "fast", "slow"], [0, 1, 0, 1])
    alg, _ = nat.on(lay, 1024)
    assert alg.name == "han:linear/recursive_doubling/ompi-linear"
    msgs = alg.schedule(4, 1024.0).messages()
    cols = (msgs[k].tolist() for k in ("step", "src", "dst", "reduce_bytes"))
    got = list(zip(*cols, strict=True))
    assert got == [(0, 2, 0, 1024.0), (0, 3, 1, 1024.0), (1, 0, 1, 1024.0), (1, 1, 0, 1024.0), (2, 0, 2, 0.0),
                   (2, 1, 3, 0.0)]  # fmt: skip
    assert all(s.waits for s in alg.schedule(4, 1024.0).steps)  # each phase waits for the one before
    prof = hm.Profile.from_dict(
        {**paper_shm_profile().to_dict(), "extensions": {"reduce": {"types": {
            t: {"Gc_us": 0.5, "Gm_us_per_byte": 3e-4} for t in ("fast", "slow")}}}}
    )  # fmt: skip
    got_us = ops.native_predict("allreduce", "Open MPI", prof, lay, [1024], algorithm=nat)[0]
    assert got_us == ops.get("allreduce").predict(prof, lay, alg, [1024])[0] > 0
    # han does not run on one rank per host, nor on hosts with different numbers of ranks: nothing modelled there
    assert nat.on(["fast"] * 4, 1024) is None and nat.on(Layout(["fast"] * 3, [0, 0, 1]), 1024) is None
    # a level whose fixed-rules algorithm hnow does not model: none (reduce on 2 ranks below 32 B runs 7, 4, 3)
    assert nat.on(lay, 8) is None


def test_basic_linear_reduce_scatter_is_tuneds_reduce_of_the_whole_vector_then_its_scatter():
    """tuned's reduce_scatter_block 1 (ompi_coll_base_reduce_scatter_block_basic_linear): coll_reduce of all p
    blocks to rank 0, then coll_scatter of one block to each rank, both by the fixed rules (12 ranks, 16 KiB blocks:
    the in-order binomial reduce of 192 KiB, the linear scatter)."""
    nat = ops.native_for("native:basic_linear", "reduce_scatter", "Open MPI")
    alg, _ = nat.on(["f"] * 12, 16384)
    assert alg.name == "linear:in_order_binomial/ompi-linear"
    s = alg.schedule(12, 16384.0)
    msgs = s.messages()
    red = msgs["reduce_bytes"] > 0
    assert set(msgs["nbytes"][red].tolist()) == {12 * 16384.0}  # every reduce message carries the whole vector
    scat = msgs["src"][~red].tolist(), msgs["dst"][~red].tolist(), set(msgs["nbytes"][~red].tolist())
    assert scat == ([0] * 11, list(range(1, 12)), {16384.0})  # then rank 0 sends each rank its block
