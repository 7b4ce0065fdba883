"""The seeds' microbenchmarks (``hnow bench`` / ``python -m calibrate bench``): every benchmark runs under real
mpiexec on plain MPI and on the emulated testbed, the queue effect shows on plain MPI, the hot-spot fan-in on the
testbed matches the gather model within 10 %, and bad input exits 2 with one line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from calibrate.bench import runner
from calibrate.bench.buffers import reuse_pattern
from calibrate.bench.hotspot import fanin_extension
from calibrate.bench.queues import queue_extension
from hnowmodel.bench_registry import BENCHMARKS, check_names
from hnowmodel.errors import InputError
from hnowmodel.params import Profile, paper_profile
from tests.helpers import model_us, run_hnow

NAMES = [
    "latency",
    "bandwidth",
    "bilatency",
    "bibandwidth",
    "streaming",
    "overhead",
    "cpu-availability",
    "completion",
    "buffer-reuse",
    "hotspot",
    "posted-queue",
    "unexpected-queue",
]


# ---- unit tests (no MPI) ------------------------------------------------------------------------------------------
def test_registry_names_are_the_contract():
    assert list(BENCHMARKS) == NAMES
    assert check_names("all") == NAMES
    assert check_names("latency,hotspot") == ["latency", "hotspot"]
    with pytest.raises(InputError, match="unknown benchmark 'nope'.*latency"):
        check_names("latency,nope")


def test_every_registry_entry_is_complete():
    for name, b in BENCHMARKS.items():
        assert callable(runner(name)), name  # the MPI-side function the entry names exists
        assert b.summary and b.testbed_note and b.columns, name
        xs, ys, _ = b.plot
        assert xs and ys and set(ys) <= set(b.columns), name


@pytest.mark.parametrize("n,r", [(10, 0), (10, 100), (10, 50), (7, 30), (100, 25)])
def test_reuse_pattern_share(n, r):
    idx = reuse_pattern(n, r)
    shared = sum(1 for i in idx if i == 0)
    assert shared == int(n * r / 100)
    others = [i for i in idx if i != 0]
    assert len(others) == len(set(others))  # every non-reusing message has a buffer of its own


def test_queue_extension_slope():
    rows = [{"traversed": t, "size": 0, "latency_us": 2.0 + 0.01 * t} for t in (0, 100, 1000)]
    ext = queue_extension(rows, "traversed")
    assert ext["us_per_entry"] == pytest.approx(0.01)
    assert ext["base_latency_us"] == pytest.approx(2.0)
    assert queue_extension(rows[:1], "traversed") is None


def test_fanin_extension_slope():
    rows = []
    for k in (1, 2, 3):
        rows.append({"variant": "send", "slaves": k, "size": 4, "latency_us": 10.0 * k})
        rows.append({"variant": "receive", "slaves": k, "size": 4, "latency_us": 1.0, "fanin_us": 100.0 + 50 * k})
    ext = fanin_extension(rows)
    assert ext["fanin_us_per_slave"] == pytest.approx(50.0)
    assert ext["send_us_per_slave"] == pytest.approx(10.0)


# ---- bad input through hnow bench ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,needle",
    [
        (["nosuch", "--np", "2"], "unknown benchmark 'nosuch'"),
        (["latency,nosuch", "--np", "2"], "nosuch"),
        (["buffer-reuse", "--np", "2", "--reuse", "150"], "--reuse"),
        (["posted-queue", "--np", "2", "--fractions", "x"], "--fractions"),
        (["bandwidth", "--np", "2", "--window", "1"], "--window"),
        (["bandwidth", "--np", "2", "--window", "zero"], "--window"),
        (["latency", "--np", "2", "--sizes", "12Q"], "12Q"),
        (["hotspot", "--np", "4", "--slaves", "9"], "--slaves"),
        (["cpu-availability", "--np", "2", "--methods", "magic"], "magic"),
        (["latency"], "--np"),
        (["posted-queue", "--np", "2", "--profile-out", "x.json"], "--profile-out"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle):
    p = run_hnow("bench", *args, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert p.stdout == ""


def test_list():
    p = run_hnow("bench", "list", "--json", check=True)
    assert [r["name"] for r in json.loads(p.stdout)["rows"]] == NAMES
    p = run_hnow("bench", check=True)
    assert all(n in p.stdout for n in NAMES)


# ---- real MPI runs ------------------------------------------------------------------------------------------------
def _by(rows, name):
    return [r for r in rows if r["bench"] == name]


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory) -> tuple[dict, object]:
    """Every benchmark at --quick settings in one job on plain MPI, through hnow (CSV/PNG/JSON, profile extensions):
    its JSON document and its folder (run once for the tests that read it)."""
    tmp_path = tmp_path_factory.mktemp("bench")
    prof_in = tmp_path / "p.json"
    paper_profile().save(prof_in)
    out = tmp_path / "out"
    for attempt in range(2):
        # hnow's own --timeout (well under the test's) turns a hung job into one line naming the rank and step; the
        # suite's first MPI job hung once on a fresh CI machine (nothing printed in 180 s, never reproduced in 50
        # local runs), so a job hnow killed as hung is run once more, with a warning that keeps it visible
        p = run_hnow(
            "bench", "all", "--np", "2", "--quick", "--json", "-o", str(out), "--profile-in", str(prof_in),
            "--profile-out", str(tmp_path / "p2.json"), "--timeout", "120", "--force", timeout=300,
        )  # fmt: skip
        if attempt == 0 and p.returncode == 2 and "did not finish within" in p.stderr:
            warnings.warn(f"hnow bench all was killed as hung, run again: {p.stderr.strip()}", stacklevel=1)
            continue
        break
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), tmp_path


@pytest.fixture(scope="module")
def emulated_run() -> dict:
    """Every benchmark at --quick settings on the emulated paper testbed: the JSON document."""
    p = run_hnow("bench", "all", "--np", "2", "--testbed", "paper", "--quick", "--json", timeout=240)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.mpi
def test_all_benchmarks_plain_mpi(plain_run):
    """Every benchmark runs on plain MPI and writes its CSV and plot; the profile gets the queue extensions."""
    doc, tmp_path = plain_run
    out = tmp_path / "out"
    assert doc["emulated"] is False and doc["np"] == 2
    for name in NAMES:
        rows = _by(doc["rows"], name)
        assert rows, name
        assert (out / f"bench_{name}.csv").exists() and (out / f"bench_{name}.png").stat().st_size > 1000
    for r in _by(doc["rows"], "latency"):
        assert 0 < r["min_us"] <= r["median_us"] <= r["max_us"]
    assert all(r["bandwidth_MBps"] > 0 for r in _by(doc["rows"], "bandwidth"))
    modes = {r["mode"] for r in _by(doc["rows"], "completion")}
    assert modes == {"recv", "test", "wait", "test-sleep"}
    assert {r["method"] for r in _by(doc["rows"], "cpu-availability")} == {"polling", "bandwidth-loop"}
    prof = Profile.load(tmp_path / "p2.json")
    assert prof.extensions["posted_queue"]["us_per_entry"] > 0
    assert "unexpected_queue" in prof.extensions and "hotspot" in prof.extensions
    assert prof.types == paper_profile().types  # the model's parameters are untouched


@pytest.mark.mpi
@pytest.mark.timing
def test_traversing_the_posted_queue_costs_and_merely_posting_does_not(plain_run):
    """Underwood & Brightwell: traversing 300 posted entries costs; merely having them posted does not. Minima
    (load only adds time); the margin (0.3 µs over ~300 entries) is far below what a traversal costs (~1 µs)."""
    doc, _ = plain_run
    pq = {(r["length"], r["traversed"]): r for r in _by(doc["rows"], "posted-queue")}
    assert pq[(300, 300)]["min_us"] > pq[(0, 0)]["min_us"] + 0.3
    assert pq[(300, 0)]["min_us"] < pq[(300, 300)]["min_us"]


@pytest.mark.mpi
def test_all_benchmarks_emulated_testbed(emulated_run):
    """Every benchmark runs on the emulated testbed, with its note."""
    doc = emulated_run
    assert doc["emulated"] is True
    for name in NAMES:
        assert _by(doc["rows"], name), name
        assert doc["benchmarks"][name]["notes"]


@pytest.mark.mpi
@pytest.mark.timing
def test_emulated_latency_and_overheads_are_the_models(emulated_run):
    """Emulated latency is the model's (Table 2: 170 µs fast-fast), the send/receive overheads the fast type's Sc
    and Rc. The emulator only ever adds delay, so the band is lopsided: 3-5 % below (clock rounding, as on a quiet
    machine), 12 % above (a rank scheduled late on a loaded 2-core machine: ~0.5 ms of the 5 ms real time of a
    170-µs message at time scale 30). A lost or doubled term (Sc 60, Rc 94, X 16) falls outside."""
    doc = emulated_run
    lat0 = next(r for r in _by(doc["rows"], "latency") if r["size"] == 0)
    ov = next(r for r in _by(doc["rows"], "overhead") if r["size"] == 0)
    for got, want, below in ((lat0["min_us"], 170.0, 0.03), (ov["send_us"], 60.0, 0.05), (ov["recv_us"], 94.0, 0.05)):
        assert (1 - below) * want <= got <= 1.12 * want, (got, want)
    assert lat0["min_us"] <= lat0["median_us"] <= lat0["max_us"]


def _hotspot_fanin() -> list[dict]:
    p = run_hnow(
        "bench", "hotspot", "--np", "4", "--testbed", "paper", "--layout", "FSSF", "--slaves", "1,2,3",
        "--min-reps", "5", "--max-reps", "9", "--json", timeout=180,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    rows = [r for r in json.loads(p.stdout)["rows"] if r["variant"] == "receive"]
    assert [r["slaves"] for r in rows] == [1, 2, 3]
    return rows


@pytest.mark.mpi
@pytest.mark.timing
def test_hotspot_receive_follows_the_gather_model_on_testbed():
    """Hot-spot fan-in vs k on the emulated testbed: rises with k and stays near the gather model (sequential,
    link). Behaviour only: 4 busy ranks on 2 cores of a VM that drifts 30-65 % for seconds put the accuracy itself
    (within ~10 % on a quiet machine) out of a test's reach; a factor of 2 catches a broken model or emulator."""
    layout = ["fast", "slow", "slow", "fast"]
    prof = paper_profile()
    one = [model_us("gather", prof, layout[: k + 1], "sequential", 4, variant="link") for k in (1, 2, 3)]
    pred = np.array(one, dtype=float)
    fan = np.array([r["fanin_min_us"] for r in _hotspot_fanin()])
    assert np.all((fan > 0.5 * pred) & (fan < 2.0 * pred)), (fan.tolist(), pred.tolist())
    assert np.all(np.diff(fan) > 0)  # latency rises with k
