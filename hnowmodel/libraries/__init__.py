"""The MPI libraries hnow knows, one package each: :data:`LIBRARIES` (name -> :class:`Library`).

A library's package holds everything hnow knows about it: its algorithms and how each is pinned
(``<package>.algorithms``: :class:`~hnowmodel.libraries.native.NativeAlgorithm` s by operation, its default's selection
logic), its tuning-file format (MPICH's selection JSON: :mod:`hnowmodel.libraries.mpich.selection`; Open MPI's fixed
rules and rules file: :mod:`hnowmodel.libraries.openmpi.fixed`, :mod:`hnowmodel.libraries.openmpi.rules`; Intel MPI's
``I_MPI_ADJUST_*`` strings: :mod:`hnowmodel.libraries.intelmpi.adjust`) and its export backend (``<package>.export``,
with its :class:`~hnowmodel.export.choose.LibraryFormat` as ``FORMAT``). The operation registry (:mod:`hnowmodel.ops`)
reads each operation's algorithms from here (:func:`natives`), the export (:mod:`hnowmodel.export`) each library's
format (:attr:`Library.export`). Adding a library is one package and one entry here. How a library is *launched* (its
``mpiexec``, environment, hostfile) is :mod:`hnowmodel.jobs.mpienv`'s.

Layers: the packages (their algorithms, file formats) are in the model's layer (L3, beside :mod:`hnowmodel.ops`);
each one's ``export`` module is in the export's (L5: ``hnowmodel.libraries.*.export``).

>>> list(LIBRARIES)
['MPICH', 'Open MPI', 'Intel MPI']
>>> [a.algorithm for a in natives("scatter")["alternatives"]["Open MPI"]]
['basic_linear', 'linear_nb']
>>> LIBRARIES["Open MPI"].rendezvous_from_bytes, LIBRARIES["MPICH"].rendezvous_from_bytes
(65536, None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from ..mpi_programs import library_name
from ..params import Profile
from .intelmpi import algorithms as _intelmpi
from .mpich import algorithms as _mpich
from .native import NativeAlgorithm, OpAlgorithms
from .openmpi import algorithms as _openmpi

__all__ = ["Library", "LIBRARIES", "natives", "NativeAlgorithm", "OpAlgorithms", "run_by"]


@dataclass(frozen=True)
class Library:
    """One MPI library: ``name`` (as :attr:`hnowmodel.ops.Operation.native` and ``hm.measure`` results name it),
    ``package`` (its package under :mod:`hnowmodel.libraries`), ``algorithms`` (operation -> its
    :class:`OpAlgorithms`; an operation it has none for is left out), ``summary`` (the versions hnow's knowledge
    of it was checked against), ``rendezvous_from_bytes`` (from which size, bytes, its messages between hosts wait
    for their receive, where that is fixed by the library and known: :func:`run_by`; None: whatever the profile's
    calibration found) and :attr:`export` (the module of its export backend, whose ``FORMAT``
    :mod:`hnowmodel.export` lists: named, not imported, since it sits in a layer above)."""

    name: str
    package: str
    algorithms: Mapping[str, OpAlgorithms]
    summary: str = ""
    rendezvous_from_bytes: int | None = None

    @property
    def export(self) -> str:
        """The dotted name of the library's export backend module (``<package>.export``)."""
        return f"{self.package}.export"


#: Every MPI library hnow pins and exports for, in the order they are listed everywhere (natives, formats).
LIBRARIES: Mapping[str, Library] = MappingProxyType(
    {
        "MPICH": Library("MPICH", "hnowmodel.libraries.mpich", _mpich.ALGORITHMS, "MPICH 5.0.x, ch4"),
        "Open MPI": Library(
            "Open MPI",
            "hnowmodel.libraries.openmpi",
            _openmpi.ALGORITHMS,
            "Open MPI 5.0.x, coll/tuned and coll/han",
            _openmpi.OMPI_TCP_RENDEZVOUS_FROM_BYTES,
        ),
        "Intel MPI": Library("Intel MPI", "hnowmodel.libraries.intelmpi", _intelmpi.ALGORITHMS, "Intel MPI 2021.16"),
    }
)


def natives(op: str) -> dict[str, Any]:
    """Every library's algorithms for ``op`` as the operation registry's fields: ``native``, ``alternatives`` and
    ``pinned_only`` (library name -> what it has; a library without any for ``op`` is left out of each)."""
    got = [(name, lib.algorithms[op]) for name, lib in LIBRARIES.items() if op in lib.algorithms]
    return {
        "native": {name: a.native for name, a in got if a.native is not None},
        "alternatives": {name: a.alternatives for name, a in got if a.alternatives},
        "pinned_only": {name: a.pinned_only for name, a in got if a.pinned_only},
    }


def run_by(profile: Profile, library: str) -> Profile:
    """``profile`` as ``library`` runs over it: a profile calibrated under another library (its provenance's
    ``mpi_library`` names that one) carries that library's protocol (MPICH's eager limit: 660 KB and more over
    TCP), which is not ``library``'s; where ``library`` fixes its own (:attr:`Library.rendezvous_from_bytes`, Open
    MPI's 64 KiB over TCP) that one replaces it. A profile calibrated under ``library``, one that names no library,
    and a library without a fixed protocol: ``profile`` as it is.

    >>> from hnowmodel.params import paper_profile
    >>> p = replace(paper_profile(), provenance={"mpi_library": "MPICH Version: 5.0.2"})
    >>> run_by(p, "Open MPI").rendezvous_from_bytes, run_by(p, "MPICH").rendezvous_from_bytes
    (65536, None)
    """
    own = LIBRARIES[library].rendezvous_from_bytes if library in LIBRARIES else None
    calibrated = str((profile.provenance or {}).get("mpi_library", ""))
    if own is None or not calibrated or library_name(calibrated) == library:
        return profile
    return replace(profile, rendezvous_from_bytes=own)
