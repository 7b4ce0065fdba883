"""``hnow slurm-script``: write a ready ``sbatch`` script that calibrates the nodes it allocates."""

from __future__ import annotations

import argparse
import os
import sys

from ..io import atomic_write, check_output
from ..jobs.batch import slurm_script
from .common import emit_json

__all__ = ["HELP", "add_arguments", "run"]

HELP = "write a Slurm batch script that calibrates the nodes it allocates (sbatch it)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", "-N", type=int, required=True, help="nodes to allocate and calibrate")
    p.add_argument("--np", type=int, default=None, help="ranks in all (default: --ranks-per-node on every node)")
    p.add_argument(
        "--ranks-per-node",
        type=int,
        default=2,
        help="ranks on every node (default 2: shared memory and each node's NIC are calibrated too)",
    )
    p.add_argument("--time", type=int, default=30, help="time limit in minutes (default 30)")
    p.add_argument("--partition", default=None, help="Slurm partition")
    p.add_argument("--account", default=None, help="Slurm account")
    p.add_argument("--layout", default="auto", help="--layout of the calibration (default auto)")
    p.add_argument("--profile-out", required=True, help="where the job writes the profile (made absolute)")
    p.add_argument("-o", "--output", default=None, help="write the script here (default: print it)")
    p.add_argument("--force", action="store_true", help="overwrite the script, and let the job overwrite the profile")


def run(args: argparse.Namespace) -> int:
    profile = os.path.abspath(args.profile_out)
    check_output(profile, force=args.force, flag="--profile-out")
    if args.output:
        check_output(args.output, force=args.force)
    text = slurm_script(
        nodes=args.nodes,
        ntasks=args.np,
        ranks_per_node=args.ranks_per_node,
        output=profile,
        time_min=args.time,
        partition=args.partition,
        account=args.account,
        layout=args.layout,
        force=args.force,
    )
    if args.output:
        path = atomic_write(args.output, text, overwrite=args.force)
        os.chmod(path, os.stat(path).st_mode | 0o100)
    if args.json:
        emit_json({"script": text, "path": args.output, "profile": profile})
    elif not args.output:
        sys.stdout.write(text)
    else:
        print(f"wrote {args.output}: sbatch it; the profile goes to {profile}")
    return 0
