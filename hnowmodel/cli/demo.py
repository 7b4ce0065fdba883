"""``hnow demo``: the whole loop (:func:`hnowmodel.demo.run_demo`) on a virtual cluster of real TCP hosts (the
built-in spec, or ``--cluster SPEC``) where the machine allows it (root, network namespaces, ``tc``), else on the
built-in emulated ``paper`` testbed (``--testbed`` asks for it); it says which and why."""

from __future__ import annotations

import argparse

from ..demo import CLUSTER_SPEC, CONFIGS, group_table, run_demo, schedules
from .common import add_mpi_choice, add_output, emit_json, positive_int, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = (
    "calibrate, predict, measure and compare on a virtual cluster where the machine allows it (root, network "
    "namespaces), else on the built-in emulated 'paper' testbed; writes a report folder"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_output(p, None, "report folder (default: ./hnow-demo-<date>-<time>)")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--testbed",
        default=None,
        help="run on this emulated testbed ('paper' or a file) instead of a virtual cluster",
    )
    where.add_argument(
        "--cluster",
        default=None,
        help=f"run on this virtual cluster spec (default: the built-in '{CLUSTER_SPEC}' where the machine allows; "
        "needs root and network namespaces)",
    )
    p.add_argument(
        "--sizes", default=None, help="message sizes in bytes (default 0,1K,4K on a testbed, 16K,64K on a cluster)"
    )
    p.add_argument(
        "--configs", default=None, help=f"testbed configurations (default {','.join(CONFIGS)}; implies the testbed)"
    )
    p.add_argument("--reps", type=positive_int, default=3, help="timing repetitions per case (default 3)")
    p.add_argument("--method", default=None, help="testbed timing method: sync (default) or fig2; implies the testbed")
    p.add_argument("--stat", default=None, help="testbed: measured_us = min (default) or median; implies the testbed")
    p.add_argument("--profile", default=None, help="use this profile instead of calibrating (skips step 1)")
    p.add_argument("--launcher", default="mpiexec", help="MPI launcher (default mpiexec)")
    p.add_argument("--launcher-args", default="", help="extra launcher arguments")
    p.add_argument("--timeout", type=float, default=None, help="seconds before a hung MPI run is killed")
    add_mpi_choice(p)


def run(args: argparse.Namespace) -> int:
    testbed_only = any(v is not None for v in (args.configs, args.method, args.stat)) or (
        args.launcher != "mpiexec" or bool(args.launcher_args)
    )  # options only the emulated demo has (a cluster is started by the chosen library's own mpiexec)
    # a virtual cluster where the machine allows one (about 2 min here), else the emulated testbed: "auto" says which
    if args.testbed or testbed_only:
        where = "testbed"
    else:
        where = "cluster" if args.cluster else "auto"
    res = run_demo(
        output=args.output,
        force=args.force,
        where=where,
        cluster=args.cluster or CLUSTER_SPEC,
        testbed=args.testbed or "paper",
        sizes=args.sizes if args.sizes is not None else (0, 1024, 4096),  # (the cluster takes its own default)
        configs=args.configs or ",".join(CONFIGS),
        reps=args.reps,
        method=args.method or "sync",
        stat=args.stat or "min",
        profile=args.profile,
        launcher=args.launcher,
        launcher_args=args.launcher_args,
        timeout=args.timeout,
        mpi=args.mpi,
        progress=not args.json,
    )
    if args.json:
        emit_json(res.to_dict())
        return 0
    print(f"ran on: {res.context.get('where')}")
    keys = ("config", "op", "tree") if any(r.get("config") != "cluster" for r in res.rows) else ("op", "tree")
    print_table(
        [
            {k: g[k] for k in keys if k in g} | {c: g[c] for c in g if c not in ("config", "op", "tree")}
            for g in group_table(res.rows)
        ],
        title="predicted vs measured, per " + ", ".join(keys),
    )
    for g in res.context.get("gains", []):
        p = g["predicted_gain_pct"]
        q = g["measured_gain_pct"]
        detail = f": {g['detail']}" if g.get("detail") else ""  # what ran, where the gain's name does not say
        print(
            f"gain of {g['what']} ({g['op']}, {g['size']} B{detail}): predicted "
            f"{'n/a' if p is None else f'{p:.1f} %'}, measured {'n/a' if q is None else f'{q:.1f} %'}"
        )
    said = str(res.context.get(schedules.OP, ""))
    if said.startswith("not shown"):  # the message-schedule operation the demo could not run here, and why
        print(f"{schedules.OP}: {said}")
    s = res.summary
    agree = sum(b["agree"] for b in res.best)
    print(
        f"overall: median |error| {s['median_abs_error_pct']:.1f} %, max |error| {s['max_abs_error_pct']:.1f} % "
        f"over {s['rows']} rows; model picks the measured-best tree (or algorithm) in {agree}/{len(res.best)} cases"
    )
    print(
        f"report: {res.report}/ (profile.json, comparison.csv, best_trees.csv, *.png, summary.md); "
        f"wall time {res.wall_time_s:.0f} s"
    )
    return 0
