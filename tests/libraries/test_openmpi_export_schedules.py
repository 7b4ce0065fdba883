"""``hnow export --format ompi-rules`` for the operations whose algorithms are message schedules (reduce, allreduce,
allgather, reduce_scatter, alltoall): the rules file's collective ids and per-collective message sizes
(``coll_tuned_decision_dynamic.c``: the vector for reduce and allreduce, a block times the ranks for allgather,
alltoall and reduce_scatter_block), the fixed rules a range hands back to, the choice among tuned's modelled
algorithms against them, the file read back as Open MPI reads it, and the settings. No MPI here:
tests/jobs/test_openmpi_schedules.py runs an exported file in Open MPI."""

from __future__ import annotations

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.export import AlgorithmRequest, choose_ompi, export, ompi_env_text
from hnowmodel.layout import Layout
from hnowmodel.libraries.openmpi import rules as R
from hnowmodel.libraries.openmpi.tuned import MCA_NAMES, OP_ALGORITHMS, default_model, fixed_algorithm
from hnowmodel.params import Profile
from tests.helpers import paper_shm_profile, picked_fastest

_OPS = tuple(OP_ALGORITHMS)
_SIZES = (8, 1024, 16384, 65536, 1 << 20)
FSFS = ["fast", "slow", "fast", "slow"]
_REDUCE = {"types": {"fast": {"Gc_us": 0.0, "Gm_us_per_byte": 2e-4}, "slow": {"Gc_us": 1.0, "Gm_us_per_byte": 5e-4}}}


def _gamma(prof: Profile | None = None) -> Profile:
    """``prof`` (the paper's) with a reduction cost γ per node type, which the reductions' predictions need."""
    doc = (prof or hm.paper_profile()).to_dict()
    return Profile.from_dict({**doc, "extensions": {**doc.get("extensions", {}), "reduce": _REDUCE}})


# ---- the file's keys ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op, colid, name, times_ranks",
    [("allgather", 0, "allgather", True), ("allreduce", 2, "allreduce", False), ("alltoall", 3, "alltoall", True),
     ("reduce", 11, "reduce", False), ("reduce_scatter", 13, "reduce_scatter_block", True)],
)  # fmt: skip
def test_each_operation_is_looked_up_by_its_own_id_and_message_size(op, colid, name, times_ranks):
    m, n = 4096, 6
    leaf = OP_ALGORITHMS[op].alternatives[0].leaf  # algorithm 1, as the file says it
    rules = R.for_comm_size(n, {op: [(0, leaf), (m + 1, R.FIXED)]})
    text = R.format_rules(rules)
    assert R.validate(text) == rules and list(rules.collectives) == [colid]
    assert f"# collective id: {name}" in text
    (_, comm, _) = rules.collectives[colid]
    msg = (m + 1) * (n if times_ranks else 1)
    assert [(r.msg_bytes, r.leaf) for r in comm.rules] == [(0, leaf), (msg, R.FIXED)]
    assert R.message_size(op, n, m + 1) == msg
    assert R.runs(rules, op, n, m) == leaf and R.runs(rules, op, n, m + 1) == R.runs(None, op, n, m + 1)
    assert R.runs(rules, op, n + 1, m) == R.runs(None, op, n + 1, m)  # other communicator sizes: the fixed rules


def test_the_fixed_rules_a_range_hands_back_to_are_tuneds():
    for op in _OPS:
        for n, m in ((2, 8), (2, 4096), (4, 65536), (7, 1 << 20), (40, 1024)):
            assert R.default_algorithm(op, n, m) == fixed_algorithm(op, n, m)
            assert R.runs(None, op, n, m) == (fixed_algorithm(op, n, m), 0, 0)
    assert R.algorithm_name("allreduce", 6) == "rabenseifner" and R.algorithm_name("reduce_scatter", 4) == "butterfly"
    # the segment size and fanout only where tuned's algorithm reads them
    assert R.canonical("allreduce", 5, 2, 4096) == (5, 0, 4096) and R.canonical("allgather", 2, 2, 4096) == (2, 0, 0)


# ---- the choice and the file ----------------------------------------------------------------------------------------
def test_the_fastest_modelled_algorithm_is_written_and_the_file_runs_it():
    sel = choose_ompi(_gamma(), FSFS, ops=_OPS, sizes=_SIZES)
    back = R.validate(sel.text)
    assert back == sel.rules
    assert {op for op, e in sel.entries.items() if e} == {
        "reduce",
        "allreduce",
        "allgather",
        "alltoall",
        "reduce_scatter",
    }  # noqa: E501
    for r in sel.rows:
        nat = ops.native_for(f"native:{r.chosen}", r.op, "Open MPI")
        if r.default_us is None:  # the fixed rules' algorithm is not modelled there: kept, with a note
            assert r.chosen == r.default and R.runs(back, r.op, 4, r.size_bytes) == R.runs(None, r.op, 4, r.size_bytes)
            assert any(f"{r.op} at" in x and "not modelled" in x for x in sel.notes)
            continue
        model = default_model(r.op, 4, r.size_bytes)
        if model is None:  # a fixed-rules algorithm modelled per layout: basic_linear reduce_scatter (reduce, scatter)
            dflt = ops.native_for(f"native:{r.default}", r.op, "Open MPI")
            want = ops.native_predict(r.op, "Open MPI", _gamma(), FSFS, [r.size_bytes], algorithm=dflt)[0]
        else:
            want = hm.predict(r.op, _gamma(), FSFS, model, [r.size_bytes])[0]
        assert r.default_us == pytest.approx(want, rel=1e-12)
        assert picked_fastest(r), r
        if r.chosen == r.default:
            assert R.runs(back, r.op, 4, r.size_bytes) == R.runs(None, r.op, 4, r.size_bytes), r
        else:
            assert r.chosen_us < r.default_us and R.runs(back, r.op, 4, r.size_bytes) == nat.leaf, r
    # above the largest size, and on other communicator sizes: the fixed rules
    for op in sel.entries:
        assert R.runs(back, op, 4, (1 << 20) + 1) == R.runs(None, op, 4, (1 << 20) + 1)
        assert R.runs(back, op, 5, 16384) == R.runs(None, op, 5, 16384)
    rows = {(r.op, r.size_bytes): r for r in sel.rows}
    ring = rows[("allreduce", 65536)]
    assert (ring.default, ring.chosen) == ("rabenseifner", "ring")  # (6) -> (4): written for 1025 B .. 1 MiB
    assert sel.entries["allreduce"] == ((1025, 1 << 20, "ring"),)
    (_, comm, _) = sel.rules.collectives[2]
    assert [(x.msg_bytes, x.leaf) for x in comm.rules] == [(0, R.FIXED), (1025, (4, 0, 0)), ((1 << 20) + 1, R.FIXED)]
    # allgather's ranges are per rank's block; the file says block x 4 ranks
    assert sel.entries["allgather"] == ((1025, 1 << 20, "ring"),)
    assert [x.msg_bytes for x in sel.rules.collectives[0][1].rules] == [0, 4 * 1025, 4 * ((1 << 20) + 1)]
    assert "# allreduce 1025-1M: ring" in sel.text and "# allgather 1025-1M per rank: ring" in sel.text


def test_the_read_back_refuses_a_file_that_runs_another_algorithm(monkeypatch):
    """The file is read back as Open MPI reads it: a file that would run another algorithm is never written."""
    made = R.for_comm_size

    def off_by_one(n, per_op):  # recursive doubling (3) where the ring (4) was chosen
        return made(
            n, {op: [(a, (3, 0, 0) if leaf == (4, 0, 0) else leaf) for a, leaf in e] for op, e in per_op.items()}
        )

    monkeypatch.setattr(R, "for_comm_size", off_by_one)
    with pytest.raises(InputError, match=r"internal: the rules file runs \(3, 0, 0\) for allreduce at 65536 B"):
        choose_ompi(_gamma(), FSFS, ops=["allreduce"], sizes=[65536])


def test_the_settings_unset_each_exported_operations_forced_algorithm():
    req = AlgorithmRequest(ops=("reduce_scatter", "allgather"), sizes=(16384,), layout=tuple(FSFS))
    ex = export(_gamma(), ["ompi-rules"], algorithms=req).placed("/x/out")
    env = ex.files["ompi-env"]
    assert "export OMPI_MCA_coll=^han" in env and "export OMPI_MCA_coll_tuned_use_dynamic_rules=1" in env
    unset = next(line for line in env.splitlines() if line.startswith("unset "))
    for op in ("bcast", "scatter", "gather", "reduce_scatter", "allgather"):
        assert f"OMPI_MCA_coll_tuned_{MCA_NAMES.get(op, op)}_algorithm" in unset.split()
    assert "OMPI_MCA_coll_tuned_reduce_scatter_block_algorithm" in unset and "allreduce" not in unset
    assert ex.to_dict()["ompi"]["entries"]["allgather"][0]["algorithm"] == "ring"


def test_where_coll_han_runs_it_its_operations_leave_it_only_when_tuned_is_faster_and_alltoall_is_tuneds():
    """Several hosts with the same number of ranks each: coll/han is Open MPI's default for allreduce (its default
    modelled: native:han:default, libnbc's reduce and bcast between the hosts); allreduce leaves han for tuned and
    the file only because tuned's recursive doubling is predicted faster at every size; alltoall, which han does
    not implement, is tuned's on the whole communicator, so the file changes it without a han setting."""
    lay = Layout(["fast", "fast", "slow", "slow"], [0, 0, 1, 1])
    sel = choose_ompi(_gamma(paper_shm_profile()), lay, ops=["allreduce", "alltoall"], sizes=[8, 1024])
    rows = {(r.op, r.size_bytes): r for r in sel.rows}
    for m in (8, 1024):
        r = rows[("allreduce", m)]
        assert r.default == "han:default" and r.chosen == "recursive_doubling" and r.chosen_us < r.default_us
    assert sel.entries["allreduce"] and sel.han_left == ("allreduce",)
    a2a = rows[("alltoall", 8)]
    assert a2a.default == "linear_sync" and a2a.chosen != a2a.default and sel.entries["alltoall"]
    assert sel.han_default
    env = ompi_env_text(sel, "/x/ompi-rules.conf")
    assert "OMPI_MCA_coll=" not in env and "coll_han_alltoall" not in env
    # coll/han's own rules file hands allreduce to tuned at the sizes asked for, han's default above them
    assert sel.han_entries == {"allreduce": ((0, "tuned"), (1025, "han"))}
    assert "export OMPI_MCA_coll_han_dynamic_rules_filename=/x/ompi-han-rules.conf" in env
    assert "export OMPI_MCA_coll_han_use_dynamic_file_rules=1" in env
    assert "coll/han does not implement alltoall: tuned runs it, with the file, in any case" in env
    assert (
        R.runs(R.validate(sel.text), "alltoall", 4, 8)
        == ops.native_for(f"native:{a2a.chosen}", "alltoall", "Open MPI").leaf
    )


def test_coll_hans_rules_file_mixes_han_its_simple_allreduce_and_tuned_size_by_size(tmp_path):
    """3 hosts x 3 ranks: where coll/han is the default each size gets its own choice - han's default, its simple
    allreduce, or a tuned algorithm (with the tuned file) - written to coll/han's rules file and read back as Open MPI
    reads it; the tuned file hands the sizes han keeps to the fixed rules (it is not read there); the export writes
    both files and the settings that read them."""
    from hnowmodel.libraries.openmpi import hanrules

    lay = Layout(["fast"] * 3 + ["slow"] * 3 + ["fast"] * 3, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    sizes = [8, 1024, 65536]
    sel = choose_ompi(_gamma(paper_shm_profile()), lay, ops=["allreduce", "reduce"], sizes=sizes)
    chosen = {(r.op, r.size_bytes): r.chosen for r in sel.rows}
    assert [chosen[("allreduce", m)] for m in sizes] == ["han:default", "han:simple", "ring"]
    back = hanrules.read_han_rules(sel.han_text)
    assert [hanrules.runs(back, "allreduce", 9, m) for m in sizes] == ["han", "han@simple", "tuned"]
    assert hanrules.runs(back, "allreduce", 9, 65537) == "han" and hanrules.runs(back, "allreduce", 8, 65536) == "han"
    assert R.runs(R.validate(sel.text), "allreduce", 9, 1024) == R.runs(None, "allreduce", 9, 1024)  # fixed rules
    ring = ops.native_for("native:ring", "allreduce", "Open MPI").leaf
    assert R.runs(R.validate(sel.text), "allreduce", 9, 65536) == ring
    prof = _gamma(hm.Profile.from_dict({**paper_shm_profile().to_dict()}))
    ex = export(prof, ["ompi-rules"], algorithms=AlgorithmRequest(ops=["allreduce", "reduce"], sizes=sizes, layout=lay))
    assert ex.files["ompi-han"] == sel.han_text
    written = hm.export.write_export(ex, tmp_path / "out")
    assert (tmp_path / "out" / "ompi-han-rules.conf").read_text() == sel.han_text and "ompi-han" in written
