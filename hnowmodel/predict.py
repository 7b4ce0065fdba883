"""The one way to predict: ``hm.predict(op, profile, layout, algorithm, sizes)`` - µs per size, as ``hnow predict``.

``algorithm`` is anything ``hnow predict --tree`` takes (:mod:`hnowmodel.treespec`): a tree family (``binomial``,
``kary:3``, ``hosts:binomial/chain``), a :class:`~hnowmodel.trees.Tree`, a tree file ``@file.json``, a tree the
model chooses (``optimal[:OP][:SIZE]``, ``fnf[:SIZE]``; a bare ``optimal``/``fnf`` is chosen at each size for
``op``), the MPI library's own algorithm (``native``, ``native:ALGO``, with ``library=``), or one of the operation's
algorithms that are not trees (:attr:`hnowmodel.ops.Operation.algorithms`: a message schedule, by name or as an
:class:`~hnowmodel.schedules.generator.Algorithm`). The model variant is
the operation's default for the profile (:func:`hnowmodel.ops.default_variant`: the flow engine's ``flow-rr`` /
``flow`` on a profile calibrated on a network, the paper's ``paper`` / ``link`` otherwise) unless ``variant`` names
one (:mod:`hnowmodel.variants`).

This module is callable: ``hm.predict(...)`` is :func:`predict`. The names ``hm.predict.bcast``, ``.scatter``,
``.gather`` and ``.ptp`` stay what they were, the paper's closed-form engine (:mod:`hnowmodel.closedform`) under
the ``paper`` variant, whatever the profile.

>>> import hnowmodel as hm
>>> prof = hm.paper_profile()
>>> hm.predict("bcast", prof, "FFSS", "binomial", [0, 1000]).tolist()
[430.0, 980.0]
>>> hm.predict("gather", prof, "FFSS", "sequential", [1000], variant="paper").tolist()
[710.0]
>>> hm.predict.bcast(prof, ["fast", "fast"], hm.trees.binomial(2), [0]).tolist()  # the closed-form engine
[170.0]
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import ops as _ops
from .closedform import as_sizes, bcast, common_start_us, gather, ptp, scatter
from .errors import InputError, LayoutError
from .layout import Layout, parse_layout
from .libraries import run_by
from .params import Profile
from .runopts import Schedule
from .sizes import parse_sizes
from .trees import Tree
from .treespec import TreeSpec, parse_spec, resolve

__all__ = ["predict", "library_name", "ptp", "bcast", "scatter", "gather", "as_sizes", "common_start_us"]


def predict(
    op: str,
    profile: Profile | str,
    layout: Sequence[str] | str | None,
    algorithm: Tree | str,
    sizes: Any,
    *,
    variant: str | None = None,
    schedule: Schedule | None = None,
    per_rank: bool = False,
    root: int | None = None,
    library: str | None = None,
    reduce_us_per_byte: Any = None,
) -> np.ndarray:
    """Predicted completion time of ``op`` run by ``algorithm`` on ``layout``, in µs, one per size of ``sizes``
    (bytes; per rank for scatter/gather); ``per_rank``: ``(len(sizes), n)``, each rank's own time.

    ``profile``: a :class:`~hnowmodel.params.Profile`, a file or ``"paper"``; ``layout``: the node type of each
    rank (a sequence, a :class:`~hnowmodel.layout.Layout`, or a spec such as ``"FFSS"``; None: the profile's
    calibration layout); ``algorithm``: a tree spec or a :class:`~hnowmodel.trees.Tree` (module docstring);
    ``variant``: a model variant (None: the operation's default for this profile); ``schedule``: how the MPI
    implementation runs the tree (:class:`~hnowmodel.runopts.Schedule`; None: the tree executor's); ``root``: the
    root rank (None: a given Tree's own root, else 0); ``library``: the MPI library whose ``native[:ALGO]`` is
    predicted (``MPICH``, ``Open MPI``, ``Intel MPI``; case and spaces do not matter); ``reduce_us_per_byte``: an
    operation that combines buffers (allreduce, reduce, reduce_scatter) costs γ µs per byte reduced, one rate or
    node type -> rate (None: the profile's measured γ; :meth:`hnowmodel.ops.Operation.reduce_costs`). Bad input:
    :class:`~hnowmodel.errors.InputError` (or its subclasses) naming it.

    >>> from hnowmodel.params import paper_profile
    >>> predict("scatter", paper_profile(), "FFSS", "native", [0], library="mpich").tolist()
    [430.0]
    """
    prof = profile if isinstance(profile, Profile) else Profile.load(profile)
    var = _ops.variant_of(op, variant, prof)
    what = _ops.get(op)  # a variant predicts the operation's data movement
    lay = _layout(prof, layout)
    grid = np.asarray(parse_sizes(sizes), dtype=float) if isinstance(sizes, str) else as_sizes(sizes)
    alg = what.schedule_algorithm(algorithm)
    if alg is not None:
        if schedule is not None or library is not None:
            raise InputError(
                f"{op} algorithm {alg.name!r} is a message schedule: schedule= and library= apply to trees"
            )
        return what.predict(
            prof,
            lay,
            alg,
            grid,
            variant=var.name,
            per_rank=per_rank,
            root=root or 0,
            reduce_us_per_byte=reduce_us_per_byte,
        )
    if what.movement is None and _ops.native_name(algorithm) is None:  # no tree runs it: name its algorithms
        what.algorithm(algorithm if isinstance(algorithm, str) else getattr(algorithm, "name", "a tree"))
    spec = algorithm if isinstance(algorithm, Tree) else parse_spec(algorithm)
    if root is None:
        root = algorithm.root if isinstance(algorithm, Tree) else 0
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < len(lay):
        raise LayoutError(f"root {root!r} is not a rank of the {len(lay)}-rank layout")
    if isinstance(spec, TreeSpec) and spec.kind == "native":
        return _native(op, prof, lay, spec, grid, var.name, schedule, per_rank, int(root), library, reduce_us_per_byte)
    if reduce_us_per_byte is not None and not what.reduction:
        raise InputError(f"reduce_us_per_byte applies to an operation that combines buffers, not to {op}")
    if library is not None:
        raise InputError(f"library= applies to a native algorithm (native, native:ALGO), not to {_spec_text(spec)!r}")
    kw = {"per_rank": per_rank, "root": int(root)}
    if isinstance(spec, TreeSpec) and spec.per_row:  # chosen for op at each size, as compare chooses it per row
        got = [
            var.predict(what, prof, lay, _tree(spec, lay, prof, op, int(m), var.name, int(root)), [m], schedule, **kw)
            for m in grid
        ]
        return np.concatenate(got) if got else np.empty((0, len(lay)) if per_rank else (0,))
    tree = _tree(spec, lay, prof, op, 0, var.name, int(root))
    return var.predict(what, prof, lay, tree, grid, schedule, **kw)


def _spec_text(spec: TreeSpec | Tree) -> str:
    """How an algorithm is named in a message: the spec as given, or the Tree's name."""
    return spec.text if isinstance(spec, TreeSpec) else (spec.name or "tree")


def _layout(prof: Profile, layout: Sequence[str] | str | None) -> Sequence[str]:
    """The layout asked for, checked against the profile's types (None: the profile's calibration layout)."""
    if layout is None:
        if not prof.layout:
            raise InputError("a layout is required (the profile records no calibration layout)")
        return prof.host_layout
    if not isinstance(layout, str) and set(layout) <= set(prof.type_names):
        # already a sequence of known types (a Layout keeps its hosts): no per-rank copy, as the engines take it
        return layout if isinstance(layout, Layout) else list(layout)
    return parse_layout(layout, prof.type_names)


def _tree(
    spec: TreeSpec | Tree, lay: Layout, prof: Profile, op: str, size: int, variant: str, root: int
) -> Tree | None:
    """The tree of ``spec`` on ``lay`` (a chosen one for ``op`` at ``size`` bytes, under ``variant``)."""
    return resolve(spec, len(lay), root=root, layout=lay, profile=prof, op=op, size=size, variant=variant)


def library_name(library: str, op: str) -> str:
    """The registry's name of the MPI library ``library`` names (``openmpi`` -> ``Open MPI``: case and spaces do
    not matter), among those whose ``op`` hnow pins; :class:`InputError` names them.

    >>> library_name("intelmpi", "bcast")
    'Intel MPI'
    """
    known = _ops.native_libraries(op)
    key = str(library).replace(" ", "").replace("-", "").lower()
    for name in known:
        if name.replace(" ", "").lower() == key:
            return name
    raise InputError(f"unknown MPI library {library!r} for {op} (choose from: {', '.join(known)})")


def _native(
    op: str,
    prof: Profile,
    lay: Layout,
    spec: TreeSpec,
    grid: np.ndarray,
    variant: str,
    schedule: Schedule | None,
    per_rank: bool,
    root: int,
    library: str | None,
    gamma: Any = None,
) -> np.ndarray:
    """``library``'s own ``op`` as hnow pins it (:func:`hnowmodel.ops.native_predict`): its model tree, run by its
    own schedule (so no ``schedule`` here), predicted under ``variant``."""
    known = _ops.native_libraries(op)
    if library is None:
        raise InputError(
            f"{spec.text}: the MPI library's own {op} depends on the library: give one (library=, --library: "
            f"{', '.join(known)})"
        )
    if schedule is not None or per_rank:
        raise InputError(
            f"{spec.text}: the library's algorithm sets its own schedule; schedule= and per_rank= apply to trees"
        )
    name = library_name(library, op)
    _ops.check_native(spec.text, [op])
    nat = _ops.native_for(spec.text, op, name)
    if nat is None:
        what = "pins no default" if spec.text == _ops.NATIVE else "has no such algorithm"
        raise InputError(f"{spec.text}: {name} {what} for {op} in hnow's registry")
    # the library's own protocol where the profile was calibrated under another one (libraries.run_by)
    return _ops.native_predict(
        op, name, run_by(prof, name), lay, grid, root=root, variant=variant, algorithm=nat, reduce_us_per_byte=gamma
    )


class _CallableModule(types.ModuleType):
    """This module, callable: ``hm.predict(...)`` is :func:`predict`; its engine names stay attributes."""

    __call__ = staticmethod(predict)


sys.modules[__name__].__class__ = _CallableModule
