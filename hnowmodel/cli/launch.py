"""Start ``python -m calibrate TASK`` under an MPI launcher as a subprocess and collect its result.

The job's rank 0 writes its result document (JSON) to a temporary file named by ``--result``; progress lines
from rank 0 go to stderr and are passed through. A failing rank prints one line starting with ``hnow-error:``
(naming the rank and the step) and aborts the job; that line becomes the :class:`MPIRunError` message. A job
that outlives its timeout, or a Ctrl-C, kills the whole process group so no rank is left behind.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import MPIRunError

__all__ = ["run_mpi", "mpi_command", "ERROR_PREFIX"]

ERROR_PREFIX = "hnow-error:"
# Shared with calibrate.runtime (which this package must not import): where ranks keep their current step,
# and how rank 0's progress lines begin.
STATUS_ENV = "HNOW_STATUS_DIR"
PROGRESS_PREFIX = "[hnow "


def _rank_steps(status_dir: Path, np: int) -> str:
    """Where each rank was, from the ranks' status files, the ranks furthest behind first.

    A rank that hangs or dies stops entering steps while its peers go on until they wait for it, so the group
    that entered the fewest steps is where to look: ``ranks 0,1 in step 'gather hosts' (furthest behind);
    rank 2 in step 'barrier'``.
    """
    groups: dict[tuple[int, str], list[int]] = {}
    for r in range(np):
        try:
            entered, step = (status_dir / f"rank{r}").read_text().split("\t", 1)
            key = (int(entered), step)
        except (OSError, ValueError):
            key = (-1, "start-up, before MPI was initialised")
        groups.setdefault(key, []).append(r)
    parts = []
    for i, ((_, step), ranks) in enumerate(sorted(groups.items())):
        who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ",".join(map(str, ranks))
        behind = " (furthest behind)" if i == 0 and len(groups) > 1 else ""
        parts.append(f"{who} in step {step!r}{behind}")
    return "; ".join(parts)


def _is_launcher_chatter(line: str) -> bool:
    """MPICH hydra / Open MPI boilerplate printed around an abort; it names no cause."""
    t = line.strip()
    return not t or t.startswith(("=", "YOUR APPLICATION", "This typically", "Please see", "Abort(", "-----"))


def mpi_command(
    task: str,
    task_args: Sequence[str],
    np: int,
    launcher: str = "mpiexec",
    launcher_args: str | Sequence[str] = "",
) -> list[str]:
    """The argv that runs ``python -m calibrate TASK`` on ``np`` ranks."""
    if isinstance(launcher_args, str):
        launcher_args = shlex.split(launcher_args)
    launcher_argv = shlex.split(launcher)
    if not launcher_argv or shutil.which(launcher_argv[0]) is None:
        raise MPIRunError(f"launcher {launcher!r} not found on PATH (install the 'mpich' extra or a system MPI)")
    return [*launcher_argv, "-n", str(np), *launcher_args, sys.executable, "-m", "calibrate", task, *task_args]


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_mpi(
    task: str,
    task_args: Sequence[str],
    np: int,
    *,
    launcher: str = "mpiexec",
    launcher_args: str | Sequence[str] = "",
    timeout_s: float = 300.0,
    env: Mapping[str, str] | None = None,
    echo: bool = True,
) -> Any:
    """Run an MPI task and return the JSON document its rank 0 wrote.

    ``echo`` passes the job's stderr (progress lines) through to ours. Raises :class:`MPIRunError` with one line
    naming the failing rank and step, or the timeout, or the launcher's own last words.
    """
    import json

    with tempfile.TemporaryDirectory(prefix="hnow-") as tmp:
        result = Path(tmp) / "result.json"
        status_dir = Path(tmp) / "status"
        status_dir.mkdir()
        argv = mpi_command(task, [*task_args, "--result", str(result)], np, launcher, launcher_args)
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env[STATUS_ENV] = str(status_dir)
        # The job's stdout goes to our stderr so that ``--json`` keeps stdout for one document.
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            start_new_session=True,
            text=True,
            bufsize=1,
        )
        tail: deque[str] = deque(maxlen=40)
        errors: list[str] = []

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip("\n")
                if line.startswith(ERROR_PREFIX):
                    errors.append(line[len(ERROR_PREFIX) :].strip())
                    continue
                tail.append(line)
                # Only rank 0's progress is shown; the MPI library's abort chatter is kept for diagnosis.
                if echo and line.startswith(PROGRESS_PREFIX):
                    print("[" + line[len(PROGRESS_PREFIX) :], file=sys.stderr, flush=True)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        start = time.monotonic()
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            reader.join(timeout=2)
            where = errors[0] if errors else _rank_steps(status_dir, np)
            raise MPIRunError(
                f"MPI task {task!r} on {np} ranks did not finish within {timeout_s:g} s and was killed "
                f"({where}); a rank hung or the machine is overloaded (raise --timeout)"
            ) from None
        except BaseException:
            _kill_group(proc)
            raise
        reader.join(timeout=5)
        if errors:
            raise MPIRunError(errors[0])
        if rc != 0:
            said_lines = (t.strip() for t in reversed(tail) if not _is_launcher_chatter(t))
            last = next((t for t in said_lines if not t.startswith(PROGRESS_PREFIX)), "")
            said = f"; last output: {last[:200]}" if last else ""
            raise MPIRunError(
                f"MPI task {task!r} on {np} ranks failed (exit {rc}) without an error report; "
                f"{_rank_steps(status_dir, np)}{said}"
            )
        if not result.exists():
            raise MPIRunError(f"MPI task {task!r} on {np} ranks wrote no result ({time.monotonic() - start:.1f} s)")
        return json.loads(result.read_text())
