"""Finding the MPI launcher and what it is: a leaf module (standard library and :mod:`hnowmodel.errors` only).

:func:`find_launcher` locates ``mpiexec``/``srun``/any launcher (beside the running Python first, then ``PATH``);
:func:`mpiexec_flavour` says whose ``mpiexec`` it is (MPICH's hydra, Open MPI's or Intel MPI's);
:data:`MPIEXEC_LIKE` names the launchers that take ``-n N``; :func:`find_pmi_library` finds Slurm's PMI-2 client library
(what Intel MPI's ranks load under ``srun``). Both :mod:`hnowmodel.jobs.launcher` (how ranks start) and
:mod:`hnowmodel.jobs.mpienv` (which library runs them) read it, so neither imports the other for it.

>>> kind_of("srun -N 2"), kind_of("/usr/bin/mpirun"), kind_of("ssh")
('srun', 'mpiexec', 'other')
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .errors import MPIRunError

__all__ = [
    "MPIEXEC_LIKE",
    "PMI2_NAMES",
    "find_launcher",
    "find_pmi_library",
    "mpiexec_flavour",
    "kind_of",
    "library_name",
]

#: Launcher names that take hydra/Open MPI style ``-n N`` (and ``-f``/``--hostfile``).
MPIEXEC_LIKE = ("mpiexec", "mpirun", "mpiexec.hydra")


def kind_of(launcher: str) -> str:
    """``srun``, ``mpiexec`` (hydra, Open MPI's mpirun and their aliases) or ``other``, from a launcher command."""
    base = Path(shlex.split(launcher)[0]).name
    return "srun" if base == "srun" else "mpiexec" if base in MPIEXEC_LIKE else "other"


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


_FLAVOURS: dict[str, str] = {}


def library_name(version_text: str) -> str:
    """The MPI library's name as hnow's registries key it (``MPICH``, ``Open MPI``, ``Intel MPI``) from its version
    text (``MPI_Get_library_version``), else the first word of its first line (``unknown`` for none).

    >>> library_name("Intel(R) MPI Library 2021.16 for Linux* OS"), library_name("MPICH Version: 4.3.0")
    ('Intel MPI', 'MPICH')
    """
    for marker, name in (("Intel(R) MPI", "Intel MPI"), ("MPICH", "MPICH"), ("Open MPI", "Open MPI")):
        if marker in version_text:  # Intel MPI is MPICH-derived: asked first
            return name
    words = version_text.splitlines()[0].split() if version_text else []
    return words[0] if words else "unknown"


def mpiexec_flavour(exe: str) -> str:
    """``hydra`` (MPICH), ``openmpi``, ``intel`` (Intel MPI's hydra) or ``unknown``: what ``EXE --version`` says it
    is (cached per path)."""
    if exe not in _FLAVOURS:
        try:
            out = subprocess.run(
                [exe, "--version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
            )
            text = out.stdout + out.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        if re.search(r"Intel\(R\) MPI", text):  # Intel's hydra is MPICH's, renamed: asked first
            _FLAVOURS[exe] = "intel"
        else:
            _FLAVOURS[exe] = (
                "hydra" if "HYDRA" in text else "openmpi" if re.search(r"Open MPI|OpenRTE|prte", text) else "unknown"
            )
    return _FLAVOURS[exe]


#: The file names of Slurm's PMI-2 client library, in the order looked for: the development link, then the runtime
#: library (Debian's ``libpmi2-0`` installs only ``libpmi2.so.0``).
PMI2_NAMES = ("libpmi2.so", "libpmi2.so.0")
_SYSTEM_LIBS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64", "/lib")


def _ldconfig_pmi2() -> str | None:
    """``libpmi2.so*`` as the dynamic linker's cache (``ldconfig -p``) lists it, else None."""
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(p, os.X_OK)), None
    )
    if ldconfig is None:
        return None
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = {}
    for line in out.stdout.splitlines():
        name, _, path = line.strip().partition(" => ")
        name = name.split(" ", 1)[0]
        if name in PMI2_NAMES and Path(path).is_file():
            found.setdefault(name, path)
    return next((found[n] for n in PMI2_NAMES if n in found), None)


def find_pmi_library(srun: str | None = None, *, system: bool = True) -> str | None:
    """The path of Slurm's PMI-2 client library (:data:`PMI2_NAMES`), None where there is none.

    Looked for beside ``srun`` first (``PREFIX/lib``, ``lib64``, ``lib/x86_64-linux-gnu``, ``lib/slurm`` of the
    ``PREFIX/bin/srun`` it resolves to: a Slurm installed under its own prefix), then, with ``system``, in the
    dynamic linker's cache and the system's library folders. ``srun`` None: the ``srun`` on ``PATH``.

    >>> find_pmi_library("/nowhere/bin/srun", system=False) is None
    True
    """
    srun = srun or shutil.which("srun")
    dirs: list[Path] = []
    if srun:
        prefix = Path(os.path.realpath(srun)).parent.parent
        dirs += [prefix / d for d in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/slurm", "lib64/slurm")]
    for d in dirs:
        for name in PMI2_NAMES:
            if (d / name).is_file():
                return str(d / name)
    if not system:
        return None
    cached = _ldconfig_pmi2()
    if cached:
        return cached
    return next((f"{d}/{n}" for d in _SYSTEM_LIBS for n in PMI2_NAMES if Path(d, n).is_file()), None)
