"""What runs under MPI: typed job specs, the launcher, the wire protocol, and the public functions.

``hm.calibrate``, ``hm.measure``, ``hm.compare``, ``hm.bench`` and ``hm.info`` (one module per job:
:mod:`~hnowmodel.jobs.calibrate_job`, :mod:`~hnowmodel.jobs.measure_job`, :mod:`~hnowmodel.jobs.compare_job`,
:mod:`~hnowmodel.jobs.bench_job`; ``hm.imb_compare``, the Intel MPI Benchmarks beside hnow:
:mod:`~hnowmodel.jobs.imb_job`; what they share: :mod:`~hnowmodel.jobs.checks`; each takes a :class:`Launch` (or
the number of ranks) and a frozen settings dataclass, the ``hnow`` option names given as keywords gathered into
both by name, so ``hm.compare(prof, np=4, testbed="paper", ops=["bcast"], trees=["optimal"])`` works) start
``python -m calibrate`` as a child process under ``mpiexec``/``srun`` (:mod:`hnowmodel.jobs.launcher`) and return
frozen results (:mod:`hnowmodel.jobs.results`). Which MPI library runs the ranks (MPICH, or Open MPI / Intel MPI in
an environment of its own made by :func:`setup_library`) is :mod:`hnowmodel.jobs.mpienv`'s. This package never
imports mpi4py.
"""

from ..mpi_programs import find_launcher
from ..treespec import build_trees
from .bench_job import BenchSettings, bench, info
from .calibrate_job import CalibrateSettings, calibrate
from .checks import NATIVE, Progress, progress_printer, resolve_timing, run_job
from .compare_job import CompareSettings, compare
from .compare_rows import compare_rows
from .imb_job import LOOP_NEGLIGIBLE_PCT, ImbComparison, ImbRow, ImbSettings, imb_compare
from .launcher import Launch, Terminated, run_task, task_command
from .lock import LOCK_ENV, mpi_lock
from .measure_job import MeasureSettings, measure
from .mpienv import (
    MPI_LIBRARIES,
    intelmpi_missing,
    intelmpi_venv,
    openmpi_missing,
    openmpi_venv,
    setup_intelmpi,
    setup_library,
    setup_openmpi,
)
from .results import BenchResult, Comparison, ComparisonRow, MeasuredRow, Measurement, error_pct, summarize
from .specs import TIMING_METHODS, BenchJob, CalibrateJob, InfoJob, MeasureJob

__all__ = [
    "calibrate",
    "measure",
    "compare",
    "bench",
    "info",
    "imb_compare",
    "ImbSettings",
    "ImbRow",
    "ImbComparison",
    "LOOP_NEGLIGIBLE_PCT",
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
    "Launch",
    "Terminated",
    "mpi_lock",
    "MPI_LIBRARIES",
    "setup_openmpi",
    "openmpi_venv",
    "openmpi_missing",
    "setup_intelmpi",
    "setup_library",
    "intelmpi_venv",
    "intelmpi_missing",
    "LOCK_ENV",
    "find_launcher",
    "run_task",
    "task_command",
    "BenchResult",
    "Comparison",
    "ComparisonRow",
    "MeasuredRow",
    "Measurement",
    "error_pct",
    "summarize",
    "TIMING_METHODS",
    "BenchJob",
    "CalibrateJob",
    "InfoJob",
    "MeasureJob",
]
