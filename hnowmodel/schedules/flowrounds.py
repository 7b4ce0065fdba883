"""A message schedule under the flow engine, step by step with numpy: for large regular schedules (rounds where
every rank does the same thing: ring, recursive doubling, Bruck, pairwise exchange) on thousands of ranks.

The ranks follow the rules of :mod:`hnowmodel.schedules.flows` exactly (when each rank reaches a step, copies,
posts, pays a first send's busy time, when a rendezvous message may flow, when a receive completes), computed for
all of a step's messages at once. Only the network is simplified, per step:

* a message between two ranks of one host takes its fixed shared-memory transfer, as in the event-driven evaluator;
* the step's messages between hosts are taken to **overlap**: their rates are the max-min fair shares
  (:func:`~hnowmodel.flow.network.max_min_rates`) of the hosts' NICs among all of them, each capped at its pair's
  rate, held from its start to its end (the event-driven evaluator recomputes them whenever a flow starts or
  ends);
* flows of **different steps** are not shared out: each link is a work-conserving server instead, so a flow ends
  no earlier than the link has carried, at its capacity, the bytes of earlier steps' flows and of this step's
  (a sender's batch of non-blocking sends, a tree's later children); a flow that leaves its links room keeps its
  own rate;
* **token buckets**: a link refills at its capacity while idle (between the end of its last flow and the first
  start of the next step's), up to the burst; a step's flows on a link split its tokens equally, each passing
  ``min(bytes, its share on both links)`` at once; a flow with bytes left is then shaped on both links and capped at
  its pair's rate (the event-driven network lets a link refill while a flow uses less than its capacity).

So the two evaluators agree exactly (to rounding) where no link ever carries two flows at once and buckets are
shared out as above (every flow through a link is its bottleneck, or the profile has no burst): a ring, and
recursive doubling on equal nodes (``tests/schedules/test_flows.py``). Elsewhere
(``experiments/perf_schedule_flow.py``: 8-32 ranks on hosts of 1-4 ranks, 1 kB and 100 kB; the completion,
rounds/events - 1): on the paper's profile (one network) a ring and recursive doubling agree, a pairwise alltoall
-7..0 %, Bruck 0..+22 %, a binomial bcast -13..0 %; on profiles with hosts of different speeds (perf_flow.py's
network profile, the calibrated cluster) a ring 0..+0.1 %, recursive doubling -38..0 %, pairwise -55..0 %, Bruck
-28..+12 %, a binomial bcast -42..+8 % (the median case within 0-10 %), and recursive doubling on 64 hosts x 32
ranks -25 % at 1 kB, -37 % at 64 kB, -40 % at 1 MB. Faster, because a fast rank that reaches its next step while
a slower rank's flow still runs through a link shares that link in the event-driven network (slowing the earlier
flow), while here the earlier flow keeps its rate; slower, where a step's flows start at different times (they
are taken to overlap).

A step repeated unchanged (``Step.repeat``) runs until one repetition (or ``p`` of them, a periodic regime of
period ``p`` up to ``max_period``) advances every clock the step reads and writes by one amount ``λ``, the same
token counts and first-send flags; since each step is made of sums and maxima of times, every later repetition
then does the same, and the remaining ones are added as ``remaining·λ`` at once.

>>> from hnowmodel.params import Link, NodeType, Profile
>>> from hnowmodel.schedules.steps import MessageSchedule, Step
>>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))      # 100 bytes/µs on every link
>>> ring = MessageSchedule(4, (Step.of([0, 1, 2, 3], [1, 2, 3, 0], 1000, repeat=10**6),), "ring")
>>> simulate_rounds(prof, ["f"] * 4, ring).completion_us                   # 10**6 steps of 10 µs
10000000.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..flow.costs import MessageCosts
from ..flow.network import max_min_rates
from ..layout import hosts_of
from ..params import Profile
from .flowrun import ReduceRate, ScheduleRun, link_sharing, prepare
from .steps import MessageSchedule, Step

__all__ = ["simulate_rounds"]

_INF = np.inf


def _by_kind(key: np.ndarray, src: np.ndarray, dst: np.ndarray, b: np.ndarray, fns: list[Callable]) -> list:
    """Each ``fn(s, d, b)`` of ``fns`` for every message ``(src, dst, b)``, called once per distinct ``key`` (whole
    numbers: what the costs depend on), on its first message (the scalar costs are cached)."""
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.ravel()
    out = []
    for fn in fns:
        vals = np.array([fn(int(src[j]), int(dst[j]), float(b[j])) for j in first], dtype=float)
        out.append(vals[inv])
    return out


class _Plan:
    """What one step costs, message by message, independent of time: the overheads, the shared-memory transfers,
    the flows' links, pair caps and ``Xc``, who copies what."""

    def __init__(self, s: Step, cost: MessageCosts, ti: np.ndarray, hosts: np.ndarray, gamma: np.ndarray) -> None:
        n_hosts = int(hosts.max()) + 1 if hosts.size else 0
        self.src, self.dst, self.b = s.src, s.dst, s.nbytes
        self.waits, self.prepost = s.waits, s.prepost
        src, dst, b = self.src, self.dst, self.b
        self.inter = fl = hosts[src] != hosts[dst]
        sizes, bi = np.unique(b, return_inverse=True)  # the costs depend on the types, the host boundary, the size
        bi = bi.ravel()
        nt = int(ti.max()) + 1 if ti.size else 1
        key = ((ti[src] * nt + ti[dst]) * 2 + fl) * sizes.size + bi

        def wire(fn: Callable) -> Callable:
            return lambda a, d, x: np.nan if cost.same_host(a, d) else fn(a, d, x)

        self.S, self.R, x_shm, xc, pair = _by_kind(
            key, src, dst, b,
            [lambda a, d, x: cost.send(a, x, d), lambda a, d, x: cost.recv(d, x, a),
             lambda a, d, x: cost.shm_transfer(a, x) if cost.same_host(a, d) else np.nan,
             wire(cost.latency), wire(cost.pair_rate)],
        )  # fmt: skip
        self.fsb = np.array([cost.first_send_busy(x) for x in sizes], dtype=float)[bi]
        self.rdv = np.array([cost.rendezvous(x) for x in sizes], dtype=bool)[bi]
        if s.rendezvous is not None:  # marked in the step (a synchronous send, a struct datatype), at any size
            self.rdv = self.rdv | s.rendezvous
        self.gred = gamma[dst] * s.reduce_bytes
        self.x_shm, self.xc, self.pair = x_shm[~fl], xc[fl], pair[fl]
        self.e, self.i = hosts[src[fl]], n_hosts + hosts[dst[fl]]
        self.fb = b[fl]
        if s.copy_bytes is None:
            self.copiers = np.zeros(0, dtype=np.int64)
        else:
            self.copiers = np.flatnonzero(s.copy_bytes > 0)
        cb = s.copy_bytes[self.copiers] if self.copiers.size else np.zeros(0)
        self.C = np.array([cost.copy(int(r), float(x)) for r, x in zip(self.copiers, cb, strict=True)], dtype=float)
        self.ranks = np.unique(np.concatenate([src, dst, self.copiers]))
        self.holders = np.union1d(dst, self.copiers)  # the ranks whose done time the step moves
        self.links = np.unique(np.concatenate([self.e, self.i]))
        self.others = np.setdiff1d(self.ranks, dst)  # the ranks that do not receive in this step
        self.rates: dict[bytes, np.ndarray] = {}  # the flows' max-min rates, by which of them have bytes left


class _Rounds:
    """Every rank's clocks and every link's state, advanced one step at a time."""

    def __init__(self, n: int, cap: np.ndarray, burst: float, weighted: bool) -> None:
        self.clock, self.recv_t, self.done, self.posted = (np.zeros(n) for _ in range(4))
        self.rreach = np.full(n, _INF)  # when each rank reached its last step with a receive (a prepost posts then)
        self.first = np.ones(n, dtype=bool)
        self.cap, self.burst, self.weighted = cap, burst, weighted
        self.free = np.zeros(cap.size)  # when each link carried its last flow (and its bucket started refilling)
        self.vclock = np.zeros(cap.size)  # when each link would have carried its flows' bytes at its capacity
        self.tok = np.full(cap.size, float(burst))
        self.n_hosts = cap.size // 2

    def step(self, p: _Plan) -> None:
        reach = np.maximum(self.clock, self.recv_t) if p.waits else self.clock.copy()
        t = reach.copy()
        if p.copiers.size:
            t[p.copiers] = reach[p.copiers] + p.C
            self.done[p.copiers] = np.maximum(self.done[p.copiers], t[p.copiers])
        src, dst = p.src, p.dst
        t_post = t[src] + p.S
        busy = self.first[src] & p.inter
        after = np.where(busy, t_post + p.fsb, t_post)
        self.first[src] &= ~p.inter
        t[src] = after
        self.posted[src] = after
        self.clock[p.ranks] = t[p.ranks]
        posted_recv = np.minimum(self.rreach[dst], reach[dst]) if p.prepost else reach[dst]
        self.rreach[dst] = reach[dst]
        start = np.where(p.rdv, np.maximum(t_post, posted_recv), t_post)
        arrival = np.empty(src.size)
        arrival[~p.inter] = start[~p.inter] + p.x_shm
        if p.e.size:
            arrival[p.inter] = self._flows(p, start[p.inter])
        r_end = np.maximum(np.maximum(arrival, t[dst]), self.recv_t[dst]) + p.R + p.gred
        self.recv_t[dst] = r_end
        self.done[dst] = np.maximum(self.done[dst], r_end)

    def _flows(self, p: _Plan, start: np.ndarray) -> np.ndarray:
        """When each of the step's flows between hosts is delivered (see the module's network rules)."""
        e, i, b, free, cap = p.e, p.i, p.fb, self.free, self.cap
        nl = cap.size
        both = np.concatenate([e, i])
        t0 = np.full(nl, _INF)  # each link's first start in this step
        np.minimum.at(t0, both, np.concatenate([start, start]))
        used = np.isfinite(t0)
        rem = b
        if self.burst > 0:
            tok = self.tok.copy()
            idle = np.maximum(0.0, t0[used] - free[used])
            tok[used] = np.minimum(self.burst, tok[used] + cap[used] * idle)
            k = np.bincount(both, minlength=nl)
            grab = np.minimum(b, np.minimum(tok[e] / k[e], tok[i] / k[i]))
            rem = b - grab
            taken = np.bincount(both, np.concatenate([grab, grab]), minlength=nl)
            self.tok[used] = np.maximum(0.0, tok[used] - taken[used])
        h = self.n_hosts
        go = rem > 0
        key = go.tobytes()  # the rates depend only on which flows have bytes left: a repeated step reuses them
        rate = p.rates.get(key)
        if rate is None:
            rate = np.full(b.size, _INF)
            if go.any():
                w = np.where(np.isfinite(p.pair), p.pair, 1.0)[go] if self.weighted else None
                rate[go] = max_min_rates(e[go], i[go] - h, p.pair[go], cap[:h], cap[h:], w)
            p.rates[key] = rate
        # a link carries this step's bytes after the work of earlier steps, at its capacity at most
        work = np.bincount(both, np.concatenate([rem, rem]), minlength=nl)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.maximum(self.vclock, t0) + np.where(work > 0, work / cap, 0.0)
            end = np.where(go, np.maximum(start + rem / rate, np.maximum(bound[e], bound[i])), start)
        self.vclock[used] = bound[used]
        np.maximum.at(free, both, np.concatenate([end, end]))
        return end + p.xc

    def snapshot(self, p: _Plan) -> tuple[np.ndarray, ...]:
        """The times the step reads and writes (which one repetition must advance uniformly), then its other state."""
        times = (self.clock[p.ranks], self.recv_t[p.dst], self.done[p.holders], self.posted[p.src], self.free[p.links])
        times += (self.vclock[p.links], self.rreach[p.dst]) if p.prepost else (self.vclock[p.links],)
        return np.concatenate(times), self.tok[p.links].copy(), self.first[p.src].copy()

    def inert(self, p: _Plan) -> bool:
        """Whether the receive clocks of the step's non-receivers cannot matter any more (at or before their clock)."""
        return not p.waits or bool(np.all(self.recv_t[p.others] <= self.clock[p.others]))

    def shift(self, p: _Plan, lam: float) -> None:
        """Advance every clock the step reads and writes by ``lam`` µs."""
        for arr, idx in ((self.clock, p.ranks), (self.recv_t, p.dst), (self.done, p.holders), (self.posted, p.src)):
            arr[idx] += lam
        self.rreach[p.dst] += lam  # written by every step (reach[dst]); read by a prepost one
        self.free[p.links] += lam
        self.vclock[p.links] += lam


def _uniform(a: tuple, b: tuple, burst: float) -> float | None:
    """The common advance ``λ`` (µs) from snapshot ``a`` to ``b`` if every time moved by it and nothing else
    changed; None otherwise."""
    ta, tb = a[0], b[0]
    if ta.size == 0 or not np.array_equal(a[2], b[2]):
        return None
    d = tb - ta
    lam = float(d[0])
    scale = 1e-12 * (1.0 + float(np.max(np.abs(tb))))
    if lam <= 0 or np.any(np.abs(d - lam) > 16 * scale):
        return None
    if a[1].size and np.any(np.abs(a[1] - b[1]) > 1e-9 * (burst + 1.0)):
        return None
    return lam


#: A repeated step looks for a periodic regime over the last repetitions of every window of this many (checking
#: every repetition would cost as much as running it).
_WINDOW = 16


def _repeat(st: _Rounds, p: _Plan, times: int, max_period: int) -> None:
    """Run step ``p`` ``times`` times, skipping ahead once a periodic regime is seen."""
    hist: list[tuple] = []
    window = max(_WINDOW, max_period + 1)
    j = 0
    while j < times:
        st.step(p)
        j += 1
        if max_period == 0 or j == times or j % window < window - max_period - 1:
            continue
        hist.append((st.snapshot(p), st.inert(p)))
        if j % window != window - 1 or not hist[-1][1]:
            continue
        for period in range(1, len(hist)):
            then, inert = hist[-1 - period]
            lam = _uniform(then, hist[-1][0], st.burst) if inert else None
            if lam is not None:
                skip = (times - j) // period
                st.shift(p, skip * lam)
                j += skip * period
                break
        hist = []


def simulate_rounds(
    profile: Profile,
    layout: Sequence[str],
    schedule: MessageSchedule,
    *,
    reduce_us_per_byte: ReduceRate = 0.0,
    sharing: str = "maxmin",
    max_period: int = 4,
) -> ScheduleRun:
    """Evaluate ``schedule`` step by step with numpy (the module's rules); the arguments as
    :func:`hnowmodel.schedules.flows.simulate`; ``max_period``: the longest periodic regime of a repeated step looked
    for (repetitions; 0: run every repetition)."""
    how = link_sharing(sharing)
    cost, egress, ingress, gamma = prepare(profile, layout, schedule, reduce_us_per_byte)
    hosts = np.asarray(hosts_of(layout), dtype=np.int64)
    ti = profile.type_index(list(layout))
    st = _Rounds(schedule.n, np.concatenate([egress, ingress]).astype(float), cost.burst, how.weighted)
    for s in schedule.steps:
        p = _Plan(s, cost, ti, hosts, gamma)
        if s.repeat == 1:
            st.step(p)
        else:
            _repeat(st, p, int(s.repeat), max(0, int(max_period)))
    done, posted = st.done, st.posted
    done.flags.writeable = posted.flags.writeable = False
    completion = float(done.max()) if done.size else 0.0
    return ScheduleRun(schedule.name, done, posted, completion, (), "rounds")
