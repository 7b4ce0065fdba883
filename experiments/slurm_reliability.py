"""Does ``hnow`` start reliably under Slurm, and is it as accurate as under hydra? A real Slurm on 4 virtual hosts.

On one machine as root: a 4-host, 2-speed virtual cluster (``hnow cluster up SPEC --slurm``: munge, slurmctld,
one slurmd per host with node-local ``/tmp``). ``--runs`` times: ``hm.calibrate(np=4, layout="auto", quick=True,
launcher="srun")`` then ``hm.compare(…, launcher="srun")`` of MPICH's native bcast/scatter/gather at 16-256 KiB
with that profile. Every failure is kept with its one-line reason (a start-up hang would show as a timeout).
Then ``--hydra-runs`` of the same pair launched by hydra (``mpiexec`` through the cluster's exec wrapper), with the
same MPI settings as under srun (MPICH's ofi netmod over TCP: ``hnowmodel.jobs.launcher.SRUN_MPICH_ENV``), so that
only the launcher differs. Error = 100·(predicted − measured)/measured.

Writes ``runs.csv`` (one row per run and launcher), ``slurm_reliability.md`` under
``experiments/out/slurm_reliability/``. Run it as root with nothing else timing MPI (it takes the MPI lock itself).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from common import command_line, md_table, outdir, parser, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel.errors import HnowError
from hnowmodel.jobs.launcher import SRUN_MPICH_ENV

RATES = [120, 30, 120, 30]
SIZES = [16384, 262144]


def _spec(folder: Path) -> str:
    doc = {
        "schema": "hnowmodel.cluster/1",
        "name": "slurmrel",
        "hosts": [{"name": f"h{i}", "egress_mbit": r, "ingress_mbit": r, "slots": 1} for i, r in enumerate(RATES, 1)],
    }
    path = folder / "spec.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _one(run: int, launcher: str, spec: str, out: Path) -> dict:
    """One calibration + comparison through ``launcher``; a row with what happened."""
    row: dict = {"run": run, "launcher": launcher, "ok": False, "layout": "", "calibrate_s": None, "compare_s": None}
    row.update({"median_abs_error_pct": None, "max_abs_error_pct": None, "reason": ""})
    t0 = time.monotonic()
    try:
        prof = hm.calibrate(
            4, layout="auto", quick=True, cluster=spec, launcher=launcher, output=out / "p.json", force=True
        )
        row["calibrate_s"] = round(time.monotonic() - t0, 1)
        row["layout"] = ",".join(prof.layout)
        t1 = time.monotonic()
        cmp = hm.compare(
            prof, np=4, cluster=spec, launcher=launcher, ops=["bcast", "scatter", "gather"], trees=["native"],
            sizes=SIZES, reps=3, both=False,
        )  # fmt: skip
        row["compare_s"] = round(time.monotonic() - t1, 1)
        errs = [abs(r.error_pct) for r in cmp.rows if r.error_pct is not None]
        row["median_abs_error_pct"] = round(statistics.median(errs), 2)
        row["max_abs_error_pct"] = round(max(errs), 2)
        row["ok"] = True
    except HnowError as e:
        row["reason"] = str(e)[:300]
    return row


def main() -> None:
    p = parser("slurm_reliability", __doc__)
    p.add_argument("--runs", type=int, default=50, help="calibrate + compare pairs through srun (default 50)")
    p.add_argument("--hydra-runs", type=int, default=5, help="the same through hydra, for accuracy (default 5)")
    args = p.parse_args()
    out = outdir(args.out)
    os.environ.setdefault("HNOW_MPI_LOCK", "/tmp/hnow-mpi.lock")
    for k, v in SRUN_MPICH_ENV.items():  # hydra runs with the same MPI settings srun gets by default
        os.environ.setdefault(k, v)
    spec = _spec(out)
    rows = []
    t_up = time.monotonic()
    hm.cluster.up(spec, slurm=True)
    up_s = time.monotonic() - t_up
    try:
        for launcher, n in (("srun", args.runs), ("mpiexec", args.hydra_runs)):
            for i in range(1, n + 1):
                rows.append(_one(i, launcher, spec, out))
                r = rows[-1]
                print(
                    f"{launcher} run {i}/{n}: "
                    + (
                        f"ok, layout {r['layout']}, calibrate {r['calibrate_s']} s, compare {r['compare_s']} s, "
                        f"median |error| {r['median_abs_error_pct']} %"
                        if r["ok"]
                        else f"FAILED: {r['reason']}"
                    ),
                    flush=True,
                )
    finally:
        t_down = time.monotonic()
        hm.cluster.down("slurmrel")
        down_s = time.monotonic() - t_down
    write_csv(out / "runs.csv", rows)
    summary = []
    for launcher in ("srun", "mpiexec"):
        rs = [r for r in rows if r["launcher"] == launcher]
        ok = [r for r in rs if r["ok"]]
        summary.append(
            {
                "launcher": launcher,
                "runs": len(rs),
                "succeeded": len(ok),
                "median of median |error| %": statistics.median(r["median_abs_error_pct"] for r in ok) if ok else None,
                "median of max |error| %": statistics.median(r["max_abs_error_pct"] for r in ok) if ok else None,
                "median calibrate s": statistics.median(r["calibrate_s"] for r in ok) if ok else None,
                "layouts": ";".join(sorted({r["layout"] for r in ok})),
            }
        )
    fails = [r for r in rows if not r["ok"]]
    body = [
        f"Command: `{command_line()}`\n\n",
        f"4 virtual hosts at {'/'.join(map(str, RATES))} Mbit/s with Slurm (up {up_s:.2f} s, down {down_s:.2f} s); "
        f"MPICH settings for both launchers: {', '.join(f'{k}={v}' for k, v in SRUN_MPICH_ENV.items())}; native "
        f"bcast/scatter/gather at {', '.join(map(str, SIZES))} B, 3 repetitions each.\n\n",
        md_table(summary, fmt="{:.2f}"),
        "\n## Failures\n\n" + (md_table(fails) if fails else "None.\n"),
    ]
    write_markdown(out / "slurm_reliability.md", "hnow under Slurm: start-up reliability and accuracy", body)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
