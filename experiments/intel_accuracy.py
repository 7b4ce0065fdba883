"""Intel MPI on a virtual heterogeneous cluster: the model against the measured collectives, and the Intel MPI
Benchmarks (``IMB-MPI1``) as an outside reference for hnow's own timing, under Intel MPI and under MPICH.

On one machine as root: the 6-host cluster of ``experiments/cluster_accuracy.py`` (or ``--spec``), one rank per host,
Intel MPI from ``hnow setup-intelmpi``, kept up for the whole run:

1. calibration under Intel MPI with ``--layout auto`` (``hm.calibrate(..., mpi="intelmpi")``);
2. Intel MPI's bcast/scatter/gather, its **default** as it runs (``native``: the algorithm its tuning picks per size,
   read off the wire, docs/intel-mpi.md) and **pinned** binomial (``I_MPI_ADJUST_<OP>=1``), 16-256 KiB: predicted
   (each operation's default model variant) vs measured, ``hm.compare``;
3. ``IMB-MPI1`` Bcast/Scatter/Gather with the same algorithm (pinned binomial, and the default) beside hnow's time
   measured as IMB's loop runs (``fig2``) and the model for that loop (empty token buckets), ``hm.imb_compare``;
4. the same IMB comparison under MPICH (IMB-MPI1 loads MPICH's ``libmpi.so.12``), with a profile calibrated under
   MPICH on the same cluster.

Writes ``intel_accuracy.csv`` (model vs measured), ``imb.csv`` (IMB vs hnow), ``intel_accuracy.png`` and
``intel_accuracy.md`` (the issue's claims with the numbers) under ``experiments/out/intel_accuracy/`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from cluster_accuracy import SPEC  # noqa: E402
from common import claim, command_line, error_summary, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402

import hnowmodel as hm  # noqa: E402
from hnowmodel import ops  # noqa: E402
from hnowmodel.jobs import mpi_lock  # noqa: E402
from hnowmodel.jobs.results import rows_as_dicts  # noqa: E402
from hnowmodel.sizes import parse_sizes  # noqa: E402

SIZES = parse_sizes("16K,32K,64K,128K,256K")
IMB_SIZES = parse_sizes("64K,128K,256K")
NATIVES = ("native", "native:binomial")


def _calibrate(spec: Path, n: int, mpi: str, out: Path, lock: str | None) -> Any:
    with mpi_lock(lock):
        return hm.calibrate(
            n, layout="auto", output=out / f"profile-{mpi}.json", force=True, cluster=str(spec), progress=True, mpi=mpi
        )


def _imb_rows(prof: Any, spec: Path, n: int, mpi: str, tree: str, args: argparse.Namespace) -> list[dict]:
    """IMB's t_max beside hnow's measured (IMB's loop) and predicted time, one row per operation and size."""
    with mpi_lock(args.lock):
        c = hm.imb_compare(
            prof,
            n,
            cluster=str(spec),
            mpi=mpi,
            tree=tree,
            ops=ops.tree_names(),  # the tree operations this study measured (by default MPICH runs the others too)
            sizes=IMB_SIZES,
            iters=args.iters,
            reps=args.imb_reps,
            pingpong=False,
            progress=True,
        )
    rows = []
    for r in c.rows:
        rows.append(
            {
                "mpi": mpi,
                "library": c.library,
                "tree": tree,
                "op": r.op,
                "size": r.size,
                "imb_t_max_us": r.imb_t_max_us,
                "measured_us": r.measured_us,
                "sync_us": r.measured_other_us,
                "loop_effect_pct": _nan(r.loop_effect_pct),
                "predicted_us": r.predicted_us,
                "meas_vs_imb_pct": _nan(r.measured_vs_imb_pct),
                "pred_vs_imb_pct": _nan(r.predicted_vs_imb_pct),
                "predicted_imb_us": r.predicted_imb_us,
                "model_tree": r.model_tree,
            }
        )
    return rows


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _run(args: argparse.Namespace, out: Path, spec: Path, sizes: list[int]) -> dict[str, Any]:
    t0 = time.monotonic()
    n = sum(h.slots for h in hm.cluster.load_spec(str(spec)).hosts)
    with hm.cluster.using(str(spec)):
        prof = hm.Profile.load(args.profile) if args.profile else _calibrate(spec, n, "intelmpi", out, args.lock)
        with mpi_lock(args.lock):
            cmp = hm.compare(
                prof,
                n,
                cluster=str(spec),
                mpi="intelmpi",
                ops=list(ops.tree_names()),
                trees=list(NATIVES),
                sizes=sizes,
                reps=args.reps,
                both=False,
                progress=True,
            )
        rows = rows_as_dicts(cmp.rows)
        write_csv(out / "intel_accuracy.csv", rows)  # kept whatever happens to the rest of the run
        imb = [r for tree in NATIVES for r in _imb_rows(prof, spec, n, "intelmpi", tree, args)]
        write_csv(out / "imb.csv", imb)
        prof_m = (
            hm.Profile.load(args.mpich_profile) if args.mpich_profile else _calibrate(spec, n, "mpich", out, args.lock)
        )
        imb += _imb_rows(prof_m, spec, n, "mpich", "native:binomial", args)
    return {"rows": rows, "imb": imb, "library": cmp.run.get("library"), "seconds": time.monotonic() - t0}


def _plot(rows: list[dict], imb: list[dict], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for tree in NATIVES:
        sel = [r for r in rows if r["tree"] == tree]
        axes[0].scatter([r["measured_us"] / 1e3 for r in sel], [r["predicted_us"] / 1e3 for r in sel], label=tree)
    top = max((r["measured_us"] for r in rows), default=1.0) / 1e3 * 1.05
    axes[0].plot([0, top], [0, top], "k:", lw=1)
    axes[0].set(xlabel="measured (ms)", ylabel="predicted (ms)", title="Intel MPI: model vs measured")
    axes[0].legend()
    labels = [f"{r['mpi']} {r['tree'].split(':')[-1]} {r['op']} {r['size'] // 1024}K" for r in imb]
    x = range(len(imb))
    axes[1].bar([i - 0.2 for i in x], [r["meas_vs_imb_pct"] for r in imb], 0.4, label="hnow measured vs IMB")
    axes[1].bar([i + 0.2 for i in x], [r["pred_vs_imb_pct"] for r in imb], 0.4, label="predicted vs IMB")
    axes[1].set_xticks(list(x), labels, rotation=90, fontsize=6)
    axes[1].set(ylabel="% of IMB's t_max", title="against IMB-MPI1")
    axes[1].legend(fontsize=7)
    save_png(fig, path)


def _claims(rows: list[dict], imb: list[dict]) -> tuple[list[str], list[dict]]:
    summ = [{"tree": t, **error_summary([r for r in rows if r["tree"] == t])} for t in NATIVES]
    claims = [
        claim(
            f"Intel MPI {s['tree']}: median |error| <= 5 %, max <= 15 %",
            s["rows"] > 0 and s["median_abs_error_pct"] <= 5 and s["max_abs_error_pct"] <= 15,
            f"{s['median_abs_error_pct']:.1f} % / {s['max_abs_error_pct']:.1f} % over {s['rows']} rows",
        )
        for s in summ
    ]
    loop = f"where IMB's loop changes the time by <= {hm.jobs.LOOP_NEGLIGIBLE_PCT:g} %"
    for key, limit, what in (
        ("meas_vs_imb_pct", 3, "hnow's measured time"),
        ("pred_vs_imb_pct", 5, f"the prediction ({loop})"),
    ):
        for mpi in dict.fromkeys(r["mpi"] for r in imb):
            vals = [abs(r[key]) for r in imb if r["mpi"] == mpi and math.isfinite(r[key])]
            worst = max(vals, default=math.nan)
            claims.append(
                claim(
                    f"{mpi}: {what} within {limit} % of IMB's t_max at 64-256 KiB",
                    bool(vals) and worst <= limit,
                    f"worst {worst:.1f} % over {len(vals)} rows",
                )
            )
    return claims, summ


def main() -> None:
    p = parser("intel_accuracy", __doc__)
    p.add_argument("--spec", default=None, help="cluster spec file (default: the 6-host spec of cluster_accuracy.py)")
    p.add_argument("--reps", type=int, default=5, help="timing repetitions per compared row (default 5)")
    p.add_argument("--sizes", default=None, help="sizes (default 16K,32K,64K,128K,256K)")
    p.add_argument("--iters", type=int, default=20, help="IMB's calls per size (default 20)")
    p.add_argument("--imb-reps", type=int, default=7, help="hnow's rounds of IMB's loop per size (default 7)")
    p.add_argument("--profile", default=None, help="an Intel MPI profile of this cluster (default: calibrate)")
    p.add_argument("--mpich-profile", default=None, help="an MPICH profile of this cluster (default: calibrate)")
    p.add_argument("--lock", default=None, help="flock this file around every MPI job (a machine shared with others)")
    args = p.parse_args()
    out = outdir(args.out)
    spec_doc = json.loads(Path(args.spec).read_text()) if args.spec else SPEC
    spec = out / "spec.json"
    spec.write_text(json.dumps(spec_doc, indent=1))
    run = _run(args, out, spec, parse_sizes(args.sizes) if args.sizes else SIZES)
    rows, imb = run["rows"], run["imb"]
    write_csv(out / "imb.csv", imb)
    _plot(rows, imb, out / "intel_accuracy.png")
    claims, summ = _claims(rows, imb)
    body = [
        f"Reproduce with: `{command_line()}` (as root). {run['library']}; run {run['seconds']:.0f} s.\n\n## Claims\n",
        *claims,
        "\n## Model vs measured (Intel MPI, each operation's default variant)\n",
        md_table(summ),
        "\n",
        md_table(rows, columns=["op", "tree", "size", "predicted_us", "measured_us", "error_pct"]),
        "\n## IMB-MPI1 against hnow\n",
        md_table(imb),
    ]
    write_markdown(out / "intel_accuracy.md", "Intel MPI: model accuracy and IMB as an outside reference", body)
    print((out / "intel_accuracy.md").read_text())


if __name__ == "__main__":
    main()
