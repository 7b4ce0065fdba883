"""Piecewise-linear profiles (``hnowmodel.profile/2``): regimes, files, validation, and predictions at each size."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnowmodel import ops, search
from hnowmodel import predict as P
from hnowmodel import reference as R
from hnowmodel import trees as T
from hnowmodel.errors import ProfileError
from hnowmodel.params import (
    MAX_CONST_US,
    MAX_PER_BYTE_US,
    PROFILE_SCHEMA,
    PROFILE_SCHEMA_V1,
    Link,
    LinkRegime,
    NodeType,
    Profile,
    Regime,
    paper_profile,
)
from tests.helpers import any_tree as _any_tree

# fast: a protocol switch after 1000 bytes (inclusive bound); slow: one line; network: a switch after 2000 bytes.
FAST = NodeType.piecewise(
    "fast",
    [Regime(1000, 10.0, 0.1, 20.0, 0.2, 1.0, 0.01), Regime(None, 50.0, 0.01, 60.0, 0.02, 3.0, 0.001)],
)
SLOW = NodeType("slow", 90.0, 0.18, 124.0, 0.08)
NET = Link.piecewise([LinkRegime(2000, 5.0, 0.05), LinkRegime(None, 30.0, 0.005)])
TWO = Profile({"fast": FAST, "slow": SLOW}, NET)


def s_fast(m):
    return 10 + 0.1 * m if m <= 1000 else 50 + 0.01 * m


def r_fast(m):
    return 20 + 0.2 * m if m <= 1000 else 60 + 0.02 * m


def c_fast(m):
    return 1 + 0.01 * m if m <= 1000 else 3 + 0.001 * m


def x(m):
    return 5 + 0.05 * m if m <= 2000 else 30 + 0.005 * m


SIZES = [0, 999, 1000, 1001, 1500, 2000, 2001, 5000]


# ---- the data model --------------------------------------------------------------------------------------------
def test_regime_bound_is_inclusive():
    for m in SIZES:
        assert FAST.send_us(m) == pytest.approx(s_fast(m))
        assert FAST.recv_us(m) == pytest.approx(r_fast(m))
        assert FAST.copy_us(m) == pytest.approx(c_fast(m))
        assert NET.us(m) == pytest.approx(x(m))
    got = FAST.send_us(np.array(SIZES, dtype=float))
    assert isinstance(got, np.ndarray) and got.tolist() == pytest.approx([s_fast(m) for m in SIZES])
    assert FAST.regime_at(1000).upto_bytes == 1000 and FAST.regime_at(1000.5).upto_bytes is None


def test_flat_attributes_are_the_first_regime_and_positional_construction_is_one_regime():
    assert (FAST.Sc_us, FAST.Sm_us_per_byte, FAST.Rc_us, FAST.Rm_us_per_byte) == (10.0, 0.1, 20.0, 0.2)
    assert FAST.is_piecewise and FAST.breakpoints == (1000,)
    assert len(SLOW.regimes) == 1 and SLOW.regimes[0].upto_bytes is None and not SLOW.is_piecewise
    assert SLOW.copy_us(100) == 0.0
    assert Link(16, 0.08).regimes == (LinkRegime(None, 16, 0.08),)
    with pytest.raises(ProfileError, match="first regime"):
        NodeType("x", 1, 0, 1, 0, regimes=FAST.regimes)


def test_at_gives_the_lines_in_force():
    for m in SIZES:
        q = TWO.at(m)
        assert not q.is_piecewise
        assert q.types["fast"].Sc_us == (10.0 if m <= 1000 else 50.0)
        assert q.network.Xc_us == (5.0 if m <= 2000 else 30.0)
        for a in ("fast", "slow"):
            for b in ("fast", "slow"):
                assert q.ptp_us(a, b, m) == pytest.approx(TWO.ptp_us(a, b, m))
    assert paper_profile().at(12345) is paper_profile().at(12345) or not paper_profile().is_piecewise


def test_segments_group_sizes_with_the_same_regimes():
    segs = TWO.segments(SIZES)
    assert [i.tolist() for _, i in segs] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert [r for r, _ in segs] == [0.0, 1001.0, 2001.0]
    assert TWO.breakpoints == (1000, 2000)
    assert [i.tolist() for _, i in paper_profile().segments([5, 0, 10**6])] == [[0, 1, 2]]
    assert TWO.segments([]) == []


def test_arrays_and_link_matrix_at_a_size():
    layout = ["slow", "fast"]
    assert TWO.arrays(layout)["Sc_us"].tolist() == [90.0, 10.0]  # old call: 0 bytes
    a = TWO.arrays(layout, 4096)
    assert a["Sc_us"].tolist() == [90.0, 50.0] and a["Cc_us"].tolist() == [0.0, 3.0]
    assert TWO.link_matrix()[0].tolist() == [[5.0, 5.0], [5.0, 5.0]]
    assert TWO.link_matrix(m=2001)[1].tolist() == [[0.005, 0.005], [0.005, 0.005]]


def test_paper_profile_is_still_table1_with_one_regime():
    p = paper_profile()
    assert not p.is_piecewise
    assert [(t.Sc_us, t.Sm_us_per_byte, t.Rc_us + 16, t.Rm_us_per_byte) for t in p.types.values()] == [
        (60.0, 0.05, 110.0, 0.03),
        (90.0, 0.18, 140.0, 0.08),
    ]


# ---- files -----------------------------------------------------------------------------------------------------
def _v1_doc():
    return {
        "schema": PROFILE_SCHEMA_V1,
        "types": {
            "fast": {"Sc_us": 60, "Sm_us_per_byte": 0.05, "Rc_us": 94, "Rm_us_per_byte": 0.03},
            "slow": {"Sc_us": 90, "Sm_us_per_byte": 0.18, "Rc_us": 124, "Rm_us_per_byte": 0.08},
        },
        "network": {"Xc_us": 16, "Xm_us_per_byte": 0.08},
        "links": [{"from": "fast", "to": "slow", "Xc_us": 20, "Xm_us_per_byte": 0.08}],
        "nodes": [{"rank": 0, "host": "n01", "type": "fast"}],
    }


def test_v1_loads_as_one_regime_and_round_trips_through_v2(tmp_path):
    p = Profile.from_dict(_v1_doc())
    assert p == Profile.from_dict(json.loads(json.dumps(_v1_doc())))
    doc = p.to_dict()
    assert doc["schema"] == PROFILE_SCHEMA
    assert doc["types"]["fast"] == {
        "regimes": [{"upto_bytes": None, "Sc_us": 60.0, "Sm_us_per_byte": 0.05, "Rc_us": 94.0, "Rm_us_per_byte": 0.03}]
    }
    assert doc["links"] == [
        {"from": "fast", "to": "slow", "regimes": [{"upto_bytes": None, "Xc_us": 20.0, "Xm_us_per_byte": 0.08}]}
    ]
    assert Profile.from_dict(doc) == p
    f = tmp_path / "v1.json"
    f.write_text(json.dumps(_v1_doc()))
    assert Profile.load(f) == p
    assert Profile.load(p.save(tmp_path / "v2.json")) == p


def test_save_load_piecewise_profile_equal(tmp_path):
    p = Profile(
        TWO.types,
        TWO.network,
        {("fast", "slow"): Link.piecewise([LinkRegime(64, 1.0, 0.5), LinkRegime(None, 9.0, 0.25)])},
        nodes=({"rank": 0, "host": "n01", "type": "fast"}, {"rank": 1, "host": "n02", "type": "slow"}),
        provenance={"source": "test"},
        extensions={"queue": {"x": 1}},
    )
    path = p.save(tmp_path / "p.json")
    doc = json.loads(path.read_text())
    assert doc["schema"] == "hnowmodel.profile/2"
    assert doc["types"]["fast"]["regimes"][0] == {
        "upto_bytes": 1000, "Sc_us": 10.0, "Sm_us_per_byte": 0.1, "Rc_us": 20.0, "Rm_us_per_byte": 0.2,
        "Cc_us": 1.0, "Cm_us_per_byte": 0.01,
    }  # fmt: skip
    assert "Cc_us" not in doc["types"]["slow"]["regimes"][0]  # optional keys are written only when not 0
    q = Profile.load(path)
    assert q == p and q.to_dict() == p.to_dict()
    for m in SIZES:
        assert q.ptp_us("fast", "slow", m) == pytest.approx(p.ptp_us("fast", "slow", m))


def _v2_doc():
    return TWO.to_dict()


def _reg(d, t="fast", i=0):
    return d["types"][t]["regimes"][i]


@pytest.mark.parametrize(
    "mutate, needles",
    [
        (lambda d: _reg(d).update(Xc_us=1), ["types.fast.regimes[0]", "unknown key 'Xc_us'"]),
        (lambda d: d["network"]["regimes"][0].update(bogus=1), ["network.regimes[0]", "'bogus'"]),
        (lambda d: _reg(d, i=1).update(upto_bytes=5000), ["types.fast.regimes[1].upto_bytes", "must be null"]),
        (lambda d: d["types"]["fast"]["regimes"].insert(1, dict(_reg(d), upto_bytes=500)),
         ["types.fast.regimes[1].upto_bytes", "greater than the previous regime's 1000, got 500"]),
        (lambda d: d["types"]["fast"]["regimes"].insert(1, dict(_reg(d), upto_bytes=1000)),
         ["regimes[1].upto_bytes", "greater than"]),
        (lambda d: _reg(d).update(upto_bytes=None), ["types.fast.regimes[0].upto_bytes", "only the last"]),
        (lambda d: _reg(d).update(upto_bytes=10.5), ["regimes[0].upto_bytes", "whole number"]),
        (lambda d: _reg(d).update(upto_bytes=-1), ["regimes[0].upto_bytes", ">= 0"]),
        (lambda d: _reg(d).pop("upto_bytes"), ["regimes[0].upto_bytes", "missing"]),
        (lambda d: _reg(d).pop("Rm_us_per_byte"), ["types.fast.regimes[0].Rm_us_per_byte", "missing"]),
        (lambda d: _reg(d).update(Sc_us=1e308), ["types.fast.regimes[0].Sc_us", "limit"]),
        (lambda d: _reg(d).update(Sm_us_per_byte=1e308), ["types.fast.regimes[0].Sm_us_per_byte", "limit"]),
        (lambda d: _reg(d).update(Cc_us=MAX_CONST_US * 2), ["Cc_us", "limit"]),
        (lambda d: d["network"]["regimes"][0].update(Xm_us_per_byte=MAX_PER_BYTE_US * 1.5), ["Xm_us_per_byte"]),
        (lambda d: _reg(d).update(Rc_us=float("nan")), ["types.fast.regimes[0].Rc_us", "finite"]),
        (lambda d: _reg(d).update(Rc_us=float("inf")), ["Rc_us", "finite"]),
        (lambda d: _reg(d).update(Cm_us_per_byte=-0.5), ["types.fast.regimes[0].Cm_us_per_byte", ">= 0"]),
        (lambda d: _reg(d).update(Sc_us=True), ["Sc_us", "number"]),
        (lambda d: d["types"]["fast"].update(regimes=[]), ["types.fast.regimes", "non-empty"]),
        (lambda d: d["types"]["fast"].update(Sc_us=1), ["types.fast", "'Sc_us' beside 'regimes'"]),
        (lambda d: d.update(schema="hnowmodel.profile/4"),
         ["'hnowmodel.profile/4'", "'hnowmodel.profile/1', 'hnowmodel.profile/2', 'hnowmodel.profile/3'"]),
        (lambda d: d.update(hosts={"shm": {}}), ["unknown key 'hosts'"]),
        (lambda d: d.update(schema="hnowmodel.profile/1"), ["types.fast.regimes", "hnowmodel.profile/2"]),
    ],
)  # fmt: skip
def test_bad_v2_profiles_name_the_field(mutate, needles):
    d = _v2_doc()
    mutate(d)
    with pytest.raises(ProfileError) as e:
        Profile.from_dict(json.loads(json.dumps(d)) if "nan" not in str(d) and "inf" not in str(d) else d)
    for needle in needles:
        assert needle in str(e.value)


def test_huge_value_in_v1_file_is_refused_naming_the_field(tmp_path):
    d = _v1_doc()
    d["types"]["slow"]["Sc_us"] = 1e308
    f = tmp_path / "huge.json"
    f.write_text(json.dumps(d))
    with pytest.raises(ProfileError, match=r"types\.slow\.Sc_us: 1e\+308 is above the limit"):
        Profile.load(f)
    with pytest.raises(ProfileError, match="Sc_us"):
        NodeType("x", 1e308, 0, 0, 0)


def test_testbed_files_keep_their_regime_free_shape():
    from hnowmodel.testbed import load_testbed

    tb = load_testbed("paper")
    assert tb.types == paper_profile().types
    assert tb.types["fast"].to_flat_dict() == {"Sc_us": 60.0, "Sm_us_per_byte": 0.05, "Rc_us": 94.0,
                                               "Rm_us_per_byte": 0.03}  # fmt: skip
    with pytest.raises(ProfileError, match="regime-free"):
        FAST.to_flat_dict()


# ---- predictions at each size ------------------------------------------------------------------------------------
def test_two_ranks_by_hand_on_both_sides_of_and_at_the_bound():
    sizes = [999, 1000, 1001]
    want = [s_fast(m) + x(m) + r_fast(m) for m in sizes]  # 2*99.9+..., exactly the piecewise value
    assert want == pytest.approx([10 + 99.9 + 5 + 49.95 + 20 + 199.8, 10 + 100 + 5 + 50 + 20 + 200,
                                  50 + 10.01 + 5 + 50.05 + 60 + 20.02])  # fmt: skip
    ff = ["fast", "fast"]
    assert P.bcast(TWO, ff, T.binomial(2), sizes).tolist() == pytest.approx(want)
    assert P.scatter(TWO, ff, T.sequential(2), sizes).tolist() == pytest.approx(want)
    assert P.gather(TWO, ff, T.sequential(2), sizes).tolist() == pytest.approx(want)
    assert P.ptp(TWO, "fast", "fast", sizes).tolist() == pytest.approx(want)


def test_three_ranks_by_hand():
    fff = ["fast"] * 3
    # sequential bcast: the second child waits for two sends
    for m in (1000, 1001):
        got = P.bcast(TWO, fff, T.sequential(3), [m], per_rank=True)[0]
        assert got.tolist() == pytest.approx([0, s_fast(m) + x(m) + r_fast(m), 2 * s_fast(m) + x(m) + r_fast(m)])
    # chain scatter at 600 bytes: the edge 0->1 carries 1200 bytes (second regime), 1->2 carries 600 (first)
    t1 = s_fast(1200) + x(1200) + r_fast(1200)
    assert t1 == pytest.approx(62 + 65 + 84)
    t2 = t1 + s_fast(600) + x(600) + r_fast(600)
    assert P.scatter(TWO, fff, T.chain(3), [600], per_rank=True)[0].tolist() == pytest.approx([0, t1, t2])
    # chain gather at 600 bytes: 2 -> 1 (600 B), then 1 -> 0 carries 1200 B
    g1 = s_fast(600) + x(600) + r_fast(600)
    g0 = g1 + s_fast(1200) + x(1200) + r_fast(1200)
    for v in (False, True):
        assert P.gather(TWO, fff, T.chain(3), [600], one_at_a_time=v).tolist() == pytest.approx([g0])


def test_root_copy_by_hand():
    fff = ["fast"] * 3
    m = 1001
    # scatter: the root sends twice, then copies its own block; the last receive is later here
    sent = 2 * s_fast(m)
    got = P.scatter(TWO, fff, T.sequential(3), [m], per_rank=True, root_copy=True)[0]
    assert got[0] == pytest.approx(sent + c_fast(m))
    assert got[2] == pytest.approx(sent + x(m) + r_fast(m))
    # gather: the root copies first; with a large copy the receives wait for it
    big = Profile({"fast": NodeType("fast", 1, 0, 2, 0, 500, 0)}, Link(3, 0))
    assert P.gather(big, fff, T.sequential(3), [0], root_copy=True).tolist() == [504.0]
    # without the copy ("paper"): arrivals 1+3 = 4 and 1+2*3 = 7; receives end at 4+2 = 6 and max(6, 7)+2 = 9
    assert P.gather(big, fff, T.sequential(3), [0]).tolist() == [9.0]
    assert P.gather(big, ["fast"], T.sequential(1), [0], root_copy=True).tolist() == [500.0]
    assert P.scatter(big, ["fast"], T.sequential(1), [0], root_copy=True).tolist() == [500.0]


def test_bcast_equals_the_reference_on_the_regime_line_at_each_size():
    tree, layout = T.binomial(7), ["fast", "slow", "fast", "fast", "slow", "fast", "slow"]
    got = P.bcast(TWO, layout, tree, SIZES, per_rank=True)
    for j, m in enumerate(SIZES):
        assert got[j] == pytest.approx(R.bcast_reference(TWO.at(m), layout, tree, m))
        assert got[j] == pytest.approx(R.bcast_reference(TWO, layout, tree, m))


def test_maximum_values_stay_finite_on_2_20_ranks():
    top = NodeType("top", MAX_CONST_US, MAX_PER_BYTE_US, MAX_CONST_US, MAX_PER_BYTE_US, MAX_CONST_US, MAX_PER_BYTE_US)
    prof = Profile({"top": top}, Link(MAX_CONST_US, MAX_PER_BYTE_US))
    n = 2**20
    layout = np.array(["top"] * n)
    sizes = [0, 2**40]
    # the deepest sums: a binomial tree (subtree data per edge) and a sequential one (2**20 sends by the root)
    for tree in (T.binomial(n), T.sequential(n)):
        got = [
            P.bcast(prof, layout, tree, sizes),
            P.scatter(prof, layout, tree, sizes, root_copy=True),
            P.gather(prof, layout, tree, sizes, one_at_a_time=True, root_copy=True),
        ]
        assert np.isfinite(got).all() and (np.array(got) > 0).all()
    best = search.best_tree(prof, ["top"] * 6, "bcast", 2**40)
    assert math.isfinite(best.time_us)
    json.dumps(best.to_dict(), allow_nan=False)


# ---- properties ------------------------------------------------------------------------------------------------
_BOUNDS = [0, 1, 99, 100, 1000, 4096, 65535]
PROP_SIZES = [0, 1, 50, 100, 101, 1000, 1500, 4096, 4097, 65536]
_c = st.floats(0, 200, allow_nan=False).map(lambda v: round(v, 2))
_k = st.floats(0, 0.5, allow_nan=False).map(lambda v: round(v, 4))


@st.composite
def _uptos(draw):
    return sorted(draw(st.sets(st.sampled_from(_BOUNDS), max_size=3))) + [None]


@st.composite
def piecewise_profiles(draw):
    names = ["a", "b", "c"][: draw(st.integers(1, 3))]

    def node(t):
        regs = [Regime(u, draw(_c), draw(_k), draw(_c), draw(_k), draw(_c), draw(_k)) for u in draw(_uptos())]
        return NodeType.piecewise(t, regs)

    def link():
        return Link.piecewise([LinkRegime(u, draw(_c), draw(_k)) for u in draw(_uptos())])

    types = {t: node(t) for t in names}
    links = {(x, y): link() for x in names for y in names if draw(st.booleans())}
    return Profile(types, link(), links)


@st.composite
def piecewise_cases(draw, max_n=14):
    prof = draw(piecewise_profiles())
    n = draw(st.integers(1, max_n))
    layout = draw(st.lists(st.sampled_from(list(prof.types)), min_size=n, max_size=n))
    sizes = draw(st.lists(st.sampled_from(PROP_SIZES), min_size=1, max_size=6))
    return prof, layout, _any_tree(draw, n), sizes


@given(piecewise_cases())
def test_many_sizes_at_once_equal_one_size_at_a_time(case):
    prof, layout, tree, sizes = case
    for op in ("bcast", "scatter", "gather"):
        together = ops.predict(op, prof, layout, tree, sizes)
        alone = [ops.predict(op, prof, layout, tree, [m])[0] for m in sizes]
        assert together.tolist() == pytest.approx(alone), op
    got = P.bcast(prof, layout, tree, sizes)
    assert got.tolist() == pytest.approx([P.bcast(prof.at(m), layout, tree, [m])[0] for m in sizes])


@given(piecewise_cases(), st.booleans())
def test_vectorised_equals_reference_on_piecewise_profiles(case, copy):
    prof, layout, tree, sizes = case
    b = P.bcast(prof, layout, tree, sizes, per_rank=True)
    s = P.scatter(prof, layout, tree, sizes, per_rank=True, root_copy=copy)
    g = {v: P.gather(prof, layout, tree, sizes, per_rank=True, one_at_a_time=v, root_copy=copy) for v in (False, True)}
    for j, m in enumerate(sizes):
        assert b[j] == pytest.approx(R.bcast_reference(prof, layout, tree, m))
        assert s[j] == pytest.approx(R.scatter_reference(prof, layout, tree, m, root_copy=copy))
        for v in (False, True):
            assert g[v][j] == pytest.approx(R.gather_reference(prof, layout, tree, m, v, root_copy=copy))


@given(piecewise_profiles(), st.lists(st.sampled_from(PROP_SIZES), min_size=1, max_size=8))
def test_segments_partition_the_sizes_into_regime_classes(prof, sizes):
    segs = prof.segments(sizes)
    assert sorted(int(i) for _, idx in segs for i in idx) == list(range(len(sizes)))
    for rep, idx in segs:
        at = prof.at(rep)
        for i in idx:
            m = sizes[i]
            for a in prof.types:
                assert prof.types[a].send_us(m) == pytest.approx(at.types[a].send_us(m))
                assert prof.types[a].recv_us(m) == pytest.approx(at.types[a].recv_us(m))
                assert prof.types[a].copy_us(m) == pytest.approx(at.types[a].copy_us(m))
                for b in prof.types:
                    assert prof.link(a, b).us(m) == pytest.approx(at.link(a, b).us(m))


@given(piecewise_profiles(), st.sampled_from(PROP_SIZES))
def test_profile_file_round_trip_property(prof, m):
    q = Profile.from_dict(json.loads(json.dumps(prof.to_dict())))
    assert q == prof
    assert q.ptp_us(*list(prof.types)[:1] * 2, m) == pytest.approx(prof.ptp_us(*list(prof.types)[:1] * 2, m))


@given(piecewise_cases(max_n=8), st.sampled_from(["bcast", "scatter", "gather"]))
def test_best_tree_time_is_the_prediction_of_its_tree(case, op):
    prof, layout, _, sizes = case
    if len(layout) < 2:
        return
    best = search.best_tree(prof, layout, op, sizes[0], compare=())
    fn = P.bcast if op == "bcast" else (P.scatter if op == "scatter" else None)
    if fn is None:
        from hnowmodel.ops import predictor

        fn = predictor("gather")
    assert best.time_us == pytest.approx(fn(prof, layout, best.tree, [sizes[0]])[0])
    if op == "bcast":
        assert best.time_us == pytest.approx(P.bcast(prof.at(sizes[0]), layout, best.tree, [sizes[0]])[0])


@given(piecewise_cases(), st.booleans(), st.sampled_from([None, 1, 1000, 8192]))
def test_rendezvous_gather_vectorised_equals_reference(case, copy, rdv):
    """With an eager/rendezvous threshold, a gather's big messages wait for the parent's posted receive."""
    import dataclasses

    prof, layout, tree, sizes = case
    prof = dataclasses.replace(prof, rendezvous_from_bytes=rdv)
    for v in (False, True):
        g = P.gather(prof, layout, tree, sizes, per_rank=True, one_at_a_time=v, root_copy=copy)
        for j, m in enumerate(sizes):
            assert g[j] == pytest.approx(R.gather_reference(prof, layout, tree, m, v, root_copy=copy))


def test_rendezvous_gather_two_ranks_copies_first_then_transfers():
    """MPICH's binomial gather at 2 ranks, rendezvous: the root copies its block (C), only then posts the receive,
    so the transfer (S + X + R = T) follows the copy: C + T; eager: the message flows during the copy."""
    import dataclasses

    node = NodeType("n", 1.0, 0.0, 2.0, 0.0, Cc_us=5.0, Cm_us_per_byte=0.0)
    prof = Profile({"n": node}, Link(0.5, 0.0))
    tree = T.binomial(2)
    eager = P.gather(prof, ["n", "n"], tree, [100], root_copy=True)[0]
    assert eager == pytest.approx(max(5.0, 1.0 + 0.5) + 2.0)  # max(C, S + X) + R
    rdv = dataclasses.replace(prof, rendezvous_from_bytes=64)
    assert P.gather(rdv, ["n", "n"], tree, [100], root_copy=True)[0] == pytest.approx(5.0 + 1.0 + 0.5 + 2.0)
    assert P.gather(rdv, ["n", "n"], tree, [10], root_copy=True)[0] == pytest.approx(eager)  # below: eager
