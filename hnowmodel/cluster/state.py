"""What a virtual cluster made, kept in a state file so that ``down`` can remove it even after a crash.

The state file (``hnowmodel.cluster-state/1``) is written atomically *before* anything is created, listing every
namespace, link and file that ``up`` is about to make (their names follow from the spec), and again when the
cluster is complete (``phase`` goes from ``creating`` to ``up``). Folder: ``/run/hnowmodel/clusters`` for root
(mode 0700), else ``$XDG_RUNTIME_DIR/hnowmodel/clusters`` or ``/tmp/hnowmodel-<uid>/clusters``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import read_json, write_json_atomic
from .spec import ClusterSpec, check_cluster_name, from_dict, to_dict

__all__ = [
    "STATE_SCHEMA",
    "HostState",
    "Shaping",
    "ClusterState",
    "state_dir",
    "state_path",
    "read_state",
    "write_state",
    "remove_state",
    "list_states",
    "locked",
]

STATE_SCHEMA = "hnowmodel.cluster-state/1"


@dataclass(frozen=True)
class HostState:
    """One host as built: its namespace, the root-side veth (its ingress shaping point), its IPv4 address and
    rates in Mbit/s; ``cgroup``: the ``cpu`` cgroup of a host with a CPU share (:mod:`.cpu`), else None. Inside
    the namespace its interface is always ``eth0``."""

    name: str
    namespace: str
    veth: str
    address: str
    egress_mbit: float
    ingress_mbit: float
    slots: int
    cgroup: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "veth": self.veth,
            "address": self.address,
            "egress_mbit": self.egress_mbit,
            "ingress_mbit": self.ingress_mbit,
            "slots": self.slots,
        }
        if self.cgroup is not None:
            out["cgroup"] = self.cgroup
        return out


#: TCP payload bytes in one 1500-byte IPv4 packet with the timestamp option (1500 - 20 - 20 - 12).
TCP_PAYLOAD_PER_PACKET = 1448


@dataclass(frozen=True)
class Shaping:
    """The ``tbf`` settings on every shaped link: the token bucket's ``burst_bytes`` (that many bytes pass at
    memory speed when the bucket is full; refilled in burst × 8 / rate) and the queue ``limit_bytes``; and the TCP
    of every host of spec ``"tcp": "tuned"`` (the default; ``"default"`` and ``"kernel"`` keep the kernel's), set so
    that how a
    root's concurrent messages share its link does not depend on what the connections carried before
    (docs/virtual-cluster.md, "TCP"):

    * ``initcwnd_segments``: the route's ``initcwnd`` and ``initrwnd``, with a receive buffer of
      ``tcp_rmem_default_bytes``: a message up to that window goes at once (no slow start, no idle restart);
    * ``congestion_control``: ``reno`` (Linux's default here may be BBR, which paces every connection at the rate it
      has learnt, so a link's sharing follows the history of each connection);
    * ``slow_start_after_idle``: 0, a connection keeps its window between calls (Linux's 1 restarts it from the
      initial window after an idle retransmission timeout: MPICH's Bruck alltoall at 256 KiB, whose 768 KiB steps
      are larger than that window, then took 1052 ms instead of about 800 in every other call, docs/accuracy.md);
    * ``gso_max_segs`` and ``tcp_limit_output_bytes``: one-segment packets, at most that many bytes of a socket
      queued below TCP, so a host's egress serves its connections round-robin, packet by packet;
      ``queued_segments`` is how many packets of each connection that leaves in the egress queue (measured with
      ``experiments/tcp_fanout.py``: a message posted behind others waits for one round of them), which a
      calibration on the cluster records for the model (:func:`queued_bytes`).

    ``None``: not recorded (a cluster brought up by an hnowmodel before the field existed)."""

    qdisc: str = "tbf"
    burst_bytes: int = 8192
    limit_bytes: int = 4 * 1024 * 1024
    initcwnd_segments: int | None = 256
    tcp_rmem_default_bytes: int | None = 1024 * 1024
    congestion_control: str | None = "reno"
    gso_max_segs: int | None = 1
    tcp_limit_output_bytes: int | None = 4096
    queued_segments: int | None = 3
    slow_start_after_idle: int | None = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def queued_bytes(self) -> float | None:
        """TCP payload bytes of each connection in a host's egress queue (``queued_segments`` × 1448, the payload
        of a 1500-byte packet with TCP timestamps); None when not recorded.

        >>> Shaping().queued_bytes()
        4344
        """
        return None if self.queued_segments is None else self.queued_segments * TCP_PAYLOAD_PER_PACKET


@dataclass(frozen=True)
class ClusterState:
    """A cluster as recorded in its state file.

    ``phase`` is ``creating`` until every resource exists, then ``up``. ``namespaces`` and ``links`` are every
    namespace and root-namespace link the cluster makes (all of them are recorded before they are made);
    ``files`` the files beside the state file (the exec wrapper); ``processes`` the long-lived processes it
    started: the Slurm daemons of a cluster up with ``--slurm`` (ranks run under the caller's launcher and are
    killed by ``down`` through ``ip netns pids``). ``slurm_conf`` is the ``slurm.conf`` of the cluster's own
    Slurm (None without one: ``SLURM_CONF=<it> srun …`` runs on its hosts) and ``slurm_dir`` the folder holding
    it and everything else of that Slurm (removed whole by ``down``). ``missing`` is filled by
    :func:`hnowmodel.cluster.status`: recorded resources that do not exist (a stale state).
    """

    spec: ClusterSpec
    phase: str
    subnet: str
    bridge: str
    bridge_address: str
    hosts: tuple[HostState, ...]
    shaping: Shaping
    wrapper: str
    namespaces: tuple[str, ...]
    links: tuple[str, ...]
    files: tuple[str, ...] = ()
    processes: tuple[int, ...] = ()
    slurm_conf: str | None = None
    slurm_dir: str | None = None
    created_unix: float = 0.0
    creator_pid: int = 0
    path: str = ""
    missing: tuple[str, ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        """The cluster's name."""
        return self.spec.name

    @property
    def stale(self) -> bool:
        """True when something recorded is gone, or ``up`` never finished."""
        return bool(self.missing) or self.phase != "up"

    def host(self, name: str) -> HostState:
        """The host called ``name``."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise InputError(f"cluster {self.name!r} has no host {name!r}")

    def public_dict(self) -> dict[str, Any]:
        """The contract JSON of ``hnow cluster up``/``status``: ``{"name", "hosts": [{"name", "address",
        "egress_mbit", "ingress_mbit", "slots"}], "slurm_conf"}`` (``slurm_conf`` null without Slurm) plus
        informational keys (subnet, bridge, burst, state; a host's ``"tcp"``, ``"default"`` or ``"kernel"``, where
        it keeps the kernel's TCP settings, :attr:`~hnowmodel.cluster.HostSpec.tcp`)."""
        return {
            "name": self.name,
            "hosts": [
                {
                    "name": h.name,
                    "address": h.address,
                    "egress_mbit": h.egress_mbit,
                    "ingress_mbit": h.ingress_mbit,
                    "slots": h.slots,
                    **({"tcp": self.spec.host(h.name).tcp} if self.spec.host(h.name).tcp != "tuned" else {}),
                }
                for h in self.hosts
            ],
            "slurm_conf": self.slurm_conf,
            "subnet": self.subnet,
            "bridge_address": self.bridge_address,
            "shaping": self.shaping.to_dict(),
            "wrapper": self.wrapper,
            "state_file": self.path,
            "phase": self.phase,
            "stale": self.stale,
            "missing": list(self.missing),
        }

    def to_dict(self) -> dict[str, Any]:
        """The state file's document."""
        return {
            "schema": STATE_SCHEMA,
            "phase": self.phase,
            "spec": to_dict(self.spec),
            "subnet": self.subnet,
            "bridge": {"name": self.bridge, "address": self.bridge_address},
            "hosts": [h.to_dict() for h in self.hosts],
            "shaping": self.shaping.to_dict(),
            "wrapper": self.wrapper,
            "namespaces": list(self.namespaces),
            "links": list(self.links),
            "files": list(self.files),
            "processes": list(self.processes),
            "slurm_conf": self.slurm_conf,
            "slurm_dir": self.slurm_dir,
            "created_unix": self.created_unix,
            "creator_pid": self.creator_pid,
        }


def _from_doc(doc: Any, path: Path) -> ClusterState:
    where = f"cluster state {str(path)!r}"
    try:
        if doc.get("schema") != STATE_SCHEMA:
            raise InputError(f"{where}: schema: expected {STATE_SCHEMA!r}, got {doc.get('schema')!r}")
        return ClusterState(
            spec=from_dict(doc["spec"], f"{where}: spec"),
            phase=str(doc["phase"]),
            subnet=str(doc["subnet"]),
            bridge=str(doc["bridge"]["name"]),
            bridge_address=str(doc["bridge"]["address"]),
            hosts=tuple(HostState(**h) for h in doc["hosts"]),
            shaping=Shaping(**{**dict.fromkeys(f.name for f in fields(Shaping)), **doc["shaping"]}),
            wrapper=str(doc["wrapper"]),
            namespaces=tuple(doc["namespaces"]),
            links=tuple(doc["links"]),
            files=tuple(doc.get("files", ())),
            processes=tuple(int(p) for p in doc.get("processes", ())),
            slurm_conf=None if doc.get("slurm_conf") is None else str(doc["slurm_conf"]),
            slurm_dir=None if doc.get("slurm_dir") is None else str(doc["slurm_dir"]),
            created_unix=float(doc.get("created_unix", 0.0)),
            creator_pid=int(doc.get("creator_pid", 0)),
            path=str(path),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{where}: malformed ({type(e).__name__}: {e})") from None


def state_dir() -> Path:
    """The folder of the state files (created on first use, mode 0700)."""
    if os.geteuid() == 0:
        d = Path("/run/hnowmodel/clusters")
    elif os.environ.get("XDG_RUNTIME_DIR"):
        d = Path(os.environ["XDG_RUNTIME_DIR"]) / "hnowmodel" / "clusters"
    else:
        d = Path(f"/tmp/hnowmodel-{os.getuid()}") / "clusters"
    return d


def _ensure_dir() -> Path:
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(d, 0o700)
    return d


def state_path(name: str) -> Path:
    """The state file of cluster ``name``."""
    return state_dir() / f"{check_cluster_name(name)}.json"


def read_state(name: str) -> ClusterState | None:
    """The recorded state of cluster ``name``, or None when it has no state file."""
    p = state_path(name)
    if not p.exists():
        return None
    return _from_doc(read_json(p, "cluster state"), p)


def write_state(state: ClusterState) -> ClusterState:
    """Write ``state`` atomically to its state file; returns it with ``path`` set."""
    d = _ensure_dir()
    p = d / f"{state.name}.json"
    old = os.umask(0o077)
    try:
        write_json_atomic(p, state.to_dict())
    finally:
        os.umask(old)
    return replace(state, path=str(p))


def remove_state(name: str) -> None:
    """Remove the state file of cluster ``name`` (nothing if there is none)."""
    with contextlib.suppress(FileNotFoundError):
        state_path(name).unlink()


def list_states() -> list[ClusterState]:
    """Every recorded cluster, by name; unreadable state files are skipped."""
    d = state_dir()
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.json")):
        try:
            out.append(_from_doc(read_json(p, "cluster state"), p))
        except InputError:
            continue
    return out


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """Hold the clusters' lock (one ``up``/``down`` at a time on this machine: subnets are chosen under it)."""
    d = _ensure_dir()
    fd = os.open(d / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def now() -> float:
    """Seconds since the epoch (for ``created_unix``)."""
    return time.time()
