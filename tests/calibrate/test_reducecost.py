"""calibrate.reducecost without MPI: the sizes, the fit of measured combines into the profile's ``extensions.reduce``
(regimes, CIs, self-check), and the plain C loop reference. The kernel itself runs under MPI in
tests/calibrate/test_ckernels.py and inside a real calibration in tests/calibrate/test_calibration.py."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate import ckernels
from calibrate.reducecost import attach, reduce_sizes, run_sum_reference
from hnowmodel.params import Profile, paper_profile


def test_sizes_are_whole_doubles_from_1_kib_to_4_mib():
    for quick in (True, False):
        sizes = reduce_sizes(quick)
        assert sizes[0] == 1024 and sizes[-1] == 4 << 20 and sizes == sorted(set(sizes))
        assert all(m % 8 == 0 for m in sizes) and {16384, 65536, 262144} <= set(sizes)
    assert len(reduce_sizes(False)) > 2 * len(reduce_sizes(True))


def _raw(noise: float, seed: int = 1) -> dict:
    """Combines measured as a cache would make them: 0.1 µs + 1e-4 µs/B up to 1 MiB (in cache), 30 µs + 4e-4 µs/B
    beyond, for "fast"; "slow" twice as slow, one line; 3 rounds with relative noise."""
    rng = np.random.default_rng(seed)
    sizes = reduce_sizes(False)

    def fast(m):
        return 0.1 + 1e-4 * m if m <= 1 << 20 else 30.0 + 4e-4 * m

    truth = {"fast": fast, "slow": lambda m: 0.2 + 2e-4 * m}
    rounds = [{t: {m: f(m) * (1 + noise * rng.standard_normal()) for m in sizes} for t, f in truth.items()}
              for _ in range(3)]  # fmt: skip
    return {"sizes": sizes, "ranks": {"fast": 0, "slow": 1}, "rounds": rounds, "reps": 15}


def test_the_fit_finds_the_cache_regimes_and_the_profile_reads_them():
    doc = paper_profile().to_dict()
    doc["provenance"] = {"warnings": []}
    attach(doc, _raw(noise=0.005))
    prof = Profile.from_dict(doc)
    assert prof.has_reduce_cost and prof.reduce_terms.op == "MPI_SUM" and prof.reduce_terms.datatype == "MPI_DOUBLE"
    fast = prof.reduce_terms.costs["fast"]
    assert len(fast.regimes) == 2 and (1 << 20) <= fast.breakpoints[0] < (1 << 21)
    assert len(prof.reduce_terms.costs["slow"].regimes) == 1
    g = prof.reduce_us_per_byte_at(65536)
    assert g["fast"] == pytest.approx(1e-4 + 0.1 / 65536, rel=0.03)
    assert g["slow"] == pytest.approx(2e-4 + 0.2 / 65536, rel=0.03)
    assert prof.reduce_us_per_byte_at(4 << 20)["fast"] == pytest.approx(4e-4 + 30 / (4 << 20), rel=0.05)
    prov = prof.provenance["reduce"]["types"]["fast"]
    lo, hi = prov["fit"]["regimes"][0]["slope_ci95_us_per_byte"]
    assert lo <= fast.regimes[0].Gm_us_per_byte <= hi  # standard errors and CIs from the fit
    assert prov["self_check"]["worst_miss_pct"] < 5 and len(prov["self_check"]["rows"]) == len(reduce_sizes(False))
    assert not [w for w in doc["provenance"]["warnings"] if "self-check" in w]


def test_a_poor_fit_warns_in_the_self_check():
    doc = paper_profile().to_dict()
    doc["provenance"] = {"warnings": []}
    raw = _raw(noise=0.0)
    raw["rounds"] = [{**rd, "slow": {**rd["slow"], 65536: rd["slow"][65536] * 3}} for rd in raw["rounds"]]
    attach(doc, raw)
    assert any("self-check: the reduction cost of slow" in w for w in doc["provenance"]["warnings"])


@pytest.mark.skipif(ckernels.compiler() is None, reason="no mpicc to build the plain C loop")
def test_the_plain_c_loop_reports_one_row_per_size():
    rows = run_sum_reference([16384, 262144], batches=3)
    assert [r["size_bytes"] for r in rows] == [16384, 262144]
    for r in rows:
        assert r["batches"] == 3 and 0 < r["min_us"] <= r["median_us"] <= r["max_us"]
        assert r["us_per_byte"] == pytest.approx(r["median_us"] / r["size_bytes"])
    with pytest.raises(ValueError, match="multiples of 8"):
        run_sum_reference([1001])
