"""``hnow export``: the rank order under which a native collective is fastest, as the files launchers read."""

from __future__ import annotations

import argparse

from .. import ops
from ..errors import InputError
from ..export import FORMATS, export_order, write_export
from ..params import Profile
from ..sizes import parse_size
from .common import emit_json

__all__ = ["HELP", "add_arguments", "run"]

HELP = "write the rank order that makes a native collective fastest: hydra hostfile, Open MPI rankfile, split keys"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", required=True, help="a profile calibrated on the hosts (it records rank, host, type)")
    p.add_argument("--op", default="bcast", help="bcast, scatter or gather (default bcast)")
    p.add_argument("--size", default="0", help="message size in bytes to optimise for (default 0)")
    p.add_argument("--tree", default="binomial", help="the native algorithm's tree shape (default binomial)")
    p.add_argument("--format", default=None, help=f"print one file: {', '.join(FORMATS)} (default: all into -o)")
    p.add_argument("-o", "--output", default=None, help="folder for hostfile, rankfile, keys.json and USAGE.txt")
    p.add_argument("--force", action="store_true", help="write into a folder that is not empty")


def run(args: argparse.Namespace) -> int:
    ops.get(args.op)
    if args.format is not None and args.format not in FORMATS:
        raise InputError(f"unknown --format {args.format!r} (choose from: {', '.join(FORMATS)})")
    if args.format is None and args.output is None and not args.json:
        raise InputError("give -o FOLDER (all files), --format NAME (one file on stdout) or --json")
    ex = export_order(Profile.load(args.profile), op=args.op, size=int(parse_size(args.size)), tree=args.tree)
    paths = write_export(ex, args.output, force=args.force) if args.output else {}
    if args.json:
        emit_json({**ex.to_dict(), "paths": paths})
    elif args.format is not None:
        print(ex.files[args.format], end="")
    else:
        print(ex.usage, end="")
        print(f"wrote {', '.join(paths.values())}")
    return 0
