"""Proof on a virtual heterogeneous cluster that the settings ``hnow export`` writes pay what they are predicted to.

On one machine as root: 6 hosts at 3 speeds, mixed in host order (``hnow cluster``: network namespaces and
``tbf``-shaped links), the MPI library over TCP. Per MPI library (:data:`LIBRARIES`: MPICH, Open MPI in the
environment of ``hnow setup-openmpi``, Intel MPI in that of ``hnow setup-intelmpi``; ``--libraries`` takes their
names or ``mpich,openmpi,intelmpi``), with the cluster's hosts as the spec lists them:

1. calibrate once (``hm.calibrate(np=6, cluster=spec, layout="auto")``);
2. for each operation and size, export from that profile what an application would run
   (``hm.export.export(profile, ["hostfile", <the library's format>], op=OP, size=SIZE,
   algorithms=AlgorithmRequest(ops=[OP], sizes=[SIZE]))``):
   the rank order under which the library's default algorithm is predicted fastest, and in that order the
   library's fastest algorithm (``choose_mpich``, ``choose_ompi``, ``choose_impi``);
3. measure (medians of synchronised single collectives) and predict, each with the profile's default model variant:

   * **default** - the library's own collective as it runs by default, pinned as ``native:ALGO`` (MPICH's default
     table picks binomial here; Open MPI's fixed rules pick per size; where that default is
     an algorithm hnow does not model (none here since linear_nb and linear_sync are), the operation and size are not
     compared) on the ranks in the spec's host order;
   * **exported** - the exported algorithm (``native:ALGO``; ``native`` where the default was kept), on a cluster
     whose host order is the exported order (hydra fills hosts in order: the exported hostfile);
   * **optimal tree** - ``hm.search.best_tree`` under the profile's default variant, run by the tree executor
     (the send/receive schedule of ``calibrate.treecoll``, the helper an application calls), spec order.

Writes ``export_gain.csv`` (one row per library, operation, size and what: predicted and measured µs, error %,
predicted and measured gain over the default in %, and their difference in points), ``export_gain.md`` (the issue's
claims, holds / does not hold, with the numbers), ``export_gain.png``, the calibrated profile and every export's
files under ``experiments/out/export_gain/``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from common import claim, command_line, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402

import hnowmodel as hm  # noqa: E402
from hnowmodel import ops  # noqa: E402
from hnowmodel.export import AlgorithmRequest  # noqa: E402
from hnowmodel.jobs import mpi_lock  # noqa: E402
from hnowmodel.sizes import format_size, parse_sizes  # noqa: E402

#: Three speeds (60 / 160 / 25 Mbit/s), mixed in host order; the root (rank 0) is a medium host.
SPEC = {
    "schema": "hnowmodel.cluster/1",
    "name": "xgain",
    "hosts": [
        {"name": "m1", "egress_mbit": 60, "ingress_mbit": 60, "slots": 1},
        {"name": "f1", "egress_mbit": 160, "ingress_mbit": 160, "slots": 1},
        {"name": "s1", "egress_mbit": 25, "ingress_mbit": 25, "slots": 1},
        {"name": "m2", "egress_mbit": 60, "ingress_mbit": 60, "slots": 1},
        {"name": "s2", "egress_mbit": 25, "ingress_mbit": 25, "slots": 1},
        {"name": "f2", "egress_mbit": 160, "ingress_mbit": 160, "slots": 1},
    ],
}
SIZES = parse_sizes("16K,64K,256K")
WHATS = ("default", "exported", "optimal tree")
GAIN_POINTS = 5.0  # the bound on |measured gain - predicted gain| of the exported settings
TREE_ERROR_PCT = 5.0  # ... and on |error| of the optimal tree through the helper


@dataclass(frozen=True)
class Library:
    """What the experiment needs to know of one MPI library: its name as it reports itself (``ops`` registry key),
    the ``hm.export`` format that carries its algorithm choice, the attribute of :class:`hm.export.Export` that
    holds the choice (``selection`` for MPICH, ``ompi`` for Open MPI), the function that makes that choice
    (``choose``: ``hm.export.choose_mpich`` / ``choose_ompi``), and the keywords that make
    ``hm.calibrate``/``hm.compare`` run under it."""

    name: str
    export_format: str
    choice_attr: str
    choose: Callable[..., Any]
    launch: Mapping[str, Any] = field(default_factory=dict)

    def order_tree(self, prof: Any, op: str, m: int) -> str:
        """The tree of the algorithm the library runs by default for ``op`` at ``m`` bytes (the rank order is
        chosen for it); binomial where that algorithm is not modelled."""
        (row,) = self.choose(prof, ops=[op], sizes=[m]).rows
        # native_algorithms: a default only the environment pins (MPICH's ch4 composition alpha on shared hosts)
        nat = next((a for a in ops.native_algorithms(op, self.name) if a.algorithm == row.default), None)
        # a default that runs other trees at other sizes (Intel MPI's tuning file): the one at m bytes
        # (and coll/han's default, whose levels depend on the hosts: the profile's own)
        return (nat.tree_on(prof.host_layout or prof.layout, m) or nat.model_tree) if nat is not None else "binomial"

    def row(self, ex: Any) -> Any:
        """The export's one choice row (one operation at one size)."""
        (row,) = getattr(ex, self.choice_attr).rows
        return row

    @staticmethod
    def default_spec(row: Any) -> str | None:
        """The tree spec that runs the library's default algorithm of a choice row, pinned by name (MPICH's default
        table picks binomial here; Open MPI's fixed rules basic_linear, binomial, linear_nb, ...); None where hnow
        does not model that algorithm, so that it cannot be measured as "the default" here."""
        return None if row.default_us is None else f"native:{row.default}"

    def exported_spec(self, row: Any) -> str | None:
        """The tree spec that runs what was exported: the default's where it was kept, else ``native:ALGO``."""
        return self.default_spec(row) if row.chosen == row.default else f"native:{row.chosen}"


#: One entry per MPI library.
LIBRARIES: dict[str, Library] = {
    "MPICH": Library("MPICH", "mpich-json", "selection", hm.export.choose_mpich),
    "Open MPI": Library("Open MPI", "ompi-rules", "ompi", hm.export.choose_ompi, {"mpi": "openmpi"}),
    # the default is the tuning file's choice, run as native:default; the exported I_MPI_ADJUST string as native:ALGO
    "Intel MPI": Library("Intel MPI", "impi-env", "impi", hm.export.choose_impi, {"mpi": "intelmpi"}),
}
#: ``--libraries`` also takes the ``--mpi`` names.
ALIASES = {"mpich": "MPICH", "openmpi": "Open MPI", "intelmpi": "Intel MPI"}


def _gain(base: float | None, new: float | None) -> float | None:
    return None if base is None or new is None or not base > 0 else 100.0 * (base - new) / base


def _spec_in_order(spec: Mapping[str, Any], name: str, hosts: list[str]) -> dict[str, Any]:
    """The spec with its hosts in the order of ``hosts`` (each rank's host, in rank order: hydra fills each host's
    slots in spec order, as the exported hostfile's ``host:SLOTS`` lines say). The exported orders keep each host's
    ranks together (``hm.search.host_block_order``); an order that splits a host cannot be a spec."""
    by_name = {h["name"]: h for h in spec["hosts"]}
    order = list(dict.fromkeys(hosts))
    runs = [h for i, h in enumerate(hosts) if i == 0 or hosts[i - 1] != h]
    if runs != order or any(hosts.count(h) != by_name[h].get("slots", 1) for h in order):
        raise SystemExit(f"export_gain: the exported order {' '.join(hosts)} does not keep each host's ranks together")
    return {**spec, "name": name, "hosts": [by_name[h] for h in order]}


@dataclass(frozen=True)
class Job:
    """One library's run: the library, the spec (as a document and as the file written from it), the number of
    ranks and their hosts in spec order, the timing repetitions, the lock file, the output folder and the progress
    printer."""

    lib: Library
    spec_doc: dict
    spec_path: Path
    n: int
    hosts: list[str]
    reps: int
    lock: str | None
    out: Path
    say: Callable[[str], None]

    @property
    def launch(self) -> dict[str, Any]:
        """The keywords every ``hm.calibrate``/``hm.compare`` of this run takes."""
        return {"progress": True, **self.lib.launch}


def _export_one(job: Job, prof: Any, lay: list[str], op: str, m: int) -> dict[str, Any]:
    """Export the rank order and in it the library's algorithm for ``op`` at ``m`` bytes; write its files."""
    lib = job.lib
    tree = lib.order_tree(prof, op, m)
    ex = hm.export.export(
        prof,
        ["hostfile", lib.export_format],
        op=op,
        size=m,
        tree=tree,
        algorithms=AlgorithmRequest(ops=[op], sizes=[m]),
    )
    row = lib.row(ex)
    default, chosen = row.default, row.chosen
    perm = list(ex.order.perm)
    hm.export.write_export(ex, job.out / "exports" / lib.name / f"{op}-{format_size(m)}", force=True)
    e = {
        "op": op,
        "size": m,
        "order": [job.hosts[r] for r in perm],
        "layout": [lay[r] for r in perm],
        "library_default": default,
        "algorithm": chosen,
        "tree": lib.exported_spec(row),
        "default_tree": lib.default_spec(row),
        "order_tree": tree,
        "order_gain_pct": ex.order.gain_pct,
        "algorithm_gain_pct": row.gain_pct,
    }
    job.say(f"{lib.name}: {op} {format_size(m)}: order {' '.join(e['order'])}, algorithm {chosen} (default {default})")
    return e


def _measure_spec_order(
    job: Job, prof: Any, lay: list[str], exports: dict[tuple[str, int], dict[str, Any]], sizes: list[int]
) -> tuple[dict[tuple[str, int, str], Any], dict[tuple[str, int], Any], Any]:
    """The library's default and the optimal trees, in the spec's order, one job per size: the compared rows by
    (op, size, what), the best tree by (op, size) and the library's version."""
    rows_cmp: dict[tuple[str, int, str], Any] = {}
    best: dict[tuple[str, int], Any] = {}
    library_version = None
    for m in sizes:
        defaults = {op: exports[(op, m)]["default_tree"] for op in ops.tree_names()}
        trees: dict[str, Any] = {t: None for t in defaults.values() if t is not None}
        for op in ops.tree_names():
            v = ops.default_variant(op, prof)
            best[(op, m)] = hm.search.best_tree(prof, lay, op=op, size=m, variant=v).tree
            trees[f"optimal:{op}:{m}"] = best[(op, m)]
        job.say(f"{job.lib.name}: measuring default native and the optimal trees at {format_size(m)} (spec order)")
        with mpi_lock(job.lock):
            cmp = hm.compare(
                prof,
                cluster=str(job.spec_path),
                np=job.n,
                ops=list(ops.tree_names()),
                trees=trees,
                sizes=[m],
                reps=job.reps,
                both=False,
                **job.launch,
            )
        for r in cmp.rows:
            if r.tree == defaults[r.op]:
                rows_cmp[(r.op, r.size, "default")] = r
            elif r.tree.startswith("optimal:"):
                rows_cmp[(r.op, r.size, "optimal tree")] = r
        library_version = cmp.run.get("library_version")
    return rows_cmp, best, library_version


def _measure_exported(
    job: Job, prof: Any, exports: dict[tuple[str, int], dict[str, Any]], rows_cmp: dict[tuple[str, int, str], Any]
) -> None:
    """The exported settings: one cluster per distinct order (its hosts in that order), one job per algorithm and
    operation; their rows go into ``rows_cmp`` under ``exported``."""
    lib = job.lib
    orders = list(dict.fromkeys(tuple(e["order"]) for e in exports.values()))
    for i, order in enumerate(orders):
        name = job.spec_doc["name"] if list(order) == job.hosts else f"xgo{i + 1}"
        o_path = job.out / f"spec-{lib.name}-{name}.json"
        o_path.write_text(json.dumps(_spec_in_order(job.spec_doc, name, list(order)), indent=1))
        mine = [e for e in exports.values() if tuple(e["order"]) == order]
        with hm.cluster.using(str(o_path)):
            for tree, op in dict.fromkeys((e["tree"], e["op"]) for e in mine if e["tree"] is not None):
                szs = [e["size"] for e in mine if (e["tree"], e["op"]) == (tree, op)]
                job.say(
                    f"{lib.name}: measuring exported {tree} {op} at {', '.join(map(format_size, szs))} in order "
                    f"{' '.join(order)} (cluster {name})"
                )
                with mpi_lock(job.lock):
                    cmp = hm.compare(
                        prof,
                        cluster=str(o_path),
                        np=job.n,
                        layout=mine[0]["layout"],
                        ops=[op],
                        trees=[tree],
                        sizes=szs,
                        reps=job.reps,
                        both=False,
                        **job.launch,
                    )
                for r in cmp.rows:
                    rows_cmp[(r.op, r.size, "exported")] = r


def _result_row(job: Job, what: str, r: Any, base: Any, e: dict[str, Any], best: Any) -> dict[str, Any]:
    """One CSV row: ``r`` (what was measured as ``what``) beside the default ``base`` (None: not modelled), with
    the export ``e`` it belongs to and the best tree ``best`` of its operation and size."""
    pg = None if what == "default" or base is None else _gain(base.predicted_us, r.predicted_us)
    mg = None if what == "default" or base is None else _gain(base.measured_us, r.measured_us)
    return {
        "library": job.lib.name,
        "op": e["op"],
        "size": e["size"],
        "what": what,
        "predicted_us": r.predicted_us,
        "measured_us": r.measured_us,
        "error_pct": r.error_pct,
        "predicted_gain_pct": pg,
        "measured_gain_pct": mg,
        "difference_points": None if pg is None or mg is None else mg - pg,
        "setting": {
            "default": f"{r.tree} ({e['library_default']}), order {' '.join(job.hosts)}",
            "exported": f"{r.tree} ({e['algorithm']}), order {' '.join(e['order'])}",
            "optimal tree": f"tree executor, parent {best.parent.tolist()}",
        }[what],
        "model_tree": r.model_tree,
        "variant": r.variant,
        "min_us": r.min_us,
        "max_us": r.max_us,
        "error_pct_by_variant": {
            v: None if x is None else round(x, 1) for v, x in r.extra["error_pct_by_variant"].items()
        },
    }


def run_library(lib: Library, spec_doc: dict, sizes: list[int], reps: int, lock: str | None, out: Path, say) -> dict:
    """Calibrate, export, measure and predict for one library; returns its rows, exports and timings."""
    spec_path = out / f"spec-{lib.name}.json"
    spec_path.write_text(json.dumps(spec_doc, indent=1))
    spec = hm.cluster.load_spec(str(spec_path))
    n = sum(h.slots for h in spec.hosts)
    hosts = hm.cluster.rank_hosts([(h.name, h.slots) for h in spec.hosts], n)
    job = Job(lib, spec_doc, spec_path, n, hosts, reps, lock, out, say)
    t0 = time.monotonic()
    with hm.cluster.using(str(spec_path)):
        say(f"{lib.name}: calibrating {n} ranks on hosts {', '.join(hosts)}, layout auto")
        with mpi_lock(lock):
            prof = hm.calibrate(
                n,
                cluster=str(spec_path),
                layout="auto",
                output=out / f"profile-{lib.name}.json",
                force=True,
                **job.launch,
            )
        t_cal = time.monotonic() - t0
        lay = prof.host_layout  # the ranks' types and hosts (several ranks per host: the model takes the hosts)
        say(f"{lib.name}: calibrated in {t_cal:.0f} s; layout {','.join(lay)}")
        # --- exports: per operation and size, the rank order and in it the library's algorithm
        exports = {(op, m): _export_one(job, prof, lay, op, m) for op in ops.tree_names() for m in sizes}
        rows_cmp, best, library_version = _measure_spec_order(job, prof, lay, exports, sizes)
    _measure_exported(job, prof, exports, rows_cmp)
    rows = [
        _result_row(
            job, what, rows_cmp[(op, m, what)], rows_cmp.get((op, m, "default")), exports[(op, m)], best[(op, m)]
        )
        for op in ops.tree_names()
        for m in sizes
        for what in WHATS
        if rows_cmp.get((op, m, what)) is not None
    ]
    return {
        "rows": rows,
        "exports": list(exports.values()),
        "layout": lay,
        "hosts": hosts,
        "calibration_s": t_cal,
        "library_version": library_version,
        "variants": {op: ops.default_variant(op, prof) for op in ops.tree_names()},
    }


def _plot(rows: list[dict], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    ax = axes[0]
    marker = {"exported": "o", "optimal tree": "^"}
    color = {"bcast": "tab:blue", "scatter": "tab:orange", "gather": "tab:green"}
    pts = [r for r in rows if r["predicted_gain_pct"] is not None and r["measured_gain_pct"] is not None]
    lo = min([0.0, *[min(r["predicted_gain_pct"], r["measured_gain_pct"]) for r in pts]]) - 5
    hi = max([10.0, *[max(r["predicted_gain_pct"], r["measured_gain_pct"]) for r in pts]]) + 5
    ax.fill_between([lo, hi], [lo - GAIN_POINTS, hi - GAIN_POINTS], [lo + GAIN_POINTS, hi + GAIN_POINTS], color="0.9")
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.7)
    for r in pts:
        ax.scatter(r["predicted_gain_pct"], r["measured_gain_pct"], marker=marker[r["what"]], color=color[r["op"]])
        ax.annotate(format_size(r["size"]), (r["predicted_gain_pct"], r["measured_gain_pct"]), fontsize=7)
    for op, c in color.items():
        ax.scatter([], [], color=c, label=op)
    for what, mk in marker.items():
        ax.scatter([], [], color="0.4", marker=mk, label=what)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("predicted gain over the default (%)")
    ax.set_ylabel("measured gain over the default (%)")
    ax.set_title(f"gain: measured vs predicted (band: ±{GAIN_POINTS:g} points)")
    ax.legend(fontsize=8)
    ax = axes[1]
    keys = list(dict.fromkeys((r["library"], r["op"], r["size"]) for r in rows))
    labels = [
        f"{lib[:4]} {op} {format_size(m)}" if len({k[0] for k in keys}) > 1 else f"{op} {format_size(m)}"
        for lib, op, m in keys
    ]
    x = range(len(labels))
    for k, what in enumerate(WHATS):
        by = {(r["library"], r["op"], r["size"]): r["error_pct"] for r in rows if r["what"] == what}
        # a library default hnow does not model has no default or exported row there: no bar
        errs = [by.get(key) if by.get(key) is not None else math.nan for key in keys]
        ax.bar([i + (k - 1) * 0.27 for i in x], errs, width=0.27, label=what)
    ax.axhline(0, color="k", lw=0.6)
    ax.axhspan(-TREE_ERROR_PCT, TREE_ERROR_PCT, color="0.92", zorder=0)
    ax.set_xticks(list(x), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("error % (predicted - measured)/measured")
    ax.set_title("prediction error of each setting")
    ax.legend(fontsize=8)
    save_png(fig, path)
    plt.close(fig)


COLUMNS = [
    "library", "op", "size", "what", "predicted_us", "measured_us", "error_pct", "predicted_gain_pct",
    "measured_gain_pct", "difference_points", "setting", "model_tree", "variant", "min_us", "max_us",
    "error_pct_by_variant",
]  # fmt: skip


def _parse() -> argparse.Namespace:
    """The command line, checked (``--libraries`` names only known libraries)."""
    p = parser("export_gain", __doc__)
    p.add_argument("--spec", default=None, help="cluster spec file (default: the 6-host spec in this script)")
    p.add_argument("--reps", type=int, default=5, help="timing repetitions per row (default 5)")
    p.add_argument("--sizes", default=None, help="sizes (default 16K,64K,256K)")
    p.add_argument("--lock", default=None, help="flock this file around every MPI job (a machine shared with others)")
    p.add_argument("--libraries", default=",".join(LIBRARIES), help=f"comma list (default {','.join(LIBRARIES)})")
    args = p.parse_args()
    args.chosen = [ALIASES.get(x.strip().lower(), x.strip()) for x in args.libraries.split(",") if x.strip()]
    for x in args.chosen:
        if x not in LIBRARIES:
            p.error(f"--libraries: unknown library {x!r} (choose from: {', '.join([*LIBRARIES, *ALIASES])})")
    return args


def _library_section(name: str, res: dict, rows: list[dict], reps: int) -> list[str]:
    """The report's part for one library: claims, what was not compared, the exports, the rows, the misses."""
    lib_rows = [r for r in rows if r["library"] == name]
    return _library_claims(name, res, lib_rows, reps) + _library_tables(name, res, lib_rows)


def _library_claims(name: str, res: dict, lib_rows: list[dict], reps: int) -> list[str]:
    """One library's heading, run facts, claims, what was not compared and the error per setting."""
    exp = [r for r in lib_rows if r["what"] == "exported" and r["difference_points"] is not None]
    kept = [e for e in res["exports"] if e["default_tree"] is None]
    opt = [r for r in lib_rows if r["what"] == "optimal tree"]
    worst_gain = max((abs(r["difference_points"]) for r in exp), default=math.nan)
    worst_tree = max((abs(r["error_pct"]) for r in opt), default=math.nan)
    errs = {w: [abs(r["error_pct"]) for r in lib_rows if r["what"] == w] for w in WHATS}
    return [
        f"## {name}",
        "",
        f"{res['library_version']}; calibrated once on the cluster ({res['calibration_s']:.0f} s, layout found: "
        f"{', '.join(f'{h}={t}' for h, t in zip(res['hosts'], res['layout'], strict=True))}); timing: sync "
        f"(every rank starts at one instant, latest finish), median of {reps} repetitions; predictions "
        f"under the profile's default variants ({', '.join(f'{o} {v}' for o, v in res['variants'].items())}).",
        "",
        "### Claims",
        claim(
            f"exported native settings measured within {GAIN_POINTS:g} points of their predicted gain over the "
            "defaults (bcast, scatter, gather at every size)",
            bool(exp) and worst_gain <= GAIN_POINTS,
            "worst "
            + f"{worst_gain:.1f} points; "
            + ", ".join(
                f"{r['op']} {format_size(r['size'])} measured {r['measured_gain_pct']:+.1f} / predicted "
                f"{r['predicted_gain_pct']:+.1f}"
                for r in exp
            ),
        ),
        claim(
            f"the optimal tree through the helper within {TREE_ERROR_PCT:g} % of its prediction",
            bool(opt) and worst_tree <= TREE_ERROR_PCT,
            "worst "
            + f"{worst_tree:.1f} %; "
            + ", ".join(f"{r['op']} {format_size(r['size'])} {r['error_pct']:+.1f} %" for r in opt),
        ),
        "",
        *(
            [
                "Not compared (the library's default there is an algorithm hnow does not model, so neither "
                "its time nor the gain over it is predicted): "
                + ", ".join(f"{e['op']} {format_size(e['size'])} ({e['library_default']})" for e in kept),
                "",
            ]
            if kept
            else []
        ),
        "Median / max |error| per setting: "
        + "; ".join(f"{w} {statistics.median(v):.1f} / {max(v):.1f} %" for w, v in errs.items() if v),
        "",
    ]


def _library_tables(name: str, res: dict, lib_rows: list[dict]) -> list[str]:
    """One library's tables: what was exported, predicted and measured, where the default variant misses."""
    misses = [
        {
            "op": r["op"],
            "size": format_size(r["size"]),
            "what": r["what"],
            "model tree": r["model_tree"] or "(tree executor)",
            **{f"{v} %": e for v, e in r["error_pct_by_variant"].items()},
        }
        for r in lib_rows
        if r["error_pct"] is not None and abs(r["error_pct"]) > TREE_ERROR_PCT
    ]
    return [
        "### What was exported (per operation and size: `hnow export --op OP --size SIZE --format "
        f"hostfile,{LIBRARIES[name].export_format}`)",
        md_table(
            [
                {
                    "op": e["op"],
                    "size": format_size(e["size"]),
                    "rank order (hostfile)": " ".join(e["order"]),
                    "order chosen for": e["order_tree"],
                    "library default": e["library_default"],
                    "exported algorithm": e["algorithm"],
                    "predicted gain of the order %": e["order_gain_pct"],
                    "then of the algorithm %": e["algorithm_gain_pct"],
                }
                for e in res["exports"]
            ]
        ),
        "### Predicted and measured",
        md_table(
            [
                {**{c: "" if r[c] is None else r[c] for c in COLUMNS[1:10]}, "size": format_size(r["size"])}
                for r in lib_rows
            ]
        ),
        f"### Where the default variant misses by more than {TREE_ERROR_PCT:g} %, beside the other variants",
        "Error % of the same measurement under each model variant of its operation (the default one is "
        "what the rows above use):",
        "",
        md_table(misses, list(dict.fromkeys(k for r in misses for k in r))),
    ]


def _notes() -> list[str]:
    """The report's notes: what each setting is, how gains are counted, what the tree executor does."""
    return [
        "",
        "## Notes",
        "- **default**: the library's own collective, pinned to the algorithm its default rules pick for that "
        "operation and size, as `native:ALGO` (MPICH: its default table, binomial here; Open MPI: its fixed "
        "rules), with the ranks in the spec's host order. **exported**: `native:ALGO` (the "
        "exported algorithm pinned by its control variables, as the exported file selects it) or the default's "
        "setting where it was kept, on a copy of the cluster whose host order is the exported hostfile's. "
        "**optimal tree**: `hm.search.best_tree` under the default variant, run by the tree executor in the "
        "spec's order.",
        "- Gains are over the default, in % of its time: `gain = 100·(default − setting)/default`, predicted from "
        "the predictions and measured from the measurements; `difference_points = measured − predicted`.",
        "- Each operation and size has its own export (the order is chosen for that operation at that size, then "
        "the algorithm in that order), as `hnow export --op OP --size SIZE` writes it; an application that runs "
        "several takes one order for all.",
        "- The tree executor (`calibrate.collectives.TreeExecutor` over `PlainTransport`) moves the same messages "
        "in the same order as the application helper `calibrate.treecoll`: a rank receives from its parent with "
        "one blocking receive, then sends to each child in the tree's order with blocking sends (scatter: the "
        "child's whole subtree's blocks in one message); gather posts one receive per child and completes them in "
        "arrival order (`Irecv` + `Waitany`), then sends its subtree's blocks to its parent. They differ only in "
        "local copies: the helper packs the root's scatter blocks into subtree order and unpacks the gathered "
        "blocks into rank order inside the call (n·m bytes of memcpy at the root: 1.5 MB at 256 KiB × 6, about "
        "60 µs at the ~39 µs per MiB of memcpy here, against collectives of tens to hundreds of ms), and "
        "copies each rank's own block; the executor packs outside the timed region and leaves the root's gathered "
        "data in subtree order. They use different tags.",
        "- MPICH's binomial gather under the flow variants: a relay's block and the blocks it received go as one "
        "struct datatype that moves only into the parent's posted receive (`relay_waits`, "
        "docs/native-algorithms.md) from the size the calibration measured for struct sends "
        "(`extensions.network.struct_rendezvous_from_bytes`).",
    ]


def main() -> None:
    args = _parse()
    out = outdir(args.out)
    spec_doc = json.loads(Path(args.spec).read_text()) if args.spec else SPEC
    sizes = parse_sizes(args.sizes) if args.sizes else SIZES
    t0 = time.monotonic()

    def say(msg: str) -> None:
        print(f"[export_gain {time.monotonic() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    results = {
        name: run_library(LIBRARIES[name], spec_doc, sizes, args.reps, args.lock, out, say) for name in args.chosen
    }
    t_all = time.monotonic() - t0
    rows = [r for res in results.values() for r in res["rows"]]
    write_csv(out / "export_gain.csv", [{c: r[c] for c in COLUMNS} for r in rows])  # write_csv: dicts as JSON
    _plot(rows, out / "export_gain.png")

    body = [
        f"Reproduce with: `{command_line()}` (as root). Whole run {t_all:.0f} s. Cluster: "
        + ", ".join(
            f"{h['name']} {h['egress_mbit']:g} Mbit/s × {h.get('slots', 1)} rank{'s' if h.get('slots', 1) > 1 else ''}"
            for h in spec_doc["hosts"]
        )
        + " (egress = ingress), rank 0 the root, the ranks filling each host's slots in this host order unless said "
        "otherwise.",
        "",
    ]
    for name, res in results.items():
        body += _library_section(name, res, rows, args.reps)
    body += _notes()
    write_markdown(
        out / "export_gain.md", "Exported MPI settings on a virtual heterogeneous cluster", ["\n".join(body) + "\n"]
    )
    print((out / "export_gain.md").read_text())


if __name__ == "__main__":
    main()
