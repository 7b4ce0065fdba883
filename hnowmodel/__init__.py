"""hnowmodel: communication model of heterogeneous networks of workstations (Banikazemi et al.).

The model and the library: no MPI import anywhere in this package. What runs under MPI (``calibrate``,
``measure``, ``compare``, ``bench``, ``info``) is started as a child process through :mod:`hnowmodel.jobs`.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> float(prof.ptp_us("slow", "slow", 0))
230.0
"""

import importlib as _importlib
import sys as _sys

from .errors import HnowError, InputError, LayoutError, MPIRunError, ProfileError, TreeError

#: What ``hm.NAME`` is, imported on first use (PEP 562) so a rank process or a CLI command loads only what it
#: needs: NAME -> (module, attribute or None for the module itself). Former names kept for users' code:
#: ``hm.benchmarks`` (the benchmark registry, now :mod:`hnowmodel.bench_registry`), ``hm.schedule`` (a tree's run
#: options, now :mod:`hnowmodel.runopts`: the name no longer looks like the package :mod:`hnowmodel.schedules`),
#: ``hm.mpich`` and ``hm.ompi_rules`` (the MPI libraries' file formats, now in the libraries' packages).
_LAZY = {
    **{
        m: (f".{m}", None)
        for m in (
            "cluster",
            "errors",
            "export",
            "jobs",
            "layout",
            "libraries",
            "ops",
            "options",
            "outside",
            "params",
            "predict",
            "reference",
            "runopts",
            "search",
            "sizes",
            "testbed",
            "trees",
            "treespec",
            "tuning",
        )
    },  # fmt: skip
    "benchmarks": (".bench_registry", None),
    "schedule": (".runopts", None),
    "mpich": (".libraries.mpich.selection", None),
    "ompi_rules": (".libraries.openmpi.rules", None),
    **{
        n: (".jobs", n)
        for n in (
            "Comparison",
            "ComparisonRow",
            "Launch",
            "MeasuredRow",
            "Measurement",
            "bench",
            "calibrate",
            "compare",
            "imb_compare",
            "info",
            "measure",
            "setup_intelmpi",
            "setup_openmpi",
        )
    },  # fmt: skip
    "parse_layout": (".layout", "parse_layout"),
    **{n: (".params", n) for n in ("Link", "NodeType", "Profile", "paper_profile")},
    "parse_sizes": (".sizes", "parse_sizes"),
    "tune": (".tuning", "tune"),
}


def __getattr__(name: str):
    """``hm.NAME``: imported from :data:`_LAZY` on first use and kept."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _importlib.import_module(where[0], __name__)
    if where[1] is not None:
        value = getattr(value, where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# ``from hnowmodel.schedule import Schedule`` keeps working (the former module name of hnowmodel.runopts)
from . import runopts as _runopts  # noqa: E402

_sys.modules[__name__ + ".schedule"] = _runopts

__version__ = "0.1.0"

__all__ = [
    "calibrate",
    "measure",
    "compare",
    "bench",
    "imb_compare",
    "info",
    "tune",
    "setup_openmpi",
    "setup_intelmpi",
    "Comparison",
    "ComparisonRow",
    "Launch",
    "MeasuredRow",
    "Measurement",
    "benchmarks",
    "cluster",
    "export",
    "jobs",
    "mpich",
    "ompi_rules",
    "ops",
    "testbed",
    "errors",
    "layout",
    "libraries",
    "options",
    "outside",
    "params",
    "predict",
    "reference",
    "runopts",
    "schedule",
    "search",
    "sizes",
    "trees",
    "treespec",
    "tuning",
    "HnowError",
    "InputError",
    "LayoutError",
    "MPIRunError",
    "ProfileError",
    "TreeError",
    "Link",
    "NodeType",
    "Profile",
    "paper_profile",
    "parse_layout",
    "parse_sizes",
    "__version__",
]
