"""Open MPI 5.0.x coll/han's own reduce, allreduce and allgather ("intra", its default algorithm for each;
``ompi/mca/coll/han/coll_han_{reduce,allreduce,allgather}.c``, v5.0.10) as two-level message schedules, and the
layout rules (:data:`~hnowmodel.libraries.native.LayoutRule`) that say what runs on given hosts.

coll/han (priority 35, above tuned's 30) runs these where every host holds the same number of ranks, several of
them (:func:`han_runs`). Its low communicator is a host's ranks in rank order (leader: the host's first rank), its up
communicator the ranks of one local index on every host (hosts by their leader's rank). Blocking calls on either run
coll/tuned's fixed rules (``coll_han_<op>_dynamic_<level>_module`` default to tuned); the non-blocking ones it
issues on the up level run libnbc's (``nbc_ireduce.c``, ``nbc_ibcast.c``) default algorithm:

- **allgather**: a gather of the host's blocks to its leader, an allgather of the ``k·m``-byte host blocks among
  the leaders (tuned's fixed rules on ``h`` ranks), a bcast of all ``p·m`` bytes on every host from its leader.
  Ranks are mapped host by host here, so the leaders' reorder copy is not made.
- **reduce**: the vector in segments of ``coll_han_reduce_segsize`` (64 KiB; one segment up to 64 KiB); each
  reduced on every host to the root's local rank, then among those ranks to the root by libnbc's ireduce.
- **allreduce**: per 64 KiB segment (``coll_han_allreduce_segsize``), a reduce on every host to its leader,
  libnbc's ireduce among the leaders to rank 0, libnbc's ibcast from it, a bcast on every host.

libnbc's ireduce of a commutative op: on more than 2 ranks with at least as many elements as the largest power of
two <= ranks, Rabenseifner's (recursive halving, then a binomial gather; Open MPI's fold: reduce ``rabenseifner``);
else a binomial reduce below 64 KiB (or above 4 ranks), else a chain in 8 KiB segments (not modelled: no
prediction). Its ibcast: linear (the root sends to every rank) on up to 4 ranks, binomial below 64 KiB, a chain in
8 KiB (below 512 KiB) or 32 KiB segments above.

Approximations, each small on the clusters measured (docs/open-mpi.md, "coll/han's reduce, allreduce and
allgather"): the host levels (shared memory) are modelled as binomial trees whatever tuned's fixed rules run there
(as MPICH's composition alpha is); the segments run one after another, without the overlap of one segment's up
level with the next segment's host level that han's tasks allow.

>>> from hnowmodel.layout import Layout
>>> lay = Layout(["f"] * 6, hosts=[0, 0, 0, 1, 1, 1])
>>> [han_run(op, lay, 16384)[0].name for op in ("allgather", "reduce", "allreduce")]
['han:binomial/recursive_doubling/binomial', 'han:binomial/binomial', 'han:binomial/binomial/ompi-linear/binomial']
>>> han_run("allreduce", ["f"] * 4, 1024) is None  # one rank per host: han hands the call to tuned
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputError
from ...layout import hosts_of
from ...movement import ONE_DOWN
from ...runopts import DEFAULT, Schedule
from ...schedules.algorithms import binomial_bcast, binomial_reduce
from ...schedules.catalog import ALLGATHER, ELEM_BYTES, REDUCE
from ...schedules.fromtree import tree_schedule
from ...schedules.generator import Algorithm
from ...schedules.hierarchy import allgather_levels, on_groups, phases, two_level
from ...schedules.steps import MessageSchedule
from ...trees import make_tree
from ...trees.nodeaware import host_members
from . import tuned as _tuned

__all__ = [
    "HAN_OPS",
    "HAN_SEGMENT_BYTES",
    "LIBNBC_LINEAR_MAX",
    "han_runs",
    "han_groups",
    "libnbc_ireduce",
    "libnbc_ibcast",
    "HanSegments",
    "han_run",
]

#: The operations coll/han implements (v5.0.10 ``coll_han_module.c``: bcast, scatter, gather, reduce, allreduce,
#: allgather; barrier, allgatherv, gatherv, scatterv besides): where han runs, it runs these, and leaves alltoall and
#: reduce_scatter_block to the next component (coll/tuned).
HAN_OPS = frozenset({"bcast", "scatter", "gather", "reduce", "allreduce", "allgather"})
#: ``coll_han_{bcast,reduce,allreduce}_segsize``'s default (bytes).
HAN_SEGMENT_BYTES = 65536
#: libnbc's ibcast is linear on up to this many ranks (``nbc_ibcast.c``: ``p <= 4``).
LIBNBC_LINEAR_MAX = 4
_LIBNBC_SMALL_BYTES = 65536  # libnbc's "size * count < 65536" tests
_LIBNBC_CHAIN_BIG_BYTES = 524288


def han_runs(layout: Any) -> bool:
    """Whether Open MPI 5.0.x's coll/han (priority 35, above tuned's 30) runs the job's collectives on ``layout``:
    several hosts, several ranks on each, the same number on every one (``coll_han_bcast.c`` and its siblings hand
    a communicator whose hosts hold different numbers of ranks, ``are_ppn_imbalanced``, to the next component,
    coll/tuned). A plain sequence of type names has one rank per host: no.

    >>> from hnowmodel.layout import Layout
    >>> han_runs(Layout(["f", "f", "s", "s"], [0, 0, 1, 1])), han_runs(Layout(["f", "f", "s"], [0, 0, 1]))
    (True, False)
    """
    counts = np.bincount(hosts_of(layout))
    return bool(len(counts) > 1 and counts.min() == counts.max() > 1)


def han_groups(layout: Any) -> tuple[tuple[int, ...], ...]:
    """Each host's ranks in rank order (han's low communicator), hosts by their first rank (the up communicator's
    order).

    >>> from hnowmodel.layout import Layout
    >>> han_groups(Layout(["f"] * 4, [1, 0, 1, 0]))
    ((0, 2), (1, 3))
    """
    # a Layout numbers its hosts in order of first appearance: host by host is by first rank
    return tuple(tuple(int(r) for r in members) for members in host_members(layout))


def libnbc_ireduce(h: int, m: float) -> str | None:
    """The reduce algorithm (:data:`~hnowmodel.schedules.catalog.REDUCE`) libnbc's ireduce runs by default on ``h``
    ranks for an ``m``-byte vector of doubles summed, None where it runs a chain (not modelled).

    >>> libnbc_ireduce(4, 65536), libnbc_ireduce(2, 16384), libnbc_ireduce(2, 65536)
    ('rabenseifner', 'binomial', None)
    """
    pof2 = 1 << (int(h).bit_length() - 1)
    if h > 2 and m // ELEM_BYTES >= pof2:
        return "rabenseifner"
    return "binomial" if h > LIBNBC_LINEAR_MAX or m < _LIBNBC_SMALL_BYTES else None


def libnbc_ibcast(h: int, m: float) -> tuple[str, Schedule]:
    """The tree (and its segments) libnbc's ibcast runs by default on ``h`` ranks for ``m`` bytes.

    >>> libnbc_ibcast(4, 1 << 20)[0], libnbc_ibcast(8, 1024)[0], libnbc_ibcast(8, 65536)[1].segment_bytes
    ('ompi-linear', 'binomial', 8192)
    """
    if h <= LIBNBC_LINEAR_MAX:
        return "ompi-linear", DEFAULT
    if m < _LIBNBC_SMALL_BYTES:
        return "binomial", DEFAULT
    return "chain", Schedule(segment_bytes=8192 if m < _LIBNBC_CHAIN_BIG_BYTES else 32768)


def _segments(m: float) -> list[float]:
    """The segments han cuts an ``m``-byte vector of doubles into (``COLL_BASE_COMPUTED_SEGCOUNT``)."""
    count, seg = int(m // ELEM_BYTES), HAN_SEGMENT_BYTES // ELEM_BYTES
    if count <= seg:
        return [float(m)]
    return [float(min(seg, count - i) * ELEM_BYTES) for i in range(0, count, seg)]


@dataclass(frozen=True)
class HanSegments:
    """The generator of han's reduce (``op`` ``reduce``, rooted) or allreduce on ``hosts`` (:func:`han_groups`):
    ``(n, m[, root])`` -> every segment's phases one after another: a binomial reduce on every host to the root's
    local rank, libnbc's ireduce among those ranks to the root's host, and for allreduce libnbc's ibcast from it and a
    binomial bcast on every host.

    >>> s = HanSegments("allreduce", ((0, 1), (2, 3)))(4, 8.0)
    >>> [(st.src.tolist(), st.dst.tolist()) for st in s.steps]
    [([1, 3], [0, 2]), ([2], [0]), ([0], [2]), ([0, 2], [1, 3])]
    """

    op: str
    hosts: tuple[tuple[int, ...], ...]

    def __call__(self, n: int, m: float, root: int = 0) -> MessageSchedule:
        g = np.asarray(self.hosts, dtype=np.int64)
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < n:
            raise InputError(f"root: must be a rank in 0..{n - 1}, got {root!r}")
        (up_root,), (low_root,) = np.nonzero(g == root)
        h, k = g.shape
        up_ranks = g[:, low_root : low_root + 1].T
        parts = []
        for seg in _segments(m):
            up = libnbc_ireduce(h, seg)
            if up is None:
                raise InputError(f"han {self.op}: libnbc's ireduce runs a chain on {h} ranks at {seg:.0f} B")
            parts += [on_groups(binomial_reduce(k, seg, int(low_root)), g, n)]
            parts += [on_groups(REDUCE[up].schedule(h, seg, int(up_root)), up_ranks, n)]
            if self.op == "allreduce":
                tree, run = libnbc_ibcast(h, seg)
                parts += [on_groups(tree_schedule(make_tree(tree, h), ONE_DOWN, seg, run), up_ranks, n)]
                parts += [on_groups(binomial_bcast(k, seg, 0), g, n)]
        return phases(f"han_{self.op}", *parts)


@dataclass(frozen=True)
class _HanAllgather:
    """han's allgather on ``hosts`` with ``up`` (an allgather of :data:`ALLGATHER`) among the leaders."""

    hosts: tuple[tuple[int, ...], ...]
    up: str

    def __call__(self, n: int, m: float) -> MessageSchedule:
        return two_level(allgather_levels, ALLGATHER[self.up], self.hosts, m)[1]


def _up_levels(op: str, h: int, m: int) -> list[str] | None:
    """The up level's algorithms of han's reduce or allreduce on ``h`` hosts at ``m`` bytes per rank (named by the
    first segment's), None where a segment's is not modelled."""
    segs = _segments(m)
    if any(libnbc_ireduce(h, s) is None for s in segs):
        return None
    first = str(libnbc_ireduce(h, segs[0]))
    return [first, libnbc_ibcast(h, segs[0])[0]] if op == "allreduce" else [first]


def han_run(op: str, layout: Sequence[str], size: int) -> tuple[Algorithm, Schedule] | None:
    """What coll/han's default ``op`` (``reduce``, ``allreduce``, ``allgather``) runs on ``layout`` at ``size``
    bytes per rank, as an :class:`~hnowmodel.schedules.generator.Algorithm` named ``han:`` and its levels' models;
    None where han does not run (:func:`han_runs`) or a level runs an algorithm hnow does not model."""
    if op not in ("reduce", "allreduce", "allgather") or not han_runs(layout):
        return None
    groups = han_groups(layout)
    h, k = len(groups), len(groups[0])
    if op == "allgather":
        up = _tuned.default_model("allgather", h, k * int(size), True)
        if up is None or up not in ALLGATHER:
            return None
        what = "a gather on each host, the leaders' allgather, a bcast on each host"
        return Algorithm(f"han:binomial/{up}/binomial", f"coll/han's allgather: {what}", _HanAllgather(groups, up)), (
            DEFAULT
        )
    ups = _up_levels(op, h, int(size))
    if ups is None:
        return None
    levels = ["binomial", *ups, *(["binomial"] if op == "allreduce" else [])]
    what = "a reduce on each host, libnbc's reduce among them"
    what += ", its bcast, a bcast on each host" if op == "allreduce" else ""
    alg = Algorithm("han:" + "/".join(levels), f"coll/han's {op}: {what}", HanSegments(op, groups), op == "reduce")
    return alg, DEFAULT
