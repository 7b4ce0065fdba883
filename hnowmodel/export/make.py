"""Every file of the formats asked for in one :class:`~hnowmodel.export.files.Export` (:func:`export`): the rank
order formats, then each MPI library's algorithm selection (:data:`LIBRARY_FORMATS`: one entry per library, from
its package's export backend)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import ops as _ops
from ..errors import InputError
from ..params import Profile
from .choose import LibraryFormat
from .files import FOLDER, FORMATS, LIBRARY_FORMATS, ORDER_FORMATS, Export
from .order import export_order

__all__ = ["AlgorithmRequest", "LibraryFormat", "LIBRARY_FORMATS", "export"]


@dataclass(frozen=True)
class AlgorithmRequest:
    """What the algorithm selection formats (``mpich-json``, ``ompi-rules``, ``impi-env``) are chosen for: ``ops``
    (default all three), ``sizes`` (bytes per rank; default the rank order's ``size``), ``layout`` (one type per
    rank; default the profile's) and ``libmpi`` (the MPICH library whose default table to start from; default
    :func:`hnowmodel.libraries.mpich.selection.find_libmpi`)."""

    ops: Sequence[str] | None = None
    sizes: Sequence[int] | None = None
    layout: Sequence[str] | None = None
    libmpi: str | Path | None = None


def _formats(formats: Sequence[str], layout: Sequence[str] | None) -> list[str]:
    fmts = list(dict.fromkeys(formats))
    for f in fmts:
        if f not in FORMATS:
            raise InputError(f"unknown --format {f!r} (choose from: {', '.join(FORMATS)})")
    if not fmts:
        raise InputError(f"--format: give at least one of {', '.join(FORMATS)}")
    if layout is not None and any(f in ORDER_FORMATS for f in fmts):
        raise InputError(
            "--layout: the rank order formats use the profile's nodes (rank, host, type); give --layout with "
            "--format mpich-json, ompi-rules or impi-env alone"
        )
    return fmts


def _check_ops(order_op: str | None, ops: Sequence[str], libs: Sequence[LibraryFormat]) -> None:
    """Refuse, in one line, an operation a format asked for does not write: a rank order is chosen for a tree
    operation (``order_op``), a library's selection writes the message schedule operations (allreduce, ...) only
    when its backend says so (:attr:`LibraryFormat.schedules`: MPICH's and Open MPI's)."""
    if order_op is not None and _ops.get(order_op).movement is None:
        raise InputError(f"export of {order_op}: not yet supported for a rank order (it is chosen over trees)")
    for o in ops:
        if _ops.get(o).movement is None:
            for lib in libs:
                if not lib.schedules:
                    raise InputError(f"export of {o}: not yet supported for --format {lib.format}")


def export(
    profile: Profile,
    formats: Sequence[str] = ORDER_FORMATS,
    *,
    op: str = "bcast",
    size: int = 0,
    tree: str = "binomial",
    algorithms: AlgorithmRequest | None = None,
) -> Export:
    """Every file of ``formats`` (:data:`FORMATS`) in one :class:`Export`: the rank order formats from
    :func:`export_order` (``op``, ``size``, ``tree``; the profile's ``nodes``), and each library's algorithm
    selection (:data:`LIBRARY_FORMATS`: ``mpich-json`` from :func:`choose_mpich`, ``ompi-rules`` from
    :func:`choose_ompi`, ``impi-env`` from :func:`choose_impi`) for ``algorithms`` (:class:`AlgorithmRequest`).
    With a rank order too, the algorithms are chosen for the ranks in the exported order, as they will run."""
    req = AlgorithmRequest() if algorithms is None else algorithms
    fmts = _formats(formats, req.layout)
    want_order = [f for f in fmts if f in ORDER_FORMATS]
    _check_ops(
        op if want_order else None, req.ops or (), [lib for lib in LIBRARY_FORMATS.values() if lib.format in fmts]
    )
    # the order is chosen for the algorithm as the library whose selection goes with it runs it (MPICH's alone)
    library = next((lib.library for lib in LIBRARY_FORMATS.values() if lib.format in fmts), "MPICH")
    ex = export_order(profile, op=op, size=size, tree=tree, library=library) if want_order else None
    files = {f: ex.files[f] for f in want_order} if ex else {}
    usage = ex.usage if ex else ""
    layout, hosts = req.layout, None
    if ex is not None:
        types = [nd["type"] for nd in sorted(profile.nodes, key=lambda nd: nd.get("rank", 0))]
        own = profile.host_layout
        # the ranks in the exported order, keeping their hosts where the profile tells hosts apart
        layout = (
            own.take(ex.order.perm) if own is not None and not own.one_per_host else [types[r] for r in ex.order.perm]
        )
        hosts = [ex.hosts[r] for r in ex.order.perm]
    op_list = _ops.tree_names() if req.ops is None else req.ops
    size_list = [size] if req.sizes is None else req.sizes
    selections: dict[str, Any] = {}
    for lib in LIBRARY_FORMATS.values():
        if lib.format not in fmts:
            continue
        sel = lib.choose(profile, layout, op_list, size_list, hosts, req)
        path = f"{FOLDER}/{FORMATS[lib.format]}"
        order_path = f"{FOLDER}/{FORMATS[lib.order_format]}" if lib.order_format in files else None
        files[lib.format], files[lib.env], text, extra = lib.files(sel, path, order_path)
        files.update(extra)
        usage += ("In that rank order:\n" if ex else "") + text
        selections[lib.key] = sel
    return Export(ex.order if ex else None, ex.hosts if ex else (), files, usage, op, size, tree, selections)
