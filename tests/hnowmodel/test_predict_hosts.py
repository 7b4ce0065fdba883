"""The paper predictors with hosts: an edge between two ranks of one host costs the type's shared-memory S/X/R.

Checked against the scalar recursions of :mod:`hnowmodel.reference` on random layouts with hosts, random trees and
random (piecewise) profiles; against hand-worked numbers on 2 hosts x 2 ranks; and one rank per host gives exactly
the numbers of a plain layout.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import predict as P
from hnowmodel import reference as R
from hnowmodel import trees as T
from hnowmodel.errors import ProfileError
from hnowmodel.layout import Layout
from hnowmodel.params import Link, LinkRegime, NodeType, Profile, Regime, ShmCosts, paper_profile
from hnowmodel.runopts import Schedule
from tests.helpers import any_tree

SIZES = [0, 1, 100, 1000, 4096, 65536]
# shared memory: fast S=5, X=1, R=4; slow S=8, X=2, R=10 (µs, no per-byte term)
SHM = {
    "fast": ShmCosts(NodeType("fast", 5, 0, 4, 0), Link(1, 0)),
    "slow": ShmCosts(NodeType("slow", 8, 0, 10, 0), Link(2, 0)),
}
PROF = dataclasses.replace(paper_profile(), shm=SHM)
FF_SS = Layout(["fast", "fast", "slow", "slow"], hosts=[0, 0, 1, 1])


def test_bcast_two_hosts_of_two_by_hand():
    # binomial(4): 0 -> 2 (first), 0 -> 1 (second), 2 -> 3. At m = 0, paper profile: S_fast 60, X 16, R_slow 124.
    # 0 -> 2 crosses hosts: 60 + 16 + 124 = 200. 0 -> 1 on host 0: after the first send (60), shm 5 + 1 + 4 = 70.
    # 2 -> 3 on host 1: 200 + shm 8 + 2 + 10 = 220.
    got = P.bcast(PROF, FF_SS, T.binomial(4), [0], per_rank=True)[0]
    assert got.tolist() == [0.0, 70.0, 200.0, 220.0]
    assert R.bcast_reference(PROF, FF_SS, T.binomial(4), 0) == [0.0, 70.0, 200.0, 220.0]


def test_gather_two_hosts_of_two_by_hand():
    # 3 -> 2 (host 1, shm): departs 8, arrives 10, received at 20. 1 -> 0 (host 0, shm): departs 5, arrives 6,
    # received at 10. 2 -> 0 crosses hosts: departs 20 + S_slow 90 = 110, arrives 126, received at 126 + R_fast 94.
    # The shm message takes no turn on the root's link: with one message at a time the result is the same.
    for one in (False, True):
        got = P.gather(PROF, FF_SS, T.binomial(4), [0], per_rank=True, one_at_a_time=one)[0]
        assert got.tolist() == [220.0, 0.0, 20.0, 0.0]


def test_gather_same_host_message_does_not_queue_on_the_link():
    # sequential(4) on hosts [0, 1, 1, 0]: ranks 1, 2 send over the network (S_fast 60, X 16), rank 3 through shm
    # (S 5, X 1). Eq. 12 as printed counts only the network messages' X: arrivals 76, 92 (not 60 + 2*16 + 1).
    lay = Layout(["fast"] * 4, hosts=[0, 1, 1, 0])
    # arrivals: rank 3 at 6, rank 1 at 76, rank 2 at 92; receives: 6+4=10, 76+94=170, 170+94=264
    assert P.gather(PROF, lay, T.sequential(4), [0]).tolist() == [264.0]
    # one at a time: 76, max(60, 76) + 16 = 92: the same here
    assert P.gather(PROF, lay, T.sequential(4), [0], one_at_a_time=True).tolist() == [264.0]
    # without hosts the third message would queue behind two: arrival 60 + 3*16 = 108, done 108 + 94 + ... = 358
    assert P.gather(PROF, list(lay), T.sequential(4), [0]).tolist() == [358.0]


def test_scatter_root_copy_with_hosts_by_hand():
    # sequential(3) on one host: root sends to 1 then 2 through shm (S 5 each), then copies (C = 0 here).
    lay = Layout(["fast"] * 3, hosts=[0, 0, 0])
    got = P.scatter(PROF, lay, T.sequential(3), [0], Schedule(root_copy=True), per_rank=True)[0]
    assert got.tolist() == [10.0, 10.0, 15.0]


def test_missing_shared_memory_costs_name_the_type():
    prof = dataclasses.replace(paper_profile(), shm={"fast": SHM["fast"]})
    with pytest.raises(ProfileError, match="'slow'"):
        P.bcast(prof, FF_SS, T.binomial(4), [0])
    # no same-host edge of a slow host: nothing to miss
    lay = Layout(["fast", "fast", "slow", "slow"], hosts=[0, 0, 1, 2])
    assert P.bcast(prof, lay, T.binomial(4), [0]).shape == (1,)


def test_shared_hosts_without_a_same_host_edge_change_nothing():
    lay = Layout(["fast", "slow", "fast", "slow"], hosts=[0, 1, 0, 1])
    for op in (P.bcast, P.scatter, P.gather):
        assert np.array_equal(op(PROF, lay, T.chain(4), SIZES), op(paper_profile(), list(lay), T.chain(4), SIZES))


# ---- random cases ----------------------------------------------------------------------------------------------
_cost = st.floats(0, 200, allow_nan=False).map(lambda v: round(v, 2))
_per_byte = st.floats(0, 0.5, allow_nan=False).map(lambda v: round(v, 4))
_UPTO = 1000  # a breakpoint some of SIZES' edges cross


def _shm(draw, name: str) -> ShmCosts:
    """Shared-memory costs of one type: one regime, or two split at ``_UPTO`` bytes."""
    if draw(st.booleans()):
        return ShmCosts(
            NodeType(name, draw(_cost), draw(_per_byte), draw(_cost), draw(_per_byte)),
            Link(draw(_cost), draw(_per_byte)),
        )
    node = NodeType.piecewise(
        name, [Regime(b, draw(_cost), draw(_per_byte), draw(_cost), draw(_per_byte)) for b in (_UPTO, None)]
    )
    link = Link.piecewise([LinkRegime(b, draw(_cost), draw(_per_byte)) for b in (_UPTO, None)])
    return ShmCosts(node, link)


@st.composite
def host_cases(draw, max_hosts=7, max_slots=4):
    """A random profile (1-3 types, per-pair links, shared-memory costs, maybe a rendezvous size and a copy term),
    a layout of random hosts (1-4 slots each, ranks maybe interleaved) and a tree."""
    names = ["a", "b", "c"][: draw(st.integers(1, 3))]
    types = {t: NodeType(t, draw(_cost), draw(_per_byte), draw(_cost), draw(_per_byte), draw(_cost)) for t in names}
    links = {(x, y): Link(draw(_cost), draw(_per_byte)) for x in names for y in names if draw(st.booleans())}
    rdv = draw(st.sampled_from([None, 500, 4096]))
    shm = {t: _shm(draw, t) for t in names}
    prof = Profile(types, Link(draw(_cost), draw(_per_byte)), links, rendezvous_from_bytes=rdv, shm=shm)
    slots = draw(st.lists(st.integers(1, max_slots), min_size=1, max_size=max_hosts))
    host_types = [draw(st.sampled_from(names)) for _ in slots]
    ranks = [t for t, s in zip(host_types, slots, strict=True) for _ in range(s)]
    hosts = [h for h, s in enumerate(slots) for _ in range(s)]
    layout = Layout(ranks, hosts)
    if draw(st.booleans()):
        layout = layout.take(draw(st.permutations(range(len(layout)))))
    tree = any_tree(draw, len(layout))
    return prof, layout, tree


@given(host_cases())
def test_vectorised_equals_reference_with_hosts(case):
    prof, layout, tree = case
    copy = Schedule(root_copy=True)
    vec = {
        "bcast": P.bcast(prof, layout, tree, SIZES, per_rank=True),
        "scatter": P.scatter(prof, layout, tree, SIZES, per_rank=True),
        "scatter-copy": P.scatter(prof, layout, tree, SIZES, copy, per_rank=True),
        **{
            (v, c): P.gather(prof, layout, tree, SIZES, Schedule(root_copy=c), per_rank=True, one_at_a_time=v)
            for v in (False, True)
            for c in (False, True)
        },
    }
    for j, m in enumerate(SIZES):
        assert vec["bcast"][j] == pytest.approx(R.bcast_reference(prof, layout, tree, m), rel=1e-9)
        assert vec["scatter"][j] == pytest.approx(R.scatter_reference(prof, layout, tree, m), rel=1e-9)
        assert vec["scatter-copy"][j] == pytest.approx(R.scatter_reference(prof, layout, tree, m, True), rel=1e-9)
        for v in (False, True):
            for c in (False, True):
                want = R.gather_reference(prof, layout, tree, m, v, c)
                assert vec[(v, c)][j] == pytest.approx(want, rel=1e-9), (v, c, m)


@given(host_cases())
def test_one_rank_per_host_gives_exactly_the_old_numbers(case):
    prof, layout, tree = case
    plain = list(layout)
    own = Layout(plain)  # every rank on a host of its own
    old = dataclasses.replace(prof, shm={})  # the profile without host terms
    for fn in (P.bcast, P.scatter, lambda *a, **k: P.gather(*a, one_at_a_time=True, **k), P.gather):
        want = fn(old, plain, tree, SIZES, per_rank=True)
        assert np.array_equal(fn(prof, own, tree, SIZES, per_rank=True), want)
        assert np.array_equal(fn(prof, plain, tree, SIZES, per_rank=True), want)


@given(host_cases())
def test_free_shared_memory_never_slows_a_broadcast(case):
    # an edge through free shared memory costs nothing, and nothing after it waits longer than with the network
    prof, layout, tree = case
    free = {t: ShmCosts(NodeType(t, 0, 0, 0, 0), Link(0, 0)) for t in prof.types}
    fast = dataclasses.replace(prof, shm=free)
    assert (P.bcast(fast, layout, tree, SIZES) <= P.bcast(prof, list(layout), tree, SIZES) + 1e-9).all()


def test_many_ranks_per_host_stay_vectorised():
    n = 2**14
    lay = Layout(np.where((np.arange(n) // 16) % 2, "slow", "fast").tolist(), hosts=np.arange(n) // 16)
    t = P.bcast(PROF, lay, T.binomial(n), [0, 1024])
    assert t.shape == (2,) and 0 < t[0] < P.bcast(paper_profile(), list(lay), T.binomial(n), [0])[0]


# ---- the variant registry ----------------------------------------------------------------------------------------
def test_paper_variants_take_a_host_layout_and_the_others_refuse_in_one_line():
    from hnowmodel import ops, variants
    from hnowmodel.errors import LayoutError

    tree = T.binomial(4)
    paper = {
        ("paper", "bcast"): P.bcast(PROF, FF_SS, tree, SIZES),
        ("paper", "scatter"): P.scatter(PROF, FF_SS, tree, SIZES),
        ("paper", "gather"): P.gather(PROF, FF_SS, tree, SIZES),
        ("link", "gather"): P.gather(PROF, FF_SS, tree, SIZES, one_at_a_time=True),
    }
    for (name, op), want in paper.items():
        assert variants.get(name).shared_hosts
        assert np.array_equal(variants.get(name).predict(ops.get(op), PROF, FF_SS, tree, SIZES), want), (name, op)
        assert np.array_equal(ops.predict(op, PROF, FF_SS, tree, SIZES, variant=name), want), (name, op)
    for name, v in variants.VARIANTS.items():
        for op in v.movements:
            if v.shared_hosts:
                assert np.isfinite(v.predict(op, PROF, FF_SS, tree, SIZES)).all(), (name, op)
                continue
            with pytest.raises(LayoutError, match=f"variant {name!r} does not model several ranks") as e:
                v.predict(op, PROF, FF_SS, tree, SIZES)
            assert "\n" not in str(e.value) and "4 ranks on 2 hosts" in str(e.value) and "paper" in str(e.value)
            # one rank per host: as always
            assert v.predict(op, PROF, Layout(list(FF_SS)), tree, SIZES).shape == (len(SIZES),)


def test_prediction_rows_show_same_host_one_way_times_and_keep_calibration_hosts():
    from hnowmodel.predictions import prediction_rows

    rows = prediction_rows(PROF, op="ptp", sizes=[0])
    got = {r["tree"]: r["time_us"] for r in rows}
    assert got["fast->fast (same host)"] == 10.0 and got["slow->slow (same host)"] == 20.0 and got["fast->slow"] == 200
    assert "fast->fast (same host)" not in {r["tree"] for r in prediction_rows(PROF, op="ptp", src="fast", dst="slow")}
    assert "fast->fast (same host)" not in {r["tree"] for r in prediction_rows(paper_profile(), op="ptp")}
    doc = PROF.to_dict()
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(zip("aabb", FF_SS, strict=True))]
    calibrated = Profile.from_dict(doc)
    rows = prediction_rows(calibrated, op="bcast", trees="binomial", sizes=[0])
    assert rows[0]["time_us"] == 220.0  # FF.SS, as by hand above


def test_a_variant_that_does_not_model_hosts_refuses_them_in_one_line():
    from hnowmodel import ops
    from hnowmodel.errors import LayoutError
    from hnowmodel.variants import Variant

    bcast = ops.get("bcast")
    toy = Variant("toy", "eq. 7 without hosts", {bcast.movement: P.bcast}, shared_hosts=False)
    with pytest.raises(LayoutError, match="variant 'toy' does not model several ranks on a host") as e:
        toy.predict(bcast, PROF, FF_SS, T.binomial(4), [0])
    assert (
        "\n" not in str(e.value)
        and "4 ranks on 2 hosts" in str(e.value)
        and "bcast variants that do: paper" in str(e.value)
    )
    assert toy.predict(bcast, PROF, list(FF_SS), T.binomial(4), [0]).tolist() == [430.0]
