"""``hnow best-tree``: the fastest tree for a collective on a layout, with its predicted time and structure."""

from __future__ import annotations

import argparse

from .. import ops, search
from ..errors import InputError
from ..io import check_output, write_json_atomic
from ..layout import parse_layout
from ..options import parse_reduce_rate, parse_variants
from ..params import Profile
from ..sizes import parse_size
from .common import (
    add_op_argument,
    add_output,
    add_reduce_rate_argument,
    add_variant_argument,
    emit_json,
    print_table,
)

__all__ = ["HELP", "add_arguments", "run"]

HELP = "find the fastest tree (exact DP or FNF/ECEF heuristics), or algorithm, of a collective for a layout"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="profile JSON file, or 'paper' (default)")
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast*4,slow*4, @file")
    add_op_argument(p, "bcast", f"operation: {', '.join(ops.names())} (default bcast)")
    p.add_argument("--size", default="0", help="message size in bytes (default 0)")
    p.add_argument("--method", default="auto", help=f"{', '.join(search.METHODS)} (default auto: exact if affordable)")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    add_variant_argument(p, "the tree is chosen under it (default: the operation's own for the profile)")
    add_reduce_rate_argument(p)
    add_output(p, None, "also write the tree as JSON (usable as --tree @FILE)")


def run(args: argparse.Namespace) -> int:
    ops.get(args.op)
    given = parse_variants(args.variant, [args.op]).get(args.op)  # a bad one is refused before the profile is read
    if args.method not in search.METHODS:
        raise InputError(f"unknown method (--method) {args.method!r} (choose from: {', '.join(search.METHODS)})")
    if args.output and ops.get(args.op).movement is None:
        raise InputError(f"--output: {args.op}'s algorithms are message schedules, not trees: nothing to write")
    if args.output:
        check_output(args.output, force=args.force)
    profile = Profile.load(args.profile)
    if args.layout is None and not profile.layout:
        raise InputError("--layout is required (the profile records no calibration layout)")
    layout = profile.host_layout if args.layout is None else parse_layout(args.layout, profile.type_names)
    size = parse_size(args.size, "--size")
    variant = ops.check_variant(args.op, given, profile)  # unset: this profile's default
    gamma = parse_reduce_rate(args.reduce_us_per_byte)
    best = search.best_tree(
        profile, layout, op=args.op, size=size, method=args.method, root=args.root, variant=variant,
        reduce_us_per_byte=gamma,
    )  # fmt: skip
    doc = best.to_dict()
    if args.output:
        tree_doc = {**best.tree.to_dict(), "name": best.method, "op": args.op, "size": size, "time_us": best.time_us}
        write_json_atomic(args.output, tree_doc, overwrite=args.force)
    if args.json:
        emit_json(doc)
        return 0
    kind = "tree" if best.tree is not None else "algorithm"
    print(
        f"best {args.op} {kind} for {len(layout)} ranks at {size} B: {best.method}"
        f"{' (proven optimal under eq. 7)' if best.exact else ''}, predicted {best.time_us:.2f} µs"
    )
    rows = [{kind: best.method, "time_us": best.time_us, "vs best %": 0.0}]
    rows += [
        {kind: k, "time_us": v, "vs best %": 100 * (v - best.time_us) / best.time_us if best.time_us else 0.0}
        for k, v in best.compared.items()
    ]
    print_table(rows)
    if best.tree is None:
        return 0
    print("children (send order):")
    for r, kids in enumerate(best.tree.children):
        if kids:
            print(f"  {r} ({layout[r]}) -> {', '.join(map(str, kids))}")
    return 0
