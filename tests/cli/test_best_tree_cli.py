"""`hnow best-tree` through a subprocess: JSON contract, table output, methods, tree file, bad input."""

from __future__ import annotations

import json

import pytest


def test_best_tree_json_contract(hnow, tmp_path):
    out = tmp_path / "tree.json"
    proc = hnow("best-tree", "--layout", "FFFFSSSS", "--op", "bcast", "--size", "0", "--json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["time_us"] == pytest.approx(410.0) and doc["exact"] is True and doc["method"] == "exact"
    assert doc["parent"][0] == -1 and len(doc["parent"]) == 8
    assert sorted(c for kids in doc["children"] for c in kids) == list(range(1, 8))
    # parent and children agree, children in send order
    assert all(doc["parent"][c] == r for r, kids in enumerate(doc["children"]) for c in kids)
    assert set(doc["compared_us"]) == {"binomial", "sequential", "hierarchical"}
    assert doc["time_us"] <= 0.8 * min(doc["compared_us"].values()) and doc["gain_vs_best_compared_pct"] >= 20
    # the written tree predicts the same time through --tree @FILE
    proc = hnow("predict", "--layout", "FFFFSSSS", "--tree", f"@{out}", "--sizes", "0", "--json")
    assert json.loads(proc.stdout)["predictions"][0]["time_us"] == pytest.approx(410.0)


@pytest.mark.parametrize("method", ["fnf", "ecef"])
def test_best_tree_heuristic_methods_and_root(hnow, method):
    proc = hnow("best-tree", "--layout", "SFSFSFSF", "--size", "1K", "--method", method, "--root", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["method"] == method and doc["exact"] is False and doc["parent"][3] == -1
    exact = json.loads(hnow("best-tree", "--layout", "SFSFSFSF", "--size", "1K", "--root", "3", "--json").stdout)
    assert exact["time_us"] <= doc["time_us"] + 1e-9


def test_best_tree_table_and_scatter(hnow):
    proc = hnow("best-tree", "--layout", "fast*2,slow*3", "--op", "scatter", "--size", "4K")
    assert proc.returncode == 0 and "sequential:best" in proc.stdout and "binomial" in proc.stdout


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--layout", "FFSS", "--method", "magic"], "magic"),
        (["--layout", "FFSS", "--op", "barrier"], "unknown operation 'barrier'"),
        (["--layout", "FFSS", "--op", "allreduce"], "allreduce combines buffers"),  # no γ: never assumed
        (["--layout", "FFSS", "--op", "allgather", "-o", "t.json"], "not trees: nothing to write"),
        (["--layout", "FFXS"], "'X'"),
        (["--layout", "FFSS", "--size", "-1"], "-1"),
        (["--layout", "FFSS", "--root", "9"], "root 9"),
        (["--layout", "FFSS", "--profile", "/nonexistent.json"], "nonexistent"),
    ],
)
def test_best_tree_bad_input(hnow, argv, needle):
    proc = hnow("best-tree", *argv)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_best_tree_of_an_operation_whose_algorithms_are_schedules_names_the_algorithm(hnow):
    import hnowmodel as hm

    proc = hnow("best-tree", "--layout", "FSFSF", "--op", "allreduce", "--size", "64K", "--reduce-us-per-byte",
                "0.0004", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    lay = ["fast", "slow", "fast", "slow", "fast"]
    want = hm.search.best_tree(hm.paper_profile(), lay, op="allreduce", size=65536, reduce_us_per_byte=4e-4)
    assert doc["algorithm"] == doc["method"] == want.method and doc["time_us"] == pytest.approx(want.time_us)
    assert set(doc["compared_us"]) == set(hm.ops.get("allreduce").algorithms) - {want.method}
    text = hnow("best-tree", "--layout", "FSFS", "--op", "alltoall", "--size", "1K").stdout
    assert text.startswith("best alltoall algorithm for 4 ranks at 1024 B: ") and "children" not in text
