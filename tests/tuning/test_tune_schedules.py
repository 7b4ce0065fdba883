"""``hm.tune`` over every registered operation (issue #35): the operations whose algorithms are message schedules
(reduce, allreduce, allgather, reduce_scatter, alltoall) get rows, files and a why like the tree operations, the
reductions from a profile with the reduction cost γ (a profile without it: tests/tuning/test_tune.py); one
``verify`` of allreduce on 2 local ranks with MPICH."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.export import AlgorithmRequest, export
from hnowmodel.export.make import LIBRARY_FORMATS
from hnowmodel.params import Profile
from hnowmodel.tuning import parse_shapes, tune, tune_shape
from hnowmodel.tuning.choose import gain_pct
from hnowmodel.tuning.verify import verify
from hnowmodel.tuning.why import term_groups
from tests.helpers import gamma_profile_file

DATA = Path(__file__).parent.parent / "data" / "golden"
SIZES = [1024, 65536]
NO_LAUNCHER = {"launcher": "no-such-mpiexec"}
#: the calibrated hosts of the profiles below: two of each type, one rank each
HOSTS = [("f1", "fast"), ("s1", "slow"), ("f2", "fast"), ("s2", "slow")]


def _gamma_profile(folder: Path, scale: float = 1.0) -> Profile:
    """The paper profile with γ per type (tests.helpers.gamma_profile_file; γ times ``scale``), calibrated on
    :data:`HOSTS`."""
    doc = Profile.load(gamma_profile_file(folder)).to_dict()
    for costs in doc["extensions"]["reduce"]["types"].values():
        costs["Gm_us_per_byte"] *= scale
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(HOSTS)]
    return Profile.from_dict(doc)


def _schedule_ops(library: str) -> list[str]:
    """The operations whose algorithms are message schedules that ``library`` has algorithms hnow models for."""
    return [op for op in ops.names() if ops.get(op).movement is None and ops.native_choices(op, library)]


def test_every_registered_operation_gets_rows_by_default(tmp_path):
    prof = _gamma_profile(tmp_path)
    res = tune(prof, shapes="6x1", sizes=SIZES, output=tmp_path / "t", **NO_LAUNCHER)
    assert not [n for n in res.notes if "γ" in n]  # nothing left out for want of γ
    for f in LIBRARY_FORMATS.values():
        want = [op for op in ops.names() if ops.native_choices(op, f.library)]
        assert _schedule_ops(f.library) and set(_schedule_ops(f.library)) <= set(want)
        got = [(r.op, r.size) for r in res.rows if r.library == f.library]
        assert got == [(op, m) for op in want for m in SIZES]
        for r in res.rows:
            if r.library == f.library and r.default_us is not None:
                assert r.predicted_gain_pct == pytest.approx(gain_pct(r.default_us, r.chosen_us))
                assert r.why
        folder = tmp_path / "t" / "6x1" / f.key
        assert (folder / f.file_name).is_file() and (folder / "env.sh").is_file()
    doc = json.loads((tmp_path / "t" / "tune.json").read_text())
    assert {r["op"] for r in doc["rows"]} == set(ops.names())


@pytest.mark.parametrize("fmt", list(LIBRARY_FORMATS))
def test_the_schedule_operations_are_chosen_as_export_chooses_them(tmp_path, fmt):
    """In the launched order, each library's choices for the five operations are the export's own, and its file is
    the one the export writes (reused, not rebuilt)."""
    prof = _gamma_profile(tmp_path)
    f = LIBRARY_FORMATS[fmt]
    op_list = _schedule_ops(f.library)
    (shape,) = parse_shapes("calibrated", prof)
    st = tune_shape(prof, shape, f, op_list, SIZES, reorder=False)
    ex = export(prof, [fmt], algorithms=AlgorithmRequest(ops=op_list, sizes=SIZES))
    rows = ex.selections[f.key].rows
    assert [(r.op, r.size, r.default, r.chosen) for r in st.rows] == [
        (r.op, r.size_bytes, r.default, r.chosen) for r in rows
    ]
    assert st.export.files[fmt] == ex.files[fmt]


def test_a_changed_choice_among_the_schedule_operations_is_written_to_the_librarys_file(tmp_path):
    """MPICH's selection JSON written for the shape puts in the schedule operations' changed choices."""
    prof = _gamma_profile(tmp_path)
    (shape,) = parse_shapes("8x1", prof)
    f = LIBRARY_FORMATS["mpich-json"]
    st = tune_shape(prof, shape, f, _schedule_ops(f.library), [1024, 65536, 1 << 20])
    changed = {r.op for r in st.rows if r.chosen != r.default}
    assert changed and all(
        (r.predicted_gain_pct or 0) > 0 for r in st.rows if r.op in changed and r.chosen != r.default
    )
    entries = st.export.selections[f.key].entries
    assert all(entries[op] for op in changed)  # the file says what was chosen
    json.loads(st.export.files["mpich-json"])  # the table MPICH reads, with them put in


def test_the_rank_order_is_scored_over_every_operation(tmp_path):
    """The order kept gains at least what the launched order gains, in the mean over every operation and size."""
    prof = _gamma_profile(tmp_path)
    (shape,) = parse_shapes("8x1", prof)
    f = LIBRARY_FORMATS["mpich-json"]
    op_list = [op for op in ops.names() if ops.native_choices(op, f.library)]
    tuned = tune_shape(prof, shape, f, op_list, SIZES)
    launched = tune_shape(prof, shape, f, op_list, SIZES, reorder=False)
    assert {r.op for r in tuned.rows} == set(op_list)

    def mean(st):
        return sum(r.predicted_gain_pct or 0.0 for r in st.rows) / len(st.rows)

    assert mean(tuned) >= mean(launched) - 1e-9


def test_the_why_of_a_reduction_names_its_reduction_cost(tmp_path):
    """γ is a term group of its own: made 1000 times larger, it is what a large allreduce's time is mostly spent on."""
    prof = _gamma_profile(tmp_path, scale=1000.0)
    assert {"reduction cost γ of fast", "reduction cost γ of slow"} <= {n for n, _ in term_groups(prof.to_dict())}
    rows = tune(prof, shapes="calibrated", mpi="mpich", ops="allreduce", sizes=[1 << 20], **NO_LAUNCHER).rows
    (row,) = rows
    assert "reduction cost γ of slow" in row.why.split(";")[0], row.why


@pytest.mark.mpi
def test_verify_measures_allreduce_on_two_local_ranks(tmp_path):
    """``--verify`` of allreduce on 2 local ranks (MPICH): the default and a tuned setting measured as hnow compare
    measures them; a choice other than the default runs as its own pinned setting."""
    doc = Profile.load(DATA / "realmpi_profile.json").to_dict()  # 2 ranks of one machine, typed fast and slow
    doc["extensions"] = {**doc.get("extensions", {}), **Profile.load(gamma_profile_file(tmp_path)).extensions}
    prof = Profile.from_dict(doc)
    res = tune(prof, np=2, mpi="mpich", verify=True, ops="allreduce", sizes=[4, 4096], reps=3, output=tmp_path / "t")
    small, row = res.rows
    assert small.size == 4 and small.measured_default_us is None  # 4 B is not a whole double: chosen, not measured
    assert row.measured_default_us > 0 and row.measured_tuned_us > 0 and row.measured_gain_pct is not None
    assert row.measured_gain_min_pct <= row.measured_gain_pct <= row.measured_gain_max_pct
    (shape,) = [s for s in res.shapes if s.label == "run-2x1"]
    st = tune_shape(prof, shape, LIBRARY_FORMATS["mpich-json"], ["allreduce"], [4096], reorder=False)
    other = next(a.algorithm for a in ops.native_choices("allreduce", "MPICH") if a.algorithm != row.default)
    st = replace(st, rows=(replace(st.rows[0], chosen=other),))
    (got,) = verify(prof, hm.Launch(np=2, mpi="mpich"), st, tmp_path / "v", reps=3)
    assert got.chosen != got.default and got.measured_tuned_us > 0 and got.measured_default_us > 0
    assert got.slower == (got.measured_gain_pct < 0)
