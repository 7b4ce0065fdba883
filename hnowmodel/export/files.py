"""What an export made (:class:`Export`: the files' texts, how to use them, what they were made from), the formats
and their file names (:data:`FORMATS`; each MPI library's from its package: :data:`LIBRARY_FORMATS`), and writing
them into a folder (:func:`write_export`)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..io import atomic_write, check_output
from ..libraries import LIBRARIES
from ..search.rank_order import RankOrder
from .choose import LibraryFormat

__all__ = ["FORMATS", "ORDER_FORMATS", "FOLDER", "FILE_NAMES", "LIBRARY_FORMATS", "Export", "write_export"]


def _library_formats() -> Mapping[str, LibraryFormat]:
    """Each library's ``FORMAT`` from its export backend (:attr:`hnowmodel.libraries.Library.export`: named in the
    registry, which sits a layer below the backends), in registry order, by format name."""
    found = (importlib.import_module(lib.export).FORMAT for lib in LIBRARIES.values())
    return MappingProxyType({f.format: f for f in found})


#: Each MPI library's algorithm selection format, in the order :func:`hnowmodel.export.export` writes them.
LIBRARY_FORMATS: Mapping[str, LibraryFormat] = _library_formats()
#: The formats that carry a rank order (from :func:`hnowmodel.export.export_order`).
ORDER_FORMATS = ("hostfile", "rankfile", "keys")
#: What :func:`hnowmodel.export.export` writes: format name -> file name (``mpich-json`` also writes
#: ``mpich-env.txt``, ``ompi-rules`` ``ompi-env.txt``: :data:`FILE_NAMES`).
FORMATS: Mapping[str, str] = {
    "hostfile": "hostfile",
    "rankfile": "rankfile",
    "keys": "keys.json",
    **{f.format: f.file_name for f in LIBRARY_FORMATS.values()},
}
#: Every file's name by its key in :attr:`Export.files` (a format, or a library's settings file).
FILE_NAMES: Mapping[str, str] = {
    **FORMATS,
    **{f.env: f.env_file_name for f in LIBRARY_FORMATS.values()},
    **{k: name for f in LIBRARY_FORMATS.values() for k, name in f.extra_files.items()},
}
#: Stands for the output folder in texts made before it is known (:meth:`Export.placed` fills it in).
FOLDER = "<DIR>"


@dataclass(frozen=True)
class Export:
    """What :func:`hnowmodel.export.export` made: the files' texts by format (``files``; paths inside them say
    :data:`FOLDER` until :meth:`placed`), ``usage`` (how to use each file), and what they were made from: ``order``
    (a rank order: permutation, split keys, predicted µs before/after; None without an order format) with
    ``hosts[r]`` the host rank r ran on in the profile, and ``selections`` (each library's algorithms chosen, by
    its key in :meth:`to_dict`: ``mpich``, ``ompi``; :attr:`selection` and :attr:`ompi` name them)."""

    order: RankOrder | None
    hosts: tuple[str, ...]
    files: Mapping[str, str]
    usage: str
    op: str
    size: int
    tree: str
    selections: Mapping[str, Any] = field(default_factory=dict)

    @property
    def selection(self) -> Any:
        """MPICH's algorithms (:class:`hnowmodel.export.MpichSelection`); None without ``mpich-json``."""
        return self.selections.get("mpich")

    @property
    def impi(self) -> Any:
        """Intel MPI's algorithms (:class:`hnowmodel.export.ImpiSelection`); None without ``impi-env``."""
        return self.selections.get("impi")

    @property
    def ompi(self) -> Any:
        """Open MPI's algorithms (:class:`hnowmodel.export.OmpiSelection`); None without ``ompi-rules``."""
        return self.selections.get("ompi")

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"op": self.op, "size": self.size, "tree": self.tree}
        if self.order is not None:
            doc.update(self.order.to_dict())
            doc["hosts"] = [self.hosts[r] for r in self.order.perm]
        for key, sel in self.selections.items():
            doc[key] = sel.to_dict()
        doc["files"] = dict(self.files)
        doc["usage"] = self.usage
        return doc

    def placed(self, folder: str | Path) -> Export:
        """The same export with :data:`FOLDER` in its texts replaced by ``folder``'s absolute path."""
        where = str(Path(folder).resolve())
        return replace(
            self,
            files={k: v.replace(FOLDER, where) for k, v in self.files.items()},
            usage=self.usage.replace(FOLDER, where),
        )


def write_export(ex: Export, folder: str | Path, *, force: bool = False) -> dict[str, str]:
    """Write every file of ``ex`` and ``USAGE.txt`` into ``folder`` (refused if it is not empty, unless ``force``),
    with :data:`FOLDER` replaced by the folder's path; returns file key (format, ``mpich-env``, ``ompi-env``,
    ``usage``) -> path."""
    out = check_output(folder, force=force, folder=True)
    out.mkdir(parents=True, exist_ok=True)
    ex = ex.placed(out)
    paths = {key: str(atomic_write(out / FILE_NAMES[key], text)) for key, text in ex.files.items()}
    paths["usage"] = str(atomic_write(out / "USAGE.txt", ex.usage))
    return paths
