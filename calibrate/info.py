"""The ``info`` task: which MPI library runs, on how many ranks, on which hosts (a launcher check).

``python -m calibrate info`` (or ``hnow info --np N``) answers the first questions on a new cluster: does the
launcher start the ranks, which MPI library did mpi4py load, and which hosts did the ranks land on. Under Intel MPI
also its fabric, the PMI library it was given (``I_MPI_PMI_LIBRARY``: Slurm's, under ``srun``) and the tuning file it
loaded (what its start-up report, ``I_MPI_DEBUG=6``, says: :func:`prepare` asks for that report and holds rank 0's
stdout, where Intel MPI prints it, until :func:`main` reads it).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from typing import Any

from .runtime import node_name

__all__ = ["HELP", "add_arguments", "prepare", "main", "library", "version_text", "intel_startup"]

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


def prepare(args: argparse.Namespace) -> tuple[Any, int] | None:
    """Before ``MPI_Init``: ask Intel MPI (the other libraries ignore ``I_MPI_*``) for its start-up report
    (``I_MPI_DEBUG=6``), which its rank 0 prints on stdout during ``MPI_Init`` (2021.16 ignores
    ``I_MPI_DEBUG_OUTPUT``): rank 0 (``PMI_RANK``, set by hydra) sends its stdout into a temporary file until
    :func:`main` reads it. The protocol's lines go to stderr, so none is held back. None, and nothing set, when the
    user set ``I_MPI_DEBUG`` (their report goes where they said) or on the other ranks."""
    if "I_MPI_DEBUG" in os.environ:
        return None
    os.environ["I_MPI_DEBUG"] = "6"
    if os.environ.get("PMI_RANK") != "0":
        return None
    sys.stdout.flush()
    held = tempfile.TemporaryFile()
    saved = os.dup(1)
    os.dup2(held.fileno(), 1)
    return held, saved


def intel_startup(text: str) -> dict[str, Any]:
    """What Intel MPI's start-up report (``I_MPI_DEBUG=6``) says: ``provider`` (libfabric's), ``tuning_file`` (the
    one it loaded), '' where it does not say.

    >>> intel_startup('[0] MPI startup(): libfabric provider: tcp\\n[0] MPI startup(): Load tuning file: "/x/t.dat"')
    {'provider': 'tcp', 'tuning_file': '/x/t.dat'}
    """
    provider = re.search(r"libfabric provider:\s*(\S+)", text)
    tuning = re.search(r"Load tuning file:\s*\"?([^\"\n]+?)\"?\s*$", text, re.MULTILINE)
    return {"provider": provider.group(1) if provider else "", "tuning_file": tuning.group(1) if tuning else ""}


def _startup_report(prepared: tuple[Any, int] | None) -> str:
    """Rank 0's stdout since :func:`prepare` (Intel MPI's start-up report), its stdout given back; what was not the
    report is written on, '' without one."""
    if prepared is None:
        return ""
    held, saved = prepared
    sys.stdout.flush()
    os.dup2(saved, 1)
    os.close(saved)
    held.seek(0)
    text = held.read().decode(errors="replace")
    held.close()
    rest = [ln for ln in text.splitlines(keepends=True) if "MPI startup()" not in ln]
    if rest:
        sys.stdout.write("".join(rest))
        sys.stdout.flush()
    return text


def main(args: argparse.Namespace, rt: Any, prepared: Any) -> dict[str, Any] | None:
    from mpi4py import MPI

    report = _startup_report(prepared)
    with rt.step("gather hosts"):
        hosts = rt.comm.gather(node_name(), root=0)
    with rt.step("barrier"):
        rt.comm.Barrier()
    if rt.rank != 0:
        return None
    doc: dict[str, Any] = {"ranks": rt.size, "hosts": hosts, "thread_level": MPI.Query_thread(), **library(MPI)}
    if "Intel(R) MPI" in doc["library"]:  # its fabric as set, and what its start-up report said
        doc["fabric"] = {k: os.environ.get(k, "") for k in ("I_MPI_FABRICS", "FI_PROVIDER", "FI_TCP_IFACE")}
        # the PMI client library it was told to load (Slurm's libpmi2 under srun), '' for its own PMI client
        doc["pmi_library"] = os.environ.get("I_MPI_PMI_LIBRARY", "")
        doc.update(intel_startup(report))
    doc["rows"] = [{"rank": r, "host": h} for r, h in enumerate(hosts)]
    return doc
