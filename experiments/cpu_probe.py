"""The CPU probe of ``--layout auto`` against the CPU share the kernel enforces: does it tell hosts apart by CPU,
and by how much?

On one machine as root: a virtual cluster of hosts with the same NIC (40 Mbit/s) and different CPU shares (a CFS
quota: ``cpu_share`` in the spec, docs/virtual-cluster.md), whole cores beside half and a quarter of one, calibrated
``--runs`` times with ``--layout auto --quick`` (``hm.calibrate``). The outside reference is the quota: work many
periods long takes ``1 / share`` times as long on a host with ``share`` of a core. For each run and host: the probe
(µs per copy, ``provenance.layout.auto.cpu.copy_us``), its ratio to the median of the whole-core hosts against
``1 / share``, and whether the hosts were grouped by share (equal shares one type, each share its own).

Writes ``cpu_probe.csv`` (a row per run and host), ``cpu_probe.png`` and ``cpu_probe.md`` (the claims with the
numbers) under ``experiments/out/cpu_probe/`` (or ``--out``).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from common import claim, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402

import hnowmodel as hm  # noqa: E402
from hnowmodel.io import atomic_write  # noqa: E402
from hnowmodel.jobs import mpi_lock  # noqa: E402

#: Each host's share of one core (1.0: no quota), all at the same NIC rate.
SHARES = {"h1": 1.0, "h2": 1.0, "h3": 0.5, "h4": 1.0, "h5": 0.25, "h6": 1.0}
RATE_MBIT = 40


def _spec(path: Path, name: str) -> Path:
    hosts = [
        {"name": h, "egress_mbit": RATE_MBIT, "ingress_mbit": RATE_MBIT, "slots": 1}
        | ({"cpu_share": s} if s < 1 else {})
        for h, s in SHARES.items()
    ]
    atomic_write(path, json.dumps({"schema": "hnowmodel.cluster/1", "name": name, "hosts": hosts}, indent=1))
    return path


def _grouped_by_share(types: dict[str, str]) -> bool:
    """Hosts of one share got one type, hosts of different shares different types."""
    return all((types[a] == types[b]) == (SHARES[a] == SHARES[b]) for a in SHARES for b in SHARES)


def main() -> None:
    p = parser("cpu_probe", __doc__)
    p.add_argument("--runs", type=int, default=3, help="calibrations (default 3)")
    p.add_argument("--lock", default=None, help="the machine's MPI lock file (default the library's)")
    args = p.parse_args()
    out = outdir(args.out)
    spec = _spec(out / "cpu_probe_cluster.json", "cpuprobe")
    t0 = time.monotonic()
    rows: list[dict] = []
    grouped: list[bool] = []
    with hm.cluster.using(str(spec)):
        for run in range(1, args.runs + 1):
            with mpi_lock(args.lock):
                prof = hm.calibrate(len(SHARES), layout="auto", quick=True, cluster=str(spec), progress=True)
            cpu = prof.provenance["layout"]["auto"]["cpu"]["copy_us"]
            types = prof.host_types
            grouped.append(_grouped_by_share(types))
            whole = statistics.median(cpu[h] for h, s in SHARES.items() if s == 1.0)
            for h, s in SHARES.items():
                ratio = cpu[h] / whole
                rows.append(
                    {
                        "run": run,
                        "host": h,
                        "cpu_share": s,
                        "copy_us": cpu[h],
                        "ratio_to_whole_cores": ratio,
                        "expected_ratio": 1 / s,
                        "ratio_error_pct": 100 * (ratio - 1 / s) * s,
                        "type": types[h],
                    }
                )
    write_csv(out / "cpu_probe.csv", rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter([1 / r["cpu_share"] for r in rows], [r["ratio_to_whole_cores"] for r in rows], label="measured")
    ax.plot([1, 4], [1, 4], color="grey", lw=0.8, label="1 / share")
    ax.set_xlabel("1 / CPU share (the quota)")
    ax.set_ylabel("probe / whole-core hosts' median")
    ax.legend()
    save_png(fig, out / "cpu_probe.png")
    whole_rows = [r["copy_us"] for r in rows if r["cpu_share"] == 1.0]
    by_run = [[r["copy_us"] for r in rows if r["run"] == k and r["cpu_share"] == 1.0] for k in range(1, args.runs + 1)]
    spread = max(100 * (max(v) - min(v)) / min(v) for v in by_run)
    shared = [r for r in rows if r["cpu_share"] < 1]
    worst = max((r["ratio_error_pct"] for r in shared), key=abs)
    slowest_share = min(r["ratio_to_whole_cores"] for r in shared)
    write_markdown(
        out / "cpu_probe.md",
        "The CPU probe against the CPU quota",
        [
            f"{args.runs} calibrations (`--layout auto --quick`) of {len(SHARES)} hosts at {RATE_MBIT} Mbit/s, "
            f"CPU shares {SHARES}; {time.monotonic() - t0:.0f} s.\n\n## Claims\n",
            claim(
                "hosts are grouped by CPU share in every run (equal shares one type, each share its own)",
                all(grouped),
                f"{sum(grouped)} of {len(grouped)} runs",
            ),
            claim(
                "equal processors probe alike (within a run, the whole-core hosts within 5 % of each other)",
                spread <= 5,
                f"widest spread {spread:.2f} % (probe {min(whole_rows):.3f}-{max(whole_rows):.3f} µs per copy)",
            ),
            claim(
                "every host with a share probes more than 25 % slower than the whole-core hosts (the CPU split's "
                "threshold, calibrate.protocol.CPU_TOLERANCE)",
                slowest_share >= 1.25,
                f"least ratio {slowest_share:.2f}; the ratio against 1 / share: worst {worst:+.1f} % "
                f"(error = 100·(ratio − 1/share)/(1/share))",
            ),
            "\n## Rows\n\n",
            md_table(rows, fmt="{:.3f}"),
        ],
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
