"""``hnow import imb|osu FILE``: read an outside benchmark's output (IMB-MPI1, OSU micro-benchmarks); with
``--profile`` its ping-pong rows are checked against the profile's prediction. Each row shows its size as the
operation registry's ``m`` (``m_bytes``: :func:`hnowmodel.outside.registry_m`) and its buffers' datatype."""

from __future__ import annotations

import argparse

from ..outside import KINDS, load_outside
from .common import emit_json, positive_int, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = "read IMB-MPI1 or OSU micro-benchmark output: ping-pong rows checked against a profile, collectives as a table"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", choices=KINDS, help="imb (IMB-MPI1's output) or osu (osu_latency, osu_bcast, ...)")
    p.add_argument("file", help="the benchmark's text output")
    p.add_argument("--profile", default=None, help="check the ping-pong rows against this profile")
    p.add_argument(
        "--layout", default=None, help="the ping-pong ranks' two node types, e.g. fast,slow (default: the profile's)"
    )
    p.add_argument("--np", type=positive_int, default=None, help="osu: the process count it ran on (not in its output)")


def run(args: argparse.Namespace) -> int:
    res = load_outside(args.suite, args.file, profile=args.profile, layout=args.layout, np=args.np)
    if args.json:
        emit_json(res.to_dict())
        return 0
    what = res.header.get("suite") or res.header.get("title") or args.suite
    print(f"# {what}: {len(res.rows)} rows from {res.source}")
    if res.checks:
        c0 = res.checks[0]
        print(f"# ping-pong (one way) against the profile: {c0.pair[0]} -> {c0.pair[1]}, variant {c0.variant}")
        print_table(
            [
                {
                    "size": c.size,
                    "measured_us": c.measured_us,
                    "predicted_us": c.predicted_us,
                    "error_%": c.error_pct,
                }
                for c in res.checks
            ]
        )
    rows = res.collective_rows() if res.checks else res.rows
    if rows:
        print_table(
            [
                {
                    "benchmark": r.benchmark,
                    "op": r.op or "-",
                    "np": r.np,
                    "size": r.size,
                    "m_bytes": r.m_bytes,
                    "datatype": r.datatype or "-",
                    "t_us": r.t_us,
                    "t_min_us": r.t_min_us,
                    "t_max_us": r.t_max_us,
                }
                for r in rows
            ]
        )
    return 0
