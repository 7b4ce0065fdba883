"""MPICH (5.0.x), everything hnow knows about it: its algorithms and how each is pinned (:mod:`.algorithms`:
control variables, model trees, schedules, selection-JSON leaves), its tuning-file format (:mod:`.selection`: the
collective selection JSON, the default table built into ``libmpi``, read as MPICH reads it) and its export backend
(:mod:`.export`, format ``mpich-json``). Its tree shapes (``kary``, ``mpich-knomial1``/``2``, ``mpich-smp``) are
tree families of :mod:`hnowmodel.trees` (``trees/mpich.py``), which the tree registry and the search build too.
"""

from __future__ import annotations

from .algorithms import ALGORITHMS, MPICH_TREE_KS

__all__ = ["ALGORITHMS", "MPICH_TREE_KS"]
