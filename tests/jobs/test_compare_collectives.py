"""hnow measure/compare of the operations whose algorithms are message schedules, by the MPI library's own
collectives (MPICH, 2 local ranks): every row checked (exact sums of doubles), timed, and put beside the prediction
of the schedule algorithm that models MPICH's default at that size (its selection JSON), or a note where MPICH runs
one hnow does not model; the request checks refuse a tree for them before any rank starts."""

from __future__ import annotations

import json

import pytest

import hnowmodel as hm
from hnowmodel.errors import InputError
from hnowmodel.jobs.checks import check_request
from hnowmodel.jobs.launcher import Launch
from hnowmodel.libraries.mpich.defaults import RULES
from tests.helpers import check_compared_row, gamma_profile_file, run_hnow

SCHEDULE_OPS = [o for o in hm.ops.names() if o not in hm.ops.tree_names()]


def test_a_tree_is_refused_for_them_before_any_rank_starts():
    with pytest.raises(InputError, match="allreduce runs no tree .*--tree native or native:ALGO"):
        check_request(Launch(np=2), "allreduce", "binomial", 0, None)
    ops, items, _ = check_request(Launch(np=2), "bcast,allreduce", "binomial,native", 0, None)
    assert ops == ("bcast", "allreduce") and [n for n, _ in items] == ["binomial", "native"]


@pytest.mark.mpi
def test_compare_native_on_two_ranks_puts_each_row_beside_its_model(tmp_path):
    path = gamma_profile_file(tmp_path)
    prof = hm.Profile.load(path)
    sizes = (8, 4096)
    proc = run_hnow(
        "compare", "--np", "2", "--mpi", "mpich", "--profile", str(path), "--layout", "FF",
        "--ops", ",".join(SCHEDULE_OPS), "--trees", "native", "--sizes", ",".join(map(str, sizes)),
        "--reps", "2", "--iters", "2", "--json", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = {(r["op"], r["size"]): r for r in doc["rows"]}
    assert set(rows) == {(o, m) for o in SCHEDULE_OPS for m in sizes}
    for (op, m), r in rows.items():
        assert r["tree"] == "native", r  # a wrong sum or byte on any rank aborts the job
        check_compared_row(r)
        alg = RULES[op](2, m, True)
        if alg is None:  # an algorithm MPICH runs there that hnow does not model: measured, not predicted
            assert r["predicted_us"] is None and "does not model" in r["note"], r
            continue
        assert r["model_tree"] == alg, r
        want = hm.predict(op, prof, ["fast", "fast"], alg, [m], variant=r["variant"])[0]
        assert r["predicted_us"] == pytest.approx(want, rel=1e-9), r
    assert rows[("allreduce", 8)]["model_tree"] == "recursive_doubling"
    assert rows[("allreduce", 4096)]["model_tree"] == "reduce_scatter_allgather"


@pytest.mark.mpi
def test_a_pinned_algorithm_is_modelled_by_its_schedule_where_it_runs(tmp_path):
    """native:reduce_scatter_allgather (Rabenseifner's) pinned by MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM: its schedule
    at 4 KiB; at 8 B (one double, fewer than the 2 ranks) MPICH falls back and the row has no prediction, a note."""
    path = gamma_profile_file(tmp_path)
    prof = hm.Profile.load(path)
    proc = run_hnow(
        "compare", "--np", "2", "--mpi", "mpich", "--profile", str(path), "--layout", "FF", "--ops", "allreduce",
        "--trees", "native:reduce_scatter_allgather", "--sizes", "8,4096", "--reps", "2", "--iters", "2", "--json",
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {r["size"]: r for r in json.loads(proc.stdout)["rows"]}
    assert rows[8]["predicted_us"] is None and "does not run allreduce on 2 ranks at 8 B" in rows[8]["note"]
    want = hm.predict("allreduce", prof, ["fast", "fast"], "reduce_scatter_allgather", [4096])[0]
    assert rows[4096]["predicted_us"] == pytest.approx(want, rel=1e-9)
    assert rows[4096]["model_tree"] == "reduce_scatter_allgather"
