"""The Intel MPI Benchmarks as an outside reference: :func:`imb_compare` runs the Intel MPI wheel's ``IMB-MPI1``
(the benchmark each operation's registry entry names, ``Operation.imb``: Bcast, Scatter, Gather, Reduce, Allreduce,
Allgather, Reduce_scatter_block, Alltoall; and PingPong) with the same algorithm ``hnow`` pins for a native tree spec,
on the same ranks (one host or a virtual cluster), and puts IMB's ``t_max`` beside hnow's measured and predicted
times. IMB's ``#bytes`` is the registry's ``m`` for each of them (:func:`hnowmodel.outside.registry_m`: the vector of
Reduce/Allreduce, each rank's block of Allgather/Alltoall, each rank's result block of Reduce_scatter_block), so
IMB runs the sizes hnow measures. IMB reduces MPI_FLOAT by default; with a reduction among the operations it runs
with ``-red_data_type double`` (IMB 2021 and later), MPI_SUM on doubles as hnow's reductions.

``IMB-MPI1`` is linked against ``libmpi.so.12`` (MPICH's ABI, which Intel MPI keeps): under Intel MPI it loads the
wheel's library (``LD_LIBRARY_PATH=<env>/lib``), under MPICH the MPICH wheel's (``<prefix>/lib``); Open MPI's
``libmpi.so.40`` is another ABI, refused. It runs as ``IMB-MPI1 Bcast Scatter Gather PingPong -npmin N -msglen FILE
-iter K -iter_policy off -time 600 -root_shift off -sync on`` (``-red_data_type double`` added for a reduction):
every size ``K`` times, root 0, a barrier between calls; each rank times each call alone and averages, ``t_max`` is
the slowest rank's average (µs).

How IMB's loop differs from hnow's timing (docs/intel-mpi.md): hnow's ``sync`` starts each repetition at an instant
announced a few ms ahead and reports the median; IMB runs its repetitions back to back (only a barrier between
them) and reports the slowest rank's mean. On the virtual cluster every link is a token bucket (``tbf``, burst
8 KiB) that is full after idling, so ``sync``'s repetitions start with full buckets and IMB's with nearly empty
ones. hnow's ``fig2`` method runs IMB's loop (``iters`` calls back to back, a barrier after each, the slowest rank's
mean, less a barrier): it is what IMB is compared with by default, and hnow's ``sync`` time of the same calls is
measured beside it. How much IMB's loop changes the time (``loop_effect_pct``, fig2 against sync) depends on the
algorithm: a link busy until the end of one call starts the next with an empty bucket, one idle for a while has
refilled (measured under Intel MPI on the 6-host cluster: +9-12 % for the linear scatter and gather at 64 KiB,
+1 % for binomial trees). The model predicts single calls from full buckets (``predicted_us``), so the prediction
is compared with IMB (``predicted_vs_imb_pct``) only where IMB's loop changes the time by at most
:data:`LOOP_NEGLIGIBLE_PCT` (elsewhere None: the difference is the loop's, which is not modelled).
``predicted_imb_us`` is the prediction with every bucket empty (the profile's ``burst_bytes`` 0), a bound that
IMB's loop does not reach where links idle between their messages.
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import cluster as _cluster
from .. import ops as _ops
from ..errors import InputError
from ..io import check_output
from ..libraries import run_by
from ..mpi_programs import find_launcher
from ..options import check_ops
from ..outside import PingPongCheck, parse_imb, pingpong_checks
from ..params import Profile
from ..sizes import size_tuple
from ..tables import table_text
from .checks import Progress, check_count, check_op_sizes, gather, job_hosts, job_layout, load_profile, stated_types
from .compare_job import CompareSettings, compare
from .launcher import Launch, run_program
from .mpienv import intelmpi_missing, intelmpi_venv
from .specs import TIMING_METHODS

__all__ = [
    "ImbSettings",
    "ImbRow",
    "ImbComparison",
    "imb_compare",
    "imb_program",
    "imb_arguments",
    "IMB_BENCHMARKS",
    "IMB_REDUCTION_DATATYPE",
    "LOOP_NEGLIGIBLE_PCT",
    "imb_default_ops",
]

#: IMB's loop changes hnow's time by at most this (|fig2 − sync| / sync, %) where the prediction, which is of single
#: calls, is compared with IMB's t_max.
LOOP_NEGLIGIBLE_PCT = 2.0
#: IMB's benchmark name of each operation.
IMB_BENCHMARKS: Mapping[str, str] = {o.name: o.imb for o in _ops.OPERATIONS.values() if o.imb}
#: IMB's ``-red_data_type`` of hnow's reductions (MPI_SUM on MPI_DOUBLE; IMB's own default is float).
IMB_REDUCTION_DATATYPE = "double"


def imb_default_ops(tree: str, library: str) -> tuple[str, ...]:
    """The operations ``hnow bench imb`` compares by default: those IMB-MPI1 has a benchmark of and whose algorithm
    ``tree`` names under ``library`` (Intel MPI's binomial, for one, is pinned for bcast, scatter, gather and reduce).

    >>> imb_default_ops("native:binomial", "MPICH"), imb_default_ops("native:binomial", "Intel MPI")
    (('bcast', 'scatter', 'gather', 'reduce'), ('bcast', 'scatter', 'gather', 'reduce'))
    >>> imb_default_ops("native", "MPICH")[3:]
    ('reduce', 'allreduce', 'allgather', 'reduce_scatter', 'alltoall')
    """
    return tuple(o for o in IMB_BENCHMARKS if _ops.native_for(tree, o, library) is not None)


@dataclass(frozen=True)
class ImbSettings:
    """What to compare (the ``hnow bench imb`` flags): ``ops`` (None: :func:`imb_default_ops`) at ``sizes`` bytes
    per rank (each operation's ``m``) with ``tree`` (``native`` or ``native:ALGO``: what IMB and hnow both run),
    IMB's ``iters`` repetitions per size, ``pingpong`` (IMB's PingPong between ranks 0 and 1 beside the profile's
    one-way time), hnow's ``reps`` and timing ``method``
    (``fig2``, default: IMB's loop - each repetition ``iters`` calls back to back, a barrier after each, the mean,
    the slowest rank; ``sync``: hnow's single calls from a common start, full token buckets); ``layout``: the node type
    of each rank (default: each host's by name, the profile's or ``types``', as ``hnow compare``); ``variants``:
    model variant per operation; ``output``: a folder for ``imb_compare.csv``, ``imb_compare.md`` and ``imb.txt``
    (IMB's own output)."""

    ops: Any = None
    sizes: Any = (65536, 131072, 262144)
    tree: str = "native"
    iters: int = 20
    pingpong: bool = True
    reps: int = 7
    method: str = "fig2"
    layout: Any = None
    types: Any = None
    variants: Mapping[str, str] | None = None
    output: str | Path | None = None
    force: bool = False


def _pct(a: float | None, b: float | None) -> float | None:
    """``100·(a − b)/b`` (%), None when either is missing or ``b`` is 0."""
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return None
    return 100.0 * (a - b) / b


@dataclass(frozen=True)
class ImbRow:
    """One operation at one size (bytes per rank) on ``np`` ranks: IMB's times (µs; ``imb_t_max_us`` its headline),
    hnow's measured time of the same algorithm (by ``method``; ``measured_other_us``: by the other method) and its
    prediction with full token buckets (``predicted_us``, as ``sync`` times) and with empty ones
    (``predicted_imb_us``, as IMB's back-to-back loop runs), each error against IMB's ``t_max`` and the
    prediction's against hnow's measurement, ``100·(x − reference)/reference``."""

    op: str
    size: int
    np: int
    imb_t_max_us: float
    imb_t_min_us: float | None
    imb_t_avg_us: float | None
    imb_repetitions: int | None
    measured_us: float | None
    predicted_us: float | None
    predicted_imb_us: float | None
    model_tree: str = ""
    variant: str = ""
    method: str = ""
    other_method: str = ""
    measured_other_us: float | None = None

    @property
    def measured_vs_imb_pct(self) -> float | None:
        return _pct(self.measured_us, self.imb_t_max_us)

    @property
    def loop_effect_pct(self) -> float | None:
        """How much IMB's loop changes hnow's time of the calls: ``100·(fig2 − sync)/sync`` (None without both)."""
        loop, single = (
            (self.measured_us, self.measured_other_us)
            if self.method == "fig2"
            else (self.measured_other_us, self.measured_us)
        )
        return _pct(loop, single) if {self.method, self.other_method} == {"fig2", "sync"} else None

    @property
    def predicted_vs_imb_pct(self) -> float | None:
        """The prediction (single calls) against IMB's t_max, where IMB's loop changes the time by at most
        :data:`LOOP_NEGLIGIBLE_PCT`; None elsewhere."""
        effect = self.loop_effect_pct
        if effect is None or abs(effect) > LOOP_NEGLIGIBLE_PCT:
            return None
        return _pct(self.predicted_us, self.imb_t_max_us)

    @property
    def predicted_vs_measured_pct(self) -> float | None:
        return _pct(self.predicted_us, self.measured_us)

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "size": self.size,
            "np": self.np,
            "imb_t_max_us": self.imb_t_max_us,
            "imb_t_min_us": self.imb_t_min_us,
            "imb_t_avg_us": self.imb_t_avg_us,
            "imb_repetitions": self.imb_repetitions,
            "measured_us": self.measured_us,
            "predicted_us": self.predicted_us,
            "predicted_imb_us": self.predicted_imb_us,
            "measured_vs_imb_pct": self.measured_vs_imb_pct,
            "loop_effect_pct": self.loop_effect_pct,
            "predicted_vs_imb_pct": self.predicted_vs_imb_pct,
            "predicted_vs_measured_pct": self.predicted_vs_measured_pct,
            "model_tree": self.model_tree,
            "variant": self.variant,
            "method": self.method,
            "other_method": self.other_method,
            "measured_other_us": self.measured_other_us,
        }


@dataclass(frozen=True)
class ImbComparison:
    """IMB beside hnow: ``rows`` per operation and size, ``pingpong`` (IMB's one-way PingPong times beside the
    profile's), the IMB command line (``command``), the library, hnow's run description and IMB's own output."""

    rows: tuple[ImbRow, ...]
    pingpong: tuple[PingPongCheck, ...]
    command: tuple[str, ...]
    library: str
    tree: str
    run: Mapping[str, Any] = field(default_factory=dict)
    imb_text: str = ""
    outputs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "tree": self.tree,
            "command": list(self.command),
            "rows": [r.to_dict() for r in self.rows],
            "pingpong": [c.to_dict() for c in self.pingpong],
            "run": dict(self.run),
            "outputs": list(self.outputs),
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """The rows as a readable table (µs and %, rounded)."""

        def r1(x: float | None) -> float | None:
            return None if x is None else round(x, 1)

        return [
            {
                "op": r.op,
                "size": r.size,
                "imb_t_max_us": r1(r.imb_t_max_us),
                "measured_us": r1(r.measured_us),
                "meas_vs_imb_%": r1(r.measured_vs_imb_pct),
                f"{r.other_method or 'other'}_us": r1(r.measured_other_us),
                "predicted_us": r1(r.predicted_us),
                "loop_effect_%": r1(r.loop_effect_pct),
                "pred_vs_imb_%": r1(r.predicted_vs_imb_pct),
                "pred_imb_us": r1(r.predicted_imb_us),
                "pred_vs_meas_%": r1(r.predicted_vs_measured_pct),
                "model_tree": r.model_tree,
            }
            for r in self.rows
        ]

    def markdown(self) -> str:
        """The comparison as a markdown table with the IMB command that made it."""
        rows = self.table_rows()
        cols = list(rows[0]) if rows else []
        lines = [f"IMB-MPI1 beside hnow, {self.library}, `{self.tree}`", "", "`" + " ".join(self.command) + "`", ""]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
        return "\n".join(lines) + "\n"


def imb_program(library: str) -> tuple[Path, Path]:
    """The ``IMB-MPI1`` to run (the Intel MPI wheel's) and the folder of the ``libmpi.so.12`` it loads under
    ``library`` (``intelmpi`` or ``mpich``); :class:`InputError` for another library or a missing environment."""
    if library not in ("intelmpi", "mpich"):
        raise InputError(
            f"--mpi {library}: IMB-MPI1 (the Intel MPI wheel's) is linked against libmpi.so.12, MPICH's ABI, which "
            "Intel MPI and MPICH share; choose --mpi intelmpi or --mpi mpich"
        )
    missing = intelmpi_missing()
    if missing:
        raise InputError(f"IMB-MPI1 comes with the Intel MPI wheel: {missing}")
    venv = intelmpi_venv()
    imb = venv / "bin" / "IMB-MPI1"
    if not imb.is_file():
        raise InputError(f"no IMB-MPI1 at {imb} (rebuild the environment: hnow setup-intelmpi --force)")
    if library == "intelmpi":
        return imb, venv / "lib"
    # the MPICH wheel puts libmpi.so.12 under its prefix's lib, beside the bin that holds mpiexec
    for lib in (Path(find_launcher("mpiexec")).resolve().parent.parent / "lib", Path(sys.prefix) / "lib"):
        if (lib / "libmpi.so.12").is_file():
            return imb, lib
    raise InputError(
        "--mpi mpich: no MPICH libmpi.so.12 found beside mpiexec or this Python (install hnowmodel[mpich])"
    )


def imb_arguments(ops: Sequence[str], np: int, msglen_file: str, iters: int, pingpong: bool) -> list[str]:
    """IMB-MPI1's arguments: the benchmarks of ``ops`` (and PingPong), only on ``np`` processes, the sizes of
    ``msglen_file``, ``iters`` repetitions per size whatever they cost, root 0 every time, a barrier between calls;
    with a reduction among ``ops``, hnow's datatype (:data:`IMB_REDUCTION_DATATYPE`; the op is MPI_SUM either way).

    >>> imb_arguments(["bcast"], 4, "sizes.txt", 20, False)[:5]
    ['Bcast', '-npmin', '4', '-msglen', 'sizes.txt']
    >>> imb_arguments(["allreduce"], 2, "sizes.txt", 20, False)[-2:]
    ['-red_data_type', 'double']
    """
    names = [IMB_BENCHMARKS[o] for o in ops] + (["PingPong"] if pingpong else [])
    reduction = any(_ops.get(o).reduction for o in ops)
    return [
        *names,
        *("-npmin", str(np), "-msglen", msglen_file, "-iter", str(iters), "-iter_policy", "off", "-time", "600"),
        *("-root_shift", "off", "-sync", "on"),
        *(("-red_data_type", IMB_REDUCTION_DATATYPE) if reduction else ()),
    ]


def _pins(tree: str, ops: Sequence[str], library: str) -> dict[str, str]:
    """What makes ``library`` run ``tree``'s algorithm for ``ops`` (nothing for a default); IMB's ranks get them."""
    env: dict[str, str] = {}
    for op in ops:
        nat = _ops.native_for(tree, op, library)
        if nat is None:
            raise InputError(f"--tree {tree}: {library} has no such algorithm for {op}")
        env.update(nat.env)
    return env


def _no_burst(prof: Profile) -> Profile:
    """``prof`` with empty token buckets (``burst_bytes`` 0): links as IMB's back-to-back loop finds them."""
    ext = dict(prof.extensions or {})
    net = dict(ext.get("network") or {})
    if not net.get("burst_bytes"):
        return prof
    net["burst_bytes"] = 0
    ext["network"] = net
    return replace(prof, extensions=ext)


def imb_compare(
    profile: Profile | str,
    launch: Launch | int | None = None,
    settings: ImbSettings | None = None,
    *,
    progress: Progress = None,
    **keywords: Any,
) -> ImbComparison:
    """Run IMB-MPI1 and hnow's measurement of the same algorithm (``settings.tree``) on ``launch.np`` ranks (plain
    MPI or ``launch.cluster``, kept up for both) and put IMB's ``t_max`` beside hnow's measured and predicted µs.
    ``profile``: a Profile or a file (the prediction's); ``keywords``: the :class:`ImbSettings` and :class:`Launch`
    fields by name."""
    launch, s = gather("imb", launch, ImbSettings, settings, keywords)
    lib = launch.mpi_env.library
    name = lib.name if lib is not None else "mpich"
    imb, libdir = imb_program(name)
    library = lib.library if lib is not None else "MPICH"
    ops = imb_default_ops(s.tree, library) if s.ops is None else tuple(check_ops(s.ops, "--ops"))
    if not ops:
        raise InputError(f"--tree {s.tree}: {library} runs it for none of IMB's operations; give --ops")
    for op in ops:
        if op not in IMB_BENCHMARKS:
            raise InputError(f"--ops: hnow names no IMB-MPI1 benchmark of {op} (IMB's: {', '.join(IMB_BENCHMARKS)})")
    sizes = size_tuple(s.sizes)
    check_op_sizes(ops, sizes)
    _ops.check_native(s.tree, ops)
    pins = _pins(s.tree, ops, library)
    check_count(s.iters, "--iters")
    if launch.np < 2:
        raise InputError(f"--np {launch.np}: IMB's collectives and PingPong need at least 2 ranks")
    prof = load_profile(profile)
    if prof is None:
        raise InputError("--profile is required: the profile the times are predicted with")
    if s.output is not None:
        check_output(s.output, force=s.force, folder=True, flag="--out")
    # the layout first, once, before anything starts: hnow's comparison below takes it as given
    hosts = job_hosts(launch, s.layout, prof, s.types, progress)
    lay = job_layout(s.layout, launch.np, None, prof, hosts=hosts, types=stated_types(launch, s.types))
    up = _cluster.using(launch.cluster) if launch.cluster is not None else contextlib.nullcontext()
    with up, tempfile.TemporaryDirectory(prefix="hnow-imb-") as tmp:  # one cluster for IMB and hnow
        msglen = Path(tmp) / "msglen.txt"
        msglen.write_text("".join(f"{m}\n" for m in sizes))
        cmd = [str(imb), *imb_arguments(ops, launch.np, str(msglen), s.iters, s.pingpong)]
        env = {"LD_LIBRARY_PATH": str(libdir), **pins}
        text = run_program(launch, cmd, env=env)
        cmp = compare(
            prof,
            launch,
            CompareSettings(
                ops=ops,
                trees=(s.tree,),
                sizes=sizes,
                reps=s.reps,
                iters=s.iters,
                method=s.method,
                layout=lay,
                variants=s.variants,
            ),
            progress=progress,
        )
    rows, pp = _join(text, cmp, prof, lay, s, library)
    shown = ["IMB-MPI1", *cmd[1:]]
    shown[shown.index("-msglen") + 1] = "<sizes: " + ",".join(map(str, sizes)) + ">"
    out = ImbComparison(tuple(rows), pp, tuple(shown), library, s.tree, dict(cmp.run), text)
    if s.output is not None:
        out = replace(out, outputs=_write(out, Path(s.output)))
    return out


def _join(
    text: str, cmp: Any, prof: Profile, lay: Sequence[str], s: ImbSettings, library: str
) -> tuple[list[ImbRow], tuple[PingPongCheck, ...]]:
    """IMB's rows (at the job's process count) joined with hnow's by operation and ``m`` (IMB's ``#bytes`` as the
    registry's ``m``: the same for every benchmark IMB runs here)."""
    imb_rows, _ = parse_imb(text)
    n = len(lay)
    ours = {(r.op, r.size): r for r in cmp.rows if r.tree == s.tree}
    empty = run_by(_no_burst(prof), library)  # as the library runs over it (Open MPI's rendezvous)
    rows = []
    for ir in imb_rows:
        if ir.op not in IMB_BENCHMARKS or ir.np != n or (ir.op, ir.m_bytes) not in ours:
            continue
        if ir.benchmark != IMB_BENCHMARKS[ir.op]:  # another IMB benchmark of the operation (Reduce_scatter)
            continue
        r = ours[(ir.op, ir.m_bytes)]
        nat = _ops.native_for(s.tree, ir.op, library)
        pred_imb = None
        if r.predicted_us is not None and nat is not None:
            t = _ops.native_predict(ir.op, library, empty, lay, [r.size], variant=r.variant or None, algorithm=nat)
            pred_imb = None if t is None or math.isnan(float(t[0])) else float(t[0])
        t_max = ir.t_max_us if ir.t_max_us is not None else ir.t_us
        other = next((m for m in TIMING_METHODS if m != r.method), "")
        o_us = r.extra.get(f"{other}_median_us") if other else None
        times = {"measured_us": r.measured_us, "predicted_us": r.predicted_us, "predicted_imb_us": pred_imb}
        rows.append(
            ImbRow(
                op=ir.op,
                size=r.size,
                np=n,
                imb_t_max_us=t_max,
                imb_t_min_us=ir.t_min_us,
                imb_t_avg_us=ir.t_avg_us,
                imb_repetitions=ir.repetitions,
                **times,
                model_tree=r.model_tree,
                variant=r.variant,
                method=r.method,
                other_method=other,
                measured_other_us=None if o_us is None else float(o_us),
            )
        )
    pp = pingpong_checks(imb_rows, prof, list(lay[:2])) if s.pingpong else ()
    return rows, pp


def _write(out: ImbComparison, folder: Path) -> tuple[str, ...]:
    """``imb_compare.csv`` (one row per operation and size), ``imb_compare.md`` and ``imb.txt`` in ``folder``."""
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    rows = [r.to_dict() for r in out.rows]
    paths = (folder / "imb_compare.csv", folder / "imb_compare.md", folder / "imb.txt")
    with open(paths[0], "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["op"])
        w.writeheader()
        w.writerows(rows)
    md = out.markdown()
    if out.pingpong:
        md += "\nPingPong (one way) beside the profile:\n\n```\n" + table_text([c.to_dict() for c in out.pingpong])
        md += "\n```\n"
    paths[1].write_text(md)
    paths[2].write_text(out.imb_text)
    return tuple(str(p) for p in paths)
