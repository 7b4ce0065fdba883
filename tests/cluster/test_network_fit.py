"""The network-mode fit (``calibrate/netprofile.py``, ``calibrate/hinge.py``) on one-way times recorded on the virtual
cluster, and the protocol test's classification on a simulated pair. Pure Python, no MPI, no timing assertions: the
numbers below were measured once (4 hosts n1, n2 at 100 Mbit/s and n3, n4 at 40 Mbit/s, ``tbf burst 8192b``; MPICH
5.0.2; ``hnow calibrate --np 4 --cluster s4.json --layout auto --quick``, medians over the rounds) and the tests
check what the fit makes of them.

``OFI``: ``MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp``, where an ``MPI_Send`` above 128 B returns only once the
receiver's library has the message (so ``S`` is timed below 129 B only); ``UCX``: the default ``UCX_TLS=tcp``.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest

import hnowmodel as hm
from calibrate import hinge, netprofile, network, sendmodes
from calibrate.protocol import FANOUT_SIZES, QUEUED_MAX_BYTES
from calibrate.queued import fit_queued_bytes
from calibrate.selfcheck import net_self_check
from calibrate.sendmodes import DELIVERY, EAGER, RENDEZVOUS
from hnowmodel.fitreport import fit_report
from hnowmodel.params import Profile

#: A 6-host cluster calibration (the golden corpus's)
GOLDEN = Path(__file__).resolve().parent.parent / "data" / "golden"

# fmt: off
OFI = {
    'layout': ['fast', 'fast', 'slow', 'slow'],
    'hosts': ['n1', 'n2', 'n3', 'n4'],
    'pairs': [(0, 1), (2, 3), (0, 2), (2, 0)],
    'waits_from': 129,
    'T': {
        '0-1': {
            0: 26.45, 32: 17.81, 64: 27.62, 256: 46.46, 362: 52.41, 512: 66.87, 724: 60.24, 1024: 58.31,
            1448: 62.55, 2048: 63.24, 2896: 71.28, 4096: 67.11, 5793: 65.32, 8192: 104.5, 11585: 398.6,
            16384: 816.6, 23170: 1402.0, 32768: 2231.0, 46341: 3417.0, 65536: 5037.0, 92682: 7308.0,
            131072: 10540.0, 185364: 15110.0, 262144: 21500.0,
        },
        '0-2': {
            0: 40.34, 32: 5.964, 64: 9.521, 256: 26.53, 362: 29.33, 512: 31.39, 724: 30.02, 1024: 26.79,
            1448: 33.6, 2048: 30.59, 2896: 33.7, 4096: 36.96, 5793: 32.09, 8192: 134.5, 11585: 873.9,
            16384: 1907.0, 23170: 3344.0, 32768: 5351.0, 46341: 8225.0, 65536: 12270.0, 92682: 17950.0,
        },
        '2-0': {
            0: 21.84, 32: 20.32, 64: 25.72, 256: 35.87, 362: 40.75, 512: 40.0, 724: 37.42, 1024: 48.04,
            1448: 51.12, 2048: 53.43, 2896: 62.87, 4096: 63.98, 5793: 72.9, 8192: 159.4, 11585: 876.8,
            16384: 1898.0, 23170: 3335.0, 32768: 5363.0, 46341: 8205.0, 65536: 12240.0, 92682: 17920.0,
        },
        '2-3': {
            0: 24.14, 32: 25.96, 64: 25.35, 256: 35.9, 362: 34.04, 512: 37.92, 724: 38.28, 1024: 55.44,
            1448: 42.29, 2048: 48.18, 2896: 50.68, 4096: 61.6, 5793: 63.14, 8192: 139.0, 11585: 874.5,
            16384: 1901.0, 23170: 3374.0, 32768: 5368.0, 46341: 8257.0, 65536: 12290.0, 92682: 17990.0,
        },
    },
    'S': {
        'fast': {
            0: 10.09, 32: 11.16, 64: 10.15,
        },
        'slow': {
            0: 11.04, 32: 12.76, 64: 13.01,
        },
    },
    'R': {
        'fast': {
            0: 12.13, 32: 15.98, 64: 9.904, 256: 34.59, 362: 29.37, 512: 44.51, 724: 34.94, 1024: 37.82,
            1448: 34.4, 2048: 36.01, 2896: 47.58, 4096: 45.3, 5793: 45.66, 8192: 45.93, 11585: 55.63, 16384: 65.07,
            23170: 61.72, 32768: 91.26, 46341: 127.1, 65536: 110.3, 92682: 104.7, 131072: 146.5, 185364: 150.7,
            262144: 174.7,
        },
        'slow': {
            0: 16.07, 32: 16.03, 64: 16.9, 256: 20.76, 362: 28.25, 512: 38.37, 724: 35.76, 1024: 26.61,
            1448: 22.71, 2048: 21.42, 2896: 36.02, 4096: 43.6, 5793: 47.12, 8192: 68.35, 11585: 49.76,
            16384: 72.15, 23170: 83.58, 32768: 94.58, 46341: 115.4, 65536: 127.9, 92682: 139.3,
        },
    },
    'C': {
        'fast': {
            0: 0.03, 32: 0.035, 64: 0.03, 256: 0.03, 362: 0.035, 512: 0.035, 724: 0.0405, 1024: 0.045,
            1448: 0.0855, 2048: 0.09, 2896: 0.2105, 4096: 0.291, 5793: 0.4155, 8192: 0.526, 11585: 0.806,
            16384: 1.092, 23170: 1.603, 32768: 2.194, 46341: 3.416, 65536: 4.493, 92682: 7.71, 131072: 12.36,
            185364: 12.81, 262144: 20.57,
        },
        'slow': {
            0: 0.035, 32: 0.03, 64: 0.0405, 256: 0.04, 362: 0.0505, 512: 0.045, 724: 0.045, 1024: 0.07,
            1448: 0.055, 2048: 0.07, 2896: 0.211, 4096: 0.25, 5793: 0.376, 8192: 0.4805, 11585: 0.7665,
            16384: 0.9665, 23170: 1.563, 32768: 2.209, 46341: 3.592, 65536: 4.969, 92682: 7.62,
        },
    },
}
UCX = {
    'layout': ['fast', 'fast', 'slow', 'slow'],
    'hosts': ['n1', 'n2', 'n3', 'n4'],
    'pairs': [(0, 1), (2, 3), (0, 2), (2, 0)],
    'waits_from': None,
    'T': {
        '0-1': {
            0: 14.9, 256: 15.82, 362: 17.4, 512: 23.06, 724: 25.4, 1024: 26.87, 1448: 30.11, 2048: 34.46,
            2896: 23.74, 4096: 23.48, 5793: 25.77, 8192: 92.91, 11585: 380.7, 16384: 782.2, 23170: 1365.0,
            32768: 2178.0, 46341: 3353.0, 65536: 4955.0, 92682: 7275.0, 131072: 10460.0, 185364: 15020.0,
            262144: 21470.0,
        },
        '0-2': {
            0: 15.68, 256: 17.39, 362: 21.51, 512: 23.33, 724: 25.59, 1024: 23.63, 1448: 43.51, 2048: 26.32,
            2896: 31.22, 4096: 33.57, 5793: 36.47, 8192: 125.7, 11585: 854.3, 16384: 1869.0, 23170: 3315.0,
            32768: 5332.0, 46341: 8244.0, 65536: 12250.0, 92682: 17930.0,
        },
        '2-0': {
            0: 14.49, 256: 16.05, 362: 19.7, 512: 16.75, 724: 28.48, 1024: 17.55, 1448: 28.0, 2048: 21.48,
            2896: 23.03, 4096: 25.86, 5793: 41.51, 8192: 114.8, 11585: 843.4, 16384: 1863.0, 23170: 3308.0,
            32768: 5308.0, 46341: 8172.0, 65536: 12200.0, 92682: 17890.0,
        },
        '2-3': {
            0: 22.07, 256: 13.72, 362: 12.99, 512: 20.59, 724: 223.8, 1024: 18.77, 1448: 15.1, 2048: 22.45,
            2896: 24.35, 4096: 27.83, 5793: 34.53, 8192: 114.7, 11585: 868.1, 16384: 1873.0, 23170: 3334.0,
            32768: 5345.0, 46341: 8205.0, 65536: 12210.0, 92682: 17910.0,
        },
    },
    'S': {
        'fast': {
            0: 8.747, 256: 9.378, 362: 12.54, 512: 9.553, 724: 9.433, 1024: 9.598, 1448: 15.88, 2048: 12.05,
            2896: 10.94, 4096: 9.407, 5793: 9.247, 8192: 17.12, 11585: 18.66, 16384: 22.89, 23170: 29.24,
            32768: 39.1, 46341: 51.5, 65536: 48.06, 92682: 69.35, 131072: 61.65, 185364: 97.03, 262144: 98.66,
        },
        'slow': {
            0: 8.791, 256: 9.433, 362: 9.878, 512: 9.723, 724: 9.678, 1024: 9.828, 1448: 16.0, 2048: 19.29,
            2896: 10.36, 4096: 11.05, 5793: 11.38, 8192: 19.91, 11585: 23.44, 16384: 33.18, 23170: 37.12,
            32768: 37.6, 46341: 61.6, 65536: 64.51, 92682: 64.33,
        },
    },
    'R': {
        'fast': {
            0: 7.564, 256: 6.518, 362: 10.37, 512: 10.95, 724: 12.03, 1024: 14.01, 1448: 16.32, 2048: 11.78,
            2896: 18.38, 4096: 18.06, 5793: 22.9, 8192: 22.45, 11585: 25.73, 16384: 29.26, 23170: 35.81,
            32768: 50.86, 46341: 57.82, 65536: 79.86, 92682: 91.09, 131072: 115.0, 185364: 130.9, 262144: 191.3,
        },
        'slow': {
            0: 21.49, 256: 20.0, 362: 12.05, 512: 12.02, 724: 8.476, 1024: 11.24, 1448: 16.27, 2048: 38.93,
            2896: 23.77, 4096: 24.46, 5793: 31.78, 8192: 32.98, 11585: 35.8, 16384: 41.79, 23170: 68.4,
            32768: 63.72, 46341: 106.8, 65536: 126.1, 92682: 139.5,
        },
    },
    'C': {
        'fast': {
            0: 0.03, 256: 0.03, 362: 0.0305, 512: 0.035, 724: 0.04, 1024: 0.035, 1448: 0.045, 2048: 0.065,
            2896: 0.316, 4096: 0.2905, 5793: 0.371, 8192: 0.521, 11585: 0.857, 16384: 0.9465, 23170: 2.09,
            32768: 2.4, 46341: 3.627, 65536: 4.844, 92682: 7.589, 131072: 11.59, 185364: 16.0, 262144: 25.68,
        },
        'slow': {
            0: 0.03, 256: 0.035, 362: 0.04, 512: 0.04, 724: 0.04, 1024: 0.045, 1448: 0.045, 2048: 0.06,
            2896: 0.3105, 4096: 0.25, 5793: 0.496, 8192: 0.546, 11585: 0.942, 16384: 1.077, 23170: 1.548,
            32768: 2.295, 46341: 4.063, 65536: 5.877, 92682: 8.861,
        },
    },
}
# fmt: on

#: tbf burst of 8192 frame bytes in TCP payload bytes (1514-byte frames carry 1448 bytes)
BURST_PAYLOAD = 8192 * 1448 / 1514
MBIT = {"n1": 100.0, "n2": 100.0, "n3": 40.0, "n4": 40.0}


def line_rate(rec: dict, a: int, b: int) -> float:
    """The outside reference: one-way µs per payload byte at the slower end's shaped rate, Ethernet framing."""
    return 8.0 / min(MBIT[rec["hosts"][a]], MBIT[rec["hosts"][b]]) * 1514 / 1448


def raw_of(rec: dict) -> dict:
    """A one-round raw document as :func:`calibrate.network.run_network` returns it."""
    waits = rec["waits_from"]
    sizes = sorted({m for ser in rec["T"].values() for m in ser})
    by_size = {m: (DELIVERY if waits is not None and m >= waits else EAGER) for m in sizes if m >= 256}
    return {
        "protocol": {
            "by_size": by_size,
            "waits_from_bytes": waits,
            "rendezvous_from_bytes": None,
            "mixed": False,
            "pair": [0, 1],
            "largest_tested_bytes": max(by_size),
        },
        "extra_sizes": [] if waits is None else [32, 64],
        "rounds": [{key: {n: dict(s) for n, s in rec[key].items()} for key in ("T", "S", "R", "C")}],
        "sizes": sizes,
        "grids": {n: sorted(s) for n, s in rec["T"].items()},
        "slopes_us_per_byte": {},
        "gap_min_us": 1000.0,
        "budget_us": 25000.0,
        "reps": 3,
        "native_lead_us": 2000.0,
    }


def fitted(rec: dict) -> tuple[dict, dict, dict]:
    raw = raw_of(rec)
    roles = {t: (0, 1) for t in dict.fromkeys(rec["layout"])}
    doc = netprofile.fit_network_profile(raw, rec["layout"], rec["hosts"], rec["pairs"], roles)
    check = net_self_check(doc, raw, rec["pairs"], rec["layout"])
    return raw, doc, check


@pytest.mark.parametrize("rec", [OFI, UCX], ids=["ofi", "ucx"])
def test_hinge_fit_finds_line_rate_and_burst(rec):
    breaks = [] if rec["waits_from"] is None else [rec["waits_from"]]
    for a, b in rec["pairs"]:
        ser = rec["T"][f"{a}-{b}"]
        h = hinge.hinge_fit(list(ser), list(ser.values()), breaks)
        assert h["k_us_per_byte"] == pytest.approx(line_rate(rec, a, b), rel=0.03)
        assert h["burst_bytes"] == pytest.approx(BURST_PAYLOAD, rel=0.1)
        for m, t in ser.items():
            if m >= h["burst_bytes"]:
                assert hinge.hinge_predict(h, m) == pytest.approx(t, rel=0.10), (a, b, m)


@pytest.mark.parametrize("rec", [OFI, UCX], ids=["ofi", "ucx"])
def test_profile_predicts_the_one_way_times_back(rec):
    _, doc, check = fitted(rec)
    assert check["worst_miss_from_burst_pct"] <= 10.0
    assert all(r["miss_pct"] < 300.0 for r in check["rows"])  # never 4x
    above = [r for r in check["rows"] if r["from_burst"]]
    assert len(above) >= 4 * len(rec["pairs"])
    for cost in doc["provenance"]["link_costs"].values():
        a, b = cost["ranks"]
        assert cost["Xm_us_per_byte"] == pytest.approx(line_rate(rec, a, b), rel=0.03)
        assert cost["one_way_us_per_byte"] == pytest.approx(line_rate(rec, a, b), rel=0.03)
    for reg in (r for t in doc["types"].values() for r in t["regimes"]):
        assert min(reg["Sc_us"], reg["Rc_us"], reg["Sm_us_per_byte"], reg["Rm_us_per_byte"]) >= 0
    for link in doc["links"]:
        assert all(r["Xc_us"] >= 0 and r["Xm_us_per_byte"] >= 0 for r in link["regimes"])


def test_ofi_profile_splits_where_sends_start_to_wait():
    _, doc, check = fitted(OFI)
    assert "protocol" not in doc  # delivery is not rendezvous: a message moves before its receive is posted
    assert doc["extensions"]["network"]["send_waits_from_bytes"] == 129
    assert doc["provenance"]["regime_breaks_bytes"] == [128]
    for name, t in doc["types"].items():
        below, above = t["regimes"]
        assert below["upto_bytes"] == 128 and above["upto_bytes"] is None
        # S cannot be timed where the send waits for the receiver: held at its value below
        assert above["Sm_us_per_byte"] == 0.0
        assert below["Sm_us_per_byte"] == 0.0  # three sizes up to 64 B: no per-byte cost to see
        assert above["Sc_us"] <= max(OFI["S"][name].values())  # a send's own cost, not the delivery it waits for
    # the small regime has its own constant: a 0-64 B one-way time is well below a 256 B one
    for a, b in OFI["pairs"]:
        small = [r for r in check["rows"] if r["pair"] == f"{a}->{b}" and r["size"] <= 64]
        assert len(small) == 3


def test_ucx_profile_has_one_regime():
    _, doc, _ = fitted(UCX)
    assert doc["extensions"]["network"]["send_waits_from_bytes"] is None
    assert all(len(t["regimes"]) == 1 for t in doc["types"].values())
    assert all(len(link["regimes"]) == 1 for link in doc["links"])


def test_s_timed_at_delivery_sizes_would_wreck_the_small_sizes():
    """What went wrong before: S timed at every size under ofi lasts the whole transfer (S ≈ T), its line's slope
    ends up in every small message. With the fit told that sends wait from 129 B those times are not used."""
    rec = {**OFI, "S": {t: dict(s) for t, s in OFI["S"].items()}}
    ser = OFI["T"]["0-1"]
    for t in rec["S"]:
        rec["S"][t].update({m: v for m, v in ser.items() if m >= 256})  # S ≈ T, as MPI_Send measured it
    _, _, check = fitted(rec)
    assert check["worst_miss_from_burst_pct"] <= 10.0
    assert all(r["miss_pct"] < 300.0 for r in check["rows"])


def test_capped_overheads_keep_the_one_way_constant():
    """S and R timed alone can exceed a link's one-way constant (they overlap the wire inside a one-way time):
    R, then S, are capped so that S + Xc + R is the constant instead of clamping Xc at 0 above it."""
    rec = {**UCX, "R": {t: {m: v + 40.0 for m, v in s.items()} for t, s in UCX["R"].items()}}
    _, doc, check = fitted(rec)
    assert any("capped" in w for w in doc["provenance"]["warnings"])
    small = [abs(r["miss_pct"]) for r in check["rows"] if r["size"] <= 2048]
    assert np.median(small) < 25.0


def test_hinge_fit_with_a_rendezvous_regime():
    """A synthetic link: burst 7000 B, 0.1 µs/B, 30 µs; from 65536 B rendezvous adds 80 µs and the rate is the
    same. Every regime is reproduced, the burst found."""
    sizes = [0, 256, 512, 1024, 2048, 4096, 8192, 11585, 16384, 32768, 49152, 65536, 131072, 262144, 524288]

    def t(m):
        return 30.0 + 0.1 * max(0, m - 7000) + (80.0 if m >= 65536 else 0.0)

    h = hinge.hinge_fit(sizes, [t(m) for m in sizes], [65536])
    assert h["burst_bytes"] == pytest.approx(7000, rel=0.01)
    assert h["k_us_per_byte"] == pytest.approx(0.1, rel=1e-6)
    for m in sizes:
        assert hinge.hinge_predict(h, m) == pytest.approx(t(m), rel=0.01)


def test_raw_round_trip_through_the_profile():
    raw, doc, _ = fitted(OFI)
    again = netprofile.fit_network_profile(
        netprofile.raw_from_profile(doc), OFI["layout"], OFI["hosts"], OFI["pairs"], {"fast": (0, 1), "slow": (2, 3)}
    )
    assert again["types"] == doc["types"]
    assert again["links"] == doc["links"]


def test_send_after_idling_is_fitted_over_the_burst_and_kept_in_the_raw_rounds():
    # F = S + 12 µs + 0.005 µs/B · min(m, burst): the fit finds both terms, the profile carries them, a refit from the
    # profile's raw rounds gives them again, and the calibration report prints them
    raw, doc, _ = fitted(OFI)
    burst = doc["extensions"]["network"]["burst_bytes"]
    assert burst > 0 and "burst_send_us" not in doc["extensions"]["network"]  # no F measured: nothing claimed
    rnd = raw["rounds"][0]
    rnd["F"] = {
        t: {m: s + 12.0 + 0.005 * min(m, burst) for m, s in ser.items() if m > 0} for t, ser in rnd["S"].items()
    }
    roles = {"fast": (0, 1), "slow": (2, 3)}
    doc = netprofile.fit_network_profile(raw, OFI["layout"], OFI["hosts"], OFI["pairs"], roles)
    net = doc["extensions"]["network"]
    assert net["burst_send_us"] == pytest.approx(12.0, abs=1e-6)
    assert net["burst_send_us_per_byte"] == pytest.approx(0.005, rel=1e-6)
    assert {p["type"] for p in doc["provenance"]["burst_send"]["points"]} == {"fast", "slow"}
    again = netprofile.fit_network_profile(
        netprofile.raw_from_profile(doc), OFI["layout"], OFI["hosts"], OFI["pairs"], roles
    )
    assert again["extensions"]["network"]["burst_send_us_per_byte"] == pytest.approx(0.005, rel=1e-6)
    lines = fit_report(Profile.from_dict(doc))
    assert any("first send after idling keeps its sender busy 12" in line and "0.005" in line for line in lines)


# ---- the protocol test on a simulated pair ------------------------------------------------------------------------
class _Comm:
    def bcast(self, x, root=0):
        return x


class _Rt:
    @contextlib.contextmanager
    def step(self, name):
        yield

    def progress(self, text):
        pass


class _Pair:
    """Send durations as a library would give them: ``silent_from`` — a send waits for a receiver that does not
    call MPI; ``posted_from`` — it waits for the posted receive (rendezvous); ``flip`` — sizes whose first silent
    test is wrong (noise)."""

    def __init__(self, silent_from=None, posted_from=None, flip=()):
        self.comm = _Comm()
        self.silent_from, self.posted_from, self.flip = silent_from, posted_from, set(flip)
        self.calls = 0

    def call(self, a, b, name, m, reps, *args, delay_us=0.0):
        self.calls += 1
        base = 20.0 + 0.01 * m
        if callable(name):  # the receiver calls MPI while it delays its receive
            delay = args[0]
            waits = self.posted_from is not None and m >= self.posted_from
        else:
            delay = delay_us
            waits = self.silent_from is not None and m >= self.silent_from
            if delay > 0 and m in self.flip:
                self.flip.discard(m)
                waits = not waits
        return np.full(reps, base + (delay if waits else 0.0))


GRID = network.net_grid(True)


@pytest.mark.parametrize(
    ("silent", "posted", "flip", "waits", "rdv"),
    [
        (129, None, (), 129, None),  # MPICH ofi over libfabric tcp: delivery above the inject size
        (129, None, (4096,), 129, None),  # one noisy test, tested again
        (65536, 65536, (), 65536, 65536),  # a classic rendezvous
        (None, None, (), None, None),  # UCX over TCP: never waits here
        (20000, 200000, (), 20000, 200000),  # delivery, then rendezvous
    ],
)
def test_protocol_classification(silent, posted, flip, waits, rdv):
    pk = _Pair(silent, posted, flip)
    out = sendmodes.network_protocol(pk, (0, 1), GRID, 0.08, 1000.0, _Rt())
    for got, want in ((out["waits_from_bytes"], waits), (out["rendezvous_from_bytes"], rdv)):
        if want is None:
            assert got is None
        else:
            assert want <= got <= want * 1.01 + 1
    assert not out["mixed"]
    for m, kind in out["by_size"].items():
        want = RENDEZVOUS if rdv and m >= rdv else DELIVERY if waits and m >= waits else EAGER
        assert kind == want, m


def test_split_and_the_sizes_below_the_wait():
    assert sendmodes._split({256: True, 512: True}) == (256, [])
    assert sendmodes._split({256: False, 512: False}) == (None, [])
    assert sendmodes._split({256: False, 512: True, 1024: False, 2048: True, 4096: True}) == (512, [1024])
    assert network._below_wait_sizes(129, [0, 256, 512]) == [32, 64]
    assert network._below_wait_sizes(None, [0, 256]) == []
    assert network._below_wait_sizes(8192, [0, 256, 512, 1024]) == []


def _golden_without_queued() -> tuple[dict, list[str]]:
    """The golden cluster calibration's profile document without its queued-bytes term, and its ranks' types."""
    doc = json.loads((GOLDEN / "cluster_profile.json").read_text())
    del doc["extensions"]["network"]["queued_bytes"]
    return doc, [nd["type"] for nd in sorted(doc["nodes"], key=lambda nd: nd["rank"])]


def _fan_out(doc: dict, layout: list[str], queued: float, sizes: tuple[int, ...] = (16384, 32768)) -> np.ndarray:
    """The model's fan-out from rank 0 (µs) at ``sizes`` with ``queued`` bytes (flow-rr over the sequential tree)."""
    with_q = {**doc, "extensions": {"network": {**doc["extensions"]["network"], "queued_bytes": queued}}}
    return hm.ops.predict("bcast", Profile.from_dict(with_q), layout, hm.trees.sequential(len(layout)), list(sizes))


def test_queued_bytes_are_fitted_to_the_fan_out():
    # completions of a 6-host fan-out made by the model itself with 3000 queued bytes (a cluster calibration's profile,
    # the term taken out): the fit finds them again; what it cannot see, the measured collectives, is
    # experiments/cluster_accuracy.py's check
    doc, layout = _golden_without_queued()
    made = _fan_out(doc, layout, 3000.0)
    raw = {"rounds": [{"Q": {"0": {16384: float(made[0]), 32768: float(made[1])}}}]}
    got = fit_queued_bytes(raw, doc)
    assert got["bytes"] == pytest.approx(3000.0, abs=2.0)
    assert [p["bytes"] for p in got["points"]] == [16384, 32768]
    assert all(p["predicted_without_us"] < p["measured_us"] for p in got["points"])  # what the fan-out shows
    doc["extensions"]["network"]["queued_bytes"], doc["provenance"]["queued_bytes"] = got["bytes"], got
    assert any("waits one round of 3000 B queued per connection" in line for line in fit_report(Profile.from_dict(doc)))
    # a fan-out whose last message waits behind nothing (4 ranks, this record) does not determine the term
    raw2, doc2, _ = fitted(OFI)
    assert doc2["provenance"]["queued_bytes"]["bytes"] is None  # no fan-out measured: nothing claimed
    layout2 = [nd["type"] for nd in doc2["nodes"]]
    made2 = hm.ops.predict("bcast", Profile.from_dict(doc2), layout2, hm.trees.sequential(4), [16384, 32768])
    raw2["rounds"][0]["Q"] = {"0": {16384: float(made2[0]), 32768: float(made2[1])}}
    roles = {"fast": (0, 1), "slow": (2, 3)}
    doc2 = netprofile.fit_network_profile(raw2, OFI["layout"], OFI["hosts"], OFI["pairs"], roles)
    assert "queued_bytes" not in doc2["extensions"]["network"]
    assert doc2["provenance"]["queued_bytes"]["undetermined_bytes"][0] == 0.0
    assert any("queued bytes per connection not determined" in line for line in fit_report(Profile.from_dict(doc2)))
    again = netprofile.raw_from_profile(doc2)  # the fan-out is kept in the raw rounds for a refit
    assert again["rounds"][0]["Q"] == {"0": {16384: float(made2[0]), 32768: float(made2[1])}}


def test_a_fan_out_whose_messages_queue_whole_gives_the_least_term_that_fits():
    # the kernel's TCP (GSO, a 1 MiB tcp_limit_output_bytes) hands the link whole messages: a fan-out made with a
    # term far above its sizes fits as well from its largest size up, and the least of those is taken (absent, the
    # term would be 0: the model would interleave the messages packet by packet)
    doc, layout = _golden_without_queued()
    made = _fan_out(doc, layout, 1048576.0)
    raw = {"rounds": [{"Q": {"0": {16384: float(made[0]), 32768: float(made[1])}}}]}
    got = fit_queued_bytes(raw, doc)
    lo, hi = got["undetermined_bytes"]
    assert got["at_least"] and got["bytes"] == lo and 0 < lo <= 32768 and hi == QUEUED_MAX_BYTES
    back = _fan_out(doc, layout, got["bytes"])
    assert back == pytest.approx(made, rel=1e-6)  # the least term predicts the fan-out as the whole one did
    doc["extensions"]["network"]["queued_bytes"], doc["provenance"]["queued_bytes"] = got["bytes"], got
    assert any("(its messages queued whole), the least taken" in line for line in fit_report(Profile.from_dict(doc)))


def test_a_fan_out_up_to_128_kib_finds_a_term_above_its_32_kib_messages():
    # Linux's default TCP queues more than a 32 KiB message per connection (GSO, a 1 MiB tcp_limit_output_bytes):
    # the calibration's 64 and 128 KiB fan-outs (calibrate.protocol.FANOUT_SIZES) determine a term of 100 000 B,
    # which 16 and 32 KiB alone only bound from below
    doc, layout = _golden_without_queued()
    sizes = (16384, 32768, 65536, 131072)
    assert tuple(FANOUT_SIZES) == sizes
    made = _fan_out(doc, layout, 100000.0, sizes)
    got = fit_queued_bytes({"rounds": [{"Q": {"0": dict(zip(sizes, map(float, made), strict=True))}}]}, doc)
    assert got["bytes"] == pytest.approx(100000.0, abs=300.0) and not got.get("at_least"), got
    small = fit_queued_bytes({"rounds": [{"Q": {"0": dict(zip(sizes[:2], map(float, made[:2]), strict=True))}}]}, doc)
    assert small["at_least"] and small["bytes"] <= 32768


def test_queued_bytes_are_fitted_with_the_hosts_in_place():
    # two ranks of one host (the fast f1 runs ranks 0 and 4, with its shared-memory and NIC terms): a fan-out made
    # by the model with the hosts and 3000 queued bytes is fitted back with them (the fit once took a plain layout,
    # one rank per host, and the term absorbed what the shared host costs: 16-26 kB on the demo's clusters)
    doc = json.loads((GOLDEN / "cluster_profile.json").read_text())
    del doc["extensions"]["network"]["queued_bytes"]
    doc["nodes"][4]["host"] = "f1"
    shm = {"upto_bytes": None, "Sc_us": 1.0, "Sm_us_per_byte": 1e-4, "Rc_us": 1.0, "Rm_us_per_byte": 1e-4}
    doc["schema"] = "hnowmodel.profile/3"
    doc["hosts"] = {
        "shm": {"fast": {"regimes": [{**shm, "Xc_us": 0.5, "Xm_us_per_byte": 1e-4}]}},
        "nic": {t: {"egress_bytes_per_us": 18.0, "ingress_bytes_per_us": 18.0} for t in ("fast", "medium", "slow")},
    }
    prof = Profile.from_dict(doc)
    assert prof.host_layout.n_hosts == 5
    with_q = {**doc, "extensions": {"network": {**doc["extensions"]["network"], "queued_bytes": 3000.0}}}
    made = hm.ops.predict(
        "bcast", Profile.from_dict(with_q), prof.host_layout, hm.trees.sequential(6), [16384, 32768], variant="flow-rr"
    )
    raw = {"rounds": [{"Q": {"0": {16384: float(made[0]), 32768: float(made[1])}}}]}
    assert fit_queued_bytes(raw, doc)["bytes"] == pytest.approx(3000.0, abs=2.0)


def test_where_the_full_fan_out_leaves_the_term_open_the_three_host_fan_out_fits_it():
    # the MIXED cluster of experiments/hosts_accuracy.py in a model of its own (f1: 2 ranks, s1: 1, m1: 3): the full
    # fan-out ends when m1's ingress has taken its three messages, whatever the term; rank 0 to m1 first, then to
    # the slow s1 shows it (completions made by the model with 4344 queued bytes: TCP's on the virtual cluster)
    from calibrate.network import three_host_fanout
    from hnowmodel.layout import Layout

    doc = json.loads((GOLDEN / "cluster_profile.json").read_text())
    del doc["extensions"]["network"]["queued_bytes"]
    types = ["fast", "fast", "slow", "medium", "medium", "medium"]
    hosts = ["f1", "f1", "s1", "m1", "m1", "m1"]
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(zip(hosts, types, strict=True))]
    shm = {"upto_bytes": None, "Sc_us": 1.0, "Sm_us_per_byte": 1e-4, "Rc_us": 1.0, "Rm_us_per_byte": 1e-4}
    doc["schema"] = "hnowmodel.profile/3"
    doc["hosts"] = {
        "shm": {t: {"regimes": [{**shm, "Xc_us": 0.5, "Xm_us_per_byte": 1e-4}]} for t in ("fast", "medium")}
    }
    lay = Profile.from_dict(doc).host_layout
    assert lay == Layout(types, [0, 0, 1, 2, 2, 2])
    cost = {(0, r): 1 / {"fast": 18.0, "medium": 7.0, "slow": 3.0}[t] for r, t in enumerate(types) if hosts[r] != "f1"}
    three = three_host_fanout(hosts, cost)
    assert three == (0, 3, 2)  # rank 0, then m1's first rank, then s1's
    with_q = Profile.from_dict(
        {**doc, "extensions": {"network": {**doc["extensions"]["network"], "queued_bytes": 4344.0}}}
    )
    sizes = [16384, 32768]
    full = hm.ops.predict("bcast", with_q, lay, hm.trees.sequential(6), sizes, variant="flow-rr")
    part = hm.ops.predict("bcast", with_q, lay.take(list(three)), hm.trees.sequential(3), sizes, variant="flow-rr")
    raw = {
        "rounds": [
            {
                "Q": {"0": dict(zip(sizes, map(float, full), strict=True))},
                "Q3": {"0": dict(zip(sizes, map(float, part), strict=True))},
            }
        ],
        "fanout3": list(three),
    }
    got = fit_queued_bytes(raw, doc)
    assert got["from"] == "three-host fan-out" and got["ranks"] == [0, 3, 2]
    assert got["full_fanout"]["bytes"] is None and "undetermined_bytes" in got["full_fanout"]
    assert got["bytes"] == pytest.approx(4344.0, abs=2.0)
    del raw["fanout3"]  # without the three-host fan-out: open, as before
    assert fit_queued_bytes(raw, doc)["bytes"] is None
