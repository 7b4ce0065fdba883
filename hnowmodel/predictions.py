"""Prediction tables: what ``hnow predict`` prints, as rows a program can use (µs, bytes).

>>> rows = prediction_rows("paper", op="ptp", sizes=[0], src="fast", dst="slow")
>>> rows[0]["time_us"]
200.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import ops
from . import predict as model
from .errors import InputError, LayoutError
from .layout import parse_layout
from .params import Profile
from .search import best_sequential
from .sizes import size_tuple
from .treespec import parse_spec, resolve

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
    variant: str | None = None,
    **choices: str | None,
) -> list[dict[str, Any]]:
    """``[{"op", "tree", "size", "time_us"}]``: ``op="ptp"`` gives one-way times for every pair of node types (or
    ``src`` -> ``dst``), and ``TYPE->TYPE (same host)`` for the types with shared-memory costs; otherwise the
    operation over each tree on ``layout`` (default: the profile's calibration layout). ``choices``:
    ``order="best"`` uses, for ``sequential``, the exact best send order at each size (default ``"rank"``);
    ``src``/``dst`` (node types) restrict ``ptp``. Tree specs: :mod:`hnowmodel.treespec`."""
    bad = [k for k in choices if k not in ("order", "src", "dst")]
    if bad:
        raise TypeError(f"prediction_rows() got an unexpected keyword argument {bad[0]!r} (choose: order, src, dst)")
    order, src, dst = choices.get("order") or "rank", choices.get("src"), choices.get("dst")
    prof = profile if isinstance(profile, Profile) else Profile.load(profile)
    _choice(op, OPS_AND_PTP, "operation (--op)")
    _choice(order, ("rank", "best"), "send order (--order)")
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
            for s, t in zip(grid, model.ptp(prof, a, b, grid, same_host=same), strict=True)
        ]
    if layout is None:
        if not prof.layout:
            raise InputError("--layout is required (the profile records no calibration layout)")
        lay = prof.host_layout  # the calibration layout with its hosts
    else:
        lay = parse_layout(layout, prof.type_names)
    if not 0 <= root < len(lay):
        raise LayoutError(f"--root {root} is not a rank of the {len(lay)}-rank layout")
    var = ops.variant_of(op, variant, prof)
    names = [t.strip() for t in (trees.split(",") if isinstance(trees, str) else trees) if t.strip()]
    if not names:
        raise InputError("--tree: give at least one tree name")
    rows = []
    for name in names:
        if name == "sequential" and order == "best":
            # the best order depends on the size: one tree per size
            what = ops.get(op)
            times = [float(var.predict(what, prof, lay, best_sequential(prof, lay, op, s, root), [s])[0]) for s in grid]
        else:
            tree = resolve(parse_spec(name), len(lay), root=root, layout=lay, profile=prof)
            if tree is None:
                raise InputError(f"--tree {name}: the MPI library's own collective has no prediction here")
            times = var.predict(ops.get(op), prof, lay, tree, grid)
        rows += [{"op": op, "tree": name, "size": s, "time_us": float(t)} for s, t in zip(grid, times, strict=True)]
    return rows
