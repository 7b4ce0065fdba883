"""Open MPI's algorithms in the operation registry and ``choose_ompi``: what ``hnow export --format ompi-rules``
chooses and the rules file it writes (read back as Open MPI reads it: hnowmodel.libraries.openmpi.rules). No MPI here:
tests/cluster/test_export_ompi.py runs the file in Open MPI."""

from __future__ import annotations

from pathlib import Path

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel import trees as T
from hnowmodel.errors import InputError
from hnowmodel.export import FORMATS, LIBRARY_FORMATS, ORDER_FORMATS, AlgorithmRequest, choose_ompi, export
from hnowmodel.libraries.openmpi import OMPI_KNOMIAL_RADIX
from hnowmodel.libraries.openmpi import rules as R

FFSF = ["fast", "fast", "slow", "fast"]
SFSF = ["slow", "fast", "slow", "fast"]


# ---- the registry --------------------------------------------------------------------------------------------------
def test_every_open_mpi_algorithm_is_pinned_by_mca_and_by_a_rule():
    seen = set()
    for op in ("bcast", "scatter", "gather"):
        choices = ops.native_choices(op, "Open MPI")
        assert choices[0] is ops.get(op).native["Open MPI"]
        for c in choices:
            assert c.algorithm not in seen or op != "bcast"
            seen.add(c.algorithm)
            number = int(c.env[f"OMPI_MCA_coll_tuned_{op}_algorithm"])
            assert c.env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1" and c.env["OMPI_MCA_coll"] == "^han"
            assert T.make_tree(c.model_tree, 7).n == 7
            if c.algorithm.startswith("knomial:") and c.algorithm != f"knomial:{OMPI_KNOMIAL_RADIX}":
                assert c.leaf is None  # the radix is an MCA parameter: no rules-file leaf runs knomial:3
                continue
            assert c.leaf[0] == number and c.leaf == R.canonical(op, *c.leaf)
            assert R.algorithm_name(op, c.leaf[0], c.leaf[1]) in (c.algorithm, c.algorithm.split(":")[0])
    bcast = {c.algorithm: c for c in ops.native_choices("bcast", "Open MPI")}
    assert (
        bcast["chain:3"].leaf == (2, 3, 0)
        and bcast["chain:3"].env["OMPI_MCA_coll_tuned_bcast_algorithm_chain_fanout"] == "3"
    )
    assert bcast["binary_tree"].model_tree == "ompi-tree:2" and bcast["pipeline"].model_tree == "chain"
    assert bcast["knomial:3"].env["OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix"] == "3"
    assert {c.algorithm for c in ops.native_choices("scatter", "Open MPI")} == {"binomial", "basic_linear", "linear_nb"}
    assert {c.algorithm for c in ops.native_choices("gather", "Open MPI")} == {
        "binomial",
        "basic_linear",
        "linear_sync",
    }
    lin = ops.native_for("native:basic_linear", "gather", "Open MPI")
    assert lin.model_tree == "ompi-linear" and lin.root_copy and lin.flow_kw == {"recv_order": "tree"}
    assert ops.native_for("native:basic_linear", "scatter", "Open MPI").copy_first


def test_open_mpi_algorithms_run_by_name():
    assert ops.check_native("native:chain:2", ["bcast"]) == "native:chain:2"
    env = ops.native_spec_env("native:basic_linear", ["bcast", "scatter", "gather"])
    assert {env[f"OMPI_MCA_coll_tuned_{op}_algorithm"] for op in ("bcast", "scatter", "gather")} == {"1"}
    assert ops.native_for("native:chain:2", "gather", "Open MPI") is None
    with pytest.raises(InputError, match="unknown native algorithm 'chain:2' for gather"):
        ops.check_native("native:chain:2", ["gather"])


def test_the_linear_algorithms_are_predicted_as_they_run():
    """basic linear: the root sends to 1, 2, 3 in turn (scatter: its own block copied first); the model tree is
    Open MPI's, the prediction that of the tree executor's ``sequential`` with the same copy."""
    prof = hm.paper_profile()
    lin = ops.native_for("native:basic_linear", "scatter", "Open MPI")
    got = ops.native_predict("scatter", "Open MPI", prof, FFSF, [4096], algorithm=lin)[0]
    want = hm.predict.scatter(prof, FFSF, T.sequential(4), [4096], root_copy=True, copy_first=True)[0]
    assert got == pytest.approx(want)


# ---- choose_ompi ---------------------------------------------------------------------------------------------------
def test_a_heterogeneous_layout_gets_non_default_choices_and_a_file_that_runs_them():
    sel = choose_ompi(hm.paper_profile(), FFSF, sizes=[4096, 16384, 65536, 262144])
    rows = {(r.op, r.size_bytes): r for r in sel.rows}
    # bcast at 4 KiB: Open MPI's fixed rules run binomial (4..7 ranks, 2-8 KiB); basic linear is faster here
    b = rows[("bcast", 4096)]
    assert (b.default, b.chosen) == ("binomial", "basic_linear") and b.gain_pct > 10
    assert rows[("bcast", 65536)].chosen == rows[("bcast", 65536)].default == "basic_linear"
    g = rows[("gather", 16384)]
    assert (g.default, g.chosen) == ("binomial", "basic_linear") and g.chosen_us < g.default_us
    # linear_nb moves basic_linear's messages in its order: predicted the same, so the default is kept
    s64 = rows[("scatter", 65536)]
    assert (s64.default, s64.chosen) == ("linear_nb", "linear_nb")
    assert s64.default_us == pytest.approx(s64.candidates_us["basic_linear"])
    # linear_sync gather (the default at 256 KiB) is predicted too: nothing is left unmodelled here
    assert rows[("gather", 262144)].default == "linear_sync" and rows[("gather", 262144)].default_us is not None
    assert not any("not modelled" in x for x in sel.notes)
    # every candidate was predicted, the same tree once
    assert "chain:8" not in b.candidates_us and "basic_linear" in b.candidates_us
    # the file: only 4 ranks change, each size runs what was chosen, the rest the fixed rules
    assert sel.entries == {
        "bcast": ((0, 4096, "basic_linear"),),
        "scatter": ((0, 4096, "basic_linear"),),
        "gather": ((4097, 16384, "basic_linear"),),
    }
    back = R.validate(sel.text)
    assert back == sel.rules and set(back.collectives) == {7, 9, 15}
    for r in sel.rows:
        got = R.runs(back, r.op, 4, r.size_bytes)
        if r.chosen != r.default:
            want = next(c.leaf for c in ops.native_choices(r.op, "Open MPI") if c.algorithm == r.chosen)
            assert got == want, r
        else:
            assert got == R.runs(None, r.op, 4, r.size_bytes), r
    assert R.runs(back, "bcast", 4, 4097) == R.runs(None, "bcast", 4, 4097)  # above the range
    assert R.runs(back, "bcast", 5, 4096) == R.runs(None, "bcast", 5, 4096)  # other communicator sizes
    assert "communicators of exactly 4 ranks" in sel.text and "bcast 0-4K: basic_linear" in sel.text


def test_the_rules_file_carries_the_chain_fanout_and_nothing_changes_where_the_default_wins():
    sel = choose_ompi(hm.paper_profile(), SFSF, ops=["bcast"], sizes=[262144])
    (row,) = sel.rows
    assert (row.default, row.chosen) == ("basic_linear", "chain:2") and row.gain_pct > 10
    (comm,) = [c for c in sel.rules.collectives[7] if c.comm_size == 4]
    assert [(r.msg_bytes, r.leaf) for r in comm.rules] == [(0, (2, 2, 0)), (262145, (0, 0, 0))]
    same = choose_ompi(hm.paper_profile(), ["fast"] * 4, ops=["bcast"], sizes=[65536])
    assert same.entries == {"bcast": ()} and same.rules.collectives == {} and R.validate(same.text) == same.rules


def test_scatter_changes_come_with_the_send_count_warning():
    """Open MPI looks a scatter up in the file by the send count on every rank, which MPI ignores but at the root."""
    sel = choose_ompi(hm.paper_profile(), FFSF, ops=["scatter"], sizes=[4096])
    assert sel.entries["scatter"] and any("mpi4py's comm.Scatter" in x for x in sel.notes)
    assert not any("comm.Scatter" in x for x in choose_ompi(hm.paper_profile(), FFSF, sizes=[65536]).notes)


def test_export_writes_the_rules_and_their_settings():
    req = AlgorithmRequest(ops=["bcast"], sizes=[262144], layout=SFSF)
    ex = export(hm.paper_profile(), ["ompi-rules"], algorithms=req).placed("/x/out")
    assert set(ex.files) == {"ompi-rules", "ompi-env"}
    env = ex.files["ompi-env"]
    assert "export OMPI_MCA_coll_tuned_dynamic_rules_filename=/x/out/ompi-rules.conf" in env
    assert "export OMPI_MCA_coll_tuned_use_dynamic_rules=1" in env and "export OMPI_MCA_coll=^han" in env
    assert "unset OMPI_MCA_coll_tuned_bcast_algorithm OMPI_MCA_coll_tuned_scatter_algorithm" in env
    assert "knomial_radix" not in env  # the file runs no knomial
    assert "mpirun -n 4 ./app" in ex.usage and "chain:2" in ex.usage
    assert ex.to_dict()["ompi"]["entries"]["bcast"] == [{"from_bytes": 0, "upto_bytes": 262144, "algorithm": "chain:2"}]


def test_bad_input():
    with pytest.raises(InputError, match="at least 2 ranks"):
        choose_ompi(hm.paper_profile(), ["fast"], sizes=[8])
    with pytest.raises(InputError, match="--sizes: 0 is not a size"):
        choose_ompi(hm.paper_profile(), FFSF, sizes=[0])
    with pytest.raises(InputError, match="unknown operation 'barrier'"):
        choose_ompi(hm.paper_profile(), FFSF, ops=["barrier"], sizes=[8])
    # Open MPI's allreduce is exported (tests/libraries/test_openmpi_export_schedules.py); its prediction needs γ
    with pytest.raises(InputError, match="allreduce combines buffers: its prediction needs the reduction cost"):
        choose_ompi(hm.paper_profile(), FFSF, ops=["allreduce"], sizes=[8])


def test_export_takes_an_algorithm_request_and_every_library_format_is_one_entry():
    req = AlgorithmRequest(ops=["bcast"], sizes=[262144], layout=SFSF)
    ex = export(hm.paper_profile(), ["ompi-rules"], algorithms=req)
    assert ex.ompi is not None and ex.selection is None and list(ex.selections) == ["ompi"]
    assert set(LIBRARY_FORMATS) == set(FORMATS) - set(ORDER_FORMATS)
    with pytest.raises(TypeError, match="sizez"):
        export(hm.paper_profile(), ["ompi-rules"], sizez=[8])
    with pytest.raises(TypeError, match="layout"):  # the selection's inputs come in one AlgorithmRequest
        export(hm.paper_profile(), ["ompi-rules"], layout=SFSF)


def test_the_knomial_radix_is_chosen_for_the_job_where_no_fixed_knomial_runs_with_it():
    # 12 x 1 (tune_vs_exhaustive, Open MPI): knomial:6 at 16 KiB was predicted 7,116 µs (measured 6,742), the best
    # radix-4 choice chain:6 8,606 µs; the radix is an MCA parameter, no rules file carries one: it was never offered
    from hnowmodel.libraries.openmpi import fixed
    from hnowmodel.libraries.openmpi.export import ompi_env_text

    prof = hm.Profile.load(Path(__file__).parents[1] / "data" / "golden" / "cluster_profile.json")
    sel = choose_ompi(prof, ops=["bcast"], sizes=[16384, 65536, 262144])
    radix = sel.knomial_radix
    assert radix != OMPI_KNOMIAL_RADIX and any(r.chosen == f"knomial:{radix}" for r in sel.rows)
    assert all(not r.chosen.startswith("knomial:") or r.chosen == f"knomial:{radix}" for r in sel.rows)
    for r in sel.rows:  # the default is Open MPI's as it runs without the export: the default radix
        assert r.default_us is None or r.default != f"knomial:{radix}"
    env = ompi_env_text(sel, "rules.conf")
    assert f"OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix={radix}" in env
    n = len(sel.layout)
    for m in fixed.boundaries("bcast", n):  # nowhere does the file hand a fixed-rules k-nomial the new radix
        rule = R.select(sel.rules, "bcast", n, m)
        assert not ((rule is None or rule.algorithm == 0) and fixed.default_algorithm("bcast", n, m) == 7)
