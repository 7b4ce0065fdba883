"""MPICH's default bcast runs what ``native:default`` models on either side of its 8-rank boundary.

On a 9-host virtual cluster, every rank reads its TCP payload bytes to every peer (``ss -tin`` in its host's
namespace) around one 64 KiB ``MPI_Bcast`` with MPICH's own choice (``ops.native_spec_env("native:default")``, its
bcast algorithm variable unset): the bytes each (sender, receiver) pair carried are those of the algorithm the
model says runs there. 7 ranks: binomial (the table's ``comm_size<8``); 8 ranks: the binomial scatter of 8 KiB
chunks then the recursive-doubling allgather (``comm_size<8`` read as written, as ``MPIR_Csel_prune`` does, not as
``<= 8``: the pairs differ from the ring's, which sends to the next rank only); 9 ranks: scatter + ring. Behaviour
only, never timing. Skipped, with the reason, where there is no root or no network namespaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hnowmodel.cluster as hc
from hnowmodel import ops
from hnowmodel.jobs import mpi_lock
from hnowmodel.schedules import fromtree
from hnowmodel.trees import binomial
from tests.helpers import PEER_BYTES

from . import needs_netns

pytestmark = pytest.mark.mpi

_M = 65536


def _pairs(model: str, n: int) -> dict[tuple[int, int], float]:
    """``(sender, receiver) -> bytes`` of a 64 KiB bcast on ``n`` ranks by ``model`` (a bcast schedule algorithm's
    name, or ``binomial``: MPICH's binomial tree, the message once down each edge)."""
    alg = ops.get("bcast").schedule_algorithm(model)
    sched = alg.schedule(n, float(_M)) if alg else fromtree.from_tree(binomial(n), np.full(n, float(_M)))
    pairs: dict[tuple[int, int], float] = {}
    for st in sched.steps:
        for a, b, x in zip(st.src.tolist(), st.dst.tolist(), (st.nbytes * st.repeat).tolist(), strict=True):
            if x > 0:
                pairs[(a, b)] = pairs.get((a, b), 0.0) + x
    return pairs


def _measured_pairs(stdout: str) -> dict[tuple[int, int], int]:
    """From :data:`tests.helpers.PEER_BYTES`' output: ``(sender, receiver) -> bytes`` above 1 KiB (the barriers'
    few hundred bytes left out)."""
    line = next(ln for ln in stdout.splitlines() if ln.startswith(f"edges bcast {_M} "))
    doc = json.loads(line.split(" ", 3)[3])
    return {(int(a), int(b)): v for a, row in doc.items() for b, v in row.items() if v > 1024}


@needs_netns
def test_the_default_bcast_is_binomial_below_8_ranks_and_scatter_allgather_from_8(tmp_path, cleanup):
    # on 8 ranks the two allgathers send to different peers (the counts alone would not tell them apart)
    assert set(_pairs("scatter_recursive_doubling_allgather", 8)) != set(_pairs("scatter_ring_allgather", 8))
    name = f"xb{os.getpid() % 100000}"
    cleanup.append(name)
    spec = {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": f"h{i}", "egress_mbit": 500, "ingress_mbit": 500, "slots": 1} for i in range(1, 10)],
    }
    up = hc.up(spec)
    script = tmp_path / "peers.py"
    script.write_text(PEER_BYTES)
    env = {**os.environ, **ops.native_spec_env("native:default", ["bcast"])}
    for var in ops.native_spec_unset("native:default", ["bcast"]):
        env.pop(var, None)
    for n, model in ((7, "binomial"), (8, "scatter_recursive_doubling_allgather"), (9, "scatter_ring_allgather")):
        assert ops.native_for("native:default", "bcast", "MPICH").tree_at(n, _M) == model
        ls = hc.launch_settings(up, n)
        cmd = ["mpiexec", *ls.mpiexec_args, "-n", str(n), sys.executable, str(script), "bcast", str(_M)]
        with mpi_lock():
            run = subprocess.run(cmd, capture_output=True, text=True, env={**env, **ls.env}, timeout=180,
                                 stdin=subprocess.DEVNULL)  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        got, want = _measured_pairs(run.stdout), _pairs(model, n)
        assert set(got) == set(want), (n, model, sorted(got), sorted(want))
        for pair, nbytes in want.items():  # MPICH's and UCX's headers: a few bytes per message
            assert nbytes <= got[pair] <= nbytes + 512, (n, model, pair, got[pair], nbytes)
