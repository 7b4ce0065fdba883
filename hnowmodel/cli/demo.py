"""``hnow demo``: the whole loop on the built-in emulated ``paper`` testbed, in about a minute.

1. calibrate the two node types on 8 emulated ranks (4 fast + 4 slow) - the profile is per node type, so it
   serves every configuration below;
2. for the paper's 4-rank configurations A (FFFF), B (FFSS), C (SFSF), D (FSFS) (Figures 3-5) and for 8 ranks
   (4 fast + 4 slow, Figure 7's system), predict and measure bcast/scatter/gather over the binomial, sequential
   and hierarchical trees and, per operation, the best tree found by :mod:`hnowmodel.search` (``optimal``);
3. compare, name the best tree per case (predicted and measured), and write the report folder: ``profile.json``,
   ``comparison.csv``, ``best_trees.csv``, one ``compare-<config>.png`` per configuration and ``summary.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import atomic_write
from ..layout import parse_layout
from ..report import error_stats, group_stats, markdown_summary, plot_comparison, write_csv
from ..sizes import format_size
from ..trees import TREES
from .calibrate import calibrate_profile
from .common import emit_json, load_profile, positive_int, print_table, sizes_arg
from .compare import compare

__all__ = ["HELP", "add_arguments", "run", "CONFIGS"]

HELP = "calibrate, predict, measure and compare on the built-in emulated 'paper' testbed; writes a report folder"

#: name -> layout: the paper's Figures 3-5 (4 ranks) and Figure 7's 8-rank system.
CONFIGS = {"A": "FFFF", "B": "FFSS", "C": "SFSF", "D": "FSFS", "8": "FFFFSSSS"}
CALIBRATION_LAYOUT = "FFFFSSSS"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", default=None, help="report folder (default: ./hnow-demo-<date>-<time>)")
    p.add_argument("--testbed", default="paper", help="emulated testbed (default: the built-in 'paper')")
    p.add_argument("--sizes", default="0,1K,4K", help="message sizes in bytes (default 0,1K,4K)")
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"configurations to run (default {','.join(CONFIGS)})")
    p.add_argument("--reps", type=positive_int, default=3, help="timing repetitions per case (default 3)")
    p.add_argument("--method", default="sync", help="timing method behind measured_us: sync (default) or fig2")
    p.add_argument("--stat", default="min", help="measured_us = min (default, as the paper) or median over repetitions")
    p.add_argument("--profile", default=None, help="use this profile instead of calibrating (skips step 1)")
    p.add_argument("--launcher", default="mpiexec", help="MPI launcher (default mpiexec)")
    p.add_argument("--launcher-args", default="", help="extra launcher arguments")
    p.add_argument("--timeout", type=float, default=None, help="seconds before a hung MPI run is killed")


def _trees() -> list[str]:
    # ``optimal:OP`` is the best tree found for that operation (at 0 bytes) and is measured for that op only
    chosen = [f"optimal:{op}" for op in ("bcast", "scatter", "gather")] if "optimal" in TREES else []
    return ["binomial", "sequential", "hierarchical", *chosen]


def _best_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (config, op, size): the tree the model picks and the tree that measured fastest."""
    out = []
    cases: dict[tuple, list] = {}
    for r in rows:
        cases.setdefault((r["config"], r["op"], r["size"]), []).append(r)
    for (cfg, op, size), rs in cases.items():
        p = min(rs, key=lambda r: r["predicted_us"])
        m = min(rs, key=lambda r: r["measured_us"])
        out.append(
            {
                "config": cfg,
                "op": op,
                "size": size,
                "predicted_best": p["tree"],
                "predicted_best_us": p["predicted_us"],
                "measured_best": m["tree"],
                "measured_best_us": m["measured_us"],
                "measured_us_of_predicted_best": p["measured_us"],
                "agree": p["tree"] == m["tree"] or p["measured_us"] <= 1.05 * m["measured_us"],
            }
        )
    return out


def run(args: argparse.Namespace) -> int:
    t_start = time.monotonic()
    sizes = sizes_arg(args.sizes)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in configs:
        if c not in CONFIGS:
            raise InputError(f"--configs: unknown configuration {c!r} (choose from: {', '.join(CONFIGS)})")
    if args.method not in ("sync", "fig2"):
        raise InputError(f"--method: unknown timing method {args.method!r} (choose from: sync, fig2)")
    if args.stat not in ("median", "min"):
        raise InputError(f"--stat: unknown statistic {args.stat!r} (choose from: median, min)")
    out = Path(args.output or time.strftime("hnow-demo-%Y%m%d-%H%M%S"))
    if out.exists() and any(out.iterdir()) and not (out / "summary.md").exists():
        raise InputError(f"--output {out}: folder exists and is not an hnow report folder")
    echo = not args.json
    ops, trees = ["bcast", "scatter", "gather"], _trees()

    def say(msg: str) -> None:
        if echo:
            print(f"[demo {time.monotonic() - t_start:5.1f}s] {msg}", flush=True)

    if args.profile:
        profile = load_profile(args.profile)
        source = f"--profile {args.profile} (no calibration)"
    else:
        say(f"calibrating node types on 8 emulated ranks ({CALIBRATION_LAYOUT}, testbed {args.testbed})")
        profile = calibrate_profile(
            8,
            testbed=args.testbed,
            layout=CALIBRATION_LAYOUT,
            launcher=args.launcher,
            launcher_args=args.launcher_args,
            timeout_s=args.timeout,
            echo=echo,
            quick=True,
        )
        source = None
    t_cal = time.monotonic() - t_start
    out.mkdir(parents=True, exist_ok=True)
    profile.save(out / "profile.json")
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    for cfg in configs:
        layout = parse_layout(CONFIGS[cfg], profile.type_names)
        say(f"configuration {cfg} ({CONFIGS[cfg]}): measuring {', '.join(ops)} over {', '.join(trees)}")
        got, meta = compare(
            len(layout),
            ops,
            trees,
            sizes,
            profile=profile,
            layout=layout,
            testbed=args.testbed,
            reps=args.reps,
            iters=2,
            method=args.method,
            both=False,
            stat=args.stat,
            config=cfg,
            launcher=args.launcher,
            launcher_args=args.launcher_args,
            timeout_s=args.timeout,
            echo=False,
        )
        for r in got:  # one "optimal" column: each op's row comes from that op's own optimal tree
            if r["tree"].startswith("optimal:"):
                r["tree"] = "optimal"
        rows += got
        st = error_stats(got)
        say(
            f"configuration {cfg}: median |error| {st['median_abs_error_pct']:.1f} %, "
            f"max {st['max_abs_error_pct']:.1f} %"
        )
    best = _best_rows(rows)
    elapsed = time.monotonic() - t_start
    stats = error_stats(rows)
    context = {
        "what": "calibrate -> predict -> measure -> compare on the emulated paper testbed (papers/003 Figures 3-5, 7)",
        "testbed": f"{args.testbed} (time_scale {meta.get('time_scale', 0):g}; all times in testbed µs)",
        "MPI": meta.get("library_version"),
        "profile": source
        or f"calibrated on 8 ranks {CALIBRATION_LAYOUT} in {t_cal:.0f} s (profile.json); never the testbed's "
        "true parameters",
        "configurations": ", ".join(f"{c} = {CONFIGS[c]}" for c in configs),
        "trees": ", ".join(t for t in trees if not t.startswith("optimal:"))
        + (", optimal (the best tree found for each operation at 0 bytes)" if "optimal" in TREES else ""),
        "timing": f"{args.method}, {args.stat} of {args.reps} repetitions (spread = min-max)",
        "gather model": "link (the root's inbound link carries one message at a time, as the testbed does)",
        "wall time": f"{elapsed:.0f} s",
    }
    write_csv(out / "comparison.csv", rows)
    write_csv(out / "best_trees.csv", best, columns=list(best[0]) if best else [])
    pngs = [
        plot_comparison(
            [r for r in rows if r["config"] == c], out / f"compare-{c}.png", f"configuration {c} ({CONFIGS[c]})"
        )
        for c in configs
    ]
    text = markdown_summary(rows, "hnow demo: predicted vs measured", context, keys=("config", "op", "tree"))
    agree = sum(b["agree"] for b in best)
    text += "\n## Tree choice\n\nThe model's best tree vs the fastest measured tree per case "
    text += f"(agree = same tree, or the model's pick measured within 5 % of the fastest): {agree}/{len(best)}.\n\n"
    text += "| config | op | size | predicted best | measured best | agree |\n|---|---|---|---|---|---|\n"
    for b in best:
        text += f"| {b['config']} | {b['op']} | {format_size(b['size'])} | {b['predicted_best']} | "
        text += f"{b['measured_best']} | {'yes' if b['agree'] else 'no'} |\n"
    atomic_write(out / "summary.md", text)
    if args.json:
        emit_json({"rows": rows, "report": str(out), "summary": stats, "wall_time_s": elapsed})
        return 0
    table = [
        {k: g[k] for k in ("config", "op", "tree")}
        | {"median |err| %": g["median_abs_error_pct"], "max |err| %": g["max_abs_error_pct"]}
        for g in group_stats(rows, ("config", "op", "tree"))
    ]
    print_table(table, title="predicted vs measured, per configuration, operation and tree")
    print(
        f"overall: median |error| {stats['median_abs_error_pct']:.1f} %, max |error| "
        f"{stats['max_abs_error_pct']:.1f} % over {stats['rows']} rows; model picks the measured-best tree in "
        f"{agree}/{len(best)} cases"
    )
    print(
        f"report: {out}/ (profile.json, comparison.csv, best_trees.csv, {len(pngs)} PNGs, summary.md); "
        f"wall time {elapsed:.0f} s"
    )
    return 0
