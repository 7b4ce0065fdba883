"""The wire of a shaped cluster as two queues in tandem, event by event: a message leaves its sender host's egress,
which serves the messages it holds round-robin (an equal share each, whoever receives them), and queues in its
receiver host's ingress, a FIFO greedy shaper that passes bytes in the order they came (times in µs, bytes,
bytes/µs).

That is what the virtual cluster's links do (docs/virtual-cluster.md): ``tbf`` on each host's egress, whose TCP
sockets may each keep only a few packets in its queue (so it serves them packet by packet in turn), and ``tbf`` on
the root side of each host's link, a 4 MiB FIFO that never drops and never pushes back. A slow receiver does not slow
its sender's egress: its bytes wait in its own ingress queue, behind every byte that reached that queue before them.
The fluid max-min network (:class:`~hnowmodel.flow.network.Network`) instead shares a receiver's ingress equally
among the messages flowing into it, so a message a rank waits for now is slowed by messages it will need only later
(a pairwise exchange's next steps, sent eagerly by ranks that are ahead): the tandem passes first what came first.

Both queues have a token bucket of ``burst`` bytes, full at the start: an idle egress refills at its rate and lets
a message joining it pass what it holds at once (as :func:`hnowmodel.flow.disciplines.round_robin` does), and the
ingress is a greedy shaper: the byte that reaches it at ``t`` (with ``A(t)`` bytes reached by then) leaves at
``max(t, max over τ ≤ t of τ + (A(t) - A(τ⁻) - burst) / c)`` (network calculus; what
:func:`hnowmodel.flow.disciplines._through_host_ingress` reads off a tree's departure curves), kept here as a
running maximum of ``τ - A(τ⁻)/c`` over the instants where the ingress's arrival rate changed.

>>> import numpy as np
>>> net = TandemNetwork(np.array([10.0, 10.0, 10.0]), np.array([10.0, 1.0, 10.0]), 0.0)
>>> got = {}
>>> net.message(0.0, 0, 1, 100.0, lambda t: None, lambda t, m: got.__setitem__(1, t))   # to the slow host
>>> net.message(0.0, 0, 2, 100.0, lambda t: None, lambda t, m: got.__setitem__(2, t))
>>> net.run()
>>> got   # both leave the egress at 5 bytes/µs (20 µs); host 1's ingress drains its 100 bytes at 1 byte/µs
{2: 20.0, 1: 100.0}
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np

from ..errors import ProfileError

__all__ = ["TandemNetwork"]

_INF = math.inf


class _Message:
    """One message in an egress: its hosts (``e`` egress, ``g`` ingress), its bytes, when it joined (``start``),
    the egress's virtual clock at which its last byte leaves (``v_end``), and what to call when its last byte has
    left the egress (``on_left(t)``) and passed the ingress (``on_done(t, message)``)."""

    __slots__ = ("src", "dst", "e", "g", "nbytes", "start", "v_end", "seq", "on_left", "on_done")

    def __init__(self, src: int, dst: int, e: int, g: int, nbytes: float, start: float, seq: int) -> None:
        self.src, self.dst, self.e, self.g, self.nbytes, self.start, self.seq = src, dst, e, g, nbytes, start, seq
        self.v_end = 0.0
        self.on_left: Callable[[float], None] = lambda t: None
        self.on_done: Callable[[float, _Message], None] = lambda t, m: None


class _Egress:
    """One host's egress served round-robin: every message it holds moves at ``c / k`` (k messages), so their
    progress is one virtual clock ``v`` (bytes each has passed since the clock started), advanced at ``c / k``; a
    message leaves when ``v`` reaches its ``v_end``. Its bucket's ``tokens`` (as of ``t_tok``) refill at ``c``
    while it holds nothing."""

    __slots__ = ("c", "v", "t_v", "heap", "to", "tokens", "t_tok")

    def __init__(self, c: float, burst: float) -> None:
        self.c, self.v, self.t_v, self.tokens, self.t_tok = c, 0.0, 0.0, burst, 0.0
        self.heap: list[tuple[float, int, _Message]] = []  # (v_end, seq, message)
        self.to: dict[int, int] = {}  # ingress host -> messages held for it

    @property
    def share(self) -> float:
        """Each held message's rate (bytes/µs)."""
        return self.c / len(self.heap) if self.heap else 0.0

    def advance(self, t: float) -> None:
        if self.heap and t > self.t_v:
            self.v += self.share * (t - self.t_v)
        self.t_v = t

    def next_end(self) -> float:
        """When the next held message's last byte leaves (µs), inf when it holds none."""
        if not self.heap:
            return _INF
        return self.t_v + max(0.0, self.heap[0][0] - self.v) / self.share


class _Ingress:
    """One host's ingress, a FIFO greedy shaper at ``c`` with ``burst`` bytes of tokens: ``A`` bytes have reached it
    by ``t`` and reach it at ``a`` bytes/µs since; ``M`` is the largest ``τ - A(τ⁻)/c`` over the instants so far."""

    __slots__ = ("c", "burst", "A", "t", "a", "M")

    def __init__(self, c: float, burst: float) -> None:
        self.c, self.burst, self.A, self.t, self.a, self.M = c, burst, 0.0, 0.0, 0.0, 0.0

    def advance(self, t: float) -> None:
        """Bring the arrivals to ``t`` (before what reaches it at once at ``t``) and count ``t`` as an instant."""
        if t > self.t:
            self.A += self.a * (t - self.t)
            self.t = t
        if math.isfinite(self.c):
            self.M = max(self.M, t - self.A / self.c)

    def through(self, t: float) -> float:
        """When the last byte that has reached the ingress by ``t`` (µs, the ingress brought to ``t``) is through."""
        if not math.isfinite(self.c):
            return t
        return max(t, self.M + (self.A - self.burst) / self.c)


class TandemNetwork:
    """Timers plus the tandem of queues of the module's docstring: ``egress[h]`` and ``ingress[h]`` (bytes/µs) of
    each host, ``hosts[r]`` rank ``r``'s host (None: a host per rank), ``burst`` bytes of tokens in every bucket.
    ``records`` is there for the evaluator that drives it (:mod:`hnowmodel.schedules.flows`) to fill."""

    def __init__(self, egress: np.ndarray, ingress: np.ndarray, burst: float, hosts: np.ndarray | None = None) -> None:
        n = len(egress)
        self.host = list(range(n)) if hosts is None else [int(h) for h in hosts]
        self.burst = float(burst)
        self.eg = [_Egress(float(c), self.burst) for c in egress]
        self.ing = [_Ingress(float(c), self.burst) for c in ingress]
        self.now = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = 0
        self.records: list = []

    def at(self, t: float, fn: Callable[[], None]) -> None:
        """Run ``fn()`` at time ``t`` (µs; not before now)."""
        heapq.heappush(self.timers, (max(t, self.now), self.seq, fn))
        self.seq += 1

    def message(
        self,
        t: float,
        src: int,
        dst: int,
        nbytes: float,
        on_left: Callable[[float], None],
        on_done: Callable[[float, _Message], None],
    ) -> None:
        """The ``nbytes`` from rank ``src`` to rank ``dst`` join ``src``'s host's egress at ``t`` (µs):
        ``on_left(t)`` once their last byte has left it, ``on_done(t, message)`` once it has passed ``dst``'s host's
        ingress."""

        def start() -> None:
            m = _Message(src, dst, self.host[src], self.host[dst], float(nbytes), self.now, self.seq)
            self.seq += 1
            m.on_left, m.on_done = on_left, on_done
            self._join(m)

        self.at(t, start)

    def transfer(self, t: float, src: int, dst: int, nbytes: float, duration: float, on_done: Callable) -> None:
        """A message that touches no link (two ranks of one host): through ``duration`` µs after ``t``."""

        def start() -> None:
            m = _Message(src, dst, self.host[src], self.host[dst], float(nbytes), self.now, self.seq)
            self.seq += 1
            t_end = self.now + duration
            self.at(t_end, lambda: on_done(t_end, m))

        self.at(t, start)

    # ---- the queues ----
    def _rates_changing(self, e: _Egress) -> list[int]:
        """Bring egress ``e`` and the ingresses it feeds to now (their rates are about to change)."""
        now = self.now
        e.advance(now)
        for g in e.to:
            self.ing[g].advance(now)
        return list(e.to)

    def _arrival_rates(self, hosts: list[int]) -> None:
        """Each of ``hosts``' ingress arrival rate from the egresses' shares (summed over every egress)."""
        for g in hosts:
            self.ing[g].a = sum(e.share * e.to.get(g, 0) for e in self.eg)

    def _join(self, m: _Message) -> None:
        """Message ``m`` joins its egress now: what the egress's bucket holds passes at once, the rest is held."""
        e, ing, now = self.eg[m.e], self.ing[m.g], self.now
        if not (math.isfinite(e.c) or math.isfinite(ing.c)):  # as the max-min network refuses it
            raise ProfileError(
                "a flow has no finite capacity on its path (every Xm is 0): set the links' Xm_us_per_byte"
            )
        if not e.heap:  # idle since t_tok: its bucket refilled
            e.tokens = min(self.burst, e.tokens + (now - e.t_tok) * e.c) if math.isfinite(e.c) else self.burst
            e.t_tok = now
        got = m.nbytes if not math.isfinite(e.c) else min(e.tokens, m.nbytes)
        if math.isfinite(e.c):
            e.tokens -= got
        ing.advance(now)
        ing.A += got
        if got >= m.nbytes:  # all of it passed at once
            self._left(m)
            return
        touched = self._rates_changing(e)
        m.v_end = e.v + (m.nbytes - got)
        heapq.heappush(e.heap, (m.v_end, m.seq, m))
        e.to[m.g] = e.to.get(m.g, 0) + 1
        self._arrival_rates(sorted(set(touched) | {m.g}))

    def _leave(self, e: _Egress) -> None:
        """The egress's first message in line has left it now."""
        touched = self._rates_changing(e)
        _, _, m = heapq.heappop(e.heap)
        e.to[m.g] -= 1
        if not e.to[m.g]:
            del e.to[m.g]
        if not e.heap:
            e.t_tok, e.tokens, e.v = self.now, 0.0, 0.0
        self._arrival_rates(touched)
        self._left(m)

    def through_ingress(self, g: int) -> float:
        """When a byte reaching host ``g``'s ingress now gets through it, behind every byte queued there (µs)."""
        ing = self.ing[g]
        ing.advance(self.now)
        return ing.through(self.now)

    def _left(self, m: _Message) -> None:
        """``m``'s last byte reaches its ingress now: it is through once every byte before it is."""
        t_end = self.through_ingress(m.g)
        m.on_left(self.now)
        self.at(t_end, lambda: m.on_done(t_end, m))

    def run(self) -> None:
        """Run the events until no message is held and no timer is left."""
        while True:
            t_end, which = _INF, None
            for e in self.eg:
                x = e.next_end()
                if x < t_end:
                    t_end, which = x, e
            t_timer = self.timers[0][0] if self.timers else _INF
            if which is None and not self.timers:
                return
            if which is not None and t_end <= t_timer:
                self.now = max(self.now, t_end)
                self._leave(which)
                continue
            self.now = max(self.now, t_timer)
            while self.timers and self.timers[0][0] <= self.now:
                heapq.heappop(self.timers)[2]()
