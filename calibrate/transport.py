"""The one interface every benchmark and collective runs on: ``send``, ``recv``, ``now`` (µs).

:class:`PlainTransport` is MPI as it is. The emulated heterogeneous testbed (:mod:`calibrate.testbed_transport`,
whose docstring states its semantics) implements the same interface with ``time_scale``-stretched busy times,
and reports every time divided by the scale, so code written against :class:`Transport` never knows which it
runs on.

Buffers are contiguous numpy ``uint8`` arrays (any writable buffer works for ``recv``).

MPI constants come from mpi4py, never by hand (``MPI_ANY_SOURCE`` is -2 in MPICH, where -1 is ``MPI_PROC_NULL``):
``recv(buf)`` or ``recv(buf, tr.ANY_SOURCE)`` takes a message from any rank, and ``tr.ANY_SOURCE`` *is*
``MPI.ANY_SOURCE``. This module does not import ``mpi4py.MPI`` when it is imported (that would initialise MPI
before ``python -m calibrate`` has parsed its arguments and pinned the thread level); only a transport, built on
a communicator, or an access to the module attribute ``ANY_SOURCE`` does.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .protocol import QUIET_POLL_S

__all__ = ["Transport", "PlainTransport", "sleep_wait"]


def __getattr__(name: str) -> Any:
    """``calibrate.transport.ANY_SOURCE``: mpi4py's ``MPI.ANY_SOURCE`` (imported, so MPI initialised, on first use)."""
    if name == "ANY_SOURCE":
        from mpi4py import MPI

        return MPI.ANY_SOURCE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sleep_wait(request: Any, first_s: float = QUIET_POLL_S, cap_s: float | None = None) -> None:
    """Complete an MPI request by testing it between sleeps (MPICH's blocking wait spins a core): ``first_s`` at
    first, each sleep twice the one before up to ``cap_s`` (s; default: ``first_s``, a fixed poll). The one sleeping
    wait of the measuring side (the constants: :mod:`calibrate.protocol`)."""
    poll, cap = first_s, first_s if cap_s is None else cap_s
    while not request.Test():
        time.sleep(poll)
        poll = min(2 * poll, cap)


class Transport:
    """Point-to-point messaging plus a clock, in model microseconds.

    ``send(buf, dest, tag)`` returns when the sender is free again (its send overhead is over);
    ``recv(buf, source, tag)`` returns when the message is fully received into ``buf`` and returns the source
    rank (``source=None`` or :attr:`ANY_SOURCE` takes whichever message arrives first; ``MPI.PROC_NULL`` returns
    ``MPI.PROC_NULL`` at once, as ``MPI_Recv`` does); ``now()`` is this rank's clock in µs
    (model time: real time divided by ``time_scale``); ``barrier()`` synchronises all ranks;
    ``compute(us)`` keeps this rank busy for ``us`` model µs (for benchmarks that measure CPU availability);
    ``finish()`` completes anything still in flight (call before the job ends).
    """

    comm: Any
    rank: int
    size: int
    time_scale: float = 1.0
    emulated: bool = False

    @property
    def ANY_SOURCE(self) -> int:  # noqa: N802 (the MPI name)
        """mpi4py's ``MPI.ANY_SOURCE`` (MPI is initialised once a transport exists)."""
        from mpi4py import MPI

        return MPI.ANY_SOURCE

    def send(self, buf: np.ndarray, dest: int, tag: int = 0) -> None:
        raise NotImplementedError

    def recv(self, buf: np.ndarray, source: int | None = None, tag: int = 0) -> int:
        raise NotImplementedError

    def recv_each(self, slots: list[tuple[int, np.ndarray]], tag: int = 0) -> list[int]:
        """Receive one message from each ``(source, buffer)`` of ``slots``, in the order they arrive; returns the
        sources in that order. This default takes them one any-source receive at a time (through a scratch buffer
        as large as the largest slot), which is what the emulated testbed's arrival semantics need."""
        scratch = np.empty(max((b.nbytes for _, b in slots), default=0), dtype=np.uint8)
        where = {src: b for src, b in slots}
        order = []
        for _ in slots:
            src = self.recv(scratch, self.ANY_SOURCE, tag)
            dst = where.pop(src)
            dst.reshape(-1).view(np.uint8)[:] = scratch[: dst.nbytes]
            order.append(src)
        return order

    def now(self) -> float:
        raise NotImplementedError

    def barrier(self) -> None:
        self.comm.Barrier()

    def idle(self, us: float) -> None:
        """Sleep (give the CPU away) for ``us`` model microseconds."""
        time.sleep(max(0.0, us) * self.time_scale / 1e6)

    def quiet_barrier(self) -> None:
        """A barrier that sleeps while it waits: for ranks that sit out a measurement on a shared machine."""
        sleep_wait(self.comm.Ibarrier())

    def compute(self, us: float) -> None:
        """Busy-spin for ``us`` model microseconds (real CPU work, not sleep)."""
        end = self.now() + us
        while self.now() < end:
            pass

    def finish(self) -> None:
        pass


class PlainTransport(Transport):
    """MPI as it is: blocking standard-mode ``Send``/``Recv``, ``MPI.Wtime`` in µs."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._status = MPI.Status()

    def send(self, buf: np.ndarray, dest: int, tag: int = 0) -> None:
        self.comm.Send(buf, dest, tag)

    def recv(self, buf: np.ndarray, source: int | None = None, tag: int = 0) -> int:
        src = self._MPI.ANY_SOURCE if source is None else source  # mpi4py's constants pass through unchanged
        self.comm.Recv(buf, src, tag, self._status)
        return self._status.Get_source()

    def recv_each(self, slots: list[tuple[int, np.ndarray]], tag: int = 0) -> list[int]:
        """One receive posted per source straight into its buffer, completed in arrival order (``Waitany``): the
        same arrival-order semantics as any-source receives, without wildcard matching (which hung MPICH over
        UCX/TCP on 6 hosts with several senders to one receiver)."""
        reqs = [self.comm.Irecv(b, src, tag) for src, b in slots]
        order = []
        for _ in slots:
            i = self._MPI.Request.Waitany(reqs)
            order.append(slots[i][0])
        return order

    def now(self) -> float:
        return self._MPI.Wtime() * 1e6
