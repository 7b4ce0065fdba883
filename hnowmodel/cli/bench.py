"""``hnow bench NAME --np N``: the seeds' microbenchmarks (docs/benchmarks.md;
registry :mod:`hnowmodel.bench_registry`).

OSU-style table per benchmark (units in the column names: ``_us`` µs, ``_MBps`` 10^6 bytes/s, ``_pct`` percent);
``--json`` prints ``{"rows": [...], ...}``; ``-o DIR`` writes ``bench_NAME.csv``, ``bench_NAME.png`` and
``bench.json``; ``hnow bench list`` (or no name) lists them. ``--profile-out`` writes a copy of ``--profile-in``
with the measured extensions (queue costs, hot-spot fan-in) merged in.

``hnow bench imb --np N --profile P [--mpi intelmpi|mpich] [--cluster SPEC] [--tree native|native:ALGO] [--ops OPS]``:
the Intel MPI Benchmarks (the wheel's ``IMB-MPI1``: each operation's benchmark, Bcast ... Alltoall, and PingPong;
``--sizes`` are each operation's ``m``, which IMB's ``#bytes`` is) with the algorithm ``--tree`` pins,
IMB's ``t_max`` beside hnow's measured and predicted times of the same algorithm (``hm.imb_compare``,
docs/intel-mpi.md); ``-o DIR`` writes ``imb_compare.csv``, ``imb_compare.md`` and IMB's output ``imb.txt``.
"""

from __future__ import annotations

import argparse

from ..bench_registry import BENCHMARKS, OPTIONS
from ..errors import InputError
from ..ops import get as get_op
from ..ops import names as op_names
from ..sizes import format_size, parse_sizes
from ..tables import table_text
from .common import (
    add_mpi_arguments,
    add_op_argument,
    add_tree_argument,
    add_types_argument,
    add_variant_argument,
    emit_json,
    launch_kwargs,
    positive_int,
    print_table,
)

__all__ = ["HELP", "add_arguments", "run"]

HELP = (
    "the seeds' microbenchmarks: latency, bandwidth, queues, hot spot, ... ('hnow bench list'); 'imb': IMB beside hnow"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default=None, help="benchmark name(s), comma-separated, 'all', or 'list'")
    add_mpi_arguments(p, np_required=False)
    p.add_argument("--layout", default=None, help="node type of each rank (overrides the testbed's ranks)")
    p.add_argument("--profile", default=None, help="profile (FILE or 'paper') for hotspot's gather prediction")
    add_types_argument(p)
    p.add_argument("--sizes", default=None, help="message sizes in bytes, e.g. 0,1K,4K or 0..64K")
    p.add_argument("--iters", type=positive_int, default=None, help="operations timed per sample")
    p.add_argument("--min-reps", type=positive_int, default=None, help="fewest samples per point (default 5)")
    p.add_argument("--max-reps", type=positive_int, default=None, help="most samples (default 30; 10 on a testbed)")
    p.add_argument("--window", type=positive_int, default=None, help="bandwidth: queue size Q (default 64; 8 testbed)")
    p.add_argument("--count", type=positive_int, default=None, help="messages per sample (streaming N, default 160)")
    p.add_argument("--buffers", default=None, help="buffer-reuse: FIFO buffer counts N, e.g. 1,4,16,64")
    p.add_argument("--reuse", default=None, help="buffer-reuse: reuse percentages R, e.g. 100,50,0")
    p.add_argument("--slaves", default=None, help="hotspot: slave counts k (default 1..np-1)")
    add_variant_argument(p, "hotspot: the gather variant, paper or link (default link)")
    p.add_argument("--lengths", default=None, help="queue benchmarks: queue lengths L, e.g. 0,10,100,1000")
    p.add_argument("--fractions", default=None, help="posted-queue: traversed percentages f, e.g. 0,50,100")
    p.add_argument("--intervals", default=None, help="cpu-availability: poll intervals / compute loops, µs")
    p.add_argument("--work", type=float, default=None, help="cpu-availability polling: computation per sample, µs")
    p.add_argument("--methods", default=None, help="cpu-availability: polling,bandwidth-loop (default both)")
    p.add_argument("--quick", action="store_true", help="tiny settings (smoke tests)")
    p.add_argument("-o", "--out", default=None, help="folder for bench_NAME.csv, bench_NAME.png and bench.json")
    p.add_argument("--profile-in", default=None, help="profile to copy the measured extensions into")
    p.add_argument("--profile-out", default=None, help="write --profile-in (or --profile) plus extensions here")
    p.add_argument("--force", action="store_true", help="overwrite existing outputs")
    imb_ops = [o for o in op_names() if get_op(o).imb]  # the operations IMB-MPI1 has a benchmark of
    add_op_argument(
        p, None, f"imb: operations, of {','.join(imb_ops)} (default: those --tree names an algorithm of, under --mpi)"
    )
    add_tree_argument(p, "native", "imb: native (the library's default) or native:ALGO (pinned)")
    p.add_argument("--reps", type=positive_int, default=7, help="imb: hnow's repetitions per size (default 7)")
    p.add_argument("--no-pingpong", action="store_true", help="imb: leave out IMB's PingPong")
    p.add_argument("--method", default="fig2", help="imb: hnow's timing, fig2 (IMB's loop, default) or sync")


def run(args: argparse.Namespace) -> int:
    from ..jobs import bench

    if args.name in (None, "list"):
        rows = [{"name": b.name, "what": b.summary} for b in BENCHMARKS.values()]
        emit_json({"rows": rows}) if args.json else print_table(rows, ["name", "what"])
        return 0
    if args.np is None:
        raise InputError("--np is required (number of MPI ranks)")
    if args.name == "imb":
        return _imb(args)
    res = bench(
        args.name,
        np=args.np,
        testbed=args.testbed,
        options={k: getattr(args, k) for k in OPTIONS},
        quick=args.quick,
        output=args.out,
        force=args.force,
        profile_in=args.profile_in or args.profile,
        profile_out=args.profile_out,
        **launch_kwargs(args),
    )
    if args.json:
        emit_json(res.to_dict())
        return 0
    run = res.run
    where = f"emulated testbed {run['testbed']} (times / {run['time_scale']:g})" if run["emulated"] else "plain MPI"
    print(f"# hnow bench: {run['library_version']}; {run['np']} ranks; {where}")
    print("# units: _us microseconds, _MBps 10^6 bytes/s, _pct percent; min/max over samples, median reported")
    for name in dict.fromkeys(r["bench"] for r in res.rows):
        rows = [r for r in res.rows if r["bench"] == name]
        cols = [c for c in BENCHMARKS[name].columns if any(c in r for r in rows)]
        table = [
            {c: (format_size(r[c]) if c == "size" and isinstance(r.get(c), int) else r.get(c, "")) for c in cols}
            for r in rows
        ]
        print(f"\n# {name}: {BENCHMARKS[name].summary}")
        if res.benchmarks.get(name, {}).get("notes"):
            print(f"# on this testbed: {res.benchmarks[name]['notes']}")
        print_table(table, cols)
    for k, v in res.extensions.items():
        main = {kk: vv for kk, vv in v.items() if kk.endswith(("per_entry", "per_slave"))}
        if main:
            print(f"\n# extensions.{k}: " + ", ".join(f"{kk}={vv:.4g}" for kk, vv in main.items()))
    for path in res.outputs:
        print(f"# wrote {path}")
    return 0


def _imb(args: argparse.Namespace) -> int:
    """``hnow bench imb``: IMB-MPI1 beside hnow's measured and predicted times (one library call)."""
    from ..jobs import imb_compare

    if args.profile is None:
        raise InputError("hnow bench imb: --profile is required (the profile the times are predicted with)")
    if args.testbed is not None:
        raise InputError("hnow bench imb: IMB-MPI1 runs on real MPI (one host or --cluster), not on --testbed")
    res = imb_compare(
        args.profile,
        np=args.np,
        ops=args.op,
        sizes=parse_sizes(args.sizes or "64K,128K,256K"),
        tree=args.tree,
        iters=args.iters or 20,
        pingpong=not args.no_pingpong,
        reps=args.reps,
        method=args.method,
        layout=args.layout,
        types=args.types,
        output=args.out,
        force=args.force,
        **launch_kwargs(args),
    )
    if args.json:
        emit_json(res.to_dict())
        return 0
    print(f"# IMB-MPI1 beside hnow: {res.library}, {args.tree}, {args.np} ranks")
    print("# " + " ".join(res.command))
    print("# _us microseconds; *_vs_*_% = 100*(x - reference)/reference; pred_imb_us: empty token buckets (IMB's loop)")
    print_table(res.table_rows())
    if res.pingpong:
        print("\n# PingPong (one way) beside the profile")
        print(table_text([c.to_dict() for c in res.pingpong]))
    for path in res.outputs:
        print(f"# wrote {path}")
    return 0
