"""What the one prediction entry costs over the engines it calls: ``hm.predict("bcast", …, "binomial", …)`` (the
registry, the variant, the operation's movement) beside the engine called directly, in one run.

Two cases, each the best of ``--repeat`` calls: the paper's closed form (``hnowmodel.closedform.bcast``) on 2**16
ranks alternately fast and slow (the paper profile), and the flow engine's ``flow-rr`` (``hnowmodel.flow.bcast``)
on a network profile (tests/data/golden/cluster_profile.json) of 64 hosts x 1 rank. ``ratio`` = entry / engine:
the issue's bound for binomial bcast through the new path is 1.5x.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from common import best_of, claim, md_table, outdir, parser, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel import closedform, flow, trees

SIZES = [0, 1024, 65536]
GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden"


def _cases() -> list[tuple[str, object, list[str], object, object]]:
    """(name, profile, layout, engine call, entry call) of each case."""
    paper = hm.paper_profile()
    n = 1 << 16
    lay = np.where(np.arange(n) % 2 == 0, "fast", "slow").tolist()
    tree = trees.binomial(n)
    net = hm.Profile.load(GOLDEN / "cluster_profile.json")
    types = [d["type"] for d in sorted(net.nodes, key=lambda d: d["rank"])]
    nlay = [types[i % len(types)] for i in range(64)]
    ntree = trees.binomial(64)
    return [
        (
            "paper, 2^16 ranks",
            lambda: closedform.bcast(paper, lay, tree, SIZES),
            lambda: hm.predict("bcast", paper, lay, tree, SIZES),
        ),
        (
            "flow-rr, 64 hosts",
            lambda: flow.bcast(net, nlay, ntree, SIZES, sharing="rr"),
            lambda: hm.predict("bcast", net, nlay, ntree, SIZES),
        ),
    ]


def main() -> None:
    p = parser("perf_paths", __doc__)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    out = outdir(args.out)
    rows, claims = [], []
    for name, engine, entry in _cases():
        np.testing.assert_allclose(entry(), engine(), rtol=1e-12)  # the same numbers
        e_s, p_s = best_of(engine, args.repeat), best_of(entry, args.repeat)
        rows.append({"case": name, "engine_s": e_s, "entry_s": p_s, "ratio": p_s / e_s})
        print(f"{name:20s} engine {e_s * 1e3:9.2f} ms  hm.predict {p_s * 1e3:9.2f} ms  ratio {p_s / e_s:5.2f}")
        claims.append(claim(f"{name}: binomial bcast through hm.predict within 1.5x of the engine", p_s / e_s <= 1.5,
                            f"{p_s / e_s:.2f}x"))  # fmt: skip
    write_csv(out / "perf_paths.csv", rows)
    body = [md_table(rows, fmt="{:.4g}"), "", *claims]
    write_markdown(out / "perf_paths.md", "hm.predict beside the engines", body)
    print("\n".join(claims))


if __name__ == "__main__":
    main()
