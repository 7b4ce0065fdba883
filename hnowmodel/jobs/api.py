"""The public functions that run MPI: :func:`calibrate`, :func:`measure`, :func:`compare`, :func:`bench`, :func:`info`.

Each takes the ``hnow`` command's option names as keywords, validates everything it can before a rank starts
(sizes, layouts, trees, testbed and profile files, outputs), runs ``python -m calibrate`` as a child process
through :func:`hnowmodel.jobs.launcher.run_task`, and returns typed, frozen results (µs and bytes). The caller
never imports mpi4py. Errors are :class:`hnowmodel.errors.HnowError` subclasses naming the bad value.

A scheduler's use (see ``docs/api.md``)::

    import hnowmodel as hm
    prof = hm.calibrate(np=4, testbed="paper", layout="FFSS")
    cmp = hm.compare(prof, np=4, testbed="paper", ops=["bcast"], trees=["binomial", "optimal"], sizes=[0, 4096])
    worst = max(abs(r.error_pct) for r in cmp.rows)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import ops as _ops
from .. import predict as _predict
from ..errors import HnowError, InputError, LayoutError, TreeError
from ..io import check_output
from ..layout import parse_layout
from ..params import Profile
from ..sizes import parse_sizes
from ..testbed import Testbed, load_testbed
from ..trees import Tree, make_tree
from .launcher import Launch, run_task
from .results import BenchResult, Comparison, ComparisonRow, MeasuredRow, Measurement, error_pct
from .specs import TIMING_METHODS, BenchJob, CalibrateJob, InfoJob, MeasureJob
from .wire import task_argv

__all__ = [
    "calibrate",
    "measure",
    "compare",
    "bench",
    "info",
    "run_job",
    "build_trees",
    "resolve_timing",
    "NATIVE",
    "STATS",
]

NATIVE = _ops.NATIVE
STATS = ("median", "min")
#: ``method="auto"``: barrier-free synchronised timing everywhere - every rank starts at one instant of the shared
#: clock and the latest finish counts (in C for the library's own collectives); barrier-then-call and back-to-back
#: loops (the paper's Figure 2, ``fig2``) bias small messages by 20-60 % on real MPI. ``stat="auto"``: the minimum
#: over repetitions on a testbed (as the paper; the emulation's only noise is delay), the median on plain MPI.
AUTO_METHOD = {"testbed": "sync", "plain": "sync"}
AUTO_STAT = {"testbed": "min", "plain": "median"}

Progress = Callable[[str], None] | bool | None


def _progress(progress: Progress) -> Callable[[str], None] | None:
    if progress is True:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return progress or None


def _launch(
    np: Any,
    launcher: str,
    launcher_args: Any,
    hostfile: str | None,
    timeout: float | None,
    cluster: str | None = None,
    mpi: str | None = None,
) -> Launch:
    if cluster is not None:
        from ..cluster import load_spec

        load_spec(cluster)  # a bad spec is found before anything starts
    return Launch(
        np=np,
        launcher=launcher,
        launcher_args=launcher_args or (),
        hostfile=hostfile,
        timeout_s=timeout,
        cluster=cluster,
        mpi=mpi,
    )


def run_job(launch: Launch, job: Any, progress: Progress = None) -> Any:
    """Run a job of :mod:`hnowmodel.jobs.specs` under ``launch`` and return rank 0's document."""
    say = _progress(progress)
    task, argv = task_argv(job, quiet=say is None)
    return run_task(launch, task, argv, default_timeout_s=job.default_timeout_s(launch.np), progress=say)


def _testbed(testbed: str | Testbed | None, cluster: str | None = None) -> Testbed | None:
    if testbed is not None and cluster is not None:
        raise InputError("--testbed (emulated ranks) and --cluster (real hosts) exclude each other: give one")
    return None if testbed is None else load_testbed(testbed)


def _sizes(sizes: Any, flag: str = "--sizes") -> tuple[int, ...]:
    if isinstance(sizes, str):
        return tuple(parse_sizes(sizes, flag))
    try:
        vals = [sizes] if isinstance(sizes, (int, float)) else list(sizes)
    except TypeError:
        raise InputError(f"{flag}: expected sizes in bytes, got {sizes!r}") from None
    out = []
    for v in vals:
        if isinstance(v, str):
            out += parse_sizes(v, flag)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or v != int(v):
            raise InputError(f"{flag}: {v!r} is not a whole number of bytes >= 0")
        out.append(int(v))
    if not out:
        raise InputError(f"{flag}: give at least one size")
    return tuple(out)


def _count(value: Any, flag: str, lo: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InputError(f"{flag} must be a whole number >= {lo}, got {value!r}")
    return value


def _profile(profile: Profile | str | None) -> Profile | None:
    if profile is None or isinstance(profile, Profile):
        return profile
    return Profile.load(profile)


def resolve_timing(method: str, stat: str, emulated: bool) -> tuple[str, str]:
    """``auto`` method/stat -> the concrete ones for a testbed or plain MPI; :class:`InputError` names choices."""
    where = "testbed" if emulated else "plain"
    if method not in (*TIMING_METHODS, "auto"):
        raise InputError(
            f"unknown timing method (--method) {method!r} (choose from: {', '.join(TIMING_METHODS)}, auto)"
        )
    if stat not in (*STATS, "auto"):
        raise InputError(f"unknown statistic (--stat) {stat!r} (choose from: {', '.join(STATS)}, auto)")
    return (AUTO_METHOD[where] if method == "auto" else method), (AUTO_STAT[where] if stat == "auto" else stat)


# ---- calibrate ---------------------------------------------------------------------------------------------------
def calibrate(
    np: int = 2,
    *,
    testbed: str | Testbed | None = None,
    layout: str | Sequence[str] | None = None,
    sizes: Any = None,
    network: str | None = None,
    regime: str = "auto",
    precision: float = 0.025,
    quick: bool = False,
    kernels: str = "auto",
    rounds: int | None = None,
    gap_us: float | None = None,
    launcher: str = "mpiexec",
    launcher_args: Any = (),
    hostfile: str | None = None,
    cluster: str | None = None,
    timeout: float | None = None,
    mpi: str | None = None,
    output: str | Path | None = None,
    force: bool = False,
    progress: Progress = None,
) -> Profile:
    """Calibrate the model on ``np`` ranks and return the :class:`~hnowmodel.params.Profile` (µs, bytes).

    ``testbed``: ``"paper"``, a testbed file or a :class:`~hnowmodel.testbed.Testbed` (default: plain MPI);
    ``layout``: node type of each rank (``FFSS``, a list, ``@file``) or ``"auto"`` to discover the groups by
    measuring; ``output``: also write the profile there (refused if it exists, unless ``force``); ``mpi``: the MPI
    library (``mpich``, ``openmpi``; default: whatever ``mpiexec`` is found). On real MPI the C
    kernels time everything (``kernels="auto"``; ``"python"`` forces the old Python kernels) in ``rounds``
    interleaved rounds of isolated messages ``gap_us`` apart; the profile's provenance says which were used.
    """
    prof, _ = _calibrate(
        np,
        testbed=testbed,
        layout=layout,
        sizes=sizes,
        network=network,
        regime=regime,
        precision=precision,
        quick=quick,
        kernels=kernels,
        rounds=rounds,
        gap_us=gap_us,
        launcher=launcher,
        launcher_args=launcher_args,
        hostfile=hostfile,
        cluster=cluster,
        timeout=timeout,
        mpi=mpi,
        output=output,
        force=force,
        progress=progress,
    )
    return prof


def _calibrate(
    np: int,
    *,
    testbed: Any,
    layout: Any,
    sizes: Any,
    network: str | None,
    regime: str,
    precision: float,
    quick: bool,
    kernels: str,
    rounds: int | None,
    gap_us: float | None,
    launcher: str,
    launcher_args: Any,
    hostfile: str | None,
    cluster: str | None,
    timeout: float | None,
    mpi: str | None,
    output: Any,
    force: bool,
    progress: Progress,
    native_ops: Sequence[str] = (),
    native_sizes: Sequence[int] = (),
) -> tuple[Profile, dict[str, Any] | None]:
    """:func:`calibrate`, also returning the native collectives timed in the same rounds (None if none were)."""
    launch = _launch(np, launcher, launcher_args, hostfile, timeout, cluster, mpi)
    if kernels not in ("auto", "c", "python"):
        raise InputError(f"--kernels {kernels!r}: choose from auto, c, python")
    if rounds is not None:
        _count(rounds, "--rounds")
    if gap_us is not None and not (isinstance(gap_us, (int, float)) and math.isfinite(gap_us) and 0 <= gap_us <= 1e6):
        raise InputError(f"--gap-us {gap_us!r}: expected a number of µs in 0..1e6")
    if not (isinstance(precision, (int, float)) and math.isfinite(precision) and 0 < precision < 1):
        raise InputError(f"--precision {precision!r}: expected a fraction between 0 and 1, e.g. 0.025")
    if regime not in ("auto", "below", "above"):
        raise InputError(f"--regime {regime!r}: choose from auto, below, above")
    tb = _testbed(testbed, cluster)
    if isinstance(layout, (list, tuple)):
        layout = ",".join(layout)
    if layout is not None and layout != "auto" and tb is not None:
        got = parse_layout(layout, list(tb.types))
        if len(got) != launch.np:
            raise LayoutError(f"--layout has {len(got)} ranks but --np is {launch.np}")
    grid = None if sizes is None else tuple(sorted(set(_sizes(sizes))))
    if grid is not None and len(grid) < 2:
        raise InputError("--sizes: the fits need at least two different sizes")
    if output is not None:
        check_output(output, force=force)
    job = CalibrateJob(
        testbed=None if tb is None else (testbed if isinstance(testbed, str) else _inline_testbed(tb)),
        layout=layout,
        sizes=grid,
        network=network,
        regime=regime,
        precision=float(precision),
        quick=bool(quick),
        kernels=kernels,
        rounds=rounds,
        gap_us=gap_us,
        native_ops=tuple(native_ops),
        native_sizes=tuple(native_sizes),
    )
    doc = run_job(launch, job, progress)
    interleaved = doc.pop("interleaved_native", None)
    if isinstance(doc.get("provenance"), dict):
        doc["provenance"]["mpi_env"] = launch.mpi_env.describe()  # which library, Python and launcher ran it
    prof = Profile.from_dict(doc, where="calibration result")
    if output is not None:
        prof.save(output, overwrite=force)
    return prof, interleaved


def _inline_testbed(tb: Testbed) -> str:
    raise InputError(
        f"testbed {tb.name!r}: pass a testbed by name ('paper') or file path; in-memory testbeds cannot be sent to "
        "the ranks"
    )


# ---- trees -------------------------------------------------------------------------------------------------------
def _chosen_for(spec: str) -> int | None:
    """The size a model-chosen tree (``optimal``, ``optimal:gather:4K``, ``fnf:1K``) was chosen at (bytes)."""
    name, _, arg = spec.partition(":")
    if name not in ("optimal", "fnf"):
        return None
    for part in arg.split(":") if arg else []:
        if part not in _ops.OPERATIONS:
            return parse_sizes(part, f"tree {spec}")[0]
    return 0


def _chosen_op(spec: str) -> str | None:
    name, _, arg = spec.partition(":")
    if name != "optimal":
        return None
    return next((p for p in arg.split(":") if p in _ops.OPERATIONS), None)


def build_trees(
    trees: Any,
    n: int,
    *,
    root: int = 0,
    layout: Sequence[str] | None = None,
    profile: Profile | None = None,
    variants: Mapping[str, str] | None = None,
    ops: Sequence[str] | None = None,
) -> dict[str, Tree | None]:
    """Tree specs -> ``{name: Tree}`` (``native`` and ``native:ALGO`` -> None). Specs: registered names
    (``binomial``, ``kary:3``), ``@file.json`` (as ``best-tree -o`` writes), ``optimal[:OP][:SIZE]`` /
    ``fnf[:SIZE]`` (chosen from the profile and layout, under the operation's model variant), ``native`` (the MPI
    library's own collective as :mod:`hnowmodel.ops` pins it), ``native:ALGO`` (the library's algorithm ALGO, one
    of :func:`hnowmodel.ops.native_choices` for one of ``ops``, default any operation), or :class:`Tree`
    objects."""
    if isinstance(trees, (str, Tree)):
        trees = [trees]
    if isinstance(trees, Mapping):
        items = list(trees.items())
    else:
        items = []
        for t in trees:
            if isinstance(t, Tree):
                items.append((t.name or f"tree{len(items)}", t))
            else:
                items += [(s.strip(), None) for s in str(t).split(",") if s.strip()]
    if not items:
        raise InputError("--tree: give at least one tree name, @file.json, or 'native'")
    out: dict[str, Tree | None] = {}
    for name, given in items:
        if given is not None:
            tree = given
        elif _ops.native_name(name) is not None:
            out[name] = None
            _ops.check_native(name, ops)
            continue
        else:
            op = _chosen_op(name)
            if op is not None and profile is not None and layout is not None:
                from ..search import best_tree

                size = _chosen_for(name) or 0
                v = (variants or {}).get(op)
                tree = best_tree(profile, list(layout), op=op, size=size, root=root, compare=(), variant=v).tree
            else:
                try:
                    tree = make_tree(
                        name, n, root=root, layout=None if layout is None else list(layout), profile=profile
                    )
                except TreeError as e:
                    if profile is None and "needs a layout and a profile" in str(e):
                        raise TreeError(f"{e} (pass --profile and --layout)") from None
                    raise
        if tree.n != n:
            raise TreeError(f"tree {name!r} has {tree.n} ranks but the job has {n}")
        if tree.root != root:
            raise TreeError(f"tree {name!r} has root {tree.root} but --root is {root}")
        out[name] = tree
    return out


# ---- measure -----------------------------------------------------------------------------------------------------
def _ops_list(ops: Any, flag: str) -> tuple[str, ...]:
    items = [ops] if isinstance(ops, str) else list(ops or [])
    names = [s.strip() for item in items for s in str(item).split(",") if s.strip()]
    if not names:
        raise InputError(f"{flag}: give at least one of {', '.join(_ops.names())}")
    for o in names:
        if o not in _ops.OPERATIONS:
            raise InputError(f"unknown operation ({flag}) {o!r} (choose from: {', '.join(_ops.names())})")
    return tuple(names)


def _measured_rows(doc: Mapping[str, Any], method: str, stat: str) -> tuple[MeasuredRow, ...]:
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


def _job_layout(
    layout: Any, np: int, tb: Testbed | None, prof: Profile | None, flag: str = "--layout"
) -> tuple[str, ...] | None:
    """The node type of each rank, from ``layout`` (checked against the testbed's or the profile's types), else the
    testbed's ranks, else the profile's calibration layout when it has ``np`` ranks, else None."""
    if layout is not None:
        types = list(tb.types) if tb is not None else list(prof.type_names) if prof is not None else None
        if types is None:
            raise InputError(f"{flag} needs --testbed or --profile (to know the node types)")
        got = parse_layout(layout, types)
    elif tb is not None:
        got = tb.layout_for(np)
    elif prof is not None and len(prof.layout) == np:
        got = tuple(prof.layout)
    elif prof is not None and len(prof.type_names) == 1:
        got = (prof.type_names[0],) * np
    else:
        return None
    if len(got) != np:
        raise LayoutError(f"{flag} has {len(got)} ranks but --np is {np}")
    return tuple(got)


def measure(
    np: int = 2,
    *,
    op: Any = "bcast",
    tree: Any = "binomial",
    sizes: Any = (0, 1024, 4096, 16384),
    testbed: str | None = None,
    layout: Any = None,
    profile: Profile | str | None = None,
    root: int = 0,
    reps: int = 7,
    iters: int | None = None,
    method: str = "auto",
    stat: str = "auto",
    keys: Sequence[int] | None = None,
    reorder: bool = False,
    both: bool = True,
    launcher: str = "mpiexec",
    launcher_args: Any = (),
    hostfile: str | None = None,
    cluster: str | None = None,
    timeout: float | None = None,
    mpi: str | None = None,
    progress: Progress = None,
) -> Measurement:
    """Run collectives for real and time them: ``op`` (one or a list), over ``tree`` (a name, a list of names,
    ``native``, ``@file.json`` or a :class:`Tree`), at ``sizes`` bytes (per rank for scatter/gather).

    Every row carries min/median/max over ``reps`` repetitions (µs); ``measured_us`` is ``stat`` of ``method``
    (``auto``: sync + min on a testbed, fig2 + median on plain MPI). ``keys`` reorders the ranks (new rank p is
    the node that had rank ``keys``-order p). Trees chosen from the model need ``profile`` (and a layout).
    ``reorder=True`` also runs every row with the rank order :func:`hnowmodel.search.rank_order` picks for it
    (needs ``profile`` and a layout) and adds ``reordered_us``, the predicted and the measured gain (%).
    """
    launch = _launch(np, launcher, launcher_args, hostfile, timeout, cluster, mpi)
    ops = _ops_list(op, "--op")
    grid = _sizes(sizes)
    tb = _testbed(testbed, cluster)
    prof = _profile(profile)
    _count(reps, "--reps")
    iters = _count(iters, "--iters") if iters is not None else (2 if tb is not None else 50)
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < launch.np:
        raise InputError(f"--root {root!r} is not a rank in 0..{launch.np - 1}")
    method, stat = resolve_timing(method, stat, tb is not None)
    lay = _job_layout(layout, launch.np, tb, prof)
    built = build_trees(tree, launch.np, root=root, layout=lay, profile=prof, ops=ops)
    natives = [k for k, v in built.items() if v is None]
    if natives and tb is not None:
        raise InputError(
            f"--tree {natives[0]} cannot run on the emulated testbed: the MPI library does its own sends, which the "
            "emulation cannot slow down (use --tree binomial, MPICH's binomial tree, over the emulated transport)"
        )
    if keys is not None:
        keys = tuple(int(k) for k in keys)
        if sorted(keys) != list(range(launch.np)):
            raise InputError(f"--keys must be a permutation of 0..{launch.np - 1}, got {list(keys)}")
    if reorder and (prof is None or lay is None):
        raise InputError("--reorder needs --profile and --layout (the rank order is chosen from the model)")
    methods = (method, *[m for m in TIMING_METHODS if m != method and both])
    rows: tuple[MeasuredRow, ...] = ()
    run: dict[str, Any] = {}
    # native algorithms that need one MPI variable set two ways (native and native:tree:kary:3 both set the bcast
    # algorithm, which MPI reads once in MPI_Init) run in jobs of their own, one after the other
    for trees in _job_groups(built, ops):
        job = MeasureJob(ops, trees, grid, testbed, lay if tb is not None else None, root, reps, iters, methods, keys)
        doc = run_job(launch, job, progress)
        got = _measured_rows(doc, method, stat)
        if reorder:
            library = str(doc.get("library") or "MPICH")
            got = tuple(_reordered(r, built, prof, lay, launch, job, method, stat, progress, library) for r in got)
        rows += got
        natives_run = {**run.get("natives", {}), **(doc.get("natives") or {})}
        if not run:
            run = {k: v for k, v in doc.items() if k != "rows"}
        run["natives"] = natives_run
        run["native"] = natives_run.get(NATIVE, next(iter(natives_run.values()), None))
    run.update({"method": method, "stat": stat})
    return Measurement(rows, run)


def _job_groups(built: Mapping[str, Tree | None], ops: Sequence[str]) -> list[dict[str, Tree | None]]:
    """The trees of a measurement split into as few jobs as the native algorithms allow: every tree in the first
    job, except native specs whose MPI settings (:func:`hnowmodel.ops.native_spec_env`) clash with those of an
    earlier one, which go to the first later job they fit."""
    groups: list[tuple[dict[str, Tree | None], dict[str, str]]] = []
    for name, tree in built.items():
        env = _ops.native_spec_env(name, ops) if tree is None else {}
        for trees, genv in groups:
            if all(genv.get(k, v) == v for k, v in env.items()):
                trees[name] = tree
                genv.update(env)
                break
        else:
            groups.append(({name: tree}, dict(env)))
    return [trees for trees, _ in groups]


def _reordered(
    row: MeasuredRow,
    built: Mapping[str, Tree | None],
    prof: Profile,
    lay: Sequence[str],
    launch: Launch,
    job: MeasureJob,
    method: str,
    stat: str,
    progress: Progress,
    library: str = "MPICH",
) -> MeasuredRow:
    """``row`` measured again with the ranks in the order :func:`~hnowmodel.search.rank_order` picks for it. The
    tree shape is fixed by rank number (``native``: the library's model tree, and the order is chosen for the
    algorithm as it runs); new rank p is the node that was rank ``perm[p]``, and keeps its node type."""
    from ..search import rank_order

    tree, nat = built[row.tree], None
    if tree is None:
        nat = _ops.native_for(row.tree, row.op, library)
        tree = make_tree(nat.model_tree if nat else "binomial", len(lay), root=job.root)
    ro = rank_order(prof, list(lay), tree, row.op, row.size, native=nat)
    again = replace(job, ops=(row.op,), trees={row.tree: built[row.tree]}, sizes=(row.size,), keys=tuple(ro.keys))
    doc = run_job(launch, again, progress)
    got = _measured_rows(doc, method, stat)[0]
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


# ---- compare -----------------------------------------------------------------------------------------------------
def compare(
    profile: Profile | str | None = None,
    *,
    np: int = 2,
    testbed: str | None = None,
    layout: Any = None,
    ops: Any = ("bcast", "scatter", "gather"),
    trees: Any = ("binomial", "sequential"),
    sizes: Any = (0, 1024, 4096, 16384),
    root: int = 0,
    reps: int = 7,
    iters: int | None = None,
    method: str = "auto",
    stat: str = "auto",
    variants: Mapping[str, str] | None = None,
    calibrate_sizes: Any = None,
    both: bool = True,
    output: str | Path | None = None,
    force: bool = False,
    title: str = "hnow compare: predicted vs measured",
    config: str | None = None,
    launcher: str = "mpiexec",
    launcher_args: Any = (),
    hostfile: str | None = None,
    cluster: str | None = None,
    timeout: float | None = None,
    mpi: str | None = None,
    progress: Progress = None,
) -> Comparison:
    """Predict and measure ``ops`` over ``trees`` at ``sizes`` on ``np`` ranks and compare them.

    ``profile``: a Profile, a file, ``"paper"``, or None to calibrate first on the same ranks. ``variants`` maps an
    operation to its model variant (default: the registry's, which is also the one ``optimal`` trees are chosen
    under). Returns a :class:`Comparison` of :class:`ComparisonRow` (``error_pct = 100·(pred − meas)/meas``); with
    ``output`` also writes ``comparison.csv``, plots and ``summary.md`` there (refused if the folder is not empty,
    unless ``force``).
    """
    launch = _launch(np, launcher, launcher_args, hostfile, timeout, cluster, mpi)
    op_names = _ops_list(ops, "--ops")
    for o, v in (variants or {}).items():
        _ops.check_variant(o, v)
    grid = _sizes(sizes)
    tb = _testbed(testbed, cluster)
    resolve_timing(method, stat, tb is not None)
    names = [trees] if isinstance(trees, (str, Tree)) else list(trees)
    for name in (s.strip() for t in names if isinstance(t, str) for s in t.split(",")):
        if _ops.native_name(name) is not None:  # before a calibration starts
            _ops.check_native(name, op_names)
            if tb is not None:
                raise InputError(f"--trees {name}: the MPI library's own collective cannot run on the emulated testbed")
    if output is not None:
        check_output(output, force=force, folder=True)
    prof = _profile(profile)
    with _cluster_up(cluster):  # one cluster for the calibration and the measurement
        source = "given" if prof is not None else f"calibrated now on the same {launch.np} ranks"
        interleaved = None
        native_asked = NATIVE in (trees if isinstance(trees, (list, tuple)) else str(trees).split(","))
        if prof is None:
            # on real MPI the native collectives are timed inside the calibration's own rounds (C kernels, common
            # start), so that this machine's drift is common to the profile and to what it is compared with
            natives = op_names if native_asked and tb is None and root == 0 else ()
            prof, interleaved = _calibrate(
                launch.np,
                testbed=testbed,
                layout=layout,
                sizes=calibrate_sizes,
                network=None,
                regime="auto",
                precision=0.025,
                quick=False,
                kernels="auto",
                rounds=None,
                gap_us=None,
                launcher=launcher,
                launcher_args=launcher_args,
                hostfile=hostfile,
                cluster=cluster,
                timeout=timeout,
                mpi=mpi,
                output=None,
                force=False,
                progress=progress,
                native_ops=natives,
                native_sizes=grid,
            )
        lay = _job_layout(layout, launch.np, None, prof)
        if lay is None:
            raise InputError("--layout is required (the profile records no layout for this many ranks)")
        # unset variants: the default for this profile (flow sharing on a network), the same for choosing and comparing
        variants = {o: _ops.check_variant(o, (variants or {}).get(o), prof) for o in op_names}
        built = build_trees(trees, launch.np, root=root, layout=lay, profile=prof, variants=variants, ops=op_names)
        rest = {k: v for k, v in built.items() if not (k == NATIVE and interleaved)}
        m = (
            Measurement((), {})
            if not rest
            else measure(
                # the testbed's own layout (its type names) says how each rank behaves; the profile's names only predict
                launch.np,
                op=op_names,
                tree=rest,
                sizes=grid,
                testbed=testbed,
                layout=layout if tb is not None else None,
                root=root,
                reps=reps,
                iters=iters,
                method=method,
                stat=stat,
                both=both,
                launcher=launcher,
                launcher_args=launcher_args,
                hostfile=hostfile,
                cluster=cluster,
                timeout=timeout,
                mpi=mpi,
                progress=progress,
            )
        )
        if interleaved:
            cal = _calibration_run(prof, interleaved)
            run = {**cal, **m.run}
            run["native"] = m.run.get("native") or cal["native"]  # the calibration's rounds timed the natives
            m = Measurement(m.rows + _interleaved_rows(interleaved), run)
        library = str(m.run.get("library", ""))
        rows = _compare_rows(prof, lay, m, built, variants, root, library)
        run = dict(m.run)
        context = {
            "MPI": run.get("library_version"),
            "ranks": f"{launch.np}, layout {','.join(lay)}",
            "where": f"emulated testbed {testbed} (time_scale {run.get('time_scale', 1):g}; times in testbed µs)"
            if run.get("emulated")
            else f"virtual cluster {cluster} (real TCP through shaped links)"
            if cluster
            else "plain MPI",
            "profile": source,
            "timing": f"{m.run['method']} ({m.run['stat']} of {reps} repetitions; spread = min-max)",
            "model variants": ", ".join(f"{o}: {v}" for o, v in variants.items()),
        }
        if config:
            context["configuration"] = config
        natives_run = run.get("natives") or ({NATIVE: run["native"]} if run.get("native") else {})
        if natives_run:
            context["native"] = (
                "; ".join(f"{spec}: {nat['algorithm']} (pinned: {nat['pinned']})" for spec, nat in natives_run.items())
                + ", each predicted with its model tree"
            )
        cmp = Comparison(tuple(rows), prof, run, context)
        if output is not None:
            from ..report import write_report
            from .results import rows_as_dicts

            rows_d = [
                {**({"config": config} if config else {}), "layout": ",".join(lay), **r}
                for r in rows_as_dicts(cmp.rows)
            ]
            write_report(output, rows_d, title=title, context=context, profile=prof if profile is None else None)
            cmp = replace(cmp, report=str(output))
        return cmp


def _interleaved_rows(doc: Mapping[str, Any]) -> tuple[MeasuredRow, ...]:
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


def _calibration_run(prof: Profile, interleaved: Mapping[str, Any]) -> dict[str, Any]:
    """The job description of a calibration, for a comparison whose rows it measured (MPI library, method, how the
    native collectives were pinned)."""
    p = prof.provenance
    lib = str(p.get("mpi_library", ""))
    return {
        "library": "MPICH" if "MPICH" in lib else "Open MPI" if "Open MPI" in lib else lib.split(" ")[0],
        "library_version": lib,
        "np": len(prof.nodes),
        "emulated": False,
        "time_scale": 1.0,
        "method": "c-common-start",
        "stat": "median",
        "native": interleaved.get("native") or {"algorithm": "binomial", "pinned": True},
    }


def _cluster_up(cluster: str | None) -> Any:
    """Keep ``cluster`` up for a block of several jobs (see :func:`hnowmodel.cluster.using`)."""
    import contextlib

    if cluster is None:
        return contextlib.nullcontext()
    from ..cluster import using

    return using(cluster)


def _quietly(fn: Callable[..., float | None], *args: Any) -> float | None:
    """``fn(*args)``, or None where the model cannot predict it (a flow variant on a profile without link rates)."""
    try:
        return fn(*args)
    except HnowError:
        return None


def _compare_rows(
    prof: Profile,
    lay: Sequence[str],
    m: Measurement,
    built: Mapping[str, Tree | None],
    variants: Mapping[str, str],
    root: int,
    library: str,
) -> list[ComparisonRow]:
    """Measured rows + predictions of the same tree (``native``: the library's pinned algorithm's model).

    Every row also carries, in ``extra``, the prediction and error of **every** model variant of its operation
    (``predicted_us_by_variant``, ``error_pct_by_variant``), so that the variants can be read side by side."""
    cache: dict[tuple[str, str, str], dict[int, float] | None] = {}

    def common_start(r: Any) -> bool:  # the timing style, modelled as used: the receive posted with the send
        return r.method == "c-common-start" and "common_start" in prof.extensions

    def predicted_by(r: Any, variant: str) -> float | None:
        key = (r.op, r.tree, variant)
        if key not in cache:
            sizes = sorted({x.size for x in m.rows if (x.op, x.tree) == (r.op, r.tree)})
            tree = built.get(r.tree)
            if tree is None:
                nat = _ops.native_for(r.tree, r.op, library)
                t = (
                    None
                    if nat is None
                    else _ops.native_predict(
                        r.op, library, prof, list(lay), sizes, root=root, variant=variant, algorithm=nat
                    )
                )
            else:
                t = _ops.predict(r.op, prof, list(lay), tree, sizes, variant=variant)
            cache[key] = None if t is None else dict(zip(sizes, (float(v) for v in t), strict=True))
        got = None if cache[key] is None else cache[key][r.size]
        if got is not None and common_start(r):
            got += float(_predict.common_start_us(prof, [r.size])[0])
        return got

    out = []
    for r in m.rows:
        predicted = predicted_by(r, variants[r.op])  # the row's own variant: its errors are the user's to see
        by_variant = {
            v: predicted if v == variants[r.op] else _quietly(predicted_by, r, v) for v in _ops.get(r.op).variants
        }
        note, model_tree = "", ""
        if built.get(r.tree) is None:
            nat = _ops.native_for(r.tree, r.op, library)
            if nat is None:
                note = f"{library or 'this MPI library'}'s {r.op} algorithm is not pinned by hnow: nothing to predict"
            elif r.size == 0 and nat.empty_is_noop:
                predicted = None
                by_variant = dict.fromkeys(by_variant)
                note = f"{library} returns at once from an empty collective: the model has nothing to predict"
            else:
                model_tree = nat.model_tree + (" + root copy" if nat.root_copy else "")
                model_tree += " + common start" if common_start(r) else ""
        out.append(
            ComparisonRow(
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
                variant=variants[r.op],
                model_tree=model_tree,
                chosen_for_bytes=_chosen_for(r.tree),
                note=note,
                extra={
                    **{k: r.extra[k] for k in ("fig2_median_us", "sync_median_us") if k in r.extra},
                    "predicted_us_by_variant": by_variant,
                    "error_pct_by_variant": {v: error_pct(p, r.measured_us) for v, p in by_variant.items()},
                },
            )
        )
    return out


# ---- bench, info -------------------------------------------------------------------------------------------------
def bench(
    names: Any,
    *,
    np: int = 2,
    testbed: str | None = None,
    options: Mapping[str, Any] | None = None,
    quick: bool = False,
    output: str | Path | None = None,
    force: bool = False,
    profile_in: str | None = None,
    profile_out: str | None = None,
    launcher: str = "mpiexec",
    launcher_args: Any = (),
    hostfile: str | None = None,
    cluster: str | None = None,
    timeout: float | None = None,
    mpi: str | None = None,
    progress: Progress = None,
) -> BenchResult:
    """Run the seeds' microbenchmarks ``names`` (see :data:`hnowmodel.benchmarks.BENCHMARKS`) on ``np`` ranks.

    ``options`` maps option names (``sizes``, ``window``, ``lengths``, …) to values. ``output``: a folder for
    ``bench.json`` and per benchmark a CSV and a PNG. ``profile_out``: a copy of ``profile_in`` with the measured
    extensions merged in.
    """
    from .. import benchmarks as _b

    launch = _launch(np, launcher, launcher_args, hostfile, timeout, cluster, mpi)
    chosen = _b.check_names(names)
    if launch.np < 2:
        raise InputError(f"--np {launch.np}: the benchmarks need at least 2 ranks")
    opts = _b.check_options(dict(options or {}), launch.np)
    if testbed is not None:
        _testbed(testbed, cluster)
    if profile_out is not None:
        if profile_in is None:
            raise InputError("--profile-out needs --profile-in (or --profile): the profile to add the extensions to")
        Profile.load(profile_in)
        if not any(_b.BENCHMARKS[n].extension for n in chosen):
            raise InputError(
                "--profile-out: these benchmarks measure nothing for the profile (posted-queue, unexpected-queue and "
                "hotspot do)"
            )
        check_output(profile_out, force=force, flag="--profile-out")
    if output is not None:
        check_output(output, force=force, folder=True, flag="--out")
    doc = run_job(launch, BenchJob(tuple(chosen), opts, testbed, bool(quick)), progress)
    run = {k: v for k, v in doc.items() if k not in ("rows", "benchmarks", "extensions")}
    res = BenchResult(tuple(doc["rows"]), doc.get("benchmarks", {}), doc.get("extensions", {}), run)
    written: list[str] = []
    if output is not None:
        written += [str(p) for p in _b.write_outputs(res.to_dict(), output)]
    if profile_out is not None:
        if not res.extensions:
            raise InputError("--profile-out: the run measured no extension (see the benchmarks' notes)")
        where = f"hnow bench {','.join(chosen)} --np {launch.np}" + (f" --testbed {testbed}" if testbed else "")
        written.append(str(_b.merge_extensions(profile_in, profile_out, res.extensions, where, overwrite=force)))
    return replace(res, outputs=tuple(written))


def info(
    np: int = 2,
    *,
    launcher: str = "mpiexec",
    launcher_args: Any = (),
    hostfile: str | None = None,
    cluster: str | None = None,
    timeout: float | None = None,
    mpi: str | None = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Start ``np`` ranks and report the MPI library, its version, the host of each rank and how they were started
    (``mpi_env``: the library hnow chose, the ranks' Python, the launcher)."""
    launch = _launch(np, launcher, launcher_args, hostfile, timeout, cluster, mpi)
    doc = run_job(launch, InfoJob(), progress)
    return {**doc, "mpi_env": launch.mpi_env.describe()}
