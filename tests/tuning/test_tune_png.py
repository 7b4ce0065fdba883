"""``tune.png`` (issue #35: the report shows predicted and measured gains side by side, PNG + markdown): written
beside ``tune.md`` when a row has a gain, with the measured bars and their spread when the rows were verified; not
written, and not named by ``hnow tune``, when there is nothing to draw; ``tune.md`` keeps both gain columns."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from hnowmodel.params import Profile
from hnowmodel.tuning import tune
from hnowmodel.tuning.figure import _draw, gain_panels
from hnowmodel.tuning.files import markdown_report, write_report
from tests.helpers import fresh_python, run_hnow

DATA = Path(__file__).parent.parent / "data" / "golden"
PROFILE = DATA / "cluster_profile.json"  # 6 hosts, one rank each
CLUSTER = Profile.load(PROFILE)
PNG = b"\x89PNG\r\n\x1a\n"


def _verified_rows() -> list[dict]:
    """Tuned rows of MPICH on the calibrated shape with made-up measurements (as ``verify`` fills them): the
    measured gain 2 points under the predicted one, its spread -3..+1 points around it; one row not measured."""
    res = tune(CLUSTER, mpi="mpich", ops="bcast,scatter", sizes=[1024, 65536], launcher="no-such-mpiexec")
    rows = []
    for i, r in enumerate(res.rows):
        if i == 0 or r.predicted_gain_pct is None:
            rows.append(r.to_dict())  # a size verify did not measure
            continue
        g = r.predicted_gain_pct - 2.0
        m = {"measured_gain_pct": g, "measured_gain_min_pct": g - 3.0, "measured_gain_max_pct": g + 1.0}
        rows.append(replace(r, measured_default_us=100.0, measured_tuned_us=100.0 - g, **m).to_dict())
    return rows


def test_a_tune_writes_its_png_beside_the_markdown_and_names_it(tmp_path):
    out = tmp_path / "t"
    proc = run_hnow("tune", "--profile", str(PROFILE), "--mpi", "mpich", "--sizes", "1K,64K", "-o", str(out),
                    check=True)  # fmt: skip
    assert (out / "tune.png").read_bytes()[:8] == PNG and (out / "tune.md").is_file()
    assert str(out / "tune.png") in proc.stdout  # said among the report's files
    fig = gain_panels(_rows_of(out))
    assert fig is not None and not fig["measured"]  # predicted only without --verify: one bar per size


def _rows_of(out: Path) -> list[dict]:
    with (out / "tune.csv").open() as f:
        return list(csv.DictReader(f))


def test_verified_rows_draw_both_gains_side_by_side_with_the_spread(tmp_path):
    rows = _verified_rows()
    paths = write_report(tmp_path, rows, {"profile": "given", "verified": "calibrated", "notes": []})
    assert Path(paths["png"]).read_bytes()[:8] == PNG and paths["png"] == str(tmp_path / "tune.png")
    fig = gain_panels(rows)
    assert fig["measured"] and [p["op"] for p in fig["panels"]] == ["bcast", "scatter"]
    bcast = fig["panels"][0]
    assert bcast["measured"][0] is None  # the row left unmeasured has no measured bar
    assert bcast["measured"][1] == pytest.approx(bcast["predicted"][1] - 2.0)
    assert [bcast["yerr"][0][1], bcast["yerr"][1][1]] == pytest.approx([3.0, 1.0])
    lo, hi = fig["ylim"]
    ends = [v for p in fig["panels"] for v in (*p["predicted"], *p["measured"]) if v is not None]
    assert lo < min([0.0, *ends]) - 2.9 and hi > max(ends)  # 0 and every bar with its spread inside
    drawn = _draw(fig, "t")
    axes = [ax for ax in drawn.axes if ax.get_visible()]
    assert len(axes) == 2 and all(ax.get_ylim() == pytest.approx(fig["ylim"]) for ax in axes)  # one y range
    assert [ax.get_legend() for ax in axes] == [None, None] and len(drawn.legends) == 1  # one legend, for all
    labels = [t.get_text() for t in drawn.legends[0].get_texts()]
    assert labels[:3] == ["predicted gain", "measured gain (median)", "measured spread (repetitions' extremes)"]
    drawn.canvas.draw()  # the legend is below the panels, outside the data
    box = drawn.legends[0].get_window_extent()
    assert all(box.y1 <= ax.get_window_extent().y0 for ax in axes)
    md = markdown_report(rows, {"profile": "given", "notes": []})
    header = next(ln for ln in md.splitlines() if ln.startswith("| shape"))
    assert "| predicted gain % | measured gain % |" in header  # the markdown keeps both columns side by side


@pytest.mark.parametrize("rows", [[], "unmodelled"])
def test_nothing_to_draw_writes_no_png(tmp_path, rows):
    if rows == "unmodelled":  # rows whose default is not modelled: kept, no gain predicted or measured
        rows = [{**r, "predicted_gain_pct": None, "measured_gain_pct": None} for r in _verified_rows()]
    paths = write_report(tmp_path, rows, {"profile": "given", "notes": []})
    assert "png" not in paths and not (tmp_path / "tune.png").exists()
    assert {"csv", "md", "json"} <= set(paths) and (tmp_path / "tune.json").is_file()


def test_a_tune_with_nothing_to_draw_neither_writes_nor_names_a_png(tmp_path):
    """Intel MPI's default alltoall on 12 ranks below 16 KiB is its tuning file's, which hnow does not model there
    (the wire was read from 16 KiB): every row is kept and has no gain."""
    out = tmp_path / "t"
    proc = run_hnow("tune", "--profile", str(PROFILE), "--shapes", "12x1", "--mpi", "intelmpi", "--ops", "alltoall",
                    "--sizes", "1K,4K", "-o", str(out), check=True)  # fmt: skip
    assert all(r["predicted_gain_pct"] == "" for r in _rows_of(out))
    assert not (out / "tune.png").exists() and "tune.png" not in proc.stdout
    assert (out / "tune.md").is_file() and str(out / "tune.md") in proc.stdout


def test_the_figure_module_leaves_matplotlib_unloaded_until_it_draws():
    code = (
        "import sys, hnowmodel.tuning.files as f; print('matplotlib' in sys.modules); "
        "f.plot_gains([], 'unused.png'); print('matplotlib' in sys.modules)"
    )
    assert fresh_python(code) == ["False", "False"]  # nothing to draw: not even imported
