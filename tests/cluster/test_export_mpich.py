"""MPICH really runs what ``hnow export --format mpich-json`` chose, with no silent fallback.

On a 4-host virtual cluster, every rank reads its host's interface byte counter
(``/sys/class/net/eth0/statistics/tx_bytes`` inside the host's network namespace) around one ``MPI_Bcast``: a rank
sends the message once per child, so the bytes each host sent, in units of the message, are the number of children
of that rank in the tree that ran. With the exported file and the settings of its ``mpich-env.txt`` the counts are
those of the chosen tree (not binomial); above the exported sizes and without the file they are binomial's. And a
bad key in the file makes ``MPI_Init`` fail loudly, so the file is really read. Behaviour only, never timing.

Skipped, with the reason, where there is no root or no network namespaces (or no MPI launcher: marker ``mpi``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import hnowmodel.cluster as hc
from hnowmodel import ops
from hnowmodel.jobs import mpi_lock
from hnowmodel.trees import binomial, make_tree
from tests.helpers import COUNTERS as _COUNTERS
from tests.helpers import env_of_file as _mpich_env
from tests.helpers import run_hnow
from tests.helpers import sent_per_child as _sent_per_child

from . import four_hosts_spec, needs_netns

pytestmark = pytest.mark.mpi

_M = 262144  # the exported size (bytes)
_ABOVE = 1 << 20  # above every exported size: MPICH's default runs


def _four_hosts(name: str, tmp_path, *sizes: int) -> tuple[object, list[str]]:
    """Bring up cluster ``name`` of 4 hosts at 200 Mbit/s; its launch settings and the command that runs the byte
    counter script on 4 ranks for ``sizes``."""
    spec = four_hosts_spec(name)
    ls = hc.launch_settings(hc.up(spec), 4)
    script = tmp_path / "counters.py"
    script.write_text(_COUNTERS)
    return ls, ["mpiexec", *ls.mpiexec_args, "-n", "4", sys.executable, str(script), *map(str, sizes)]


def _export(tmp_path, layout: str) -> tuple[dict, object]:
    out = tmp_path / "ex"
    res = run_hnow(
        "export", "--profile", "paper", "--layout", layout, "--format", "mpich-json", "--ops", "bcast",
        "--sizes", str(_M), "-o", str(out), "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["mpich"], out


@needs_netns
def test_the_exported_file_runs_the_chosen_tree_and_the_default_elsewhere(tmp_path, cleanup):
    name = f"xj{os.getpid() % 100000}"
    cleanup.append(name)
    sel, out = _export(tmp_path, "FFSF")
    chosen = sel["rows"][0]["chosen"]
    assert chosen != "binomial" and sel["entries"]["bcast"] == [{"upto_bytes": _M, "algorithm": chosen}]
    model = next(a.model_tree for a in ops.native_choices("bcast", "MPICH") if a.algorithm == chosen)
    want, default = make_tree(model, 4).nchildren.tolist(), binomial(4).nchildren.tolist()
    assert want != default

    ls, cmd = _four_hosts(name, tmp_path, _M, _ABOVE)
    runs = {}
    with_file = {**_mpich_env(out), **ls.env, "MPIR_CVAR_DEBUG_SUMMARY": "1"}
    without = {k: v for k, v in {**with_file, "MPIR_CVAR_DEBUG_SUMMARY": "0"}.items() if "TUNING_JSON" not in k}
    for what, env in (("file", with_file), ("default", without)):
        with mpi_lock():
            runs[what] = subprocess.run(
                cmd, capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
            )
        assert runs[what].returncode == 0, runs[what].stderr[-2000:]
    got = runs["file"].stdout
    assert f"MPIR: {out.resolve()}/mpich-coll.json" in got + runs["file"].stderr  # MPICH says it loaded the file
    sent, ok = _sent_per_child(got, _M)
    assert all(ok) and sent == want, (chosen, sent, want)
    assert _sent_per_child(got, _ABOVE)[0] == default  # above the exported sizes: MPICH's default (binomial)
    assert _sent_per_child(runs["default"].stdout, _M)[0] == default


def test_a_bad_key_in_the_file_fails_mpi_init_loudly(tmp_path):
    pytest.importorskip("mpi4py")
    from hnowmodel.errors import InputError
    from hnowmodel.libraries.mpich import selection as mpich

    try:
        mpich.find_libmpi()
    except InputError as e:
        pytest.skip(f"no MPICH library here: {e}")
    _, out = _export(tmp_path, "FFSF")
    good = json.loads((out / "mpich-coll.json").read_text())
    intra = good["collective=bcast"]["comm_type=intra"]
    bad = dict(good)
    bad["collective=bcast"] = {
        "comm_type=intra": {k.replace("comm_size<=4", "comm_sise<=4"): v for k, v in intra.items()}
    }
    with pytest.raises(InputError, match="comm_sise<=4"):  # hnow refuses what MPICH would assert on
        mpich.check_table(bad)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    code = "from mpi4py import MPI; import numpy as np; b = np.zeros(8); MPI.COMM_WORLD.Bcast(b); print('ran')"
    cmd = ["mpiexec", "-n", "2", sys.executable, "-c", code]
    env = _mpich_env(out)
    with mpi_lock():
        ok = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] = str(tmp_path / "bad.json")
        no = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert ok.returncode == 0 and ok.stdout.count("ran") == 2, ok.stderr[-2000:]
    assert no.returncode != 0 and "ran" not in no.stdout and "unknown key comm_sise<=4" in no.stderr, no.stderr[-2000:]


@needs_netns
def test_native_algorithm_settings_run_the_named_tree(tmp_path, cleanup):
    """``--tree native:ALGO`` pins ALGO by its control variables (``ops.native_spec_env``, set by every rank before
    ``MPI_Init``) rather than by a selection file: with them MPICH runs that algorithm's model tree, by the counts."""
    name = f"xn{os.getpid() % 100000}"
    cleanup.append(name)
    ls, cmd = _four_hosts(name, tmp_path, _M)
    for spec_name in ("native:tree:kary:3", "native:tree:knomial_1:2", "native"):
        want = make_tree(ops.native_for(spec_name, "bcast", "MPICH").model_tree, 4).nchildren.tolist()
        env = {**os.environ, **ls.env, **ops.native_spec_env(spec_name, ["bcast"])}
        with mpi_lock():
            run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stderr[-2000:]
        sent, ok = _sent_per_child(run.stdout, _M)
        assert all(ok) and sent == want, (spec_name, sent, want)
    assert make_tree("kary:3", 4).nchildren.tolist() != binomial(4).nchildren.tolist()


_SCHEDULE_OPS_APP = """
import sys
import numpy as np
from mpi4py import MPI

c, n = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_size()
r = c.Get_rank()
for m in map(int, sys.argv[1:]):
    k = m // 8
    x = np.arange(k, dtype=np.float64) + r
    want = n * np.arange(k) + n * (n - 1) // 2
    y = np.zeros(k)
    c.Allreduce(x, y, MPI.SUM)
    assert np.array_equal(y, want), ("allreduce", m)
    y = np.zeros(k)
    c.Reduce(x, y, MPI.SUM, 0)
    assert r != 0 or np.array_equal(y, want), ("reduce", m)
    y = np.zeros(k)
    c.Reduce_scatter_block(np.concatenate([x + 3 * b for b in range(n)]), y, MPI.SUM)
    assert np.array_equal(y, want + 3 * n * r), ("reduce_scatter_block", m)
    b = np.full(m, r, dtype=np.uint8)
    g = np.zeros(n * m, dtype=np.uint8)
    c.Allgather(b, g)
    assert np.array_equal(g, np.repeat(np.arange(n, dtype=np.uint8), m)), ("allgather", m)
    s = np.concatenate([np.full(m, r * n + j, dtype=np.uint8) for j in range(n)])
    c.Alltoall(s, g)
    assert np.array_equal(g, np.repeat(np.arange(n, dtype=np.uint8) * n + r, m)), ("alltoall", m)
print("ran")
"""


def test_the_message_schedule_operations_entries_are_read_and_run(tmp_path):
    """2 local ranks. ``MPI_Init`` accepts the exported file with every message-schedule operation's entries
    (MPICH says it loaded it), and each operation runs with its result right at the exported sizes. And MPICH runs
    the leaf written under an entry's keys: the file's Rabenseifner allreduce leaf put, without the guard hnow
    writes around it, in the first allreduce range (up to 1 KiB on 2 ranks) makes MPICH's own assertion of that
    algorithm fail on a 1-element allreduce (``count >= pof2``), which the exported file keeps away from it."""
    pytest.importorskip("mpi4py")
    from hnowmodel.errors import InputError
    from hnowmodel.libraries.mpich import selection as mpich
    from hnowmodel.params import Profile, paper_profile

    try:
        mpich.find_libmpi()
    except InputError as e:
        pytest.skip(f"no MPICH library here: {e}")
    gamma = {"fast": {"Gc_us": 0.0, "Gm_us_per_byte": 2e-4}, "slow": {"Gc_us": 1.0, "Gm_us_per_byte": 5e-4}}
    prof = Profile.from_dict({**paper_profile().to_dict(), "extensions": {"reduce": {"types": gamma}}})
    prof.save(tmp_path / "profile.json")
    out = tmp_path / "ex"
    res = run_hnow(
        "export", "--profile", str(tmp_path / "profile.json"), "--layout", "FS", "--format", "mpich-json",
        "--ops", "reduce,allreduce,allgather,reduce_scatter,alltoall", "--sizes", "8,1K,64K,1M", "-o", str(out),
        "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    sel = json.loads(res.stdout)["mpich"]
    assert sel["entries"]["allreduce"][0] == {"upto_bytes": 1024, "algorithm": "recursive_doubling"}
    raben = {"algorithm=MPIR_Allreduce_intra_reduce_scatter_allgather": {}}
    good = json.loads((out / "mpich-coll.json").read_text())
    mine = good["collective=allreduce"]["comm_type=intra"]["comm_size<=2"]
    assert mine["avg_msg_size<=1048576"]["is_op_built_in=yes"]["count=any"] == raben  # guarded
    bad = json.loads(json.dumps(good))
    bad["collective=allreduce"]["comm_type=intra"]["comm_size<=2"]["avg_msg_size<=1024"] = raben
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    script = tmp_path / "app.py"
    script.write_text(_SCHEDULE_OPS_APP)
    cmd = ["mpiexec", "-n", "2", sys.executable, str(script), "8", "1024", "65536"]
    env = {**_mpich_env(out), "MPIR_CVAR_DEBUG_SUMMARY": "1"}
    with mpi_lock():
        ok = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        env = {**env, "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(tmp_path / "bad.json")}
        no = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert ok.returncode == 0 and ok.stdout.count("ran") == 2, ok.stderr[-2000:]
    assert f"MPIR: {out.resolve()}/mpich-coll.json" in ok.stdout + ok.stderr  # MPICH says it loaded the file
    assert no.returncode != 0 and "ran" not in no.stdout, no.stderr[-2000:]
    assert "allreduce_intra_reduce_scatter_allgather.c" in no.stderr and "count >= pof2" in no.stderr, no.stderr[-2000:]
