"""``hm.tune``: from one profile (or a calibration made first) to the files each MPI library reads, for every job
shape asked for, without running a collective on those shapes; with ``verify``, measured on the shape the job runs on.

>>> from hnowmodel.params import Profile, paper_profile
>>> doc = paper_profile().to_dict()
>>> doc["nodes"] = [{"rank": r, "host": f"n{r}", "type": t} for r, t in enumerate(["fast", "slow", "fast", "slow"])]
>>> res = tune(Profile.from_dict(doc), shapes="8x1", mpi="mpich", sizes=[1024, 65536])
>>> [(r.shape, r.op, r.size, r.ranks) for r in res.rows][:2]
[('8x1', 'bcast', 1024, 8), ('8x1', 'bcast', 65536, 8)]
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import ops as _ops
from ..errors import InputError
from ..export import LIBRARY_FORMATS
from ..export.choose import LibraryFormat
from ..io import check_output
from ..jobs import CalibrateSettings, Launch, calibrate, progress_printer
from ..jobs.checks import Progress, check_count, gather, job_layout, load_profile, placement_hosts
from ..jobs.hostfile import read_hostfile
from ..jobs.mpienv import MPI_LIBRARIES, check_mpi
from ..layout import Layout
from ..options import check_ops
from ..params import Profile
from ..sizes import format_size, size_tuple
from ..stepfiles import read_steps
from .choose import ShapeTuning, TuneRow, tune_shape
from .files import write_report, write_shape
from .shapes import Shape, check_shape_syntax, oversubscribed, parse_shapes, ranks_per_host, shape_from_layout
from .verify import VERIFY_MAX_US, one_run_us, too_long, verify

__all__ = ["DEFAULT_SIZES", "STEPS_FOLDER", "TuneSettings", "TuneResult", "tune", "cut_short"]

#: The sizes tuned for by default (bytes per rank): 1 B to 4 MiB, a factor of 4 apart.
DEFAULT_SIZES: tuple[int, ...] = tuple(4**i for i in range(12))


@dataclass(frozen=True)
class TuneSettings:
    """What to tune (the ``hnow tune`` flags): ``shapes`` (``--shapes``: :func:`~.shapes.parse_shapes`; None: the
    calibrated shape, or with ``verify`` only the shape the job runs on), ``ops`` (None: every registered operation the
    library has algorithms hnow models for; the reductions only from a profile with the reduction cost γ, the others
    said in a note; given: a reduction without γ refused), ``sizes`` (bytes per rank), ``layout`` (the node type of each
    rank of the job: for the calibration made first, e.g. ``auto``, and for ``verify``), ``verify`` (measure the default
    and the tuned settings on the job's ranks, ``reps`` repetitions each, every size but those whose one run hnow
    predicts longer than ``verify_max_us``, µs; None or 0: every size), ``output`` (a new folder, or an empty one;
    ``force``: write into one that is not), ``calibrate_sizes`` (the calibration's grid), ``quick`` (the calibration
    made first with fewer sizes and repetitions, as ``hnow calibrate --quick``)."""

    shapes: Any = None
    ops: Any = None
    sizes: Any = DEFAULT_SIZES
    layout: Any = None
    verify: bool = False
    reps: int = 5
    output: str | Path | None = None
    force: bool = False
    calibrate_sizes: Any = None
    quick: bool = False
    verify_max_us: float | None = VERIFY_MAX_US


@dataclass(frozen=True)
class TuneResult:
    """The rows (:class:`~.choose.TuneRow`: one per shape, library, operation and size), the shapes tuned (and the
    one verified, ``verified``), the libraries, notes (operations not tuned, choices measured slower than the
    default), where the profile came from, the files written (``paths``: shape/library -> file -> path; ``report``)
    and the wall time (s), with the machine time spent calibrating (``calibration_s``, 0 for a given profile);
    ``warnings``: what is allowed but worth saying (more ranks per host than the host has cores), one line each."""

    rows: tuple[TuneRow, ...]
    shapes: tuple[Shape, ...]
    libraries: tuple[str, ...]
    notes: tuple[str, ...]
    profile_source: str
    verified: str | None = None
    paths: Mapping[str, Any] = field(default_factory=dict)
    wall_time_s: float = 0.0
    calibration_s: float = 0.0
    warnings: tuple[str, ...] = ()

    @property
    def slower(self) -> tuple[TuneRow, ...]:
        """The rows whose choice measured slower than the library's default."""
        return tuple(r for r in self.rows if r.slower)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "shapes": [
                {"label": s.label, "ranks": s.ranks, "hosts": [[h.name, h.type, h.slots] for h in s.hosts]}
                for s in self.shapes
            ],
            "libraries": list(self.libraries),
            "verified": self.verified,
            "slower": [r.to_dict() for r in self.slower],
            "notes": list(self.notes),
            "profile": self.profile_source,
            "paths": dict(self.paths),
            "wall_time_s": self.wall_time_s,
            "calibration_s": self.calibration_s,
            "warnings": list(self.warnings),
        }


def _formats(mpi: str | None, verifying: bool) -> list[LibraryFormat]:
    """The libraries to tune for: ``--mpi``'s, else every one (MPICH alone with ``--verify``: it runs)."""
    name = check_mpi(mpi)
    if name is None and verifying:
        name = "mpich"
    if name is None:
        return list(LIBRARY_FORMATS.values())
    library = MPI_LIBRARIES[name].library
    return [f for f in LIBRARY_FORMATS.values() if f.library == library]


def _ops_for(given: Any, library: str, notes: list[str]) -> list[str]:
    """The operations to tune for ``library``: ``given`` (each one it has algorithms hnow models for), else every
    registered one it has them for (the others named in ``notes``)."""
    if given is not None:
        names = check_ops(given, "--ops")
        for op in names:
            if not _ops.native_choices(op, library):
                raise InputError(f"--ops: hnow models none of {library}'s own algorithms for {op}")
        return names
    names = [op for op in _ops.names() if _ops.native_choices(op, library)]
    notes += [
        f"{op}: hnow models none of {library}'s algorithms for it; not tuned" for op in _ops.names() if op not in names
    ]
    return names


def _with_gamma(prof: Profile, ops: dict[str, list[str]], given: bool, notes: list[str]) -> dict[str, list[str]]:
    """``ops`` (library -> operations) without the reductions when ``prof`` has no reduction cost γ: refused in one
    line when the operations were given (:meth:`hnowmodel.ops.Operation.reduce_costs` says why), else left out and
    said in one note."""
    if prof.has_reduce_cost:
        return ops
    need = [op for op in dict.fromkeys(o for names in ops.values() for o in names) if _ops.get(op).reduction]
    if not need:
        return ops
    if given:
        raise InputError(f"--ops: {_ops.missing_gamma(*need)}, or hnow tune without --profile (it calibrates first)")
    notes.append(f"not tuned: {_ops.missing_gamma(*need)}")
    return {lib: [o for o in names if o not in need] for lib, names in ops.items()}


def _sizes(sizes: Any) -> list[int]:
    got = sorted(set(size_tuple(sizes)))
    if not got or got[0] < 1:
        raise InputError("--sizes: tune for sizes of at least 1 byte (an empty collective returns at once)")
    return got


def _run_shape(prof: Profile, launch: Launch, layout: Any) -> tuple[Shape, bool]:
    """The shape the job runs on (its layout: ``--layout``, else the profile's for this many ranks; its hosts
    where hnow places the ranks) and whether its order can be changed (hnow knows its hosts)."""
    hosts = placement_hosts(launch)
    lay = job_layout(layout, launch.np, None, prof, hosts=hosts)
    if lay is None:
        raise InputError(
            f"--verify: give --layout (the node type of each of the {launch.np} ranks; the profile was calibrated "
            f"on {len(prof.layout)})"
        )
    if lay.host_names is None and hosts is not None and len(set(hosts)) == lay.n_hosts == len(hosts):
        # one rank per host: the layout does not carry the names, the tuned order must (tuned_launch reorders them)
        lay = Layout(list(lay), lay.hosts, hosts)
    slots = set(lay.slots.tolist())
    label = f"run-{lay.n_hosts}x{slots.pop()}" if len(slots) == 1 else "run"
    return shape_from_layout(label, lay), hosts is not None


def _check_verify_max(value: Any) -> float | None:
    """``--verify-max-us``: None or a number of µs >= 0 (0: no limit).

    >>> _check_verify_max(0), _check_verify_max(1e5)
    (0.0, 100000.0)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise InputError(f"--verify-max-us must be a number of µs >= 0 (0: measure every size), got {value!r}")
    return float(value)


def _too_long_note(rows: tuple[TuneRow, ...], max_us: float | None) -> list[str]:
    """The note naming the sizes ``verify`` left unmeasured because one run is predicted over ``max_us``.

    >>> row = TuneRow("4x1", "MPICH", "bcast", 4194304, 4, 4, "a", "b", 3e6, 2e6, 33.3, "launched")
    >>> _too_long_note((row,), 250_000.0)
    ['not measured, one run predicted over 250,000 µs (--verify-max-us): bcast 4M (3.0 s)']
    """
    gone = too_long(rows, max_us)
    if not gone:
        return []
    what = ", ".join(f"{r.op} {format_size(r.size)} ({one_run_us(r) / 1e6:.1f} s)" for r in gone)
    return [f"not measured, one run predicted over {max_us:,.0f} µs (--verify-max-us): {what}"]


def _slower_note(r: TuneRow) -> str:
    """The note naming a choice that measured slower than the default, with the spread of the gain.

    >>> row = TuneRow("4x1", "MPICH", "op", 1024, 4, 4, "a", "b", 1.0, 0.5, 50.0, "launched", 10.0, 11.0, -10.0)
    >>> _slower_note(row)
    'slower than the default: MPICH op 1K on 4x1: b measured -10.0 % (spread ?..?)'
    """
    lo, hi = (f"{x:+.1f}" if x is not None else "?" for x in (r.measured_gain_min_pct, r.measured_gain_max_pct))
    return (
        f"slower than the default: {r.library} {r.op} {format_size(r.size)} on {r.shape}: {r.chosen} measured "
        f"{r.measured_gain_pct:+.1f} % (spread {lo}..{hi})"
    )


#: Where a tune that calibrates first saves the calibration's finished steps, in its output folder.
STEPS_FOLDER = "calibration"


def cut_short(output: str | Path | None) -> bool:
    """Whether ``output`` is the folder of a tune cut short: finished calibration steps (``calibration/``) and no
    report yet (``tune.json`` is written last); a rerun continues there without ``--force``.

    >>> cut_short("/nonexistent/hnow-tune")
    False
    """
    if output is None:
        return False
    p = Path(output)
    return bool(read_steps(p / STEPS_FOLDER)) and not (p / "tune.json").exists()


def _check_before_calibrating(items: list[str], launch: Launch) -> None:
    """Refuse, before the calibration runs, a shape it cannot serve: ranks sharing a host (``HxK``, K > 1) when
    no two of its ranks share a host (then it measures no shared memory) or all share this one (then it measures
    them as separate nodes), and a hostfile's host it does not run on (where the placement is known)."""
    hosts = placement_hosts(launch)
    local = hosts is None and launch.cluster is None and not launch.hostfile and launch.kind != "srun"
    one_host = local or (hosts is not None and len(set(hosts)) == 1)
    one_per_host = hosts is not None and len(set(hosts)) == len(hosts)
    for item in items:
        if item.startswith("@") and hosts is not None:
            gone = [e.host for e in read_hostfile(item[1:]) if e.host not in hosts]
            if gone:
                raise InputError(f"--shapes {item}: host {gone[0]!r} is not one the calibration runs on")
        if (ranks_per_host(item) or 1) > 1 and (one_host or one_per_host):
            raise InputError(
                f"--shapes {item}: several ranks per host need a calibration with several ranks on each of several "
                "hosts (its shared-memory costs); these ranks run "
                + ("all on one host" if one_host else "one per host")
            )


def _calibrate(launch: Launch, s: TuneSettings, out: Path | None, progress: Progress) -> Profile:
    steps = None if out is None else out / STEPS_FOLDER  # a rerun into the same folder takes the finished steps
    prof = calibrate(
        launch,
        CalibrateSettings(layout=s.layout, sizes=s.calibrate_sizes, quick=s.quick, steps=steps),
        progress=progress,
    )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        prof.save(out / "profile.json")
    return prof


def _tune_all(
    prof: Profile,
    jobs: list[tuple[Shape, bool]],
    fmts: list[LibraryFormat],
    ops: Mapping[str, list[str]],
    sizes: list[int],
    say: Callable[[str], None],
) -> list[ShapeTuning]:
    out = []
    total = len(jobs) * len(fmts)
    for shape, reorder in jobs:
        for f in fmts:
            say(f"tune: [{len(out) + 1}/{total}] {f.library} on {shape.describe()}")
            out.append(tune_shape(prof, shape, f, ops[f.library], sizes, reorder=reorder))
    return out


def tune(
    profile: Profile | str | None = None,
    launch: Launch | int | None = None,
    settings: TuneSettings | None = None,
    *,
    progress: Progress = None,
    **keywords: Any,
) -> TuneResult:
    """Tune ``settings.shapes`` for the library of ``mpi`` (None: every library; MPICH with ``verify``) from
    ``profile`` (a Profile or a file; None: calibrate first on ``launch``'s ranks). No collective runs on a shape;
    with ``verify`` the default and the tuned settings are measured on ``launch``'s ranks. ``keywords``: the fields
    of :class:`TuneSettings` and of :class:`~hnowmodel.jobs.Launch` by name (``np``, ``cluster``, ``hostfile``,
    ``mpi``, ...). Every input is checked before any MPI run."""
    t0 = time.monotonic()
    launch, s = gather("tune", launch, TuneSettings, settings, keywords)
    say = progress_printer(progress) or (lambda line: None)
    fmts = _formats(launch.mpi, s.verify)
    sizes = _sizes(s.sizes)
    check_shape_syntax(s.shapes)
    check_count(s.reps, "--reps")
    max_us = _check_verify_max(s.verify_max_us)
    if s.quick and profile is not None:
        raise InputError("--quick: it makes the calibration made first quicker; with --profile nothing is calibrated")
    resume = profile is None and cut_short(s.output)  # reads the steps: a file of another version refused here
    out = check_output(s.output, force=s.force or resume, folder=True) if s.output is not None else None
    notes: list[str] = []
    ops = {f.library: _ops_for(s.ops, f.library, notes) for f in fmts}
    prof = load_profile(profile)
    source = "given"
    t_cal = 0.0
    if prof is None:
        _check_before_calibrating(check_shape_syntax(s.shapes), launch)
        say(f"tune: calibrating {launch.np} ranks first")
        prof = _calibrate(launch, s, out, progress)
        t_cal, source = time.monotonic() - t0, f"calibrated now on {launch.np} ranks"
    ops = _with_gamma(prof, ops, s.ops is not None, notes)  # a given profile: before any MPI run
    jobs = [(shape, True) for shape in (parse_shapes(s.shapes, prof) if s.shapes or not s.verify else ())]
    run = _run_shape(prof, launch, s.layout if source == "given" else None) if s.verify else None
    warned = oversubscribed([shape for shape, _ in [*jobs, *([run] if run else [])]])
    if warned:
        say(warned)  # before the verification runs: said once, and kept in the result
    tunings = _tune_all(prof, [*jobs, *([run] if run else [])], fmts, ops, sizes, say)
    if run is not None:
        st = tunings[-1]
        where = out / st.shape.label / st.fmt.key if out is not None else Path(tempfile.mkdtemp(prefix="hnow-tune-"))
        got = verify(prof, launch, st, where, reps=s.reps, max_us=max_us, progress=progress, say=say)
        tunings[-1] = replace(st, rows=got)
        notes += _too_long_note(st.rows, max_us)
    rows = tuple(r for st in tunings for r in st.rows)
    notes += [f"{st.fmt.library} on {st.shape.label}: rank order {st.order}" for st in tunings]
    notes += [_slower_note(r) for r in rows if r.slower]
    res = TuneResult(
        rows,
        tuple(st.shape for st in tunings[:: len(fmts)]),
        tuple(f.library for f in fmts),
        tuple(notes),
        source,
        run[0].label if run else None,
        calibration_s=t_cal,
        warnings=(warned,) if warned else (),
    )
    if out is not None:
        paths: dict[str, Any] = {f"{st.shape.label}/{st.fmt.key}": write_shape(st, out) for st in tunings}
        res = replace(res, paths=paths, wall_time_s=time.monotonic() - t0)
        paths["report"] = write_report(out, [r.to_dict() for r in rows], res.to_dict())
        say(f"tune: wrote {out}")
    return replace(res, wall_time_s=time.monotonic() - t0)
