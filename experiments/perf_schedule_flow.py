"""The flow engine over message schedules (hnowmodel.schedules.flows, .flowrounds): speed on 64 hosts x 32 ranks, and
how far the vectorised evaluator is from the event-driven one on small cases.

Speed: per algorithm and size, the seconds of ``flows.evaluate`` (which runs the vectorised evaluator, ``rounds``,
on 2048 ranks) beside the closed-form engine (``closed.evaluate``) on the same schedule: ``flow_s``, ``closed_s``
and their ratio. Issue #33's target: a ring allgather and a recursive-doubling allreduce on 2048 ranks in under 1 s
per size. Profiles: ``network`` (perf_flow.py's: three node types at 160/60/25 Mbit/s, 8 KB token buckets, shared
memory inside a host) and ``cluster`` (tests/data/golden/cluster_profile.json, calibrated on the virtual cluster,
with shared-memory costs added here); host types cycle over the profile's types.

Accuracy: on 8, 16 and 32 ranks on hosts of 1, 2 and 4 ranks, both profiles and the paper's (with shared memory),
ring and Bruck allgather, recursive doubling allreduce, pairwise alltoall and a binomial bcast (a tree through
``from_tree``) at 1 kB and 100 kB: ``rounds_over_events`` = the vectorised completion over the event-driven one,
minus 1, and the largest difference of a rank's time over the event-driven completion (``worst_rank``); and
the same at scale for recursive doubling on the 2048 ranks (``--at-scale`` bytes; 0: not run, the event-driven
evaluator takes seconds there). Also the event-driven evaluator's speed in
messages per second, which sets ``flows.EVENTS_UP_TO``. Nothing is asserted; printed and written as CSV +
markdown.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
from common import best_of, claim, md_table, outdir, parser, write_csv, write_markdown
from perf_flow import network_profile

from hnowmodel import schedules as S
from hnowmodel import trees
from hnowmodel.layout import Layout
from hnowmodel.params import Link, NodeType, Profile, ShmCosts, paper_profile
from hnowmodel.schedules import closed, flows

SIZES = [1024, 65536, 1 << 20]
ALGORITHMS = {
    "ring_allgather": S.ring_allgather,
    "recursive_doubling_allreduce": S.recursive_doubling_allreduce,
    "bruck_allgather": S.bruck_allgather,
    "pairwise_alltoall": S.pairwise_alltoall,
    "binomial_bcast": lambda n, m: S.from_tree(trees.binomial(n), m),
}
TARGETS = ("ring_allgather", "recursive_doubling_allreduce")
GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "data" / "golden" / "cluster_profile.json"


def with_shm(prof: Profile) -> Profile:
    """``prof`` with illustrative shared-memory costs for every type (2 µs overheads, 0.5 µs + 2e-4 µs/byte)."""
    shm = {t: ShmCosts(NodeType(t, 2.0, 1e-4, 2.0, 1e-4), Link(0.5, 2e-4)) for t in prof.types}
    return dataclasses.replace(prof, shm=shm)


def profiles() -> dict[str, Profile]:
    return {
        "network": network_profile(),
        "cluster": with_shm(Profile.load(GOLDEN)),
        "paper": with_shm(paper_profile()),
    }


def layout(prof: Profile, n: int, slots: int) -> Layout:
    """``n`` ranks, ``slots`` per host, host types cycling over the profile's types."""
    names = list(prof.types)
    host = np.arange(n) // slots
    return Layout([names[h % len(names)] for h in host], host)


def speed_rows(profs: dict[str, Profile], n_hosts: int, slots: int, repeat: int) -> list[dict]:
    rows = []
    for pname in ("network", "cluster"):
        prof = profs[pname]
        lay = layout(prof, n_hosts * slots, slots)
        n = len(lay)
        for name, gen in ALGORITHMS.items():
            for m in SIZES:
                ms = gen(n, float(m))
                flow_s = best_of(lambda ms=ms, prof=prof, lay=lay: flows.evaluate(prof, lay, ms), repeat)
                closed_s = best_of(lambda ms=ms, prof=prof, lay=lay: closed.evaluate(prof, lay, ms), repeat)
                run = flows.evaluate(prof, lay, ms)
                row = {"profile": pname, "algorithm": name, "ranks": n, "hosts": n_hosts, "bytes": m}
                row |= {"messages": ms.n_messages, "method": run.method, "flow_us": run.completion_us}
                row |= {"closed_us": float(closed.evaluate(prof, lay, ms)), "flow_s": flow_s, "closed_s": closed_s}
                row["flow_over_closed"] = flow_s / closed_s
                rows.append(row)
                print(
                    f"{pname:8s} {name:30s} {m:8d} B: {run.method} {flow_s:7.3f} s, closed {closed_s:7.4f} s "
                    f"({row['flow_over_closed']:5.0f}x); flow {run.completion_us:.4g} us, closed "
                    f"{row['closed_us']:.4g} us",
                    flush=True,
                )
    return rows


def accuracy_rows(profs: dict[str, Profile], ranks: list[int]) -> tuple[list[dict], float]:
    """The vectorised evaluator beside the event-driven one on ``ranks`` ranks; and the event-driven messages per
    second."""
    rows, n_msgs, events_s = [], 0, 0.0
    for pname, prof in profs.items():
        for n in ranks:
            for slots in (1, 2, 4):
                lay = layout(prof, n, slots)
                for name, gen in ALGORITHMS.items():
                    for m in (1e3, 1e5):
                        ms = gen(n, m)
                        t0 = time.perf_counter()
                        ev = flows.simulate(prof, lay, ms)
                        events_s += time.perf_counter() - t0
                        n_msgs += ms.n_messages
                        ro = flows.simulate_rounds(prof, lay, ms)
                        per_rank = np.abs(ro.done_us - ev.done_us) / ev.completion_us
                        row = {"profile": pname, "algorithm": name, "ranks": n, "ranks_per_host": slots, "bytes": m}
                        row["rounds_over_events"] = ro.completion_us / ev.completion_us - 1
                        row["worst_rank"] = float(per_rank.max())
                        rows.append(row)
    return rows, n_msgs / events_s


def scale_rows(profs: dict[str, Profile], n_hosts: int, slots: int, m: float) -> list[dict]:
    """Recursive doubling on ``n_hosts`` x ``slots`` ranks under both evaluators (one size)."""
    rows = []
    for pname in ("network", "cluster"):
        prof = profs[pname]
        lay = layout(prof, n_hosts * slots, slots)
        ms = S.recursive_doubling_allreduce(len(lay), m)
        t0 = time.perf_counter()
        ev = flows.simulate(prof, lay, ms)
        events_s = time.perf_counter() - t0
        ro = flows.simulate_rounds(prof, lay, ms)
        row = {"profile": pname, "algorithm": "recursive_doubling_allreduce@scale", "ranks": len(lay)}
        row |= {"ranks_per_host": slots, "bytes": m, "rounds_over_events": ro.completion_us / ev.completion_us - 1}
        row["worst_rank"] = float(np.max(np.abs(ro.done_us - ev.done_us)) / ev.completion_us)
        rows.append(row)
        print(
            f"{pname:8s} recursive doubling on {len(lay)} ranks at {m:g} B: events {events_s:.2f} s, rounds/events - 1 "
            f"= {row['rounds_over_events']:+.3f}",
            flush=True,
        )
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Per profile and algorithm: how many cases agree to 1e-12, the median and largest completion difference."""
    out = []
    for pname in dict.fromkeys(r["profile"] for r in rows):
        for name in dict.fromkeys(r["algorithm"] for r in rows if r["profile"] == pname):
            d = np.array([r["rounds_over_events"] for r in rows if r["profile"] == pname and r["algorithm"] == name])
            w = np.array([r["worst_rank"] for r in rows if r["profile"] == pname and r["algorithm"] == name])
            out.append(
                {
                    "profile": pname,
                    "algorithm": name,
                    "cases": d.size,
                    "equal": int(np.sum(w <= 1e-12)),
                    "median_pct": 100 * float(np.median(d)),
                    "min_pct": 100 * float(d.min()),
                    "max_pct": 100 * float(d.max()),
                    "worst_rank_pct": 100 * float(w.max()),
                }
            )
    return out


def main() -> None:
    p = parser("perf_schedule_flow", __doc__)
    p.add_argument("--hosts", type=int, default=64)
    p.add_argument("--slots", type=int, default=32, help="ranks per host")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--accuracy-ranks", type=int, nargs="+", default=[8, 16, 32], help="ranks of the small cases")
    p.add_argument("--at-scale", type=int, default=65536, help="bytes of the 2048-rank comparison (0: none)")
    args = p.parse_args()
    out = outdir(args.out)
    profs = profiles()
    speed = speed_rows(profs, args.hosts, args.slots, args.repeat)
    write_csv(out / "perf_schedule_flow.csv", speed)
    acc, rate = accuracy_rows(profs, args.accuracy_ranks)
    if args.at_scale:
        acc += scale_rows(profs, args.hosts, args.slots, float(args.at_scale))
    write_csv(out / "schedule_flow_rounds_vs_events.csv", acc)
    summ = summary(acc)
    print(md_table(summ, fmt="{:.3g}"))
    print(f"event-driven evaluator: {rate:.0f} messages per second on these cases")
    body = [
        f"\n## Speed, {args.hosts} hosts x {args.slots} ranks\n\n",
        md_table(speed, fmt="{:.4g}"),
        "\nSeconds per size of `flows.evaluate` (flow_s) and `closed.evaluate` (closed_s) on the same schedule.\n\n",
    ]
    for r in speed:
        if r["algorithm"] in TARGETS and r["ranks"] == 2048:
            body.append(
                claim(
                    f"{r['profile']} {r['algorithm']} at {r['bytes']} bytes on 2048 ranks in under 1 s",
                    r["flow_s"] < 1.0,
                    f"{r['flow_s']:.3f} s ({r['method']})",
                )
            )
    body += [
        "\n## The vectorised evaluator beside the event-driven one\n\n",
        md_table(summ, fmt="{:.3g}"),
        f"\nPer profile and algorithm over {args.accuracy_ranks} ranks, hosts of 1/2/4 ranks, 1 kB and 100 kB: "
        "cases where every rank's time agrees to 1e-12 (equal), the completion's difference (rounds/events - 1, %) "
        "and the largest difference of a rank's time (% of the completion). The event-driven evaluator ran "
        f"{rate:.0f} messages per second.\n",
    ]
    write_markdown(out / "perf_schedule_flow.md", "Flow engine over message schedules", body)


if __name__ == "__main__":
    main()
