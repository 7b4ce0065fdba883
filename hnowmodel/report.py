"""Predicted vs measured, written out: error statistics, CSV, plots and a markdown summary.

Pure functions over comparison rows as dicts (:meth:`hnowmodel.jobs.results.ComparisonRow.to_dict`); the
predictions themselves are made in :func:`hnowmodel.jobs.compare`. ``error_pct = 100 * (predicted_us -
measured_us) / measured_us``: positive when the model is pessimistic; None where there is no prediction.

>>> rows = [{"op": "bcast", "tree": "binomial", "size": 0, "predicted_us": 110.0, "measured_us": 100.0,
...          "error_pct": 10.0}]
>>> error_stats(rows)["median_abs_error_pct"]
10.0
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .io import atomic_write
from .params import Profile
from .sizes import format_size

__all__ = [
    "save_png",
    "error_stats",
    "error_pct",
    "group_stats",
    "write_csv",
    "plot_comparison",
    "explain_misses",
    "markdown_summary",
    "CSV_COLUMNS",
    "write_report",
]


def error_pct(predicted_us: float | None, measured_us: float | None) -> float | None:
    """``100·(predicted − measured)/measured``; None when either is missing or measured is not > 0.

    >>> error_pct(90.0, 100.0)
    -10.0
    """
    if predicted_us is None or measured_us is None:
        return None
    if not (math.isfinite(predicted_us) and math.isfinite(measured_us)) or measured_us <= 0:
        return None
    return 100.0 * (predicted_us - measured_us) / measured_us


def error_stats(rows: Iterable[Any]) -> dict[str, Any]:
    """Median and max |error_pct| over rows that have one (rows: objects with ``error_pct``, or dicts).

    >>> error_stats([{"error_pct": -4.0}, {"error_pct": 2.0}, {"error_pct": None}])["max_abs_error_pct"]
    4.0
    """
    errs = []
    for r in rows:
        e = r.get("error_pct") if isinstance(r, Mapping) else r.error_pct
        if e is not None:
            errs.append(abs(float(e)))
    if not errs:
        return {"rows": 0, "median_abs_error_pct": None, "max_abs_error_pct": None}
    return {"rows": len(errs), "median_abs_error_pct": float(statistics.median(errs)), "max_abs_error_pct": max(errs)}


CSV_COLUMNS = (
    "config",
    "layout",
    "op",
    "tree",
    "size",
    "predicted_us",
    "measured_us",
    "error_pct",
    "min_us",
    "median_us",
    "max_us",
    "fig2_median_us",
    "sync_median_us",
    "method",
    "stat",
    "variant",
    "model_tree",
    "chosen_for_bytes",
    "note",
)


def group_stats(rows: Sequence[Mapping[str, Any]], keys: Sequence[str] = ("op", "tree")) -> list[dict[str, Any]]:
    """:func:`error_stats` per group of rows sharing ``keys`` (in first-seen order)."""
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    return [{**dict(zip(keys, g, strict=True)), **error_stats(rs)} for g, rs in groups.items()]


def write_csv(path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = CSV_COLUMNS) -> Path:
    """Write the rows' ``columns`` (those present in any row) as CSV, atomically."""
    cols = [c for c in columns if any(c in r for r in rows)]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r.get(c) is None else _cell(r.get(c)) for c in cols])
    return atomic_write(path, buf.getvalue())


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, (list, tuple)):
        return "".join(str(x)[0].upper() for x in v)
    return v


def save_png(fig: Any, path: str | Path, dpi: int = 90) -> Path:
    """Write a matplotlib figure as PNG atomically (temporary file, then rename) and close it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    if getattr(fig.canvas, "manager", None) is not None:  # made through pyplot: release it there
        import matplotlib.pyplot as plt

        plt.close(fig)
    return atomic_write(path, buf.getvalue())


#: Line styles of the predicted series and markers of the measured ones, one per curve (cycled): the series stay
#: distinguishable in grey-scale print and for colour-blind readers, not only by colour.
_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: Every panel of a figure is drawn on log y axes when the times of any one of them span more than this ratio
#: (largest / smallest), else every panel on linear ones: one rule, so panels side by side read the same way.
LOG_SPAN = 10.0
#: The error band shaded around the parity line of the predicted-vs-measured panel: ±10 %.
BAND_PCT = 10.0


def _bytes_label(size: float) -> str:
    """A message size for a tick or legend: ``0 B``, ``256 B``, ``4 KiB``, ``1 MiB`` (exact binary multiples only)."""
    size = int(size)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _finite(value: Any, default: float) -> float:
    """``value`` as a float, or ``default`` when it is missing or not finite (an unrecorded spread is NaN)."""
    return default if value is None or not math.isfinite(float(value)) else float(value)


def _plot_series(rows: Sequence[Mapping[str, Any]], group: str = "tree") -> list[dict[str, Any]]:
    """What :func:`plot_comparison` draws over the sizes, as data: one panel per ``op``, each with its axis set-up
    and series.

    A panel is ``{"op", "xlabel", "ylabel", "xscale", "linthresh", "yscale", "xticks", "xticklabels", "series"}``;
    the size axis is ``symlog`` (linear below ``linthresh`` = the smallest non-zero size, so 0 B has a place and a
    tick label); ``yscale`` is the same in every panel: ``log`` when every time is > 0 and one panel's times (with
    their spread) span more than :data:`LOG_SPAN`, else ``linear``. Each series is ``{"kind":
    "predicted"|"measured", "name", "label", "x", "y", "color", "linestyle", "marker"}`` (measured ones also
    ``"yerr"``: the min–max spread as distances below/above, µs). Predicted series are lines, measured ones markers
    without lines; a curve (``name``) has one colour, line style and marker in every panel. Rows without a
    prediction (``predicted_us`` None, e.g. native at 0 B) still give measured points. A group whose rows carry
    ``chosen_for_bytes`` (a tree chosen at one size and measured at others) is named ``"optimal (chosen at 0 B)"``;
    rows chosen at different sizes are separate series (``"(chosen per size)"`` when each was chosen at its own size).

    >>> rows = [{"op": "bcast", "tree": "optimal", "size": s, "predicted_us": 10.0 + s, "measured_us": 11.0 + s,
    ...          "chosen_for_bytes": 0} for s in (0, 1024)]
    >>> [(s["kind"], s["label"]) for s in _plot_series(rows)[0]["series"]]
    [('predicted', 'optimal (chosen at 0 B) predicted'), ('measured', 'optimal (chosen at 0 B) measured')]
    """
    import matplotlib  # lazily: a heavy optional library, needed only where a plot is drawn

    colors = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    styles: dict[str, int] = {}  # curve name -> its style index, over the whole figure
    panels, spans = [], []
    for op in dict.fromkeys(r["op"] for r in rows):
        mine = [r for r in rows if r["op"] == op]
        sizes = sorted({float(r["size"]) for r in mine})
        positive = [x for x in sizes if x > 0]
        ticks = sizes[:: max(1, math.ceil(len(sizes) / 10))]  # at most ~10 labelled ticks
        series: list[dict[str, Any]] = []
        for (g, chosen), rs in _curves(mine, group).items():
            name = str(g)
            if chosen == "per size":
                name += " (chosen per size)"
            elif chosen is not None:
                name += f" (chosen at {_bytes_label(chosen)})"
            i = styles.setdefault(name, len(styles))
            series += _curve_series(sorted(rs, key=lambda r: r["size"]), name, i, colors[i % len(colors)])
        all_y = [y for s in series for y in (s["y"] if s["kind"] == "predicted" else s.pop("bounds"))]
        pos_y = [y for y in all_y if y > 0]
        spans.append(max(pos_y) / min(pos_y) if pos_y and len(pos_y) == len(all_y) else None)
        panels.append(
            {
                "op": op,
                "xlabel": "message size (bytes)",
                "ylabel": "time (µs)",
                "xscale": "symlog",
                "linthresh": min(positive) if positive else 1.0,
                "xticks": ticks,
                "xticklabels": [_bytes_label(x) for x in ticks],
                "series": series,
            }
        )
    log_y = None not in spans and any(s > LOG_SPAN for s in spans)
    return [{**p, "yscale": "log" if log_y else "linear"} for p in panels]


def _curves(rows: Sequence[Mapping[str, Any]], group: str) -> dict[tuple, list]:
    """One operation's rows by curve: ``(group value, size chosen at)``; a tree chosen at each row's own size is
    one curve ``(g, "per size")``."""
    curves: dict[tuple, list] = {}
    for r in rows:
        chosen = r.get("chosen_for_bytes")
        curves.setdefault((r[group], None if chosen is None else float(chosen)), []).append(r)
    for g in list(dict.fromkeys(g for g, _ in curves)):
        keys = [k for k in curves if k[0] == g and k[1] is not None]
        if len(keys) > 1 and all(float(r["size"]) == k[1] for k in keys for r in curves[k]):
            curves[(g, "per size")] = [r for k in keys for r in curves.pop(k)]
    return curves


def _curve_series(rs: Sequence[Mapping[str, Any]], name: str, i: int, color: str) -> list[dict[str, Any]]:
    """A curve's predicted line and measured markers (with their min-max spread; ``bounds``: the y extent)."""
    out: list[dict[str, Any]] = []
    style = {"name": name, "color": color, "linestyle": _LINESTYLES[i % len(_LINESTYLES)]}
    pred = [r for r in rs if r.get("predicted_us") is not None]
    if pred:
        x, y = [float(r["size"]) for r in pred], [float(r["predicted_us"]) for r in pred]
        out.append({"kind": "predicted", "label": f"{name} predicted", **style, "x": x, "y": y, "marker": None})
    meas = [r for r in rs if r.get("measured_us") is not None and math.isfinite(float(r["measured_us"]))]
    if meas:
        med = [float(r["measured_us"]) for r in meas]
        lo = [_finite(r.get("min_us"), m) for r, m in zip(meas, med, strict=True)]
        hi = [_finite(r.get("max_us"), m) for r, m in zip(meas, med, strict=True)]
        out.append(
            {
                "kind": "measured",
                "label": f"{name} measured",
                **style,
                "x": [float(r["size"]) for r in meas],
                "y": med,
                "yerr": [
                    [max(m - a, 0.0) for m, a in zip(med, lo, strict=True)],
                    [max(b - m, 0.0) for m, b in zip(med, hi, strict=True)],
                ],
                "linestyle": "none",
                "marker": _MARKERS[i % len(_MARKERS)],
                "bounds": lo + hi,
            }
        )
    return out


def _parity_panel(panels: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The predicted-vs-measured panel of :func:`_plot_series`'s ``panels``: one point per row with both times
    (x measured, y predicted, µs), in its curve's colour and marker; the parity line y = x with the ±:data:`BAND_PCT`
    band; the axes' common limits ``lim`` and ``scale`` (the time panels' y scale); the median and max |error| in
    the title and the worst row named (``worst``). None when no row has both times.

    >>> rows = [{"op": "bcast", "tree": "binomial", "size": s, "predicted_us": p, "measured_us": 100.0}
    ...         for s, p in ((0, 104.0), (1024, 92.0))]
    >>> par = _parity_panel(_plot_series(rows))
    >>> par["points"][0]["x"], par["points"][0]["y"], par["worst"]["text"]
    ([100.0, 100.0], [104.0, 92.0], 'bcast binomial 1 KiB: -8.0 %')
    >>> print(par["title"])
    predicted vs measured
    median |error| 6.0 %, max 8.0 %
    """
    points: list[dict[str, Any]] = []
    worst: dict[str, Any] | None = None
    for panel in panels:
        by_name = {(s["name"], s["kind"]): s for s in panel["series"]}
        for (name, kind), meas in by_name.items():
            pred = by_name.get((name, "predicted"))
            if kind != "measured" or pred is None:
                continue
            at = dict(zip(pred["x"], pred["y"], strict=True))
            xy = [(m, at[x], x) for x, m in zip(meas["x"], meas["y"], strict=True) if x in at and m > 0]
            if not xy:
                continue
            points.append({**{k: meas[k] for k in ("name", "color", "marker")}, "op": panel["op"]})
            points[-1].update(x=[m for m, _, _ in xy], y=[p for _, p, _ in xy])
            for m, p, x in xy:
                err = 100.0 * (p - m) / m
                if worst is None or abs(err) > abs(worst["error_pct"]):
                    text = f"{panel['op']} {name} {_bytes_label(x)}: {err:+.1f} %"
                    worst = {"x": m, "y": p, "error_pct": err, "text": text}
    if worst is None:
        return None
    errs = [abs(100.0 * (p - m) / m) for pt in points for m, p in zip(pt["x"], pt["y"], strict=True)]
    everything = [v for pt in points for v in (*pt["x"], *pt["y"])]
    lo, hi = min(everything), max(everything)
    log = panels[0]["yscale"] == "log"
    if log:  # a margin of 8 % of the span on each side, in the axes' own (log) measure
        pad = max(hi / lo, 1.0 + BAND_PCT / 100.0) ** 0.08
        lim = (lo / pad, hi * pad)
    else:
        pad = 0.08 * max(hi - lo, BAND_PCT / 100.0 * hi)
        lim = (lo - pad, hi + pad)
    return {
        "title": f"predicted vs measured\nmedian |error| {statistics.median(errs):.1f} %, max {max(errs):.1f} %",
        "xlabel": "measured (µs)",
        "ylabel": "predicted (µs)",
        "scale": "log" if log else "linear",
        "lim": lim,
        "band_pct": BAND_PCT,
        "points": points,
        "worst": worst,
    }


def _legend_handles(panels: Sequence[Mapping[str, Any]], parity: Mapping[str, Any] | None) -> list[Any]:
    """The figure's one legend: a line-and-marker entry per curve (as it looks in every panel), then the keys
    (predicted = lines, measured = markers with their min–max bars; the parity line and its band)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    curves: dict[str, Any] = {}
    for panel in panels:
        for s in panel["series"]:
            c = curves.setdefault(s["name"], {"color": s["color"], "linestyle": "none", "marker": None})
            key = "linestyle" if s["kind"] == "predicted" else "marker"
            c[key] = s[key]
    out = [Line2D([], [], lw=1.6, ms=5, mfc="none", label=n, **c) for n, c in curves.items()]
    out += [
        Line2D([], [], color="0.4", lw=1.6, label="predicted (lines)"),
        Line2D([], [], color="0.4", ls="none", marker="o", mfc="none", label="measured (min–max bar)"),
    ]
    if parity is not None:
        out += [
            Line2D([], [], color="k", ls="--", lw=1, label="predicted = measured"),
            Patch(color="0.8", label=f"±{parity['band_pct']:g} % band"),
        ]
    return out


def _draw_times(ax: Any, panel: Mapping[str, Any]) -> None:
    """One operation's panel: predicted lines, measured markers with their min–max bars, over the sizes."""
    for s in panel["series"]:
        if s["kind"] == "predicted":
            ax.plot(s["x"], s["y"], linestyle=s["linestyle"], color=s["color"], lw=1.6, label=s["label"])
        else:
            ax.errorbar(s["x"], s["y"], yerr=s["yerr"], fmt=s["marker"], linestyle="none", color=s["color"], ms=5,
                        mfc="none", capsize=3, label=s["label"])  # fmt: skip
    ax.set_xscale("symlog", linthresh=panel["linthresh"], linscale=0.6, base=2)
    ax.set_yscale(panel["yscale"])
    ax.set_xticks(panel["xticks"])
    ax.set_xticklabels(panel["xticklabels"], rotation=45, ha="right", fontsize=7)
    ax.set_title(panel["op"])
    ax.set_xlabel(panel["xlabel"])
    ax.set_ylabel(panel["ylabel"])
    ax.grid(alpha=0.3)


def _draw_parity(ax: Any, par: Mapping[str, Any]) -> None:
    """The predicted-vs-measured panel: the ± band, the line y = x, a point per row, the worst row named."""
    lo, hi = par["lim"]
    b = par["band_pct"] / 100.0
    ax.fill_between([lo, hi], [lo * (1 - b), hi * (1 - b)], [lo * (1 + b), hi * (1 + b)], color="0.8", lw=0)
    ax.plot([lo, hi], [lo, hi], color="k", ls="--", lw=1)
    for pt in par["points"]:
        ax.plot(pt["x"], pt["y"], ls="none", marker=pt["marker"], color=pt["color"], ms=5, mfc="none")
    w = par["worst"]  # ringed, and named in a corner (a label beside the point could leave the axes)
    ax.plot([w["x"]], [w["y"]], ls="none", marker="o", ms=13, mfc="none", color="k", lw=0.8)
    ax.text(0.03, 0.97, f"worst: {w['text']}", transform=ax.transAxes, va="top", fontsize=7)
    ax.set_xscale(par["scale"])
    ax.set_yscale(par["scale"])
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(par["title"], fontsize=9)
    ax.set_xlabel(par["xlabel"])
    ax.set_ylabel(par["ylabel"])
    ax.grid(alpha=0.3)


def _draw(panels: Sequence[Mapping[str, Any]], title: str = "", parity: Mapping[str, Any] | None = None) -> Any:
    """A matplotlib ``Figure``: :func:`_plot_series`'s panels, then the :func:`_parity_panel` (if any), and one
    legend below them all, outside the data (Agg canvas; no pyplot, the backend is untouched)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = max(1, len(panels) + (parity is not None))
    fig = Figure(figsize=(4.4 * n, 4.9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, n, squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=False):
        _draw_times(ax, panel)
    if parity is not None:
        _draw_parity(axes[len(panels)], parity)
    handles = _legend_handles(panels, parity)
    fig.legend(
        handles=handles, loc="outside lower center", ncol=min(len(handles), 2 + 2 * n), fontsize=8, frameon=False
    )
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_comparison(rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "", group: str = "tree") -> Path:
    """One PNG: a panel per ``op`` over the sizes, then one of predicted against measured, and one legend below
    them. Over the sizes: a colour, line style and marker per ``group`` value; predicted as lines, measured as
    markers with the min–max spread over repetitions as error bars; x = message size (bytes, symlog so 0 B shows),
    y = time (µs; log on every panel or on none, :data:`LOG_SPAN`). Predicted vs measured: a point per row with both,
    the line y = x and the ±:data:`BAND_PCT` band, the median and max |error| above it and the worst row named.
    What is drawn is :func:`_plot_series` and :func:`_parity_panel`. Library code: the figure is made without
    pyplot and the matplotlib backend is never changed."""
    panels = _plot_series(rows, group)
    return save_png(_draw(panels, title, _parity_panel(panels)), path)


def _self_check_pct(profile: Profile | None) -> float | None:
    """The calibration's self-check worst miss (%) recorded in ``profile``, or None."""
    sc = (profile.provenance.get("self_check") if profile is not None else None) or {}
    v = sc.get("worst_miss_pct") if isinstance(sc, Mapping) else None
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _evidence(bad: list, others: list, threshold_pct: float, self_check_pct: float | None) -> list[str]:
    """What the run itself shows about the rows ``bad`` (misses of one op/tree): the spread, another variant
    measured in the same run that fits, the calibration's self-check."""
    said = []
    inside = [r for r in bad if r.get("min_us") is not None and r["min_us"] <= r["predicted_us"] <= r["max_us"]]
    if inside:
        said.append(
            "the prediction lies inside the measured min-max spread over repetitions at "
            + ", ".join(format_size(r["size"]) for r in inside)
        )
    sizes = {r["size"] for r in bad}
    by_variant: dict[str, list] = {}
    for r in others:
        if r["size"] in sizes and r.get("error_pct") is not None:
            by_variant.setdefault(str(r.get("variant")), []).append(abs(r["error_pct"]))
    fits = [(max(e), v) for v, e in by_variant.items() if len(e) == len(sizes) and max(e) <= threshold_pct]
    if fits:
        worst, v = min(fits)
        said.append(f"the {v} variant, predicted in the same run, fits these sizes (worst {worst:.0f} %)")
    if self_check_pct is not None and self_check_pct > threshold_pct:
        said.append(
            f"the calibration's self-check already misses its own point-to-point measurements by up to "
            f"{self_check_pct:.0f} %"
        )
    return said


def explain_misses(
    rows: Sequence[Mapping[str, Any]], threshold_pct: float = 15.0, self_check_pct: float | None = None
) -> list[str]:
    """One sentence per (op, tree[, variant]) group whose worst |error| exceeds ``threshold_pct``: the sign, the
    sizes, and a cause only where the run holds evidence for one (the measured spread covers the prediction,
    another model variant predicted in the same run fits, the calibration's self-check ``self_check_pct`` already
    misses); otherwise "unexplained".

    >>> r = {"op": "bcast", "tree": "binomial", "size": 65536, "predicted_us": 130.0, "measured_us": 100.0}
    >>> explain_misses([{**r, "error_pct": 30.0}])
    ['bcast/binomial: measured faster than predicted at 64K (worst 30 %): unexplained.']
    """
    out = []
    groups: dict[tuple, list] = {}
    for r in rows:
        if r.get("error_pct") is not None:
            groups.setdefault((r.get("config", ""), r["op"], r["tree"], r.get("variant")), []).append(r)
    for (cfg, op, tree, variant), rs in groups.items():
        bad = [r for r in rs if abs(r["error_pct"]) > threshold_pct]
        if not bad:
            continue
        under = sum(r["error_pct"] < 0 for r in bad) > len(bad) / 2
        others = [rr for k, g in groups.items() if k[:3] == (cfg, op, tree) and k[3] != variant for rr in g]
        said = _evidence(bad, others, threshold_pct, self_check_pct)
        what = "measured slower than predicted" if under else "measured faster than predicted"
        name = f"{cfg + ' ' if cfg else ''}{op}/{tree}{f' ({variant})' if variant and len(groups) > 1 else ''}"
        worst = max(abs(r["error_pct"]) for r in bad)
        sizes = ", ".join(format_size(r["size"]) for r in bad)
        out.append(f"{name}: {what} at {sizes} (worst {worst:.0f} %): {'; '.join(said) or 'unexplained'}.")
    return out


def _fmt_pct(v: Any) -> str:
    return "-" if v is None else f"{v:.1f} %"


def markdown_summary(
    rows: Sequence[Mapping[str, Any]],
    title: str,
    context: Mapping[str, Any] | None = None,
    keys: Sequence[str] = ("op", "tree"),
    threshold_pct: float = 15.0,
    self_check_pct: float | None = None,
) -> str:
    """Markdown: the context (what ran where), overall and per-group median/max |error|, and the misses with what
    the run shows of their cause (:func:`explain_misses`)."""
    lines = [f"# {title}", ""]
    for k, v in (context or {}).items():
        lines.append(f"- **{k}**: {v}")
    if context:
        lines.append("")
    tot = error_stats(rows)
    lines.append(
        f"Overall over {tot['rows']} rows: median |error| **{_fmt_pct(tot['median_abs_error_pct'])}**, "
        f"max |error| **{_fmt_pct(tot['max_abs_error_pct'])}** "
        "(error = (predicted - measured) / measured)."
    )
    lines += ["", "| " + " | ".join([*keys, "rows", "median abs error", "max abs error"]) + " |"]
    lines.append("|" + "---|" * (len(keys) + 3))
    for g in group_stats(rows, keys):
        lines.append(
            "| "
            + " | ".join(
                [
                    *(str(g[k]) for k in keys),
                    str(g["rows"]),
                    _fmt_pct(g["median_abs_error_pct"]),
                    _fmt_pct(g["max_abs_error_pct"]),
                ]
            )
            + " |"
        )
    misses = explain_misses(rows, threshold_pct, self_check_pct)
    lines += ["", f"## Where the model misses (|error| > {threshold_pct:g} %)", ""]
    lines += [f"- {m}" for m in misses] if misses else ["None."]
    lines += [
        "",
        "## Rows",
        "",
        "| " + " | ".join(["op", "tree", "size", "predicted µs", "measured µs (min-max)", "error"]) + " |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        pre = f"{r['config']} " if r.get("config") else ""
        spread = f"{r['measured_us']:.1f} ({r.get('min_us', math.nan):.1f}-{r.get('max_us', math.nan):.1f})"
        pred = "-" if r.get("predicted_us") is None else f"{r['predicted_us']:.1f}"
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(
            f"| {pre}{r['op']} | {r['tree']} | {format_size(r['size'])} | {pred} | {spread} "
            f"| {_fmt_pct(r.get('error_pct'))}{note} |"
        )
    return "\n".join(lines) + "\n"


def write_report(
    outdir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    context: Mapping[str, Any] | None = None,
    profile: Profile | None = None,
    split: str | None = None,
    keys: Sequence[str] = ("op", "tree"),
) -> dict[str, Any]:
    """Write ``comparison.csv``, one ``compare[-<split value>].png`` per value of ``split`` (or one in all),
    ``summary.md`` and (if given) ``profile.json`` into ``outdir``; return the paths written."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Any] = {}
    if profile is not None:
        paths["profile"] = str(profile.save(out / "profile.json"))
    paths["csv"] = str(write_csv(out / "comparison.csv", rows))
    pngs = []
    values = list(dict.fromkeys(r.get(split) for r in rows)) if split else [None]
    for v in values:
        mine = [r for r in rows if split is None or r.get(split) == v]
        name = "compare.png" if v is None else f"compare-{v}.png"
        label = f"{title} - {split} {v}" if v is not None else title
        if mine and "layout" in mine[0] and mine[0]["layout"]:
            label += f" ({_cell(mine[0]['layout'])})"
        pngs.append(str(plot_comparison(mine, out / name, label)))
    paths["png"] = pngs
    text = markdown_summary(rows, title, context, keys=keys, self_check_pct=_self_check_pct(profile))
    paths["summary"] = str(atomic_write(out / "summary.md", text))
    return paths
