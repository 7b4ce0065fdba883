"""``hnow bench NAME --np N``: the seeds' microbenchmarks (docs/benchmarks.md), run under MPI.

The MPI side is ``python -m calibrate bench`` (:mod:`calibrate.bench`); this module checks the options, starts it
with :func:`~hnowmodel.cli.launch.run_mpi`, prints an OSU-style table per benchmark (units in the column names:
``_us`` µs, ``_MBps`` 10^6 bytes/s, ``_pct`` percent), ``--json`` prints ``{"rows": [...], ...}``, ``-o DIR``
writes ``bench_NAME.csv``, ``bench_NAME.png`` and ``bench.json``. ``hnow bench list`` (or no name) lists them.

Measurements the model can use are returned under ``extensions`` and, with ``--profile-out``, merged into a copy
of a profile (``--profile-in``, or ``--profile``): ``extensions.posted_queue`` / ``extensions.unexpected_queue``
(``us_per_entry``: latency cost per traversed/queued entry) and ``extensions.hotspot`` (fan-in per k and its
slope, ``fanin_us_per_slave``). The predictor does not use them yet (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import write_json_atomic
from ..sizes import format_size, parse_sizes
from .common import add_mpi_arguments, emit_json, positive_int, print_table
from .launch import run_mpi

__all__ = ["HELP", "add_arguments", "run", "bench", "SUMMARY", "COLUMNS", "PLOTS", "check_names", "check_options"]

HELP = "the seeds' microbenchmarks: latency, bandwidth, queues, hot spot, ... ('hnow bench list')"

#: Benchmark names (the contract) and one line each: what and from which paper.
SUMMARY: dict[str, str] = {
    "latency": "ping-pong one-way latency vs size (all papers)",
    "bandwidth": "windowed bandwidth, Q outstanding, refill Q/2 (Liu et al. Fig. 3)",
    "bilatency": "both sides send at once: latency (Liu et al. Fig. 4)",
    "bibandwidth": "both sides stream at once: aggregate bandwidth (Liu et al. Fig. 5)",
    "streaming": "N back-to-back sends, one reply: bandwidth and message rate (Brightwell et al. Fig. 8-9)",
    "overhead": "host time inside send/recv of a latency test (Liu et al. Fig. 6)",
    "cpu-availability": "CPU share left for computation: COMB polling; bandwidth loop (Brightwell Fig. 10; Liu Fig. 7)",
    "completion": "latency added by learning completion by Test polling vs Wait (Liu et al. Fig. 8)",
    "buffer-reuse": "FIFO over N buffers and reuse percentage R (Liu et al. Fig. 9-10)",
    "hotspot": "master sends to / receives from k slaves, latency vs k (Liu et al. Fig. 11)",
    "posted-queue": "latency with L pre-posted non-matching receives, f traversed (Underwood & Brightwell Fig. 1)",
    "unexpected-queue": "latency with L unexpected messages queued (Underwood & Brightwell Fig. 2)",
}

#: Columns of the readable table (JSON rows carry every key).
COLUMNS: dict[str, list[str]] = {
    "latency": ["size", "latency_us", "min_us", "max_us", "samples"],
    "bandwidth": ["size", "window", "count", "bandwidth_MBps", "bandwidth_min_MBps", "bandwidth_max_MBps", "samples"],
    "bilatency": ["size", "latency_us", "min_us", "max_us", "samples"],
    "bibandwidth": ["size", "window", "count", "bandwidth_MBps", "bandwidth_min_MBps", "bandwidth_max_MBps", "samples"],
    "streaming": ["size", "count", "bandwidth_MBps", "rate_msgs_per_s", "median_us", "min_us", "max_us", "samples"],
    "overhead": ["size", "send_us", "recv_us", "send_cpu_us", "recv_cpu_us", "latency_us", "samples"],
    "cpu-availability": [
        "method",
        "size",
        "poll_us",
        "compute_us",
        "availability_pct",
        "bandwidth_MBps",
        "median_us",
        "samples",
    ],
    "completion": ["size", "mode", "latency_us", "added_us", "min_us", "max_us", "samples"],
    "buffer-reuse": [
        "pattern",
        "buffers",
        "reuse_pct",
        "test",
        "size",
        "latency_us",
        "bandwidth_MBps",
        "min_us",
        "max_us",
    ],
    "hotspot": [
        "variant",
        "slaves",
        "size",
        "latency_us",
        "min_us",
        "max_us",
        "fanin_us",
        "fanin_min_us",
        "predicted_us",
        "error_pct",
    ],
    "posted-queue": ["length", "traversed_pct", "traversed", "size", "latency_us", "min_us", "max_us", "samples"],
    "unexpected-queue": ["length", "size", "latency_us", "min_us", "max_us", "samples"],
}

#: Plot of each benchmark: (x keys, y keys, group-by keys); the first key a row has is used.
PLOTS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "latency": (("size",), ("latency_us",), ()),
    "bandwidth": (("size",), ("bandwidth_MBps",), ()),
    "bilatency": (("size",), ("latency_us",), ()),
    "bibandwidth": (("size",), ("bandwidth_MBps",), ()),
    "streaming": (("size",), ("rate_msgs_per_s",), ()),
    "overhead": (("size",), ("send_us", "recv_us"), ()),
    "cpu-availability": (("poll_us", "compute_us"), ("availability_pct",), ("method",)),
    "completion": (("size",), ("latency_us",), ("mode",)),
    "buffer-reuse": (("buffers", "reuse_pct"), ("latency_us", "bandwidth_MBps"), ("pattern", "test")),
    "hotspot": (("slaves",), ("latency_us", "fanin_us", "predicted_us"), ("variant",)),
    "posted-queue": (("traversed",), ("latency_us",), ("length",)),
    "unexpected-queue": (("length",), ("latency_us",), ()),
}

#: Options forwarded to the MPI task as they are (flag -> attribute).
PASS = (
    "sizes",
    "iters",
    "min_reps",
    "max_reps",
    "window",
    "count",
    "buffers",
    "reuse",
    "slaves",
    "variant",
    "lengths",
    "fractions",
    "intervals",
    "work",
    "methods",
    "layout",
    "profile",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default=None, help="benchmark name(s), comma-separated, 'all', or 'list'")
    add_mpi_arguments(p, np_required=False)
    p.add_argument("--layout", default=None, help="node type of each rank (overrides the testbed's ranks)")
    p.add_argument("--profile", default=None, help="profile (FILE or 'paper') for hotspot's gather prediction")
    p.add_argument("--sizes", default=None, help="message sizes in bytes, e.g. 0,1K,4K or 0..64K")
    p.add_argument("--iters", type=positive_int, default=None, help="operations timed per sample")
    p.add_argument("--min-reps", type=positive_int, default=None, help="fewest samples per point (default 5)")
    p.add_argument("--max-reps", type=positive_int, default=None, help="most samples (default 30; 10 on a testbed)")
    p.add_argument("--window", type=positive_int, default=None, help="bandwidth: queue size Q (default 64; 8 testbed)")
    p.add_argument("--count", type=positive_int, default=None, help="messages per sample (streaming N, default 160)")
    p.add_argument("--buffers", default=None, help="buffer-reuse: FIFO buffer counts N, e.g. 1,4,16,64")
    p.add_argument("--reuse", default=None, help="buffer-reuse: reuse percentages R, e.g. 100,50,0")
    p.add_argument("--slaves", default=None, help="hotspot: slave counts k (default 1..np-1)")
    p.add_argument("--variant", default=None, help="hotspot: gather model variant, paper or link (default link)")
    p.add_argument("--lengths", default=None, help="queue benchmarks: queue lengths L, e.g. 0,10,100,1000")
    p.add_argument("--fractions", default=None, help="posted-queue: traversed percentages f, e.g. 0,50,100")
    p.add_argument("--intervals", default=None, help="cpu-availability: poll intervals / compute loops, µs")
    p.add_argument("--work", type=float, default=None, help="cpu-availability polling: computation per sample, µs")
    p.add_argument("--methods", default=None, help="cpu-availability: polling,bandwidth-loop (default both)")
    p.add_argument("--quick", action="store_true", help="tiny settings (smoke tests)")
    p.add_argument("-o", "--out", default=None, help="folder for bench_NAME.csv, bench_NAME.png and bench.json")
    p.add_argument("--profile-in", default=None, help="profile to copy the measured extensions into")
    p.add_argument("--profile-out", default=None, help="write --profile-in (or --profile) plus extensions here")


def check_names(text: str | None) -> list[str]:
    """``NAME``, ``NAME1,NAME2`` or ``all`` -> names; InputError names the valid choices."""
    names = [t.strip() for t in str(text or "").split(",") if t.strip()]
    if names == ["all"]:
        return list(SUMMARY)
    if not names:
        raise InputError(f"give a benchmark name (choose from: {', '.join(SUMMARY)})")
    for n in names:
        if n not in SUMMARY:
            raise InputError(f"unknown benchmark {n!r} (choose from: {', '.join(SUMMARY)}, or 'list')")
    return names


def _int_list(flag: str, text: str | None, lo: int, hi: int | None = None) -> None:
    if text is None:
        return
    try:
        vals = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--{flag}: expected whole numbers, got {text!r}") from None
    if not vals:
        raise InputError(f"--{flag}: give at least one value")
    for v in vals:
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise InputError(f"--{flag}: {v} is out of range ({rng})")


def check_options(args: argparse.Namespace) -> None:
    """Validate the pass-through options before MPI starts (InputError names the flag and value)."""
    if args.sizes is not None:
        parse_sizes(args.sizes)
    if args.window is not None and args.window < 2:
        raise InputError(f"--window must be >= 2 (refilled Q/2 at a time), got {args.window}")
    _int_list("buffers", args.buffers, 1)
    _int_list("reuse", args.reuse, 0, 100)
    _int_list("lengths", args.lengths, 0)
    _int_list("fractions", args.fractions, 0, 100)
    if args.slaves is not None:
        _int_list("slaves", args.slaves, 1, args.np - 1 if args.np else None)
    if args.intervals is not None:
        try:
            if any(float(t) < 0 for t in args.intervals.split(",") if t.strip()):
                raise ValueError
        except ValueError:
            raise InputError(f"--intervals: expected numbers >= 0 (µs), got {args.intervals!r}") from None
    if args.work is not None and args.work <= 0:
        raise InputError(f"--work must be > 0 µs, got {args.work}")
    if args.methods is not None:
        for m in args.methods.split(","):
            if m.strip() not in ("polling", "bandwidth-loop"):
                raise InputError(f"--methods: unknown method {m.strip()!r} (choose from: polling, bandwidth-loop)")
    if args.variant is not None and args.variant not in ("paper", "link"):
        raise InputError(f"--variant: unknown gather variant {args.variant!r} (choose from: paper, link)")
    if args.profile_out and not (args.profile_in or args.profile):
        raise InputError("--profile-out needs --profile-in (or --profile): the profile to add the extensions to")
    if args.min_reps and args.max_reps and args.min_reps > args.max_reps:
        raise InputError(f"--min-reps {args.min_reps} is larger than --max-reps {args.max_reps}")


def bench(
    names: Sequence[str],
    np: int,
    options: Mapping[str, Any] | None = None,
    *,
    testbed: str | None = None,
    quick: bool = False,
    launcher: str = "mpiexec",
    launcher_args: str = "",
    timeout_s: float | None = None,
    echo: bool = True,
) -> dict[str, Any]:
    """Run benchmarks ``names`` on ``np`` ranks; returns the task's document (``rows`` etc., see module doc).

    ``options`` maps option names (``sizes``, ``window``, ``lengths``, ...; see ``hnow bench --help``) to values.
    """
    argv = [",".join(names)]
    for key, val in (options or {}).items():
        if val is not None:
            argv += [f"--{key.replace('_', '-')}", str(val)]
    if testbed:
        argv += ["--testbed", str(testbed)]
    if quick:
        argv.append("--quick")
    if not echo:
        argv.append("--quiet")
    timeout = timeout_s if timeout_s is not None else 120.0 + 120.0 * len(names)
    return run_mpi("bench", argv, np, launcher=launcher, launcher_args=launcher_args, timeout_s=timeout, echo=echo)


def _list(args: argparse.Namespace) -> int:
    rows = [{"name": n, "what": w} for n, w in SUMMARY.items()]
    if args.json:
        emit_json({"rows": rows})
    else:
        print_table(rows, ["name", "what"])
    return 0


def _table_rows(name: str, rows: list[dict]) -> tuple[list[dict], list[str]]:
    cols = [c for c in COLUMNS[name] if any(c in r for r in rows)]
    out = []
    for r in rows:
        t = {c: r.get(c, "") for c in cols}
        for c in ("size",):
            if isinstance(r.get(c), int):
                t[c] = format_size(r[c])
        out.append(t)
    return out, cols


def write_outputs(doc: Mapping[str, Any], out: str | Path) -> list[Path]:
    """``bench.json``, and per benchmark ``bench_NAME.csv`` and ``bench_NAME.png`` in folder ``out``."""
    from ..report import write_csv

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_json_atomic(out / "bench.json", doc)]
    for name in dict.fromkeys(r["bench"] for r in doc["rows"]):
        rows = [r for r in doc["rows"] if r["bench"] == name]
        cols = list(dict.fromkeys(k for r in rows for k in r))
        paths.append(write_csv(out / f"bench_{name}.csv", rows, cols))
        paths.append(plot_bench(name, rows, out / f"bench_{name}.png"))
    return paths


def plot_bench(name: str, rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """One PNG: the benchmark's main metric(s) against its x variable, one line per group (log-log if useful)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs_keys, ys_keys, groups = PLOTS[name]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        x = next((r[k] for k in xs_keys if k in r), None)
        if x is None:
            continue
        for yk in ys_keys:
            if yk in r and r[yk] is not None:
                label = " ".join([*(f"{g}={r[g]}" for g in groups if g in r), yk])
                series.setdefault(label, []).append((float(x), float(r[yk])))
    for label, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, label=label)
    xs = [p[0] for pts in series.values() for p in pts]
    if xs and min(xs) >= 0 and max(xs) > 64 * max(min(x for x in xs if x > 0) if any(xs) else 1, 1):
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(" / ".join(xs_keys))
    ax.set_ylabel(" / ".join(ys_keys))
    ax.set_title(f"hnow bench {name}", fontsize=10)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=7)
    fig.tight_layout()
    from ..report import save_png

    return save_png(fig, path)


def merge_extensions(profile_in: str, profile_out: str, extensions: Mapping[str, Any], provenance: str) -> Path:
    """Copy ``profile_in`` to ``profile_out`` (atomically) with ``extensions`` merged in (keys replaced)."""
    from dataclasses import replace

    from ..params import Profile

    prof = Profile.load(profile_in)
    ext = dict(prof.extensions)
    for k, v in extensions.items():
        ext[k] = {**v, "source": provenance}
    return replace(prof, extensions=ext).save(profile_out)


def run(args: argparse.Namespace) -> int:
    if args.name in (None, "list"):
        return _list(args)
    names = check_names(args.name)
    if args.np is None:
        raise InputError("--np is required (number of MPI ranks)")
    if args.np < 2:
        raise InputError(f"--np {args.np}: the benchmarks need at least 2 ranks")
    check_options(args)
    options = {k: getattr(args, k) for k in PASS}
    doc = bench(
        names,
        args.np,
        options,
        testbed=args.testbed,
        quick=args.quick,
        launcher=args.launcher,
        launcher_args=args.launcher_args,
        timeout_s=args.timeout,
        echo=not args.json,
    )
    if args.out:
        write_outputs(doc, args.out)
    if args.profile_out and doc.get("extensions"):
        where = f"hnow bench {','.join(names)} --np {args.np}" + (f" --testbed {args.testbed}" if args.testbed else "")
        merge_extensions(args.profile_in or args.profile, args.profile_out, doc["extensions"], where)
    elif args.profile_out:
        raise InputError(
            "--profile-out: these benchmarks measure nothing for the profile "
            "(posted-queue, unexpected-queue and hotspot do)"
        )
    if args.json:
        emit_json(doc)
        return 0
    where = f"emulated testbed {doc['testbed']} (times / {doc['time_scale']:g})" if doc["emulated"] else "plain MPI"
    print(f"# hnow bench: {doc['library_version']}; {doc['np']} ranks; {where}")
    print("# units: _us microseconds, _MBps 10^6 bytes/s, _pct percent; min/max over samples, median reported")
    for name in names:
        rows = [r for r in doc["rows"] if r["bench"] == name]
        table, cols = _table_rows(name, rows)
        print()
        print(f"# {name}: {SUMMARY[name]}")
        note = doc.get("benchmarks", {}).get(name, {}).get("notes")
        if note:
            print(f"# on this testbed: {note}")
        print_table(table, cols)
    if doc.get("extensions"):
        print()
        for k, v in doc["extensions"].items():
            main = {kk: vv for kk, vv in v.items() if kk.endswith(("per_entry", "per_slave"))}
            if main:
                print(f"# extensions.{k}: " + ", ".join(f"{kk}={vv:.4g}" for kk, vv in main.items()))
    if args.out:
        print(f"# wrote {args.out}/bench.json, bench_NAME.csv, bench_NAME.png")
    return 0
