"""hnowmodel: communication model of heterogeneous networks of workstations (Banikazemi et al.).

Pure model code (numpy, scipy, networkx): no MPI import anywhere in this package.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> float(prof.ptp_us("slow", "slow", 0))
230.0
"""

from . import errors, layout, options, params, predict, reference, search, sizes, trees
from .errors import HnowError, InputError, LayoutError, MPIRunError, ProfileError, TreeError
from .layout import parse_layout
from .params import Link, NodeType, Profile, paper_profile
from .sizes import parse_sizes

__version__ = "0.1.0"

__all__ = [
    "errors",
    "layout",
    "options",
    "params",
    "predict",
    "reference",
    "search",
    "sizes",
    "trees",
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
