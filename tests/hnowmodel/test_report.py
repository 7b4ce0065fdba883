"""hnowmodel.report: predicted rows from a profile, error statistics, CSV/PNG/markdown outputs."""

from __future__ import annotations

import csv

import pytest

from hnowmodel import paper_profile, trees
from hnowmodel.report import (
    add_errors,
    error_stats,
    explain_misses,
    group_stats,
    markdown_summary,
    predicted_rows,
    write_report,
)


def _measured(op, tree, size, us):
    return {
        "op": op,
        "tree": tree,
        "size": size,
        "measured_us": us,
        "min_us": us * 0.9,
        "median_us": us,
        "max_us": us * 1.2,
    }


def test_predicted_rows_use_the_tree_that_ran_and_table2_numbers():
    prof = paper_profile()
    layout = ["fast", "fast", "slow", "slow"]
    seq = trees.sequential(4)
    rows = predicted_rows(
        prof,
        layout,
        [
            _measured("bcast", "sequential", 0, 400.0),
            _measured("bcast", "native", 0, 5.0),
            _measured("bcast", "native", 1024, 1000.0),
        ],
        {"sequential": seq, "native": None},
    )
    # sequential bcast of 0 bytes from a fast root: 3 sends of 60 µs, the last to a slow rank: 180 + 16 + 124 = 320
    assert rows[0]["predicted_us"] == pytest.approx(320.0)
    assert rows[0]["error_pct"] == pytest.approx(-20.0)
    assert [r["tree"] for r in rows] == ["sequential", "native"]  # native size 0 is dropped
    from hnowmodel.predict import bcast

    assert rows[1]["predicted_us"] == pytest.approx(float(bcast(prof, layout, trees.binomial(4), [1024])[0]))
    assert rows[1]["model_tree"] == "binomial"


def test_error_stats_and_groups():
    rows = add_errors(
        [{"op": "bcast", "tree": "t", "predicted_us": p, "measured_us": 100.0, "size": 0} for p in (90.0, 105.0, 130.0)]
    )
    assert error_stats(rows) == {"rows": 3, "median_abs_error_pct": 10.0, "max_abs_error_pct": 30.0}
    assert group_stats(rows)[0]["rows"] == 3
    assert add_errors([{"predicted_us": 1.0, "measured_us": 0.0}])[0]["error_pct"] is None
    assert error_stats([])["median_abs_error_pct"] is None


def test_misses_are_explained_only_beyond_threshold():
    rows = add_errors(
        [
            {"op": "gather", "tree": "binomial", "size": 16384, "predicted_us": 50.0, "measured_us": 100.0},
            {"op": "bcast", "tree": "binomial", "size": 0, "predicted_us": 101.0, "measured_us": 100.0},
        ]
    )
    text = explain_misses(rows)
    assert len(text) == 1 and text[0].startswith("gather/binomial: measured slower than predicted at 16K")


def test_write_report_files(tmp_path):
    prof = paper_profile()
    rows = predicted_rows(
        prof,
        ["fast", "slow"],
        [_measured("bcast", "binomial", s, 300.0) for s in (0, 1024)]
        + [_measured("gather", "binomial", s, 300.0) for s in (0, 1024)],
        {"binomial": trees.binomial(2)},
    )
    paths = write_report(tmp_path, rows, title="t", context={"where": "here"}, profile=prof)
    with open(paths["csv"]) as f:
        got = list(csv.DictReader(f))
    assert len(got) == 4 and float(got[0]["predicted_us"]) == pytest.approx(200.0)
    assert (tmp_path / "compare.png").stat().st_size > 1000
    md = (tmp_path / "summary.md").read_text()
    assert "**where**: here" in md and "| bcast | binomial |" in md
    assert markdown_summary(rows, "x").count("\n| bcast | binomial | 0 |") == 1
