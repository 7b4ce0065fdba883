"""Put a rank order to work: the files MPI launchers read so that a native collective runs its fastest.

A native algorithm (MPICH's binomial, say) fixes the tree by rank number; which node gets which rank decides its
time. :func:`export_order` takes a profile that records where each rank ran (``nodes``: rank, host, type), finds
the rank order under which ``op`` over the native tree is predicted fastest
(:func:`hnowmodel.search.rank_order`), and writes it in each launcher's terms:

* ``hostfile`` — MPICH's hydra (``mpiexec -f hostfile``): one ``host:1`` line per rank, in the new rank order;
* ``rankfile`` — Open MPI (``mpirun --map-by rankfile:file=rankfile``): ``rank N=host slot=S``;
* ``keys`` — JSON ``{"keys": [...]}``: ``MPI_Comm_split(comm, 0, keys[rank])`` reorders an already running job.

Choosing the library's algorithm itself (MPICH's selection JSON, Open MPI's coll/tuned rules) is not exported yet.

>>> from hnowmodel.params import Profile, paper_profile
>>> doc = paper_profile().to_dict()
>>> doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(
...     [("n1", "fast"), ("n2", "fast"), ("n3", "slow"), ("n4", "slow")])]
>>> ex = export_order(Profile.from_dict(doc), op="bcast", size=0)
>>> ex.files["hostfile"].split(), round(ex.order.gain_pct, 1)
(['n1:1', 'n3:1', 'n2:1', 'n4:1'], 14.0)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError
from .params import Profile
from .search.rank_order import RankOrder, rank_order

__all__ = ["Export", "export_order", "FORMATS", "write_export"]

#: What :func:`export_order` writes: format name -> file name.
FORMATS: Mapping[str, str] = {"hostfile": "hostfile", "rankfile": "rankfile", "keys": "keys.json"}


@dataclass(frozen=True)
class Export:
    """A rank order (``order``: permutation, split keys, predicted µs before/after) and its files' texts by format;
    ``hosts[r]`` is the host rank r ran on in the profile; ``usage`` says how to use each file."""

    order: RankOrder
    hosts: tuple[str, ...]
    files: Mapping[str, str]
    usage: str
    op: str
    size: int
    tree: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "size": self.size,
            "tree": self.tree,
            **self.order.to_dict(),
            "hosts": [self.hosts[r] for r in self.order.perm],
            "files": dict(self.files),
            "usage": self.usage,
        }


def export_order(profile: Profile, *, op: str = "bcast", size: int = 0, tree: str = "binomial") -> Export:
    """The rank order for ``op`` of ``size`` bytes over ``tree`` (a native algorithm's shape), from the ranks, hosts
    and types the profile's ``nodes`` record, as launcher files (:data:`FORMATS`)."""
    nodes = sorted(profile.nodes, key=lambda n: n.get("rank", 0))
    if not nodes or any("host" not in n for n in nodes):
        raise InputError("the profile records no hosts (its 'nodes'): calibrate on the machines to export for")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InputError(f"--size must be a whole number of bytes >= 0, got {size!r}")
    hosts = tuple(str(n["host"]) for n in nodes)
    order = rank_order(profile, [n["type"] for n in nodes], tree, op, size)
    new_hosts = [hosts[r] for r in order.perm]
    slot: dict[str, int] = {}
    rankfile = []
    for i, h in enumerate(new_hosts):
        rankfile.append(f"rank {i}={h} slot={slot.get(h, 0)}")
        slot[h] = slot.get(h, 0) + 1
    files = {
        "hostfile": "".join(f"{h}:1\n" for h in new_hosts),
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


def write_export(ex: Export, folder: str | Path, *, force: bool = False) -> dict[str, str]:
    """Write every file of ``ex`` and ``USAGE.txt`` into ``folder`` (refused if it is not empty, unless ``force``);
    returns format -> path."""
    from .io import atomic_write, check_output

    out = check_output(folder, force=force, folder=True)
    out.mkdir(parents=True, exist_ok=True)
    paths = {fmt: str(atomic_write(out / FORMATS[fmt], text)) for fmt, text in ex.files.items()}
    paths["usage"] = str(atomic_write(out / "USAGE.txt", ex.usage))
    return paths
