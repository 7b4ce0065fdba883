"""The comparison job: :func:`compare` predicts and measures operations over trees and compares them.

``compare(profile, launch, settings, *, progress, **keywords)``: a profile (or None: calibrate first on the same
ranks), a :class:`~hnowmodel.jobs.launcher.Launch` (or the number of ranks) and a :class:`CompareSettings`, the
flags' names as keywords gathered into both by name (:func:`hnowmodel.jobs.checks.gather`)::

    cmp = hm.compare(prof, np=4, testbed="paper", ops=["bcast"], trees=["binomial", "optimal"], sizes=[0, 4096])

A bare ``optimal`` (or ``fnf``) is the best tree for each row's own operation and size (``chosen_for_bytes``
says which size); ``optimal:OP:SIZE`` is one fixed choice (:mod:`hnowmodel.treespec`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import cluster as _cluster
from .. import ops as _ops
from ..errors import InputError
from ..io import check_output
from ..options import parse_variants
from ..params import Profile
from ..report import write_report
from ..sizes import size_tuple
from ..testbed import Testbed
from ..treespec import TreeSet, native_names, resolve_all
from .calibrate_job import CalibrateSettings, calibrate_with_natives
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
    stated_types,
)
from .compared import calibration_run, compare_rows, interleaved_rows
from .launcher import Launch
from .measure_job import MeasureSettings, measure_trees
from .results import Comparison, Measurement, rows_as_dicts

__all__ = ["CompareSettings", "compare"]


@dataclass(frozen=True)
class CompareSettings:
    """What to compare (the ``hnow compare`` flags): ``ops`` over ``trees`` at ``sizes`` bytes; ``variants``: the
    model variant of each operation, ``{op: name}``, ``"NAME"`` (every operation) or ``"OP=NAME,…"`` (default: the
    registry's for the profile, also the one ``optimal`` trees are chosen under);
    ``calibrate_sizes``: the calibration's grid when there is no profile; ``output``: a report folder
    (``comparison.csv``, plots, ``summary.md``; refused if not empty unless ``force``) titled ``title``;
    ``config``: a configuration name written into every row of the report; ``types``: the node type of hosts the
    profile was not calibrated on (``HOST=TYPE,…``, ``@file.json`` or a mapping; the ranks' hosts take their types
    by name, :func:`hnowmodel.jobs.checks.job_layout`). The rest as :class:`MeasureSettings`."""

    testbed: str | None = None
    layout: Any = None
    types: Any = None
    ops: Any = _ops.tree_names()
    trees: Any = ("binomial", "sequential")
    sizes: Any = (0, 1024, 4096, 16384)
    root: int = 0
    reps: int = 7
    iters: int | None = None
    method: str = "auto"
    stat: str = "auto"
    variants: Mapping[str, str] | str | None = None
    calibrate_sizes: Any = None
    both: bool = True
    output: str | Path | None = None
    force: bool = False
    title: str = "hnow compare: predicted vs measured"
    config: str | None = None


def compare(
    profile: Profile | str | None = None,
    launch: Launch | int | None = None,
    settings: CompareSettings | None = None,
    *,
    progress: Progress = None,
    **keywords: Any,
) -> Comparison:
    """Predict and measure ``ops`` over ``trees`` at ``sizes`` on ``launch.np`` ranks and compare them.

    ``profile``: a Profile, a file, ``"paper"``, or None to calibrate first on the same ranks. Returns a
    :class:`Comparison` of :class:`ComparisonRow` (``error_pct = 100·(pred − meas)/meas``); with ``output`` also
    writes the report folder."""
    launch, s = gather("compare", launch, CompareSettings, settings, keywords)
    op_names, items, tb = check_request(launch, s.ops, s.trees, s.root, s.testbed)
    s = replace(s, variants=parse_variants(s.variants, op_names))
    grid = _check(s, tb)
    check_op_sizes(op_names, grid)
    types = stated_types(launch, s.types)
    prof = load_profile(profile)
    source = "given" if prof is not None else f"calibrated now on the same {launch.np} ranks"
    # a given profile's layout is found before the cluster comes up (a host it has not seen stops nothing started)
    lay = None
    if prof is not None:
        lay = _layout(launch, s.layout, prof, job_hosts(launch, s.layout, prof, s.types, progress), types)
    with _cluster_up(launch.cluster):  # one cluster for the calibration and the measurement
        interleaved = None
        if prof is None:
            # the calibration's interleaved natives: the tree operations' (the others are measured by the job)
            natives = [o for o in op_names if o in _ops.tree_names()]
            natives = natives if NATIVE in native_names(items) and tb is None and s.root == 0 else ()
            prof, interleaved = _calibrate(launch, s, natives, grid, progress)
            # calibrated now: its nodes name this run's hosts rank by rank, no need to ask srun where they are
            lay = _layout(launch, s.layout, prof, placement_hosts(launch), types)
        # unset variants: the default for this profile (flow sharing on a network), the same for choosing and comparing
        variants = {o: _ops.check_variant(o, (s.variants or {}).get(o), prof) for o in op_names}
        rows = [(o, m) for o in _ops.tree_names() if o in op_names for m in grid]  # chosen per row: tree operations
        tset = resolve_all(items, launch.np, root=s.root, layout=lay, profile=prof, variants=variants, rows=rows)
        m = _measure(launch, s, tset, prof, tb, interleaved, op_names, grid, progress)
        rows_ = compare_rows(prof, lay, m, tset, variants, s.root, str(m.run.get("library", "")))
        context = _context(launch, s, m, lay, source, variants)
        cmp = Comparison(tuple(rows_), prof, dict(m.run), context)
        if s.output is not None:
            rows_d = [
                {**({"config": s.config} if s.config else {}), "layout": ",".join(lay), **r}
                for r in rows_as_dicts(cmp.rows)
            ]
            write_report(s.output, rows_d, title=s.title, context=context, profile=prof if profile is None else None)
            cmp = replace(cmp, report=str(s.output))
        return cmp


def _layout(launch: Launch, layout: Any, prof: Profile, hosts: tuple[str, ...] | None, types: Any) -> Any:
    """The comparison's layout (:func:`~hnowmodel.jobs.checks.job_layout`); one is required."""
    lay = job_layout(layout, launch.np, None, prof, hosts=hosts, types=types)
    if lay is None:
        raise InputError("--layout is required (the profile records no layout for this many ranks)")
    return lay


def _check(s: CompareSettings, tb: Testbed | None) -> tuple[int, ...]:
    """The rest of what is checkable before a rank starts (a calibration included): sizes, timing, counts, the
    output folder (the operations, trees, root and testbed: :func:`~hnowmodel.jobs.checks.check_request`; the
    variants: :func:`~hnowmodel.options.parse_variants`)."""
    grid = size_tuple(s.sizes)
    resolve_timing(s.method, s.stat, tb is not None)
    check_count(s.reps, "--reps")
    if s.iters is not None:
        check_count(s.iters, "--iters")
    if s.output is not None:
        check_output(s.output, force=s.force, folder=True)
    return grid


def _calibrate(
    launch: Launch, s: CompareSettings, natives: tuple[str, ...], grid: tuple[int, ...], progress: Progress
) -> tuple[Profile, dict[str, Any] | None]:
    """The profile of a comparison given none. On real MPI the native collectives of ``natives`` (operations) are
    timed inside the calibration's own rounds (C kernels, common start), so that this machine's drift is common to
    the profile and to what it is compared with."""
    cal = CalibrateSettings(testbed=s.testbed, layout=s.layout, sizes=s.calibrate_sizes)
    return calibrate_with_natives(launch, cal, progress, natives, grid)


def _measure(
    launch: Launch,
    s: CompareSettings,
    tset: TreeSet,
    prof: Profile,
    tb: Testbed | None,
    interleaved: Mapping[str, Any] | None,
    op_names: tuple[str, ...],
    grid: tuple[int, ...],
    progress: Progress,
) -> Measurement:
    """Measure every tree not timed already in the calibration's rounds (``native``, when ``interleaved``)."""
    if interleaved:
        fixed = {k: v for k, v in tset.fixed.items() if k != NATIVE}
        tset = replace(tset, names=tuple(n for n in tset.names if n != NATIVE), fixed=fixed)
    m = Measurement((), {})
    if tset.names:
        method, stat = resolve_timing(s.method, s.stat, tb is not None)
        iters = s.iters if s.iters is not None else (2 if tb is not None else 50)
        ms = MeasureSettings(
            op=op_names,
            sizes=grid,
            testbed=s.testbed,
            # the testbed's own layout (its type names) says how each rank behaves; the profile's names only predict
            layout=s.layout if tb is not None else None,
            root=s.root,
            reps=s.reps,
            iters=iters,
            method=method,
            stat=stat,
            both=s.both,
        )
        tb_lay = job_layout(ms.layout, launch.np, tb, None)  # None off a testbed
        m = measure_trees(launch, ms, tset, prof, tb_lay, tb, progress)
    if interleaved:
        cal = calibration_run(prof, interleaved)
        run = {**cal, **m.run}
        run["native"] = m.run.get("native") or cal["native"]  # the calibration's rounds timed the natives
        m = Measurement(m.rows + interleaved_rows(interleaved), run)
    return m


def _context(
    launch: Launch, s: CompareSettings, m: Measurement, lay: Any, source: str, variants: Mapping[str, str]
) -> dict[str, Any]:
    """The comparison's description: library, ranks, where, profile, timing, variants, configuration, natives."""
    run = dict(m.run)
    cluster = launch.cluster
    context = {
        "MPI": run.get("library_version"),
        "ranks": f"{launch.np}, layout {','.join(lay)}",
        "where": f"emulated testbed {s.testbed} (time_scale {run.get('time_scale', 1):g}; times in testbed µs)"
        if run.get("emulated")
        else f"virtual cluster {cluster} (real TCP through shaped links)"
        if cluster
        else "plain MPI",
        "profile": source,
        "timing": f"{m.run['method']} ({m.run['stat']} of {s.reps} repetitions; spread = min-max)",
        "model variants": ", ".join(f"{o}: {v}" for o, v in variants.items()),
    }
    if s.config:
        context["configuration"] = s.config
    natives_run = run.get("natives") or ({NATIVE: run["native"]} if run.get("native") else {})
    if natives_run:
        context["native"] = (
            "; ".join(f"{spec}: {nat['algorithm']} (pinned: {nat['pinned']})" for spec, nat in natives_run.items())
            + ", each predicted with its model tree"
        )
    return context


def _cluster_up(cluster: str | None) -> Any:
    """Keep ``cluster`` up for a block of several jobs (see :func:`hnowmodel.cluster.using`)."""
    if cluster is None:
        return contextlib.nullcontext()
    return _cluster.using(cluster)
