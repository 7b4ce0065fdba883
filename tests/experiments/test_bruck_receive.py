"""experiments/bruck_receive.py without MPI: the model's side, the rows, and bad input stopped before any cluster."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import hnowmodel as hm
from hnowmodel.errors import InputError
from tests.experiments import EXPERIMENTS, experiment

GOLDEN = "tests/data/golden/cluster_profile.json"  # calibrated on the same six hosts, by name


@pytest.fixture(scope="module")
def br():
    return experiment("bruck_receive")


def test_the_prediction_is_the_models_bruck_alltoall_on_the_hosts_types_by_name(br):
    got = br.predictions(GOLDEN, [65536, 262144])
    layout = ["fast", "slow", "medium", "medium", "fast", "slow"]
    want = hm.predict("alltoall", hm.Profile.load(GOLDEN), layout, "native:brucks", [65536, 262144], library="MPICH")
    assert got == {65536: float(want[0]), 262144: float(want[1])}
    assert got[262144] > 3 * got[65536] > 0
    assert br.predictions(None, [65536]) == {}


def test_a_profile_without_one_of_the_hosts_is_refused(br, tmp_path):
    doc = json.loads(open(GOLDEN).read())
    doc["nodes"] = [n for n in doc["nodes"] if n["host"] != "m2"]
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="'m2'"):
        br.predictions(str(tmp_path / "p.json"), [65536])


def test_rows_give_each_ranks_step_ends_for_the_hand_written_forms_only(br):
    call = [[1000.0, 3000.0], [2000.0, 5000.0]]  # two ranks, two steps
    got = {"8": {"mpich": {"calls_us": [10.0, 30.0, 20.0], "step_ends_us": [[[9.0], [10.0]]] * 3},
                 "indexed": {"calls_us": [5.0, 6.0, 7.0], "step_ends_us": [call] * 3}}}  # fmt: skip
    rows = br.rows_of("multiple", got, {})
    assert [(r["form"], r["median_us"], r["step_ends_ms"], r["error_pct"]) for r in rows] == [
        ("mpich", 20.0, "", None), ("indexed", 6.0, "1 2 | 3 5", None)]  # fmt: skip
    assert rows[0]["thread_level"] == "multiple" and rows[0]["calls_us"] == "10 30 20"


@pytest.mark.parametrize(
    "args, says",
    [(["--reps", "0"], "--reps"), (["--sizes", "12x"], "size"), (["--profile", "/nonexistent.json"], "no such file")],
)
def test_bad_input_stops_in_one_line_before_any_cluster(tmp_path, args, says):
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / "bruck_receive.py"), "--out", str(tmp_path / "o"), *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
