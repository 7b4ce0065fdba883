"""What several test modules share: running ``hnow`` and MPI tasks as a user would, reading an error, test
profiles and trees, the byte counters of the export proofs, and Slurm commands on a virtual cluster.

Test modules import from here (``from tests.helpers import run_hnow``), never from one another. Fixtures live in
the ``conftest.py`` of their folder.

Markers (registered in ``pyproject.toml``): ``mpi`` launches real MPI processes (skipped where no launcher is
found); ``slow`` takes more than ~20 s; ``timing`` checks a duration against a tolerance (the emulated testbed's
times against the model, wall-clock bounds) - those tolerances are set to hold on a loaded 2-core machine, and the
tests still run by default (``-m "not timing"`` leaves them out on a machine busier than that).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = [
    "one_error_line",
    "run_hnow",
    "run_mpi_module",
    "any_tree",
    "flow_profile",
    "network_profile",
    "gamma_profile_file",
    "profile_with_hosts",
    "model_us",
    "check_measured_row",
    "check_compared_row",
    "COUNTERS",
    "env_of_file",
    "sent_per_child",
    "PEER_BYTES",
    "edges_sent",
    "SLURM_NAME",
    "slurm_run",
    "node_local_paths",
]


# --- hnow and MPI tasks as subprocesses ------------------------------------------------------------------------------


def one_error_line(stderr: str) -> bool:
    """``stderr`` holds one error line and nothing else but progress (a wait for the machine's MPI lock, say).

    >>> one_error_line("waiting for the MPI lock\\nhnow: error: --np: 0 is not a count\\n")
    True
    >>> one_error_line("Traceback (most recent call last):\\nhnow: error: boom\\n")
    False
    """
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(("waiting for the MPI lock", "["))]
    return len(lines) == 1 and " error: " in lines[0]


def run_hnow(
    *args: str, timeout: float = 300, check: bool = False, env: dict | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``hnow ARGS`` as a subprocess (as a user would; ``env`` added to this environment) and return it."""
    proc = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hnow {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def fresh_python(code: str, *, cwd: str | None = None, timeout: float = 120) -> list[str]:
    """Run ``python -c CODE`` in a fresh interpreter (what a new process imports, nothing of this one's) and return
    its stdout's words; it must exit 0."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def run_mpi_module(np: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n NP python -m calibrate ARGS`` (holding the machine's MPI lock) and return the completed
    process."""
    from hnowmodel.jobs import mpi_lock

    with mpi_lock():
        return subprocess.run(
            ["mpiexec", "-n", str(np), sys.executable, "-m", "calibrate", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def run_mpi_script(script: Path, text: str, np: int, env: dict | None = None, timeout: float = 120):
    """Write ``text`` to ``script`` and run ``mpiexec -n NP python SCRIPT`` with the MPI library's own ``mpiexec``
    (holding the machine's MPI lock); the completed process."""
    from calibrate import ckernels
    from hnowmodel.jobs import mpi_lock

    script.write_text(text)
    with mpi_lock():
        return subprocess.run(
            [ckernels._mpiexec(), "-n", str(np), sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ) if env is None else env,
        )


# --- trees and profiles --------------------------------------------------------------------------------------------


def any_tree(draw, n: int):
    """A tree of ``n`` ranks drawn by hypothesis: a standard family at a drawn root, or a random relabelled tree.

    Call it inside an ``@st.composite`` strategy with that strategy's ``draw``."""
    from hypothesis import strategies as st

    from hnowmodel import trees as T

    kind = draw(st.sampled_from(["binomial", "sequential", "chain", "kary:3", "knomial:3", "random"]))
    root = draw(st.integers(0, n - 1))
    if kind != "random":
        return T.make_tree(kind, n, root)
    parent = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    perm = draw(st.permutations(range(n)))
    return T.from_parent(parent).relabel(perm)


def flow_profile(
    egress: dict[str, float],
    ingress: dict[str, float] | None = None,
    *,
    S: float = 0.0,
    R: float = 0.0,
    Xc: float = 0.0,
    burst: float = 0.0,
    rendezvous: int | None = None,
    Sm: float = 0.0,
    Rm: float = 0.0,
):
    """A profile of types with the given egress/ingress capacities (bytes/µs); a pair's Xm (µs/byte) is
    max(1/egress_a, 1/ingress_b); S, R, Xc in µs; ``burst`` the network's burst (bytes, 0: none)."""
    from hnowmodel.params import Link, NodeType, Profile

    ingress = ingress or egress
    types = {k: NodeType(k, S, Sm, R, Rm) for k in egress}
    links = {(a, b): Link(Xc, max(1 / egress[a], 1 / ingress[b])) for a in egress for b in egress}
    ext = {"network": {"burst_bytes": burst}} if burst else {}
    return Profile(types, Link(Xc, 1.0), links, extensions=ext, rendezvous_from_bytes=rendezvous)


def network_profile():
    """A network profile (three speeds, a burst): one under which the flow variants are the default."""
    return flow_profile({"fast": 20.0, "mid": 6.0, "slow": 2.5}, S=2.0, R=2.0, Xc=50.0, burst=1000.0)


def paper_shm_profile(profile=None):
    """``profile`` (default the paper's) with shared-memory costs for every type: a message inside a host costs
    2 + 1e-4·m µs to send and to receive and 0.5 + 2e-4·m µs on the way (so several ranks may share a host)."""
    from dataclasses import replace

    from hnowmodel.params import Link, NodeType, ShmCosts, paper_profile

    prof = profile if profile is not None else paper_profile()
    shm = {t: ShmCosts(NodeType(t, 2.0, 1e-4, 2.0, 1e-4), Link(0.5, 2e-4)) for t in prof.type_names}
    return replace(prof, shm=shm)


def gamma_profile_file(folder: Path) -> Path:
    """The paper profile with a stated reduction cost γ per type (fast 0.5 µs + 3e-4 µs/B, slow 0.5 µs + 6e-4 µs/B),
    saved as ``folder/p.json``: what a compare of the reductions on 2 ranks predicts from."""
    from hnowmodel.params import Profile, paper_profile

    reduce = {t: {"Gc_us": 0.5, "Gm_us_per_byte": g} for t, g in (("fast", 3e-4), ("slow", 6e-4))}
    path = folder / "p.json"
    Profile.from_dict({**paper_profile().to_dict(), "extensions": {"reduce": {"types": reduce}}}).save(path)
    return path


def fast_paper_testbed(folder: Path) -> str:
    """The built-in paper testbed at a third of its time scale, saved as ``folder/paper-fast.json``; its path.

    Every emulated wait is a third as long (a 2-rank ``--quick`` calibration 4.9 -> 2.5 s); sleep jitter stays ~3 %
    of the shortest model time. For the tests that run the testbed for what it does (steps, files, warnings), never
    for the accuracy of what it measures: those keep ``paper`` at its own scale."""
    from hnowmodel.testbed import PAPER_TIME_SCALE, load_testbed

    path = Path(folder) / "paper-fast.json"
    path.write_text(json.dumps(load_testbed("paper").to_dict() | {"time_scale": PAPER_TIME_SCALE / 3}))
    return str(path)


def profile_with_hosts(
    folder: Path, hosts=("n1", "n2", "n3", "n4"), types=("fast", "fast", "slow", "slow"), name: str = "p.json"
) -> str:
    """The paper's profile with ranks on ``hosts`` of ``types`` (what ``hnow export`` needs), saved in ``folder``;
    its path."""
    from hnowmodel.params import Profile, paper_profile

    doc = paper_profile().to_dict()
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(zip(hosts, types, strict=True))]
    p = Path(folder) / name
    Profile.from_dict(doc).save(p)
    return str(p)


def model_us(op: str, profile, layout, tree, size: int, variant: str | None = None) -> float:
    """The model's completion time (µs) of ``op`` over ``tree`` (a tree, or a spec such as ``binomial``) at ``size``
    bytes, under ``variant`` (None: the profile's default) - through the operation registry, the public way in.

    >>> model_us("bcast", __import__("hnowmodel").paper_profile(), ["fast", "fast"], "binomial", 0)
    170.0
    """
    import hnowmodel as hm

    if isinstance(tree, str):
        tree = hm.trees.make_tree(tree, len(layout), layout=list(layout), profile=profile)
    return float(hm.ops.predict(op, profile, list(layout), tree, [size], variant=variant)[0])


# --- measured and compared rows ------------------------------------------------------------------------------------


def check_measured_row(row) -> None:
    """Assert what every measured row (a dict from ``--json``, or a row object) must satisfy: its spread over
    repetitions is ordered (0 <= min <= median <= max, all finite), ``measured_us`` is positive and is the row's
    ``stat`` of that spread (median or min), and the executor verified the payload where it says so.

    >>> check_measured_row({"min_us": 1.0, "median_us": 2.0, "max_us": 5.0, "measured_us": 2.0, "stat": "median"})
    >>> check_measured_row({"min_us": 3.0, "median_us": 2.0, "max_us": 5.0, "measured_us": 2.0, "stat": "median"})
    Traceback (most recent call last):
    AssertionError: spread not ordered: ...
    """
    import math

    r = row if isinstance(row, dict) else row.to_dict()
    lo, mid, hi, got = r["min_us"], r["median_us"], r["max_us"], r["measured_us"]
    assert all(math.isfinite(x) for x in (lo, mid, hi, got)), f"not finite: {r}"
    assert 0 <= lo <= mid <= hi, f"spread not ordered: {r}"
    assert got > 0 and lo <= got <= hi, f"measured outside its spread: {r}"
    if r.get("stat"):
        assert got == r[f"{r['stat']}_us"], f"measured is not the {r['stat']}: {r}"
    assert r.get("verified", True) is True, f"payload not verified: {r}"


def check_compared_row(row) -> None:
    """Assert what every compared row must satisfy: a measured row (:func:`check_measured_row`) whose
    ``error_pct`` is ``100·(predicted − measured)/measured``, None exactly when there is no prediction."""
    import math

    r = row if isinstance(row, dict) else row.to_dict()
    check_measured_row(r)
    if r["predicted_us"] is None:
        assert r["error_pct"] is None, r
        return
    assert math.isfinite(r["predicted_us"]) and r["predicted_us"] > 0, r
    want = 100.0 * (r["predicted_us"] - r["measured_us"]) / r["measured_us"]
    assert math.isclose(r["error_pct"], want, rel_tol=1e-9, abs_tol=1e-9), (r["error_pct"], want, r)


# --- the export proofs: bytes each host sent -------------------------------------------------------------------------

#: One bcast per size; each rank prints nothing, rank 0 prints ``tx SIZE host:bytes_sent:payload_ok ...``.
COUNTERS = """
import socket, sys
import numpy as np
from mpi4py import MPI

c = MPI.COMM_WORLD
def tx():
    with open("/sys/class/net/eth0/statistics/tx_bytes") as f:
        return int(f.read())
for m in map(int, sys.argv[1:]):
    buf = np.full(m, 7 if c.rank == 0 else 0, dtype="u1")
    c.Barrier()
    t0 = tx()
    c.Barrier()
    c.Bcast(buf, root=0)
    c.Barrier()
    rows = c.gather((socket.gethostname(), tx() - t0, bool((buf == 7).all())), root=0)
    if c.rank == 0:
        print("tx", m, " ".join(f"{h}:{d}:{int(ok)}" for h, d, ok in rows), flush=True)
"""


def env_of_file(folder: Path, name: str = "mpich-env.txt") -> dict[str, str]:
    """The environment ``mpich-env.txt`` (or ``name``) sets up (its ``export`` and ``unset`` lines), on top of this
    one."""
    env = dict(os.environ)
    for line in (Path(folder) / name).read_text().splitlines():
        if line.startswith("export "):
            k, _, v = line[len("export ") :].partition("=")
            env[k] = v
        elif line.startswith("unset "):
            for k in line.split()[1:]:
                env.pop(k, None)
    return env


def sent_per_child(stdout: str, m: int) -> tuple[list[int], list[bool]]:
    """From :data:`COUNTERS`' output: per rank, the bytes its host sent for the ``m``-byte bcast in units of ``m``
    (its number of children in the tree that ran), and whether its payload arrived intact.

    >>> sent_per_child("tx 8 a:16:1 b:8:1 c:0:0\\n", 8)
    ([2, 1, 0], [True, True, False])
    """
    line = next(ln for ln in stdout.splitlines() if ln.startswith(f"tx {m} "))
    cells = [c.split(":") for c in line.split()[2:]]
    return [round(int(b) / m) for _, b, _ in cells], [ok == "1" for _, _, ok in cells]


#: An MPI script: around one ``OP`` of ``M`` bytes per rank (argv: ``OP M [OP M ...]``), every rank's TCP bytes to
#: every peer (``ss -tin`` in its host's namespace: ``bytes_sent`` less ``bytes_retrans`` per connection, summed per
#: peer address); rank 0 prints ``edges OP M {"<from>": {"<to>": bytes, ...}, ...}`` (JSON, ranks as keys).
PEER_BYTES = """
import json, subprocess, sys, time
import numpy as np
from mpi4py import MPI

c = MPI.COMM_WORLD
def my_ip():
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "eth0"], capture_output=True, text=True).stdout
    return out.split()[3].split("/")[0]
def snap():
    per, peer = {}, None
    for ln in subprocess.run(["ss", "-tin"], capture_output=True, text=True).stdout.splitlines():
        if ln.startswith("ESTAB"):
            peer = ln.split()[4].rsplit(":", 1)[0]
        elif peer and "bytes_sent:" in ln:
            kv = dict(w.split(":", 1) for w in ln.split() if w.startswith(("bytes_sent:", "bytes_retrans:")))
            per[peer] = per.get(peer, 0) + int(kv.get("bytes_sent", 0)) - int(kv.get("bytes_retrans", 0))
            peer = None
    return per
ips = c.allgather(my_ip())
args = sys.argv[1:]
for op, m in zip(args[::2], map(int, args[1::2])):
    n = c.size
    if op == "bcast":
        buf = np.zeros(m, dtype="u1")
        run = lambda: c.Bcast(buf, root=0)
    elif op == "scatter":
        sb, rb = (np.zeros(n * m, dtype="u1") if c.rank == 0 else None), np.zeros(m, dtype="u1")
        run = lambda: c.Scatter(sb, rb, root=0)
    else:
        sb, rb = np.zeros(m, dtype="u1"), (np.zeros(n * m, dtype="u1") if c.rank == 0 else None)
        run = lambda: c.Gather(sb, rb, root=0)
    run()  # the connections are made
    c.Barrier(); time.sleep(0.2); c.Barrier()
    s0 = snap()
    c.Barrier()
    run()
    time.sleep(0.3)
    c.Barrier()
    s1 = snap()
    sent = {str(ips.index(p)): s1[p] - s0.get(p, 0) for p in s1 if p in ips}
    rows = c.gather(sent, root=0)
    if c.rank == 0:
        print("edges", op, m, json.dumps({str(r): row for r, row in enumerate(rows)}), flush=True)
"""


def edges_sent(stdout: str, op: str, m: int) -> dict[tuple[int, int], int]:
    """From :data:`PEER_BYTES`' output: ``(from, to) -> bytes`` in units of ``m`` (rounded), for every pair that
    carried at least a quarter of ``m`` (what the collective's messages were; the rest is the barriers' bytes).

    >>> edges_sent('edges bcast 8 {"0": {"1": 17, "2": 1}, "1": {}}', "bcast", 8)
    {(0, 1): 2}
    """
    line = next(ln for ln in stdout.splitlines() if ln.startswith(f"edges {op} {m} "))
    doc = json.loads(line.split(" ", 3)[3])
    return {(int(a), int(b)): round(v / m) for a, row in doc.items() for b, v in row.items() if v >= m / 4}


# --- Slurm on a virtual cluster --------------------------------------------------------------------------------------

SLURM_NAME = f"s{os.getpid() % 100000}"  # this run's Slurm cluster names start with it: never touches anyone else's


def slurm_run(st, *cmd: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """A Slurm command from the root namespace on the cluster ``st`` (cwd /, not a node-local /tmp)."""
    import hnowmodel.cluster as hc

    full = {**os.environ, **hc.slurm_env(st), **(env or {})}
    return subprocess.run(
        list(cmd), capture_output=True, text=True, timeout=timeout, env=full, cwd="/", stdin=subprocess.DEVNULL
    )


def node_local_paths() -> list[str]:
    """What the Slurm hosts' jobs need from this machine that lies under /tmp (a fresh tmpfs on every host): this
    Python's environment, the hnowmodel source tree."""
    import hnowmodel

    found = {"the Python environment " + sys.prefix: Path(sys.prefix).resolve()}
    found["the source tree " + str(Path(hnowmodel.__file__).parent.parent)] = Path(hnowmodel.__file__).resolve()
    return [what for what, path in found.items() if path.is_relative_to("/tmp")]


def rates_spec_file(folder: Path, name: str, rates_mbit, cpu_share: dict[int, float] | None = None) -> str:
    """A ``hnowmodel.cluster/1`` file in ``folder`` for hosts ``h1, h2, …`` with these NIC rates (Mbit/s, egress =
    ingress), one slot each, host ``i`` (from 1) with ``cpu_share[i]`` of a core where given; its path."""
    share = cpu_share or {}
    doc = {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [
            {"name": f"h{i}", "egress_mbit": r, "ingress_mbit": r, "slots": 1}
            | ({"cpu_share": share[i]} if i in share else {})
            for i, r in enumerate(rates_mbit, 1)
        ],
    }
    p = Path(folder) / f"{name}.json"
    p.write_text(json.dumps(doc))
    return str(p)


def slurm_cluster(folder: Path, name: str, rates_mbit):
    """Bring up (with its own Slurm) a cluster of :func:`rates_spec_file`'s hosts, yield ``(state, spec path)`` and
    take it down after: the body of a module fixture."""
    import hnowmodel.cluster as hc

    spec = rates_spec_file(folder, name, rates_mbit)
    try:
        yield hc.up(spec, slurm=True), spec
    finally:
        hc.down(name)


def picked_fastest(row) -> bool:
    """The export's choice rule on one row (``NativeChoice``): the fastest candidate, or the library's default where
    it is within :data:`hnowmodel.export.choose.KEEP_DEFAULT_WITHIN` of the fastest."""
    from hnowmodel.export.choose import KEEP_DEFAULT_WITHIN

    best = min(row.candidates_us.values())
    if row.chosen == row.default and row.default_us is not None:
        return row.default_us <= best * (1 + KEEP_DEFAULT_WITHIN)
    return abs(row.chosen_us - best) <= 1e-9 * best
