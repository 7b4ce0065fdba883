"""The fluid network of the flow model: link capacities from the profile, max-min sharing, and the event-driven
simulation of flows through shaped links with token buckets (times in µs, bytes, bytes/µs)."""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ProfileError
from ..layout import hosts_of
from ..params import Profile
from .costs import MessageCosts

__all__ = ["FlowRecord", "capacities", "host_capacities", "max_min_rates", "Network", "send"]

_INF = math.inf
_SEQ = operator.attrgetter("seq")


def _type_capacities(profile: Profile, m: float) -> tuple[np.ndarray, np.ndarray]:
    """Per type (order of ``profile.types``): egress and ingress capacity in bytes/µs at ``m`` bytes, from the pairs
    the profile states for the type (``profile.links``); the profile's default link only for a type that has none.
    Why: a pair the calibration could not measure has the default link, which is some other pair's (the pair of a
    type with itself, when one host has that type) and made a 20 Mbit/s host a 150 Mbit/s sender.

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> t = {k: NodeType(k, 0, 0, 0, 0) for k in ("f", "s")}
    >>> pairs = {("f", "f"): Link(0, 0.01), ("s", "f"): Link(0, 0.1), ("f", "s"): Link(0, 0.1)}
    >>> prof = Profile(t, Link(0, 0.01), pairs)
    >>> [c.tolist() for c in _type_capacities(prof, 1000)]   # s -> s is the default (fast) link: not s's capacity
    [[100.0, 10.0], [100.0, 10.0]]
    """
    _, xm = profile.link_matrix(float(m))
    with np.errstate(divide="ignore"):
        rate = np.where(xm > 0, 1.0 / np.where(xm > 0, xm, 1.0), _INF)  # bytes/µs of each (sender, receiver) pair
    names = list(profile.types)
    stated = np.zeros(rate.shape, bool)
    for a, b in profile.links:
        stated[names.index(a), names.index(b)] = True
    eg = np.where(stated.any(axis=1), np.where(stated, rate, 0.0).max(axis=1), rate.max(axis=1))
    ig = np.where(stated.any(axis=0), np.where(stated, rate, 0.0).max(axis=0), rate.max(axis=0))
    return eg, ig


def capacities(profile: Profile, layout: Sequence[str], m: float) -> tuple[np.ndarray, np.ndarray]:
    """Each rank's egress and ingress capacity (bytes/µs) from the profile's per-byte link costs at ``m`` bytes.

    The profile gives one per-byte cost ``Xm`` per (sender type, receiver type) pair; a message's bottleneck is the
    slower of its sender's egress and its receiver's ingress, ``Xm(a, b) = max(1/egress_a, 1/ingress_b)``. Assuming
    that every type's fastest pair is limited by that type itself - true when hosts are symmetric (egress =
    ingress, as a NIC's line rate) - a type's egress is the largest rate it reaches as a sender,
    ``max_b 1/Xm(a, b)``, and its ingress the largest it reaches as a receiver, ``max_a 1/Xm(a, b)``. It breaks when
    a type's egress is faster than every type's ingress (then its egress is underestimated, and two of its flows
    to slow receivers are modelled as sharing a link they do not saturate: a calibrated NIC, ``profile.nic``, does
    not have that flaw). The capacities here are per rank; the flow engine's links are per host
    (:func:`host_capacities`). ``Xm = 0`` means an unlimited link.

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> t = {k: NodeType(k, 0, 0, 0, 0) for k in ("f", "s")}
    >>> prof = Profile(t, Link(0, 0.1), {("f", "f"): Link(0, 0.01)})
    >>> [c.tolist() for c in capacities(prof, ["f", "s"], 1000)]
    [[100.0, 10.0], [100.0, 10.0]]
    """
    eg, ig = _type_capacities(profile, m)
    ti = profile.type_index(layout)
    return eg[ti], ig[ti]


def host_capacities(profile: Profile, layout: Sequence[str], m: float) -> tuple[np.ndarray, np.ndarray]:
    """Each host's NIC egress and ingress capacity (bytes/µs), host by host (:func:`~hnowmodel.layout.hosts_of`):
    ``profile.nic[type]`` where the profile gives the host's type one, else derived from the pairwise per-byte
    costs at ``m`` bytes as :func:`capacities` derives a rank's. With one rank per host, :func:`capacities`.

    >>> from hnowmodel.layout import Layout
    >>> from hnowmodel.params import Link, Nic, NodeType, Profile
    >>> t = {k: NodeType(k, 0, 0, 0, 0) for k in ("f", "s")}
    >>> prof = Profile(t, Link(0, 0.1), {("f", "f"): Link(0, 0.01)}, nic={"s": Nic(5.0, 8.0)})
    >>> [c.tolist() for c in host_capacities(prof, Layout(["f", "f", "s"], hosts=[0, 0, 1]), 1000)]
    [[100.0, 5.0], [100.0, 8.0]]
    """
    hosts = hosts_of(layout)
    first = np.unique(hosts, return_index=True)[1]
    types = [layout[int(i)] for i in first]
    eg, ig = capacities(profile, types, m)
    for h, t in enumerate(types):
        nic = profile.nic.get(t)
        if nic is not None:
            eg[h], ig[h] = nic.egress_bytes_per_us, nic.ingress_bytes_per_us
    return eg, ig


def max_min_rates(
    src: np.ndarray,
    dst: np.ndarray,
    cap_flow: np.ndarray,
    egress: np.ndarray,
    ingress: np.ndarray,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rates (bytes/µs) of flows ``src[f] -> dst[f]`` by progressive filling.

    Every flow crosses its sender's egress link and its receiver's ingress link (capacities in bytes/µs, per rank)
    and is capped at ``cap_flow[f]``. All unfrozen flows grow together (flow f at ``weight[f]`` times the common
    level: weighted max-min; default all 1); a link that fills freezes its flows, a flow that reaches its cap
    freezes alone; repeat until every flow is frozen (at most one round per flow).

    >>> r = max_min_rates(np.array([0, 0]), np.array([1, 2]), np.array([np.inf, np.inf]),
    ...                   np.array([10.0, 10, 10]), np.array([10.0, 10, 2]))
    >>> r.tolist()   # the slow receiver gets 2, the other takes what its sender has left
    [8.0, 2.0]
    """
    nf = src.size
    rate = np.zeros(nf)
    if nf == 0:
        return rate
    n = egress.size
    link_cap = np.concatenate([egress, ingress]).astype(float)
    rem = link_cap.copy()
    lk = np.stack([src, n + dst])  # (2, nf): the two links of each flow
    w = np.ones(nf) if weight is None else np.asarray(weight, dtype=float)
    frozen = np.zeros(nf, dtype=bool)
    for _ in range(nf + 1):
        live = ~frozen
        if not live.any():
            break
        cnt = np.bincount(lk[:, live].ravel(), np.tile(w[live], 2), minlength=2 * n)
        used = cnt > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(used, rem / np.where(used, cnt, 1), _INF)
        d = min(float(share.min()), float(((cap_flow[live] - rate[live]) / w[live]).min()))
        if not math.isfinite(d):
            raise ProfileError(
                "a flow has no finite capacity on its path (every Xm is 0): set the links' Xm_us_per_byte"
            )
        d = max(d, 0.0)
        rate[live] += d * w[live]
        rem -= d * cnt
        full = used & np.isfinite(link_cap) & (rem <= 1e-12 * np.maximum(link_cap, 1.0))
        hit = full[lk].any(axis=0) | (rate >= cap_flow * (1 - 1e-12))
        frozen |= hit & live
    return rate


@dataclass(frozen=True)
class FlowRecord:
    """One message of a simulated collective: ``src`` sent ``nbytes`` to ``dst``; its flow ran from ``start_us``
    (posted and, for rendezvous, matched) to ``end_us`` (last byte through both links), delivered at
    ``delivered_us`` (``end_us + Xc``); ``rendezvous`` says whether it waited for the posted receive."""

    src: int
    dst: int
    nbytes: float
    start_us: float
    end_us: float
    delivered_us: float
    rendezvous: bool


# ---- the event-driven fluid network ------------------------------------------------------------------------
class _Flow:
    """One flow: its links (``e`` egress, ``i`` ingress), bytes left ``rem`` as of ``t_rem`` (it moves at ``rate``
    since), the tolerance under which it is through, and ``ver``, bumped whenever ``rem`` or ``rate`` changes (its
    entries in the network's heaps carry the version they were made at)."""

    __slots__ = ("src", "dst", "e", "i", "nbytes", "tol", "rem", "t_rem", "cap", "w", "start", "rdv", "on_done")
    __slots__ += ("rate", "seq", "ver", "alive")

    def __init__(self, src: int, dst: int, nbytes: float, cap: float, start: float, rdv: bool, on_done: Callable):
        self.src, self.dst, self.nbytes, self.rem, self.cap = src, dst, nbytes, nbytes, cap
        self.start, self.rdv, self.on_done, self.rate = start, rdv, on_done, 0.0
        self.tol = 1e-9 * max(nbytes, 1.0)
        self.t_rem = start
        self.w = cap if math.isfinite(cap) else 1.0
        self.e = self.i = self.seq = self.ver = 0
        self.alive = True

    def left(self, t: float) -> float:
        """Bytes left at ``t`` (µs)."""
        return self.rem - self.rate * (t - self.t_rem) if t != self.t_rem else self.rem


def _fill(flows: list[_Flow], cap_link: dict[int, float], caps: list[float], weighted: bool) -> list[float]:
    """Max-min fair rates of ``flows`` (one connected component of the network) by progressive filling, as
    :func:`max_min_rates` does for all flows at once: ``cap_link`` the capacity of each of their links (inf: a link
    with tokens), ``caps`` each flow's own cap."""
    k = len(flows)
    if k == 1:  # the same arithmetic as the rounds below, in one
        f = flows[0]
        w = f.w if weighted else 1.0
        d = min(cap_link[f.e] / w, cap_link[f.i] / w, caps[0] / w)
        if not math.isfinite(d):
            raise ProfileError(
                "a flow has no finite capacity on its path (every Xm is 0): set the links' Xm_us_per_byte"
            )
        return [max(d, 0.0) * w]
    rate = [0.0] * k
    w = [f.w for f in flows] if weighted else [1.0] * k
    es, is_ = [f.e for f in flows], [f.i for f in flows]
    rem = dict(cap_link)
    live = list(range(k))
    for _ in range(k + 1):  # each round freezes at least one flow
        if not live:
            break
        cnt: dict[int, float] = {}
        d = _INF
        for j in live:
            e, i, wj = es[j], is_[j], w[j]
            cnt[e] = cnt.get(e, 0.0) + wj
            cnt[i] = cnt.get(i, 0.0) + wj
            x = (caps[j] - rate[j]) / wj
            if x < d:
                d = x
        for lk, c in cnt.items():
            x = rem[lk] / c
            if x < d:
                d = x
        if not math.isfinite(d):
            raise ProfileError(
                "a flow has no finite capacity on its path (every Xm is 0): set the links' Xm_us_per_byte"
            )
        d = max(d, 0.0)
        full = set()
        for lk, c in cnt.items():
            r = rem[lk] = rem[lk] - d * c
            cl = cap_link[lk]
            if cl != _INF and r <= 1e-12 * max(cl, 1.0):
                full.add(lk)
        nxt = []
        for j in live:
            r = rate[j] = rate[j] + d * w[j]
            if not (es[j] in full or is_[j] in full or r >= caps[j] * (1 - 1e-12)):
                nxt.append(j)
        live = nxt
    return rate


class Network:
    """Timers plus a fluid network of max-min shared links with token buckets (times in µs, bytes, bytes/µs).

    Links are indexed ``0..n-1`` (egress of host h) and ``n..2n-1`` (ingress of host h); ``hosts[r]`` is rank
    ``r``'s host (None: a host per rank). A link whose bucket holds tokens passes bytes at memory speed (it
    constrains nothing, and a flow through two such links moves what both buckets hold at once); its tokens drain
    at ``throughput - capacity`` and the link is shaped again when they run out (an event). A bucket refills at
    ``capacity - throughput`` up to ``burst``.

    The cost of an event is that of the flows it touches: rates are recomputed only for the connected components
    (flows linked by shared links) of the links whose flows or shaping changed (max-min fairness decomposes over
    them), a flow's bytes and a bucket's tokens are kept as a value at a time plus a rate, and the next finish and
    the next bucket to empty or refill come from heaps. Every event still lets each flow whose two buckets both
    hold tokens take them at once.
    """

    def __init__(
        self,
        egress: np.ndarray,
        ingress: np.ndarray,
        burst: float,
        weighted: bool = False,
        hosts: np.ndarray | None = None,
    ) -> None:
        self.n = egress.size
        self.host = list(range(self.n)) if hosts is None else [int(h) for h in hosts]
        self.weighted = weighted
        self.cap = [float(c) for c in np.concatenate([egress, ingress])]
        nl = len(self.cap)
        self.burst = burst
        self.tok_eps = 1e-9 * burst + 1e-9
        # each bucket: tokens tok[l] at t_tok[l], then refilling at fill[l] (negative: draining) up to burst
        self.tok = [float(burst)] * nl  # every bucket starts full (timing loops leave time to refill)
        self.t_tok = [0.0] * nl
        self.fill = [0.0] * nl
        self.on_link: list[dict[_Flow, None]] = [{} for _ in range(nl)]
        self.now = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = 0
        self.n_active = 0
        self.dirty: set[int] = set()  # links whose component's rates must be recomputed
        self.fins: list[tuple[float, int, int, _Flow]] = []  # (when it is through, seq, ver, flow)
        self.dues: list[tuple[float, int, int, _Flow]] = []  # (when its bytes left fall under its tolerance, ...)
        self.refills: list[tuple[float, int, int]] = []  # (when a shaped bucket passes tok_eps, link, stamp)
        self.stamp = [0] * nl
        self.draining: dict[int, None] = {}  # links with tokens and flows that take more than the capacity
        self.grabbing: dict[_Flow, None] = {}  # flows both of whose buckets may hold tokens
        self.records: list[FlowRecord] = []

    def at(self, t: float, fn: Callable[[], None]) -> None:
        """Run ``fn()`` at time ``t`` (µs; not before now)."""
        heapq.heappush(self.timers, (max(t, self.now), self.seq, fn))
        self.seq += 1

    def flow(self, t: float, src: int, dst: int, nbytes: float, cap: float, rdv: bool, on_done: Callable) -> None:
        """Start a flow of ``nbytes`` from rank ``src`` to rank ``dst`` at ``t`` through ``src``'s host's egress and
        ``dst``'s host's ingress, capped at ``cap`` bytes/µs while both of its links are shaped;
        ``on_done(t_end, flow)`` when its last byte is through."""

        def start() -> None:
            f = _Flow(src, dst, float(nbytes), cap, self.now, rdv, on_done)
            f.e, f.i = self.host[src], self.n + self.host[dst]
            f.seq = self.seq
            self.seq += 1
            self.on_link[f.e][f] = None
            self.on_link[f.i][f] = None
            self.n_active += 1
            self.dirty.update((f.e, f.i))
            if self.burst > 0:
                self.grabbing[f] = None
            self._watch(f)  # an empty message is through at once

        self.at(t, start)

    def transfer(
        self, t: float, src: int, dst: int, nbytes: float, duration: float, rdv: bool, on_done: Callable
    ) -> None:
        """A message that touches no link (between two ranks of one host, through shared memory): it starts at
        ``t`` and its last byte is through ``duration`` µs later, whatever the links carry; then ``on_done(t_end,
        flow)``."""

        def start() -> None:
            f = _Flow(src, dst, float(nbytes), _INF, self.now, rdv, on_done)
            f.rem, f.alive = 0.0, False
            t_end = self.now + duration
            self.at(t_end, lambda: on_done(t_end, f))

        self.at(t, start)

    # ---- buckets ----
    def _tokens(self, lk: int, t: float) -> float:
        dt = t - self.t_tok[lk]
        if dt <= 0:
            return self.tok[lk]
        return min(self.burst, max(0.0, self.tok[lk] + self.fill[lk] * dt))

    def _settle(self, lk: int) -> None:
        """Bring link ``lk``'s bucket to now."""
        self.tok[lk] = self._tokens(lk, self.now)
        self.t_tok[lk] = self.now

    def _may_hold(self, lk: int) -> bool:
        """Whether link ``lk``'s bucket holds tokens now or will after any time passes."""
        return self.tok[lk] > 0 or self.fill[lk] > 0

    # ---- rates ----
    def _component(self, links: set[int]) -> tuple[list[_Flow], set[int]]:
        """The flows connected to ``links`` through shared links, in the order they started, and their links."""
        seen_links = set(links)
        todo = list(links)
        flows: dict[_Flow, None] = {}
        while todo:
            lk = todo.pop()
            for f in self.on_link[lk]:
                if f not in flows:
                    flows[f] = None
                    for o in (f.e, f.i):
                        if o not in seen_links:
                            seen_links.add(o)
                            todo.append(o)
        return sorted(flows, key=_SEQ), seen_links

    def _rates(self) -> None:
        """Recompute the rates of the components of the dirty links, and their buckets' fill rates and watches."""
        flows, links = self._component(self.dirty)
        self.dirty = set()
        now, burst, eps, cap = self.now, self.burst, self.tok_eps, self.cap
        tok, t_tok, fill = self.tok, self.t_tok, self.fill
        shaped: dict[int, bool] = {}
        for lk in links:  # bring each bucket to now
            if burst > 0:
                dt = now - t_tok[lk]
                if dt > 0:
                    tok[lk] = min(burst, max(0.0, tok[lk] + fill[lk] * dt))
                    t_tok[lk] = now
            shaped[lk] = tok[lk] <= eps
        thr = dict.fromkeys(links, 0.0)
        if flows:
            cap_link = {lk: (cap[lk] if shaped[lk] else _INF) for lk in links}
            caps = [f.cap if shaped[f.e] and shaped[f.i] else _INF for f in flows]
            for f, r in zip(flows, _fill(flows, cap_link, caps, self.weighted), strict=True):
                thr[f.e] += r
                thr[f.i] += r
                if r != f.rate:
                    if now != f.t_rem:
                        f.rem -= f.rate * (now - f.t_rem)
                        f.t_rem = now
                    f.rate = r
                    self._watch(f)
        if burst <= 0:
            return
        on_link, draining, stamp = self.on_link, self.draining, self.stamp
        for lk, th in thr.items():  # each bucket's fill rate, and when its shaping may change
            c = cap[lk]
            fl = c - th
            if abs(fl) <= 1e-12 * c:  # a link its flows fill: rounding must not make tokens out of nothing
                fl = 0.0
            fill[lk] = fl
            stamp[lk] += 1
            draining.pop(lk, None)
            if not on_link[lk]:
                continue
            if tok[lk] <= eps:
                if fl > 0:
                    t = now + (eps - tok[lk]) / fl if c != _INF else now
                    heapq.heappush(self.refills, (t, lk, stamp[lk]))
            elif fl < 0:
                draining[lk] = None
        for f in flows:
            e, i = f.e, f.i
            if (tok[e] > 0 or fill[e] > 0) and (tok[i] > 0 or fill[i] > 0):
                self.grabbing[f] = None

    def _watch(self, f: _Flow) -> None:
        """New entries for flow ``f`` in the heaps of finishes and of flows under their tolerance."""
        f.ver += 1
        if f.rate > 0:
            heapq.heappush(self.fins, (f.t_rem + f.rem / f.rate, f.seq, f.ver, f))
            heapq.heappush(self.dues, (f.t_rem + (f.rem - f.tol) / f.rate, f.seq, f.ver, f))
        elif f.rem <= f.tol:
            heapq.heappush(self.dues, (f.t_rem, f.seq, f.ver, f))

    # ---- events ----
    def _bursts(self) -> None:
        """Let every flow take what both of its links' buckets hold, at memory speed (no time passes)."""
        if not self.grabbing:
            return
        now = self.now
        for f in sorted(self.grabbing, key=_SEQ):
            e, i = f.e, f.i
            te, ti = self._tokens(e, now), self._tokens(i, now)
            rem = f.left(now)
            take = min(te, ti, rem)
            if take > 0:
                self._settle(e)
                self._settle(i)
                self.tok[e] -= take
                self.tok[i] -= take
                f.rem, f.t_rem = rem - take, now
                self._watch(f)
                self.dirty.update((e, i))
            elif not (self._may_hold(e) and self._may_hold(i)):
                del self.grabbing[f]

    def _through(self) -> list[_Flow]:
        """The flows whose bytes left are under their tolerance now, in the order they started."""
        now, heap = self.now, self.dues
        out, back = [], []
        slack = 1e-9 * (abs(now) + 1.0)
        while heap and heap[0][0] <= now + slack:
            item = heapq.heappop(heap)
            f = item[3]
            if not f.alive or item[2] != f.ver:
                continue
            (out if f.left(now) <= f.tol else back).append(f)
            if out and out[-1] is f:
                f.alive = False
        for f in back:
            heapq.heappush(heap, (f.t_rem + (f.rem - f.tol) / f.rate if f.rate > 0 else now, f.seq, f.ver, f))
        out.sort(key=_SEQ)
        return out

    def _next_finish(self) -> float:
        heap = self.fins
        while heap and (not heap[0][3].alive or heap[0][2] != heap[0][3].ver):
            heapq.heappop(heap)
        return heap[0][0] if heap else _INF

    def _next_exhaustion(self) -> float:
        """When the next bucket that is draining runs out (µs), or inf."""
        if not self.draining:
            return _INF
        return min(self.t_tok[lk] + self.tok[lk] / -self.fill[lk] for lk in self.draining)

    def _advance(self, t: float) -> None:
        """Move the clock to ``t``; buckets that ran out or refilled past ``tok_eps`` make their components dirty."""
        eps = self.tok_eps
        out: list[int] = []
        if self.draining:
            # a bucket whose time to run out has come is empty, also when rounding puts that time at now
            out = [lk for lk in self.draining if self.t_tok[lk] + self.tok[lk] / -self.fill[lk] <= t]
        if t <= self.now and not out:
            return
        self.now = max(self.now, t)
        if self.draining:
            for lk in out:
                self._settle(lk)
                self.tok[lk] = 0.0
            out += [lk for lk in self.draining if lk not in out and self._tokens(lk, t) <= eps]
            for lk in out:
                del self.draining[lk]
                self.dirty.add(lk)
        heap, later = self.refills, []
        while heap and heap[0][0] < t:
            _, lk, st = heapq.heappop(heap)
            if st == self.stamp[lk] and self.on_link[lk]:
                if self._tokens(lk, t) > eps:
                    self.dirty.add(lk)
                else:  # rounding: not yet, look again at the next event
                    later.append((t, lk, st))
        for item in later:
            heapq.heappush(heap, item)

    def _finish(self, done: list[_Flow]) -> None:
        for f in done:
            self.on_link[f.e].pop(f, None)
            self.on_link[f.i].pop(f, None)
            self.grabbing.pop(f, None)
            self.n_active -= 1
            self.dirty.update((f.e, f.i))
        for f in done:
            f.rem, f.t_rem = f.left(self.now), self.now
            f.on_done(self.now, f)

    def run(self) -> None:
        dues = self.dues
        while True:
            if self.grabbing:
                self._bursts()
            if dues and dues[0][0] <= self.now + 1e-9 * (abs(self.now) + 1.0):
                done = self._through()
                if done:
                    self._finish(done)
                    continue
            if not self.timers and not self.n_active:
                return
            if self.dirty:
                self._rates()
            t = min(self._next_finish(), self.timers[0][0] if self.timers else _INF)
            if self.draining:
                t = min(t, self._next_exhaustion())
            if not math.isfinite(t):
                raise RuntimeError("flow simulation stalled: flows without capacity and nothing scheduled")
            self._advance(t)
            while self.timers and self.timers[0][0] <= t * (1 + 1e-12) + 1e-9:
                heapq.heappop(self.timers)[2]()


def send(sim: Network, cost: MessageCosts, t: float, s: int, r: int, b: float, rdv: bool, on_done: Callable) -> None:
    """Start the ``b``-byte message from rank ``s`` to rank ``r`` at ``t`` (µs): through shared memory, a fixed
    :meth:`~MessageCosts.shm_transfer`, when they share a host; else a flow through their hosts' NICs capped at the
    pair's rate ``1/Xm``. ``on_done(t_end, flow)`` when its last byte is through."""
    if cost.same_host(s, r):
        sim.transfer(t, s, r, b, cost.shm_transfer(s, b), rdv, on_done)
    else:
        sim.flow(t, s, r, b, cost.pair_rate(s, r, b), rdv, on_done)
