"""The one registry of collective operations: everything hnow knows about an operation is its entry here.

An :class:`Operation` names its default model variant (the one trees are chosen under *and* compared under; the
variants themselves and their predictors are :mod:`hnowmodel.variants`' registry), how the data moves over a tree
edge (:mod:`hnowmodel.movement`), the name of its MPI kernel (the method of :mod:`calibrate.collectives`'
executors and of the C kernels), and how each MPI library's own algorithm is pinned so that ``native`` is
modelled by the tree that really runs, with the :class:`~hnowmodel.schedule.Schedule` it runs it by.

Adding an operation is one entry in :data:`OPERATIONS` + its predictors (in :mod:`hnowmodel.variants`' entries) +
its kernel (in :mod:`calibrate.collectives`); nothing else lists the operations.

>>> names()
('bcast', 'scatter', 'gather')
>>> get("gather").default_variant
'link'
>>> nat = get("bcast").native["Open MPI"]
>>> nat.env["OMPI_MCA_coll_tuned_bcast_algorithm"], nat.model_tree
('6', 'ompi-binomial')
>>> float(predictor("bcast")(__import__("hnowmodel").paper_profile(), ["fast", "fast"], "binomial", [0])[0])
170.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from . import variants as _variants
from .errors import InputError
from .layout import hosts_of
from .layout import one_per_host as _one_per_host
from .movement import ONE_DOWN, SUBTREE_DOWN, SUBTREE_UP, Movement
from .ompi_fixed import canonical, default_algorithm
from .schedule import DEFAULT, Schedule, as_schedule
from .trees import make_tree
from .variants import BoundPredictor, Predictor, Variant

__all__ = [
    "Operation",
    "NativeAlgorithm",
    "OPERATIONS",
    "names",
    "get",
    "predictor",
    "variant_of",
    "check_variant",
    "default_variant",
    "is_network_profile",
    "predict",
    "native_predict",
    "native_choices",
    "native_algorithms",
    "MPICH_TREE_KS",
    "OMPI_CHAIN_FANOUTS",
    "OMPI_KNOMIAL_RADICES",
    "OMPI_KNOMIAL_RADIX",
    "NATIVE",
    "native_name",
    "native_libraries",
    "native_for",
    "check_native",
    "native_spec_env",
    "native_spec_unset",
    "han_runs",
]


@dataclass(frozen=True)
class NativeAlgorithm:
    """How one MPI library's own collective is pinned, and which tree models it.

    ``env`` is set before ``MPI_Init`` (MPICH control variables, Open MPI MCA parameters as ``OMPI_MCA_*``);
    ``model_tree`` names the :mod:`hnowmodel.trees` tree that the pinned algorithm runs; ``schedule`` says how it
    runs it (:class:`~hnowmodel.schedule.Schedule`: the root's local copy where it makes one, MPICH's binomial
    scatter/gather do, before its first send for Open MPI's scatter; how its receives are posted, whether a relay
    waits: MPICH's binomial gather posts its receives in a fixed order and its relays wait for them). ``selection``
    is the leaf of MPICH's collective selection JSON that runs it (``{"algorithm=NAME": {"param=value": {}, ...}}``,
    every parameter the algorithm reads: MPICH does not default the missing ones), empty where there is none.
    ``empty_is_noop``: the library returns at once from a 0-byte call (MPICH and Open MPI both do), so a 0-byte
    native row measures only the call and has nothing to predict. ``rule`` is the leaf of Open MPI's coll/tuned
    rules file that runs it (:mod:`hnowmodel.ompi_rules`): ``(algorithm, faninout, segsize)``, empty where there is
    none (MPICH's, or a parameter the file cannot carry: the k-nomial radix is an MCA parameter). ``adjust`` is
    Intel MPI's algorithm number in its ``I_MPI_ADJUST_<OP>`` strings (:mod:`hnowmodel.export.impi`), 0 for the
    other libraries and for a library's default. ``by_size``: for a library's **default**, which runs different
    trees by communicator size and message size (Intel MPI's tuning file), the rows ``(ranks, from_bytes,
    upto_bytes, model_tree)`` where it is known which tree runs (both ends included); :meth:`tree_at` says which,
    None where no row holds (not modelled there). Empty: ``model_tree`` everywhere. ``unset``: variables that must
    not be set for it to run (a default: the variables that would pin another algorithm), so that a job that sets
    them for another algorithm cannot also run this one (:func:`native_spec_unset`). ``per_layout``: for a default
    whose tree depends on the hosts (coll/han's: its levels run tuned's fixed rules on the hosts and on each host's
    ranks) or whose schedule depends on the tree that runs (Intel MPI's bcast: its chunk),
    ``(layout, bytes per rank) -> (model tree, schedule)``, None where it is not modelled; it overrides
    ``by_size`` and ``schedule`` (:meth:`on`).
    """

    algorithm: str
    env: Mapping[str, str]
    model_tree: str = "binomial"
    schedule: Schedule = DEFAULT
    selection: Mapping[str, Any] = field(default_factory=dict)
    empty_is_noop: bool = True
    rule: tuple[int, ...] = ()
    adjust: int = 0
    by_size: tuple[tuple[int, int, int, str], ...] = ()
    unset: tuple[str, ...] = ()
    per_layout: Callable[[Any, int], tuple[str, Schedule] | None] | None = field(default=None, compare=False)

    @property
    def varies(self) -> bool:
        """True when the tree that runs depends on the size or the hosts (:meth:`on`)."""
        return bool(self.by_size) or self.per_layout is not None

    def on(self, layout: Any, size: int) -> tuple[str, Schedule] | None:
        """The model tree and schedule that run on ``layout``'s ranks (with their hosts) at ``size`` bytes per rank;
        None where hnow does not know which tree runs.

        >>> get("bcast").native["Open MPI"].on(["a", "b"], 1024)[0]
        'ompi-binomial'
        """
        if self.per_layout is not None:
            return self.per_layout(layout, int(size))
        spec = self.tree_at(len(layout), int(size), _one_per_host(layout))
        return None if spec is None else (spec, self.schedule)

    def tree_on(self, layout: Any, size: int) -> str | None:
        """The model tree of :meth:`on` (None where not modelled)."""
        got = self.on(layout, size)
        return None if got is None else got[0]

    def schedule_on(self, layout: Any, size: int) -> Schedule:
        """The schedule of :meth:`on` (where nothing is modelled, :attr:`schedule`)."""
        got = self.on(layout, size)
        return self.schedule if got is None else got[1]

    def tree_at(self, n: int, size: int, one_per_host: bool = True) -> str | None:
        """The model tree that runs on ``n`` ranks at ``size`` bytes per rank; None where :attr:`by_size` knows none
        (its rows were read with one rank per host: ``one_per_host`` False, ranks sharing hosts, knows none).

        >>> get("bcast").native["Intel MPI"].tree_at(6, 65536)
        'mpich-knomial1:2'
        >>> get("bcast").native["Intel MPI"].tree_at(5, 65536) is None
        True
        """
        if not self.by_size:
            return self.model_tree
        if not one_per_host:
            return None
        return next((t for r, lo, hi, t in self.by_size if r == n and lo <= size <= hi), None)

    # ---- the schedule's fields under their old names (deprecated: read ``schedule``) --------------------------
    @property
    def root_copy(self) -> bool:
        return self.schedule.root_copy

    @property
    def copy_first(self) -> bool:
        return self.schedule.copy_first

    @property
    def flow_kw(self) -> dict[str, Any]:
        """The schedule's gather fields that differ from the default (what only the flow variants model)."""
        return {k: getattr(self.schedule, k) for k in _FLOW_FIELDS if getattr(self.schedule, k) != getattr(DEFAULT, k)}


_FLOW_FIELDS = ("recv_order", "relay_waits", "sync")


@dataclass(frozen=True)
class Operation:
    """One collective operation.

    ``default_variant`` (a :mod:`hnowmodel.variants` entry that serves it) is used to choose trees and to compare
    them, ``network_variant`` instead for a profile calibrated on a network (the variant that measured best there:
    ``experiments/cluster_accuracy.py``). ``movement`` says how its data moves over a tree edge
    (:class:`~hnowmodel.movement.Movement`: ``edge_data`` ``"one"``, every edge carries the m-byte message: bcast, or
    ``"subtree"``, the edge into a rank carries its subtree's blocks: scatter, gather; and the direction).
    ``kernel`` is the executors' method name. ``native`` maps an MPI library name (``MPICH``, ``Open MPI``) to its
    pinned algorithm (what ``--tree native`` runs); ``alternatives`` maps it to the other algorithms that library
    can be told to run for the operation (what ``hnow export`` chooses among, with ``native``:
    :func:`native_choices`); ``pinned_only`` maps it to algorithms hnow can pin by environment and model
    (``native:ALGO``) but that no file ``hnow export`` writes can select (a ch4 composition, an Open MPI component
    other than coll/tuned): :func:`native_algorithms`. :attr:`variants` lists the variants that serve it, each as
    its predictor. ``kernel_code``: the C kernels' code of its native collective (``hk_coll``'s ``op`` in
    calibrate/kernels/hnow_kernels.c; -1: none). ``imb``: IMB-MPI1's benchmark of it (``hnow bench imb``; '': none);
    ``outside_names``: the lower-case names outside benchmarks' output gives it (IMB's, OSU's ``osu_<name>``).
    """

    name: str
    summary: str
    default_variant: str
    movement: Movement
    kernel: str
    native: Mapping[str, NativeAlgorithm] = field(default_factory=dict)
    alternatives: Mapping[str, tuple[NativeAlgorithm, ...]] = field(default_factory=dict)
    network_variant: str = "flow"
    pinned_only: Mapping[str, tuple[NativeAlgorithm, ...]] = field(default_factory=dict)
    kernel_code: int = -1
    imb: str = ""
    outside_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "native", MappingProxyType(dict(self.native)))
        object.__setattr__(self, "alternatives", MappingProxyType({k: tuple(v) for k, v in self.alternatives.items()}))
        object.__setattr__(self, "pinned_only", MappingProxyType({k: tuple(v) for k, v in self.pinned_only.items()}))
        for v in (self.default_variant, self.network_variant):
            if not _variants.VARIANTS.get(v, None) or not _variants.VARIANTS[v].serves(self):
                raise ValueError(f"operation {self.name}: default variant {v!r} is not a variant")

    @property
    def edge_data(self) -> str:
        """``"one"`` or ``"subtree"``: what the edge into a rank carries (:attr:`movement`)."""
        return self.movement.edge_data

    @property
    def variants(self) -> Mapping[str, BoundPredictor]:
        """The variants that serve this operation, in registry order, each as its predictor
        (:class:`~hnowmodel.variants.BoundPredictor`)."""
        return MappingProxyType({n: BoundPredictor(_variants.VARIANTS[n], self) for n in _variants.serving(self)})


# MPICH 5.0.x control variables (checked with the wheel's ``mpivars``): binomial for all three, the ch4 device's
# own collectives off (they would bypass the choice) and an inapplicable choice is an error, not a silent fallback.
_MPICH_COMMON = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}


def _mpich(cvar: str, schedule: Schedule = DEFAULT) -> NativeAlgorithm:
    name = cvar.split("_")[2].capitalize()  # MPIR_CVAR_BCAST_INTRA_ALGORITHM -> Bcast
    leaf = {f"algorithm=MPIR_{name}_intra_binomial": {}}
    return NativeAlgorithm("binomial", {cvar: "binomial", **_MPICH_COMMON}, "binomial", schedule, leaf)


#: The branching factors offered for MPICH's tree bcast (``kary`` from 2, ``knomial_1`` from 2, ``knomial_2`` from
#: 3: its k = 2 is the binomial tree).
MPICH_TREE_KS = range(2, 9)


def _mpich_tree_bcast(tree_type: str, k: int) -> NativeAlgorithm:
    """``MPIR_Bcast_intra_tree`` with ``tree_type``, branching ``k`` and blocking sends (``is_non_blocking=0``, as
    the binomial bcast sends): by control variables or by a selection-JSON leaf; its model tree sends in MPICH's
    child order (:mod:`hnowmodel.trees`: ``kary`` = ``MPII_Treeutil_tree_kary_init``, ``mpich-knomial1``/``2``)."""
    model = {"kary": "kary", "knomial_1": "mpich-knomial1", "knomial_2": "mpich-knomial2"}[tree_type]
    env = {
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "tree",
        "MPIR_CVAR_BCAST_TREE_TYPE": tree_type,
        "MPIR_CVAR_BCAST_TREE_KVAL": str(k),
        "MPIR_CVAR_BCAST_IS_NON_BLOCKING": "0",
        **_MPICH_COMMON,
    }
    leaf = {"algorithm=MPIR_Bcast_intra_tree": {f"tree_type={tree_type}": {}, f"k={k}": {}, "is_non_blocking=0": {}}}
    return NativeAlgorithm(f"tree:{tree_type}:{k}", env, f"{model}:{k}", selection=leaf)


# MPIR_Bcast_intra_smp (src/mpi/coll/bcast/bcast_intra_smp.c, MPICH 5.0.1). Below MPIR_CVAR_BCAST_SHORT_MSG_SIZE
# (12288 B) or on fewer than MPIR_CVAR_BCAST_MIN_PROCS (8) ranks: a root that is not its node's leader (node_comm
# rank 0, the node's lowest rank) sends the message to it, MPIR_Bcast over node_roots_comm (the leaders, in rank
# order) from the root's leader, then MPIR_Bcast over every node_comm from its leader, the root's node included
# (so the leader sends the root its own message back: no tree edge, left out). Those inner calls run on child
# communicators, where the forced "smp" does not apply: MPICH falls back (MPIR_CVAR_COLLECTIVE_FALLBACK=silent; with
# "error" the call fails) to its auto selection, which for a child communicator (comm_hierarchy=any in the built-in
# table) picks binomial below 8 ranks at any size and up to 12288 B beyond. So the model tree
# mpich-smp:binomial/binomial is the algorithm for every size on fewer than 8 ranks, and below 12288 B on any
# number; from 8 ranks and 12288 B smp runs an intra-node bcast on the root's node first (power-of-two sizes below
# MPIR_CVAR_BCAST_LONG_MSG_SIZE) or scatter + ring allgather, and the leaders' bcast is scatter + allgather: no tree,
# not modelled (docs/native-algorithms.md). Device collectives off, so MPIR_Bcast is MPICH's own for every level.
_MPICH_SMP_BCAST = NativeAlgorithm(
    "smp",
    {
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "smp",
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
        "MPIR_CVAR_COLLECTIVE_FALLBACK": "silent",
    },
    "mpich-smp:binomial/binomial",
    selection={"algorithm=MPIR_Bcast_intra_smp": {}},
)
# MPICH's default bcast with its device collectives on (MPIR_CVAR_DEVICE_COLLECTIVES=percoll, the default): ch4's
# MPID_Bcast selects by its own table (maint/tuning/coll/ch4/generic.json): on a node-aware (parent) communicator of
# fewer than 8 ranks composition alpha at every size, from 8 ranks alpha below 12288 B, beta (power-of-two sizes,
# below 524288 B) or gamma beyond. Composition alpha (MPIDI_Bcast_intra_composition_alpha, ch4_coll_impl.h): the
# root sends to its node's leader if it is not the leader, the netmod bcast over node_roots_comm (MPIR's auto
# selection for a child communicator: binomial, as for smp), then the shm bcast over every node_comm from its leader
# (the root's node included, the duplicate again). The shm bcast (MPIDI_POSIX_mpi_bcast, posix_generic.json) is
# release_gather: the first MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD - 1 (4) calls on a node_comm fall back to MPIR's
# binomial, later ones copy the message through a shared-memory buffer that the node's ranks read (flags, not
# messages). Modelled by the same two-level binomial tree, an intra-host edge costing one shared-memory message:
# exact for the inter-host part, an approximation inside hosts (release_gather is no tree). Pinned by
# MPIR_CVAR_BCAST_COMPOSITION=1 (alpha at every size and communicator size); MPICH's own selection file cannot
# name a composition (pinned_only). So for 6 ranks on 3 hosts x 2 at 16-256 KiB MPICH's default runs exactly this.
# Scatter and gather have no smp algorithm in MPICH: their ch4 composition alpha is the netmod's call on the whole
# communicator (MPIR's binomial: the pinned "binomial" entries).
_MPICH_ALPHA_BCAST = NativeAlgorithm(
    "composition:alpha",
    {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "all",
        "MPIR_CVAR_BCAST_COMPOSITION": "1",
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "auto",
        "MPIR_CVAR_COLLECTIVE_FALLBACK": "error",
    },
    "mpich-smp:binomial/binomial",
)

_MPICH_BCAST_TREES = (
    *(_mpich_tree_bcast("kary", k) for k in MPICH_TREE_KS),
    *(_mpich_tree_bcast("knomial_1", k) for k in MPICH_TREE_KS),
    *(_mpich_tree_bcast("knomial_2", k) for k in MPICH_TREE_KS if k > 2),
    _MPICH_SMP_BCAST,
)


def native_choices(op: str, library: str) -> tuple[NativeAlgorithm, ...]:
    """Every algorithm ``library`` can be told to run for ``op`` that hnow models: the pinned one
    (``Operation.native``) first, then ``Operation.alternatives``; empty when hnow pins none.

    >>> [a.algorithm for a in native_choices("bcast", "MPICH")][:3]
    ['binomial', 'tree:kary:2', 'tree:kary:3']
    >>> [a.algorithm for a in native_choices("scatter", "MPICH")]
    ['binomial']
    """
    o = get(op)
    first = o.native.get(library)
    return ((first,) if first else ()) + tuple(o.alternatives.get(library, ()))


def native_algorithms(op: str, library: str) -> tuple[NativeAlgorithm, ...]:
    """Every algorithm of ``library`` for ``op`` that ``native:ALGO`` can pin: :func:`native_choices` (what a
    selection file can choose) and then ``Operation.pinned_only`` (what only the environment can pin).

    >>> [a.algorithm for a in native_algorithms("bcast", "MPICH")][-2:]
    ['smp', 'composition:alpha']
    """
    return native_choices(op, library) + tuple(get(op).pinned_only.get(library, ()))


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
    return NativeAlgorithm(name, env, model_tree, schedule, rule=(number, faninout, 0) if in_rules else ())


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
# (hnowmodel.ompi_fixed) for that level's communicator: the up level's on the hosts (scatter and gather: blocks of a
# host's ranks, k x m bytes), the low level's on one host's ranks. Bcast cuts the message into segments of
# coll_han_bcast_segsize (64 KiB): the first goes up by tuned's blocking bcast, the others by libnbc's ibcast, which
# is linear up to 4 ranks (nbc_ibcast.c) - the shape tuned's fixed rules give the first one on so few hosts - and
# each head forwards a segment to its host as it arrives (a pipelined relay, Schedule.segment_bytes); beyond 4 hosts
# with several segments the later ones run another tree (not modelled). The up level's schedule is the whole
# tree's (the inter-host step dominates). The root's reorder copy is left out, as for the pinned han.
_HAN_SEGMENT_BYTES = 65536
_LIBNBC_LINEAR_MAX = 4
_HAN_PINS = (
    "OMPI_MCA_coll_han_priority",
    "OMPI_MCA_coll_han_bcast_segsize",
    "OMPI_MCA_coll_tuned_use_dynamic_rules",
    "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize",
)


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


def _han_default_tree(op: str) -> Callable[[Any, int], tuple[str, Schedule] | None]:
    """The model tree and schedule coll/han's default runs for ``op`` (see above), per layout and size."""

    def tree(layout: Any, size: int) -> tuple[str, Schedule] | None:
        if not han_runs(layout):
            return None  # han hands the call to coll/tuned there: not this algorithm
        counts = np.bincount(hosts_of(layout))
        hosts, k = len(counts), int(counts[0])
        seg = min(size, _HAN_SEGMENT_BYTES) if op == "bcast" else size
        if op == "bcast" and size > seg and hosts > _LIBNBC_LINEAR_MAX:
            return None
        levels = []
        for ranks, m in ((hosts, seg if op == "bcast" else k * size), (k, seg)):
            rule = canonical(op, default_algorithm(op, ranks, m))
            nat = next((c for c in native_choices(op, "Open MPI") if tuple(c.rule) == rule), None)
            if nat is None:
                return None  # an algorithm hnow does not model (k-nomial, scatter-allgather)
            levels.append(nat)
        up, low = levels
        sched = replace(up.schedule, segment_bytes=_HAN_SEGMENT_BYTES) if size > seg else up.schedule
        return f"ompi-han:{up.model_tree}/{low.model_tree}", sched

    return tree


def _ompi_han_default(op: str) -> NativeAlgorithm:
    """Open MPI's coll/han ``op`` with its own settings (nothing pinned: the variables that pin are unset)."""
    unset = (*_HAN_PINS, f"OMPI_MCA_coll_tuned_{op}_algorithm", f"OMPI_MCA_coll_han_{op}_low_module")
    return NativeAlgorithm(
        "han:default",
        {"OMPI_MCA_coll": "^hcoll,ucc"},
        "ompi-han:ompi-linear/ompi-linear",
        unset=unset,
        per_layout=_han_default_tree(op),
    )


# Intel MPI 2021.16 (I_MPI_ADJUST_<OP>, read in MPI_Init; numbers from Intel's developer reference): bcast 1 binomial,
# 2 recursive doubling, 3 ring, 4-6 topology-aware binomial / recursive doubling / ring, 7 Shumilin's, 8 k-nomial,
# 9-14 shared-memory (NUMA-aware) ones; scatter and gather 1 binomial, 2 topology-aware binomial, 3 Shumilin's.
# Intel MPI is MPICH's code underneath: its binomial algorithms are MPICH's MPIR_{Bcast,Scatter,Gather}_intra_binomial
# (the same tree, MPICH's binomial, and the same schedule as MPICH's pinned ones: the root's copy, the gather's
# receives posted smallest subtree first and relays that wait for them); pinned, they are ``native:binomial``.
# Recursive doubling and ring bcasts are scatter + allgather (no tree); k-nomial's radix (at least 4: its root sent
# all three messages on 4 hosts) can be read from the wire but not its send order; the topology-aware, Shumilin's
# and shared-memory ones are not documented well enough to model (docs/intel-mpi.md).
def _impi(op: str, number: int, model_tree: str, name: str, schedule: Schedule = DEFAULT) -> NativeAlgorithm:
    """Intel MPI's ``op`` algorithm ``number``, forced by ``I_MPI_ADJUST_<OP>=<number>`` (every size, every
    communicator)."""
    return NativeAlgorithm(name, {f"I_MPI_ADJUST_{op.upper()}": str(number)}, model_tree, schedule, adjust=number)


# Intel MPI's default (no I_MPI_ADJUST_*: its tuning file tuning_generic_shm-ofi.dat decides by collective,
# processes per node, communicator size and message size). Read off the wire, one rank per host on a 6-host virtual
# cluster (every rank's TCP bytes to every peer around one call, docs/intel-mpi.md): bcast runs MPICH's tree bcast
# over knomial_1 radix 4 up to 20200 B, knomial_1 radix 2 from 20300 B, kary radix 2 from 139000 B and binomial from
# 360000 B (each switch found within 100, 500 and 5000 bytes; inside those gaps, not modelled); MPICH's control
# variables that hnow sets for MPICH do not change it. Scatter and gather run linear over the hosts (the root
# exchanges with every rank directly, all at once) from 1 KiB to 1 MiB. Only these communicator sizes and sizes are
# modelled; elsewhere not (None). The bcast trees are pipelined: measured on the 6-host accuracy cluster (2026-11-26,
# experiments/intel_accuracy.py) a relay's children got the message as soon as the relay's own egress allowed, not
# after it held the whole message (knomial_1 radix 2 at 64 KiB: 52.6 ms, store-and-forward predicts 84.0 ms), as
# MPICH's pipelined_tree bcast runs them, in chunks. Intel's chunk is not documented and its libmpi's
# I_MPI_ADJUST_BCAST_NETWORK_{TREE,KARY,KNOMIAL}_SEGSIZE (default -1: the tuning file's) do not reach the default
# (4096 B set: every time within 0.1 %), so it was read off the times: of 1024-65536 B, the chunk whose prediction
# misses the measured default bcast least (max |error|) over both clusters it was measured on (the accuracy cluster
# and the export cluster in two rank orders, docs/intel-mpi.md): 2048 B for knomial_1 (16-128 KiB rows: max 6.2 %,
# MPICH's 8192 B: 37.9 %), 32768 B for kary (256 KiB rows: -0.1, +0.3, +2.0 %; 8192 B: -4.4, -8.2, -5.1 %). The
# binomial from 360000 B was not measured: MPICH's 8192 B (MPIR_CVAR_BCAST_TREE_PIPELINE_CHUNK_SIZE).
_IMPI_BCAST_CHUNK_BYTES: Mapping[str, int] = MappingProxyType({"mpich-knomial1": 2048, "kary": 32768, "binomial": 8192})
_IMPI_DEFAULT_BCAST = (
    (6, 8192, 20200, "mpich-knomial1:4"),
    (6, 20300, 138500, "mpich-knomial1:2"),
    (6, 139000, 355000, "kary:2"),
    (6, 360000, 1396108, "binomial"),
)
_IMPI_DEFAULT_LINEAR = ((6, 1024, 1048576, "ompi-linear"),)


def _impi_default(
    op: str, rows: tuple[tuple[int, int, int, str], ...], schedule: Schedule = DEFAULT
) -> NativeAlgorithm:
    """Intel MPI's own choice for ``op`` (nothing pinned), modelled where ``rows`` say which tree runs."""
    return NativeAlgorithm("default", {}, rows[0][3], schedule, by_size=rows, unset=(f"I_MPI_ADJUST_{op.upper()}",))


def _impi_default_bcast() -> NativeAlgorithm:
    """Intel MPI's default bcast: :data:`_IMPI_DEFAULT_BCAST`'s trees, each pipelined in its family's chunk
    (:data:`_IMPI_BCAST_CHUNK_BYTES`).

    >>> nat = _impi_default_bcast()
    >>> [(t, s.segment_bytes) for t, s in (nat.on(("a",) * 6, m) for m in (16384, 65536, 262144))]
    [('mpich-knomial1:4', 2048), ('mpich-knomial1:2', 2048), ('kary:2', 32768)]
    >>> nat.on(("a",) * 5, 65536) is None
    True
    """
    rows = _IMPI_DEFAULT_BCAST
    base = _impi_default("bcast", rows, Schedule(segment_bytes=_IMPI_BCAST_CHUNK_BYTES[rows[0][3].partition(":")[0]]))

    def run(layout: Any, size: int) -> tuple[str, Schedule] | None:
        tree = base.tree_at(len(layout), size, _one_per_host(layout))
        if tree is None:
            return None
        return tree, Schedule(segment_bytes=_IMPI_BCAST_CHUNK_BYTES[tree.partition(":")[0]])

    return replace(base, per_layout=run)


def native_predict(
    op: str,
    library: str,
    profile: Any,
    layout: Any,
    sizes: Any,
    *,
    root: int = 0,
    variant: str | None = None,
    algorithm: NativeAlgorithm | None = None,
) -> np.ndarray | None:
    """Predicted time (µs per size) of ``library``'s own ``op`` as :data:`OPERATIONS` pins it (or of
    ``algorithm``, one of :func:`native_choices`): its model tree, under ``variant``, run by the algorithm's
    schedule (the root's copy, the order of its receives, …); None when hnow does not pin that library's
    algorithm for ``op`` (nothing to predict). The model tree is built for ``layout``'s hosts (a node-aware
    algorithm's tree depends on them). A default that runs different trees by size (``by_size``) is predicted per
    size with the tree that runs there, NaN where hnow does not know which does."""
    nat = get(op).native.get(library) if algorithm is None else algorithm
    if nat is None:
        return None
    v = variant_of(op, variant, profile)
    if not nat.varies:
        tree = make_tree(nat.model_tree, len(layout), root=root, layout=layout)
        return v.predict(get(op), profile, layout, tree, sizes, nat.schedule)
    m = np.atleast_1d(np.asarray(sizes))
    out = np.full(m.shape, np.nan)
    runs = [nat.on(layout, int(x)) for x in m]
    for run in dict.fromkeys(r for r in runs if r is not None):
        idx = [i for i, r in enumerate(runs) if r == run]
        tree = make_tree(run[0], len(layout), root=root, layout=layout)
        out[idx] = v.predict(get(op), profile, layout, tree, m[idx], run[1])
    return out


# ---- native tree specs: ``native`` (each library's pinned default) and ``native:ALGO`` -----------------------------
#: The tree spec of the MPI library's own collective, as :data:`OPERATIONS` pins it (``native:ALGO``: one of
#: :func:`native_choices` by its ``algorithm`` name, e.g. ``native:tree:kary:3``).
NATIVE = "native"


def native_name(spec: Any) -> str | None:
    """The algorithm a tree spec names as the library's own: ``""`` for ``native`` (the pinned default), ``ALGO`` for
    ``native:ALGO``, None for a spec that is not a native one.

    >>> native_name("native"), native_name("native:tree:kary:3"), native_name("kary:3")
    ('', 'tree:kary:3', None)
    """
    if not isinstance(spec, str):
        return None
    if spec == NATIVE:
        return ""
    head, sep, algo = spec.partition(":")
    return algo if head == NATIVE and sep else None


def native_libraries(op: str | None = None) -> tuple[str, ...]:
    """The MPI libraries whose algorithms hnow pins (for ``op``, or for any operation), in registry order."""
    entries = [get(op)] if op is not None else list(OPERATIONS.values())
    return tuple(dict.fromkeys(lib for o in entries for lib in (*o.native, *o.alternatives, *o.pinned_only)))


def native_for(spec: str, op: str, library: str) -> NativeAlgorithm | None:
    """The algorithm the native tree spec ``spec`` runs for ``op`` under ``library``: for ``native`` the pinned one
    (None when hnow pins none), for ``native:ALGO`` the choice of that name (None when ``library`` offers no such
    algorithm for ``op``: the spec does not run that operation).

    >>> native_for("native:tree:kary:3", "bcast", "MPICH").model_tree
    'kary:3'
    >>> native_for("native:tree:kary:3", "gather", "MPICH") is None
    True
    """
    name = native_name(spec)
    if name is None:
        raise ValueError(f"{spec!r} is not a native tree spec")
    if name == "":
        return get(op).native.get(library)
    return next((a for a in native_algorithms(op, library) if a.algorithm == name), None)


def check_native(spec: str, ops: Any = None, flag: str = "--tree") -> str:
    """``spec`` when it is ``native`` or ``native:ALGO`` with ALGO an algorithm some MPI library can be told to run
    for at least one of ``ops`` (default: any operation); else :class:`InputError` naming the valid ones."""
    name = native_name(spec)
    op_list = list(names() if ops is None else ops)
    if name == "" or name is None:
        if spec == NATIVE:
            return spec
        raise InputError(f"{flag}: {spec!r} is not 'native' or 'native:ALGO'")
    valid = dict.fromkeys(
        a.algorithm for op in op_list for lib in native_libraries(op) for a in native_algorithms(op, lib)
    )
    if name not in valid:
        shown = ", ".join(f"native:{a}" for a in valid) or "none"
        raise InputError(
            f"{flag}: unknown native algorithm {name!r} for {', '.join(op_list)} (choose from: native, {shown})"
        )
    return spec


def native_spec_env(spec: str, ops: Any) -> dict[str, str]:
    """The environment that makes ``spec`` (``native`` or ``native:ALGO``) run its algorithm for each of ``ops``
    that it runs, for every library that offers it at once (MPICH reads ``MPIR_CVAR_*``, Open MPI
    ``OMPI_MCA_*``): what a rank sets before ``MPI_Init``, when it does not know yet which library it runs.
    Two specs whose environments give one variable two values cannot run in one job.

    >>> native_spec_env("native:tree:kary:3", ["bcast"])["MPIR_CVAR_BCAST_TREE_KVAL"]
    '3'
    """
    env: dict[str, str] = {}
    for op in ops:
        for lib in native_libraries(op):
            nat = native_for(spec, op, lib)
            if nat is not None:
                env.update(nat.env)
    return env


def native_spec_unset(spec: str, ops: Any) -> set[str]:
    """The variables that must stay unset for ``spec`` to run its algorithm for each of ``ops`` under every library
    that offers it (a library's default: what would pin another algorithm). A job that sets one of them for another
    spec cannot run ``spec`` too.

    >>> sorted(native_spec_unset("native", ["bcast"]))
    ['I_MPI_ADJUST_BCAST']
    >>> native_spec_unset("native:binomial", ["bcast"])
    set()
    """
    out: set[str] = set()
    for op in ops:
        for lib in native_libraries(op):
            nat = native_for(spec, op, lib)
            if nat is not None:
                out.update(nat.unset)
    return out


OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {
        "bcast": Operation(
            name="bcast",
            summary="one root's m bytes to every rank (eq. 6-7)",
            default_variant="paper",
            network_variant="flow-rr",
            movement=ONE_DOWN,
            kernel="bcast",
            kernel_code=0,
            imb="Bcast",
            outside_names=("bcast", "broadcast"),
            native={
                "MPICH": _mpich("MPIR_CVAR_BCAST_INTRA_ALGORITHM"),
                # ompi_coll_base_bcast_intra_binomial: build_bmtree, isends to tree_next in order, one message
                "Open MPI": _ompi("bcast", 6, "ompi-binomial"),
                "Intel MPI": _impi_default_bcast(),
            },
            # MPIR_Bcast_intra_tree: a rank receives from its parent, then sends to its children in the tree's order
            alternatives={
                "MPICH": _MPICH_BCAST_TREES,
                "Open MPI": _OMPI_BCAST,
                "Intel MPI": (_impi("bcast", 1, "binomial", "binomial"),),
            },
            pinned_only={
                "MPICH": (_MPICH_ALPHA_BCAST,),
                "Open MPI": (_ompi_han("bcast", 6, "ompi-binomial"), _ompi_han_default("bcast")),
            },
        ),
        "scatter": Operation(
            name="scatter",
            summary="the root's block i (m bytes) to rank i (eq. 8-9; subtree data per edge off the sequential tree)",
            default_variant="paper",
            network_variant="flow-rr",
            movement=SUBTREE_DOWN,
            kernel="scatter",
            kernel_code=1,
            imb="Scatter",
            outside_names=("scatter",),
            native={
                "MPICH": _mpich("MPIR_CVAR_SCATTER_INTRA_ALGORITHM", Schedule(root_copy=True)),
                # ompi_coll_base_scatter_intra_binomial: in-order bmtree walked backwards (MPICH's binomial order),
                # the root copies its own block first, then sends each child its subtree's blocks
                "Open MPI": _ompi("scatter", 2, "binomial", schedule=_COPY_FIRST),
                "Intel MPI": _impi_default("scatter", _IMPI_DEFAULT_LINEAR, Schedule(root_copy=True)),
            },
            alternatives={
                "Open MPI": _OMPI_SCATTER,
                "Intel MPI": (_impi("scatter", 1, "binomial", "binomial", Schedule(root_copy=True)),),
            },
            pinned_only={"Open MPI": (_ompi_han("scatter", 2, "binomial", _COPY_FIRST), _ompi_han_default("scatter"))},
        ),
        "gather": Operation(
            name="gather",
            summary="every rank's m bytes to the root (eq. 10-12)",
            # the receiver's link carries one message at a time: what the emulated testbed and real links do
            default_variant="link",
            movement=SUBTREE_UP,
            kernel="gather",
            kernel_code=2,
            imb="Gather",
            outside_names=("gather",),
            # MPIR_Gather_intra_binomial: blocking receives from rank+1, +2, +4, …; a relay sends its block and the
            # received ones as one struct datatype, which moves only into a posted receive (docs/native-algorithms.md)
            native={
                "MPICH": _mpich(
                    "MPIR_CVAR_GATHER_INTRA_ALGORITHM",
                    Schedule(root_copy=True, recv_order="smallest_first", relay_waits=True),
                ),
                # ompi_coll_base_gather_intra_binomial: the root copies its block, then blocking receives from the
                # in-order bmtree's children nearest first (rank+1, +2, +4: the smallest subtree first)
                "Open MPI": _ompi(
                    "gather", 2, "binomial", schedule=Schedule(root_copy=True, recv_order="smallest_first")
                ),
                "Intel MPI": _impi_default("gather", _IMPI_DEFAULT_LINEAR, Schedule(root_copy=True)),
            },
            alternatives={
                "Open MPI": _OMPI_GATHER,
                "Intel MPI": (
                    _impi(
                        "gather",
                        1,
                        "binomial",
                        "binomial",
                        Schedule(root_copy=True, recv_order="smallest_first", relay_waits=True),
                    ),
                ),
            },
            pinned_only={
                "Open MPI": (
                    _ompi_han("gather", 2, "binomial", Schedule(root_copy=True, recv_order="smallest_first")),
                    _ompi_han_default("gather"),
                )
            },
        ),
    }
)


def names() -> tuple[str, ...]:
    """The registered operation names, in registry order."""
    return tuple(OPERATIONS)


def get(op: str) -> Operation:
    """The operation called ``op``; :class:`InputError` names the valid ones."""
    try:
        return OPERATIONS[op]
    except (KeyError, TypeError):
        raise InputError(f"unknown operation {op!r} (choose from: {', '.join(OPERATIONS)})") from None


def is_network_profile(profile: Any) -> bool:
    """Whether ``profile`` was calibrated on a network (it carries ``extensions.network``: link capacities)."""
    ext = getattr(profile, "extensions", None)
    return isinstance(ext, Mapping) and bool(ext.get("network"))


def default_variant(op: str, profile: Any = None) -> str:
    """The name of the variant ``op`` is chosen and compared under by default: the operation's
    ``network_variant`` for a network profile (:func:`is_network_profile`), else its ``default_variant``.

    >>> default_variant("gather"), default_variant("bcast")
    ('link', 'paper')
    >>> get("bcast").network_variant, get("gather").network_variant
    ('flow-rr', 'flow')
    """
    o = get(op)
    if profile is not None and is_network_profile(profile):
        return o.network_variant
    return o.default_variant


def variant_of(op: str, variant: str | None = None, profile: Any = None) -> Variant:
    """The :class:`~hnowmodel.variants.Variant` to use for ``op``: ``variant`` by name (None: :func:`default_variant`
    for ``profile``); :class:`InputError` names the operation (unknown) or the variants that serve it.

    >>> variant_of("bcast").exact_for(get("bcast"))
    True
    """
    return _variants.check(get(op), default_variant(op, profile) if variant is None else variant)


def check_variant(op: str, variant: str | None, profile: Any = None) -> str:
    """The name of the variant to use for ``op`` (None: :func:`default_variant` for ``profile``);
    :class:`InputError` names the valid ones."""
    return variant_of(op, variant, profile).name


def predictor(op: str, variant: str | None = None, profile: Any = None) -> Predictor:
    """The predictor of ``op`` under ``variant`` (None: :func:`default_variant` for ``profile``):
    ``f(profile, layout, tree, sizes, schedule=None, *, per_rank=False, root=0)`` (µs), the schedule's fields also
    accepted as keywords (the old form)."""
    return BoundPredictor(variant_of(op, variant, profile), get(op))


def predict(op: str, profile: Any, layout: Any, tree: Any, sizes: Any, *, variant: str | None = None, **kw: Any):
    """Predicted completion time (µs, one per size) of ``op`` over ``tree`` under ``variant`` (None: the default
    for ``profile``); ``kw``: ``schedule``, ``per_rank``, ``root`` and the schedule's fields (the old form)."""
    per_rank, root = kw.pop("per_rank", False), kw.pop("root", 0)
    sched = as_schedule(kw.pop("schedule", None), **kw)
    return variant_of(op, variant, profile).predict(
        get(op), profile, layout, tree, sizes, sched, per_rank=per_rank, root=root
    )
