"""A real Slurm on the virtual cluster (``hnow cluster up SPEC --slurm``): nodes idle, ``srun``/``salloc``/``sbatch``
on the hosts from the root namespace, node-local ``/tmp`` and ``/dev/shm``, a 4-rank mpi4py job over Slurm's PMI,
idempotence, adding Slurm to a cluster that is up, failures rolled back, crash clean-up, and 20 up/down cycles that
leave no process, namespace, mount or ``/dev/shm`` segment behind. Behaviour, and one loose wall-clock bound
(marker ``timing``).

Skipped, with the reason, where there is no root, no network namespaces, or Slurm is neither installed nor
installable (the module fixture installs Debian's packages where it can: ``hm.cluster.ensure_installed()``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import hnowmodel.cluster as hc
from hnowmodel.cluster import netns
from hnowmodel.cluster import slurm as hs
from hnowmodel.cluster.state import state_path
from hnowmodel.errors import HnowError
from hnowmodel.jobs import mpi_lock
from tests.helpers import SLURM_NAME as _NAME  # this run's cluster names start with it
from tests.helpers import slurm_run as run  # a Slurm command from the root namespace

from . import WHY as _WHY

_HOSTS = ["a", "b", "c", "d"]
_CLI = "import sys; from hnowmodel.cli import main; sys.exit(main(sys.argv[1:]))"
_MPI_ENV = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
_MPI_CODE = (
    "from mpi4py import MPI; import socket; c = MPI.COMM_WORLD; print(c.rank, c.size, socket.gethostname(), flush=True)"
)


def _spec(name: str, hosts: list[str] = _HOSTS, slots: int = 1) -> dict:
    return {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": h, "egress_mbit": 100, "ingress_mbit": 100, "slots": slots} for h in hosts],
    }


def hnow(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _ours(name: str) -> list[str]:
    """Running (not zombie) processes of cluster ``name``'s Slurm: its daemons name its folder on their command
    line; slurmscriptd and slurmstepd are found as their children."""
    folder = str(hs.slurm_dir(name))
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,stat=,args="], capture_output=True, text=True).stdout
    rows = [ln.split(None, 3) for ln in out.splitlines() if len(ln.split(None, 3)) == 4]
    mine = {r[0] for r in rows if folder in r[3] and not r[2].startswith("Z")}
    mine |= {r[0] for r in rows if r[1] in mine and not r[2].startswith("Z")}
    return sorted(f"{r[0]} {r[3]}" for r in rows if r[0] in mine)


def _mounts_of(name: str) -> list[str]:
    """Mounts of cluster ``name``'s node-local tmpfs (``hnow-<name>-<host>-tmp/-shm``) seen by any process."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/mounts").read_text()
        except OSError:
            continue
        found |= {ln.split()[0] for ln in text.splitlines() if ln.startswith(f"hnow-{name}-")}
    return sorted(found)


def _assert_nothing_left(name: str) -> None:
    assert not [n for n in netns.existing_namespaces() if n.startswith(f"hnow-{name}-")]
    assert not [n for n in netns.existing_links() if n == f"hn-{name}" or n.startswith(f"hn-{name}-")]
    assert not state_path(name).exists()
    assert not hs.slurm_dir(name).exists()
    assert _ours(name) == []
    assert _mounts_of(name) == []
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"hnow-{name}")]


@pytest.fixture(scope="module")
def four(slurm_ok) -> hc.ClusterState:
    """A 4-host cluster with Slurm for the module (up once; down after its last test)."""
    name = f"{_NAME}f"
    try:
        yield hc.up(_spec(name), slurm=True)
    finally:
        hc.down(name)
        _assert_nothing_left(name)


# --- no root needed ------------------------------------------------------------------------------------------


def test_slurm_conf_names_every_host_with_its_address_and_slots():
    import ipaddress

    st = hc._plan(hc.from_dict(_spec("x", ["a", "b"], slots=2)), ipaddress.ip_network("10.213.7.0/24"), "/x/w.sh")
    text = hs.conf_text(st, Path("/run/hnowmodel/slurm/x"), 17999)
    lines = text.splitlines()
    assert "SlurmctldHost=hnow-ctld-x(10.213.7.1)" in lines and "SlurmctldPort=17999" in lines
    assert "NodeName=a NodeAddr=10.213.7.2 CPUs=2 State=UNKNOWN" in lines
    assert "NodeName=b NodeAddr=10.213.7.3 CPUs=2 State=UNKNOWN" in lines
    assert "PartitionName=hnow Nodes=a,b Default=YES State=UP MaxTime=INFINITE" in lines
    for want in (
        "AuthType=auth/munge",
        "AuthInfo=socket=/run/hnowmodel/slurm/x/munge/munge.socket",
        "SlurmUser=root",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=pmi2",
        "ReturnToService=2",
        "SlurmdSpoolDir=/run/hnowmodel/slurm/x/nodes/%n",
        "AccountingStorageType=accounting_storage/none",
    ):
        assert want in lines, want
    assert st.slurm_conf is None and st.public_dict()["slurm_conf"] is None
    with pytest.raises(HnowError, match="runs no Slurm.*--slurm"):
        hc.slurm_env(st)


def test_missing_slurm_is_one_line_and_not_installable_without_apt(monkeypatch):
    monkeypatch.setattr(hs, "_which", lambda cmd: None if cmd in ("slurmd", "apt-get") else f"/usr/bin/{cmd}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    why = hs.missing_reason()
    assert "slurmd" in why and "apt-get install" in why and "\n" not in why
    with pytest.raises(HnowError, match="Slurm is not installed.*no apt-get"):
        hs.ensure_installed()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "root" in hs.missing_reason()


def test_slurm_flag_on_status_or_down_and_missing_slurm_exit_2_with_one_line():
    for args in (["cluster", "status", "--slurm"], ["cluster", "down", "x", "--slurm"]):
        proc = hnow(*args)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "--slurm" in proc.stderr
    if _WHY:
        return
    # Slurm missing and not installable (no apt-get): exit 2, one line saying so, nothing made
    code = (
        "import sys, hnowmodel.cluster.slurm as s; from hnowmodel.cli import main\n"
        "s._which = lambda c: None if c in ('slurmctld', 'apt-get') else '/bin/true'\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    name = f"{_NAME}n"
    with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
        json.dump(_spec(name, ["a"]), fh)
        fh.flush()
        proc = subprocess.run(
            [sys.executable, "-c", code, "cluster", "up", fh.name, "--slurm"], capture_output=True, text=True
        )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Slurm is not installed" in proc.stderr
    _assert_nothing_left(name)


# --- a real Slurm (root + network namespaces + Slurm) ----------------------------------------------------------


def test_four_nodes_idle_and_srun_runs_on_each_host(four):
    st = four
    assert st.slurm_conf and os.path.exists(st.slurm_conf) and hc.slurm_env(st) == {"SLURM_CONF": st.slurm_conf}
    assert st.public_dict()["slurm_conf"] == st.slurm_conf
    proc = run(st, "sinfo", "-h", "-N", "-o", "%N %T %P")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split("\n")[:-1]) == [f"{h} idle hnow*" for h in _HOSTS]
    proc = run(st, "srun", "-N", "4", "hostname")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == _HOSTS
    # each task is in its host's network namespace: its eth0 has the host's address
    proc = run(st, "srun", "-N", "4", "-l", "ip", "-br", "-4", "addr", "show", "eth0")
    assert proc.returncode == 0, proc.stderr
    by_rank = sorted(ln.split(":", 1) for ln in proc.stdout.splitlines())
    assert [h.address + "/24" in out for (_, out), h in zip(by_rank, st.hosts, strict=True)] == [True] * 4
    assert os.uname().nodename not in _HOSTS  # the root namespace kept its name


def test_each_host_has_its_own_tmp_and_dev_shm(four):
    st = four
    f = f"hnow-{st.name}-private-{os.getpid()}"
    put = run(st, "srun", "-w", "a", "sh", "-c", f"echo on-a > /tmp/{f} && echo seg > /dev/shm/{f}")
    assert put.returncode == 0, put.stderr
    again = run(st, "srun", "-w", "a", "cat", f"/tmp/{f}", f"/dev/shm/{f}")
    assert again.returncode == 0 and again.stdout.split() == ["on-a", "seg"]  # node-local, kept across jobs
    for h in ("b", "c", "d"):
        other = run(st, "srun", "-w", h, "sh", "-c", f"test -e /tmp/{f} || test -e /dev/shm/{f} || echo absent")
        assert other.returncode == 0 and other.stdout.strip() == "absent", (h, other.stdout, other.stderr)
    assert not os.path.exists(f"/tmp/{f}") and not os.path.exists(f"/dev/shm/{f}")  # nor in the root namespace


def test_mpi4py_job_of_four_ranks_on_four_hosts_through_srun_salloc_and_sbatch(four, python_on_hosts):
    st = four
    pytest.importorskip("mpi4py")
    want = [f"{r} 4 {h}" for r, h in enumerate(_HOSTS)]
    out_dir = Path(tempfile.mkdtemp(prefix=f"hnow-{st.name}-", dir="/var/tmp"))  # not /tmp: node-local there
    script = out_dir / "job.sh"
    script.write_text(f"#!/bin/sh\nsrun --mpi=pmi2 {sys.executable} -c '{_MPI_CODE}'\n")
    try:
        with mpi_lock():
            shm_before = set(os.listdir("/dev/shm"))
            proc = run(st, "srun", "-N", "4", "--mpi=pmi2", sys.executable, "-c", _MPI_CODE, env=_MPI_ENV)
            assert proc.returncode == 0, proc.stderr
            assert sorted(proc.stdout.splitlines()) == want
            proc = run(st, "salloc", "-N", "4", "srun", "--mpi=pmi2", sys.executable, "-c", _MPI_CODE, env=_MPI_ENV)
            assert proc.returncode == 0, proc.stderr
            assert sorted(proc.stdout.splitlines()) == want
            out = out_dir / "out.txt"
            sub = run(st, "sbatch", "--parsable", "-N", "4", "-o", str(out), str(script), env=_MPI_ENV)
            assert sub.returncode == 0, sub.stderr
            job = sub.stdout.strip().split(";")[0]
            deadline, state = time.monotonic() + 60, ""
            while time.monotonic() < deadline:
                show = run(st, "scontrol", "show", "job", "-o", job).stdout
                state = next((w.split("=", 1)[1] for w in show.split() if w.startswith("JobState=")), "")
                if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
                    break
                time.sleep(0.1)
            assert state == "COMPLETED", (state, out.read_text() if out.exists() else "")
            assert sorted(out.read_text().splitlines()) == want
            # the ranks' shared memory is in the hosts' own /dev/shm
            assert set(os.listdir("/dev/shm")) - shm_before == set()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def test_up_is_idempotent_and_keeps_slurm(four):
    st = four
    assert hc.up(_spec(st.name), slurm=True) == st
    assert hc.up(_spec(st.name)) == st  # without --slurm: the cluster as it is, with its Slurm
    (s,) = hc.status(st.name)
    assert not s.stale and s.processes == st.processes and len(st.processes) == 2 + len(_HOSTS)


def test_cli_up_slurm_on_a_cluster_up_without_it_adds_it_and_down_removes_all(tmp_path, slurm_ok, cleanup):
    name = f"{_NAME}c"
    cleanup.append(name)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_spec(name, ["a", "b"], slots=2)))
    proc = hnow("cluster", "up", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cluster"]["slurm_conf"] is None
    proc = hnow("cluster", "up", str(path), "--slurm", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["cluster"]
    assert doc["slurm_conf"] == str(hs.slurm_dir(name) / "slurm.conf") and doc["stale"] is False
    status = json.loads(hnow("cluster", "status", name, "--json").stdout)["cluster"]
    assert status["slurm_conf"] == doc["slurm_conf"] and status["stale"] is False
    st = hc.get(name)
    proc = run(st, "srun", "-N", "2", "-n", "4", "hostname")  # 2 slots each: 4 tasks
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["a", "a", "b", "b"]
    table = hnow("cluster", "status", name)
    assert f"SLURM_CONF={doc['slurm_conf']}" in table.stdout
    down = hnow("cluster", "down", name, "--json")
    assert down.returncode == 0, down.stderr
    res = json.loads(down.stdout)["down"]
    assert res["removed"] is True and res["killed"] >= 4  # munged, slurmctld, 2 slurmd
    _assert_nothing_left(name)


def test_using_with_slurm_on_a_cluster_up_without_it_stops_slurm_after(slurm_ok, cleanup):
    name = f"{_NAME}u"
    cleanup.append(name)
    plain = hc.up(_spec(name, ["a", "b"]))
    with hc.using(_spec(name, ["a", "b"]), slurm=True) as st:
        assert st.slurm_conf and run(st, "srun", "-N", "2", "hostname").returncode == 0
    (after,) = hc.status(name)
    assert not after.stale and after.slurm_conf is None and after.processes == ()
    assert after.subnet == plain.subnet and _ours(name) == [] and not hs.slurm_dir(name).exists()
    hc.down(name)
    _assert_nothing_left(name)


def test_a_daemon_that_exits_during_up_is_reported_with_its_log_and_everything_removed(monkeypatch, slurm_ok):
    name = f"{_NAME}e"
    orig = hs.conf_text

    def bad_spool(state, folder, port):
        return orig(state, folder, port).replace(f"SlurmdSpoolDir={folder}/nodes/%n", "SlurmdSpoolDir=/proc/none/%n")

    monkeypatch.setattr(hs, "conf_text", bad_spool)
    try:
        with pytest.raises(HnowError, match=r"slurmd of host \w exited .*log") as e:
            hc.up(_spec(name, ["a", "b"]), slurm=True)
        assert "\n" not in str(e.value)
        _assert_nothing_left(name)
        # adding Slurm to a cluster that is up fails the same way: the cluster stays up, without Slurm
        plain = hc.up(_spec(name, ["a", "b"]))
        with pytest.raises(HnowError, match=r"slurmd of host \w exited"):
            hc.up(_spec(name, ["a", "b"]), slurm=True)
        (after,) = hc.status(name)
        assert not after.stale and after.slurm_conf is None and after.subnet == plain.subnet
        assert _ours(name) == [] and not hs.slurm_dir(name).exists()
    finally:
        hc.down(name)


def test_nodes_not_idle_in_time_is_an_error_naming_them(monkeypatch, slurm_ok):
    name = f"{_NAME}i"
    monkeypatch.setattr(hs, "READY_TIMEOUT_S", 0.5)
    monkeypatch.setattr(hs, "_node_states", lambda conf: {"a": "idle", "b": "down*"})
    try:
        with pytest.raises(HnowError, match=r"not idle after 0.5 s \(b down\*\); slurmd of b: .*slurmctld: "):
            hc.up(_spec(name, ["a", "b"]), slurm=True)
        _assert_nothing_left(name)
    finally:
        hc.down(name)


_CRASH = textwrap.dedent(
    """
    import os, signal, sys
    import hnowmodel.cluster.slurm as hs
    def die(conf):                     # every daemon started, none idle yet: die as SIGKILL would
        os.kill(os.getpid(), signal.SIGKILL)
    hs._node_states = die
    import hnowmodel.cluster as hc
    hc.up(sys.argv[1], slurm=True)
    """
)


def test_crash_in_the_middle_of_up_then_down_removes_everything_and_a_dead_daemon_makes_it_stale(
    tmp_path, slurm_ok, cleanup
):
    name = f"{_NAME}k"
    cleanup.append(name)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_spec(name, ["a", "b"])))
    proc = subprocess.run([sys.executable, "-c", _CRASH, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    (st,) = hc.status(name)
    assert st.stale and st.phase == "creating" and len(st.processes) == 4 and _ours(name)
    assert hc.down(name).killed >= 4
    _assert_nothing_left(name)

    # a Slurm daemon that died makes the cluster stale; up rebuilds it with Slurm, even without slurm=True
    st = hc.up(str(path), slurm=True)
    ctld = next(p for p in st.processes if "slurmctld" in Path(f"/proc/{p}/cmdline").read_text())
    os.kill(ctld, signal.SIGKILL)
    time.sleep(0.05)
    (s,) = hc.status(name)
    assert s.stale and f"process {ctld}" in s.missing
    st2 = hc.up(str(path))
    assert st2.slurm_conf and ctld not in st2.processes and not hc.status(name)[0].stale
    assert run(st2, "srun", "-N", "2", "hostname").returncode == 0
    hc.down(name)
    _assert_nothing_left(name)


def test_down_returns_when_every_daemon_has_exited(slurm_ok, cleanup):
    """``hnow cluster down`` returns only when the processes it stopped are gone: none of the daemons recorded at
    ``up`` (munged, slurmctld, one slurmd per host) is still in the process table, running or as a zombie."""
    name = f"{_NAME}d"
    cleanup.append(name)
    st = hc.up(_spec(name), slurm=True)
    pids = list(st.processes)
    assert len(pids) == 2 + len(_HOSTS) and all(Path(f"/proc/{p}").exists() for p in pids)
    down = hnow("cluster", "down", name)
    assert down.returncode == 0, down.stderr
    assert [p for p in pids if Path(f"/proc/{p}").exists()] == []
    _assert_nothing_left(name)


@pytest.mark.timing
def test_up_and_down_with_slurm_take_seconds(slurm_ok, cleanup):
    """A loose wall-clock bound: up + down of 4 hosts with Slurm measured ~0.35 s; 10 s holds on a loaded 2-core
    machine and still catches a wait that runs into a timeout (the daemons' readiness poll, a kill that waits)."""
    name = f"{_NAME}t"
    cleanup.append(name)
    t0 = time.monotonic()
    hc.up(_spec(name), slurm=True)
    assert hc.down(name).removed
    assert time.monotonic() - t0 < 10
    _assert_nothing_left(name)


def test_twenty_up_down_cycles_leave_nothing_behind(slurm_ok, cleanup):
    name = f"{_NAME}y"
    cleanup.append(name)
    st = hc.up(_spec(name), slurm=True)
    assert hc.down(name).removed
    for _ in range(20):
        st = hc.up(_spec(name), slurm=True)
        f = f"hnow-{name}-x"
        proc = run(st, "srun", "-N", "4", "sh", "-c", f"touch /tmp/{f} /dev/shm/{f} && hostname")
        assert proc.returncode == 0 and sorted(proc.stdout.split()) == _HOSTS, proc.stderr
        assert len(_mounts_of(name)) == 8  # a /tmp and a /dev/shm per host, in the hosts' mount namespaces
        assert hc.down(name).removed
        _assert_nothing_left(name)
