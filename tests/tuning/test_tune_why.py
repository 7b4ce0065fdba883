"""Each row of ``hnow tune`` says why (issue #35): the model terms that decide the choice, computed from the model
(:mod:`hnowmodel.tuning.why`), in the rows, the CSV, the JSON and ``tune.md``; what is allowed but said: more
ranks per host than a host has cores; and what is refused before a calibration made first."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from hnowmodel.errors import InputError
from hnowmodel.params import Profile
from hnowmodel.tuning import tune
from hnowmodel.tuning.why import STEP, term_groups
from tests.helpers import paper_shm_profile

DATA = Path(__file__).parent.parent / "data" / "golden"
CLUSTER = Profile.load(DATA / "cluster_profile.json")  # 6 hosts, one rank each: f1 s1 m1 m2 f2 s2
NO_LAUNCHER = {"launcher": "no-such-mpiexec"}
BIG = [262144]


def test_every_row_names_model_terms_of_the_profile():
    res = tune(CLUSTER, shapes="12x1", mpi="openmpi", sizes=[1024, *BIG])  # no MPI runs: no launcher needed
    groups = {name for name, _ in term_groups(CLUSTER.to_dict())}
    for r in res.rows:
        assert r.why, r
        if r.default_us is None:
            assert "not modelled" in r.why
            continue
        named = [g for g in groups if g in r.why]
        assert named, r.why  # a term of this profile, by its group's name
        if r.chosen != r.default:
            assert r.why.startswith("default ") and "; chosen " in r.why
    changed = [r for r in res.rows if r.chosen != r.default and (r.predicted_gain_pct or 0) > 0]
    assert changed  # the 12-host shape has choices other than the defaults to explain


def test_the_why_follows_the_model_a_slow_send_overhead_dominates():
    """The same shape, the slow type's send overhead made 1000 times larger: the small rows' defaults are then
    mostly that overhead, which they were not before."""
    doc = CLUSTER.to_dict()
    for reg in doc["types"]["slow"]["regimes"]:
        reg["Sc_us"] *= 1000.0
    (row,) = tune(Profile.from_dict(doc), shapes="calibrated", mpi="mpich", ops="gather", sizes=[1024]).rows
    assert re.search(r"µs: \d+ % send overhead of slow\b", row.why.split(";")[0]), row.why
    (base,) = tune(CLUSTER, shapes="calibrated", mpi="mpich", ops="gather", sizes=[1024]).rows
    assert "send overhead of slow" not in base.why.split(";")[0]


def test_the_share_named_is_how_the_time_moves_with_that_term():
    """The % the why gives the default's weightiest term is how much its predicted time moves when that term alone
    moves (its elasticity): checked through the tune's own rows, the profile's term grown and shrunk by STEP."""
    (row,) = tune(CLUSTER, shapes="calibrated", mpi="mpich", ops="gather", sizes=BIG).rows
    found = re.match(r"default (fastest \()?[\d,.]+ µs: (\d+) % ([^;)]+)", row.why)  # its weightiest term
    assert found, row.why
    pct, term = float(found.group(2)), found.group(3)
    times = []
    for f in (1 + STEP, 1 - STEP):
        doc = CLUSTER.to_dict()
        grow = dict(term_groups(doc))[term]
        grow(doc, f)
        times.append(tune(Profile.from_dict(doc), shapes="calibrated", mpi="mpich", ops="gather", sizes=BIG).rows[0])
    moved = 100 * (times[0].default_us - times[1].default_us) / (2 * STEP * row.default_us)
    assert moved == pytest.approx(pct, abs=0.6) and pct > 0  # the why rounds to whole %


def test_the_why_is_in_the_csv_the_json_and_the_markdown_report(tmp_path):
    out = tmp_path / "t"
    res = tune(CLUSTER, shapes="6x1", mpi="mpich", sizes=[1024, *BIG], output=out, **NO_LAUNCHER)
    with (out / "tune.csv").open() as f:
        assert [r["why"] for r in csv.DictReader(f)] == [r.why for r in res.rows]
    assert [r["why"] for r in json.loads((out / "tune.json").read_text())["rows"]] == [r.why for r in res.rows]
    md = (out / "tune.md").read_text().splitlines()
    header = next(ln for ln in md if ln.startswith("| shape"))
    assert header.endswith("| why |")
    table = [ln for ln in md if ln.startswith("| 6x1 ")]
    assert len(table) == len(res.rows)
    assert all(ln.endswith(f" {r.why} |") for ln, r in zip(table, res.rows, strict=True))


def _cores_profile(cores: int) -> Profile:
    doc = paper_shm_profile().to_dict()
    doc["nodes"] = [
        {"rank": r, "host": h, "type": t, "cores": cores}
        for r, (h, t) in enumerate([("f1", "fast"), ("f1", "fast"), ("s1", "slow"), ("s1", "slow")])
    ]
    return Profile.from_dict(doc)


def test_more_ranks_per_host_than_cores_is_allowed_and_said_once():
    res = tune(_cores_profile(2), shapes="2x2,2x3,4x4", mpi="mpich", sizes=[1024], **NO_LAUNCHER)
    assert {r.shape for r in res.rows} == {"2x2", "2x3", "4x4"}  # every shape tuned
    (line,) = res.warnings
    assert line.startswith("warning: more ranks per host than the host has cores: 2x3 (f1: 3 ranks on 2 cores")
    assert "4x4" in line and "2x2" not in line
    assert tune(_cores_profile(4), shapes="2x3", mpi="mpich", sizes=[1024], **NO_LAUNCHER).warnings == ()


@pytest.mark.parametrize(
    ("hosts", "np", "shapes", "needle"),
    [
        ("a:1\nb:1\n", 2, "2x2", "these ranks run one per host"),
        ("a:2\n", 2, "1x2", "these ranks run all on one host"),
        ("a:2\nb:2\n", 4, "@OTHER", "host 'c' is not one the calibration runs on"),
    ],
)
def test_a_shape_the_calibration_first_cannot_serve_is_refused_before_it(tmp_path, hosts, np, shapes, needle):
    (tmp_path / "hosts").write_text(hosts)
    (tmp_path / "other").write_text("a:2\nc:2\n")
    shapes = shapes.replace("OTHER", str(tmp_path / "other"))
    with pytest.raises(InputError, match=needle):  # before any rank starts: the launcher does not exist
        tune(None, np=np, hostfile=str(tmp_path / "hosts"), shapes=shapes, mpi="mpich", sizes=[1024], **NO_LAUNCHER)


def test_ranks_sharing_a_slow_nic_are_named_by_it():
    """Three ranks per host behind NICs of 3 bytes/µs: the hosts' NICs decide, and the why says which."""
    from dataclasses import replace

    from hnowmodel.params import Nic
    from tests.helpers import network_profile

    doc = replace(paper_shm_profile(network_profile()), nic={t: Nic(3.0, 3.0) for t in ("fast", "mid", "slow")})
    doc = doc.to_dict()
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(
        [("a", "fast"), ("a", "fast"), ("b", "mid"), ("b", "mid"), ("c", "slow"), ("c", "slow")])]  # fmt: skip
    res = tune(Profile.from_dict(doc), shapes="3x3", mpi="openmpi", sizes=BIG)
    modelled = [r for r in res.rows if "not modelled" not in r.why]  # Open MPI's han allgather: kept, said so
    assert len(modelled) >= 3 and all(re.search(r"\d+ % NIC of (fast|mid|slow) hosts", r.why) for r in modelled)
    assert all(r.chosen == r.default for r in res.rows if r not in modelled), res.rows
