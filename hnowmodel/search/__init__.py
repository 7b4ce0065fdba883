"""Choosing trees: the exact broadcast optimum for few node types, heuristics for many, sequential orders,
rank orders for native collectives, the best tree under a model variant (:mod:`~hnowmodel.search.best`), and pool
planning. Pure model code (eq. 7-12 costs).

>>> import hnowmodel as hm
>>> best = hm.search.best_tree(hm.paper_profile(), ["fast"] * 4 + ["slow"] * 4, op="bcast", size=0)
>>> best.method, best.time_us
('exact', 410.0)
"""

from __future__ import annotations

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
]
