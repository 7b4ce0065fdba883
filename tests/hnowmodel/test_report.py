"""hnowmodel.report: error statistics, CSV/PNG/markdown outputs, and what the comparison plot draws.

Also the comparison rows the report is made of (:func:`hnowmodel.jobs.compare_rows`), checked against times
worked out by hand from Table 1, not against the predictor that produces them.
"""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from hnowmodel import ops, paper_profile, trees
from hnowmodel.jobs.results import ComparisonRow, MeasuredRow, Measurement, error_pct
from hnowmodel.report import (
    LOG_SPAN,
    _draw,
    _parity_panel,
    _plot_series,
    error_stats,
    explain_misses,
    group_stats,
    markdown_summary,
    plot_comparison,
    write_report,
)


def _measured(op, tree, size, us):
    return MeasuredRow(op, tree, size, us, us * 0.9, us, us * 1.2, "sync", "median")


def _row(op, tree, size, predicted, measured, **kw):
    return ComparisonRow(op, tree, size, predicted, measured, measured * 0.9, measured, measured * 1.2, **kw).to_dict()


def test_comparison_rows_use_the_tree_that_ran_and_hand_computed_table1_times():
    from hnowmodel.jobs import compare_rows

    layout = ["fast", "fast", "slow", "slow"]
    m = Measurement(
        (
            _measured("bcast", "sequential", 0, 400.0),
            _measured("bcast", "native", 0, 5.0),
            _measured("bcast", "native", 1024, 1000.0),
        ),
        {},
    )
    rows = compare_rows(
        paper_profile(), layout, m, {"sequential": trees.sequential(4), "native": None},
        {"bcast": ops.get("bcast").default_variant}, 0, "MPICH",
    )  # fmt: skip
    got = {(r.tree, r.size): r for r in rows}
    # sequential, 0 B, fast root: 3 sends of Sc 60 µs; the last goes to a slow rank: 3*60 + Xc 16 + Rc 124 = 320
    assert got["sequential", 0].predicted_us == pytest.approx(320.0)
    assert got["sequential", 0].error_pct == pytest.approx(-20.0)
    # native MPICH bcast = binomial(4): 0 -> 2 (slow), 0 -> 1, 2 -> 3 (slow); at 1024 B (Table 1, µs):
    # S_fast 111.2, S_slow 274.32, X 97.92, R_slow 205.92: T2 = 111.2 + 97.92 + 205.92 = 415.04,
    # T3 = T2 + 274.32 + 97.92 + 205.92 = 993.2 (T1 = 2*111.2 + 97.92 + 124.72 = 445.04 is earlier)
    assert got["native", 1024].predicted_us == pytest.approx(993.2)
    assert got["native", 1024].model_tree == "binomial"
    # native at 0 B: kept, measured, no prediction, and a note says why
    assert got["native", 0].predicted_us is None and got["native", 0].error_pct is None
    assert got["native", 0].measured_us == 5.0 and "nothing to predict" in got["native", 0].note


def test_error_stats_and_groups():
    rows = [_row("bcast", "t", 0, p, 100.0) for p in (90.0, 105.0, 130.0)] + [_row("gather", "u", 0, None, 50.0)]
    assert [r["error_pct"] for r in rows] == pytest.approx([-10.0, 5.0, 30.0, None])
    assert error_stats(rows) == {"rows": 3, "median_abs_error_pct": 10.0, "max_abs_error_pct": 30.0}
    groups = {(g["op"], g["tree"]): g for g in group_stats(rows)}
    assert groups["bcast", "t"]["rows"] == 3 and groups["bcast", "t"]["max_abs_error_pct"] == 30.0
    assert groups["gather", "u"]["rows"] == 0 and groups["gather", "u"]["median_abs_error_pct"] is None
    assert error_pct(1.0, 0.0) is None and error_pct(None, 5.0) is None
    assert error_stats([])["median_abs_error_pct"] is None


def test_misses_are_explained_only_beyond_threshold():
    rows = [
        _row("gather", "binomial", 16384, 50.0, 100.0),
        _row("bcast", "binomial", 0, 101.0, 100.0),
    ]
    text = explain_misses(rows)
    assert len(text) == 1 and text[0].startswith("gather/binomial: measured slower than predicted at 16K")
    assert text[0].endswith(": unexplained.")  # no evidence in the run: no guessed cause


def test_a_miss_is_attributed_only_from_evidence_in_the_run():
    """The spread covering the prediction, another variant of the same run that fits, the calibration's own
    self-check: each is said when (and only when) the rows or the profile hold it."""
    inside = _row("bcast", "binomial", 65536, 118.0, 100.0)  # the spread 90..120 µs covers 118
    assert explain_misses([inside], threshold_pct=10)[0].endswith("spread over repetitions at 64K.")
    flow = _row("scatter", "binomial", 65536, 150.0, 100.0, variant="flow")
    paper = _row("scatter", "binomial", 65536, 104.0, 100.0, variant="paper")
    got = explain_misses([flow, paper])
    assert len(got) == 1 and "the paper variant, predicted in the same run, fits these sizes (worst 4 %)" in got[0]
    assert "self-check" in explain_misses([flow], self_check_pct=40.0)[0]
    assert explain_misses([flow], self_check_pct=3.0)[0].endswith("unexplained.")


def test_write_report_files(tmp_path):
    prof = paper_profile()
    # fast -> slow, 0 B: 60 + 16 + 124 = 200 µs; 1024 B: 111.2 + 97.92 + 205.92 = 415.04 µs
    rows = [_row("bcast", "binomial", 0, 200.0, 300.0), _row("bcast", "binomial", 1024, 415.04, 300.0)]
    rows += [_row("gather", "binomial", s, 250.0, 300.0) for s in (0, 1024)]
    paths = write_report(tmp_path, rows, title="t", context={"where": "here"}, profile=prof)
    with open(paths["csv"]) as f:
        got = list(csv.DictReader(f))
    assert [(r["op"], r["size"], float(r["predicted_us"])) for r in got] == [
        ("bcast", "0", 200.0), ("bcast", "1024", 415.04), ("gather", "0", 250.0), ("gather", "1024", 250.0)
    ]  # fmt: skip
    assert float(got[0]["error_pct"]) == pytest.approx(-33.333, abs=1e-3)
    assert (tmp_path / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "summary.md").read_text()
    assert "**where**: here" in md and "| bcast | binomial |" in md
    assert markdown_summary(rows, "x").count("\n| bcast | binomial | 0 |") == 1


# ---- the comparison plot ------------------------------------------------------------------------------------------
def _plot_rows():
    rows = []
    for s in (0, 1024, 4096):
        rows.append(_row("bcast", "binomial", s, 100.0 + s, 110.0 + s))
        rows.append(_row("bcast", "optimal", s, 90.0 + s, 120.0 + s, chosen_for_bytes=0))
        native_pred = None if s == 0 else 95.0 + s  # MPICH native 0 B: measured, nothing predicted
        rows.append(_row("bcast", "native", s, native_pred, 5.0 if s == 0 else 100.0 + s))
    rows.append(_row("gather", "binomial", 0, 50.0, 60.0))
    return rows


def test_plot_series_axes_labels_and_styles():
    panels = _plot_series(_plot_rows())
    assert [p["op"] for p in panels] == ["bcast", "gather"]
    bc = panels[0]
    assert bc["xscale"] == "symlog" and bc["linthresh"] == 1024  # 0 B has a place on the size axis
    assert bc["xlabel"] == "message size (bytes)" and bc["ylabel"] == "time (µs)"
    assert bc["xticks"] == [0, 1024, 4096] and bc["xticklabels"] == ["0 B", "1 KiB", "4 KiB"]
    labels = [s["label"] for s in bc["series"]]
    assert labels == [
        "binomial predicted", "binomial measured",
        "optimal (chosen at 0 B) predicted", "optimal (chosen at 0 B) measured",
        "native predicted", "native measured",
    ]  # fmt: skip
    pred = [s for s in bc["series"] if s["kind"] == "predicted"]
    meas = [s for s in bc["series"] if s["kind"] == "measured"]
    # predicted: lines, each group its own line style; measured: markers only, each group its own marker
    assert all(s["marker"] is None for s in pred) and len({str(s["linestyle"]) for s in pred}) == 3
    assert all(s["linestyle"] == "none" for s in meas) and len({s["marker"] for s in meas}) == 3
    # native 0 B has no prediction: it is a measured point, not dropped
    native_pred, native_meas = pred[2], meas[2]
    assert native_pred["x"] == [1024, 4096] and native_meas["x"] == [0, 1024, 4096] and native_meas["y"][0] == 5.0
    # error bars: the min-max spread as distances below / above the measured value
    assert meas[0]["yerr"] == [pytest.approx([11.0, 113.4, 420.6]), pytest.approx([22.0, 226.8, 841.2])]


def test_plot_series_chosen_sizes():
    rows = [_row("bcast", "optimal", s, 1.0 + s, 1.0 + s, chosen_for_bytes=c) for s, c in ((0, 0), (4096, 0))]
    rows += [_row("bcast", "optimal", s, 1.0 + s, 1.0 + s, chosen_for_bytes=4096) for s in (0, 4096)]
    labels = [s["label"] for s in _plot_series(rows)[0]["series"] if s["kind"] == "predicted"]
    assert labels == ["optimal (chosen at 0 B) predicted", "optimal (chosen at 4 KiB) predicted"]
    per_size = [_row("bcast", "optimal", s, 1.0 + s, 1.0 + s, chosen_for_bytes=s) for s in (0, 4096)]
    assert _plot_series(per_size)[0]["series"][0]["label"] == "optimal (chosen per size) predicted"


def test_drawn_figure_follows_the_series():
    panels = _plot_series(_plot_rows())
    fig = _draw(panels, "title", _parity_panel(panels))
    ax = fig.axes[0]
    assert ax.get_xscale() == "symlog" and ax.get_xlabel() == "message size (bytes)" and ax.get_ylabel() == "time (µs)"
    styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert styles["binomial predicted"] == "-" and styles["optimal (chosen at 0 B) predicted"] == "--"
    # one legend for the figure, an entry per curve and the keys, outside every panel's data
    assert [a.get_legend() for a in fig.axes] == [None, None, None] and len(fig.legends) == 1
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [
        "binomial", "optimal (chosen at 0 B)", "native",
        "predicted (lines)", "measured (min–max bar)", "predicted = measured", "±10 % band",
    ]  # fmt: skip
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    assert all(not box.overlaps(a.get_window_extent()) for a in fig.axes)
    parity = fig.axes[2]
    assert (parity.get_xlabel(), parity.get_ylabel()) == ("measured (µs)", "predicted (µs)")
    assert parity.get_xscale() == parity.get_yscale() == ax.get_yscale()


def _times(op, tree, lo_us, hi_us):
    return [_row(op, tree, s, t, t) for s, t in ((0, lo_us), (4096, hi_us))]


def test_one_y_scale_for_every_panel():
    """Log on every panel when one panel's times span more than LOG_SPAN (10x), else linear on every panel; a time
    of 0 (nothing to put on a log axis) keeps every panel linear."""
    assert LOG_SPAN == 10.0
    # the spans include the measured min-max spread (_row: 0.9x to 1.2x): 90..480 µs, 90..6000 µs, 90..840 µs
    narrow, wide = _times("bcast", "binomial", 100.0, 400.0), _times("gather", "binomial", 100.0, 5000.0)
    assert [p["yscale"] for p in _plot_series(narrow + wide)] == ["log", "log"]  # bcast alone would be linear
    assert [p["yscale"] for p in _plot_series(narrow + _times("gather", "binomial", 100.0, 700.0))] == ["linear"] * 2
    zero = [_row("bcast", "binomial", 0, 0.0, 5.0)]
    assert [p["yscale"] for p in _plot_series(zero + wide)] == ["linear", "linear"]
    # a curve keeps its style in every panel, even when an earlier panel lacks it
    rows = _times("bcast", "sequential", 1.0, 2.0) + _times("gather", "binomial", 1.0, 2.0)
    rows += _times("gather", "sequential", 1.0, 2.0)
    styles = {(p["op"], s["name"]): (s["color"], s["linestyle"]) for p in _plot_series(rows) for s in p["series"]}
    assert styles["bcast", "sequential"] == styles["gather", "sequential"] != styles["gather", "binomial"]


def test_parity_panel_points_band_and_worst_row():
    # measured 100 µs each; predicted 110 (+10 %), 95 (-5 %), 80 (-20 %: the worst); native 0 B has no prediction
    rows = [_row("bcast", "binomial", 0, 110.0, 100.0), _row("bcast", "binomial", 1024, 95.0, 100.0)]
    rows += [_row("gather", "sequential", 1024, 80.0, 100.0), _row("gather", "native", 0, None, 100.0)]
    par = _parity_panel(_plot_series(rows))
    assert [(p["op"], p["name"], p["x"], p["y"]) for p in par["points"]] == [
        ("bcast", "binomial", [100.0, 100.0], [110.0, 95.0]), ("gather", "sequential", [100.0], [80.0])
    ]  # fmt: skip
    assert par["title"].splitlines()[1] == "median |error| 10.0 %, max 20.0 %"
    assert par["worst"]["text"] == "gather sequential 1 KiB: -20.0 %" and par["band_pct"] == 10.0
    assert par["scale"] == "linear" and par["lim"][0] < 80.0 and par["lim"][1] > 110.0
    marks = {p["name"]: p["marker"] for p in par["points"]}
    assert marks["binomial"] != marks["sequential"]  # a marker per tree, as in the panels over the sizes
    assert _parity_panel(_plot_series([_row("bcast", "native", 0, None, 5.0)])) is None  # nothing to put on it


def test_report_pngs_are_written_one_per_split_value(tmp_path):
    rows = [{**r, "config": c} for c in ("A", "B") for r in _plot_rows()]
    paths = write_report(tmp_path, rows, title="t", split="config")
    assert paths["png"] == [str(tmp_path / "compare-A.png"), str(tmp_path / "compare-B.png")]
    for p in paths["png"]:
        assert open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    # rows without any prediction still make a figure (no parity panel, nothing to compare)
    only = plot_comparison([_row("bcast", "native", 0, None, 5.0)], tmp_path / "only.png")
    assert only.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


_BACKEND_PROBE = """
import sys, matplotlib
matplotlib.use("svg")
from hnowmodel.report import plot_comparison
rows = [{"op": "bcast", "tree": "binomial", "size": s, "predicted_us": 1.0 + s, "measured_us": 2.0 + s}
        for s in (0, 64)]
plot_comparison(rows, sys.argv[1], "t")
print(matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules)
"""


def test_plot_comparison_writes_png_and_leaves_the_backend_alone(tmp_path):
    out = tmp_path / "c.png"
    proc = subprocess.run([sys.executable, "-c", _BACKEND_PROBE, str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["svg", "False"]  # library code neither switches the backend nor uses pyplot
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_comparison(_plot_rows(), tmp_path / "d.png").stat().st_size > 1000
