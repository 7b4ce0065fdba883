"""`hnow calibrate` over real mpiexec: the emulated testbed's parameters are recovered; plain MPI is sane;
failures leave no profile behind."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from calibrate.testbed_transport import load_testbed, paper_testbed
from hnowmodel.params import NodeType, Profile
from tests.helpers import run_hnow

pytestmark = pytest.mark.mpi

TYPE_KEYS = ("Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte")


# The calibration fits lines to emulated times; on a loaded 2-core machine a rank scheduled late adds delay to some
# samples, which raises a fit's intercept and can tilt its slope either way (a type's Sc came out 8 % high once).
# The bounds of a quiet machine (5 % per type term, 10 % for the network) are widened to 15 % and 20 %: a term lost,
# doubled or given to the wrong side (S for R) is 30-100 % off. And a check load does not move: where the true
# values of two types differ by more than 30 %, the recovered ones are in the same order. Xc: see below.
TYPE_TOL, NET_TOL, XC_TOL, RESIDUAL_PCT = 0.15, 0.20, 0.06, 8


def _check_recovered(profile: Profile, truth: Profile, type_tol=TYPE_TOL, net_tol=NET_TOL):
    for name, t in truth.types.items():
        got = profile.types[name]
        for k in TYPE_KEYS:
            assert getattr(got, k) == pytest.approx(getattr(t, k), rel=type_tol), (name, k)
    for k in TYPE_KEYS:
        for a, b in itertools.combinations(truth.types, 2):
            ta, tb = getattr(truth.types[a], k), getattr(truth.types[b], k)
            if max(ta, tb) > 1.3 * min(ta, tb):
                ga, gb = getattr(profile.types[a], k), getattr(profile.types[b], k)
                assert (ga < gb) == (ta < tb), (k, a, b, ga, gb)
    # Xc is what a 0-byte ping-pong leaves over after S and R: its error is theirs, so it is bounded against the
    # 0-byte one-way time it is part of (a 5-µs miss of the paper's 16 µs is 3 % of 170 µs), not against itself
    one_way0 = min(float(truth.ptp_us(a, b, 0)) for a in truth.types for b in truth.types)
    assert abs(profile.network.Xc_us - truth.network.Xc_us) < XC_TOL * one_way0, (profile.network.Xc_us, one_way0)
    assert profile.network.Xm_us_per_byte == pytest.approx(truth.network.Xm_us_per_byte, rel=net_tol)


@pytest.mark.timing
def test_paper_testbed_recovered(hnow, tmp_path):
    """The paper testbed's parameters come back out of the calibration (within the loaded-machine bounds)."""
    out = tmp_path / "p.json"
    proc = hnow(
        "calibrate", "--np", "4", "--testbed", "paper", "--layout", "FFSS", "-o", str(out), "--quick", timeout=240
    )
    assert proc.returncode == 0, proc.stderr
    assert "±" in proc.stdout and "additivity" in proc.stdout
    prof = Profile.load(out)
    _check_recovered(prof, paper_testbed().profile())
    assert prof.layout == ("fast", "fast", "slow", "slow")
    fits = prof.provenance["fits"]
    assert math.isfinite(fits["fast"]["S"]["intercept_ci95_us"])
    assert all(p["max_abs_residual_pct"] < RESIDUAL_PCT for p in prof.provenance["pairs"])


@pytest.mark.timing
def test_invented_three_type_testbed_with_single_rank_type(hnow, tmp_path):
    """Three types, one of them with a single rank (measured against a rank of another type)."""
    tb = paper_testbed().to_dict()
    tb["types"]["medium"] = NodeType("medium", 40, 0.1, 70, 0.05).to_flat_dict()
    tb["network"] = {"Xc_us": 30, "Xm_us_per_byte": 0.04}
    tb["ranks"] = ["medium", "fast", "slow", "fast"]
    tb["time_scale"] = 30
    f = tmp_path / "tb.json"
    f.write_text(json.dumps(tb))
    out = tmp_path / "p.json"
    proc = hnow("calibrate", "--np", "4", "--testbed", str(f), "-o", str(out), "--json", "--quick", timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "hnowmodel.profile/2"
    _check_recovered(Profile.load(out), load_testbed(str(f)).profile())


def _has_c_kernels() -> bool:
    from calibrate.ckernels import available

    return available()[0]


@pytest.fixture(scope="module")
def plain_calibration(tmp_path_factory) -> tuple[Profile, str, dict[int, float]]:
    """Real MPI, 2 ranks, C kernels: the profile ``hnow calibrate --quick`` writes, its stdout, and the standalone C
    ping-pong's one-way (min, median) µs by size, run right after."""
    if not _has_c_kernels():
        pytest.skip("no mpicc for the C kernels")
    from calibrate.ckernels import run_reference

    out = tmp_path_factory.mktemp("plain") / "plain.json"
    proc = run_hnow("calibrate", "--np", "2", "--layout", "node,node", "-o", str(out), "--quick", timeout=180)
    assert proc.returncode == 0, proc.stderr
    ref = {r["size_bytes"]: (r["min_us"], r["median_us"]) for r in run_reference([8, 1024, 65536, 1 << 20])}
    return Profile.load(out), proc.stdout, ref


def test_plain_mpi_profile_is_fitted_with_the_c_kernels_and_checked(plain_calibration):
    """Real MPI, 2 ranks: the C kernels are used, the eager/rendezvous switch is found from the data, the profile
    reproduces what it was fitted on (self-check recorded), and the outside reference was run at the sizes asked."""
    prof, stdout, _ = plain_calibration
    prov = prof.provenance
    assert prov["kernels"]["kind"] == "C"
    assert 4096 <= prof.rendezvous_from_bytes <= 65536  # MPICH on shared memory switches near 8 KiB
    assert len(prof.types["node"].regimes) >= 2
    assert math.isfinite(prov["self_check"]["worst_miss_pct"]) and prov["self_check"]["rows"]
    assert {r["size"] for r in prov["reference_pingpong"]} == {8, 1024, 65536, 1 << 20}
    assert "plain C ping-pong" in stdout and "self-check" in stdout and "kernels: C" in stdout
    # the reduction cost γ of the one node type, measured by MPI_Reduce_local in the same calibration
    assert prof.has_reduce_cost and prof.reduce_terms.datatype == "MPI_DOUBLE"
    for m in (1024, 65536, 4 << 20):
        gamma = prof.reduce_us_per_byte_at(m)
        assert list(gamma) == ["node"] and math.isfinite(gamma["node"]) and gamma["node"] > 0, (m, gamma)
    check = prov["reduce"]["types"]["node"]["self_check"]
    assert math.isfinite(check["worst_miss_pct"]) and {r["size"] for r in check["rows"]} >= {1024, 4 << 20}
    assert "reduction cost G(m)" in stdout


@pytest.mark.timing
def test_plain_mpi_profile_against_a_plain_c_pingpong(plain_calibration):
    """The profile's one-way time agrees with an outside reference: the standalone C ping-pong program
    (calibrate/kernels/pingpong_ref.c, code shared with nothing). The bound is wide because this VM drifts 30-65 %
    within seconds; the method errors it guards against were 3-6x (a Python-timed least-squares line over 0-1 MiB)."""
    prof, _, ref = plain_calibration
    assert sorted(ref) == [8, 1024, 65536, 1 << 20]
    for m, (ref_min, ref_median) in ref.items():
        # the reference runs after the calibration, under whatever load is then (its median was 3x the profile's
        # once on a loaded machine): the profile is held against half the reference's fastest run and 1.5 times
        # its median, since load only ever adds time
        got = float(prof.ptp_us("node", "node", m))
        assert 0.5 * ref_min < got < 1.5 * ref_median, (m, got, ref_min, ref_median)


def test_python_kernels_say_so(hnow, tmp_path):
    out = tmp_path / "plain.json"
    proc = hnow("calibrate", "--np", "2", "--kernels", "python", "-o", str(out), "--quick", timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert Profile.load(out).provenance["kernels"]["kind"] == "Python"
    assert "kernels: Python" in proc.stdout


def test_bad_testbed_exit_2_and_nothing_written(hnow, tmp_path):
    out = tmp_path / "p.json"
    bad = tmp_path / "tb.json"
    bad.write_text('{"schema": "hnowmodel.testbed/1", "types": {}}')
    proc = hnow("calibrate", "--np", "2", "--testbed", str(bad), "-o", str(out))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "testbed" in proc.stderr
    assert not out.exists()


def test_hung_rank_times_out_names_rank_and_step_keeps_old_profile(tmp_path):
    import os
    import subprocess
    import sys

    out = tmp_path / "p.json"
    out.write_text("previous profile")
    env = dict(os.environ, HNOW_FAULT="1:sends:hang")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hnowmodel.cli",
            "calibrate",
            "--np",
            "2",
            "--testbed",
            "paper",
            "--layout",
            "FS",
            "--quick",
            "--timeout",
            "6",  # the hang is reached ~1.5 s after the start (0-byte ping-pong, then 'sends'), under load ~4 s
            "-o",
            str(out),
            "--force",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    # rank 1 hangs on entering the step; rank 0 waits for it inside the same step: both are named with it
    assert "did not finish within 6 s" in line and "ranks 0,1 in step 'sends 0->1" in line
    assert out.read_text() == "previous profile"


def test_native_compare_models_the_common_start(hnow, tmp_path):
    """Plain MPI, 2 ranks, no profile given: the calibration measures the common-start one-way time beside the
    isolated one, stores the difference per size (extensions.common_start), and the native rows it times in its
    own rounds (common start) are predicted as the pinned tree + that term, named in the row."""
    if not _has_c_kernels():
        pytest.skip("no mpicc for the C kernels")
    out = tmp_path / "cmp"
    # the calibration's grid 0 B and 1 B..1 MiB, one size per octave (--quick's), instead of its default to 4 MiB at
    # three sizes per octave (~3x as long): the term is measured at every size of the grid either way (22 > 10)
    proc = hnow(
        "compare", "--np", "2", "--ops", "bcast", "--trees", "native", "--sizes", "8,64K", "--calibrate-sizes",
        "0..1M", "-o", str(out), "--json", timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    prof = Profile.load(next(out.glob("*.json")))
    cs = prof.extensions["common_start"]
    assert cs["sizes_bytes"] == sorted(cs["sizes_bytes"]) and len(cs["sizes_bytes"]) == len(cs["extra_us"]) > 10
    assert [r["size"] for r in rows] == [8, 65536]
    for r in rows:
        assert r["method"] == "c-common-start" and r["model_tree"] == "binomial + common start", r
        plain = float(prof.ptp_us("node", "node", r["size"]))
        # the term is the measured difference, interpolated linearly in size and held beyond the ends
        extra = float(np.interp(r["size"], cs["sizes_bytes"], cs["extra_us"]))
        assert r["predicted_us"] == pytest.approx(plain + extra)
