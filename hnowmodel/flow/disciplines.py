"""Queue disciplines of a sender's egress for bcast and scatter (``fifo``, ``rr``): a rank queues its messages in
its egress, which a discipline drains, and each receiver's ingress drains its own; and the registry of link
sharings (:data:`SHARINGS`), the fluid max-min ones included."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..runopts import Schedule
from ..trees import Tree
from .costs import MessageCosts
from .network import FlowRecord

__all__ = ["Sharing", "LINK_SHARINGS", "fifo", "round_robin", "downward_queued"]

Curves = tuple[list[list[tuple[float, float]]] | list[np.ndarray], list[float]]
#: A departure curve read for summing (:func:`_left_right`): its times, bytes (at a time listed twice, the later
#: value) and jumps by time.
Parsed = tuple[np.ndarray, np.ndarray, dict[float, float]]
#: Curves given as lists (``fifo``'s) of this many points or more are read with numpy (the same arithmetic, element
#: by element); shorter ones in a plain loop, which is faster for them. Arrays (``rr``'s) always with numpy.
_NUMPY_FROM = 24


class _Bucket:
    """One shaped link as a FIFO server with a token bucket (``tbf``): rate ``c`` bytes/µs, ``burst`` bytes of
    tokens, full at the start."""

    __slots__ = ("c", "burst", "tokens", "t", "free")

    def __init__(self, c: float, burst: float) -> None:
        self.c, self.burst, self.tokens, self.t, self.free = c, burst, burst, 0.0, 0.0

    def serve(self, arrive: float, b: float) -> tuple[float, float]:
        """A message of ``b`` bytes queued whole at ``arrive``: (when it starts leaving, when its last byte left).
        The tokens it finds pass at once; the rest at ``c``."""
        start = max(arrive, self.free)
        tokens = min(self.burst, self.tokens + (start - self.t) * self.c)
        if not math.isfinite(self.c) or tokens >= b:
            end, self.tokens = start, tokens - (0.0 if not math.isfinite(self.c) else b)
        else:
            end, self.tokens = start + (b - tokens) / self.c, 0.0
        self.t = self.free = end
        return start, end


def fifo(
    arrive: Sequence[float], size: Sequence[float], c: float, burst: float, queued: float = 0.0, *, arrays: bool = False
) -> Curves:
    """One egress link as a FIFO (``tbf``): message k is queued whole at ``arrive[k]`` and leaves after the ones
    before it, its bucket's tokens at once, the rest at ``c`` bytes/µs. The same result as :func:`round_robin`:
    each message's departure curve and when its first byte leaves (``queued`` is not read: a message waits for
    the whole of the ones before it; nor ``arrays``: its curves are lists of two or three points, which the engine
    reads as they are).

    >>> fifo([0, 0], [100, 300], 10.0, 0)
    ([[(0.0, 0.0), (10.0, 100.0)], [(10.0, 0.0), (40.0, 300.0)]], [0.0, 10.0])
    """
    out = _Bucket(c, burst)
    curves, first = [], []
    for a, b in zip(arrive, size, strict=True):
        start, end = out.serve(float(a), float(b))
        got = float(b) - (end - start) * c if end > start else float(b)  # what passed at once on the bucket's tokens
        curve = [(start, 0.0)] + ([(start, got)] if 0 < got < b else []) + [(end, float(b))]
        curves.append(curve)
        first.append(start)
    return curves, first


def round_robin(
    arrive: Sequence[float], size: Sequence[float], c: float, burst: float, queued: float = 0.0, *, arrays: bool = False
) -> Curves:
    """One egress link served round-robin (processor sharing): message k of ``size[k]`` bytes is queued at
    ``arrive[k]`` (µs, non-decreasing); every queued message leaves at an equal share of ``c`` bytes/µs. A full
    token bucket of ``burst`` bytes passes at once to the messages that find tokens (refilled at ``c`` while the
    link is idle). Returns each message's departure curve, ``(time, bytes left so far)`` points, linear between
    (with ``arrays``: each an array of shape (points, 2), the form the engine reads), and when its first byte
    leaves: a link serves whole packets in turn, and a message queued behind others waits for one round of them,
    the ``queued`` bytes each connection keeps in the link's queue (TCP's small queues; the fluid share alone would
    have it start at once).

    >>> round_robin([0, 0], [100, 300], 10.0, 0)
    ([[(0.0, 0.0), (20.0, 100.0)], [(0.0, 0.0), (20.0, 100.0), (40.0, 300.0)]], [0.0, 0.0])
    >>> round_robin([0, 0], [100, 300], 10.0, 0, queued=50)[1]   # the second waits for the first's 50 bytes
    [0.0, 5.0]
    """
    curves, first = _round_robin(arrive, size, c, burst, queued)
    if arrays:
        return curves, first
    return [[(t, d) for t, d in cv.tolist()] for cv in curves], first


def _round_robin(
    arrive: Sequence[float], size: Sequence[float], c: float, burst: float, queued: float
) -> tuple[list[np.ndarray], list[float]]:
    """:func:`round_robin` over numpy arrays of the queued messages (each step is one operation over all of them:
    a root's queue can hold thousands), each curve an array of (time, bytes) rows."""
    n = len(size)
    if n == 0:
        return [], []
    arr = [float(x) for x in arrive]
    sizes = [float(x) for x in size]
    first = [0.0] * n
    # the queued messages in the order they joined: which, their bytes, the bytes each has left so far
    active, whole, sent = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    # the points, as chunks of (time, messages, bytes so far): first each message's when it is queued, then steps
    start_t: list[float] = []
    start_i: list[int] = []
    start_d: list[float] = []
    steps: list[tuple[float, np.ndarray, np.ndarray]] = []
    tokens, t, k = float(burst), 0.0, 0
    finite = math.isfinite(c)
    while k < n or active.size:
        if not active.size:  # idle until the next message: the bucket refills
            gap = max(0.0, arr[k] - t)
            tokens = min(float(burst), tokens + gap * c) if finite else float(burst)
            t = max(t, arr[k])
        while k < n and arr[k] <= t:
            # bytes the messages ahead keep queued, summed one after another as a plain loop would
            ahead = float(np.cumsum(np.minimum(queued, whole - sent))[-1]) if active.size else 0
            first[k] = t + ahead / c if finite else t
            got = min(tokens, sizes[k])
            tokens -= got
            start_t.append(t), start_i.append(k), start_d.append(0.0)
            if got:
                start_t.append(t), start_i.append(k), start_d.append(got)
            if got < sizes[k]:
                active, whole, sent = np.append(active, k), np.append(whole, sizes[k]), np.append(sent, got)
            k += 1
        if not active.size:
            continue
        if not finite:
            steps.append((t, active, whole))
            active, whole, sent = active[:0], whole[:0], sent[:0]
            continue
        share = c / active.size
        step = float(np.min(whole - sent)) / share
        if k < n:
            step = min(step, arr[k] - t)
        t += step
        sent = np.minimum(whole, sent + share * step)
        steps.append((t, active, sent))
        left = sent < whole * (1 - 1e-12)
        if not left.all():
            active, whole, sent = active[left], whole[left], sent[left]
    times = np.repeat(
        np.array(start_t + [tt for tt, _, _ in steps]), [1] * len(start_t) + [i.size for _, i, _ in steps]
    )
    who = np.concatenate([np.array(start_i, dtype=np.int64)] + [i for _, i, _ in steps])
    got = np.concatenate([np.array(start_d)] + [d for _, _, d in steps])
    order = np.argsort(who, kind="stable")  # each message's points in the order they came
    pts = np.column_stack([times[order], got[order]])
    return np.split(pts, np.cumsum(np.bincount(who, minlength=n))[:-1]), first


def _through_ingress(curve: Sequence | np.ndarray, t1: float, b: float, rate: float, burst: float) -> float:
    """When the last byte of a message leaving its egress along ``curve`` (first byte at ``t1``) is through its
    receiver's ingress, a greedy shaper at ``rate`` bytes/µs with ``burst`` bytes of tokens (µs). ``curve``: a list
    of (time, bytes) points or an array of such rows."""
    end = float(curve[-1][0])
    if not math.isfinite(rate):
        return end
    head = max(end, t1 + max(0.0, b - burst) / rate)
    if not isinstance(curve, np.ndarray) and len(curve) < _NUMPY_FROM:
        return max(head, *(tau + max(0.0, b - d - burst) / rate for tau, d in curve))
    pts = np.asarray(curve, dtype=float)
    return max(head, float(np.max(pts[:, 0] + np.maximum(0.0, b - pts[:, 1] - burst) / rate)))


def _left_right(curve: Sequence | np.ndarray) -> Parsed:
    """A departure curve as interpolation points (at a time listed twice, its later value) and the jumps (bytes
    that passed at once on a bucket's tokens) by time."""
    pts = np.asarray(curve, dtype=float)
    ts, ds = pts[:, 0], pts[:, 1]
    keep = np.ones(ts.size, dtype=bool)
    keep[:-1] = ts[1:] != ts[:-1]
    jumps: dict[float, float] = {}
    for i in np.flatnonzero(~keep):
        jumps[float(ts[i])] = jumps.get(float(ts[i]), 0.0) + float(ds[i + 1] - ds[i])
    return ts[keep], ds[keep], jumps


def _summed_departures(parts: Sequence[tuple[Parsed, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The summed departure curve ``D`` of the messages into one host (``parts``: each one's :func:`_left_right`
    and first byte time, µs): the union ``T`` of their breakpoints and first byte times (µs, sorted), and ``D``'s
    right and left limits at each (bytes; they differ by the bytes that passed at once on a bucket's tokens).

    >>> _summed_departures([(_left_right([(0.0, 0.0), (0.0, 5.0), (2.0, 9.0)]), 0.0), (_left_right([(1.0, 0.0),
    ...     (3.0, 4.0)]), 1.0)])
    (array([0., 1., 2., 3.]), array([ 5.,  7., 11., 13.]), array([ 0.,  7., 11., 13.]))
    """
    taus = np.unique(np.concatenate([ts for (ts, _, _), _ in parts] + [np.array([t1 for _, t1 in parts])]))
    right, left = np.zeros(taus.size), np.zeros(taus.size)
    for (ts, ds, jumps), _ in parts:  # summed part by part, in order, as a plain loop over them would
        got = np.interp(taus, ts, ds, left=0.0)
        right += got
        if jumps:
            jump = np.zeros(taus.size)
            jump[np.searchsorted(taus, list(jumps))] = list(jumps.values())
            got = got - jump
        left += got
    return taus, right, left


def _through_host_ingress(
    parts: Sequence[tuple[Parsed, float]], ends: Sequence[float], rate: float, burst: float
) -> list[float]:
    """When the last byte of each message into one host is through the host's ingress, which all of them
    (``parts``: each one's :func:`_left_right` and first byte time) share as one FIFO greedy shaper at ``rate``
    bytes/µs with ``burst`` bytes of tokens, for the messages whose egress ends (their curves' last times, µs) are
    ``ends``: a last byte leaves when every byte that reached the ingress by the time it did has passed,
    ``max(end, τ + (D(end) - D(τ⁻) - burst)/rate)`` over the points ``τ ≤ end`` of the summed departure curve ``D``
    (:func:`_summed_departures`, built once for them all). With one message into the host it is
    :func:`_through_ingress`.

    >>> one = _left_right([(0.0, 0.0), (10.0, 100.0)])
    >>> _through_host_ingress([(one, 0.0), (one, 0.0)], [10.0], 5.0, 0.0)   # 200 bytes at 5 bytes/µs
    [40.0]
    """
    if not math.isfinite(rate):
        return [float(e) for e in ends]
    summed = _summed_departures(parts)
    return [_read_end(summed, e, rate, burst) for e in ends]


def _read_end(summed: tuple[np.ndarray, np.ndarray, np.ndarray], end: float, rate: float, burst: float) -> float:
    """:func:`_through_host_ingress` of one message whose egress end is ``end`` (µs, a point of ``summed``, the
    host's :func:`_summed_departures`)."""
    taus, right, left = summed
    i = int(np.searchsorted(taus, end, side="right"))  # taus[:i]: the points up to the end, the end the last
    x = right[i - 1]
    return max(float(end), float(np.max(taus[:i] + np.maximum(0.0, x - left[:i] - burst) / rate)))


def downward_queued(
    cost: MessageCosts,
    tree: Tree,
    edge_bytes: np.ndarray,
    m: float,
    schedule: Schedule,
    egress: np.ndarray,
    serve: Callable[..., Curves],
    ingress: np.ndarray | None = None,
) -> tuple[np.ndarray, list[FlowRecord]]:
    """bcast/scatter under a queue discipline: a rank that holds its data queues its messages to other hosts in its
    host's egress (``egress[h]``, bytes/µs; the k-th after the first k send overheads ``S``, and the first's
    :meth:`MessageCosts.first_send_busy`), which ``serve`` drains for all that host's ranks together: :func:`fifo`
    (whole messages in the order they were queued) or :func:`round_robin` (an equal share each); a message to a rank
    of its own host takes its shared-memory :meth:`~MessageCosts.shm_transfer` and no link. A receiver's ingress,
    shaped at the pair's rate ``1/Xm`` (or its NIC's ingress when the profile states a lower one,
    :attr:`~hnowmodel.params.Profile.nic`), passes its bucket's burst as it arrives and queues the rest (a greedy
    shaper: its output by ``t`` is at most ``D(τ) + burst + (t - τ)/Xm`` for every ``τ`` before), so its last byte
    leaves at the latest of the egress's end, the first byte's time + ``(b - burst)·Xm`` and
    ``τ + (b - D(τ) - burst)·Xm`` over the points ``(τ, D)`` of the departure curve (each message is shaped on its
    own), and the messages into one host also pass its ingress (``ingress[h]``) together, in the order they come
    (:func:`_through_host_ingress`). Times from the root's start (µs); the root's copy of its own block
    (``schedule.root_copy``) comes after its sends, or before them with ``copy_first``. With
    ``schedule.segment_bytes`` (a pipelined tree) a relay queues its messages once its first segment is in (its
    share of the incoming transfer, then ``R`` of a segment), and a child's message ends no earlier than a
    segment's transfer after the relay holds the whole message.

    Ranks are taken in the order they come to hold their data (pipelined: to start passing it on): a message
    queued at ``t`` changes only what its egress does after ``t``, so a rank's time is final once no rank that
    still has to queue holds its data earlier."""
    root_copy, copy_first = schedule.root_copy, schedule.copy_first
    queued = cost.terms.queued
    root_done = cost.copy(tree.root, m) if root_copy and copy_first else 0.0
    walk = _QueuedWalk(cost, tree, float(schedule.segment_bytes), ingress, root_done)
    while walk.heap:
        t, p = heapq.heappop(walk.heap)
        if walk.final[p] or t != walk.post[p]:
            continue
        walk.final[p] = True
        acc, joined = walk.send(p, t, edge_bytes)
        if joined:
            h = cost.hosts[p]
            walk.drain(h, serve, float(egress[h]), queued)
        if p == tree.root and root_copy:
            walk.done[p] = acc if copy_first else acc + cost.copy(p, m)
    rank = _bfs_rank(tree)  # ties in the end time: parents' messages before their children's, as they were queued
    out = sorted(walk.records.values(), key=lambda r: (r.end_us, rank[r.dst]))
    return walk.done, out


class _QueuedWalk:
    """The state of :func:`downward_queued`'s walk, times from the root's start (µs): when each rank holds its data
    (``done``) and starts passing it on (``post``: once it holds it, or, pipelined, once its first segment is in),
    which ranks are final, the message into each rank (``records``, by receiver), each host's egress queue
    (``queues``), the messages into each host when the hosts' ingress is shared (``shared``), and the ranks that
    still have to pass their data on (``heap``, by ``post``)."""

    def __init__(
        self, cost: MessageCosts, tree: Tree, seg: float, ingress: np.ndarray | None, root_done: float
    ) -> None:
        self.cost, self.tree, self.seg = cost, tree, seg
        n = tree.n
        self.done = np.full(n, np.nan)
        self.done[tree.root] = root_done
        self.post = self.done.copy()
        self.final = np.zeros(n, dtype=bool)
        self.records: dict[int, FlowRecord] = {}  # by receiver
        # per host: its egress's queue, (queued at, seq, sender, receiver, bytes); all recomputed when one joins
        self.queues: dict[int, list[tuple[float, int, int, int, float]]] = {}
        self.shared = None if ingress is None else _HostIngress(cost.hosts, ingress, cost.burst)
        self.heap = [(float(self.post[tree.root]), tree.root)]
        self.seq = 0

    def received(self, c: int, s: int, b: float, start: float, end: float, delivered: float) -> float:
        """Rank ``c`` holds the ``b`` bytes from ``s`` (sent from ``start`` to ``end``, ``delivered`` with the
        latency) and joins the heap; returns when they are delivered (µs)."""
        cost, seg, done, post = self.cost, self.seg, self.done, self.post
        # c holds its message at done[c]; pipelined, its first segment is in (and c starts passing it on) after the
        # segment's share of the transfer, and its last segment cannot leave before its sender held it (latency is
        # 0 between two ranks of one host: their whole transfer is the shared-memory one)
        if seg > 0 and b > seg:
            shm = cost.same_host(s, c)
            hold = float(done[s]) + (cost.shm_transfer(s, seg) if shm else seg / cost.pair_rate(s, c, seg))
            delivered = max(delivered, hold + cost.latency(s, c, seg))
        done[c] = delivered + cost.recv(c, b, s)
        post[c] = done[c]
        if seg > 0 and b > seg and len(self.tree.children[c]):
            first = start + (end - start) * seg / b + cost.latency(s, c, seg)
            post[c] = min(post[c], first + cost.recv(c, seg, s))
        heapq.heappush(self.heap, (float(post[c]), c))
        return delivered

    def send(self, p: int, t: float, edge_bytes: np.ndarray) -> tuple[float, bool]:
        """Rank ``p`` passes its data on from ``t`` (µs): a message to a rank of its own host takes its shared-memory
        transfer, the others join its host's egress queue. Returns when its sends are posted (µs) and whether a
        message joined the queue."""
        cost = self.cost
        kids = [int(c) for c in self.tree.children[p]]
        sizes = [float(edge_bytes[c]) for c in kids]
        arrive, acc = cost.posts(p, t, sizes, kids)
        h = cost.hosts[p]
        joined = False
        for c, b, a in zip(kids, sizes, arrive, strict=True):
            if cost.same_host(p, c):
                end = a + cost.shm_transfer(p, b)
                end = self.received(c, p, b, a, end, end)
                self.records[c] = FlowRecord(p, c, b, a, end, end, False)
            else:
                self.queues.setdefault(h, []).append((a, self.seq, p, c, b))
                self.seq += 1
                joined = True
        return acc, joined

    def drain(self, h: int, serve: Callable[..., Curves], egress_rate: float, queued: float) -> None:
        """Host ``h``'s egress queue, drained by ``serve`` at ``egress_rate`` (bytes/µs): each message into a rank not
        yet final then passes its receiver's ingress and its host's, and is received."""
        cost, burst, final, shared = self.cost, self.cost.burst, self.final, self.shared
        q = self.queues[h]
        q.sort()
        curves, first = serve([x[0] for x in q], [x[4] for x in q], egress_rate, burst, queued, arrays=True)
        last: dict[int, float] = {}  # by receiver: its last byte through its own ingress, then its host's
        for (_, _, s, c, b), curve, t1 in zip(q, curves, first, strict=True):
            if not final[c]:
                rate = cost.pair_rate(s, c, b)
                nic = cost.profile.nic.get(cost.names[c])
                if nic is not None:
                    rate = min(rate, nic.ingress_bytes_per_us)
                last[c] = _through_ingress(curve, t1, b, rate, burst)
                if shared is not None:
                    shared.put(c, curve, t1)
        if shared is not None:  # each host's ingress drains every message into it in turn
            last = {c: max(x, shared.through(c)) for c, x in last.items()}
        for (_, _, s, c, b), curve in zip(q, curves, strict=True):
            if final[c]:
                continue
            start, lat = float(curve[0][0]), cost.latency(s, c, b)
            delivered = self.received(c, s, b, start, last[c], last[c] + lat)
            end = last[c] if delivered == last[c] + lat else delivered - lat
            self.records[c] = FlowRecord(s, c, b, start, end, delivered, False)


class _HostIngress:
    """The messages into each receiving host (:func:`downward_queued`'s state) and what the host's shared ingress
    (``ingress[h]``, bytes/µs, a greedy shaper with ``burst`` bytes of tokens) makes of them: a host's summed
    departure curve is built once for all its messages (:func:`_summed_departures`), again only after one of them
    changed, and each message's end is read off it (:func:`_through_host_ingress`)."""

    def __init__(self, hosts: np.ndarray, ingress: np.ndarray, burst: float) -> None:
        self.hosts, self.ingress, self.burst = hosts, ingress, burst
        self.into: dict[int, dict[int, tuple]] = {}  # by host, by receiver: (departure curve, first byte time)
        self.parsed: dict[int, Parsed] = {}  # by receiver: its curve read for summing (:func:`_left_right`)
        self.summed: dict[int, tuple] = {}  # by host: its summed departure curve, while its messages stay

    def put(self, c: int, curve: Sequence, t1: float) -> None:
        """The message into rank ``c`` leaves its egress along ``curve`` from ``t1`` (µs)."""
        g = int(self.hosts[c])
        self.into.setdefault(g, {})[c] = (curve, t1)
        self.parsed.pop(c, None)
        self.summed.pop(g, None)

    def through(self, c: int) -> float:
        """When the last byte of the message into ``c`` is through its host's ingress (µs; its egress end when it
        is the only message into the host)."""
        g = int(self.hosts[c])
        mates = self.into[g]
        end = float(mates[c][0][-1][0])
        rate = float(self.ingress[g])
        if len(mates) < 2 or not math.isfinite(rate):
            return end
        if g not in self.summed:
            for r, (curve, _) in mates.items():
                if r not in self.parsed:
                    self.parsed[r] = _left_right(curve)
            self.summed[g] = _summed_departures([(self.parsed[r], t1) for r, (_, t1) in mates.items()])
        return _read_end(self.summed[g], end, rate, self.burst)


def _bfs_rank(tree: Tree) -> dict[int, int]:
    """Each rank's place in the tree's breadth-first order (children in send order)."""
    order = [tree.root]
    for p in order:
        order.extend(int(c) for c in tree.children[p])
    return {c: i for i, c in enumerate(order)}


@dataclass(frozen=True)
class Sharing:
    """How concurrent messages share a link: through the fluid network (:class:`~hnowmodel.flow.network.Network`,
    max-min fair, ``weighted`` by each flow's lone rate ``1/Xm``), or, with ``serve``, through a queue discipline
    of each sender's egress (:func:`downward_queued`: bcast and scatter only, one message into each rank)."""

    name: str
    summary: str
    weighted: bool = False
    serve: Callable[..., Curves] | None = None

    @property
    def queued(self) -> bool:
        """Whether this sharing is a queue discipline of the egress (not the fluid network)."""
        return self.serve is not None


#: The link sharings, by name: ``maxmin`` (every flow the same share, SimGrid's flow model), ``weighted`` (weighted
#: max-min, each flow's share proportional to its own lone rate ``1/Xm``), ``fifo`` (bcast and scatter: a sender's
#: messages leave its egress one after another in send order, each at the egress rate, and each receiver's ingress
#: drains its own: one FIFO queue per shaped link, as Linux ``tbf`` has) or ``rr`` (bcast and scatter: a sender's
#: egress serves its queued messages round-robin, packet by packet, an equal share each whatever their receivers
#: take, and each receiver's ingress drains its own queue: what a host whose sockets may each hold only a few
#: packets below TCP does, as the virtual cluster's hosts do).
LINK_SHARINGS: Mapping[str, Sharing] = MappingProxyType(
    {
        s.name: s
        for s in (
            Sharing("maxmin", "max-min fair shares of every link"),
            Sharing("weighted", "max-min shares weighted by each flow's lone rate", weighted=True),
            Sharing("fifo", "a sender's egress sends whole messages in send order", serve=fifo),
            Sharing("rr", "a sender's egress serves its messages round-robin", serve=round_robin),
        )
    }
)
