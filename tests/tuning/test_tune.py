"""``hm.tune`` (issue #35): job shapes from the calibrated pool, the rows and the files written for each shape and
library from a calibrated profile (the golden corpus's 6-host cluster profile), bad input refused before any MPI
run, and one small ``verify`` on 2 local ranks with MPICH."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.export import AlgorithmRequest, export
from hnowmodel.export.make import LIBRARY_FORMATS
from hnowmodel.params import Profile
from hnowmodel.tuning import check_shape_syntax, parse_shapes, pool, shape_profile, tune, tune_shape
from hnowmodel.tuning.run import _run_shape
from hnowmodel.tuning.verify import tuned_launch, verify
from tests.helpers import paper_shm_profile

DATA = Path(__file__).parent.parent / "data" / "golden"
CLUSTER = Profile.load(DATA / "cluster_profile.json")  # 6 hosts, one rank each: f1 s1 m1 m2 f2 s2
REALMPI = Profile.load(DATA / "realmpi_profile.json")  # 2 ranks of one machine, typed fast and slow
SIZES = [1024, 65536]
#: what a launch would start if it ran: nothing does without --verify
NO_LAUNCHER = {"launcher": "no-such-mpiexec"}


def _ops_of(library: str, gamma: bool = False) -> list[str]:
    """The operations ``library`` has algorithms hnow models for (what tune takes by default), the reductions only
    from a profile with the reduction cost γ (``gamma``)."""
    return [op for op in ops.names() if ops.native_choices(op, library) and (gamma or not ops.get(op).reduction)]


def _mpich_ops() -> list[str]:
    return _ops_of("MPICH")


def _shm_profile(hosts: list[tuple[str, str, int]]) -> Profile:
    """The paper's profile with shared-memory costs, calibrated on ``hosts`` (name, type, slots)."""
    doc = paper_shm_profile().to_dict()
    ranks = [(h, t) for h, t, k in hosts for _ in range(k)]
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(ranks)]
    return Profile.from_dict(doc)


# ---- shapes ---------------------------------------------------------------------------------------------------------
def test_a_shape_cycles_the_calibrated_pool_in_its_order():
    calibrated = [(h.name, h.type) for h in pool(CLUSTER)]
    assert [n for n, _ in calibrated] == ["f1", "s1", "m1", "m2", "f2", "s2"]
    twelve, four, cal = parse_shapes("12x1,4x1,calibrated", CLUSTER)
    assert [h.type for h in twelve.hosts] == [t for _, t in calibrated] * 2  # the pool's proportions, twice
    assert [h.name for h in twelve.hosts][6:8] == ["f1.2", "s1.2"]
    assert [h.type for h in four.hosts] == [t for _, t in calibrated][:4]
    assert [(h.name, h.type, h.slots) for h in cal.hosts] == [(n, t, 1) for n, t in calibrated]
    assert (twelve.ranks, four.ranks, cal.ranks) == (12, 4, 6)


def test_ranks_per_host_need_the_shared_memory_costs_of_their_type():
    prof = _shm_profile([("a", "fast", 2), ("b", "slow", 2)])
    (shape,) = parse_shapes("3x3", prof)
    assert shape.layout.hosts.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert list(shape.layout) == ["fast"] * 3 + ["slow"] * 3 + ["fast"] * 3
    # the profile as if calibrated on the shape: its hosts told apart
    assert shape_profile(prof, shape).host_layout.slots.tolist() == [3, 3, 3]
    with pytest.raises(InputError, match="shared-memory costs"):
        parse_shapes("4x3", CLUSTER)  # one rank per host was measured there


def test_a_hostfile_shape_types_its_hosts_by_name(tmp_path):
    hf = tmp_path / "hosts"
    hf.write_text("s2:1\nf1 slots=1\nm1:1\n")
    (shape,) = parse_shapes(f"@{hf}", CLUSTER)
    assert [(h.name, h.type) for h in shape.hosts] == [("s2", "slow"), ("f1", "fast"), ("m1", "medium")]
    hf.write_text("f1:1\nnew9:1\n")
    with pytest.raises(InputError, match="'new9' is not one the profile was calibrated on"):
        parse_shapes(f"@{hf}", CLUSTER)


@pytest.mark.parametrize(
    ("text", "needle"),
    [("12by1", "expected HOSTSxRANKS_PER_HOST"), ("0x2", ">= 1"), ("4x1,4x1", "given twice"), ("x3", "expected")],
)
def test_bad_shapes_are_one_input_error(text, needle):
    with pytest.raises(InputError, match=needle):
        check_shape_syntax(text)


def test_a_profile_without_calibrated_hosts_has_no_pool():
    with pytest.raises(InputError, match="no calibrated hosts"):
        parse_shapes("4x1", hm.paper_profile())


# ---- rows and files ---------------------------------------------------------------------------------------------
def test_rows_and_files_for_every_shape(tmp_path):
    out = tmp_path / "t"
    res = tune(CLUSTER, shapes="calibrated,12x1", mpi="mpich", sizes=SIZES, output=out, **NO_LAUNCHER)
    op_list = _mpich_ops()
    assert [(r.shape, r.op, r.size) for r in res.rows] == [
        (s, op, m) for s in ("calibrated", "12x1") for op in op_list for m in SIZES
    ]
    for r in res.rows:
        assert r.library == "MPICH" and r.ranks == {"calibrated": 6, "12x1": 12}[r.shape]
        if r.default_us is not None:
            assert r.predicted_gain_pct == pytest.approx(100 * (r.default_us - r.chosen_us) / r.default_us)
        assert r.measured_gain_pct is None  # nothing measured without verify
    for shape in ("calibrated", "12x1"):
        gains = [r.predicted_gain_pct or 0.0 for r in res.rows if r.shape == shape]
        assert sum(gains) / len(gains) >= 0  # the order kept pays, over every choice, at least what none does
        folder = out / shape / "mpich"
        names = {p.name for p in folder.iterdir()}
        assert {"mpich-coll.json", "mpich-env.txt", "hostfile", "rankfile", "env.sh", "job.sbatch"} <= names
        json.loads((folder / "mpich-coll.json").read_text())
        hosts = (folder / "hostfile").read_text().split()
        assert len(hosts) == {"calibrated": 6, "12x1": 12}[shape]  # one host:1 line per rank
        env = (folder / "env.sh").read_text()
        line = next(ln for ln in env.splitlines() if "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=" in ln)
        assert Path(line.split("=", 1)[1]).is_file()  # the file it names is the one written beside it
        assert f"source {folder.resolve() / 'env.sh'}" in (folder / "job.sbatch").read_text()
    with (out / "tune.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(res.rows)
    assert {"op", "size", "ranks", "default", "chosen", "predicted_gain_pct", "measured_gain_pct"} <= set(table[0])
    doc = json.loads((out / "tune.json").read_text())
    assert [r["chosen"] for r in doc["rows"]] == [r.chosen for r in res.rows]


def test_the_calibrated_shape_in_its_order_chooses_as_export_does():
    fmt = LIBRARY_FORMATS["mpich-json"]
    (shape,) = parse_shapes("calibrated", CLUSTER)
    st = tune_shape(CLUSTER, shape, fmt, _mpich_ops(), SIZES, reorder=False)
    ex = export(CLUSTER, ["mpich-json"], algorithms=AlgorithmRequest(ops=_mpich_ops(), sizes=SIZES))
    assert [(r.op, r.size, r.chosen) for r in st.rows] == [(r.op, r.size_bytes, r.chosen) for r in ex.selection.rows]
    assert st.perm == tuple(range(6)) and not st.reordered
    assert st.export.files["mpich-json"] == ex.files["mpich-json"]


def test_every_library_by_default_and_no_mpi_without_verify(tmp_path):
    res = tune(CLUSTER, shapes="8x1", sizes=SIZES, output=tmp_path / "t", **NO_LAUNCHER)
    assert res.libraries == tuple(f.library for f in LIBRARY_FORMATS.values())
    for f in LIBRARY_FORMATS.values():
        assert (tmp_path / "t" / "8x1" / f.key / "env.sh").is_file()
        assert {r.op for r in res.rows if r.library == f.library} == set(_ops_of(f.library))


def test_without_gamma_the_reductions_are_one_note_or_refused(tmp_path):
    """A profile without the reduction cost γ: the others are tuned and one note names the reductions; asked for by
    name, one refused in one line that says how to get γ, before anything runs."""
    reductions = [op for op in ops.names() if ops.get(op).reduction]
    res = tune(CLUSTER, shapes="4x1", mpi="mpich", sizes=SIZES, output=tmp_path / "t", **NO_LAUNCHER)
    assert {r.op for r in res.rows} == set(_mpich_ops()) and not {r.op for r in res.rows} & set(reductions)
    (note,) = [n for n in res.notes if "γ" in n]
    assert note.startswith(f"not tuned: {', '.join(reductions)} combine buffers") and "hnow calibrate" in note
    with pytest.raises(InputError, match=r"^--ops: allreduce combines buffers: .*calibrate one \(hnow calibrate\)"):
        tune(CLUSTER, shapes="4x1", mpi="mpich", ops="allreduce", sizes=SIZES, output=tmp_path / "u", **NO_LAUNCHER)
    assert not (tmp_path / "u").exists()


def test_shared_hosts_keep_their_ranks_together_in_the_tuned_order(tmp_path):
    prof = _shm_profile([("s1", "slow", 2), ("f1", "fast", 2)])
    res = tune(prof, shapes="4x2", mpi="mpich", sizes=SIZES, output=tmp_path / "t", **NO_LAUNCHER)
    lines = (tmp_path / "t" / "4x2" / "mpich" / "hostfile").read_text().split()
    assert sorted(lines) == sorted(["s1:2", "f1:2", "s1.2:2", "f1.2:2"])  # whole hosts, whatever their order
    assert {r.ranks for r in res.rows} == {8}


def test_an_existing_output_is_not_overwritten(tmp_path):
    out = tmp_path / "t"
    tune(CLUSTER, shapes="4x1", mpi="mpich", sizes=SIZES, output=out, **NO_LAUNCHER)
    with pytest.raises(InputError, match="not empty"):
        tune(CLUSTER, shapes="4x1", mpi="mpich", sizes=SIZES, output=out, **NO_LAUNCHER)
    tune(CLUSTER, shapes="4x1", mpi="mpich", sizes=SIZES, output=out, force=True, **NO_LAUNCHER)


@pytest.mark.parametrize(
    ("keywords", "needle"),
    [
        ({"shapes": "4x3"}, "shared-memory costs"),
        ({"shapes": "4by3"}, "expected HOSTSxRANKS_PER_HOST"),
        ({"sizes": [0, 1024]}, "at least 1 byte"),
        ({"mpi": "lam"}, "--mpi 'lam'"),
        ({"ops": "nosuchop"}, "nosuchop"),
        ({"quick": True}, "--quick"),  # a given profile: nothing is calibrated
        ({"verify_max_us": -1.0}, "--verify-max-us"),
    ],
)
def test_bad_input_is_one_input_error(keywords, needle):
    with pytest.raises(InputError, match=needle):
        tune(CLUSTER, **{"sizes": SIZES, **keywords}, **NO_LAUNCHER)


# ---- verify -----------------------------------------------------------------------------------------------------
def test_verify_runs_each_setting_only_at_the_sizes_it_was_chosen_for(monkeypatch):
    """hm.compare runs every tree at every size given: the settings sharing their sizes are one job, the others
    jobs of their own (a pinned algorithm never runs at a size no row asked for)."""
    from types import SimpleNamespace

    from hnowmodel.tuning import verify as verify_module

    calls = []

    def fake_compare(prof, launch, settings, progress=None):
        calls.append((list(settings.trees), list(settings.sizes)))
        rows = [SimpleNamespace(tree=t, size=m) for t in settings.trees for m in settings.sizes]
        return SimpleNamespace(rows=rows)

    monkeypatch.setattr(verify_module, "compare", fake_compare)
    specs = {"native:a": [64, 16], "native:b": [4096], "native:c": [16, 64]}
    got = verify_module._measure(
        REALMPI, hm.Launch(np=2), ["fast", "slow"], specs, "reduce", {"reps": 3, "progress": None}
    )
    assert calls == [(["native:a", "native:c"], [16, 64]), (["native:b"], [4096])]
    assert sorted(got) == sorted([(t, m) for t, szs in specs.items() for m in szs])


def test_verify_leaves_a_size_predicted_over_the_limit_unmeasured_and_says_so(tmp_path):
    """Every run predicted over the limit: nothing is measured (the launcher, which does not exist, is never
    reached), every row keeps its prediction, and one note names the sizes with their predicted run."""
    op = ops.names()[0]
    res = tune(REALMPI, np=2, mpi="mpich", verify=True, ops=op, sizes=[4096, 65536], verify_max_us=1e-3,
               output=tmp_path / "t", **NO_LAUNCHER)  # fmt: skip
    assert [r.size for r in res.rows] == [4096, 65536]
    assert all(r.measured_gain_pct is None and r.predicted_gain_pct is not None for r in res.rows)
    (note,) = [n for n in res.notes if n.startswith("not measured")]
    assert "(--verify-max-us)" in note and f"{op} 4K (" in note and f"{op} 64K (" in note


@pytest.mark.mpi
def test_verify_measures_the_default_and_the_tuned_settings_on_two_local_ranks(tmp_path):
    op = ops.names()[0]
    res = tune(REALMPI, np=2, mpi="mpich", verify=True, ops=op, sizes=[4096], reps=3, output=tmp_path / "t")
    assert res.verified == "run-2x1" and [r.shape for r in res.rows] == ["run-2x1"]
    (row,) = res.rows
    assert row.measured_default_us > 0 and row.measured_tuned_us > 0 and row.measured_gain_pct is not None
    assert row.measured_gain_min_pct <= row.measured_gain_pct <= row.measured_gain_max_pct
    # a choice other than the default is measured as its own setting, pinned as the file would select it
    (shape,) = [s for s in res.shapes if s.label == "run-2x1"]
    st = tune_shape(REALMPI, shape, LIBRARY_FORMATS["mpich-json"], [op], [4096], reorder=False)
    other = next(a.algorithm for a in ops.native_choices(op, "MPICH") if a.algorithm != row.default)
    st = replace(st, rows=(replace(st.rows[0], chosen=other),))
    (got,) = verify(REALMPI, hm.Launch(np=2, mpi="mpich"), st, tmp_path / "v", reps=3)
    assert got.chosen != got.default and got.measured_tuned_us > 0 and got.measured_default_us > 0
    assert got.slower == (got.measured_gain_pct < 0)


def _cluster_doc(names: list[str], name: str = "tunet") -> dict:
    hosts = [{"name": n, "egress_mbit": 50, "ingress_mbit": 50, "slots": 1} for n in names]
    return {"schema": "hnowmodel.cluster/1", "name": name, "hosts": hosts}


def test_the_tuned_order_runs_on_a_copy_of_the_cluster_or_hostfile_in_that_order(tmp_path):
    (shape,) = parse_shapes("calibrated", CLUSTER)
    st = next(
        st
        for st in (tune_shape(CLUSTER, shape, f, _ops_of(f.library), SIZES) for f in LIBRARY_FORMATS.values())
        if st.reordered
    )  # a library whose order moves ranks on this profile
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_cluster_doc(list(shape.rank_hosts))))
    got = tuned_launch(hm.Launch(np=6, cluster=str(spec)), st, tmp_path / "c")
    assert [h.name for h in hm.cluster.load_spec(got.cluster).hosts] == list(st.hosts_in_order)
    # a cluster whose name already takes all the room its host names leave: the copy's name is cut to fit
    spec.write_text(json.dumps(_cluster_doc(list(shape.rank_hosts), "runrunrun")))
    copy = hm.cluster.load_spec(tuned_launch(hm.Launch(np=6, cluster=str(spec)), st, tmp_path / "d").cluster)
    assert copy.name != "runrunrun" and [h.name for h in copy.hosts] == list(st.hosts_in_order)
    hf = tmp_path / "hosts"
    hf.write_text("".join(f"{h}:1\n" for h in shape.rank_hosts))
    got = tuned_launch(hm.Launch(np=6, hostfile=str(hf)), st, tmp_path / "h")
    assert Path(got.hostfile).read_text().split() == [f"{h}:1" for h in st.hosts_in_order]
    with pytest.raises(InputError, match="hosts are unknown"):
        tuned_launch(hm.Launch(np=6), st, tmp_path / "p")


def test_the_run_shape_of_a_given_layout_takes_the_clusters_host_names(tmp_path):
    """--verify with --layout on a cluster of one rank per host: the shape's hosts are the cluster's (the tuned
    order is a copy of the cluster in that order, which names its hosts), not h1, h2, ..."""
    spec = tmp_path / "spec.json"
    names = ["fa", "sa", "ma", "mb", "fb", "sb"]
    spec.write_text(json.dumps(_cluster_doc(names)))
    launch = hm.Launch(np=6, cluster=str(spec))
    shape, known = _run_shape(CLUSTER, launch, "fast,slow,medium,medium,fast,slow")
    assert known and [h.name for h in shape.hosts] == names
    assert [h.type for h in shape.hosts] == ["fast", "slow", "medium", "medium", "fast", "slow"]
