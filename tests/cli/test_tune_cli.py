"""``hnow tune`` through the real command: the JSON rows, the files, and bad input as one line and exit 2 before any
MPI run (a launcher that does not exist is never reached)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import one_error_line, run_hnow

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
