"""MPICH's two-level bcasts on given hosts (``smp``, ch4's compositions) and what its ch4 device runs by default on
hosts with several ranks, as the export and ``hnow tune`` weigh it (hnowmodel/libraries/mpich/ch4.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.export.choose import Pick
from hnowmodel.layout import Layout
from hnowmodel.libraries.mpich.ch4 import TWO_LEVEL, composition_model, leaders_run, smp_run
from hnowmodel.libraries.mpich.export import MpichBackend, choose_mpich, mpich_env_text
from tests.helpers import paper_shm_profile, picked_fastest

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"


def _hosts(*slots: int, kind: str = "fast") -> Layout:
    return Layout([kind] * sum(slots), hosts=[h for h, k in enumerate(slots) for _ in range(k)])


def _nat(op: str, name: str):
    return next(a for a in ops.native_algorithms(op, "MPICH") if a.algorithm == name)


@pytest.mark.parametrize(
    ("layout", "size", "want"),
    [
        (["f"] * 12, 8192, "binomial"),  # one rank per host: no node-aware communicator, MPIR's own choice
        (["f"] * 8, 65536, "scatter_recursive_doubling_allgather"),
        (_hosts(*[1] * 10, 2), 8192, TWO_LEVEL),  # below MPIR_CVAR_BCAST_SHORT_MSG_SIZE
        (_hosts(*[1] * 10, 2), 16384, "scatter_ring_allgather"),  # 12 ranks, not a power of two: flat
        (_hosts(1, 1, 1, 1, 1, 2), 262144, TWO_LEVEL),  # fewer than MPIR_CVAR_BCAST_MIN_PROCS
        (_hosts(4, 4), 65536, TWO_LEVEL),  # a power of two below 512 KiB: two levels, binomial on each
        (_hosts(8, 8), 65536, None),  # ... but hosts of 8 ranks run a scatter + allgather inside: not modelled
        (_hosts(4, 4), 1 << 20, "scatter_ring_allgather"),  # from 512 KiB: flat
        (_hosts(3, 3, 3, 3), 65536, "scatter_ring_allgather"),
    ],
)
def test_smp_runs_what_mpichs_source_says_on_those_hosts(layout, size, want):
    got = smp_run(layout, size)
    assert (got[0] if got else None) == want
    assert _nat("bcast", "smp").tree_on(layout, size) == want


def test_composition_alpha_is_two_levels_where_the_leaders_run_binomial():
    assert leaders_run(_hosts(8, 8), 65536)[0] == TWO_LEVEL  # inside hosts: shared memory, not MPIR's selection
    assert leaders_run(["f"] * 12, 16384) is None  # 12 leaders above 12288 B: a scatter + allgather among them
    assert leaders_run(_hosts(*[2] * 8), 8192)[0] == TWO_LEVEL


def test_smp_on_one_rank_per_host_is_predicted_as_the_flat_scatter_ring_allgather():
    prof, lay = hm.paper_profile(), ["fast", "slow"] * 6
    got = ops.native_predict("bcast", "MPICH", prof, lay, [65536], algorithm=_nat("bcast", "smp"))[0]
    want = ops.get("bcast").predict(prof, lay, "scatter_ring_allgather", [65536])[0]
    assert got == pytest.approx(want, rel=1e-12)


def test_ch4_compositions_map_to_the_steps_they_run():
    assert composition_model("bcast", "gamma") == composition_model("alltoall", "beta") == "mpir"
    assert composition_model("bcast", "beta") == "composition:alpha"
    assert composition_model("reduce", "beta") is None


def test_on_hosts_of_three_ranks_the_default_bcast_is_mpirs_scatter_ring_allgather():
    # 4 hosts x 3 from 12288 B: ch4's gamma, the netmod's bcast on the whole communicator = MPIR's scatter + ring
    prof = paper_shm_profile()
    lay = Layout(["fast"] * 3 + ["slow"] * 6 + ["fast"] * 3, hosts=[h for h in range(4) for _ in range(3)])
    sel = choose_mpich(prof, lay, ops=["bcast", "allgather", "alltoall"], sizes=[4096, 16384, 65536])
    rows = {(r.op, r.size_bytes): r for r in sel.rows}
    assert rows[("bcast", 4096)].default == "composition:alpha"  # ch4's alpha below 12288 B
    for m in (16384, 65536):
        r = rows[("bcast", m)]
        want = ops.get("bcast").predict(prof, lay, "scatter_ring_allgather", [m])[0]
        assert r.default == "scatter_ring_allgather" and r.default_us == pytest.approx(want, rel=1e-12)
        assert r.chosen != "composition:alpha"  # no file selects a composition: smp runs the flat ring here
    assert not any("not modelled" in n for n in sel.notes)  # allgather and alltoall: MPIR's own, as with it off
    if sel.entries["bcast"]:
        assert any(v.startswith("MPIR_CVAR_BCAST_DEVICE_COLLECTIVE=0") for v in sel.device_off)


def test_an_operation_is_not_changed_where_a_kept_composition_would_not_run_the_same():
    # allreduce keeping a ch4 composition at 1 KiB that no file runs: changing 64 KiB would switch allreduce's
    # device collective off at 1 KiB too, so nothing is changed
    leaf = {"algorithm=MPIR_Allreduce_intra_ring": {}}
    kept = Pick(1024, "composition:alpha", None, "composition:alpha", 10.0, 10.0, {"composition:alpha": 10.0})
    moved = Pick(65536, "ring", leaf, "composition:alpha", 100.0, 50.0, {"composition:alpha": 100.0, "ring": 50.0})
    got = MpichBackend(hierarchy="parent").constrain("allreduce", [kept, moved])
    assert [(p.chosen, p.chosen_us) for p in got] == [("composition:alpha", 10.0), ("composition:alpha", 100.0)]
    assert MpichBackend(hierarchy="flat").constrain("allreduce", [kept, moved])[1].chosen == "ring"


def test_a_composition_predicted_fastest_is_not_written_where_it_is_not_the_default():
    # no selection file runs a ch4 composition: where MPICH's default is another algorithm, the fastest other one;
    # the environment pins it for every size only where it is the fastest at every size
    us = {"scatter_ring_allgather": 40.0, "composition:alpha": 20.0, "tree:knomial_2:3": 25.0, "binomial": 60.0}
    pick = Pick(65536, "composition:alpha", None, "scatter_ring_allgather", 40.0, 20.0, us)
    small = {"scatter_ring_allgather": 9.0, "composition:alpha": 8.0, "tree:knomial_2:3": 5.0, "binomial": 7.0}
    other = Pick(16384, "tree:knomial_2:3", {"leaf": 1}, "scatter_ring_allgather", 9.0, 5.0, small)
    got = MpichBackend(hierarchy="parent").constrain("bcast", [other, pick])
    assert [(p.chosen, p.chosen_us) for p in got] == [("tree:knomial_2:3", 5.0), ("tree:knomial_2:3", 25.0)]
    assert got[1].leaf == _nat("bcast", "tree:knomial_2:3").leaf
    (alone,) = MpichBackend(hierarchy="parent").constrain("bcast", [pick])
    assert (alone.chosen, alone.leaf, alone.chosen_us) == ("composition:alpha", None, 20.0)


def test_a_composition_fastest_at_every_size_is_pinned_by_the_environment():
    # 4 hosts x 3 of the golden cluster's types: alpha (4 leaders, binomial) is predicted fastest at 16 and 64 KiB,
    # where MPICH's default is gamma (MPIR's scatter + ring on all 12 ranks): no file names alpha, the environment
    # pins it for every size
    prof = paper_shm_profile(hm.Profile.load(str(GOLDEN / "cluster_profile.json")))
    lay = Layout(
        ["fast"] * 3 + ["slow"] * 3 + ["medium"] * 3 + ["fast"] * 3, hosts=[h for h in range(4) for _ in range(3)]
    )
    sizes = [16384, 65536]
    sel = choose_mpich(prof, lay, ops=["bcast"], sizes=sizes)
    times = ops.native_predict("bcast", "MPICH", prof, lay, sizes, algorithm=_nat("bcast", "composition:alpha"))
    assert [(r.default, r.chosen) for r in sel.rows] == [("scatter_ring_allgather", "composition:alpha")] * 2
    assert [r.chosen_us for r in sel.rows] == pytest.approx(times, rel=1e-12)
    assert all(picked_fastest(r) for r in sel.rows)
    assert sel.pins == {"bcast": {"MPIR_CVAR_BCAST_COMPOSITION": "1"}} and not sel.entries["bcast"]
    env = mpich_env_text(sel, "/x/mpich-coll.json")
    assert "export MPIR_CVAR_BCAST_COMPOSITION=1" in env and "BCAST_DEVICE_COLLECTIVE" not in env


def test_native_ch4_is_mpichs_default_as_users_run_it():
    # nothing pinned, the device collectives on: ch4's table picks per communicator; hnow runs the steps it names
    lay = _hosts(3, 3, 3, 3)
    bcast = ops.native_for("native:ch4", "bcast", "MPICH")
    assert bcast.env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "percoll" and "MPIR_CVAR_BCAST_COMPOSITION" in bcast.unset
    assert bcast.leaf is None and bcast not in ops.native_choices("bcast", "MPICH")  # no file selects it
    # alpha below 12288 B, then gamma: MPIR's scatter + ring allgather on the whole communicator
    assert [bcast.tree_on(lay, m) for m in (4096, 16384)] == [TWO_LEVEL, "scatter_ring_allgather"]
    assert bcast.tree_on(["f"] * 12, 4096) == "binomial"  # one rank per host: MPIR's own selection
    assert bcast.tree_on(_hosts(4), 4096) is None  # one host: the shared-memory layer's own, not modelled
    allgather = ops.native_for("native:ch4", "allgather", "MPICH")
    default = ops.native_for("native:default", "allgather", "MPICH")
    assert allgather.tree_on(lay, 65536) == default.tree_on(lay, 65536) == "ring"
    scatter = ops.native_for("native:ch4", "scatter", "MPICH")  # MPICH's only scatter, with its root's copy
    assert scatter.on(lay, 4096) == ops.native_for("native", "scatter", "MPICH").on(lay, 4096)
