"""``hnow best-tree`` (also ``hnow best``): the fastest tree for a collective on a layout, with its predicted time and
structure; for an operation whose algorithms are message schedules, the fastest algorithm with its parameters (rank
order, root, two-level levels) and its gain over each MPI library's default
(:func:`hnowmodel.search.best_algorithm`)."""

from __future__ import annotations

import argparse

from .. import ops, search
from ..errors import InputError
from ..io import check_output, write_json_atomic
from ..layout import parse_layout
from ..options import parse_reduce_rate, parse_variants
from ..params import Profile
from ..predict import library_name
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

HELP = (
    "find the fastest tree (exact DP or FNF/ECEF heuristics), or algorithm with its rank order, root and levels, of a "
    "collective for a layout"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="profile JSON file, or 'paper' (default)")
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast*4,slow*4, @file")
    add_op_argument(p, "bcast", f"operation: {', '.join(ops.names())} (default bcast)")
    p.add_argument("--size", default="0", help="message size in bytes (default 0)")
    p.add_argument("--method", default="auto", help=f"{', '.join(search.METHODS)} (default auto: exact if affordable)")
    p.add_argument(
        "--root",
        type=int,
        default=None,
        help="root rank (default: 0 for a tree; for a rooted algorithm, e.g. reduce's, chosen with the rank order)",
    )
    p.add_argument(
        "--library",
        default=None,
        help=f"algorithms: the MPI library whose default is compared ({', '.join(ops.native_libraries())}; "
        "default: each that hnow models for the operation)",
    )
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
    libraries = None if args.library is None else [library_name(args.library, args.op)]
    if ops.get(args.op).movement is None:
        best = search.best_algorithm(profile, layout, args.op, size, args.root, variant, gamma, libraries)
    else:
        best = search.best_tree(
            profile, layout, op=args.op, size=size, method=args.method, root=0 if args.root is None else args.root,
            variant=variant, reduce_us_per_byte=gamma,
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
        _print_algorithm(best, layout)
        return 0
    print("children (send order):")
    for r, kids in enumerate(best.tree.children):
        if kids:
            print(f"  {r} ({layout[r]}) -> {', '.join(map(str, kids))}")
    return 0


def _print_algorithm(best: search.BestTree, layout: list[str]) -> None:
    """The chosen algorithm's parameters, its rank order and its gain over each library's default."""
    for k, v in best.params.items():
        print(f"  {k}: {v}")
    perm = list(best.perm or ())
    if perm and perm != list(range(len(perm))):
        shown = ", ".join(f"{r} ({layout[r]})" for r in perm[:32]) + (", …" if len(perm) > 32 else "")
        print(f"  rank order (position: rank): {shown}")
    for lib, t in best.defaults_us.items():
        gain = best.gain_vs_default_pct[lib]
        print(f"  vs {lib}'s default, {best.default_names.get(lib, '')}: {t:.2f} µs ({gain:.1f} % faster)")
