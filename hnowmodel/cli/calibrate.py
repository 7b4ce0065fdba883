"""``hnow calibrate``: measure the model's parameters under MPI, write the profile, print the fit report."""

from __future__ import annotations

import argparse

from .common import add_mpi_arguments, add_output, emit_json, launch_kwargs

__all__ = ["HELP", "add_arguments", "run"]

HELP = "measure Sc/Sm/Rc/Rm per node type and Xc/Xm under MPI and write a profile"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p)
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast,fast,slow,… , @file or auto")
    p.add_argument("--sizes", default=None, help="message sizes (default 0..1M plain, 0..8K emulated)")
    p.add_argument("--network", default=None, help="take X from the network: bandwidth_MBps=…,latency_us=…")
    p.add_argument(
        "--regime", default="auto", help="with a protocol switch: which side's fit to use (auto, below, above)"
    )
    p.add_argument("--precision", type=float, default=0.025, help="relative CI of the median to stop at (0.025)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument(
        "--kernels",
        default="auto",
        help="real MPI: c (C timing kernels), python, or auto (default: C when the MPI installation's mpicc is found)",
    )
    p.add_argument("--rounds", type=int, default=None, help="real MPI: interleaved measurement rounds (default 9)")
    p.add_argument(
        "--gap-us",
        type=float,
        default=None,
        help="real MPI: idle gap between isolated messages, µs "
        "(default 10; the same as the collectives' common-start lead)",
    )
    add_output(
        p,
        "profile.json",
        "where to write the profile (default profile.json); each finished step goes to OUTPUT.steps/ until then, "
        "and the same command again continues from them",
    )


def run(args: argparse.Namespace) -> int:
    from ..fitreport import fit_report
    from ..jobs import calibrate

    profile = calibrate(
        args.np,
        testbed=args.testbed,
        layout=args.layout,
        sizes=args.sizes,
        network=args.network,
        regime=args.regime,
        precision=args.precision,
        quick=args.quick,
        kernels=args.kernels,
        rounds=args.rounds,
        gap_us=args.gap_us,
        output=args.output,
        force=args.force,
        **launch_kwargs(args),
    )
    if args.json:
        emit_json(profile.to_dict())
        return 0
    print("\n".join(fit_report(profile)))
    print(f"wrote {args.output}")
    return 0
