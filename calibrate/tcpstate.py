"""What the kernel says about this rank's TCP connections once the calibration's messages have gone through them:
each connection's congestion window, slow-start threshold and segment size (``ss -tin``, the rank's own sockets to
other hosts), and the host's TCP settings that decide how a window reaches the link (``/proc/sys/net/ipv4``, the
route's ``initcwnd``). Nothing here is timed: these are the kernel's own numbers, read once per rank, so a
calibration on hosts whose TCP hands whole windows to the link's queue can give the model their windows
(:func:`tcp_window_terms`; docs/model.md, "TCP windows").

>>> parse_ss(SAMPLE, pid=42)
[{'peer': '10.0.0.3', 'cwnd': 48, 'ssthresh': 24, 'mss': 1448, 'bytes_acked': 2000000}]
>>> tcp_window_terms([{"sockets": parse_ss(SAMPLE, 42), "limit_output_bytes": 1048576,
...                    "slow_start_after_idle": 1, "congestion_control": "cubic", "initcwnd": 10}])["tcp_window_bytes"]
69504.0
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["read_tcp_state", "parse_ss", "tcp_window_terms", "MIN_ACKED_BYTES", "WHOLE_WINDOW_FROM_BYTES"]

#: A connection counts once it has carried this many bytes (acknowledged): one that carried only the set-up's small
#: messages still has its initial window, which says nothing of the calibration's traffic.
MIN_ACKED_BYTES = 1 << 20

#: Hosts whose ``tcp_limit_output_bytes`` is at least this hand a connection's window to the link's queue at once
#: (Linux's default is 1 MiB); the virtual cluster's tuned hosts keep 4096 bytes per socket below TCP, a few
#: packets, which the tandem's round-robin egress models (no window terms then).
WHOLE_WINDOW_FROM_BYTES = 65536

#: Linux's ``TCP_RTO_MIN`` (µs): a connection idle longer than ``srtt`` plus this restarts its window when
#: ``net.ipv4.tcp_slow_start_after_idle`` is 1.
RTO_MIN_US = 200_000.0

#: Linux's initial window in segments when the route sets none (``TCP_INIT_CWND``).
INIT_CWND = 10

SAMPLE = (
    "Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n"
    '0 0 10.0.0.2:5000 10.0.0.3:6000 users:(("python",pid=42,fd=17))\n'
    "\t cubic wscale:7,7 rto:224 rtt:23.5/2.1 mss:1448 cwnd:48 ssthresh:24 bytes_acked:2000000\n"
    '0 0 10.0.0.2:5001 10.0.0.4:6000 users:(("python",pid=43,fd=9))\n'
    "\t cubic mss:1448 cwnd:96 bytes_acked:9000000\n"
    '0 0 10.0.0.2:5002 10.0.0.5:6000 users:(("python",pid=42,fd=18))\n'
    "\t cubic mss:1448 cwnd:10 bytes_acked:43\n"
    '0 0 [::ffff:10.0.0.2]:5003 [::ffff:10.0.0.2]:6001 users:(("python",pid=42,fd=19))\n'
    "\t cubic mss:65483 cwnd:10 bytes_acked:9000000\n"
)


def _field(info: str, key: str) -> int | None:
    m = re.search(rf"\b{key}:(\d+)", info)
    return int(m.group(1)) if m else None


def parse_ss(text: str, pid: int) -> list[dict[str, Any]]:
    """The established connections of process ``pid`` to other hosts in ``ss -tinp`` output, each with its
    ``cwnd`` and ``ssthresh`` (segments; ssthresh None while still in the first slow start), ``mss`` and
    ``bytes_acked`` (only connections that carried :data:`MIN_ACKED_BYTES`); a connection whose peer is its own
    local address, or loopback, is this host's, not a link."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if f"pid={pid}," not in line:
            continue
        addrs = [p for p in line.split() if re.fullmatch(r"\S+:\d+", p)]  # local, then peer (ss's columns vary)
        if len(addrs) < 2:
            continue
        local, peer = (_ip(a) for a in addrs[:2])
        if peer in (local, "::1") or peer.startswith("127."):  # this host: not a link
            continue
        info = lines[i + 1]
        got = {k: _field(info, k) for k in ("cwnd", "ssthresh", "mss", "bytes_acked")}
        if got["cwnd"] is None or got["mss"] is None or (got["bytes_acked"] or 0) < MIN_ACKED_BYTES:
            continue
        out.append({"peer": peer, **got})
    return out


def _ip(addr: str) -> str:
    """The IP address of ``ss``'s ``ADDRESS:PORT`` (IPv6 in brackets; an IPv4-mapped one as IPv4).

    >>> _ip("[::ffff:10.0.0.2]:5000"), _ip("10.0.0.3:6000")
    ('10.0.0.2', '10.0.0.3')
    """
    ip = addr.rsplit(":", 1)[0].strip("[]")
    return ip.removeprefix("::ffff:")


def _sysctl(name: str) -> str | None:
    try:
        with open(f"/proc/sys/net/ipv4/{name}") as f:
            return f.read().strip()
    except OSError:
        return None


def _initcwnd(peer: str | None) -> int:
    """The route's ``initcwnd`` toward ``peer`` (segments), Linux's default when the route sets none."""
    ip = shutil.which("ip")
    if peer is None or ip is None:
        return INIT_CWND
    try:
        text = subprocess.run([ip, "route", "get", peer], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return INIT_CWND
    m = re.search(r"\binitcwnd (\d+)", text)
    return int(m.group(1)) if m else INIT_CWND


def read_tcp_state() -> dict[str, Any]:
    """This rank's view (collective-free: each rank calls it on its own): its connections to other hosts
    (:func:`parse_ss`), the host's ``tcp_limit_output_bytes``, ``tcp_slow_start_after_idle`` and congestion control,
    and the route's initial window toward its first peer; ``error`` when ``ss`` is missing or fails."""
    ss = shutil.which("ss")
    state: dict[str, Any] = {
        "limit_output_bytes": _int(_sysctl("tcp_limit_output_bytes")),
        "slow_start_after_idle": _int(_sysctl("tcp_slow_start_after_idle")),
        "congestion_control": _sysctl("tcp_congestion_control"),
        "sockets": [],
    }
    if ss is None:
        return {**state, "error": "ss (iproute2) not found"}
    try:
        text = subprocess.run([ss, "-tinp", "state", "established"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return {**state, "error": f"ss failed: {e}"}
    state["sockets"] = parse_ss(text, os.getpid())
    state["initcwnd"] = _initcwnd(state["sockets"][0]["peer"] if state["sockets"] else None)
    return state


def _int(v: str | None) -> int | None:
    try:
        return None if v is None else int(v)
    except ValueError:
        return None


def tcp_window_terms(states: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The profile's ``tcp_*`` network terms from every rank's :func:`read_tcp_state`, or None when the hosts'
    TCP does not hand whole windows to the link's queue (a host with ``tcp_limit_output_bytes`` below
    :data:`WHOLE_WINDOW_FROM_BYTES`, or pacing congestion control: BBR) or no connection carried enough to read.
    The window and threshold are medians over the connections (bytes); the idle restart is on when every host has
    ``tcp_slow_start_after_idle`` 1."""
    socks = [s for st in states for s in st.get("sockets", [])]
    limits = [st.get("limit_output_bytes") for st in states]
    if not socks or any(v is None or v < WHOLE_WINDOW_FROM_BYTES for v in limits):
        return None
    if any(st.get("congestion_control") in ("bbr", "bbr2") for st in states):
        return None
    mss = float(np.median([s["mss"] for s in socks]))
    thresholds = [s["ssthresh"] for s in socks if s.get("ssthresh")]
    restart = all(st.get("slow_start_after_idle") == 1 for st in states)
    initcwnd = int(np.median([st.get("initcwnd", INIT_CWND) for st in states]))
    return {
        "tcp_window_bytes": float(np.median([s["cwnd"] for s in socks])) * mss,
        "tcp_ssthresh_bytes": float(np.median(thresholds)) * mss if thresholds else None,
        "tcp_initial_window_bytes": float(initcwnd * mss),
        "tcp_mss_bytes": mss,
        "tcp_restart_rto_min_us": RTO_MIN_US if restart else None,
    }
