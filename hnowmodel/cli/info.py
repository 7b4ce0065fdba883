"""``hnow info --np N``: start N ranks and report the MPI library, the hosts and the launcher used."""

from __future__ import annotations

import argparse

from .common import add_mpi_arguments, emit_json, launch_kwargs, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = "check the MPI set-up: library, ranks and the host of each rank"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p, np_required=False, testbed=False)
    p.set_defaults(np=2)


def run(args: argparse.Namespace) -> int:
    from ..jobs import info

    doc = info(args.np, **launch_kwargs(args))
    if args.json:
        emit_json(doc)
        return 0
    print(f"MPI library : {doc['library']}")
    print(f"MPI standard: {doc['mpi_standard']}  ({doc['vendor']} {doc['vendor_version']})")
    print(f"ranks       : {doc['ranks']} on {len(set(doc['hosts']))} host(s)")
    if "fabric" in doc:  # Intel MPI: the fabric it was given and what its start-up report said
        fab = doc["fabric"]
        provider = doc.get("provider") or fab.get("FI_PROVIDER") or "?"
        print(f"fabric      : {fab.get('I_MPI_FABRICS') or 'default'} (libfabric provider {provider})")
        print(f"tuning file : {doc.get('tuning_file') or 'not reported'}")
        pmi = doc.get("pmi_library")
        print(f"PMI         : {pmi + ' (I_MPI_PMI_LIBRARY)' if pmi else 'its own client'}")
    env = doc["mpi_env"]
    print(f"started by  : {env['launcher'] or args.launcher} {' '.join(env['launcher_args'])}".rstrip())
    print(f"ranks run   : {env['python']} -m calibrate")
    print_table(doc["rows"])
    return 0
