"""Prediction tables: what ``hnow predict`` prints, as rows a program can use (µs, bytes).

>>> rows = prediction_rows("paper", op="ptp", sizes=[0], src="fast", dst="slow")
>>> rows[0]["time_us"]
200.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import ops
from .closedform import ptp
from .errors import InputError, LayoutError
from .layout import parse_layout
from .options import parse_reduce_rate, parse_variants
from .params import Profile
from .predict import predict
from .search import best_sequential
from .sizes import size_tuple
from .treespec import spec_list

__all__ = ["prediction_rows", "OPS_AND_PTP"]

OPS_AND_PTP = ("ptp", *ops.names())


def _choice(value: str, choices: Sequence[str], what: str) -> str:
    if value not in choices:
        raise InputError(f"unknown {what} {value!r} (choose from: {', '.join(choices)})")
    return value


def prediction_rows(
    profile: Profile | str,
    *,
    op: str = "bcast",
    layout: str | Sequence[str] | None = None,
    trees: str | Sequence[str] = ("binomial",),
    sizes: Any = (0,),
    root: int = 0,
    variant: str | Mapping[str, str] | None = None,
    **choices: str | None,
) -> list[dict[str, Any]]:
    """``[{"op", "tree", "size", "time_us"}]``: ``op="ptp"`` gives one-way times for every pair of node types (or
    ``src`` -> ``dst``), and ``TYPE->TYPE (same host)`` for the types with shared-memory costs; otherwise the
    operation over each tree on ``layout`` (default: the profile's calibration layout). ``choices``:
    ``order="best"`` uses, for ``sequential``, the exact best send order at each size (default ``"rank"``);
    ``src``/``dst`` (node types) restrict ``ptp``; ``library``: the MPI library whose ``native[:ALGO]`` is
    predicted; ``reduce_us_per_byte``: γ stated for an operation that combines buffers
    (:func:`hnowmodel.options.parse_reduce_rate`). ``variant``: a name, ``OP=NAME,…`` or ``{op: name}``
    (:func:`hnowmodel.options.parse_variants`; None: the operation's default for the profile). An operation's
    times are :func:`hnowmodel.predict`'s (tree specs: :mod:`hnowmodel.treespec`)."""
    bad = [k for k in choices if k not in ("order", "src", "dst", "library", "reduce_us_per_byte")]
    if bad:
        raise TypeError(
            f"prediction_rows() got an unexpected keyword argument {bad[0]!r} (choose: order, src, dst, library, "
            "reduce_us_per_byte)"
        )
    order, src, dst = choices.get("order") or "rank", choices.get("src"), choices.get("dst")
    library = choices.get("library")
    gamma = parse_reduce_rate(choices.get("reduce_us_per_byte"))
    prof = profile if isinstance(profile, Profile) else Profile.load(profile)
    _choice(op, OPS_AND_PTP, "operation (--op)")
    _choice(order, ("rank", "best"), "send order (--order)")
    variant = parse_variants(variant, [] if op == "ptp" else [op]).get(op)  # checked for ptp too: none applies
    grid = list(size_tuple(sizes))
    if op == "ptp":
        types = prof.type_names
        srcs = [_choice(src, types, "node type (--from)")] if src else types
        dsts = [_choice(dst, types, "node type (--to)")] if dst else types
        # between hosts for every pair; within one host (shared memory) for the types the profile has costs for
        pairs = [(a, b, False) for a in srcs for b in dsts] + [
            (a, a, True) for a in srcs if a in dsts and a in prof.shm
        ]
        return [
            {"op": "ptp", "tree": f"{a}->{b}" + (" (same host)" if same else ""), "size": s, "time_us": float(t)}
            for a, b, same in pairs
            for s, t in zip(grid, ptp(prof, a, b, grid, same_host=same), strict=True)
        ]
    if layout is None and not prof.layout:
        raise InputError("--layout is required (the profile records no calibration layout)")
    lay = prof.host_layout if layout is None else parse_layout(layout, prof.type_names)
    if not 0 <= root < len(lay):
        raise LayoutError(f"--root {root} is not a rank of the {len(lay)}-rank layout")
    ops.check_variant(op, variant, prof)
    names = spec_list(trees, "--tree")
    natives = [name for name in names if ops.native_name(name) is not None]
    if library is not None and not natives:
        raise InputError("--library applies to --tree native or native:ALGO (the library's own algorithm)")
    rows = []
    for name in names:
        if name == "sequential" and order == "best":
            # the best order depends on the size: one tree per size
            times = [
                float(predict(op, prof, lay, best_sequential(prof, lay, op, s, root), [s], variant=variant)[0])
                for s in grid
            ]
        else:
            lib = library if name in natives else None
            times = predict(
                op, prof, lay, name, grid, variant=variant, root=root, library=lib, reduce_us_per_byte=gamma
            )
        rows += [{"op": op, "tree": name, "size": s, "time_us": float(t)} for s, t in zip(grid, times, strict=True)]
    return rows
