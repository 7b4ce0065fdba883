"""The tandem of queues with each connection's TCP window, for hosts whose TCP hands a connection's whole window to
the link's queue at once (Linux's defaults: ``tcp_limit_output_bytes`` 1 MiB, segmentation offload, cubic); times in
µs, bytes, bytes/µs.

On such hosts the tandem's round-robin egress (:mod:`hnowmodel.flow.tandem`, right for the virtual cluster's tuned
TCP, whose sockets keep a few packets each in the link's queue) is not what happens: a connection puts up to its
congestion window into the host's egress queue, which passes packets in the order they came, and a message larger
than the window goes one window per round trip, a round trip that waits behind what the FIFO queues hold. What this
network adds to :class:`~hnowmodel.flow.tandem.TandemNetwork` (docs/model.md, "TCP windows"):

* a host's **egress is a FIFO** with its token bucket: the pieces the connections hand it pass in the order they
  came, at its rate; each piece then queues in the receiver host's ingress FIFO as before;
* a **connection** (one per ordered pair of ranks, a message after the previous one, as the tandem's) has at most
  ``cwnd`` bytes in flight. A piece's acknowledgement leaves the receiver's host behind what its egress holds (a
  pure ACK waits in the same FIFO) and reaches the sender once through the sender host's ingress FIFO; then the
  window grows (slow start, by the bytes acknowledged, up to ``ssthresh``; above it by one MSS per window) and the
  connection sends what the window allows;
* a connection that has sent nothing for longer than its retransmission timeout (``rto_min`` plus its smoothed
  round trip) halves its window per timeout elapsed, not below the initial window, and slow-starts again
  (Linux's ``tcp_cwnd_restart``, on when ``net.ipv4.tcp_slow_start_after_idle`` is 1);
* connections start **warm**, at the window the calibration read off the kernel
  (:class:`~hnowmodel.params.Windows`), and
  :func:`hnowmodel.schedules.flows.simulate` runs a schedule :data:`WARM_CALLS` times in a row on one network
  (:meth:`WindowNetwork.next_call`), so each call finds the windows and idle times the previous one left, as a
  timed loop does, and takes the median call after the first.

>>> import numpy as np
>>> w = Windows(initial_bytes=1000.0, window_bytes=1000.0, ssthresh_bytes=1000.0, mss_bytes=500.0)
>>> net = WindowNetwork(np.array([10.0, 10.0]), np.array([10.0, 1.0]), 0.0, w)
>>> got = []
>>> net.message(0.0, 0, 1, 3000.0, lambda t: None, lambda t, m: got.append(t))
>>> net.run()
>>> got   # nothing else queued: each acknowledgement is back at once, the 1 byte/µs ingress never idles
[3000.0]
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Any

import numpy as np

from ..params import Windows
from .tandem import TandemNetwork, _Message

__all__ = ["WindowNetwork", "WARM_CALLS", "PIECE_SEGMENTS", "PIECES_UP_TO", "pieces"]

#: How many calls in a row :func:`hnowmodel.schedules.flows.simulate` runs on a windowed network: the first warms
#: it up, the median of the others is the prediction (as a timing takes the median of its repetitions). Each call
#: finds what the previous one left, windows grown or connections idle long enough to restart, and a connection
#: used once per call can restart in one call and not in the next (a slow call leaves it idle longer): the calls
#: then alternate, which the median of several sees and a single call does not.
WARM_CALLS = 6

#: The largest piece a connection hands its egress at once, in MSS: the acknowledgements come back per piece, so
#: a window grows in steps of at most this many segments (Linux acknowledges every second segment; 8 keeps the
#: events few and the growth within a few % of per-segment).
PIECE_SEGMENTS = 8

#: A schedule goes through the windows while one call hands the egresses at most this many pieces (its messages'
#: bytes over the piece size, each message at least one); beyond, the windows' events (several per piece, six calls
#: over) would cost seconds per prediction, and the evaluators without windows take it (as
#: :data:`hnowmodel.schedules.flows.EVENTS_UP_TO` sends large schedules to the vectorised one). The largest
#: schedule of the 6-host accuracy runs, Bruck's alltoall at 256 KiB, hands 960 per call.
PIECES_UP_TO = 4000


def pieces(schedule_steps: Any, mss_bytes: float) -> int:
    """How many pieces one call of a schedule's ``steps`` (:class:`~hnowmodel.schedules.steps.Step` s, with their
    repeats) hands the egresses: each message's bytes over :data:`PIECE_SEGMENTS` segments of ``mss_bytes``,
    rounded up, at least one.

    >>> from hnowmodel.schedules import Step
    >>> pieces([Step.of([0, 1], [1, 0], [20000.0, 0.0], repeat=2)], 1000.0)   # (3 + 1) pieces of 8000 B, twice
    8
    """
    size = PIECE_SEGMENTS * mss_bytes
    return int(
        sum(s.repeat * np.maximum(1, np.ceil(np.asarray(s.nbytes, dtype=float) / size)).sum() for s in schedule_steps)
    )


class _Connection:
    """One connection's state: its window, bytes in flight, the messages whose bytes it has not all sent, when it
    last sent and its round-trip estimate (Linux's ``srtt``)."""

    __slots__ = ("cwnd", "inflight", "msgs", "last", "srtt")

    def __init__(self, cwnd: float, now: float) -> None:
        self.cwnd, self.inflight, self.msgs, self.last, self.srtt = cwnd, 0.0, deque(), now, 0.0

    def restart(self, now: float, w: Windows) -> None:
        """Linux's ``tcp_cwnd_restart``: idle longer than a timeout, the window halves per timeout elapsed, not
        below the initial window (nor above what it was)."""
        if w.restart_rto_min_us is None:
            return
        rto = w.restart_rto_min_us + self.srtt
        idle = now - self.last
        if idle <= rto:
            return
        floor = min(w.initial_bytes, self.cwnd)
        while idle > rto and self.cwnd > floor:
            self.cwnd /= 2
            idle -= rto
        self.cwnd = max(self.cwnd, floor)

    def acknowledged(self, nbytes: float, rtt: float, w: Windows) -> None:
        """``nbytes`` acknowledged after a round trip of ``rtt`` µs: the window grows if it was the limit."""
        self.srtt = rtt if self.srtt == 0.0 else 0.875 * self.srtt + 0.125 * rtt
        if self.cwnd < 2.0 * self.inflight:  # cwnd-limited (Linux grows it only then)
            if self.cwnd < w.ssthresh_bytes:
                self.cwnd = min(self.cwnd + nbytes, max(w.ssthresh_bytes, self.cwnd))
            else:
                self.cwnd += w.mss_bytes * nbytes / self.cwnd
        self.inflight -= nbytes


class WindowNetwork(TandemNetwork):
    """The tandem of queues (egress FIFO here) with the connections' windows of the module's docstring: ``egress``,
    ``ingress`` (bytes/µs per host), ``burst`` bytes of tokens per bucket, ``windows`` the TCP terms, ``hosts``
    each rank's host (None: a host per rank)."""

    def __init__(
        self, egress: np.ndarray, ingress: np.ndarray, burst: float, windows: Windows, hosts: np.ndarray | None = None
    ) -> None:
        super().__init__(egress, ingress, burst, hosts)
        self.windows = windows
        self.free = [0.0] * len(egress)  # when each egress has passed what it holds
        self.tokens = [self.burst] * len(egress)  # its bucket, as of self.free
        self.conns: dict[tuple[int, int], _Connection] = {}

    def run(self) -> None:
        """Run the timers until none is left (every piece is a timer here; the egresses hold no message, so
        :meth:`TandemNetwork.run`'s scan of them, per event, is skipped: it costs the hosts' count)."""
        while self.timers:
            t, _, fn = heapq.heappop(self.timers)
            self.now = max(self.now, t)
            fn()

    def next_call(self) -> None:
        """Start the next call of a timed loop at time 0: the queues are empty, the connections keep their windows
        and round-trip estimates, and their idle times run on from the end of this call."""
        end = self.now
        super().__init__(
            np.array([e.c for e in self.eg]), np.array([g.c for g in self.ing]), self.burst, np.array(self.host)
        )
        self.free = [0.0] * len(self.eg)
        self.tokens = [self.burst] * len(self.eg)
        for c in self.conns.values():
            c.inflight, c.msgs, c.last = 0.0, deque(), c.last - end

    def _join(self, m: _Message) -> None:
        """Message ``m`` (from :meth:`TandemNetwork.message`) joins its connection now, behind what it has not sent
        yet; its ``on_left`` runs once the connection has handed the egress its last byte (the pair's next message
        may follow it into the connection)."""
        m.v_end = m.nbytes  # here: the bytes the connection has not sent yet
        conn = self.conns.get((m.src, m.dst))
        if conn is None:
            conn = self.conns[(m.src, m.dst)] = _Connection(self.windows.window_bytes, self.now)
        conn.msgs.append(m)
        self._send(conn)

    def _send(self, conn: _Connection) -> None:
        """The connection hands its egress what its window allows, in pieces."""
        if conn.inflight <= 0.0 and conn.msgs:
            conn.restart(self.now, self.windows)
        while conn.msgs and conn.inflight < conn.cwnd * (1 - 1e-12):
            m = conn.msgs[0]
            w = min(conn.cwnd - conn.inflight, m.v_end, PIECE_SEGMENTS * self.windows.mss_bytes)
            m.v_end -= w
            conn.inflight += w
            conn.last = self.now
            last = m.v_end <= 1e-9 * m.nbytes
            self._piece(conn, m, w, last)
            if last:
                conn.msgs.popleft()
                m.on_left(self.now)

    def _piece(self, conn: _Connection, m: _Message, w: float, last: bool) -> None:
        """A piece of ``w`` bytes of ``m`` joins its egress FIFO now: what the bucket holds passes at once, the
        rest at the egress's rate once what came before has left; it reaches ``m``'s ingress meanwhile."""
        e, c, ing = m.e, self.eg[m.e].c, self.ing[m.g]
        t0 = max(self.now, self.free[e])
        if math.isfinite(c):
            tok = min(self.burst, self.tokens[e] + (t0 - self.free[e]) * c)
            got = min(tok, w)
            t1 = t0 + (w - got) / c
            self.tokens[e] = tok - got if got >= w else 0.0
        else:
            got, t1 = w, t0
        self.free[e] = t1
        t_sent = self.now

        def arrived() -> None:
            t_thr = self.through_ingress(m.g)
            self.at(t_thr, lambda: self._through(conn, m, w, last, t_thr, t_sent))

        def begin() -> None:
            ing.advance(self.now)
            ing.A += got
            if t1 > t0:
                ing.a += c
            else:
                arrived()

        def end() -> None:
            ing.advance(self.now)
            ing.a -= c
            arrived()

        self.at(t0, begin)
        if t1 > t0:
            self.at(t1, end)

    def _through(self, conn: _Connection, m: _Message, w: float, last: bool, t_thr: float, t_sent: float) -> None:
        """The piece is through the receiver's ingress: ``m`` is done with its last piece; the acknowledgement
        leaves behind the receiver host's egress FIFO, then passes the sender host's ingress FIFO."""
        if last:
            m.on_done(t_thr, m)

        def at_sender() -> None:
            self.at(self.through_ingress(m.e), acked)

        def acked() -> None:
            conn.acknowledged(w, self.now - t_sent, self.windows)
            self._send(conn)

        self.at(max(t_thr, self.free[m.g]), at_sender)
