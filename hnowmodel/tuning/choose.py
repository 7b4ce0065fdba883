"""Tuning one job shape for one MPI library (:func:`tune_shape`): what :func:`hnowmodel.export.export` chooses for
the shape, and the rank order that pays most.

Every operation the library's file selects is chosen for: the tree operations (bcast, scatter, gather: trees
run them) and those whose algorithms are message schedules (allreduce, alltoall, ...; a reduction from the profile's
reduction cost γ).

The profile is applied to the shape as if it had been calibrated there (:func:`~.shapes.shape_profile`: the costs are
per node type), and the export chooses, per operation and size, the library's fastest algorithm against its default. The
rank order is chosen among the launched one (ranks fill the shape's hosts in order) and, for each tree operation, the
order :func:`hnowmodel.export.export_order` finds for the library's default algorithm at the largest size; the order
kept is the one whose choices gain most over the library's default *as launched*, in the mean over every operation and
size (one order serves a whole job). No MPI runs here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import ops as _ops
from ..errors import HnowError
from ..export import AlgorithmRequest, Export, export
from ..export.choose import KEEP_DEFAULT_WITHIN, LibraryFormat
from ..params import Profile
from .shapes import Shape, shape_profile
from .why import explain

__all__ = ["TuneRow", "ShapeTuning", "tune_shape", "gain_pct"]

#: Launched order (no reordering).
LAUNCHED = "launched"


def gain_pct(base: float | None, new: float | None) -> float | None:
    """How much less time ``new`` takes than ``base``, in % of ``base`` (None when either is unknown).

    >>> gain_pct(200.0, 150.0), gain_pct(None, 1.0)
    (25.0, None)
    """
    if base is None or new is None or not base > 0:
        return None
    return 100.0 * (base - new) / base


@dataclass(frozen=True)
class TuneRow:
    """One operation at one size on one shape for one library: the library's ``default`` as launched and the
    ``chosen`` algorithm in the tuned order (``order``), their predicted µs and the predicted gain (% of the
    default's time). With ``--verify``, the measured µs (medians) of both, the measured gain and its spread (the
    gain between the repetitions' extremes: ``[100·(default_min − tuned_max)/default_min, 100·(default_max −
    tuned_min)/default_max]``), and ``slower``: the choice measured slower than the default. ``why``: the model
    terms that decide the choice (:func:`~.why.explain`)."""

    shape: str
    library: str
    op: str
    size: int
    ranks: int
    hosts: int
    default: str
    chosen: str
    default_us: float | None
    chosen_us: float | None
    predicted_gain_pct: float | None
    order: str
    measured_default_us: float | None = None
    measured_tuned_us: float | None = None
    measured_gain_pct: float | None = None
    measured_gain_min_pct: float | None = None
    measured_gain_max_pct: float | None = None
    slower: bool | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "library": self.library,
            "op": self.op,
            "size": self.size,
            "ranks": self.ranks,
            "hosts": self.hosts,
            "default": self.default,
            "chosen": self.chosen,
            "default_us": self.default_us,
            "chosen_us": self.chosen_us,
            "predicted_gain_pct": self.predicted_gain_pct,
            "order": self.order,
            "measured_default_us": self.measured_default_us,
            "measured_tuned_us": self.measured_tuned_us,
            "measured_gain_pct": self.measured_gain_pct,
            "measured_gain_min_pct": self.measured_gain_min_pct,
            "measured_gain_max_pct": self.measured_gain_max_pct,
            "slower": self.slower,
            "why": self.why,
        }


@dataclass(frozen=True)
class ShapeTuning:
    """What one shape gets for one library: the export (the library's file and settings, ``hostfile`` and
    ``rankfile`` in the tuned order; paths say :data:`hnowmodel.export.FOLDER`), the order (``perm[i]``: the
    launched rank that becomes rank ``i``; ``order``: what it was chosen for, or ``launched``) and the rows."""

    shape: Shape
    fmt: LibraryFormat
    export: Export
    perm: tuple[int, ...]
    order: str
    rows: tuple[TuneRow, ...]

    @property
    def reordered(self) -> bool:
        """True when the tuned order is not the launched one."""
        return self.perm != tuple(range(len(self.perm)))

    @property
    def hosts_in_order(self) -> tuple[str, ...]:
        """The host of each rank in the tuned order."""
        hosts = self.shape.rank_hosts
        return tuple(hosts[r] for r in self.perm)


def _rows(ex: Export, fmt: LibraryFormat) -> Sequence[Any]:
    return ex.selections[fmt.key].rows


def _order_tree(prof: Profile, library: str, op: str, default: str, size: int) -> str:
    """The tree of ``library``'s default algorithm ``default`` for ``op`` at ``size`` bytes (the rank order is
    chosen for it); binomial where that algorithm is not modelled (as ``experiments/export_gain.py`` does)."""
    nat = next((a for a in _ops.native_algorithms(op, library) if a.algorithm == default), None)
    if nat is None:
        return "binomial"
    lay = prof.host_layout or prof.layout
    return nat.tree_on(lay, size) or nat.model_tree


def _score(rows: Sequence[Any], base: dict[tuple[str, int], float | None]) -> float:
    """The mean predicted gain (%) of ``rows``' choices over the launched defaults ``base`` (rows without one
    count 0)."""
    gains = [gain_pct(base[(r.op, r.size_bytes)], r.chosen_us) for r in rows]
    return sum(g or 0.0 for g in gains) / max(len(gains), 1)


def _slows_any(rows: Sequence[Any], base: dict[tuple[str, int], float | None]) -> bool:
    """Whether a row of ``rows`` is predicted slower than its launched default ``base`` by more than the export's
    margin (:data:`~hnowmodel.export.choose.KEEP_DEFAULT_WITHIN`).

    >>> from types import SimpleNamespace as R
    >>> _slows_any([R(op="reduce", size_bytes=8, chosen_us=103.0)], {("reduce", 8): 100.0})
    True
    """
    limit = -100.0 * KEEP_DEFAULT_WITHIN
    return any((gain_pct(base[(r.op, r.size_bytes)], r.chosen_us) or 0.0) < limit for r in rows)


def _launched_files(ex: Export, shape: Shape) -> Export:
    """``ex`` with the launched order's hostfile and rankfile (ranks fill the hosts in order)."""
    hosts = shape.rank_hosts
    slot: dict[str, int] = {}
    lines = []
    for i, h in enumerate(hosts):
        lines.append(f"rank {i}={h} slot={slot.get(h, 0)}")
        slot[h] = slot.get(h, 0) + 1
    files = {"hostfile": shape.hostfile(), "rankfile": "\n".join(lines) + "\n", **ex.files}
    return replace(ex, files=files)


def tune_shape(
    profile: Profile,
    shape: Shape,
    fmt: LibraryFormat,
    ops: Sequence[str],
    sizes: Sequence[int],
    *,
    reorder: bool = True,
) -> ShapeTuning:
    """The tuned settings of ``fmt``'s library for ``ops`` at ``sizes`` (bytes per rank) on ``shape``: the
    algorithm per operation and size and the rank order (``reorder=False``: the launched order), with one
    :class:`TuneRow` per operation and size."""
    prof = shape_profile(profile, shape)
    req = AlgorithmRequest(ops=list(ops), sizes=list(sizes))
    plain = export(prof, [fmt.format], algorithms=req)
    base = {(r.op, r.size_bytes): r.default_us for r in _rows(plain, fmt)}
    best: tuple[float, Export, str] = (_score(_rows(plain, fmt), base), plain, LAUNCHED)
    top = max(sizes)
    for op in ops if reorder else ():
        if _ops.get(op).movement is None:  # the rank order search runs over trees; its order is scored on every op
            continue
        dflt = next(r.default for r in _rows(plain, fmt) if r.op == op and r.size_bytes == top)
        tree = _order_tree(prof, fmt.library, op, dflt, top)
        try:
            ex = export(prof, ["hostfile", "rankfile", fmt.format], op=op, size=top, tree=tree, algorithms=req)
        except HnowError:  # no rank order search for this operation's algorithm (not a tree): the others may have one
            continue
        score = _score(_rows(ex, fmt), base)
        # ties keep the launched order (nothing to move), and so does an order that makes a row slower than its
        # launched default (one order serves every operation: none may lose for another's gain)
        if score > best[0] + 1e-9 and not _slows_any(_rows(ex, fmt), base):
            best = (score, ex, f"{op} of {top} B over {tree}")
    _, ex, order = best
    if ex.order is None:
        ex, perm = _launched_files(ex, shape), tuple(range(shape.ranks))
    else:
        perm = tuple(int(r) for r in ex.order.perm)
    defaults = {(r.op, r.size_bytes): r for r in _rows(plain, fmt)}
    rows = tuple(
        TuneRow(
            shape.label,
            fmt.library,
            r.op,
            r.size_bytes,
            shape.ranks,
            len(shape.hosts),
            defaults[(r.op, r.size_bytes)].default,
            r.chosen,
            base[(r.op, r.size_bytes)],
            r.chosen_us,
            gain_pct(base[(r.op, r.size_bytes)], r.chosen_us),
            order,
        )
        for r in _rows(ex, fmt)
    )
    whys = explain(prof, fmt.library, ex, rows)
    rows = tuple(replace(r, why=whys.get((r.op, r.size), "")) for r in rows)
    return ShapeTuning(shape, fmt, ex, perm, order, rows)
