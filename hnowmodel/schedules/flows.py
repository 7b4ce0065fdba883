"""A message schedule under the flow engine, event by event: every message a flow through the fluid network of
:mod:`hnowmodel.flow` (NICs shared by a host's ranks with max-min fairness, token buckets, shared memory inside a
host), every rank working through its steps by the rules of :mod:`hnowmodel.schedules.steps`.

What a rank does in a step (times in µs; ``S``, ``R``, ``C``, ``Xc``, the pair rate and the shared-memory transfer
from :class:`~hnowmodel.flow.costs.MessageCosts`, at the message's own size):

* it **reaches** the step once it has posted its previous step's send (and, in a step that ``waits``, once it has
  completed its previous receive and reduction); it posts this step's receive then;
* it copies ``copy_bytes`` locally (``C``; a rank with 0 bytes to copy copies nothing), then posts its send:
  ``S`` later the message is posted; a rank's first send to another host keeps it busy
  :meth:`~hnowmodel.flow.costs.MessageCosts.first_send_busy` longer (as
  :meth:`~hnowmodel.flow.costs.MessageCosts.posts` counts it), and its next step starts after that;
* an **eager** message flows as soon as it is posted; a **rendezvous** one (``profile.rendezvous_from_bytes``, the
  same threshold inside a host, or marked so in its step: ``Step.rendezvous``, a synchronous send or a relay's
  struct datatype) once its receiver has reached the step too, or, in a step that ``prepost`` s, its previous step
  with a receive (the receive posted one step early); on the tandem of queues (``sharing="rr"``) also once its
  request and the receiver's go-ahead are through the FIFO queues they wait in, and in a blocking exchange whose
  partner's request was read early, once the partner's message is delivered (:mod:`hnowmodel.schedules.handshake`);
* a message between hosts is a flow through the sender host's egress and the receiver host's ingress
  (:func:`hnowmodel.flow.network.send`), delivered ``Xc`` after its last byte; between two ranks of one host it is
  a fixed shared-memory transfer;
* the messages of one pair (sender, receiver) flow one after another, each once the previous one is through: one
  connection per pair, and MPI's non-overtaking order (a tree never sends twice between one pair; a ring does every
  step, and max-min sharing between them would let a slow link's backlog delay every block: the calibrated
  cluster profile's 4-rank ring at 1 MB would take 1.54 times as long); where the profile's rendezvous is not
  duplex (``rendezvous_duplex`` False, set in its file), the rendezvous messages between two ranks of
  different hosts flow one after another whichever way they go (an exchange takes as long as both messages in turn);
  the vectorised evaluator (:mod:`~hnowmodel.schedules.flowrounds`) leaves this out;
* the receive completes once the message is delivered, the rank has posted this step's send and completed its
  previous receive: then ``R`` and the reduction, ``γ·reduce_bytes`` (``reduce_us_per_byte``: the profile has no
  γ yet).

The events are a few per message (its posting, its flow's start and end, its delivery), never per byte. A tree
compiled to steps (:func:`~hnowmodel.schedules.fromtree.from_tree`; the root's copy a step of its own after its
sends, or in its first step with ``copy_first``) gives the same times as :func:`hnowmodel.flow.bcast` and
:func:`hnowmodel.flow.scatter` (``tests/schedules/test_flows.py``, rtol 1e-12), except the root's own
``done_us`` with ``copy_first`` (the flow engine counts its posting, this module its copy); a gather up a tree
(``from_tree(..., toward_root=True)``) gives :func:`hnowmodel.flow.gather`'s times with ``recv_order`` ``"tree"`` or
``"smallest_first"`` (from_tree's ``recv_order``), ``relay_waits`` and ``sync`` (marked ``rendezvous``) and the
root's copy (``tests/schedules/test_fromtree_options.py``; the orders ``posted`` and ``arrival`` depend on
arrivals, not on a fixed order of steps). To get the same times the evaluator sets a timer where each receive
ends, as :mod:`hnowmodel.flow.downward` does where a rank holds its data, and one where a rendezvous message is
posted before its receiver has reached its step, as :mod:`hnowmodel.flow.gather` offers its request there: the
network notices a token bucket refilling only at its next event, so other events change its times slightly (about
5e-5 relative on the calibrated cluster profile at 100 kB; 1.7e-3 on its gather with ``sync`` without the second
timer).

:func:`evaluate` picks this evaluator or the vectorised one (:mod:`hnowmodel.schedules.flowrounds`).

>>> from hnowmodel.params import Link, NodeType, Profile
>>> from hnowmodel.schedules.steps import MessageSchedule, Step
>>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))      # 100 bytes/µs on every link
>>> ring = MessageSchedule(3, (Step.of([0, 1, 2], [1, 2, 0], 1000, repeat=2),), "ring")
>>> simulate(prof, ["f"] * 3, ring).done_us.tolist()                       # two steps of 10 µs
[20.0, 20.0, 20.0]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..flow.costs import MessageCosts
from ..flow.network import FlowRecord, Network, send
from ..flow.tandem import TandemNetwork
from ..flow.windows import PIECES_UP_TO, WARM_CALLS, WindowNetwork, pieces
from ..layout import hosts_of
from ..params import Profile, Windows
from .flowrounds import simulate_rounds
from .flowrun import ReduceRate, ScheduleRun, link_sharing, prepare
from .handshake import Handshakes
from .steps import MessageSchedule

__all__ = ["simulate", "evaluate", "windowed", "EVENTS_UP_TO", "TANDEM"]

#: The link sharing that evaluates a schedule on the tandem of queues (:mod:`hnowmodel.flow.tandem`).
TANDEM = "rr"

#: :func:`evaluate` simulates event by event up to this many messages (counted with repeats), per step beyond: the
#: event-driven evaluator runs some 35 000-39 000 messages a second on tens of ranks and 4 000-20 000 on 2048 ranks
#: with 32 flows through each NIC (``experiments/perf_schedule_flow.py``), so this keeps it near a second or less.
EVENTS_UP_TO = 10_000


def _actions(schedule: MessageSchedule) -> list[list[tuple]]:
    """Each rank's steps, in order: ``(k, waits, copy_bytes, dst, send_bytes, rendezvous, src, recv_bytes,
    reduce_bytes, prepost)`` with ``k`` the step's index counted with repeats, ``dst``/``src`` -1 when it
    sends/receives nothing, ``rendezvous`` whether its send is marked so, ``prepost`` the step's."""
    per_rank: list[list[tuple]] = [[] for _ in range(schedule.n)]
    k = 0
    for s in schedule.steps:
        copies = [] if s.copy_bytes is None else np.flatnonzero(s.copy_bytes > 0).tolist()
        rdv = [False] * s.n_messages if s.rendezvous is None else s.rendezvous.tolist()
        msgs = list(zip(s.src.tolist(), s.dst.tolist(), s.nbytes.tolist(), s.reduce_bytes.tolist(), rdv, strict=True))
        for _ in range(s.repeat):
            acts: dict[int, list] = {r: [float(s.copy_bytes[r]), -1, 0.0, False, -1, 0.0, 0.0] for r in copies}
            for a, b, nb, red, sync in msgs:
                x = acts.setdefault(a, [0.0, -1, 0.0, False, -1, 0.0, 0.0])
                x[1], x[2], x[3] = b, nb, sync
                y = acts.setdefault(b, [0.0, -1, 0.0, False, -1, 0.0, 0.0])
                y[4], y[5], y[6] = a, nb, red
            for r, x in acts.items():
                per_rank[r].append((k, s.waits, *x, s.prepost))
            k += 1
    return per_rank


class _Ranks:
    """The ranks' progress through their steps on one :class:`Network`: each rank's clock (when it may start its
    next step), its receives posted and not yet completed (in order), what has arrived, and the rendezvous messages
    waiting for their receiver."""

    def __init__(self, sim: Network, cost: MessageCosts, schedule: MessageSchedule, gamma: np.ndarray) -> None:
        n = schedule.n
        self.sim, self.cost, self.gamma = sim, cost, gamma.tolist()
        self.acts = _actions(schedule)
        self.i = [0] * n  # the next step of each rank
        self.clock = [0.0] * n  # when it may start its next step
        self.recv_t = [0.0] * n  # when it completed its last receive
        self.first = [True] * n  # it has not sent to another host yet
        self.queue: list[deque] = [deque() for _ in range(n)]  # receives posted, not completed: (k, act, after)
        self.blocked = [False] * n
        self.arrived: dict[tuple[int, int], float] = {}
        self.reached: dict[tuple[int, int], float] = {}  # (rank, step) -> when it posted that step's receive
        self.waiting: dict[tuple[int, int], tuple] = {}  # (receiver, step) -> a rendezvous message not yet matched
        self.pairs: dict[tuple[int, ...], deque] = {}  # a connection with a message flowing -> the ones queued behind
        self.duplex = cost.profile.rendezvous_duplex
        # the rendezvous handshake's waits in the FIFO queues (hnowmodel.schedules.handshake): the tandem has them
        self.handshake = Handshakes(self.acts, cost, sim) if isinstance(sim, TandemNetwork) else None
        self.done = np.zeros(n)
        self.posted = np.zeros(n)

    def start(self) -> None:
        for r in range(len(self.acts)):
            if self.acts[r]:
                self.sim.at(0.0, lambda r=r: self.advance(r))

    def advance(self, r: int) -> None:
        """Rank ``r`` works through its steps until one waits for a receive not yet completed."""
        acts, cost = self.acts[r], self.cost
        while self.i[r] < len(acts):
            k, waits, cb, dst, sb, sync, src, rb, red, _ = acts[self.i[r]]
            if waits and self.queue[r]:
                self.blocked[r] = True
                return
            t = max(self.clock[r], self.recv_t[r]) if waits else self.clock[r]
            if src >= 0:
                self._post_receive(r, k, t)
                self._prepost(r, t)
            if cb > 0:
                t = t + cost.copy(r, cb)
                self.done[r] = max(self.done[r], t)
            if dst >= 0:
                t_post = t + cost.send(r, sb, dst)
                t = t_post
                if self.first[r] and not cost.same_host(r, dst):
                    t += cost.first_send_busy(sb)
                    self.first[r] = False
                self.posted[r] = t
                self._send(r, dst, k, sb, t_post, sync)
            self.clock[r] = t
            self.i[r] += 1
            if src >= 0:
                self.queue[r].append((k, src, rb, red, t))
                self._complete(r)
        self.blocked[r] = False

    def _prepost(self, r: int, t: float) -> None:
        """Rank ``r`` reached a step with a receive at ``t``: its next receive is posted now too if its step
        ``prepost`` s (Open MPI's reduce: the next child's receive before it waits for the current one's)."""
        acts = self.acts[r]
        for j in range(self.i[r] + 1, len(acts)):
            if acts[j][6] >= 0:
                if acts[j][9]:
                    self._post_receive(r, acts[j][0], t)
                return

    def _post_receive(self, r: int, k: int, t: float) -> None:
        if (r, k) in self.reached:  # posted early (prepost)
            return
        self.reached[(r, k)] = t
        held = self.waiting.pop((r, k), None)
        if held is not None:
            s, b, t_post = held
            if self.handshake is not None:
                self.handshake.matched(r, k, s)
            self._flow(s, r, k, b, max(t_post, t), True)

    def _send(self, s: int, d: int, k: int, b: float, t_post: float, sync: bool) -> None:
        if not (sync or self.cost.rendezvous(b)):
            self._flow(s, d, k, b, t_post, False)
            return
        hs = self.handshake
        if hs is not None and not self.cost.same_host(s, d):
            hs.request(s, d, t_post, lambda t_req: self._request(s, d, k, b, t_req))
        else:
            self._request(s, d, k, b, t_post)

    def _request(self, s: int, d: int, k: int, b: float, t_req: float) -> None:
        """The rendezvous request of step ``k`` from ``s`` reaches ``d`` at ``t_req``: the message flows once ``d``
        has reached the step (:meth:`_post_receive` lets a waiting one flow)."""
        t_recv = self.reached.get((d, k))
        hs = self.handshake
        if t_recv is None:
            self.waiting[(d, k)] = (s, b, t_req)
            if hs is not None:
                hs.waits(s, d, k, t_req)
            # an event at its posting, as hnowmodel.flow.gather offers a rendezvous request to the parent there: the
            # network notices a bucket refilling only at its next event, so the same events give the same times
            self.sim.at(t_req, lambda: None)
        elif hs is None or not hs.after_partner(s, d, k, lambda t: self._flow(s, d, k, b, max(t_req, t_recv, t), True)):
            self._flow(s, d, k, b, max(t_req, t_recv), True)

    def _flow(self, s: int, d: int, k: int, b: float, t: float, rdv: bool) -> None:
        """The message of step ``k`` from ``s`` to ``d`` is ready to flow at ``t``: it flows once its connection's
        previous message is through (:meth:`_connection`; MPI's non-overtaking order)."""
        if self.handshake is not None and not self.cost.same_host(s, d):
            self.handshake.handed(s, d, k)
        key = self._connection(s, d, rdv)
        pair = self.pairs.get(key)
        if pair is not None:
            pair.append((s, d, k, b, t, rdv))
            return
        self.pairs[key] = deque()
        self._start(key, s, d, k, b, t, rdv)

    def _connection(self, s: int, d: int, rdv: bool) -> tuple[int, ...]:
        """What a message queues on: its pair (sender, receiver), one connection per pair; a rendezvous message
        between hosts under a profile whose rendezvous is not duplex (``rendezvous_duplex`` False) the two ranks
        whichever way, one rendezvous at a time between them."""
        if rdv and not self.duplex and not self.cost.same_host(s, d):
            return (min(s, d), max(s, d), -1)
        return (s, d)

    def _start(self, key: tuple[int, ...], s: int, d: int, k: int, b: float, t: float, rdv: bool) -> None:
        hs = self.handshake
        if rdv and hs is not None and not self.cost.same_host(s, d):  # once the go-ahead is through s's ingress
            self.sim.at(t, lambda: self._start_now(key, s, d, k, b, max(t, hs.go_ahead(s)), rdv))
        else:
            self._start_now(key, s, d, k, b, t, rdv)

    def _start_now(self, key: tuple[int, ...], s: int, d: int, k: int, b: float, t: float, rdv: bool) -> None:
        sim, cost = self.sim, self.cost

        def release(t_end: float) -> None:
            pair = self.pairs[key]
            if pair:
                s2, d2, k2, b2, t2, rdv2 = pair.popleft()
                self._start(key, s2, d2, k2, b2, max(t2, t_end), rdv2)
            else:
                del self.pairs[key]

        def deliver(t_end: float, f: Any) -> None:
            t_del = t_end + cost.latency(s, d, b)
            sim.records.append(FlowRecord(s, d, b, float(f.start), float(t_end), float(t_del), rdv))
            self.arrived[(d, k)] = t_del
            if self.handshake is not None:
                self.handshake.delivered(s, d, k, t_end, t_del)

        if isinstance(sim, TandemNetwork):
            # the pair's next message follows this one into the sender's egress (one connection, one byte stream)
            def through(t_end: float, f: Any) -> None:
                deliver(t_end, f)
                self._complete(d)

            if cost.same_host(s, d):
                sim.transfer(t, s, d, b, cost.shm_transfer(s, b), lambda t_end, f: (release(t_end), through(t_end, f)))
            elif len(key) > 2:  # one rendezvous at a time between the two: the next once this one is through
                sim.message(t, s, d, b, lambda t_end: None, lambda t_end, f: (release(t_end), through(t_end, f)))
            else:
                sim.message(t, s, d, b, release, through)
            return

        def on_done(t_end: float, f: Any) -> None:
            deliver(t_end, f)
            release(t_end)
            self._complete(d)

        send(sim, cost, t, s, d, b, rdv, on_done)

    def _complete(self, r: int) -> None:
        """Complete rank ``r``'s receives in order while their messages are there; wake it if it waited."""
        q = self.queue[r]
        while q and (r, q[0][0]) in self.arrived:
            k, src, rb, red, after = q.popleft()
            t_del = self.arrived.pop((r, k))
            if self.handshake is not None:
                self.handshake.completed(r, src, k)
            t = max(t_del, after, self.recv_t[r]) + self.cost.recv(r, rb, src) + self.gamma[r] * red
            self.recv_t[r] = t
            self.done[r] = max(self.done[r], t)
            # a timer at every receive's end, as flow.downward has one where a rank holds its data: the network
            # notices a bucket refilling only at its next event, so the same events give the same times
            self.sim.at(t, lambda: self._wake(r))

    def _wake(self, r: int) -> None:
        if self.blocked[r] and not self.queue[r]:
            self.advance(r)


def _run(sim: Network | TandemNetwork, cost: MessageCosts, schedule: MessageSchedule, gamma: np.ndarray) -> _Ranks:
    """One call of ``schedule`` on ``sim``, from time 0."""
    ranks = _Ranks(sim, cost, schedule, gamma)
    sim.at(0.0, ranks.start)
    sim.run()
    stuck = [r for r in range(schedule.n) if ranks.i[r] < len(ranks.acts[r]) or ranks.queue[r]]
    if stuck:  # cannot happen: a step's messages are sent and received in that step, which every rank reaches
        raise RuntimeError(f"message schedule {schedule.name!r}: rank {stuck[0]} did not complete its steps")
    return ranks


def simulate(
    profile: Profile,
    layout: Sequence[str],
    schedule: MessageSchedule,
    *,
    reduce_us_per_byte: ReduceRate = 0.0,
    sharing: str = "maxmin",
) -> ScheduleRun:
    """Evaluate ``schedule`` on ``layout`` event by event through the flow engine's network (see the module's
    rules); ``reduce_us_per_byte``: γ, one rate or one per node type (µs per byte reduced); ``sharing``: how
    concurrent flows share a link (``maxmin``, ``weighted``: :data:`hnowmodel.flow.SHARINGS`' fluid ones), or
    :data:`TANDEM` (``rr``): the messages pass the tandem of queues of :mod:`hnowmodel.flow.tandem` (each host's
    egress round-robin, its ingress a FIFO) instead of the fluid network; a pair's next message then joins the
    sender's egress once the previous one has left it (one connection, one byte stream). A profile with TCP windows
    (:attr:`~hnowmodel.params.NetworkTerms.windows`) puts the tandem's messages through their connections' windows
    instead (:mod:`hnowmodel.flow.windows`): the schedule runs :data:`~hnowmodel.flow.windows.WARM_CALLS` times in a
    row and the median of the calls after the first is the result.

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> from hnowmodel.schedules.steps import MessageSchedule, Step
    >>> prof = Profile({"f": NodeType("f", 1, 0, 2, 0)}, Link(0, 0.01))        # S = 1, R = 2 µs
    >>> two = MessageSchedule(3, (Step.of([0], [1], 1000), Step.of([0], [2], 1000, waits=False)), "two sends")
    >>> run = simulate(prof, ["f"] * 3, two)          # posted at 1 and 2: 100 bytes alone, then 50 bytes/µs each
    >>> run.done_us.tolist(), run.posted_us.tolist()
    ([0.0, 22.0, 23.0], [2.0, 0.0, 0.0])
    """
    cost, egress, ingress, gamma = prepare(profile, layout, schedule, reduce_us_per_byte)
    windows = windowed(profile, schedule) if sharing == TANDEM else None
    if windows is not None:  # TCP windows: a timed loop, each call after the one before; its median call
        return _timed_loop(WindowNetwork(egress, ingress, cost.burst, windows, hosts_of(layout)), cost, schedule, gamma)
    sim: Network | TandemNetwork
    if sharing == TANDEM:
        sim = TandemNetwork(egress, ingress, cost.burst, hosts_of(layout))
    else:
        sim = Network(egress, ingress, cost.burst, link_sharing(sharing).weighted, hosts_of(layout))
    return _result(schedule, _run(sim, cost, schedule, gamma), sim.records)


def windowed(profile: Profile, schedule: MessageSchedule) -> Windows | None:
    """The TCP windows ``schedule`` runs through on the tandem (:mod:`hnowmodel.flow.windows`): the profile's
    (:attr:`~hnowmodel.params.NetworkTerms.windows`), unless it has none or one call hands the egresses more than
    :data:`~hnowmodel.flow.windows.PIECES_UP_TO` pieces (then None: the tandem without windows)."""
    w = profile.network_terms.windows
    if w is None or pieces(schedule.steps, w.mss_bytes) > PIECES_UP_TO:
        return None
    return w


def _result(schedule: MessageSchedule, ranks: _Ranks, records: list) -> ScheduleRun:
    done, posted = ranks.done, ranks.posted
    done.flags.writeable = posted.flags.writeable = False
    completion = float(done.max()) if done.size else 0.0
    return ScheduleRun(schedule.name, done, posted, completion, tuple(records), "events")


def _timed_loop(sim: WindowNetwork, cost: MessageCosts, schedule: MessageSchedule, gamma: np.ndarray) -> ScheduleRun:
    """:data:`~hnowmodel.flow.windows.WARM_CALLS` calls in a row on one windowed network; the first warms it up,
    and of the others the call of median completion is the result (a timing's median repetition: where an idle
    restart happens in some calls and not in others, the calls alternate between a slow and a fast one)."""
    runs = []
    for i in range(WARM_CALLS):
        if i:
            sim.next_call()
        runs.append(_result(schedule, _run(sim, cost, schedule, gamma), sim.records))
    timed = sorted(runs[1:], key=lambda r: r.completion_us)
    return timed[(len(timed) - 1) // 2]


def evaluate(
    profile: Profile,
    layout: Sequence[str],
    schedule: MessageSchedule,
    *,
    reduce_us_per_byte: ReduceRate = 0.0,
    sharing: str = "maxmin",
    method: str = "auto",
) -> ScheduleRun:
    """Evaluate ``schedule`` under the flow engine: ``method="events"`` (:func:`simulate`, exact),
    ``"rounds"`` (:func:`~hnowmodel.schedules.flowrounds.simulate_rounds`, vectorised per step), or ``"auto"``:
    events up to :data:`EVENTS_UP_TO` messages (counted with repeats), rounds beyond.

    Why a count of messages: the event-driven evaluator is exact and its cost grows with the messages (a few
    events each), while the vectorised one costs per step, whatever the messages, and agrees with it exactly only
    where no link carries two flows at once (a ring, recursive doubling on equal nodes); elsewhere it differs by a
    few % on one network, and on hosts of different speeds, where a fast rank's next step shares a link still
    carrying a slower rank's flow, it is up to 40-55 % faster at 100 kB (:mod:`~hnowmodel.schedules.flowrounds`).
    Which links are shared is known only by simulating, so the rule is by cost: exact whenever that is affordable.
    Pass ``method="events"`` to pay for exactness on a large schedule. The vectorised evaluator has no tandem of
    queues (``sharing="rr"``): ``"rounds"`` approximates it by max-min sharing.

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> from hnowmodel.schedules.steps import MessageSchedule, Step
    >>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))
    >>> ring = MessageSchedule(4, (Step.of([0, 1, 2, 3], [1, 2, 3, 0], 1000, repeat=3),), "ring")
    >>> run = evaluate(prof, ["f"] * 4, ring)
    >>> run.method, run.completion_us
    ('events', 30.0)
    """
    if method not in ("auto", "events", "rounds"):
        raise InputError(f"unknown evaluation method {method!r} (choose from: auto, events, rounds)")
    if method == "auto":
        method = "events" if schedule.n_messages <= EVENTS_UP_TO else "rounds"
    if method == "events":
        return simulate(profile, layout, schedule, reduce_us_per_byte=reduce_us_per_byte, sharing=sharing)
    # the vectorised evaluator has no tandem of queues: beyond what events afford, its max-min approximation
    rounds_sharing = "maxmin" if sharing == TANDEM else sharing
    return simulate_rounds(profile, layout, schedule, reduce_us_per_byte=reduce_us_per_byte, sharing=rounds_sharing)
