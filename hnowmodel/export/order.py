"""The rank order formats (``hostfile``, ``rankfile``, ``keys``): which node gets which rank under a native
algorithm's tree (:func:`export_order`).

A native algorithm (MPICH's binomial, say) fixes the tree by rank number; which node gets which rank decides its
time. From a profile that records where each rank ran (``nodes``: rank, host, type), :func:`export_order` finds the
rank order under which ``op`` over the native tree is predicted fastest (:func:`hnowmodel.search.rank_order`), in
each launcher's terms:

* ``hostfile`` - MPICH's hydra (``mpiexec -f hostfile``): ``host:K`` lines in the new rank order, K the ranks in a
  row on that host (``host:1`` per rank with one rank per host);
* ``rankfile`` - Open MPI (``mpirun --map-by rankfile:file=rankfile``): ``rank N=host slot=S``, S counting the ranks
  of that host from 0;
* ``keys`` - JSON ``{"keys": [...]}``: ``MPI_Comm_split(comm, 0, keys[rank])`` reorders an already running job.

When ranks share hosts (a profile calibrated with its hosts told apart: :attr:`~hnowmodel.params.Profile.host_layout`),
the order moves whole hosts (:func:`hnowmodel.search.host_block_order`): each host keeps its ranks, together and in
their order, so the hostfile has one ``host:SLOTS`` line per host and the rankfile gives each host's ranks slots
0..SLOTS-1 - what the launchers fill and what a cluster spec listing the hosts in that order runs.
"""

from __future__ import annotations

import itertools
import json

from .. import ops as _ops
from ..errors import InputError
from ..params import Profile
from ..search.rank_order import host_block_order, rank_order
from .files import Export

__all__ = ["export_order"]


def _hostfile(hosts: list[str]) -> str:
    """Hydra's hostfile for ranks on ``hosts`` in rank order: one ``host:K`` line per run of K ranks on one host.

    >>> print(_hostfile(["a", "a", "b", "a"]), end="")
    a:2
    b:1
    a:1
    """
    runs = [(h, len(list(g))) for h, g in itertools.groupby(hosts)]
    return "".join(f"{h}:{k}\n" for h, k in runs)


def export_order(
    profile: Profile, *, op: str = "bcast", size: int = 0, tree: str = "binomial", library: str = "MPICH"
) -> Export:
    """The rank order for ``op`` of ``size`` bytes over ``tree`` (a native algorithm's shape), from the ranks, hosts
    and types the profile's ``nodes`` record, as launcher files (:data:`FORMATS`). When ``tree`` is the model tree
    of one of ``library``'s algorithms for ``op`` (:func:`hnowmodel.ops.native_choices`), the order is chosen for
    that algorithm as it runs (:func:`hnowmodel.ops.native_predict`: the root's copy, the order of its messages)."""
    nodes = sorted(profile.nodes, key=lambda n: n.get("rank", 0))
    if not nodes or any("host" not in n for n in nodes):
        raise InputError("the profile records no hosts (its 'nodes'): calibrate on the machines to export for")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InputError(f"--size must be a whole number of bytes >= 0, got {size!r}")
    hosts = tuple(str(n["host"]) for n in nodes)
    lay = profile.host_layout
    types = [n["type"] for n in nodes]
    # the algorithm that runs ``tree`` here at ``size`` (a default that runs different trees by size: Intel MPI's)
    algos = _ops.native_algorithms(op, library)
    nat = next((a for a in algos if a.tree_on(types if lay is None else lay, size) == tree), None)
    if lay is not None and not lay.one_per_host:
        order = host_block_order(profile, lay, tree, op, size, native=nat)
    else:
        order = rank_order(profile, types, tree, op, size, native=nat)
    new_hosts = [hosts[r] for r in order.perm]
    slot: dict[str, int] = {}
    rankfile = []
    for i, h in enumerate(new_hosts):
        rankfile.append(f"rank {i}={h} slot={slot.get(h, 0)}")
        slot[h] = slot.get(h, 0) + 1
    files = {
        "hostfile": _hostfile(new_hosts),
        "rankfile": "\n".join(rankfile) + "\n",
        "keys": json.dumps({"keys": list(order.keys), "op": op, "size_bytes": size, "tree": tree}) + "\n",
    }
    usage = (
        f"{op} of {size} B over the library's {tree} tree: predicted {order.baseline_us:.6g} us in the calibrated "
        f"order, {order.time_us:.6g} us in this one ({order.gain_pct:.1f} % less; {order.method}).\n"
        f"MPICH (hydra): mpiexec -n {len(hosts)} -f hostfile ./app\n"
        f"Open MPI:      mpirun -n {len(hosts)} --map-by rankfile:file=rankfile ./app\n"
        "In the application: MPI_Comm_split(MPI_COMM_WORLD, 0, keys[rank], &comm) with keys.json's keys, then use "
        "comm\n"
    )
    return Export(order, hosts, files, usage, op, size, tree)
