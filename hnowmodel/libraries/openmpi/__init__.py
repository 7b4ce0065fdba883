"""Open MPI (5.0.x), everything hnow knows about it: its algorithms and how each is pinned (:mod:`.algorithms`:
coll/tuned's forced algorithms, coll/han, MCA parameters, model trees, schedules, rules-file leaves), what it runs
by default (:mod:`.fixed`: coll/tuned's fixed decision rules; coll/han's default in :mod:`.algorithms`), its
tuning-file format (:mod:`.rules`: coll/tuned's rules file, read as Open MPI reads it) and its export backend
(:mod:`.export`, format ``ompi-rules``). Its tree shapes (``ompi-binomial``, ``ompi-chain``, ``ompi-tree``,
``ompi-linear``, ``ompi-han``) are tree families of :mod:`hnowmodel.trees` (``trees/ompi.py``).
"""

from __future__ import annotations

from .algorithms import ALGORITHMS, OMPI_CHAIN_FANOUTS, OMPI_KNOMIAL_RADICES, OMPI_KNOMIAL_RADIX, han_runs

__all__ = ["ALGORITHMS", "OMPI_CHAIN_FANOUTS", "OMPI_KNOMIAL_RADICES", "OMPI_KNOMIAL_RADIX", "han_runs"]
