"""hnowmodel: communication model of heterogeneous networks of workstations (Banikazemi et al.).

The model and the library: no MPI import anywhere in this package. What runs under MPI (``calibrate``,
``measure``, ``compare``, ``bench``, ``info``) is started as a child process through :mod:`hnowmodel.jobs`.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> float(prof.ptp_us("slow", "slow", 0))
230.0
"""

import sys as _sys

# former module names kept for users' code: hm.benchmarks (the benchmark registry, now hnowmodel.bench_registry) and
# hnowmodel.schedule (a tree's run options, now hnowmodel.runopts: the name no longer looks like the package
# hnowmodel.schedules); registered in sys.modules so ``from hnowmodel.schedule import Schedule`` keeps working
from . import bench_registry as benchmarks
from . import (
    cluster,
    errors,
    export,
    jobs,
    layout,
    libraries,
    ops,
    options,
    outside,
    params,
    predict,
    reference,
    runopts,
    search,
    sizes,
    testbed,
    trees,
    treespec,
    tuning,
)
from . import runopts as schedule
from .errors import HnowError, InputError, LayoutError, MPIRunError, ProfileError, TreeError
from .jobs import (
    Comparison,
    ComparisonRow,
    Launch,
    MeasuredRow,
    Measurement,
    bench,
    calibrate,
    compare,
    imb_compare,
    info,
    measure,
    setup_intelmpi,
    setup_openmpi,
)
from .layout import parse_layout

# the MPI libraries' file formats under their old facade names (hm.mpich: MPICH's selection JSON; hm.ompi_rules:
# Open MPI's rules file), now in the libraries' packages
from .libraries.mpich import selection as mpich
from .libraries.openmpi import rules as ompi_rules
from .params import Link, NodeType, Profile, paper_profile
from .sizes import parse_sizes
from .tuning import tune

_sys.modules[__name__ + ".schedule"] = schedule

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
