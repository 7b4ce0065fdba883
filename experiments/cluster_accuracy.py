"""The model checked on a real heterogeneous cluster: a virtual cluster of 6 hosts at 3 speeds (mixed host order).

On one machine as root: network namespaces joined by ``tbf``-shaped veth links (``hnow cluster``), MPICH over TCP.
Measured, with the cluster up for the whole run:

1. calibration with ``--layout auto``: which group each host lands in (the spec's rates are read only here, to
   check the grouping, never by the calibration);
2. each measured link's one-way per-byte cost vs the shaped line rate with Ethernet framing,
   ``8 / min(egress_src, ingress_dst) × 1514/1448`` µs per byte;
3. native MPICH bcast/scatter/gather (pinned binomial), 6 ranks, 16-256 KiB: predicted vs measured under every
   model variant of each operation (``hnowmodel.ops``), side by side;
4. trees run by the tree executor (binomial, sequential, fnf, optimal chosen at each size under the operation's
   default variant) under every variant, the measured gain of the chosen tree over binomial vs the predicted
   gain, and the gain of the rank order the search picks for MPICH's native binomial broadcast.

Writes ``cluster_accuracy.csv`` (every predicted/measured row), ``links.csv``, ``grouping.csv``, ``gains.csv``,
``cluster_accuracy.png`` and ``cluster_accuracy.md`` under ``experiments/out/cluster_accuracy/``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from common import claim, command_line, error_summary, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402

import hnowmodel as hm  # noqa: E402
from hnowmodel import ops  # noqa: E402
from hnowmodel.jobs import build_trees, compare_rows, mpi_lock  # noqa: E402
from hnowmodel.jobs.results import Measurement, rows_as_dicts  # noqa: E402
from hnowmodel.sizes import format_size, parse_sizes  # noqa: E402
from hnowmodel.units import FRAMING  # noqa: E402

SPEC = {
    "schema": "hnowmodel.cluster/1",
    "name": "acc",
    "hosts": [
        {"name": "f1", "egress_mbit": 150, "ingress_mbit": 150, "slots": 1},
        {"name": "s1", "egress_mbit": 20, "ingress_mbit": 20, "slots": 1},
        {"name": "m1", "egress_mbit": 50, "ingress_mbit": 50, "slots": 1},
        {"name": "m2", "egress_mbit": 50, "ingress_mbit": 50, "slots": 1},
        {"name": "f2", "egress_mbit": 150, "ingress_mbit": 150, "slots": 1},
        {"name": "s2", "egress_mbit": 20, "ingress_mbit": 20, "slots": 1},
    ],
}
SIZES = parse_sizes("16K,32K,64K,128K,256K")
TREES = ("binomial", "sequential", "fnf")


def _gain(base: float | None, new: float | None) -> float | None:
    return None if base is None or new is None or not base > 0 else 100.0 * (base - new) / base


@dataclass(frozen=True)
class Runs:
    """What the cluster run measured: the calibrated profile and its layout, the native measurement, one tree
    measurement per operation, the rank-order measurement, the trees built, and the timings (s)."""

    prof: Any
    lay: list[str]
    m_native: Measurement
    m_trees: list[Measurement]
    m_ro: Measurement
    built: dict[str, Any]
    t_up: float
    t_cal: float
    t_all: float


def _setup(args: argparse.Namespace) -> tuple[Path, Path, list[int]]:
    """The output folder, the spec written into it, and the sizes."""
    out = outdir(args.out)
    spec_doc = json.loads(open(args.spec).read()) if args.spec else SPEC
    spec_path = out / "spec.json"
    spec_path.write_text(json.dumps(spec_doc, indent=1))
    sizes = parse_sizes(args.sizes) if args.sizes else SIZES
    return out, spec_path, sizes


def _run(spec_path: Path, n: int, sizes: list[int], args: argparse.Namespace, out: Path) -> Runs:
    """Up the cluster, calibrate, measure native, the trees per operation and the rank order; down."""
    t0 = time.monotonic()
    launch = {"cluster": str(spec_path), "progress": True}
    with hm.cluster.using(str(spec_path)):
        t_up = time.monotonic() - t0
        with mpi_lock(args.lock):
            prof = hm.calibrate(n, layout="auto", output=out / "profile.json", force=True, **launch)
        t_cal = time.monotonic() - t0 - t_up
        lay = list(prof.layout)
        with mpi_lock(args.lock):
            m_native = hm.measure(
                n, op=list(ops.tree_names()), tree="native", sizes=sizes, reps=args.reps, both=False, **launch
            )
        tree_specs = [*TREES, *[f"optimal:{op}:{m}" for op in ops.tree_names() for m in sizes]]
        built = build_trees(tree_specs, n, root=0, layout=lay, profile=prof)
        per_op = {
            op: {k: v for k, v in built.items() if not k.startswith("optimal:") or k.split(":")[1] == op}
            for op in ops.tree_names()
        }
        m_trees = []
        for op in ops.tree_names():
            with mpi_lock(args.lock):
                mm = hm.measure(n, op=op, tree=per_op[op], sizes=sizes, reps=args.reps, both=False, **launch)
            m_trees.append(mm)
        with mpi_lock(args.lock):
            m_ro = hm.measure(
                n,
                op="bcast",
                tree="native",
                sizes=[max(sizes)],
                profile=prof,
                layout=",".join(lay),
                reps=args.reps,
                both=False,
                reorder=True,
                **launch,
            )
    t_all = time.monotonic() - t0
    return Runs(prof, lay, m_native, m_trees, m_ro, built, t_up, t_cal, t_all)


def _variant_rows(runs: Runs) -> list[dict]:
    """Every measurement predicted under every variant of its op (one row each)."""
    prof, lay = runs.prof, runs.lay
    library = str(runs.m_native.run.get("library", "MPICH"))
    rows: list[dict] = []
    for kind, meas in [("native", runs.m_native), *[("tree", mm) for mm in runs.m_trees]]:
        for op in ops.tree_names():
            sub = Measurement(tuple(r for r in meas.rows if r.op == op), meas.run)
            if not sub.rows:
                continue
            for v in ops.get(op).variants:
                for r in rows_as_dicts(compare_rows(prof, lay, sub, runs.built, {op: v}, 0, library)):
                    if r["tree"].startswith("optimal:"):
                        if int(r["tree"].split(":")[2]) != r["size"]:
                            continue  # each size's row comes from the tree chosen at that size
                        r["tree"] = "optimal"
                    rows.append({"kind": kind, **r})
    return rows


def _grouping(host_of: list[str], lay: list[str], rate: dict) -> tuple[list[dict], bool]:
    """The type found for each host beside its spec rates, and whether every speed got one type of its own."""
    types = {h: t for h, t in zip(host_of, lay, strict=True)}
    grouping = [
        {"host": h, "egress_mbit": rate[h][0], "ingress_mbit": rate[h][1], "type_found": types[h]}
        for h in dict.fromkeys(host_of)
    ]
    by_rate: dict[tuple, set] = {}
    for g in grouping:
        by_rate.setdefault((g["egress_mbit"], g["ingress_mbit"]), set()).add(g["type_found"])
    grouped_ok = all(len(v) == 1 for v in by_rate.values()) and len({t for v in by_rate.values() for t in v}) == len(
        by_rate
    )
    return grouping, grouped_ok


def _links(prof: Any, rate: dict) -> list[dict]:
    """Each measured link's per-byte costs beside the shaped line rate with framing."""
    links = []
    for name, lc in prof.provenance["link_costs"].items():
        a, b = lc["hosts"]
        expect = 8.0 / min(rate[a][0], rate[b][1]) * FRAMING
        links.append(
            {
                "link": name,
                "hosts": f"{a}->{b}",
                "shaped_mbit": min(rate[a][0], rate[b][1]),
                "expected_us_per_byte": expect,
                "one_way_us_per_byte": lc["one_way_us_per_byte"],
                "one_way_error_pct": 100 * (lc["one_way_us_per_byte"] - expect) / expect,
                "Xm_us_per_byte": lc["Xm_us_per_byte"],
                "Xm_error_pct": 100 * (lc["Xm_us_per_byte"] - expect) / expect,
                "burst_bytes": lc["burst_bytes"],
            }
        )
    return links


def _gain_row(what: str, op: str, size: int, variant: str, pg: float | None, mg: float | None) -> dict:
    return {
        "what": what,
        "op": op,
        "size": size,
        "variant": variant,
        "predicted_gain_pct": pg,
        "measured_gain_pct": mg,
        "difference_points": None if pg is None or mg is None else pg - mg,
    }


def _gains(rows: list[dict], runs: Runs, sizes: list[int]) -> list[dict]:
    """Optimal vs binomial per operation and size (default variant), then the rank order's gain."""
    gains = []
    for op in ops.tree_names():
        dv = ops.default_variant(op, runs.prof)
        for m in sizes:
            by = {
                r["tree"]: r
                for r in rows
                if r["kind"] == "tree" and r["op"] == op and r["size"] == m and r["variant"] == dv
            }
            if "binomial" in by and "optimal" in by:
                pg = _gain(by["binomial"]["predicted_us"], by["optimal"]["predicted_us"])
                mg = _gain(by["binomial"]["measured_us"], by["optimal"]["measured_us"])
                gains.append(_gain_row("optimal vs binomial", op, m, dv, pg, mg))
    for r in runs.m_ro.rows:
        pg, mg = r.extra.get("predicted_gain_pct"), r.extra.get("measured_gain_pct")
        gains.append(
            _gain_row("rank order, native binomial", r.op, r.size, ops.default_variant(r.op, runs.prof), pg, mg)
        )
    return gains


def _summary(rows: list[dict], prof: Any) -> list[dict]:
    """Error statistics per (kind, variant), then per kind under each operation's default variant."""
    summ = []
    for kind in ("native", "tree"):
        variants = sorted({r["variant"] for r in rows if r["kind"] == kind})
        for v in variants:
            st = error_summary([r for r in rows if r["kind"] == kind and r["variant"] == v])
            summ.append({"kind": kind, "variant": v, **st})
        # what hnow uses unless told otherwise: each operation's default variant for this profile
        mine = [r for r in rows if r["kind"] == kind and r["variant"] == ops.default_variant(r["op"], prof)]
        label = "default (" + ", ".join(f"{o}: {ops.default_variant(o, prof)}" for o in ops.tree_names()) + ")"
        summ.append({"kind": kind, "variant": label, **error_summary(mine)})
    return summ


def _plot(rows: list[dict], path: Path) -> None:
    """Error vs size per variant, native and trees."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for ax, kind in zip(axes, ("native", "tree"), strict=True):
        for v in sorted({r["variant"] for r in rows if r["kind"] == kind}):
            pts = [
                (r["size"], r["error_pct"])
                for r in rows
                if r["kind"] == kind and r["variant"] == v and r["error_pct"] is not None
            ]
            if pts:
                ax.scatter([x for x, _ in pts], [y for _, y in pts], label=v, s=18, alpha=0.7)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes per rank)")
        ax.set_title(f"{kind}: predicted vs measured")
        ax.legend(title="variant")
    axes[0].set_ylabel("error % (predicted - measured)/measured")
    save_png(fig, path)
    plt.close(fig)


def _claims(runs: Runs, grouped_ok: bool, links: list[dict], summ: list[dict], gains: list[dict]) -> list[str]:
    """The claim lines of the report."""

    def best(kind: str) -> dict:
        # hnow's default (each operation's variant for this profile: the one that measures best)
        return next(s for s in summ if s["kind"] == kind and s["variant"].startswith("default"))

    best_native, best_tree = best("native"), best("tree")
    link_ok = all(abs(lk["one_way_error_pct"]) <= 5 for lk in links)
    gain_rows = [g for g in gains if g["difference_points"] is not None]
    return [
        claim("auto layout groups every host with the others of its speed", grouped_ok),
        claim(
            "every link's one-way per-byte cost within 5 % of the shaped line rate (with framing)",
            link_ok,
            f"worst {max(abs(lk['one_way_error_pct']) for lk in links):.2f} %",
        ),
        claim(
            "native bcast/scatter/gather: median |error| <= 3 %, max <= 10 % (hnow's default variants)",
            best_native["median_abs_error_pct"] <= 3 and best_native["max_abs_error_pct"] <= 10,
            f"{best_native['variant']}: {best_native['median_abs_error_pct']:.1f} % / "
            f"{best_native['max_abs_error_pct']:.1f} %",
        ),
        claim(
            "tree executor: median |error| <= 5 %, max <= 15 % (hnow's default variants)",
            best_tree["median_abs_error_pct"] <= 5 and best_tree["max_abs_error_pct"] <= 15,
            f"{best_tree['variant']}: {best_tree['median_abs_error_pct']:.1f} % / "
            f"{best_tree['max_abs_error_pct']:.1f} %",
        ),
        claim(
            "measured gain of the chosen tree / rank order within 5 points of the predicted gain",
            all(abs(g["difference_points"]) <= 5 for g in gain_rows),
            f"worst {max((abs(g['difference_points']) for g in gain_rows), default=math.nan):.1f} points",
        ),
    ]


def _per_tree(rows: list[dict]) -> list[dict]:
    """Error statistics per (kind, op, tree, variant), in the order the rows first show them."""
    return [
        {
            "kind": k,
            "op": o,
            "tree": t,
            "variant": v,
            **error_summary([r for r in rows if (r["kind"], r["op"], r["tree"], r["variant"]) == (k, o, t, v)]),
        }
        for k, o, t, v in dict.fromkeys((r["kind"], r["op"], r["tree"], r["variant"]) for r in rows)
    ]


@dataclass(frozen=True)
class Tables:
    """The report's tables: every row, the grouping (and whether it holds), the links, the gains, the summary."""

    rows: list[dict]
    grouping: list[dict]
    grouped_ok: bool
    links: list[dict]
    gains: list[dict]
    summ: list[dict]


def _markdown(runs: Runs, tb: Tables, reps: int, sizes: list[int]) -> str:
    """The report's body (below its title)."""
    m_native = runs.m_native
    body = [
        f"Reproduce with: `{command_line()}` (as root). Cluster up in {runs.t_up:.1f} s; calibration "
        f"{runs.t_cal:.0f} s; whole run {runs.t_all:.0f} s. MPI: {m_native.run.get('library_version')}; timing: "
        f"{m_native.run.get('method')}, {m_native.run.get('stat')} of {reps} repetitions.",
        "",
        "## Claims",
        *_claims(runs, tb.grouped_ok, tb.links, tb.summ, tb.gains),
        "",
        "## Auto layout (spec rates shown only to check it)",
        md_table(tb.grouping),
        "",
        "## Links: one-way per-byte cost vs the shaped line rate × 1514/1448",
        md_table(tb.links, fmt="{:.4g}"),
        f"\nToken-bucket burst fitted: {runs.prof.extensions.get('network', {}).get('burst_bytes', 0):.0f} bytes "
        f"(median over links; tbf burst 8192 B of frames = {8192 / FRAMING:.0f} B of payload).",
        "",
        "## Accuracy per variant (every operation and size together)",
        md_table(tb.summ),
        "",
        "## Per operation, tree and variant",
        md_table(_per_tree(tb.rows)),
        "",
        "## Gains (each operation's default variant for this profile)",
        md_table(tb.gains),
        "",
        f"Sizes: {', '.join(format_size(m) for m in sizes)} per rank. Rows: `cluster_accuracy.csv`.",
    ]
    return "\n".join(body) + "\n"


def main() -> None:
    p = parser("cluster_accuracy", __doc__)
    p.add_argument("--spec", default=None, help="cluster spec file (default: the 6-host spec in this script)")
    p.add_argument("--reps", type=int, default=5, help="timing repetitions per row (default 5)")
    p.add_argument("--sizes", default=None, help="sizes (default 16K,32K,64K,128K,256K)")
    p.add_argument("--lock", default=None, help="flock this file around every MPI job (a machine shared with others)")
    args = p.parse_args()
    out, spec_path, sizes = _setup(args)
    spec = hm.cluster.load_spec(str(spec_path))
    n = sum(h.slots for h in spec.hosts)
    host_of = hm.cluster.rank_hosts([(h.name, h.slots) for h in spec.hosts], n)
    rate = {h.name: (h.egress_mbit, h.ingress_mbit) for h in spec.hosts}
    runs = _run(spec_path, n, sizes, args, out)
    rows = _variant_rows(runs)
    grouping, grouped_ok = _grouping(host_of, runs.lay, rate)
    links = _links(runs.prof, rate)
    gains = _gains(rows, runs, sizes)
    write_csv(out / "cluster_accuracy.csv", rows)
    write_csv(out / "links.csv", links)
    write_csv(out / "grouping.csv", grouping)
    write_csv(out / "gains.csv", gains)
    summ = _summary(rows, runs.prof)
    _plot(rows, out / "cluster_accuracy.png")
    tables = Tables(rows, grouping, grouped_ok, links, gains, summ)
    write_markdown(
        out / "cluster_accuracy.md",
        "Model accuracy on a virtual heterogeneous cluster",
        [_markdown(runs, tables, args.reps, sizes)],
    )
    print((out / "cluster_accuracy.md").read_text())


if __name__ == "__main__":
    main()
