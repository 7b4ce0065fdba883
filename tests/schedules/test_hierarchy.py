"""Two-level schedules (hnowmodel/schedules/hierarchy.py): a sub-communicator's schedule placed on every group of
ranks at once, and phases run one after another, each waiting for the one before."""

from __future__ import annotations

import numpy as np
import pytest

from hnowmodel.errors import InputError
from hnowmodel.schedules.algorithms import binomial_reduce, ring_allgather
from hnowmodel.schedules.hierarchy import on_groups, phases
from hnowmodel.schedules.steps import MessageSchedule, Step


def test_a_schedule_runs_on_every_group_at_once_with_its_copies_and_repeats():
    part = binomial_reduce(2, 8.0)  # rank 1 copies its input, then sends it to 0, which reduces it
    s = on_groups(part, [[4, 1], [0, 5]], 6)
    (step,) = s.steps
    assert (step.src.tolist(), step.dst.tolist(), step.reduce_bytes.tolist()) == ([1, 5], [4, 0], [8.0, 8.0])
    assert step.copy_bytes.tolist() == [0.0, 8.0, 0.0, 0.0, 0.0, 8.0]
    ring = on_groups(ring_allgather(3, 4.0), [[0, 2, 4]], 6)
    assert ring.n_steps == 2 and ring.bytes_sent().tolist() == [8.0, 0.0, 8.0, 0.0, 8.0, 0.0]
    with pytest.raises(InputError, match="every group must hold the schedule's 2 ranks"):
        on_groups(part, [[0, 1, 2]], 4)
    with pytest.raises(InputError, match="distinct ranks of 0..3"):
        on_groups(part, [[0, 1], [1, 2]], 4)


def test_phases_wait_for_the_phase_before():
    up = MessageSchedule(3, (Step.of([1], [0], 8.0, 8.0),))
    down = MessageSchedule(3, (Step.of([0], [2], 8.0, waits=False), Step.of([0], [1], 8.0, waits=False)))
    s = phases("two", up, MessageSchedule(3, ()), down)
    assert [st.waits for st in s.steps] == [True, True, False]  # the first send down waits; the next follows it
    assert s.name == "two" and np.array_equal(s.bytes_sent(), [16.0, 8.0, 0.0])
