"""The calibration of hosts (``calibrate/host_probes.py``): one NIC per node type from each host's flows,
``--layout auto`` grouping hosts by NIC, the shared-memory pair of each type, the ``hosts.shm`` entry a profile
reads; and the C kernels of concurrent flows (``Kernels.flows``, ``Kernels.flow_list``) under a real ``mpiexec``;
the egress fan-out's plan (which ranks send to whom). Behaviour only, never timing."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from calibrate import ckernels
from calibrate.host_probes import (
    NIC_FLOWS_PER_HOST,
    cpu_split,
    egress_plan,
    nic_auto_layout,
    nic_by_type,
    shm_entry,
    shm_pairs,
)
from hnowmodel.params import Profile
from hnowmodel.units import FRAMING
from tests.helpers import run_mpi_script

MPIEXEC = ckernels._mpiexec()
needs_mpi = pytest.mark.skipif(
    ckernels.compiler() is None or MPIEXEC is None, reason="needs mpicc and mpiexec (install the 'mpich' extra)"
)


def _nic(egress: float, ingress: float, egress_seen: bool = True, ingress_seen: bool = True) -> dict:
    return {
        "egress_bytes_per_us": egress,
        "ingress_bytes_per_us": ingress,
        "egress_seen": egress_seen,
        "ingress_seen": ingress_seen,
    }


def _payload(mbit: float) -> float:
    """A shaped line rate in payload bytes/µs (the outside reference)."""
    return mbit / 8 / FRAMING


def test_a_direction_no_flow_filled_takes_the_other_when_that_one_was_seen():
    nics = {
        "f": _nic(_payload(160), 10.4, ingress_seen=False),  # the others together send 85 Mbit/s only
        "s": _nic(_payload(25), _payload(25)),
        "x": _nic(3.0, 5.0, egress_seen=False, ingress_seen=False),  # nothing seen: the lower bounds stay
    }
    got = nic_by_type(nics, ["fast", "fast", "slow", "other"], ["f", "f", "s", "x"])
    assert got["fast"] == {"egress_bytes_per_us": _payload(160), "ingress_bytes_per_us": _payload(160)}
    assert got["slow"]["ingress_bytes_per_us"] == _payload(25)
    assert got["other"] == {"egress_bytes_per_us": 3.0, "ingress_bytes_per_us": 5.0}


def test_a_type_of_several_hosts_gets_their_median_nic():
    nics = {h: _nic(e, e) for h, e in (("a", 7.0), ("b", 7.4), ("c", 7.2))}
    got = nic_by_type(nics, ["m"] * 6, ["a", "a", "b", "b", "c", "c"])
    assert got == {"m": {"egress_bytes_per_us": 7.2, "ingress_bytes_per_us": 7.2}}


def test_auto_layout_groups_hosts_by_nic_so_the_fast_host_stands_alone():
    # the cluster: 160 / 25 / 60 Mbit/s, two ranks each; pairwise the 160 host looks like the 60 one
    pc = {"hosts": ["f", "s", "m"], "cost": np.full((3, 3), 1 / _payload(60))}
    nics = {"f": _nic(18.9, 10.4, ingress_seen=False), "s": _nic(3.0, 3.03), "m": _nic(7.19, 7.31)}
    layout, info = nic_auto_layout(pc, nics, ["f", "f", "s", "s", "m", "m"])
    assert layout == ("fast", "fast", "slow", "slow", "medium", "medium")
    assert info["groups"] == {"fast": ["f"], "medium": ["m"], "slow": ["s"]}
    assert info["nic_bytes_per_us"]["f"]["ingress"] == 18.9  # taken from the egress


def test_auto_layout_merges_hosts_within_the_tolerance():
    pc = {"hosts": ["a", "b", "c"], "cost": np.full((3, 3), 0.1)}
    nics = {"a": _nic(7.17, 7.2), "b": _nic(7.0, 7.1), "c": _nic(2.99, 3.0)}
    layout, _ = nic_auto_layout(pc, nics, ["a", "b", "c", "c"])
    assert layout == ("fast", "fast", "slow", "slow")


def _cpu(us: float, half: float = 0.01) -> dict:
    return {"copy_us": us, "ci_us": [us * (1 - half), us * (1 + half)], "bytes": 1 << 25}


def test_cpu_split_keeps_equal_cpus_and_the_nic_names():
    hosts, lay = ["a", "a", "b", "c"], ["fast", "fast", "slow", "slow"]
    got, info = cpu_split(lay, hosts, {"a": _cpu(3000), "b": _cpu(3600), "c": _cpu(2900)})
    assert got == tuple(lay) and info["groups"] == {}  # 24 % slower is the same CPU; no type renamed


def test_cpu_split_needs_the_gap_beyond_both_confidence_intervals():
    hosts, lay = ["a", "b"], ["node", "node"]
    assert cpu_split(lay, hosts, {"a": _cpu(1000, 0.5), "b": _cpu(1400, 0.5)})[0] == ("node", "node")
    got, info = cpu_split(lay, hosts, {"a": _cpu(1400), "b": _cpu(1000)})
    assert got == ("node-cpu2", "node-cpu1") and info["groups"] == {"node": [["b"], ["a"]]}  # fastest CPU first


def test_cpu_split_splits_each_nic_group_on_its_own():
    hosts = ["a", "b", "c", "d", "e"]
    lay = ["fast", "fast", "slow", "slow", "slow"]
    cpus = {"a": _cpu(1000), "b": _cpu(4000), "c": _cpu(1000), "d": _cpu(2000), "e": _cpu(4100)}
    got, _ = cpu_split(lay, hosts, cpus)
    assert got == ("fast-cpu1", "fast-cpu2", "slow-cpu1", "slow-cpu2", "slow-cpu3")


def test_shm_pairs_take_two_ranks_of_one_host_per_type_and_skip_single_rank_hosts():
    layout = ["f", "s", "f", "s", "m", "m", "f"]
    hosts = ["a", "b", "c", "d", "e", "e", "c"]
    assert shm_pairs(layout, hosts) == {"f": (2, 6), "m": (4, 5)}  # s: each of its hosts has one rank


def test_shm_entry_is_what_a_profile_reads_as_hosts_shm():
    regimes = [(1024, 0.2, 1e-4, 0.9, 3e-5, 0.18, 0.0), (None, 3.7, 7e-5, 0.0, 0.0, 0.0, 1e-6)]
    fit_doc = {
        "types": {
            "fast": {
                "regimes": [
                    {
                        "upto_bytes": u,
                        "Sc_us": a,
                        "Sm_us_per_byte": b,
                        "Rc_us": c,
                        "Rm_us_per_byte": d,
                        "Cc_us": 0.1,
                        "Cm_us_per_byte": 1e-5,
                    }
                    for u, a, b, c, d, _, _ in regimes
                ]  # fmt: skip
            }
        },
        "network": {"regimes": [{"upto_bytes": u, "Xc_us": x, "Xm_us_per_byte": xm} for u, *_, x, xm in regimes]},
    }
    doc = {
        "schema": "hnowmodel.profile/3",
        "types": {"fast": {"Sc_us": 1.0, "Sm_us_per_byte": 0.0, "Rc_us": 1.0, "Rm_us_per_byte": 0.0}},
        "network": {"Xc_us": 100.0, "Xm_us_per_byte": 0.05},
        "nodes": [{"rank": 0, "host": "a", "type": "fast"}, {"rank": 1, "host": "a", "type": "fast"}],
        "hosts": {"shm": {"fast": shm_entry(fit_doc, "fast")}},
    }
    prof = Profile.from_dict(doc)
    costs = prof.shm_costs("fast")
    # S + X + R of each regime, as fitted
    assert costs.one_way_us(512) == pytest.approx(0.2 + 512e-4 + 0.18 + 0.9 + 512 * 3e-5)
    assert costs.one_way_us(65536) == pytest.approx(3.7 + 65536 * (7e-5 + 1e-6))


FLOWS_DRIVER = textwrap.dedent(
    """
    import json
    from mpi4py import MPI
    from calibrate.ckernels import Kernels, KernelError

    comm = MPI.COMM_WORLD
    k = Kernels(comm)
    big = 1 << 20
    out = {}
    for direction in ("out", "in"):
        start, finish = k.flows(direction, 0, [0, 8, big], 5, lead_us=500.0)
        out[direction] = comm.gather([start.tolist(), finish.tolist()], root=0)
    start, finish = k.flows("out", 1, [big, 0, 8], 3, lead_us=500.0, late_us=3000.0)  # rank 0 is the late flow
    out["late"] = comm.gather([start.tolist(), finish.tolist()], root=0)
    errors = []
    for call in (lambda: k.flows("sideways", 0, [0, 8, 8], 2), lambda: k.flows("out", 0, [0, 8], 2)):
        try:
            call()
            errors.append(None)
        except (ValueError, KernelError) as exc:
            errors.append(str(exc))
    out["errors"] = errors
    if comm.Get_rank() == 0:
        print(json.dumps(out))
    """
)


@pytest.mark.mpi
@needs_mpi
def test_flows_kernel_under_mpiexec(tmp_path):
    proc = run_mpi_script(tmp_path / "flows.py", FLOWS_DRIVER, 3)
    assert proc.returncode == 0, proc.stderr  # the payloads were checked in C (a wrong byte raises)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    for direction in ("out", "in"):
        per_rank = res[direction]
        for start, finish in per_rank:
            assert len(start) == 5 and all(f >= s for s, f in zip(start, finish, strict=True))
        root_start = per_rank[0][0]
        receivers = [1, 2] if direction == "out" else [0]
        for r in receivers:  # a message cannot have arrived before it was sent
            assert all(per_rank[r][1][i] > root_start[i] for i in range(5)), (direction, r)
    late = res["late"]
    for i in range(3):  # the late flow (to rank 0) cannot arrive before it started, 3000 µs after the common start
        assert late[0][1][i] - min(r[0][i] for r in late) >= 3000.0
    assert "direction must be" in res["errors"][0]
    assert "one entry per rank" in res["errors"][1]


MIXED_HOSTS = ["f1", "f1", "s1", "m1", "m1", "m1"]  # experiments/hosts_accuracy.py's MIXED: 160, 25, 60 Mbit/s


@pytest.mark.parametrize(
    "hosts",
    [MIXED_HOSTS, ["f", "f", "s", "s", "m", "m"], ["a", "b", "c", "d", "e", "f"], ["a", "a", "a", "b", "c", "c", "c"]],
)
def test_egress_plan_uses_every_rank_of_the_host_and_keeps_the_probe_alone_and_last(hosts):
    names = list(dict.fromkeys(hosts))
    for h in names:
        for probe in names:
            if probe == h:
                continue
            plan = egress_plan(hosts, h, probe)
            *rest, last = plan
            mine = [r for r, x in enumerate(hosts) if x == h]
            assert last == (mine[0], hosts.index(probe))  # the probe flow: first rank to first rank, posted last
            assert all(hosts[a] == h for a, _ in plan)  # only the host's ranks send
            assert all(hosts[b] not in (h, probe) for _, b in rest)  # nothing else into the probe's host (its ingress)
            assert len(set(plan)) == len(plan)  # distinct (src, dst) pairs: a connection each
            for x in names:
                if x in (h, probe):
                    continue
                theirs = [r for r, y in enumerate(hosts) if y == x]
                into = [(a, b) for a, b in rest if hosts[b] == x]
                # every pair of ranks up to the cap per receiving host; the first ones spread over senders/receivers
                assert len(into) == min(NIC_FLOWS_PER_HOST, len(mine) * len(theirs))
                first = into[: min(len(mine), len(theirs))]
                assert len({a for a, _ in first}) == len(first) == len({b for _, b in first})
            if len(mine) > 1 and len(names) > 2:
                assert len({a for a, _ in plan}) > 1  # several senders


def test_egress_plan_fills_the_fast_host_of_the_mixed_cluster():
    """The issue's case: f1 (160 Mbit/s, 2 ranks) whose partners are slower (s1 25, m1 60). Its probe (to m1, the
    fastest partner) is seen when its share of f1's NIC is below 95 % of m1's rate: the shaped rates decide it."""
    plan = egress_plan(MIXED_HOSTS, "f1", "m1")
    assert _payload(160) / len(plan) < 0.95 * _payload(60)
    # from f1's first rank alone (the old fan-out) there were 2 flows: 80 Mbit/s each, more than m1 takes
    assert _payload(160) / 2 > 0.95 * _payload(60)
    assert egress_plan(MIXED_HOSTS, "f1", "m1", per_host=1) == [(0, 2), (0, 3)]


FLOWLIST_DRIVER = textwrap.dedent(
    """
    import json
    from mpi4py import MPI
    from calibrate.ckernels import Kernels, KernelError

    comm = MPI.COMM_WORLD
    k = Kernels(comm)
    big = 1 << 20
    # two senders into rank 2, rank 1 both receiving and sending, rank 3 in a flow of 0 bytes, a repeated pair
    flows = [(0, 2, big), (1, 2, big), (0, 1, 4096), (1, 0, 100), (3, 0, 0), (0, 2, 8)]
    start, finish = k.flow_list(flows, 4, lead_us=500.0)
    out = {"run": comm.gather([start.tolist(), finish.tolist()], root=0)}
    start, finish = k.flow_list([(0, 1, big)], 2, lead_us=500.0)  # ranks 2 and 3 in no flow: start only
    out["idle"] = comm.gather([start.tolist(), finish.tolist()], root=0)
    errors = []
    for bad in ([(0, 0, 8)], [(0, 4, 8)], [(-1, 1, 8)], [(0, 1, -8)], [(0, 1, 1 << 31)], []):
        try:
            k.flow_list(bad, 2)
            errors.append(None)
        except (ValueError, KernelError) as exc:
            errors.append(str(exc))
    out["errors"] = errors
    start, finish = k.flow_list([(2, 3, 64)], 1)  # still usable after a refused list
    out["after"] = len(start)
    if comm.Get_rank() == 0:
        print(json.dumps(out))
    """
)


@pytest.mark.mpi
@needs_mpi
def test_flow_list_kernel_under_mpiexec(tmp_path):
    proc = run_mpi_script(tmp_path / "flowlist.py", FLOWLIST_DRIVER, 4)
    assert proc.returncode == 0, proc.stderr  # every received message was checked in C (a wrong byte raises)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    run = res["run"]
    for start, finish in run:
        assert len(start) == len(finish) == 4 and all(f >= s for s, f in zip(start, finish, strict=True))
    for i in range(4):  # rank 2's two MiB had to arrive after its senders started
        assert run[2][1][i] > max(run[0][0][i], run[1][0][i])
    assert len(res["idle"]) == 4 and res["after"] == 1
    assert all("bad arguments" in e for e in res["errors"][:5]), res["errors"]
    assert "at least one flow" in res["errors"][5]
