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

Timing, both methods for every row, each repeated ``--reps`` times (min / median / max reported, µs; on the
emulated testbed every time is in testbed µs, i.e. divided by ``time_scale``):

* ``fig2`` - the paper's Figure 2: ``iters`` barriers timed to get the barrier cost, then ``iters`` rounds of
  (collective; barrier); each rank's mean round time, max over ranks, minus the barrier cost (also max over
  ranks). It includes whatever part of the barrier does not overlap the collective's tail: ranks that finish
  early enter the barrier early, so the subtraction removes a full barrier although only the last finisher's
  share of it was added, and on an oversubscribed machine the barrier's own noise lands in the result.
* ``sync`` - barrier-free: each rank's clock offset to rank 0 is measured once by ping-pong (the sample with the
  smallest round trip), rank 0 announces a start instant a few ms ahead, every rank waits for it on its own
  clock (sleeping, then spinning with sched_yield the last ~0.3 ms) and runs one collective; each rank's finish
  time is collected and the completion time is the last finish minus the root's actual start (gather: the
  earliest start). That is the model's definition (eq. 6: the max over ranks of the time each rank is done)
  for a single, cold collective; it also gives each rank's own finish time (``per_rank_us``). A rank that the
  OS schedules late shows up as ``sync_late_us``. Short collectives get extra repetitions (``sync_reps``).

How they differ here (2 cores): on the emulated testbed ``sync`` matches the model with the true parameters
within ~1 % at every size, ``fig2`` too from 1 KiB up but errs by up to ~9 % at 0 bytes, where the emulated
barrier's polling and the partial overlap of barrier and collective are a large share of the time. On plain
MPI with more ranks than cores ``sync`` reads 100-300 µs for collectives that ``fig2`` puts at 10-60 µs: a single
cold collective pays an OS wake-up for every rank that slept or was descheduled, which a hot loop does not -
so ``hnow measure``/``compare`` default to ``sync`` on a testbed and ``fig2`` on plain MPI (``--method auto``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hnowmodel.launchers import library_name
from hnowmodel.ops import check_native, native_for, native_name, native_spec_env, native_spec_unset
from hnowmodel.ops import names as op_names
from hnowmodel.options import (
    MEASURE_OPS,
    NATIVE,
    NATIVE_ON_TESTBED,
    TIMING_METHODS,
    check_methods,
    check_ops,
    check_trees,
    split_list,
)

from .protocol import REFILL_IDLE_MAX_US
from .treeexec import TreeExecutor, bcast_payload, payload_block

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

HELP = "run bcast/scatter/gather over hnowmodel trees or the MPI library's own, and time them (µs)"
OPS = MEASURE_OPS
METHODS = TIMING_METHODS


def native_env(library: str | None, ops: Sequence[str]) -> dict[str, str]:
    """The environment that pins ``library``'s own algorithm for each of ``ops`` (the operation registry's
    :class:`hnowmodel.libraries.native.NativeAlgorithm`); it must be set before ``MPI_Init``. ``library`` None:
    every library's settings at once - what a rank sets before it knows which library mpi4py loads (MPICH ignores
    ``OMPI_MCA_*``, Open MPI ignores ``MPIR_CVAR_*``): :func:`hnowmodel.ops.native_spec_env` of ``native``."""
    from hnowmodel import ops as registry

    if library is None:
        return native_spec_env(NATIVE, ops)
    return {k: v for op in ops if (nat := registry.get(op).native.get(library)) for k, v in nat.env.items()}


#: MPICH control variables that pin MPI_Bcast/Scatter/Gather to the binomial algorithm (verified with
#: ``mpivars`` of MPICH 5.0.2), from the operation registry.
MPICH_PIN: dict[str, str] = native_env("MPICH", op_names())
#: Open MPI MCA parameters that pin them to coll/tuned's binomial algorithms (bcast 6, scatter 2, gather 2).
OMPI_PIN: dict[str, str] = native_env("Open MPI", op_names())


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", default="bcast", help="comma list of bcast, scatter, gather")
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


def _check_pinned(natives: Sequence[str], ops: Sequence[str]) -> None:
    """native:ALGO asks for one algorithm: it must be one that some library runs for one of the operations, and the
    algorithms of one job must not need one variable set two ways (MPI reads them once, in MPI_Init)."""
    from hnowmodel.errors import InputError

    pinned: dict[str, str] = {}
    unset: set[str] = set()
    for spec in natives:
        check_native(spec, ops)
        unset |= native_spec_unset(spec, ops)  # a library's default: what would pin another algorithm
        for k, v in native_spec_env(spec, ops).items():
            if pinned.get(k, v) != v:
                raise InputError(
                    f"--tree {','.join(natives)}: these native algorithms need {k} set two ways; measure them in "
                    "separate jobs"
                )
            pinned[k] = v
    both = sorted(unset & set(pinned))
    if both:
        raise InputError(
            f"--tree {','.join(natives)}: one of these native algorithms needs {both[0]} set, another (a library's "
            "default) unset; measure them in separate jobs"
        )


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Validate everything that can be checked before MPI starts; pin the libraries' algorithms in the
    environment."""
    from hnowmodel.errors import InputError
    from hnowmodel.params import Profile
    from hnowmodel.sizes import parse_sizes

    ops = check_ops(args.op)
    methods = check_methods(args.methods)
    sizes = parse_sizes(args.sizes)
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
        from calibrate.testbed import load_testbed

        testbed = load_testbed(args.testbed)
    # MPICH reads its control variables and Open MPI its MCA parameters in MPI_Init: set them now. An algorithm
    # asked for by name (native:ALGO) is set as asked; the pinned defaults only where nothing is set yet.
    for spec in natives:
        if spec != NATIVE:
            os.environ.update(native_spec_env(spec, ops))
    for k, v in native_env(None, OPS).items():
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


class NativeExecutor:
    """MPI_Bcast / MPI_Scatter / MPI_Gather of the library, same set-up/check interface as :class:`TreeExecutor`."""

    def __init__(self, comm: Any, root: int, m: int) -> None:
        self.comm, self.root, self.m = comm, root, int(m)
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.buf = np.zeros(self.m, dtype=np.uint8)
        self.big = np.zeros(self.m * self.size if self.rank == root else 0, dtype=np.uint8)

    def bcast(self) -> None:
        self.comm.Bcast(self.buf, self.root)

    def scatter(self) -> None:
        self.comm.Scatter(self.big if self.rank == self.root else None, self.buf, self.root)

    def gather(self) -> None:
        self.comm.Gather(self.buf, self.big if self.rank == self.root else None, self.root)

    def setup(self, op: str) -> None:
        m = self.m
        self.buf[:] = 0
        self.big[:] = 0
        if op == "bcast" and self.rank == self.root:
            self.buf[:] = bcast_payload(m)
        elif op == "scatter" and self.rank == self.root:
            for r in range(self.size):
                self.big[r * m : (r + 1) * m] = payload_block(r, m)
        elif op == "gather":
            self.buf[:] = payload_block(self.rank, m)

    def check(self, op: str) -> str:
        m = self.m
        if op == "bcast":
            ok = np.array_equal(self.buf, bcast_payload(m))
        elif op == "scatter":
            ok = np.array_equal(self.buf, payload_block(self.rank, m))
        elif self.rank == self.root:
            ok = all(np.array_equal(self.big[r * m : (r + 1) * m], payload_block(r, m)) for r in range(self.size))
        else:
            ok = True
        return "" if ok else f"native {op} delivered wrong bytes ({m} B) on rank {self.rank}"


# ---- timing --------------------------------------------------------------------------------------------------
class Clock:
    """Transport clock plus this rank's offset to rank 0's clock (µs), measured by ping-pong on a private comm."""

    def __init__(self, tr: Any, ctl: Any, samples: int = 12) -> None:
        self.tr, self.ctl = tr, ctl
        self.root = 0  # whose actual start is the reference of a synchronised run (set per tree)
        rank, size = ctl.Get_rank(), ctl.Get_size()
        ping = np.zeros(1)
        best = np.full(size, np.inf)
        off = np.zeros(size)
        for r in range(1, size):
            for _ in range(samples):
                if rank == 0:
                    t0 = tr.now()
                    ctl.Send(ping, r, 7)
                    ctl.Recv(ping, r, 7)
                    t1 = tr.now()
                    if t1 - t0 < best[r]:
                        best[r], off[r] = t1 - t0, ping[0] - (t0 + t1) / 2
                elif rank == r:
                    ctl.Recv(ping, 0, 7)
                    ping[0] = tr.now()
                    ctl.Send(ping, 0, 7)
        self.offsets_us = ctl.bcast(off, root=0)  # local clock of rank r ~ rank 0's clock + offsets_us[r]
        self.offset_us = float(self.offsets_us[rank])
        self.rtt_us = ctl.bcast(best, root=0)

    def wait_until(self, local_t: float) -> float:
        """Sleep, then spin (yielding the CPU), until this rank's clock reads ``local_t`` (model µs).

        Returns the clock then. The spin yields because ranks are oversubscribed on few cores: a rank that spins
        without yielding keeps a peer that is due to start (or to forward a message) off the CPU.
        """
        scale = float(getattr(self.tr, "time_scale", 1.0) or 1.0)
        while True:
            left_real_s = (local_t - self.tr.now()) * scale * 1e-6
            if left_real_s <= 0:
                return self.tr.now()
            if left_real_s > 3e-4:
                time.sleep(left_real_s - 3e-4)
            else:
                os.sched_yield()


def _stats(xs: Sequence[float]) -> tuple[float, float, float]:
    return float(min(xs)), float(statistics.median(xs)), float(max(xs))


def time_sync(
    clock: Clock,
    run: Callable[[], None],
    reps: int,
    lead_real_us: float = 4000.0,
    extra_budget_s: float = 0.25,
    first_start: bool = False,
) -> dict[str, Any]:
    """Barrier-free completion time (µs): synchronised start, then the last finish minus the root's start.

    Rank 0 announces a start instant ``lead_real_us`` real µs ahead; every rank waits for it on its own clock and
    runs one collective. Finish times are mapped to rank 0's clock with the measured offsets; the reference is the
    root's actual start (nothing can happen before the root starts), or with ``first_start`` (gather, where every
    rank starts work at once) the earliest rank's start, so a rank that wakes late costs only what it really
    delays. ``late_us`` is the median over repetitions of the latest rank's wake-up delay.

    At least ``reps`` repetitions; short collectives get up to ``3*reps`` while the row has used less than
    ``extra_budget_s`` real seconds, because they are the most exposed to scheduling noise and cost little.
    """
    tr, ctl = clock.tr, clock.ctl
    scale = float(getattr(tr, "time_scale", 1.0) or 1.0)
    me = ctl.Get_rank()
    comp, late, per_rank = [], [], []
    early = 0  # finishes before the reference start: clock offsets off by more than the collective lasts
    began = time.monotonic()
    for i in range(3 * reps):
        ctl.Barrier()
        t0 = None
        if me == 0 and (i < reps or time.monotonic() - began < extra_budget_s):
            t0 = tr.now() + lead_real_us / scale
        t0 = ctl.bcast(t0, root=0)
        if t0 is None:
            break
        target = t0 + clock.offset_us
        start = clock.wait_until(target)
        run()
        end = tr.now()
        got = ctl.gather((start - clock.offset_us, end - clock.offset_us, start - target), root=0)
        if me == 0:
            # bcast/scatter: nothing happens before the root starts; gather: the first rank to start begins it
            ref = min(g[0] for g in got) if first_start else got[clock.root][0]
            done = [g[1] - ref for g in got]
            early += sum(d < 0 for d in done)
            done = [max(0.0, d) for d in done]
            comp.append(max(done))
            late.append(max(g[2] for g in got))
            per_rank.append(done)
    if me != 0:
        return {}
    mn, md, mx = _stats(comp)
    return {
        "sync_min_us": mn,
        "sync_median_us": md,
        "sync_max_us": mx,
        "sync_late_us": float(statistics.median(late)),
        "sync_reps": len(comp),
        # said, not hidden: a rank whose finish, mapped to rank 0's clock, fell before the start counted as 0
        "sync_finish_before_start": early,
        "per_rank_us": [float(statistics.median(col)) for col in zip(*per_rank, strict=True)],
    }


def _c_kernels(comm: Any) -> Any:
    """The C kernels on ``comm`` when every rank can load them, else None (the Python timing is used)."""
    from .ckernels import Kernels, available

    if not all(comm.allgather(available()[0])):
        return None
    return Kernels(comm)


def time_sync_c(
    k: Any, ctl: Any, op: str, root: int, m: int, reps: int, lead_us: float, idle_us: float = 0.0
) -> dict[str, Any]:
    """The library's own collective timed in C with a common start (µs): every rank spins to one instant of the
    shared clock, calls it once, and the completion is the latest finish minus the earliest start; ``idle_us``:
    every rank sleeps that long before each timed repetition."""
    n = max(3 * reps, 11)  # cheap: a cold single collective is the noisiest case, so take more
    start, finish = k.coll(op, root, m, n, lead_us=lead_us, idle_us=idle_us)
    starts, finishes = ctl.gather(start, root=0), ctl.gather(finish, root=0)
    if ctl.Get_rank() != 0:
        return {}
    t0 = np.min(np.array(starts), axis=0)
    done = np.array(finishes) - t0  # (ranks, repetitions): when each rank finished, from the common start
    comp = done.max(axis=0)
    late = np.max(np.array(starts), axis=0) - t0
    mn, md, mx = _stats(comp.tolist())
    return {
        "sync_min_us": mn,
        "sync_median_us": md,
        "sync_max_us": mx,
        "sync_late_us": float(np.median(late)),
        "sync_reps": n,
        "sync_kernel": "C",
        "sync_lead_us": lead_us,
        "sync_idle_us": idle_us,
        "per_rank_us": [float(x) for x in np.median(done, axis=1)],
    }


def time_fig2(tr: Any, ctl: Any, run: Callable[[], None], reps: int, iters: int) -> dict[str, Any]:
    """The paper's Figure 2: (collective; barrier) loop minus a barrier loop, max over ranks (µs)."""
    from mpi4py import MPI

    vals, barriers = [], []
    for _ in range(reps):
        tr.barrier()
        a = tr.now()
        for _ in range(iters):
            tr.barrier()
        barrier_us = (tr.now() - a) / iters
        tr.barrier()
        a = tr.now()
        for _ in range(iters):
            run()
            tr.barrier()
        local_us = (tr.now() - a) / iters
        glob = ctl.allreduce(local_us, op=MPI.MAX)
        bar = ctl.allreduce(barrier_us, op=MPI.MAX)
        vals.append(glob - bar)
        barriers.append(bar)
    mn, md, mx = _stats(vals)
    return {
        "fig2_min_us": mn,
        "fig2_median_us": md,
        "fig2_max_us": mx,
        "barrier_us": float(statistics.median(barriers)),
    }


# ---- the task ------------------------------------------------------------------------------------------------
def library_info() -> dict[str, Any]:
    """The running MPI library: ``library`` (``MPICH``, ``Open MPI``, ``Intel MPI``, …), ``library_version``,
    ``mpi_standard``."""
    from mpi4py import MPI

    from .info import version_text

    text = version_text(MPI)
    first = text.splitlines()[0] if text else ""
    return {"library": library_name(text), "library_version": first, "mpi_standard": "{}.{}".format(*MPI.Get_version())}


def native_pinning(library: str) -> dict[str, Any]:
    """What the native collectives run as, for the result document: whether this process's environment pins
    ``library``'s algorithms as the operation registry says (``cvars``: MPICH's control variables or Open MPI's
    MCA parameters, as set), and the tree that models each (``model_trees``; ``model_tree`` when they agree)."""
    from hnowmodel import ops as registry

    known = {op: registry.get(op).native.get(library) for op in OPS}
    known = {op: nat for op, nat in known.items() if nat is not None}
    if not known:
        return {
            "pinned": False,
            "algorithm": f"library default (hnow pins no algorithm of {library or 'this library'})",
            "cvars": {},
            "model_tree": None,
            "model_trees": None,
        }
    wanted = {k: v for nat in known.values() for k, v in nat.env.items()}
    env = {k: os.environ.get(k, "") for k in wanted}
    unset = {k for nat in known.values() for k in nat.unset}  # a default runs only with these unset
    pinned = all(env[k] == v for k, v in wanted.items()) and not any(k in os.environ for k in unset)
    trees = {op: "by size" if nat.by_size else nat.model_tree for op, nat in known.items()}  # a default: per size
    return {
        "pinned": pinned,
        "algorithm": ", ".join(sorted({nat.algorithm for nat in known.values()})) if pinned else "library default",
        "cvars": env,
        "model_tree": (next(iter(trees.values())) if len(set(trees.values())) == 1 else "per operation")
        if pinned
        else None,
        "model_trees": trees if pinned else None,
    }


def spec_pinning(library: str, spec: str, ops: Sequence[str]) -> dict[str, Any]:
    """What the native spec ``spec`` runs as under ``library``, for the result document: for ``native`` as
    :func:`native_pinning`; for ``native:ALGO`` the algorithm, whether this process's environment pins it for each
    of ``ops`` it runs (``cvars``: the variables as set), and its model tree per operation."""
    if spec == NATIVE:
        return native_pinning(library)
    nats = {op: nat for op in ops if (nat := native_for(spec, op, library)) is not None}
    wanted = {k: v for nat in nats.values() for k, v in nat.env.items()}
    env = {k: os.environ.get(k, "") for k in wanted}
    trees = {op: "by size" if nat.by_size else nat.model_tree for op, nat in nats.items()}
    unset = {k for nat in nats.values() for k in nat.unset}
    pinned = bool(nats) and all(env[k] == v for k, v in wanted.items()) and not any(k in os.environ for k in unset)
    return {
        "pinned": pinned,
        "algorithm": native_name(spec),
        "cvars": env,
        "model_tree": (next(iter(trees.values())) if len(set(trees.values())) == 1 else "per operation")
        if pinned
        else None,
        "model_trees": trees if pinned else None,
    }


def spec_runs_op(spec: str, op: str, library: str | None = None) -> bool:
    """A tree chosen for one operation (``optimal:scatter``, ``optimal:gather:4096``) runs only that operation; a
    native algorithm asked for by name (``native:tree:kary:3``) only the operations ``library`` offers it for."""
    if native_name(spec) and library is not None:
        return native_for(spec, op, library) is not None
    name, _, arg = spec.partition(":")
    chosen_for = arg.partition(":")[0]
    return not (name == "optimal" and chosen_for in OPS and chosen_for != op)


def _transport(args: argparse.Namespace, rt: Any, comm: Any, prepared: dict[str, Any]) -> tuple[Any, Any]:
    """The transport on the measuring communicator (the emulated testbed's or plain MPI) and the layout (a tuple of
    type names, None when unknown)."""
    testbed = prepared["testbed"]
    if testbed is not None:
        from calibrate.testbed import make_transport

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


def _check_natives_run(prepared: dict[str, Any], lib: dict[str, Any]) -> None:
    """Every ``native:ALGO`` asked for is one the running library has for one of the operations."""
    from hnowmodel import ops as registry
    from hnowmodel.errors import InputError

    ops = prepared["ops"]
    for spec in (s for s in prepared["specs"] if native_name(s) is not None):
        if spec != NATIVE and not any(spec_runs_op(spec, op, lib["library"]) for op in ops):
            offered = sorted({a.algorithm for op in ops for a in registry.native_choices(op, lib["library"])})
            raise InputError(
                f"--tree {spec}: {lib['library']} has no native algorithm {native_name(spec)!r} for "
                f"{', '.join(ops)} that hnow pins (choose from: {', '.join(offered) or 'none'})"
            )


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
    ex = NativeExecutor(comm, root, m) if tree is None else TreeExecutor(tm.tr, tree, m)
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
