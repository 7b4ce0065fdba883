"""Intel MPI's export backend (``hnow export --format impi-env``): the ``I_MPI_ADJUST_<OP>`` strings it renders, read
back as Intel MPI's developer reference says they are read (``ALG[:M1-M2][@P1-P2];...``, first rule that holds,
the library's own choice where none does). No MPI here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.export import choose_impi, export
from hnowmodel.export.choose import OpChoice, Pick
from hnowmodel.export.make import AlgorithmRequest
from hnowmodel.layout import parse_layout
from hnowmodel.libraries.intelmpi.adjust import (
    TUNING_DEFAULT,
    AdjustRule,
    adjust_runs,
    adjust_variable,
    format_adjust,
    parse_adjust,
)
from hnowmodel.libraries.intelmpi.export import ImpiBackend
from hnowmodel.params import paper_profile
from tests.helpers import paper_shm_profile

GOLDEN_CLUSTER = Path(__file__).parents[1] / "data" / "golden" / "cluster_profile.json"


def _pick(size: int, leaf: int, chosen: str) -> Pick:
    return Pick(size, chosen, leaf, "tuning-file", None, None, {})


def _op(op: str, ranges: list[tuple[int, int, int, str]]) -> OpChoice:
    picks = tuple(_pick(hi, leaf, name) for _, hi, leaf, name in ranges)
    return OpChoice(op, "paper", picks, tuple((lo, hi, p) for (lo, hi, _, _), p in zip(ranges, picks, strict=True)), ())


def test_the_strings_run_each_choice_in_its_range_only_on_that_many_ranks():
    """Ranges where an algorithm was chosen become rules for exactly n ranks; kept ranges and everything above the
    largest size, or on other process counts, fall to Intel MPI's own choice (None)."""
    chosen = [
        _op(
            "bcast", [(0, 16384, 8, "knomial"), (16385, 65536, TUNING_DEFAULT, "tuning-file"), (65537, 262144, 1, "b")]
        ),
        _op("gather", [(0, 4096, TUNING_DEFAULT, "tuning-file")]),
    ]
    sel = ImpiBackend().render(("fast",) * 6, chosen, ["a note"])
    assert sel.strings == {"I_MPI_ADJUST_BCAST": "8:0-16384;1:65537-262144"}  # several rules: no @6-6
    rules = parse_adjust(sel.strings["I_MPI_ADJUST_BCAST"])
    assert [adjust_runs(rules, 6, m) for m in (1, 16384, 16385, 65536, 65537, 262144, 262145)] == [
        8, 8, None, None, 1, 1, None,
    ]  # fmt: skip
    assert sel.entries == {"bcast": ((0, 16384, "knomial"), (65537, 262144, "b")), "gather": ()}
    one = ImpiBackend().render(("fast",) * 6, [_op("bcast", [(0, 1024, 1, "b"), (1025, 4096, 1, "b")])], [])
    assert one.strings == {"I_MPI_ADJUST_BCAST": "1:0-4096@6-6"}  # one rule (adjacent ones joined): exactly 6 ranks
    assert all(adjust_runs(parse_adjust("1:0-4096@6-6"), n, 1000) is None for n in (2, 5, 7, 64))
    doc = sel.to_dict()
    assert doc["library"] == "Intel MPI" and doc["comm_size"] == 6 and doc["notes"][0] == "a note"
    # the gap at 16385-64K: the default there is not modelled on 6 ranks at 64K+... (bcast's is, but pipelined: no
    # number runs it), so it stays a gap, with a note (2021.16 runs the last rule's algorithm where none holds)
    assert len(doc["notes"]) == 3 and doc["notes"][1].startswith("bcast 16385-64K: the default is kept, but no rule")
    assert doc["notes"][2].startswith("bcast: several rules, written without @6-6")
    assert json.loads(json.dumps(doc))["strings"] == sel.strings


def test_a_kept_default_between_rules_is_written_as_the_number_that_runs_it():
    """Intel MPI 2021.16 runs the last rule's algorithm where no rule holds (docs/intel-mpi.md, "Export"): where the
    default is kept and a number runs its algorithm (allgather on 4 ranks: recursive doubling, 1), the string says
    that number there, so it has no gap among the sizes asked for."""
    chosen = [_op("allgather", [(0, 1024, TUNING_DEFAULT, "default"), (1025, 8192, 3, "ring"),
                                (8193, 16384, TUNING_DEFAULT, "default"), (16385, 65536, 2, "brucks")])]  # fmt: skip
    sel = ImpiBackend().render(("fast",) * 4, chosen, [])
    assert sel.strings == {"I_MPI_ADJUST_ALLGATHER": "1:0-1024;3:1025-8192;1:8193-16384;2:16385-65536"}
    assert sel.entries["allgather"][0] == (0, 1024, "recursive_doubling (the default's)") and len(sel.notes) == 1


def test_rules_read_as_intel_mpi_reads_them():
    rules = parse_adjust(" 2:0-1023 ; 3:1024@4-8;1 ")
    assert rules == (AdjustRule(2, 0, 1023), AdjustRule(3, 1024, None, 4, 8), AdjustRule(1))
    assert adjust_runs(rules, 2, 500) == 2 and adjust_runs(rules, 6, 1024) == 3 and adjust_runs(rules, 2, 1024) == 1
    assert format_adjust(rules) == "2:0-1023;3:1024@4-8;1"  # written back as read
    for bad, why in (("x", "expected ALG"), ("1:5-2", "does not increase"), ("1:0-9@8-4", "does not increase")):
        with pytest.raises(InputError, match=why):
            parse_adjust(bad)


def test_the_default_is_chosen_against_where_it_is_modelled_and_kept_elsewhere():
    """Intel MPI's default (its tuning file's choice) is modelled on 6 ranks at 16-256 KiB: chosen against there
    (binomial where it is predicted faster, the default kept where not), kept with a note where it is not known."""
    assert [c.algorithm for c in ImpiBackend().candidates("bcast")] == ["default", "binomial"]
    prof = paper_profile()
    lay = ["fast", "slow"] * 3
    sel = choose_impi(prof, lay, ops=["bcast", "scatter"], sizes=[512, 65536, 262144])
    by = {(r.op, r.size_bytes): r for r in sel.rows}
    gaps = [n for n in sel.notes if "no rule runs it" in n]  # a kept range below a rule: 2021.16 may not keep it
    assert by[("bcast", 512)].default_us is None and len(sel.notes) - len(gaps) == 2 and "512" in sel.notes[0]
    assert all(g.startswith(("bcast 0-512:", "scatter 0-512:")) for g in gaps)
    for op in ("bcast", "scatter"):
        for m in (65536, 262144):
            r = by[(op, m)]
            want = ops.native_predict(op, "Intel MPI", prof, lay, [m])[0]
            assert r.default == "default" and r.default_us == float(want)
            binom = ops.native_predict(
                op, "Intel MPI", prof, lay, [m], algorithm=ops.native_for("native:binomial", op, "Intel MPI")
            )
            assert r.chosen == ("binomial" if binom[0] < want else "default")
    # what the strings say is read back: binomial where chosen (exactly 6 ranks), Intel MPI's own choice elsewhere
    for op, r in ((op, r) for op in ("bcast", "scatter") for r in sel.rows if r.op == op):
        rules = parse_adjust(sel.strings.get(adjust_variable(op), ""))
        assert adjust_runs(rules, 6, r.size_bytes) == (1 if r.chosen == "binomial" else None)
        assert adjust_runs(rules, 5, r.size_bytes) is None
    # ranks sharing hosts (another branch of Intel MPI's tuning file): the default is not modelled, kept
    shm = paper_shm_profile()  # several ranks on a host: the profile needs shared-memory costs
    shared = choose_impi(shm, parse_layout("fast/2,slow/2,fast/2", shm.type_names), ops=["bcast"], sizes=[65536])
    assert shared.rows[0].default_us is None and shared.strings == {} and len(shared.notes) == 1
    # off the modelled communicator size nothing is known: every range kept, nothing to change
    ex = export(prof, ["impi-env"], algorithms=AlgorithmRequest(layout=["fast", "slow"], sizes=[4096]))
    assert ex.impi.to_dict()["library"] == "Intel MPI" and ex.impi.strings == {}
    assert "nothing to change" in ex.files["impi-env"] and "Intel MPI" in ex.usage


def test_hnow_export_impi_env_prints_the_settings(hnow):
    p = hnow("export", "--profile", "paper", "--layout", "fast,slow,slow", "--format", "impi-env", "--sizes", "64K")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("# Intel MPI algorithms written by hnow export for exactly 3 ranks"), p.stdout
    p = hnow("export", "--profile", "paper", "--format", "hostfile", "--sizes", "4K")
    assert p.returncode == 2 and "mpich-json, ompi-rules and impi-env" in p.stderr


def test_intel_algorithms_are_registered_for_every_operation():
    # the tree operations here, the message schedule ones in tests/libraries/test_intelmpi_schedules.py
    assert all(ops.native_libraries(op) == ("MPICH", "Open MPI", "Intel MPI") for op in ops.names())


def test_the_rank_order_beside_impi_env_is_chosen_for_intel_mpis_default_as_it_runs():
    """A hostfile exported with ``impi-env`` orders the ranks for Intel MPI's default where it runs the tree asked
    for: at 64 KiB on 6 hosts its knomial_1 radix 2 tree, pipelined in its own chunk (not MPICH's algorithm of that
    tree, store-and-forward): the order's times are the default's predictions (``ops.native_predict``), on the golden
    6-host cluster profile (a network profile: bcast under ``flow-rr``, where segments count)."""
    from hnowmodel.params import Profile

    prof = Profile.load(GOLDEN_CLUSTER)
    types = [n["type"] for n in prof.nodes]
    m = 65536
    dflt = ops.get("bcast").native["Intel MPI"]
    assert dflt.tree_on(types, m) == "mpich-knomial1:2" and dflt.on(types, m)[1].segment_bytes == 2048
    ex = export(prof, ["hostfile", "impi-env"], op="bcast", size=m, tree="mpich-knomial1:2")
    assert ex.order.baseline_us == pytest.approx(float(ops.native_predict("bcast", "Intel MPI", prof, types, [m])[0]))
    ordered = [types[r] for r in ex.order.perm]
    assert ex.order.time_us == pytest.approx(float(ops.native_predict("bcast", "Intel MPI", prof, ordered, [m])[0]))
    assert ex.order.time_us <= ex.order.baseline_us
    # the same tree beside MPICH's selection is MPICH's algorithm of that tree, store-and-forward: slower here
    mp = export(prof, ["hostfile", "mpich-json"], op="bcast", size=m, tree="mpich-knomial1:2")
    assert mp.order.baseline_us > ex.order.baseline_us * 1.05
