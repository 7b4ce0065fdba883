"""A calibration's finished steps, saved as they finish and reused by a rerun (``--steps DIR``).

Rank 0 reads and writes the folder (the files' format: :mod:`hnowmodel.stepfiles`); every rank learns from it which
steps are finished. :meth:`Checkpoint.step` runs a step, or hands back its saved value: to every rank
(``share=True``, for a step whose value every rank holds, e.g. the host pairs) or to rank 0 only (the others get
None, as the measuring functions of rank-0 results return). What a step depends on (``depends_on``: the ranks'
hosts, the options that change what is measured, the versions) is compared with the saved steps' when the folder is
opened: a difference starts over, in one progress line that says what changed; steps saved with the same
dependencies are reused, in one progress line that names them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from hnowmodel.stepfiles import decode, differences, read_steps, remove_steps, save_step

__all__ = ["OPTION_KEYS", "Checkpoint", "depends_on"]

#: The task's flags that change what is measured (``--regime`` only chooses among the fits: not here).
OPTION_KEYS = (
    "testbed",
    "layout",
    "sizes",
    "network",
    "precision",
    "budget",
    "quick",
    "kernels",
    "rounds",
    "gap_us",
    "native_ops",
    "native_sizes",
)


def _versions(mpi_library: str) -> dict[str, str]:
    """hnow's version, a digest of the measuring code (this package's sources and C kernels: a change there changes
    what a step measures, whatever the version says), Python's and the MPI library's."""
    try:
        hnow = metadata.version("hnowmodel")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        hnow = "unknown"
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for f in sorted([*here.rglob("*.py"), *here.rglob("*.c")]):
        digest.update(f.relative_to(here).as_posix().encode() + b"\0" + f.read_bytes())
    return {"hnow": hnow, "calibrate": digest.hexdigest()[:16], "python": platform.python_version(), "mpi": mpi_library}


def depends_on(args: argparse.Namespace, hosts: Sequence[str], testbed: Any, mpi_library: str) -> dict[str, Any]:
    """What a calibration's measurements depend on: the host of each rank (so the job's size too), the flags of
    :data:`OPTION_KEYS` (with the testbed's description: its file may change under the same name), the versions
    (:func:`_versions`) and what the launcher side adds (``--steps-context``: the virtual cluster's spec, the
    hostfile, the launcher's arguments; :func:`hnowmodel.jobs.calibrate_job.launch_context`)."""
    from hnowmodel.jobs.wire import unpack

    opts = {k: getattr(args, k, None) for k in OPTION_KEYS}
    if testbed is not None:
        opts["testbed"] = {"name": args.testbed, "description": testbed.to_dict()}
    key = {
        "hosts": list(hosts),
        "options": opts,
        "version": _versions(mpi_library),
        "launch": unpack(args.steps_context) if getattr(args, "steps_context", None) else None,
    }
    return json.loads(json.dumps(key))  # as a step file gives it back (lists for tuples), to compare with one


class Checkpoint:
    """The finished steps of one calibration in ``folder`` (None: nothing is saved, every step runs)."""

    def __init__(self, rt: Any, folder: str | None, key: dict[str, Any]) -> None:
        self.rt = rt
        self.folder = None if folder is None else Path(folder)
        self.key = key
        self.saved: dict[str, Any] = {}
        names: list[str] = []
        if self.folder is not None and rt.rank == 0:
            names = self._open()
        self.done = set(rt.comm.bcast(names, root=0))

    def _open(self) -> list[str]:
        """Rank 0: the steps that can be reused (saying which in one line), the others removed (saying why)."""
        assert self.folder is not None
        found = read_steps(self.folder)
        stale = {n: s for n, s in found.items() if dict(s.depends_on) != self.key}
        if stale:
            why = differences(next(iter(stale.values())).depends_on, self.key)
            remove_steps(self.folder)
            self.rt.progress(
                f"calibration: the {len(found)} finished step(s) in {self.folder} were measured with another "
                f"{'; '.join(why[:3])}{' …' if len(why) > 3 else ''}: starting over"
            )
            return []
        if found:
            self.saved = {n: s.data for n, s in found.items()}
            self.rt.progress(
                f"calibration: reusing {len(found)} finished step(s) from {self.folder} ({', '.join(found)}); "
                "measuring the rest"
            )
        return list(found)

    def step(self, name: str, run: Callable[[], Any], *, share: bool = False) -> Any:
        """``run()`` (on every rank), or the value step ``name`` finished with before: on every rank with
        ``share``, else on rank 0 (None elsewhere). A step run now is saved by rank 0 before the next begins."""
        comm = self.rt.comm
        if name in self.done:
            value = decode(self.saved[name]) if self.rt.rank == 0 else None
            return comm.bcast(value, root=0) if share else value
        value = run()
        if self.folder is not None and self.rt.rank == 0:
            save_step(self.folder, name, self.key, value)
        return value
