"""The microbenchmark job :func:`bench` and the :func:`info` job (which library, which hosts).

Both take a :class:`~hnowmodel.jobs.launcher.Launch` (or the number of ranks) and the flags' names as keywords,
gathered by name (:func:`hnowmodel.jobs.checks.gather`); ``bench`` also a :class:`BenchSettings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import bench_registry as _b
from ..errors import InputError
from ..io import check_output
from ..params import Profile
from .checks import Progress, check_testbed, gather, run_job
from .launcher import Launch
from .results import BenchResult
from .specs import BenchJob, InfoJob

__all__ = ["BenchSettings", "bench", "info"]


@dataclass(frozen=True)
class BenchSettings:
    """The ``hnow bench`` flags: ``options`` maps benchmark option names (``sizes``, ``window``, ``lengths``, …) to
    values; ``output``: a folder for ``bench.json`` and per benchmark a CSV and a PNG; ``profile_out``: a copy of
    ``profile_in`` with the measured extensions merged in."""

    testbed: str | None = None
    options: Mapping[str, Any] | None = None
    quick: bool = False
    output: str | Path | None = None
    force: bool = False
    profile_in: str | None = None
    profile_out: str | None = None


def bench(
    names: Any,
    launch: Launch | int | None = None,
    settings: BenchSettings | None = None,
    *,
    progress: Progress = None,
    **keywords: Any,
) -> BenchResult:
    """Run the seeds' microbenchmarks ``names`` (see :data:`hnowmodel.bench_registry.BENCHMARKS`) on ``launch.np``
    ranks (:class:`BenchSettings`; ``keywords``: its fields and the :class:`Launch` ones by name)."""
    launch, s = gather("bench", launch, BenchSettings, settings, keywords)
    chosen = _b.check_names(names)
    if launch.np < 2:
        raise InputError(f"--np {launch.np}: the benchmarks need at least 2 ranks")
    opts = _b.check_options(dict(s.options or {}), launch.np)
    if s.testbed is not None:
        check_testbed(s.testbed, launch.cluster)
    if s.profile_out is not None:
        if s.profile_in is None:
            raise InputError("--profile-out needs --profile-in (or --profile): the profile to add the extensions to")
        Profile.load(s.profile_in)
        if not any(_b.BENCHMARKS[n].extension for n in chosen):
            raise InputError(
                "--profile-out: these benchmarks measure nothing for the profile (posted-queue, unexpected-queue and "
                "hotspot do)"
            )
        check_output(s.profile_out, force=s.force, flag="--profile-out")
    if s.output is not None:
        check_output(s.output, force=s.force, folder=True, flag="--out")
    doc = run_job(launch, BenchJob(tuple(chosen), opts, s.testbed, bool(s.quick)), progress)
    run = {k: v for k, v in doc.items() if k not in ("rows", "benchmarks", "extensions")}
    res = BenchResult(tuple(doc["rows"]), doc.get("benchmarks", {}), doc.get("extensions", {}), run)
    written: list[str] = []
    if s.output is not None:
        written += [str(p) for p in _b.write_outputs(res.to_dict(), s.output)]
    if s.profile_out is not None:
        if not res.extensions:
            raise InputError("--profile-out: the run measured no extension (see the benchmarks' notes)")
        where = f"hnow bench {','.join(chosen)} --np {launch.np}" + (f" --testbed {s.testbed}" if s.testbed else "")
        merged = _b.merge_extensions(s.profile_in, s.profile_out, res.extensions, where, overwrite=s.force)
        written.append(str(merged))
    return replace(res, outputs=tuple(written))


def info(launch: Launch | int | None = None, *, progress: Progress = None, **keywords: Any) -> dict[str, Any]:
    """Start ``launch.np`` ranks (default 2; ``keywords``: the :class:`Launch` fields by name) and report the MPI
    library, its version, the host of each rank and how they were started (``mpi_env``: the library hnow chose,
    the ranks' Python, the launcher)."""
    launch, _ = gather("info", launch, None, None, keywords)
    doc = run_job(launch, InfoJob(), progress)
    return {**doc, "mpi_env": launch.mpi_env.describe()}
