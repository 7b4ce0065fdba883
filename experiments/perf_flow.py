"""Speed of the flow engine: binomial broadcast at 256, 1024 and 2048 ranks, one rank per host and 32 ranks per host;
and the host-aware tree search over 64 hosts x 32 ranks.

Issue #26's target: a flow-engine bcast over 64 hosts x 32 ranks (2048 ranks) in under 0.5 s per size (the engine
before took 16.8 s per size for 2048 ranks on hosts of their own). The profile is a network profile built here
(three node types at the virtual cluster's 160/60/25 Mbit/s line rates, a token bucket, shared memory inside a
host); layouts cycle the three types over hosts. Each figure is seconds per size, the best of ``--repeat`` runs in
this one process (wall clock, and the process's CPU time: the machine may be shared), and the ratio to the paper's
closed-form predictor (``variant="paper"``) on the same layout, tree and sizes. The search
(``search.best_tree`` at ``--search-size`` bytes, each operation under its default variant for this network
profile: ``flow-rr`` for bcast and scatter, ``flow`` for gather) is timed the same way per operation; target under
5 s each. Printed and written as CSV + markdown.
"""

from __future__ import annotations

import time
from pathlib import Path

from common import claim, md_table, outdir, parser, write_csv, write_markdown

from hnowmodel import ops, search, trees
from hnowmodel.layout import Layout
from hnowmodel.params import Link, NodeType, Profile, ShmCosts

SIZES = [16384, 65536, 262144]
#: bytes/µs of payload at 160, 60 and 25 Mbit/s (Ethernet/IP/TCP framing: 1448 payload bytes per 1514 on the wire)
RATES = {"fast": 160 / 8 * 1448 / 1514, "medium": 60 / 8 * 1448 / 1514, "slow": 25 / 8 * 1448 / 1514}


def network_profile() -> Profile:
    """Three node types; a pair's per-byte cost is that of the slower end; 8 KB token buckets; shared memory at
    10 GB/s with 1 µs overheads between ranks of one host."""
    types = {t: NodeType(t, 20.0, 1e-4, 20.0, 1e-4) for t in RATES}
    links = {(a, b): Link(100.0, 1 / min(RATES[a], RATES[b])) for a in RATES for b in RATES}
    shm = {t: ShmCosts(NodeType(t, 1.0, 0.0, 1.0, 0.0), Link(0.5, 1e-4)) for t in RATES}
    ext = {"network": {"burst_bytes": 8192.0, "burst_send_us": 10.0, "burst_send_us_per_byte": 0.005}}
    return Profile(types, Link(100.0, 1.0), links, extensions=ext, shm=shm)


def layout(n: int, slots: int) -> Layout:
    """``n`` ranks, ``slots`` per host, host types cycling fast, medium, slow."""
    names = list(RATES)
    hosts = [r // slots for r in range(n)]
    return Layout([names[h % len(names)] for h in hosts], hosts=hosts)


def timed(fn, repeat: int) -> tuple[float, float]:
    """(best wall s, best CPU s) of ``repeat`` calls of ``fn()``."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu


def main() -> None:
    p = parser("perf_flow", __doc__)
    p.add_argument("--ranks", type=int, nargs="+", default=[256, 1024, 2048])
    p.add_argument("--slots", type=int, default=32, help="ranks per host of the shared-host layouts")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--search-size", type=int, default=65536, help="bytes of the timed search (0: none)")
    args = p.parse_args()
    out = outdir(args.out)
    prof = network_profile()
    rows = []
    for n in args.ranks:
        tree = trees.binomial(n)
        for slots in (1, args.slots):
            lay = layout(n, slots)
            flow = timed(
                lambda lay=lay, tree=tree: ops.predict("bcast", prof, lay, tree, SIZES, variant="flow"), args.repeat
            )
            paper = timed(lambda lay=lay, tree=tree: ops.predict("bcast", prof, lay, tree, SIZES, variant="paper"), 3)
            k = len(SIZES)
            row = {
                "ranks": n,
                "hosts": lay.n_hosts,
                "ranks_per_host": slots,
                "flow_s_per_size": flow[0] / k,
                "flow_cpu_s_per_size": flow[1] / k,
                "paper_s_per_size": paper[0] / k,
                "flow_over_paper": flow[0] / paper[0],
            }
            rows.append(row)
            print(
                f"{n:5d} ranks on {lay.n_hosts:4d} hosts: flow {row['flow_s_per_size']:7.3f} s/size "
                f"(cpu {row['flow_cpu_s_per_size']:7.3f}), paper {row['paper_s_per_size']:8.5f} s/size, "
                f"flow/paper {row['flow_over_paper']:8.0f}x",
                flush=True,
            )
    write_csv(out / "perf_flow.csv", rows)
    body = [
        md_table(rows, fmt="{:.4g}"),
        f"\nSeconds per size (sizes {SIZES} bytes), binomial bcast under the flow variant; flow/paper = the flow "
        "engine's time over the paper's closed form on the same case.\n\n",
    ]
    target = next((r for r in rows if r["ranks"] == 2048 and r["ranks_per_host"] == args.slots == 32), None)
    if target is not None:
        body.append(
            claim(
                "flow bcast over 64 hosts x 32 ranks in under 0.5 s per size (issue #26; 16.8 s before for 2048 ranks)",
                target["flow_s_per_size"] < 0.5,
                f"{target['flow_s_per_size']:.3f} s per size (CPU {target['flow_cpu_s_per_size']:.3f} s)",
            )
        )
    if args.search_size:
        body += search_rows(prof, layout(max(args.ranks), args.slots), args.search_size, args.repeat, out)
    write_markdown(out / "perf_flow.md", "Flow engine speed: binomial broadcast", body)
    print("".join(body[2:]), end="")


def search_rows(prof: Profile, lay: Layout, size: int, repeat: int, out: Path) -> list[str]:
    """The host-aware search over ``lay`` per operation, timed; markdown lines (with the 5 s claims at 64 hosts x
    32 ranks)."""
    where = f"{lay.n_hosts} hosts x {len(lay) // lay.n_hosts} ranks"
    rows, claims = [], []
    for op in ("bcast", "scatter", "gather"):
        found: list = []
        wall, cpu = timed(lambda op=op, found=found: found.append(search.best_tree(prof, lay, op, size)), repeat)
        row = {"op": op, "variant": ops.default_variant(op, prof), "ranks": len(lay), "hosts": lay.n_hosts}
        row |= {"bytes": size, "search_s": wall, "search_cpu_s": cpu, "method": found[-1].method}
        row["time_us"] = found[-1].time_us
        rows.append(row)
        print(f"search {op:8s} ({row['variant']}) over {where}: {wall:6.2f} s (cpu {cpu:6.2f})", flush=True)
        if len(lay) == 2048 and lay.n_hosts == 64:
            claims.append(claim(f"{op}: host-aware search in under 5 s", wall < 5.0, f"{wall:.2f} s (CPU {cpu:.2f} s)"))
    write_csv(out / "perf_flow_search.csv", rows)
    return [f"\n## Host-aware search, {where}, {size} bytes\n\n", md_table(rows, fmt="{:.4g}"), "\n", *claims]


if __name__ == "__main__":
    main()
