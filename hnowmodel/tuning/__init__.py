"""``hnow tune`` / ``hm.tune``: from one calibration to the files each MPI library reads, for the job shapes a user
runs, chosen by the model without benchmarking each shape; ``verify`` measures them on the shape the job runs on.

The package, by idea: :mod:`.shapes` (``--shapes``: ``HxK`` from the calibrated pool, ``calibrated``,
``@hostfile``), :mod:`.choose` (one shape for one library: :func:`hnowmodel.export.export` on the shape, and the
rank order that pays most), :mod:`.verify` (the default and the tuned settings measured with ``hm.compare``),
:mod:`.files` (``env.sh``, the Slurm fragment, the report), :mod:`.figure` (the report's ``tune.png``), :mod:`.run`
(:func:`tune`). docs/tune.md says how to use it.
"""

from .choose import ShapeTuning, TuneRow, gain_pct, tune_shape
from .run import DEFAULT_SIZES, TuneResult, TuneSettings, tune
from .shapes import Shape, ShapeHost, check_shape_syntax, parse_shapes, pool, shape_profile

__all__ = [
    "tune",
    "TuneSettings",
    "TuneResult",
    "TuneRow",
    "ShapeTuning",
    "tune_shape",
    "gain_pct",
    "DEFAULT_SIZES",
    "Shape",
    "ShapeHost",
    "check_shape_syntax",
    "parse_shapes",
    "pool",
    "shape_profile",
]
