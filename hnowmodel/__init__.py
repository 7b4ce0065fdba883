"""hnowmodel: communication model of heterogeneous networks of workstations (Banikazemi et al.).

The model and the library: no MPI import anywhere in this package. What runs under MPI (``calibrate``,
``measure``, ``compare``, ``bench``, ``info``) is started as a child process through :mod:`hnowmodel.jobs`.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> float(prof.ptp_us("slow", "slow", 0))
230.0
"""

import sys as _sys

from . import runopts as _runopts  # its former name hnowmodel.schedule, registered below
from .errors import HnowError, InputError, LayoutError, MPIRunError, ProfileError, TreeError
from .lazy import lazy_names as _lazy_names

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
    },
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
    },
    "parse_layout": (".layout", "parse_layout"),
    **{n: (".params", n) for n in ("Link", "NodeType", "Profile", "paper_profile")},
    "parse_sizes": (".sizes", "parse_sizes"),
    "tune": (".tuning", "tune"),
}


# ``from hnowmodel.schedule import Schedule`` keeps working (the former module name of hnowmodel.runopts)
_sys.modules[__name__ + ".schedule"] = _runopts

__version__ = "0.1.0"

__all__ = [*_LAZY, "HnowError", "InputError", "LayoutError", "MPIRunError", "ProfileError", "TreeError", "__version__"]

__getattr__, __dir__ = _lazy_names(__name__, _LAZY, __all__, globals())
