"""The small messages of a rendezvous on the tandem of queues (:mod:`hnowmodel.flow.tandem`): where a message of at
least the profile's ``rendezvous_from_bytes`` waits for its receiver, when the request to send and the receiver's
go-ahead get through the FIFO queues they pass (times in µs).

A rendezvous message goes in three parts: the sender's **request**, the receiver's **go-ahead** once it has posted
the matching receive, then the data. Each part is a few bytes on one TCP connection, so it arrives behind what that
connection and the host's ingress already hold; the engine (:mod:`hnowmodel.schedules.flows`) counts none of their
own time (a message's calibrated ``Xc`` already holds the handshake's round trip), only these waits:

1. **The request waits behind its connection.** It leaves behind the data the sender sent the same receiver before
   (one byte stream per pair of ranks) and passes the receiver host's ingress FIFO behind every byte queued there:
   it arrives when those are through.
2. **The go-ahead waits behind the sender's ingress.** It passes the sender host's ingress FIFO behind the bytes
   queued there; the data leaves once it is through (a ring's slow host, whose ingress holds the next block from a
   fast neighbour, sends its own block only once that block is in).
3. **An exchange whose request was read early runs one way.** In a blocking exchange (a step that waits, sending to
   and receiving from one partner on another host), if rank ``d`` got its partner ``s``'s request while it waited for
   an earlier receive (the request was through ``d``'s ingress before the message ``d`` waited for), ``d`` matches it
   as it posts the receive and its go-ahead leaves before its own request. ``s`` starts sending, then answers ``d``'s
   request behind its own data on the same connection: ``d``'s message flows only once ``s``'s is delivered, and the
   exchange takes both messages' time. If the request came behind the message ``d`` waited for, or ``d`` waited for
   nothing before (it was computing, not reading the network), ``d``'s own request leaves first, ``s`` answers it
   before it sends, and both flow at once.

Measured on the virtual cluster under Open MPI 5 (``python experiments/link_trace.py``; docs/open-mpi.md): a
3-rank recursive-doubling allreduce of 64 KiB at 150/20/50 Mbit/s, where the rank that skips the fold asks the slow
rank while it receives the fold, runs its exchange one way (103.5 ms; 75.9 predicted without these rules); on 4
ranks the early partner's request queues behind the slow rank's first-step data and the exchange runs both ways
(52.4 ms). Two ranks with the late one busy in a loop exchange both ways; the same two with the late one first
waiting in MPI for a small message run one way, under MPICH and Intel MPI too (``experiments/ompi_exchange.py``,
docs/open-mpi.md); their profiles have no rendezvous threshold (every message eager), so these rules change nothing
there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..flow.costs import MessageCosts
from ..flow.tandem import TandemNetwork

__all__ = ["Handshakes"]

Message = tuple[int, int, int]  # (sender, receiver, step)


class Handshakes:
    """What the rules of the module's docstring need to remember while the engine runs: each rank's blocking
    exchanges, the messages on each connection and when they got through, the requests read early and the late
    partners' messages that wait for an early one's delivery. ``acts``: each rank's steps as
    :func:`hnowmodel.schedules.flows._actions` gives them."""

    def __init__(self, acts: Sequence[Sequence[tuple]], cost: MessageCosts, net: TandemNetwork) -> None:
        self.cost, self.net = cost, net
        # (rank, step, partner): a step that waits, sending to and receiving from one partner
        self.exchanges = {(r, a[0], a[3]) for r, steps in enumerate(acts) for a in steps if a[1] and a[3] == a[6] >= 0}
        self.last_on: dict[tuple[int, int], Message] = {}  # a connection (s, d) -> its latest message handed to it
        self.through: dict[Message, float] = {}  # a message -> when its last byte got through its receiver's ingress
        self.delivered_at: dict[Message, float] = {}  # a message -> when it was delivered
        self.hooks: dict[Message, list[Callable[[float], None]]] = {}  # run at a message's delivery
        self.requested: dict[tuple[int, int], float] = {}  # (receiver, step) -> an exchange request's arrival
        self.gate: dict[int, float] = {}  # rank -> when the message of its latest completed receive got through
        self.one_way: set[Message] = set()  # a late partner's message: it flows once the early one's is delivered

    def request(self, s: int, d: int, t_post: float, then: Callable[[float], None]) -> None:
        """Rule 1: ``s`` posts a rendezvous request to ``d`` (another host) at ``t_post``: ``then(t)`` with ``t``
        when it is through ``d``'s ingress, called at that time or later."""
        prev = self.last_on.get((s, d))
        if prev is not None and prev not in self.delivered_at:
            self.hooks.setdefault(prev, []).append(lambda _t: then(max(t_post, self.through[prev])))
        else:
            self.net.at(t_post, lambda: then(self._through_ingress(d)))

    def go_ahead(self, s: int) -> float:
        """Rule 2: when a go-ahead sent now to rank ``s`` is through its host's ingress (µs)."""
        return self._through_ingress(s)

    def _through_ingress(self, r: int) -> float:
        """When a byte reaching rank ``r``'s host's ingress now gets through it (µs)."""
        return self.net.through_ingress(self.net.host[r])

    def waits(self, s: int, d: int, k: int, t_req: float) -> None:
        """``s``'s request for step ``k`` reached ``d`` at ``t_req`` before ``d`` posted that step's receive (rule 3
        takes partners on two hosts only)."""
        if (s, k, d) in self.exchanges and (d, k, s) in self.exchanges and not self.cost.same_host(s, d):
            self.requested[(d, k)] = t_req

    def matched(self, d: int, k: int, s: int) -> None:
        """Rule 3: ``d`` posts step ``k``'s receive, matching ``s``'s request that waited: read early (through
        ``d``'s ingress before the message of ``d``'s latest completed receive), ``d``'s own message to ``s`` waits
        for ``s``'s."""
        t_req = self.requested.pop((d, k), None)
        gate = self.gate.get(d)
        if t_req is not None and gate is not None and t_req < gate - 1e-9 * max(1.0, gate):
            self.one_way.add((d, s, k))

    def after_partner(self, s: int, d: int, k: int, then: Callable[[float], None]) -> bool:
        """If ``s``'s message of step ``k`` to ``d`` is a late partner's (rule 3): ``then(t)`` once ``d``'s message
        to ``s`` is delivered (at ``t``), and True; else False."""
        if (s, d, k) not in self.one_way:
            return False
        early = (d, s, k)
        if early in self.delivered_at:
            then(self.delivered_at[early])
        else:
            self.hooks.setdefault(early, []).append(then)
        return True

    def handed(self, s: int, d: int, k: int) -> None:
        """``s``'s message of step ``k`` to ``d`` (another host) is handed to their connection."""
        self.last_on[(s, d)] = (s, d, k)

    def delivered(self, s: int, d: int, k: int, t_end: float, t_del: float) -> None:
        """That message got through ``d``'s ingress at ``t_end`` and was delivered at ``t_del``."""
        msg = (s, d, k)
        self.through[msg], self.delivered_at[msg] = t_end, t_del
        for fn in self.hooks.pop(msg, []):
            fn(t_del)

    def completed(self, r: int, src: int, k: int) -> None:
        """Rank ``r`` completed step ``k``'s receive from ``src``: that message is the one it waited for last."""
        t = self.through.get((src, r, k))
        if t is not None:
            self.gate[r] = t
