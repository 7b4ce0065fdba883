"""MPICH's ch4 composition alpha of allreduce and reduce as two-level message schedules
(hnowmodel/libraries/mpich/compositions.py): which ranks send what in each phase, and where it is not modelled."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hnowmodel import ops
from hnowmodel.layout import Layout
from hnowmodel.libraries.mpich import compositions
from hnowmodel.libraries.mpich.compositions import AlphaSchedule, allreduce_alpha_run, reduce_alpha_run
from hnowmodel.schedules.catalog import ALLREDUCE, REDUCE
from hnowmodel.schedules.hierarchy import on_groups
from tests.helpers import paper_shm_profile


def _hosts(*slots: int) -> Layout:
    return Layout(["fast"] * sum(slots), hosts=[h for h, k in enumerate(slots) for _ in range(k)])


def _nat(op: str, name: str):
    return next(a for a in ops.native_algorithms(op, "MPICH") if a.algorithm == name)


def _pairs(step) -> list[tuple[int, int]]:
    return sorted(zip(step.src.tolist(), step.dst.tolist(), strict=True))


def test_allreduce_alpha_reduces_on_each_host_allreduces_the_leaders_and_bcasts_on_each_host():
    m = 65536.0
    alg, _ = allreduce_alpha_run(_hosts(2, 2, 2), int(m))
    s = alg.schedule(6, m)
    up = on_groups(ALLREDUCE["reduce_scatter_allgather"].schedule(3, m), [[0, 2, 4]], 6)  # 3 leaders, 64 KiB
    assert _pairs(s.steps[0]) == [(1, 0), (3, 2), (5, 4)]  # each host's binomial reduce to its leader
    assert [_pairs(x) for x in s.steps[1:-1]] == [_pairs(x) for x in up.steps]  # the leaders' MPIR allreduce
    assert _pairs(s.steps[-1]) == [(0, 1), (2, 3), (4, 5)]  # each host's bcast from its leader
    assert s.steps[0].reduce_bytes.tolist() == [m] * 3 and s.steps[-1].reduce_bytes.tolist() == [0.0] * 3
    assert all(x.waits for x in s.steps)  # each phase waits for the one before


def test_reduce_alpha_ends_with_a_send_from_rank_0_to_another_root():
    m = 65536.0
    alg, _ = reduce_alpha_run(_hosts(2, 2, 2), int(m))
    assert alg.rooted
    up = on_groups(REDUCE["reduce_scatter_gather"].schedule(3, m, 0), [[0, 2, 4]], 6)
    at0 = alg.schedule(6, m, 0)
    assert _pairs(at0.steps[0]) == [(1, 0), (3, 2), (5, 4)]
    assert [_pairs(x) for x in at0.steps[1:]] == [_pairs(x) for x in up.steps]  # root 0: no send after
    at3 = alg.schedule(6, m, 3)  # the same reduce to rank 0, then MPIC_Send to the root
    assert [_pairs(x) for x in at3.steps[:-1]] == [_pairs(x) for x in at0.steps]
    assert _pairs(at3.steps[-1]) == [(0, 3)] and at3.steps[-1].nbytes.tolist() == [m]


def test_hosts_of_different_sizes_reduce_side_by_side():
    s = AlphaSchedule("allreduce", ((0, 1, 2), (3, 4)), "recursive_doubling")(5, 8.0)
    assert _pairs(s.steps[0]) == [(1, 0), (4, 3)] and _pairs(s.steps[1]) == [(2, 0)]
    assert _pairs(s.steps[2]) == [(0, 3), (3, 0)]  # the two leaders exchange
    assert [_pairs(x) for x in s.steps[3:]] == [[(0, 2), (3, 4)], [(0, 1)]]  # binomial bcasts from the leaders


def test_hosts_are_mpichs_node_comms_and_the_leaders_their_lowest_ranks():
    alg, _ = allreduce_alpha_run(Layout(["f", "s", "f", "s"], hosts=[0, 1, 0, 1]), 1024)
    s = alg.schedule(4, 1024.0)
    assert _pairs(s.steps[0]) == [(2, 0), (3, 1)] and _pairs(s.steps[1]) == [(0, 1), (1, 0)]


def test_on_one_host_there_is_no_leaders_level():
    alg, _ = allreduce_alpha_run(_hosts(4), 65536)
    assert alg.name == "ch4-alpha:binomial/binomial"
    s = alg.schedule(4, 65536.0)
    assert {r for x in s.steps for r in (*x.src.tolist(), *x.dst.tolist())} == {0, 1, 2, 3}
    assert s.n_steps == 4  # two reduce steps, two bcast steps


def test_the_leaders_level_is_mpirs_auto_selection_for_the_leader_count():
    assert allreduce_alpha_run(_hosts(3, 3, 3, 3), 8)[0].name == "ch4-alpha:binomial/recursive_doubling/binomial"
    assert reduce_alpha_run(_hosts(3, 3, 3, 3), 2048)[0].name == "ch4-alpha:binomial/binomial"
    assert reduce_alpha_run(_hosts(3, 3, 3, 3), 16384)[0].name == "ch4-alpha:binomial/reduce_scatter_gather"


def test_not_modelled_on_one_rank_per_host_or_where_the_leaders_run_an_unmodelled_algorithm(monkeypatch):
    # one rank per host: no node-aware communicator, MPICH refuses alpha (fallback=error)
    assert allreduce_alpha_run(["fast"] * 4, 65536) is None and reduce_alpha_run(_hosts(1, 1, 1), 65536) is None
    assert _nat("allreduce", "composition:alpha").on(["fast"] * 4, 65536) is None
    rules = {"allreduce": lambda n, m, one: None, "reduce": lambda n, m, one: "smp"}
    monkeypatch.setattr(compositions, "_defaults", SimpleNamespace(RULES=rules))
    assert allreduce_alpha_run(_hosts(2, 2), 65536) is None  # MPIR's selection runs one hnow does not model
    assert reduce_alpha_run(_hosts(2, 2), 65536) is None  # a name the reduce catalog does not have
    assert allreduce_alpha_run(_hosts(4), 65536) is not None  # one host: no leaders' algorithm at all


def test_pinned_by_the_composition_variable_with_the_device_collectives_on():
    for op, coll in (("allreduce", "ALLREDUCE"), ("reduce", "REDUCE")):
        nat = _nat(op, "composition:alpha")
        assert nat.env[f"MPIR_CVAR_{coll}_COMPOSITION"] == "1" and nat.env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "all"
        assert nat.leaf is None and nat in ops.get(op).pinned_only["MPICH"]  # no selection file names it


def test_mpichs_default_on_hosts_of_several_ranks_is_predicted_as_composition_alpha():
    prof = paper_shm_profile()
    lay = Layout(["fast"] * 2 + ["slow"] * 2 + ["fast"] * 2, hosts=[0, 0, 1, 1, 2, 2])
    sizes = [16384, 65536]
    for op in ("allreduce", "reduce"):
        kw = {"reduce_us_per_byte": 0.001}
        alpha = ops.native_predict(op, "MPICH", prof, lay, sizes, algorithm=_nat(op, "composition:alpha"), **kw)
        ch4 = ops.native_predict(op, "MPICH", prof, lay, sizes, algorithm=_nat(op, "ch4"), **kw)
        assert np.all(np.isfinite(alpha)) and ch4 == pytest.approx(alpha, rel=1e-12)
    # up to 2048 B ch4 runs reduce's composition beta: not modelled
    assert _nat("reduce", "ch4").on(lay, 1024) is None and _nat("allreduce", "ch4").on(lay, 1024) is not None
