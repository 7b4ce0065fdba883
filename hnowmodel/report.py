"""Predicted vs measured: comparison rows, error statistics, CSV, plots and a markdown summary.

Pure functions (no MPI): ``hnow compare``, ``hnow demo`` and ``experiments/fig3_5_validation.py`` measure with
:mod:`calibrate.collectives` (through the CLI's launcher) and hand the measured rows here.

``error_pct = 100 * (predicted_us - measured_us) / measured_us``: positive when the model is pessimistic.

>>> rows = [{"op": "bcast", "tree": "binomial", "size": 0, "predicted_us": 110.0, "measured_us": 100.0}]
>>> add_errors(rows)[0]["error_pct"]
10.0
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

import numpy as np

from . import predict as model
from .io import atomic_write
from .params import Profile
from .sizes import format_size
from .trees import Tree, binomial

__all__ = [
    "NATIVE_MODEL_TREE",
    "predicted_rows",
    "save_png",
    "add_errors",
    "error_stats",
    "group_stats",
    "write_csv",
    "plot_comparison",
    "explain_misses",
    "markdown_summary",
    "CSV_COLUMNS",
    "write_report",
]

#: The tree that models ``--tree native`` (MPICH with the binomial algorithm pinned for bcast/scatter/gather).
NATIVE_MODEL_TREE = "binomial"
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
)


def predicted_rows(
    profile: Profile,
    layout: Sequence[str],
    measured: Iterable[Mapping[str, Any]],
    trees: Mapping[str, Tree | None],
    *,
    gather_variant: str = "link",
    root: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Attach ``predicted_us`` (and ``error_pct``) to measured rows (``op``, ``tree``, ``size``, ``measured_us``).

    ``trees`` maps each row's tree name to the Tree that ran (``None`` for ``native``, predicted with MPICH's
    binomial tree). Native rows of size 0 are dropped: MPICH returns at once from an empty collective, so
    there is nothing to compare.
    """
    n = len(layout)
    out = []
    cache: dict[tuple[str, str], dict[int, float]] = {}
    rows = list(measured)
    for r in rows:
        name = r["tree"]
        if name == "native" and int(r["size"]) == 0:
            continue
        key = (r["op"], name)
        if key not in cache:
            tree = trees.get(name)
            if tree is None:
                tree = binomial(n, root)
            sizes = sorted({int(x["size"]) for x in rows if x["op"] == r["op"] and x["tree"] == name})
            kw = {"variant": gather_variant} if r["op"] == "gather" else {}
            t = model.predict(r["op"], profile, list(layout), tree, sizes, **kw)
            cache[key] = dict(zip(sizes, (float(v) for v in t), strict=True))
        row = {**(extra or {}), **dict(r), "predicted_us": cache[key][int(r["size"])]}
        if name == "native":
            row["model_tree"] = NATIVE_MODEL_TREE
        out.append(row)
    return add_errors(out)


def add_errors(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set ``error_pct`` = 100 (predicted - measured) / measured on every row (``None`` if measured <= 0)."""
    for r in rows:
        meas, pred = float(r["measured_us"]), float(r["predicted_us"])
        r["error_pct"] = 100.0 * (pred - meas) / meas if meas > 0 else None
    return rows


def _abs_errors(rows: Iterable[Mapping[str, Any]]) -> list[float]:
    return [abs(float(r["error_pct"])) for r in rows if r.get("error_pct") is not None]


def error_stats(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Median and max |error_pct| (and the row count) of a set of rows."""
    errs = _abs_errors(rows)
    if not errs:
        return {"rows": 0, "median_abs_error_pct": None, "max_abs_error_pct": None}
    return {"rows": len(errs), "median_abs_error_pct": float(statistics.median(errs)), "max_abs_error_pct": max(errs)}


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
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return atomic_write(path, buf.getvalue())


def plot_comparison(rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "", group: str = "tree") -> Path:
    """One PNG: a panel per ``op``, a colour per ``group`` value; predicted as lines, measured as points with the
    min-max spread over repetitions as error bars; x = message size (bytes), y = time (µs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = list(dict.fromkeys(r["op"] for r in rows))
    fig, axes = plt.subplots(1, len(ops), figsize=(4.6 * len(ops), 3.8), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, op in zip(axes[0], ops, strict=True):
        mine = [r for r in rows if r["op"] == op]
        for i, g in enumerate(dict.fromkeys(r[group] for r in mine)):
            rs = sorted((r for r in mine if r[group] == g), key=lambda r: r["size"])
            x = np.array([r["size"] for r in rs], dtype=float)
            c = colors[i % len(colors)]
            ax.plot(x, [r["predicted_us"] for r in rs], "-", color=c, label=f"{g} predicted")
            med = np.array([r["measured_us"] for r in rs], dtype=float)
            lo = np.array([r.get("min_us", r["measured_us"]) for r in rs], dtype=float)
            hi = np.array([r.get("max_us", r["measured_us"]) for r in rs], dtype=float)
            yerr = np.vstack([np.maximum(med - lo, 0), np.maximum(hi - med, 0)])
            ax.errorbar(x, med, yerr=yerr, fmt="o", color=c, ms=4, capsize=3, label=f"{g} measured")
        ax.set_title(op)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("time (µs)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)


def explain_misses(rows: Sequence[Mapping[str, Any]], threshold_pct: float = 15.0) -> list[str]:
    """One sentence per (op, tree) group whose worst |error| exceeds ``threshold_pct``: sign, regime, likely term."""
    out = []
    groups: dict[tuple, list] = {}
    for r in rows:
        if r.get("error_pct") is not None:
            groups.setdefault((r.get("config", ""), r["op"], r["tree"]), []).append(r)
    for (cfg, op, tree), rs in groups.items():
        bad = [r for r in rs if abs(r["error_pct"]) > threshold_pct]
        if not bad:
            continue
        small = [r for r in bad if r["size"] <= 1024]
        large = [r for r in bad if r["size"] > 1024]
        under = sum(r["error_pct"] < 0 for r in bad) > len(bad) / 2
        where = f"{cfg} " if cfg else ""
        sizes = ", ".join(format_size(r["size"]) for r in bad)
        if under:
            what = "measured slower than predicted"
            if small and not large:
                why = (
                    "small messages: the constant terms (Sc, Rc, Xc) miss per-message costs the model has no term "
                    "for - OS wake-ups of waiting ranks (more ranks than cores), MPI progress polling, and the "
                    "timing method's own barrier/clock noise, which is a large share of a short collective"
                )
            else:
                why = (
                    "large messages: per-byte terms (Sm, Rm, Xm) - several ranks copy through shared memory at once "
                    "(contention the model ignores: it assumes independent links and CPUs)"
                )
        else:
            what = "measured faster than predicted"
            if tree == "native" and op != "gather":
                why = (
                    "the calibrated overheads were measured through mpi4py, so each S and R includes Python's "
                    "per-call cost (about a microsecond), which the library's own collective, running in C, "
                    "does not pay; on shared memory that cost is most of a small message's time"
                )
            elif tree == "native" or op == "gather":
                why = (
                    "the real schedule overlaps steps the model serialises (MPICH's gather receives subtrees in a "
                    "fixed order and the eager protocol lets a sender finish before the receiver has posted, so "
                    "S, X and R of different messages overlap)"
                )
            else:
                why = (
                    "the per-byte send cost fitted from ping-pong/consecutive sends is larger than the cost inside "
                    "a collective, where buffers are warm and the eager protocol overlaps send and wire time"
                )
        out.append(
            f"{where}{op}/{tree}: {what} at {sizes} (worst {max(abs(r['error_pct']) for r in bad):.0f} %): {why}."
        )
    return out


def _fmt_pct(v: Any) -> str:
    return "-" if v is None else f"{v:.1f} %"


def markdown_summary(
    rows: Sequence[Mapping[str, Any]],
    title: str,
    context: Mapping[str, Any] | None = None,
    keys: Sequence[str] = ("op", "tree"),
    threshold_pct: float = 15.0,
) -> str:
    """Markdown: the context (what ran where), overall and per-group median/max |error|, and the misses explained."""
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
    misses = explain_misses(rows, threshold_pct)
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
        lines.append(
            f"| {pre}{r['op']} | {r['tree']} | {format_size(r['size'])} | {r['predicted_us']:.1f} | {spread} "
            f"| {_fmt_pct(r.get('error_pct'))} |"
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
    text = markdown_summary(rows, title, context, keys=keys)
    paths["summary"] = str(atomic_write(out / "summary.md", text))
    return paths
