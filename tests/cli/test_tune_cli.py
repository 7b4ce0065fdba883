"""``hnow tune`` through the real command: the JSON rows, the files, and bad input as one line and exit 2 before any
MPI run (a launcher that does not exist is never reached)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import one_error_line, paper_shm_profile, run_hnow

PROFILE = str(Path(__file__).parent.parent / "data" / "golden" / "cluster_profile.json")
NO_LAUNCHER = ("--launcher", "no-such-mpiexec")


def test_json_rows_carry_what_the_issue_names(tmp_path):
    proc = run_hnow(
        "tune", "--profile", PROFILE, "--shapes", "12x1", "--mpi", "openmpi", "--sizes", "1K,64K", "-o",
        str(tmp_path / "t"), "--json", check=True,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    assert doc["libraries"] == ["Open MPI"] and doc["rows"]
    for r in doc["rows"]:
        assert {"op", "size", "ranks", "default", "chosen", "predicted_gain_pct"} <= set(r)
        assert r["ranks"] == 12
    assert (tmp_path / "t" / "12x1" / "ompi" / "ompi-rules.conf").is_file()
    assert (tmp_path / "t" / "12x1" / "ompi" / "rankfile").read_text().count("rank ") == 12


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--profile", PROFILE, "--shapes", "12by1"), "--shapes '12by1'"),
        (("--profile", PROFILE, "--shapes", "4x3"), "shared-memory costs"),
        (("--profile", PROFILE, "--verify"), "--np is required"),
        (("--shapes", "4x1"), "--np is required"),
        (("--profile", PROFILE, "-o", "/proc/hnow-tune"), "-o"),
        (("--profile", PROFILE, "--sizes", "1K,lots"), "--sizes"),
        (("--profile", PROFILE, "--ops", "allreduce"), "--ops: allreduce combines buffers"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    proc = run_hnow("tune", *args, *NO_LAUNCHER)
    assert proc.returncode == 2, proc.stderr
    assert one_error_line(proc.stderr) and needle in proc.stderr, proc.stderr


def test_an_existing_output_folder_is_refused_without_force(tmp_path):
    out = tmp_path / "t"
    out.mkdir()
    (out / "keep.txt").write_text("mine\n")
    proc = run_hnow("tune", "--profile", PROFILE, "--mpi", "mpich", "--sizes", "1K", "-o", str(out), *NO_LAUNCHER)
    assert proc.returncode == 2 and "not empty" in proc.stderr and one_error_line(proc.stderr)
    run_hnow(
        "tune", "--profile", PROFILE, "--mpi", "mpich", "--sizes", "1K", "-o", str(out), "--force", *NO_LAUNCHER,
        check=True,
    )  # fmt: skip
    assert (out / "keep.txt").read_text() == "mine\n" and (out / "calibrated" / "mpich" / "env.sh").is_file()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--np", "4", "--shapes", "4x3"), "--shapes 4x3: several ranks per host need a calibration"),
        (("--np", "4", "--shapes", "4x1,2x2"), "these ranks run all on one host"),
        (("--np", "4", "--shapes", "4by1"), "--shapes '4by1'"),
    ],
)
def test_a_shape_the_calibration_cannot_serve_is_refused_before_it_runs(args, needle):
    proc = run_hnow("tune", *args, *NO_LAUNCHER)  # a launch would fail on the launcher: none is reached
    assert proc.returncode == 2, proc.stderr
    assert one_error_line(proc.stderr) and needle in proc.stderr, proc.stderr


def test_more_ranks_per_host_than_cores_is_one_warning_line(tmp_path):
    doc = paper_shm_profile().to_dict()
    doc["nodes"] = [{"rank": r, "host": h, "type": t, "cores": 2} for r, (h, t) in enumerate(
        [("f1", "fast"), ("f1", "fast"), ("s1", "slow"), ("s1", "slow")])]  # fmt: skip
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(doc))
    for shapes, warned in (("2x2", False), ("2x3,4x1", True)):
        proc = run_hnow("tune", "--profile", str(prof), "--shapes", shapes, "--mpi", "mpich", "--sizes", "1K", "--json")
        assert proc.returncode == 0, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
        assert len(lines) == int(warned) and json.loads(proc.stdout)["warnings"] == lines
        if warned:
            assert "2x3 (f1: 3 ranks on 2 cores" in lines[0] and "allowed" in lines[0] and "4x1" not in lines[0]


@pytest.mark.mpi
def test_a_killed_tune_continues_from_its_last_finished_step(tmp_path):
    """2 local ranks: the calibration first is killed at its reduction cost (after its shared-memory rounds); the
    same command again continues there, without --force, and tunes from a valid profile."""
    out = tmp_path / "t"
    cmd = ("tune", "--np", "2", "--mpi", "mpich", "--calibrate-sizes", "0,1K", "--sizes", "1K", "--op", "bcast")
    killed = run_hnow(*cmd, "-o", str(out), env={"HNOW_FAULT": "0:reduction cost round 1:exit"}, timeout=240)
    assert killed.returncode != 0 and not (out / "tune.json").exists()
    assert "shared-memory" in {p.name[5:-5] for p in (out / "calibration").iterdir()}
    again = run_hnow(*cmd, "-o", str(out), timeout=240)
    assert again.returncode == 0, again.stderr
    (line,) = [ln for ln in again.stderr.splitlines() if "reusing" in ln]
    assert "shared-memory" in line and "measuring the rest" in line
    assert "round 1/" not in again.stderr  # the shared-memory rounds were not run again
    doc = json.loads((out / "tune.json").read_text())
    assert doc["profile"] == "calibrated now on 2 ranks" and doc["rows"][0]["why"]
    assert {n["cores"] for n in json.loads((out / "profile.json").read_text())["nodes"]} == {os.cpu_count()}
    done = run_hnow(*cmd, "-o", str(out), *NO_LAUNCHER)  # a finished tune's folder is not continued
    assert done.returncode == 2 and "not empty" in done.stderr
