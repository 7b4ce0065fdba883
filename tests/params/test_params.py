"""Profiles: the paper's numbers, validation that names the bad field, JSON round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hnowmodel as hm
from hnowmodel.errors import LayoutError, ProfileError
from hnowmodel.params import MAX_PER_BYTE_US, PROFILE_SCHEMA, PROFILE_SCHEMA_V1, Profile, paper_profile

# Table 2 of Banikazemi et al. (the HNOW model): 0-byte one-way latency (µs), sender row -> receiver column.
TABLE2 = {("fast", "fast"): 170.0, ("fast", "slow"): 200.0, ("slow", "fast"): 200.0, ("slow", "slow"): 230.0}


@pytest.mark.parametrize("pair, expected", sorted(TABLE2.items()))
def test_table2_reproduced(pair, expected):
    assert paper_profile().ptp_us(*pair, 0) == pytest.approx(expected, abs=1e-9)


def test_table1_as_printed_keeps_rc_and_adds_xc():
    p = paper_profile("as-printed")
    assert p.types["fast"].Rc_us == 110 and p.types["slow"].Rc_us == 140
    assert p.ptp_us("fast", "fast", 0) == pytest.approx(60 + 16 + 110)
    # per-byte terms are Table 1's in both conventions: X(m) = m/12.5 + 16
    assert p.network.Xm_us_per_byte == pytest.approx(0.08) and p.network.Xc_us == 16


def test_ptp_slope_is_sum_of_per_byte_terms():
    p = paper_profile()
    # fast->slow, 1000 bytes: (60 + 50) + (16 + 80) + (124 + 80)
    assert p.ptp_us("fast", "slow", 1000) == pytest.approx(410.0)


def _doc():
    return paper_profile().to_dict()


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d.update(schema="hnowmodel.profile/9"), "schema"),
        (lambda d: d.pop("types"), "types"),
        (lambda d: d.pop("network"), "network"),
        (lambda d: d["types"]["fast"]["regimes"][0].pop("Sc_us"), "Sc_us"),
        (lambda d: d["types"]["slow"]["regimes"][0].update(Rm_us_per_byte=-0.1), "Rm_us_per_byte"),
        (lambda d: d["types"]["slow"]["regimes"][0].update(Rc_us="abc"), "Rc_us"),
        (lambda d: d["network"]["regimes"][0].update(Xc_us=float("nan")), "Xc_us"),
        (lambda d: d.update(links=[{"from": "fast", "to": "medium", "Xc_us": 1, "Xm_us_per_byte": 0}]), "medium"),
        (lambda d: d.update(nodes=[{"rank": 0, "type": "medium"}]), "medium"),
        (lambda d: d.update(colour="blue"), "colour"),
    ],
)
def test_bad_profiles_name_the_field(mutate, needle):
    d = _doc()
    mutate(d)
    with pytest.raises(ProfileError, match=needle):
        Profile.from_dict(d)


def test_save_load_roundtrip(tmp_path):
    p = paper_profile()
    path = p.save(tmp_path / "p.json")
    doc = json.loads(path.read_text())
    assert doc["schema"] == PROFILE_SCHEMA
    q = Profile.load(path)
    assert q.to_dict() == p.to_dict()
    assert not list(tmp_path.glob("*.tmp*"))  # atomic write leaves no temporary behind


positive = st.floats(min_value=0, max_value=1e4, allow_nan=False)
per_byte = st.floats(min_value=0, max_value=MAX_PER_BYTE_US, allow_nan=False)


@given(
    st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=6),
        st.tuples(positive, per_byte, positive, per_byte),
        min_size=1,
        max_size=4,
    ),
    positive,
    per_byte,
)
def test_profile_json_roundtrip(types, xc, xm):
    doc = {
        "schema": PROFILE_SCHEMA_V1,  # regime-free: read as one regime each, written back as /2
        "types": {
            n: dict(zip(("Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte"), v, strict=True))
            for n, v in types.items()
        },
        "network": {"Xc_us": xc, "Xm_us_per_byte": xm},
    }
    p = Profile.from_dict(doc)
    assert p.to_dict()["schema"] == PROFILE_SCHEMA
    assert Profile.from_dict(json.loads(json.dumps(p.to_dict()))).to_dict() == p.to_dict()


def test_links_override_network():
    d = _doc()
    d["links"] = [
        {"from": "fast", "to": "slow", "regimes": [{"upto_bytes": None, "Xc_us": 40, "Xm_us_per_byte": 0.08}]}
    ]
    p = Profile.from_dict(d)
    assert p.ptp_us("fast", "slow", 0) == pytest.approx(60 + 40 + 124)
    assert p.ptp_us("slow", "fast", 0) == pytest.approx(200.0)  # the other direction keeps the network


def test_arrays_and_unknown_type():
    p = paper_profile()
    a = p.arrays(["slow", "fast"])
    assert a["Sc_us"].tolist() == [90.0, 60.0] and a["type_index"].tolist() == [1, 0]
    with pytest.raises(LayoutError, match="medium"):
        p.arrays(["fast", "medium"])


def test_public_api_matches_design():
    assert hasattr(hm.predict, "bcast") and hasattr(hm.trees, "binomial") and hasattr(hm.Profile, "load")
