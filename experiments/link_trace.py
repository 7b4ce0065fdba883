"""Which link carries what, when: every host's bytes in and out against time during a library's own algorithm,
pinned, on a virtual cluster. A thread reads the root-side veth counters of each host (``tx_bytes``: toward the host,
its ingress; ``rx_bytes``: from it, its egress) every ``--interval-ms`` (0.5) while the job runs; the ranks time
``--calls`` calls, each after a barrier and a ``--pause-ms`` pause (300: the calls stand apart, and each
connection restarts its TCP window; 5: as a timed loop runs them back to back) (the first also opens the
connections). Frames count with their headers.

What it is for: seeing which message waits for which (docs/accuracy.md, "Again, with a calibration under Open MPI
alone on the machine": on 3 ranks Open MPI's recursive doubling sends the slow host's exchange message only once its
partner's message has come in). The sampling thread takes CPU from the ranks (on this 2-core machine a 0.5 ms
interval slowed 4 ranks' calls by half; 4 ms did not), so a call's time here is not a measurement: `hnow compare`
gives those.

Writes ``link_trace.csv`` (time in ms from the start of the first call, each host's bytes in and out so far),
``calls.csv`` (each call's start and end per rank, ms), ``link_trace.png`` (the rates, one panel per host) and
``link_trace.md`` under ``experiments/out/link_trace/`` (or ``--out``). Needs root; runs under the machine's MPI lock.

    python experiments/link_trace.py --spec SPEC --np 3 --mpi openmpi --op allreduce --algorithm recursive_doubling \
        --size 64K
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from common import md_table, outdir, parser, run_mpi_python, save_png, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.cluster.spec import load_spec
from hnowmodel.errors import HnowError
from hnowmodel.jobs import MPI_LIBRARIES
from hnowmodel.jobs.launcher import Launch
from hnowmodel.sizes import parse_sizes

#: The operations the ranks' program calls (mpi4py method, whether it takes a send and a receive buffer of p blocks).
CALLS = {"allreduce": ("Allreduce", 1), "allgather": ("Allgather", "p"), "alltoall": ("Alltoall", "p")}
PROGRAM = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
op, m, calls, recv_blocks, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
send = np.ones(m // 8 * (c.size if op == "Alltoall" else 1))
recv = np.zeros(m // 8 * (c.size if recv_blocks == "p" else 1))
marks = []
for _ in range(calls):
    c.Barrier()
    time.sleep(pause / 1e3)
    c.Barrier()
    t0 = time.time()
    getattr(c, op)(send, recv)
    marks.append((t0, time.time()))
got = c.gather(marks, root=0)
if c.rank == 0:
    print("hnow-trace: " + json.dumps(got))
"""


def _pin(mpi: str, op: str, algorithm: str) -> dict[str, str]:
    """The environment that pins ``algorithm`` of ``op`` in ``mpi`` (``native:ALGO``'s); HnowError naming the
    choices."""
    library = MPI_LIBRARIES[mpi].library
    nat = ops.native_for(f"native:{algorithm}", op, library)
    if nat is None:
        names = sorted({a.algorithm for a in ops.native_algorithms(op, library)})
        raise HnowError(f"--algorithm {algorithm!r}: {mpi} {op} has {', '.join(names) or 'none'}")
    return dict(nat.env)


def _sample(veths: dict[str, str], stop: threading.Event, rows: list, interval_s: float) -> None:
    files = {h: [open(f"/sys/class/net/{v}/statistics/{k}_bytes") for k in ("tx", "rx")] for h, v in veths.items()}
    try:
        while not stop.is_set():
            row = [time.time()]
            for fs in files.values():
                for f in fs:
                    f.seek(0)
                    row.append(int(f.read()))
            rows.append(row)
            time.sleep(interval_s)
    finally:
        for fs in files.values():
            for f in fs:
                f.close()


def trace(
    spec: str,
    np_: int,
    mpi: str,
    op: str,
    algorithm: str,
    size: int,
    calls: int,
    interval_ms: float = 0.5,
    pause_ms: float = 300.0,
) -> tuple[list, list, list]:
    """Run the job and sample the links: (host names, sample rows [unix s, then in/out bytes per host], marks)."""
    env = _pin(mpi, op, algorithm)
    with hm.cluster.using(spec) as st:
        veths = {h.name: h.veth for h in st.hosts}
        stop, rows = threading.Event(), []
        th = threading.Thread(target=_sample, args=(veths, stop, rows, interval_ms / 1e3), daemon=True)
        th.start()
        try:
            launch = Launch(np=np_, cluster=spec, mpi=mpi, env=env)
            marks = run_mpi_python(
                launch, PROGRAM, [CALLS[op][0], str(size), str(calls), str(CALLS[op][1]), str(pause_ms)], "hnow-trace"
            )
        finally:
            stop.set()
            th.join()
    return list(veths), rows, marks


def _plot(hosts: list[str], table: list[dict], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(hosts), 1, sharex=True, figsize=(9, 1.6 * len(hosts)), squeeze=False)
    axes = axes[:, 0]
    t = [r["time_ms"] for r in table]
    for ax, h in zip(axes, hosts, strict=True):
        for d in ("in", "out"):
            b = [r[f"{h}_{d}_bytes"] for r in table]
            rate = [0.0] + [8e-3 * (b[i] - b[i - 1]) / max(t[i] - t[i - 1], 1e-6) for i in range(1, len(b))]
            ax.plot(t, rate, label=f"{h} {d}", lw=0.8)
        ax.set_ylabel("Mbit/s")
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("ms from the first call's start")
    save_png(fig, path)


def main(argv: Sequence[str] | None = None) -> None:
    p = parser("link_trace", __doc__)
    p.add_argument("--spec", required=True, help="cluster spec file")
    p.add_argument("--np", type=int, default=0, help="ranks (default: the cluster's slots)")
    p.add_argument("--mpi", default="openmpi", help="mpich, openmpi or intelmpi (default openmpi)")
    p.add_argument("--op", default="allreduce", help=f"one of {', '.join(CALLS)}")
    p.add_argument("--algorithm", required=True, help="the library's algorithm to pin (as native:ALGO names it)")
    p.add_argument("--size", default="64K", help="bytes per rank (per block for allgather / alltoall)")
    p.add_argument("--calls", type=int, default=3, help="calls traced (default 3)")
    p.add_argument("--interval-ms", type=float, default=0.5, help="between samples (default 0.5; more: less CPU taken)")
    p.add_argument("--pause-ms", type=float, default=300.0, help="before each call, after a barrier (default 300)")
    args = p.parse_args(argv)
    try:
        sizes = parse_sizes(args.size)
        if len(sizes) != 1 or sizes[0] % 8 or sizes[0] <= 0:
            raise HnowError(f"--size {args.size!r}: one size, a multiple of 8 bytes")
        bad = {
            f"--mpi {args.mpi!r}: choose from {', '.join(MPI_LIBRARIES)}": args.mpi not in MPI_LIBRARIES,
            f"--op {args.op!r}: choose from {', '.join(CALLS)}": args.op not in CALLS,
            f"--calls {args.calls}: 1..20": not 1 <= args.calls <= 20,
            f"--np {args.np}: 0 (the cluster's slots) or more": args.np < 0,
            f"--interval-ms {args.interval_ms}: 0.1..100": not 0.1 <= args.interval_ms <= 100,
            f"--pause-ms {args.pause_ms}: 0..5000": not 0 <= args.pause_ms <= 5000,
        }
        for problem, is_bad in bad.items():
            if is_bad:
                raise HnowError(problem)
        _pin(args.mpi, args.op, args.algorithm)
        cspec = load_spec(args.spec)
    except HnowError as e:
        p.exit(2, f"link_trace: {e}\n")
    slots = sum(h.slots for h in cspec.hosts)
    if args.np > slots:
        p.exit(2, f"link_trace: --np {args.np} is more than the cluster's {slots} slots\n")
    try:
        out = outdir(args.out)
        hosts, rows, marks = trace(
            args.spec,
            args.np or slots,
            args.mpi,
            args.op,
            args.algorithm,
            sizes[0],
            args.calls,
            args.interval_ms,
            args.pause_ms,
        )
    except (HnowError, OSError) as e:
        p.exit(2, f"link_trace: {e}\n")
    t0 = min(m[0][0] for m in marks)
    t1 = max(m[-1][1] for m in marks)
    rows = [r for r in rows if t0 - 0.02 <= r[0] <= t1 + 0.02]  # the calls, not the job's start-up
    table = [
        {
            "time_ms": 1e3 * (r[0] - t0),
            **{f"{h}_{d}_bytes": r[1 + 2 * i + j] for i, h in enumerate(hosts) for j, d in enumerate(("in", "out"))},
        }
        for r in rows
    ]
    call_rows = [
        {"call": c, "rank": rank, "start_ms": 1e3 * (s - t0), "end_ms": 1e3 * (e - t0)}
        for rank, ms in enumerate(marks)
        for c, (s, e) in enumerate(ms)
    ]
    write_csv(out / "link_trace.csv", table)
    write_csv(out / "calls.csv", call_rows)
    _plot(hosts, table, out / "link_trace.png")
    body = [
        "Each call per rank (ms from the first call's start; the links: `link_trace.csv`, `link_trace.png`):\n\n",
        md_table(call_rows, fmt="{:.1f}"),
    ]
    write_markdown(out / "link_trace.md", f"Link trace: {args.mpi} {args.op} {args.algorithm}", body)
    print(f"link_trace: {len(rows)} samples of {len(hosts)} hosts, {args.calls} calls: {out}")


if __name__ == "__main__":
    main()
