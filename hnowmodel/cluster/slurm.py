"""A real Slurm on a virtual cluster (``hnow cluster up SPEC --slurm``): munged, slurmctld and one slurmd per host.

Layout (cluster ``lab``; the folder is recorded in the state file as ``slurm_dir`` before anything is made):

- ``/run/hnowmodel/slurm/lab/`` (mode 0755: munge wants every folder above its socket searchable):
  ``slurm.conf``, an empty ``plugstack.conf`` (the machine's SPANK plugins are not loaded), ``munge.key`` (0600,
  1024 random bytes, this cluster's own), ``munge/munge.socket``, ``ctld/`` (slurmctld's state), ``nodes/<host>/``
  (each slurmd's spool and pid file: ``%n`` in ``slurm.conf``) and ``log/`` (each daemon's log: its stderr).
- ``munged`` and ``slurmctld`` run in the root namespace; slurmctld listens on a free TCP port (from
  :data:`CTLD_PORT_BASE` up) and is reached at the bridge address (``SlurmctldHost=hnow-ctld-lab(10.213.X.1)``).
  It runs in its own UTS namespace named ``hnow-ctld-<cluster>``, so the machine's host name never matters.
- each host's ``slurmd -N <host>`` runs in the host's network namespace (``nsenter --net=/run/netns/NS``: not
  ``ip netns exec``, which remounts ``/sys`` and leaves slurmd without a cgroup file system) inside a new mount and
  UTS namespace (``unshare --mount --uts --propagation private``) whose host name is the host's and whose ``/tmp``
  and ``/dev/shm`` are fresh tmpfs mounts: a node-local ``/tmp``, as on real compute nodes. Everything a job starts
  (slurmstepd and the tasks) inherits all three, so it dies with the namespace at ``down``.

Every daemon is started with ``HNOW_SLURM_DIR=<that folder>`` in its environment and its pid is written to the
state file (``processes``) before ``up`` waits for it; ``down`` kills the recorded pids, every process carrying the
marker (also children such as ``slurmscriptd``, and daemons started just before a crash) and everything inside the
namespaces, then removes the folder. Nothing is mounted in the root namespace and no ``/dev/shm`` segment is made
there.

``srun``/``sbatch``/``salloc`` work from the root namespace with ``SLURM_CONF`` set (:func:`slurm_env`): the steps
reach srun at the bridge address it connects from, and the ranks of an MPI job reach each other over the shaped
links (``srun --mpi=pmi2`` for the MPICH wheel, with ``MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp``: Slurm 22.05's
PMI-1 server reads at most 1024 bytes per command, less than UCX's address records).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from ..errors import HnowError
from ..mpi_programs import find_pmi_library
from .netns import NETNS_DIR
from .procs import EXIT_WAIT_S, Keeper, keeper_pids, poll, running, stop_keepers, stop_processes
from .state import ClusterState, state_dir

__all__ = [
    "PACKAGES",
    "PMI2_PACKAGE",
    "BINARIES",
    "PARTITION",
    "CTLD_PORT_BASE",
    "READY_TIMEOUT_S",
    "MARKER_ENV",
    "missing_reason",
    "ensure_installed",
    "slurm_dir",
    "slurm_env",
    "conf_text",
    "start",
    "daemon_pids",
    "stop",
    "problems",
]

#: The Debian packages that give Slurm 22.05 and munge (``apt-get install --no-install-recommends``).
PACKAGES = ("slurmd", "slurmctld", "slurm-client", "munge")
#: The Debian package of Slurm's PMI-2 client library (``libpmi2.so.0``): what Intel MPI's ranks load under
#: ``srun --mpi=pmi2`` (``I_MPI_PMI_LIBRARY``, as Intel's documentation asks); without it they speak PMI-1 to the
#: pmi2 plugin, which also works (docs/intel-mpi.md, "Under srun"). MPICH does not use it.
PMI2_PACKAGE = "libpmi2-0"
#: The commands a Slurm on the virtual cluster needs (the first four come with :data:`PACKAGES`).
BINARIES = ("slurmctld", "slurmd", "srun", "sinfo", "munged", "nsenter", "unshare", "mount", "hostname")
#: The one partition, containing every host; the default one.
PARTITION = "hnow"
#: slurmctld listens on the first free port from here (one port per cluster; ``SlurmctldPort``).
CTLD_PORT_BASE = 17817
#: How long ``up`` waits for every node to be idle, seconds.
READY_TIMEOUT_S = 10.0
#: The environment variable every daemon of a cluster's Slurm carries (its value: the cluster's Slurm folder).
MARKER_ENV = "HNOW_SLURM_DIR"

_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PKG_OF = {"nsenter": "util-linux", "unshare": "util-linux", "mount": "mount", "hostname": "hostname"}


def _which(cmd: str) -> str | None:
    return shutil.which(cmd) or next(
        (p for p in (f"/usr/sbin/{cmd}", f"/sbin/{cmd}", f"/usr/bin/{cmd}", f"/bin/{cmd}") if os.access(p, os.X_OK)),
        None,
    )


def _missing_binaries() -> list[str]:
    return [b for b in BINARIES if _which(b) is None]


def missing_reason() -> str:
    """Why a Slurm cannot be run on a virtual cluster here, in one line; ``''`` when it can (root and every command
    of :data:`BINARIES` present). Does not install anything (see :func:`ensure_installed`)."""
    if os.geteuid() != 0:
        return "Slurm on the virtual cluster needs root"
    missing = _missing_binaries()
    if not missing:
        return ""
    pkgs = sorted({_PKG_OF.get(b, "slurm") for b in missing})
    if "slurm" in pkgs:
        pkgs = [p for p in pkgs if p != "slurm"] + list(PACKAGES)
    return (
        f"Slurm is not installed here (missing {', '.join(missing)}): "
        f"apt-get install --no-install-recommends {' '.join(pkgs)}"
    )


def _apt_install(apt: str, pkgs: list[str], timeout_s: float, update: bool = True) -> str:
    """``apt-get install -y --no-install-recommends PKGS`` (with ``update``: once more after ``apt-get update`` if
    that fails); '' when it succeeded, else apt-get's last words."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt, "-o", "DPkg::Lock::Timeout=120", "install", "-y", "--no-install-recommends", *pkgs]
    last = ""
    for update_first in (False, True)[: 1 + update]:
        try:
            if update_first:
                subprocess.run(
                    [apt, "-o", "DPkg::Lock::Timeout=120", "update"],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=timeout_s,
                    stdin=subprocess.DEVNULL,
                )
            proc = subprocess.run(
                install, capture_output=True, text=True, env=env, timeout=timeout_s, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            last = f"apt-get did not finish in {timeout_s:g} s"
            continue
        if proc.returncode == 0:
            return ""
        lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
    return last


def ensure_installed(timeout_s: float = 600.0) -> None:
    """Make Slurm usable here: when root, ``apt-get`` exists and a command of :data:`BINARIES` is missing, run
    ``apt-get install -y --no-install-recommends slurmd slurmctld slurm-client munge`` (``DEBIAN_FRONTEND=
    noninteractive``; once more after ``apt-get update`` if that fails). ~8 s when the packages are reachable. Then,
    where Slurm's PMI-2 library is missing (:func:`hnowmodel.mpi_programs.find_pmi_library`), :data:`PMI2_PACKAGE`
    (without ``apt-get update`` unless Slurm was just installed; once per process); Slurm stays usable when that
    fails (Intel MPI's ranks then speak PMI-1).

    Raises :class:`HnowError` with one line (:func:`missing_reason`, or apt-get's last words) when Slurm is still
    not usable afterwards. Nothing is done when everything is there already."""
    missing = missing_reason()
    apt = _which("apt-get")
    if missing:
        if os.geteuid() != 0 or apt is None:
            raise HnowError(missing + ("" if apt else " (no apt-get here to install it)"))
        pkgs = [*PACKAGES, *sorted({_PKG_OF[b] for b in _missing_binaries() if b in _PKG_OF})]
        last = _apt_install(apt, pkgs, timeout_s)
        why = missing_reason()
        if why:
            raise HnowError(f"{why}; installing it failed: {last or 'apt-get succeeded, the commands are missing'}")
    if apt is not None and os.geteuid() == 0 and find_pmi_library() is None:
        _install_pmi2(apt, timeout_s, update=bool(missing))


@functools.cache
def _install_pmi2(apt: str, timeout_s: float, update: bool) -> str:
    """:data:`PMI2_PACKAGE` installed, tried once per process (every ``up --slurm`` asks; a machine that cannot
    install it must not wait for apt-get each time; ``update``: also after ``apt-get update``, only where Slurm was
    just installed): '' when it was, else apt-get's last words."""
    return _apt_install(apt, [PMI2_PACKAGE], timeout_s, update=update)


def slurm_dir(name: str) -> Path:
    """The folder of cluster ``name``'s Slurm (``/run/hnowmodel/slurm/<name>`` for root)."""
    return state_dir().parent / "slurm" / name


def slurm_env(state: ClusterState) -> dict[str, str]:
    """The environment that points ``srun``, ``sbatch``, ``salloc``, ``sinfo`` … at the Slurm of the cluster
    ``state`` describes: ``{"SLURM_CONF": <its slurm.conf>}``. :class:`HnowError` when it runs no Slurm."""
    if not state.slurm_conf:
        raise HnowError(f"cluster {state.name!r} runs no Slurm: bring it up with 'hnow cluster up SPEC --slurm'")
    return {"SLURM_CONF": state.slurm_conf}


def _ctld_name(cluster: str) -> str:
    return f"hnow-ctld-{cluster}"


def conf_text(state: ClusterState, folder: Path, port: int) -> str:
    """The ``slurm.conf`` of the cluster ``state`` describes, its Slurm folder being ``folder`` and slurmctld's
    port ``port``: one node per host (``NodeAddr`` its address, ``CPUs`` its slots), one default partition."""
    d = str(folder)
    lines = [
        f"# Slurm of the hnowmodel virtual cluster {state.name!r} (written by 'hnow cluster up --slurm').",
        f"ClusterName={state.name}",
        f"SlurmctldHost={_ctld_name(state.name)}({state.bridge_address})",
        f"SlurmctldPort={port}",
        "SlurmdPort=6818",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d}/munge/munge.socket",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=pmi2",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/builtin",
        # the hosts have the slots the spec says, whatever this machine's cores
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "MailProg=/bin/true",
        f"PlugStackConfig={d}/plugstack.conf",
        f"StateSaveLocation={d}/ctld",
        f"SlurmctldPidFile={d}/ctld/slurmctld.pid",
        f"SlurmdSpoolDir={d}/nodes/%n",
        f"SlurmdPidFile={d}/nodes/%n/slurmd.pid",
        "SlurmctldTimeout=10",
        "SlurmdTimeout=30",
        "MessageTimeout=10",
        "TCPTimeout=2",
        "KillWait=2",
        "InactiveLimit=0",
        "MinJobAge=60",
        "WaitTime=0",
        "BatchStartTimeout=10",
    ]
    lines += [f"NodeName={h.name} NodeAddr={h.address} CPUs={h.slots} State=UNKNOWN" for h in state.hosts]
    nodes = ",".join(h.name for h in state.hosts)
    lines.append(f"PartitionName={PARTITION} Nodes={nodes} Default=YES State=UP MaxTime=INFINITE")
    return "\n".join(lines) + "\n"


def _free_port(base: int, span: int = 512) -> int:
    """The first TCP port from ``base`` that can be bound on every address of the root namespace."""
    for p in range(base, base + span):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", p))
            except OSError:
                continue
            return p
    raise HnowError(f"no free TCP port for slurmctld in {base}..{base + span - 1}")


def _marked(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return marker in fh.read()
    except OSError:
        return False


def _marker(folder: str | os.PathLike) -> bytes:
    return f"{MARKER_ENV}={os.fspath(folder)}\0".encode()


def _marked_pids(folder: str | os.PathLike) -> list[int]:
    """Every process carrying the marker of the Slurm folder ``folder`` (the daemons), every child of its keeper
    (:class:`.procs.Keeper`: the daemons, and the orphans it adopted) and every descendant of one
    (``slurmscriptd``, which slurmctld starts with an environment of its own; slurmstepd). Not the keeper."""
    marker, me = _marker(folder), os.getpid()
    keepers = set(keeper_pids(os.fspath(folder)))
    marked: list[int] = []
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
        if ppid in keepers or _marked(pid, marker):
            marked.append(pid)
    out, todo = [], list(marked)
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.append(pid)
            todo += children.get(pid, [])
    return out


def problems(state: ClusterState) -> list[str]:
    """What is wrong with the Slurm of ``state`` (``[]`` when it has none or all is there): a missing
    ``slurm.conf`` or a recorded daemon that is no longer running."""
    if not state.slurm_conf:
        return []
    out = [] if os.path.exists(state.slurm_conf) else [f"file {state.slurm_conf}"]
    marker = _marker(state.slurm_dir or "")
    out += [f"process {p}" for p in state.processes if not (running(p) and _marked(p, marker))]
    return out


def _tail(path: str | os.PathLike, n: int = 4) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "no log"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "pmix" not in ln.lower()]
    return " | ".join(lines[-n:]) or "empty log"


class _Daemons:
    """The daemons started so far (``what`` → pid and log file) and the state, rewritten as each one starts.

    Each daemon is started by the cluster's :class:`.procs.Keeper` (tagged with the Slurm folder), so it is never a
    child of the caller and lives on after ``hnow cluster up`` exits, in a session of its own (Ctrl-C at the
    terminal does not reach it); the keeper reaps it the moment ``down`` kills it. :meth:`close` when all are
    started."""

    def __init__(self, state: ClusterState, write: Callable[[ClusterState], ClusterState], folder: Path):
        self.state, self.write, self.folder = state, write, folder
        self.pids: dict[str, tuple[int, Path]] = {}
        self.env = {
            "PATH": ":".join(p for p in (os.environ.get("PATH", ""), _SYSTEM_PATH) if p),
            "LANG": "C",
            MARKER_ENV: str(folder),
        }
        self.keeper = Keeper(str(folder))

    def spawn(self, what: str, argv: list[str], log: Path) -> None:
        try:
            pid = self.keeper.spawn(argv, self.env, log)
        except HnowError as e:
            raise HnowError(f"cluster {self.state.name!r}: could not start {what}: {e}") from None
        self.pids[what] = (pid, log)

    def close(self) -> None:
        self.keeper.close()

    def record(self) -> None:
        """Write every started daemon's pid into the state file (before anything waits for them)."""
        pids = tuple(dict.fromkeys((*self.state.processes, *(p for p, _ in self.pids.values()))))
        self.state = self.write(replace(self.state, processes=pids))

    def check(self) -> None:
        """HnowError naming the first daemon that already exited, with its last log lines."""
        for what, (pid, log) in self.pids.items():
            if not running(pid):
                raise HnowError(
                    f"cluster {self.state.name!r}: {what} exited while Slurm was starting; its log {log}: {_tail(log)}"
                )


def _wait(cond: Callable[[], bool], daemons: _Daemons, timeout_s: float, what: str, log: Path) -> None:
    """Return when ``cond()`` holds; :class:`HnowError` when a daemon exits first (:meth:`_Daemons.check`) or
    ``timeout_s`` seconds pass (``what`` happened, with the last lines of ``log``)."""
    if not poll(cond, timeout_s, daemons.check):
        raise HnowError(f"cluster {daemons.state.name!r}: {what} after {timeout_s:g} s; log {log}: {_tail(log)}")


def _listening(port: int) -> bool:
    """True when a TCP socket of the root namespace listens on ``port`` (read from ``/proc/net/tcp``: probing by
    connecting would leave an error line in slurmctld's log)."""
    want = f":{port:04X}"
    try:
        with open("/proc/net/tcp") as fh:
            rows = fh.read().splitlines()[1:]
    except OSError:
        return False
    return any(len(r.split()) > 3 and r.split()[1].endswith(want) and r.split()[3] == "0A" for r in rows)


def _node_states(conf: str) -> dict[str, str]:
    """Node name -> Slurm state (``idle``, ``unknown*``, ``down`` …) as ``sinfo`` prints it."""
    proc = subprocess.run(
        [_which("sinfo") or "sinfo", "-h", "-N", "-o", "%N %T"],
        capture_output=True,
        text=True,
        env={**os.environ, "SLURM_CONF": conf},
        timeout=15,
        stdin=subprocess.DEVNULL,
    )
    out = {}
    for ln in proc.stdout.splitlines():
        parts = ln.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def _make_folder(state: ClusterState, folder: Path) -> int:
    """Make the Slurm folder of ``state`` (see the module's layout: a fresh munge key, ``slurm.conf`` written
    atomically last) and return slurmctld's port."""
    for d in (folder.parent, folder):
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
    with contextlib.suppress(OSError):  # munge wants every folder above its socket searchable
        os.chmod(folder.parent.parent, os.stat(folder.parent.parent).st_mode | 0o111)
    for sub in ("munge", "ctld", "log", "nodes", *(f"nodes/{h.name}" for h in state.hosts)):
        (folder / sub).mkdir(mode=0o755, exist_ok=True)
    os.chmod(folder / "munge", 0o755)
    fd = os.open(folder / "munge.key", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(os.urandom(1024))
    (folder / "plugstack.conf").write_text("")
    port = _free_port(CTLD_PORT_BASE)
    tmp = folder / ".slurm.conf.tmp"
    tmp.write_text(conf_text(state, folder, port))
    os.chmod(tmp, 0o644)
    os.replace(tmp, folder / "slurm.conf")
    return port


def _start_munged(daemons: _Daemons, timeout_s: float) -> None:
    """munged with this cluster's key, in the root namespace; returns when its socket is there."""
    folder, log = daemons.folder, daemons.folder / "log" / "munged.log"
    sock = folder / "munge" / "munge.socket"
    argv = [_which("munged") or "munged", "--foreground", f"--key-file={folder / 'munge.key'}", f"--socket={sock}"]
    daemons.spawn("munged", [*argv, f"--pid-file={folder}/munged.pid", f"--seed-file={folder}/munged.seed"], log)
    daemons.record()
    _wait(sock.exists, daemons, timeout_s, "munged made no socket", log)


def _start_ctld(daemons: _Daemons, port: int, timeout_s: float) -> None:
    """slurmctld in a UTS namespace of its own named ``hnow-ctld-<cluster>``; returns when it listens on ``port``."""
    st, log = daemons.state, daemons.folder / "log" / "slurmctld.log"
    sh_ctld = 'hostname "$1" || exit 1; exec slurmctld -D -f "$2"'
    conf = str(daemons.folder / "slurm.conf")
    unshare = _which("unshare") or "unshare"
    daemons.spawn("slurmctld", [unshare, "--uts", "--", "/bin/sh", "-c", sh_ctld, "sh", _ctld_name(st.name), conf], log)
    daemons.record()
    what = f"slurmctld does not answer on {st.bridge_address}:{port}"
    _wait(lambda: _listening(port), daemons, timeout_s, what, log)


# node-local /tmp and /dev/shm: tmpfs (named hnow-<cluster>-<host>-tmp/-shm in /proc/*/mounts) in the host's own
# mount namespace, gone with its last process
_SH_NODE = (
    'hostname "$1" || exit 1; '
    'mount -t tmpfs -o mode=1777 "$3-tmp" /tmp || exit 1; '
    'mount -t tmpfs -o mode=1777 "$3-shm" /dev/shm || exit 1; '
    'exec slurmd -D -N "$1" -f "$2"'
)


def _start_slurmds(daemons: _Daemons) -> None:
    """One slurmd per host, in the host's network namespace and a mount and UTS namespace of its own."""
    st, conf = daemons.state, str(daemons.folder / "slurm.conf")
    nsenter, unshare = _which("nsenter") or "nsenter", _which("unshare") or "unshare"
    for h in st.hosts:
        argv = [nsenter, f"--net={NETNS_DIR}/{h.namespace}", "--"]
        argv += [unshare, "--mount", "--uts", "--propagation", "private", "--"]
        argv += ["/bin/sh", "-c", _SH_NODE, "sh", h.name, conf, f"hnow-{st.name}-{h.name}"]
        daemons.spawn(f"slurmd of host {h.name}", argv, daemons.folder / "log" / f"slurmd-{h.name}.log")
    daemons.record()


def _wait_idle(daemons: _Daemons, timeout_s: float) -> None:
    """Return when ``sinfo`` says every host's node is idle; :class:`HnowError` naming the nodes that are not, with
    the last lines of the first one's slurmd log and of slurmctld's."""
    st, log = daemons.state, daemons.folder / "log"
    names = [h.name for h in st.hosts]
    last: dict[str, str] = {}

    def all_idle() -> bool:
        nonlocal last
        last = _node_states(str(daemons.folder / "slurm.conf"))
        return all(last.get(n) == "idle" for n in names)

    try:
        _wait(all_idle, daemons, timeout_s, "nodes not idle", log / "slurmctld.log")
    except HnowError as e:
        bad = [n for n in names if last.get(n) != "idle"]
        if not bad or "exited" in str(e):
            raise
        states = ", ".join(f"{n} {last.get(n, 'unknown')}" for n in bad)
        node_log, ctld_log = _tail(log / f"slurmd-{bad[0]}.log", 3), _tail(log / "slurmctld.log", 3)
        raise HnowError(
            f"cluster {st.name!r}: Slurm nodes not idle after {timeout_s:g} s ({states}); "
            f"slurmd of {bad[0]}: {node_log}; slurmctld: {ctld_log}"
        ) from None


def start(
    state: ClusterState,
    write: Callable[[ClusterState], ClusterState],
    timeout_s: float = READY_TIMEOUT_S,
) -> ClusterState:
    """Start the Slurm of the cluster ``state`` describes (its network must be up) and return the state with
    ``slurm_dir``, ``slurm_conf`` and the daemons' ``processes``; ``write`` writes a state to the state file and
    is called before the folder is made and after each daemon is started. Returns when every node is ``idle``
    (~0.3 s for 4 hosts); :class:`HnowError` with the last lines of the guilty daemon's log when a daemon exits
    or the nodes are not idle within ``timeout_s`` seconds. On error the caller removes what was made
    (:func:`stop`, from the state file)."""
    folder = slurm_dir(state.name)
    state = write(replace(state, slurm_dir=str(folder), slurm_conf=str(folder / "slurm.conf")))
    if folder.exists():  # a leftover of a crash whose state file was lost
        stop(None, state.name, wait_s=2.0)
    port = _make_folder(state, folder)
    daemons = _Daemons(state, write, folder)
    try:
        _start_munged(daemons, timeout_s)
        _start_ctld(daemons, port, timeout_s)
        _start_slurmds(daemons)
        _wait_idle(daemons, timeout_s)
    finally:
        daemons.close()
    return daemons.state


def daemon_pids(state: ClusterState | None, name: str | None = None) -> list[int]:
    """The processes of a cluster's Slurm (``state``, or by ``name`` when its state file is gone): the recorded
    daemons that still carry its marker, then every process carrying it and their descendants. Read them before
    killing anything: a process that has exited no longer shows its marker."""
    name = state.name if state is not None else str(name)
    folder = Path(state.slurm_dir) if state is not None and state.slurm_dir else slurm_dir(name)
    marker = _marker(folder)
    pids = [p for p in (state.processes if state is not None else ()) if _marked(p, marker)]
    return pids + [p for p in _marked_pids(folder) if p not in pids]


def stop(
    state: ClusterState | None, name: str | None = None, extra_pids: Iterable[int] = (), wait_s: float = EXIT_WAIT_S
) -> list[int]:
    """Stop the Slurm of a cluster (``state``, or by ``name`` when its state file is gone) and remove its folder:
    SIGKILL to its :func:`daemon_pids` and to ``extra_pids`` (the processes inside its namespaces), and return
    when every one has exited and been reaped (:func:`.procs.stop_processes`: ``wait_s`` per SIGKILL, then a
    second SIGKILL; :class:`HnowError` naming those still running), its keeper too (:func:`.procs.stop_keepers`).
    Returns the pids killed. Idempotent."""
    name = state.name if state is not None else str(name)
    folder = Path(state.slurm_dir) if state is not None and state.slurm_dir else slurm_dir(name)
    keepers = keeper_pids(str(folder))  # read before the kill: each exits once its daemons are gone
    pids = daemon_pids(state, name)
    pids += [p for p in extra_pids if p not in pids]
    stop_processes(pids, f"cluster {name!r}: processes", wait_s)
    stop_keepers(keepers)
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        raise HnowError(f"cluster {name!r}: could not remove {folder}")
    with contextlib.suppress(OSError):  # the shared parent, when no other cluster uses it
        folder.parent.rmdir()
    return pids
