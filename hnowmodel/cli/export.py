"""``hnow export``: put a choice to work as the files MPI libraries and launchers read: the rank order under which
a native collective is fastest (hydra hostfile, Open MPI rankfile, split keys) and each library's algorithm per
operation and size range (MPICH's collective selection JSON, Open MPI's coll/tuned rules file)."""

from __future__ import annotations

import argparse

from .. import ops
from ..errors import InputError
from ..export import FORMATS, ORDER_FORMATS, AlgorithmRequest, export, write_export
from ..io import check_output
from ..layout import parse_layout
from ..options import split_list
from ..params import Profile
from ..sizes import parse_size, parse_sizes
from .common import add_op_argument, add_tree_argument, emit_json

__all__ = ["HELP", "add_arguments", "run"]

HELP = (
    "write what makes native collectives fastest: MPICH's selection JSON or Open MPI's rules file (algorithm per op "
    "and size), the rank order as a hydra hostfile, Open MPI rankfile or split keys"
)
#: The formats that choose algorithms per operation and size (``--layout``, ``--sizes`` apply to them; ``--op``: a
#: list for them, one operation for the rank order).
ALGORITHM_FORMATS = ("mpich-json", "ompi-rules", "impi-env")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", required=True, help="profile JSON file (the rank order needs its nodes: rank, host)")
    p.add_argument(
        "--format",
        default=None,
        help=f"comma list of {', '.join(FORMATS)} (default: {','.join(ORDER_FORMATS)}); "
        "one format without -o prints its file",
    )
    p.add_argument(
        "--layout",
        default=None,
        help="mpich-json, ompi-rules, impi-env: node type of each rank (default: the profile's nodes)",
    )
    add_op_argument(
        p,
        None,
        f"operation(s): the rank order is chosen for one (default {ops.names()[0]}); mpich-json, ompi-rules, "
        f"impi-env: a comma list (default {','.join(ops.tree_names())}; mpich-json also "
        f"{','.join(o for o in ops.names() if o not in ops.tree_names())})",
    )
    p.add_argument(
        "--sizes",
        default=None,
        help="mpich-json, ompi-rules, impi-env: message sizes in bytes per rank, e.g. 16K,64K,256K",
    )
    p.add_argument("--libmpi", default=None, help="mpich-json: the MPICH libmpi.so whose default table to start from")
    p.add_argument("--size", default="0", help="rank order: message size in bytes to optimise for (default 0)")
    add_tree_argument(p, "binomial", "rank order: the native algorithm's tree (default binomial)")
    p.add_argument(
        "-o", "--output", default=None, help="folder for the files, mpich-env.txt / ompi-env.txt and USAGE.txt"
    )
    p.add_argument("--force", action="store_true", help="write into a folder that is not empty")


def run(args: argparse.Namespace) -> int:
    op_list = None if args.op is None else split_list(args.op)
    for o in op_list or ():
        ops.get(o)  # an unknown one named with the valid ones
    formats = list(ORDER_FORMATS) if args.format is None else [f.strip() for f in args.format.split(",") if f.strip()]
    for f in formats:
        if f not in FORMATS:
            raise InputError(f"unknown --format {f!r} (choose from: {', '.join(FORMATS)})")
    if not formats:
        raise InputError(f"--format: give at least one of {', '.join(FORMATS)}")
    if args.output is None and not args.json and (args.format is None or len(formats) > 1):
        raise InputError("give -o FOLDER (all files), --format NAME (one file on stdout) or --json")
    if args.libmpi is not None and "mpich-json" not in formats:
        raise InputError("--libmpi applies to --format mpich-json only")
    for flag in ("--layout", "--sizes"):
        if getattr(args, flag[2:]) is not None and not set(ALGORITHM_FORMATS) & set(formats):
            names = f"{', '.join(ALGORITHM_FORMATS[:-1])} and {ALGORITHM_FORMATS[-1]}"
            raise InputError(f"{flag} applies to --format {names} only")
    if op_list is not None and len(op_list) > 1 and set(formats) - set(ALGORITHM_FORMATS):
        raise InputError(f"--op {','.join(op_list)}: the rank order is chosen for one operation; give one")
    chosen = [f for f in ALGORITHM_FORMATS if f in formats]
    if chosen and args.sizes is None:
        raise InputError(f"--sizes is required with --format {chosen[0]} (message sizes per rank, e.g. 16K,64K,256K)")
    sizes = None if args.sizes is None else parse_sizes(args.sizes, "--sizes")
    size = int(parse_size(args.size, "--size"))
    if args.output:
        check_output(args.output, force=args.force, folder=True)
    profile = Profile.load(args.profile)
    layout = None if args.layout is None else parse_layout(args.layout, profile.type_names)
    algorithms = AlgorithmRequest(ops=op_list, sizes=sizes, layout=layout, libmpi=args.libmpi)
    op = op_list[0] if op_list else ops.names()[0]  # the rank order's (the registry's first: bcast)
    ex = export(profile, formats, op=op, size=size, tree=args.tree, algorithms=algorithms)
    paths = write_export(ex, args.output, force=args.force) if args.output else {}
    if args.output:
        ex = ex.placed(args.output)
    if args.json:
        emit_json({**ex.to_dict(), "paths": paths})
    elif not args.output:
        print(ex.files[formats[0]], end="")
    else:
        print(ex.usage, end="")
        print(f"wrote {', '.join(paths.values())}")
    return 0
