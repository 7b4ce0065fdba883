"""``hnow demo``: the whole loop on the built-in emulated ``paper`` testbed (:func:`hnowmodel.demo.run_demo`)."""

from __future__ import annotations

import argparse

from ..demo import CONFIGS, group_table, run_demo
from .common import add_output, emit_json, positive_int, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = "calibrate, predict, measure and compare on the built-in emulated 'paper' testbed; writes a report folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_output(p, None, "report folder (default: ./hnow-demo-<date>-<time>)")
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


def run(args: argparse.Namespace) -> int:
    res = run_demo(
        output=args.output,
        force=args.force,
        testbed=args.testbed,
        sizes=args.sizes,
        configs=args.configs,
        reps=args.reps,
        method=args.method,
        stat=args.stat,
        profile=args.profile,
        launcher=args.launcher,
        launcher_args=args.launcher_args,
        timeout=args.timeout,
        progress=not args.json,
    )
    if args.json:
        emit_json(res.to_dict())
        return 0
    print_table(group_table(res.rows), title="predicted vs measured, per configuration, operation and tree")
    s = res.summary
    agree = sum(b["agree"] for b in res.best)
    print(
        f"overall: median |error| {s['median_abs_error_pct']:.1f} %, max |error| {s['max_abs_error_pct']:.1f} % "
        f"over {s['rows']} rows; model picks the measured-best tree in {agree}/{len(res.best)} cases"
    )
    print(
        f"report: {res.report}/ (profile.json, comparison.csv, best_trees.csv, compare-*.png, summary.md); "
        f"wall time {res.wall_time_s:.0f} s"
    )
    return 0
