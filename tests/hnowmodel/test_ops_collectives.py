"""The operations whose algorithms are message schedules (reduce, allreduce, allgather, reduce_scatter, alltoall):
registry entries predicted through hm.predict on the paper's and a network profile, the best of their algorithms
chosen and named, MPICH's own algorithms modelled (its default by its selection JSON), and what does not apply to
them refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.export import export
from hnowmodel.libraries.mpich.defaults import RULES
from hnowmodel.schedules import closed, flows, ring_allreduce
from tests.golden_corpus import DATA

GAMMA = 0.0004  # µs per byte reduced, stated (no profile here measures one)


def test_allreduce_ring_on_the_paper_profile_is_the_closed_form_over_its_schedule():
    prof, lay = hm.paper_profile(), ["fast", "slow", "fast", "slow"]
    got = hm.predict("allreduce", prof, "FSFS", "ring", "16K,64K", reduce_us_per_byte=GAMMA)
    want = [
        closed.evaluate(prof, lay, ring_allreduce(4, m, elem_bytes=8), reduce_us_per_byte=GAMMA) for m in (16384, 65536)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # γ counts: each of the 3 reduce-scatter steps reduces a 4 KiB chunk (16 KiB / 4) on the critical path
    free = hm.predict("allreduce", prof, "FSFS", "ring", [16384], reduce_us_per_byte=0.0)
    assert got[0] - free[0] == pytest.approx(3 * 4096 * GAMMA, rel=1e-9)


def test_allreduce_ring_on_a_network_profile_is_the_flow_engine_over_its_schedule():
    """On a network profile the five operations' default is flow-rr: the flow engine on the tandem of queues."""
    prof = hm.Profile.load(DATA / "cluster_profile.json")
    lay = prof.host_layout
    assert ops.default_variant("allreduce", prof) == "flow-rr"
    got = hm.predict("allreduce", prof, None, "ring", [16384, 65536], reduce_us_per_byte=GAMMA)
    want = [
        flows.evaluate(
            prof, lay, ring_allreduce(len(lay), m, elem_bytes=8), reduce_us_per_byte=GAMMA, sharing="rr"
        ).completion_us
        for m in (16384, 65536)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_reduction_without_a_reduction_cost_is_refused_in_one_line():
    with pytest.raises(InputError, match=r"^allreduce combines buffers: .*\(--reduce-us-per-byte\)$"):
        hm.predict("allreduce", hm.paper_profile(), "FS", "ring", [1024])
    with pytest.raises(InputError, match="reduce_us_per_byte applies to an operation that combines buffers"):
        hm.predict("bcast", hm.paper_profile(), "FS", "binomial", [1024], reduce_us_per_byte=GAMMA)
    # allgather and alltoall combine nothing: no γ needed
    assert hm.predict("alltoall", hm.paper_profile(), "FSFS", "pairwise", [1024])[0] > 0


def test_each_size_is_m_as_the_registry_defines_it():
    """allgather's m is each rank's block: a ring sends (p - 1)·m per rank; alltoall's the block to each peer;
    reduce_scatter's the result block: each rank contributes p·m; allreduce's the whole vector."""
    n, m = 4, 1024.0
    assert ops.get("allgather").algorithms["ring"].schedule(n, m).bytes_sent().tolist() == [3 * m] * n
    assert ops.get("alltoall").algorithms["pairwise"].schedule(n, m).bytes_sent().tolist() == [3 * m] * n
    assert ops.get("reduce_scatter").algorithms["recursive_halving"].schedule(n, m).bytes_sent().tolist() == [3 * m] * n
    ring = ops.get("allreduce").algorithms["ring"].schedule(n, m)
    assert ring.bytes_sent().tolist() == [2 * 3 * m / n] * n


def test_best_tree_chooses_among_the_algorithms_and_names_the_one_it_chose():
    prof, lay = hm.paper_profile(), ["fast", "slow", "fast", "slow", "fast"]
    best = hm.search.best_tree(prof, lay, op="allreduce", size=65536, reduce_us_per_byte=GAMMA)
    times = {a: float(hm.predict("allreduce", prof, lay, a, [65536], reduce_us_per_byte=GAMMA)[0])
             for a in ops.get("allreduce").algorithms}  # fmt: skip
    # the algorithms and their rank orders are searched: never slower than any algorithm in the current order, and
    # the time is the prediction of the chosen algorithm in the chosen order
    assert best.tree is None and best.method in times and best.time_us <= min(times.values()) + 1e-9
    in_order = [lay[r] for r in best.perm]
    assert best.time_us == pytest.approx(
        float(hm.predict("allreduce", prof, in_order, best.method, [65536], reduce_us_per_byte=GAMMA)[0]), rel=1e-12
    )
    assert set(best.compared) == set(times) - {best.method}
    assert all(best.compared[k] <= v + 1e-9 for k, v in times.items() if k != best.method)
    assert best.to_dict()["algorithm"] == best.method and "parent" not in best.to_dict()
    # recursive doubling allgather runs on powers of two only: left out on 5 ranks, not an error
    ag = hm.search.best_tree(prof, lay, op="allgather", size=1024)
    assert "recursive_doubling" not in {ag.method, *ag.compared}
    with pytest.raises(InputError, match="allreduce combines buffers"):
        hm.search.best_tree(prof, lay, op="allreduce", size=1024)


def test_mpich_default_follows_its_selection_json():
    assert [RULES["allreduce"](4, m, True) for m in (8, 16, 32, 16384)] == [
        "recursive_doubling", "recursive_doubling", "reduce_scatter_allgather", "reduce_scatter_allgather"
    ]  # fmt: skip
    assert [RULES["allgather"](n, m, True) for n, m in ((4, 1024), (4, 131072), (6, 8192), (6, 16384))] == [
        "recursive_doubling", "ring", "brucks", "ring"
    ]  # fmt: skip
    assert [RULES["alltoall"](n, m, True) for n, m in ((2, 65536), (2, 16384), (9, 256), (9, 1024))] == [
        "pairwise", "scattered", "brucks", "scattered"
    ]  # fmt: skip
    assert [RULES["reduce"](n, m, True) for n, m in ((2, 2048), (2, 4096), (6, 16384), (6, 2056))] == [
        "binomial", "reduce_scatter_gather", "reduce_scatter_gather", "reduce_scatter_gather"
    ]  # fmt: skip
    assert (
        RULES["reduce_scatter"](2, 16384, True) == "recursive_halving"
        and RULES["reduce_scatter"](2, 262144, True) == "pairwise"  # from 512 KiB in all
    )
    nat = ops.get("allreduce").native["MPICH"]
    assert nat.algorithm == "default" and "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" in nat.unset
    assert nat.env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "none"
    ring = ops.native_for("native:ring", "allreduce", "MPICH")
    assert ring.env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "ring" and ring.model_tree == "ring"
    rsb = ops.native_for("native:recursive_halving", "reduce_scatter", "MPICH")
    assert rsb.env["MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM"] == "recursive_halving"


def test_the_native_prediction_is_the_algorithm_mpich_selects_at_each_size():
    prof, sizes = hm.paper_profile(), [8, 16384]
    got = hm.predict("allreduce", prof, "FSFS", "native", sizes, library="mpich", reduce_us_per_byte=GAMMA)
    want = [hm.predict("allreduce", prof, "FSFS", a, [m], reduce_us_per_byte=GAMMA)[0]
            for a, m in (("recursive_doubling", 8), ("reduce_scatter_allgather", 16384))]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # above 2 KiB MPICH's default reduce is Rabenseifner's (reduce_scatter_gather)
    got = hm.predict("reduce", prof, "FS", "native", [2048, 65536], library="mpich", reduce_us_per_byte=GAMMA)
    want = [hm.predict("reduce", prof, "FS", a, [m], reduce_us_per_byte=GAMMA)[0]
            for a, m in (("binomial", 2048), ("reduce_scatter_gather", 65536))]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # MPICH's pairwise reduce_scatter_block from p·m = 512 KiB
    got = hm.predict("reduce_scatter", prof, "FS", "native", [262144], library="mpich", reduce_us_per_byte=GAMMA)
    want = hm.predict("reduce_scatter", prof, "FS", "pairwise", [262144], reduce_us_per_byte=GAMMA)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_tree_things_refuse_them_in_one_line():
    with pytest.raises(InputError, match=r"unknown allreduce algorithm 'binomial' \(choose from: recursive_doubling, "):
        hm.predict("allreduce", hm.paper_profile(), "FS", "binomial", [1024], reduce_us_per_byte=GAMMA)
    with pytest.raises(InputError, match="^export of allreduce: not yet supported for a rank order"):
        export(hm.paper_profile(), ["hostfile"], op="allreduce")
    # MPICH's selection JSON, Open MPI's rules file and Intel MPI's strings write them
    # (tests/libraries/test_mpich_export_schedules.py, test_openmpi_export_schedules.py, test_intelmpi_schedules.py)


def test_a_profile_that_states_gamma_gives_it_at_each_size():
    """The profile's γ (extensions.reduce) at a buffer of m bytes, per node type, for every size; a stated one wins."""
    doc = hm.paper_profile().to_dict()
    reduce = {"types": {"fast": {"Gc_us": 1.0, "Gm_us_per_byte": 2e-4}, "slow": {"Gc_us": 0.0, "Gm_us_per_byte": 5e-4}}}
    prof = hm.Profile.from_dict({**doc, "extensions": {"reduce": reduce}})
    sizes = [1024, 65536]
    got = hm.predict("allreduce", prof, "FSFS", "ring", sizes)
    want = [hm.predict("allreduce", prof, "FSFS", "ring", [m], reduce_us_per_byte=prof.reduce_us_per_byte_at(m))[0]
            for m in sizes]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert prof.reduce_us_per_byte_at(1024)["fast"] > prof.reduce_us_per_byte_at(65536)["fast"]  # its constant
    stated = hm.predict("allreduce", prof, "FSFS", "ring", sizes, reduce_us_per_byte=0.0)
    assert (stated < got).all()
