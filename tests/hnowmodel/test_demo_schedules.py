"""The demo's message-schedule operation (hnowmodel.demo.schedules) without MPI: what each library can be told to
run, the choice among those (its rank order as MPI_Comm_split keys), the gains and the report's section."""

from __future__ import annotations

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.demo import schedules
from hnowmodel.layout import Layout
from tests.helpers import paper_shm_profile

GAMMA = 4e-4  # µs per byte reduced: given, hnow never assumes one
LAYOUT = Layout(["fast", "fast", "fast", "slow", "slow", "slow", "fast"], [0, 1, 1, 2, 3, 4, 5])  # demoslots-like


def test_the_operation_is_a_registered_message_schedule_operation():
    assert schedules.OP in ops.names() and ops.get(schedules.OP).movement is None


@pytest.mark.parametrize("library", ops.native_libraries(schedules.OP))
def test_runnable_names_pinned_specs_that_run_the_model_algorithm(library):
    got = schedules.runnable(schedules.OP, library, LAYOUT, 65536)
    assert got, library
    for model, spec in got.items():
        nat = ops.native_for(spec, schedules.OP, library)
        assert nat is not None and nat is not ops.get(schedules.OP).native[library]  # pinned, not the default
        run = nat.on(LAYOUT, 65536)
        assert getattr(run[0], "name", run[0]) == model


@pytest.mark.parametrize("size", [16384, 65536])
def test_the_choice_is_runnable_and_never_predicted_slower_than_the_default(size):
    c = schedules.choose(paper_shm_profile(), LAYOUT, size, "MPICH", reduce_us_per_byte=GAMMA)
    assert c.best.time_us <= c.best.defaults_us["MPICH"] * (1 + 1e-12)
    assert c.spec == ops.NATIVE or c.spec in schedules.runnable(schedules.OP, "MPICH", LAYOUT, size).values()
    if c.perm is not None:  # keys[perm[p]] = p: the rank at position p becomes rank p
        assert sorted(c.perm) == list(range(len(LAYOUT)))
        assert [c.keys[r] for r in c.perm] == list(range(len(LAYOUT)))


def _rows(size: int, default_us: tuple[float, float], chosen_us: tuple[float, float]) -> list[dict]:
    return [
        {"op": schedules.OP, "tree": tree, "size": size, "predicted_us": p, "measured_us": m}
        for tree, (p, m) in ((ops.NATIVE, default_us), ("optimal", chosen_us))
    ]


def test_gains_and_the_report_section():
    c = schedules.choose(hm.paper_profile(), ["slow", "fast", "fast", "slow"], 65536, "MPICH",
                         reduce_us_per_byte=GAMMA)  # fmt: skip
    rows = _rows(65536, (10000.0, 11000.0), (6000.0, 7700.0))
    (g,) = schedules.gain_rows(rows, [c])
    assert (g["what"], g["op"], g["size"]) == (schedules.WHAT, schedules.OP, 65536)
    assert g["predicted_gain_pct"] == pytest.approx(40.0) and g["measured_gain_pct"] == pytest.approx(30.0)
    assert g["keys"] == ("" if c.keys is None else " ".join(map(str, c.keys)))
    assert g["detail"].startswith(c.spec) and g["detail"].endswith(" vs reduce_scatter_allgather")  # MPICH at 64K
    text = schedules.markdown(rows, [c], "MPICH")
    assert f"## {schedules.OP}: MPICH's default vs the algorithm hnow chooses" in text
    assert "| 64K |" in text and "10.00 / 11.00" in text and "40.0 % | 30.0 % |" in text and c.spec in text


def test_not_shown_says_why():
    why = schedules.why_not(hm.paper_profile(), "MPICH")
    assert "reduction cost" in why
    assert "Not shown: " + why in schedules.markdown([], [], "MPICH", why)
    assert "emulated testbed cannot" in schedules.TESTBED_NOTE
