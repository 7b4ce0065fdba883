"""Figure 7 of Banikazemi et al.: broadcast over binomial, sequential and hierarchical trees, half fast / half slow.

8 and 16 nodes, sizes 0-64 KiB, paper profile. Paper's claims: on 4+4 the binomial tree is the slowest, the
hierarchical tree is best for small messages and the sequential tree for large ones; on 16 nodes hierarchical wins.

Paper: Banikazemi, Sampathkumar, Prabhu, Panda, Sadayappan, "Communication Modeling of Heterogeneous Networks of
Workstations for Performance Characterization of Collective Operations".
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from common import claim, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402

from hnowmodel import paper_profile, predict, trees  # noqa: E402
from hnowmodel.sizes import format_size, parse_sizes  # noqa: E402

TREES = ["binomial", "sequential", "hierarchical"]
SIZES = parse_sizes("0,256,1K,2K,4K,8K,16K,32K,64K")


def main() -> None:
    args = parser("fig7_tree_choice", __doc__).parse_args()
    out = outdir(args.out)
    prof = paper_profile()
    rows = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, n in zip(axes, (8, 16), strict=True):
        layout = ["fast"] * (n // 2) + ["slow"] * (n // 2)
        for name in TREES:
            t = predict.bcast(prof, layout, trees.make_tree(name, n, layout=layout, profile=prof), SIZES)
            rows += [{"nodes": n, "tree": name, "size": s, "time_us": float(v)} for s, v in zip(SIZES, t, strict=True)]
            ax.plot(SIZES, t / 1000, marker="o", label=name)
        ax.set_title(f"broadcast, {n // 2} fast + {n // 2} slow")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("predicted time (ms)")
        ax.legend()
    save_png(fig, out / "fig7_tree_choice.png")
    write_csv(out / "fig7_tree_choice.csv", rows)

    def t(n, name, s):
        return next(r["time_us"] for r in rows if (r["nodes"], r["tree"], r["size"]) == (n, name, s))

    def best(n, s):
        return min(TREES, key=lambda name: t(n, name, s))

    small = [s for s in SIZES if s <= 1024]
    large = [s for s in SIZES if s >= 8192]
    cross = next((s for s in SIZES if t(8, "sequential", s) < t(8, "hierarchical", s)), None)
    body = [
        md_table([{"size": format_size(s), **{k: t(8, k, s) for k in TREES}} for s in SIZES]),
        "\n(8 nodes, µs)\n\n",
        claim(
            "8 nodes (4+4): binomial is the slowest tree at every size",
            all(best(8, s) != "binomial" and t(8, "binomial", s) == max(t(8, k, s) for k in TREES) for s in SIZES),
        ),
        claim(
            "8 nodes: hierarchical is best for small messages (paper: up to 4 KiB)",
            all(best(8, s) == "hierarchical" for s in small),
            f"sequential overtakes hierarchical from {format_size(cross) if cross is not None else 'never'} here; "
            + "; ".join(
                f"{format_size(s)}: hierarchical {t(8, 'hierarchical', s):.1f} vs sequential "
                f"{t(8, 'sequential', s):.1f} µs"
                for s in (1024, 4096)
            ),
        ),
        claim(
            "8 nodes: sequential is best for large messages (paper: above 4 KiB)",
            all(best(8, s) == "sequential" for s in large),
        ),
        claim(
            "16 nodes (8+8): hierarchical outperforms binomial and sequential",
            all(best(16, s) == "hierarchical" for s in SIZES),
            "best tree per size: " + ", ".join(f"{format_size(s)} {best(16, s)}" for s in SIZES),
        ),
    ]
    body.append(
        "\nThe hierarchical tree here is our reading of Fig. 6c (binomial among the fast ranks, then each fast rank"
        " serves an equal share of the slow ranks, in the order the fast ranks are reached); see docs/model.md."
        " The paper's exact tree and measured parameters are not fully given, so crossover sizes can differ.\n"
    )
    write_markdown(out / "fig7_tree_choice.md", "Figure 7: choice of broadcast tree", body)
    print("".join(body))


if __name__ == "__main__":
    main()
