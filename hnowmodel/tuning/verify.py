"""``hnow tune --verify``: the library's default and the tuned settings measured on the shape the job runs on
(:func:`verify`), with the timing of ``hnow compare`` (``hm.compare``: synchronised single collectives, the median
of the repetitions; the spread is their min-max) and the pinning of ``experiments/export_gain.py``: the default is
the library's own algorithm for that operation and size pinned as ``native:ALGO`` in the launched order, the tuned
setting the chosen algorithm pinned as ``native:ALGO`` with the ranks in the tuned order (a copy of the cluster
spec, or of the hostfile, with its hosts in that order). Where the choice is the default in the launched order,
nothing differs: the default's run is the tuned one too (gain 0, the spread that of its repetitions); where hnow does
not model the library's default there, it is not measured (nothing pins it). A size whose one run hnow predicts longer
than ``max_us`` (``--verify-max-us``, :data:`VERIFY_MAX_US`) is not measured either (:func:`too_long`): the timing runs
each setting some 16 times, so a 4 MiB collective over a 25 Mbit/s link would cost minutes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import cluster as _cluster
from .. import ops as _ops
from ..errors import InputError
from ..io import atomic_write, write_json_atomic
from ..jobs import CompareSettings, Launch, compare
from ..jobs.checks import Progress
from ..jobs.hostfile import HostEntry, format_hostfile, read_hostfile
from ..options import check_op_sizes
from ..params import Profile
from .choose import ShapeTuning, TuneRow, gain_pct

__all__ = ["VERIFY_MAX_US", "verify", "tuned_launch", "measured_gains", "too_long", "one_run_us"]

#: ``--verify``'s default limit: a size whose one run of the default or the chosen setting hnow predicts longer
#: than this (µs) is tuned and written but not measured. The timing runs each setting once untimed and 15 times
#: timed (``calibrate.timing.time_sync_c`` with 5 repetitions), so a size at the limit costs about 8 s of MPI time.
VERIFY_MAX_US = 250_000.0


def _spec(op: str, library: str, algorithm: str) -> str | None:
    """``native:ALGO`` when ``library`` can be pinned to ``algorithm`` for ``op``, else None."""
    spec = f"native:{algorithm}"
    return spec if _ops.native_for(spec, op, library) is not None else None


def _runs(op: str, size: int) -> bool:
    """Whether ``op`` runs at ``size`` bytes as the measuring task runs it (a reduction sums whole doubles: 1 B
    is chosen for, as the library's file says, but not measured).

    >>> _runs("bcast", 1), _runs("allreduce", 4), _runs("allreduce", 4096)
    (True, False, True)
    """
    try:
        check_op_sizes([op], [size])
    except InputError:
        return False
    return True


def one_run_us(r: TuneRow) -> float:
    """The longer of the default's and the chosen setting's predicted times of one run (µs; 0 where neither is
    predicted): what :func:`too_long` holds against ``--verify-max-us``."""
    return max(r.default_us or 0.0, r.chosen_us or 0.0)


def too_long(rows: Sequence[TuneRow], max_us: float | None) -> list[TuneRow]:
    """The rows whose one run of the default or of the chosen setting hnow predicts longer than ``max_us`` (µs;
    None or 0: none): :func:`verify` leaves them unmeasured.

    >>> row = TuneRow("4x1", "MPICH", "bcast", 1024, 4, 4, "a", "b", 300_000.0, 200_000.0, 33.3, "launched")
    >>> [r.size for r in too_long([row, replace(row, size=64, default_us=9.0, chosen_us=8.0)], 250_000.0)]
    [1024]
    >>> too_long([row], None)
    []
    """
    if not max_us:
        return []
    return [r for r in rows if one_run_us(r) > max_us]


def _blocks(hosts: Sequence[str]) -> list[tuple[str, int]]:
    """``hosts`` (one per rank) as (host, ranks) blocks, each host once (a hostfile or spec can say no more)."""
    out: list[tuple[str, int]] = []
    for h in hosts:
        if out and out[-1][0] == h:
            out[-1] = (h, out[-1][1] + 1)
        else:
            out.append((h, 1))
    if len({h for h, _ in out}) != len(out):
        raise InputError(f"--verify: the tuned order {' '.join(hosts)} splits a host's ranks; a hostfile cannot say it")
    return out


def tuned_launch(launch: Launch, st: ShapeTuning, folder: Path) -> Launch:
    """``launch`` with its hosts in ``st``'s tuned order: a copy of its cluster spec (named ``<name>t``) or of its
    hostfile, written into ``folder``; ``launch`` itself in the launched order."""
    if not st.reordered:
        return launch
    blocks = _blocks(st.hosts_in_order)
    folder.mkdir(parents=True, exist_ok=True)
    if launch.cluster is not None:
        spec = _cluster.load_spec(launch.cluster)
        by_name = {h.name: h for h in spec.hosts}
        name = _cluster.copy_name(spec)
        tuned = _cluster.ClusterSpec(name, tuple(by_name[h] for h, _ in blocks))
        path = folder / f"cluster-{name}.json"
        write_json_atomic(path, _cluster.to_dict(tuned))
        return replace(launch, cluster=str(path))
    if launch.hostfile:
        read_hostfile(launch.hostfile)  # readable (it was placed from)
        path = atomic_write(
            folder / "hostfile-tuned", format_hostfile(tuple(HostEntry(h, k) for h, k in blocks), "hydra")
        )
        return replace(launch, hostfile=str(path))
    raise InputError("--verify: the ranks' hosts are unknown (no --cluster or --hostfile): cannot run the tuned order")


def _measure(
    prof: Profile, launch: Launch, layout: Sequence[str], specs: Mapping[str, list[int]], op: str, how: dict[str, Any]
) -> dict[tuple[str, int], Any]:
    """Measure ``specs`` (tree spec -> sizes) of ``op`` on ``launch`` with ``layout``, each spec at its own sizes
    only; (spec, size) -> row. ``hm.compare`` runs every tree at every size it is given, so the specs sharing a
    list of sizes are one job: a spec is never run at a size it was not chosen for (a library's algorithm pinned
    where it does not apply can fail the job, and the sizes no row asked for would cost time)."""
    groups: dict[tuple[int, ...], list[str]] = {}
    for spec, szs in specs.items():
        groups.setdefault(tuple(sorted(set(szs))), []).append(spec)
    got: dict[tuple[str, int], Any] = {}
    for sizes, trees in groups.items():
        settings = CompareSettings(
            layout=",".join(layout), ops=[op], trees=trees, sizes=list(sizes), reps=how["reps"], both=False
        )
        cmp = compare(prof, launch, settings, progress=how["progress"])
        got.update({(r.tree, r.size): r for r in cmp.rows})
    return got


def measured_gains(default: Any, tuned: Any) -> dict[str, Any]:
    """The measured fields of a :class:`TuneRow` from the default's and the tuned setting's compared rows
    (``measured_us``, ``min_us``, ``max_us``).

    >>> from types import SimpleNamespace as R
    >>> base, new = R(measured_us=100.0, min_us=95.0, max_us=110.0), R(measured_us=80.0, min_us=78.0, max_us=90.0)
    >>> g = measured_gains(base, new)
    >>> g["measured_gain_pct"], round(g["measured_gain_min_pct"], 3), g["slower"]
    (20.0, 5.263, False)
    """
    d, t = default.measured_us, tuned.measured_us
    g = gain_pct(d, t)
    lo = gain_pct(default.min_us, tuned.max_us) if math.isfinite(default.min_us) else None
    hi = gain_pct(default.max_us, tuned.min_us) if math.isfinite(default.max_us) else None
    return {
        "measured_default_us": d,
        "measured_tuned_us": t,
        "measured_gain_pct": g,
        "measured_gain_min_pct": lo,
        "measured_gain_max_pct": hi,
        "slower": None if g is None else g < 0,
    }


def verify(
    prof: Profile,
    launch: Launch,
    st: ShapeTuning,
    folder: Path,
    *,
    reps: int = 5,
    max_us: float | None = VERIFY_MAX_US,
    progress: Progress = None,
    say: Callable[[str], None] | None = None,
) -> tuple[TuneRow, ...]:
    """``st``'s rows with the default and the tuned settings measured on ``launch`` (its ranks are ``st.shape``,
    launched in order), but those :func:`too_long` for ``max_us``; the tuned order's cluster spec or hostfile goes
    into ``folder``."""
    lib = st.fmt.library
    skip = {(r.op, r.size) for r in too_long(st.rows, max_us)}
    how = {"reps": reps, "progress": progress}
    lay = st.shape.layout
    tuned_lay = [lay[r] for r in st.perm]
    tuned_run = tuned_launch(launch, st, folder)
    out: list[TuneRow] = []
    for op in dict.fromkeys(r.op for r in st.rows):
        rows = [r for r in st.rows if r.op == op]
        base: dict[str, list[int]] = {}
        new: dict[str, list[int]] = {}
        for r in rows:
            d, c = _spec(op, lib, r.default), _spec(op, lib, r.chosen)
            if d is None or c is None or not _runs(op, r.size) or (op, r.size) in skip:
                continue
            base.setdefault(d, []).append(r.size)
            if c != d or st.reordered:  # the same setting as the default: the default's run is the tuned one
                new.setdefault(c, []).append(r.size)
        if say is not None and base:
            say(f"tune --verify: {op}: measuring the default and the tuned settings ({lib}, {st.shape.ranks} ranks)")
        got_d = _measure(prof, launch, lay, base, op, how)
        got_t = _measure(prof, tuned_run, tuned_lay, new, op, how) if new else {}
        for r in rows:
            d, c = _spec(op, lib, r.default), _spec(op, lib, r.chosen)
            t = got_t.get((c, r.size)) if c != d or st.reordered else got_d.get((d, r.size))
            if (d, r.size) in got_d and t is not None:
                out.append(replace(r, **measured_gains(got_d[(d, r.size)], t)))
            else:
                out.append(r)
    return tuple(out)
