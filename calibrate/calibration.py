"""``python -m calibrate calibrate``: measure Sc/Sm/Rc/Rm per node type and Xc/Xm, and emit a profile document.

Plan (Banikazemi, Sampathkumar, Prabhu, Panda, Sadayappan, "Communication Modeling of Heterogeneous Networks of
Workstations for Performance Characterization of Collective Operations", section 2): for every message size,
ping-pong over each measured pair (two ranks of one type where a type has two or more ranks, and one rank of each
pair of types), then for every type its send overhead
(consecutive sends) and its receive overhead (receive posted after the message surely arrived). Then, on rank 0:

* ``S_t(m)`` and ``R_t(m)`` are fitted per type (median per size, least squares, 95 % CIs);
* the wire time of every pair is what the ping-pong leaves over, ``X = T_ptp - S - R`` (both directions
  averaged), fitted for all pairs together; a pair whose own line differs beyond the confidence intervals (and by
  more than 5 %) gets a ``links`` entry;
* each pair's residual (measured ping-pong vs ``S + X + R`` from the fitted parameters) is the check of the
  model's additivity (Table 2's point);
* a protocol switch (eager -> rendezvous) is detected on the ping-pong times; the profile's numbers come from the
  regime that holds at most of the calibrated sizes (``--regime`` to choose), the other regime's fits go into
  ``provenance``.

On real MPI with the C kernels, ranks on one host are calibrated in interleaved rounds with piecewise regimes
(:mod:`calibrate.sharedmemory`, fitted by :mod:`calibrate.shmprofile`); ranks on several hosts in the network mode
(:mod:`calibrate.network`, fitted by :mod:`calibrate.netprofile`: links per pair of host groups in both directions,
token-bucket burst, refill gaps), after the hosts (:mod:`calibrate.host_probes`: each host's NIC from concurrent flows,
host groups by NIC with ``--layout auto``, and per node type the shared memory of two ranks of one host: the
profile's ``hosts``, ``hnowmodel.profile/3``). The steps and their modules: docs/architecture.md, "The calibration,
by step".

The testbed's parameters are never read: only its layout (which type each rank is) is used, as a user would
know which nodes are which. ``--layout auto`` finds types by host name and by clustering per-rank overheads.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any

import numpy as np

from hnowmodel.errors import InputError
from hnowmodel.layout import parse_layout
from hnowmodel.options import parse_assignments
from hnowmodel.sizes import parse_sizes

from .host_probes import (
    cpu_split,
    host_pair_costs,
    measure_cpus,
    measure_nics,
    measure_shm,
    nic_auto_layout,
    nic_by_type,
    shm_pairs,
)
from .info import version_text
from .netprofile import fit_network_profile
from .network import NetworkRun, net_grid, plan_network, run_network, three_host_fanout
from .pairkernels import PairKernels
from .paper_experiments import Sampling, measure
from .paperfit import fit_paper_profile
from .profiledoc import add_cores
from .protocol import (
    CPU_PROBE_BYTES,
    DEFAULT_GAP_US,
    NET_BUDGET_QUICK_US,
    NET_BUDGET_US,
    NET_GAP_MIN_US,
    NET_ROUNDS,
    QUICK_REPS,
    SHM_ROUNDS,
)
from .reducecost import attach as attach_reduce_cost
from .reducecost import measure as measure_reduce_cost
from .runtime import node_name
from .selfcheck import native_rows, net_self_check, reference_rows, self_check
from .sharedmemory import SharedMemoryRun, default_sizes
from .sharedmemory import run as run_shared_memory
from .shmprofile import fit_profile
from .stats import median_ci

__all__ = ["HELP", "add_arguments", "prepare", "main", "DEFAULT_SIZES", "parse_network_spec", "auto_layout"]

HELP = "measure the per-type send/receive overheads and the network, and emit a hnowmodel.profile/1 document"

DEFAULT_SIZES = {"plain": "0,256,1K,4K,16K,64K,256K,1M", "emulated": "0,1K,2K,4K,8K"}
QUICK_SIZES = {"plain": "0,1K,16K,256K", "emulated": "0,2K,8K"}
# Letters of a layout like FFSS when no type names are known yet (plain MPI): the usual names.
LETTER_NAMES = {"F": "fast", "S": "slow", "M": "medium"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--testbed", default=None, help="emulated testbed: 'paper' or a JSON file (default: plain MPI)")
    p.add_argument("--layout", default=None, help="node type of each rank (FFSS, fast,slow,…) or 'auto'")
    p.add_argument("--sizes", default=None, help="message sizes in bytes (default depends on plain/emulated)")
    p.add_argument(
        "--network",
        default=None,
        help="take X from the network's configuration: bandwidth_MBps=…,latency_us=… (or Xc_us=…,Xm_us_per_byte=…)",
    )
    p.add_argument(
        "--regime",
        default="auto",
        choices=("auto", "below", "above"),
        help="with a protocol switch: which side's fit goes into the profile (default: most sizes)",
    )
    p.add_argument("--precision", type=float, default=0.025, help="stop when the 95%% CI of the median is within this")
    p.add_argument(
        "--budget", type=float, default=None, help="seconds per experiment and size (default 1.5, quick 0.5)"
    )
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (tests, demos)")
    p.add_argument(
        "--kernels",
        default="auto",
        choices=("auto", "c", "python"),
        help="plain MPI: time with the C kernels (auto: when a compiler is found) or the Python ones",
    )
    p.add_argument("--rounds", type=int, default=None, help="C kernels: interleaved rounds (default 7, quick 3)")
    p.add_argument("--gap-us", type=float, default=None, help="C kernels: idle gap between isolated messages (µs)")
    p.add_argument("--native-ops", default="", help="also time these native collectives in every round")
    p.add_argument("--native-sizes", default="8,4K,64K,1M", help="sizes of the interleaved native collectives")
    p.add_argument("--steps", default=None, help="folder of the finished steps: saved there, reused by a rerun")
    p.add_argument("--steps-context", default=None, help="what the launch adds to the steps' dependencies (packed)")


def parse_network_spec(text: str) -> tuple[float, float]:
    """``bandwidth_MBps=12.5,latency_us=16`` or ``Xc_us=16,Xm_us_per_byte=0.08`` -> (Xc_us, Xm_us_per_byte).

    >>> parse_network_spec("bandwidth_MBps=12.5,latency_us=16")
    (16.0, 0.08)
    """
    kv = parse_assignments(text, "--network", float, "key=number")
    if set(kv) == {"bandwidth_MBps", "latency_us"}:
        if kv["bandwidth_MBps"] <= 0 or kv["latency_us"] < 0:
            raise InputError("--network: bandwidth_MBps must be > 0 and latency_us >= 0")
        return kv["latency_us"], 1.0 / kv["bandwidth_MBps"]  # 1 MB/s = 1 byte/µs
    if set(kv) == {"Xc_us", "Xm_us_per_byte"}:
        if kv["Xc_us"] < 0 or kv["Xm_us_per_byte"] < 0:
            raise InputError("--network: Xc_us and Xm_us_per_byte must be >= 0")
        return kv["Xc_us"], kv["Xm_us_per_byte"]
    raise InputError(f"--network {text!r}: give bandwidth_MBps=…,latency_us=… or Xc_us=…,Xm_us_per_byte=…")


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    testbed = None
    if args.testbed:
        from .testbed_transport import load_testbed

        testbed = load_testbed(args.testbed)
    mode = "emulated" if testbed else "plain"
    sizes = sorted(set(parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)[mode])))
    if len(sizes) < 2:
        raise InputError("--sizes: the fits need at least two different sizes")
    layout = None
    if args.layout and args.layout != "auto":
        if testbed is not None:
            layout = parse_layout(args.layout, list(testbed.types))
        elif "," in args.layout or "*" in args.layout or args.layout.startswith("@"):
            layout = parse_layout(args.layout, _names_in(args.layout))
        else:
            letters = sorted(set(args.layout.upper()))
            layout = parse_layout(args.layout, [LETTER_NAMES.get(c, c) for c in letters])
    network = parse_network_spec(args.network) if args.network else None
    native_ops = [o for o in args.native_ops.split(",") if o.strip()]
    if native_ops:
        from hnowmodel.options import check_ops

        from .nativeexec import native_env

        native_ops = check_ops(",".join(native_ops), "--native-ops")
        for k, v in native_env(None, native_ops).items():  # read by the library in MPI_Init: set it now
            os.environ.setdefault(k, v)
    if args.rounds is not None and args.rounds < 1:
        raise InputError(f"--rounds must be >= 1, got {args.rounds}")
    if args.gap_us is not None and not (math.isfinite(args.gap_us) and 0 <= args.gap_us <= 1e6):
        raise InputError(f"--gap-us must be a number of µs in 0..1e6, got {args.gap_us}")
    return {
        "testbed": testbed,
        "sizes": sizes if args.sizes else None,
        "default_sizes": sizes,
        "layout": layout,
        "network": network,
        "mode": mode,
        "native_ops": native_ops,
        "native_sizes": parse_sizes(args.native_sizes, "--native-sizes"),
    }


def _names_in(spec: str) -> list[str]:
    if spec.startswith("@"):
        from hnowmodel.io import read_json

        doc = read_json(spec[1:], "layout file")
        items = doc if isinstance(doc, list) else doc.get("ranks", []) if isinstance(doc, dict) else []
        return sorted({str(t) for t in items})
    return sorted({item.partition("*")[0].strip() for item in spec.split(",") if item.strip()})


# ---- on all ranks -----------------------------------------------------------------------------------------------
def auto_layout(tr: Any, rt: Any, hosts: list[str], emulated: bool = False) -> tuple[str, ...]:
    """Types from measured send overheads (and host names): each rank's send overhead at 1 KiB is measured; sorted,
    a new type starts where the next rank is more than 25 % slower than the first of the current group and the
    gap exceeds both medians' confidence intervals. Ranks on one host never differ by hardware, so a host's
    ranks share the type of its fastest rank (not on an emulated testbed, whose ranks share one host but each
    behave as their own type). Names: ``node`` for one type, ``fast``/``slow`` for two, else
    ``type1``… (fastest first)."""
    n = tr.size
    overhead, ci = [], []
    for r in range(n):
        peer = 1 if r == 0 else 0
        s = measure(tr, "sends", r, peer, 1024, Sampling(min_samples=8, max_samples=60, budget_s=0.5))
        med, lo, hi = tr.comm.bcast((float(np.median(s)), *median_ci(s)) if s else None, root=r)
        overhead.append(med)
        ci.append(hi - lo)
    per_host: dict[str, float] = {}
    for r in range(n):
        per_host[hosts[r]] = min(per_host.get(hosts[r], math.inf), overhead[r])
    value = list(overhead) if emulated else [per_host[hosts[r]] for r in range(n)]
    order = sorted(range(n), key=lambda r: value[r])
    groups: list[list[int]] = []
    for r in order:
        if groups:
            first = groups[-1][0]
            gap = value[r] - value[first]
            if gap <= 0.25 * value[first] or gap <= ci[r] + ci[first]:
                groups[-1].append(r)
                continue
        groups.append([r])
    names = (
        ["fast", "slow"]
        if len(groups) == 2
        else ["node"]
        if len(groups) == 1
        else [f"type{i + 1}" for i in range(len(groups))]
    )
    layout = [""] * n
    for name, g in zip(names, groups, strict=True):
        for r in g:
            layout[r] = name
    rt.progress(
        f"auto layout: {','.join(layout)} (hosts: {len(set(hosts))}, send overhead at 1 KiB: "
        + ", ".join(f"{o:.1f}" for o in overhead)
        + " µs)"
    )
    return tuple(layout)


def _plan(layout: tuple[str, ...]) -> tuple[list[tuple[int, int]], dict[str, tuple[int, int]]]:
    """Ping-pong pairs, and for every type (its measured rank, a partner)."""
    by_type: dict[str, list[int]] = {}
    for r, t in enumerate(layout):
        by_type.setdefault(t, []).append(r)
    pairs = [(rs[0], rs[1]) for rs in by_type.values() if len(rs) >= 2]
    types = list(by_type)
    pairs += [(by_type[a][0], by_type[b][0]) for i, a in enumerate(types) for b in types[i + 1 :]]
    roles = {}
    for t, rs in by_type.items():
        partner = rs[1] if len(rs) >= 2 else next(r for r in range(len(layout)) if r != rs[0])
        roles[t] = (rs[0], partner)
    return pairs, roles


def main(args: argparse.Namespace, rt: Any, prepared: dict[str, Any]) -> dict[str, Any] | None:
    """Calibrate (every rank): the network mode on several hosts with the C kernels, the shared-memory rounds on
    one host with them, else the Python kernels (plain MPI or the emulated testbed). Rank 0 returns the profile."""
    from .testbed_transport import make_transport

    comm = rt.comm
    t_start = time.monotonic()
    if comm.Get_size() < 2:
        raise InputError("calibration needs at least 2 ranks (--np 2 or more)")
    testbed = prepared["testbed"]
    with rt.step("transport"):
        if testbed is not None and prepared["layout"] is not None:
            if len(prepared["layout"]) != comm.Get_size():
                raise InputError(f"--layout has {len(prepared['layout'])} ranks, the job has {comm.Get_size()}")
            testbed = testbed.with_ranks(prepared["layout"])
        tr = make_transport(comm, testbed)
    with rt.step("hosts"):
        hosts, cores = (list(x) for x in zip(*comm.allgather((node_name(), os.cpu_count())), strict=True))
    use_c = _use_c_kernels(args, rt, prepared)
    prepared["checkpoint"] = _checkpoint(args, rt, prepared, hosts, use_c)
    if use_c and len(set(hosts)) > 1:  # ranks on several hosts: the network mode (links, bursts, host groups)
        if prepared["layout"] is not None and len(prepared["layout"]) != tr.size:
            raise InputError(f"--layout has {len(prepared['layout'])} ranks, the job has {tr.size}")
        return add_cores(_calibrate_network(args, rt, prepared, hosts, t_start), cores)
    with rt.step("layout"):
        layout = prepared["layout"]
        if layout is None and testbed is not None and args.layout != "auto":
            layout = testbed.layout_for(tr.size)  # the user knows which node is which; never its parameters
        if layout is None:  # --layout auto (or nothing known): discover the groups by measuring
            auto = lambda: auto_layout(tr, rt, hosts, emulated=testbed is not None)  # noqa: E731
            layout = prepared["checkpoint"].step("layout", auto, share=True)
        if len(layout) != tr.size:
            raise InputError(f"--layout has {len(layout)} ranks, the job has {tr.size}")
    pairs, roles = _plan(tuple(layout))
    if use_c:
        return add_cores(_calibrate_c(args, rt, prepared, layout, hosts, pairs, roles, t_start), cores)
    return add_cores(_calibrate_python(args, rt, prepared, tr, layout, hosts, t_start), cores)


def _checkpoint(args: argparse.Namespace, rt: Any, prepared: dict[str, Any], hosts: list[str], use_c: bool) -> Any:
    """The finished steps of ``--steps`` (:mod:`calibrate.checkpoint`), keyed by what this run measures with."""
    from mpi4py import MPI

    from .checkpoint import Checkpoint, depends_on

    lines = version_text(MPI).splitlines()
    key = depends_on(args, hosts, prepared["testbed"], lines[0].strip() if lines else "unknown")
    key["options"]["kernels_used"] = "C" if use_c else "Python"
    return Checkpoint(rt, args.steps, key)


def _use_c_kernels(args: argparse.Namespace, rt: Any, prepared: dict[str, Any]) -> bool:
    """Whether the C kernels time this plain-MPI calibration (every rank can load them, ``--kernels`` allows);
    why not goes to ``prepared["kernel_note"]``."""
    if prepared["mode"] != "plain" or prepared["network"] is not None or args.kernels == "python":
        return False
    from .ckernels import available

    ok, why = available()
    oks = rt.comm.allgather((ok, why))
    bad = next((w for good, w in oks if not good), None)
    if bad is None:
        return True
    if args.kernels == "c":
        raise InputError(f"--kernels c: the C kernels cannot be used here ({bad})")
    rt.progress(f"C kernels unavailable ({bad}): timing with the Python kernels (less accurate on real MPI)")
    prepared["kernel_note"] = f"Python kernels: the C kernels could not be used ({bad})"
    return False


def _sampling(args: argparse.Namespace, prepared: dict[str, Any]) -> Sampling:
    """When the Python kernels stop sampling one size."""
    quick = args.quick
    if prepared["mode"] == "plain":  # µs-scale samples: cheap, and noisy on a shared machine, so take many
        return Sampling(
            rel=args.precision,
            budget_s=args.budget or (0.3 if quick else 1.0),
            min_samples=20,
            max_samples=200 if quick else 600,
            batch=10,
            warmup=10,
        )
    return Sampling(
        rel=args.precision,
        budget_s=args.budget or (0.5 if quick else 1.5),
        min_samples=4 if quick else 6,
        max_samples=20 if quick else 40,
    )


def _calibrate_python(args, rt, prepared, tr, layout, hosts, t_start) -> dict[str, Any] | None:
    """The Python kernels (plain MPI or the emulated testbed), size by size: ping-pong of every pair, then every
    type's send and receive overheads; the fit of :mod:`calibrate.paperfit` on rank 0."""
    from mpi4py import MPI

    comm = rt.comm
    pairs, roles = _plan(tuple(layout))
    sizes = prepared["sizes"] or prepared["default_sizes"]
    sampling = _sampling(args, prepared)
    records: list[dict[str, Any]] = []

    def run(name: str, a: int, b: int, m: int, **kw: Any) -> float:
        with rt.step(f"{name} {a}->{b} {m} B"):
            samples = measure(tr, name, a, b, m, sampling, **kw)
        if samples is not None:
            records.append({"experiment": name, "a": a, "b": b, "size": m, "samples_us": samples})
        who = a if name != "recv" else b
        return float(comm.bcast(float(np.median(samples)) if samples else None, root=who))

    def one_size(i: int, m: int) -> list[list[dict[str, Any]]] | None:
        """Every rank's records of size ``m`` (on rank 0): one finished step."""
        rt.progress(
            f"size {m} B ({i + 1}/{len(sizes)}): ping-pong {len(pairs)} pair(s), overheads of {len(roles)} type(s)"
        )
        records.clear()
        pp = [run("pingpong", a, b, m) for a, b in pairs]
        settle = 3 * max(pp) + 100.0
        for _, (r, partner) in roles.items():
            run("sends", r, partner, m)
            run("recv", partner, r, m, settle_us=settle)
        return comm.gather(list(records), root=0)

    per_size = [prepared["checkpoint"].step(f"size-{m}", lambda i=i, m=m: one_size(i, m)) for i, m in enumerate(sizes)]
    with rt.step("collect"):
        tr.finish()
    if rt.rank != 0:
        return None
    with rt.step("fit"):  # rank by rank, size by size: the order of the records as measured
        recs = [r for rank in range(comm.Get_size()) for part in per_size for r in part[rank]]
        doc = fit_paper_profile(recs, layout, hosts, pairs, roles, sizes, prepared, args)
    doc["provenance"]["mpi_library"] = version_text(MPI).splitlines()[0].strip()
    doc["provenance"]["kernels"] = (
        {"kind": "Python", "why": prepared.get("kernel_note", "asked for (--kernels)")}
        if prepared["mode"] == "plain"
        else {"kind": "Python (emulated testbed transport)"}
    )
    doc["provenance"]["wall_s"] = round(time.monotonic() - t_start, 2)
    return doc


def _pinning() -> dict[str, Any]:
    """How the running library's own collectives were pinned (:func:`calibrate.nativeexec.native_pinning`)."""
    from hnowmodel.ops import tree_names

    from .nativeexec import library_info, native_pinning

    return native_pinning(library_info()["library"], tree_names())  # the natives a calibration interleaves


def _transport(hosts: list[str]) -> str:
    """What carries the messages: shared memory on one host, else the network (and the settings that choose it)."""
    n = len(set(hosts))
    if n == 1:
        return "shared memory (all ranks on one host)"
    env = {
        k: os.environ[k]
        for k in (
            "UCX_TLS",
            "UCX_NET_DEVICES",
            "MPIR_CVAR_CH4_NETMOD",
            "FI_PROVIDER",
            "MPIR_CVAR_CH4_PROGRESS_THROTTLE",
            "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT",
        )
        if k in os.environ
    }
    return f"network between {n} hosts" + (f" ({', '.join(f'{k}={v}' for k, v in env.items())})" if env else "")


def _calibrate_c(args, rt, prepared, layout, hosts, pairs, roles, t_start) -> dict[str, Any] | None:
    """Plain MPI on one host with the C kernels, in interleaved rounds (:mod:`calibrate.sharedmemory`; the fit:
    :mod:`calibrate.shmprofile`)."""
    from hnowmodel.params import Profile

    from .ckernels import Kernels

    comm = rt.comm
    with rt.step("C kernels"):
        k = Kernels(comm)
    sizes = sorted({0, *(prepared["sizes"] or default_sizes(args.quick))})
    rounds = args.rounds or (SHM_ROUNDS[0] if args.quick else SHM_ROUNDS[1])
    gap = DEFAULT_GAP_US if args.gap_us is None else args.gap_us
    plan = SharedMemoryRun(
        pairs, roles, sizes, rounds, gap, args.quick, prepared["native_ops"], prepared["native_sizes"]
    )
    cp = prepared["checkpoint"]
    raw = cp.step("shared-memory", lambda: run_shared_memory(k, comm, rt, plan))
    gamma = cp.step("reduce-cost", lambda: measure_reduce_cost(k, comm, rt, layout, args.quick))  # γ per node type
    if rt.rank != 0:
        return None
    with rt.step("fit"):
        doc = fit_profile(raw, layout, hosts, pairs, roles)
        attach_reduce_cost(doc, gamma)
        prof = Profile.from_dict(doc, where="fitted profile")
        prov = doc["provenance"]
        prov["self_check"] = self_check(doc, raw, pairs, layout, prof)
        prov["reference_pingpong"] = reference_rows(raw, pairs, layout, prof)
        _describe_run(prov, {"kind": "C", **k.info()}, hosts, "plain")
        prov["wall_s"] = round(time.monotonic() - t_start, 2)
        _interleaved_natives(doc, raw, gap, rounds, prepared)
    return doc


def _describe_run(prov: dict[str, Any], kernels: dict[str, Any], hosts: list[str], mode: str) -> None:
    """The provenance's kernels, MPI library, transport and mode (in place)."""
    from mpi4py import MPI

    prov["kernels"] = kernels
    lib = version_text(MPI)
    prov["mpi_library"] = lib.splitlines()[0].strip() if lib else "unknown"
    prov["transport"] = _transport(hosts)
    prov["mode"] = mode


def _interleaved_natives(doc: dict[str, Any], raw: dict[str, Any], gap: float, rounds: int, prepared: dict) -> None:
    """The native collectives measured in the rounds, when any (the document's ``interleaved_native``)."""
    natives = native_rows(raw)
    if natives:
        doc["interleaved_native"] = {
            "rows": natives,
            "gap_us": gap,
            "rounds": rounds,
            "pinning": {o: "binomial" for o in prepared["native_ops"]},
            "native": _pinning(),
        }


def _network_plan(args, rt, prepared, pk, hosts) -> tuple[tuple[str, ...], dict[str, Any], NetworkRun]:
    """The layout (given, or grouped by the hosts' measured NICs), what the hosts' calibration measured (pairwise
    links, NICs: :mod:`calibrate.host_probes`), and the network run."""
    budget = NET_BUDGET_QUICK_US if args.quick else NET_BUDGET_US
    gap_min = NET_GAP_MIN_US if args.gap_us is None else max(args.gap_us, 0.0)
    cp = prepared["checkpoint"]
    reps = QUICK_REPS if args.quick else 5
    pc = cp.step(
        "host-pairs",
        lambda: host_pair_costs(pk, rt, hosts, budget_us=budget, gap_min_us=gap_min, reps=reps),
        share=True,
    )
    layout = prepared["layout"]
    # the NICs group hosts (--layout auto) and enter the profile where ranks share a host: otherwise not measured
    shared = len(set(hosts)) < len(hosts)
    nics = {}
    if layout is None or shared:
        nics = cp.step(
            "nics", lambda: measure_nics(pk, rt, hosts, pc, quick=args.quick, gap_min_us=gap_min), share=True
        )
    auto_info = None
    if layout is None:
        layout, auto_info = nic_auto_layout(pc, nics, hosts)
        cpus = cp.step("cpus", lambda: measure_cpus(pk, rt, hosts, layout), share=True)
        layout, auto_info["cpu"] = cpu_split(layout, hosts, cpus)
        rt.progress(
            f"hosts: CPU (memcpy of {CPU_PROBE_BYTES >> 10} KiB in cache) "
            + ", ".join(f"{h} {v['copy_us']:.2f} µs" for h, v in cpus.items())
        )
        rt.progress(
            "auto layout: "
            + ", ".join(f"{h} {t}" for h, t in dict(zip(hosts, layout, strict=True)).items())
            + (" (grouped by NIC, then CPU)" if auto_info["cpu"]["groups"] else " (grouped by NIC)")
        )
    layout = tuple(layout)
    pairs, roles = plan_network(layout, hosts)
    names, cost = pc["hosts"], pc["cost"]
    slopes = {  # the links measured between the hosts also set each pair's sizes and gaps
        (a, b): float(cost[names.index(hosts[a])][names.index(hosts[b])])
        for a in range(len(hosts))
        for b in range(len(hosts))
        if hosts[a] != hosts[b]
    }
    sizes = sorted({0, *(prepared["sizes"] or net_grid(args.quick))})
    rounds = args.rounds or (NET_ROUNDS[0] if args.quick else NET_ROUNDS[1])
    plan = NetworkRun(
        pairs, roles, sizes, rounds, gap_min, args.quick, budget, slopes,
        prepared["native_ops"], prepared["native_sizes"], three_host_fanout(hosts, slopes),
    )  # fmt: skip
    return layout, {"auto": auto_info, "nics": nics}, plan


def _hosts_terms(args, rt, pk, layout, hosts, measured) -> tuple[dict[str, Any], dict[str, Any]]:
    """The profile's ``hosts`` section (``shm`` per node type with a host of two ranks or more, ``nic`` per node
    type) and its provenance, on every rank."""
    pairs = shm_pairs(layout, hosts)
    rounds = args.rounds or SHM_ROUNDS[0]
    run = lambda: measure_shm(pk, rt, pairs, quick=args.quick, rounds=rounds, gap_us=DEFAULT_GAP_US)  # noqa: E731
    shm = measured["checkpoint"].step("host-shared-memory", run, share=True)
    section: dict[str, Any] = {}
    if shm:
        section["shm"] = {t: v["shm"] for t, v in shm.items()}
    # the NICs enter the profile where ranks share a host; with one rank per host the links' own per-byte costs
    # describe each rank's path as before (a NIC in the profile moved the fitted queued bytes of the 6-host demo
    # from 4321 B to 12816 B and its sequential trees from 3 % to 35 % off)
    nic = nic_by_type(measured["nics"], layout, hosts) if len(set(hosts)) < len(hosts) else {}
    if nic:
        section["nic"] = nic
    prov = {
        "method": "shm: the shared-memory calibration (calibrate.sharedmemory) of two ranks of one host per node "
        "type, the other ranks asleep; nic: concurrent flows per host (calibrate.host_probes), per type the median "
        "of its hosts, payload bytes/µs",
        "shm_ranks": {t: v["ranks"] for t, v in shm.items()},
        "shm_warnings": {t: v["warnings"] for t, v in shm.items() if v["warnings"]},
        "nic_per_host": measured["nics"],
    }
    return section, prov


def _calibrate_network(args, rt, prepared, hosts, t_start) -> dict[str, Any] | None:
    """Ranks on several hosts, C kernels (:func:`calibrate.network.run_network`): the host groups are discovered
    from the links when no layout is given, every pair of groups gets its own link (both directions), the token
    buckets' burst is fitted, and the idle gaps let the buckets refill (the fit: :mod:`calibrate.netprofile`)."""
    with rt.step("C kernels"):
        pk = PairKernels(rt.comm)
    layout, measured, plan = _network_plan(args, rt, prepared, pk, hosts)
    auto_info = measured["auto"]
    cp = measured["checkpoint"] = prepared["checkpoint"]
    hosts_section, hosts_prov = _hosts_terms(args, rt, pk, layout, hosts, measured)
    raw = cp.step("network", lambda: run_network(pk, rt, plan))
    gamma = cp.step("reduce-cost", lambda: measure_reduce_cost(pk.world, rt.comm, rt, layout, args.quick))  # γ
    pk.free()
    if rt.rank != 0:
        return None
    with rt.step("fit"):
        doc = fit_network_profile(raw, layout, hosts, plan.pairs, plan.roles, hosts_section)
        attach_reduce_cost(doc, gamma)
        prov = doc["provenance"]
        prov["self_check"] = net_self_check(doc, raw, plan.pairs, layout)
        prov["reference_pingpong"] = []
        prov["reference_note"] = "no plain ping-pong reference on the network (it is for shared memory)"
        _describe_run(prov, {"kind": "C", **pk.world.info()}, hosts, "network")
        prov["layout"] = {"given": prepared["layout"] is not None, **({"auto": auto_info} if auto_info else {})}
        if hosts_section:
            prov["hosts"] = hosts_prov
        prov["wall_s"] = round(time.monotonic() - t_start, 2)
        _interleaved_natives(doc, raw, raw["native_lead_us"], plan.rounds, prepared)
    return doc
