"""Put a choice to work: the files MPI libraries and launchers read so that a native collective runs its fastest.

Two things can be chosen and exported.

**The rank order** (:func:`export_order`). A native algorithm (MPICH's binomial, say) fixes the tree by rank
number; which node gets which rank decides its time. From a profile that records where each rank ran (``nodes``:
rank, host, type), it finds the rank order under which ``op`` over the native tree is predicted fastest
(:func:`hnowmodel.search.rank_order`), in each launcher's terms:

* ``hostfile`` — MPICH's hydra (``mpiexec -f hostfile``): one ``host:1`` line per rank, in the new rank order
  (one ``host:SLOTS`` line per host when ranks share hosts: the order then moves whole hosts);
* ``rankfile`` — Open MPI (``mpirun --map-by rankfile:file=rankfile``): ``rank N=host slot=S``;
* ``keys`` — JSON ``{"keys": [...]}``: ``MPI_Comm_split(comm, 0, keys[rank])`` reorders an already running job.

**MPICH's algorithm per operation and message size** (:func:`choose_mpich`, format ``mpich-json``:
:mod:`hnowmodel.libraries.mpich.export`). For each operation and size, every algorithm MPICH can be told to run that
hnow models (:func:`hnowmodel.ops.native_choices`: bcast binomial, ``MPIR_Bcast_intra_tree`` kary / knomial_1 /
knomial_2 with k = 2..8; scatter and gather binomial only; the operations whose algorithms are message schedules
by their ``MPIR_CVAR_<OP>_INTRA_ALGORITHM`` names; Open MPI's rules file writes those too, by tuned's algorithm
numbers) is predicted under the profile's default variant,
and the fastest is chosen; adjacent sizes with the same choice become one range (``avg_msg_size<=N``, or
``total_msg_size<=p·N`` where MPICH selects by it, a range ending at its largest size).
``mpich-coll.json`` is MPICH's own default table (read from the installed ``libmpi``:
:mod:`hnowmodel.libraries.mpich.selection`) with the choices put in for a communicator of exactly that many ranks; sizes
above the largest one asked for, other communicator sizes, and sizes where the library's default is an algorithm hnow
does not model (e.g. a ch4 composition whose leaders run a scatter + allgather) keep the library's default.
``mpich-env.txt`` has the settings that make MPICH use it.

**Open MPI's algorithm per operation and message size** (:func:`choose_ompi`, format ``ompi-rules``:
:mod:`hnowmodel.libraries.openmpi.export`). The same choice among what Open MPI's coll/tuned can be told to run by a
rules file (bcast basic_linear, pipeline, chain with 1..8 chains, binary_tree, binomial, knomial with the default radix
4; scatter and gather basic_linear and binomial; reduce, allreduce, allgather, reduce_scatter and alltoall: tuned's
modelled algorithms, :mod:`hnowmodel.libraries.openmpi.tuned`; no segmentation), against what Open MPI's fixed rules
run there
(:mod:`hnowmodel.libraries.openmpi.rules`). ``ompi-rules.conf`` (Open MPI 5.0.x's text format, checked as Open MPI reads
it, which otherwise drops a bad file without a word) changes communicators of exactly that many ranks and hands every
other case - sizes above the largest one asked for, other communicator sizes, sizes where the default is kept - back to
the fixed rules (algorithm 0). ``ompi-env.txt`` has the settings that make Open MPI use it.

**Intel MPI's algorithm per operation and message size** (:func:`choose_impi`, format ``impi-env``:
:mod:`hnowmodel.libraries.intelmpi.export`). ``I_MPI_ADJUST_BCAST/SCATTER/GATHER`` strings (``ALG:FROM-TO@NP-NP`` rules)
among the Intel MPI algorithms hnow models, against Intel MPI's own choice (its tuning file, which hnow does not read:
kept, with a note). ``impi-env.txt`` has the settings.

All are one chooser (:func:`.choose.choose`) over a small per-library backend (:class:`.choose.Backend`: the
candidates, the library's default, the leaf for an algorithm, rendering and reading back its file);
:data:`LIBRARY_FORMATS` lists each library's format for :func:`export`, from each library's package
(:data:`hnowmodel.libraries.LIBRARIES`: ``hnowmodel/libraries/<lib>/export.py``, its ``FORMAT``). The package, by
idea: :mod:`.files` (:class:`Export`, :data:`FORMATS`, :func:`write_export`), :mod:`.order`, :mod:`.choose` (the
chooser, the backend protocol, :class:`~.choose.LibraryFormat`), :mod:`.make` (:func:`export`).

>>> from hnowmodel.params import Profile, paper_profile
>>> doc = paper_profile().to_dict()
>>> doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(
...     [("n1", "fast"), ("n2", "fast"), ("n3", "slow"), ("n4", "slow")])]
>>> ex = export_order(Profile.from_dict(doc), op="bcast", size=0)
>>> ex.files["hostfile"].split(), round(ex.order.gain_pct, 1)
(['n1:1', 'n3:1', 'n2:1', 'n4:1'], 14.0)
"""

from __future__ import annotations

from ..lazy import lazy_names as _lazy_names

#: Where each name of this package is defined, imported on first use (PEP 562). Each library's export backend
#: imports :mod:`.choose` (and so this package), and :mod:`.files` imports every backend: importing a backend first
#: must not run into this package importing it back.
_LAZY = {
    "NativeChoice": ".choose",
    **dict.fromkeys(("FOLDER", "FORMATS", "ORDER_FORMATS", "Export", "write_export"), ".files"),
    **dict.fromkeys(("LIBRARY_FORMATS", "AlgorithmRequest", "export"), ".make"),
    "export_order": ".order",
    **dict.fromkeys(("adjust_runs", "parse_adjust"), "..libraries.intelmpi.adjust"),
    **dict.fromkeys(("ImpiSelection", "choose_impi", "impi_env_text"), "..libraries.intelmpi.export"),
    **dict.fromkeys(("MpichSelection", "choose_mpich", "mpich_env_text"), "..libraries.mpich.export"),
    **dict.fromkeys(
        ("OMPI_RULES_FORMAT", "OmpiSelection", "choose_ompi", "ompi_env_text"), "..libraries.openmpi.export"
    ),
}


__all__ = [
    "Export",
    "export",
    "export_order",
    "AlgorithmRequest",
    "LIBRARY_FORMATS",
    "FORMATS",
    "ORDER_FORMATS",
    "FOLDER",
    "write_export",
    "NativeChoice",
    "MpichSelection",
    "choose_mpich",
    "mpich_env_text",
    "OmpiSelection",
    "OMPI_RULES_FORMAT",
    "choose_ompi",
    "ompi_env_text",
    "ImpiSelection",
    "choose_impi",
    "impi_env_text",
    "parse_adjust",
    "adjust_runs",
]

__getattr__, __dir__ = _lazy_names(__name__, {n: (m, n) for n, m in _LAZY.items()}, __all__, globals())
