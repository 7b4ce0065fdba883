"""experiments/export_gain_ops.py without MPI: the settings it gives the ranks are the exported file's, as the
library reads it, and each operation and size is judged from the default's and the export's rows."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hnowmodel.export import AlgorithmRequest, export, write_export
from tests.experiments import experiment
from tests.libraries.test_openmpi_export_schedules import _gamma


@pytest.fixture(scope="module")
def ego():
    return experiment("export_gain_ops")


def test_the_export_is_run_with_the_settings_its_file_gives(ego, tmp_path):
    req = AlgorithmRequest(ops=("allreduce",), sizes=(65536,), layout=("fast", "slow", "fast", "slow"))
    paths = write_export(export(_gamma(), ["ompi-rules"], algorithms=req), tmp_path / "x")
    env = ego.read_env(Path(paths["ompi-env"]).read_text())
    rules = Path(env["OMPI_MCA_coll_tuned_dynamic_rules_filename"])
    assert rules.is_file() and rules.parent == (tmp_path / "x").resolve()
    assert env["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"


def _row(what: str, med: float, lo: float, hi: float) -> dict:
    return {"what": what, "size": 1024, "measured_us": med, "min_us": lo, "max_us": hi, "predicted_us": med}


def test_each_size_is_judged_on_the_default_and_the_export_as_read(ego):
    choice = SimpleNamespace(default="a", chosen="b", default_us=100.0, chosen_us=60.0, gain_pct=40.0)
    rows = [_row("native", 100, 95, 110), _row("exported (as read)", 62, 60, 70), _row("native:b", 61, 60, 64)]
    got = ego.summary_row("L", "allreduce", 1024, choice, [*rows, _row("native:a", 101, 99, 103)])
    assert got["measured gain %"] == pytest.approx(38.0) and got["spread %"] == "+26.3..+45.5"
    assert got["within 5 points"] and got["not slower"] and got["predicted in spread"]
    slower = [rows[0], _row("exported (as read)", 120, 115, 125)]
    got = ego.summary_row("L", "allreduce", 1024, choice, slower)
    assert got["within 5 points"] is False and got["not slower"] is False
    # the default not modelled: nothing predicted, nothing judged (the default was kept)
    kept = SimpleNamespace(default="d", chosen="d", default_us=None, chosen_us=None, gain_pct=None)
    got = ego.summary_row("L", "allreduce", 1024, kept, rows[:1])
    assert got["predicted gain %"] is None and got["within 5 points"] is None and got["not slower"] is None
