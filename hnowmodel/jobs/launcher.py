"""Start ``python -m calibrate TASK`` on N ranks under an MPI launcher and collect its result.

:class:`Launch` says where and how ranks start (launcher, its arguments, a hostfile, a timeout, extra
environment); :func:`run_task` turns a task and its flags into the launcher's command line, runs it in its own
process group, follows the ranks' steps on stderr and returns rank 0's result (protocol:
:mod:`hnowmodel.jobs.wire`). A failing rank's ``hnow-error:`` line, a timeout, a rank that dies silently, a
launcher that started the wrong number of ranks, SIGTERM or Ctrl-C: the whole process group is killed (no rank is
left behind) and :class:`~hnowmodel.errors.MPIRunError` says in one line what happened and where.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, MPIRunError
from .lock import mpi_lock
from .wire import ERROR_PREFIX, PROGRESS_PREFIX, RESULT_PREFIX, STEP_PREFIX, ProtocolError, parse_step, unpack

__all__ = ["Launch", "find_launcher", "task_command", "run_task", "Terminated"]

#: Launcher names that take hydra/Open MPI style ``-n N`` (and ``-f``/``--hostfile``).
_MPIEXEC_LIKE = ("mpiexec", "mpirun", "mpiexec.hydra")


class Terminated(BaseException):
    """SIGTERM arrived while an MPI job ran; the job was killed (raised like KeyboardInterrupt)."""


@dataclass(frozen=True)
class Launch:
    """Where and how the ranks start.

    ``launcher`` is ``mpiexec`` (default), ``srun`` or any command (split like a shell would);
    ``launcher_args`` are extra arguments for it; ``hostfile`` is passed as ``-f FILE`` to mpiexec;
    ``timeout_s`` kills a job that runs longer (None: the job's own default, which depends on its size);
    ``env`` is added to the ranks' environment; ``cluster`` (a ``hnowmodel.cluster/1`` spec file or a built-in
    name) starts the ranks inside that virtual cluster's hosts over TCP, bringing it up for the job (and down
    after it) unless it is up already.

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
        if self.hostfile is not None and not Path(self.hostfile).is_file():
            raise InputError(f"--hostfile {self.hostfile!r}: no such file")
        if not shlex.split(self.launcher or ""):
            raise InputError("--launcher: empty launcher command")
        if self.cluster is not None:
            if Path(shlex.split(self.launcher)[0]).name not in _MPIEXEC_LIKE:
                raise InputError(f"--cluster starts ranks with mpiexec (hydra), not with --launcher {self.launcher!r}")
            if self.hostfile is not None:
                raise InputError("--cluster and --hostfile both say where ranks run: give one of them")

    def timeout_for(self, default_s: float) -> float:
        """The timeout in seconds: the one asked for, else the job's default."""
        return float(self.timeout_s) if self.timeout_s is not None else float(default_s)


def find_launcher(name: str) -> str:
    """The launcher executable: beside the running Python first (a venv's own ``mpiexec``, even when the venv is
    not activated), then ``PATH``; :class:`MPIRunError` if neither has it.

    >>> find_launcher(sys.executable) == sys.executable
    True
    """
    if os.sep in name:
        if os.access(name, os.X_OK) and Path(name).is_file():
            return name
        raise MPIRunError(f"launcher {name!r} not found or not executable")
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise MPIRunError(
            f"launcher {name!r} not found beside {sys.executable} or on PATH (install the 'mpich' extra "
            "or a system MPI, or pass --launcher)"
        )
    return found


def task_command(launch: Launch, task: str, task_argv: Sequence[str], placement: Sequence[str] = ()) -> list[str]:
    """The argv that runs ``python -m calibrate TASK TASK_ARGV`` on ``launch.np`` ranks (``placement``: the
    launcher arguments that put ranks on a virtual cluster's hosts)."""
    words = shlex.split(launch.launcher)
    exe = find_launcher(words[0])
    cmd = [exe, *words[1:], *placement, "-n", str(launch.np)]
    if launch.hostfile:
        base = Path(words[0]).name
        if base == "srun":
            raise InputError("--hostfile is for mpiexec; with srun the allocation decides the hosts")
        cmd += ["-f", launch.hostfile] if base in _MPIEXEC_LIKE else ["--hostfile", launch.hostfile]
    return [*cmd, *launch.launcher_args, sys.executable, "-m", "calibrate", task, *task_argv]


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _is_chatter(line: str) -> bool:
    """MPICH hydra / Open MPI boilerplate printed around an abort; it names no cause."""
    t = line.strip()
    return not t or t.startswith(("=", "YOUR APPLICATION", "This typically", "Please see", "Abort(", "-----"))


class _Follow:
    """What the job said so far: steps per rank, errors, result lines, and the launcher's own last lines."""

    def __init__(self, np: int, progress: Callable[[str], None] | None) -> None:
        self.np = np
        self.progress = progress
        self.steps: dict[int, tuple[int, str]] = {}
        self.errors: list[str] = []
        self.results: list[str] = []
        self.tail: deque[str] = deque(maxlen=40)
        self.lock = threading.Lock()

    def line(self, line: str) -> None:
        line = line.rstrip("\n")
        # the launcher forwards the ranks' output in chunks: two ranks' lines can arrive glued together
        for marker in (STEP_PREFIX, ERROR_PREFIX):
            cut = line.find(marker, 1)
            if cut > 0:
                self.line(line[:cut])
                self.line(line[cut:])
                return
        step = parse_step(line)
        with self.lock:
            if step is not None:
                rank, entered, name = step
                self.steps[rank] = (entered, name)
            elif line.startswith(RESULT_PREFIX):
                self.results.append(line[len(RESULT_PREFIX) :].strip())
            elif line.startswith(ERROR_PREFIX):
                self.errors.append(line[len(ERROR_PREFIX) :].strip())
            elif line.startswith(PROGRESS_PREFIX):
                if self.progress is not None:
                    self.progress("[" + line[len(PROGRESS_PREFIX) :])
            else:
                self.tail.append(line)

    def where(self) -> str:
        """Where each rank was, the ranks furthest behind first: ``ranks 0,1 in step 'x' (furthest behind); …``."""
        groups: dict[tuple[int, str], list[int]] = {}
        for r in range(self.np):
            key = self.steps.get(r, (-1, "start-up, before MPI was initialised"))
            groups.setdefault(key, []).append(r)
        parts = []
        for i, ((_, step), ranks) in enumerate(sorted(groups.items())):
            who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ",".join(map(str, ranks))
            behind = " (furthest behind)" if i == 0 and len(groups) > 1 else ""
            parts.append(f"{who} in step {step!r}{behind}")
        return "; ".join(parts)

    def last_words(self) -> str:
        """The launcher's (or the MPI library's) last meaningful line, for a failure message."""
        for t in reversed(self.tail):
            if not _is_chatter(t):
                return f"; last output: {t.strip()[:200]}"
        return ""


def _pump(stream: Any, follow: _Follow) -> None:
    for line in stream:
        follow.line(line)


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
    with mpi_lock(say=progress):
        if launch.cluster is not None:
            from ..cluster import launch_settings, using

            with using(launch.cluster) as state:
                where = launch_settings(state, launch.np)
                return _run(launch, task, task_argv, default_timeout_s, progress, where.mpiexec_args, where.env)
        return _run(launch, task, task_argv, default_timeout_s, progress, (), {})


def _run(
    launch: Launch,
    task: str,
    task_argv: Sequence[str],
    default_timeout_s: float,
    progress: Callable[[str], None] | None,
    placement: Sequence[str],
    placement_env: Mapping[str, str],
) -> Any:
    argv = task_command(launch, task, task_argv, placement)
    env = dict(os.environ)
    env.update(placement_env)
    env.update(launch.env)
    env["PYTHONUNBUFFERED"] = "1"
    timeout_s = launch.timeout_for(default_timeout_s)
    follow = _Follow(launch.np, progress)
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # its own process group: one killpg reaches the launcher and every rank
        preexec_fn=_die_with_parent,
        text=True,
        bufsize=1,
        errors="replace",
    )
    readers = [threading.Thread(target=_pump, args=(s, follow), daemon=True) for s in (proc.stdout, proc.stderr)]
    for t in readers:
        t.start()
    restore = _on_sigterm()
    start = time.monotonic()
    try:
        rc = proc.wait(timeout=timeout_s)
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
            f"MPI task {task!r} on {launch.np} ranks returned no result ({time.monotonic() - start:.1f} s)"
            f"{follow.last_words()}"
        )
    try:
        envelope = unpack(follow.results[0])
    except ProtocolError as e:
        raise MPIRunError(f"MPI task {task!r}: rank 0's result could not be read: {e}") from None
    world = envelope.get("world_size") if isinstance(envelope, dict) else None
    if world != launch.np:
        raise MPIRunError(
            f"asked for {launch.np} ranks but the job that started has {world} (check the launcher's arguments, "
            "the hostfile's slots or the allocation)"
        )
    return envelope.get("result")


def _die_with_parent() -> None:
    """In the launcher's process, before exec: SIGTERM it if ``hnow`` dies without cleaning up (SIGKILL, a crash),
    so that mpiexec stops its ranks instead of leaving them busy-polling (Linux ``PR_SET_PDEATHSIG``)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def _on_sigterm() -> Callable[[], None]:
    """While a job runs, SIGTERM raises :class:`Terminated` (so the job is killed); returns the restorer."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main interpreter
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, old)
