"""Smoke test of experiments/perf_schedule_flow.py (the flow engine over message schedules): it runs end to end on
a small layout and writes its CSV and markdown. Its speed and differences are its output, not asserted."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def test_perf_schedule_flow_small(tmp_path):
    args = ["--hosts", "2", "--slots", "4", "--accuracy-ranks", "8", "--at-scale", "0"]
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / "perf_schedule_flow.py"), "--out", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    speed = list(csv.DictReader((tmp_path / "perf_schedule_flow.csv").open()))
    assert {r["algorithm"] for r in speed} >= {"ring_allgather", "recursive_doubling_allreduce"}
    assert all(int(r["ranks"]) == 8 and float(r["flow_s"]) > 0 for r in speed)
    acc = list(csv.DictReader((tmp_path / "schedule_flow_rounds_vs_events.csv").open()))
    ring = [r for r in acc if r["algorithm"] == "ring_allgather" and r["profile"] == "paper"]
    assert ring and all(abs(float(r["rounds_over_events"])) < 1e-9 for r in ring)  # no link shared: equal
    assert (tmp_path / "perf_schedule_flow.md").read_text().startswith("# Flow engine over message schedules")
