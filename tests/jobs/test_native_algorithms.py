"""``native:ALGO``: the MPI library's own collective with one of its algorithms chosen by name (what ``hnow export``
chooses among), measured and compared like ``native``, which keeps meaning the pinned default."""

from __future__ import annotations

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from tests.helpers import check_compared_row, check_measured_row, one_error_line, run_hnow


def test_native_specs_name_their_algorithm():
    assert ops.native_name("native") == ""
    assert ops.native_name("native:tree:knomial_1:4") == "tree:knomial_1:4"
    assert ops.native_name("kary:3") is None and ops.native_name("natives") is None
    assert ops.native_for("native", "gather", "MPICH") is ops.get("gather").native["MPICH"]
    assert ops.native_for("native:tree:kary:3", "bcast", "MPICH").model_tree == "kary:3"
    assert ops.native_for("native:binomial", "scatter", "MPICH").model_tree == "binomial"
    assert ops.native_for("native:tree:kary:3", "scatter", "MPICH") is None  # scatter has no tree algorithm
    env = ops.native_spec_env("native:tree:knomial_2:5", ["bcast", "gather"])
    assert env["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "tree" and env["MPIR_CVAR_BCAST_TREE_KVAL"] == "5"
    assert "MPIR_CVAR_GATHER_INTRA_ALGORITHM" not in env  # the spec does not run gather


@pytest.mark.parametrize(
    ("spec", "op", "names"),
    [
        ("native:tree:kary:9", ["bcast"], "native:tree:kary:8"),
        (
            "native:tree:kary:3",
            ["scatter", "gather"],
            "native, native:binomial, native:ch4, native:basic_linear, native:linear_nb, native:han, "
            "native:han:default, native:default, native:linear_sync)",
        ),
        ("native:bogus", None, "native:tree:knomial_2:3"),
    ],
)
def test_an_unknown_algorithm_names_the_valid_ones_before_mpi(spec, op, names):
    with pytest.raises(InputError, match="unknown native algorithm") as e:
        ops.check_native(spec, op)
    assert names in str(e.value)
    with pytest.raises(InputError, match="unknown native algorithm"):  # the library refuses it before a rank starts
        hm.measure(np=2, op=op or "bcast", tree=spec, sizes=[1024], launcher="/nonexistent/mpiexec")
    with pytest.raises(InputError, match="is not 'native' or 'native:ALGO'"):
        ops.check_native("native:")


@pytest.mark.parametrize(
    "argv",
    [
        ("measure", "--np", "2", "--tree", "native:tree:kary:9"),
        ("measure", "--np", "2", "--op", "gather", "--tree", "native:tree:kary:3"),
        ("measure", "--np", "2", "--testbed", "paper", "--tree", "native:tree:kary:3"),
        ("compare", "--np", "2", "--profile", "paper", "--layout", "FF", "--trees", "native:nope"),
        ("compare", "--np", "2", "--ops", "scatter", "--trees", "native:tree:kary:2"),  # before it calibrates
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_native_algorithm_exits_2_with_one_line(argv):
    proc = run_hnow(*argv, "--json", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert one_error_line(proc.stderr) and "native" in proc.stderr, proc.stderr
    assert proc.stdout == ""


@pytest.mark.mpi
def test_native_algorithm_is_measured_pinned_and_compared_with_its_model_tree():
    """Plain MPI, 4 ranks: ``native`` and ``native:tree:kary:3`` in one call (two jobs: both set MPICH's bcast
    algorithm); the named algorithm runs only the operation it exists for, its pinning is reported, and compare
    predicts it with the algorithm's own model tree."""
    m = hm.measure(
        np=4, op=["bcast", "scatter"], tree=["native", "native:tree:kary:3"], sizes=[4096], reps=2, both=False
    )
    assert {(r.op, r.tree) for r in m.rows} == {
        ("bcast", "native"),
        ("scatter", "native"),
        ("bcast", "native:tree:kary:3"),
    }
    for r in m.rows:
        check_measured_row(r)  # verified payload, ordered spread, measured = its stat
        assert r.size == 4096
    # the two settings of MPICH's bcast algorithm ran in two jobs, each with its own pin in the ranks' environment
    kary = m.run["natives"]["native:tree:kary:3"]
    assert kary["pinned"] and kary["algorithm"] == "tree:kary:3" and kary["model_tree"] == "kary:3"
    assert kary["cvars"]["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "tree"
    assert kary["cvars"]["MPIR_CVAR_BCAST_TREE_TYPE"] == "kary" and kary["cvars"]["MPIR_CVAR_BCAST_TREE_KVAL"] == "3"
    plain = m.run["natives"]["native"]
    assert plain["pinned"] and plain["cvars"]["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "binomial"
    assert plain["model_tree"] == "binomial" and kary["model_trees"] == {"bcast": "kary:3"}  # scatter: no kary
    # what the ranks had set is exactly what the registry pins for each spec
    assert kary["cvars"] == ops.native_spec_env("native:tree:kary:3", ["bcast"])
    assert m.run["native"] == plain  # ``native`` keeps meaning the pinned default

    prof, layout = hm.paper_profile(), ["fast", "fast", "slow", "slow"]
    cmp = hm.compare(
        prof, np=4, layout=layout, ops=["bcast", "gather"], trees=["native:tree:knomial_1:3"], sizes=[4096], reps=2
    )
    (row,) = cmp.rows  # gather has no tree algorithm: nothing to run
    assert (row.op, row.tree, row.model_tree) == ("bcast", "native:tree:knomial_1:3", "mpich-knomial1:3")
    assert row.size == 4096
    check_compared_row(row)
    assert cmp.run["natives"]["native:tree:knomial_1:3"]["pinned"] is True
    nat = ops.native_for("native:tree:knomial_1:3", "bcast", "MPICH")
    want = ops.native_predict("bcast", "MPICH", prof, layout, [4096], algorithm=nat)[0]
    assert row.predicted_us == pytest.approx(want)
    assert row.predicted_us != pytest.approx(ops.native_predict("bcast", "MPICH", prof, layout, [4096])[0])


@pytest.mark.mpi
def test_mpichs_scatter_ring_allgather_bcast_runs_pinned_and_is_predicted_by_its_schedule():
    """Plain MPI, 5 ranks (not a power of two, a chunk short: 16384 B = 4 x 3277 + 3276): MPICH's
    ``scatter_ring_allgather`` pinned (``MPIR_CVAR_COLLECTIVE_FALLBACK=error``: it ran, not a fallback), every
    rank's payload checked, and compare predicts it by the bcast's message schedule of that name. One timing
    method (``both=False``): about 1 s here."""
    prof, layout = hm.paper_profile(), ["fast", "slow", "fast", "slow", "slow"]
    cmp = hm.compare(prof, np=5, layout=layout, ops=["bcast"], trees=["native:scatter_ring_allgather"],
                     sizes=[16384], reps=2, both=False)  # fmt: skip
    (row,) = cmp.rows
    check_compared_row(row)  # verified payload, a prediction
    ran = cmp.run["natives"]["native:scatter_ring_allgather"]
    assert ran["pinned"] and ran["cvars"]["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "scatter_ring_allgather"
    assert ran["model_tree"] == "scatter_ring_allgather"
    want = ops.get("bcast").predict(prof, layout, "scatter_ring_allgather", [16384])[0]
    assert row.predicted_us == pytest.approx(want)


@pytest.mark.mpi
def test_mpichs_default_bcast_runs_with_its_algorithm_variable_unset():
    """``native:default`` for bcast is MPICH's own choice: the job leaves ``MPIR_CVAR_BCAST_INTRA_ALGORITHM`` unset
    (the pinned binomial is set for every other job, before ``MPI_Init``), reports it pinned as asked, and compare
    predicts each size by the algorithm MPICH's table runs there (2 ranks: binomial)."""
    m = hm.measure(np=2, op="bcast", tree="native:default", sizes=[16384], reps=2, both=False)
    ran = m.run["natives"]["native:default"]
    assert ran["pinned"] and ran["algorithm"] == "default" and ran["model_tree"] == "by size", ran
    assert (
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM" not in ran["cvars"] and ran["cvars"]["MPIR_CVAR_DEVICE_COLLECTIVES"] == "none"
    )
    (row,) = m.rows
    check_measured_row(row)
