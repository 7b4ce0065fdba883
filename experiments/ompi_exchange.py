"""Whether an MPI library moves two rendezvous messages between the same two ranks both ways at once: an exchange
(``MPI_Sendrecv`` of m bytes each way) against one message one way, on a virtual cluster of two hosts (150 and
20 Mbit/s; ``--slots`` ranks each, the first of each host exchanging, the others idle), for MPICH and Open MPI
(docs/open-mpi.md, "Which way an exchange goes"; :mod:`hnowmodel.schedules.handshake`).

Three exchanges per size, each against one message one way (the ratio: 1 both ways at once, 2 one after the other):
``exchange``, both ranks calling ``MPI_Sendrecv`` after a barrier; ``late_busy``, the rank on the slow host
starting ``--late-ms`` later, spinning outside MPI meanwhile (its time minus the delay); ``late_waiting``, the
rank on the slow host first waiting inside MPI for a small message that its partner sends after posting its own
half of the exchange (so the partner's request reaches it while it waits in MPI).

Per library and size: the median of ``--reps`` calls of each (µs, the slower rank's time after a barrier), every
call's time, and the ratios. Writes ``ompi_exchange.csv`` and ``ompi_exchange.md`` under
``experiments/out/ompi_exchange/`` (or ``--out``). Needs root; runs under the machine's MPI lock; the cluster is
taken down after.

    python experiments/ompi_exchange.py --mpi mpich,openmpi,intelmpi --sizes 16K,64K,256K
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from common import command_line, md_table, outdir, parser, run_mpi_python, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel.errors import InputError
from hnowmodel.jobs import MPI_LIBRARIES
from hnowmodel.jobs.launcher import Launch
from hnowmodel.sizes import parse_sizes

SPEC = {
    "schema": "hnowmodel.cluster/1",
    "name": "xch",
    "hosts": [
        {"name": "f1", "slots": 1, "egress_mbit": 150, "ingress_mbit": 150},
        {"name": "s1", "slots": 1, "egress_mbit": 20, "ingress_mbit": 20},
    ],
}
# the ranks' program: after a barrier, each of REPS calls timed on both ranks, the slower one kept
PROGRAM = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
r, reps, late, k = c.rank, int(sys.argv[2]), float(sys.argv[3]) / 1e3, c.size // 2  # ranks 0 and k exchange
peer = {0: k, k: 0}.get(r)
note = np.zeros(1)
out = {}
def spin_then(fn):  # rank k (the slow host) starts late, busy outside MPI meanwhile
    if r == k:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < late:
            pass
    fn()
def waiting(a, b):  # rank 0 posts its half, then a small eager message; rank k waits for it inside MPI first
    if r == 0:
        reqs = [c.Irecv(b, k, 0), c.Isend(a, k, 0)]
        c.Send(note, k, 9)
        MPI.Request.Waitall(reqs)
    elif r == k:
        c.Recv(note, 0, 9)
        c.Sendrecv(a, 0, 0, b, 0, 0)
for m in (int(x) for x in sys.argv[1].split(",")):
    a, b = np.ones(m // 8), np.zeros(m // 8)
    def timed(fn):
        ts = []
        for _ in range(reps + 1):
            c.Barrier()
            t0 = MPI.Wtime()
            fn()
            ts.append(c.allreduce(MPI.Wtime() - t0, op=MPI.MAX) * 1e6)
        return ts[1:]  # the first call warms the connection up
    out[m] = {"exchange": timed(lambda: peer is None or c.Sendrecv(a, peer, 0, b, peer, 0)),
              "one_way": timed(lambda: peer is None or (c.Send(a, k) if r == 0 else c.Recv(b, 0))),
              "late_busy": [t - late * 1e6 for t in
                            timed(lambda: peer is None or spin_then(lambda: c.Sendrecv(a, peer, 0, b, peer, 0)))],
              "late_waiting": timed(lambda: peer is None or waiting(a, b))}
if r == 0:
    print("hnow-exchange: " + json.dumps(out))
"""


def measure(mpi: str, sizes: Sequence[int], reps: int, spec: Path, slots: int, late_ms: float) -> list[dict]:
    """One job of ``mpi`` on the cluster ``spec`` (``slots`` ranks per host, the first of each exchanging, the
    others idle in the timing's barrier): a row per size."""
    launch = Launch(np=2 * slots, cluster=str(spec), mpi=mpi)
    got = run_mpi_python(launch, PROGRAM, [",".join(map(str, sizes)), str(reps), str(late_ms)], "hnow-exchange")
    rows = []
    for m in sizes:
        calls = got[str(m)]
        med = {case: statistics.median(ts) for case, ts in calls.items()}
        one = med["one_way"]
        row = {"mpi": mpi, "ranks_per_host": slots, "size": m, "one_way_us": one}
        for case in ("exchange", "late_busy", "late_waiting"):
            row[f"{case}_us"], row[f"{case}_ratio"] = med[case], med[case] / one
        for case, ts in calls.items():
            row[f"{case}_calls_us"] = " ".join(f"{t:.0f}" for t in ts)
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    p = parser("ompi_exchange", __doc__)
    p.add_argument("--mpi", default="mpich,openmpi", help="libraries, comma-separated (default mpich,openmpi)")
    p.add_argument("--sizes", default="16K,48K,64K,96K,192K,384K", help="bytes each way")
    p.add_argument("--reps", type=int, default=5, help="timed calls of each, their median (default 5)")
    p.add_argument("--slots", type=int, default=1, help="ranks per host, the others idle (default 1; 6: 12 ranks)")
    p.add_argument("--late-ms", type=float, default=50.0, help="how late the slow host's rank starts (default 50)")
    args = p.parse_args(argv)
    libs = [x.strip() for x in args.mpi.split(",") if x.strip()]
    bad = [x for x in libs if x not in MPI_LIBRARIES]
    if bad or not 1 <= args.reps <= 1000 or not 1 <= args.slots <= 64 or not 0 <= args.late_ms <= 10_000:
        p.exit(
            2,
            f"ompi_exchange: --mpi choose from {', '.join(MPI_LIBRARIES)}; --reps 1..1000; --slots 1..64; "
            "--late-ms 0..10000\n",
        )
    try:
        sizes = parse_sizes(args.sizes)
    except InputError as e:
        p.exit(2, f"ompi_exchange: {e}\n")
    out = outdir(args.out)
    spec = out / "spec.json"
    spec.write_text(json.dumps({**SPEC, "hosts": [{**h, "slots": args.slots} for h in SPEC["hosts"]]}))
    rows = []
    with hm.cluster.using(str(spec)):
        for mpi in libs:
            rows += measure(mpi, sizes, args.reps, spec, args.slots, args.late_ms)
    write_csv(out / "ompi_exchange.csv", rows)
    cols = ["mpi", "ranks_per_host", "size", "one_way_us", "exchange_ratio", "late_busy_ratio", "late_waiting_ratio"]
    body = [f"Reproduce with `{command_line()}` (as root).", "", md_table(rows, cols, "{:.2f}")]
    write_markdown(out / "ompi_exchange.md", "Exchange against one way, two hosts", body)
    print(md_table(rows, cols, "{:.2f}"))


if __name__ == "__main__":
    main()
