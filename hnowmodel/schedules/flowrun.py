"""What both flow-engine evaluators of a message schedule share: their result (:class:`ScheduleRun`) and their
inputs checked once (the layout against the schedule, the link sharing, the reduction rates γ in µs/byte).

The evaluators are :func:`hnowmodel.schedules.flows.simulate` (event-driven, exact) and
:func:`hnowmodel.schedules.flowrounds.simulate_rounds` (vectorised per step); :func:`hnowmodel.schedules.flows.evaluate`
picks one.

>>> from hnowmodel.params import paper_profile
>>> reduce_rates(paper_profile(), ["fast", "slow"], {"fast": 1e-3, "slow": 2e-3}).tolist()
[0.001, 0.002]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..flow.costs import MessageCosts
from ..flow.disciplines import LINK_SHARINGS, Sharing
from ..flow.network import FlowRecord, host_capacities
from ..params import Profile
from .steps import MessageSchedule

__all__ = ["ScheduleRun", "ReduceRate", "reduce_rates", "link_sharing", "prepare"]

#: The reduction's cost in µs per byte reduced: one rate for every rank, or one per node type.
ReduceRate = float | Mapping[str, float]


@dataclass(frozen=True)
class ScheduleRun:
    """One message schedule evaluated by the flow engine (times in µs from the common start, every rank at 0).

    ``done_us[r]``: when rank ``r`` holds its final data, the end of its last receive (with its reduction) or local
    copy (0 for a rank that does neither: a bcast's root, a gather's leaf, as :func:`hnowmodel.flow.simulate`
    counts them); ``posted_us[r]``: when it finished posting its last send (with a first send's busy time; 0 for a
    rank that sends nothing); ``completion_us``: the largest ``done_us`` (a posting is not waited for: an eager
    send's receiver finishes after it, as the flow engine's bcast and scatter count it); ``flows``: every message
    (:class:`~hnowmodel.flow.network.FlowRecord`) in the order the flows finished, from the event-driven evaluator
    (the vectorised one keeps none: ``()``); ``method``: ``"events"`` or ``"rounds"``, the evaluator that ran."""

    name: str
    done_us: np.ndarray
    posted_us: np.ndarray
    completion_us: float
    flows: tuple[FlowRecord, ...]
    method: str


def reduce_rates(profile: Profile, layout: Sequence[str], rate: ReduceRate) -> np.ndarray:
    """Each rank's reduction cost γ (µs per byte reduced) from one rate or a mapping node type -> rate (a type
    left out: 0, as :mod:`hnowmodel.schedules.closed` takes it); :class:`InputError` on a negative or non-finite
    rate or a type the profile does not have.

    >>> from hnowmodel.params import paper_profile
    >>> reduce_rates(paper_profile(), ["fast", "slow"], {"slow": 0.5}).tolist()
    [0.0, 0.5]
    """
    if isinstance(rate, Mapping):
        unknown = [t for t in rate if t not in profile.types]
        if unknown:
            have = ", ".join(profile.types)
            raise InputError(f"reduce_us_per_byte: unknown node type {unknown[0]!r} (profile has: {have})")
        try:
            out = np.array([float(rate.get(t, 0.0)) for t in layout], dtype=float)
        except (TypeError, ValueError):
            raise InputError("reduce_us_per_byte: rates must be numbers of µs per byte") from None
    else:
        try:
            out = np.full(len(layout), float(rate))
        except (TypeError, ValueError):
            raise InputError(f"reduce_us_per_byte: µs per byte, or a mapping type -> µs/byte, got {rate!r}") from None
    if not np.all(np.isfinite(out)) or np.any(out < 0):
        raise InputError("reduce_us_per_byte: rates must be finite numbers of µs per byte >= 0")
    return out


def link_sharing(name: str) -> Sharing:
    """The fluid link sharing called ``name`` (``maxmin``, ``weighted``); the queue disciplines (``fifo``, ``rr``)
    model one message into each rank of a tree, not a schedule: :class:`InputError`.

    >>> link_sharing("maxmin").weighted
    False
    """
    how = LINK_SHARINGS.get(name) if isinstance(name, str) else None
    fluid = [k for k, s in LINK_SHARINGS.items() if not s.queued]
    if how is None or how.queued:
        raise InputError(f"unknown link sharing for a message schedule {name!r} (choose from: {', '.join(fluid)})")
    return how


def prepare(
    profile: Profile, layout: Sequence[str], schedule: MessageSchedule, reduce_us_per_byte: ReduceRate
) -> tuple[MessageCosts, np.ndarray, np.ndarray, np.ndarray]:
    """The costs, the hosts' egress and ingress capacities (bytes/µs, at the schedule's largest message, as
    :func:`hnowmodel.flow.simulate` takes them at the tree's largest edge) and each rank's γ (µs/byte)."""
    if not isinstance(schedule, MessageSchedule):
        raise InputError(f"expected a MessageSchedule, got {type(schedule).__name__}")
    if len(layout) != schedule.n:
        raise InputError(f"layout has {len(layout)} ranks but the schedule {schedule.name!r} has {schedule.n}")
    biggest = max((float(s.nbytes.max()) for s in schedule.steps if s.n_messages), default=0.0)
    egress, ingress = host_capacities(profile, layout, biggest if math.isfinite(biggest) else 0.0)
    return MessageCosts(profile, layout), egress, ingress, reduce_rates(profile, layout, reduce_us_per_byte)
