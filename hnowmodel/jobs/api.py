"""The public functions that run MPI, gathered: :func:`calibrate`, :func:`measure`, :func:`compare`,
:func:`bench`, :func:`info` (one module per job: :mod:`~hnowmodel.jobs.calibrate_job`,
:mod:`~hnowmodel.jobs.measure_job`, :mod:`~hnowmodel.jobs.compare_job`, :mod:`~hnowmodel.jobs.bench_job`; what they
share: :mod:`~hnowmodel.jobs.checks`).

Each takes a :class:`~hnowmodel.jobs.launcher.Launch` (or the number of ranks) and a frozen settings dataclass;
the ``hnow`` option names given as keywords are gathered into both by name, so the calls of ``docs/api.md`` work::

    import hnowmodel as hm
    prof = hm.calibrate(np=4, testbed="paper", layout="FFSS")
    cmp = hm.compare(prof, np=4, testbed="paper", ops=["bcast"], trees=["binomial", "optimal"], sizes=[0, 4096])
    worst = max(abs(r.error_pct) for r in cmp.rows)

Each validates everything it can before a rank starts, runs ``python -m calibrate`` as a child process through
:func:`hnowmodel.jobs.launcher.run_task`, and returns typed, frozen results (µs and bytes). The caller never
imports mpi4py. Errors are :class:`hnowmodel.errors.HnowError` subclasses naming the bad value.
"""

from __future__ import annotations

from ..treespec import build_trees
from .bench_job import BenchSettings, bench, info
from .calibrate_job import CalibrateSettings, calibrate
from .checks import NATIVE, STATS, Progress, progress_printer, resolve_timing, run_job
from .compare_job import CompareSettings, compare
from .compare_rows import compare_rows
from .measure_job import MeasureSettings, job_groups, measure

# the names older code imported from here (kept as aliases of the public ones)
_compare_rows = compare_rows
_job_groups = job_groups
_progress = progress_printer

__all__ = [
    "calibrate",
    "measure",
    "compare",
    "bench",
    "info",
    "run_job",
    "build_trees",
    "compare_rows",
    "resolve_timing",
    "progress_printer",
    "Progress",
    "CalibrateSettings",
    "MeasureSettings",
    "CompareSettings",
    "BenchSettings",
    "NATIVE",
    "STATS",
]
