"""Figures 3-5 of Banikazemi et al.: predicted vs measured broadcast, scatter and gather on four nodes, configurations
A (FFFF), B (FFSS), C (SFSF), D (FSFS) - on the emulated paper testbed, and on plain MPI on this machine.

Emulated: the profile is calibrated on 8 emulated ranks (4 fast + 4 slow; never the testbed's true parameters),
then every configuration runs bcast over MPICH's binomial tree (Figure 3, the paper's MPI_Bcast) and
scatter/gather over the sequential tree (Figures 4-5, the paper's MPICH) plus binomial scatter/gather (today's
MPICH). Plain MPI: this machine has one node type, so only configuration A exists; the profile is calibrated on
the same 4 ranks and the trees plus MPICH's own (native, binomial pinned) are compared.

Paper's claims checked: the estimated times are close to the measured ones (we take "close" as median |error|
<= 10 % on the emulated testbed), and broadcast time depends on the order of the nodes in the binomial tree
(configurations B and D differ).

Paper: Banikazemi, Sampathkumar, Prabhu, Panda, Sadayappan, "Communication Modeling of Heterogeneous Networks of
Workstations for Performance Characterization of Collective Operations".
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from common import claim, md_table, outdir, parser, write_markdown

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hnowmodel as hm  # noqa: E402
from hnowmodel.jobs.results import rows_as_dicts  # noqa: E402
from hnowmodel.report import error_stats, group_stats, plot_comparison, write_csv  # noqa: E402

CONFIGS = {"A": "FFFF", "B": "FFSS", "C": "SFSF", "D": "FSFS"}
CASES = [
    ("bcast", "binomial"),
    ("scatter", "sequential"),
    ("gather", "sequential"),
    ("scatter", "binomial"),
    ("gather", "binomial"),
]


def _emulated(sizes: list[int], reps: int, out: Path) -> list[dict]:
    """Calibrate on 8 emulated ranks, then compare every configuration's trees (Figures 3-5)."""
    prof = hm.calibrate(8, testbed="paper", layout="FFFFSSSS", quick=True)
    prof.save(out / "profile_emulated.json")
    rows = []
    for cfg, lay in CONFIGS.items():
        for op in ("bcast", "scatter", "gather"):
            trees = sorted({t for o, t in CASES if o == op})
            got = hm.compare(
                prof,
                np=4,
                testbed="paper",
                layout=lay,
                ops=[op],
                trees=trees,
                sizes=sizes,
                reps=reps,
                iters=2,
                method="sync",
            )
            rows += [{**r, "config": cfg, "platform": "emulated"} for r in rows_as_dicts(got.rows)]
    return rows


def _plain(sizes: list[int], reps: int, out: Path) -> list[dict]:
    """Calibrate plain MPI on 4 ranks of this machine and compare binomial, sequential and native."""
    pprof = hm.calibrate(4, layout=None, quick=True)
    pprof.save(out / "profile_plain.json")
    layout = [pprof.type_names[0]] * 4
    plain = []
    for op in ("bcast", "scatter", "gather"):
        got = hm.compare(
            pprof,
            np=4,
            layout=layout,
            ops=[op],
            trees=["binomial", "sequential", "native"],
            sizes=sizes,
            reps=2 * reps + 1,
            iters=100,
            method="fig2",
        )
        plain += [{**r, "config": "A-plain", "platform": "plain MPI"} for r in rows_as_dicts(got.rows)]
    return plain


def _plots(rows: list[dict], plain: list[dict], out: Path) -> None:
    for op, fig in (("bcast", 3), ("scatter", 4), ("gather", 5)):
        mine = [r for r in rows if r["op"] == op]
        # one panel per configuration: reuse the comparison plot with configs as the panel key
        plot_comparison(
            [{**r, "op": f"config {r['config']}"} for r in mine],
            out / f"fig{fig}_{op}.png",
            f"Figure {fig}: {op}, emulated paper testbed, 4 nodes (A FFFF, B FFSS, C SFSF, D FSFS)",
        )
    if plain:
        plot_comparison(plain, out / "plain_mpi.png", "plain MPI, 4 ranks on this machine (configuration A)")


def _markdown(rows: list[dict], plain: list[dict], sizes: list[int], wall_s: float) -> list[str]:
    """The report's body: the paper's two claims, the plain-MPI errors, the statistics per group."""
    em = error_stats(rows)
    body = [f"Wall time {wall_s:.0f} s. Emulated times are testbed µs (divided by time_scale).\n\n"]
    body.append(
        claim(
            "estimated times are very close to the measured times (emulated testbed, median |error| <= 10 %)",
            em["median_abs_error_pct"] <= 10,
            f"median {em['median_abs_error_pct']:.1f} %, max {em['max_abs_error_pct']:.1f} % over {em['rows']} rows",
        )
    )
    bd = {
        c: [r["measured_us"] for r in rows if r["config"] == c and r["op"] == "bcast" and r["size"] == sizes[-1]]
        for c in ("B", "D")
    }
    body.append(
        claim(
            "broadcast time varies with the order of the nodes in the binomial tree (B vs D)",
            abs(bd["B"][0] - bd["D"][0]) > 0.05 * bd["D"][0],
            f"measured {bd['B'][0]:.0f} µs (B) vs {bd['D'][0]:.0f} µs (D) at {sizes[-1]} B",
        )
    )
    if plain:
        ps = error_stats(plain)
        body.append(
            f"\nPlain MPI (4 ranks, one node type, profile calibrated on the same ranks; Figure-2 timing): "
            f"median |error| {ps['median_abs_error_pct']:.1f} %, max {ps['max_abs_error_pct']:.1f} %.\n"
        )
    body.append("\n## Per configuration, operation and tree\n\n")
    body.append(md_table(group_stats(rows + plain, ("platform", "config", "op", "tree"))))
    return body


def main() -> None:
    p = parser("fig3_5_validation", __doc__)
    p.add_argument("--sizes", default="0,1K,2K,4K", help="message sizes (bytes)")
    p.add_argument("--reps", type=int, default=5, help="timing repetitions")
    p.add_argument("--skip-plain", action="store_true", help="emulated testbed only")
    args = p.parse_args()
    out = outdir(args.out)
    sizes = [int(s) for s in __import__("hnowmodel").parse_sizes(args.sizes)]
    t0 = time.monotonic()
    rows = _emulated(sizes, args.reps, out)
    plain = [] if args.skip_plain else _plain(sizes, args.reps, out)
    allrows = rows + plain
    write_csv(
        out / "fig3_5_validation.csv",
        allrows,
        columns=["platform", *[c for c in allrows[0] if c != "platform" and c != "tree_parent"]],
    )
    _plots(rows, plain, out)
    body = _markdown(rows, plain, sizes, time.monotonic() - t0)
    write_markdown(out / "fig3_5_validation.md", "Figures 3-5: predicted vs measured (Banikazemi et al.)", body)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
