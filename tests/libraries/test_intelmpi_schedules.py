"""Intel MPI's algorithms for reduce, allreduce, allgather, reduce_scatter and alltoall (``I_MPI_ADJUST_<OP>``
numbers, the schedules that model them, its default where the wire showed it) and their export as
``I_MPI_ADJUST_<OP>`` strings (``hnow export --format impi-env``). No MPI here: tests/jobs/test_intelmpi_schedules.py
runs them."""

from __future__ import annotations

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.export import export
from hnowmodel.export.make import AlgorithmRequest
from hnowmodel.layout import Layout
from hnowmodel.libraries.intelmpi.adjust import adjust_runs, adjust_variable, parse_adjust
from hnowmodel.libraries.intelmpi.schedules import OP_ALGORITHMS
from hnowmodel.params import Profile
from tests.helpers import picked_fastest

SCHEDULE_OPS = tuple(OP_ALGORITHMS)
LAYOUT = ["fast", "slow", "fast", "slow"]  # 4 ranks: the default's rows were read with one rank per host


def _gamma_profile() -> Profile:
    """The paper's profile with a reduction cost γ per node type (µs per byte), which the reductions need."""
    doc = hm.paper_profile().to_dict()
    doc["extensions"] = {
        "reduce": {
            "types": {"fast": {"Gc_us": 0.0, "Gm_us_per_byte": 2e-4}, "slow": {"Gc_us": 1.0, "Gm_us_per_byte": 5e-4}}
        }
    }
    return Profile.from_dict(doc)


def test_every_operation_has_intel_mpi_algorithms_pinned_by_their_numbers():
    """The registry lists Intel MPI for all eight operations; each algorithm is its I_MPI_ADJUST number, the leaf
    the export writes; MPI_Reduce_scatter_block reads its own variable."""
    assert set(SCHEDULE_OPS) == set(ops.names()) - set(ops.tree_names())
    assert all("Intel MPI" in ops.native_libraries(op) for op in ops.names())
    assert adjust_variable("reduce_scatter") == "I_MPI_ADJUST_REDUCE_SCATTER_BLOCK"
    want = {
        "reduce": {"binomial": 2},
        "allreduce": {"recursive_doubling": 1, "rabenseifner": 2, "ring": 8},
        "allgather": {"recursive_doubling": 1, "brucks": 2, "ring": 3},
        "reduce_scatter": {"recursive_halving": 1},
        "alltoall": {"brucks": 1, "pairwise": 3},
    }
    for op, names in want.items():
        alts = OP_ALGORITHMS[op].alternatives
        assert {a.algorithm: a.leaf for a in alts} == names, op
        for a in alts:
            assert a.env == {adjust_variable(op): str(a.leaf)}
            assert ops.get(op).schedule_algorithm(a.model_tree) is not None  # a schedule of the catalog
        dflt = ops.get(op).native["Intel MPI"]
        assert dflt.algorithm == "default" and dflt.env == {} and dflt.unset == (adjust_variable(op),)
    # Isend/Irecv is pinned (native:isend_irecv measures it) but not modelled: each rank also sends itself its block
    (isend,) = OP_ALGORITHMS["alltoall"].pinned_only
    assert isend.env == {"I_MPI_ADJUST_ALLTOALL": "2"} and isend.leaf is None and isend.tree_at(4, 4096) is None
    assert ops.native_spec_env("native:ring", ["allreduce"])["I_MPI_ADJUST_ALLREDUCE"] == "8"


def test_where_an_algorithm_runs_as_its_schedule():
    """Rabenseifner's: recursive doubling's one exchange on 2 ranks (the wire), MPICH's reduce_scatter_allgather from
    as many elements as the largest power of two <= n, not known below; recursive doubling allgather: powers of two."""
    rab = ops.native_for("native:rabenseifner", "allreduce", "Intel MPI")
    assert [rab.tree_at(n, m) for n, m in ((2, 8), (4, 24), (4, 32), (6, 32))] == [
        "recursive_doubling", None, "reduce_scatter_allgather", "reduce_scatter_allgather",
    ]  # fmt: skip
    rd = ops.native_for("native:recursive_doubling", "allgather", "Intel MPI")
    assert rd.tree_at(4, 8) == "recursive_doubling" and rd.tree_at(6, 8) is None
    ring = ops.native_for("native:ring", "allreduce", "Intel MPI")
    assert not ring.varies and ring.model_tree == "ring"
    prof = _gamma_profile()
    got = ops.native_predict("allreduce", "Intel MPI", prof, LAYOUT, [1024, 65536], algorithm=ring)
    assert got.tolist() == hm.predict("allreduce", prof, LAYOUT, "ring", [1024, 65536]).tolist()


def test_the_default_is_modelled_where_the_wire_showed_it():
    """One rank per host, 2 and 4 ranks: the schedules read off the wire at the sizes seen; nothing between rows,
    on other communicator sizes or with ranks sharing a host."""
    d = {op: ops.get(op).native["Intel MPI"] for op in SCHEDULE_OPS}
    assert [d["allreduce"].tree_at(4, m) for m in (8, 4096, 8192, 16384, 65536, 262144)] == [
        "recursive_doubling", "recursive_doubling", None, "reduce_scatter_allgather", None,
        "reduce_scatter_allgather",
    ]  # fmt: skip
    assert d["reduce"].tree_at(4, 1024) == "binomial" and d["reduce"].tree_at(4, 4096) is None  # Rabenseifner's
    assert d["allgather"].tree_at(4, 262144) == "recursive_doubling"
    assert [d["reduce_scatter"].tree_at(4, m) for m in (65536, 131072, 262144)] == [
        "recursive_halving", None, "pairwise",
    ]  # fmt: skip
    assert d["alltoall"].tree_at(2, 4096) == "scattered" and d["alltoall"].tree_at(4, 4096) is None
    assert all(d[op].tree_at(6, 4096) is None and d[op].tree_at(4, 4096, one_per_host=False) is None for op in d)
    t = ops.native_predict("allreduce", "Intel MPI", _gamma_profile(), LAYOUT, [4096, 8192, 16384])
    assert np.isfinite(t[0]) and np.isnan(t[1]) and np.isfinite(t[2])


def test_the_default_on_12_ranks_is_modelled_where_the_wire_showed_it():
    """12 ranks, one per host (the tune_vs_exhaustive shape): allreduce's reduce_scatter_allgather at 16-256 KiB,
    reduce_scatter's recursive halving at 16 KiB and pairwise from 64 KiB, reduce pipelined up knomial_1 (16, 64 KiB)
    and a chain (256 KiB), allgather's folded recursive doubling; alltoall every send and receive at once."""
    d = {op: ops.get(op).native["Intel MPI"] for op in SCHEDULE_OPS}
    sizes = (16384, 65536, 262144)
    assert {d["allreduce"].tree_at(12, m) for m in sizes} == {"reduce_scatter_allgather"}
    assert [d["reduce_scatter"].tree_at(12, m) for m in sizes] == ["recursive_halving", "pairwise", "pairwise"]
    assert [d["reduce"].tree_at(12, m) for m in sizes] == ["pipelined_knomial1"] * 2 + ["pipelined_chain"]
    assert {d["allgather"].tree_at(12, m) for m in sizes} == {"recursive_doubling_fold"}
    assert {d["alltoall"].tree_at(12, m) for m in sizes} == {"linear"} and d["alltoall"].tree_at(12, 8192) is None
    assert d["allreduce"].tree_at(12, 16384, one_per_host=False) is None


def test_the_default_on_6_ranks_is_modelled_where_the_wire_showed_it():
    """6 ranks, one per host (experiments/intel_schedules_wire.py --np 6): every operation; alltoall's Isend/Irecv as
    the all-at-once schedule, whose time its measured time agrees with (docs/intel-mpi.md)."""
    d = {op: ops.get(op).native["Intel MPI"] for op in SCHEDULE_OPS}
    sizes = (16384, 65536, 262144)
    assert [d["reduce"].tree_at(6, m) for m in sizes] == ["pipelined_knomial1_4"] * 2 + ["pipelined_chain"]
    assert [d["allreduce"].tree_at(6, m) for m in sizes] == [
        "reduce_scatter_allgather", "ring_rest_last", "reduce_scatter_allgather",
    ]  # fmt: skip
    assert [d["reduce_scatter"].tree_at(6, m) for m in sizes] == ["recursive_halving"] * 2 + ["pairwise"]
    assert {d["allgather"].tree_at(6, m) for m in sizes} == {"recursive_doubling_fold"}
    assert {d["alltoall"].tree_at(6, m) for m in sizes} == {"linear"}


def test_the_default_on_4_hosts_of_3_is_what_the_wire_showed_between_hosts():
    """12 ranks, 3 per host in blocks (experiments/intel_schedules_wire.py --np 12 --ppn 3): reduce's knomial_1,
    Rabenseifner's and a chain of 4 KiB segments, reduce_scatter's recursive halving then pairwise; hosts of other
    rank counts or unequal hosts: not modelled."""
    d = {op: ops.get(op).native["Intel MPI"] for op in SCHEDULE_OPS}
    shared = Layout(["fast"] * 12, np.repeat(np.arange(4), 3))
    sizes = (16384, 65536, 262144)
    runs = {op: [d[op].tree_on(shared, m) for m in sizes] for op in d}
    assert runs["reduce"] == ["pipelined_knomial1", "reduce_scatter_gather", "pipelined_chain_4k"]
    assert runs["reduce_scatter"] == ["recursive_halving", "pairwise", "pairwise"]
    assert runs["allreduce"] == ["reduce_scatter_allgather"] * 3 and runs["alltoall"] == [None] * 3
    uneven = Layout(["fast"] * 12, np.r_[[0] * 4, [1] * 2, np.repeat([2, 3], 3)])
    assert all(d[op].tree_on(uneven, 65536) is None for op in d)


def test_the_default_on_hosts_of_2_1_and_3_ranks_is_what_the_wire_showed_between_hosts():
    """Hosts of 2, 1 and 3 ranks in blocks (experiments/intel_schedules_wire.py --slots 2,1,3): as on 6 hosts of
    their own except allreduce's Rabenseifner at 64 KiB and allgather's ring at 256 KiB; reduce only at 256 KiB (below
    it the hosts' second ranks send to rank 0 directly); alltoall's Isend/Irecv as the all-at-once schedule. The same
    counts in another host order are not the shape the wire showed."""
    d = {op: ops.get(op).native["Intel MPI"] for op in SCHEDULE_OPS}
    mixed = Layout(["fast"] * 2 + ["slow"] + ["medium"] * 3, [0, 0, 1, 2, 2, 2])
    sizes = (16384, 65536, 262144)
    runs = {op: [d[op].tree_on(mixed, m) for m in sizes] for op in d}
    assert runs["reduce"] == [None, None, "pipelined_chain"]
    assert runs["allreduce"] == ["reduce_scatter_allgather"] * 3
    assert runs["allgather"] == ["recursive_doubling_fold"] * 2 + ["ring"]
    assert runs["reduce_scatter"] == ["recursive_halving"] * 2 + ["pairwise"]
    assert runs["alltoall"] == ["linear"] * 3
    other = Layout(["medium"] * 3 + ["fast"] * 2 + ["slow"], [0, 0, 0, 1, 1, 2])  # (3, 2, 1)
    assert all(d[op].tree_on(other, 65536) is None for op in d)


def test_the_export_writes_the_strings_intel_mpi_reads_for_the_five_operations():
    """Where the default is modelled the fastest modelled algorithm is chosen against it and written as rules for
    exactly 4 ranks under the operation's variable (MPI_Reduce_scatter_block's: ..._REDUCE_SCATTER_BLOCK); read back,
    every size runs what was chosen; where the default is not modelled it is kept, with a note."""
    prof = _gamma_profile()
    sizes = [1024, 8192, 16384]
    req = AlgorithmRequest(ops=SCHEDULE_OPS, sizes=sizes, layout=LAYOUT)
    ex = export(prof, ["impi-env"], algorithms=req)
    sel = ex.impi
    text = ex.files["impi-env"]
    assert text.startswith("# Intel MPI algorithms written by hnow export for exactly 4 ranks")
    assert set(sel.strings) <= {adjust_variable(op) for op in SCHEDULE_OPS}
    assert 'I_MPI_ADJUST_REDUCE_SCATTER"' not in text and "I_MPI_ADJUST_REDUCE_SCATTER=" not in text
    numbers = {op: {a.algorithm: a.leaf for a in OP_ALGORITHMS[op].alternatives} for op in SCHEDULE_OPS}
    for var, value in sel.strings.items():
        assert f'export {var}="{value}"' in text
        op = next(o for o in SCHEDULE_OPS if adjust_variable(o) == var)
        rules = parse_adjust(value)
        assert all(r.plo == r.phi == 4 for r in rules) if len(rules) == 1 else all(r.plo is None for r in rules)
        dflt = OP_ALGORITHMS[op].native
        for r in (x for x in sel.rows if x.op == op):
            got = adjust_runs(rules, 4, r.size_bytes)
            if r.chosen == "tuning-file":  # not modelled: no rule (a note says 2021.16 may run another's there)
                assert got is None, (op, r)
            elif r.chosen != "default":
                assert got == numbers[op][r.chosen], (op, r)
            elif got is not None:  # the default kept by the number that runs its schedule there (no gap)
                runs = {a.leaf: a for a in OP_ALGORITHMS[op].alternatives}[got]
                assert runs.tree_at(4, r.size_bytes) == dflt.tree_at(4, r.size_bytes) is not None, (op, r)
    # 8 KiB: not modelled for allreduce on 4 ranks (between the rows): the default kept there, with a note
    assert any(n.startswith("allreduce at 8K:") for n in sel.notes), sel.notes
    # the choice is the fastest modelled one at each size, against the default where it is modelled
    for r in sel.rows:
        if r.default_us is not None:
            assert picked_fastest(r), r


def test_the_export_of_a_reduction_needs_gamma_and_a_rank_order_refuses_these_operations():
    req = AlgorithmRequest(ops=("allreduce",), sizes=(1024,), layout=LAYOUT)
    with pytest.raises(hm.InputError, match="reduction cost"):
        export(hm.paper_profile(), ["impi-env"], algorithms=req)
    with pytest.raises(hm.InputError, match="not yet supported for a rank order"):
        export(_gamma_profile(), ["hostfile", "impi-env"], op="alltoall")


def test_the_default_on_four_hosts_of_three_ranks_is_what_its_time_showed_and_nothing_elsewhere():
    """Intel MPI's default on 4 hosts x 3 ranks (identified by time, hnowmodel/libraries/intelmpi/schedules.py):
    allreduce reduce_scatter_allgather, allgather the folded recursive doubling then the ring; not modelled on
    other shared layouts nor at sizes not seen."""
    from hnowmodel.layout import Layout

    four_by_three = Layout(["f"] * 12, [i // 3 for i in range(12)])
    allreduce = ops.get("allreduce").native["Intel MPI"]
    allgather = ops.get("allgather").native["Intel MPI"]
    assert [allreduce.on(four_by_three, m)[0] for m in (16384, 262144)] == ["reduce_scatter_allgather"] * 2
    assert [allgather.on(four_by_three, m)[0] for m in (16384, 65536, 262144)] == [
        "recursive_doubling_fold", "recursive_doubling_fold", "ring"
    ]  # fmt: skip
    assert allgather.on(four_by_three, 1024) is None
    assert allreduce.on(Layout(["f"] * 12, [i // 2 for i in range(12)]), 16384) is None  # 6 hosts x 2: not seen
    assert allreduce.on(["f"] * 12, 16384)[0] == "reduce_scatter_allgather"  # one rank per host: the wire's rows
