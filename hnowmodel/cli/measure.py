"""``hnow measure``: run bcast/scatter/gather for real (under MPI) over a tree or the MPI library's own, and time it.

The MPI side is ``python -m calibrate measure`` (:mod:`calibrate.collectives`, which documents the executor and
both timing methods); this module builds its command line, starts it with :func:`~hnowmodel.cli.launch.run_mpi`
and prints its rows. :func:`measure` is the one entry point that ``hnow compare`` and ``hnow demo`` use too.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import write_json_atomic
from ..options import MEASURE_OPS, NATIVE, TIMING_METHODS, check_ops, check_trees
from ..sizes import format_size
from ..trees import Tree, tree_names
from .common import add_mpi_arguments, check_choice, emit_json, print_table, sizes_arg
from .launch import run_mpi

__all__ = [
    "HELP",
    "add_arguments",
    "run",
    "measure",
    "resolve_method",
    "resolve_stat",
    "check_ops",
    "check_trees",
    "check_counts",
    "MEASURE_OPS",
    "METHODS",
    "NATIVE",
]

HELP = "run bcast/scatter/gather under MPI over a tree (or the MPI library's own: native) and time it (µs)"
METHODS = TIMING_METHODS
#: ``--method auto``: barrier-free synchronised timing on the emulated testbed (its barrier is emulated too and
#: adds noise at small sizes), the paper's Figure 2 on plain MPI (a single cold collective on ranks that
#: outnumber the cores pays OS wake-ups that a hot loop does not; see calibrate.collectives).
AUTO = {"testbed": "sync", "plain": "fig2"}
STATS = ("median", "min")
#: ``--stat auto``: the minimum over repetitions on the emulated testbed (as the paper reports: the emulation's
#: only noise is delay - late wake-ups under load - so the minimum is the least disturbed run), the median on
#: plain MPI (Figure 2's barrier subtraction can err low as well as high there).
AUTO_STAT = {"testbed": "min", "plain": "median"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p)
    p.add_argument("--layout", default=None, help="node type of each rank (overrides the testbed's ranks)")
    p.add_argument("--op", default="bcast", help="operation(s), comma-separated: bcast, scatter, gather")
    p.add_argument(
        "--tree", default="binomial", help=f"tree name(s), comma-separated: {', '.join(tree_names())}, native"
    )
    p.add_argument("--sizes", default="0,1K,4K,16K", help="message sizes in bytes (per rank for scatter/gather)")
    p.add_argument("--profile", default=None, help="profile for trees that need one (hierarchical, fnf, optimal)")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--reps", type=int, default=7, help="repetitions of each timing method (default 7)")
    p.add_argument("--iters", type=int, default=None, help="collectives per Figure-2 loop (default 50; 2 on a testbed)")
    p.add_argument(
        "--method",
        default="auto",
        help="timing method behind measured_us/min/median/max: fig2 (paper's Figure 2), sync (synchronised "
        "clocks, no barrier) or auto (default: sync on a testbed, fig2 on plain MPI); both are in every row",
    )
    p.add_argument(
        "--stat",
        default="auto",
        help="measured_us = median or min over repetitions; auto (default): min on a testbed (as the paper), "
        "median on plain MPI",
    )
    _add_reorder(p)


def _add_reorder(p: argparse.ArgumentParser) -> None:
    try:
        from ..search import rank_order  # noqa: F401
    except ImportError:
        return
    p.add_argument(
        "--reorder",
        action="store_true",
        help="also run with the rank order hnowmodel.search.rank_order picks (needs --profile) and report the gain",
    )


def check_counts(args: argparse.Namespace) -> None:
    """Validate --reps/--iters/--root and resolve --method/--stat ``auto`` (shared with ``hnow compare``)."""
    if args.iters is None:
        args.iters = 2 if args.testbed else 50
    for flag in ("reps", "iters"):
        if getattr(args, flag) < 1:
            raise InputError(f"--{flag} must be >= 1, got {getattr(args, flag)}")
    if args.root < 0 or args.root >= args.np:
        raise InputError(f"--root {args.root} is not a rank in 0..{args.np - 1}")
    args.method = resolve_method(args.method, args.testbed)
    args.stat = resolve_stat(args.stat, args.testbed)


def resolve_method(method: str, testbed: str | None) -> str:
    """``auto`` -> sync on a testbed, fig2 on plain MPI; InputError for an unknown method."""
    check_choice(method, (*METHODS, "auto"), "timing method (--method)")
    if method == "auto":
        return AUTO["testbed" if testbed else "plain"]
    return method


def resolve_stat(stat: str, testbed: str | None) -> str:
    """``auto`` -> min on a testbed, median on plain MPI; InputError for an unknown statistic."""
    check_choice(stat, (*STATS, "auto"), "statistic (--stat)")
    return AUTO_STAT["testbed" if testbed else "plain"] if stat == "auto" else stat


def measure(
    np: int,
    ops: Sequence[str],
    trees: Sequence[str] | dict[str, Tree | None],
    sizes: Sequence[int],
    *,
    testbed: str | None = None,
    layout: str | Sequence[str] | None = None,
    profile: str | None = None,
    root: int = 0,
    reps: int = 7,
    iters: int = 4,
    method: str = "fig2",
    both: bool = True,
    stat: str = "median",
    keys: Sequence[int] | None = None,
    launcher: str = "mpiexec",
    launcher_args: str = "",
    timeout_s: float | None = None,
    echo: bool = True,
) -> dict[str, Any]:
    """Run ``python -m calibrate measure`` on ``np`` ranks and return its document (rows in µs).

    ``trees`` is a list of names, or a mapping name -> pre-built :class:`Tree` (``None`` for ``native``), which
    is passed to the job as a file so trees built from a profile here run exactly as predicted. ``method`` picks
    which timing method fills ``measured_us``/``min_us``/``median_us``/``max_us``; ``both=False`` runs only it.
    ``stat`` (median or min over repetitions; the paper reports the minimum) fills ``measured_us``.
    """
    methods = [method, *[m for m in METHODS if m != method and both]]
    argv = ["--op", ",".join(ops), "--sizes", ",".join(str(int(s)) for s in sizes), "--root", str(root)]
    argv += ["--reps", str(reps), "--iters", str(iters), "--methods", ",".join(methods)]
    if not echo:
        argv.append("--quiet")
    if testbed:
        argv += ["--testbed", str(testbed)]
    if layout is not None:
        argv += ["--layout", layout if isinstance(layout, str) else ",".join(layout)]
    if profile:
        argv += ["--profile", str(profile)]
    if keys is not None:
        argv += ["--keys", ",".join(str(int(k)) for k in keys)]
    with tempfile.TemporaryDirectory(prefix="hnow-trees-") as tmp:
        if isinstance(trees, dict):
            doc = {
                "trees": [
                    {"spec": name, **({"tree": t.to_dict()} if t is not None else {})} for name, t in trees.items()
                ]
            }
            path = Path(tmp) / "trees.json"
            write_json_atomic(path, doc)
            argv += ["--trees-file", str(path)]
        else:
            argv += ["--tree", ",".join(trees)]
        n_runs = len(ops) * len(trees) * max(1, len(sizes))
        timeout = timeout_s if timeout_s is not None else 60.0 + 3.0 * n_runs * (reps + iters)
        doc = run_mpi("measure", argv, np, launcher=launcher, launcher_args=launcher_args, timeout_s=timeout, echo=echo)
    check_choice(stat, STATS, "statistic (--stat)")
    for r in doc["rows"]:
        r["measured_us"] = r[f"{method}_{stat}_us"]
        r["stat"] = stat
    return doc


def _reorder(args: argparse.Namespace, ops: list[str], specs: list[str], sizes: list[int]) -> list[dict]:
    """Measure each (op, tree, size) again with the ranks reordered as :func:`hnowmodel.search.rank_order` picks.

    The job's communicator is split with the chosen keys, so new rank p is the node that was rank ``perm[p]``
    (on the testbed it keeps its node type). The tree shape is fixed by rank number (``native`` = MPICH's
    binomial); trees that depend on the layout are built once from the original layout.
    """
    from ..layout import parse_layout
    from ..params import Profile
    from ..search import rank_order
    from ..trees import make_tree

    if not args.profile:
        raise InputError("--reorder needs --profile (the rank order is chosen from the model)")
    prof = Profile.load(args.profile)
    if args.layout is None:
        raise InputError("--reorder needs --layout (the node type of each rank)")
    layout = parse_layout(args.layout, prof.type_names)
    out = []
    for op in ops:
        for spec in specs:
            tree = make_tree(
                "binomial" if spec == NATIVE else spec, args.np, root=args.root, layout=layout, profile=prof
            )
            for m in sizes:
                ro = rank_order(prof, layout, tree, op, m)
                doc = measure(
                    args.np,
                    [op],
                    {spec: None if spec == NATIVE else tree},
                    [m],
                    testbed=args.testbed,
                    layout=args.layout,
                    root=args.root,
                    reps=args.reps,
                    iters=args.iters,
                    method=args.method,
                    stat=args.stat,
                    keys=list(ro.keys),
                    launcher=args.launcher,
                    launcher_args=args.launcher_args,
                    timeout_s=args.timeout,
                    echo=not args.json,
                )
                out.append(
                    {
                        "op": op,
                        "tree": spec,
                        "size": m,
                        "reordered_us": doc["rows"][0]["measured_us"],
                        "predicted_us": float(ro.baseline_us),
                        "predicted_reordered_us": float(ro.time_us),
                        "predicted_gain_pct": float(ro.gain_pct),
                        "reorder_keys": list(ro.keys),
                    }
                )
    return out


def run(args: argparse.Namespace) -> int:
    ops = check_ops(args.op)
    specs = check_trees(args.tree, args.testbed)
    sizes = sizes_arg(args.sizes)
    check_counts(args)
    if getattr(args, "reorder", False) and not (args.profile and args.layout):
        raise InputError("--reorder needs --profile and --layout (the rank order is chosen from the model)")
    doc = measure(
        args.np,
        ops,
        specs,
        sizes,
        testbed=args.testbed,
        layout=args.layout,
        profile=args.profile,
        root=args.root,
        reps=args.reps,
        iters=args.iters,
        method=args.method,
        stat=args.stat,
        launcher=args.launcher,
        launcher_args=args.launcher_args,
        timeout_s=args.timeout,
        echo=not args.json,
    )
    keep = ("op", "tree", "size", "measured_us", "min_us", "median_us", "max_us")
    rows = [
        {**{k: r[k] for k in keep}, "method": args.method, **{k: v for k, v in r.items() if k not in keep}}
        for r in doc["rows"]
    ]
    if getattr(args, "reorder", False):
        gains = {(g["op"], g["tree"], g["size"]): g for g in _reorder(args, ops, specs, sizes)}
        for r in rows:
            g = gains.get((r["op"], r["tree"], r["size"]))
            if g:
                r.update(g)
                r["measured_gain_pct"] = (
                    100.0 * (r["measured_us"] - g["reordered_us"]) / r["measured_us"]
                    if r["measured_us"] > 0
                    else float("nan")
                )
    meta = {k: v for k, v in doc.items() if k != "rows"}
    if args.json:
        emit_json({"rows": rows, "run": meta})
        return 0
    where = f"emulated testbed {doc['testbed']} (times / {doc['time_scale']:g})" if doc["emulated"] else "plain MPI"
    print(
        f"{doc['library_version']}; {doc['np']} ranks; {where}; timing: {args.method} "
        f"(min/median/max over >= {args.reps} repetitions; measured_us = {args.stat})"
    )
    if doc.get("native"):
        nat = doc["native"]
        print(f"native collectives: algorithm {nat['algorithm']}" + ("" if nat["pinned"] else " (NOT pinned)"))
    cols = ["op", "tree", "size", "measured_us", "min_us", "median_us", "max_us", "fig2_median_us", "sync_median_us"]
    if any("reordered_us" in r for r in rows):
        cols += ["reordered_us", "measured_gain_pct", "predicted_gain_pct"]
    table = [{**{c: r.get(c, float("nan")) for c in cols}, "size": format_size(r["size"])} for r in rows]
    print_table(table, cols)
    return 0
