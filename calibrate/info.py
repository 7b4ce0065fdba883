"""The ``info`` task: which MPI library runs, on how many ranks, on which hosts (a launcher check).

``python -m calibrate info`` (or ``hnow info --np N``) answers the first questions on a new cluster: does the
launcher start the ranks, which MPI library did mpi4py load, and which hosts did the ranks land on.
"""

from __future__ import annotations

import argparse
from typing import Any

from .runtime import node_name

__all__ = ["HELP", "add_arguments", "main", "library", "version_text"]

HELP = "report the MPI library, the ranks and their hosts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--testbed", default=None, help="also report the emulated testbed's layout (FILE or 'paper')")


def version_text(MPI: Any) -> str:
    """``MPI_Get_library_version`` without its padding (Open MPI's ends in a NUL byte, MPICH's in blanks)."""
    return MPI.Get_library_version().replace("\x00", "").strip()


def library(MPI: Any) -> dict[str, Any]:
    """The MPI library mpi4py is bound to: first line of MPI_Get_library_version, vendor and standard version."""
    text = version_text(MPI)
    vendor, version = MPI.get_vendor()
    return {
        "library": text.splitlines()[0].strip() if text else "unknown",
        "vendor": vendor,
        "vendor_version": ".".join(str(v) for v in version),
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
    }


def main(args: argparse.Namespace, rt: Any, prepared: Any) -> dict[str, Any] | None:
    from mpi4py import MPI

    with rt.step("gather hosts"):
        hosts = rt.comm.gather(node_name(), root=0)
    with rt.step("barrier"):
        rt.comm.Barrier()
    if rt.rank != 0:
        return None
    doc: dict[str, Any] = {"ranks": rt.size, "hosts": hosts, "thread_level": MPI.Query_thread(), **library(MPI)}
    doc["rows"] = [{"rank": r, "host": h} for r, h in enumerate(hosts)]
    return doc
