"""Speed of the tree search: exact DP for 2 types x 64 ranks and 3 types x 16 ranks, heuristics at 10^5 ranks.

Targets (issue #5): exact search under 2 s, heuristics under 5 s for 10^5 ranks. Each figure is the best of
``--repeat`` runs in this one process (wall clock, ``time.perf_counter``); sizes 0 and 4 KiB. Also a larger exact
case (2 types x 128 ranks) and the local improvement pass, for scale. Printed and written as CSV + markdown.
"""

from __future__ import annotations

from common import best_of, claim, md_table, outdir, parser, write_csv, write_markdown

from hnowmodel import paper_profile, search
from hnowmodel.params import NodeType, Profile


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


def main() -> None:
    p = parser("perf_search", __doc__)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--big", type=int, default=100_000, help="ranks for the heuristics (default 10^5)")
    args = p.parse_args()
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
