"""Open MPI's coll/tuned algorithms for reduce, allreduce, allgather, reduce_scatter and alltoall, pinned as the
registry pins them (``native:ALGO``) and by default (``native``: the fixed rules).

On 4 ranks every modelled one runs pinned with every rank's result checked, and Open MPI's pml monitoring sees
exactly the messages of the schedule that models it (per pair of ranks: bytes, messages, message sizes by powers of
two): 4 ranks tell recursive doubling, the rings, Bruck's and Rabenseifner's apart (on 2 ranks most are one
exchange; the order of the alltoalls' messages no count per pair shows). Several operations share one launch (each
pinned independently), so the messages compared are their sum; 4 launches. On 2 ranks ``hnow compare`` puts the
default (the fixed rules: two_proc for allgather and alltoall among them) and a pinned algorithm beside their
models, size by size; and a rules file ``hnow export --format ompi-rules`` wrote for allreduce, with the settings of
its ``ompi-env.txt``, makes Open MPI run the algorithm chosen (recursive doubling where the fixed rules run the
ring), the other operations their fixed rules' choice."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import openmpi_missing
from hnowmodel.libraries.openmpi.tuned import OP_ALGORITHMS, default_model
from tests.helpers import check_compared_row, env_of_file, gamma_profile_file, run_hnow

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
    nats = (OP_ALGORITHMS[op].native, *OP_ALGORITHMS[op].alternatives)
    return [ops.NATIVE if a.algorithm == "default" else f"native:{a.algorithm}" for a in nats if a.tree_at(n, M)]


_ALLREDUCE_PROBE = """
import sys
import numpy as np
from mpi4py import MPI
c, k = MPI.COMM_WORLD, int(sys.argv[1]) // 8
out = np.zeros(k)
c.Allreduce(np.full(k, c.rank + 1.0), out, MPI.SUM)
assert (out == c.size * (c.size + 1) / 2).all(), "allreduce"
"""


def _wire(env: dict[str, str], n: int, probe: str = _PROBE) -> Counter:
    """(sender, receiver, size bucket) -> messages, and (sender, receiver) -> bytes, of the probe's messages (Open
    MPI's pml monitoring)."""
    where = Launch(np=n, mpi="openmpi").mpi_env
    mon = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "2"]
    cmd = [where.launcher, "-n", str(n), *where.launcher_args, *mon, where.python, "-c", probe, str(M)]
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
def test_each_pinned_algorithm_sends_its_models_messages():
    n = 4
    per_op = {op: _modelled(op, n) for op in SCHEDULE_OPS}
    assert all(per_op.values()), per_op
    for i in range(max(map(len, per_op.values()))):
        # launch i pins each operation's i-th modelled algorithm (its first again once they run out)
        specs = {op: s[i] if i < len(s) else s[0] for op, s in per_op.items()}
        env = {k: v for op, spec in specs.items() for k, v in ops.native_spec_env(spec, [op]).items()}
        want = sum((_model(op, spec, n) for op, spec in specs.items()), Counter())
        assert _wire(env, n) == want, specs


@pytest.mark.mpi
@pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")
def test_rabenseifner_on_six_ranks_sends_open_mpis_own_messages():
    """On 6 ranks (not a power of two) Open MPI's Rabenseifner allreduce folds its own way: 0 <-> 1 and 2 <-> 3 swap
    halves (2 KiB each way at 4 KiB), 1 -> 0 and 3 -> 2 send a reduced half, the even ranks go on (MPICH's fold sends
    0 -> 1 and 2 -> 3 the whole vector and the odd ones go on). The wire matches ``rabenseifner``'s schedule, and not
    MPICH's ``reduce_scatter_allgather``."""
    env = ops.native_spec_env("native:rabenseifner", ["allreduce"])
    got = _wire(env, 6, _ALLREDUCE_PROBE)
    assert got == _model("allreduce", "native:rabenseifner", 6)
    assert got[(0, 1)] == 2048 + 4096 and got[(1, 0)] == 2048 + 2048  # half, whole result / half, reduced half
    mpich = Counter()
    for step in ops.get("allreduce").algorithm("reduce_scatter_allgather").schedule(6, M).unrolled():
        for a, b, size in zip(step.src.tolist(), step.dst.tolist(), step.nbytes.tolist(), strict=True):
            mpich[(a, b)] += int(size)
    assert mpich[(0, 1)] == 4096 and got[(0, 1)] != mpich[(0, 1)]


def test_the_models_tell_the_algorithms_apart_on_two_ranks():
    """What the test above can see: on 2 ranks recursive doubling sends one message each way, the rings and
    Rabenseifner's two halves; the default at 4 KiB is the fixed rules' allreduce 4 (ring)."""
    assert _model("allreduce", "native:recursive_doubling")[(0, 1, 13)] == 1
    assert _model("allreduce", "native:rabenseifner")[(0, 1, 12)] == 2 == _model("allreduce", "native")[(0, 1, 12)]


@pytest.mark.mpi
@pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")
def test_compare_native_predicts_the_fixed_rules_choice_size_by_size(tmp_path):
    """``hnow compare --mpi openmpi --tree native`` of the five operations on 2 ranks: each row beside the schedule
    of the algorithm Open MPI's fixed rules run at its size, or a note where that one is not modelled
    (reduce_scatter_block's butterfly)."""
    path = gamma_profile_file(tmp_path)
    prof = hm.Profile.load(path)
    sizes = (1024, 65536)
    proc = run_hnow(
        "compare", "--np", "2", "--mpi", "openmpi", "--profile", str(path), "--layout", "FF",
        "--ops", ",".join(SCHEDULE_OPS), "--trees", "native", "--sizes", ",".join(map(str, sizes)),
        "--reps", "2", "--iters", "2", "--json", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {(r["op"], r["size"]): r for r in json.loads(proc.stdout)["rows"]}
    assert set(rows) == {(o, m) for o in SCHEDULE_OPS for m in sizes}
    for (op, m), r in rows.items():
        check_compared_row(r)
        alg = default_model(op, 2, m)
        if alg is None:
            assert r["predicted_us"] is None and "which algorithm runs hnow does not model" in r["note"], r
            continue
        assert r["model_tree"] == alg, r
        want = hm.predict(op, prof, ["fast", "fast"], alg, [m], variant=r["variant"])[0]
        assert r["predicted_us"] == pytest.approx(want, rel=1e-9), r
    assert [rows[("allreduce", m)]["model_tree"] for m in sizes] == ["recursive_doubling", "ring"]
    assert rows[("reduce_scatter", 1024)]["predicted_us"] is None  # butterfly (4)


@pytest.mark.mpi
@pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")
def test_a_pinned_algorithm_is_predicted_where_it_runs_and_noted_where_open_mpi_switches(tmp_path):
    """``native:rabenseifner`` (allreduce 6): Rabenseifner's schedule at 1 KiB; at 8 B (one double, fewer than the
    2 ranks' power of two) Open MPI runs its basic linear allreduce instead, which hnow does not model: a note."""
    path = gamma_profile_file(tmp_path)
    prof = hm.Profile.load(path)
    proc = run_hnow(
        "compare", "--np", "2", "--mpi", "openmpi", "--profile", str(path), "--layout", "FF", "--ops", "allreduce",
        "--trees", "native:rabenseifner", "--sizes", "8,1024", "--reps", "2", "--iters", "2", "--json", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {r["size"]: r for r in json.loads(proc.stdout)["rows"]}
    assert rows[8]["predicted_us"] is None
    assert "Open MPI's rabenseifner allreduce on 2 ranks at 8 B: hnow does not model it" in rows[8]["note"]
    want = hm.predict("allreduce", prof, ["fast", "fast"], "rabenseifner", [1024])[0]
    assert rows[1024]["predicted_us"] == pytest.approx(want, rel=1e-9)
    assert rows[1024]["model_tree"] == "rabenseifner"


@pytest.mark.mpi
@pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")
def test_an_exported_rules_file_makes_open_mpi_run_the_chosen_allreduce(tmp_path):
    """On 2 ranks at 4 KiB Open MPI's fixed rules run the ring allreduce (two halves each way); recursive doubling
    (one whole vector each way) is predicted faster, so the exported file selects it. With the file and its settings
    the wire shows recursive doubling's messages for the allreduce and the fixed rules' for the other operations."""
    path, out = gamma_profile_file(tmp_path), tmp_path / "ex"
    proc = run_hnow(
        "export", "--profile", str(path), "--layout", "FF", "--format", "ompi-rules", "--ops", "allreduce",
        "--sizes", str(M), "-o", str(out), "--json", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["ompi"]["rows"]
    assert (row["default"], row["chosen"]) == ("ring", "recursive_doubling")
    others = sum((_model(op, ops.NATIVE) for op in SCHEDULE_OPS if op != "allreduce"), Counter())
    want = _model("allreduce", "native:recursive_doubling") + others
    assert want != _model("allreduce", ops.NATIVE) + others  # the ring's messages are not these
    env = {k: v for k, v in env_of_file(out, "ompi-env.txt").items() if k.startswith("OMPI_")}
    assert env["OMPI_MCA_coll_tuned_dynamic_rules_filename"] == str((out / "ompi-rules.conf").resolve())
    assert _wire(env, 2) == want
