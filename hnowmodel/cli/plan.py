"""``hnow plan``: which mix of node types from a pool makes a collective fastest (or meets a target)."""

from __future__ import annotations

import argparse

from .. import ops, search
from ..errors import InputError
from ..options import parse_assignments, parse_reduce_rate
from ..params import Profile
from ..sizes import parse_size
from .common import add_op_argument, add_reduce_rate_argument, emit_json, positive_int, print_table

__all__ = ["HELP", "add_arguments", "run", "parse_pool"]

HELP = "choose the mix of node types (from a pool) that minimises a collective's time, or meets a target"


def parse_pool(text: str) -> dict[str, int]:
    """``fast=16,slow=32`` -> {"fast": 16, "slow": 32}."""
    return parse_assignments(text, "--pool", int, "TYPE=COUNT")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="profile JSON file, or 'paper' (default)")
    p.add_argument("--pool", required=True, help="available nodes per type, e.g. fast=16,slow=32")
    p.add_argument("--ranks", type=positive_int, required=True, help="job size (number of ranks)")
    add_op_argument(p, "bcast", f"operation: {', '.join(ops.names())} (default bcast)")
    p.add_argument("--size", default="0", help="message size in bytes (default 0)")
    p.add_argument(
        "--target-us",
        type=float,
        default=None,
        help="instead of the fastest mix: the one meeting this time with the fewest fastest-type nodes",
    )
    p.add_argument("--method", default="auto", help="tree search method per mix (default auto)")
    add_reduce_rate_argument(p)


def run(args: argparse.Namespace) -> int:
    ops.get(args.op)
    if args.method not in search.METHODS:
        raise InputError(f"unknown method (--method) {args.method!r} (choose from: {', '.join(search.METHODS)})")
    if args.target_us is not None and not (0 < args.target_us < float("inf")):
        raise InputError(f"--target-us {args.target_us}: must be a number of µs > 0")
    profile = Profile.load(args.profile)
    size = parse_size(args.size, "--size")
    gamma = parse_reduce_rate(args.reduce_us_per_byte)
    best, cands = search.plan(
        profile, parse_pool(args.pool), args.ranks, args.op, size, args.target_us, args.method, gamma
    )
    if args.json:
        emit_json({"choice": best.to_dict(), "candidates": [c.to_dict() for c in cands]})
        return 0
    verdict = (
        ""
        if best.meets_target is None
        else (" (meets the target)" if best.meets_target else " (nothing meets the target; fastest shown)")
    )
    mix = ", ".join(f"{t}={c}" for t, c in best.mix.items())
    print(f"{args.op} of {size} B on {args.ranks} ranks: use {mix}: {best.time_us:.2f} µs{verdict}")
    print_table([{**{t: c for t, c in c.mix.items()}, "time_us": c.time_us, "method": c.method} for c in cands])
    return 0
