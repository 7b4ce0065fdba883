"""Start ``python -m calibrate TASK`` on N ranks under an MPI launcher and collect its result.

:class:`Launch` says where and how ranks start (launcher, its arguments, a hostfile, a timeout, extra
environment); :func:`run_task` turns a task and its flags into the launcher's command line, runs it in its own
process group, follows the ranks' steps on stderr and returns rank 0's result (protocol:
:mod:`hnowmodel.jobs.wire`). A failing rank's ``hnow-error:`` line, a timeout, a rank that dies silently, a
launcher that started the wrong number of ranks, SIGTERM or Ctrl-C: the whole process group is killed (no rank is
left behind) and :class:`~hnowmodel.errors.MPIRunError` says in one line what happened and where.
What the job says is read by :mod:`hnowmodel.jobs.follow`; its process group and signals are
:mod:`hnowmodel.jobs.procgroup`'s.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import cluster as _cluster
from ..errors import InputError, MPIRunError
from ..mpi_programs import find_launcher, kind_of, mpiexec_flavour
from .follow import _Expect, _Follow, _pump, world_problem
from .hostfile import format_hostfile, place, read_hostfile
from .lock import mpi_lock
from .mpienv import MPI_LIBRARIES, MPIEnv, MPILibrary, check_mpi, resolve
from .procgroup import Terminated, _die_with_parent, _kill_group, _on_sigterm
from .wire import ProtocolError, unpack

__all__ = [
    "Launch",
    "find_launcher",
    "task_command",
    "run_task",
    "Terminated",
    "srun_defaults",
    "SRUN_MPICH_ENV",
    "mpiexec_flavour",
    "world_problem",
    "run_program",
]


@dataclass(frozen=True)
class Launch:
    """Where and how the ranks start.

    ``launcher`` is ``mpiexec`` (default), ``srun`` or any command (split like a shell would);
    ``launcher_args`` are extra arguments for it; ``hostfile`` is passed as ``-f FILE`` to mpiexec;
    ``timeout_s`` kills a job that runs longer (None: the job's own default, which depends on its size);
    ``env`` is added to the ranks' environment; ``cluster`` (a ``hnowmodel.cluster/1`` spec file or a built-in
    name) starts the ranks inside that virtual cluster's hosts over TCP, bringing it up for the job (and down
    after it) unless it is up already. ``mpi`` picks the MPI library (``mpich``, ``openmpi``, ``intelmpi``; None
    or ``auto``: whatever the ``mpiexec`` found is): :attr:`mpi_env` says how its ranks start
    (:mod:`hnowmodel.jobs.mpienv`).

    >>> Launch(np=4).np
    4
    """

    np: int
    launcher: str = "mpiexec"
    launcher_args: tuple[str, ...] = ()
    hostfile: str | None = None
    timeout_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cluster: str | None = None
    mpi: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.np, bool) or not isinstance(self.np, int) or self.np < 1:
            raise InputError(f"--np must be a whole number >= 1, got {self.np!r}")
        if isinstance(self.launcher_args, str):
            object.__setattr__(self, "launcher_args", tuple(shlex.split(self.launcher_args)))
        else:
            object.__setattr__(self, "launcher_args", tuple(str(a) for a in self.launcher_args))
        if self.timeout_s is not None:
            t = self.timeout_s
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
                raise InputError(f"--timeout must be a number of seconds > 0, got {t!r}")
        if not shlex.split(self.launcher or ""):
            raise InputError("--launcher: empty launcher command")
        if self.hostfile is not None:
            if not Path(self.hostfile).is_file():
                raise InputError(f"--hostfile {self.hostfile!r}: no such file")
            read_hostfile(self.hostfile)  # malformed: one line now, before anything starts
            if self.kind == "srun":
                raise InputError("--hostfile is for mpiexec/mpirun; with srun the allocation decides the hosts")
        if self.cluster is not None:
            if self.kind == "other":
                raise InputError(
                    f"--cluster starts ranks with mpiexec (hydra), or srun on a cluster up with --slurm, "
                    f"not with --launcher {self.launcher!r}"
                )
            if self.hostfile is not None:
                raise InputError("--cluster and --hostfile both say where ranks run: give one of them")
        object.__setattr__(self, "mpi", check_mpi(self.mpi))
        own = MPI_LIBRARIES[self.mpi] if self.mpi else None
        if own is not None and own.venv_var:  # Open MPI, Intel MPI: a library in an environment of its own
            if self.cluster is not None and self.kind == "srun" and not own.srun_pmi_var:
                raise InputError(
                    f"--cluster with --launcher srun starts MPICH or Intel MPI ranks; --mpi {own.name} uses "
                    f"{own.launcher} there"
                )
            if self.kind == "srun" and own.srun_pmi_var:
                self._check_pmi_library(own)
            _ = self.mpi_env  # a missing environment is found now, before anything starts

    def _check_pmi_library(self, own: MPILibrary) -> None:
        """InputError when the PMI library named for the ranks under srun (``launch.env``, else the environment) is
        not there: a path that is no file (Intel MPI 2021.16 prints "Could not open" and falls back to its own
        PMI-1 client), or an empty value (its ranks crash in ``MPI_Init``: "MPIR_pmi_virtualization", SIGSEGV)."""
        var = own.srun_pmi_var
        given = self.env[var] if var in self.env else os.environ.get(var)
        if given is None:
            return
        if not given.strip():
            raise InputError(
                f"{var} is set but empty: {own.library}'s ranks crash in MPI_Init under srun with it (unset it for "
                f"{own.library}'s own PMI-1 client, or name Slurm's PMI-2 library)"
            )
        if not Path(given).is_file():
            raise InputError(
                f"{var}={given}: no such file (Slurm's PMI-2 library, which {own.library}'s ranks load under srun; "
                "Debian's libpmi2-0 installs /usr/lib/x86_64-linux-gnu/libpmi2.so.0)"
            )

    @cached_property
    def mpi_env(self) -> MPIEnv:
        """The :class:`~hnowmodel.jobs.mpienv.MPIEnv` of this launch: the ranks' Python, launcher and settings."""
        return resolve(self.mpi, shlex.split(self.launcher), self.kind)

    @property
    def kind(self) -> str:
        """``srun``, ``mpiexec`` (hydra, Open MPI's mpirun and their aliases) or ``other``."""
        return kind_of(self.launcher)

    def timeout_for(self, default_s: float) -> float:
        """The timeout in seconds: the one asked for, else the job's default."""
        return float(self.timeout_s) if self.timeout_s is not None else float(default_s)


def task_command(
    launch: Launch,
    task: str,
    task_argv: Sequence[str],
    placement: Sequence[str] = (),
    hostfile: str | None = None,
) -> list[str]:
    """The argv that runs ``python -m calibrate TASK TASK_ARGV`` on ``launch.np`` ranks (``placement``: the
    launcher arguments that put ranks on a virtual cluster's hosts; ``hostfile``: the hostfile as the launcher
    reads it, default ``launch.hostfile``). With ``srun``, ``--mpi=pmi2`` unless the arguments name an ``--mpi``."""
    words = shlex.split(launch.launcher)
    where = launch.mpi_env
    exe = where.launcher or find_launcher(words[0])
    cmd = [exe, *words[1:], *placement, "-n", str(launch.np), *where.launcher_args]
    if launch.kind == "srun":
        cmd += srun_defaults(launch)[0]
    hostfile = hostfile or launch.hostfile
    if hostfile:
        flavour = mpiexec_flavour(exe) if launch.kind == "mpiexec" else "other"
        # Intel's hydra reads host:N lines from -machinefile (its -f takes host names only, one rank each)
        flag = {"openmpi": "--hostfile", "other": "--hostfile", "intel": "-machinefile"}.get(flavour, "-f")
        cmd += [flag, hostfile]
    if where.forward:  # Open MPI passes only OMPI_* on to other hosts by itself
        for name in sorted({*where.env, *launch.env, "PYTHONUNBUFFERED"}):
            cmd += ["-x", name]
    return [*cmd, *launch.launcher_args, where.python, "-m", "calibrate", task, *task_argv]


#: What the MPICH wheel needs under Slurm: Slurm 22.05's PMI-1 server reads at most 1024 bytes per command, and
#: MPICH over UCX publishes address records of 500-981 bytes that vary per run (MPI_Init hangs when one exceeds
#: 1024); the ofi netmod over TCP publishes one 66-byte record. Applied only where the environment does not say.
SRUN_MPICH_ENV = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}


def _launcher_words(launch: Launch) -> list[str]:
    return [*shlex.split(launch.launcher)[1:], *launch.launcher_args]


def srun_defaults(launch: Launch) -> tuple[tuple[str, ...], dict[str, str]]:
    """The ``srun`` arguments and rank environment ``hnow`` adds by default: ``--mpi=pmi2`` (the MPICH wheel
    speaks PMI-1, which Slurm's pmi2 plugin serves; Intel MPI loads Slurm's PMI-2 library or speaks PMI-1) unless an
    ``--mpi`` is given, and :data:`SRUN_MPICH_ENV` for an MPICH (``mpichversion`` beside this Python, no other
    library asked for) where neither the environment nor ``launch.env`` sets them."""
    words = _launcher_words(launch)
    args = () if any(w == "--mpi" or w.startswith("--mpi=") for w in words) else ("--mpi=pmi2",)
    env: dict[str, str] = {}
    other = launch.mpi is not None and MPI_LIBRARIES[launch.mpi].venv_var
    if not other and (Path(sys.executable).parent / "mpichversion").exists():
        env = {k: v for k, v in SRUN_MPICH_ENV.items() if k not in os.environ and k not in launch.env}
    return args, env


def _srun_nodes(launch: Launch) -> int | None:
    """The node count an ``srun`` was asked for (``-N 4``, ``-N4``, ``--nodes=4``, ``--nodes 4``), else None."""
    words = _launcher_words(launch)
    for i, w in enumerate(words):
        val = None
        if w in ("-N", "--nodes") and i + 1 < len(words):
            val = words[i + 1]
        elif w.startswith("--nodes="):
            val = w.split("=", 1)[1]
        elif w.startswith("-N") and len(w) > 2:
            val = w[2:]
        if val is not None and val.isdigit():
            return int(val)
    return None


def run_task(
    launch: Launch,
    task: str,
    task_argv: Sequence[str],
    *,
    default_timeout_s: float = 300.0,
    progress: Callable[[str], None] | None = None,
) -> Any:
    """Run ``python -m calibrate TASK`` on ``launch.np`` ranks and return the document its rank 0 returned.

    ``progress`` receives rank 0's progress lines (None: they are dropped). Raises :class:`MPIRunError` with one
    line naming the failing rank and step, or the timeout, or the launcher's own last words. Holds the machine's
    MPI lock (``$HNOW_MPI_LOCK``, :func:`hnowmodel.jobs.lock.mpi_lock`) while the job runs.
    """
    find_launcher(shlex.split(launch.launcher)[0])  # a missing launcher is said at once, not after waiting for the lock
    with mpi_lock(say=progress):
        if launch.cluster is not None:
            with (
                _cluster.using(launch.cluster, slurm=launch.kind == "srun") as state,
                tempfile.TemporaryDirectory() as tmp,
            ):
                placement, env, expect = _on_cluster(launch, state, Path(tmp))
                return _run(launch, task, task_argv, default_timeout_s, progress, placement, env, expect)
        env = dict(srun_defaults(launch)[1]) if launch.kind == "srun" else {}
        expect = _Expect()
        n = _srun_nodes(launch) if launch.kind == "srun" else None
        if n:
            expect = _Expect(nodes=n, why=f"srun -N {n}")
        if not launch.hostfile:
            return _run(launch, task, task_argv, default_timeout_s, progress, (), env, expect)
        entries = read_hostfile(launch.hostfile)
        expect = _Expect(nodes=len(set(place(entries, launch.np))), why=f"--hostfile {launch.hostfile}")
        exe = launch.mpi_env.launcher or find_launcher(shlex.split(launch.launcher)[0])
        flavour = mpiexec_flavour(exe) if launch.kind == "mpiexec" else ""
        if flavour not in ("hydra", "openmpi", "intel"):  # a launcher we do not know reads the user's file as written
            return _run(launch, task, task_argv, default_timeout_s, progress, (), env, expect)
        with tempfile.TemporaryDirectory(prefix="hnow-hostfile-") as tmp:
            path = Path(tmp) / "hostfile"
            syntax = "openmpi" if flavour == "openmpi" else "hydra"  # Intel's machinefile: hydra's host:N
            path.write_text(format_hostfile(entries, syntax))  # the user's syntax, in the launcher's
            return _run(launch, task, task_argv, default_timeout_s, progress, (), env, expect, str(path))


def _on_cluster(launch: Launch, state: Any, tmp: Path) -> tuple[tuple[str, ...], dict[str, str], _Expect]:
    """Launcher arguments, environment and expected hosts that start ``launch.np`` ranks on a virtual cluster:
    hydra (MPICH's or Intel MPI's, or Open MPI's mpirun) through the cluster's exec wrapper, or ``srun`` through
    the cluster's own Slurm (``up --slurm``)."""
    lib = launch.mpi_env.library
    name = lib.name if lib is not None else "mpich"
    if launch.kind != "srun":
        where = _cluster.launch_settings_for(name)(state, launch.np)
        return (
            tuple(where.mpiexec_args),
            dict(where.env),
            _Expect(tuple(where.hosts), why=f"the cluster {state.name!r}"),
        )
    if not getattr(state, "slurm_conf", None):
        raise InputError(
            f"--launcher srun on the cluster {state.name!r}, which runs no Slurm (bring it up with "
            f"'hnow cluster up SPEC --slurm')"
        )
    where = _cluster.srun_settings_for(name)(state, launch.np)
    expect = _Expect(hosts=tuple(where.hosts), why=f"the cluster {state.name!r}")
    env = {**dict(where.env), **_cluster.slurm_env(state), **srun_defaults(launch)[1]}
    order = sorted(set(where.hosts), key=list(where.hosts).index)
    # one rank per line, in rank order: srun --distribution=arbitrary places rank i on line i's node; its node list
    # names every rank's node too (a host of several slots repeated: with each node once, Slurm 22.05 refuses the
    # step, "Unable to create step ... Unspecified error")
    hostfile = tmp / "ranks"
    hostfile.write_text("".join(f"{h}\n" for h in where.hosts))
    env["SLURM_HOSTFILE"] = str(hostfile)
    placement = ("-N", str(len(order)), "--distribution=arbitrary", f"--nodelist={','.join(where.hosts)}")
    return placement, env, expect


def _rank_env(launch: Launch, placement_env: Mapping[str, str]) -> dict[str, str]:
    """The ranks' environment: ours, the placement's, the library's defaults (with a hostfile, not those that hold
    on one host only: :attr:`~hnowmodel.jobs.mpienv.MPILibrary.one_host`, Intel MPI's ``FI_TCP_IFACE=lo``), then the
    user's own."""
    env = dict(os.environ)
    env.update(placement_env)
    lib = launch.mpi_env.library
    needs = launch.mpi_env.env if lib is None or not launch.hostfile else lib.across_hosts(launch.mpi_env.env)
    for k, v in needs.items():  # what the library needs here, unless the user says otherwise
        env.setdefault(k, v)
    if "PYTHONPATH" in launch.mpi_env.env:  # the ranks' Python must see this hnowmodel first
        env["PYTHONPATH"] = launch.mpi_env.env["PYTHONPATH"]
    env.update(launch.env)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(
    launch: Launch,
    task: str,
    task_argv: Sequence[str],
    default_timeout_s: float,
    progress: Callable[[str], None] | None,
    placement: Sequence[str],
    placement_env: Mapping[str, str],
    expect: _Expect,
    hostfile: str | None = None,
) -> Any:
    argv = task_command(launch, task, task_argv, placement, hostfile)
    timeout_s = launch.timeout_for(default_timeout_s)
    follow = _Follow(launch.np, progress, expect)
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=_rank_env(launch, placement_env),
        start_new_session=True,  # its own process group: one killpg reaches the launcher and every rank
        preexec_fn=_die_with_parent,
        text=True,
        bufsize=1,
        errors="replace",
    )
    follow.kill = lambda: _kill_group(proc)
    readers = [threading.Thread(target=_pump, args=(s, follow), daemon=True) for s in (proc.stdout, proc.stderr)]
    for t in readers:
        t.start()
    restore = _on_sigterm()
    start = time.monotonic()
    try:
        rc = _wait(proc, follow, timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        for t in readers:
            t.join(timeout=2)
        where = follow.errors[0] if follow.errors else follow.where()
        raise MPIRunError(
            f"MPI task {task!r} on {launch.np} ranks did not finish within {timeout_s:g} s and was killed "
            f"({where}); a rank hung or the machine is overloaded (raise --timeout){follow.last_words()}"
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        restore()
    for t in readers:
        t.join(timeout=5)
    _kill_group(proc)  # nothing of the job outlives it (a launcher's stray helper, say)
    return _result(launch, task, follow, rc, time.monotonic() - start)


#: Seconds a launcher may take to exit after rank 0 sent the job's result; then it is stopped and the result kept.
#: Open MPI 5.0's ``prterun`` hangs after the application ends in a few per cent of runs (openpmix/prrte#1839,
#: open-mpi/ompi#12064): seen here once in CI, where it cost a 300 s test timeout.
EXIT_GRACE_S = 20.0


def _wait(proc: subprocess.Popen, follow: _Follow, timeout_s: float) -> int:
    """The launcher's exit status, or 0 when it is still running ``EXIT_GRACE_S`` after rank 0's result arrived
    (then the process group is stopped and the caller reads the result); TimeoutExpired after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return proc.wait(timeout=min(1.0, max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
            done = follow.result_at
            if done is not None and not follow.errors and time.monotonic() - done > EXIT_GRACE_S:
                _kill_group(proc)
                if follow.progress is not None:
                    follow.progress(
                        f"the launcher did not exit {EXIT_GRACE_S:g} s after the job's result (a known Open MPI 5.0 "
                        "hang, prrte#1839); stopped it and kept the result"
                    )
                return 0


def _result(launch: Launch, task: str, follow: _Follow, rc: int, elapsed_s: float) -> Any:
    """Rank 0's result document of a finished job, or :class:`MPIRunError` saying in one line what went wrong."""
    if follow.errors:
        raise MPIRunError(follow.errors[0])
    if rc != 0:
        raise MPIRunError(
            f"MPI task {task!r} on {launch.np} ranks failed (exit {rc}) without an error report; "
            f"{follow.where()}{follow.last_words()}"
        )
    if len(follow.results) != 1:
        if len(follow.results) > 1:
            raise MPIRunError(
                f"the launcher started {len(follow.results)} separate jobs instead of one job of {launch.np} ranks "
                "(singletons: the launcher and the MPI library do not speak the same process-manager interface, "
                "e.g. srun --mpi=none)"
            )
        raise MPIRunError(
            f"MPI task {task!r} on {launch.np} ranks returned no result ({elapsed_s:.1f} s){follow.last_words()}"
        )
    try:
        envelope = unpack(follow.results[0])
    except ProtocolError as e:
        raise MPIRunError(f"MPI task {task!r}: rank 0's result could not be read: {e}") from None
    if not isinstance(envelope, dict):
        raise MPIRunError(f"MPI task {task!r}: rank 0's result is not a result document")
    problem = world_problem(launch.np, follow.expect, envelope.get("world_size"), list(envelope.get("hosts") or ()))
    if problem:
        raise MPIRunError(problem)
    return envelope.get("result")


def run_program(
    launch: Launch, program: Sequence[str], *, env: Mapping[str, str] | None = None, default_timeout_s: float = 900.0
) -> str:
    """Run an MPI program of its own (``program``: its path and arguments, e.g. the Intel MPI Benchmarks'
    ``IMB-MPI1``) on ``launch.np`` ranks with ``launch``'s launcher, library settings and placement (plain or a
    virtual cluster; ``env`` added to the ranks' environment), under the machine's MPI lock, and return its standard
    output. :class:`MPIRunError` with the last lines of its standard error when it fails or runs too long."""
    if launch.kind != "mpiexec" or launch.hostfile is not None:
        raise InputError("an outside MPI program runs with mpiexec, on one host or a virtual cluster (--cluster)")
    find_launcher(shlex.split(launch.launcher)[0])
    with mpi_lock():
        if launch.cluster is None:
            return _run_program(launch, program, env or {}, (), {}, default_timeout_s)
        with _cluster.using(launch.cluster) as state, tempfile.TemporaryDirectory() as tmp:
            placement, placement_env, _ = _on_cluster(launch, state, Path(tmp))
            return _run_program(launch, program, env or {}, placement, placement_env, default_timeout_s)


def _run_program(
    launch: Launch,
    program: Sequence[str],
    env: Mapping[str, str],
    placement: Sequence[str],
    placement_env: Mapping[str, str],
    default_timeout_s: float,
) -> str:
    words = shlex.split(launch.launcher)
    where = launch.mpi_env
    exe = where.launcher or find_launcher(words[0])
    argv = [exe, *words[1:], *placement, "-n", str(launch.np), *where.launcher_args, *launch.launcher_args, *program]
    timeout_s = launch.timeout_for(default_timeout_s)
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**_rank_env(launch, placement_env), **env},
        start_new_session=True,  # one killpg reaches the launcher and every rank
        preexec_fn=_die_with_parent,
        text=True,
        errors="replace",
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise MPIRunError(
            f"{Path(program[0]).name} on {launch.np} ranks did not finish within {timeout_s:g} s"
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    _kill_group(proc)
    if proc.returncode != 0:
        tail = " | ".join(ln.strip() for ln in err.splitlines()[-3:] if ln.strip())
        raise MPIRunError(f"{Path(program[0]).name} on {launch.np} ranks failed (exit {proc.returncode}): {tail}")
    return out
