"""``hnow info --np N``: start N ranks and report the MPI library, the hosts and the launcher used."""

from __future__ import annotations

import argparse

from .common import add_mpi_arguments, emit_json, print_table
from .launch import run_mpi

__all__ = ["HELP", "add_arguments", "run"]

HELP = "check the MPI set-up: library, ranks and the host of each rank"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p, np_required=False)
    p.set_defaults(np=2)


def run(args: argparse.Namespace) -> int:
    doc = run_mpi(
        "info",
        [],
        args.np,
        launcher=args.launcher,
        launcher_args=args.launcher_args,
        timeout_s=args.timeout or 60.0,
        echo=not args.json,
    )
    if args.json:
        emit_json(doc)
        return 0
    print(f"MPI library : {doc['library']}")
    print(f"MPI standard: {doc['mpi_standard']}  ({doc['vendor']} {doc['vendor_version']})")
    print(f"ranks       : {doc['ranks']} on {len(set(doc['hosts']))} host(s)")
    print_table(doc["rows"])
    return 0
