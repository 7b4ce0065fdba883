"""Smoke tests of the model experiment scripts: each runs, writes CSV/PNG/markdown, and states its claims."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def _run(script: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS / script), "--out", str(out), *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
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


@pytest.mark.parametrize("script, name, claims", [
    ("fig7_tree_choice.py", "fig7_tree_choice", 4),
    ("fig8_configuration.py", "fig8_configuration", 6),
])
def test_figure_scripts_state_their_claims(tmp_path, script, name, claims):
    _run(script, tmp_path)
    md = (tmp_path / f"{name}.md").read_text()
    assert md.count("**holds**") + md.count("**does not hold**") == claims
    assert (tmp_path / f"{name}.png").stat().st_size > 1000
    assert len(list(csv.DictReader((tmp_path / f"{name}.csv").open()))) > 10


def test_perf_predict_small(tmp_path):
    proc = _run("perf_predict.py", tmp_path, "--max-exp", "12", "--ref-max-exp", "12", "--repeat", "1")
    assert "n=2^12" in proc.stdout
    rows = list(csv.DictReader((tmp_path / "perf_predict.csv").open()))
    assert [int(r["ranks"]) for r in rows] == [1024, 4096]
    assert all(float(r["speedup"]) > 0 for r in rows)
