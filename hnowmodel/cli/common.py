"""Helpers shared by the ``hnow`` subcommands: common flags, JSON/table output, profile and layout loading."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InputError
from ..layout import parse_layout
from ..params import Profile
from ..sizes import parse_sizes

__all__ = [
    "emit_json",
    "print_table",
    "load_profile",
    "layout_arg",
    "sizes_arg",
    "positive_int",
    "add_mpi_arguments",
    "mpi_task_args",
    "OPS",
    "check_choice",
]

OPS = ("ptp", "bcast", "scatter", "gather")


def emit_json(doc: Any) -> None:
    """Print one JSON document on stdout (the only thing a ``--json`` run prints there)."""
    json.dump(doc, sys.stdout, indent=2, allow_nan=False, default=_json_default)
    sys.stdout.write("\n")
    sys.stdout.flush()


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.2f}" if abs(v) < 1e6 else f"{v:.4g}"
    return str(v)


def print_table(
    rows: Sequence[dict], columns: Sequence[str] | None = None, file=None, title: str | None = None
) -> None:
    """Print rows (dicts) as an aligned text table; numeric columns are right-aligned.

    >>> print_table([{"size": 0, "time_us": 170.0}])
    size  time_us
       0   170.00
    """
    file = file or sys.stdout
    if title:
        print(title, file=file)
    if not rows:
        print("(no rows)", file=file)
        return
    columns = list(columns or rows[0].keys())
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), (int, float)) for r in rows) for c in columns]
    head = "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(columns, widths, numeric, strict=True))
    print(head.rstrip(), file=file)
    for row in cells:
        line = "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(row, widths, numeric, strict=True))
        print(line.rstrip(), file=file)


def load_profile(spec: str) -> Profile:
    """``--profile FILE|paper`` -> Profile (errors name the file and field)."""
    return Profile.load(spec)


def layout_arg(spec: str | None, profile: Profile, n: int | None = None) -> tuple[str, ...]:
    """``--layout`` -> tuple of type names; falls back to the profile's calibration layout; checks the length."""
    if spec is None:
        if not profile.layout:
            raise InputError("--layout is required (the profile records no calibration layout)")
        layout = profile.layout
    else:
        layout = parse_layout(spec, profile.type_names)
    if n is not None and len(layout) != n:
        from ..errors import LayoutError

        raise LayoutError(f"--layout has {len(layout)} ranks but {n} were asked for")
    return layout


def sizes_arg(text: str) -> list[int]:
    """``--sizes`` -> list of sizes in bytes (``0,1K,4K`` or ``0..64K``)."""
    return parse_sizes(text)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def check_choice(value: str, choices: Iterable[str], what: str) -> str:
    """Raise InputError naming the valid choices unless ``value`` is one of them."""
    choices = list(choices)
    if value not in choices:
        raise InputError(f"unknown {what} {value!r} (choose from: {', '.join(choices)})")
    return value


def add_mpi_arguments(p: argparse.ArgumentParser, np_required: bool = True) -> None:
    """Flags every MPI-running subcommand shares: ``--np``, ``--testbed``, ``--launcher``, ``--timeout``."""
    p.add_argument("--np", type=positive_int, required=np_required, help="number of MPI ranks")
    p.add_argument(
        "--testbed",
        default=None,
        help="emulated testbed: 'paper' or a hnowmodel.testbed/1 JSON file (default: plain MPI, no emulation)",
    )
    p.add_argument(
        "--launcher", default="mpiexec", help="MPI launcher command, e.g. 'mpiexec' or 'srun' (default mpiexec)"
    )
    p.add_argument("--launcher-args", default="", help="extra launcher arguments, e.g. '-f hosts.txt'")
    p.add_argument("--timeout", type=float, default=None, help="seconds before a hung MPI run is killed")


def mpi_task_args(args: argparse.Namespace) -> list[str]:
    """The ``python -m calibrate`` flags that forward the shared MPI options."""
    out: list[str] = []
    if getattr(args, "testbed", None):
        out += ["--testbed", args.testbed]
    return out
