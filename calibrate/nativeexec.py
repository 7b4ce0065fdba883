"""The MPI library's own collectives in ``python -m calibrate measure`` (and the calibration's interleaved natives):
the environment that pins their algorithms before ``MPI_Init`` (from the operation registry,
:class:`hnowmodel.libraries.native.NativeAlgorithm`), the checks of ``native:ALGO`` specs, what a run was pinned to
(for the result document), and :class:`NativeExecutor`, which calls ``MPI_Bcast``/``MPI_Scatter``/``MPI_Gather``
with the tree executor's set-up/check interface.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from hnowmodel.mpi_programs import library_name
from hnowmodel.ops import check_native, native_for, native_name, native_spec_env, native_spec_unset
from hnowmodel.ops import names as op_names
from hnowmodel.options import MEASURE_OPS as OPS
from hnowmodel.options import NATIVE

from .treeexec import bcast_payload, payload_block

__all__ = [
    "native_env",
    "MPICH_PIN",
    "OMPI_PIN",
    "NativeExecutor",
    "native_executor",
    "library_info",
    "native_pinning",
    "spec_pinning",
    "spec_runs_op",
]


def native_env(library: str | None, ops: Sequence[str]) -> dict[str, str]:
    """The environment that pins ``library``'s own algorithm for each of ``ops`` (the operation registry's
    :class:`hnowmodel.libraries.native.NativeAlgorithm`); it must be set before ``MPI_Init``. ``library`` None: every
    library's settings at once - what a rank sets before it knows which library mpi4py loads (MPICH ignores
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


def native_executor(comm: Any, root: int, m: int, op: str) -> Any:
    """The executor of the library's own ``op``: :class:`NativeExecutor` for an operation trees run (bcast,
    scatter, gather), :class:`calibrate.nativedata.NativeDataExecutor` for one whose algorithms are message
    schedules (``m`` as the registry defines it)."""
    from hnowmodel import ops as registry

    if registry.get(op).movement is not None:
        return NativeExecutor(comm, root, m)
    from .nativedata import NativeDataExecutor

    return NativeDataExecutor(comm, root, m)


class NativeExecutor:
    """MPI_Bcast / MPI_Scatter / MPI_Gather of the library, with the same set-up/check interface as the tree
    executor (:class:`~calibrate.treeexec.TreeExecutor`)."""

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


def library_info() -> dict[str, Any]:
    """The running MPI library: ``library`` (``MPICH``, ``Open MPI``, ``Intel MPI``, …), ``library_version``,
    ``mpi_standard``."""
    from mpi4py import MPI

    from .info import version_text

    text = version_text(MPI)
    first = text.splitlines()[0] if text else ""
    return {"library": library_name(text), "library_version": first, "mpi_standard": "{}.{}".format(*MPI.Get_version())}


def native_pinning(library: str, ops: Sequence[str] | None = None) -> dict[str, Any]:
    """What the native collectives run as, for the result document: whether this process's environment pins
    ``library``'s algorithms as the operation registry says (``cvars``: MPICH's control variables or Open MPI's
    MCA parameters, as set), and the tree that models each (``model_trees``; ``model_tree`` when they agree), for
    ``ops`` (None: every operation)."""
    from hnowmodel import ops as registry

    known = {op: registry.get(op).native.get(library) for op in (OPS if ops is None else ops)}
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
        return native_pinning(library, ops)
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
    native algorithm asked for by name (``native:tree:kary:3``) only the operations ``library`` offers it for; a
    tree no operation whose algorithms are message schedules (it has no tree movement)."""
    from hnowmodel import ops as registry

    if native_name(spec) and library is not None:
        return native_for(spec, op, library) is not None
    if native_name(spec) is None and registry.get(op).movement is None:  # no tree runs it
        return False
    name, _, arg = spec.partition(":")
    chosen_for = arg.partition(":")[0]
    return not (name == "optimal" and chosen_for in OPS and chosen_for != op)


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
