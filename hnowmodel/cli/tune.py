"""``hnow tune``: from one profile (or a calibration made first) to the files each MPI library reads for the job
shapes given (``--shapes 12x1,4x3``), with the rank order, ``env.sh``, a Slurm fragment and a report; ``--verify``
measures the default and the tuned settings on the ranks the command runs on (docs/tune.md)."""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError
from ..sizes import format_size, parse_sizes
from ..tuning import DEFAULT_SIZES, tune
from ..tuning.verify import VERIFY_MAX_US
from .common import add_mpi_arguments, add_op_argument, add_output, emit_json, launch_kwargs, positive_int, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = (
    "choose each MPI library's algorithms and the rank order for the job shapes given, from one calibration; write "
    "the files the library reads, env.sh and a report (--verify: measure them against the library's default)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p, np_required=False, testbed=False)
    p.add_argument("--profile", default=None, help="profile JSON (default: calibrate first on the ranks given)")
    p.add_argument(
        "--shapes",
        default=None,
        help="job shapes: HOSTSxRANKS_PER_HOST (host types from the calibrated hosts, cycled in their order), "
        "'calibrated' or @HOSTFILE (hosts the profile knows, with slots); comma list (default: the calibrated one; "
        "with --verify: the ranks it runs on)",
    )
    p.add_argument("--layout", default=None, help="node type of each rank of the job (calibration, --verify)")
    add_op_argument(p, None, "operations, comma-separated (default: every one the library has algorithms for)")
    p.add_argument(
        "--sizes",
        default=None,
        help=f"message sizes in bytes per rank (default {','.join(format_size(m) for m in DEFAULT_SIZES)})",
    )
    p.add_argument("--verify", action="store_true", help="measure the default and the tuned settings on these ranks")
    p.add_argument("--reps", type=positive_int, default=5, help="--verify: repetitions per setting (default 5)")
    p.add_argument(
        "--verify-max-us",
        type=float,
        default=VERIFY_MAX_US,
        help=f"--verify: leave unmeasured a size whose one run hnow predicts longer than this, µs (default "
        f"{VERIFY_MAX_US:.0f}: each setting runs 16 times; 0: measure every size)",
    )
    p.add_argument("--calibrate-sizes", default=None, help="sizes for the calibration (default: its own)")
    p.add_argument(
        "--quick", action="store_true", help="the calibration made first with fewer sizes and repetitions (demos)"
    )
    add_output(p, None, "folder for the files: <shape>/<library>/..., the report tune.* (refused if not empty)")


def run(args: argparse.Namespace) -> int:
    if args.np is None and (args.profile is None or args.verify):
        raise InputError("--np is required to calibrate first or to --verify (the number of MPI ranks)")
    kw = launch_kwargs(args)
    if args.np is not None:
        kw["np"] = args.np
    res = tune(
        args.profile,
        shapes=args.shapes,
        ops=args.op,
        sizes=DEFAULT_SIZES if args.sizes is None else parse_sizes(args.sizes, "--sizes"),
        layout=args.layout,
        verify=args.verify,
        reps=args.reps,
        calibrate_sizes=args.calibrate_sizes,
        quick=args.quick,
        verify_max_us=args.verify_max_us,
        output=args.output,
        force=args.force,
        **kw,
    )
    if args.json:
        for w in res.warnings:  # the progress lines that say it are off with --json
            print(w, file=sys.stderr)
        emit_json(res.to_dict())
        return 0
    cols = ["shape", "library", "op", "size", "default", "chosen", "predicted_gain_pct"]
    if args.verify:
        cols += ["measured_gain_pct", "measured_gain_min_pct", "measured_gain_max_pct"]
    table = [{**r.to_dict(), "size": format_size(r.size)} for r in res.rows]
    print_table(table, cols, title=f"hnow tune (profile: {res.profile_source}; gains in % of the default's time)")
    for n in res.notes:
        print(f"note: {n}")
    if res.paths:
        k = len(res.paths) - 1
        print(f"wrote {k} folder{'s' if k > 1 else ''} (<shape>/<library>: files, env.sh, job.sbatch) and the report:")
        rep = res.paths["report"]  # tune.png only when a row has a gain to draw
        print("  " + ", ".join(rep[k] for k in ("csv", "md", "png", "json") if k in rep))
    return 0
