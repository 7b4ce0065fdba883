"""MPICH's algorithms as hnow pins them (MPICH 5.0.x): the control variables (``MPIR_CVAR_*``) that make MPICH run
each one, the tree that models it and the schedule it runs it by; each one's ``leaf`` is the leaf of MPICH's
collective selection JSON that runs it (``{"algorithm=NAME": {"param=value": {}, ...}}``, every parameter the
algorithm reads: MPICH does not default the missing ones; :mod:`.selection` reads and writes that file), None for
what the file cannot name (a ch4 composition). :data:`ALGORITHMS` is what the operation registry reads.

>>> [a.algorithm for a in ALGORITHMS["bcast"].choices][:3]
['binomial', 'tree:kary:2', 'tree:kary:3']
>>> ALGORITHMS["bcast"].native.leaf
{'algorithm=MPIR_Bcast_intra_binomial': {}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from types import MappingProxyType

from ...layout import hosts_of
from ...runopts import DEFAULT, Schedule
from ..native import NativeAlgorithm, OpAlgorithms
from . import defaults as _defaults
from . import selection as _selection
from .ch4 import MPIR, comm_hierarchy, composition, composition_model, leaders_run, smp_run
from .compositions import allreduce_alpha_run, reduce_alpha_run

__all__ = ["ALGORITHMS", "MPICH_TREE_KS"]

# MPICH 5.0.x control variables (checked with the wheel's ``mpivars``): binomial for all three, the ch4 device's
# own collectives off (they would bypass the choice) and an inapplicable choice is an error, not a silent fallback.
_MPICH_COMMON = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}


def _mpich(cvar: str, schedule: Schedule = DEFAULT) -> NativeAlgorithm:
    name = cvar.split("_")[2].capitalize()  # MPIR_CVAR_BCAST_INTRA_ALGORITHM -> Bcast
    leaf = {f"algorithm=MPIR_{name}_intra_binomial": {}}
    return NativeAlgorithm("binomial", {cvar: "binomial", **_MPICH_COMMON}, "binomial", schedule, leaf=leaf)


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
    return NativeAlgorithm(f"tree:{tree_type}:{k}", env, f"{model}:{k}", leaf=leaf)


# MPIR_Bcast_intra_smp (src/mpi/coll/bcast/bcast_intra_smp.c, MPICH 5.0.x). Below MPIR_CVAR_BCAST_SHORT_MSG_SIZE
# (12288 B) or on fewer than MPIR_CVAR_BCAST_MIN_PROCS (8) ranks: a root that is not its node's leader (node_comm
# rank 0, the node's lowest rank) sends the message to it, MPIR_Bcast over node_roots_comm (the leaders, in rank
# order), then MPIR_Bcast over every node_comm from its leader (the root's node included, so the leader sends the
# root its own message back: no tree edge, left out). Those inner calls run on child communicators, where the forced
# "smp" does not apply: MPICH falls back (MPIR_CVAR_COLLECTIVE_FALLBACK=silent; with "error" the call fails) to its
# auto selection (comm_hierarchy=any in the built-in table): binomial below 8 ranks at any size and up to 12288 B
# beyond, else a scatter + allgather. From 8 ranks and 12288 B: on a power of two of ranks below
# MPIR_CVAR_BCAST_LONG_MSG_SIZE (524288 B) the same two levels (the root's node first: not so for root 0), else
# MPIR_Bcast_intra_scatter_ring_allgather over all the ranks. :func:`.ch4.smp_run` says which runs on given hosts
# (the two levels modelled by mpich-smp:binomial/binomial where each level is binomial, else not modelled;
# docs/native-algorithms.md). Device collectives off, so MPIR_Bcast is MPICH's own for every level.
_MPICH_SMP_BCAST = NativeAlgorithm(
    "smp",
    {
        "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "smp",
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
        "MPIR_CVAR_COLLECTIVE_FALLBACK": "silent",
    },
    "mpich-smp:binomial/binomial",
    leaf={"algorithm=MPIR_Bcast_intra_smp": {}},
    per_layout=smp_run,
)
# MPICH's default bcast with its device collectives on (MPIR_CVAR_DEVICE_COLLECTIVES=percoll, the default): ch4's
# MPID_Bcast selects by its own table (maint/tuning/coll/ch4/generic.json): on a node-aware (parent) communicator of
# fewer than 8 ranks composition alpha at every size, from 8 ranks alpha below 12288 B, beta (on a power of two of
# ranks, below 524288 B) or gamma beyond (the netmod's bcast on the whole communicator: MPIR's own selection, so a
# scatter + ring allgather on 12 ranks; .ch4.composition_model). Composition alpha (MPIDI_Bcast_intra_composition_
# alpha, ch4_coll_impl.h): the root sends to its node's leader if it is not the leader, the netmod bcast over
# node_roots_comm (MPIR's auto selection for a child communicator: binomial below 8 leaders or up to 12288 B, as for
# smp; else a scatter + allgather, not modelled: .ch4.leaders_run), then the shm bcast over every node_comm from its
# leader (the root's node included, the duplicate again). The shm bcast (MPIDI_POSIX_mpi_bcast, posix_generic.json) is
# release_gather: the first MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD - 1 (4) calls on a node_comm fall back to MPIR's
# binomial, later ones copy the message through a shared-memory buffer that the node's ranks read (flags, not
# messages). Modelled by the same two-level binomial tree, an intra-host edge costing one shared-memory message: exact
# for the inter-host part, an approximation inside hosts (release_gather is no tree). Pinned by
# MPIR_CVAR_BCAST_COMPOSITION=1 (alpha at every size and communicator size); MPICH's own selection file cannot name a
# composition (pinned_only). So for 6 ranks on 3 hosts x 2 at 16-256 KiB MPICH's default runs exactly this. Scatter
# and gather have no smp algorithm in MPICH: their ch4 composition alpha is the netmod's call on the whole
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
    per_layout=leaders_run,
)


def _mpich_scatter_bcast(name: str) -> NativeAlgorithm:
    """``MPIR_Bcast_intra_<name>`` (``scatter_ring_allgather``, ``scatter_recursive_doubling_allgather``): a binomial
    scatter of the message's ceil(m/p)-byte chunks, then an allgather of them (no tree: modelled by the bcast's
    message schedule of that name, :mod:`hnowmodel.schedules.bcast`). MPICH's default selects them from 8 ranks
    (its table's ``comm_size<8``, resolved as written when the communicator is made: :mod:`.defaults`) above
    12288 B: recursive doubling on a power of two up to 524288 B, the ring otherwise; pinned, they run on any count
    (the recursive doubling's other counts are not modelled)."""
    env = {"MPIR_CVAR_BCAST_INTRA_ALGORITHM": name, **_MPICH_COMMON}
    return NativeAlgorithm(name, env, name, leaf={f"algorithm=MPIR_Bcast_intra_{name}": {}})


#: MPICH's own choice of bcast (``MPIR_CVAR_BCAST_INTRA_ALGORITHM`` unset: its built-in table) with the device's
#: collectives off: binomial below 8 ranks or up to 12288 B, else scatter + allgather (:mod:`.defaults`);
#: ``native:default`` (``native`` is the pinned binomial). No leaf: it is what the table says.
_MPICH_DEFAULT_BCAST = NativeAlgorithm(
    "default",
    dict(_MPICH_COMMON),
    "by size",
    by_size=_defaults.RULES["bcast"],
    unset=("MPIR_CVAR_BCAST_INTRA_ALGORITHM",),
)

_MPICH_BCAST_TREES = (
    *(_mpich_tree_bcast("kary", k) for k in MPICH_TREE_KS),
    *(_mpich_tree_bcast("knomial_1", k) for k in MPICH_TREE_KS),
    *(_mpich_tree_bcast("knomial_2", k) for k in MPICH_TREE_KS if k > 2),
    _mpich_scatter_bcast("scatter_ring_allgather"),
    _mpich_scatter_bcast("scatter_recursive_doubling_allgather"),
    _MPICH_SMP_BCAST,
)


# ---- the operations whose algorithms are message schedules (hnowmodel/schedules/catalog.py) -------------------
# Each pinned by MPIR_CVAR_<OP>_INTRA_ALGORITHM (MPI_Reduce_scatter_block reads MPIR_CVAR_REDUCE_SCATTER_BLOCK_...;
# the values of MPICH 5.0.2's libmpi) with the device's own collectives off, as above, and modelled by the
# operation's schedule algorithm of that name (model_tree names it). Not modelled, so not pinned: allreduce tree,
# recursive_multiplying, k_reduce_scatter_allgather, recexch; allgather k_brucks, recexch_*; alltoall k_brucks,
# pairwise_sendrecv_replace; reduce_scatter_block noncommutative, recursive_doubling; reduce smp.
_SCHEDULE_CVARS = {
    "reduce": (
        "MPIR_CVAR_REDUCE_INTRA_ALGORITHM",
        {"binomial": "binomial", "reduce_scatter_gather": "reduce_scatter_gather"},
    ),  # fmt: skip
    "allreduce": (
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
        {
            "recursive_doubling": "recursive_doubling",
            "reduce_scatter_allgather": "reduce_scatter_allgather",
            "ring": "ring",
        },
    ),  # fmt: skip
    "allgather": (
        "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM",
        {"recursive_doubling": "recursive_doubling", "brucks": "brucks", "ring": "ring"},
    ),  # fmt: skip
    "reduce_scatter": (
        "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM",
        {"recursive_halving": "recursive_halving", "pairwise": "pairwise"},
    ),  # fmt: skip
    "alltoall": (
        "MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM",
        {"brucks": "brucks", "pairwise": "pairwise", "scattered": "scattered"},
    ),  # fmt: skip
}


# MPICH's own MPI_Init calls MPIR_Allreduce on a few elements (MPIDI_Comm_set_vcis): pinned to an algorithm that
# cannot run there (reduce_scatter_allgather: fewer elements than the largest power of two <= p) with
# MPIR_CVAR_COLLECTIVE_FALLBACK=error, MPI_Init fails (MPICH 5.0.2, 2 ranks). Such an algorithm falls back silently
# (to auto) instead; the model refuses the sizes where it does not run, so those rows get no prediction.
_SILENT_FALLBACK = frozenset({("allreduce", "reduce_scatter_allgather")})


def _pinned_schedules(op: str) -> tuple[NativeAlgorithm, ...]:
    """``op``'s algorithms hnow models, each pinned by its control variable and selected in a selection JSON by
    ``MPIR_<Coll>_intra_<name>`` (``Coll`` from the variable: ``MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM`` ->
    ``Reduce_scatter_block``; none of these reads a parameter)."""
    cvar, algos = _SCHEDULE_CVARS[op]
    coll = cvar.removeprefix("MPIR_CVAR_").removesuffix("_INTRA_ALGORITHM").capitalize()
    out = []
    for name, model in algos.items():
        fallback = "silent" if (op, name) in _SILENT_FALLBACK else "error"
        env = {cvar: name, **_MPICH_COMMON, "MPIR_CVAR_COLLECTIVE_FALLBACK": fallback}
        out.append(NativeAlgorithm(name, env, model, leaf={f"algorithm=MPIR_{coll}_intra_{name}": {}}))
    return tuple(out)


# ch4's composition alpha of allreduce and of reduce (MPIDI_{Allreduce,Reduce}_intra_composition_alpha,
# ch4_coll_impl.h): a shared-memory reduce on each host to its leader, the netmod's allreduce / reduce over the
# leaders (MPIR's auto selection for a child communicator of that many leaders: .defaults), then a shared-memory bcast
# on each host (allreduce) or a send from rank 0 to a root other than rank 0 (reduce): .compositions, the host levels
# modelled as binomial (release_gather is no tree: the approximation bcast's alpha makes). MPICH's default on a
# node-aware communicator (its ch4 table, a commutative op): allreduce alpha at every size, reduce alpha above 2048 B.
# Pinned by MPIR_CVAR_<COLL>_COMPOSITION=1 with the device collectives on for every call; the leaders' level is MPIR's
# auto selection (MPIR_CVAR_<COLL>_INTRA_ALGORITHM=auto). No selection file names a composition: pinned_only.
def _alpha(coll: str, rule) -> NativeAlgorithm:
    """``composition:alpha`` of ``coll`` (``ALLREDUCE``, ``REDUCE``), modelled per hosts and size by ``rule``."""
    env = {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "all",
        f"MPIR_CVAR_{coll}_COMPOSITION": "1",
        f"MPIR_CVAR_{coll}_INTRA_ALGORITHM": "auto",
        "MPIR_CVAR_COLLECTIVE_FALLBACK": "error",
    }
    return NativeAlgorithm("composition:alpha", env, "by hosts", per_layout=rule)


_COMPOSITIONS: Mapping[str, tuple[NativeAlgorithm, ...]] = MappingProxyType(
    {
        "allreduce": (_alpha("ALLREDUCE", allreduce_alpha_run),),
        "reduce": (_alpha("REDUCE", reduce_alpha_run),),
    }
)


def _default(op: str) -> NativeAlgorithm:
    """MPICH's own choice (its ``MPIR_CVAR_<OP>_INTRA_ALGORITHM`` unset, i.e. ``auto``: the built-in selection
    JSON of ``MPIR_Csel``, :mod:`.defaults`), with the device's collectives off: what ``--tree native`` runs for
    ``op``, modelled size by size."""
    cvar = _SCHEDULE_CVARS[op][0]
    return NativeAlgorithm("default", dict(_MPICH_COMMON), "by size", by_size=_defaults.RULES[op], unset=(cvar,))


#: MPICH's algorithms by operation. Scatter and gather: binomial only (their ch4 composition alpha is the netmod's
#: call on the whole communicator, MPIR's binomial: the pinned entries). MPIR_Gather_intra_binomial: blocking receives
#: from rank+1, +2, +4, ...; a relay sends its block and the received ones as one struct datatype, which moves only
#: into a posted receive (docs/native-algorithms.md).
_OWN: Mapping[str, OpAlgorithms] = MappingProxyType(
    {
        # MPIR_Bcast_intra_tree: a rank receives from its parent, then sends to its children in the tree's order
        "bcast": OpAlgorithms(
            _mpich("MPIR_CVAR_BCAST_INTRA_ALGORITHM"),
            _MPICH_BCAST_TREES,
            pinned_only=(_MPICH_ALPHA_BCAST, _MPICH_DEFAULT_BCAST),
        ),
        "scatter": OpAlgorithms(_mpich("MPIR_CVAR_SCATTER_INTRA_ALGORITHM", Schedule(root_copy=True))),
        "gather": OpAlgorithms(
            _mpich(
                "MPIR_CVAR_GATHER_INTRA_ALGORITHM",
                Schedule(root_copy=True, recv_order="smallest_first", relay_waits=True),
            )
        ),
        # MPICH's default (auto: no leaf, it is what the selection table says) and the algorithms hnow models,
        # pinned by the environment or selected by a selection-JSON leaf (what hnow export chooses among); ch4's
        # composition alpha of allreduce and reduce pinned by the environment only
        **{op: OpAlgorithms(_default(op), _pinned_schedules(op), _COMPOSITIONS.get(op, ())) for op in _SCHEDULE_CVARS},
    }
)


def _ch4_run(op: str, layout: Sequence[str], size: int) -> tuple[str, Schedule] | None:
    """What MPICH runs for ``op`` with nothing pinned and its device collectives on (its defaults as users run it):
    the ch4 device's table (read from ``libmpi``: :attr:`.selection.DefaultTable.ch4`) picks a composition for the
    communicator (node-aware where a host has several ranks); :func:`.ch4.composition_model` says which of
    MPICH's algorithms runs its steps (MPIR's own selection, ``native:default``, or ``composition:alpha``); None
    where hnow does not model it (one host: the shared-memory layer's own collectives)."""
    n, hierarchy = len(layout), comm_hierarchy(hosts_of(layout).tolist())
    if n > 1 and hierarchy == "node":
        return None
    comp = composition(_selection.default_table().ch4, op, n, int(size), hierarchy)
    model = MPIR if comp is None else composition_model(op, comp)
    own = _OWN[op]
    want = "default" if model == MPIR else model
    nat = next((a for a in (own.native, *own.pinned_only) if a is not None and a.algorithm == want), None)
    if nat is None and model == MPIR:  # scatter, gather: MPICH's only algorithm (binomial) is its default
        nat = own.native
    return None if nat is None else nat.on(layout, int(size))


def _ch4_default(op: str, cvar: str) -> NativeAlgorithm:
    """``native:ch4``: MPICH's default for ``op`` as users run it (nothing pinned, the device collectives on:
    ``MPIR_CVAR_DEVICE_COLLECTIVES=percoll``), modelled per hosts and size by :func:`_ch4_run`. No file selects it
    (pinned only); ``cvar`` (the operation's ``..._INTRA_ALGORITHM``) and its ``..._COMPOSITION`` must be unset."""
    coll = cvar.removeprefix("MPIR_CVAR_").removesuffix("_INTRA_ALGORITHM")
    env = {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll", "MPIR_CVAR_COLLECTIVE_FALLBACK": "silent"}
    unset = (cvar, f"MPIR_CVAR_{coll}_COMPOSITION", f"MPIR_CVAR_{coll}_DEVICE_COLLECTIVE")
    return NativeAlgorithm("ch4", env, "by size", unset=unset, per_layout=partial(_ch4_run, op))


def _pin_cvar(op: str) -> str:
    """``op``'s ``MPIR_CVAR_<COLL>_INTRA_ALGORITHM``."""
    return _SCHEDULE_CVARS[op][0] if op in _SCHEDULE_CVARS else f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM"


#: MPICH's algorithms by operation, each with ``native:ch4`` (its default as users run it) among the pinned ones.
ALGORITHMS: Mapping[str, OpAlgorithms] = MappingProxyType(
    {
        op: replace(algos, pinned_only=(*algos.pinned_only, _ch4_default(op, _pin_cvar(op))))
        for op, algos in _OWN.items()
    }
)
