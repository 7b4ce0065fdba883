"""Choosing trees: the exact broadcast optimum for few node types, heuristics for many, sequential orders,
rank orders for native collectives, the best algorithm with its parameters (rank order, root, levels) for an
operation whose algorithms are message schedules (:mod:`~hnowmodel.search.algorithms`), the best tree under a
model variant (:mod:`~hnowmodel.search.best`), two-level
trees for layouts with several ranks per host (:mod:`~hnowmodel.search.twolevel`), and pool planning. Pure model code
(eq. 7-12 costs); :func:`best_tree`'s example is in :mod:`~hnowmodel.search.best`.
"""

from __future__ import annotations

from .algorithms import best_algorithm, host_speed_order, predict_choice
from .best import METHODS, best_tree
from .exact import exact_bcast, exact_work
from .heuristics import ecef, fnf, improve, improve_under
from .orders import best_sequential, best_sequential_order
from .plan import PlanChoice, plan
from .rank_order import RankOrder, best_host_order, host_block_order, rank_order
from .result import BestTree
from .twolevel import exact_hosts_bcast, host_candidates

__all__ = [
    "BestTree",
    "best_tree",
    "best_algorithm",
    "predict_choice",
    "host_speed_order",
    "best_host_order",
    "METHODS",
    "exact_bcast",
    "exact_work",
    "fnf",
    "ecef",
    "improve",
    "improve_under",
    "exact_hosts_bcast",
    "host_candidates",
    "best_sequential",
    "best_sequential_order",
    "rank_order",
    "host_block_order",
    "RankOrder",
    "plan",
    "PlanChoice",
]
