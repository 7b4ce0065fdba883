"""Speed of the tree search: exact DP for 2 types x 64 ranks and 3 types x 16 ranks, heuristics at 10^5 ranks; and of
the algorithm search of the operations whose algorithms are message schedules (``--part algorithms``).

Targets (issue #5): exact search under 2 s, heuristics under 5 s for 10^5 ranks. Issue #34: the algorithm search
(:func:`hnowmodel.search.best_algorithm`: every algorithm, its rank order, root and two-level compositions, beside
the libraries' defaults) under 5 s per operation and size on 64 hosts x 32 ranks (2048 ranks, hosts alternately
fast and slow, the illustrative shared-memory costs of perf_schedules.py), and predicting the chosen algorithm
(:func:`hnowmodel.search.predict_choice`) under 1 s per size; each timed once (``--algo-repeat``). Each tree figure
is the best of ``--repeat`` runs in this one process (wall clock, ``time.perf_counter``); sizes 0 and 4 KiB. Also a
larger exact case (2 types x 128 ranks) and the local improvement pass, for scale. Printed and written as CSV +
markdown.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
from common import best_of, claim, md_table, outdir, parser, write_csv, write_markdown
from perf_schedules import SHM

from hnowmodel import ops, paper_profile, search
from hnowmodel.layout import Layout
from hnowmodel.params import NodeType, Profile

#: The algorithm search's sizes (bytes, the operation's m) and γ (µs per byte reduced, illustrative).
ALGO_SIZES = (1024, 65536, 1 << 20)
GAMMA = 1e-3


def three_types() -> Profile:
    p = paper_profile()
    medium = NodeType("medium", 75.0, 0.1, 110.0, 0.05)
    return Profile({"fast": p.types["fast"], "slow": p.types["slow"], "medium": medium}, p.network)


def _cases(big: int) -> list[tuple]:
    """(method, case label, profile, layout, target s or None, fn(profile, layout, size)) of every timed case."""
    two, three = paper_profile(), three_types()
    cases = [
        (
            "exact",
            "2 types x 64 ranks",
            two,
            ["fast", "slow"] * 32,
            2.0,
            lambda pr, lay, s: search.exact_bcast(pr, lay, s),
        ),
        (
            "exact",
            "3 types x 16 ranks",
            three,
            ["fast", "slow", "medium"] * 5 + ["fast"],
            2.0,
            lambda pr, lay, s: search.exact_bcast(pr, lay, s),
        ),
        (
            "exact",
            "2 types x 128 ranks",
            two,
            ["fast", "slow"] * 64,
            None,
            lambda pr, lay, s: search.exact_bcast(pr, lay, s),
        ),
    ]
    big2 = ["fast", "slow"] * (big // 2)
    big3 = (["fast", "slow", "medium"] * (big // 3 + 1))[:big]
    for prof, lay, label in ((two, big2, f"2 types x {big} ranks"), (three, big3, f"3 types x {big} ranks")):
        cases += [
            ("fnf", label, prof, lay, 5.0, lambda pr, lay, s: search.fnf(pr, lay, s)),
            ("ecef", label, prof, lay, 5.0, lambda pr, lay, s: search.ecef(pr, lay, s)),
            (
                "best_tree auto (ecef+fnf+improve)",
                label,
                prof,
                lay,
                5.0,
                lambda pr, lay, s: search.best_tree(pr, lay, "bcast", s, "auto", compare=()),
            ),
        ]
    return cases


def algorithm_rows(hosts: int, slots: int, repeat: int, op_names: list[str]) -> list[dict]:
    """Seconds of the algorithm search and of predicting its choice, per operation and size, on ``hosts`` x
    ``slots`` ranks."""
    prof = dataclasses.replace(paper_profile(), shm=SHM)
    host = np.repeat(np.arange(hosts), slots)
    lay = Layout(np.where(host % 2, "slow", "fast").tolist(), host)
    rows = []
    for op in op_names:
        for size in ALGO_SIZES:
            got = {}

            def run(op=op, size=size, got=got):
                got["best"] = search.best_algorithm(prof, lay, op, size, reduce_us_per_byte=GAMMA)

            sec = best_of(run, repeat)
            best = got["best"]
            t0 = time.perf_counter()
            search.predict_choice(prof, lay, best, [size], reduce_us_per_byte=GAMMA)
            pred = time.perf_counter() - t0
            gain = min(best.gain_vs_default_pct.values(), default=float("nan"))
            rows.append({"op": op, "ranks": len(lay), "size": size, "search_s": sec, "predict_s": pred,
                         "chosen": best.method, "gain_vs_default_pct": gain})  # fmt: skip
            print(f"{op:15s} {size:8d} B  search {sec:7.3f} s  predict {pred:6.3f} s  {best.method}", flush=True)
    return rows


def algorithms_main(args) -> None:
    out = outdir(args.out)
    names = [o for o in ops.names() if ops.get(o).movement is None] if args.ops is None else args.ops.split(",")
    rows = algorithm_rows(args.hosts, args.slots, args.algo_repeat, names)
    write_csv(out / "perf_algorithm_search.csv", rows)
    body = [md_table(rows, fmt="{:.3f}"), "\n"]
    n = args.hosts * args.slots
    for key, target, what in (("search_s", 5.0, "algorithm search"), ("predict_s", 1.0, "predicting the choice")):
        slowest = max(r[key] for r in rows)
        body.append(claim(f"{what} on {n} ranks under {target:g} s per operation and size", slowest < target,
                          f"slowest {slowest:.3f} s"))  # fmt: skip
    write_markdown(out / "perf_algorithm_search.md", "Algorithm search speed", body)
    print("".join(body))


def main() -> None:
    p = parser("perf_search", __doc__)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--big", type=int, default=100_000, help="ranks for the heuristics (default 10^5)")
    p.add_argument("--part", choices=("trees", "algorithms", "all"), default="all", help="what to time (default all)")
    p.add_argument("--hosts", type=int, default=64, help="algorithms: hosts (default 64)")
    p.add_argument("--slots", type=int, default=32, help="algorithms: ranks per host (default 32)")
    p.add_argument("--ops", default=None, help="algorithms: operations, comma-separated (default every one)")
    p.add_argument("--algo-repeat", type=int, default=1, help="algorithms: runs per case, the best kept (default 1)")
    args = p.parse_args()
    if args.part in ("algorithms", "all"):
        algorithms_main(args)
    if args.part == "algorithms":
        return
    out = outdir(args.out)
    cases = _cases(args.big)
    rows = []
    for method, label, prof, lay, target, fn in cases:
        for size in (0, 4096):
            sec = best_of(lambda fn=fn, prof=prof, lay=lay, size=size: fn(prof, lay, size), args.repeat)
            rows.append(
                {
                    "method": method,
                    "case": label,
                    "size": size,
                    "seconds": sec,
                    "target_s": target if target is not None else "",
                }
            )
            print(f"{method:36s} {label:26s} {size:5d} B  {sec:8.3f} s", flush=True)
    write_csv(out / "perf_search.csv", rows)
    body = [md_table(rows, fmt="{:.3f}"), "\n"]
    exact = [r for r in rows if r["method"] == "exact" and r["target_s"] != ""]
    heur = [r for r in rows if r["method"] != "exact"]
    body.append(
        claim(
            "exact search for 2 types x 64 and 3 types x 16 ranks under 2 s",
            all(r["seconds"] < 2.0 for r in exact),
            f"slowest {max(r['seconds'] for r in exact):.3f} s",
        )
    )
    body.append(
        claim(
            f"heuristics for {args.big} ranks under 5 s",
            all(r["seconds"] < 5.0 for r in heur),
            f"slowest {max(r['seconds'] for r in heur):.3f} s",
        )
    )
    write_markdown(out / "perf_search.md", "Tree search speed", body)
    print("".join(body))


if __name__ == "__main__":
    main()
