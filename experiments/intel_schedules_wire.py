"""Which message schedule Intel MPI runs for reduce, allreduce, allgather, reduce_scatter and alltoall, read off the
wire (docs/intel-mpi.md, "Reduce, allreduce, allgather, reduce_scatter, alltoall").

Each of ``--np`` ranks gets a host of its own by name (hydra's ``-bootstrap ssh -bootstrap-exec WRAPPER -hosts
h1,...,hN -ppn 1``; the wrapper runs the proxy on this machine under ``unshare --uts`` with that host name: a UTS
namespace, no network namespace), so Intel MPI runs its network algorithms between them, over libfabric's TCP on
the loopback. Every rank runs under ``strace``; each call is marked by an ``access()`` the trace records, every
message is one ``sendmsg`` (a 24-byte header and the payload) or ``sendto`` (a few bytes), its receiver the rank
whose socket has the other port (``ss -tnp``). For each operation and size the messages (sender, receiver, payload)
are compared with every schedule of the operation (:mod:`hnowmodel.schedules.catalog`) and the ones that send
exactly those messages are printed. Needs root (``unshare``), ``strace`` and Intel's environment; runs under the
machine's MPI lock.

    python experiments/intel_schedules_wire.py --np 2,4 --sizes 8,1K,4K,16K,64K,256K
    python experiments/intel_schedules_wire.py --np 4 --sizes 4K --env I_MPI_ADJUST_ALLREDUCE=8
    python experiments/intel_schedules_wire.py --np 12 --ppn 3 --sizes 16K,64K,256K
    python experiments/intel_schedules_wire.py --slots 2,1,3 --sizes 16K,64K,256K

With ``--ppn k`` each host name gets ``k`` ranks in a block (ranks 0..k-1 on h1, ...), with ``--slots 2,1,3`` the
hosts get those many ranks each, in blocks (hosts of unequal rank counts; ``--np`` is their sum): the messages
between ranks of one host go through shared memory and are not seen, so a schedule matches when its messages
between ranks of different hosts are exactly those seen; each line also gives the payload bytes each host sent to
the others.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hnowmodel import ops
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.sizes import parse_sizes

OPS = ("reduce", "allreduce", "allgather", "reduce_scatter", "alltoall")
_PROBE = r"""
import json, os, subprocess, sys
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
n, r, k = c.size, c.rank, int(sys.argv[1]) // 8
mine, out, blocks = np.full(k, r + 1.0), np.zeros(k), np.zeros(n * k)
for op in sys.argv[2].split(","):
    c.Barrier()
    os.access("/hnow-mark/" + op + "-begin", os.F_OK)
    if op == "reduce":
        c.Reduce(mine, out, MPI.SUM, root=0)
    elif op == "allreduce":
        c.Allreduce(mine, out, MPI.SUM)
    elif op == "allgather":
        c.Allgather(mine, blocks)
    elif op == "reduce_scatter":
        c.Reduce_scatter_block(np.repeat(np.arange(n) + r, k).astype(float), out, MPI.SUM)
    elif op == "alltoall":
        c.Alltoall((100 * r + np.repeat(np.arange(n), k)).astype(float), blocks)
    os.access("/hnow-mark/" + op + "-end", os.F_OK)
    c.Barrier()
mine_ports = []
for ln in subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout.splitlines():
    if f"pid={os.getpid()}," in ln:
        f = ln.split()
        mine_ports.append(int(f[3].rsplit(":", 1)[1]))
ports = c.gather(mine_ports, root=0)
if r == 0:
    open(os.environ["HNOW_TRACE"] + "/ports.json", "w").write(json.dumps(ports))
"""
_HOST = """#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;; --) shift; break ;; -*) shift ;; *) break ;; esac
done
host=$1; shift
exec unshare --uts -- /bin/sh -c 'hostname "$1" || exit 255; shift; eval "$*"' sh "$host" "$@"
"""
_TRACE = '#!/bin/sh\nexec strace -f -qq -yy -e trace=sendmsg,sendto,access -o "$HNOW_TRACE/t.$PMI_RANK" "$@"\n'
_SEND = re.compile(r"^\d+\s+(sendmsg|sendto)\(\d+<TCP:\[[\d.]+:\d+->[\d.]+:(\d+)\]>(.*)\)\s+=\s+(\d+)$")


def host_of(np_: int, ppn: int = 1, slots: list[int] | None = None) -> list[int]:
    """Each rank's host index: ``slots`` ranks per host in blocks, else ``ppn`` per host.

    >>> host_of(6, slots=[2, 1, 3]), host_of(4, ppn=2)
    ([0, 0, 1, 2, 2, 2], [0, 0, 1, 1])
    """
    per = slots or [ppn] * -(-np_ // ppn)
    return [h for h, k in enumerate(per) for _ in range(k)][:np_]


def _run(np_: int, hosts: list[int], m: int, ops_: list[str], env: dict[str, str], work: Path) -> dict[str, Counter]:
    """op -> (sender, receiver, payload bytes) -> messages, of one launch of ``np_`` ranks on ``hosts`` (each rank's
    host index, in blocks)."""
    where = Launch(np=np_, mpi="intelmpi").mpi_env
    for name, text in (("host.sh", _HOST), ("trace.sh", _TRACE)):
        (work / name).write_text(text)
        (work / name).chmod(0o755)
    counts = Counter(hosts)
    (work / "machines").write_text("".join(f"h{h + 1}:{counts[h]}\n" for h in sorted(counts)))
    cmd = [where.launcher, "-bootstrap", "ssh", "-bootstrap-exec", str(work / "host.sh"), "-machinefile",
           str(work / "machines"), "-n", str(np_), str(work / "trace.sh"), where.python, "-c", _PROBE, str(m),
           ",".join(ops_)]  # fmt: skip
    full = {**os.environ, **where.env, "HNOW_TRACE": str(work), **env}
    with mpi_lock():
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=full, stdin=subprocess.DEVNULL)
    if p.returncode:
        raise SystemExit(p.stderr[-2000:])
    owner = {port: rank for rank, mine in enumerate(json.loads((work / "ports.json").read_text())) for port in mine}
    got: dict[str, Counter] = {op: Counter() for op in ops_}
    for rank in range(np_):
        op = None
        for ln in (work / f"t.{rank}").read_text().splitlines():
            mark = re.search(r'access\("/hnow-mark/(\w+)-(begin|end)"', ln)
            if mark:
                op = mark.group(1) if mark.group(2) == "begin" else None
            elif op and (s := _SEND.match(ln)):
                lens = [int(x) for x in re.findall(r"iov_len=(\d+)", s.group(3))]
                payload = sum(lens[1:]) if s.group(1) == "sendmsg" else int(s.group(4)) - 24
                got[op][(rank, owner.get(int(s.group(2)), -1), payload)] += 1
    return got


#: The payload of Intel MPI's control messages, a few per call beside every algorithm's (docs/intel-mpi.md).
CONTROL_BYTES = 16


def _counted(msgs: Any, hosts: list[int]) -> Counter:
    """The messages (sender, receiver, payload) that tell schedules apart: to a known rank, not of
    :data:`CONTROL_BYTES` (on both sides, so a schedule that sends messages of that size is compared on its others),
    and between ranks of different hosts (``hosts``: each rank's host index) or from a rank to itself (Intel MPI's
    alltoall sends one)."""
    return Counter(
        x for x in msgs if x[1] >= 0 and x[2] != CONTROL_BYTES and (x[0] == x[1] or hosts[x[0]] != hosts[x[1]])
    )


def matching(op: str, n: int, m: int, got: Counter, hosts: list[int] | None = None) -> list[str]:
    """The schedules of ``op`` that send exactly the messages ``got`` on ``n`` ranks at ``m`` bytes (as counted by
    :func:`_counted`; ``hosts``: each rank's host index, default one host each)."""
    hosts = hosts or list(range(n))
    seen = _counted(got.elements(), hosts)
    out = []
    for name, alg in ops.get(op).algorithms.items():
        try:
            steps = alg.schedule(n, m).unrolled()
        except Exception:  # noqa: BLE001 - a schedule that does not run there matches nothing
            continue
        want: Counter = Counter()
        for st in steps:
            want.update(zip(st.src.tolist(), st.dst.tolist(), map(int, st.nbytes.tolist()), strict=True))
        if _counted(want.elements(), hosts) == seen:
            out.append(name)
    return out


def _host_bytes(got: Counter, hosts: list[int]) -> str:
    """The payload bytes each host sent to other hosts, ``h1=…,h2=…`` (a message to an unknown socket: its sender's)."""
    out: Counter = Counter()
    for (src, _, nbytes), count in got.items():
        out[hosts[src]] += nbytes * count
    return ",".join(f"h{h + 1}={out[h]}" for h in sorted(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", default="2,4", help="rank counts, one host each (default 2,4)")
    ap.add_argument("--sizes", default="8,1K,4K,16K,64K,256K", help="m, bytes per rank (the registry's)")
    ap.add_argument("--ppn", type=int, default=1, help="ranks per host name (default 1)")
    ap.add_argument("--slots", help="ranks of each host, in blocks, e.g. 2,1,3 (instead of --np and --ppn)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--env", action="append", default=[], help="VAR=VALUE, e.g. I_MPI_ADJUST_ALLREDUCE=8")
    a = ap.parse_args()
    if a.ppn < 1:
        ap.error(f"--ppn: ranks per host must be at least 1, got {a.ppn}")
    slots = [int(x) for x in a.slots.split(",")] if a.slots else None
    if slots is not None and (len(slots) < 2 or min(slots) < 1):
        ap.error(f"--slots: at least two hosts of at least one rank each, got {a.slots!r}")
    env = dict(kv.split("=", 1) for kv in a.env)
    ops_ = a.ops.split(",")
    for n in [sum(slots)] if slots else (int(x) for x in a.np.split(",")):
        hosts = host_of(n, a.ppn, slots)
        for m in parse_sizes(a.sizes):
            with tempfile.TemporaryDirectory() as tmp:
                got = _run(n, hosts, int(m), ops_, env, Path(tmp))
            for op in ops_:
                msgs = " ".join(f"{s}->{d}:{b}x{c}" for (s, d, b), c in sorted(got[op].items()))
                runs = ",".join(matching(op, n, int(m), got[op], hosts)) or "-"
                out = _host_bytes(got[op], hosts)
                print(f"{op:15} n={n} m={int(m):7} runs: {runs}  host bytes out: {out}  [{msgs}]")


if __name__ == "__main__":
    main()
