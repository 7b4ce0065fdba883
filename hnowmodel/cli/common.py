"""What the ``hnow`` subcommands share: the MPI flags, JSON and table output (tables: :mod:`hnowmodel.tables`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..tables import print_table, table_text

__all__ = [
    "emit_json",
    "print_table",
    "table_text",
    "add_mpi_arguments",
    "add_mpi_choice",
    "add_output",
    "add_op_argument",
    "add_tree_argument",
    "add_variant_argument",
    "add_reduce_rate_argument",
    "launch_kwargs",
    "positive_int",
    "progress",
]


def emit_json(doc: Any) -> None:
    """Print one strict JSON document on stdout (the only thing a ``--json`` run prints there)."""
    json.dump(doc, sys.stdout, indent=2, allow_nan=False, default=_json_default)
    sys.stdout.write("\n")
    sys.stdout.flush()


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def add_mpi_arguments(p: argparse.ArgumentParser, np_required: bool = True, testbed: bool = True) -> None:
    """Flags every MPI-running subcommand shares: ``--np``, ``--testbed``, the launcher, ``--timeout``."""
    p.add_argument("--np", type=positive_int, required=np_required, help="number of MPI ranks")
    if testbed:
        p.add_argument(
            "--testbed",
            default=None,
            help="emulated testbed: 'paper' or a hnowmodel.testbed/1 file (default: plain MPI)",
        )
    p.add_argument("--launcher", default="mpiexec", help="MPI launcher: mpiexec (default), srun, or any command")
    p.add_argument("--launcher-args", default="", help="extra launcher arguments, e.g. '-ppn 1'")
    p.add_argument("--hostfile", default=None, help="hostfile for mpiexec (-f FILE)")
    p.add_argument(
        "--cluster",
        default=None,
        help="run on a virtual cluster (hnowmodel.cluster/1 file, 'demo' or 'demoslots'); brought up for the command "
        "unless it is up",
    )
    p.add_argument("--timeout", type=float, default=None, help="seconds before a hung MPI run is killed")
    add_mpi_choice(p)


def add_mpi_choice(p: argparse.ArgumentParser) -> None:
    """``--mpi auto|mpich|openmpi|intelmpi``: which MPI library runs the ranks."""
    p.add_argument(
        "--mpi",
        default=None,
        help="MPI library: mpich, openmpi, intelmpi (each in its own environment, made by 'hnow setup-openmpi' / "
        "'hnow setup-intelmpi') or auto (default: whatever mpiexec is found)",
    )


def launch_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The launcher keywords of the library functions, from the parsed MPI flags."""
    return {
        "launcher": args.launcher,
        "launcher_args": args.launcher_args,
        "hostfile": args.hostfile,
        "cluster": args.cluster,
        "timeout": args.timeout,
        "mpi": args.mpi,
        "progress": progress(args),
    }


def progress(args: argparse.Namespace) -> bool:
    """Show rank 0's progress lines on stderr unless ``--json``."""
    return not args.json


def add_output(p: argparse.ArgumentParser, default: str | None, what: str) -> None:
    """``-o/--output`` and ``--force`` (an existing output is never overwritten without it)."""
    p.add_argument("-o", "--output", default=default, help=what)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")


# One spelling of the same option in every command: ``--op`` and ``--tree`` (each an operation or tree, or a comma
# list where the command takes several); ``--ops``/``--trees`` stay accepted, as aliases, for users' scripts.
def add_op_argument(p: argparse.ArgumentParser, default: str | None, help: str) -> None:
    """``--op`` (alias ``--ops``): the operation(s), ``args.op``."""
    p.add_argument("--op", "--ops", dest="op", default=default, help=help)


def add_tree_argument(p: argparse.ArgumentParser, default: str | None, help: str) -> None:
    """``--tree`` (alias ``--trees``): the tree spec(s), ``args.tree`` (split by :mod:`hnowmodel.treespec`)."""
    p.add_argument("--tree", "--trees", dest="tree", default=default, help=help)


def add_types_argument(p: argparse.ArgumentParser) -> None:
    """``--types HOST=TYPE[,HOST=TYPE]`` or ``@file.json``: the node type of hosts the profile was not calibrated on
    (the ranks' hosts take their types by name: :func:`hnowmodel.jobs.checks.job_layout`)."""
    p.add_argument(
        "--types",
        default=None,
        help="node type of hosts the profile has not seen: HOST=TYPE[,HOST=TYPE] or @file.json (an object of host "
        "names and types); the profile's own hosts keep their calibrated types",
    )


def add_variant_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--variant NAME`` (every operation) or ``OP=NAME[,OP=NAME]`` (per operation), the same in every command;
    parsed by :func:`hnowmodel.options.parse_variants`. ``what``: what the variant is used for, and its default."""
    from ..options import VARIANT_FORM

    p.add_argument("--variant", default=None, help=f"model variant: {VARIANT_FORM}; {what}")


def add_reduce_rate_argument(p: argparse.ArgumentParser) -> None:
    """``--reduce-us-per-byte``: the reduction cost γ a user states for an operation that combines buffers
    (:func:`hnowmodel.options.parse_reduce_rate`; unset: the profile's measured one)."""
    from ..options import REDUCE_RATE_FORM

    p.add_argument(
        "--reduce-us-per-byte",
        default=None,
        help=f"an operation that combines buffers: γ, {REDUCE_RATE_FORM} (default: the profile's measured γ)",
    )
