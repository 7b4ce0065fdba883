"""The reduction cost γ (``extensions.reduce``): read, written, validated, and refused in one line when absent."""

from __future__ import annotations

import json
import math

import pytest

from hnowmodel.errors import HnowError, InputError, ProfileError
from hnowmodel.params import Profile, ReduceCost, ReduceRegime, ReduceTerms, paper_profile
from tests.helpers import one_error_line, run_hnow

# two regimes per type, as a calibration fits them: in cache, then out of cache from 1 MiB
GAMMA = {
    "op": "MPI_SUM",
    "datatype": "MPI_DOUBLE",
    "types": {
        "fast": {
            "regimes": [
                {"upto_bytes": 1 << 20, "Gc_us": 0.05, "Gm_us_per_byte": 1.5e-4},
                {"upto_bytes": None, "Gc_us": 40.0, "Gm_us_per_byte": 4e-4},
            ]
        },
        "slow": {"regimes": [{"upto_bytes": None, "Gc_us": 0.1, "Gm_us_per_byte": 6e-4}]},
    },
}


def _doc(reduce=GAMMA):
    d = paper_profile().to_dict()
    d["extensions"] = {"reduce": json.loads(json.dumps(reduce))}
    return d


def test_gamma_round_trips_and_is_evaluated_per_regime(tmp_path):
    prof = Profile.from_dict(_doc())
    assert prof.has_reduce_cost and prof.to_dict()["schema"] == "hnowmodel.profile/2"  # no version bump
    path = prof.save(tmp_path / "p.json")
    back = Profile.load(path)
    assert back.to_dict() == prof.to_dict() and back.reduce_terms == prof.reduce_terms
    g = back.reduce_us_per_byte_at(65536)
    assert g == pytest.approx({"fast": 0.05 / 65536 + 1.5e-4, "slow": 0.1 / 65536 + 6e-4}, rel=1e-12)
    # the bound is inclusive: 1 MiB is still in cache, one byte more is not
    assert back.reduce_us_per_byte_at(1 << 20)["fast"] == pytest.approx(0.05 / (1 << 20) + 1.5e-4, rel=1e-12)
    assert back.reduce_us_per_byte_at((1 << 20) + 1)["fast"] == pytest.approx(40.0 / ((1 << 20) + 1) + 4e-4)
    assert back.reduce_us_per_byte_at(0) == {"fast": 1.5e-4, "slow": 6e-4}
    # a regime-free profile at one size keeps the whole γ (it is evaluated at the caller's own size)
    assert back.at(4096).reduce_us_per_byte_at(1 << 22) == back.reduce_us_per_byte_at(1 << 22)


def test_gamma_is_added_and_removed_by_with_reduce_terms():
    terms = ReduceTerms({t: ReduceCost.piecewise([ReduceRegime(None, 0.0, 2e-4)]) for t in ("fast", "slow")})
    prof = paper_profile().with_reduce_terms(terms)
    assert prof.reduce_us_per_byte_at(8192) == {"fast": 2e-4, "slow": 2e-4}
    assert Profile.from_dict(prof.to_dict()).reduce_terms == prof.reduce_terms
    assert not prof.with_reduce_terms(None).has_reduce_cost
    with pytest.raises(ProfileError, match="no entry for node type 'slow'"):
        paper_profile().with_reduce_terms(ReduceTerms({"fast": terms.costs["fast"]}))


def test_a_profile_without_gamma_still_reads_and_refuses_gamma_in_one_line(tmp_path):
    old = paper_profile().to_dict()  # written before γ existed: no extensions.reduce
    prof = Profile.from_dict(old)
    assert not prof.has_reduce_cost
    with pytest.raises(InputError) as e:
        prof.reduce_us_per_byte_at(1024)
    msg = str(e.value)
    assert "\n" not in msg and "no reduction cost" in msg and "hnow calibrate" in msg


@pytest.mark.parametrize("nbytes", [-1, 1.5, math.nan, "8", True])
def test_a_bad_size_is_refused(nbytes):
    with pytest.raises(InputError, match="nbytes"):
        Profile.from_dict(_doc()).reduce_us_per_byte_at(nbytes)


def _bad(mutate):
    d = _doc()
    mutate(d["extensions"]["reduce"])
    return d


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda r: r["types"]["slow"]["regimes"][0].update(Gm_us_per_byte=-1e-4), "Gm_us_per_byte: must be >= 0"),
        (lambda r: r["types"]["slow"]["regimes"][0].update(Gm_us_per_byte=math.nan), "must be finite"),
        (lambda r: r["types"]["fast"]["regimes"][1].update(Gc_us=math.inf), "Gc_us: must be finite"),
        (lambda r: r["types"]["fast"]["regimes"][0].update(Gm_us_per_byte="0.1"), "must be a number"),
        (lambda r: r["types"]["fast"]["regimes"][0].update(upto_bytes=None), "only the last regime may be null"),
        (lambda r: r["types"]["fast"]["regimes"][0].pop("Gc_us"), "Gc_us: missing"),
        (lambda r: r["types"].pop("slow"), "no entry for node type 'slow'"),
        (lambda r: r["types"].update(medium=r["types"]["slow"]), "unknown node type 'medium'"),
        (lambda r: r.update(colour="blue"), "unknown key 'colour'"),
        (lambda r: r.update(op=3), "op: must be a non-empty string"),
    ],
)
def test_bad_gamma_in_a_profile_names_the_field_on_load(tmp_path, mutate, needle):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_bad(mutate)))  # NaN/inf as JSON's NaN/Infinity, which Python's json reads
    with pytest.raises(ProfileError, match=needle) as e:
        Profile.load(path)
    assert isinstance(e.value, HnowError) and "\n" not in str(e.value)
    assert str(e.value).startswith(f"profile {str(path)!r}.extensions.reduce")


def test_a_negative_gamma_makes_hnow_exit_2_with_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_bad(lambda r: r["types"]["slow"]["regimes"][0].update(Gm_us_per_byte=-1.0))))
    proc = run_hnow("predict", "--profile", str(path), "--layout", "FS", "--op", "bcast", "--sizes", "1K", timeout=60)
    assert proc.returncode == 2 and one_error_line(proc.stderr), proc.stderr
    assert "extensions.reduce.types.slow.regimes[0].Gm_us_per_byte" in proc.stderr
