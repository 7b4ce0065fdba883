"""MPICH's Bruck alltoall and its receives into an indexed datatype, under MPI_THREAD_SINGLE and MPI_THREAD_MULTIPLE
(docs/accuracy.md, "MPICH's Bruck alltoall at 256 KiB").

On the 6-host cluster of ``experiments/cluster_accuracy.py`` (150/20/50/50/150/20 Mbit/s, one rank each), per thread
level (one MPI job each: mpi4py's ``rc.thread_level``) and size, the median of ``--reps`` calls (µs; each after a
barrier, the slowest rank's time) of three forms of the same messages:

* ``mpich``: ``MPI_Alltoall`` with ``MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM=brucks``;
* ``contiguous``: Bruck's ``ceil(lg p)`` steps by hand, each an ``MPI_Sendrecv`` (to ``r + 2**k``, from
  ``r - 2**k``) of the blocks whose index has bit k set, sent and received as contiguous bytes;
* ``indexed``: the same, received into the indexed datatype ``MPIR_Alltoall_intra_brucks`` builds
  (``MPI_Type_create_indexed_block`` over the blocks of the receive buffer).

Beside them, each rank's end of each step in the hand-written forms (ms, medians over the calls) and the model's
prediction of Bruck's alltoall with ``--profile`` (the flow engine's ``flow-rr``, no MPI). Writes ``bruck_receive.csv``
and ``bruck_receive.md`` under ``experiments/out/bruck_receive/`` (or ``--out``). Needs root; runs under the machine's
MPI lock; the cluster is taken down after.

    python experiments/bruck_receive.py --sizes 192K,256K --profile PROFILE
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from cluster_accuracy import SPEC
from common import command_line, md_table, outdir, parser, run_mpi_python, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel.errors import HnowError, InputError, LayoutError
from hnowmodel.jobs.checks import by_host_name
from hnowmodel.jobs.launcher import Launch
from hnowmodel.sizes import parse_sizes

THREAD_LEVELS = ("single", "multiple")
# the ranks' program: argv = sizes, reps, thread level
PROGRAM = r"""
import json, sys
import mpi4py
mpi4py.rc.thread_level = sys.argv[3]
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
r, n, reps = c.rank, c.size, int(sys.argv[2])
out = {}
for m in (int(x) for x in sys.argv[1].split(",")):
    sb, rb, work = np.ones(n * m // 8), np.zeros(n * m // 8), np.zeros(n * m // 8)
    steps, d = [], 1
    while d < n:
        pos = [p for p in range(1, n) if p & d]
        idx = MPI.BYTE.Create_indexed_block(m, [p * m for p in pos]).Commit()
        steps.append((d, idx, np.zeros(len(pos) * m // 8), np.zeros(len(pos) * m // 8)))
        d <<= 1
    def by_hand(indexed):
        marks = []
        for d, idx, sbuf, rbuf in steps:
            c.Sendrecv(sbuf, (r + d) % n, 7, [work, 1, idx] if indexed else rbuf, (r - d) % n, 7)
            marks.append(MPI.Wtime())
        return marks
    forms = {"mpich": lambda: [c.Alltoall(sb, rb), MPI.Wtime()][1:], "contiguous": lambda: by_hand(False),
             "indexed": lambda: by_hand(True)}
    res = {}
    for name, fn in forms.items():
        total, ends = [], []
        for i in range(reps + 1):
            c.Barrier()
            t0 = MPI.Wtime()
            rel = [(t - t0) * 1e6 for t in fn()]
            every = c.gather(rel, root=0)
            worst = c.allreduce(rel[-1], op=MPI.MAX)
            if i:  # the first call sets the connections up
                total.append(worst)
                ends.append(every)
        res[name] = {"calls_us": total, "step_ends_us": ends}
    out[m] = res
if r == 0:
    print("hnow-bruck: " + json.dumps(out))
"""


def measure(level: str, sizes: Sequence[int], reps: int, spec: Path) -> dict:
    """One MPICH job at thread level ``level`` on the cluster ``spec``: {size: {form: calls and step ends}}."""
    n = len(SPEC["hosts"])
    launch = Launch(np=n, cluster=str(spec), mpi="mpich", env={"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "brucks"})
    return run_mpi_python(launch, PROGRAM, [",".join(map(str, sizes)), str(reps), level], "hnow-bruck")


def rows_of(level: str, got: dict, predicted: dict[int, float]) -> list[dict]:
    """A row per size and form: the median and every call (µs), each rank's step ends (ms), the prediction.

    >>> got = {"8": {"indexed": {"calls_us": [3.0, 1.0, 2.0], "step_ends_us": [[[1000.0], [2000.0]]] * 3}}}
    >>> r = rows_of("single", got, {8: 4.0})[0]
    >>> r["median_us"], r["error_pct"], r["step_ends_ms"]
    (2.0, 100.0, '1 2')
    """
    rows = []
    for m, forms in got.items():
        for form, d in forms.items():
            med = statistics.median(d["calls_us"])
            ends = d["step_ends_us"]
            per_step = [
                " ".join(f"{statistics.median(call[rk][k] for call in ends) / 1e3:.0f}" for rk in range(len(ends[0])))
                for k in range(len(ends[0][0]))
            ]
            pred = predicted.get(int(m))
            rows.append({"thread_level": level, "size": int(m), "form": form, "median_us": med,
                         "calls_us": " ".join(f"{t:.0f}" for t in d["calls_us"]), "predicted_us": pred,
                         "error_pct": None if pred is None else 100.0 * (pred - med) / med,
                         "step_ends_ms": " | ".join(per_step) if form != "mpich" else ""})  # fmt: skip
    return rows


def predictions(profile: str | None, sizes: Sequence[int]) -> dict[int, float]:
    """The model's time of MPICH's Bruck alltoall on the spec's hosts per size (µs; none without a profile)."""
    if profile is None:
        return {}
    prof = hm.Profile.load(profile)
    try:
        layout = by_host_name(prof, tuple(h["name"] for h in SPEC["hosts"]))
    except LayoutError as e:
        raise InputError(f"--profile {profile}: {e}") from None
    if layout is None:
        raise InputError(f"--profile {profile}: calibrated on none of the cluster's hosts")
    times = hm.predict("alltoall", prof, layout, "native:brucks", list(sizes), library="MPICH")
    return {m: float(t) for m, t in zip(sizes, times, strict=True)}


def main(argv: Sequence[str] | None = None) -> None:
    p = parser("bruck_receive", __doc__)
    p.add_argument("--sizes", default="192K,256K", help="bytes per block (default 192K,256K)")
    p.add_argument("--reps", type=int, default=3, help="timed calls of each form, their median (default 3)")
    p.add_argument("--profile", default=None, help="a profile calibrated on this cluster, for the predictions")
    args = p.parse_args(argv)
    if not 1 <= args.reps <= 100:
        p.exit(2, "bruck_receive: --reps 1..100\n")
    try:
        sizes = parse_sizes(args.sizes)
        predicted = predictions(args.profile, sizes)
    except HnowError as e:
        p.exit(2, f"bruck_receive: {e}\n")
    out = outdir(args.out)
    spec = out / "spec.json"
    spec.write_text(json.dumps({**SPEC, "name": "bruckr"}))
    rows = []
    with hm.cluster.using(str(spec)):
        for level in THREAD_LEVELS:
            rows += rows_of(level, measure(level, sizes, args.reps, spec), predicted)
    write_csv(out / "bruck_receive.csv", rows)
    cols = ["thread_level", "size", "form", "median_us", "predicted_us", "error_pct", "calls_us", "step_ends_ms"]
    body = [f"Reproduce with `{command_line()}` (as root).", "", md_table(rows, cols, "{:.1f}")]
    write_markdown(out / "bruck_receive.md", "MPICH's Bruck alltoall: receives into an indexed datatype", body)
    print(md_table(rows, cols, "{:.1f}"))


if __name__ == "__main__":
    main()
