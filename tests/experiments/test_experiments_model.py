"""Smoke tests of the model experiment scripts: each runs, writes CSV/PNG/markdown, and states its claims."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.experiments import EXPERIMENTS, experiment

CLUSTER = Path(__file__).resolve().parents[1] / "data" / "golden" / "cluster_profile.json"  # a calibrated cluster


def _run(script: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / script), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_table2_reproduced(tmp_path):
    _run("table2.py", tmp_path)
    md = (tmp_path / "table2.md").read_text()
    assert "**holds**: Table 2" in md
    rows = list(csv.DictReader((tmp_path / "table2.csv").open()))
    zero = {(r["from"], r["to"]): float(r["time_us"]) for r in rows if r["size"] == "0"}
    assert zero == {("fast", "fast"): 170.0, ("fast", "slow"): 200.0, ("slow", "fast"): 200.0, ("slow", "slow"): 230.0}
    assert (tmp_path / "table2.png").stat().st_size > 1000


def _csv(path):
    return list(csv.DictReader(path.open()))


def _verdicts(md: str) -> list[tuple[str, str]]:
    """(verdict, claim text) of every claim line ``- **holds**: ...`` / ``- **does not hold**: ...``."""
    out = []
    for line in md.splitlines():
        for verdict in ("holds", "does not hold"):
            if line.startswith(f"- **{verdict}**: "):
                out.append((verdict, line[len(f"- **{verdict}**: ") :]))
    return out


def test_fig7_tree_choice_numbers_and_verdicts(tmp_path):
    _run("fig7_tree_choice.py", tmp_path)
    t = {
        (int(r["nodes"]), r["tree"], int(r["size"])): float(r["time_us"])
        for r in _csv(tmp_path / "fig7_tree_choice.csv")
    }
    # by hand from Table 1, 4 fast + 4 slow, 0 B: binomial 0 -> 4 (slow) -> 6 -> 7 finishes last:
    # T4 = 60 + 16 + 124 = 200, T6 = 200 + 90 + 140 = 430, T7 = 430 + 90 + 140 = 660;
    # sequential: the 7th send goes to slow rank 7: 7*60 + 16 + 124 = 560
    assert t[8, "binomial", 0] == pytest.approx(660.0)
    assert t[8, "sequential", 0] == pytest.approx(560.0)
    assert len(t) == 2 * 3 * 9
    verdicts = _verdicts((tmp_path / "fig7_tree_choice.md").read_text())
    # the verdicts follow from the CSV: recompute each claim from the numbers
    sizes = sorted({s for (_, _, s) in t})
    best = {
        (n, s): min(("binomial", "sequential", "hierarchical"), key=lambda k: t[n, k, s])
        for n in (8, 16)
        for s in sizes
    }
    expect = [
        all(t[8, "binomial", s] == max(t[8, k, s] for k in ("sequential", "hierarchical", "binomial")) for s in sizes),
        all(best[8, s] == "hierarchical" for s in sizes if s <= 1024),
        all(best[8, s] == "sequential" for s in sizes if s >= 8192),
        all(best[16, s] == "hierarchical" for s in sizes),
    ]
    assert [v == "holds" for v, _ in verdicts] == expect
    # and today's model: claims 1, 3, 4 hold; hierarchical loses to sequential from 1 KiB on 8 nodes
    assert expect == [True, False, True, True] and "sequential overtakes hierarchical from 1K" in verdicts[1][1]
    assert (tmp_path / "fig7_tree_choice.png").read_bytes()[:4] == b"\x89PNG"


def test_fig8_configuration_numbers_and_verdicts(tmp_path):
    _run("fig8_configuration.py", tmp_path)
    rows = _csv(tmp_path / "fig8_configuration.csv")
    t = {(int(r["nodes"]), int(r["fast"]), r["variant"], int(r["size"])): float(r["time_us"]) for r in rows}
    # by hand, paper variant, 8 nodes with 1 fast (the root) + 7 slow, 0 B sequential gather: every slow rank's
    # send ends at Sc 90, arrivals 90 + i*16, the root then pays Rc 94 per message: 90 + 16 + 7*94 = 764
    assert t[8, 1, "paper", 0] == pytest.approx(764.0)
    verdicts = _verdicts((tmp_path / "fig8_configuration.md").read_text())
    assert len(verdicts) == 6
    for verdict, text in verdicts:
        # "... improves gather by less than 10 % — ... (P % of T µs)": the verdict is P < 10
        pct = float(text.rsplit("(", 1)[1].split(" %")[0])
        assert (verdict == "holds") == (pct < 10), text
    # today's model: only 8 nodes at 4096 B gains more than 10 % from the fifth to eighth fast node
    assert [v for v, _ in verdicts] == ["holds", "holds", "does not hold", "holds", "holds", "holds"]
    assert (tmp_path / "fig8_configuration.png").read_bytes()[:4] == b"\x89PNG"


def test_perf_flow_small(tmp_path):
    """The flow-engine speed script runs end to end at small sizes, one and several ranks per host. Its speed is its
    output, not something a test asserts."""
    # 2 ranks per host: the search over the largest layout still spans 8 hosts, at 16 ranks (64 ranks, 8 per host,
    # took ~10 s of its CPU more and asserted nothing more)
    proc = _run("perf_flow.py", tmp_path, "--ranks", "8", "16", "--slots", "2")
    assert "16 ranks on    8 hosts" in proc.stdout
    rows = _csv(tmp_path / "perf_flow.csv")
    assert [(int(r["ranks"]), int(r["hosts"])) for r in rows] == [(8, 8), (8, 4), (16, 16), (16, 8)]
    assert all(float(r["flow_s_per_size"]) > 0 and float(r["flow_over_paper"]) > 0 for r in rows)
    assert (tmp_path / "perf_flow.md").read_text().startswith("# Flow engine speed")
    # the host-aware search over the largest layout (8 hosts x 2 ranks), each op under its default variant
    found = _csv(tmp_path / "perf_flow_search.csv")
    assert [(r["op"], r["variant"], int(r["hosts"])) for r in found] == [
        ("bcast", "flow-rr", 8),
        ("scatter", "flow-rr", 8),
        ("gather", "flow", 8),
    ]
    assert all(float(r["search_s"]) > 0 and float(r["time_us"]) > 0 for r in found)


def test_perf_predict_small(tmp_path):
    """The perf script runs end to end at small sizes and checks the vectorised predictor against the per-rank
    recursion where it runs it (the script asserts they agree; exit 0 means they did). Its speed is its output,
    not something a test asserts."""
    proc = _run("perf_predict.py", tmp_path, "--max-exp", "12", "--ref-max-exp", "10", "--repeat", "1")
    assert "n=2^10" in proc.stdout and "n=2^12" in proc.stdout
    rows = _csv(tmp_path / "perf_predict.csv")
    assert [int(r["ranks"]) for r in rows] == [1024, 4096]
    # the reference recursion ran exactly up to --ref-max-exp
    assert math.isfinite(float(rows[0]["per_rank_python_s"]))
    assert math.isnan(float(rows[1]["per_rank_python_s"]))
    assert set(rows[0]) >= {"tree_build_s", "vectorised_first_s", "vectorised_s", "per_rank_python_s", "speedup"}


def test_perf_schedules_small(tmp_path):
    """The schedule-engine speed script runs end to end on a small layout, and the binomial tree compiled to a
    schedule gives predict.bcast's number there (the script asserts it). Its speed is its output, not asserted."""
    proc = _run("perf_schedules.py", tmp_path, "--hosts", "4", "--slots", "4", "--repeat", "1")
    assert "ring_allgather" in proc.stdout and "bcast-tree" in proc.stdout
    rows = _csv(tmp_path / "perf_schedules.csv")
    assert {r["algorithm"] for r in rows} >= {"ring_allgather", "recursive_doubling_allreduce", "bcast-tree"}
    assert all(int(r["ranks"]) == 16 and float(r["evaluate_s"]) > 0 for r in rows)
    assert (tmp_path / "perf_schedules.md").read_text().startswith("# Schedule evaluation speed")
    # the node types of a calibrated profile instead of the paper's: the hosts cycle through its types
    _run("perf_schedules.py", tmp_path, "--hosts", "3", "--slots", "2", "--repeat", "1", "--profile", str(CLUSTER))
    assert all(int(r["ranks"]) == 6 for r in _csv(tmp_path / "perf_schedules.csv"))


def test_perf_paths_runs_and_checks_the_entry_gives_the_engines_numbers(tmp_path):
    """hm.predict beside the engines it calls: the script asserts the same numbers, and writes both times and their
    ratio for each case (the ratios are its output, not asserted)."""
    proc = _run("perf_paths.py", tmp_path, "--repeat", "1")
    rows = _csv(tmp_path / "perf_paths.csv")
    assert [r["case"] for r in rows] == ["paper, 2^16 ranks", "flow-rr, 64 hosts"], proc.stdout
    assert all(float(r["engine_s"]) > 0 and float(r["entry_s"]) > 0 for r in rows)


def test_hosts_accuracy_measures_coll_han_only_where_it_runs():
    """coll/han hands a job with unequal hosts to the next component, so the hosts run measures it only on hosts
    with equal slots; hnow's pinned native runs everywhere, and an algorithm the library lacks nowhere."""
    ha = experiment("hosts_accuracy")
    from hnowmodel.layout import parse_layout

    sizes = [16384, 262144]
    mixed, even = (
        parse_layout("fast/2,slow,slow/3", ["fast", "slow"]),
        parse_layout("fast/2,slow/2*2", ["fast", "slow"]),
    )
    for op in ("bcast", "scatter", "gather"):
        assert not ha._applies("native:han", op, "Open MPI", mixed, sizes)
        assert ha._applies("native:han", op, "Open MPI", even, sizes)
        assert ha._applies("native", op, "Open MPI", mixed, sizes)
    assert not ha._applies("native:smp", "bcast", "Open MPI", even, sizes)
    assert ha._applies("native:smp", "bcast", "MPICH", mixed, sizes)


def test_export_gain_runs_an_exported_order_of_whole_hosts_as_a_spec():
    """experiments/export_gain.py measures an exported order on a copy of the cluster with its hosts in that order
    (each host's slots filled in turn): the order of whole hosts becomes that spec; an order splitting a host is
    refused, since no spec can run it."""
    export_gain = experiment("export_gain")
    spec = {
        "name": "x",
        "hosts": [{"name": "f1", "slots": 2}, {"name": "s1", "slots": 1}, {"name": "m1", "slots": 3}],
    }
    got = export_gain._spec_in_order(spec, "y", ["m1", "m1", "m1", "s1", "f1", "f1"])
    assert got["name"] == "y" and [h["name"] for h in got["hosts"]] == ["m1", "s1", "f1"]
    with pytest.raises(SystemExit):
        export_gain._spec_in_order(spec, "y", ["m1", "f1", "m1", "m1", "s1", "f1"])


@pytest.mark.parametrize("args", [["--mpi", "nompi"], ["--sizes", "1.5K"], ["--slots", "0"], ["--late-ms", "-1"]])
def test_ompi_exchange_refuses_bad_input_in_one_line_before_any_cluster(tmp_path, args):
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / "ompi_exchange.py"), "--out", str(tmp_path / "x"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "x").exists()  # nothing written, no cluster brought up


@pytest.mark.parametrize(
    "args",
    [
        ["--mpi", "nompi", "--algorithm", "ring"],
        ["--size", "1.5K", "--algorithm", "ring"],
        ["--algorithm", "nope"],
        ["--op", "bcast", "--algorithm", "ring"],
        ["--calls", "0", "--algorithm", "ring"],
        ["--np", "5", "--algorithm", "ring"],
        ["--pause-ms", "-1", "--algorithm", "ring"],
    ],
)
def test_link_trace_refuses_bad_input_in_one_line_before_any_cluster(tmp_path, args):
    spec = tmp_path / "spec.json"
    spec.write_text('{"schema": "hnowmodel.cluster/1", "name": "lt", "hosts": [{"name": "a", "egress_mbit": 20}]}')
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / "link_trace.py"), "--out", str(tmp_path / "x"), "--spec", str(spec), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "link_trace: " in proc.stderr
    assert not (tmp_path / "x").exists()  # nothing written, no cluster brought up
