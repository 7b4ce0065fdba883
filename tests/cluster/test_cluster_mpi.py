"""Real MPI on a virtual cluster through the ``hnow`` command: a 5-rank calibration with ``--layout auto`` (the host
groups found by measuring the links: three speeds, then a CPU split), a native compare with that profile, and nothing
left behind (namespaces, links, state, ranks). Behaviour only, never timing.

Skipped, with the reason, where there is no root or no network namespaces (or no MPI launcher: marker ``mpi``)."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess

import pytest

import hnowmodel.cluster as hc
from calibrate.network import fanout_sizes
from hnowmodel.cluster import netns
from hnowmodel.cluster.state import state_path
from tests.helpers import check_compared_row, rates_spec_file, run_hnow

from . import needs_netns

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

_NAME = f"m{os.getpid() % 100000}"  # this run's cluster names start with it: never touches anyone else's


def hnow(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return run_hnow(*args, timeout=timeout)


def _ranks_inside(name: str) -> dict[str, list[int]]:
    """Processes still running inside this cluster's namespaces."""
    ns = [n for n in netns.existing_namespaces() if n.startswith(f"hnow-{name}-")]
    return {n: p for n, p in netns.namespace_pids(ns).items() if p}


def _assert_nothing_left(name: str) -> None:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"hnow-{name}-" not in out
    links = subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    assert f"hn-{name}" not in links
    assert not state_path(name).exists()


#: The auto-layout cluster: three NIC speeds in mixed order (slow fast slow medium fast), and h3 with a quarter of a
#: core (its cgroup's quota, docs/virtual-cluster.md), h1 with the whole machine: the slow pair is split by CPU. One
#: calibration serves the two tests below (the suite's longest; the grouping, the links and the CPU split are read
#: off the same profile). Speeds 2:1 apart, the fast ones at 120 Mbit/s: two hosts at 150 were told apart on a busy
#: machine (one measured slower). (On a 150 Mbit/s host a quarter of a core also slowed the NIC measurement now and
#: then - its flows' receiving ranks are throttled too - and the host got a NIC group of its own; 30 Mbit/s needs
#: little CPU.)
_AUTO_RATES, _AUTO_CPU = [30, 120, 30, 60, 120], {3: 0.25}
_AUTO_TYPES = ["slow-cpu1", "fast", "slow-cpu2", "medium", "fast"]


@pytest.fixture(scope="module")
def auto_calibrated(tmp_path_factory):
    """``hnow calibrate --layout auto`` on :data:`_AUTO_RATES` through ``--cluster`` (the command brings the cluster
    up for itself and takes it down after): ``(spec path, profile path, the command's result)``."""
    tmp = tmp_path_factory.mktemp("auto")
    name = f"{_NAME}a"
    spec = rates_spec_file(tmp, name, _AUTO_RATES, cpu_share=_AUTO_CPU)
    prof = tmp / "prof.json"
    try:
        # the one-way grid at one size per octave (--quick's is two): each link still gets every size its budget
        # allows from 256 B up, the links' costs ordered as below, at half the one-way time
        res = hnow("calibrate", "--np", "5", "--cluster", spec, "--layout", "auto", "--quick", "--rounds", "1",
                   "--sizes", "0,256..1M", "-o", str(prof))  # fmt: skip
        yield spec, prof, res
    finally:
        hc.down(name)


@needs_netns
def test_calibrate_auto_layout_and_native_compare_leave_nothing(auto_calibrated, tmp_path, cleanup):
    spec, prof_path, res = auto_calibrated
    name = f"{_NAME}a"
    # 1. the command brought the cluster up for itself and took it down after
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_nothing_left(name)
    doc = json.loads(prof_path.read_text())
    types = [n["type"] for n in doc["nodes"]]
    hosts = [n["host"] for n in doc["nodes"]]
    assert hosts == ["h1", "h2", "h3", "h4", "h5"]
    assert types == _AUTO_TYPES, types  # the test below says why the slow hosts are apart
    # every pair of groups has its own link, both directions; the per-byte cost orders as the rates do
    pairs = {(lk["from"], lk["to"]) for lk in doc["links"]}
    assert {(a, b) for a in set(types) for b in set(types) if a != b or a == "fast"} <= pairs
    xm = {(lk["from"], lk["to"]): lk["regimes"][-1]["Xm_us_per_byte"] for lk in doc["links"]}
    assert xm[("fast", "fast")] < xm[("fast", "medium")] < xm[("fast", "slow-cpu1")]
    assert xm[("fast", "fast")] < xm[("slow-cpu1", "slow-cpu2")]
    # the token bucket's burst is fitted and stored for the flow model
    assert doc["extensions"]["network"]["burst_bytes"] > 0
    # the fan-out from rank 0 is timed at 16 and 32 KiB (--quick; the sizes whose sends do not wait for the receiver)
    # and the queued bytes fitted to it (or said to be undetermined); nothing is read from the cluster's configuration
    queued = doc["provenance"]["queued_bytes"]
    waits = doc["extensions"]["network"]["send_waits_from_bytes"]
    assert [p["bytes"] for p in queued["points"]] == fanout_sizes(len(types), waits, quick=True) and queued["points"]
    assert all(p["measured_us"] > 0 for p in queued["points"])
    assert doc["extensions"]["network"].get("queued_bytes") == queued["bytes"]
    assert queued["bytes"] is not None or queued["undetermined_bytes"][1] > queued["undetermined_bytes"][0]
    # the send after idling (buckets full) minus S, a line over the bytes the burst passes: every type measured
    points = doc["provenance"]["burst_send"]["points"]
    assert {p["type"] for p in points} == set(types)
    assert all(p["bytes"] > 0 and p["rested_send_us"] > 0 for p in points)
    for key in ("burst_send_us", "burst_send_us_per_byte"):
        v = doc["extensions"]["network"][key]
        assert math.isfinite(v) and v >= 0, key
    assert doc["provenance"]["mode"] == "network"
    assert "burst" in doc["provenance"]["method"]
    # 2. a cluster that is up stays up; a native compare with the profile runs on it
    hc.up(spec)
    res = hnow(
        "compare", "--np", "5", "--cluster", spec, "--profile", str(prof_path), "--ops", "bcast", "--trees", "native",
        "--sizes", "16K", "--reps", "2", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    (row,) = json.loads(res.stdout)["rows"]
    assert (row["op"], row["tree"], row["size"]) == ("bcast", "native", 16384)
    assert row["predicted_us"] is not None and row["model_tree"].startswith("binomial"), row  # MPICH's pinned tree
    check_compared_row(row)  # ordered spread, error_pct = 100 (predicted - measured) / measured
    assert any(s.name == name for s in hc.status())  # still up: it was up before the command
    assert _ranks_inside(name) == {}  # no stray ranks
    hc.down(name)
    _assert_nothing_left(name)
    # 3. the profile applies to the hosts it knows, by name: h2 (fast) and h4 (medium) in another order beside a host
    # it has not seen, typed by the spec (rank by rank the calibration's layout would make rank 1 fast)
    moved = tmp_path / "moved.json"
    cleanup.append(f"{name}m")
    hosts = [{"name": h, "egress_mbit": r, "ingress_mbit": r} for h, r in (("h2", 120), ("h4", 60), ("h9", 30))]
    moved_doc = {"schema": "hnowmodel.cluster/1", "name": f"{name}m", "hosts": hosts, "types": {"h9": types[0]}}
    moved.write_text(json.dumps(moved_doc))
    out = tmp_path / "moved-report"
    args = ["compare", "--np", "3", "--cluster", str(moved), "--profile", str(prof_path), "--ops", "bcast"]
    res = hnow(*args, "--trees", "binomial", "--sizes", "16K", "--reps", "2", "-o", str(out), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    with open(out / "comparison.csv") as fh:
        (row,) = csv.DictReader(fh)
    assert row["layout"] == ",".join([types[1], types[3], types[0]]) and float(row["predicted_us"]) > 0, row
    _assert_nothing_left(f"{name}m")


@pytest.mark.timing  # the CPU split compares memcpy times across hosts: alone on the machine
@needs_netns
def test_auto_layout_groups_three_speeds_in_mixed_order_then_by_cpu(auto_calibrated):
    """Hosts grouped by NIC speed, then the slow group split by CPU: h3 has a quarter of a core, h1 the whole
    machine (the calibration of :func:`auto_calibrated`)."""
    _, out, res = auto_calibrated
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(out.read_text())
    types = [n["type"] for n in doc["nodes"]]
    # each host with the others of its speed, the slow ones apart by CPU (the whole core first)
    said = [ln for ln in res.stderr.splitlines() if "CPU (memcpy" in ln or "auto layout" in ln]
    assert types == _AUTO_TYPES, said
    cpu = doc["provenance"]["layout"]["auto"]["cpu"]
    assert cpu["groups"] == {"slow": [["h1"], ["h3"]]}
    assert cpu["copy_us"]["h3"] > 1.25 * max(cpu["copy_us"][h] for h in ("h1", "h2", "h4", "h5"))
    # the split group's hosts were probed again until the split had shown in every round; the others twice
    assert cpu["rounds"] == {"h1": 4, "h2": 2, "h3": 4, "h4": 2, "h5": 2}
    # the spec was never read by the calibration: what it says about the layout is only in its provenance
    assert doc["provenance"]["layout"]["given"] is False


@needs_netns
def test_two_hosts_of_two_slots_get_shared_memory_and_nic_terms(tmp_path, cleanup):
    """Two ranks per host: the profile says which ranks share a host, fits the type's shared-memory costs from two
    ranks of one host, and each NIC near the shaped rate (the outside reference: rate / 8 / FRAMING)."""
    from hnowmodel.params import Profile
    from hnowmodel.units import FRAMING

    name = f"{_NAME}c"
    cleanup.append(name)
    doc = {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": h, "egress_mbit": 40, "ingress_mbit": 40, "slots": 2} for h in ("h1", "h2")],
    }
    spec = tmp_path / f"{name}.json"
    spec.write_text(json.dumps(doc))
    out = tmp_path / "p22.json"
    res = hnow(
        "calibrate", "--np", "4", "--cluster", str(spec), "--layout", "auto", "--quick", "--rounds", "1",
        "--sizes", "0,256..1M", "-o", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    _assert_nothing_left(name)
    prof = Profile.load(out)
    assert [n["host"] for n in prof.nodes] == ["h1", "h1", "h2", "h2"]
    assert list(prof.host_layout.hosts) == [0, 0, 1, 1]
    (t,) = set(prof.layout)  # one speed: one type
    shm = prof.shm_costs(t)
    assert 0 < shm.one_way_us(0) < shm.one_way_us(1 << 18)
    # shared memory is far faster than the 40 Mbit/s wire: 256 KiB take ~55 ms on it
    assert shm.one_way_us(1 << 18) < 0.1 * (1 << 18) / (40 / 8 / FRAMING)
    line = 40 / 8 / FRAMING
    nic = prof.nic[t]
    for got in (nic.egress_bytes_per_us, nic.ingress_bytes_per_us):
        assert 0.8 * line < got < 1.2 * line, (got, line)
    # no measured pair of the network mode is two ranks of one host
    measured = {key for rnd in prof.provenance["raw_rounds"] for key in rnd["T"]}
    assert measured, prof.provenance["raw_rounds"]
    for key in measured:
        a, b = (int(x) for x in key.split("-"))
        assert prof.host_layout.hosts[a] != prof.host_layout.hosts[b], key


@needs_netns
def test_open_mpi_starts_its_ranks_inside_the_hosts(tmp_path):
    """``--mpi openmpi`` on a cluster: mpirun's daemons start through the exec wrapper, every rank runs on its host
    (in hostfile order), and the cluster brought up for the command is gone after it."""
    from hnowmodel.jobs.mpienv import openmpi_missing

    missing = openmpi_missing()
    if missing:
        pytest.skip(f"no Open MPI environment here: {missing}")
    name = f"{_NAME}o"
    spec = rates_spec_file(tmp_path, name, [100, 20, 100])
    p = hnow("info", "--np", "3", "--cluster", spec, "--mpi", "openmpi", "--json", timeout=180)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["vendor"] == "Open MPI" and doc["mpi_env"]["mpi"] == "openmpi", doc
    assert [r["host"] for r in sorted(doc["rows"], key=lambda r: r["rank"])] == ["h1", "h2", "h3"], doc
    _assert_nothing_left(name)
