"""``hnow compare``: predicted vs measured bcast/scatter/gather times, with CSV, plots and a markdown summary.

Calibrates first (the same code path as ``hnow calibrate``) unless ``--profile`` is given, builds every tree from
that profile and the layout, runs them under MPI (:func:`hnowmodel.cli.measure.measure`) and compares with
:mod:`hnowmodel.predict` (:mod:`hnowmodel.report` does the tables, plots and summary). ``native`` is predicted
with MPICH's binomial tree (the algorithm the measuring job pins).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import InputError, LayoutError
from ..layout import layout_string, parse_layout
from ..params import Profile
from ..predict import GATHER_VARIANTS
from ..report import error_stats, write_report
from ..sizes import format_size
from ..trees import Tree, make_tree
from .calibrate import calibrate_profile
from .common import add_mpi_arguments, check_choice, emit_json, load_profile, print_table, sizes_arg
from .measure import NATIVE, check_counts, check_ops, check_trees, measure

__all__ = ["HELP", "add_arguments", "run", "compare", "build_trees"]

HELP = "calibrate (unless --profile), predict and measure bcast/scatter/gather; report predicted vs measured"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p)
    p.add_argument("--layout", default=None, help="node type of each rank (default: the profile's / testbed's)")
    p.add_argument("--profile", default=None, help="profile JSON (default: calibrate first on the same ranks)")
    p.add_argument("--ops", default="bcast,scatter,gather", help="operations, comma-separated")
    p.add_argument("--trees", default="binomial,sequential", help="tree names, comma-separated (and native)")
    p.add_argument("--sizes", default="0,1K,4K,16K", help="message sizes in bytes (per rank for scatter/gather)")
    p.add_argument("-o", "--output", default=None, help="report folder: CSV, PNG plots, summary.md, profile.json")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--reps", type=int, default=7, help="repetitions of each timing method (default 7)")
    p.add_argument("--iters", type=int, default=None, help="collectives per Figure-2 loop (default 50; 2 on a testbed)")
    p.add_argument(
        "--method",
        default="auto",
        help="timing method behind measured_us: fig2, sync or auto (default: sync on a testbed, fig2 on plain MPI)",
    )
    p.add_argument(
        "--gather-variant",
        default="link",
        help="gather model: link (the root's link carries one message at a time, default) or paper (eq. 12)",
    )
    p.add_argument(
        "--stat",
        default="auto",
        help="measured_us = median or min over repetitions; auto (default): min on a testbed (as the paper), "
        "median on plain MPI",
    )
    p.add_argument("--calibrate-sizes", default=None, help="sizes for the calibration (default: its own)")


def build_trees(specs: Sequence[str], profile: Profile, layout: Sequence[str], root: int = 0) -> dict[str, Tree | None]:
    """Each tree spec built for this layout and profile (``native`` -> None: the library's own)."""
    return {
        s: None if s == NATIVE else make_tree(s, len(layout), root=root, layout=list(layout), profile=profile)
        for s in specs
    }


def compare(
    np: int,
    ops: Sequence[str],
    specs: Sequence[str],
    sizes: Sequence[int],
    *,
    profile: Profile,
    layout: Sequence[str],
    testbed: str | None = None,
    root: int = 0,
    reps: int = 7,
    iters: int = 4,
    method: str = "fig2",
    both: bool = True,
    stat: str = "median",
    gather_variant: str = "link",
    config: str | None = None,
    launcher: str = "mpiexec",
    launcher_args: str = "",
    timeout_s: float | None = None,
    echo: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Measure and predict; return (comparison rows, the measuring job's document without its rows)."""
    from ..report import predicted_rows

    if len(layout) != np:
        raise LayoutError(f"layout has {len(layout)} ranks but --np is {np}")
    trees = build_trees(specs, profile, layout, root)
    doc = measure(
        np,
        ops,
        trees,
        sizes,
        testbed=testbed,
        layout=list(layout),
        root=root,
        reps=reps,
        iters=iters,
        method=method,
        both=both,
        stat=stat,
        launcher=launcher,
        launcher_args=launcher_args,
        timeout_s=timeout_s,
        echo=echo,
    )
    keep = ("op", "tree", "size", "measured_us", "min_us", "median_us", "max_us", "fig2_median_us", "sync_median_us")
    measured = [{k: r[k] for k in keep if k in r} for r in doc["rows"]]
    extra = {"config": config} if config else {}
    extra["layout"] = layout_string(layout) if _short(layout) else ",".join(layout)
    rows = predicted_rows(profile, layout, measured, trees, gather_variant=gather_variant, root=root, extra=extra)
    for r in rows:
        r["method"] = method
    meta = {k: v for k, v in doc.items() if k != "rows"}
    return rows, meta


def _short(layout: Sequence[str]) -> bool:
    return len({t[0] for t in layout}) == len(set(layout))


def _check(args: argparse.Namespace) -> None:
    check_counts(args)
    check_choice(args.gather_variant, GATHER_VARIANTS, "gather variant (--gather-variant)")


def run(args: argparse.Namespace) -> int:
    ops = check_ops(args.ops)
    specs = check_trees(args.trees, args.testbed)
    sizes = sizes_arg(args.sizes)
    _check(args)
    echo = not args.json
    if args.profile:
        profile = load_profile(args.profile)
        source = f"--profile {args.profile}"
    else:
        profile = calibrate_profile(
            args.np,
            testbed=args.testbed,
            layout=args.layout,
            sizes=args.calibrate_sizes,
            launcher=args.launcher,
            launcher_args=args.launcher_args,
            timeout_s=args.timeout,
            echo=echo,
        )
        source = f"calibrated now on the same {args.np} ranks"
    if args.layout is not None:
        layout = parse_layout(args.layout, profile.type_names)
    elif profile.layout and len(profile.layout) == args.np:
        layout = tuple(profile.layout)
    elif len(profile.type_names) == 1:
        layout = (profile.type_names[0],) * args.np
    else:
        raise InputError("--layout is required (the profile records no layout for this many ranks)")
    rows, meta = compare(
        args.np,
        ops,
        specs,
        sizes,
        profile=profile,
        layout=layout,
        testbed=args.testbed,
        root=args.root,
        reps=args.reps,
        iters=args.iters,
        method=args.method,
        stat=args.stat,
        gather_variant=args.gather_variant,
        launcher=args.launcher,
        launcher_args=args.launcher_args,
        timeout_s=args.timeout,
        echo=echo,
    )
    stats = error_stats(rows)
    where = (
        f"emulated testbed {args.testbed} (time_scale {meta['time_scale']:g}; times in testbed µs)"
        if meta.get("emulated")
        else "plain MPI on this machine"
    )
    context = {
        "command": "hnow compare " + " ".join(_argv_summary(args)),
        "MPI": meta.get("library_version"),
        "ranks": f"{args.np}, layout {','.join(layout)}",
        "where": where,
        "profile": source,
        "timing": f"{args.method} ({args.stat} of {args.reps} repetitions; spread = min-max)",
        "gather model": args.gather_variant,
    }
    if meta.get("native"):
        context["native"] = f"{meta['native']['algorithm']} (pinned: {meta['native']['pinned']}), predicted as binomial"
    report = None
    if args.output:
        report = write_report(
            args.output,
            rows,
            title="hnow compare: predicted vs measured",
            context=context,
            profile=profile if not args.profile else None,
        )
    if args.json:
        doc: dict[str, Any] = {"rows": rows, "summary": stats, "run": meta}
        if report:
            doc["report"] = args.output
        emit_json(doc)
        return 0
    table = [
        {
            "op": r["op"],
            "tree": r["tree"],
            "size": format_size(r["size"]),
            "predicted_us": r["predicted_us"],
            "measured_us": r["measured_us"],
            "min_us": r["min_us"],
            "max_us": r["max_us"],
            "error_pct": float("nan") if r["error_pct"] is None else r["error_pct"],
        }
        for r in rows
    ]
    print_table(table, title=f"predicted vs measured ({where}; {args.method} timing)")
    print(
        f"median |error| {stats['median_abs_error_pct']:.1f} %, max |error| {stats['max_abs_error_pct']:.1f} % "
        f"over {stats['rows']} rows"
    )
    if report:
        print(f"report: {args.output} (comparison.csv, compare.png, summary.md)")
    return 0


def _argv_summary(args: argparse.Namespace) -> list[str]:
    out = [f"--np {args.np}"]
    for flag in ("testbed", "layout", "profile", "ops", "trees", "sizes"):
        v = getattr(args, flag)
        if v:
            out.append(f"--{flag} {v}")
    return out
