"""Whether an MPI library moves two rendezvous messages between the same two ranks both ways at once: an exchange
(``MPI_Sendrecv`` of m bytes each way) against one message one way, on a virtual cluster of two hosts (150 and
20 Mbit/s; ``--slots`` ranks each, the first of each host exchanging, the others idle), for MPICH and Open MPI
(docs/open-mpi.md, "Open MPI moves one rendezvous message at a time between two ranks"; the model's
``Profile.rendezvous_duplex``).

Per library and size: the median of ``--reps`` calls of each (µs, the slower rank's time after a barrier), every
call's time, and the ratio exchange / one way (1: both ways at once; 2: one after the other). Writes
``ompi_exchange.csv`` and ``ompi_exchange.md`` under ``experiments/out/ompi_exchange/`` (or ``--out``). Needs root;
runs under the machine's MPI lock; the cluster is taken down after.

    python experiments/ompi_exchange.py --mpi mpich,openmpi --sizes 16K,48K,64K,96K,192K,384K --slots 6
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
import json, sys
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
r, reps, k = c.rank, int(sys.argv[2]), c.size // 2  # ranks 0 and k: the first of each host
peer = {0: k, k: 0}.get(r)
out = {}
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
              "one_way": timed(lambda: peer is None or (c.Send(a, k) if r == 0 else c.Recv(b, 0)))}
if r == 0:
    print("hnow-exchange: " + json.dumps(out))
"""


def measure(mpi: str, sizes: Sequence[int], reps: int, spec: Path, slots: int) -> list[dict]:
    """One job of ``mpi`` on the cluster ``spec`` (``slots`` ranks per host, the first of each exchanging, the
    others idle in the timing's barrier): a row per size."""
    launch = Launch(np=2 * slots, cluster=str(spec), mpi=mpi)
    got = run_mpi_python(launch, PROGRAM, [",".join(map(str, sizes)), str(reps)], "hnow-exchange")
    rows = []
    for m in sizes:
        x, one = got[str(m)]["exchange"], got[str(m)]["one_way"]
        mx, mo = statistics.median(x), statistics.median(one)
        rows.append({"mpi": mpi, "ranks_per_host": slots, "size": m, "exchange_us": mx, "one_way_us": mo,
                     "ratio": mx / mo, "exchange_calls_us": " ".join(f"{t:.0f}" for t in x),
                     "one_way_calls_us": " ".join(f"{t:.0f}" for t in one)})  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    p = parser("ompi_exchange", __doc__)
    p.add_argument("--mpi", default="mpich,openmpi", help="libraries, comma-separated (default mpich,openmpi)")
    p.add_argument("--sizes", default="16K,48K,64K,96K,192K,384K", help="bytes each way")
    p.add_argument("--reps", type=int, default=5, help="timed calls of each, their median (default 5)")
    p.add_argument("--slots", type=int, default=1, help="ranks per host, the others idle (default 1; 6: 12 ranks)")
    args = p.parse_args(argv)
    libs = [x.strip() for x in args.mpi.split(",") if x.strip()]
    bad = [x for x in libs if x not in MPI_LIBRARIES]
    if bad or not 1 <= args.reps <= 1000 or not 1 <= args.slots <= 64:
        p.exit(2, f"ompi_exchange: --mpi choose from {', '.join(MPI_LIBRARIES)}; --reps 1..1000; --slots 1..64\n")
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
            rows += measure(mpi, sizes, args.reps, spec, args.slots)
    write_csv(out / "ompi_exchange.csv", rows)
    cols = ["mpi", "ranks_per_host", "size", "exchange_us", "one_way_us", "ratio", "exchange_calls_us"]
    body = [f"Reproduce with `{command_line()}` (as root).", "", md_table(rows, cols, "{:.2f}")]
    write_markdown(out / "ompi_exchange.md", "Exchange against one way, two hosts", body)
    print(md_table(rows, cols, "{:.2f}"))


if __name__ == "__main__":
    main()
