"""experiments/collectives_accuracy.py without MPI: its arguments, the algorithms it compares, its summaries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hnowmodel import ops
from hnowmodel.errors import InputError
from tests.experiments import EXPERIMENTS, experiment


@pytest.fixture(scope="module")
def ca():
    return experiment("collectives_accuracy")


def test_it_compares_the_default_and_every_pinned_algorithm_that_runs(ca):
    trees, skipped = ca.cases(6, [16384, 65536, 262144], ca.schedule_ops())
    assert set(trees) == {"reduce", "allreduce", "allgather", "reduce_scatter", "alltoall"}
    assert all(t[0] == "native" for t in trees.values())
    pinned = {op: {f"native:{a.algorithm}" for a in ops.native_choices(op, "MPICH")} - {"native:default"}
              for op in trees}  # fmt: skip
    for op, t in trees.items():  # every pinned algorithm is compared or left out with the model's reason
        assert set(t[1:]) | {s["tree"] for s in skipped if s["op"] == op} == pinned[op]
    assert "native:reduce_scatter_gather" in trees["reduce"] and "native:pairwise" in trees["alltoall"]
    assert [(s["op"], s["tree"]) for s in skipped] == [("allgather", "native:recursive_doubling")]
    assert "not a power of two" in skipped[0]["reason"]
    on_8 = ca.cases(8, [16384], ["allgather"])[0]["allgather"]
    assert "native:recursive_doubling" in on_8  # runs on a power of two


def test_arguments_are_checked_before_the_cluster_comes_up(ca):
    p = ca.build_parser()
    args = p.parse_args([])
    assert ca.check_args(args) == ([16384, 65536, 262144], list(ca.schedule_ops()))
    assert args.reps == 5 and args.lock is None and args.profile is None
    for bad in (
        ["--ops", "gather"],
        ["--sizes", "100"],
        ["--reps", "0"],
        ["--hosts", "1"],
        ["--hosts", "9", "--spec", "x"],
        ["--mixed", "--hosts", "4"],
        ["--mixed", "--spec", "x"],
    ):
        with pytest.raises(InputError):
            ca.check_args(p.parse_args(bad))
    with pytest.raises(InputError, match="not one of"):
        ca.cases(6, [16384], ["gather"])


def test_bcast_compares_mpichs_default_and_its_scatter_allgather_bcasts(ca):
    """bcast (a tree operation whose ``native`` is the pinned binomial): MPICH's own choice (``native:default``) and
    the pinned algorithms modelled by a message schedule; recursive doubling left out on 9 ranks, kept on 8."""
    assert ca.check_args(ca.build_parser().parse_args(["--ops", "bcast", "--hosts", "9"]))[1] == ["bcast"]
    trees, skipped = ca.cases(9, [16384, 262144], ["bcast"])
    assert trees == {"bcast": ["native:default", "native:scatter_ring_allgather"]}
    assert [s["tree"] for s in skipped] == ["native:scatter_recursive_doubling_allgather"]
    assert ca.cases(8, [16384], ["bcast"])[0]["bcast"][-1] == "native:scatter_recursive_doubling_allgather"
    spec = ca.cycled_spec(9)
    assert [h["egress_mbit"] for h in spec["hosts"]] == [150, 20, 50] * 3 and spec["name"] == "coll9"
    assert [h["name"] for h in spec["hosts"]][-3:] == ["f3", "s3", "m3"]
    assert all(h["slots"] == 1 and h["ingress_mbit"] == h["egress_mbit"] for h in spec["hosts"])


def test_mixed_is_hosts_accuracys_cluster_of_hosts_of_2_1_and_3_ranks_under_a_name_of_its_own(ca):
    assert [h["slots"] for h in ca.MIXED["hosts"]] == [2, 1, 3]
    assert ca.MIXED_NAME not in (ca.MIXED["name"], ca.CLUSTER_NAME)
    assert ca.check_args(ca.build_parser().parse_args(["--mixed"]))[0] == [16384, 65536, 262144]


def test_the_plot_marks_every_operation_and_skips_rows_without_a_prediction(ca, tmp_path):
    rows = [{"op": "reduce", "size": 16384, "error_pct": -2.0}, {"op": "alltoall", "size": 65536, "error_pct": None},
            {"op": "alltoall", "size": 262144, "error_pct": 7.5}]  # fmt: skip
    ca.plot(rows, tmp_path / "p.png", "t")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_bad_argument_stops_it_in_one_line_before_any_cluster(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / "collectives_accuracy.py"), "--out", str(tmp_path), "--sizes", "12"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2 and "8-byte" in proc.stderr or "double" in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir())


def test_the_summaries(ca):
    rows = [
        {"op": "reduce", "tree": "native", "size": 16384, "error_pct": 1.0, "measured_us": 2e3, "model_tree": "a",
         "error_pct_by_variant": {"flow": 1.0, "flow-rr": -3.0}},
        {"op": "reduce", "tree": "native", "size": 65536, "error_pct": -6.0, "measured_us": 4e3, "model_tree": "b",
         "error_pct_by_variant": {"flow": -6.0, "flow-rr": 2.0}},
        {"op": "alltoall", "tree": "native:pairwise", "size": 16384, "error_pct": None, "measured_us": 5e3,
         "model_tree": "", "error_pct_by_variant": {"flow": None, "flow-rr": None}},
    ]  # fmt: skip
    summ = ca.summarise(rows, ["reduce", "alltoall"])
    assert [(s["op"], s["rows"], s["median_abs_error_pct"], s["max_abs_error_pct"]) for s in summ[::2]] == [
        ("reduce", 2, 3.5, 6.0), ("all", 2, 3.5, 6.0)]  # fmt: skip
    assert {v["variant"]: v["max_abs_error_pct"] for v in ca.by_variant(rows)} == {"flow": 6.0, "flow-rr": 3.0}
    lines = ca.per_tree(rows)
    assert lines[0] == {"op": "reduce", "tree": "native", "modelled as": "a, b", "16K": "+1.0 % (2.0 ms)",
                        "64K": "-6.0 % (4.0 ms)"}  # fmt: skip
    assert lines[1]["16K"] == "-"
