"""The job's process group: the launcher and every rank start in a session of their own, so that one ``killpg``
reaches them all (:func:`_kill_group`); the launcher gets SIGTERM if ``hnow`` dies without cleaning up
(:func:`_die_with_parent`); SIGTERM while a job runs raises :class:`Terminated` (:func:`_on_sigterm`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Terminated"]


class Terminated(BaseException):
    """SIGTERM arrived while an MPI job ran; the job was killed (raised like KeyboardInterrupt)."""


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


def _die_with_parent() -> None:
    """In the launcher's process, before exec: SIGTERM it if ``hnow`` dies without cleaning up (SIGKILL, a crash),
    so that mpiexec stops its ranks instead of leaving them busy-polling (Linux ``PR_SET_PDEATHSIG``)."""
    try:
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
