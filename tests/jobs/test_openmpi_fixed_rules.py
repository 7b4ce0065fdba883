"""Which coll/tuned algorithm Open MPI's fixed rules really run, seen by a debugger: rank 0 runs under ``gdb`` with a
breakpoint on every ``ompi_coll_base_<op>_intra_*`` function of reduce, allreduce, allgather, reduce_scatter_block
and alltoall (``nm -D libmpi.so``), each printing its name and going on; the probe calls the five operations on 6
ranks (one machine: the rules look at the communicator size and the bytes, not at the network) at the accuracy
experiment's 16, 64 and 256 KiB, marking each call. The first function each call enters must be the one
:func:`hnowmodel.libraries.openmpi.tuned.fixed_algorithm` names (its id mapped to its function as
``coll_tuned_<op>_decision.c``'s ``*_intra_do_this`` switch does).

What this settled: Open MPI's default alltoall on 6 ranks at 64 and 256 KiB per block is the basic linear one (alg
1), as the rules table says (linear_sync at 16 KiB, which with ``max_requests`` 0 posts the same requests at once);
the export run that measured it 11-47 % slower than the pinned ``native:linear`` saw the same algorithm's spread
(its 5 calls 152-240 and 556-937 ms; the pinned one's 137-195 and 555-920 ms)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import openmpi_missing
from hnowmodel.libraries.openmpi.tuned import fixed_algorithm

MISSING = openmpi_missing()
SIZES = (16384, 65536, 262144)

#: tuned's id -> the base function it calls (``ompi_coll_tuned_<op>_intra_do_this``, Open MPI 5.0.x).
FUNCTIONS = {
    "reduce": {1: "reduce_intra_basic_linear", 2: "reduce_intra_chain", 3: "reduce_intra_pipeline",
               4: "reduce_intra_binary", 5: "reduce_intra_binomial", 6: "reduce_intra_in_order_binary",
               7: "reduce_intra_redscat_gather"},
    "allreduce": {1: "allreduce_intra_basic_linear", 2: "allreduce_intra_nonoverlapping",
                  3: "allreduce_intra_recursivedoubling", 4: "allreduce_intra_ring",
                  5: "allreduce_intra_ring_segmented", 6: "allreduce_intra_redscat_allgather"},
    "allgather": {1: "allgather_intra_basic_linear", 2: "allgather_intra_bruck", 3: "allgather_intra_recursivedoubling",
                  4: "allgather_intra_ring", 5: "allgather_intra_neighborexchange", 6: "allgather_intra_two_procs",
                  7: "allgather_intra_sparbit"},
    "reduce_scatter": {2: "reduce_scatter_block_intra_recursivedoubling",
                       3: "reduce_scatter_block_intra_recursivehalving", 4: "reduce_scatter_block_intra_butterfly"},
    "alltoall": {1: "alltoall_intra_basic_linear", 2: "alltoall_intra_pairwise", 3: "alltoall_intra_bruck",
                 4: "alltoall_intra_linear_sync", 5: "alltoall_intra_two_procs"},
}  # fmt: skip

_PROBE = """
import sys
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
n = c.size
for m in map(int, sys.argv[1:]):
    k = m // 8
    v, out, blocks = np.ones(k), np.zeros(k), np.zeros(n * k)
    calls = {
        "reduce": lambda: c.Reduce(v, out, MPI.SUM, root=0),
        "allreduce": lambda: c.Allreduce(v, out, MPI.SUM),
        "allgather": lambda: c.Allgather(v, blocks),
        "reduce_scatter": lambda: c.Reduce_scatter_block(np.ones(n * k), out, MPI.SUM),
        "alltoall": lambda: c.Alltoall(np.ones(n * k), blocks),
    }
    for op, call in calls.items():
        c.Barrier()
        if c.rank == 0:
            print(f"CALL {op} {m}", flush=True)
        c.Barrier()
        call()
"""


def _gdb_script(path: Path) -> None:
    lines = ["set breakpoint pending on", "set pagination off"]
    for fn in sorted({f for funcs in FUNCTIONS.values() for f in funcs.values()}):
        lines += [f"break ompi_coll_base_{fn}", "commands", "silent", f"echo HIT {fn}\\n", "continue", "end"]
    path.write_text("\n".join([*lines, "run", ""]))


def _first_hits(out: str) -> dict[tuple[str, int], str]:
    """(op, m) -> the first base function the call entered (its nested calls follow it)."""
    first: dict[tuple[str, int], str] = {}
    call = None
    for line in out.splitlines():
        if mk := re.match(r"CALL (\w+) (\d+)$", line):
            call = (mk.group(1), int(mk.group(2)))
        elif (hit := re.match(r"HIT (\w+)$", line)) and call is not None and call not in first:
            first[call] = hit.group(1)
    return first


@pytest.mark.mpi
@pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")
@pytest.mark.skipif(shutil.which("gdb") is None, reason="no gdb here")
def test_the_fixed_rules_run_what_tuned_says_on_six_ranks(tmp_path):
    where = Launch(np=6, mpi="openmpi").mpi_env
    script, probe, wrap = tmp_path / "gdb.cmd", tmp_path / "probe.py", tmp_path / "wrap.sh"
    _gdb_script(script)
    probe.write_text(_PROBE)
    wrap.write_text(
        '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec gdb -q -batch -nx -x '
        f'{script} --args "$@"; fi\nexec "$@"\n'
    )
    wrap.chmod(0o755)
    cmd = [where.launcher, "-n", "6", *where.launcher_args, str(wrap), where.python, str(probe), *map(str, SIZES)]
    env = {**os.environ, **where.env, "OMPI_MCA_coll": "^han"}  # tuned's fixed rules, as `native` runs them
    for k in [k for k in env if k.startswith("OMPI_MCA_coll_tuned")]:
        del env[k]
    with mpi_lock():
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    got = _first_hits(p.stdout)
    want = {(op, m): FUNCTIONS[op][fixed_algorithm(op, 6, m)] for op in FUNCTIONS for m in SIZES}
    assert got == want
    # by hand (coll_tuned_decision_fixed.c, 6 ranks): reduce chain / binomial / linear; alltoall linear_sync at
    # 16 KiB (8192 <= m < 16384 is linear, 16384 <= m < 65536 linear_sync), basic linear from 64 KiB
    assert [got[("reduce", m)] for m in SIZES] == ["reduce_intra_chain", "reduce_intra_binomial",
                                                   "reduce_intra_basic_linear"]  # fmt: skip
    assert [got[("alltoall", m)] for m in SIZES] == ["alltoall_intra_linear_sync"] + ["alltoall_intra_basic_linear"] * 2
