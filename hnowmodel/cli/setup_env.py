"""What ``hnow setup-openmpi`` and ``hnow setup-intelmpi`` share: one set-up path for every MPI library that lives in
an environment of its own (:func:`hnowmodel.jobs.mpienv.setup_library`)."""

from __future__ import annotations

import argparse
import sys

from ..jobs.mpienv import MPI_LIBRARIES, library_venv, setup_library
from .common import emit_json

__all__ = ["help_text", "add_setup_arguments", "run_setup"]


def help_text(name: str) -> str:
    """The one-line help of ``hnow setup-NAME``."""
    lib = MPI_LIBRARIES[name]
    wheel = lib.requirement.split("=")[0].split(">")[0]
    return f"create (or check) the virtual environment with the {wheel} wheel that --mpi {name} uses"


def add_setup_arguments(p: argparse.ArgumentParser, name: str) -> None:
    lib = MPI_LIBRARIES[name]
    p.add_argument(
        "--venv",
        default=None,
        help=f"where (default ${lib.venv_var}, else a folder under ~/.local/share/hnowmodel named after this "
        f"Python); --mpi {name} looks there, so set that variable when you choose another place",
    )
    p.add_argument("--force", action="store_true", help="rebuild it even when it is complete")


def run_setup(args: argparse.Namespace, name: str) -> int:
    lib = MPI_LIBRARIES[name]
    say = None if args.json else (lambda line: print(f"[setup-{name}] {line}", file=sys.stderr, flush=True))
    info = setup_library(name, args.venv, force=args.force, progress=say)
    if args.json:
        emit_json(info)
        return 0
    verb = "created" if info["created"] else "already complete:"
    print(
        f"{verb} {info['venv']} ({lib.library} {info['version']}, mpi4py {info['mpi4py']}) in {info['seconds']:.1f} s"
    )
    if info["venv"] != str(library_venv(name)):
        print(f"--mpi {name} looks at {library_venv(name)}: set {lib.venv_var}={info['venv']} to use this one")
    print(f"use it with: hnow calibrate --np 2 --mpi {name}  (or any MPI command with --mpi {name})")
    return 0
