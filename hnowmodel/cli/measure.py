"""``hnow measure``: run bcast/scatter/gather under MPI over a tree (or the MPI library's own) and time it."""

from __future__ import annotations

import argparse

from .. import ops
from ..sizes import format_size
from ..treespec import spec_names
from .common import (
    add_mpi_arguments,
    add_op_argument,
    add_tree_argument,
    add_types_argument,
    emit_json,
    launch_kwargs,
    positive_int,
    print_table,
)

__all__ = ["HELP", "add_arguments", "run", "add_timing_arguments"]

HELP = "run bcast/scatter/gather under MPI over a tree (or the MPI library's own: native) and time it (µs)"


def add_timing_arguments(p: argparse.ArgumentParser) -> None:
    """The flags ``measure`` and ``compare`` share: root, repetitions, timing method and statistic."""
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--reps", type=positive_int, default=7, help="repetitions of each timing method (default 7)")
    p.add_argument(
        "--iters", type=positive_int, default=None, help="collectives per Figure-2 loop (50; 2 on a testbed)"
    )
    p.add_argument(
        "--method",
        default="auto",
        help="timing behind measured_us: fig2, sync or auto (default: sync on "
        "a testbed, fig2 on plain MPI); both are in every row",
    )
    p.add_argument(
        "--stat",
        default="auto",
        help="measured_us = median or min over repetitions (auto: min on a testbed, as the paper; median on plain MPI)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p)
    p.add_argument("--layout", default=None, help="node type of each rank (overrides the testbed's ranks)")
    add_op_argument(p, "bcast", f"operation(s), comma-separated: {', '.join(ops.names())} (default bcast)")
    add_tree_argument(p, "binomial", f"tree(s), comma-separated: {', '.join(spec_names())}")
    p.add_argument("--sizes", default="0,1K,4K,16K", help="message sizes in bytes (per rank for scatter/gather)")
    p.add_argument("--profile", default=None, help="profile for trees chosen from the model (hierarchical, optimal)")
    add_types_argument(p)
    add_timing_arguments(p)
    p.add_argument(
        "--reorder",
        action="store_true",
        help="also run with the rank order the model picks (needs --profile and --layout); report the gain",
    )


def run(args: argparse.Namespace) -> int:
    from ..jobs import measure

    got = measure(
        args.np,
        op=args.op,
        tree=args.tree,
        sizes=args.sizes,
        testbed=args.testbed,
        layout=args.layout,
        types=args.types,
        profile=args.profile,
        root=args.root,
        reps=args.reps,
        iters=args.iters,
        method=args.method,
        stat=args.stat,
        reorder=args.reorder,
        **launch_kwargs(args),
    )
    if args.json:
        emit_json(got.to_dict())
        return 0
    run = got.run
    where = f"emulated testbed {run['testbed']} (times / {run['time_scale']:g})" if run["emulated"] else "plain MPI"
    print(
        f"{run['library_version']}; {run['np']} ranks; {where}; timing: {run['method']} (min/median/max over "
        f">= {args.reps} repetitions; measured_us = {run['stat']})"
    )
    if run.get("native"):
        nat = run["native"]
        print(f"native collectives: algorithm {nat['algorithm']}" + ("" if nat["pinned"] else " (NOT pinned)"))
    cols = ["op", "tree", "size", "measured_us", "min_us", "median_us", "max_us", "fig2_median_us", "sync_median_us"]
    if args.reorder:
        cols += ["reordered_us", "measured_gain_pct", "predicted_gain_pct"]
    table = [{**r.to_dict(), "size": format_size(r.size)} for r in got.rows]
    print_table([{c: t.get(c) for c in cols} for t in table], cols)
    return 0
