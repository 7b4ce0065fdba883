"""What started is what was asked: hostfiles in either syntax, world size and hosts checked, launcher defaults."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hnowmodel.errors import InputError
from hnowmodel.jobs import Launch, task_command
from hnowmodel.jobs.hostfile import format_hostfile, parse_hostfile, place, read_hostfile
from hnowmodel.jobs.launcher import _Expect, srun_defaults, world_problem
from tests.helpers import one_error_line

MPIEXEC = Path(sys.executable).parent / "mpiexec"


# ---- hostfiles ------------------------------------------------------------------------------------------------------
def test_both_syntaxes_read_alike():
    hydra = parse_hostfile("# nodes\nn1:4\nn2\n\nn3:2  # slow\n")
    ompi = parse_hostfile("n1 slots=4\nn2\nn3 slots=2 max_slots=8\n")
    assert hydra == ompi
    assert [(e.host, e.slots) for e in hydra] == [("n1", 4), ("n2", 1), ("n3", 2)]
    assert parse_hostfile(format_hostfile(hydra, "hydra")) == hydra
    assert parse_hostfile(format_hostfile(hydra, "openmpi")) == hydra


def test_ranks_fill_slots_then_wrap():
    hs = parse_hostfile("a:2\nb:1\n")
    assert place(hs, 2) == ("a", "a")
    assert place(hs, 5) == ("a", "a", "b", "a", "a")


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "no hosts"),
        ("# only a comment\n", "no hosts"),
        ("n1:0\n", "slots must be a whole number"),
        ("n1:-2\n", "slots must be a whole number"),
        ("n1:nan\n", "slots must be a whole number"),
        ("n1 slots=99999999999\n", "slots must be a whole number"),
        ("n1 cpus=4\n", "unknown hostfile item 'cpus=4'"),
        ("n1 n2\n", "unknown hostfile item 'n2'"),
        ("bad/host\n", "is not a host name"),
    ],
)
def test_malformed_hostfile_is_one_line_naming_the_line(tmp_path, text, says):
    f = tmp_path / "hosts"
    f.write_text(text if says == "no hosts" else "ok:1\n" + text)
    with pytest.raises(InputError, match=says) as e:
        read_hostfile(f)
    if says != "no hosts":
        assert f"{f}:2" in str(e.value)


def test_bad_hostfile_refused_before_anything_starts(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("n1:x\n")
    with pytest.raises(InputError, match="slots"):
        Launch(np=2, hostfile=str(f))
    with pytest.raises(InputError, match="no such file"):
        Launch(np=2, hostfile=str(tmp_path / "missing"))
    f.write_text("n1:2\n")
    with pytest.raises(InputError, match="with srun the allocation decides"):
        Launch(np=2, launcher="srun", hostfile=str(f))


def test_hnow_names_a_malformed_hostfile(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("n1 slots=two\n")
    p = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", "info", "--np", "2", "--hostfile", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert one_error_line(p.stderr) and f"{f}:1" in p.stderr and "Traceback" not in p.stderr


# ---- what started ---------------------------------------------------------------------------------------------------
def test_world_problems_are_named():
    assert world_problem(2, _Expect(), 2, ["a", "a"]) == ""
    assert "singletons" in world_problem(4, _Expect(), 1, ["a"])
    assert "has 3" in world_problem(4, _Expect(), 3, ["a", "a", "a"])
    assert world_problem(4, _Expect(nodes=2, why="srun -N 2"), 4, ["a", "a", "b", "b"]) == ""
    msg = world_problem(4, _Expect(nodes=4, why="srun -N 4"), 4, ["a", "a", "b", "b"])
    assert msg == "asked for 4 ranks on 4 hosts (srun -N 4) but they started on 2 hosts: a,b"
    exp = _Expect(hosts=("a", "b"), why="the cluster 'x'")
    assert world_problem(2, exp, 2, ["a", "b"]) == ""
    assert "started on hosts b,a but the cluster 'x' puts them on a,b" in world_problem(2, exp, 2, ["b", "a"])


def test_srun_defaults_and_overrides(monkeypatch):
    monkeypatch.delenv("MPIR_CVAR_CH4_NETMOD", raising=False)
    monkeypatch.delenv("FI_PROVIDER", raising=False)
    args, env = srun_defaults(Launch(np=4, launcher="srun", launcher_args="-N 4"))
    assert args == ("--mpi=pmi2",)
    if (Path(sys.executable).parent / "mpichversion").exists():
        assert env == {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
    assert srun_defaults(Launch(np=4, launcher="srun --mpi=pmix"))[0] == ()
    assert srun_defaults(Launch(np=4, launcher="srun", launcher_args=["--mpi", "pmi2"]))[0] == ()
    monkeypatch.setenv("FI_PROVIDER", "verbs")  # the user's own setting wins
    assert "FI_PROVIDER" not in srun_defaults(Launch(np=4, launcher="srun"))[1]
    assert (
        "MPIR_CVAR_CH4_NETMOD"
        not in srun_defaults(Launch(np=4, launcher="srun", env={"MPIR_CVAR_CH4_NETMOD": "ucx"}))[1]
    )


def test_srun_command_line(tmp_path):
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\nexit 0\n")
    srun.chmod(0o755)
    argv = task_command(Launch(np=4, launcher=str(srun), launcher_args="-N 2"), "info", [])
    assert argv[:6] == [str(srun), "-n", "4", "--mpi=pmi2", "-N", "2"]
    assert argv[6:9] == [sys.executable, "-m", "calibrate"]


def _launcher(tmp_path: Path, name: str, body: str) -> str:
    """A launcher script ``name`` in its own folder (the name decides how hnow treats it)."""
    d = tmp_path / "bin"
    d.mkdir(parents=True, exist_ok=True)
    f = d / name
    f.write_text("#!/bin/bash\n" + body)
    f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return str(f)


@pytest.mark.mpi
@pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpiexec beside this Python (the mpich wheel)")
def test_singletons_are_refused(tmp_path):
    """A launcher that starts N copies with no process manager between them (like ``srun --mpi=none``)."""
    fake = _launcher(
        tmp_path,
        "launch-copies",
        'n=1; if [ "$1" = "-n" ]; then n=$2; shift 2; fi\n'
        'for i in $(seq 1 "$n"); do env -u PMI_FD -u PMI_PORT "$@" & done\nwait\n',
    )
    p = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", "info", "--np", "3", "--launcher", fake, "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert one_error_line(p.stderr) and "singletons" in p.stderr and "3 ranks" in p.stderr, p.stderr


@pytest.mark.mpi
@pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpiexec beside this Python (the mpich wheel)")
def test_a_hostfile_the_launcher_ignored_is_caught(tmp_path):
    """The hostfile asks for 2 hosts; a launcher that drops ``-f FILE`` runs both ranks here: exit 2, one line."""
    hosts = tmp_path / "hosts"
    hosts.write_text("nodeA slots=1\nnodeB slots=1\n")  # Open MPI syntax, handed to hydra as host:n
    seen = tmp_path / "seen"
    fake = _launcher(
        tmp_path,
        "mpiexec",
        f'if [ "$1" = "--version" ]; then exec "{MPIEXEC}" --version; fi\n'
        "args=()\nwhile [ $# -gt 0 ]; do\n"
        f'  if [ "$1" = "-f" ]; then cp "$2" "{seen}"; shift 2; else args+=("$1"); shift; fi\ndone\n'
        f'exec "{MPIEXEC}" "${{args[@]}}"\n',
    )
    p = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", "info", "--np", "2", "--launcher", fake, "--hostfile", str(hosts)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert one_error_line(p.stderr), p.stderr
    assert f"asked for 2 ranks on 2 hosts (--hostfile {hosts}) but they started on 1 host" in p.stderr
    assert seen.read_text() == "nodeA:1\nnodeB:1\n"  # hydra got the hostfile in its own syntax


@pytest.mark.mpi
def test_info_reports_node_names():
    p = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", "info", "--np", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SLURMD_NODENAME": "node-x"},  # what slurmd puts in every task's environment
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["hosts"] == ["node-x", "node-x"]


def test_open_mpi_gets_its_own_hostfile_flag(tmp_path):
    """``mpirun --version`` says Open MPI: the hostfile goes as ``--hostfile`` (hydra's ``-f`` means another thing)."""
    ompi = _launcher(tmp_path, "mpirun", 'if [ "$1" = "--version" ]; then echo "mpirun (Open MPI) 5.0.3"; fi\n')
    hosts = tmp_path / "hosts"
    hosts.write_text("n1:2\n")
    argv = task_command(Launch(np=2, launcher=ompi, hostfile=str(hosts)), "info", [], hostfile="/x/hf")
    assert argv[:6] == [ompi, "-n", "2", "--oversubscribe", "--hostfile", "/x/hf"]  # Open MPI's settings too
    assert argv[argv.index("PYTHONUNBUFFERED") - 1] == "-x"  # passed on to the other hosts
    hydra = _launcher(tmp_path, "mpiexec", 'if [ "$1" = "--version" ]; then echo "HYDRA build details:"; fi\n')
    argv = task_command(Launch(np=2, launcher=hydra, hostfile=str(hosts)), "info", [], hostfile="/x/hf")
    assert argv[:5] == [hydra, "-n", "2", "-f", "/x/hf"]


def test_intel_mpi_gets_its_machinefile_flag(tmp_path):
    """``mpiexec --version`` says Intel MPI: its hydra reads ``host:N`` lines from ``-machinefile`` (its ``-f`` takes
    host names only), and the ranks get Intel MPI's settings (its fabric)."""
    impi = _launcher(tmp_path / "i", "mpiexec", 'if [ "$1" = "--version" ]; then echo "Intel(R) MPI Library"; fi\n')
    hosts = tmp_path / "hosts"
    hosts.write_text("n1:2\n")
    launch = Launch(np=2, launcher=impi, hostfile=str(hosts))
    argv = task_command(launch, "info", [], hostfile="/x/hf")
    assert argv[:5] == [impi, "-n", "2", "-machinefile", "/x/hf"]
    assert launch.mpi_env.library.name == "intelmpi" and launch.mpi_env.env["I_MPI_FABRICS"] == "shm:ofi"


@pytest.mark.mpi
@pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpiexec beside this Python (the mpich wheel)")
def test_a_launcher_that_hangs_after_the_job_is_stopped_and_the_result_kept(tmp_path, monkeypatch):
    """Open MPI 5.0's prterun sometimes never exits after its ranks have (prrte#1839): a real job under a launcher
    that then hangs returns its result EXIT_GRACE_S after it arrived, and nothing of the launcher is left."""
    import hnowmodel.jobs.launcher as launcher
    from hnowmodel.jobs import info

    pidfile = tmp_path / "pid"
    fake = _launcher(
        tmp_path, "mpiexec-then-hang", f'"{MPIEXEC}" "$@"; rc=$?\necho $$ > "{pidfile}"\nsleep 600\nexit $rc\n'
    )
    monkeypatch.setattr(launcher, "EXIT_GRACE_S", 1.0)
    said: list[str] = []
    doc = info(2, launcher=fake, timeout=60, progress=said.append)
    assert doc["ranks"] == 2 and len(doc["hosts"]) == 2
    assert any("did not exit 1 s after the job's result" in line for line in said), said
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
