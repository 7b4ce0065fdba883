"""Collective algorithms as message schedules (:mod:`~hnowmodel.schedules.steps`): one representation that every
algorithm compiles to and both model engines evaluate."""

from __future__ import annotations

from .steps import MessageSchedule, Step, concat

__all__ = ["MessageSchedule", "Step", "concat"]
