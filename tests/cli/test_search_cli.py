"""`hnow best-tree` and `hnow plan` through a subprocess."""

from __future__ import annotations

import json

import pytest


def test_best_tree_json_contract(hnow, tmp_path):
    out = tmp_path / "tree.json"
    proc = hnow("best-tree", "--layout", "FFFFSSSS", "--op", "bcast", "--size", "0", "--json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["time_us"] == pytest.approx(410.0) and doc["exact"] is True
    assert doc["parent"][0] == -1 and len(doc["parent"]) == 8
    assert sorted(c for kids in doc["children"] for c in kids) == list(range(1, 8))
    assert doc["time_us"] <= 0.8 * min(doc["compared_us"].values())
    # the written tree predicts the same time through --tree @FILE
    proc = hnow("predict", "--layout", "FFFFSSSS", "--tree", f"@{out}", "--sizes", "0", "--json")
    assert json.loads(proc.stdout)["predictions"][0]["time_us"] == pytest.approx(410.0)


def test_best_tree_table_and_scatter(hnow):
    proc = hnow("best-tree", "--layout", "fast*2,slow*3", "--op", "scatter", "--size", "4K")
    assert proc.returncode == 0 and "sequential:best" in proc.stdout


def test_plan(hnow):
    proc = hnow("plan", "--pool", "fast=4,slow=12", "--ranks", "8", "--json")
    doc = json.loads(proc.stdout)
    assert doc["choice"]["mix"] == {"fast": 4, "slow": 4}
    proc = hnow("plan", "--pool", "fast=4,slow=12", "--ranks", "8", "--target-us", "500")
    assert proc.returncode == 0 and "meets the target" in proc.stdout


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["best-tree", "--layout", "FFSS", "--method", "magic"], "magic"),
        (["best-tree", "--layout", "FFSS", "--op", "allreduce"], "allreduce"),
        (["best-tree", "--layout", "FFXS"], "'X'"),
        (["best-tree", "--layout", "FFSS", "--size", "-1"], "-1"),
        (["best-tree", "--layout", "FFSS", "--root", "9"], "root 9"),
        (["plan", "--pool", "fast=4,turbo=2", "--ranks", "3"], "turbo"),
        (["plan", "--pool", "fast=2", "--ranks", "5"], "fewer than"),
        (["plan", "--pool", "fast", "--ranks", "2"], "TYPE=COUNT"),
        (["plan", "--pool", "fast=2", "--ranks", "2", "--target-us", "-5"], "target"),
    ],
)
def test_bad_input(hnow, argv, needle):
    proc = hnow(*argv)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr
