"""The five message-schedule collectives (reduce, allreduce, allgather, reduce_scatter, alltoall) predicted vs measured
under MPICH (or ``--mpi openmpi``: Open MPI's coll/tuned; ``--mpi intelmpi``: Intel MPI) on the virtual cluster of
``experiments/cluster_accuracy.py`` (6 hosts at 150/20/50/50/150/20 Mbit/s, one rank each; ``--hosts N`` for N hosts
of its three rates cycled, ``--mixed`` for the hosts of 2, 1 and 3 ranks of ``experiments/hosts_accuracy.py``,
``--spec`` for another), issue #34's check. ``--ops bcast`` compares MPICH's bcasts that
are message schedules the same way: its default (``native:default``: binomial, or scatter + allgather from 8 ranks
above 12288 B) and its pinned scatter + allgather ones.

With the cluster up for the whole run: a calibration with ``--layout auto`` (or ``--profile``: a profile calibrated
on this cluster, its hosts known by name), then ``hm.compare`` of each operation over MPICH's default (``native``)
and every algorithm hnow pins for it (``native:ALGO``) that runs on this many ranks at every size asked for (the
others are listed as skipped, with the reason the model gives), 16, 64 and 256 KiB per rank by default, the median
of ``--reps`` timed calls per row. Every row is predicted under every model variant of its operation; the summary
(median and max |error| per operation and overall) is under each operation's default variant for the profile, the
one ``hnow compare`` uses, beside the others.

Writes ``collectives_accuracy.csv`` (every row, with each variant's prediction), ``collectives_accuracy.md`` and
``collectives_accuracy.png`` (each row's error against its size, per operation, with the target's bands) under
``experiments/out/collectives_accuracy/`` (or ``--out``). Needs root (network namespaces); holds ``--lock`` around
every MPI job; the cluster is taken down at the end unless it was up before.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from cluster_accuracy import SPEC  # noqa: E402  (the same cluster)
from common import claim, command_line, error_summary, md_table, outdir, parser, save_png, write_csv, write_markdown  # noqa: E402
from hosts_accuracy import MIXED  # noqa: E402  (hosts of 2, 1 and 3 ranks)

import hnowmodel as hm  # noqa: E402
from hnowmodel import ops  # noqa: E402
from hnowmodel.errors import HnowError, InputError  # noqa: E402
from hnowmodel.jobs import mpi_lock  # noqa: E402
from hnowmodel.jobs.results import rows_as_dicts  # noqa: E402
from hnowmodel.sizes import format_size, parse_sizes  # noqa: E402

#: The issue's target on the cluster: median |error| and max |error| (%).
TARGET_MEDIAN_PCT, TARGET_MAX_PCT = 5.0, 15.0
SIZES = "16K,64K,256K"
#: ``--mpi`` -> the library's name in the registry (``ops.native_choices``).
LIBRARIES = {"mpich": "MPICH", "openmpi": "Open MPI", "intelmpi": "Intel MPI"}
LIBRARY = LIBRARIES["mpich"]
#: The default spec's cluster name: cluster_accuracy.py's hosts under a name of their own, so that this run neither
#: reuses nor takes down a cluster another run has up.
CLUSTER_NAME = "coll"
#: ``--mixed``: hosts_accuracy.py's hosts of 2, 1 and 3 ranks, under a name of their own for the same reason.
MIXED_NAME = "cmix"


def schedule_ops() -> tuple[str, ...]:
    """The registry's operations whose algorithms are message schedules (no tree runs them)."""
    return tuple(o for o in ops.names() if o not in ops.tree_names())


def measured_ops() -> tuple[str, ...]:
    """What ``--ops`` takes: :func:`schedule_ops`, then the tree operations that have message-schedule algorithms
    too (bcast: MPICH's scatter + allgather).

    >>> measured_ops()[-1]
    'bcast'
    """
    return schedule_ops() + tuple(o for o in ops.tree_names() if ops.get(o).algorithms)


def cycled_spec(n: int) -> dict[str, Any]:
    """A cluster spec of ``n`` hosts, one rank each, cycling the three rates of ``cluster_accuracy.py``'s hosts in
    their first order (150, 20, 50 Mbit/s), named as there by rate and count: ``f1 s1 m1 f2 s2 m2 f3 …`` (so a
    profile calibrated on that cluster knows the first six by name).

    >>> [h["name"] for h in cycled_spec(8)["hosts"]], cycled_spec(4)["hosts"][3]["egress_mbit"]
    (['f1', 's1', 'm1', 'f2', 's2', 'm2', 'f3', 's3'], 150)
    """
    if n < 2:
        raise InputError(f"--hosts must be >= 2, got {n}")
    kinds = list({h["name"][0]: h for h in SPEC["hosts"]}.values())
    hosts = [{**kinds[i % 3], "name": f"{kinds[i % 3]['name'][0]}{i // 3 + 1}"} for i in range(n)]
    return {**SPEC, "name": f"{CLUSTER_NAME}{n}", "hosts": hosts}


def _candidates(op: str, library: str = LIBRARY) -> tuple[str, list]:
    """``op``'s first tree (the default: ``native`` for a message-schedule operation, ``native:default`` for a tree
    operation, whose ``native`` is a pinned tree) and its other algorithms to try (a tree operation's: those
    modelled by one of its message schedules)."""
    if op in schedule_ops():
        return "native", [a for a in ops.native_choices(op, library) if a.algorithm != "default"]
    entry = ops.get(op)
    nats = ops.native_algorithms(op, library)
    return "native:default", [a for a in nats if a.algorithm != "default" and entry.schedule_algorithm(a.model_tree)]


def cases(
    n: int, sizes: Sequence[int], op_names: Sequence[str], library: str = LIBRARY
) -> tuple[dict[str, list[str]], list[dict]]:
    """Per operation the trees to compare (``native``, then ``native:ALGO`` for each algorithm hnow pins for
    ``library``), and the pinned ones left out: those whose model refuses ``n`` ranks or one of ``sizes`` (MPICH,
    pinned with its fallback an error, would stop the job there; e.g. recursive doubling allgather on a non-power of
    two; an Open MPI algorithm hnow does not model has no model to refuse: it is measured, without a prediction).

    >>> trees, skipped = cases(6, [16384], ["allgather", "bcast"])
    >>> trees["allgather"], trees["bcast"]
    (['native', 'native:brucks', 'native:ring'], ['native:default', 'native:scatter_ring_allgather'])
    >>> [s["tree"] for s in skipped]
    ['native:recursive_doubling', 'native:scatter_recursive_doubling_allgather']
    """
    trees: dict[str, list[str]] = {}
    skipped: list[dict] = []
    for op in op_names:
        if op not in measured_ops():
            raise InputError(f"{op}: not one of the operations with message schedules ({', '.join(measured_ops())})")
        first, candidates = _candidates(op, library)
        trees[op] = [first]
        for nat in candidates:
            why = _unmodelled(op, nat, n, sizes) if nat.varies else refusal(op, nat.model_tree, n, sizes)
            if why:
                skipped.append({"op": op, "tree": f"native:{nat.algorithm}", "reason": why})
            else:
                trees[op].append(f"native:{nat.algorithm}")
    return trees, skipped


def _unmodelled(op: str, nat: Any, n: int, sizes: Sequence[int]) -> str:
    """Why the pinned ``nat``, whose model varies by size (Open MPI's: ``NativeAlgorithm.tree_at``), has no model at
    any of ``sizes`` on ``n`` ranks ('' when it has one at some size): measured, it would have no prediction."""
    for m in sizes:
        tree = nat.tree_at(n, m)
        if tree is not None and not refusal(op, tree, n, [m]):
            return ""
    return "not modelled on this many ranks at these sizes (it would have no prediction)"


def refusal(op: str, algorithm: str, n: int, sizes: Sequence[int]) -> str:
    """Why the model cannot run ``op``'s ``algorithm`` (a native's model: a schedule's name, or a tree spec, which
    runs on any ``n`` at any size) on ``n`` ranks at one of ``sizes`` ('' when it can at all).

    >>> refusal("allgather", "recursive_doubling", 6, [16384]) != "", refusal("bcast", "kary:3", 6, [16384])
    (True, '')
    """
    entry = ops.get(op)
    alg = entry.schedule_algorithm(algorithm)
    if alg is None and op in ops.tree_names():
        return ""
    try:
        for m in sizes:
            (alg or entry.algorithm(algorithm)).schedule(n, float(m))
    except InputError as e:
        return str(e)
    return ""


def summarise(rows: Sequence[dict], op_names: Sequence[str]) -> list[dict]:
    """Median and max |error| under each row's own (default) variant, per operation, then over every row.

    >>> rows = [{"op": "reduce", "error_pct": 2.0}, {"op": "reduce", "error_pct": -4.0},
    ...         {"op": "alltoall", "error_pct": 10.0}, {"op": "alltoall", "error_pct": None}]
    >>> [(s["op"], s["rows"], s["median_abs_error_pct"], s["max_abs_error_pct"]) for s in summarise(rows,
    ...  ["reduce", "alltoall"])]
    [('reduce', 2, 3.0, 4.0), ('alltoall', 1, 10.0, 10.0), ('all', 3, 4.0, 10.0)]
    """
    out = [{"op": op, **error_summary([r for r in rows if r["op"] == op])} for op in op_names]
    return out + [{"op": "all", **error_summary(rows)}]


def by_variant(rows: Sequence[dict]) -> list[dict]:
    """Median and max |error| over every row under each model variant (``error_pct_by_variant``).

    >>> by_variant([{"error_pct_by_variant": {"flow": 1.0, "paper": -8.0}},
    ...             {"error_pct_by_variant": {"flow": 3.0, "paper": None}}])[0]
    {'variant': 'flow', 'rows': 2, 'median_abs_error_pct': 2.0, 'max_abs_error_pct': 3.0}
    """
    names = dict.fromkeys(v for r in rows for v in (r.get("error_pct_by_variant") or {}))
    return [
        {"variant": v, **error_summary([{"error_pct": (r.get("error_pct_by_variant") or {}).get(v)} for r in rows])}
        for v in names
    ]


def per_tree(rows: Sequence[dict]) -> list[dict]:
    """One line per (operation, algorithm): each size's error (%) and the algorithm the model ran."""
    out = []
    for op, tree in dict.fromkeys((r["op"], r["tree"]) for r in rows):
        mine = [r for r in rows if (r["op"], r["tree"]) == (op, tree)]
        modelled = ", ".join(dict.fromkeys(r.get("model_tree") or "-" for r in mine))
        line = {"op": op, "tree": tree, "modelled as": modelled}
        for r in mine:
            e = r.get("error_pct")
            line[format_size(r["size"])] = "-" if e is None else f"{e:+.1f} % ({r['measured_us'] / 1e3:.1f} ms)"
        out.append(line)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line (``--out``, ``--spec``, ``--hosts``, ``--profile``, ``--types``, ``--sizes``, ``--ops``,
    ``--reps``, ``--lock``)."""
    p = parser("collectives_accuracy", __doc__)
    p.add_argument("--spec", default=None, help="cluster spec file (default: the 6-host spec of cluster_accuracy.py)")
    p.add_argument(
        "--hosts", type=int, default=None, help="N hosts, cluster_accuracy.py's 3 rates cycled (f1 s1 m1 f2…)"
    )
    p.add_argument(
        "--mixed", action="store_true", help="hosts of 2, 1 and 3 ranks at 160/25/60 Mbit/s (hosts_accuracy.py's)"
    )
    p.add_argument("--profile", default=None, help="a profile calibrated on this cluster (default: calibrate now)")
    p.add_argument("--types", default=None, help="HOST=TYPE,... for hosts the profile was not calibrated on")
    p.add_argument("--sizes", default=SIZES, help=f"sizes per rank, multiples of 8 bytes (default {SIZES})")
    p.add_argument("--ops", default=",".join(schedule_ops()), help="operations (default: the five; or bcast)")
    p.add_argument("--reps", type=int, default=5, help="timed calls per row, their median (default 5)")
    p.add_argument("--mpi", default="mpich", choices=sorted(LIBRARIES), help="the MPI library (default mpich)")
    p.add_argument("--lock", default=None, help="flock this file around every MPI job (a machine shared with others)")
    return p


def check_args(args: argparse.Namespace) -> tuple[list[int], list[str]]:
    """The sizes and operations asked for, checked before the cluster comes up (:class:`InputError`).

    >>> check_args(build_parser().parse_args(["--sizes", "16K,64K", "--ops", "alltoall"]))
    ([16384, 65536], ['alltoall'])
    """
    sizes = list(parse_sizes(args.sizes, "--sizes"))
    op_names = [o.strip() for o in args.ops.split(",") if o.strip()]
    for op in op_names:
        if op not in measured_ops():
            raise InputError(f"--ops: {op!r} is not one of {', '.join(measured_ops())}")
    if sum(map(bool, (args.spec, args.hosts, args.mixed))) > 1:
        raise InputError("--spec, --hosts and --mixed: give one")
    if args.hosts is not None:
        cycled_spec(args.hosts)
    hm.options.check_op_sizes(op_names, sizes)
    if args.reps < 1:
        raise InputError(f"--reps must be >= 1, got {args.reps}")
    return sizes, op_names


def _run(spec_path: Path, n: int, sizes: list[int], op_names: list[str], args: argparse.Namespace, out: Path):
    """Up the cluster, calibrate (or read the profile), compare each operation; down. Returns the profile, the
    rows, the skipped algorithms, the MPI run's description and the timings (s)."""
    trees, skipped = cases(n, sizes, op_names, LIBRARIES[args.mpi])
    t0 = time.monotonic()
    rows: list[dict] = []
    run: dict[str, Any] = {}
    with hm.cluster.using(str(spec_path)):
        t_up = time.monotonic() - t0
        if args.profile:
            prof = hm.Profile.load(args.profile)
        else:
            with mpi_lock(args.lock):
                prof = hm.calibrate(n, layout="auto", output=out / "profile.json", force=True,
                                    cluster=str(spec_path), progress=True, mpi=args.mpi)  # fmt: skip
        t_cal = time.monotonic() - t0 - t_up
        for op in op_names:
            with mpi_lock(args.lock):
                cmp = hm.compare(prof, n, ops=[op], trees=trees[op], sizes=sizes, reps=args.reps, both=False,
                                 types=args.types, cluster=str(spec_path), progress=True, mpi=args.mpi)  # fmt: skip
            rows += rows_as_dicts(cmp.rows)
            run = dict(cmp.run)
    times = {"up_s": t_up, "calibration_s": t_cal, "all_s": time.monotonic() - t0}
    return prof, rows, skipped, run, times


def plot(rows: Sequence[dict], path: Path, title: str) -> None:
    """Each row's error (%) against its size, one marker per operation, the target's ±5 / ±15 % bands shaded."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.axhspan(-TARGET_MAX_PCT, TARGET_MAX_PCT, color="0.93")
    ax.axhspan(-TARGET_MEDIAN_PCT, TARGET_MEDIAN_PCT, color="0.85")
    for op, marker in zip(dict.fromkeys(r["op"] for r in rows), "osD^v<>p*h", strict=False):
        pts = [(r["size"], r["error_pct"]) for r in rows if r["op"] == op and r.get("error_pct") is not None]
        ax.scatter([x for x, _ in pts], [y for _, y in pts], label=op, marker=marker, s=22, alpha=0.75)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size m (bytes per rank)")
    ax.set_ylabel("error % = 100·(predicted − measured)/measured")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    save_png(fig, path)
    plt.close(fig)


def _markdown(rows: list[dict], skipped: list[dict], op_names: list[str], run: dict, times: dict, args: Any) -> str:
    summ = summarise(rows, op_names)
    overall = summ[-1]
    ok = overall["median_abs_error_pct"] <= TARGET_MEDIAN_PCT and overall["max_abs_error_pct"] <= TARGET_MAX_PCT
    variants = sorted({f"{r['op']}: {r['variant']}" for r in rows})
    body = [
        f"Reproduce with: `{command_line()}` (as root). Cluster up in {times['up_s']:.1f} s; calibration "
        f"{times['calibration_s']:.0f} s{' (given profile)' if args.profile else ''}; "
        f"whole run {times['all_s']:.0f} s. "
        f"MPI: {run.get('library_version', run.get('library', '?'))}; timing: {run.get('method')}, "
        f"{run.get('stat')} of {args.reps} repetitions. Variants (each operation's default for the profile): "
        f"{', '.join(variants)}.",
        "",
        "## Claim",
        claim(
            f"{LIBRARIES[args.mpi]}'s default and pinned algorithms: median |error| <= {TARGET_MEDIAN_PCT:g} %, max <= "
            f"{TARGET_MAX_PCT:g} %",
            ok and math.isfinite(overall["max_abs_error_pct"]),
            f"{overall['median_abs_error_pct']:.1f} % / {overall['max_abs_error_pct']:.1f} % over "
            f"{overall['rows']} rows",
        ),
        "",
        "## Per operation (default variant)",
        md_table(summ),
        "",
        "## Every row's error (predicted - measured)/measured, measured median in brackets",
        md_table(per_tree(rows)),
        "",
        "## Every variant over every row",
        md_table(by_variant(rows)),
        "",
        "## Pinned algorithms left out",
        md_table(skipped) if skipped else "(none)\n",
        "",
        f"Rows without a prediction: {sum(1 for r in rows if r.get('error_pct') is None)} "
        f"({'; '.join(sorted({r['note'] for r in rows if r.get('note')})) or 'none'}). "
        "Rows: `collectives_accuracy.csv`.",
    ]
    return "\n".join(body) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        sizes, op_names = check_args(args)
    except HnowError as e:
        p.error(str(e))
    out = outdir(args.out)
    spec_path = out / "spec.json"
    if args.spec:
        doc = json.loads(Path(args.spec).read_text())
    elif args.mixed:
        doc = {**MIXED, "name": MIXED_NAME}
    else:
        doc = cycled_spec(args.hosts) if args.hosts else {**SPEC, "name": CLUSTER_NAME}
    spec_path.write_text(json.dumps(doc, indent=1))
    spec = hm.cluster.load_spec(str(spec_path))
    n = sum(h.slots for h in spec.hosts)
    prof, rows, skipped, run, times = _run(spec_path, n, sizes, op_names, args, out)
    write_csv(out / "collectives_accuracy.csv", rows)
    write_markdown(
        out / "collectives_accuracy.md",
        f"{', '.join(op_names)} under {LIBRARIES[args.mpi]} on a virtual heterogeneous cluster",
        [_markdown(rows, skipped, op_names, run, times, args)],
    )
    title = f"{LIBRARIES[args.mpi]}, {spec.name}: {n} ranks on {len(spec.hosts)} hosts"
    plot(rows, out / "collectives_accuracy.png", title)
    print((out / "collectives_accuracy.md").read_text())


if __name__ == "__main__":
    main()
