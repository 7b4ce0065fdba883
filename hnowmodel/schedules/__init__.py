"""Collective algorithms as message schedules (:mod:`~hnowmodel.schedules.steps`): one representation that every
algorithm compiles to and both model engines evaluate. The generators (:mod:`~hnowmodel.schedules.algorithms`,
:mod:`~hnowmodel.schedules.alltoall`, trees through :func:`from_tree`) build them; the closed-form engine
(:func:`~hnowmodel.schedules.closed.evaluate`) and the flow engine (:func:`~hnowmodel.schedules.flows.evaluate`)
evaluate them."""

from __future__ import annotations

from . import catalog, closed, flowrounds, flows
from .algorithms import (
    BlockTrace,
    binomial_bcast,
    binomial_reduce,
    bruck_allgather,
    linear_reduce,
    rabenseifner_allreduce,
    recursive_doubling_allgather,
    recursive_doubling_allreduce,
    recursive_halving_reduce_scatter,
    reduce_bcast_allreduce,
    ring_allgather,
    ring_allreduce,
)
from .alltoall import bruck_alltoall, pairwise_alltoall, scattered_alltoall
from .bcast import bcast_chunks, scatter_for_bcast, scatter_recursive_doubling_allgather, scatter_ring_allgather
from .flowrun import ScheduleRun
from .fromtree import from_tree, tree_schedule
from .generator import Algorithm, Generator
from .ompi import ompi_rabenseifner_allreduce
from .reduce import pairwise_reduce_scatter, rabenseifner_reduce
from .steps import MessageSchedule, Step, concat

__all__ = [
    "Algorithm",
    "Generator",
    "MessageSchedule",
    "Step",
    "concat",
    "closed",
    "catalog",
    "from_tree",
    "tree_schedule",
    "BlockTrace",
    "ring_allgather",
    "recursive_doubling_allgather",
    "bruck_allgather",
    "recursive_doubling_allreduce",
    "recursive_halving_reduce_scatter",
    "rabenseifner_allreduce",
    "ompi_rabenseifner_allreduce",
    "ring_allreduce",
    "binomial_reduce",
    "linear_reduce",
    "rabenseifner_reduce",
    "pairwise_reduce_scatter",
    "binomial_bcast",
    "reduce_bcast_allreduce",
    "pairwise_alltoall",
    "bruck_alltoall",
    "scattered_alltoall",
    "bcast_chunks",
    "scatter_for_bcast",
    "scatter_ring_allgather",
    "scatter_recursive_doubling_allgather",
    # the flow engine's evaluators: flows.evaluate (the one entry), flows.simulate, flowrounds.simulate_rounds
    "flows",
    "flowrounds",
    "ScheduleRun",
]
