"""Choosing trees: the exact broadcast optimum for few node types, heuristics for many, sequential orders,
rank orders for native collectives, the best tree under a model variant (:mod:`~hnowmodel.search.best`), and pool
planning. Pure model code (eq. 7-12 costs).

>>> import hnowmodel as hm
>>> best = hm.search.best_tree(hm.paper_profile(), ["fast"] * 4 + ["slow"] * 4, op="bcast", size=0)
>>> best.method, best.time_us
('exact', 410.0)
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError, TreeError
from ..ops import OPERATIONS as OPS
from ..sizes import parse_size
from ..trees import Tree
from .best import METHODS, BestTree, best_tree
from .exact import exact_bcast, exact_work
from .heuristics import ecef, fnf, improve, improve_under
from .orders import best_sequential, best_sequential_order
from .plan import PlanChoice, plan
from .rank_order import RankOrder, rank_order

__all__ = [
    "BestTree",
    "best_tree",
    "METHODS",
    "exact_bcast",
    "exact_work",
    "fnf",
    "ecef",
    "improve",
    "improve_under",
    "best_sequential",
    "best_sequential_order",
    "rank_order",
    "RankOrder",
    "plan",
    "PlanChoice",
    "chosen_tree_factory",
]


def chosen_tree_factory(method: str):
    def factory(n: int, root: int = 0, arg: str | None = None, layout: Any = None, profile: Any = None) -> Tree:
        if layout is None or profile is None:
            raise TreeError(f"tree {method!r} needs a layout and a profile (it is chosen for the node types)")
        if len(layout) != n:
            raise TreeError(f"tree {method!r}: layout has {len(layout)} ranks, expected {n}")
        op, size = _tree_arg(method, arg)
        if method == "fnf":
            return fnf(profile, layout, size, root)
        return best_tree(profile, layout, op, size, "auto", root, compare=()).tree

    return factory


def _tree_arg(method: str, arg: str | None) -> tuple[str, float]:
    """``None`` | ``SIZE`` | ``OP`` | ``OP:SIZE`` -> (op, size in bytes); defaults bcast and 0 bytes."""
    op, size = "bcast", 0.0
    for part in [] if arg is None else str(arg).split(":"):
        if part in OPS and method == "optimal":
            op = part
            continue
        try:
            size = float(parse_size(part, f"tree {method}:SIZE"))
        except InputError:
            need = (
                "[OP:]SIZE needs an operation (bcast, scatter, gather) and/or"
                if method == "optimal"
                else ("SIZE needs")
            )
            raise TreeError(f"tree {method}:{need} a size in bytes, got {arg!r}") from None
    return op, size
