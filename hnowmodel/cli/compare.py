"""``hnow compare``: predicted vs measured bcast/scatter/gather, with CSV, plots and a markdown summary."""

from __future__ import annotations

import argparse

from .. import ops
from ..sizes import format_size
from ..treespec import spec_names
from .common import (
    add_mpi_arguments,
    add_op_argument,
    add_output,
    add_tree_argument,
    add_types_argument,
    add_variant_argument,
    emit_json,
    launch_kwargs,
    print_table,
)
from .measure import add_timing_arguments

__all__ = ["HELP", "add_arguments", "run"]

HELP = "calibrate (unless --profile), predict and measure bcast/scatter/gather; report predicted vs measured"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p)
    p.add_argument(
        "--layout",
        default=None,
        help="node type of each rank (default: the testbed's; on named hosts each host's type by name, from the "
        "profile, --types or the cluster spec's types; else the profile's)",
    )
    add_types_argument(p)
    p.add_argument(
        "--profile", default=None, help="profile JSON or 'paper' (default: calibrate first on the same ranks)"
    )
    add_op_argument(
        p,
        ",".join(ops.tree_names()),
        f"operations, comma-separated: {', '.join(ops.names())} (default {','.join(ops.tree_names())})",
    )
    add_tree_argument(
        p, "binomial,sequential", f"trees, comma-separated (default binomial,sequential): {', '.join(spec_names())}"
    )
    p.add_argument("--sizes", default="0,1K,4K,16K", help="message sizes in bytes (per rank for scatter/gather)")
    add_timing_arguments(p)
    add_variant_argument(
        p,
        "trees are chosen and compared under it (default: each operation's own for the profile; "
        + "; ".join(f"{o.name}: {', '.join(o.variants)}" for o in ops.OPERATIONS.values())
        + ")",
    )
    p.add_argument(
        "--all-variants",
        action="store_true",
        help="also print every model variant's error side by side (the JSON rows always carry them)",
    )
    p.add_argument("--calibrate-sizes", default=None, help="sizes for the calibration (default: its own)")
    add_output(p, None, "report folder: comparison.csv, compare.png, summary.md (and profile.json if calibrated)")


def run(args: argparse.Namespace) -> int:
    from ..jobs import compare

    cmp = compare(
        args.profile,
        np=args.np,
        testbed=args.testbed,
        layout=args.layout,
        types=args.types,
        ops=args.op,
        trees=args.tree,
        sizes=args.sizes,
        root=args.root,
        reps=args.reps,
        iters=args.iters,
        method=args.method,
        stat=args.stat,
        variants=args.variant,
        calibrate_sizes=args.calibrate_sizes,
        output=args.output,
        force=args.force,
        **launch_kwargs(args),
    )
    if args.json:
        emit_json(cmp.to_dict())
        return 0
    cols = ["op", "tree", "size", "predicted_us", "measured_us", "min_us", "max_us", "error_pct"]
    table = [{**{c: r.to_dict()[c] for c in cols}, "size": format_size(r.size)} for r in cmp.rows]
    print_table(table, cols, title=f"predicted vs measured ({cmp.context['where']}; {cmp.run['method']} timing)")
    if args.all_variants:
        names = list(dict.fromkeys(v for r in cmp.rows for v in r.extra.get("error_pct_by_variant", {})))
        side = [
            {
                "op": r.op,
                "tree": r.tree,
                "size": format_size(r.size),
                "measured_us": r.measured_us,
                **{f"{v}_error_pct": r.extra.get("error_pct_by_variant", {}).get(v) for v in names},
            }
            for r in cmp.rows
        ]
        print_table(
            side,
            ["op", "tree", "size", "measured_us", *(f"{v}_error_pct" for v in names)],
            title="error % of every model variant (blank: the variant does not model that operation)",
        )
    for r in cmp.rows:
        if r.note:
            print(f"note: {r.op}/{r.tree} at {format_size(r.size)}: {r.note}")
    s = cmp.summary
    if s["rows"]:
        print(
            f"median |error| {s['median_abs_error_pct']:.1f} %, max |error| {s['max_abs_error_pct']:.1f} % "
            f"over {s['rows']} rows"
        )
    if cmp.report:
        print(f"report: {cmp.report} (comparison.csv, compare.png, summary.md)")
    return 0
