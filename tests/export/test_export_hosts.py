"""Exports on hosts with several ranks (issue #26, item 6): rank orders that keep each host's ranks together
(hostfile ``host:SLOTS``, rankfile slots), MPICH's node-aware default (ch4 composition alpha) seen and kept or
replaced by the selection file, and what Open MPI's coll/han does on such ranks. No MPI is started: the MPICH
default tables are read from the installed ``libmpi``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hnowmodel import ops
from hnowmodel.export import (
    AlgorithmRequest,
    choose_mpich,
    choose_ompi,
    export,
    export_order,
    mpich_env_text,
    ompi_env_text,
)
from hnowmodel.layout import Layout, parse_layout
from hnowmodel.libraries.mpich import selection as mpich
from hnowmodel.libraries.openmpi import hanrules
from hnowmodel.libraries.openmpi.export import han_runs
from hnowmodel.params import Profile
from hnowmodel.search import host_block_order
from hnowmodel.trees import make_tree
from tests.helpers import paper_shm_profile, picked_fastest

SMP_LEAF = {"algorithm=MPIR_Bcast_intra_smp": {}}


def _us(op: str, prof: Profile, lay: Layout, spec: str, size: int) -> float:
    """The model's µs of ``op`` over the tree ``spec`` built for ``lay`` (with its hosts), default variant."""
    tree = make_tree(spec, len(lay), layout=lay, profile=prof)
    return float(ops.predict(op, prof, lay, tree, [size])[0])


def _profile_on(hosts: list[tuple[str, str, int]]) -> Profile:
    """The paper's profile with shared-memory costs, calibrated on ``hosts`` (name, type, slots) filled in order."""
    doc = paper_shm_profile().to_dict()
    ranks = [(h, t) for h, t, k in hosts for _ in range(k)]
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(ranks)]
    return Profile.from_dict(doc)


HOSTS = [("s1", "slow", 2), ("f1", "fast", 1), ("s2", "slow", 1), ("f2", "fast", 2)]


def _contiguous(perm: tuple[int, ...], hosts: np.ndarray) -> bool:
    """Each host's ranks in one run and in their own order."""
    hs = [int(hosts[r]) for r in perm]
    runs = [h for i, h in enumerate(hs) if i == 0 or hs[i - 1] != h]
    return len(runs) == len(set(runs)) and all(
        [r for r in perm if hosts[r] == h] == sorted(r for r in perm if hosts[r] == h) for h in set(hs)
    )


@pytest.mark.parametrize(("op", "size", "tree"), [("bcast", 65536, "binomial"), ("scatter", 16384, "binomial")])
def test_host_block_order_is_the_best_of_every_contiguous_permutation(op, size, tree):
    prof = _profile_on(HOSTS)
    lay = prof.host_layout
    assert lay is not None and not lay.one_per_host
    ro = host_block_order(prof, lay, tree, op, size)
    # brute force over all 6! rank permutations, keeping those a hostfile with slots can express
    best = min(
        _us(op, prof, lay.take(p), tree, size) for p in itertools.permutations(range(6)) if _contiguous(p, lay.hosts)
    )
    assert ro.time_us == pytest.approx(best, rel=1e-12)
    assert _contiguous(ro.perm, lay.hosts)
    assert ro.baseline_us == pytest.approx(_us(op, prof, lay, tree, size), rel=1e-12)
    assert ro.time_us < ro.baseline_us  # the slow host first is not the best here


def test_host_block_order_rebuilds_a_node_aware_tree_per_order():
    prof = _profile_on(HOSTS)
    lay = prof.host_layout
    spec = "mpich-smp:binomial/binomial"
    ro = host_block_order(prof, lay, spec, "bcast", 65536)
    new = lay.take(ro.perm)
    assert ro.time_us == pytest.approx(_us("bcast", prof, new, spec, 65536), rel=1e-12)
    # the same order scored with the tree of the calibrated order would be another number: the tree moved
    assert make_tree(spec, 6, layout=new) != make_tree(spec, 6, layout=lay) or ro.perm == tuple(range(6))


def test_export_order_with_slots_writes_one_line_per_host_and_slots_per_host():
    prof = _profile_on(HOSTS)
    ex = export_order(prof, op="scatter", size=16384, tree="binomial")
    names = [h for h, _, k in HOSTS for _ in range(k)]
    new = [names[r] for r in ex.order.perm]
    slots = {h: k for h, _, k in HOSTS}
    lines = ex.files["hostfile"].split()
    assert [ln.split(":")[0] for ln in lines] == list(dict.fromkeys(new))  # each host once, in the new order
    assert all(int(ln.split(":")[1]) == slots[ln.split(":")[0]] for ln in lines)
    ranks = [ln.split() for ln in ex.files["rankfile"].splitlines()]
    assert [r[1] for r in ranks] == [f"{i}={h}" for i, h in enumerate(new)]
    for h, k in slots.items():
        assert [r[2] for r in ranks if r[1].endswith(f"={h}")] == [f"slot={s}" for s in range(k)]
    assert ex.order.gain_pct > 0


def test_export_order_one_rank_per_host_is_unchanged():
    """Profiles without host terms, or one rank per host: the old per-rank order and ``host:1`` lines."""
    prof = _profile_on([("a", "slow", 1), ("b", "fast", 1), ("c", "slow", 1), ("d", "fast", 1)])
    ex = export_order(prof, op="bcast", size=0)
    assert all(ln.endswith(":1") for ln in ex.files["hostfile"].split())
    assert ex.order.method.startswith("greedy")


def test_export_chooses_for_the_exported_order_with_its_hosts():
    prof = _profile_on(HOSTS)
    ex = export(prof, ["hostfile", "mpich-json", "ompi-rules"], op="bcast", size=65536, algorithms=AlgorithmRequest())
    sel = ex.selection
    assert sel.hierarchy == "parent"
    lay = prof.host_layout.take(ex.order.perm)
    nat = next(a for a in ops.native_algorithms("bcast", "MPICH") if a.algorithm == "composition:alpha")
    want = ops.native_predict("bcast", "MPICH", prof, lay, [65536], algorithm=nat)[0]
    row = next(r for r in sel.rows if r.op == "bcast")
    assert row.default == "composition:alpha"
    assert row.default_us == pytest.approx(want, rel=1e-12)  # predicted on the ranks' hosts, in the new order


def test_mpich_default_on_shared_hosts_is_ch4_composition_alpha_and_kept_with_device_collectives_on():
    prof = paper_shm_profile()
    sel = choose_mpich(prof, parse_layout("FF.SS.SS", prof.type_names), ops=["bcast"], sizes=[1024, 262144])
    assert [(r.default, r.chosen) for r in sel.rows] == [("composition:alpha", "composition:alpha")] * 2
    assert sel.entries["bcast"] == ()
    assert not sel.device_collectives_off
    env = mpich_env_text(sel, "/x/mpich-coll.json")
    assert "DEVICE_COLLECTIVES" not in env.split("# Check:")[1]  # no setting switches the device's collectives off
    assert sel.table == mpich.default_table().table


def test_mpich_file_on_shared_hosts_selects_the_flat_winner_and_smp_where_alpha_is_kept():
    prof = paper_shm_profile()
    lay = parse_layout("SS.FFF.F.F", prof.type_names)  # 7 ranks: alpha at every size
    sel = choose_mpich(prof, lay, ops=["bcast"], sizes=[1024, 16384, 262144])
    got = {r.size_bytes: r.chosen for r in sel.rows}
    assert got[1024] == "composition:alpha" and got[16384] != "composition:alpha"
    # alpha ties the flat trees at 1 KiB (kept) and loses at 16 KiB (by 0.05 %: predictions, checked one by one)
    r1 = next(r for r in sel.rows if r.size_bytes == 1024)
    assert r1.default_us == r1.chosen_us and picked_fastest(r1)
    r2 = next(r for r in sel.rows if r.size_bytes == 16384)
    assert picked_fastest(r2) and r2.chosen_us < r2.default_us
    assert sel.device_collectives_off
    env = mpich_env_text(sel, "/x/mpich-coll.json")  # bcast's device collective off, the others' stay on
    assert "export MPIR_CVAR_DEVICE_COLLECTIVES=percoll" in env and "MPIR_CVAR_DEVICE_COLLECTIVES=none" not in env
    assert "export MPIR_CVAR_BCAST_DEVICE_COLLECTIVE=0" in env and "ALLREDUCE_DEVICE" not in env
    at = {m: mpich.select(sel.table, "bcast", comm_size=7, msg_bytes=m, hierarchy="parent") for m in got}
    assert at[1024] == SMP_LEAF  # the same two-level tree, MPICH's own
    chosen = next(a for a in ops.native_choices("bcast", "MPICH") if a.algorithm == got[16384])
    assert at[16384] == chosen.leaf
    # other communicator sizes: MPICH's table as it was
    assert mpich.select(sel.table, "bcast", comm_size=6, msg_bytes=16384, hierarchy="parent") == mpich.select(
        mpich.default_table().table, "bcast", comm_size=6, msg_bytes=16384, hierarchy="parent"
    )
    assert any("MPIR_Bcast_intra_smp" in x for x in sel.notes)


def test_mpich_flat_layout_has_no_composition_candidate():
    prof = paper_shm_profile()
    sel = choose_mpich(prof, ["fast", "slow", "fast", "slow"], ops=["bcast"], sizes=[16384])
    (row,) = sel.rows
    assert row.default == "binomial" and "composition:alpha" not in row.candidates_us
    assert sel.device_collectives_off  # as before on one rank per host


def test_mpich_ch4_composition_beta_is_modelled_by_alphas_steps_where_the_leaders_run_binomial():
    prof = paper_shm_profile()
    lay = parse_layout("SS.F.F.F.F.F.F", prof.type_names)  # 8 ranks: ch4 picks beta from 12288 B
    sel = choose_mpich(prof, lay, ops=["bcast"], sizes=[16384])
    (row,) = sel.rows
    alpha = next(a for a in ops.native_algorithms("bcast", "MPICH") if a.algorithm == "composition:alpha")
    want = ops.native_predict("bcast", "MPICH", prof, lay, [16384], algorithm=alpha)[0]
    assert row.default == "composition:alpha" and row.default_us == pytest.approx(want, rel=1e-12)
    assert not any("not modelled" in x for x in sel.notes)


def test_mpich_kept_ch4_composition_it_does_not_model_is_named():
    prof = paper_shm_profile()
    lay = parse_layout("SS.FF.FF.FF.FF.FF.FF.FF", prof.type_names)  # 16 ranks: beta, its 8 leaders scatter+allgather
    sel = choose_mpich(prof, lay, ops=["bcast"], sizes=[16384])
    (row,) = sel.rows
    assert (row.default, row.chosen, row.default_us) == ("composition:beta", "composition:beta", None)
    assert any("composition:beta" in x and "not modelled" in x for x in sel.notes)
    assert not sel.entries["bcast"] and not sel.device_off


@pytest.mark.parametrize(
    ("spec", "says", "han"),
    [("FF.S.MMM", "does not run", False), ("FF.SS.MM", "is coll/han", True), ("F.S.M", None, False)],
)
def test_ompi_on_shared_hosts_says_what_coll_han_does_and_keeps_it_where_it_is_the_default(spec, says, han):
    prof = paper_shm_profile()
    types = {"F": "fast", "S": "slow", "M": "fast"}
    hosts = [i for i, part in enumerate(spec.split(".")) for _ in part]
    lay = Layout([types[c] for c in spec.replace(".", "")], hosts)
    assert han_runs(lay) is han
    sel = choose_ompi(prof, lay, ops=["bcast", "gather"], sizes=[16384, 262144])
    notes = [x for x in sel.notes if "coll/han" in x]
    assert (notes[0] if notes else None) is None if says is None else says in notes[0]
    env = ompi_env_text(sel, "/x/ompi-rules.conf")
    if han:  # han's own settings modelled (native:han:default): the default; each size keeps it or goes to tuned
        assert {r.default for r in sel.rows} == {"han:default"} and all(r.default_us > 0 for r in sel.rows)
        assert "OMPI_MCA_coll=" not in env  # han stays on
        back = hanrules.read_han_rules(sel.han_text) if sel.han_text else {}
        for r in sel.rows:
            where = hanrules.runs(back, r.op, len(lay), r.size_bytes)
            if r.chosen == "han:default":  # kept: han's rules keep han there
                assert where == "han"
            else:  # tuned predicted faster: han's rules hand the size to tuned, whose file runs the choice
                assert where == "tuned" and r.chosen_us < r.default_us and sel.entries[r.op]
        if sel.han_text:
            assert "OMPI_MCA_coll_han_dynamic_rules_filename=/x/ompi-han-rules.conf" in env
    else:
        assert all(r.default != "han" for r in sel.rows) and "export OMPI_MCA_coll=^han" in env
