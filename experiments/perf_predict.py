"""Speed of the vectorised predictor vs a per-rank Python recursion, binomial broadcast, 3 sizes, n = 2^10..2^20.

Both run in this one process on the same trees and layouts (half fast, half slow, numpy layout); the ratio is the
figure of merit. The recursion is run up to 2^18 ranks (beyond that it only takes long). Tree construction is
timed separately and is not part of either prediction time. Each time is the best of ``--repeat`` runs.
``vectorised_hosts_s``: the same broadcast with 32 ranks per host (hosts alternately fast and slow, illustrative
shared-memory costs; docs/model.md, "Hosts"), the layout a :class:`~hnowmodel.layout.Layout` with hosts.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np
from common import best_of, claim, md_table, outdir, parser, write_csv, write_markdown

from hnowmodel import paper_profile, predict, reference, trees
from hnowmodel.layout import Layout
from hnowmodel.params import Link, NodeType, Profile, ShmCosts

SIZES = [0, 1024, 65536]
SLOTS = 32  # ranks per host in the hosts column
SHM = {  # illustrative shared-memory costs (µs, µs/byte)
    "fast": ShmCosts(NodeType("fast", 2.0, 1e-4, 2.0, 1e-4), Link(0.5, 2e-4)),
    "slow": ShmCosts(NodeType("slow", 3.0, 2e-4, 3.0, 2e-4), Link(0.5, 2e-4)),
}


def _row(e: int, args: argparse.Namespace, prof: Profile, hprof: Profile) -> dict:
    """The times (s) for 2**e ranks: the tree's build, the vectorised prediction (first call and cached), with
    ``SLOTS`` ranks per host, and the per-rank Python recursion up to ``--ref-max-exp``; printed as one line."""
    n = 2**e
    t_build = best_of(lambda n=n: trees.binomial(n), 1)
    tree = trees.binomial(n)
    layout = np.array(["fast", "slow"] * (n // 2))
    run = lambda layout=layout, tree=tree: predict.bcast(prof, layout, tree, SIZES)  # noqa: E731
    vec_first = run_time = best_of(run, 1)  # the first call includes the per-tree caches
    vec = min(run_time, best_of(run, args.repeat))
    host = np.arange(n) // SLOTS
    hlayout = Layout(np.where(host % 2, "slow", "fast").tolist(), host)
    hrun = lambda hlayout=hlayout, tree=tree: predict.bcast(hprof, hlayout, tree, SIZES)  # noqa: E731
    vec_hosts = best_of(hrun, args.repeat)
    if e <= 12:
        want = [max(reference.bcast_reference(hprof, hlayout, tree, m)) for m in SIZES]
        assert np.allclose(hrun(), want)
    row = {
        "ranks": n,
        "tree_build_s": t_build,
        "vectorised_first_s": vec_first,
        "vectorised_s": vec,
        "vectorised_hosts_s": vec_hosts,
        "per_rank_python_s": float("nan"),
        "speedup": float("nan"),
    }
    if e <= args.ref_max_exp:
        lay = layout.tolist()
        ref = best_of(lambda lay=lay, tree=tree: [max(reference.bcast_reference(prof, lay, tree, m)) for m in SIZES], 1)
        got = predict.bcast(prof, layout, tree, SIZES)
        want = [max(reference.bcast_reference(prof, lay, tree, m)) for m in SIZES] if e <= 12 else got
        assert np.allclose(got, want)
        row.update(per_rank_python_s=ref, speedup=ref / vec_first)
    print(
        f"n=2^{e:<2d} build {t_build:7.3f} s  vectorised {vec_first:7.4f} s (first) {vec:7.4f} s (cached)"
        f"  {SLOTS}/host {vec_hosts:7.4f} s"
        f"  python {row['per_rank_python_s']:8.3f} s  speed-up {row['speedup']:7.1f}x",
        flush=True,
    )
    return row


def _claims(rows: list[dict]) -> list[str]:
    """The claims the rows bear out (2**18: the speed-up over the recursion; 2**20: the times), as markdown."""
    body = []
    by_n = {r["ranks"]: r for r in rows}
    if 2**18 in by_n and by_n[2**18]["speedup"] == by_n[2**18]["speedup"]:
        sp = by_n[2**18]["speedup"]
        body.append(
            claim(
                "2^18 ranks x 3 sizes: vectorised at least 20x faster than the per-rank recursion",
                sp >= 20,
                f"{sp:.0f}x",
            )
        )
    if 2**20 in by_n:
        r = by_n[2**20]
        body.append(
            claim(
                "2^20 ranks x 3 sizes predicted in under 0.2 s",
                r["vectorised_first_s"] < 0.2,
                f"{r['vectorised_first_s']:.3f} s (first call); building the tree takes another "
                f"{r['tree_build_s']:.3f} s",
            )
        )
        body.append(
            claim(
                f"2^20 ranks x 3 sizes with {SLOTS} ranks per host predicted in under 0.5 s",
                r["vectorised_hosts_s"] < 0.5,
                f"{r['vectorised_hosts_s']:.3f} s (one rank per host: {r['vectorised_s']:.3f} s)",
            )
        )
    return body


def main() -> None:
    p = parser("perf_predict", __doc__)
    p.add_argument("--max-exp", type=int, default=20)
    p.add_argument("--ref-max-exp", type=int, default=18)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    out = outdir(args.out)
    prof = paper_profile()
    hprof = dataclasses.replace(prof, shm=SHM)
    sys.setrecursionlimit(10000)
    rows = [_row(e, args, prof, hprof) for e in range(10, args.max_exp + 1, 2)]
    write_csv(out / "perf_predict.csv", rows)
    body = [
        md_table(rows, fmt="{:.4g}"),
        "\nspeed-up = per-rank Python recursion / vectorised first call (per-tree caches included).\n\n",
        *_claims(rows),
    ]
    write_markdown(out / "perf_predict.md", "Prediction speed: binomial broadcast, 3 sizes", body)
    print("".join(body[2:]), end="")


if __name__ == "__main__":
    main()
