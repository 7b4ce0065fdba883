"""The measurement job: :func:`measure` runs collectives for real over the given trees and times them.

``measure(launch, settings, *, progress, **keywords)``: a :class:`~hnowmodel.jobs.launcher.Launch` (or the number
of ranks) and a :class:`MeasureSettings`, the flags' names as keywords gathered into both by name
(:func:`hnowmodel.jobs.checks.gather`): ``hm.measure(np=4, testbed="paper", op="bcast", tree=t, sizes=[4096])``.
Tree specs are resolved by :mod:`hnowmodel.treespec`; a bare ``optimal``/``fnf`` is chosen for each row's own
operation and size, and runs in a job per operation and chosen tree (the sizes it was chosen the same for).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import ops as _ops
from ..errors import InputError
from ..options import TIMING_METHODS
from ..params import Profile
from ..search import rank_order
from ..sizes import size_tuple
from ..testbed import Testbed
from ..trees import Tree, make_tree
from ..treespec import TreeSet, resolve_all
from .checks import (
    NATIVE,
    Progress,
    check_count,
    check_op_sizes,
    check_request,
    gather,
    job_hosts,
    job_layout,
    load_profile,
    placement_hosts,
    resolve_timing,
    run_job,
    stated_types,
)
from .launcher import Launch
from .results import MeasuredRow, Measurement
from .specs import MeasureJob

__all__ = ["MeasureSettings", "measure", "measure_trees", "measured_rows", "job_groups"]


@dataclass(frozen=True)
class MeasureSettings:
    """What to measure (the ``hnow measure`` flags): ``op`` (one or a list), over ``tree`` (a name, a list of
    names, ``native``, ``@file.json`` or a :class:`Tree`), at ``sizes`` bytes (per rank for scatter/gather),
    ``reps`` repetitions of ``iters`` calls; ``method``/``stat`` (``auto``: sync + min on a testbed, sync + median
    on plain MPI) and with ``both`` the other method too; ``keys`` reorders the ranks; ``reorder`` also runs every
    row in the rank order :func:`hnowmodel.search.rank_order` picks (needs ``profile`` and a layout); ``types``: the
    node type of hosts ``profile`` was not calibrated on (``HOST=TYPE,…``, ``@file.json`` or a mapping; the ranks'
    hosts take their types by name, :func:`hnowmodel.jobs.checks.job_layout`)."""

    op: Any = "bcast"
    tree: Any = "binomial"
    sizes: Any = (0, 1024, 4096, 16384)
    testbed: str | None = None
    layout: Any = None
    types: Any = None
    profile: Profile | str | None = None
    root: int = 0
    reps: int = 7
    iters: int | None = None
    method: str = "auto"
    stat: str = "auto"
    keys: Sequence[int] | None = None
    reorder: bool = False
    both: bool = True


def measure(
    launch: Launch | int | None = None,
    settings: MeasureSettings | None = None,
    *,
    progress: Progress = None,
    **keywords: Any,
) -> Measurement:
    """Run collectives for real and time them (:class:`MeasureSettings`; ``keywords``: its fields and the
    :class:`Launch` ones by name). Every row carries min/median/max over the repetitions (µs); ``measured_us`` is
    ``stat`` of ``method``. ``reorder=True`` adds ``reordered_us``, the predicted and the measured gain (%)."""
    launch, s = gather("measure", launch, MeasureSettings, settings, keywords)
    ops, items, tb = check_request(launch, s.op, s.tree, s.root, s.testbed)
    grid = size_tuple(s.sizes)
    check_op_sizes(ops, grid)
    prof = load_profile(s.profile)
    check_count(s.reps, "--reps")
    iters = check_count(s.iters, "--iters") if s.iters is not None else (2 if tb is not None else 50)
    method, stat = resolve_timing(s.method, s.stat, tb is not None)
    types = stated_types(launch, s.types)
    hosts = placement_hosts(launch) if tb is not None else job_hosts(launch, s.layout, prof, s.types, progress)
    lay = job_layout(s.layout, launch.np, tb, prof, hosts=hosts, types=types)
    rows = [(o, m) for o in _ops.tree_names() if o in ops for m in grid]  # trees chosen per row: tree operations
    tset = resolve_all(items, launch.np, root=s.root, layout=lay, profile=prof, rows=rows)
    keys = s.keys
    if keys is not None:
        keys = tuple(int(k) for k in keys)
        if sorted(keys) != list(range(launch.np)):
            raise InputError(f"--keys must be a permutation of 0..{launch.np - 1}, got {list(keys)}")
    if s.reorder and (prof is None or lay is None):
        raise InputError("--reorder needs --profile and --layout (the rank order is chosen from the model)")
    checked = replace(s, op=ops, sizes=grid, iters=iters, method=method, stat=stat, keys=keys)
    return measure_trees(launch, checked, tset, prof, lay, tb, progress)


def measure_trees(
    launch: Launch,
    s: MeasureSettings,
    tset: TreeSet,
    prof: Profile | None,
    lay: Sequence[str] | None,
    tb: Testbed | None,
    progress: Progress = None,
) -> Measurement:
    """Measure the resolved trees ``tset`` under checked settings ``s`` (``op`` and ``sizes`` as tuples, concrete
    ``method``/``stat``/``iters``): the fixed trees in as few jobs as the native algorithms allow, each per-row
    tree in a job per operation and chosen shape (the sizes it was chosen the same for); rows in the order
    operation, tree, size."""
    ops, grid = tuple(s.op), tuple(s.sizes)
    methods = (s.method, *[m for m in TIMING_METHODS if m != s.method and s.both])
    base = MeasureJob(ops, {}, grid, s.testbed, lay if tb is not None else None, s.root, s.reps, s.iters, methods)
    base = replace(base, keys=s.keys)
    jobs = [replace(base, trees=trees) for trees in job_groups(tset.fixed, ops)] if tset.fixed else []
    for o in [o for o in ops if o in _ops.tree_names()] if tset.per_row_names else ():
        same: dict[tuple, list[int]] = {}  # sizes whose chosen trees are the same run in one job
        for m in grid:
            same.setdefault(tuple(_shape(tset.tree(name, o, m)) for name in tset.per_row_names), []).append(m)
        for sizes in same.values():
            trees = {name: tset.tree(name, o, sizes[0]) for name in tset.per_row_names}
            jobs.append(replace(base, ops=(o,), trees=trees, sizes=tuple(sizes)))
    rows: tuple[MeasuredRow, ...] = ()
    run: dict[str, Any] = {}
    for job in jobs:
        doc = run_job(launch, job, progress)
        got = measured_rows(doc, s.method, s.stat)
        if s.reorder:
            library = str(doc.get("library") or "MPICH")
            got = tuple(_reordered(r, tset, prof, lay, launch, job, s, progress, library) for r in got)
        rows += got
        natives_run = {**run.get("natives", {}), **(doc.get("natives") or {})}
        if not run:
            run = {k: v for k, v in doc.items() if k != "rows"}
        run["natives"] = natives_run
        run["native"] = natives_run.get(NATIVE, next(iter(natives_run.values()), None))
    if tset.per_row_names:
        rows = tuple(sorted(rows, key=lambda r: (ops.index(r.op), tset.names.index(r.tree), grid.index(r.size))))
    run.update({"method": s.method, "stat": s.stat})
    return Measurement(rows, run)


def _shape(tree: Tree | None) -> tuple:
    """What makes two trees run the same sends: parent and send order of every rank."""
    return () if tree is None else (tuple(tree.parent.tolist()), tuple(tree.childrank.tolist()))


def measured_rows(doc: Mapping[str, Any], method: str, stat: str) -> tuple[MeasuredRow, ...]:
    """The rows of a ``measure`` task's document, ``measured_us`` being ``stat`` of ``method`` (µs)."""
    rows = []
    core = {"op", "tree", "size"}
    for r in doc["rows"]:
        extra = {k: v for k, v in r.items() if k not in core}
        rows.append(
            MeasuredRow(
                op=r["op"],
                tree=r["tree"],
                size=int(r["size"]),
                measured_us=float(r[f"{method}_{stat}_us"]),
                min_us=float(r[f"{method}_min_us"]),
                median_us=float(r[f"{method}_median_us"]),
                max_us=float(r[f"{method}_max_us"]),
                method=method,
                stat=stat,
                extra=extra,
            )
        )
    return tuple(rows)


def job_groups(built: Mapping[str, Tree | None], ops: Sequence[str]) -> list[dict[str, Tree | None]]:
    """The trees of a measurement split into as few jobs as the native algorithms allow: every tree in the first
    job, except native specs whose MPI settings (:func:`hnowmodel.ops.native_spec_env`) clash with those of an
    earlier one, which go to the first later job they fit (native algorithms that need one MPI variable set two
    ways, or set and unset - a library's default next to a pinned algorithm, :func:`hnowmodel.ops.native_spec_unset`
    -, which MPI reads once in MPI_Init)."""
    groups: list[tuple[dict[str, Tree | None], dict[str, str], set[str]]] = []
    for name, tree in built.items():
        env = _ops.native_spec_env(name, ops) if tree is None else {}
        unset = _ops.native_spec_unset(name, ops) if tree is None else set()  # a default: what must stay unset
        for trees, genv, gunset in groups:
            if all(genv.get(k, v) == v for k, v in env.items()) and not (unset & set(genv) or gunset & set(env)):
                trees[name] = tree
                genv.update(env)
                gunset.update(unset)
                break
        else:
            groups.append(({name: tree}, dict(env), set(unset)))
    return [trees for trees, _, _ in groups]


def _reordered(
    row: MeasuredRow,
    tset: TreeSet,
    prof: Profile,
    lay: Sequence[str],
    launch: Launch,
    job: MeasureJob,
    s: MeasureSettings,
    progress: Progress,
    library: str = "MPICH",
) -> MeasuredRow:
    """``row`` measured again with the ranks in the order :func:`~hnowmodel.search.rank_order` picks for it. The
    tree shape is fixed by rank number (``native``: the library's model tree, and the order is chosen for the
    algorithm as it runs); new rank p is the node that was rank ``perm[p]``, and keeps its node type."""
    given = tset.tree(row.tree, row.op, row.size)
    tree, nat = given, None
    if tree is None:
        nat = _ops.native_for(row.tree, row.op, library)
        spec = (nat.tree_on(lay, row.size) or nat.model_tree) if nat else "binomial"
        tree = make_tree(spec, len(lay), root=job.root, layout=lay)
    ro = rank_order(prof, lay, tree, row.op, row.size, native=nat)
    again = replace(job, ops=(row.op,), trees={row.tree: given}, sizes=(row.size,), keys=tuple(ro.keys))
    doc = run_job(launch, again, progress)
    got = measured_rows(doc, s.method, s.stat)[0]
    gain = 100.0 * (row.measured_us - got.measured_us) / row.measured_us if row.measured_us > 0 else math.nan
    extra = {
        **row.extra,
        "reordered_us": got.measured_us,
        "predicted_us": float(ro.baseline_us),
        "predicted_reordered_us": float(ro.time_us),
        "predicted_gain_pct": float(ro.gain_pct),
        "measured_gain_pct": gain,
        "reorder_keys": list(ro.keys),
        "reorder_method": ro.method,
    }
    return replace(row, extra=extra)
