"""Which native algorithm ran on hosts of several ranks, told by each host's NIC traffic.

Two hosts of three ranks each (ranks 0-2 on ``h1``, 3-5 on ``h2``) run one ``MPI_Bcast`` of 256 KiB from rank 0
with a native algorithm pinned as ``hnow`` pins it (``ops.native_spec_env``); every rank reads its host's interface
byte counter (``eth0``'s ``tx_bytes`` in the host's namespace) around it. A rank's messages to ranks of its own host
go through shared memory and never touch the counter, so the bytes ``h1`` sent, in units of the message, are the
tree edges that leave it: MPICH's binomial tree crosses twice (0→4, 2→3), its node-aware ``smp`` bcast and the ch4
default ``composition:alpha`` once (0→3, then inside ``h2``); Open MPI's binomial three times (0→4, 1→3, 1→5), its
coll/han once. Each count is the model tree's own (``make_tree`` of the algorithm's model tree on these hosts), so
the test says the algorithm the model predicts for is the one that ran. Behaviour only, never timing.

Skipped, with the reason, where there is no root or no network namespaces (or no Open MPI environment for its test).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import hnowmodel.cluster as hc
from hnowmodel import ops
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import openmpi_missing
from hnowmodel.layout import Layout
from hnowmodel.libraries.openmpi.export import han_op_to_tuned
from hnowmodel.trees import make_tree
from tests.helpers import COUNTERS

from . import needs_netns

pytestmark = pytest.mark.mpi

_M = 262144
_HOSTS = [0, 0, 0, 1, 1, 1]
_LAYOUT = Layout(["node"] * 6, _HOSTS)
_MISSING_OMPI = openmpi_missing()


def _spec(name: str) -> dict:
    return {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": h, "egress_mbit": 200, "ingress_mbit": 200, "slots": 3} for h in ("h1", "h2")],
    }


def _crossings(model_tree: str) -> list[int]:
    """Per host, the edges of the model tree (on these hosts) from one of its ranks to another host's."""
    t = make_tree(model_tree, 6, layout=_LAYOUT)
    out = [0, 0]
    for c in range(1, 6):
        p = int(t.parent[c])
        if _HOSTS[p] != _HOSTS[c]:
            out[_HOSTS[p]] += 1
    return out


def _host_sends(stdout: str) -> list[int]:
    """From :data:`tests.helpers.COUNTERS`' output: the bytes each host sent, in units of the message (every rank
    of a host reads the same counter: its first rank's), and that every payload arrived intact."""
    line = next(ln for ln in stdout.splitlines() if ln.startswith(f"tx {_M} "))
    cells = [c.split(":") for c in line.split()[2:]]
    assert all(ok == "1" for _, _, ok in cells), line
    first = {}
    for h, b, _ in cells:
        first.setdefault(h, int(b))
    return [round(first[h] / _M) for h in ("h1", "h2")]


def _run(cmd: list[str], env: dict[str, str]) -> list[int]:
    with mpi_lock():
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-2000:]
    return _host_sends(r.stdout)


@needs_netns
def test_mpich_binomial_smp_and_composition_alpha_by_their_host_traffic(tmp_path, cleanup):
    name = f"na{os.getpid() % 100000}"
    cleanup.append(name)
    ls = hc.launch_settings(hc.up(_spec(name)), 6)
    script = tmp_path / "counters.py"
    script.write_text(COUNTERS)
    cmd = ["mpiexec", *ls.mpiexec_args, "-n", "6", sys.executable, str(script), str(_M)]
    seen = {}
    for spec in ("native:binomial", "native:smp", "native:composition:alpha"):
        model = ops.native_for(spec, "bcast", "MPICH").model_tree
        env = {**os.environ, **ls.env, **ops.native_spec_env(spec, ["bcast"])}
        for k in ops.native_spec_unset(spec, ["bcast"]):
            env.pop(k, None)
        seen[spec] = _run(cmd, env)
        assert seen[spec] == _crossings(model), (spec, model, seen[spec])
    assert seen["native:binomial"] == [2, 0] and seen["native:smp"] == seen["native:composition:alpha"] == [1, 0]


@pytest.mark.skipif(bool(_MISSING_OMPI), reason=f"no Open MPI environment here: {_MISSING_OMPI}")
@needs_netns
def test_open_mpi_binomial_and_han_by_their_host_traffic(tmp_path, cleanup):
    name = f"nb{os.getpid() % 100000}"
    cleanup.append(name)
    ls = hc.openmpi_launch_settings(hc.up(_spec(name)), 6)
    where = Launch(np=6, mpi="openmpi").mpi_env
    script = tmp_path / "counters.py"
    script.write_text(COUNTERS)
    seen = {}
    # the last: han's default with bcast handed to tuned on the whole communicator (what an export that leaves han
    # for one operation sets), tuned running its binomial there
    to_tuned = {**ops.native_spec_env("native:binomial", ["bcast"]), **han_op_to_tuned("bcast")}
    to_tuned.pop("OMPI_MCA_coll")
    for spec, pins in (
        ("native:binomial", ops.native_spec_env("native:binomial", ["bcast"])),
        ("native:han", ops.native_spec_env("native:han", ["bcast"])),
        ("native:han:default", ops.native_spec_env("native:han:default", ["bcast"])),
        ("han:default, bcast to tuned", to_tuned),
    ):
        nat = ops.native_for(spec if spec.startswith("native") else "native:binomial", "bcast", "Open MPI")
        model = nat.tree_on(_LAYOUT, _M)
        env = {**os.environ, **where.env, **ls.env, **pins}
        for k in ops.native_spec_unset(spec, ["bcast"]) if spec.startswith("native") else ():
            env.pop(k, None)
        fwd = [a for k in sorted({*where.env, *ls.env, *pins}) for a in ("-x", k)]
        cmd = [where.launcher, *ls.mpiexec_args, "-n", "6", *where.launcher_args, *fwd, where.python, str(script)]
        seen[spec] = _run([*cmd, str(_M)], env)
        assert seen[spec] == _crossings(model), (spec, model, seen[spec])
    assert seen["native:binomial"] == seen["han:default, bcast to tuned"] == [3, 0]
    assert seen["native:han"] == seen["native:han:default"] == [1, 0]
