"""``python -m calibrate bench NAME[,NAME...]``: the seeds' microbenchmarks (issue 6; docs/benchmarks.md).

Every benchmark runs over the :class:`~calibrate.transport.Transport` (plain MPI, or the emulated testbed with
``--testbed``); the ones that need MPI features the transport does not have (``Isend`` windows, ``Test``/``Wait``,
the library's match queues) use them on a duplicate communicator under plain MPI and say in ``notes`` what
runs emulated and what does not on a testbed. Result: ``{"rows": [...], "benchmarks": {name: {...}}, ...}``;
each row carries ``bench``; times in µs (testbed µs on a testbed), bandwidths in MB/s (10^6 bytes/s).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from hnowmodel.bench_registry import BENCHMARKS as REGISTRY
from hnowmodel.bench_registry import OPTIONS, check_names, check_options

from ..info import version_text
from .common import Ctx
from .hotspot import fanin_extension
from .queues import queue_extension

__all__ = ["HELP", "add_arguments", "prepare", "main", "runner"]

HELP = "the seeds' microbenchmarks (latency, bandwidth, queues, hot spot, ...); NAME or NAME1,NAME2"


def runner(name: str) -> Callable[[Ctx], list[dict]]:
    """The function that runs benchmark ``name`` (its registry entry's ``runner``, ``module:function``)."""
    module, _, func = REGISTRY[name].runner.partition(":")
    return getattr(importlib.import_module(module), func)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of every benchmark (each ignores the ones it does not use); None = the benchmark's default."""
    p.add_argument("name", help="benchmark name(s), comma-separated, or 'all': " + ", ".join(REGISTRY))
    p.add_argument("--testbed", default=None, help="emulated testbed: 'paper' or a JSON file (default: plain MPI)")
    p.add_argument("--layout", default=None, help="node type of each rank (overrides the testbed's ranks)")
    p.add_argument("--profile", default=None, help="profile (FILE or 'paper') for model predictions (hotspot)")
    p.add_argument("--sizes", default=None, help="message sizes in bytes, e.g. 0,1K,4K or 0..64K")
    p.add_argument("--iters", type=int, default=None, help="operations timed per sample (default: per benchmark)")
    p.add_argument("--min-reps", type=int, default=None, help="fewest samples per point (default 5)")
    p.add_argument("--max-reps", type=int, default=None, help="most samples per point (default 30; 10 on a testbed)")
    p.add_argument("--window", type=int, default=None, help="bandwidth queue size Q (default 64; 8 on a testbed)")
    p.add_argument("--count", type=int, default=None, help="messages per sample (streaming: N, default 160)")
    p.add_argument("--buffers", default=None, help="buffer-reuse: FIFO buffer counts N, e.g. 1,4,16,64")
    p.add_argument("--reuse", default=None, help="buffer-reuse: reuse percentages R, e.g. 100,50,0")
    p.add_argument("--slaves", default=None, help="hotspot: numbers of slaves k (default 1..np-1)")
    p.add_argument("--variant", default=None, help="hotspot: gather model variant for predicted_us (default link)")
    p.add_argument("--lengths", default=None, help="queue benchmarks: queue lengths L, e.g. 0,10,100,1000")
    p.add_argument("--fractions", default=None, help="posted-queue: traversed percentages, e.g. 0,50,100")
    p.add_argument("--intervals", default=None, help="cpu-availability: poll intervals / compute loops in µs")
    p.add_argument("--work", type=float, default=None, help="cpu-availability polling: computation per sample, µs")
    p.add_argument("--methods", default=None, help="cpu-availability: polling, bandwidth-loop (default both)")
    p.add_argument("--quick", action="store_true", help="tiny settings (tests, smoke runs)")


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Check names and options before MPI starts (InputError names the bad value)."""
    names = check_names(args.name)
    # layout and profile are checked below, against the testbed or the profile they belong to
    check_options({k: getattr(args, k) for k in OPTIONS if k not in ("layout", "profile")})
    out: dict[str, Any] = {"names": names, "testbed": None, "profile": None, "layout": None}
    if args.testbed:
        from calibrate.testbed_transport import load_testbed
        from hnowmodel.layout import parse_layout

        tb = load_testbed(args.testbed)
        if args.layout:
            tb = tb.with_ranks(parse_layout(args.layout, list(tb.types)))
        out["testbed"] = tb
    if args.profile:
        from hnowmodel.layout import parse_layout
        from hnowmodel.params import Profile

        out["profile"] = Profile.load(args.profile)
        if args.layout and not args.testbed:
            out["layout"] = parse_layout(args.layout, out["profile"].type_names)
    return out


def main(args: argparse.Namespace, rt: Any, prepared: dict[str, Any]) -> dict[str, Any] | None:
    from mpi4py import MPI

    from calibrate.testbed_transport import make_transport

    from .common import summarize  # noqa: F401  (imported so a broken stats module fails before any run)

    with rt.step("transport"):
        tb = prepared["testbed"]
        tr = make_transport(rt.comm, tb)
        raw = rt.comm.Dup()  # raw MPI features never mix with the transport's messages
    ctx = Ctx(tr=tr, raw=raw, rt=rt, args=args, MPI=MPI, quick=bool(args.quick), prepared=prepared)
    rows: list[dict] = []
    info: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for name in prepared["names"]:
        rt.progress(f"bench {name}")
        with rt.step(f"bench {name}"):
            got = runner(name)(ctx)
            tr.quiet_barrier()
        rows += [{"bench": name, **r} for r in got]
        note = REGISTRY[name].testbed_note if ctx.emulated else ""
        info[name] = {"rows": len(got), "emulated": ctx.emulated, "notes": note}
        if rt.rank == 0:
            # queue costs are real MPI matching costs: on a testbed they are unscaled noise, not testbed numbers
            if name == "posted-queue" and not ctx.emulated:
                ext = queue_extension([r for r in got if r["traversed_pct"] > 0 or r["length"] == 0], "traversed")
                if ext:
                    extensions["posted_queue"] = ext
            elif name == "unexpected-queue" and not ctx.emulated:
                ext = queue_extension(got, "length")
                if ext:
                    extensions["unexpected_queue"] = ext
            elif name == "hotspot":
                ext = fanin_extension(got)
                if ext:
                    extensions["hotspot"] = ext
    tr.finish()
    raw.Free()
    if rt.rank != 0:
        return None
    for ext in extensions.values():
        ext["emulated"] = ctx.emulated
    return {
        "rows": rows,
        "benchmarks": info,
        "columns": {n: list(REGISTRY[n].columns) for n in prepared["names"]},
        "extensions": extensions,
        "np": rt.size,
        "emulated": ctx.emulated,
        "testbed": getattr(tb, "name", None) if tb is not None else None,
        "time_scale": float(tr.time_scale),
        "layout": list(getattr(tr, "layout", ()) or ()) or None,
        "library_version": version_text(MPI).splitlines()[0],
    }
