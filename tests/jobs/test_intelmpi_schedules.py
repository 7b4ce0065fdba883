"""Intel MPI's algorithms for reduce, allreduce, allgather, reduce_scatter and alltoall, pinned as the registry pins
them (``I_MPI_ADJUST_<OP>``), on 2 local ranks.

The messages are read off the wire: with ``I_MPI_FABRICS=ofi`` (no shared memory) the two ranks exchange every
message over libfabric's TCP on the loopback, one ``sendmsg`` (a 24-byte header and the payload) or, for a few
bytes, one ``sendto`` per message, which ``strace`` records around each call. Each pinned algorithm must send
exactly the messages of the schedule that models it (sender, receiver, payload), every rank's result checked. On 2
ranks several algorithms send the same messages (docs/intel-mpi.md has the 4-rank reading that tells them apart);
what 2 ranks tell: the ring allreduce's two halves against recursive doubling's one exchange, the reduce's one
message up. ``hnow compare`` then puts a pinned one beside its model. Nothing here asserts a time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import intelmpi_missing
from hnowmodel.libraries.intelmpi.schedules import OP_ALGORITHMS
from tests.helpers import check_compared_row, gamma_profile_file, run_hnow

MISSING = intelmpi_missing() or ("" if shutil.which("strace") else "no strace here")
needs_impi = pytest.mark.skipif(bool(MISSING), reason=f"no Intel MPI environment or strace: {MISSING}")
M = 4096  # bytes: 512 doubles, whole halves; sent eagerly (one sendmsg each)
SCHEDULE_OPS = tuple(OP_ALGORITHMS)

_PROBE = """
import os, sys
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
n, r, k = c.size, c.rank, int(sys.argv[1]) // 8
mine, out, blocks = np.full(k, r + 1.0), np.zeros(k), np.zeros(n * k)
total = n * (n + 1) / 2
def mark(what):  # a syscall strace records: where each call's messages start and end
    os.access("/hnow-mark/" + what, os.F_OK)
for op in sys.argv[2].split(","):
    c.Barrier()
    mark(op + "-begin")
    if op == "reduce":
        c.Reduce(mine, out, MPI.SUM, root=0)
        assert r or (out == total).all(), op
    elif op == "allreduce":
        c.Allreduce(mine, out, MPI.SUM)
        assert (out == total).all(), op
    elif op == "allgather":
        c.Allgather(mine, blocks)
        assert (blocks.reshape(n, k) == np.arange(1, n + 1)[:, None]).all(), op
    elif op == "reduce_scatter":
        c.Reduce_scatter_block(np.repeat(np.arange(n) + r, k).astype(float), out, MPI.SUM)
        assert (out == n * r + total - n).all(), op
    elif op == "alltoall":
        c.Alltoall((100 * r + np.repeat(np.arange(n), k)).astype(float), blocks)
        assert (blocks.reshape(n, k) == 100 * np.arange(n)[:, None] + r).all(), op
    mark(op + "-end")
    c.Barrier()
"""
_SEND = re.compile(r"^\d+\s+(sendmsg|sendto)\(\d+<TCP:[^>]*>(.*)\)\s+=\s+(\d+)$")


def _wire(tmp_path, env: dict[str, str]) -> dict[str, Counter]:
    """op -> (sender, receiver, payload bytes) -> messages, of 2 ranks on this host over TCP (strace)."""
    where = Launch(np=2, mpi="intelmpi").mpi_env
    wrap = tmp_path / "trace.sh"
    wrap.write_text(
        '#!/bin/sh\nexec strace -f -qq -yy -e trace=sendmsg,sendto,access -o "$HNOW_TRACE/t.$PMI_RANK" "$@"\n'
    )
    wrap.chmod(0o755)
    cmd = [where.launcher, "-n", "2", *where.launcher_args, str(wrap), where.python, "-c", _PROBE, str(M)]
    full = {**os.environ, **where.env, "I_MPI_FABRICS": "ofi", "HNOW_TRACE": str(tmp_path), **env}
    with mpi_lock():
        p = subprocess.run([*cmd, ",".join(SCHEDULE_OPS)], capture_output=True, text=True, timeout=180, env=full,
                           stdin=subprocess.DEVNULL)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    got: dict[str, Counter] = {op: Counter() for op in SCHEDULE_OPS}
    for rank in (0, 1):
        op = None
        for ln in (tmp_path / f"t.{rank}").read_text().splitlines():
            mark = re.search(r'access\("/hnow-mark/(\w+)-(begin|end)"', ln)
            if mark:
                op = mark.group(1) if mark.group(2) == "begin" else None
            elif op and (s := _SEND.match(ln)):
                lens = [int(x) for x in re.findall(r"iov_len=(\d+)", s.group(2))]
                payload = sum(lens[1:]) if s.group(1) == "sendmsg" else int(s.group(3)) - 24  # a 24-byte header
                got[op][(rank, 1 - rank, payload)] += 1
    return got


def _model(op: str, name: str) -> Counter:
    """The same counts for the schedule ``name`` of ``op`` on 2 ranks at M bytes."""
    out: Counter = Counter()
    for step in ops.get(op).algorithm(name).schedule(2, M).unrolled():
        out.update(zip(step.src.tolist(), step.dst.tolist(), map(int, step.nbytes.tolist()), strict=True))
    return out


@pytest.mark.mpi
@needs_impi
def test_each_pinned_algorithm_sends_its_models_messages(tmp_path):
    """Two launches pin every modelled algorithm of the five operations at least once (each operation pinned on
    its own, all in one launch); every call's messages are its model's."""
    launches = [
        {"reduce": "binomial", "allreduce": "recursive_doubling", "allgather": "brucks",
         "reduce_scatter": "recursive_halving", "alltoall": "brucks"},
        {"reduce": "binomial", "allreduce": "ring", "allgather": "ring", "reduce_scatter": "recursive_halving",
         "alltoall": "pairwise"},
    ]  # fmt: skip
    for i, names in enumerate(launches):
        nats = {op: ops.native_for(f"native:{a}", op, "Intel MPI") for op, a in names.items()}
        env = {k: v for nat in nats.values() for k, v in nat.env.items()}
        (tmp_path / str(i)).mkdir()
        got = _wire(tmp_path / str(i), env)
        for op, nat in nats.items():
            assert got[op] == _model(op, nat.tree_at(2, M)), (op, nat.algorithm, dict(got[op]))
    # what the two launches tell apart: the ring's two halves each way against recursive doubling's one exchange
    assert (
        _model("allreduce", "ring")[(0, 1, M // 2)] == 2 and _model("allreduce", "recursive_doubling")[(0, 1, M)] == 1
    )


@pytest.mark.mpi
@needs_impi
def test_compare_puts_the_default_and_a_pinned_algorithm_beside_their_models(tmp_path):
    """``hnow compare --mpi intelmpi --trees native,native:ring`` (allreduce, allgather; 2 ranks, a layout of two
    types, so one rank per host as far as the model knows): the ring's rows are predicted by the ring schedule, the
    default's by the schedule the wire showed at that size (allreduce: recursive doubling at 1 KiB, Rabenseifner's
    at 16 KiB; allgather: recursive doubling)."""
    path = gamma_profile_file(tmp_path)
    prof = hm.Profile.load(path)
    proc = run_hnow(
        "compare", "--np", "2", "--mpi", "intelmpi", "--profile", str(path), "--layout", "FF",
        "--ops", "allreduce,allgather", "--trees", "native,native:ring", "--sizes", "1024,16384",
        "--reps", "2", "--iters", "2", "--json", timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {(r["op"], r["tree"], r["size"]): r for r in json.loads(proc.stdout)["rows"]}
    assert len(rows) == 8, sorted(rows)
    assert rows[("allreduce", "native", 16384)]["model_tree"] == "reduce_scatter_allgather"
    for (op, tree, m), r in rows.items():
        check_compared_row(r)
        name = ops.get(op).native["Intel MPI"].tree_at(2, m) if tree == "native" else "ring"
        assert name is not None and r["model_tree"] == name, r
        want = hm.predict(op, prof, ["fast", "fast"], name, [m], variant=r["variant"])[0]
        assert r["predicted_us"] == pytest.approx(want, rel=1e-9), r
