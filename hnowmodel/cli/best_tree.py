"""``hnow best-tree``: the fastest tree for a collective on a layout, with its predicted time and structure."""

from __future__ import annotations

import argparse

from .. import search
from ..sizes import parse_size
from .common import OPS, check_choice, emit_json, layout_arg, load_profile, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = "find the fastest broadcast/scatter/gather tree for a layout (exact DP or FNF/ECEF heuristics)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="profile JSON file, or 'paper' (default)")
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast*4,slow*4, @file")
    p.add_argument("--op", default="bcast", help="bcast, scatter or gather (default bcast)")
    p.add_argument("--size", default="0", help="message size in bytes (default 0)")
    p.add_argument("--method", default="auto", help=f"{', '.join(search.METHODS)} (default auto: exact if affordable)")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("-o", "--output", default=None, help="also write the tree as JSON (usable as --tree @FILE)")


def run(args: argparse.Namespace) -> int:
    check_choice(args.op, [o for o in OPS if o != "ptp"], "operation (--op)")
    check_choice(args.method, search.METHODS, "method (--method)")
    profile = load_profile(args.profile)
    layout = layout_arg(args.layout, profile)
    size = parse_size(args.size, "--size")
    best = search.best_tree(profile, layout, op=args.op, size=size, method=args.method, root=args.root)
    doc = best.to_dict()
    if args.output:
        from ..io import write_json_atomic

        write_json_atomic(args.output, {**best.tree.to_dict(), "name": best.method, "time_us": best.time_us})
    if args.json:
        emit_json(doc)
        return 0
    print(f"best {args.op} tree for {len(layout)} ranks at {size} B: {best.method}"
          f"{' (proven optimal under eq. 7)' if best.exact else ''}, predicted {best.time_us:.2f} µs")
    rows = [{"tree": best.method, "time_us": best.time_us, "vs best %": 0.0}]
    rows += [{"tree": k, "time_us": v, "vs best %": 100 * (v - best.time_us) / best.time_us if best.time_us else 0.0}
             for k, v in best.compared.items()]
    print_table(rows)
    print("children (send order):")
    for r, kids in enumerate(best.tree.children):
        if kids:
            print(f"  {r} ({layout[r]}) -> {', '.join(map(str, kids))}")
    return 0
