"""Speed of the closed-form engine over message schedules (hnowmodel.schedules.closed) beside today's binomial bcast
predictor (hnowmodel.predict.bcast), on one layout of hosts x ranks per host (default 64 x 32 = 2048 ranks, hosts
alternately fast and slow, illustrative shared-memory costs as in perf_predict.py).

Per algorithm and size: the time to generate the schedule (``generate_s``) and to evaluate it (``evaluate_s``,
the best of ``--repeat`` runs), and ``over_bcast``: evaluate_s / the time of ``predict.bcast`` over a binomial tree
of the same ranks at the same size. ``bcast-tree`` is that binomial tree compiled to a schedule (``from_tree``): the
same number as ``predict.bcast`` (checked here), through the schedule path.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from common import best_of, claim, md_table, outdir, parser, write_csv, write_markdown

from hnowmodel import paper_profile, predict, trees
from hnowmodel import schedules as S
from hnowmodel.layout import Layout
from hnowmodel.params import Link, NodeType, Profile, ShmCosts

SIZES = [0, 1024, 65536, 1 << 20]
SHM = {  # illustrative shared-memory costs (µs, µs/byte)
    "fast": ShmCosts(NodeType("fast", 2.0, 1e-4, 2.0, 1e-4), Link(0.5, 2e-4)),
    "slow": ShmCosts(NodeType("slow", 3.0, 2e-4, 3.0, 2e-4), Link(0.5, 2e-4)),
}
#: The algorithms timed: name -> generator(n, m). The first two carry the issue's target (< 20 ms per size).
ALGORITHMS = {
    "ring_allgather": S.ring_allgather,
    "recursive_doubling_allreduce": S.recursive_doubling_allreduce,
    "bruck_allgather": S.bruck_allgather,
    "rabenseifner_allreduce": S.rabenseifner_allreduce,
    "ring_allreduce": S.ring_allreduce,
    "recursive_halving_reduce_scatter": S.recursive_halving_reduce_scatter,
}
TARGET_S = 0.020


def _profile_layout(path: str | None, hosts: int, slots: int) -> tuple[Profile, Layout]:
    """The profile (the paper's, or ``path``'s types with illustrative shared memory) and the layout of ``hosts`` x
    ``slots`` ranks, hosts cycling through its node types."""
    host = np.arange(hosts * slots) // slots
    if path is None:
        return dataclasses.replace(paper_profile(), shm=SHM), Layout(np.where(host % 2, "slow", "fast").tolist(), host)
    prof = Profile.load(path)
    types = list(prof.types)
    shm = {t: ShmCosts(NodeType(t, 2.0 + i, 1e-4 * (i + 1), 2.0, 1e-4), Link(0.5, 2e-4)) for i, t in enumerate(types)}
    return dataclasses.replace(prof, shm=shm), Layout([types[h % len(types)] for h in host], host)


def main() -> None:
    p = parser("perf_schedules", __doc__)
    p.add_argument("--hosts", type=int, default=64)
    p.add_argument("--slots", type=int, default=32, help="ranks per host")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument(
        "--profile",
        help="node types of this profile instead of the paper's (hosts cycle through them; illustrative shared "
        "memory as for the paper's), e.g. tests/data/golden/cluster_profile.json: a ring's clocks then settle late",
    )
    args = p.parse_args()
    out = outdir(args.out)
    prof, layout = _profile_layout(args.profile, args.hosts, args.slots)
    n = args.hosts * args.slots
    tree = trees.binomial(n)
    rows = []
    for m in SIZES:
        bcast_s = best_of(lambda m=m: predict.bcast(prof, layout, tree, [m]), args.repeat)
        want = float(predict.bcast(prof, layout, tree, [m])[0])
        gens = {**ALGORITHMS, "bcast-tree": lambda n, m: S.from_tree(tree, m)}
        for name, gen in gens.items():
            if name == "rabenseifner_allreduce" and m < n:
                continue  # MPICH runs it only with at least pof2 elements
            generate_s = best_of(lambda gen=gen, m=m: gen(n, m), 1)
            sched = gen(n, m)
            evaluate_s = best_of(lambda sched=sched: S.closed.evaluate(prof, layout, sched), args.repeat)
            time_us = S.closed.evaluate(prof, layout, sched)
            if name == "bcast-tree":
                assert np.isclose(time_us, want, rtol=1e-12), (time_us, want)
            rows.append(
                {
                    "algorithm": name,
                    "ranks": n,
                    "size_bytes": m,
                    "steps": sched.n_steps,
                    "time_us": time_us,
                    "generate_s": generate_s,
                    "evaluate_s": evaluate_s,
                    "bcast_s": bcast_s,
                    "over_bcast": evaluate_s / bcast_s,
                }
            )
            r = rows[-1]
            print(
                f"{name:34s} {m:8d} B  {r['steps']:5d} steps  generate {generate_s * 1e3:7.2f} ms  evaluate "
                f"{evaluate_s * 1e3:7.2f} ms  ({r['over_bcast']:5.1f}x predict.bcast {bcast_s * 1e3:.2f} ms)",
                flush=True,
            )
    write_csv(out / "perf_schedules.csv", rows)
    body = [md_table(rows, fmt="{:.4g}"), "\n"]
    for name in list(ALGORITHMS)[:2]:
        worst = max(r["evaluate_s"] for r in rows if r["algorithm"] == name)
        body.append(
            claim(
                f"{name} on {args.hosts} hosts x {args.slots} ranks evaluated in under 20 ms per size",
                worst < TARGET_S,
                f"slowest size {worst * 1e3:.2f} ms",
            )
        )
    write_markdown(out / "perf_schedules.md", f"Schedule evaluation speed: {n} ranks, closed form", body)
    print("".join(body[2:]), end="")


if __name__ == "__main__":
    main()
