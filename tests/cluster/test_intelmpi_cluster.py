"""Intel MPI on the virtual cluster: its hydra starts the ranks through the exec wrapper, and the pinned binomial bcast
(``I_MPI_ADJUST_BCAST=1``, as ``--tree native:binomial`` sets it) really runs MPICH's binomial tree.

Every rank reads its host's interface byte counter (``/sys/class/net/eth0/statistics/tx_bytes`` in the host's
namespace) around one ``MPI_Bcast`` (``tests.helpers.COUNTERS``): the bytes each host sent, in units of the message,
are the number of children of that rank in the tree that ran. Pinned, the counts are binomial's; with Intel's
k-nomial (8) they are not, so the pin is what decides. Behaviour only, never timing.

Skipped, with the reason, where there is no root or network namespaces, or no Intel MPI environment
(``hnow setup-intelmpi``)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import hnowmodel.cluster as hc
from hnowmodel import ops
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import intelmpi_missing, intelmpi_venv
from hnowmodel.trees import make_tree
from tests.helpers import COUNTERS, PEER_BYTES, edges_sent, run_hnow, sent_per_child

from . import four_hosts_spec, needs_netns

pytestmark = pytest.mark.mpi

MISSING = intelmpi_missing()
needs_impi = pytest.mark.skipif(bool(MISSING), reason=f"no Intel MPI environment here: {MISSING}")
_M = 262144


@needs_netns
@needs_impi
def test_the_pinned_binomial_bcast_runs_binomials_tree(tmp_path, cleanup):
    name = f"xi{os.getpid() % 100000}"
    cleanup.append(name)
    ls = hc.launch_settings_for("intelmpi")(hc.up(four_hosts_spec(name)), 4)
    script = tmp_path / "counters.py"
    script.write_text(COUNTERS)
    venv = intelmpi_venv()
    cmd = [str(venv / "bin" / "mpiexec"), *ls.mpiexec_args, "-n", "4", str(venv / "bin" / "python"), str(script)]
    base = {**os.environ, **Launch(np=4, mpi="intelmpi").mpi_env.env, **ls.env}
    counts = {}
    for label, pin in (
        ("native", ops.native_spec_env("native:binomial", ["bcast"])),
        ("knomial", {"I_MPI_ADJUST_BCAST": "8"}),
    ):
        env = {**base, **pin}
        with mpi_lock():
            run = subprocess.run(
                [*cmd, str(_M)], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
            )
        assert run.returncode == 0, (label, run.stderr[-2000:])
        sent, ok = sent_per_child(run.stdout, _M)
        assert all(ok), (label, run.stdout)
        counts[label] = sent
    want = make_tree(ops.native_for("native:binomial", "bcast", "Intel MPI").model_tree, 4).nchildren.tolist()
    assert counts["native"] == want, counts
    assert counts["knomial"] != want, counts  # another algorithm, other counts: the pin decides


@needs_netns
@needs_impi
def test_hnow_info_on_the_cluster_runs_each_rank_on_its_host(tmp_path, cleanup):
    name = f"xk{os.getpid() % 100000}"
    cleanup.append(name)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(four_hosts_spec(name)))
    p = run_hnow("info", "--np", "4", "--cluster", str(path), "--mpi", "intelmpi", "--json", timeout=240)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["hosts"] == ["h1", "h2", "h3", "h4"] and doc["fabric"]["FI_TCP_IFACE"] == "eth0", doc


def _want_edges(op: str, spec: str, n: int) -> dict[tuple[int, int], int]:
    """The model tree's edges as bytes on the wire, in units of a rank's block: a bcast edge carries the message,
    a scatter edge the child's subtree's blocks, a gather edge the same upwards."""
    t = make_tree(spec, n)
    sub = t.subtree_size
    out = {}
    for c in range(n):
        p = int(t.parent[c])
        if p < 0:
            continue
        k = 1 if op == "bcast" else int(sub[c])
        out[(c, p) if op == "gather" else (p, c)] = k
    return out


@needs_netns
@needs_impi
def test_the_default_and_the_pinned_binomial_run_the_modelled_trees_on_six_hosts(tmp_path, cleanup):
    """Intel MPI's default (nothing pinned) and ``native:binomial`` on 6 hosts, one rank each: the bytes every rank
    sent to every peer around one call are the edges of the tree hnow models at that size (``tree_at``), each
    carrying what the model says (bcast: the message; scatter and gather: the subtree's blocks)."""
    name = f"xs{os.getpid() % 100000}"
    cleanup.append(name)
    spec = {
        **four_hosts_spec(name),
        "hosts": [{**four_hosts_spec(name)["hosts"][0], "name": f"h{i}"} for i in range(1, 7)],
    }
    ls = hc.launch_settings_for("intelmpi")(hc.up(spec), 6)
    script = tmp_path / "edges.py"
    script.write_text(PEER_BYTES)
    venv = intelmpi_venv()
    cases = [(op, m) for op in ("bcast", "scatter", "gather") for m in (16384, 65536, 262144)]
    argv = [x for op, m in cases for x in (op, str(m))]
    cmd = [str(venv / "bin" / "mpiexec"), *ls.mpiexec_args, "-n", "6", str(venv / "bin" / "python"), str(script), *argv]
    base = {**os.environ, **Launch(np=6, mpi="intelmpi").mpi_env.env, **ls.env}
    for label in ("native", "native:binomial"):
        env = {**base, **ops.native_spec_env(label, ops.names())}
        with mpi_lock():
            run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, (label, run.stderr[-2000:])
        for op, m in cases:
            nat = ops.native_for(label, op, "Intel MPI")
            tree = nat.tree_at(6, m)
            assert tree is not None, (label, op, m)
            assert edges_sent(run.stdout, op, m) == _want_edges(op, tree, 6), (label, op, m, tree, run.stdout)


@needs_netns
@needs_impi
def test_hnow_bench_imb_runs_imb_and_hnow_on_the_same_cluster(tmp_path, cleanup):
    """``hnow bench imb --cluster``: IMB-MPI1 and hnow's measurement run on the cluster's hosts (kept up for both,
    down after); every row has IMB's and hnow's times (structure, not timing). Under MPICH, IMB-MPI1 with MPICH's
    library is checked on one host (tests/jobs/test_imb_compare.py): the cluster adds nothing to that."""
    mpi = "intelmpi"
    name = f"xb{os.getpid() % 100000}"
    cleanup.append(name)
    spec = four_hosts_spec(name)
    spec["hosts"] = spec["hosts"][:3]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    p = run_hnow(
        *("bench", "imb", "--np", "3", "--mpi", mpi, "--cluster", str(path), "--profile", "paper"),
        *("--layout", "fast,fast,fast", "--sizes", "4K", "--iters", "3", "--reps", "2", "--ops", "bcast"),
        *("--tree", "native:binomial", "--no-pingpong", "--json"),
        timeout=400,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    (row,) = doc["rows"]
    assert (row["op"], row["size"], row["np"]) == ("bcast", 4096, 3) and row["imb_t_max_us"] > 0, row
    assert row["measured_other_us"] > 0 and doc["run"]["library"] == {"intelmpi": "Intel MPI", "mpich": "MPICH"}[mpi]
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
