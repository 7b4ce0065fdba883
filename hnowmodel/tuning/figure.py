"""``tune.png``: the predicted and the measured gain of every tuned row side by side (:func:`plot_gains`).

One panel per shape, library and operation (at most :data:`COLUMNS` panels a line); in each, per size, a bar of the
predicted gain and, when ``--verify`` measured the row, a hatched bar of the measured gain beside it with the spread
between the repetitions' extremes as its error bar. The gain is ``100·(default − tuned)/default`` (% of the
default's time; a choice measured slower than the default is a bar below 0). Drawn in the style of the compare
figures (:func:`hnowmodel.report.plot_comparison`): one y scale for every panel, one legend below them all, outside
the data, a figure made without pyplot. What is drawn is :func:`gain_panels` (data, no matplotlib); matplotlib is
imported only when a figure is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..report import save_png
from ..sizes import format_size

__all__ = ["COLUMNS", "gain_panels", "plot_gains"]

#: Panels per line of the figure: a shape and library with more operations continues on the next line.
COLUMNS = 4
#: The y axis reaches down to at most this gain (%): a choice measured more than twice as slow as the default (a
#: few µs of a small collective on a loaded machine) would otherwise squash every other bar, and a single
#: repetition's extreme of such a collective lies thousands of % away. A bar below it is cut at the axis with its
#: value written; a spread below it runs off the panel.
FLOOR_PCT = -100.0


def _gain(v: Any) -> float | None:
    """A gain (%) as a float, None when missing or not finite (a CSV's empty cell, an unmodelled default)."""
    if v is None or v == "":
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _panel(shape: str, library: str, op: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One operation's bars: per size (ascending) the predicted gain, the measured one and its spread (below,
    above: distances from the measured gain, %)."""
    rows = sorted(rows, key=lambda r: int(r["size"]))
    meas = [_gain(r.get("measured_gain_pct")) for r in rows]
    lo = [_gain(r.get("measured_gain_min_pct")) for r in rows]
    hi = [_gain(r.get("measured_gain_max_pct")) for r in rows]
    below = [0.0 if m is None or a is None else max(m - a, 0.0) for m, a in zip(meas, lo, strict=True)]
    above = [0.0 if m is None or b is None else max(b - m, 0.0) for m, b in zip(meas, hi, strict=True)]
    return {
        "shape": shape,
        "library": library,
        "op": op,
        "sizes": [int(r["size"]) for r in rows],
        "labels": [format_size(int(r["size"])) for r in rows],
        "predicted": [_gain(r.get("predicted_gain_pct")) for r in rows],
        "measured": meas,
        "yerr": [below, above],
    }


def gain_panels(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What :func:`plot_gains` draws, as data: ``panels`` (one per shape, library and operation, in the rows'
    order: ``shape``, ``library``, ``op``, ``sizes`` (bytes) and their ``labels``, ``predicted`` and ``measured``
    gains (%, None where there is none: the library's default not modelled, a size not measured) and ``yerr``
    (the measured spread below and above, %)), ``grid`` (each panel's line and column), ``measured`` (whether any
    row was measured: a second bar per size), ``ylim`` (the one y range of every panel, %: 0, every bar and its
    spread, but not below :data:`FLOOR_PCT`) and ``blocks`` (how many shape/library pairs). None when no row has a
    gain to draw.

    >>> rows = [{"shape": "run-6x1", "library": "MPICH", "op": "bcast", "size": s, "predicted_gain_pct": p,
    ...          "measured_gain_pct": m, "measured_gain_min_pct": m - 2, "measured_gain_max_pct": m + 1}
    ...         for s, p, m in ((65536, 30.0, 28.0), (1024, 10.0, 12.0))]
    >>> fig = gain_panels(rows)
    >>> p = fig["panels"][0]
    >>> p["labels"], p["predicted"], p["measured"], p["yerr"]
    (['1K', '64K'], [10.0, 30.0], [12.0, 28.0], [[2.0, 2.0], [1.0, 1.0]])
    >>> fig["grid"], fig["measured"], [round(y, 1) for y in fig["ylim"]]
    ([(0, 0)], True, [-2.4, 32.4])
    >>> gain_panels([{**rows[0], "measured_gain_pct": -750.0, "measured_gain_min_pct": -9000.0}])["ylim"][0]
    -110.4
    >>> gain_panels([{**rows[0], "predicted_gain_pct": None, "measured_gain_pct": None}]) is None
    True
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((str(r["shape"]), str(r["library"]), str(r["op"])), []).append(r)
    panels = [_panel(*key, rs) for key, rs in groups.items()]
    values = [v for p in panels for v in (*p["predicted"], *p["measured"]) if v is not None]
    if not values:
        return None
    ends = [0.0, *values]  # 0 is on every panel: the default's own time
    for p in panels:
        for m, b, a in zip(p["measured"], *p["yerr"], strict=True):
            ends += [] if m is None else [m - b, m + a]
    lo, hi = max(min(ends), FLOOR_PCT), max(ends)
    pad = max(0.08 * (hi - lo), 1.0)  # an all-zero figure (every default kept) still has a y range
    grid, line = [], -1
    for i, p in enumerate(panels):
        first = i == 0 or (p["shape"], p["library"]) != (panels[i - 1]["shape"], panels[i - 1]["library"])
        col = 0 if first or grid[-1][1] == COLUMNS - 1 else grid[-1][1] + 1
        line += col == 0
        grid.append((line, col))
    return {
        "panels": panels,
        "grid": grid,
        "measured": any(v is not None for p in panels for v in p["measured"]),
        "ylim": (lo - pad, hi + pad),
        "blocks": len({(p["shape"], p["library"]) for p in panels}),
    }


def _draw_panel(ax: Any, p: Mapping[str, Any], fig_data: Mapping[str, Any], colors: Sequence[str]) -> None:
    """One operation's bars: predicted (solid), measured (hatched, with the spread) beside it; a × where a bar is
    missing (the default not modelled, the size not measured); a bar below the axis cut there with its value
    written; the line of 0 (the default)."""
    measured, low = fig_data["measured"], fig_data["ylim"][0]
    n = len(p["sizes"])
    w = 0.4 if measured else 0.7
    slots = [("predicted", -w / 2 if measured else 0.0)] + ([("measured", w / 2)] if measured else [])
    for kind, dx in slots:
        at = [(i + dx, v) for i, v in enumerate(p[kind]) if v is not None]
        gone = [i + dx for i, v in enumerate(p[kind]) if v is None]
        if at:
            x, y = zip(*at, strict=True)
            if kind == "predicted":
                ax.bar(x, y, w, color=colors[0], edgecolor=colors[0], lw=0.8)
            else:
                keep = [i for i, v in enumerate(p["measured"]) if v is not None]
                yerr = [[p["yerr"][0][i] for i in keep], [p["yerr"][1][i] for i in keep]]
                ax.bar(x, y, w, color="white", edgecolor=colors[1], hatch="////", lw=0.8)
                ax.errorbar(x, y, yerr=yerr, fmt="none", ecolor="k", elinewidth=0.8, capsize=2)
        if gone:
            ax.plot(gone, [0.0] * len(gone), ls="none", marker="x", color="0.45", ms=4)
        for x, v in at:
            if v < low:  # the axis cuts it: say how far it went
                ax.text(x, low, f" {v:.0f} %", rotation=90, ha="center", va="bottom", fontsize=6, clip_on=True)
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set_xticks(range(n))
    ax.set_xticklabels(p["labels"], rotation=45, ha="right", fontsize=7)
    ax.set_xlim(-0.6, n - 0.4)
    ax.grid(axis="y", alpha=0.3)


def _legend_handles(measured: bool, colors: Sequence[str]) -> list[Any]:
    """The figure's one legend: the predicted bar, the measured bar and its spread, the × of a missing bar."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    out = [Patch(facecolor=colors[0], edgecolor=colors[0], label="predicted gain")]
    if measured:
        out += [
            Patch(facecolor="white", edgecolor=colors[1], hatch="////", label="measured gain (median)"),
            Line2D([], [], color="k", lw=0.8, marker="_", ms=6, label="measured spread (repetitions' extremes)"),
        ]
    what = "the default not modelled (kept) or not measured" if measured else "the default not modelled (kept)"
    if measured:
        out.append(Line2D([], [], ls="none", label=f"below {FLOOR_PCT:.0f} %: cut at the axis"))
    out.append(Line2D([], [], ls="none", marker="x", color="0.45", ms=4, label=f"no bar: {what}"))
    return out


def _draw(fig_data: Mapping[str, Any], title: str = "") -> Any:
    """A matplotlib ``Figure`` of :func:`gain_panels`'s data: the panels on their grid, every one with the same y
    range, and one legend below them all, outside the data (Agg canvas; no pyplot, the backend is untouched)."""
    import matplotlib  # lazily: a heavy optional library, needed only where a plot is drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    colors = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1"]) + ["C0", "C1"]
    measured, panels, grid = fig_data["measured"], fig_data["panels"], fig_data["grid"]
    lines, cols = grid[-1][0] + 1, max(c for _, c in grid) + 1
    width = 1.0 + 0.22 * max(len(p["sizes"]) for p in panels) * (2 if measured else 1)
    fig = Figure(figsize=(max(width, 2.6) * cols, 2.9 * lines + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(lines, cols, squeeze=False, sharey=True)
    for p, (i, j) in zip(panels, grid, strict=True):
        ax = axes[i][j]
        _draw_panel(ax, p, fig_data, colors)
        ax.set_title(p["op"] if fig_data["blocks"] == 1 else f"{p['op']}: {p['shape']}, {p['library']}", fontsize=9)
        ax.tick_params(labelleft=True)
        if j == 0:
            ax.set_ylabel("gain over the default (%)")
        ax.set_xlabel("message size (bytes per rank)", fontsize=8)
    used = set(grid)
    for i in range(lines):
        for j in range(cols):
            if (i, j) not in used:
                axes[i][j].set_visible(False)
    axes[0][0].set_ylim(*fig_data["ylim"])  # shared: one y range for every panel
    handles = _legend_handles(measured, colors)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    if fig_data["blocks"] == 1:  # the panels' titles name the operation only: the shape and library go here
        title = f"{title}\n{panels[0]['library']} on {panels[0]['shape']}".strip()
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_gains(rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path | None:
    """Write ``tune.png`` (:func:`gain_panels`'s panels: x = message size in bytes per rank, y = gain over the
    library's default in %, linear, the same range on every panel, since a gain can be below 0) to ``path``; None,
    and nothing written, when no row has a gain to draw. Library code: no pyplot, the backend is untouched."""
    fig_data = gain_panels(rows)
    if fig_data is None:
        return None
    return save_png(_draw(fig_data, title), path)
