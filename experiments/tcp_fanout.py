"""Plain-TCP fan-out on a virtual cluster, no MPI: how a root's concurrent messages share its link.

The root host opens one TCP connection to every other host and, each repetition (200 ms apart, so the token
buckets refill and idle connections age as between timed collectives), writes ``size`` bytes to each: one after
another with blocking writes (``--mode sequential``, the order a blocking ``MPI_Send`` loop gives) or all at once
in 64 KiB pieces as the sockets drain (``--mode interleaved``). Every child reports when its last byte arrived
(``CLOCK_REALTIME``, shared by every namespace of the machine). The reference for the model's sharing variants
(docs/virtual-cluster.md, "TCP start"): its numbers come from the kernel's TCP and the shaped links alone.

    python experiments/tcp_fanout.py experiments/out/cluster_accuracy/spec.json --lock /tmp/hnow-mpi.lock

Writes ``experiments/out/tcp_fanout/fanout.csv`` (one row per size, mode and child: median and range of the
arrival times in µs over the repetitions). Needs root; brings the cluster up if it is not and leaves it as found.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

PORT = 5601


def child() -> None:
    """Accept the root, then per message: read its 8-byte length and the bytes, reply with the arrival time."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", PORT))
    srv.listen(1)
    print("ready", flush=True)
    c, _ = srv.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(1 << 20)
    while True:
        hdr = c.recv(8, socket.MSG_WAITALL)
        (n,) = struct.unpack("q", hdr) if len(hdr) == 8 else (0,)
        if n == 0:
            return
        got = 0
        while got < n:
            got += c.recv_into(buf, min(len(buf), n - got))
        c.sendall(struct.pack("d", time.time()))


def _send_all(socks: list[socket.socket], msg: bytes, mode: str) -> None:
    if mode == "sequential":
        for s in socks:
            s.sendall(msg)
        return
    pos = [0] * len(socks)
    for s in socks:
        s.setblocking(False)
    left = set(range(len(socks)))
    while left:
        _, writable, _ = select.select([], [socks[i] for i in left], [])
        for s in writable:
            i = socks.index(s)
            try:
                pos[i] += s.send(msg[pos[i] : pos[i] + 65536])
            except BlockingIOError:
                pass
            if pos[i] >= len(msg):
                left.discard(i)
    for s in socks:
        s.setblocking(True)


def root(addresses: list[str], sizes: list[int], modes: list[str], reps: int) -> None:
    """Print one JSON line per (size, mode): each child's arrival times in µs from the start of the sends."""
    socks = [socket.create_connection((a, PORT)) for a in addresses]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for size in sizes:
        for mode in modes:
            msg = struct.pack("q", size) + bytes(size)
            times: list[list[float]] = []
            for r in range(reps + 1):  # the first repetition warms the connections up and is not kept
                time.sleep(0.2)
                t0 = time.time()
                _send_all(socks, msg, mode)
                t = [(struct.unpack("d", s.recv(8, socket.MSG_WAITALL))[0] - t0) * 1e6 for s in socks]
                if r:
                    times.append(t)
            print(json.dumps({"size": size, "mode": mode, "arrival_us": times}), flush=True)
    for s in socks:
        s.sendall(struct.pack("q", 0))


def main() -> int:
    from common import write_csv

    import hnowmodel as hm
    from hnowmodel.jobs import mpi_lock

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spec", help="hnowmodel.cluster/1 file")
    p.add_argument("--root", help="root host (default: the spec's first)")
    p.add_argument("--sizes", default="65536,131072,262144", help="bytes per child, comma-separated")
    p.add_argument("--modes", default="sequential,interleaved")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("-o", "--output", default="experiments/out/tcp_fanout")
    p.add_argument("--lock", default=None, help="flock this file around the timed run (a machine shared with others)")
    args = p.parse_args()
    with hm.cluster.using(args.spec) as st:  # up for the run unless it already is
        hosts = {h.name: h for h in st.hosts}
        root_name = args.root or st.hosts[0].name
        kids = [h for h in st.hosts if h.name != root_name]
        me = [sys.executable, __file__]
        procs = []
        try:
            for h in kids:
                pr = subprocess.Popen(
                    ["ip", "netns", "exec", h.namespace, *me, "--child"], stdout=subprocess.PIPE, text=True
                )
                pr.stdout.readline()  # "ready"
                procs.append(pr)
            root_cmd = [*me, "--root", str(args.reps), args.sizes, args.modes, *(h.address for h in kids)]
            with mpi_lock(args.lock):
                out = subprocess.run(
                    ["ip", "netns", "exec", hosts[root_name].namespace, *root_cmd],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
        finally:
            for pr in procs:
                pr.wait(timeout=30)
    rows = []
    for line in out.splitlines():
        doc = json.loads(line)
        for i, h in enumerate(kids):
            xs = [t[i] for t in doc["arrival_us"]]
            rows.append(
                {
                    "size": doc["size"],
                    "mode": doc["mode"],
                    "root": root_name,
                    "child": h.name,
                    "child_ingress_mbit": h.ingress_mbit,
                    "median_us": statistics.median(xs),
                    "min_us": min(xs),
                    "max_us": max(xs),
                }
            )
            print(
                f"{doc['size']:>7} {doc['mode']:<11} {h.name:<4} {statistics.median(xs) / 1e3:8.1f} ms "
                f"[{min(xs) / 1e3:.1f}-{max(xs) / 1e3:.1f}]"
            )
    dest = Path(args.output)
    dest.mkdir(parents=True, exist_ok=True)
    write_csv(dest / "fanout.csv", rows)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child()
    elif sys.argv[1:2] == ["--root"]:
        reps, sizes, modes, *addrs = sys.argv[2:]
        root(addrs, [int(x) for x in sizes.split(",")], modes.split(","), int(reps))
    else:
        sys.exit(main())
