"""Table 2 of Banikazemi et al.: one-way latency between fast and slow nodes, from the paper profile (`hnow predict`).

The paper measured 170/200/200/230 µs for 0-byte messages (fast->fast, fast->slow, slow->fast, slow->slow). The
model reproduces them from Table 1 with Rc stored as Table-1 Rc - Xc (docs/model.md explains the convention).

Paper: Banikazemi, Sampathkumar, Prabhu, Panda, Sadayappan, "Communication Modeling of Heterogeneous Networks of
Workstations for Performance Characterization of Collective Operations".
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from common import claim, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402

from hnowmodel import paper_profile, predict  # noqa: E402

PAPER = {("fast", "fast"): 170.0, ("fast", "slow"): 200.0, ("slow", "fast"): 200.0, ("slow", "slow"): 230.0}
SIZES = [0, 1024, 4096, 16384, 65536]


def main() -> None:
    args = parser("table2", __doc__).parse_args()
    out = outdir(args.out)
    prof = paper_profile()
    rows = []
    for (a, b), paper in PAPER.items():
        t = predict.ptp(prof, a, b, SIZES)
        rows += [
            {"from": a, "to": b, "size": s, "time_us": float(v), "paper_us": paper if s == 0 else ""}
            for s, v in zip(SIZES, t, strict=True)
        ]
    write_csv(out / "table2.csv", rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    for a, b in PAPER:
        ax.plot(SIZES, [r["time_us"] for r in rows if (r["from"], r["to"]) == (a, b)], marker="o", label=f"{a}->{b}")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("one-way time (µs)")
    ax.set_title("Point-to-point time, paper profile")
    ax.legend()
    save_png(fig, out / "table2.png")
    zero = [r for r in rows if r["size"] == 0]
    ok = all(abs(r["time_us"] - r["paper_us"]) < 1e-9 for r in zero)
    body = [
        md_table(zero, ["from", "to", "time_us", "paper_us"]),
        "\n",
        claim(
            "Table 2 (0-byte one-way latency) reproduced exactly",
            ok,
            ", ".join(f"{r['from']}->{r['to']} {r['time_us']:.0f} µs" for r in zero),
        ),
    ]
    write_markdown(out / "table2.md", "Table 2: point-to-point latency", body)
    print("".join(body))


if __name__ == "__main__":
    main()
