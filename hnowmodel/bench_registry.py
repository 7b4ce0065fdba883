"""The one registry of the seeds' microbenchmarks (``hnow bench``; docs/benchmarks.md).

Each :class:`Benchmark` entry is everything known about one benchmark: its one-line summary (which paper, which
figure), the MPI-side function that runs it (``runner``, ``module:function`` under :mod:`calibrate.bench`, loaded
by the ranks; this package never imports it), the columns of its readable table, its plot, what runs emulated on a
testbed, and the profile extension it measures. Units are in the column names: ``_us`` µs, ``_MBps`` 10^6 bytes/s,
``_pct`` percent.

>>> BENCHMARKS["latency"].runner
'calibrate.bench.pointtopoint:latency'
>>> check_names("latency,hotspot")
['latency', 'hotspot']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from . import ops, variants
from .errors import InputError
from .io import write_json_atomic
from .options import parse_variants
from .params import Profile
from .report import save_png, write_csv
from .sizes import parse_sizes

__all__ = [
    "Benchmark",
    "BENCHMARKS",
    "OPTIONS",
    "check_names",
    "check_options",
    "write_outputs",
    "plot_bench",
    "merge_extensions",
]


@dataclass(frozen=True)
class Benchmark:
    """One microbenchmark: ``plot`` is (x keys, y keys, group-by keys), the first key a row has being used;
    ``extension`` names the profile extension it measures (None: none)."""

    name: str
    summary: str
    runner: str
    columns: tuple[str, ...]
    plot: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
    testbed_note: str
    extension: str | None = None


BENCHMARKS: Mapping[str, Benchmark] = MappingProxyType(
    {
        b.name: b
        for b in (
            Benchmark(
                name="latency",
                summary="ping-pong one-way latency vs size (all papers)",
                runner="calibrate.bench.pointtopoint:latency",
                columns=("size", "latency_us", "min_us", "max_us", "samples"),
                plot=(("size",), ("latency_us",), ()),
                testbed_note="fully emulated (transport ping-pong)",
                extension=None,
            ),
            Benchmark(
                name="bandwidth",
                summary="windowed bandwidth, Q outstanding, refill Q/2 (Liu et al. Fig. 3)",
                runner="calibrate.bench.pointtopoint:bandwidth",
                columns=(
                    "size",
                    "window",
                    "count",
                    "bandwidth_MBps",
                    "bandwidth_min_MBps",
                    "bandwidth_max_MBps",
                    "samples",
                ),
                plot=(("size",), ("bandwidth_MBps",), ()),
                testbed_note="emulated; the window is flow control (ack every Q/2), the transport has no Isend",
                extension=None,
            ),
            Benchmark(
                name="bilatency",
                summary="both sides send at once: latency (Liu et al. Fig. 4)",
                runner="calibrate.bench.pointtopoint:bilatency",
                columns=("size", "latency_us", "min_us", "max_us", "samples"),
                plot=(("size",), ("latency_us",), ()),
                testbed_note="emulated (the emulated send never blocks, so both ranks send first)",
                extension=None,
            ),
            Benchmark(
                name="bibandwidth",
                summary="both sides stream at once: aggregate bandwidth (Liu et al. Fig. 5)",
                runner="calibrate.bench.pointtopoint:bibandwidth",
                columns=(
                    "size",
                    "window",
                    "count",
                    "bandwidth_MBps",
                    "bandwidth_min_MBps",
                    "bandwidth_max_MBps",
                    "samples",
                ),
                plot=(("size",), ("bandwidth_MBps",), ()),
                testbed_note="emulated; windows of Q sends then Q receives on each side",
                extension=None,
            ),
            Benchmark(
                name="streaming",
                summary="N back-to-back sends, one reply: bandwidth and message rate (Brightwell et al. Fig. 8-9)",
                runner="calibrate.bench.pointtopoint:streaming",
                columns=(
                    "size",
                    "count",
                    "bandwidth_MBps",
                    "rate_msgs_per_s",
                    "median_us",
                    "min_us",
                    "max_us",
                    "samples",
                ),
                plot=(("size",), ("rate_msgs_per_s",), ()),
                testbed_note="fully emulated",
                extension=None,
            ),
            Benchmark(
                name="overhead",
                summary="host time inside send/recv of a latency test (Liu et al. Fig. 6)",
                runner="calibrate.bench.host:overhead",
                columns=("size", "send_us", "recv_us", "send_cpu_us", "recv_cpu_us", "latency_us", "samples"),
                plot=(("size",), ("send_us", "recv_us"), ()),
                testbed_note="emulated busy periods are sleeps: send_us/recv_us are meaningful, *_cpu_us are not",
                extension=None,
            ),
            Benchmark(
                name="cpu-availability",
                summary="CPU share left for computation: COMB polling; bandwidth loop (Brightwell Fig. 10; Liu Fig. 7)",
                runner="calibrate.bench.host:cpu_availability",
                columns=(
                    "method",
                    "size",
                    "poll_us",
                    "compute_us",
                    "availability_pct",
                    "bandwidth_MBps",
                    "median_us",
                    "samples",
                ),
                plot=(("poll_us", "compute_us"), ("availability_pct",), ("method",)),
                testbed_note=(
                    "polling: the transport has no Test, each poll is a blocking exchange; bandwidth-loop emulated"
                ),
                extension=None,
            ),
            Benchmark(
                name="completion",
                summary="latency added by learning completion by Test polling vs Wait (Liu et al. Fig. 8)",
                runner="calibrate.bench.host:completion",
                columns=("size", "mode", "latency_us", "added_us", "min_us", "max_us", "samples"),
                plot=(("size",), ("latency_us",), ("mode",)),
                testbed_note="only 'recv' (the transport's own wait); Test/Wait/test-sleep are not emulated",
                extension=None,
            ),
            Benchmark(
                name="buffer-reuse",
                summary="FIFO over N buffers and reuse percentage R (Liu et al. Fig. 9-10)",
                runner="calibrate.bench.buffers:buffer_reuse",
                columns=(
                    "pattern",
                    "buffers",
                    "reuse_pct",
                    "test",
                    "size",
                    "latency_us",
                    "bandwidth_MBps",
                    "min_us",
                    "max_us",
                ),
                plot=(("buffers", "reuse_pct"), ("latency_us", "bandwidth_MBps"), ("pattern", "test")),
                testbed_note="runs emulated, but the emulation has no address-dependent cost: no effect expected",
                extension=None,
            ),
            Benchmark(
                name="hotspot",
                summary="master sends to / receives from k slaves, latency vs k (Liu et al. Fig. 11)",
                runner="calibrate.bench.hotspot:hotspot",
                columns=(
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
                ),
                plot=(("slaves",), ("latency_us", "fanin_us", "predicted_us"), ("variant",)),
                testbed_note="fully emulated; fanin_us is the gather model's quantity",
                extension="hotspot",
            ),
            Benchmark(
                name="posted-queue",
                summary="latency with L pre-posted non-matching receives, f traversed (Underwood & Brightwell Fig. 1)",
                runner="calibrate.bench.queues:posted_queue",
                columns=("length", "traversed_pct", "traversed", "size", "latency_us", "min_us", "max_us", "samples"),
                plot=(("traversed",), ("latency_us",), ("length",)),
                testbed_note="queue entries are real MPI receives on another communicator; the model has no queue cost",
                extension="posted_queue",
            ),
            Benchmark(
                name="unexpected-queue",
                summary="latency with L unexpected messages queued (Underwood & Brightwell Fig. 2)",
                runner="calibrate.bench.queues:unexpected_queue",
                columns=("length", "size", "latency_us", "min_us", "max_us", "samples"),
                plot=(("length",), ("latency_us",), ()),
                testbed_note=(
                    "unexpected messages are real MPI messages on another communicator; no emulated queue cost"
                ),
                extension="unexpected_queue",
            ),
        )
    }
)

#: Options the benchmarks take (each ignores those it does not use); None = the benchmark's own default.
OPTIONS = (
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


def check_names(text: Any) -> list[str]:
    """``NAME``, ``NAME1,NAME2``, a list, or ``all`` -> names; :class:`InputError` names the valid choices."""
    items = [text] if isinstance(text, str) or text is None else list(text)
    names = [t.strip() for item in items for t in str(item or "").split(",") if t.strip()]
    if names == ["all"]:
        return list(BENCHMARKS)
    if not names:
        raise InputError(f"give a benchmark name (choose from: {', '.join(BENCHMARKS)})")
    for n in names:
        if n not in BENCHMARKS:
            raise InputError(f"unknown benchmark {n!r} (choose from: {', '.join(BENCHMARKS)}, or 'list')")
    return names


def _int_list(flag: str, text: Any, lo: int, hi: int | None = None) -> None:
    if text is None:
        return
    try:
        vals = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--{flag}: expected whole numbers, got {text!r}") from None
    if not vals:
        raise InputError(f"--{flag}: give at least one value")
    for v in vals:
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise InputError(f"--{flag}: {v} is out of range ({rng})")


def check_options(options: Mapping[str, Any], np: int | None = None) -> dict[str, Any]:
    """Validate benchmark options before MPI starts; returns them without the unset ones. :class:`InputError`
    names the flag and value."""

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InputError(f"unknown benchmark option {unknown[0]!r} (choose from: {', '.join(OPTIONS)})")
    o = {k: v for k, v in options.items() if v is not None}
    if "sizes" in o:
        parse_sizes(o["sizes"])
    for flag in ("iters", "min_reps", "max_reps", "window", "count"):
        if flag in o and (isinstance(o[flag], bool) or not isinstance(o[flag], int) or o[flag] < 1):
            raise InputError(f"--{flag.replace('_', '-')} must be a whole number >= 1, got {o[flag]!r}")
    if o.get("window") is not None and o["window"] < 2:
        raise InputError(f"--window must be >= 2 (refilled Q/2 at a time), got {o['window']}")
    _int_list("buffers", o.get("buffers"), 1)
    _int_list("reuse", o.get("reuse"), 0, 100)
    _int_list("lengths", o.get("lengths"), 0)
    _int_list("fractions", o.get("fractions"), 0, 100)
    _int_list("slaves", o.get("slaves"), 1, np - 1 if np else None)
    if "intervals" in o:
        try:
            vals = [float(t) for t in str(o["intervals"]).split(",") if t.strip()]
            if not vals or any(not math.isfinite(v) or v < 0 for v in vals):
                raise ValueError
        except ValueError:
            raise InputError(f"--intervals: expected numbers >= 0 (µs), got {o['intervals']!r}") from None
    if "work" in o:
        w = o["work"]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
            raise InputError(f"--work must be a number of µs > 0, got {w!r}")
    if "methods" in o:
        for m in str(o["methods"]).split(","):
            if m.strip() not in ("polling", "bandwidth-loop"):
                raise InputError(f"--methods: unknown method {m.strip()!r} (choose from: polling, bandwidth-loop)")
    if "variant" in o:
        closed_form = [v for v in ops.get("gather").variants if not variants.get(v).flow_level]
        # NAME or gather=NAME, as --variant takes it in every command; hotspot predicts a gather only
        o["variant"] = parse_variants(o["variant"], ["gather"]).get("gather", o["variant"])
        if o["variant"] not in closed_form:  # hotspot's root link, no link capacities to share
            raise InputError(
                f"--variant: unknown gather variant {o['variant']!r} (choose from: {', '.join(closed_form)})"
            )
    if o.get("min_reps") and o.get("max_reps") and o["min_reps"] > o["max_reps"]:
        raise InputError(f"--min-reps {o['min_reps']} is larger than --max-reps {o['max_reps']}")
    if "profile" in o:
        Profile.load(o["profile"])
    return o


def write_outputs(doc: Mapping[str, Any], out: str | Path) -> list[Path]:
    """``bench.json``, and per benchmark ``bench_NAME.csv`` and ``bench_NAME.png`` in folder ``out``."""

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
    """One PNG: the benchmark's main metric(s) against its x variable, one line per group (log x when useful)."""
    from matplotlib.figure import Figure  # lazily: a heavy optional library, only where a plot is drawn

    xs_keys, ys_keys, groups = BENCHMARKS[name].plot
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot()
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        x = next((r[k] for k in xs_keys if k in r), None)
        if x is None:
            continue
        for yk in ys_keys:
            if yk in r and r[yk] is not None:
                label = " ".join([*(f"{g}={r[g]}" for g in groups if g in r), yk])
                series.setdefault(label, []).append((float(x), float(r[yk])))
    markers = "os^vD<>p*h"
    for i, (label, pts) in enumerate(series.items()):
        pts.sort()
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker=markers[i % len(markers)],
            ms=3,
            linestyle=("-", "--", ":", "-.")[i % 4],
            label=label,
        )
    xs = [p[0] for pts in series.values() for p in pts]
    positive = [x for x in xs if x > 0]
    if positive and min(xs) >= 0 and max(xs) > 64 * max(min(positive), 1):
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(" / ".join(xs_keys) + (" (bytes)" if xs_keys == ("size",) else ""))
    ax.set_ylabel(" / ".join(ys_keys))
    ax.set_title(f"hnow bench {name}", fontsize=10)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save_png(fig, path)


def merge_extensions(
    profile_in: str, profile_out: str, extensions: Mapping[str, Any], provenance: str, *, overwrite: bool = False
) -> Path:
    """Copy ``profile_in`` to ``profile_out`` (atomically) with ``extensions`` merged in (keys replaced)."""

    prof = Profile.load(profile_in)
    ext = dict(prof.extensions)
    for k, v in extensions.items():
        ext[k] = {**v, "source": provenance}
    return replace(prof, extensions=ext).save(profile_out, overwrite=overwrite)
