"""The virtual cluster: spec validation, launcher settings, and (as root, with network namespaces) real
``hnow cluster up/status/down`` runs that check addresses, shaping, host names, idempotence, crash clean-up and
that nothing is left behind."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import hnowmodel.cluster as hc
from hnowmodel.cluster import netns, procs
from hnowmodel.cluster.state import state_path
from hnowmodel.errors import HnowError, InputError
from hnowmodel.jobs import mpi_lock

from . import WHY as _WHY
from . import needs_netns

# Runs `hnow` with the cluster command registered (also before hnowmodel/cli/__init__.py lists it).
_CLI = (
    "import sys; from hnowmodel.cli import COMMANDS, main; "
    "COMMANDS.setdefault('cluster', 'hnowmodel.cli.cluster'); sys.exit(main(sys.argv[1:]))"
)
_NAME = f"t{os.getpid() % 100000}"  # this run's cluster names start with it: never touches anyone else's


def hnow(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _CLI, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _spec_doc(name: str = _NAME, **over) -> dict:
    doc = {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [
            {"name": "a", "egress_mbit": 100, "ingress_mbit": 100, "slots": 1},
            {"name": "b", "egress_mbit": 40, "ingress_mbit": 50, "slots": 2},
            {"name": "c", "egress_mbit": 20, "ingress_mbit": 20, "slots": 1},
        ],
    }
    doc.update(over)
    return doc


def _mine() -> tuple[list[str], list[str]]:
    """This run's namespaces and links that exist now."""
    ns = sorted(n for n in netns.existing_namespaces() if n.startswith(f"hnow-{_NAME}"))
    links = sorted(n for n in netns.existing_links() if n.startswith(f"hn-{_NAME}"))
    return ns, links


def _ip_netns_list() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def _ip_link() -> str:
    return subprocess.run(["ip", "link"], capture_output=True, text=True).stdout


def _assert_nothing_left(name: str) -> None:
    assert f"hnow-{name}-" not in _ip_netns_list()
    assert f"hn-{name}" not in _ip_link()
    assert not state_path(name).exists()


@pytest.fixture
def spec_file(tmp_path):
    def make(**over) -> str:
        p = tmp_path / f"spec{len(list(tmp_path.iterdir()))}.json"
        p.write_text(json.dumps(_spec_doc(**over)))
        return str(p)

    return make


# --- spec and launcher settings (no root needed) -------------------------------------------------------------


def test_spec_round_trip_and_builtin_demo():
    spec = hc.from_dict(_spec_doc())
    assert hc.from_dict(hc.to_dict(spec)) == spec
    assert spec.total_slots == 4 and spec.host("b").ingress_mbit == 50.0
    demo = hc.load_spec("demo")
    assert len(demo.hosts) == 6
    rates = [h.egress_mbit for h in demo.hosts]
    assert len(set(rates)) == 3 and max(rates) <= 200
    assert rates != sorted(rates) and rates != sorted(rates, reverse=True)  # speeds mixed in host order


def test_cpu_share_round_trips_and_is_left_out_when_unset():
    doc = _spec_doc(hosts=[{"name": "a", "egress_mbit": 10, "ingress_mbit": 10, "cpu_share": 0.25}])
    spec = hc.from_dict(doc)
    assert spec.hosts[0].cpu_share == 0.25 and hc.from_dict(hc.to_dict(spec)) == spec
    assert "cpu_share" not in hc.to_dict(hc.from_dict(_spec_doc()))["hosts"][0]  # old specs read and write as before


def test_builtin_demoslots_has_one_two_rank_host():
    # hnow demo's cluster: the demo's three speeds, one fast host with 2 ranks (its node-aware tree differs from
    # binomial), within the interface-name limit
    spec = hc.load_spec("demoslots")
    assert hc.from_dict(hc.to_dict(spec)) == spec
    assert [(h.name, h.slots) for h in spec.hosts if h.slots > 1] == [("f2", 2)]
    assert spec.total_slots == 7 and len(spec.hosts) == 6
    assert sorted({h.egress_mbit for h in spec.hosts}) == [25.0, 60.0, 160.0]


def test_demoslots_node_aware_tree_predicted_faster_than_binomial():
    # why hnow demo runs on demoslots: its node-aware tree differs from binomial over the ranks and the model
    # predicts it faster for every operation (three speeds with shared memory, each op's default variant)
    import hnowmodel as hm
    from hnowmodel.demo import CLUSTER_NODE_AWARE, CLUSTER_SPEC
    from hnowmodel.layout import Layout
    from tests.helpers import network_profile, paper_shm_profile

    prof = paper_shm_profile(network_profile())
    spec = hc.load_spec(CLUSTER_SPEC)
    kind = {"f": "fast", "m": "mid", "s": "slow"}
    lay = Layout(
        [kind[h.name[0]] for h in spec.hosts for _ in range(h.slots)],
        [i for i, h in enumerate(spec.hosts) for _ in range(h.slots)],
    )
    assert not lay.one_per_host
    aware = hm.trees.make_tree(CLUSTER_NODE_AWARE, len(lay), layout=lay, profile=prof)
    plain = hm.trees.make_tree("binomial", len(lay))
    assert list(aware.parent) != list(plain.parent)
    for op in hm.ops.tree_names():
        t_aware, t_plain = (float(hm.ops.predict(op, prof, lay, t, [16384])[0]) for t in (aware, plain))
        assert t_aware < 0.9 * t_plain, (op, t_aware, t_plain)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schema": "x"}, "schema"),
        ({"extra": 1}, "extra"),
        ({"name": "Lab"}, "name"),
        ({"name": "a-b"}, "name"),
        ({"name": "abcdefghijk"}, "name"),
        ({"hosts": []}, "hosts"),
        ({"hosts": [{"name": "n1", "egress_mbit": 1, "ingress_mbit": 1, "speed": 3}]}, "hosts[0].speed"),
        ({"hosts": [{"name": "N_1", "egress_mbit": 1, "ingress_mbit": 1}]}, "hosts[0].name"),
        ({"hosts": [{"name": "-n", "egress_mbit": 1, "ingress_mbit": 1}]}, "hosts[0].name"),
        ({"hosts": [{"name": "averylonghost", "egress_mbit": 1, "ingress_mbit": 1}]}, "hosts[0].name"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1}] * 2}, "hosts[1].name"),
        ({"hosts": [{"name": "n", "egress_mbit": 0, "ingress_mbit": 1}]}, "hosts[0].egress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": -5}]}, "hosts[0].ingress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": math.inf, "ingress_mbit": 1}]}, "hosts[0].egress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": math.nan, "ingress_mbit": 1}]}, "hosts[0].egress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": "fast", "ingress_mbit": 1}]}, "hosts[0].egress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": 20000, "ingress_mbit": 1}]}, "hosts[0].egress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": 1}]}, "hosts[0].ingress_mbit"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "slots": 0}]}, "hosts[0].slots"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "slots": 1.5}]}, "hosts[0].slots"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "slots": True}]}, "hosts[0].slots"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "cpu_share": 0}]}, "hosts[0].cpu_share"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "cpu_share": 1.5}]}, "hosts[0].cpu_share"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "cpu_share": math.nan}]}, "hosts[0].cpu_share"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "cpu_share": "half"}]}, "hosts[0].cpu_share"),
        ({"hosts": [{"name": f"n{i}", "egress_mbit": 1, "ingress_mbit": 1} for i in range(65)]}, "hosts"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "tcp": "fast"}]}, "hosts[0].tcp"),
        ({"hosts": [{"name": "n", "egress_mbit": 1, "ingress_mbit": 1, "tcp": None}]}, "hosts[0].tcp"),
        ({"types": ["fast"]}, "types: must be an object"),
        ({"types": {"z": "fast"}}, "types.z: no such host"),
        ({"types": {"a": ""}}, "types.a: must be a node type name"),
        ({"types": {"a": 3}}, "types.a: must be a node type name"),
    ],
)
def test_bad_specs_name_the_field(change, field):
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        hc.from_dict(_spec_doc(**change))


def test_bad_spec_on_the_command_line_exits_2_with_one_line(tmp_path, spec_file):
    bad = spec_file(hosts=[{"name": "n", "egress_mbit": 0, "ingress_mbit": 1}])
    for args in (
        ["cluster", "up", bad],
        ["cluster", "up", str(tmp_path / "nope.json")],
        ["cluster", "up", "nope"],
        ["cluster", "frob"],
        ["cluster", "up"],
        ["cluster", "down", "Bad-Name"],
    ):
        proc = hnow(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
    assert "hosts[0].egress_mbit" in hnow("cluster", "up", bad).stderr


def test_rank_hosts_fill_in_order_and_too_many_ranks_is_an_error():
    slots = [("a", 1), ("b", 2), ("c", 1)]
    assert hc.rank_hosts(slots, 4) == ["a", "b", "b", "c"]
    assert hc.rank_hosts(slots, 2) == ["a", "b"]
    with pytest.raises(InputError, match=r"--np 5 .* 4 slots"):
        hc.rank_hosts(slots, 5)


def test_launch_settings_list_used_hosts_and_force_tcp():
    st = hc._plan(hc.from_dict(_spec_doc()), __import__("ipaddress").ip_network("10.213.7.0/24"), "/x/w.sh")
    ls = hc.launch_settings(st, 3)
    assert ls.hosts == ["a", "b", "b"]
    args = ls.mpiexec_args
    assert args[args.index("-launcher") + 1] == "ssh" and args[args.index("-launcher-exec") + 1] == "/x/w.sh"
    assert args[args.index("-hosts") + 1] == "a:1,b:2"
    assert args[args.index("-localhost") + 1] == "10.213.7.1"
    assert ls.env["UCX_TLS"] == "tcp" and ls.env["UCX_NET_DEVICES"] == "eth0"
    assert [h.address for h in st.hosts] == ["10.213.7.2", "10.213.7.3", "10.213.7.4"]


def test_ranks_beyond_the_cores_poll_with_naps(monkeypatch):
    st = hc._plan(hc.from_dict(_spec_doc()), __import__("ipaddress").ip_network("10.213.7.0/24"), "/x/w.sh")
    monkeypatch.delenv("MPIR_CVAR_CH4_PROGRESS_THROTTLE", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert hc.launch_settings(st, 3).env["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] == "1"
    assert "MPIR_CVAR_CH4_PROGRESS_THROTTLE" not in hc.launch_settings(st, 2).env
    monkeypatch.setenv("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "0")  # the user's own setting is left alone
    assert "MPIR_CVAR_CH4_PROGRESS_THROTTLE" not in hc.launch_settings(st, 3).env


def test_open_mpi_is_started_through_the_wrapper_on_the_clusters_subnet(monkeypatch):
    st = hc._plan(hc.from_dict(_spec_doc()), __import__("ipaddress").ip_network("10.213.7.0/24"), "/x/w.sh")
    monkeypatch.delenv("OMPI_MCA_mpi_yield_when_idle", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    ls = hc.openmpi_launch_settings(st, 3)
    args = ls.mpiexec_args
    assert ls.hosts == ["a", "b", "b"]
    assert args[args.index("--host") + 1] == "10.213.7.2:1,10.213.7.3:2"  # by address, filled in order
    assert args[args.index("plm_ssh_agent") + 1] == "/x/w.sh"
    assert args[args.index("oob_tcp_if_include") + 1] == args[args.index("btl_tcp_if_include") + 1] == st.subnet
    assert ls.env == {"OMPI_MCA_mpi_yield_when_idle": "1"}  # more ranks than cores
    assert hc.openmpi_launch_settings(st, 2).env == {}


def test_without_root_up_says_so(monkeypatch):
    monkeypatch.setattr(netns, "_checked", False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(HnowError, match="needs root"):
        hc.up(hc.from_dict(_spec_doc()))


def test_stop_processes_returns_when_they_have_exited_and_names_one_that_does_not(monkeypatch):
    """``down``'s process stop: SIGKILL, return when each has exited and left the process table (a child of the
    caller is left to the caller's wait, which gets its exit status); one still running after the second SIGKILL
    is named with its command."""
    child = subprocess.Popen(["sleep", "60"])
    # a grandchild of ours: its parent (a shell that waits for it) reaps it, as init reaps a cluster's daemons
    sh = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    grandchild = int(sh.stdout.readline())
    try:
        assert procs.stop_processes([child.pid, grandchild, child.pid]) == [child.pid, grandchild]
        assert not procs.exists(grandchild) and not procs.running(child.pid)
        assert child.wait(timeout=10) == -signal.SIGKILL
        assert sh.wait(timeout=10) == 0
    finally:
        for p in (child, sh):
            if p.poll() is None:
                p.kill()
                p.wait()
    stuck = subprocess.Popen(["sleep", "60"])
    comm = Path(f"/proc/{stuck.pid}/comm")
    for _ in range(500):  # until the child has exec'd sleep (right after fork it is still this python)
        if comm.read_text().strip() == "sleep":
            break
        time.sleep(0.01)
    monkeypatch.setattr(procs, "running", lambda pid: True)  # as a process stuck in the kernel would be
    try:
        with pytest.raises(
            HnowError, match=rf"cluster 'x': processes did not exit after SIGKILL: {stuck.pid} \(sleep\)"
        ):
            procs.stop_processes([stuck.pid], "cluster 'x': processes", wait_s=0.01)
    finally:
        stuck.kill()
        stuck.wait()


# --- real clusters (root + network namespaces) ---------------------------------------------------------------


@needs_netns
def test_up_status_down_through_the_command(spec_file, cleanup):
    cleanup.append(_NAME)
    path = spec_file()
    proc = hnow("cluster", "up", path, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["cluster"]
    assert doc["name"] == _NAME
    hosts = {h["name"]: h for h in doc["hosts"]}
    assert list(hosts) == ["a", "b", "c"]
    assert hosts["b"] == {
        "name": "b",
        "address": hosts["b"]["address"],
        "egress_mbit": 40,
        "ingress_mbit": 50,
        "slots": 2,
    }
    subnet = doc["subnet"]
    assert subnet.startswith("10.213.") and subnet.endswith(".0/24")
    prefix = subnet.rsplit(".", 1)[0]
    assert [h["address"] for h in doc["hosts"]] == [f"{prefix}.{i}" for i in (2, 3, 4)]
    assert doc["bridge_address"] == f"{prefix}.1" and doc["shaping"]["burst_bytes"] == 8192
    assert doc["shaping"]["initcwnd_segments"] == 256 and doc["shaping"]["congestion_control"] == "reno"

    ns, links = _mine()
    assert ns == [f"hnow-{_NAME}-{h}" for h in "abc"]
    assert links == sorted([f"hn-{_NAME}", *(f"hn-{_NAME}-{h}" for h in "abc")])
    for h, egress, ingress in (("a", "100Mbit", "100Mbit"), ("b", "40Mbit", "50Mbit"), ("c", "20Mbit", "20Mbit")):
        out = subprocess.run(
            ["tc", "-n", f"hnow-{_NAME}-{h}", "qdisc", "show", "dev", "eth0"], capture_output=True, text=True
        ).stdout
        assert "tbf" in out and f"rate {egress}" in out and "burst 8Kb" in out, out
        out = subprocess.run(["tc", "qdisc", "show", "dev", f"hn-{_NAME}-{h}"], capture_output=True, text=True).stdout
        assert "tbf" in out and f"rate {ingress}" in out, out
        addr = subprocess.run(
            ["ip", "-n", f"hnow-{_NAME}-{h}", "-br", "addr", "show", "eth0"], capture_output=True, text=True
        ).stdout
        assert hosts[h]["address"] + "/24" in addr and "UP" in addr
        # every connection starts with the same large window (Shaping): the subnet's route and the receive buffer
        route = subprocess.run(["ip", "-n", f"hnow-{_NAME}-{h}", "route"], capture_output=True, text=True).stdout
        assert f"{subnet} dev eth0" in route and "initcwnd 256 initrwnd 256" in route, route
        rmem = subprocess.run(
            ["ip", "netns", "exec", f"hnow-{_NAME}-{h}", "cat", "/proc/sys/net/ipv4/tcp_rmem"],
            capture_output=True,
            text=True,
        ).stdout
        assert rmem.split()[1] == "1048576", rmem
        # reno, one-segment packets, little of a socket below TCP: a host's egress interleaves its connections
        tcp = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                f"hnow-{_NAME}-{h}",
                "sysctl",
                "-n",
                "net.ipv4.tcp_congestion_control",
                "net.ipv4.tcp_limit_output_bytes",
            ],
            capture_output=True,
            text=True,
        ).stdout
        assert tcp.split() == ["reno", "4096"], tcp
        link = subprocess.run(
            ["ip", "-n", f"hnow-{_NAME}-{h}", "-d", "link", "show", "eth0"], capture_output=True, text=True
        ).stdout
        assert "gso_max_segs 1 " in link, link

    # host names and the host's own interface, through the exec wrapper as hydra calls it
    wrapper = doc["wrapper"]
    for h in "abc":
        out = subprocess.run(
            [
                wrapper,
                "-x",
                "-o",
                "BatchMode=yes",
                h,
                "hostname;",
                "cat",
                "/sys/class/net/eth0/address",
                ">/dev/null",
                "&&",
                "ip",
                "-br",
                "-4",
                "addr",
                "show",
                "eth0",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert out.returncode == 0, out.stderr
        lines = out.stdout.split("\n")
        assert lines[0] == h and hosts[h]["address"] in lines[1]
    assert subprocess.run([wrapper, "zz", "true"], capture_output=True).returncode == 255
    assert os.uname().nodename != "a"  # the root namespace kept its name

    # idempotent up: same state; another spec under the same name: exit 2, one line
    again = hnow("cluster", "up", path, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["cluster"] == doc
    other = hnow("cluster", "up", spec_file(hosts=[{"name": "a", "egress_mbit": 9, "ingress_mbit": 9}]))
    assert other.returncode == 2 and "down" in other.stderr and len(other.stderr.strip().splitlines()) == 1

    st = hnow("cluster", "status", _NAME, "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["cluster"]["stale"] is False
    table = hnow("cluster", "status")
    assert table.returncode == 0 and _NAME in table.stdout and "STALE" not in table.stdout.split(_NAME, 1)[1][:200]

    down = hnow("cluster", "down", path, "--json")
    assert down.returncode == 0, down.stderr
    assert json.loads(down.stdout)["down"] == {"name": _NAME, "removed": True, "namespaces": 3, "links": 4, "killed": 0}
    _assert_nothing_left(_NAME)
    assert not os.path.exists(wrapper)
    again = hnow("cluster", "down", _NAME)
    assert again.returncode == 0 and "not up" in again.stdout
    st = hnow("cluster", "status", _NAME, "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["cluster"] is None


@needs_netns
def test_down_kills_processes_left_inside_and_status_sees_stale_state(cleanup):
    name = f"{_NAME}k"
    cleanup.append(name)
    st = hc.up(_spec_doc(name))
    proc = subprocess.Popen([st.wrapper, "b", "exec", "sleep", "60"], start_new_session=True)
    try:
        for _ in range(200):
            if netns.namespace_pids([f"hnow-{name}-b"])[f"hnow-{name}-b"]:
                break
            __import__("time").sleep(0.01)
        # someone removed a link by hand: status says the state is stale
        subprocess.run(["ip", "link", "del", f"hn-{name}-c"], check=True)
        (s,) = hc.status(name)
        assert s.stale and f"link hn-{name}-c" in s.missing and f"namespace hnow-{name}-b" not in s.missing
        with pytest.raises(HnowError, match="stale"):
            hc.get(name)
        res = hc.down(name)
        assert res.removed and res.killed >= 1
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    _assert_nothing_left(name)


@needs_netns
def test_a_host_with_a_cpu_share_runs_its_ranks_throttled_in_its_own_cgroup(cleanup):
    """A host with ``cpu_share`` 0.25: what the exec wrapper starts there is in the host's cpu cgroup (quota 1 ms
    per 4 ms), a busy loop there is throttled (the kernel's own count), the other hosts are not, and ``down``
    removes the cgroup."""
    from hnowmodel.cluster.cpu import cgroup_root

    name = f"{_NAME}q"
    cleanup.append(name)
    hosts = [
        {"name": "a", "egress_mbit": 100, "ingress_mbit": 100},
        {"name": "b", "egress_mbit": 100, "ingress_mbit": 100, "cpu_share": 0.25},
    ]
    st = hc.up(_spec_doc(name, hosts=hosts))
    cg = Path(st.host("b").cgroup)
    assert st.host("a").cgroup is None and cg.parent == cgroup_root() and cg.is_dir()
    if (cg / "cpu.cfs_quota_us").exists():
        assert (cg / "cpu.cfs_quota_us").read_text().split() == ["1000"]
        assert (cg / "cpu.cfs_period_us").read_text().split() == ["4000"]
    busy = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; cat /proc/self/cgroup"
    out_b = subprocess.run([st.wrapper, "b", busy], capture_output=True, text=True, timeout=120)
    out_a = subprocess.run([st.wrapper, "a", "cat /proc/self/cgroup"], capture_output=True, text=True, timeout=60)
    assert out_b.returncode == 0 and cg.name in out_b.stdout
    assert out_a.returncode == 0 and cg.name not in out_a.stdout
    stat = dict(line.split() for line in (cg / "cpu.stat").read_text().splitlines())
    assert int(stat["nr_throttled"]) > 0
    hc.down(name)
    assert not cg.exists()
    _assert_nothing_left(name)


_CRASH = textwrap.dedent(
    """
    import os, signal, sys
    import hnowmodel.cluster as hc
    orig, seen = hc._start_host, []
    def start_host(st, h, t):
        seen.append(h.name)
        if len(seen) == 2:            # half-way through the hosts: die as SIGKILL would (no clean-up at all)
            os.kill(os.getpid(), signal.SIGKILL)
        return orig(st, h, t)
    hc._start_host = start_host
    hc.up(sys.argv[1])
    """
)


@needs_netns
def test_crash_in_the_middle_of_up_then_down_removes_everything(spec_file, cleanup):
    name = f"{_NAME}c"
    cleanup.append(name)
    path = spec_file(name=name, hosts=[{"name": f"h{i}", "egress_mbit": 30, "ingress_mbit": 30} for i in range(4)])
    proc = subprocess.run([sys.executable, "-c", _CRASH, path], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ns, links = _mine()
    assert ns and links and state_path(name).exists()  # half-made, and recorded
    st = json.loads(hnow("cluster", "status", name, "--json").stdout)["cluster"]
    assert st["stale"] is True and st["phase"] == "creating"
    # up of the same spec repairs it; down removes everything
    assert hnow("cluster", "up", path).returncode == 0
    assert json.loads(hnow("cluster", "status", name, "--json").stdout)["cluster"]["stale"] is False
    subprocess.run([sys.executable, "-c", _CRASH, path], capture_output=True, timeout=60)  # no-op: it is up
    assert hnow("cluster", "down", name).returncode == 0
    _assert_nothing_left(name)
    # crash again, and this time only down
    subprocess.run(
        [sys.executable, "-c", _CRASH.replace("hc.up(", "hc.down(sys.argv[1]); hc.up("), path],
        capture_output=True,
        timeout=60,
    )
    assert state_path(name).exists()
    down = hnow("cluster", "down", name, "--json")
    assert down.returncode == 0 and json.loads(down.stdout)["down"]["removed"] is True
    _assert_nothing_left(name)


@needs_netns
def test_failure_in_up_rolls_back(monkeypatch, cleanup):
    name = f"{_NAME}f"
    cleanup.append(name)
    orig, seen = hc._start_host, []

    def start_host(st, h, t):
        seen.append(h.name)
        if len(seen) == 2:
            raise KeyboardInterrupt
        return orig(st, h, t)

    monkeypatch.setattr(hc, "_start_host", start_host)
    with pytest.raises(KeyboardInterrupt):
        hc.up(_spec_doc(name))
    _assert_nothing_left(name)


@needs_netns
def test_twenty_up_down_cycles_leave_nothing_behind(cleanup):
    name = f"{_NAME}y"
    cleanup.append(name)
    before_ns, before_links = _ip_netns_list(), _ip_link()
    for _ in range(20):
        st = hc.up(_spec_doc(name))
        assert len(st.hosts) == 3 and not hc.status(name)[0].stale
        assert hc.down(name).removed
    _assert_nothing_left(name)
    assert f"hnow-{name}" not in _ip_netns_list() and f"hnow-{name}" not in before_ns
    assert f"hn-{name}" not in _ip_link() and f"hn-{name}" not in before_links


def _mpi_missing() -> str:
    if _WHY:
        return f"needs root and network namespaces: {_WHY}"
    if shutil.which("mpiexec") is None:
        return "needs mpiexec"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "needs mpi4py"
    return ""


@pytest.mark.mpi
@pytest.mark.skipif(bool(_mpi_missing()), reason=_mpi_missing() or "-")
def test_mpi_ranks_run_on_their_hosts_over_the_shaped_links(cleanup):
    name = f"{_NAME}m"
    cleanup.append(name)
    st = hc.up(_spec_doc(name))
    ls = hc.launch_settings(st, 4)
    code = (
        "import socket, numpy as np; from mpi4py import MPI; c = MPI.COMM_WORLD; b = np.zeros(200000, 'u1')\n"
        "if c.rank == 0: c.Send(b, 3)\n"
        "if c.rank == 3: c.Recv(b, 0)\n"
        "names = c.gather(socket.gethostname())\n"
        "if c.rank == 0: print(' '.join(names), flush=True)"
    )

    def counters(h: str) -> tuple[int, int]:
        d = json.loads(
            subprocess.run(
                ["ip", "-j", "-s", "-n", f"hnow-{name}-{h}", "link", "show", "eth0"], capture_output=True, text=True
            ).stdout
        )[0]["stats64"]
        return d["tx"]["bytes"], d["rx"]["bytes"]

    a0, c0 = counters("a"), counters("c")
    env = {**os.environ, **ls.env}
    cmd = ["mpiexec", *ls.mpiexec_args, "-n", "4", sys.executable, "-c", code]
    with mpi_lock():
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=90, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["a", "b", "b", "c"]  # rank r runs on ls.hosts[r], which has that host name
    assert ls.hosts == ["a", "b", "b", "c"]
    a1, c1 = counters("a"), counters("c")
    assert a1[0] - a0[0] >= 200000 and c1[1] - c0[1] >= 200000  # the bytes crossed a's and c's links
    hc.down(name)
    _assert_nothing_left(name)
