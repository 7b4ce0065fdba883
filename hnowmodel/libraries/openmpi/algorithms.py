"""Open MPI's algorithms as hnow pins them (Open MPI 5.0.x): coll/tuned's forced algorithms (MCA parameters as
``OMPI_MCA_*``), coll/han with tuned's algorithm at both levels, and coll/han's own default (its levels run tuned's
fixed rules, :mod:`.fixed`); the tree that models each and the schedule it runs it by. Each tuned algorithm's
``leaf`` is the leaf of coll/tuned's rules file that runs it, ``(algorithm, faninout, segsize)`` (:mod:`.rules`),
None where the file cannot carry it (a k-nomial radix other than the default: an MCA parameter; coll/han, which a
rules file does not configure). :data:`ALGORITHMS` is what the operation registry reads.

>>> nat = ALGORITHMS["bcast"].native
>>> nat.env["OMPI_MCA_coll_tuned_bcast_algorithm"], nat.model_tree, nat.leaf
('6', 'ompi-binomial', (6, 0, 0))
>>> [a.algorithm for a in ALGORITHMS["scatter"].pinned_only]
['han', 'han:default']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from types import MappingProxyType
from typing import Any

import numpy as np

from ...layout import hosts_of, one_per_host
from ...movement import ONE_DOWN, SUBTREE_DOWN
from ...runopts import DEFAULT, Schedule
from ...schedules import catalog as _catalog
from ...schedules.fromtree import tree_schedule
from ...schedules.generator import Algorithm
from ...schedules.hierarchy import on_groups, phases
from ...schedules.steps import MessageSchedule
from ...trees import make_tree
from ..native import LayoutRule, NativeAlgorithm, OpAlgorithms
from . import tuned as _tuned
from .fixed import canonical, default_algorithm
from .han import HAN_OPS, HAN_SEGMENT_BYTES, LIBNBC_LINEAR_MAX, han_groups, han_run, han_runs
from .tuned import OP_ALGORITHMS as _SCHEDULE_OPS

__all__ = [
    "ALGORITHMS",
    "HAN_OPS",
    "OMPI_CHAIN_FANOUTS",
    "OMPI_KNOMIAL_RADICES",
    "OMPI_KNOMIAL_RADIX",
    "OMPI_TCP_RENDEZVOUS_FROM_BYTES",
    "han_runs",
]

# Open MPI 5.0.x coll/tuned MCA parameters (checked with the wheel's ``ompi_info --param coll tuned --level 9``):
# forced algorithms are read only with dynamic rules on; coll/han (priority 35, above tuned's 30) is excluded so
# that tuned runs the collective on any number of nodes; no segmentation. Algorithm numbers: docs/open-mpi.md.
_OMPI_COMMON = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll": "^han"}
#: The fanouts offered for Open MPI's chain bcast (``chain:K``; K = 1 is the pipeline's tree) and the radices for
#: its k-nomial bcast (``knomial:K``; only the library's default radix, :data:`OMPI_KNOMIAL_RADIX`, in a rules file).
OMPI_CHAIN_FANOUTS = range(1, 9)
OMPI_KNOMIAL_RADICES = range(2, 9)
#: ``coll_tuned_bcast_algorithm_knomial_radix``'s default: the radix of every k-nomial bcast Open MPI runs, forced,
#: from a rules file (whose ``faninout`` it ignores) or by its fixed rules.
OMPI_KNOMIAL_RADIX = 4
#: ob1 over TCP: ``btl_tcp_eager_limit`` 65536 B counts the match header, so a message of 65536 B or more is a
#: rendezvous (the TCP BTL's PUT path sends no data before the receive matches): what a calibration under Open MPI
#: finds (``rendezvous_from_bytes`` 65536, docs/open-mpi.md). A profile calibrated under MPICH (eager to 660 KB)
#: has the root of a linear reduce take every vector at once, 3.7x faster than Open MPI runs it one after another.
OMPI_TCP_RENDEZVOUS_FROM_BYTES = 65536


def _ompi(
    op: str,
    number: int,
    model_tree: str,
    name: str = "binomial",
    *,
    faninout: int = 0,
    params: Mapping[str, str] | None = None,
    in_rules: bool = True,
    schedule: Schedule = DEFAULT,
) -> NativeAlgorithm:
    """Open MPI's ``op`` algorithm ``number`` (coll/tuned's numbering), forced by MCA parameters (``params``: the
    algorithm's own, e.g. the chain fanout) and, with ``in_rules``, a rules-file leaf ``(number, faninout, 0)``."""
    env = {f"OMPI_MCA_coll_tuned_{op}_algorithm": str(number), **_OMPI_COMMON, **(params or {})}
    if op == "bcast":
        env["OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize"] = "0"
    return NativeAlgorithm(name, env, model_tree, schedule, leaf=(number, faninout, 0) if in_rules else None)


# Open MPI's other bcast algorithms without segmentation (coll_tuned_bcast_decision.c: 1 basic_linear, 2 chain,
# 3 pipeline, 5 binary_tree, 7 knomial; ompi/mca/coll/base/coll_base_bcast.c, v5.0.x). All but basic_linear are
# ompi_coll_base_bcast_intra_generic over one topology builder: a rank receives the whole message from its parent,
# then isends it to its children in tree_next order and waits for all; basic_linear isends from the root to ranks
# 0, 1, ..., n-1 (skipping itself), the same. Split binary tree (4) halves the message down the two sides of the
# binary tree and swaps halves between them, which is no tree: not offered (nor 8, 9: scatter + allgather).
_OMPI_BCAST = (
    _ompi("bcast", 1, "ompi-linear", "basic_linear"),
    _ompi("bcast", 3, "chain", "pipeline"),  # build_chain(1)
    # the rules file's faninout is the number of chains (ompi_coll_base_bcast_intra_chain(segsize, faninout))
    *(
        _ompi(
            "bcast",
            2,
            f"ompi-chain:{k}",
            f"chain:{k}",
            faninout=k,
            params={"OMPI_MCA_coll_tuned_bcast_algorithm_chain_fanout": str(k)},
        )
        for k in OMPI_CHAIN_FANOUTS
    ),
    _ompi("bcast", 5, "ompi-tree:2", "binary_tree"),  # COLL_BASE_UPDATE_BINTREE: ompi_coll_base_topo_build_tree(2)
    # build_kmtree(radix) is knomial:K; the radix is an MCA parameter only (do_this ignores the file's faninout)
    *(
        _ompi(
            "bcast",
            7,
            f"knomial:{k}",
            f"knomial:{k}",
            params={"OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix": str(k)},
            in_rules=k == OMPI_KNOMIAL_RADIX,
        )
        for k in OMPI_KNOMIAL_RADICES
    ),
)
# ompi_coll_base_scatter_intra_basic_linear: the root walks ranks 0..n-1, copying its own block at its own turn
# (first, for root 0) and sending (blocking) to every other rank in rank order. linear_nb (3) walks the same way
# with isends (coll_tuned_scatter_algorithm_max_requests = 0: no blocking send in between) and waits for all: the
# same messages in the same order, which the flow model cannot tell apart from basic_linear's. Gather's
# basic_linear is the mirror: the root copies its block at its turn, then blocking receives from 1, 2, ..., n-1 in
# rank order. linear_sync (3), as the tuned component runs it (segment size 0: the "first segment" is the whole
# block): for 1, 2, ..., n-1 in turn the root posts the receive, sends the rank an empty message, and waits for the
# block, which the rank sends only on that signal; then it copies its own block. Modelled as basic linear in which
# every block waits for its posted receive (flow ``sync``); the signal's round trip is left out.
_COPY_FIRST = Schedule(root_copy=True, copy_first=True)
_OMPI_SCATTER = (
    _ompi("scatter", 1, "ompi-linear", "basic_linear", schedule=_COPY_FIRST),
    _ompi("scatter", 3, "ompi-linear", "linear_nb", schedule=_COPY_FIRST),
)
_OMPI_GATHER = (
    _ompi("gather", 1, "ompi-linear", "basic_linear", schedule=Schedule(root_copy=True, recv_order="tree")),
    _ompi("gather", 3, "ompi-linear", "linear_sync", schedule=Schedule(root_copy=True, recv_order="tree", sync=True)),
)


# Open MPI 5.0.x coll/han (ompi/mca/coll/han, v5.0.10; priority 35, above tuned's 30: the default on a job over
# several nodes with the same number of ranks on each, else it hands the call to the next component). Its bcast
# (mca_coll_han_bcast_intra), scatter and gather split the communicator into a low communicator per node and up
# communicators that join the ranks of one local position across nodes; the one holding the root carries the
# inter-node step (the hosts are headed by the ranks at the root's local position: tree family ompi-han). Bcast: the
# up bcast of a segment (coll_han_bcast_segsize, 64 KiB by default: several segments pipeline the up ibcast of one
# with the low bcast of the previous, which is no tree; segment size 0 makes one segment), then the low bcast from
# the head. Scatter: the root reorders its blocks by node (a local copy when ranks are not placed by core), the up
# scatter gives each head its node's blocks, then the low scatter. Gather: the low gather to each head, then the up
# gather to the root, which reorders. The levels run the components han sets up for them (low: tuned by default,
# coll_han_*_low_module=0; up: libnbc first, coll_han_*_up_module=0, which has no blocking bcast/scatter/gather, so
# the next component, tuned): with tuned's algorithm forced as for the tuned entries (dynamic rules, the binomial
# algorithm, no segmentation) both levels run it, so the model tree is the two-level tree of tuned's binomial
# shapes; the root's reorder copy and han's task bookkeeping are left out. Pinned by environment only (a rules file
# configures coll/tuned, not han): pinned_only.
_OMPI_HAN = {
    "OMPI_MCA_coll": "^hcoll,ucc",
    "OMPI_MCA_coll_han_priority": "100",
    "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
    "OMPI_MCA_coll_han_bcast_low_module": "0",
    "OMPI_MCA_coll_han_scatter_low_module": "0",
    "OMPI_MCA_coll_han_gather_low_module": "0",
}


def _ompi_han(op: str, number: int, model: str, schedule: Schedule = DEFAULT) -> NativeAlgorithm:
    """Open MPI's coll/han ``op`` with coll/tuned's algorithm ``number`` forced at both levels (no segmentation)."""
    env = {**_OMPI_HAN, f"OMPI_MCA_coll_tuned_{op}_algorithm": str(number)}
    if op == "bcast":
        env["OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize"] = "0"
        env["OMPI_MCA_coll_han_bcast_segsize"] = "0"  # COLL_BASE_COMPUTED_SEGCOUNT: 0 = the whole message
    return NativeAlgorithm("han", env, f"ompi-han:{model}/{model}", schedule)


# coll/han with its own settings: Open MPI's default on hosts with the same number of ranks each (several hosts,
# several ranks on each), nothing pinned. Each level runs coll/tuned without forced algorithms, i.e. its fixed rules
# (.fixed) for that level's communicator: the up level's on the hosts (scatter and gather: blocks of a
# host's ranks, k x m bytes), the low level's on one host's ranks. Bcast cuts the message into segments of
# coll_han_bcast_segsize (64 KiB): the first goes up by tuned's blocking bcast, the others by libnbc's ibcast, which
# is linear up to 4 ranks (nbc_ibcast.c) - the shape tuned's fixed rules give the first one on so few hosts - and
# each head forwards a segment to its host as it arrives (a pipelined relay, Schedule.segment_bytes); beyond 4 hosts
# with several segments the later ones run another tree (not modelled). The up level's schedule is the whole
# tree's (the inter-host step dominates). The root's reorder copy is left out, as for the pinned han.
_HAN_PINS = (
    "OMPI_MCA_coll_han_priority",
    "OMPI_MCA_coll_han_bcast_segsize",
    "OMPI_MCA_coll_tuned_use_dynamic_rules",
    "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize",
)


def _han_default_tree(op: str) -> LayoutRule:
    """The model tree and schedule coll/han's default runs for ``op`` (see above), per layout and size."""

    def tree(layout: Any, size: int) -> tuple[str, Schedule] | None:
        if not han_runs(layout):
            return None  # han hands the call to coll/tuned there: not this algorithm
        counts = np.bincount(hosts_of(layout))
        hosts, k = len(counts), int(counts[0])
        seg = min(size, HAN_SEGMENT_BYTES) if op == "bcast" else size
        if op == "bcast" and size > seg and hosts > LIBNBC_LINEAR_MAX:
            return None
        levels = []
        for ranks, m in ((hosts, seg if op == "bcast" else k * size), (k, seg)):
            rule = canonical(op, default_algorithm(op, ranks, m))
            nat = next((c for c in ALGORITHMS[op].choices if c.leaf == rule), None)
            if nat is None:
                return None  # an algorithm hnow does not model (k-nomial, scatter-allgather)
            levels.append(nat)
        up, low = levels
        sched = replace(up.schedule, segment_bytes=HAN_SEGMENT_BYTES) if size > seg else up.schedule
        return f"ompi-han:{up.model_tree}/{low.model_tree}", sched

    return tree


#: The operations whose coll/han default is a message schedule (:mod:`.han`); bcast, scatter and gather are trees.
_HAN_SCHEDULED = ("reduce", "allreduce", "allgather")


def _ompi_han_default(op: str) -> NativeAlgorithm:
    """Open MPI's coll/han ``op`` with its own settings (nothing pinned: the variables that pin are unset)."""
    unset = (*_HAN_PINS, f"OMPI_MCA_coll_tuned_{op}_algorithm", f"OMPI_MCA_coll_han_{op}_low_module")
    return NativeAlgorithm(
        "han:default",
        {"OMPI_MCA_coll": "^hcoll,ucc"},
        "ompi-han:ompi-linear/ompi-linear",
        unset=unset,
        per_layout=partial(han_run, op) if op in _HAN_SCHEDULED else _han_default_tree(op),
    )


# coll/han's allreduce (v5.0.10 coll_han_allreduce.c). Its "simple" algorithm (coll_han_use_allreduce_algorithm=simple:
# mca_coll_han_allreduce_intra_simple): a reduce on each host's ranks to the host's first rank (the low communicator,
# ranks by their rank in the job), an allreduce among those leaders (the up communicator, hosts by their leader's
# rank), then a bcast on each host from its leader. Each level runs coll/tuned (han's module for both levels by
# default) with no forced algorithm: its fixed rules for that level's ranks (reduce and bcast on a host's k ranks,
# allreduce on the h leaders), which hnow models where they run a modelled algorithm (:mod:`.tuned`, the bcast trees
# above). Han's default allreduce ("intra") pipelines 64 KiB segments through tasks whose up level is libnbc's
# ireduce then ibcast: not modelled.
@dataclass(frozen=True)
class _HanAllreduce:
    """The schedule builder of han's simple allreduce on ``hosts`` (each host's ranks, in rank order; hosts by their
    first rank): ``(n, m)`` -> the three phases, each level's algorithm named as its model."""

    hosts: tuple[tuple[int, ...], ...]
    low_reduce: str
    up_allreduce: str
    low_bcast: str
    bcast_schedule: Schedule = DEFAULT

    def __call__(self, n: int, m: float) -> MessageSchedule:
        g = np.asarray(self.hosts, dtype=np.int64)
        k, leaders = g.shape[1], g[:, :1].T
        red = _catalog.REDUCE[self.low_reduce].schedule(k, m, 0)
        up = _catalog.ALLREDUCE[self.up_allreduce].schedule(len(g), m)
        down = tree_schedule(make_tree(self.low_bcast, k), ONE_DOWN, m, self.bcast_schedule)
        return phases("han_allreduce", on_groups(red, g, n), on_groups(up, leaders, n), on_groups(down, g, n))


def _han_allreduce(layout: Any, size: int) -> tuple[Algorithm, Schedule] | None:
    """The message schedule han's simple allreduce runs on ``layout`` at ``size`` bytes (an
    :class:`~hnowmodel.schedules.generator.Algorithm` named ``han:REDUCE/ALLREDUCE/BCAST`` after its levels' models);
    None where han does not run (:func:`han_runs`) or a level runs an algorithm hnow does not model.

    >>> from hnowmodel.layout import Layout
    >>> _han_allreduce(Layout(["f"] * 4, [0, 0, 1, 1]), 1024)[0].name
    'han:linear/recursive_doubling/ompi-linear'
    """
    if not han_runs(layout):
        return None
    groups = han_groups(layout)
    k, h = len(groups[0]), len(groups)
    red, up = _tuned.default_model("reduce", k, size, False), _tuned.default_model("allreduce", h, size, True)
    rule = canonical("bcast", default_algorithm("bcast", k, size))
    bcast = next((c for c in ALGORITHMS["bcast"].choices if c.leaf == rule), None)
    if red is None or up is None or bcast is None:
        return None
    build = _HanAllreduce(groups, red, up, bcast.model_tree, bcast.schedule)
    name = f"han:{red}/{up}/{bcast.model_tree}"
    return Algorithm(
        name, "coll/han's simple allreduce: reduce on each host, allreduce of leaders, bcast", build
    ), DEFAULT


_HAN_SIMPLE_ALLREDUCE = NativeAlgorithm(
    "han:simple",
    {
        "OMPI_MCA_coll": "^hcoll,ucc",
        "OMPI_MCA_coll_han_priority": "100",
        "OMPI_MCA_coll_han_use_allreduce_algorithm": "simple",
    },
    "han:reduce/allreduce/bcast",
    # the levels run tuned's fixed rules: nothing forced, and no rules file
    unset=(
        "OMPI_MCA_coll_tuned_allreduce_algorithm",
        "OMPI_MCA_coll_tuned_reduce_algorithm",
        "OMPI_MCA_coll_tuned_bcast_algorithm",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename",
        "OMPI_MCA_coll_han_allreduce_dynamic_intra_node_module",
        "OMPI_MCA_coll_han_allreduce_dynamic_inter_node_module",
    ),
    per_layout=_han_allreduce,
)


# coll/tuned's reduce_scatter_block 1, basic_linear (ompi_coll_base_reduce_scatter_block_basic_linear, v5.0.10): the
# whole vector (p blocks of m bytes) reduced to rank 0, then scattered from it, each by the communicator's own
# reduce and scatter - coll/tuned's fixed rules where only reduce_scatter_block is forced. Modelled where both run a
# modelled algorithm: the reduce's schedule, then the scatter's tree.
@dataclass(frozen=True)
class _ReduceThenScatter:
    """``(n, m)`` -> the reduce ``reduce`` (of :data:`~hnowmodel.schedules.catalog.REDUCE`) of ``n·m`` bytes to rank
    0, then the scatter over the tree ``scatter`` of ``m`` bytes per rank (run as ``run``)."""

    reduce: str
    scatter: str
    run: Schedule

    def __call__(self, n: int, m: float) -> MessageSchedule:
        down = tree_schedule(make_tree(self.scatter, n), SUBTREE_DOWN, m, self.run)
        return phases("ompi_reduce_scatter_basic_linear", _catalog.REDUCE[self.reduce].schedule(n, n * m, 0), down)


def _basic_linear_reduce_scatter(layout: Any, size: int) -> tuple[Algorithm, Schedule] | None:
    """What tuned's basic_linear reduce_scatter_block runs on ``layout`` at ``size`` bytes per rank's block (named
    ``linear:REDUCE/SCATTER``), None where the fixed rules pick an algorithm hnow does not model.

    >>> _basic_linear_reduce_scatter(["f"] * 12, 16384)[0].name
    'linear:in_order_binomial/ompi-linear'
    """
    n = len(layout)
    red = _tuned.default_model("reduce", n, n * size, one_per_host(layout))
    rule = canonical("scatter", default_algorithm("scatter", n, size))
    sc = next((c for c in ALGORITHMS["scatter"].choices if c.leaf == rule), None)
    if red is None or sc is None:
        return None
    what = "the whole vector reduced to rank 0, then scattered (tuned's fixed reduce and scatter)"
    return Algorithm(f"linear:{red}/{sc.model_tree}", what, _ReduceThenScatter(red, sc.model_tree, sc.schedule)), (
        DEFAULT
    )


def _with_basic_linear(ops: OpAlgorithms) -> OpAlgorithms:
    """reduce_scatter's algorithms with basic_linear modelled (:func:`_basic_linear_reduce_scatter`)."""
    alts = tuple(
        replace(a, per_layout=_basic_linear_reduce_scatter) if a.algorithm == "basic_linear" else a
        for a in ops.alternatives
    )
    return replace(ops, alternatives=alts)


_BINOMIAL_GATHER = Schedule(root_copy=True, recv_order="smallest_first")
#: Open MPI's algorithms by operation: tuned's binomial pinned (``native``), tuned's other algorithms a rules file
#: can select, and coll/han (pinned by environment only); for reduce, allreduce, allgather, reduce_scatter and
#: alltoall tuned's fixed rules (``native``) and each tuned algorithm pinned (:mod:`.tuned`).
ALGORITHMS: Mapping[str, OpAlgorithms] = MappingProxyType(
    {
        # ompi_coll_base_bcast_intra_binomial: build_bmtree, isends to tree_next in order, one message
        "bcast": OpAlgorithms(
            _ompi("bcast", 6, "ompi-binomial"),
            _OMPI_BCAST,
            (_ompi_han("bcast", 6, "ompi-binomial"), _ompi_han_default("bcast")),
        ),
        # ompi_coll_base_scatter_intra_binomial: in-order bmtree walked backwards (MPICH's binomial order), the root
        # copies its own block first, then sends each child its subtree's blocks
        "scatter": OpAlgorithms(
            _ompi("scatter", 2, "binomial", schedule=_COPY_FIRST),
            _OMPI_SCATTER,
            (_ompi_han("scatter", 2, "binomial", _COPY_FIRST), _ompi_han_default("scatter")),
        ),
        # ompi_coll_base_gather_intra_binomial: the root copies its block, then blocking receives from the in-order
        # bmtree's children nearest first (rank+1, +2, +4: the smallest subtree first)
        "gather": OpAlgorithms(
            _ompi("gather", 2, "binomial", schedule=_BINOMIAL_GATHER),
            _OMPI_GATHER,
            (_ompi_han("gather", 2, "binomial", _BINOMIAL_GATHER), _ompi_han_default("gather")),
        ),
        # the operations whose algorithms are message schedules: tuned's fixed rules as native, every tuned
        # algorithm pinned or selected by a rules file (.tuned); reduce, allreduce and allgather also coll/han's
        # default (.han), allreduce coll/han's simple algorithm
        **_SCHEDULE_OPS,
        **{op: replace(_SCHEDULE_OPS[op], pinned_only=(_ompi_han_default(op),)) for op in ("reduce", "allgather")},
        "allreduce": replace(
            _SCHEDULE_OPS["allreduce"], pinned_only=(_HAN_SIMPLE_ALLREDUCE, _ompi_han_default("allreduce"))
        ),
        "reduce_scatter": _with_basic_linear(_SCHEDULE_OPS["reduce_scatter"]),
    }
)
