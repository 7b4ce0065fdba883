"""Collective algorithms as message schedules (:mod:`~hnowmodel.schedules.steps`): one representation that every
algorithm compiles to and both model engines evaluate."""

from __future__ import annotations

from .flowrounds import simulate_rounds
from .flowrun import ScheduleRun
from .flows import evaluate, simulate
from .steps import MessageSchedule, Step, concat

__all__ = ["MessageSchedule", "Step", "concat"]
__all__ += ["ScheduleRun", "simulate", "simulate_rounds", "evaluate"]  # the flow engine's evaluators
