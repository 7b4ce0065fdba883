"""Open MPI's coll/tuned algorithms for reduce, allreduce, allgather, reduce_scatter and alltoall, pinned as the
registry pins them (``native:ALGO``) and by default (``native``: the fixed rules), run on 2 and 4 ranks: every
rank's result checked, and Open MPI's pml monitoring sees exactly the messages of the schedules that model them (per
pair of ranks: bytes, messages, message sizes by powers of two). On 2 ranks most algorithms are one exchange (what
checks the two_proc ones and the 2-rank rules); 4 ranks tell recursive doubling, the rings, Bruck's and
Rabenseifner's apart (not the order of the alltoalls' messages, which a count per pair cannot show). Several
operations share one launch (each pinned independently), so the messages compared are their sum; 9 launches.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter

import pytest

from hnowmodel import ops
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import openmpi_missing
from hnowmodel.libraries.openmpi.tuned import OP_ALGORITHMS

MISSING = openmpi_missing()
M = 4096  # bytes: 512 doubles, whole halves, more elements than ranks (no algorithm falls back)
SCHEDULE_OPS = tuple(OP_ALGORITHMS)

_PROBE = """
import sys
import numpy as np
from mpi4py import MPI
c, m = MPI.COMM_WORLD, int(sys.argv[1])
n, r, k = c.size, c.rank, int(sys.argv[1]) // 8
mine = np.full(k, r + 1.0)
total = n * (n + 1) / 2
out = np.zeros(k)
c.Reduce(mine, out, MPI.SUM, root=0)
assert r or (out == total).all(), "reduce"
c.Allreduce(mine, out, MPI.SUM)
assert (out == total).all(), "allreduce"
blocks = np.zeros(n * k)
c.Allgather(mine, blocks)
assert (blocks.reshape(n, k) == np.arange(1, n + 1)[:, None]).all(), "allgather"
c.Reduce_scatter_block(np.repeat(np.arange(n) + r, k).astype(float), out, MPI.SUM)
assert (out == n * r + total - n).all(), "reduce_scatter_block"
send = (100 * r + np.repeat(np.arange(n), k)).astype(float)
c.Alltoall(send, blocks)
assert (blocks.reshape(n, k) == 100 * np.arange(n)[:, None] + r).all(), "alltoall"
"""


def _modelled(op: str, n: int) -> list[str]:
    """The native specs of ``op`` (its default first) whose model runs on ``n`` ranks at M bytes."""
    nats = (OP_ALGORITHMS[op].native, *OP_ALGORITHMS[op].pinned_only)
    return [ops.NATIVE if a.algorithm == "default" else f"native:{a.algorithm}" for a in nats if a.tree_at(n, M)]


def _wire(env: dict[str, str], n: int) -> Counter:
    """(sender, receiver, size bucket) -> messages, and (sender, receiver) -> bytes, of the probe's messages (Open
    MPI's pml monitoring)."""
    where = Launch(np=n, mpi="openmpi").mpi_env
    mon = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "2"]
    cmd = [where.launcher, "-n", str(n), *where.launcher_args, *mon, where.python, "-c", _PROBE, str(M)]
    with mpi_lock():
        p = subprocess.run(
            cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
            env={**os.environ, **where.env, **env},
        )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    got: Counter = Counter()
    # per pair an E line (messages with a user's tag) and/or an I line (a collective's tag); the first of them
    # carries the pair's histogram of every message's size (bucket k: lg size in [k - 1, k)). The probe sends
    # nothing itself: both are the collectives' messages.
    line = r"^[EI]\t(\d+)\t(\d+)\t(\d+) bytes\t\d+ msgs sent(?:\t([\d,]+))?"
    for a, b, nbytes, hist in re.findall(line, p.stdout + p.stderr, re.M):
        got[(int(a), int(b))] += int(nbytes)
        for bucket, count in enumerate(map(int, hist.split(",") if hist else ())):
            if count:
                got[(int(a), int(b), bucket)] += count
    return got


def _model(op: str, spec: str, n: int = 2) -> Counter:
    """The same counts for the schedule that models ``spec`` (a message of s bytes in bucket floor(lg s) + 1)."""
    name = ops.native_for(spec, op, "Open MPI").tree_at(n, M)
    out: Counter = Counter()
    for step in ops.get(op).algorithm(name).schedule(n, M).unrolled():
        for a, b, s in zip(step.src.tolist(), step.dst.tolist(), step.nbytes.tolist(), strict=True):
            out[(a, b)] += int(s)
            out[(a, b, int(s).bit_length())] += 1
    return out


@pytest.mark.mpi
@pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")
@pytest.mark.parametrize("n", [2, 4])
def test_each_pinned_algorithm_sends_its_models_messages(n):
    per_op = {op: _modelled(op, n) for op in SCHEDULE_OPS}
    assert all(per_op.values()), per_op
    for i in range(max(map(len, per_op.values()))):
        # launch i pins each operation's i-th modelled algorithm (its first again once they run out)
        specs = {op: s[i] if i < len(s) else s[0] for op, s in per_op.items()}
        env = {k: v for op, spec in specs.items() for k, v in ops.native_spec_env(spec, [op]).items()}
        want = sum((_model(op, spec, n) for op, spec in specs.items()), Counter())
        assert _wire(env, n) == want, specs


def test_the_models_tell_the_algorithms_apart_on_two_ranks():
    """What the test above can see: on 2 ranks recursive doubling sends one message each way, the rings and
    Rabenseifner's two halves; the default at 4 KiB is the fixed rules' allreduce 4 (ring)."""
    assert _model("allreduce", "native:recursive_doubling")[(0, 1, 13)] == 1
    assert _model("allreduce", "native:rabenseifner")[(0, 1, 12)] == 2 == _model("allreduce", "native")[(0, 1, 12)]
