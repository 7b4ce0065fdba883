"""The calibration job: :func:`calibrate` measures S, R per node type and X on the ranks and returns the profile.

``calibrate(launch, settings, *, progress, **keywords)``: ``launch`` is a :class:`~hnowmodel.jobs.launcher.Launch`
or the number of ranks, ``settings`` a :class:`CalibrateSettings`; the flags' names as keywords are gathered into
both by name (:func:`hnowmodel.jobs.checks.gather`): ``hm.calibrate(np=4, testbed="paper", layout="auto")``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import cluster as _cluster
from ..errors import InputError, LayoutError
from ..io import check_output
from ..layout import parse_layout
from ..params import Profile
from ..sizes import size_tuple
from ..stepfiles import check_steps_folder, remove_steps
from ..testbed import Testbed
from .checks import Progress, check_count, check_testbed, gather, run_job
from .hostfile import read_hostfile
from .launcher import Launch
from .specs import CalibrateJob

__all__ = ["CalibrateSettings", "calibrate", "calibrate_with_natives", "steps_folder", "launch_context"]


@dataclass(frozen=True)
class CalibrateSettings:
    """What to calibrate and how (the ``hnow calibrate`` flags). ``testbed``: ``"paper"``, a testbed file or a
    :class:`~hnowmodel.testbed.Testbed` (default: plain MPI); ``layout``: node type of each rank (``FFSS``, a list,
    ``@file``) or ``"auto"`` to discover the groups by measuring; ``sizes`` (bytes) of the fits; ``output``: also
    write the profile there (refused if it exists, unless ``force``). On real MPI the C kernels time everything
    (``kernels="auto"``; ``"python"`` forces the Python kernels) in ``rounds`` interleaved rounds of isolated
    messages ``gap_us`` apart. ``steps``: the folder where each finished step of the measurement is saved, and from
    which a rerun with the same hosts, options and versions takes it instead of measuring it again
    (:mod:`hnowmodel.stepfiles`); default with ``output``: ``<output>.steps``, removed once the profile is written."""

    testbed: str | Testbed | None = None
    layout: str | Sequence[str] | None = None
    sizes: Any = None
    network: str | None = None
    regime: str = "auto"
    precision: float = 0.025
    quick: bool = False
    kernels: str = "auto"
    rounds: int | None = None
    gap_us: float | None = None
    output: str | Path | None = None
    force: bool = False
    steps: str | Path | None = None


def calibrate(
    launch: Launch | int | None = None,
    settings: CalibrateSettings | None = None,
    *,
    progress: Progress = None,
    **keywords: Any,
) -> Profile:
    """Calibrate the model on ``launch.np`` ranks (default 2) and return the :class:`~hnowmodel.params.Profile`
    (µs, bytes). ``keywords``: the fields of :class:`CalibrateSettings` and :class:`Launch` by name (``np``,
    ``launcher``, ``launcher_args``, ``hostfile``, ``cluster``, ``timeout``, ``mpi``: the MPI library, ``mpich``
    or ``openmpi``, default whatever ``mpiexec`` is found). The profile's provenance says how it was measured."""
    launch, settings = gather("calibrate", launch, CalibrateSettings, settings, keywords)
    return calibrate_with_natives(launch, settings, progress)[0]


def _check(launch: Launch, s: CalibrateSettings) -> tuple[Testbed | None, Any, tuple[int, ...] | None]:
    """Everything checkable before a rank starts; the testbed, the layout spec and the size grid."""
    if s.kernels not in ("auto", "c", "python"):
        raise InputError(f"--kernels {s.kernels!r}: choose from auto, c, python")
    if s.rounds is not None:
        check_count(s.rounds, "--rounds")
    gap = s.gap_us
    if gap is not None and not (isinstance(gap, (int, float)) and math.isfinite(gap) and 0 <= gap <= 1e6):
        raise InputError(f"--gap-us {gap!r}: expected a number of µs in 0..1e6")
    p = s.precision
    if not (isinstance(p, (int, float)) and math.isfinite(p) and 0 < p < 1):
        raise InputError(f"--precision {p!r}: expected a fraction between 0 and 1, e.g. 0.025")
    if s.regime not in ("auto", "below", "above"):
        raise InputError(f"--regime {s.regime!r}: choose from auto, below, above")
    tb = check_testbed(s.testbed, launch.cluster)
    layout = ",".join(s.layout) if isinstance(s.layout, (list, tuple)) else s.layout
    if layout is not None and layout != "auto" and tb is not None:
        got = parse_layout(layout, list(tb.types))
        if len(got) != launch.np:
            raise LayoutError(f"--layout has {len(got)} ranks but --np is {launch.np}")
    grid = None if s.sizes is None else tuple(sorted(set(size_tuple(s.sizes))))
    if grid is not None and len(grid) < 2:
        raise InputError("--sizes: the fits need at least two different sizes")
    if s.output is not None:
        check_output(s.output, force=s.force)
    if steps_folder(s) is not None:
        check_steps_folder(steps_folder(s))
    return tb, layout, grid


def steps_folder(s: CalibrateSettings) -> Path | None:
    """Where the finished steps go (absolute: the ranks may start elsewhere): ``steps``, else ``<output>.steps``.

    >>> steps_folder(CalibrateSettings(output="/tmp/p.json")).name
    'p.json.steps'
    """
    if s.steps is not None:
        return Path(s.steps).resolve()
    return None if s.output is None else Path(f"{s.output}.steps").resolve()


def calibrate_with_natives(
    launch: Launch,
    settings: CalibrateSettings,
    progress: Progress = None,
    native_ops: Sequence[str] = (),
    native_sizes: Sequence[int] = (),
) -> tuple[Profile, dict[str, Any] | None]:
    """:func:`calibrate`, also timing the native collectives ``native_ops`` at ``native_sizes`` (bytes) in the same
    rounds (real MPI); returns them too (None if none were timed)."""
    s = settings
    tb, layout, grid = _check(launch, s)
    job = CalibrateJob(
        testbed=None if tb is None else (s.testbed if isinstance(s.testbed, str) else _inline_testbed(tb)),
        layout=layout,
        sizes=grid,
        network=s.network,
        regime=s.regime,
        precision=float(s.precision),
        quick=bool(s.quick),
        kernels=s.kernels,
        rounds=s.rounds,
        gap_us=s.gap_us,
        native_ops=tuple(native_ops),
        native_sizes=tuple(native_sizes),
        steps=None if steps_folder(s) is None else str(steps_folder(s)),
        steps_context=None if steps_folder(s) is None else launch_context(launch),
    )
    doc = run_job(launch, job, progress)
    interleaved = doc.pop("interleaved_native", None)
    if isinstance(doc.get("provenance"), dict):
        doc["provenance"]["mpi_env"] = launch.mpi_env.describe()  # which library, Python and launcher ran it
    prof = Profile.from_dict(doc, where="calibration result")
    if s.output is not None:
        prof.save(s.output, overwrite=s.force)
        if s.steps is None:  # the default folder of steps served this profile only: the profile holds them now
            _remove_folder(steps_folder(s))
    return prof, interleaved


def launch_context(launch: Launch) -> dict[str, Any]:
    """What a calibration's finished steps depend on beyond what its ranks see: the MPI library asked for, the
    launcher's arguments, the virtual cluster's spec (its links' rates: the same host names on other links measure
    otherwise) and the hostfile's hosts and slots.

    >>> launch_context(Launch(np=2))
    {'mpi': None, 'launcher_args': [], 'cluster': None, 'hostfile': None}
    """
    cluster = None if launch.cluster is None else _cluster.to_dict(_cluster.load_spec(launch.cluster))
    hosts = None if not launch.hostfile else [[e.host, e.slots] for e in read_hostfile(launch.hostfile)]
    return {"mpi": launch.mpi, "launcher_args": list(launch.launcher_args), "cluster": cluster, "hostfile": hosts}


def _remove_folder(folder: Path | None) -> None:
    if folder is not None and folder.is_dir():
        remove_steps(folder)
        try:
            folder.rmdir()
        except OSError:  # something else is in it: it stays
            pass


def _inline_testbed(tb: Testbed) -> str:
    raise InputError(
        f"testbed {tb.name!r}: pass a testbed by name ('paper') or file path; in-memory testbeds cannot be sent to "
        "the ranks"
    )
