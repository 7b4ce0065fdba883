"""`hnow plan` through a subprocess: JSON, target, bad input (exit 2, one line)."""

from __future__ import annotations

import json

import pytest

import hnowmodel as hm


def test_plan_json(hnow):
    proc = hnow("plan", "--pool", "fast=4,slow=12", "--ranks", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["choice"]["mix"] == {"fast": 4, "slow": 4}
    assert doc["choice"]["time_us"] == pytest.approx(410.0)
    assert doc["choice"]["time_us"] == min(c["time_us"] for c in doc["candidates"])


def test_plan_target_table(hnow):
    proc = hnow(
        "plan", "--pool", "fast=4,slow=12", "--ranks", "8", "--target-us", "500", "--op", "gather", "--size", "0"
    )
    assert proc.returncode == 0 and "target" in proc.stdout
    proc = hnow("plan", "--pool", "fast=4,slow=12", "--ranks", "8", "--target-us", "500", "--json")
    doc = json.loads(proc.stdout)
    assert doc["choice"]["meets_target"] is True and doc["choice"]["mix"]["fast"] < 4


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--pool", "fast=4,turbo=2", "--ranks", "3"], "turbo"),
        (["--pool", "fast=2", "--ranks", "5"], "fewer than"),
        (["--pool", "fast", "--ranks", "2"], "TYPE=COUNT"),
        (["--pool", "fast=x", "--ranks", "2"], "fast=x"),
        (["--pool", "fast=2", "--ranks", "2", "--target-us", "-5"], "target"),
        (["--pool", "fast=2", "--ranks", "0"], "ranks"),
        (["--pool", "fast=2", "--ranks", "2", "--op", "reduce"], "reduce"),
    ],
)
def test_plan_bad_input(hnow, argv, needle):
    proc = hnow("plan", *argv)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_plan_scores_a_schedule_operation_by_its_fastest_algorithm(hnow):
    proc = hnow("plan", "--op", "allreduce", "--pool", "fast=2,slow=2", "--ranks", "2", "--size", "64K",
                "--reduce-us-per-byte", "0.0004", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    choice = json.loads(proc.stdout)["choice"]
    assert choice["mix"] == {"fast": 2, "slow": 0} and choice["method"] in hm.ops.get("allreduce").algorithms
