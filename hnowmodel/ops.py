"""The one registry of collective operations: everything hnow knows about an operation is its entry here.

An :class:`Operation` names its default model variant (the one trees are chosen under *and* compared under; the
variants themselves and their predictors are :mod:`hnowmodel.variants`' registry), how the data moves over a tree
edge (:mod:`hnowmodel.movement`), the name of its MPI kernel (the method of :mod:`calibrate.collectives`'
executors and of the C kernels), and each MPI library's own algorithms for it, read from the libraries' packages
(:data:`hnowmodel.libraries.LIBRARIES`: how each is pinned so that ``native`` is modelled by the tree that really
runs, with the :class:`~hnowmodel.runopts.Schedule` it runs it by); the ``native`` tree specs are resolved here.

Adding an operation is one entry in :data:`OPERATIONS` + its predictors (in :mod:`hnowmodel.variants`' entries) +
its kernel (in :mod:`calibrate.collectives`), and for ``--tree native`` each library's algorithms for it (an entry
of its package's ``ALGORITHMS``); nothing else lists the operations.

>>> names()
('bcast', 'scatter', 'gather', 'reduce', 'allreduce', 'allgather', 'reduce_scatter', 'alltoall')
>>> tree_names()
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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from . import libraries as _libraries
from . import variants as _variants
from .errors import InputError
from .libraries.native import NativeAlgorithm
from .movement import ONE_DOWN, SUBTREE_DOWN, SUBTREE_UP, Movement
from .runopts import as_schedule, as_sizes
from .schedules import catalog as _catalog
from .schedules import hierarchy as _hierarchy
from .schedules.generator import Algorithm
from .trees import make_tree
from .variants import BoundPredictor, Predictor, Variant

__all__ = [
    "Operation",
    "Algorithm",
    "OPERATIONS",
    "names",
    "tree_names",
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
    "NATIVE",
    "native_name",
    "native_libraries",
    "native_for",
    "check_native",
    "native_spec_env",
    "native_spec_unset",
    "missing_gamma",
]


@dataclass(frozen=True)
class Operation:
    """One collective operation.

    ``default_variant`` (a :mod:`hnowmodel.variants` entry that serves it) is used to choose trees and to compare
    them, ``network_variant`` instead for a profile calibrated on a network (the variant that measured best there:
    ``experiments/cluster_accuracy.py``). ``movement`` says how its data moves over a tree edge
    (:class:`~hnowmodel.movement.Movement`: ``edge_data`` ``"one"``, every edge carries the m-byte message: bcast, or
    ``"subtree"``, the edge into a rank carries its subtree's blocks: scatter, gather; and the direction).
    ``kernel`` is the executors' method name. The registry fills in what each MPI library runs for it, from the
    libraries' packages (:func:`hnowmodel.libraries.natives`): ``native`` maps a library name (``MPICH``,
    ``Open MPI``, ``Intel MPI``) to its pinned algorithm (what ``--tree native`` runs); ``alternatives`` maps it to
    the other algorithms that library can be told to run for the operation (what ``hnow export`` chooses among,
    with ``native``: :func:`native_choices`); ``pinned_only`` maps it to algorithms hnow can pin by environment and
    model (``native:ALGO``) but that no file ``hnow export`` writes can select (a ch4 composition, an Open MPI
    component other than coll/tuned): :func:`native_algorithms`. :attr:`variants` lists the variants that serve
    it, each as its predictor. ``kernel_code``: the C kernels' code of its native collective (``hk_coll``'s ``op``
    in calibrate/kernels/hnow_kernels.c; -1: none). ``imb``: IMB-MPI1's benchmark of it (``hnow bench imb``; '':
    none); ``outside_names``: the lower-case names outside benchmarks' output gives it (IMB's, OSU's
    ``osu_<name>``); ``outside_total``: those (``suite:name``) whose message size is the whole vector of all ranks'
    blocks, not :mod:`~hnowmodel.schedules.catalog`'s ``m`` (then ``m`` = size / p, in whole elements:
    :func:`hnowmodel.outside.registry_m`). ``algorithms``: its algorithms that are not trees, by name, each a
    generator of its message schedule (:class:`~hnowmodel.schedules.generator.Algorithm`: ring, recursive doubling,
    ...); ``movement`` None: it has no tree algorithms (then it needs ``algorithms``). :meth:`predict` predicts
    either kind. ``reduction``:
    its ranks combine buffers (MPI_SUM on doubles, 8-byte elements): a prediction needs the reduction cost γ
    (µs per byte combined), given or from the profile (:meth:`reduce_costs`); hnow never assumes one.
    ``two_level``: how its algorithms compose on hosts holding several ranks (one of
    :mod:`hnowmodel.schedules.hierarchy`'s ``*_levels``: the host levels around one of :attr:`algorithms` among the
    hosts' leaders), which the algorithm search tries (:func:`hnowmodel.search.best_algorithm`); None: none.

    An operation is this one entry; the worked example of docs/operations.md, an allgather whose algorithm is a
    ring, runs here:

    >>> import hnowmodel as hm
    >>> from hnowmodel.schedules import Algorithm, ring_allgather
    >>> allgather = Operation("allgather", "every rank's m bytes to every rank", "paper",
    ...                       algorithms={"ring": Algorithm("ring", "a ring of p - 1 steps", ring_allgather)})
    >>> allgather.variants_names(), allgather.predict(hm.paper_profile(), ["fast"] * 4, "ring", [0]).tolist()
    (('paper', 'flow', 'flow-weighted', 'flow-rr'), [510.0])
    """

    name: str
    summary: str
    default_variant: str
    movement: Movement | None = None
    kernel: str = ""
    algorithms: Mapping[str, Algorithm] = field(default_factory=dict)
    native: Mapping[str, NativeAlgorithm] = field(default_factory=dict)
    alternatives: Mapping[str, tuple[NativeAlgorithm, ...]] = field(default_factory=dict)
    network_variant: str = "flow"
    pinned_only: Mapping[str, tuple[NativeAlgorithm, ...]] = field(default_factory=dict)
    kernel_code: int = -1
    imb: str = ""
    outside_names: tuple[str, ...] = ()
    reduction: bool = False
    outside_total: tuple[str, ...] = ()
    two_level: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "algorithms", MappingProxyType(dict(self.algorithms)))
        if self.movement is None and not self.algorithms:
            raise ValueError(f"operation {self.name}: neither a movement (tree algorithms) nor algorithms")
        object.__setattr__(self, "native", MappingProxyType(dict(self.native)))
        object.__setattr__(self, "alternatives", MappingProxyType({k: tuple(v) for k, v in self.alternatives.items()}))
        object.__setattr__(self, "pinned_only", MappingProxyType({k: tuple(v) for k, v in self.pinned_only.items()}))
        for v in (self.default_variant, self.network_variant):
            if not _variants.VARIANTS.get(v, None) or not _variants.VARIANTS[v].serves(self):
                raise ValueError(f"operation {self.name}: default variant {v!r} is not a variant")

    @property
    def edge_data(self) -> str:
        """``"one"`` or ``"subtree"``: what the edge into a rank carries (:attr:`movement`; '' without one)."""
        return self.movement.edge_data if self.movement is not None else ""

    def variants_names(self) -> tuple[str, ...]:
        """The names of the variants that serve this operation, in registry order."""
        return _variants.serving(self)

    def variant_for(self, profile: Any = None, variant: str | None = None) -> Variant:
        """The variant ``variant`` names (None: ``network_variant`` for a network profile, else
        ``default_variant``); :class:`InputError` names the ones that serve this operation."""
        if variant is None:
            variant = self.network_variant if is_network_profile(profile) else self.default_variant
        return _variants.check(self, variant)

    def algorithm(self, name: str) -> Algorithm:
        """The algorithm called ``name`` (:attr:`algorithms`); :class:`InputError` names the valid ones."""
        try:
            return self.algorithms[name]
        except (KeyError, TypeError):
            valid = ", ".join(self.algorithms) or "none: its algorithms are trees"
            raise InputError(f"unknown {self.name} algorithm {name!r} (choose from: {valid})") from None

    def schedule_algorithm(self, algorithm: Any) -> Algorithm | None:
        """The :class:`~hnowmodel.schedules.generator.Algorithm` that ``algorithm`` is or names among
        :attr:`algorithms`; None when it is something else (a tree, a tree spec).

        >>> get("bcast").schedule_algorithm("binomial") is None
        True
        """
        if isinstance(algorithm, Algorithm):
            return algorithm
        return self.algorithms.get(algorithm) if isinstance(algorithm, str) else None

    def predict(
        self, profile: Any, layout: Any, algorithm: Any, sizes: Any, *, variant: str | None = None, **kw: Any
    ) -> np.ndarray:
        """Predicted completion time (µs per size; ``per_rank=True``: ``(len(sizes), n)``) of this operation run by
        ``algorithm`` under ``variant`` (None: the default for ``profile``): one of :attr:`algorithms` (by name or
        as an :class:`~hnowmodel.schedules.generator.Algorithm`; ``reduce_us_per_byte`` its γ, None:
        :meth:`reduce_costs`) evaluated as a message schedule, else a tree (a :class:`~hnowmodel.trees.Tree` or a
        tree name; ``schedule`` and its fields: how the MPI implementation runs it). ``root``: the root rank."""
        var = self.variant_for(profile, variant)
        per_rank, root = kw.pop("per_rank", False), kw.pop("root", 0)
        alg = self.schedule_algorithm(algorithm)
        if alg is not None:
            given = kw.pop("reduce_us_per_byte", None)
            if kw:
                raise InputError(f"{alg.name} is a message schedule: {sorted(kw)[0]} applies to trees only")
            gammas = self.reduce_costs(profile, sizes, given)
            return var.predict_algorithm(profile, layout, alg, sizes, per_rank=per_rank, root=root,
                                         reduce_us_per_byte=gammas)  # fmt: skip
        if self.movement is None:
            self.algorithm(str(algorithm))  # names the valid ones
        sched = as_schedule(kw.pop("schedule", None), **kw)
        return var.predict(self, profile, layout, algorithm, sizes, sched, per_rank=per_rank, root=root)

    def reduce_costs(self, profile: Any, sizes: Any, given: Any = None) -> list[Any]:
        """γ (µs per byte combined: a rate, or type -> rate) at each of ``sizes`` (bytes, the operation's ``m``):
        ``given``, else for a :attr:`reduction` the profile's measured γ at a buffer of ``m`` bytes
        (:meth:`~hnowmodel.params.Profile.reduce_us_per_byte_at`: the combine of the whole vector, its constant
        spread over it, applied to every chunk the algorithm combines), else 0; :class:`InputError` when a
        reduction has neither (hnow never assumes a γ).

        >>> get("allgather").reduce_costs(None, [8, 16])
        [0.0, 0.0]
        >>> get("allreduce").reduce_costs(None, [8], given=0.001)
        [0.001]
        """
        m = as_sizes(sizes)
        if given is not None or not self.reduction:
            return [0.0 if given is None else given] * len(m)
        if not getattr(profile, "has_reduce_cost", False):
            raise InputError(f"{missing_gamma(self.name)} or give reduce_us_per_byte= (--reduce-us-per-byte)")
        return [profile.reduce_us_per_byte_at(int(x)) for x in m]

    @property
    def variants(self) -> Mapping[str, BoundPredictor]:
        """The variants that serve this operation, in registry order, each as its predictor
        (:class:`~hnowmodel.variants.BoundPredictor`)."""
        return MappingProxyType({n: BoundPredictor(_variants.VARIANTS[n], self) for n in _variants.serving(self)})


def missing_gamma(*ops: str) -> str:
    """Why ``ops``, reductions, cannot be predicted from a profile without the reduction cost γ, and how to get one
    (one line).

    >>> missing_gamma("allreduce")[:62]
    'allreduce combines buffers: its prediction needs the reduction'
    >>> missing_gamma("reduce", "allreduce")[:67]
    'reduce, allreduce combine buffers: their predictions need the reduc'
    """
    what = "combines buffers: its prediction needs" if len(ops) == 1 else "combine buffers: their predictions need"
    return (
        f"{', '.join(ops)} {what} the reduction cost γ (µs per byte reduced), which the profile does not have: "
        "calibrate one (hnow calibrate)"
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

    >>> [a.algorithm for a in native_algorithms("bcast", "MPICH")][-4:]
    ['smp', 'composition:alpha', 'default', 'ch4']
    """
    return native_choices(op, library) + tuple(get(op).pinned_only.get(library, ()))


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
    reduce_us_per_byte: Any = None,
) -> np.ndarray | None:
    """Predicted time (µs per size) of ``library``'s own ``op`` as :data:`OPERATIONS` pins it (or of
    ``algorithm``, one of :func:`native_choices`): its model tree, under ``variant``, run by the algorithm's
    schedule (the root's copy, the order of its receives, …); None when hnow does not pin that library's
    algorithm for ``op`` (nothing to predict). The model tree is built for ``layout``'s hosts (a node-aware
    algorithm's tree depends on them). A default that runs different trees by size (``by_size``) is predicted per
    size with the tree that runs there, NaN where hnow does not know which does. A model that names one of the
    operation's :attr:`~Operation.algorithms` (a message schedule: MPICH's ring allreduce) is that algorithm's
    prediction (``reduce_us_per_byte``: γ, :meth:`Operation.reduce_costs`)."""
    nat = get(op).native.get(library) if algorithm is None else algorithm
    if nat is None:
        return None
    v = variant_of(op, variant, profile)
    if not nat.varies:
        return _model_predict(op, v, profile, layout, (nat.model_tree, nat.schedule), sizes, root, reduce_us_per_byte)
    m = np.atleast_1d(np.asarray(sizes))
    out = np.full(m.shape, np.nan)
    runs = [nat.on(layout, int(x)) for x in m]
    for run in dict.fromkeys(r for r in runs if r is not None):
        idx = [i for i, r in enumerate(runs) if r == run]
        out[idx] = _model_predict(op, v, profile, layout, run, m[idx], root, reduce_us_per_byte)
    return out


def _model_predict(op: str, v: Variant, profile: Any, layout: Any, run: tuple, sizes: Any, root: int, gamma: Any):
    """µs per size of ``op`` under ``v`` by a native algorithm's model ``run`` = (tree spec or the name of one of
    the operation's schedule algorithms, :class:`~hnowmodel.runopts.Schedule`)."""
    o = get(op)
    if o.schedule_algorithm(run[0]) is not None:
        return o.predict(profile, layout, run[0], sizes, variant=v.name, root=root, reduce_us_per_byte=gamma)
    tree = make_tree(run[0], len(layout), root=root, layout=layout)
    return v.predict(o, profile, layout, tree, sizes, run[1])


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


def _registry(*ops: Operation) -> Mapping[str, Operation]:
    """The registry: each operation with every MPI library's algorithms for it (``native``, ``alternatives``,
    ``pinned_only``), read from the libraries' packages (:data:`hnowmodel.libraries.LIBRARIES`)."""
    return MappingProxyType({o.name: replace(o, **_libraries.natives(o.name)) for o in ops})


#: The five message-schedule operations' variant on a network profile: the flow engine on the tandem of queues (each
#: host's egress round-robin, its ingress a FIFO: hnowmodel/flow/tandem.py), which passes a receiver's messages in
#: the order they reach it; max-min sharing (``flow``) slows the message a rank waits for by the ones ranks ahead
#: sent for later steps: +28 % on MPICH's pairwise alltoall, +14 % on its recursive-halving reduce-scatter at 64 KiB
#: on the 6-host cluster, within 2 % on the tandem (docs/accuracy.md).
_SCHEDULES_ON_A_NETWORK = "flow-rr"

OPERATIONS: Mapping[str, Operation] = _registry(
    Operation(
        name="bcast",
        summary="one root's m bytes to every rank (eq. 6-7)",
        default_variant="paper",
        network_variant="flow-rr",
        movement=ONE_DOWN,
        # MPICH's bcasts that are no tree (its default from 8 ranks above 12288 B), for its native algorithms
        algorithms=_catalog.BCAST,
        kernel="bcast",
        kernel_code=0,
        imb="Bcast",
        outside_names=("bcast", "broadcast"),
    ),
    Operation(
        name="scatter",
        summary="the root's block i (m bytes) to rank i (eq. 8-9; subtree data per edge off the sequential tree)",
        default_variant="paper",
        network_variant="flow-rr",
        movement=SUBTREE_DOWN,
        kernel="scatter",
        kernel_code=1,
        imb="Scatter",
        outside_names=("scatter",),
    ),
    Operation(
        name="gather",
        summary="every rank's m bytes to the root (eq. 10-12)",
        # the receiver's link carries one message at a time: what the emulated testbed and real links do
        default_variant="link",
        movement=SUBTREE_UP,
        kernel="gather",
        kernel_code=2,
        imb="Gather",
        outside_names=("gather",),
    ),
    # Operations whose algorithms are message schedules (no tree movement), each generator as MPICH runs it
    # (hnowmodel/schedules). m is in bytes per rank, as each summary says; reductions are MPI_SUM on doubles.
    Operation(
        name="reduce",
        summary="every rank's m-byte vector (doubles) summed into the root's",
        default_variant="paper",
        network_variant=_SCHEDULES_ON_A_NETWORK,
        kernel="reduce",
        kernel_code=5,
        reduction=True,
        algorithms=_catalog.REDUCE,
        two_level=_hierarchy.reduce_levels,
        imb="Reduce",  # #bytes: each rank's vector (IMB and OSU alike), m
        outside_names=("reduce",),
    ),
    Operation(
        name="allreduce",
        summary="every rank's m-byte vector (doubles) summed, the sum on every rank",
        default_variant="paper",
        network_variant=_SCHEDULES_ON_A_NETWORK,
        kernel="allreduce",
        kernel_code=6,
        reduction=True,
        algorithms=_catalog.ALLREDUCE,
        two_level=_hierarchy.allreduce_levels,
        imb="Allreduce",  # #bytes: each rank's vector, m
        outside_names=("allreduce",),
    ),
    Operation(
        name="allgather",
        summary="every rank's m-byte block to every rank",
        default_variant="paper",
        network_variant=_SCHEDULES_ON_A_NETWORK,
        kernel="allgather",
        kernel_code=7,
        algorithms=_catalog.ALLGATHER,
        two_level=_hierarchy.allgather_levels,
        imb="Allgather",  # #bytes: each rank's block, m
        outside_names=("allgather",),
    ),
    Operation(
        name="reduce_scatter",
        summary="every rank's p blocks of m bytes (doubles) summed, block i on rank i (MPI_Reduce_scatter_block)",
        default_variant="paper",
        network_variant=_SCHEDULES_ON_A_NETWORK,
        kernel="reduce_scatter",
        kernel_code=8,
        reduction=True,
        algorithms=_catalog.REDUCE_SCATTER,
        two_level=_hierarchy.reduce_scatter_levels,
        # IMB's Reduce_scatter_block: #bytes is each rank's result block (its recvcount), m; IMB's Reduce_scatter
        # and OSU's osu_reduce_scatter (MPI_Reduce_scatter) and osu_reduce_scatter_block split the whole vector
        imb="Reduce_scatter_block",
        outside_names=("reduce_scatter_block", "reduce_scatter"),
        outside_total=("imb:reduce_scatter", "osu:reduce_scatter", "osu:reduce_scatter_block"),
    ),
    Operation(
        name="alltoall",
        summary="every rank's m-byte block for each rank to that rank",
        default_variant="paper",
        network_variant=_SCHEDULES_ON_A_NETWORK,
        kernel="alltoall",
        kernel_code=9,
        algorithms=_catalog.ALLTOALL,
        imb="Alltoall",  # #bytes: the block each rank sends each rank, m
        outside_names=("alltoall", "all-to-all"),  # OSU's title: All-to-All Personalized Exchange
    ),
)


def names() -> tuple[str, ...]:
    """The registered operation names, in registry order."""
    return tuple(OPERATIONS)


def tree_names() -> tuple[str, ...]:
    """The operations that trees run (an entry with a ``movement``), in registry order: what the tree search,
    ``optimal``, the tree executor and the export to MPI libraries serve."""
    return tuple(name for name, o in OPERATIONS.items() if o.movement is not None)


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
    return get(op).variant_for(profile).name


def variant_of(op: str, variant: str | None = None, profile: Any = None) -> Variant:
    """The :class:`~hnowmodel.variants.Variant` to use for ``op``: ``variant`` by name (None: :func:`default_variant`
    for ``profile``); :class:`InputError` names the operation (unknown) or the variants that serve it.

    >>> variant_of("bcast").exact_for(get("bcast"))
    True
    """
    return get(op).variant_for(profile, variant)


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
    """Predicted completion time (µs, one per size) of ``op`` over ``tree`` (or one of its :attr:`Operation.
    algorithms`) under ``variant`` (None: the default for ``profile``); ``kw``: ``schedule``, ``per_rank``, ``root``
    and the schedule's fields (the old form): :meth:`Operation.predict`."""
    return get(op).predict(profile, layout, tree, sizes, variant=variant, **kw)
