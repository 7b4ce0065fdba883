"""``hnow tune`` against exhaustive benchmarking (what the autotuners do), on job shapes hnow never ran before
``--verify`` (issue #35's extrapolation check), on virtual heterogeneous clusters.

1. **Calibrate** on the calibration shape (``--calibrate``, default ``6x1``: the hosts of
   ``experiments/cluster_accuracy.py``, 150/20/50/50/150/20 Mbit/s, one rank each; ``3x2``: its first three hosts
   with two ranks each), ``--layout auto``; its machine time measured. Then, on that shape, the **exhaustive
   baseline**: every algorithm hnow can pin for the library (``native:ALGO``) and the default (``native``), each
   operation and size measured (``hm.compare``), the fastest kept; its machine time measured.
2. **Tune** for the target shapes (``--shapes``, default ``12x1``; ``4x3`` after ``--calibrate 3x2``) from that
   profile (``hm.tune``, no MPI: the hosts take the calibrated pool's types in its order, docs/tune.md).
3. On a cluster of each target shape (hosts of the types the shape gives them, each at its calibrated host's
   rates), **verify** (``hm.tune(..., verify=True)``: the library's default pinned in the launched order against
   the tuned setting in the tuned order) and run the exhaustive baseline there too.

``--mpi mpich|openmpi|intelmpi`` (default ``mpich``) is the library every step runs and tunes for: the baseline pins
that library's algorithms (``native:ALGO``, :func:`hnowmodel.ops.native_algorithms`), ``--verify`` its default and
choices. A profile calibrated under one library can be tuned for another (``--profile``: its costs are the hosts').

The claims (the issue's): every chosen setting measures at least as fast as the default within the spread; where
the exhaustive baseline measures a gain of 10 % or more, hnow's measured gain is within 5 points of it (or above
it: hnow also reorders the ranks, which the autotuners do not); hnow spends no machine time on a target shape
before ``--verify``; its machine time on the calibrated shape (calibration + choosing) beside the exhaustive
baseline's. Writes ``tune_vs_exhaustive.csv`` (one row per shape, operation and size), ``tune_vs_exhaustive.md``
and the profile under ``experiments/out/tune_vs_exhaustive/`` (or ``--out``). Needs root; holds ``--lock`` around
every MPI job; every cluster it brings up is taken down.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cluster_accuracy import SPEC  # the calibration hosts
from collectives_accuracy import refusal
from common import claim, command_line, md_table, outdir, parser, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import HnowError, InputError, MPIRunError
from hnowmodel.jobs import MPI_LIBRARIES, mpi_lock
from hnowmodel.jobs.results import rows_as_dicts
from hnowmodel.sizes import parse_sizes
from hnowmodel.tuning.shapes import check_shape_syntax, parse_shapes, ranks_per_host

#: The issue's targets: a gain the exhaustive baseline finds from this % on is one hnow must find within POINTS.
MIN_GAIN_PCT, POINTS = 10.0, 5.0
#: ``--mpi``'s default, and the library each ``--mpi`` runs (:data:`~hnowmodel.jobs.MPI_LIBRARIES`).
MPI = "mpich"
LIBRARY = MPI_LIBRARIES[MPI].library
SIZES = "16K,64K,256K"
OPS = "bcast,allreduce,alltoall"
#: How hnow tune names a ch4 composition it keeps as MPICH's default (``hnowmodel/libraries/mpich/export.py``).
COMPOSITION = "composition:"
#: MPICH's default as users run it, pinned by nothing (``native:ch4``: hnowmodel/libraries/mpich/algorithms.py).
DEVICE_DEFAULT = "ch4"


def calibration_spec(shape: str, name: str = "tvxcal") -> dict[str, Any]:
    """The calibration cluster: ``HxK`` takes the first ``H`` hosts of cluster_accuracy.py's spec, ``K`` slots each.

    >>> [(h["name"], h["egress_mbit"], h["slots"]) for h in calibration_spec("3x2")["hosts"]]
    [('f1', 150, 2), ('s1', 20, 2), ('m1', 50, 2)]
    """
    n_hosts, per = _dims(shape)
    if n_hosts > len(SPEC["hosts"]):
        raise InputError(f"--calibrate: at most {len(SPEC['hosts'])} hosts, got {shape!r}")
    return {**SPEC, "name": name, "hosts": [{**h, "slots": per} for h in SPEC["hosts"][:n_hosts]]}


def _dims(shape: str) -> tuple[int, int]:
    per = ranks_per_host(shape)
    if per is None:
        raise InputError(f"not a shape HxK: {shape!r}")
    return int(shape.split("x")[0]), per


def target_spec(shape: Any, calibrated: Mapping[str, Any], name: str = "tvxrun") -> tuple[dict[str, Any], str]:
    """A cluster of ``shape`` (a :class:`~hnowmodel.tuning.shapes.Shape`): each host at the rates of the calibrated
    host whose type it takes (``f1.2`` is ``f1``'s twin, named ``f1-2``), and the layout (each rank's type).

    >>> from hnowmodel.tuning.shapes import Shape, ShapeHost
    >>> sh = Shape("2x2", (ShapeHost("f1", "fast", 2), ShapeHost("f1.2", "fast", 2)))
    >>> spec, lay = target_spec(sh, {"hosts": [{"name": "f1", "egress_mbit": 150, "ingress_mbit": 150}]})
    >>> [(h["name"], h["slots"], h["egress_mbit"]) for h in spec["hosts"]], lay
    ([('f1', 2, 150), ('f1-2', 2, 150)], 'fast,fast,fast,fast')
    """
    rates = {h["name"]: h for h in calibrated["hosts"]}
    hosts = [{**rates[h.name.split(".")[0]], "name": h.name.replace(".", "-"), "slots": h.slots} for h in shape.hosts]
    layout = ",".join(h.type for h in shape.hosts for _ in range(h.slots))
    return {"schema": "hnowmodel.cluster/1", "name": name, "hosts": hosts}, layout


def candidates(
    op: str, n: int, sizes: Sequence[int], *, shared_hosts: bool = False, library: str = LIBRARY
) -> list[str]:
    """What the exhaustive baseline runs for ``op`` on ``n`` ranks: the default (``native``) and every algorithm
    hnow pins for ``library`` (``MPICH``, ``Open MPI``, ``Intel MPI``) whose model takes ``n`` ranks at every size
    (MPICH, pinned with its fallback an error, would stop the job on one it cannot run; :func:`_model_takes`), and
    that the library runs on ``n`` ranks (``only_ranks``: Open MPI's ``two_proc`` only on 2). Without
    ``shared_hosts`` (one rank per host) a pinned ch4 composition is left out too: MPICH runs one only on a
    node-aware communicator, which it makes only where some host has several ranks (``MPIR_Comm_create_subcomms``),
    and with the fallback an error the job stops.

    >>> candidates("allgather", 6, [16384])
    ['native', 'native:brucks', 'native:ring']
    >>> [c for c in candidates("bcast", 6, [16384], shared_hosts=True) if "composition" in c or "ch4" in c]
    ['native:composition:alpha', 'native:ch4']
    >>> candidates("allgather", 6, [16384], shared_hosts=True)
    ['native', 'native:brucks', 'native:ring', 'native:ch4']
    >>> candidates("alltoall", 12, [16384], library="Open MPI")
    ['native', 'native:linear', 'native:pairwise', 'native:modified_bruck', 'native:linear_sync']

    ``native:ch4`` (MPICH's default as users run it: nothing pinned, its device collectives on) runs only where hosts
    share ranks: on one rank per host it is MPIR's own selection, which ``native`` (or ``native:default``) runs.
    """
    return ["native"] + [
        f"native:{nat.algorithm}"
        for nat in ops.native_algorithms(op, library)
        if nat.algorithm != "default"
        and nat.only_ranks in (None, n)
        and _model_takes(op, nat, n, sizes, not shared_hosts)
        and (shared_hosts or not (_needs_node_aware(nat.env) or nat.algorithm == DEVICE_DEFAULT))
    ]


def _model_takes(op: str, nat: Any, n: int, sizes: Sequence[int], one_per_host: bool) -> bool:
    """Whether the model of ``nat`` (a :class:`~hnowmodel.libraries.NativeAlgorithm`) runs on ``n`` ranks at every
    size: its model tree or schedule (:func:`~collectives_accuracy.refusal`); for one chosen by size (Open MPI's
    tuned algorithms, each with the fallback the library runs where it cannot: ``ring`` allreduce of fewer
    elements than ranks is recursive doubling), the one that runs at each size, and where hnow models none there
    the algorithm runs all the same, unpredicted (Open MPI's ``basic_linear`` allreduce).

    >>> from hnowmodel import ops
    >>> [a.algorithm for a in ops.native_algorithms("allreduce", "Open MPI")
    ...  if _model_takes("allreduce", a, 12, [16384], True)][:4]
    ['default', 'basic_linear', 'nonoverlapping', 'recursive_doubling']
    """
    if nat.per_layout is not None:
        return True  # what runs depends on the hosts (MPICH's native:ch4, a ch4 composition): it runs, modelled or not
    if nat.by_size is None:
        return not refusal(op, nat.model_tree, n, sizes)
    runs = (nat.tree_at(n, m, one_per_host) for m in sizes)
    return all(not refusal(op, name, n, [m]) for name, m in zip(runs, sizes, strict=True) if name is not None)


def _needs_node_aware(env: Mapping[str, str]) -> bool:
    """A pinned MPICH ch4 composition (``MPIR_CVAR_<COLL>_COMPOSITION``) whose fallback is an error."""
    pins = any(k.endswith("_COMPOSITION") and v != "0" for k, v in env.items())
    return pins and env.get("MPIR_CVAR_COLLECTIVE_FALLBACK") == "error"


class MachineClock:
    """The machine time of MPI jobs (s): only while the job holds the machine's MPI lock, so that the wait for
    other users' jobs on a shared machine is not counted (it is not what the job costs).

    >>> import tempfile
    >>> clock = MachineClock()
    >>> with tempfile.TemporaryDirectory() as d, clock.job(f"{d}/lock"):  # not the machine's lock
    ...     pass
    >>> clock.s >= 0.0
    True
    """

    def __init__(self) -> None:
        self.s = 0.0

    @contextlib.contextmanager
    def job(self, lock: str | None) -> Iterator[None]:
        """Hold ``lock`` (:func:`~hnowmodel.jobs.mpi_lock`) for the body, and count the body's time."""
        with mpi_lock(lock):
            t0 = time.monotonic()
            try:
                yield
            finally:
                self.s += time.monotonic() - t0


def exhaustive(prof: Any, spec: Path, layout: str, tuned: Any, args: Any, csv_path: Path) -> Any:
    """Every candidate of every operation and size of ``tuned`` (a :class:`~hnowmodel.tuning.TuneResult` for this
    shape: its rows name the library's default), measured on ``spec``'s cluster (one job per operation; where a job
    fails, its candidates in halves, the failing ones left out as an autotuner leaves them), every measured row
    written to ``csv_path``; the best per (op, size) (:func:`best_by_case`), the candidates that failed and the
    machine time (s)."""
    op_names = list(dict.fromkeys(r.op for r in tuned.rows))
    sizes = sorted({r.size for r in tuned.rows})
    hosts = hm.cluster.load_spec(str(spec)).hosts
    n = sum(h.slots for h in hosts)
    lib = MPI_LIBRARIES[args.mpi].library
    clock = MachineClock()
    rows: list[dict] = []
    failed: list[dict] = []

    def run(op: str, trees: list[str]) -> list[dict]:
        with clock.job(args.lock):
            cmp = hm.compare(prof, n, ops=[op], trees=trees, sizes=sizes, reps=args.reps, both=False,
                             cluster=str(spec), layout=layout, mpi=args.mpi, progress=True)  # fmt: skip
        return rows_as_dicts(cmp.rows)

    def halves(op: str, trees: list[str]) -> None:
        try:
            rows.extend(run(op, trees))
        except MPIRunError as e:
            if len(trees) == 1:
                failed.append({"op": op, "tree": trees[0], "error": str(e).splitlines()[0]})
            else:
                halves(op, trees[: len(trees) // 2])
                halves(op, trees[len(trees) // 2 :])

    for op in op_names:
        halves(op, candidates(op, n, sizes, shared_hosts=any(h.slots > 1 for h in hosts), library=lib))
    write_csv(csv_path, rows)
    return best_by_case(rows, {(r.op, r.size): r.default for r in tuned.rows}, lib), failed, clock.s


def best_by_case(
    rows: Sequence[Mapping[str, Any]], defaults: Mapping[tuple[str, int], str], library: str = LIBRARY
) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (op, size): the library's default's measured µs, the fastest row's tree and µs, the measured gain over
    the default. The default is the algorithm ``defaults`` names there (what ``hnow tune`` names the library's
    default, as ``--verify`` pins it: ``native:ALGO``); where it is not among the rows, ``native`` if that is the
    library's unpinned default for the operation (:func:`_native_is_unpinned`) and the default named is no ch4
    composition, else none (the gain not known); ``native:ch4`` wherever it ran (MPICH's default as users run it,
    nothing pinned: the baseline runs it on hosts with several ranks), and then the algorithm ``defaults`` names,
    pinned, is that default measured again (its "gain" is noise: none). ``native`` is not always the default:
    MPICH's ``native`` bcast is its binomial pinned, while MPICH's own choice from 9 ranks is a scatter + allgather;
    and ``native`` runs with MPICH's device collectives off, so never the ch4 composition MPICH runs by default
    where hosts have several ranks (``composition:alpha`` for allreduce on 4 x 3: ``native`` there is MPIR's
    reduce_scatter_allgather).

    >>> rows = [{"op": "bcast", "size": 8, "tree": "native", "measured_us": 100.0},
    ...         {"op": "bcast", "size": 8, "tree": "native:ring", "measured_us": 80.0},
    ...         {"op": "bcast", "size": 8, "tree": "native:scatter_ring_allgather", "measured_us": 90.0}]
    >>> got = best_by_case(rows, {("bcast", 8): "scatter_ring_allgather"})[("bcast", 8)]
    >>> got["default"], got["default_us"], got["best"], round(got["gain_pct"], 1), got["candidates"]
    ('native:scatter_ring_allgather', 90.0, 'native:ring', 11.1, 3)
    >>> best_by_case(rows, {})[("bcast", 8)]["gain_pct"]  # bcast's native is no default
    nan
    >>> rows = [{"op": "allreduce", "size": 8, "tree": t, "measured_us": us}
    ...         for t, us in (("native", 9.0), ("native:ring", 3.0))]
    >>> best_by_case(rows, {("allreduce", 8): "composition:alpha"})[("allreduce", 8)]["default"] is None
    True
    >>> rows.append({"op": "allreduce", "size": 8, "tree": "native:ch4", "measured_us": 4.0})
    >>> got = best_by_case(rows, {("allreduce", 8): "composition:alpha"})[("allreduce", 8)]
    >>> got["default"], round(got["gain_pct"], 1)
    ('native:ch4', 25.0)
    >>> rows[-1]["measured_us"] = 3.5  # native:ch4 runs ring here: pinned, ring is the default measured again
    >>> got = best_by_case(rows, {("allreduce", 8): "ring"})[("allreduce", 8)]
    >>> got["best"], got["gain_pct"]
    ('native:ch4', 0.0)
    """
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for key in dict.fromkeys((r["op"], r["size"]) for r in rows):
        mine = {r["tree"]: r["measured_us"] for r in rows if (r["op"], r["size"]) == key}
        mine = {t: us for t, us in mine.items() if math.isfinite(us)}
        named = f"native:{defaults[key]}" if key in defaults else None
        unpinned = _native_is_unpinned(key[0], library) and not (named or "").startswith(f"native:{COMPOSITION}")
        default = named if named in mine else "native" if unpinned and "native" in mine else None
        real = f"native:{DEVICE_DEFAULT}"
        default = real if real in mine else default  # the library's default itself, measured where it ran
        base = mine[default] if default else math.nan
        best = min(mine, key=mine.__getitem__)
        if default == real and best == named:  # the default's own algorithm pinned: the same run, measured twice
            best = default
        gain = 100.0 * (base - mine[best]) / base if base > 0 else math.nan
        out[key] = {"default": default, "default_us": base, "best": best, "best_us": mine[best], "gain_pct": gain,
                    "candidates": len(mine)}  # fmt: skip
    return out


def _native_is_unpinned(op: str, library: str = LIBRARY) -> bool:
    """Whether ``library``'s ``native`` for ``op`` is its own selection, nothing pinned.

    >>> _native_is_unpinned("allreduce"), _native_is_unpinned("bcast"), _native_is_unpinned("alltoall", "Open MPI")
    (True, False, True)
    """
    nat = ops.get(op).native.get(library)
    return nat is not None and nat.algorithm == "default"


def verdict(row: Mapping[str, Any]) -> str:
    """The issue's two checks on one row: the choice not slower than the default beyond the spread (the measured
    gain's upper end is not below 0) and, where the exhaustive gain is >= :data:`MIN_GAIN_PCT`, hnow's measured
    gain at least it minus :data:`POINTS`.

    >>> verdict({"measured_gain_pct": 30.0, "measured_gain_max_pct": 33.0, "exhaustive_gain_pct": 32.0})
    'holds'
    >>> verdict({"measured_gain_pct": 20.0, "measured_gain_max_pct": 23.0, "exhaustive_gain_pct": 32.0})
    'short by 12.0 points'
    >>> verdict({"measured_gain_pct": -9.0, "measured_gain_max_pct": -2.0, "exhaustive_gain_pct": 1.0})
    'slower than the default'
    >>> verdict({"measured_gain_pct": 0.0, "exhaustive_gain_pct": float("nan")})  # the baseline never ran the default
    'not known'
    """
    g, hi, ex = (row.get(k) for k in ("measured_gain_pct", "measured_gain_max_pct", "exhaustive_gain_pct"))
    if g is None or not math.isfinite(g):
        return "not measured"
    if hi is not None and hi < 0:
        return "slower than the default"
    if ex is None or not math.isfinite(ex):
        return "not known"
    if ex >= MIN_GAIN_PCT and g < ex - POINTS:
        return f"short by {ex - g:.1f} points"
    return "holds"


def joined(tuned: Sequence[Any], verified: Sequence[Any], best: Mapping[tuple[str, int], Any]) -> list[dict]:
    """One row per (op, size): the extrapolated choice (``tuned``: no MPI), the verified run's rows (the same
    choice made again on the running cluster, measured), the exhaustive baseline, the verdict."""
    ver = {(r.op, r.size): r for r in verified}
    out = []
    for t in tuned:
        v, b = ver.get((t.op, t.size)), best.get((t.op, t.size), {})
        row = {"shape": t.shape, "op": t.op, "size": t.size, "default": t.default, "chosen": t.chosen,
               "same_choice_when_run": v is not None and (v.chosen, v.order) == (t.chosen, t.order),
               "predicted_gain_pct": t.predicted_gain_pct,
               "measured_gain_pct": _kept_is_zero(v),
               "measured_gain_min_pct": v.measured_gain_min_pct if v else None,
               "measured_gain_max_pct": v.measured_gain_max_pct if v else None,
               "exhaustive_default_us": b.get("default_us"), "exhaustive_best": b.get("best"),
               "exhaustive_best_us": b.get("best_us"), "exhaustive_gain_pct": b.get("gain_pct"),
               "exhaustive_candidates": b.get("candidates")}  # fmt: skip
        out.append({**row, "verdict": verdict(row)})
    return out


def _kept_is_zero(v: Any) -> float | None:
    """The verified row's measured gain; 0 where hnow kept the default without measuring it (it does not model
    it there: the job runs as without hnow), None where nothing was verified."""
    if v is None:
        return None
    if v.measured_gain_pct is None and v.chosen == v.default:
        return 0.0
    return v.measured_gain_pct


def build_parser() -> argparse.ArgumentParser:
    p = parser("tune_vs_exhaustive", __doc__)
    p.add_argument("--calibrate", default="6x1", help="the calibration shape HxK (default 6x1; or 3x2)")
    p.add_argument("--shapes", default=None, help="target shapes (default 12x1, or 4x3 after --calibrate 3x2)")
    p.add_argument("--ops", default=OPS, help=f"operations (default {OPS})")
    p.add_argument("--sizes", default=SIZES, help=f"sizes per rank (default {SIZES})")
    p.add_argument("--reps", type=int, default=5, help="timed calls per measurement, their median (default 5)")
    p.add_argument("--profile", default=None, help="a profile calibrated on the calibration shape (skips step 1)")
    p.add_argument("--no-exhaustive-calibrated", action="store_true", help="skip the baseline on the calibrated shape")
    p.add_argument("--cluster-name", default="tvx", help="the clusters' names: NAMEcal, NAMErun (default tvx)")
    what = "the MPI library whose default and algorithms are measured and tuned for"
    p.add_argument("--mpi", default=MPI, choices=list(MPI_LIBRARIES), help=f"{what} (default {MPI})")
    p.add_argument("--lock", default=None, help="flock this file around every MPI job (a machine shared with others)")
    return p


def check_args(args: argparse.Namespace) -> tuple[list[str], list[int], list[str]]:
    """Shapes, sizes and operations, checked before any cluster comes up (:class:`InputError`).

    >>> check_args(build_parser().parse_args(["--calibrate", "3x2", "--ops", "bcast"]))
    (['4x3'], [16384, 65536, 262144], ['bcast'])
    """
    hm.cluster.load_spec(calibration_spec(args.calibrate, f"{args.cluster_name}cal"))  # the name, checked
    shapes = check_shape_syntax(args.shapes or ("4x3" if _dims(args.calibrate)[1] > 1 else "12x1"))
    sizes = list(parse_sizes(args.sizes, "--sizes"))
    op_names = hm.options.check_ops(args.ops, "--ops")
    hm.options.check_op_sizes(op_names, sizes)
    if args.reps < 1:
        raise InputError(f"--reps must be >= 1, got {args.reps}")
    return shapes, sizes, op_names


def _write_spec(out: Path, doc: Mapping[str, Any], name: str) -> Path:
    path = out / name
    path.write_text(json.dumps(doc, indent=1))
    return path


def calibrated_side(out: Path, op_names: list[str], sizes: list[int], args: Any) -> tuple[Any, Any, dict, dict]:
    """Step 1 on the calibration cluster: the profile, hnow's choice there (no MPI), the exhaustive baseline
    there, the machine times (s)."""
    doc = calibration_spec(args.calibrate, f"{args.cluster_name}cal")
    spec = _write_spec(out, doc, "spec-calibrate.json")
    n = sum(h["slots"] for h in doc["hosts"])
    times: dict[str, float] = {}
    best: dict = {}
    # a given profile and no baseline here: nothing runs on the calibration cluster, none comes up
    idle = args.profile and args.no_exhaustive_calibrated
    with contextlib.nullcontext() if idle else hm.cluster.using(str(spec)):
        clock = MachineClock()
        if args.profile:
            prof = hm.Profile.load(args.profile)
        else:
            with clock.job(args.lock):
                prof = hm.calibrate(n, layout="auto", output=out / "profile.json", force=True, cluster=str(spec),
                                    mpi=args.mpi, progress=True)  # fmt: skip
            times["calibration_s"] = clock.s  # given a profile: not measured here
        t0 = time.monotonic()
        tuned = hm.tune(prof, ops=op_names, sizes=sizes, mpi=args.mpi)
        times["choose_calibrated_s"] = time.monotonic() - t0
        if not args.no_exhaustive_calibrated:
            lay = ",".join(prof.layout)
            csv_path = out / f"exhaustive-{args.calibrate}.csv"
            best, _, times["exhaustive_calibrated_s"] = exhaustive(prof, spec, lay, tuned, args, csv_path)
    return prof, tuned, best, times


def target_side(prof: Any, shape: Any, out: Path, op_names: list[str], sizes: list[int], args: Any) -> Any:
    """Steps 2-3 for one target shape: tune (no MPI), then on its cluster verify and the exhaustive baseline."""
    t0 = time.monotonic()
    tuned = hm.tune(prof, shapes=shape.label, ops=op_names, sizes=sizes, mpi=args.mpi)
    choose_s = time.monotonic() - t0
    doc, layout = target_spec(shape, calibration_spec(args.calibrate), f"{args.cluster_name}run")
    spec = _write_spec(out, doc, f"spec-{shape.label}.json")
    with hm.cluster.using(str(spec)):
        clock = MachineClock()
        with clock.job(args.lock):
            # every size measured, as the baseline measures it: hm.tune's default --verify-max-us leaves a size
            # predicted over 0.25 s unmeasured (on 12 x 1: alltoall 64 and 256 KiB, the rows with hnow's gains)
            ver = hm.tune(prof, np=shape.ranks, cluster=str(spec), layout=layout, verify=True, ops=op_names,
                          sizes=sizes, reps=args.reps, mpi=args.mpi, output=out / f"tune-{shape.label}", force=True,
                          verify_max_us=None, progress=True)  # fmt: skip
        verify_s = clock.s
        best, failed, ex_s = exhaustive(prof, spec, layout, tuned, args, out / f"exhaustive-{shape.label}.csv")
    rows = joined(tuned.rows, ver.rows, best)
    times = {"choose_s": choose_s, "verify_s": verify_s, "exhaustive_s": ex_s}
    return rows, times, [{"shape": shape.label, **f} for f in failed]


def _markdown(rows: list[dict], times: dict, failed: list[dict], args: Any) -> str:
    gained = [r for r in rows if (r["exhaustive_gain_pct"] or 0) >= MIN_GAIN_PCT]
    unknown = sum(r["verdict"] == "not known" for r in rows)  # the library's default not run by the baseline
    slower = [r for r in rows if r["verdict"] == "slower than the default"]
    short = [r for r in gained if r["verdict"] != "holds"]  # a row not measured is no row within the points
    cal_s = times.get("calibration_s")  # None: a given profile (--profile), its calibration not timed here
    hnow_s = None if cal_s is None else cal_s + times["choose_calibrated_s"]
    what = f"{len({r['op'] for r in rows})} operations x {len({r['size'] for r in rows})} sizes"
    body = [
        f"Reproduce with: `{command_line()}` (as root). Library: {MPI_LIBRARIES[args.mpi].library}; "
        f"{args.reps} repetitions, medians.",
        "",
        "## Claims",
        claim("every chosen setting measures at least as fast as the default within the spread", not slower,
              f"{len(slower)} of {len(rows)} rows slower"),  # fmt: skip
        claim(f"where the exhaustive baseline gains >= {MIN_GAIN_PCT:g} %, hnow's measured gain is within "
              f"{POINTS:g} points of it (or above)", not short and not unknown,
              f"{len(gained) - len(short)} of {len(gained)} rows; {unknown} rows not known (default not run)"),
        claim("no machine time on a target shape before --verify (the choice made from the profile alone; the "
              "same choice made again on the running cluster)", all(r["same_choice_when_run"] for r in rows),
              f"{sum(r['same_choice_when_run'] for r in rows)} of {len(rows)} rows the same"),  # fmt: skip
        "",
        "## Machine time (s, while holding the MPI lock; None: not measured in this run)",
        md_table([{"what": "hnow: calibration + choosing (calibrated shape)", "s": hnow_s},
                  {"what": "hnow: choosing alone (no MPI)", "s": times["choose_calibrated_s"]},
                  {"what": f"exhaustive baseline on the calibrated shape ({what})",
                   "s": times.get("exhaustive_calibrated_s")},
                  *({"what": f"{k}", "s": v} for k, v in times.items() if k.startswith(("target", "verify")))]),
        "",
        "## Rows (gains in % of the default's measured time)",
        md_table(rows),
        "",
        "## Candidates the library failed to run (left out of the baseline)",
        md_table(failed) if failed else "(none)",
    ]  # fmt: skip
    return "\n".join(body) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        shape_items, sizes, op_names = check_args(args)
    except HnowError as e:
        p.error(str(e))
    out = outdir(args.out)
    prof, cal_tuned, cal_best, times = calibrated_side(out, op_names, sizes, args)
    rows: list[dict] = []
    failed: list[dict] = []
    for shape in parse_shapes(",".join(shape_items), prof):
        got, t, bad = target_side(prof, shape, out, op_names, sizes, args)
        rows += got
        failed += bad
        times |= {f"target {shape.label} {k}": v for k, v in t.items()}
    cal_rows = [{**r.to_dict(), "exhaustive": cal_best.get((r.op, r.size))} for r in cal_tuned.rows]
    write_csv(out / "tune_vs_exhaustive.csv", rows)
    (out / "calibrated_shape.json").write_text(json.dumps({"times_s": times, "rows": cal_rows}, indent=1))
    write_markdown(out / "tune_vs_exhaustive.md", "hnow tune against exhaustive benchmarking, extrapolated shapes",
                   [_markdown(rows, times, failed, args)])  # fmt: skip
    print((out / "tune_vs_exhaustive.md").read_text())


if __name__ == "__main__":
    main()
