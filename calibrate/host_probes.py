"""The calibration of hosts (``hnowmodel.profile/3``'s ``hosts`` terms): what ranks of one host and a host's NIC
cost, on several hosts with the C kernels.

* :func:`host_pair_costs` - the one-way per-byte cost of every ordered pair of hosts (their first ranks;
  :func:`calibrate.network.probe_slope`);
* :func:`measure_nics` - each host's NIC capacity from concurrent flows:
  **egress**, a fan-out from EVERY rank of the host (:func:`egress_plan`, :meth:`calibrate.ckernels.Kernels.
  flow_list`): one flow from each of its ranks to each rank of every other host but one (each pair a connection of
  its own), then (posted last) one flow from its first rank to a *probe* rank on the host it reaches fastest, all
  with one common start; the flows share the host's NIC per connection, so the probe's message arrives after
  ``k·m / egress`` when its share ``egress / k`` is below its own receiving rate (a fast NIC is seen even when every
  other host is slower: one receiver alone cannot fill it, several flows can, their bytes queueing before the slow
  links; with several ranks on the host, k grows with its ranks times the receivers). **ingress**
  (:meth:`calibrate.ckernels.Kernels.flows`), a fan-in to the host's first rank from the first rank of every other
  host, each sending bytes in proportion to its own rate into the host, so that all would finish together if the
  host's NIC did not hold them back: the last arrival is then ``Σ m / ingress`` (more ranks of a sending host add
  nothing: its own NIC limits them). A measurement that did not hold the flows
  back is a lower bound (``seen`` false); the pairwise rates are lower bounds too;
* :func:`nic_auto_layout` - ``--layout auto`` on several hosts: hosts grouped by their NICs;
* :func:`measure_cpus`, :func:`cpu_split` - then each NIC group split by the hosts' CPUs (``memcpy`` of
  :data:`~calibrate.protocol.CPU_PROBE_BYTES` within the caches, back to back, timed on each host's first rank
  alone);
* :func:`nic_by_type` - one NIC per node type (the median of its hosts'; a direction no flow could fill is taken
  equal to the other direction when that one was seen and is larger: NICs are full duplex, the same both ways);
* :func:`shm_pairs`, :func:`measure_shm` - per node type with a host of at least two ranks, the shared-memory
  calibration of one machine (:mod:`calibrate.sharedmemory`, fitted by :mod:`calibrate.shmprofile`) run by two
  ranks of one host on their own communicator while every other rank sleeps: ``hosts.shm``'s S, R, X regimes.

Every quantity is in µs and bytes; NIC capacities are payload bytes/µs (a ``tc`` rate of ``R`` Mbit/s moves
``R / 8 / FRAMING`` payload bytes/µs, :data:`hnowmodel.units.FRAMING`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .pairkernels import PairKernels, group_call
from .protocol import CPU_PROBE_BYTES, CPU_PROBE_COPIES, CPU_TOLERANCE, GROUP_TOLERANCE, QUICK_REPS, refill_gap_us
from .stats import median_ci

__all__ = [
    "NIC_FLOWS_PER_HOST",
    "NIC_SIZE",
    "SATURATED",
    "egress_plan",
    "host_pair_costs",
    "measure_nics",
    "nic_by_type",
    "nic_auto_layout",
    "measure_cpus",
    "cpu_split",
    "shm_pairs",
    "measure_shm",
    "shm_entry",
]

#: Bytes of the largest flow of a NIC measurement: large against the token bucket's burst (8 KiB on the virtual
#: cluster) and within TCP's initial window (256 segments there), so a flow is never held back by its own acks.
NIC_SIZE = 262144
#: A fan-out's probe whose share of the sender's NIC (estimate / flows) is below this fraction of its own rate
#: alone was held back by the NIC (the estimate is the NIC's capacity); otherwise the estimate is only a lower
#: bound. Likewise a fan-in whose bytes arrived at less than this fraction of the senders' summed rates.
SATURATED = 0.95
#: At most this many flows of an egress fan-out go into one receiving host: their bytes queue before its link (the
#: virtual cluster's tbf holds 4 MB; four 256 KiB flows are 1 MiB of it).
NIC_FLOWS_PER_HOST = 4
#: The fan-in's fraction: the senders' own rates come from single-flow probes, less exact than the fan-out's.
SATURATED_IN = 0.9
#: Time one pairwise probe message may take (µs): 256 KiB (:data:`NIC_SIZE`, the largest probed) fits it down to
#: ~20 Mbit/s, so the two probe sizes (:func:`calibrate.network.probe_slope`, 64 and 256 KiB) both go by the same
#: protocol (rendezvous; a 16 KiB one went eagerly and made a 60 Mbit/s link look like 94).
PAIR_BUDGET_US = 400_000.0


def host_pair_costs(
    pk: PairKernels, rt: Any, hosts: Sequence[str], *, budget_us: float, gap_min_us: float, reps: int = 5
) -> dict[str, Any]:
    """One-way per-byte cost (µs/byte) of every ordered pair of hosts, between their first ranks: ``{"hosts":
    names, "cost": n×n (nan on the diagonal), "half": the CIs' half-widths}``, on every rank. Probed up to
    :data:`PAIR_BUDGET_US` per message (or ``budget_us`` when larger), ``reps`` messages of each of two sizes."""
    from .network import probe_slope

    first: dict[str, int] = {}
    for r, h in enumerate(hosts):
        first.setdefault(h, r)
    names = list(first)
    n = len(names)
    cost = np.full((n, n), np.nan)
    half = np.full((n, n), np.nan)
    budget = max(budget_us, PAIR_BUDGET_US)
    rt.progress(f"hosts: measuring the links between {n} hosts ({n * (n - 1)} directed pairs)")
    with rt.step("host pairs"):
        for i in range(n):
            for j in range(n):
                if i != j:
                    a, b = first[names[i]], first[names[j]]
                    p = probe_slope(pk, a, b, budget_us=budget, gap_min_us=gap_min_us, reps=reps, max_bytes=NIC_SIZE)
                    cost[i, j] = max(p["k_us_per_byte"], 1e-6)
                    half[i, j] = max(p["ci_high"] - p["k_us_per_byte"], p["k_us_per_byte"] - p["ci_low"], 0.0)
    return {"hosts": names, "cost": cost, "half": half}


def _arrivals(sub: Any, direction: str, sizes: Sequence[int], reps: int, idle_us: float) -> list[list[float]] | None:
    """Every rank's finish in every repetition after that repetition's common start (µs), on ``sub``'s rank 0."""
    from .ckernels import Kernels

    k = Kernels(sub)
    start, finish = k.flows(direction, 0, list(sizes), reps, lead_us=3000.0, idle_us=idle_us)
    starts, finishes = sub.gather(start, root=0), sub.gather(finish, root=0)
    if sub.Get_rank() != 0:
        return None
    s0 = np.min(np.array(starts), axis=0)
    return [(np.asarray(f) - s0).tolist() for f in finishes]


def _rate(nbytes: float, times_us: Sequence[float]) -> float:
    """``nbytes`` over the repetitions' times (bytes/µs): the upper quartile of the per-repetition rates (a rank
    that lost its core only ever makes a repetition slower, on two cores shared by six ranks often).

    >>> _rate(100.0, [10.0, 10.0, 20.0, 10.0, 50.0])
    10.0
    """
    return float(np.percentile(nbytes / np.asarray(times_us, dtype=float), 75))


def egress_plan(hosts: Sequence[str], h: str, probe_host: str, per_host: int | None = None) -> list[tuple[int, int]]:
    """The flows ``(src, dst)`` (world ranks) of host ``h``'s egress fan-out, in the order they are posted: from
    EVERY rank of ``h`` to the ranks of every other host but ``probe_host`` (hosts in order of first appearance; at
    most ``per_host`` flows into one host, default :data:`NIC_FLOWS_PER_HOST`, taken so that the first ones have
    distinct senders and receivers), then the probe flow, ``h``'s first rank to ``probe_host``'s first rank, last.
    Each ``(src, dst)`` pair is a connection of its own and a NIC shares its bytes per connection, so the flows grow
    with ``h``'s ranks times the receivers': a fast host whose partners are all slower is filled.

    >>> egress_plan(["f1", "f1", "s1", "m1", "m1", "m1"], "f1", "m1")
    [(0, 2), (1, 2), (0, 3)]
    >>> egress_plan(["f", "f", "s", "s", "m", "m"], "f", "m")
    [(0, 2), (1, 3), (0, 3), (1, 2), (0, 4)]
    >>> egress_plan(["a", "b", "c", "d"], "a", "c")  # one rank per host: one flow to each other host
    [(0, 1), (0, 3), (0, 2)]
    """
    cap = NIC_FLOWS_PER_HOST if per_host is None else per_host
    ranks: dict[str, list[int]] = {}
    for r, x in enumerate(hosts):
        ranks.setdefault(x, []).append(r)
    senders = ranks[h]
    plan: list[tuple[int, int]] = []
    for x, receivers in ranks.items():
        if x in (h, probe_host):
            continue
        pairs = [(i, j) for i in range(len(senders)) for j in range(len(receivers))]
        # diagonals first: (0, 0), (1, 1), ... then (0, 1), (1, 2), ...: distinct senders and receivers come first
        pairs.sort(key=lambda ij: ((ij[1] - ij[0]) % len(receivers), ij[0]))
        plan += [(senders[i], receivers[j]) for i, j in pairs[:cap]]
    return [*plan, (senders[0], ranks[probe_host][0])]


def _flow_arrivals(
    sub: Any, flows: Sequence[tuple[int, int, int]], reps: int, idle_us: float
) -> list[list[float]] | None:
    """:meth:`calibrate.ckernels.Kernels.flow_list` on ``sub``: every rank's finish in every repetition after that
    repetition's common start (µs), on ``sub``'s rank 0."""
    from .ckernels import Kernels

    start, finish = Kernels(sub).flow_list(flows, reps, lead_us=3000.0, idle_us=idle_us)
    starts, finishes = sub.gather(start, root=0), sub.gather(finish, root=0)
    if sub.Get_rank() != 0:
        return None
    s0 = np.min(np.array(starts), axis=0)
    return [(np.asarray(f) - s0).tolist() for f in finishes]


def _slowest_bucket(pc: dict[str, Any], flows: Sequence[tuple[str, str, int]]) -> tuple[float, int]:
    """``(per-byte cost µs/byte, bytes)`` of the NIC these flows ``(from host, to host, bytes)`` drain longest: each
    host's bytes out at the per-byte cost of its fastest pair from it, bytes in at its fastest pair's into it (a
    pair's cost bounds each of its NICs' from above) - what the idle gap after the flows must let refill
    (:func:`calibrate.protocol.refill_gap_us`).

    >>> pc = {"hosts": ["f", "s"], "cost": np.array([[np.nan, 0.4], [0.4, np.nan]])}
    >>> _slowest_bucket(pc, [("f", "s", 100), ("f", "s", 100)])
    (0.4, 200)
    """
    names, cost = pc["hosts"], pc["cost"]
    out_cost, in_cost = np.nanmin(cost, axis=1), np.nanmin(cost, axis=0)
    sent: dict[str, int] = {}
    got: dict[str, int] = {}
    for a, b, m in flows:
        sent[a] = sent.get(a, 0) + m
        got[b] = got.get(b, 0) + m
    buckets = [(float(out_cost[names.index(h)]), m) for h, m in sent.items()]
    buckets += [(float(in_cost[names.index(h)]), m) for h, m in got.items()]
    return max(buckets, key=lambda km: km[0] * km[1])


def _egress(pk: PairKernels, hosts: Sequence[str], pc: dict[str, Any], h: str, reps: int, gap: float) -> dict:
    """Host ``h``'s egress from one fan-out of every rank of ``h`` (:func:`egress_plan`; the module docstring)."""
    names, cost = pc["hosts"], pc["cost"]
    i = names.index(h)
    probe_host = names[int(np.nanargmin(np.where(np.arange(len(names)) == i, np.nan, cost[i])))]
    # the probe's flow posted last: posted first, it starts before the others and takes more than its share (measured
    # on the virtual cluster, 160 Mbit/s host: +4 % posted first, +0.2..0.5 % posted last, docs/virtual-cluster.md)
    plan = egress_plan(hosts, h, probe_host)
    members = list(dict.fromkeys(r for pair in plan for r in pair))  # h's first rank first: it starts the flows
    k = len(plan)
    m = NIC_SIZE
    idle = refill_gap_us(*_slowest_bucket(pc, [(hosts[a], hosts[b], m) for a, b in plan]), gap)
    flows = [(members.index(a), members.index(b), m) for a, b in plan]
    arr = group_call(pk, members, lambda sub: _flow_arrivals(sub, flows, reps, idle))
    alone = m * float(cost[i, names.index(probe_host)])  # the probe's message by itself (µs)
    probe_arrival = arr[members.index(plan[-1][1])]
    est = _rate(k * m, probe_arrival)
    seen = k > 1 and est / k < SATURATED * m / alone
    return {
        "estimate_bytes_per_us": est,
        "seen": bool(seen),
        "probe": probe_host,
        "flows": k,
        "senders": len({a for a, _ in plan}),
        "plan": [list(pair) for pair in plan],
        "size_bytes": m,
        "probe_arrival_us": float(np.median(probe_arrival)),
        "probe_alone_us": alone,
    }


def _ingress(pk: PairKernels, hosts: Sequence[str], pc: dict[str, Any], h: str, reps: int, gap: float) -> dict:
    """Host ``h``'s ingress from one fan-in (see the module docstring)."""
    names, cost = pc["hosts"], pc["cost"]
    j = names.index(h)
    senders = [x for x in names if x != h]
    rate = {x: 1.0 / float(cost[names.index(x), j]) for x in senders}
    top = max(rate.values())
    sizes = {x: max(1024, int(NIC_SIZE * rate[x] / top)) for x in senders}
    members = [hosts.index(h), *(hosts.index(x) for x in senders)]
    idle = refill_gap_us(*_slowest_bucket(pc, [(x, h, sizes[x]) for x in senders]), gap)
    arr = group_call(pk, members, lambda sub: _arrivals(sub, "in", [0] + [sizes[x] for x in senders], reps, idle))
    total = sum(sizes.values())
    alone = max(sizes[x] / rate[x] for x in senders)
    est = _rate(total, arr[0])
    return {
        "estimate_bytes_per_us": est,
        "seen": bool(len(senders) > 1 and est < SATURATED_IN * sum(rate.values())),
        "senders": senders,
        "sizes_bytes": [sizes[x] for x in senders],
        "last_arrival_us": float(np.median(arr[0])),
        "flows_alone_us": alone,
    }


def measure_nics(
    pk: PairKernels, rt: Any, hosts: Sequence[str], pc: dict[str, Any], *, quick: bool, gap_min_us: float
) -> dict[str, dict[str, Any]]:
    """Each host's NIC (``{host: {"egress_bytes_per_us", "ingress_bytes_per_us", "egress_seen", "ingress_seen",
    "egress": what the fan-out measured, "ingress": the fan-in}}``, payload bytes/µs) on every rank. A direction
    not ``seen`` (no flow was held back by the NIC) is a lower bound: the larger of the flows' estimate and the
    host's fastest pairwise rate."""
    names, cost = pc["hosts"], pc["cost"]
    reps = QUICK_REPS if quick else 9
    out: dict[str, dict[str, Any]] = {}
    if len(names) < 2:
        return out
    with rt.step("NIC flows"):
        for i, h in enumerate(names):
            eg = _egress(pk, hosts, pc, h, reps, gap_min_us)
            ing = _ingress(pk, hosts, pc, h, reps, gap_min_us)
            pair_out = 1.0 / float(np.nanmin(np.where(np.eye(len(names), dtype=bool)[i], np.nan, cost[i])))
            pair_in = 1.0 / float(np.nanmin(np.where(np.eye(len(names), dtype=bool)[i], np.nan, cost[:, i])))
            out[h] = {  # a lower bound (not seen) is the larger of the two lower bounds
                "egress_bytes_per_us": eg["estimate_bytes_per_us"]
                if eg["seen"]
                else max(eg["estimate_bytes_per_us"], pair_out),
                "ingress_bytes_per_us": ing["estimate_bytes_per_us"]
                if ing["seen"]
                else max(ing["estimate_bytes_per_us"], pair_in),
                "egress_seen": eg["seen"],
                "ingress_seen": ing["seen"],
                "pairwise_out_bytes_per_us": pair_out,
                "pairwise_in_bytes_per_us": pair_in,
                "egress": eg,
                "ingress": ing,
            }
            rt.progress(
                f"hosts: {h} NIC egress {8 * out[h]['egress_bytes_per_us']:.1f} Mbit/s of payload"
                f"{'' if eg['seen'] else ' (at least)'}, ingress {8 * out[h]['ingress_bytes_per_us']:.1f}"
                f"{'' if ing['seen'] else ' (at least)'}"
            )
    return out


def _full_duplex(nic: dict[str, Any]) -> tuple[float, float]:
    """(egress, ingress) of one host, a direction no flow filled taken equal to the other when that one was seen
    and is larger."""
    e, i = nic["egress_bytes_per_us"], nic["ingress_bytes_per_us"]
    if not nic["ingress_seen"] and nic["egress_seen"] and e > i:
        i = e
    if not nic["egress_seen"] and nic["ingress_seen"] and i > e:
        e = i
    return e, i


def nic_by_type(nics: dict[str, dict[str, Any]], layout: Sequence[str], hosts: Sequence[str]) -> dict[str, dict]:
    """``hosts.nic`` of the profile: per node type the median over its hosts of each host's NIC (payload
    bytes/µs), after :func:`_full_duplex`.

    >>> nics = {"a": {"egress_bytes_per_us": 19.0, "ingress_bytes_per_us": 10.0, "egress_seen": True,
    ...               "ingress_seen": False}}
    >>> nic_by_type(nics, ["fast", "fast"], ["a", "a"])
    {'fast': {'egress_bytes_per_us': 19.0, 'ingress_bytes_per_us': 19.0}}
    """
    per_type: dict[str, list[tuple[float, float]]] = {}
    seen_hosts: set[str] = set()
    for t, h in zip(layout, hosts, strict=True):
        if h in nics and h not in seen_hosts:
            seen_hosts.add(h)
            per_type.setdefault(t, []).append(_full_duplex(nics[h]))
    return {
        t: {
            "egress_bytes_per_us": float(np.median([v[0] for v in vals])),
            "ingress_bytes_per_us": float(np.median([v[1] for v in vals])),
        }
        for t, vals in per_type.items()
    }


def nic_auto_layout(
    pc: dict[str, Any], nics: dict[str, dict[str, Any]], hosts: Sequence[str]
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Host groups discovered from the measured NICs (never from a cluster spec): hosts, not ranks, are grouped.

    ``pc``: :func:`host_pair_costs`; ``nics``: :func:`measure_nics` (each host's
    egress and ingress capacity from concurrent flows, so that a fast host whose partners are all slower is seen
    too). Hosts are sorted by (egress, ingress) capacity, fastest first, and a new group starts where either differs
    from the group's first host by more than :data:`GROUP_TOLERANCE`. Ranks take their host's group (ranks of one
    host share its type: a node type describes a machine); names ``node`` (one group), ``fast``/``slow``,
    ``fast``/``medium``/``slow``, else ``type1``… (fastest first). Returns the layout and what was measured.

    >>> nic = lambda e: {"egress_bytes_per_us": e, "ingress_bytes_per_us": e, "egress_seen": True,
    ...                  "ingress_seen": True}
    >>> pc = {"hosts": ["a", "b", "c"], "cost": np.full((3, 3), 0.1)}
    >>> nic_auto_layout(pc, {"a": nic(19.1), "b": nic(3.0), "c": nic(7.2)}, ["a", "a", "b", "c"])[0]
    ('fast', 'fast', 'slow', 'medium')
    """
    names = list(pc["hosts"])
    cap = {h: _full_duplex(nics[h]) for h in names}

    def close(x: float, y: float) -> bool:
        return abs(x - y) <= GROUP_TOLERANCE * max(abs(x), abs(y))

    order = sorted(names, key=lambda h: (-cap[h][0], -cap[h][1]))
    groups: list[list[str]] = []
    for h in order:
        if groups and all(close(cap[h][d], cap[groups[-1][0]][d]) for d in (0, 1)):
            groups[-1].append(h)
        else:
            groups.append([h])
    label = (
        ["node"]
        if len(groups) == 1
        else ["fast", "slow"]
        if len(groups) == 2
        else ["fast", "medium", "slow"]
        if len(groups) == 3
        else [f"type{g + 1}" for g in range(len(groups))]
    )
    host_type = {h: label[g] for g, members in enumerate(groups) for h in members}
    n = len(names)
    cost = pc["cost"]
    info = {
        "method": "each host's NIC from concurrent flows (fan-out of every rank of it to every rank of the other "
        "hosts plus, posted last, its first rank to a probe on the host it reaches fastest; fan-in from every other "
        "host, sizes in proportion to their rates); hosts grouped by (egress, ingress) within "
        f"{100 * GROUP_TOLERANCE:g} %",
        "hosts": names,
        "pair_cost_us_per_byte": [[None if i == j else float(cost[i][j]) for j in range(n)] for i in range(n)],
        "nic_bytes_per_us": {h: {"egress": cap[h][0], "ingress": cap[h][1]} for h in names},
        "groups": {label[g]: members for g, members in enumerate(groups)},
    }
    return tuple(host_type[h] for h in hosts), info


#: Repetitions of the CPU probe per host.
CPU_PROBE_REPS = 5
#: Rounds of the CPU probe, every host once per round: a host's probe is its least disturbed round's (the lowest
#: median), so something else that runs on the machine for a moment does not make one host look slower (a CPU
#: quota slows a host in every round).
CPU_PROBE_ROUNDS = 2
#: Further rounds, at most, over the hosts of a NIC group the probe splits by CPU, until the split no longer shows
#: or these run out: a split must show in the least disturbed of every round (equal hosts were split now and then
#: after two rounds on a 2-core VM; a real CPU quota splits in every round, at the cost of these rounds).
CPU_CONFIRM_ROUNDS = 2


def measure_cpus(
    pk: PairKernels, rt: Any, hosts: Sequence[str], layout: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Each host's CPU: its first rank's ``memcpy`` of :data:`~calibrate.protocol.CPU_PROBE_BYTES` within the
    core's caches, :data:`~calibrate.protocol.CPU_PROBE_COPIES` copies back to back per repetition (µs per copy:
    the median over :data:`CPU_PROBE_REPS`, and the median's 95 % CI), timed while every other rank sleeps, in
    :data:`CPU_PROBE_ROUNDS` rounds over the hosts, the round with the lowest median kept; with the NIC groups'
    ``layout`` (one type per rank), up to :data:`CPU_CONFIRM_ROUNDS` more rounds over the hosts of the groups
    :func:`cpu_split` splits, while it splits them; ``{host: {"copy_us", "ci_us", "bytes", "copies",
    "rounds_us"}}`` on every rank (every rank takes the same decisions from the same broadcast results)."""
    first: dict[str, int] = {}
    for r, h in enumerate(hosts):
        first.setdefault(h, r)

    def probe(_sub: Any) -> dict[str, Any]:
        t = pk.world.cpu(CPU_PROBE_BYTES, CPU_PROBE_COPIES, CPU_PROBE_REPS)
        lo, hi = median_ci(list(t))
        return {
            "copy_us": float(np.median(t)),
            "ci_us": [float(lo), float(hi)],
            "bytes": CPU_PROBE_BYTES,
            "copies": CPU_PROBE_COPIES,
        }

    seen: dict[str, list[dict[str, Any]]] = {h: [] for h in first}

    def probe_round(which: Sequence[str]) -> None:
        for h in which:
            seen[h].append(group_call(pk, [first[h]], probe))

    def best() -> dict[str, dict[str, Any]]:
        return {h: min(v, key=lambda x: x["copy_us"]) for h, v in seen.items()}

    with rt.step("host CPUs"):
        for _ in range(CPU_PROBE_ROUNDS):
            probe_round(list(first))
        for _ in range(CPU_CONFIRM_ROUNDS if layout is not None else 0):
            split = cpu_split(layout, hosts, best())[1]["groups"]
            again = [h for h in first if any(h in g for groups in split.values() for g in groups)]
            if not again:
                break
            probe_round(again)
    return {h: {**v, "rounds_us": [x["copy_us"] for x in seen[h]]} for h, v in best().items()}


def cpu_split(
    layout: Sequence[str], hosts: Sequence[str], cpus: dict[str, dict[str, Any]]
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The NIC groups of ``layout`` split by the hosts' CPUs (:func:`measure_cpus`): within a group, hosts sorted
    by their probe, fastest first, a new CPU group starts where a host's probe is more than
    :data:`~calibrate.protocol.CPU_TOLERANCE` slower than the first of the current CPU group and beyond both
    medians' confidence intervals. A group that splits becomes ``<group>-cpu1``, ``<group>-cpu2``… (fastest CPU
    first); one that does not keeps its name. Returns the layout and what was measured.

    >>> cpu = lambda us: {"copy_us": us, "ci_us": [0.98 * us, 1.02 * us], "bytes": 8 << 20}
    >>> cpu_split(["fast", "fast", "slow", "slow"], ["a", "b", "c", "d"],
    ...           {"a": cpu(900.0), "b": cpu(3600.0), "c": cpu(950.0), "d": cpu(1000.0)})[0]
    ('fast-cpu1', 'fast-cpu2', 'slow', 'slow')
    """
    host_type = dict(zip(hosts, layout, strict=True))
    new: dict[str, str] = {}
    groups: dict[str, list[list[str]]] = {}
    for t in dict.fromkeys(layout):
        members = sorted((h for h in dict.fromkeys(hosts) if host_type[h] == t), key=lambda h: cpus[h]["copy_us"])
        split: list[list[str]] = []
        for h in members:
            if split:
                f = split[-1][0]
                a, b = cpus[f], cpus[h]
                gap = b["copy_us"] - a["copy_us"]
                half = (a["ci_us"][1] - a["ci_us"][0] + b["ci_us"][1] - b["ci_us"][0]) / 2
                if gap <= CPU_TOLERANCE * a["copy_us"] or gap <= half:
                    split[-1].append(h)
                    continue
            split.append([h])
        groups[t] = split
        for k, g in enumerate(split):
            for h in g:
                new[h] = t if len(split) == 1 else f"{t}-cpu{k + 1}"
    info = {
        "method": f"each host's first rank alone: memcpy of {CPU_PROBE_BYTES} B in its caches, {CPU_PROBE_COPIES} "
        "back to back (median µs per copy); within a NIC group a "
        f"new CPU group where a host is more than {100 * CPU_TOLERANCE:g} % slower than the group's first and "
        "beyond both confidence intervals",
        "copy_us": {h: v["copy_us"] for h, v in cpus.items()},
        "rounds": {h: len(v.get("rounds_us", [])) for h, v in cpus.items()},
        "groups": {t: g for t, g in groups.items() if len(g) > 1},
    }
    return tuple(new[h] for h in hosts), info


def shm_pairs(layout: Sequence[str], hosts: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per node type, two ranks of its first host that has at least two (the shared-memory pair).

    >>> shm_pairs(["f", "f", "s", "m", "m"], ["a", "a", "b", "c", "c"])
    {'f': (0, 1), 'm': (3, 4)}
    """
    out: dict[str, tuple[int, int]] = {}
    for r, (t, h) in enumerate(zip(layout, hosts, strict=True)):
        if t in out:
            continue
        mate = next((q for q in range(r + 1, len(hosts)) if hosts[q] == h), None)
        if mate is not None:
            out[t] = (r, mate)
    return out


def shm_entry(doc: dict[str, Any], t: str) -> dict[str, Any]:
    """``hosts.shm.<t>`` from a shared-memory fit of two ranks of type ``t`` (:func:`calibrate.shmprofile.fit_profile`
    of a two-rank run): the type's S and R regimes and the network's X regimes, on the same bounds."""
    regimes = []
    for node, link in zip(doc["types"][t]["regimes"], doc["network"]["regimes"], strict=True):
        regimes.append(
            {
                "upto_bytes": node["upto_bytes"],
                **{k: node[k] for k in ("Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte")},
                "Xc_us": link["Xc_us"],
                "Xm_us_per_byte": link["Xm_us_per_byte"],
            }
        )
    return {"regimes": regimes}


def measure_shm(
    pk: PairKernels, rt: Any, pairs: dict[str, tuple[int, int]], *, quick: bool, rounds: int, gap_us: float
) -> dict[str, Any]:
    """Per node type of ``pairs``, the shared-memory calibration of its two ranks (one host) while every other rank
    sleeps: ``{type: {"shm": hosts.shm entry, "provenance": the fit's provenance, "warnings"}}`` on every rank."""
    from .ckernels import Kernels
    from .sharedmemory import SharedMemoryRun, default_sizes
    from .sharedmemory import run as run_shared_memory
    from .shmprofile import fit_profile

    out: dict[str, Any] = {}
    for t, (a, b) in pairs.items():
        sizes = default_sizes(quick)
        plan = SharedMemoryRun([(0, 1)], {t: (0, 1)}, sizes, rounds, gap_us, quick, reference=False)

        def fit(sub: Any, t: str = t, plan: SharedMemoryRun = plan, ranks: tuple = (a, b)) -> dict[str, Any] | None:
            raw = run_shared_memory(Kernels(sub), sub, rt, plan)
            if raw is None:
                return None
            doc = fit_profile(raw, [t, t], ["h", "h"], [(0, 1)], {t: (0, 1)})
            prov = doc["provenance"]
            return {"shm": shm_entry(doc, t), "ranks": list(ranks), "warnings": prov.get("warnings", [])}

        rt.progress(f"hosts: shared memory of type {t} (ranks {a} and {b}, one host)")
        with rt.step(f"shared memory {t}"):
            out[t] = group_call(pk, [a, b], fit)
    return out
