"""``python -m calibrate measure``: run broadcast, scatter and gather for real and time them.

Two kinds of collective:

* **Tree executor** - any :class:`hnowmodel.trees.Tree` over the :class:`~calibrate.transport.Transport` (plain MPI
  or the emulated testbed), following exactly the schedule :mod:`hnowmodel.predict` assumes: store-and-forward,
  a rank sends to its children one after another in the tree's send order.

  - ``bcast``: a rank receives the ``m`` bytes from its parent, then sends them to each child in turn.
  - ``scatter``: the edge into a rank carries its whole subtree's blocks (``subtree_size * m`` bytes, the rank's
    own block first, then each child's subtree in send order), so on the sequential tree the root sends ``m``
    bytes to every rank in turn (eq. 9) and on the binomial tree it is MPICH's binomial scatter.
  - ``gather``: a rank receives its children's subtree data in *arrival order* (plain MPI: one receive posted per
    child straight into place, completed with ``Waitany``; the emulated testbed: one any-source receive at a time),
    and once all have arrived sends its own subtree's data to its parent; the root does the same (eq. 10-12 on the
    sequential tree).

  The root's scatter buffer is packed into subtree order once, outside the timed region (it is the same every
  repetition); the copy of each gathered piece into place is inside it (a memcpy, < 1 % of a message's cost).
  Every (op, tree, size) first runs once untimed and every rank checks the payload it ended up with (bcast: the
  root's bytes; scatter: its own block; gather root: every rank's block in rank order); a wrong byte aborts the
  job naming the rank.

* **Native** - ``MPI_Bcast``/``MPI_Scatter``/``MPI_Gather`` of the MPI library. With MPICH the algorithm is
  pinned before ``MPI_Init`` (:data:`MPICH_PIN`): binomial for all three, the ch4 device's own collectives off
  (``MPIR_CVAR_DEVICE_COLLECTIVES=none``, otherwise the binomial choice is bypassed) and an inapplicable choice
  is an error (``MPIR_CVAR_COLLECTIVE_FALLBACK=error``), so ``native`` is modelled by the binomial tree
  (MPICH's bcast/scatter send the largest subtree first, as :func:`hnowmodel.trees.binomial`; its gather
  receives the smallest subtree first with blocking receives, where the model assumes arrival order - the same
  order unless a small subtree is much slower). With Open MPI, coll/tuned is pinned by MCA parameters
  (:data:`OMPI_PIN`: dynamic rules on, coll/han off, bcast algorithm 6 over Open MPI's own binomial tree,
  scatter and gather algorithm 2 over MPICH's binomial shape; docs/open-mpi.md). Both libraries skip empty
  messages entirely, so a native size-0 row measures only the call overhead. ``native:ALGO`` runs another of the
  library's algorithms by name (one of :func:`hnowmodel.ops.native_choices`, e.g. ``native:tree:kary:3``), pinned
  the same way by its own settings, and only for the operations that have it. Native
  collectives cannot run on the emulated testbed: the library does its own sends, which the emulation cannot
  slow down.

Timing: ``fig2`` (the paper's Figure 2) and ``sync`` (barrier-free, a common start), both for every row, each
repeated ``--reps`` times (:mod:`calibrate.timing`). The native side (pinning, the result's ``native``/``natives``,
the native executor) is :mod:`calibrate.nativeexec`.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hnowmodel.ops import native_name, native_spec_env, native_spec_unset
from hnowmodel.options import (
    MEASURE_OPS,
    NATIVE,
    NATIVE_ON_TESTBED,
    TIMING_METHODS,
    check_methods,
    check_op_sizes,
    check_ops,
    check_trees,
    split_list,
)

from .nativeexec import (
    MPICH_PIN,
    OMPI_PIN,
    _check_natives_run,
    _check_pinned,
    library_info,
    native_env,
    native_executor,
    native_pinning,
    spec_pinning,
    spec_runs_op,
)
from .protocol import REFILL_IDLE_MAX_US
from .timing import Clock, _c_kernels, time_fig2, time_sync, time_sync_c
from .treeexec import TreeExecutor, payload_block

__all__ = [
    "HELP",
    "add_arguments",
    "prepare",
    "main",
    "MPICH_PIN",
    "OMPI_PIN",
    "native_env",
    "native_pinning",
    "spec_pinning",
    "library_info",
    "TreeExecutor",
    "OPS",
    "METHODS",
    "payload_block",
]

HELP = "run collectives over hnowmodel trees or the MPI library's own, and time them (µs)"
OPS = MEASURE_OPS
METHODS = TIMING_METHODS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", default="bcast", help=f"comma list of {', '.join(MEASURE_OPS)}")
    p.add_argument(
        "--tree", default="binomial", help="comma list of tree names (hnowmodel.trees), 'native' or 'native:ALGO'"
    )
    p.add_argument("--trees-packed", default=None, help="pre-built trees (hnowmodel.jobs.wire.pack of [{spec, tree}])")
    p.add_argument("--sizes", default="0,1K,4K", help="message sizes in bytes (per rank for scatter/gather)")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--reps", type=int, default=7, help="repetitions of each timing method (default 7)")
    p.add_argument("--iters", type=int, default=4, help="collectives per Figure-2 loop (default 4)")
    p.add_argument("--methods", default="sync,fig2", help="timing methods: sync, fig2 (default both)")
    p.add_argument("--testbed", default=None, help="emulated testbed: 'paper' or a JSON file (default: plain MPI)")
    p.add_argument("--layout", default=None, help="node type of each rank (overrides the testbed's ranks)")
    p.add_argument("--profile", default=None, help="profile for trees that need one (hierarchical, fnf, optimal)")
    p.add_argument("--keys", default=None, help="comma list: rank i joins the measuring communicator with key i")


def _tree_specs(args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    """The tree specs asked for (``--tree``, or the trees ``hnow`` packed with ``--trees-packed``) and the packed
    trees by spec."""
    from hnowmodel.errors import InputError
    from hnowmodel.trees import from_dict

    if not args.trees_packed:
        return check_trees(args.tree, args.testbed), {}
    from hnowmodel.jobs.wire import ProtocolError, unpack

    specs: list[str] = []
    prebuilt: dict[str, Any] = {}
    try:
        entries = unpack(args.trees_packed)
    except ProtocolError as e:
        raise InputError(f"--trees-packed: {e}") from None
    if not isinstance(entries, list) or not entries:
        raise InputError("--trees-packed: expected a list of {'spec': NAME, 'tree': {...}}")
    for e in entries:
        spec = str(e.get("spec", "")) if isinstance(e, dict) else ""
        if not spec:
            raise InputError("--trees-packed: every tree entry needs a 'spec' name")
        specs.append(spec)
        if native_name(spec) is None:
            prebuilt[spec] = from_dict(e.get("tree"))
    return specs, prebuilt


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Validate everything that can be checked before MPI starts; pin the libraries' algorithms in the
    environment."""
    from hnowmodel.errors import InputError
    from hnowmodel.params import Profile
    from hnowmodel.sizes import parse_sizes

    ops = check_ops(args.op)
    methods = check_methods(args.methods)
    sizes = parse_sizes(args.sizes)
    check_op_sizes(ops, sizes)
    if args.reps < 1:
        raise InputError(f"--reps must be >= 1, got {args.reps}")
    if args.iters < 1:
        raise InputError(f"--iters must be >= 1, got {args.iters}")
    if args.root < 0:
        raise InputError(f"--root must be a rank >= 0, got {args.root}")
    specs, prebuilt = _tree_specs(args)
    profile = Profile.load(args.profile) if args.profile else None
    keys = None
    if args.keys:
        try:
            keys = [int(k) for k in split_list(args.keys)]
        except ValueError:
            raise InputError(f"--keys: expected a comma list of integers, got {args.keys!r}") from None
    natives = [s for s in specs if native_name(s) is not None]
    if natives and args.testbed:  # also for pre-built tree files
        raise InputError(NATIVE_ON_TESTBED)
    _check_pinned(natives, ops)
    testbed = None
    if args.testbed:
        from calibrate.testbed_transport import load_testbed

        testbed = load_testbed(args.testbed)
    # MPICH reads its control variables and Open MPI its MCA parameters in MPI_Init: set them now. An algorithm
    # asked for by name (native:ALGO) is set as asked; the pinned defaults only where nothing is set yet, and not
    # those a library's default asked for (native:default) needs unset (MPICH's bcast would run binomial).
    unset: set[str] = set()
    for spec in natives:
        unset |= native_spec_unset(spec, ops)
        if spec != NATIVE:
            os.environ.update(native_spec_env(spec, ops))
    for k, v in native_env(None, OPS).items():
        if k not in unset:
            os.environ.setdefault(k, v)
    return {
        "ops": ops,
        "specs": specs,
        "prebuilt": prebuilt,
        "sizes": sizes,
        "methods": methods,
        "profile": profile,
        "keys": keys,
        "testbed": testbed,
    }


def _transport(args: argparse.Namespace, rt: Any, comm: Any, prepared: dict[str, Any]) -> tuple[Any, Any]:
    """The transport on the measuring communicator (the emulated testbed's or plain MPI) and the layout (a tuple of
    type names, None when unknown)."""
    testbed = prepared["testbed"]
    if testbed is not None:
        from calibrate.testbed_transport import make_transport

        if args.layout:
            from hnowmodel.layout import parse_layout

            testbed = testbed.with_ranks(parse_layout(args.layout, list(testbed.types)))
        if comm is not rt.comm:
            # a node keeps its type when it gets a new rank: new rank p has the type of its world rank
            world = testbed.layout_for(rt.size)
            testbed = testbed.with_ranks(tuple(comm.allgather(world[rt.rank])))
        tr = make_transport(comm, testbed)
        return tr, tuple(getattr(tr, "layout", None) or getattr(testbed, "ranks", ()) or ()) or None
    from calibrate.transport import PlainTransport

    layout = None
    if args.layout and prepared["profile"] is not None:
        from hnowmodel.layout import parse_layout

        layout = parse_layout(args.layout, prepared["profile"].type_names)
        if comm is not rt.comm:
            layout = tuple(comm.allgather(layout[rt.rank]))
    return PlainTransport(comm), layout


def _tree(spec: str, prepared: dict[str, Any], n: int, root: int, layout: Any) -> Any:
    """The tree of one spec (None: the library's own collective)."""
    from hnowmodel.errors import InputError
    from hnowmodel.trees import make_tree

    if native_name(spec) is not None:
        return None
    if spec in prepared["prebuilt"]:
        tree = prepared["prebuilt"][spec]
        if tree.n != n or tree.root != root:
            raise InputError(f"tree {spec!r} has {tree.n} ranks and root {tree.root}; job: {n} ranks, root {root}")
        return tree
    return make_tree(spec, n, root=root, layout=layout, profile=prepared["profile"])


@dataclass
class _Timing:
    """What every row of one job shares: the transport, the control communicator, the clock, the C kernels
    (None: Python timing), the common start's lead (µs), the methods, ``--reps`` and ``--iters``."""

    tr: Any
    ctl: Any
    clock: Clock
    ckern: Any
    lead_us: float
    methods: Sequence[str]
    reps: int
    iters: int


def _row(tm: _Timing, comm: Any, op: str, spec: str, tree: Any, root: int, m: int) -> dict[str, Any]:
    """One measured row: the collective run once untimed and checked on every rank, then timed by each method."""
    ex = native_executor(comm, root, m, op) if tree is None else TreeExecutor(tm.tr, tree, m)
    run = getattr(ex, op)
    tm.clock.root = root
    ex.setup(op)
    tm.tr.barrier()
    began = time.monotonic()
    run()  # untimed: delivers the payload, warms up the connections
    first_us = (time.monotonic() - began) * 1e6
    got = tm.ctl.allgather((ex.check(op), first_us))  # every rank's check and first-run time at once
    bads = [b for b, _ in got]
    if any(bads):
        raise RuntimeError(next(b for b in bads if b))
    first_us = max(t for _, t in got)
    row: dict[str, Any] = {"op": op, "tree": spec, "size": int(m), "root": root, "verified": True}
    if "sync" in tm.methods and tree is None and tm.ckern is not None:
        idle = min(first_us, REFILL_IDLE_MAX_US)
        row.update(time_sync_c(tm.ckern, tm.ctl, op, root, m, tm.reps, tm.lead_us, idle))
    elif "sync" in tm.methods:
        row.update(time_sync(tm.clock, run, tm.reps, first_start=op == "gather"))
    if "fig2" in tm.methods:
        row.update(time_fig2(tm.tr, tm.ctl, run, tm.reps, tm.iters))
    row["reps"] = tm.reps  # minimum; sync may take more for short collectives (sync_reps)
    row["iters"] = tm.iters
    if tree is not None and comm.Get_rank() == 0:
        row["tree_parent"] = tree.parent.tolist()
    return row


def main(args: argparse.Namespace, rt: Any, prepared: dict[str, Any]) -> dict[str, Any]:
    """Measure every (tree, operation, size) asked for (every rank); rank 0 returns the result document."""
    from mpi4py import MPI

    from hnowmodel.errors import InputError, LayoutError

    comm = rt.comm
    if prepared["keys"] is not None:
        keys = prepared["keys"]
        if len(keys) != rt.size:
            raise InputError(f"--keys has {len(keys)} entries for {rt.size} ranks")
        comm = comm.Split(0, keys[rt.rank])  # rank order of the measuring communicator = order of the keys
    n, rank = comm.Get_size(), comm.Get_rank()
    root = args.root
    if root >= n:
        raise InputError(f"--root {root} is not a rank in 0..{n - 1}")
    with rt.step("transport"):
        tr, layout = _transport(args, rt, comm, prepared)
        if layout is not None and len(layout) != n:
            raise LayoutError(f"layout has {len(layout)} ranks but the job has {n}")
        ctl = comm.Dup()  # timing control messages never mix with the collectives' own
        clock = Clock(tr, ctl)
    lib = library_info()
    out_rows: list[dict[str, Any]] = []
    methods = prepared["methods"]
    _check_natives_run(prepared, lib)
    natives = [s for s in prepared["specs"] if native_name(s) is not None]
    ckern = _c_kernels(comm) if prepared["testbed"] is None and natives and "sync" in methods else None
    # the common start must reach every rank before it comes: a few round trips ahead (10 µs on shared memory)
    lead_us = max(10.0, 4.0 * float(np.max(clock.rtt_us[np.isfinite(clock.rtt_us)], initial=0.0)))
    tm = _Timing(tr, ctl, clock, ckern, lead_us, methods, args.reps, args.iters)
    for spec in prepared["specs"]:
        with rt.step(f"tree {spec}"):
            tree = _tree(spec, prepared, n, root, layout)
        for op in prepared["ops"]:
            if not spec_runs_op(spec, op, lib["library"]):
                continue
            for m in prepared["sizes"]:
                with rt.step(f"{op} {spec} {m} B"):
                    out_rows.append(_row(tm, comm, op, spec, tree, root, m))
                rt.progress(f"{op} {spec} {m} B done")
    with rt.step("finish"):
        tr.finish()
        ctl.Barrier()
        ctl.Free()
    doc = None
    if rank == 0:
        doc = _document(args, prepared, tr, clock, lib, layout, n, out_rows)
        doc["wtime_is_global"] = bool(MPI.COMM_WORLD.Get_attr(MPI.WTIME_IS_GLOBAL))
    if comm is not rt.comm:  # with --keys the measuring rank 0 need not be world rank 0, which writes the result
        docs = rt.comm.gather(doc, root=0)
        doc = next((d for d in docs if d is not None), None) if rt.rank == 0 else None
    return doc  # type: ignore[return-value]


def _document(args, prepared, tr, clock, lib, layout, n, out_rows) -> dict[str, Any]:
    methods = prepared["methods"]
    primary = methods[0]
    natives = {
        s: spec_pinning(lib["library"], s, prepared["ops"]) for s in prepared["specs"] if native_name(s) is not None
    }
    for row in out_rows:
        row["measured_us"] = row[f"{primary}_median_us"]
        row["min_us"], row["median_us"], row["max_us"] = (
            row[f"{primary}_min_us"],
            row[f"{primary}_median_us"],
            row[f"{primary}_max_us"],
        )
    return {
        "np": n,
        **lib,
        # ``native``: the plain native spec's pinning (else the first native spec's); ``natives``: every one's
        "native": natives.get(NATIVE, next(iter(natives.values()), None)),
        "natives": natives,
        "mpi_thread_level": "single",
        "testbed": args.testbed,
        "emulated": bool(getattr(tr, "emulated", False)),
        "time_scale": float(getattr(tr, "time_scale", 1.0) or 1.0),
        "layout": list(layout) if layout else None,
        "keys": prepared["keys"],
        "method": primary,
        "methods": methods,
        "clock_offsets_us": [float(x) for x in clock.offsets_us],
        "rows": out_rows,
    }
