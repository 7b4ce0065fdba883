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

from ..lazy import lazy_names as _lazy_names

#: Where each name of this package is defined, imported on first use (PEP 562): a rank process that needs only
#: :mod:`hnowmodel.jobs.wire` does not load every job module and what they import.
_LAZY = {
    **dict.fromkeys(("find_launcher",), "..mpi_programs"),
    **dict.fromkeys(("build_trees",), "..treespec"),
    **dict.fromkeys(("BenchSettings", "bench", "info"), ".bench_job"),
    **dict.fromkeys(("CalibrateSettings", "calibrate"), ".calibrate_job"),
    **dict.fromkeys(("NATIVE", "Progress", "progress_printer", "resolve_timing", "run_job"), ".checks"),
    **dict.fromkeys(("CompareSettings", "compare"), ".compare_job"),
    **dict.fromkeys(("compare_rows",), ".compared"),
    **dict.fromkeys(("LOOP_NEGLIGIBLE_PCT", "ImbComparison", "ImbRow", "ImbSettings", "imb_compare"), ".imb_job"),
    **dict.fromkeys(("Launch", "Terminated", "run_task", "task_command"), ".launcher"),
    **dict.fromkeys(("LOCK_ENV", "mpi_lock"), ".lock"),
    **dict.fromkeys(("MeasureSettings", "measure"), ".measure_job"),
    **dict.fromkeys(
        (
            "MPI_LIBRARIES",
            "intelmpi_missing",
            "intelmpi_venv",
            "openmpi_missing",
            "openmpi_venv",
            "setup_intelmpi",
            "setup_library",
            "setup_openmpi",
        ),
        ".mpienv",
    ),
    **dict.fromkeys(
        ("BenchResult", "Comparison", "ComparisonRow", "MeasuredRow", "Measurement", "error_pct", "summarize"),
        ".results",
    ),
    **dict.fromkeys(("TIMING_METHODS", "BenchJob", "CalibrateJob", "InfoJob", "MeasureJob"), ".specs"),
}


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

__getattr__, __dir__ = _lazy_names(__name__, {n: (m, n) for n, m in _LAZY.items()}, __all__, globals())
