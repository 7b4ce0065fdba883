"""``hnow predict``: model times for point-to-point messages and for every operation over named trees or by its
named algorithms (message schedules)."""

from __future__ import annotations

import argparse

from ..ops import native_libraries
from ..predictions import OPS_AND_PTP, prediction_rows
from ..sizes import format_size
from ..treespec import spec_names
from .common import (
    add_op_argument,
    add_reduce_rate_argument,
    add_tree_argument,
    add_variant_argument,
    emit_json,
    print_table,
)

__all__ = ["HELP", "add_arguments", "run"]

HELP = "predict point-to-point and collective times from a profile (µs), over trees or by named algorithms"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="profile JSON file, or 'paper' for Table 1 (default)")
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast,slow,… , fast*4,slow*4, @file")
    add_op_argument(p, "bcast", f"operation: {', '.join(OPS_AND_PTP)} (default bcast)")
    add_tree_argument(
        p,
        "binomial",
        f"tree(s), comma-separated: {', '.join(spec_names())}; or the operation's algorithms (ring, …: hnow info)",
    )
    p.add_argument("--sizes", default="0,1K,4K,16K,64K", help="message sizes in bytes: 0,1K,4K or 0..64K")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    add_variant_argument(p, "default: the operation's own for the profile, as hm.predict")
    p.add_argument(
        "--library",
        default=None,
        help=f"--tree native[:ALGO]: the MPI library whose algorithm is predicted ({', '.join(native_libraries())})",
    )
    p.add_argument("--order", default="rank", help="sequential tree's send order: rank, or best (exact best per size)")
    p.add_argument("--from", dest="src", default=None, help="--op ptp: sender's node type (default: every pair)")
    p.add_argument("--to", dest="dst", default=None, help="--op ptp: receiver's node type (default: every pair)")
    add_reduce_rate_argument(p)


def run(args: argparse.Namespace) -> int:
    rows = prediction_rows(
        args.profile,
        op=args.op,
        layout=args.layout,
        trees=args.tree,
        sizes=args.sizes,
        root=args.root,
        variant=args.variant,
        order=args.order,
        library=args.library,
        src=args.src,
        dst=args.dst,
        reduce_us_per_byte=args.reduce_us_per_byte,
    )
    if args.json:
        emit_json({"predictions": rows})
        return 0
    # one column per tree (or type pair), one line per size: easy to read and to compare
    trees = list(dict.fromkeys(r["tree"] for r in rows))
    table = []
    for s in dict.fromkeys(r["size"] for r in rows):
        line = {"size": format_size(s)}
        line.update({f"{t} (µs)": r["time_us"] for t in trees for r in rows if r["tree"] == t and r["size"] == s})
        table.append(line)
    print_table(table, title=f"predicted {args.op} time, profile {args.profile}")
    return 0
