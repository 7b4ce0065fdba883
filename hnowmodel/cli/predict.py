"""``hnow predict``: model times for point-to-point messages and for bcast/scatter/gather over named trees."""

from __future__ import annotations

import argparse

from .. import predict as model
from ..sizes import format_size
from ..trees import make_tree, tree_names
from .common import OPS, check_choice, emit_json, layout_arg, load_profile, print_table, sizes_arg

__all__ = ["HELP", "add_arguments", "run", "prediction_rows"]

HELP = "predict point-to-point, broadcast, scatter and gather times from a profile (µs)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="profile JSON file, or 'paper' for Table 1 (default)")
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast,slow,… , fast*4,slow*4, @file")
    p.add_argument("--op", default="bcast", help=f"operation: {', '.join(OPS)} (default bcast)")
    p.add_argument("--tree", default="binomial", help=f"tree name(s), comma-separated: {', '.join(tree_names())}")
    p.add_argument("--sizes", default="0,1K,4K,16K,64K", help="message sizes in bytes: 0,1K,4K or 0..64K")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--variant", default="paper", help="gather model: paper (eq. 12 as printed) or link")
    p.add_argument("--order", default="rank", choices=("rank", "best"),
                   help="sequential tree's send order: by rank, or the exact best order for the op and size")
    p.add_argument("--from", dest="src", default=None, help="--op ptp: sender's node type (default: every pair)")
    p.add_argument("--to", dest="dst", default=None, help="--op ptp: receiver's node type (default: every pair)")


def prediction_rows(args: argparse.Namespace) -> list[dict]:
    """The prediction rows for parsed ``hnow predict`` arguments (also used by other commands)."""
    check_choice(args.op, OPS, "operation (--op)")
    profile = load_profile(args.profile)
    sizes = sizes_arg(args.sizes)
    if args.op == "ptp":
        types = profile.type_names
        srcs = [check_choice(args.src, types, "node type (--from)")] if args.src else types
        dsts = [check_choice(args.dst, types, "node type (--to)")] if args.dst else types
        return [
            {"op": "ptp", "tree": f"{a}->{b}", "size": s, "time_us": float(t)}
            for a in srcs
            for b in dsts
            for s, t in zip(sizes, model.ptp(profile, a, b, sizes), strict=True)
        ]
    layout = layout_arg(args.layout, profile)
    check_choice(args.variant, model.GATHER_VARIANTS, "gather variant (--variant)")
    kw = {"variant": args.variant} if args.op == "gather" else {}
    rows = []
    for name in [t.strip() for t in args.tree.split(",") if t.strip()]:
        if name == "sequential" and args.order == "best":
            from ..search import best_sequential

            # the best order depends on the size: one tree per size
            times = [model.predict(args.op, profile, layout, best_sequential(profile, layout, args.op, s, args.root),
                                   [s], **kw)[0] for s in sizes]
        else:
            tree = make_tree(name, len(layout), root=args.root, layout=layout, profile=profile)
            times = model.predict(args.op, profile, layout, tree, sizes, **kw)
        rows += [
            {"op": args.op, "tree": name, "size": s, "time_us": float(t)} for s, t in zip(sizes, times, strict=True)
        ]
    return rows


def run(args: argparse.Namespace) -> int:
    rows = prediction_rows(args)
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
