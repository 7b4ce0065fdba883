"""A host's TCP in the cluster spec (``"tcp": "tuned"``, hnow's settings after ``up``; ``"default"``, Linux's
defaults with its default congestion control; ``"kernel"``, all of it as the namespace starts) and the spec's
``types`` (host -> node type, for hosts a profile has not seen): read, written, and what ``up`` sets inside a host's
namespace. The namespace test makes and removes one 3-host cluster through hnow's own cluster code (needs root and
network namespaces)."""

from __future__ import annotations

import os
import subprocess

import hnowmodel.cluster as hc
from hnowmodel.cluster.state import state_path
from tests.helpers import run_hnow

from . import needs_netns

_NAME = f"p{os.getpid() % 100000}"  # this run's cluster names start with it: never touches anyone else's
_TWO = [{"name": "a", "egress_mbit": 100, "ingress_mbit": 100}, {"name": "b", "egress_mbit": 40, "ingress_mbit": 40}]


def _spec_doc(name: str, hosts=None, **over) -> dict:
    return {"schema": "hnowmodel.cluster/1", "name": name, "hosts": hosts or _TWO, **over}


def _assert_nothing_left(name: str) -> None:
    assert f"hnow-{name}-" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"hn-{name}" not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    assert not state_path(name).exists()


def test_tcp_and_types_round_trip_and_are_left_out_when_unset():
    hosts = [
        {"name": "a", "egress_mbit": 10, "ingress_mbit": 10, "tcp": "default"},
        {"name": "b", "egress_mbit": 10, "ingress_mbit": 10, "tcp": "tuned"},
        {"name": "c", "egress_mbit": 10, "ingress_mbit": 10, "tcp": "kernel"},
    ]
    spec = hc.from_dict(_spec_doc(_NAME, hosts, types={"b": "slow"}))
    assert [h.tcp for h in spec.hosts] == ["default", "tuned", "kernel"] and spec.host_types == {"b": "slow"}
    assert hc.from_dict(hc.to_dict(spec)) == spec
    doc = hc.to_dict(spec)
    assert doc["hosts"][0]["tcp"] == "default" and "tcp" not in doc["hosts"][1] and doc["types"] == {"b": "slow"}
    assert doc["hosts"][2]["tcp"] == "kernel"
    old = hc.to_dict(hc.from_dict(_spec_doc(_NAME)))  # old specs read and write as before: every host tuned, no types
    assert "types" not in old and all("tcp" not in h for h in old["hosts"])
    assert all(h.tcp == "tuned" for h in hc.from_dict(_spec_doc(_NAME)).hosts)
    # the types are not built: a spec that only adds them is the cluster that is up (no down/up), a TCP change is not
    assert hc.from_dict(_spec_doc(_NAME, types={"a": "fast"})) == hc.from_dict(_spec_doc(_NAME))
    all_tuned = [dict(h, tcp="tuned") for h in hosts]
    assert hc.from_dict(_spec_doc(_NAME, hosts)) != hc.from_dict(_spec_doc(_NAME, all_tuned))


def _host_tcp(ns: str) -> dict:
    """What a host's TCP looks like from inside its namespace: route, GSO segments, the sysctls hnow tunes."""

    def out(*cmd: str) -> str:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=True).stdout

    names = ("tcp_rmem", "tcp_limit_output_bytes", "tcp_congestion_control", "tcp_slow_start_after_idle")
    values = out("ip", "netns", "exec", ns, "sysctl", "-n", *(f"net.ipv4.{k}" for k in names)).splitlines()
    link = out("ip", "-n", ns, "-d", "link", "show", "eth0")
    return {
        "route": out("ip", "-n", ns, "route"),
        "gso_max_segs": int(link.split("gso_max_segs ", 1)[1].split()[0]),
        "addr": out("ip", "-n", ns, "-br", "addr", "show", "eth0"),
        **dict(zip(names, values, strict=True)),
    }


@needs_netns
def test_hosts_with_default_and_kernel_tcp_keep_the_kernels_settings(cleanup):
    name = f"{_NAME}d"
    cleanup.append(name)
    hosts = [
        {"name": "a", "egress_mbit": 100, "ingress_mbit": 100},
        {"name": "b", "egress_mbit": 40, "ingress_mbit": 40, "tcp": "default"},
        {"name": "c", "egress_mbit": 40, "ingress_mbit": 40, "tcp": "kernel"},
    ]
    st = hc.up(_spec_doc(name, hosts))
    try:
        tuned, linux, own = (_host_tcp(f"hnow-{name}-{h}") for h in "abc")
        assert "initcwnd 256 initrwnd 256" in tuned["route"] and tuned["gso_max_segs"] == 1
        assert tuned["tcp_limit_output_bytes"] == "4096" and tuned["tcp_rmem"].split()[1] == "1048576"
        assert tuned["tcp_congestion_control"] == "reno" and tuned["tcp_slow_start_after_idle"] == "0"
        # the kernel's: the subnet's route as the kernel makes it, GSO, its own output limit and receive buffer
        for h, kernel in (("b", linux), ("c", own)):
            assert f"{st.subnet} dev eth0" in kernel["route"] and "initcwnd" not in kernel["route"], kernel
            assert kernel["gso_max_segs"] > 1 and kernel["tcp_limit_output_bytes"] != "4096", kernel
            assert kernel["tcp_rmem"].split()[1] != "1048576" and kernel["tcp_slow_start_after_idle"] == "1", kernel
            assert st.host(h).address + "/24" in kernel["addr"] and "UP" in kernel["addr"]
        # Linux's default congestion control on "default"; on "kernel" what a new namespace starts with
        assert linux["tcp_congestion_control"] == hc.LINUX_CONGESTION_CONTROL
        fresh = subprocess.run(
            ["unshare", "--net", "sysctl", "-n", "net.ipv4.tcp_congestion_control"], capture_output=True, text=True
        )
        assert own["tcp_congestion_control"] == fresh.stdout.strip(), (own, fresh)
        # all shaped alike: the TCP setting is a host's own, the link's shaping is the spec's rates
        for h, rate in (("a", "100Mbit"), ("b", "40Mbit"), ("c", "40Mbit")):
            qd = subprocess.run(["tc", "-n", f"hnow-{name}-{h}", "qdisc", "show", "dev", "eth0"], capture_output=True)
            assert f"rate {rate}" in qd.stdout.decode()
        public = {h["name"]: h for h in st.public_dict()["hosts"]}
        assert public["b"]["tcp"] == "default" and public["c"]["tcp"] == "kernel" and "tcp" not in public["a"]
        status = run_hnow("cluster", "status", name, timeout=60)
        assert status.returncode == 0, status.stderr
        assert "Linux's default TCP (cubic) on host b; this kernel's own TCP on host c" in status.stdout, status.stdout
    finally:
        hc.down(name)
    _assert_nothing_left(name)
