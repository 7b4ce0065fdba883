"""The program of a virtual cluster's keeper (:class:`hnowmodel.cluster.procs.Keeper`), run by path as
``python -I -S keeper.py``: it imports nothing of hnowmodel.

It makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so a daemon's orphans (``slurmscriptd`` when
slurmctld dies, a job's ``slurmstepd``) are re-parented to it rather than to the machine's init. Each line of its
stdin, ``{"argv": [...], "env": {...}, "log": PATH}``, starts a daemon in a session of its own with exactly that
environment, stdin ``/dev/null`` and its output appended to ``log``; it answers on stdout with the pid, or ``!`` and
why the daemon could not start. At the end of its stdin it reaps its children the moment each exits, and exits
after the last one.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

__all__ = ["PR_SET_CHILD_SUBREAPER", "main"]

#: prctl's option that makes the calling process a child subreaper (linux/prctl.h).
PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    """Start the daemons asked for on stdin, then reap every child until none is left (see the module)."""
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    kids = []  # the Popen objects live on: their pids are reaped by os.wait below
    try:
        for line in sys.stdin:
            req = json.loads(line)
            try:
                with open(req["log"], "ab") as log:
                    kids.append(
                        subprocess.Popen(
                            req["argv"],
                            stdin=subprocess.DEVNULL,
                            stdout=log,
                            stderr=log,
                            env=req["env"],
                            start_new_session=True,
                        )
                    )
                print(kids[-1].pid, flush=True)
            except OSError as e:
                print("!", e, flush=True)
    except (BrokenPipeError, ValueError):  # the caller is gone: its daemons are still reaped
        pass
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


if __name__ == "__main__":
    main()
