"""Measured rows + the model's predictions of the same trees: the rows of ``hm.compare`` (µs, bytes).

:func:`compare_rows` predicts every measured row under its operation's model variant (and, in ``extra``, under
every variant of the operation); ``native`` rows are predicted with the library's pinned algorithm's model tree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .. import ops as _ops
from ..errors import HnowError, InputError
from ..mpi_programs import library_name
from ..params import Profile
from ..report import error_pct
from ..runopts import Schedule
from ..trees import Tree, make_tree
from ..treespec import TreeSet
from .checks import NATIVE
from .results import ComparisonRow, MeasuredRow, Measurement

__all__ = ["compare_rows", "interleaved_rows", "calibration_run"]


def _quietly(fn: Callable[..., float | None], *args: Any) -> float | None:
    """``fn(*args)``, or None where the model cannot predict it (a flow variant on a profile without link rates)."""
    try:
        return fn(*args)
    except HnowError:
        return None


class _Predictions:
    """Predictions of the measured rows, per (operation, tree, variant) over all the rows' sizes at once (a tree
    chosen per row: at its own size), with the common-start term where the row was timed so."""

    def __init__(self, prof: Profile, lay: Sequence[str], m: Measurement, tset: TreeSet, root: int, library: str):
        self.prof, self.lay, self.m, self.tset, self.root, self.library = prof, lay, m, tset, root, library
        self.cache: dict[tuple, dict[int, float] | None] = {}

    def common_start(self, r: MeasuredRow) -> bool:  # the timing style, modelled as used: receive posted with send
        return r.method == "c-common-start" and "common_start" in self.prof.extensions

    def __call__(self, r: MeasuredRow, variant: str) -> float | None:
        tree, schedule = self.tset.tree(r.tree, r.op, r.size), Schedule(common_start=self.common_start(r))
        nat = _ops.native_for(r.tree, r.op, self.library) if tree is None else None
        # a default that runs other trees at other sizes (Intel MPI's tuning file), and a schedule algorithm (which
        # may not run at every size), are predicted size by size
        per_row = r.tree in self.tset.per_row_names or (nat is not None and (nat.varies or not _ops.get(r.op).movement))
        key = (r.op, r.tree, variant, r.size if per_row else None, schedule.common_start)
        if key not in self.cache:
            sizes = [r.size] if per_row else sorted({x.size for x in self.m.rows if (x.op, x.tree) == (r.op, r.tree)})
            if nat is not None:  # native: the algorithm's model tree, run by its schedule
                run = nat.on(self.lay, r.size)
                if run is not None and _ops.get(r.op).schedule_algorithm(run[0]) is not None:
                    tree = run[0]  # the operation's message schedule of that name
                else:
                    tree = None if run is None else make_tree(run[0], len(self.lay), root=self.root, layout=self.lay)
                schedule = replace(nat.schedule if run is None else run[1], common_start=schedule.common_start)
            t = None if tree is None else self._predict(r.op, tree, sizes, variant, schedule)
            self.cache[key] = None if t is None else dict(zip(sizes, (float(v) for v in t), strict=True))
        return None if self.cache[key] is None else self.cache[key][r.size]

    def _predict(self, op: str, tree: Tree | str, sizes: list[int], variant: str, schedule: Schedule) -> Any:
        """``op`` over ``tree`` (or by the schedule algorithm it names: the common-start term added as a tree's
        schedule adds it; a reduction whose profile has no γ: None, :func:`compare_rows` notes it)."""
        if _ops.get(op).schedule_algorithm(tree) is None:  # a tree (a schedule algorithm is a name or an Algorithm)
            return _ops.predict(op, self.prof, self.lay, tree, sizes, variant=variant, schedule=schedule)
        try:
            t = _ops.predict(op, self.prof, self.lay, tree, sizes, variant=variant, root=self.root)
        except InputError:  # no γ in the profile, or the algorithm does not run at these sizes: compare_rows notes it
            return None
        return t + schedule.extra_us(self.prof, sizes)


def _has_reduce_cost(prof: Profile) -> bool:
    """Whether ``prof`` states the reduction cost γ (µs per byte reduced) that a reduction's prediction needs."""
    return prof.has_reduce_cost


def compare_rows(
    prof: Profile,
    lay: Sequence[str],
    m: Measurement,
    trees: TreeSet | Mapping[str, Tree | None],
    variants: Mapping[str, str],
    root: int,
    library: str,
) -> list[ComparisonRow]:
    """Measured rows + predictions of the same tree (``native``: the library's pinned algorithm's model);
    ``trees``: the job's :class:`~hnowmodel.treespec.TreeSet`, or ``{name: Tree or None}``.

    Every row also carries, in ``extra``, the prediction and error of **every** model variant of its operation
    (``predicted_us_by_variant``, ``error_pct_by_variant``), so that the variants can be read side by side."""
    tset = trees if isinstance(trees, TreeSet) else TreeSet.of(trees)
    predicted_by = _Predictions(prof, lay, m, tset, root, library)
    out = []
    for r in m.rows:
        predicted = predicted_by(r, variants[r.op])  # the row's own variant: its errors are the user's to see
        by_variant = {
            v: predicted if v == variants[r.op] else _quietly(predicted_by, r, v) for v in _ops.get(r.op).variants
        }
        note, model_tree = "", ""
        if tset.tree(r.tree, r.op, r.size) is None:
            nat = _ops.native_for(r.tree, r.op, library)
            if nat is None:
                note = f"{library or 'this MPI library'}'s {r.op} algorithm is not pinned by hnow: nothing to predict"
            elif r.size == 0 and nat.empty_is_noop:
                predicted = None
                by_variant = dict.fromkeys(by_variant)
                note = f"{library} returns at once from an empty collective: the model has nothing to predict"
            elif (run := nat.on(lay, r.size)) is None:
                what = "tree runs is not known" if _ops.get(r.op).movement else "algorithm runs hnow does not model"
                where = f"on {len(lay)} ranks at {r.size} B"
                note = f"{library}'s default {r.op} {where}: which {what}"
                if _ops.native_name(r.tree):  # a pinned algorithm hnow cannot model there (Open MPI's nonoverlapping)
                    note = f"{library}'s {nat.algorithm} {r.op} {where}: hnow does not model it"
            elif predicted is None and _ops.get(r.op).reduction and not _has_reduce_cost(prof):
                note = f"{r.op} combines buffers: the profile has no reduction cost (γ) to predict it with"
            elif predicted is None:
                what = getattr(run[0], "name", run[0])
                note = f"the model's {what} does not run {r.op} on {len(lay)} ranks at {r.size} B (MPICH falls back)"
            else:
                # a layout's own schedule (coll/han's allreduce) is an Algorithm: its name
                model_tree = getattr(run[0], "name", run[0]) + (" + root copy" if run[1].root_copy else "")
                model_tree += " + common start" if predicted_by.common_start(r) else ""
        out.append(_row(r, predicted, by_variant, variants[r.op], model_tree, tset.chosen_for(r.tree, r.size), note))
    return out


def _row(
    r: MeasuredRow,
    predicted: float | None,
    by_variant: Mapping[str, float | None],
    variant: str,
    model_tree: str,
    chosen_for: int | None,
    note: str,
) -> ComparisonRow:
    return ComparisonRow(
        op=r.op,
        tree=r.tree,
        size=r.size,
        predicted_us=predicted,
        measured_us=r.measured_us,
        min_us=r.min_us,
        median_us=r.median_us,
        max_us=r.max_us,
        method=r.method,
        stat=r.stat,
        variant=variant,
        model_tree=model_tree,
        chosen_for_bytes=chosen_for,
        note=note,
        extra={
            **{k: r.extra[k] for k in ("fig2_median_us", "sync_median_us") if k in r.extra},
            "predicted_us_by_variant": dict(by_variant),
            "error_pct_by_variant": {v: error_pct(p, r.measured_us) for v, p in by_variant.items()},
        },
    )


def interleaved_rows(doc: Mapping[str, Any]) -> tuple[MeasuredRow, ...]:
    """Native collectives timed in the calibration's rounds: the median over rounds, min/max over rounds."""
    return tuple(
        MeasuredRow(
            op=r["op"],
            tree=NATIVE,
            size=int(r["size"]),
            measured_us=float(r["median_us"]),
            min_us=float(r["min_us"]),
            median_us=float(r["median_us"]),
            max_us=float(r["max_us"]),
            method="c-common-start",
            stat="median",
            extra={"rounds_us": list(r["rounds_us"]), "gap_us": doc.get("gap_us"), "interleaved": True},
        )
        for r in doc["rows"]
    )


def calibration_run(prof: Profile, interleaved: Mapping[str, Any]) -> dict[str, Any]:
    """The job description of a calibration, for a comparison whose rows it measured (MPI library, method, how the
    native collectives were pinned)."""
    p = prof.provenance
    lib = str(p.get("mpi_library", ""))
    return {
        "library": library_name(lib) if lib else "",
        "library_version": lib,
        "np": len(prof.nodes),
        "emulated": False,
        "time_scale": 1.0,
        "method": "c-common-start",
        "stat": "median",
        "native": interleaved.get("native") or {"algorithm": "binomial", "pinned": True},
    }
