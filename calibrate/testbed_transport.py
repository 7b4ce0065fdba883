"""An emulated heterogeneous cluster on one machine: testbed files and the emulating transport.

A testbed (``hnowmodel.testbed/1``) has the same ``types``/``network``/``links`` as a profile, plus ``ranks`` (the
node type of each rank) and ``time_scale``. :class:`EmulatedTransport` makes every rank behave like its type, with
these semantics, at ``time_scale`` times the model's durations:

* a sender of type t is busy ``s*S_t(m)`` before its message leaves (it then carries its departure time);
* the receiver's inbound link carries one message at a time, in departure order: a message that left at ``d``
  arrives at ``max(d, previous arrival on that link) + s*X(m)``;
* once the message has arrived and the receive is posted, the receiver is busy ``s*R_t(m)``.

Busy time is real elapsed time: sleep, then spin the last ~150 µs. Waiting (for a message, in a barrier) sleeps
in short steps instead of spinning, because the ranks of a testbed share this machine's few cores. Departure and
arrival times use ``CLOCK_MONOTONIC``, which all processes on one machine share, so a testbed runs on one host
only. Every time reported (``now()``) is real time divided by ``time_scale``: "testbed µs".

The calibration never reads a testbed's parameters; only tests and experiments compare against
:meth:`Testbed.profile`.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hnowmodel.errors import InputError
from hnowmodel.testbed import TESTBED_SCHEMA, Testbed, load_testbed, paper_testbed

from .protocol import QUIET_POLL_S
from .transport import PlainTransport, Transport

__all__ = ["Testbed", "TESTBED_SCHEMA", "load_testbed", "paper_testbed", "EmulatedTransport", "make_transport"]

# ---- timing primitives -----------------------------------------------------------------------------------------
_SPIN_NS = 150_000  # spin the last 150 µs of a busy period: sleep wake-up is not more precise than that


def _lower_timer_slack() -> None:
    """Ask Linux for 1 µs timer slack (default 50 µs) so short sleeps end closer to when asked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK = 29
    except (OSError, AttributeError):
        pass


def _busy_until(t_end_ns: int) -> None:
    """Occupy this rank until ``t_end_ns`` (CLOCK_MONOTONIC): sleep, then spin the last stretch."""
    while True:
        left = t_end_ns - time.monotonic_ns()
        if left <= 0:
            return
        if left > _SPIN_NS:
            time.sleep((left - _SPIN_NS) / 1e9)
        # else: spin


_POLL_S = QUIET_POLL_S  # sleep between polls while waiting for a message (the measuring side's one poll)


@dataclass
class _Pending:
    source: int
    tag: int
    depart_ns: int
    payload: np.ndarray
    arrive_ns: int | None = None  # final once the link has carried it (arrival in the past)


class EmulatedTransport(Transport):
    """The :class:`~calibrate.transport.Transport` of an emulated testbed (see the module docstring)."""

    emulated = True

    def __init__(self, comm: Any, testbed: Testbed) -> None:
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.testbed = testbed
        self.layout = testbed.layout_for(self.size)
        self.time_scale = float(testbed.time_scale)
        me = testbed.types[self.layout[self.rank]]
        s = self.time_scale * 1000.0  # model µs -> real ns
        self._send_ns = (me.Sc_us * s, me.Sm_us_per_byte * s)
        self._recv_ns = (me.Rc_us * s, me.Rm_us_per_byte * s)
        # wire cost into this rank from each source rank (its inbound link)
        self._wire_ns = []
        for r in range(self.size):
            lk = testbed.links.get((self.layout[r], self.layout[self.rank]), testbed.network)
            self._wire_ns.append((lk.Xc_us * s, lk.Xm_us_per_byte * s))
        self._pending: list[_Pending] = []
        self._link_free_ns = 0  # when the inbound link finished carrying the last message that has arrived
        self._outgoing: list[Any] = []
        self._status = MPI.Status()
        _lower_timer_slack()

    # ---- sending ----
    def send(self, buf: np.ndarray, dest: int, tag: int = 0) -> None:
        m = np.asarray(buf).nbytes
        c, k = self._send_ns
        depart = time.monotonic_ns() + int(c + k * m)
        # The message is handed to MPI at once, stamped with the instant it "leaves" (the end of the busy period):
        # the receiver goes by the stamp, so this process's own Python/MPI costs fall inside the busy time
        # instead of adding to it.
        msg = np.empty(8 + m, dtype=np.uint8)
        msg[:8].view(np.int64)[0] = depart
        msg[8:] = np.frombuffer(np.ascontiguousarray(buf).data, dtype=np.uint8, count=m)
        self._outgoing.append((self.comm.Isend(msg, dest, tag), msg))
        self._reap()
        _busy_until(depart)

    def _reap(self) -> None:
        if self._outgoing:
            self._outgoing = [(r, b) for r, b in self._outgoing if not r.Test()]

    # ---- receiving ----
    def _drain(self) -> None:
        """Move every message MPI already holds for this rank into the pending list (their link time is planned)."""
        MPI = self._MPI
        while self.comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, self._status):
            src, tag, count = self._status.Get_source(), self._status.Get_tag(), self._status.Get_count(MPI.BYTE)
            msg = np.empty(count, dtype=np.uint8)
            self.comm.Recv(msg, src, tag)
            self._pending.append(_Pending(src, tag, int(msg[:8].view(np.int64)[0]), msg[8:]))

    def _plan(self, now_ns: int) -> None:
        """Schedule the inbound link: messages in departure order, one at a time; fix arrivals already past."""
        free = self._link_free_ns
        waiting = sorted((p for p in self._pending if p.arrive_ns is None), key=lambda p: (p.depart_ns, p.source))
        for p in waiting:
            c, k = self._wire_ns[p.source]
            arrive = max(p.depart_ns, free) + int(c + k * p.payload.nbytes)
            if arrive > now_ns:
                break  # not yet arrived: an earlier-departing message may still show up and go first
            p.arrive_ns = free = arrive
        self._link_free_ns = free

    def _next_arrival(self, now_ns: int) -> int | None:
        """Planned arrival of the first not-yet-arrived message (None when nothing is pending)."""
        waiting = sorted((p for p in self._pending if p.arrive_ns is None), key=lambda p: (p.depart_ns, p.source))
        if not waiting:
            return None
        c, k = self._wire_ns[waiting[0].source]
        return max(waiting[0].depart_ns, self._link_free_ns) + int(c + k * waiting[0].payload.nbytes)

    def recv(self, buf: np.ndarray, source: int | None = None, tag: int = 0) -> int:
        if source == self._MPI.PROC_NULL:  # as MPI_Recv: nothing to receive, at once
            return self._MPI.PROC_NULL
        if source is None:
            source = self._MPI.ANY_SOURCE
        posted = time.monotonic_ns()
        while True:
            self._drain()
            now = time.monotonic_ns()
            self._plan(now)
            arrived = [
                p
                for p in self._pending
                if p.arrive_ns is not None and p.tag == tag and source in (self._MPI.ANY_SOURCE, p.source)
            ]
            if arrived:
                p = min(arrived, key=lambda q: q.arrive_ns)
                break
            nxt = self._next_arrival(now)
            if nxt is not None and nxt - now > _SPIN_NS:
                time.sleep(min((nxt - now - _SPIN_NS) / 1e9, 0.002))  # wake early to look for earlier departures
            elif nxt is None:
                time.sleep(_POLL_S)
            self._reap()
        self._pending.remove(p)
        out = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.reshape(-1).view(np.uint8)
        if out.nbytes < p.payload.nbytes:  # as MPI_Recv: a shorter message may land in a larger buffer
            raise InputError(
                f"rank {self.rank}: message from rank {p.source} has {p.payload.nbytes} bytes, "
                f"receive buffer only {out.nbytes}"
            )
        out[: p.payload.nbytes] = p.payload
        c, k = self._recv_ns
        _busy_until(max(p.arrive_ns, posted) + int(c + k * p.payload.nbytes))
        return p.source

    # ---- clock, barrier ----
    def now(self) -> float:
        return time.monotonic_ns() / 1000.0 / self.time_scale

    def barrier(self) -> None:
        self.quiet_barrier()

    def compute(self, us: float) -> None:
        end = time.monotonic_ns() + int(us * self.time_scale * 1000)
        while time.monotonic_ns() < end:
            pass

    def finish(self) -> None:
        while self._outgoing:
            self._reap()
            if self._outgoing:
                time.sleep(_POLL_S)


def make_transport(comm: Any, testbed: Testbed | str | None) -> Transport:
    """:class:`EmulatedTransport` for a testbed (object, ``"paper"`` or file), :class:`PlainTransport` for None."""
    if testbed is None:
        return PlainTransport(comm)
    return EmulatedTransport(comm, load_testbed(testbed))
