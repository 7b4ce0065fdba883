"""A virtual heterogeneous cluster on one Linux machine: network namespaces joined by shaped veth links.

Each host of a :class:`ClusterSpec` becomes a network namespace ``hnow-<cluster>-<host>`` whose interface
``eth0`` (one end of a veth pair) has an address in a private ``10.213.X.0/24`` chosen per cluster; the other
end, ``hn-<cluster>-<host>``, is a port of the bridge ``hn-<cluster>`` (address ``10.213.X.1``) in the root
namespace. A ``tbf`` token bucket shapes each host's egress (on its ``eth0``) and ingress (on the root-side
veth, the egress towards it) to the host's rates. MPI ranks start inside the hosts through hydra's ssh launcher
and the cluster's exec wrapper (:func:`launch_settings`), which also gives each host its host name. With
``slurm=True`` (``hnow cluster up SPEC --slurm``) the cluster also runs a real Slurm, one slurmd per host, each
with a node-local ``/tmp`` (:mod:`.slurm`); :func:`slurm_env` points ``srun``/``sbatch``/``salloc`` at it.

Needs root. Everything made is recorded in a state file before it is made (:mod:`.state`), so :func:`down`
removes it all, also after a crash or Ctrl-C in the middle of :func:`up`.

>>> import hnowmodel as hm                                  # doctest: +SKIP
>>> st = hm.cluster.up("demo")                               # doctest: +SKIP
>>> hm.cluster.launch_settings(st, 6).mpiexec_args[:2]       # doctest: +SKIP
['-launcher', 'ssh']
>>> hm.cluster.down("demo")                                  # doctest: +SKIP
>>> st = hm.cluster.up("demo", slurm=True)                   # doctest: +SKIP
>>> hm.cluster.slurm_env(st)                                 # doctest: +SKIP
{'SLURM_CONF': '/run/hnowmodel/slurm/demo/slurm.conf'}
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import stat
import subprocess
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import HnowError, InputError
from . import netns
from . import slurm as _sl
from .cpu import cgroup_leftovers, cgroup_path, make_cgroup, remove_cgroup
from .netns import require
from .slurm import ensure_installed, slurm_env
from .spec import (
    IFNAME_PREFIX,
    LINUX_CONGESTION_CONTROL,
    MAX_HOSTS,
    MAX_RATE_MBIT,
    NETNS_PREFIX,
    SCHEMA,
    ClusterSpec,
    HostSpec,
    builtin_specs,
    check_cluster_name,
    copy_name,
    from_dict,
    load_spec,
    to_dict,
)
from .state import ClusterState, HostState, Shaping, list_states, locked, read_state, remove_state, state_dir
from .state import now as _now
from .state import write_state as _write_state
from .wrapper import (
    TCP_ENV,
    LaunchSettings,
    intelmpi_launch_settings,
    intelmpi_srun_settings,
    launch_settings,
    launch_settings_for,
    openmpi_launch_settings,
    rank_hosts,
    srun_settings_for,
    wrapper_script,
)

__all__ = [
    "SCHEMA",
    "MAX_HOSTS",
    "MAX_RATE_MBIT",
    "LINUX_CONGESTION_CONTROL",
    "ClusterSpec",
    "HostSpec",
    "ClusterState",
    "HostState",
    "Shaping",
    "DownResult",
    "LaunchSettings",
    "TCP_ENV",
    "load_spec",
    "from_dict",
    "to_dict",
    "builtin_specs",
    "copy_name",
    "up",
    "down",
    "status",
    "get",
    "using",
    "name_of",
    "launch_settings",
    "openmpi_launch_settings",
    "intelmpi_launch_settings",
    "launch_settings_for",
    "intelmpi_srun_settings",
    "srun_settings_for",
    "rank_hosts",
    "require",
    "state_dir",
    "slurm_env",
    "ensure_installed",
]

#: First two octets of every cluster's subnet (``10.213.X.0/24``, X chosen per cluster to be free).
SUBNET_BASE = (10, 213)


@dataclass(frozen=True)
class DownResult:
    """What :func:`down` did: ``removed`` is False when nothing of the cluster was there; the counts are of the
    namespaces and root-namespace links deleted and of the processes killed inside the namespaces."""

    name: str
    removed: bool
    namespaces: int = 0
    links: int = 0
    killed: int = 0

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "removed": self.removed,
            "namespaces": self.namespaces,
            "links": self.links,
            "killed": self.killed,
        }


def _bridge_name(cluster: str) -> str:
    return f"{IFNAME_PREFIX}{cluster}"


def _veth_name(cluster: str, host: str) -> str:
    return f"{IFNAME_PREFIX}{cluster}-{host}"


def _netns_name(cluster: str, host: str) -> str:
    return f"{NETNS_PREFIX}{cluster}-{host}"


def _wrapper_dir() -> Path:
    """The state folder, unless it is on a ``noexec`` mount (then a private folder under /var/tmp or /tmp)."""
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    for cand in (d, Path(f"/var/tmp/hnowmodel-{os.getuid()}"), Path(f"/tmp/hnowmodel-{os.getuid()}")):
        with contextlib.suppress(OSError):
            cand.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not os.statvfs(cand).f_flag & os.ST_NOEXEC:
                return cand
    raise HnowError(f"no folder for the cluster's exec wrapper: {d} and the fallbacks are mounted noexec")


def _choose_subnet(name: str, ip: str) -> ipaddress.IPv4Network:
    used = netns.used_networks(ip) + [ipaddress.ip_network(s.subnet) for s in list_states() if s.name != name]
    start = zlib.crc32(name.encode()) % 256
    for k in range(256):
        x = (start + k) % 256
        net = ipaddress.ip_network(f"{SUBNET_BASE[0]}.{SUBNET_BASE[1]}.{x}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise HnowError(f"no free subnet {SUBNET_BASE[0]}.{SUBNET_BASE[1]}.X.0/24 left for cluster {name!r}")


def _plan(spec: ClusterSpec, subnet: ipaddress.IPv4Network, wrapper: Path) -> ClusterState:
    addrs = list(subnet.hosts())
    hosts = tuple(
        HostState(
            name=h.name,
            namespace=_netns_name(spec.name, h.name),
            veth=_veth_name(spec.name, h.name),
            address=str(addrs[i + 1]),
            egress_mbit=h.egress_mbit,
            ingress_mbit=h.ingress_mbit,
            slots=h.slots,
            cgroup=None if h.cpu_share is None else cgroup_path(_netns_name(spec.name, h.name)),
        )
        for i, h in enumerate(spec.hosts)
    )
    bridge = _bridge_name(spec.name)
    return ClusterState(
        spec=spec,
        phase="creating",
        subnet=str(subnet),
        bridge=bridge,
        bridge_address=str(addrs[0]),
        hosts=hosts,
        shaping=Shaping(),
        wrapper=str(wrapper),
        namespaces=tuple(h.namespace for h in hosts),
        links=(bridge, *(h.veth for h in hosts)),
        files=(str(wrapper),),
        created_unix=_now(),
        creator_pid=os.getpid(),
    )


def _tbf(dev: str, mbit: float, shaping: Shaping) -> str:
    rate_bit = max(8000, round(mbit * 1e6))
    return (
        f"qdisc replace dev {dev} root tbf rate {rate_bit}bit burst {shaping.burst_bytes}b limit {shaping.limit_bytes}b"
    )


def _root_batch(st: ClusterState) -> str:
    prefix = st.subnet.split("/")[1]
    lines = [f"netns add {h.namespace}" for h in st.hosts]
    lines += [
        f"link add {st.bridge} type bridge forward_delay 0 stp_state 0",
        f"link set {st.bridge} addrgenmode none",
        f"addr add {st.bridge_address}/{prefix} dev {st.bridge}",
        f"link set {st.bridge} up",
    ]
    for h in st.hosts:
        lines += [
            f"link add {h.veth} type veth peer name eth0 netns {h.namespace}",
            f"link set {h.veth} addrgenmode none",
            f"link set {h.veth} master {st.bridge}",
            f"link set {h.veth} up",
        ]
    return "\n".join(lines) + "\n"


def _tcp_lines(st: ClusterState, h: HostState) -> tuple[list[str], dict[str, object]]:
    """What ``up`` sets on host ``h``'s TCP besides its address: ``ip`` lines (one-segment packets, the subnet's
    route with a large initial window) and ``/proc/sys/net/ipv4`` settings; for a host of ``"tcp": "default"`` only
    Linux's default congestion control (the rest as the namespace starts), for ``"kernel"`` nothing."""
    mode = st.spec.host(h.name).tcp
    if mode != "tuned":
        return [], ({"tcp_congestion_control": LINUX_CONGESTION_CONTROL} if mode == "default" else {})
    ip_lines = [
        # one-segment packets, so that the egress interleaves a host's connections packet by packet (see Shaping)
        f"link set eth0 gso_max_segs {st.shaping.gso_max_segs}",
        "link set eth0 up",
        # The subnet's route, as the kernel makes it, with a large initial window (see Shaping).
        f"route replace {st.subnet} dev eth0 proto kernel scope link src {h.address}"
        f" initcwnd {st.shaping.initcwnd_segments} initrwnd {st.shaping.initcwnd_segments}",
    ]
    rmem = f"4096 {st.shaping.tcp_rmem_default_bytes} {max(6291456, st.shaping.tcp_rmem_default_bytes)}"
    sysctl = {
        "tcp_rmem": rmem,
        "tcp_congestion_control": st.shaping.congestion_control,
        "tcp_limit_output_bytes": st.shaping.tcp_limit_output_bytes,
    }
    if st.shaping.slow_start_after_idle is not None:
        sysctl["tcp_slow_start_after_idle"] = st.shaping.slow_start_after_idle
    return ip_lines, sysctl


def _allow_congestion_control(st: ClusterState) -> None:
    """Let the hosts' namespaces choose the congestion controls ``up`` sets in them: a namespace may only take one
    in ``tcp_allowed_congestion_control`` (the root namespace's list, e.g. ``reno bbr`` here); a missing one that the
    kernel has is added to the list (which only widens what namespaces and unprivileged sockets may choose)."""
    wanted = {_tcp_lines(st, h)[1].get("tcp_congestion_control") for h in st.hosts} - {None}
    base = Path("/proc/sys/net/ipv4")
    allowed = (base / "tcp_allowed_congestion_control").read_text().split()
    missing = sorted(wanted - set(allowed))
    if not missing:
        return
    have = (base / "tcp_available_congestion_control").read_text().split()
    if absent := sorted(set(missing) - set(have)):
        raise InputError(
            f"this kernel has no {', '.join(absent)} congestion control (it has "
            f'{", ".join(have)}): give the hosts "tcp": "tuned" or "kernel"'
        )
    (base / "tcp_allowed_congestion_control").write_text(" ".join([*allowed, *missing]) + "\n")


def _start_host(st: ClusterState, h: HostState, t: Mapping[str, str]) -> list[tuple[str, subprocess.Popen]]:
    """Start the configuration of host ``h`` inside its namespace (addresses, links up, egress shaping, and its TCP
    settings: :func:`_tcp_lines`)."""
    prefix = st.subnet.split("/")[1]
    tcp_lines, sysctl = _tcp_lines(st, h)
    ip_lines = [
        "link set lo up",
        "link set eth0 addrgenmode none",
        f"addr add {h.address}/{prefix} dev eth0",
        *(tcp_lines or ["link set eth0 up"]),
    ]
    procs = [
        (
            f"configuring host {h.name}",
            netns.start([t["ip"], "-n", h.namespace, "-batch", "-"], "\n".join(ip_lines) + "\n"),
        ),
        (
            f"shaping host {h.name}'s egress",
            netns.start([t["tc"], "-n", h.namespace, "-batch", "-"], _tbf("eth0", h.egress_mbit, st.shaping) + "\n"),
        ),
    ]
    if sysctl:
        writes = "; ".join(f"echo '{v}' > /proc/sys/net/ipv4/{k}" for k, v in sysctl.items())
        procs.append(
            (
                f"setting host {h.name}'s TCP ({', '.join(sysctl)})",
                netns.start([t["ip"], "netns", "exec", h.namespace, "sh", "-c", f"set -e; {writes}"], ""),
            )
        )
    return procs


def _build(st: ClusterState, t: Mapping[str, str]) -> None:
    wrapper = Path(st.wrapper)
    text = wrapper_script(
        st.name,
        [(h.name, h.address, h.namespace, h.cgroup or "") for h in st.hosts],
        t["ip"],
        t["unshare"],
        t["hostname"],
    )
    tmp = wrapper.with_name(f".{wrapper.name}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    os.replace(tmp, wrapper)
    _allow_congestion_control(st)
    netns.run([t["ip"], "-batch", "-"], _root_batch(st), what=f"creating cluster {st.name!r} (ip -batch)")
    for h in st.hosts:
        if h.cgroup is not None:
            make_cgroup(h.cgroup, float(st.spec.host(h.name).cpu_share or 1.0))
    procs: list[tuple[str, subprocess.Popen]] = []
    try:
        ingress = "".join(_tbf(h.veth, h.ingress_mbit, st.shaping) + "\n" for h in st.hosts)
        procs.append(("shaping the hosts' ingress", netns.start([t["tc"], "-batch", "-"], ingress)))
        for h in st.hosts:
            procs += _start_host(st, h, t)
    finally:
        netns.wait_all(procs)


def _missing(st: ClusterState) -> tuple[str, ...]:
    have_ns, have_links = netns.existing_namespaces(), netns.existing_links()
    out = [f"namespace {n}" for n in st.namespaces if n not in have_ns]
    out += [f"link {n}" for n in st.links if n not in have_links]
    out += [f"file {f}" for f in st.files if not os.path.exists(f)]
    out += [f"cgroup {h.cgroup}" for h in st.hosts if h.cgroup and not os.path.isdir(h.cgroup)]
    out += _sl.problems(st)
    return tuple(out)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While building, SIGTERM raises KeyboardInterrupt (so what was made is removed); the old handler after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def up(spec: str | os.PathLike | Mapping | ClusterSpec, *, slurm: bool = False) -> ClusterState:
    """Bring the cluster of ``spec`` (a built-in name such as ``demo``, a JSON file, a dict or a
    :class:`ClusterSpec`) up and return its state; with ``slurm=True`` also a real Slurm on its hosts (one
    slurmd per host, slurmctld and munged in the root namespace; ``state.slurm_conf``, :func:`slurm_env`),
    installing Slurm's Debian packages first where they are missing and can be (:func:`ensure_installed`).

    Idempotent: when the same spec is already up, nothing is done and the same state is returned (also with its
    Slurm when ``slurm`` is False); ``slurm=True`` on a cluster that is up without Slurm adds Slurm to it. A
    cluster of the same name with another spec is an error (``down`` it first); a half-made or damaged one of the
    same spec (a recorded Slurm daemon that died counts) is removed and made again, with Slurm if it had it. On
    any failure (also Ctrl-C or SIGTERM) what was made is removed before the error is raised; after a SIGKILL the
    state file lets :func:`down` remove it.
    """
    spec = load_spec(spec)
    require()
    if slurm:
        ensure_installed()
    t = netns.tools()
    with locked():
        old = read_state(spec.name)
        if old is not None:
            if old.spec != spec:
                raise InputError(
                    f"cluster {spec.name!r} is up with another spec: run 'hnow cluster down {spec.name}' first"
                )
            if old.phase == "up" and not _missing(old):
                if not slurm or old.slurm_conf:
                    return old
                return _add_slurm(old)
            if old.slurm_conf and not slurm:
                slurm = True
                ensure_installed()
            _teardown(old, t)
        st = _plan(spec, _choose_subnet(spec.name, t["ip"]), _wrapper_dir() / f"{spec.name}-wrapper.sh")
        with _sigterm_interrupts():
            st = _write_state(st)
            try:
                _build(st, t)
                if slurm:
                    st = _sl.start(st, _write_state, _sl.READY_TIMEOUT_S)
                st = _write_state(replace(st, phase="up"))
            except BaseException:
                with contextlib.suppress(Exception):
                    _teardown(st, t)
                raise
    return st


def _add_slurm(st: ClusterState) -> ClusterState:
    """Start a Slurm on the cluster ``st`` (up, without one); on failure remove it again and leave the cluster
    as it was. Called with the clusters' lock held."""
    with _sigterm_interrupts():
        st = _write_state(replace(st, phase="creating"))
        try:
            st = _sl.start(st, _write_state, _sl.READY_TIMEOUT_S)
            return _write_state(replace(st, phase="up"))
        except BaseException:
            with contextlib.suppress(Exception):
                _drop_slurm_locked(st)
            raise


def _drop_slurm_locked(st: ClusterState) -> ClusterState:
    """Stop the Slurm of ``st`` (kill its daemons and what runs inside the namespaces, remove its folder) and
    record the cluster as up without one."""
    _sl.stop(st, extra_pids=_namespace_pids(st.namespaces))
    return _write_state(replace(st, phase="up", processes=(), slurm_conf=None, slurm_dir=None))


def _namespace_pids(namespaces: Iterable[str]) -> list[int]:
    return [p for ps in netns.namespace_pids(namespaces).values() for p in ps]


def _leftovers(name: str) -> tuple[list[str], list[str]]:
    """Namespaces and links named like cluster ``name``'s (found without its state file)."""
    ns = sorted(n for n in netns.existing_namespaces() if n.startswith(f"{NETNS_PREFIX}{name}-"))
    mine = f"{IFNAME_PREFIX}{name}-"
    links = sorted(n for n in netns.existing_links() if n == _bridge_name(name) or n.startswith(mine))
    return ns, links


def _teardown(st: ClusterState | None, t: Mapping[str, str], name: str | None = None) -> DownResult:
    name = st.name if st is not None else str(name)
    rec_ns = set(st.namespaces) if st else set()
    rec_links = set(st.links) if st else set()
    extra_ns, extra_links = _leftovers(name)
    have_ns, have_links = netns.existing_namespaces(), netns.existing_links()
    namespaces = sorted(n for n in rec_ns | set(extra_ns) if n in have_ns)
    links = sorted(n for n in rec_links | set(extra_links) if n in have_links)
    # every process inside the namespaces (slurmd, job steps, ranks) and the Slurm daemons of the root namespace
    # (slurmctld, munged: recorded, or found by their marker), all read before any is killed; stopped together,
    # returning when every one has exited and been reaped; then the Slurm folder
    killed = set(_sl.stop(st, name, extra_pids=_namespace_pids(namespaces)))
    # the hosts' cpu cgroups, empty now that their processes have exited
    cgroups = {h.cgroup for h in st.hosts if h.cgroup} if st else set()
    cgroups |= set(cgroup_leftovers(f"{NETNS_PREFIX}{name}-"))
    stuck = [c for c in sorted(cgroups) if not remove_cgroup(c)]
    # Deleting the root-side veth removes its peer too, even if a process still holds the namespace.
    lines = [f"link del {n}" for n in links if n != _bridge_name(name)]
    lines += [f"link del {n}" for n in links if n == _bridge_name(name)]
    lines += [f"netns del {n}" for n in namespaces]
    if lines:
        subprocess.run(
            [t["ip"], "-force", "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True
        )
    left_ns, left_links = _leftovers(name)
    left = [n for n in namespaces if n in netns.existing_namespaces()] + left_ns
    left += [n for n in links if n in netns.existing_links()] + left_links + stuck
    if left:
        raise HnowError(f"cluster {name!r}: could not remove {', '.join(sorted(set(left)))}")
    for f in st.files if st else ():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f)
    remove_state(name)
    removed = bool(namespaces or links or st is not None or killed)
    return DownResult(name, removed, len(namespaces), len(links), len(killed))


def name_of(target: str | os.PathLike | Mapping | ClusterSpec) -> str:
    """The cluster name of ``target``: a spec (file, built-in name, dict, :class:`ClusterSpec`) or a bare name."""
    if isinstance(target, (ClusterSpec, Mapping)):
        return load_spec(target).name
    text = os.fspath(target)
    if os.path.exists(text) or text.endswith(".json"):
        return load_spec(text).name
    return check_cluster_name(text, "cluster name")


def _resolve_name(target: str | os.PathLike | Mapping | ClusterSpec | None) -> str:
    if target is None:
        names = [s.name for s in list_states()]
        if not names:
            found = sorted(
                {
                    n[len(NETNS_PREFIX) :].split("-", 1)[0]
                    for n in netns.existing_namespaces()
                    if n.startswith(NETNS_PREFIX) and not n.startswith(f"{NETNS_PREFIX}probe-")
                }
            )
            if len(found) == 1:
                return found[0]
            if not found:
                return ""
            names = found
        if len(names) > 1:
            raise InputError(f"several clusters are up ({', '.join(names)}): name the one to take down")
        return names[0]
    return name_of(target)


def down(target: str | os.PathLike | Mapping | ClusterSpec | None = None) -> DownResult:
    """Remove the cluster named ``target`` (or given by its spec; None: the only cluster that is up) and everything
    it made: processes still inside its namespaces (slurmd, job steps, ranks), its Slurm's slurmctld and munged
    and their folder, the namespaces, veths and bridge, the wrapper and the state file. Idempotent: when nothing
    is there, returns ``removed=False``. Works from the state file alone after a crash, and also finds the
    cluster's namespaces and links (and Slurm daemons) by name when the state file is gone. Returns only when every
    process it stopped has exited and left the process table (:func:`.procs.stop_processes`; :class:`HnowError`
    naming any still running after a second SIGKILL)."""
    name = _resolve_name(target)
    if not name:
        return DownResult("", False)
    if os.geteuid() != 0:
        raise HnowError("virtual cluster needs root (network namespaces and traffic shaping): run as root")
    t = netns.tools()
    with locked():
        try:
            st = read_state(name)
        except InputError:  # unreadable state file: remove by name
            st = None
            remove_state(name)
        return _teardown(st, t, name)


def status(name: str | None = None) -> list[ClusterState]:
    """The clusters recorded on this machine (or only ``name``), each checked against what really exists:
    ``missing`` lists recorded namespaces, links and files that are gone, and ``stale`` is True then or when
    ``up`` never finished."""
    states = list_states() if name is None else [s for s in [read_state(name_of(name))] if s]
    return [replace(s, missing=_missing(s)) for s in states]


def get(name: str) -> ClusterState:
    """The state of cluster ``name``, which must be up and complete (:class:`HnowError` otherwise)."""
    found = status(name)
    if not found:
        raise InputError(f"cluster {name!r} is not up (run 'hnow cluster up SPEC')")
    st = found[0]
    if st.stale:
        what = ", ".join(st.missing) or f"phase {st.phase!r}"
        raise HnowError(f"cluster {name!r} is stale ({what}): run 'hnow cluster down {name}' and up again")
    return st


@contextlib.contextmanager
def using(spec: str | os.PathLike | Mapping | ClusterSpec, *, slurm: bool = False) -> Iterator[ClusterState]:
    """Use the cluster of ``spec`` for a block: the one that is up, or one brought up for the block and taken
    down after it (also on errors). This is what ``--cluster SPEC`` on other commands means. With ``slurm=True``
    the cluster runs a Slurm during the block: one added to a cluster that was up without Slurm is stopped after
    it (the cluster stays up)."""
    spec = load_spec(spec)
    before = [s for s in status(spec.name) if s.spec == spec and not s.stale]
    st = up(spec, slurm=slurm)
    try:
        yield st
    finally:
        if not before:
            down(spec.name)
        elif slurm and not before[0].slurm_conf:
            with locked():
                cur = read_state(spec.name)
                if cur is not None and cur.slurm_conf:
                    _drop_slurm_locked(cur)
