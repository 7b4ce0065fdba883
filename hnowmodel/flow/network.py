"""The fluid network of the flow model: link capacities from the profile, max-min sharing, and the event-driven
simulation of flows through shaped links with token buckets (times in µs, bytes, bytes/µs)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ProfileError
from ..layout import hosts_of
from ..params import Profile
from .costs import MessageCosts

__all__ = ["FlowRecord", "capacities", "host_capacities", "max_min_rates", "Network", "send"]

_INF = math.inf


def _type_capacities(profile: Profile, m: float) -> tuple[np.ndarray, np.ndarray]:
    """Per type (order of ``profile.types``): egress and ingress capacity in bytes/µs at ``m`` bytes."""
    _, xm = profile.link_matrix(float(m))
    with np.errstate(divide="ignore"):
        rate = np.where(xm > 0, 1.0 / np.where(xm > 0, xm, 1.0), _INF)  # bytes/µs of each (sender, receiver) pair
    return rate.max(axis=1), rate.max(axis=0)


def capacities(profile: Profile, layout: Sequence[str], m: float) -> tuple[np.ndarray, np.ndarray]:
    """Each rank's egress and ingress capacity (bytes/µs) from the profile's per-byte link costs at ``m`` bytes.

    The profile gives one per-byte cost ``Xm`` per (sender type, receiver type) pair; a message's bottleneck is the
    slower of its sender's egress and its receiver's ingress, ``Xm(a, b) = max(1/egress_a, 1/ingress_b)``. Assuming
    that every type's fastest pair is limited by that type itself - true when hosts are symmetric (egress =
    ingress, as a NIC's line rate) - a type's egress is the largest rate it reaches as a sender,
    ``max_b 1/Xm(a, b)``, and its ingress the largest it reaches as a receiver, ``max_a 1/Xm(a, b)``. It breaks when
    a type's egress is faster than every type's ingress (then its egress is underestimated, and two of its flows
    to slow receivers are modelled as sharing a link they do not saturate), and when several ranks share one host
    link (the capacities here are per rank). ``Xm = 0`` means an unlimited link.

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
    __slots__ = ("src", "dst", "e", "i", "nbytes", "rem", "cap", "start", "rdv", "on_done", "rate")

    def __init__(self, src: int, dst: int, nbytes: float, cap: float, start: float, rdv: bool, on_done: Callable):
        self.src, self.dst, self.nbytes, self.rem, self.cap = src, dst, nbytes, nbytes, cap
        self.start, self.rdv, self.on_done, self.rate = start, rdv, on_done, 0.0
        self.e = self.i = 0  # its egress and ingress link


class Network:
    """Timers plus a fluid network of max-min shared links with token buckets (times in µs, bytes, bytes/µs).

    Links are indexed ``0..n-1`` (egress of host h) and ``n..2n-1`` (ingress of host h); ``hosts[r]`` is rank
    ``r``'s host (None: a host per rank). A link whose bucket holds
    tokens passes bytes at memory speed (it constrains nothing, and a flow through two such links moves what both
    buckets hold at once); its tokens drain at ``throughput - capacity`` and the link is shaped again when they
    run out (an event). A bucket refills at ``capacity - throughput`` up to ``burst``.
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
        self.link_cap = np.concatenate([egress, ingress]).astype(float)
        self.burst = burst
        self.tok_eps = 1e-9 * burst + 1e-9
        self.tokens = np.full(2 * self.n, burst)  # every bucket starts full (timing loops leave time to refill)
        self.now = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = 0
        self.active: list[_Flow] = []
        self.dirty = False
        self.thr = np.zeros(2 * self.n)  # each link's throughput (bytes/µs) at the current rates
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
            self.active.append(f)
            self.dirty = True

        self.at(t, start)

    def transfer(
        self, t: float, src: int, dst: int, nbytes: float, duration: float, rdv: bool, on_done: Callable
    ) -> None:
        """A message that touches no link (between two ranks of one host, through shared memory): it starts at
        ``t`` and its last byte is through ``duration`` µs later, whatever the links carry; then ``on_done(t_end,
        flow)``."""

        def start() -> None:
            f = _Flow(src, dst, float(nbytes), _INF, self.now, rdv, on_done)
            f.rem = 0.0
            t_end = self.now + duration
            self.at(t_end, lambda: on_done(t_end, f))

        self.at(t, start)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = len(self.active)
        src = np.fromiter((f.e for f in self.active), dtype=np.int64, count=k)
        dst = np.fromiter((f.i - self.n for f in self.active), dtype=np.int64, count=k)
        rate = np.fromiter((f.rate for f in self.active), dtype=float, count=k)
        return src, dst, rate

    def _shaped(self) -> np.ndarray:
        return self.tokens <= self.tok_eps

    def _advance(self, t: float) -> None:
        dt = t - self.now
        if dt > 0:
            if self.burst > 0:
                before = self._shaped()
                self.tokens = np.clip(self.tokens + (self.link_cap - self.thr) * dt, 0.0, self.burst)
                if (before != self._shaped()).any():
                    self.dirty = True
            for f in self.active:
                f.rem -= f.rate * dt
        self.now = max(self.now, t)

    def _bursts(self) -> None:
        """Let every flow take what both of its links' buckets hold, at memory speed (no time passes)."""
        if self.burst <= 0:
            return
        tok = self.tokens
        for f in self.active:
            e, i = f.e, f.i
            take = min(tok[e], tok[i], f.rem)
            if take > 0:
                f.rem -= take
                tok[e] -= take
                tok[i] -= take
                self.dirty = True

    def _rates(self) -> None:
        src, dst, _ = self._arrays()
        shaped = self._shaped()
        cap_link = np.where(shaped, self.link_cap, _INF)
        both = shaped[src] & shaped[self.n + dst]
        cap = np.fromiter((f.cap for f in self.active), dtype=float, count=src.size)
        w = np.where(np.isfinite(cap), cap, 1.0) if self.weighted else None
        rate = max_min_rates(src, dst, np.where(both, cap, _INF), cap_link[: self.n], cap_link[self.n :], w)
        for f, r in zip(self.active, rate.tolist(), strict=True):
            f.rate = r
        self.thr = np.bincount(src, rate, 2 * self.n) + np.bincount(self.n + dst, rate, 2 * self.n)
        self.dirty = False

    def _next_exhaustion(self) -> float:
        """When the next bucket that is draining runs out (µs), or inf."""
        if self.burst <= 0 or not self.active:
            return _INF
        drain = self.thr - self.link_cap
        live = (drain > 0) & ~self._shaped()
        if not live.any():
            return _INF
        return self.now + float((self.tokens[live] / drain[live]).min())

    def run(self) -> None:
        while True:
            self._bursts()
            done = [f for f in self.active if f.rem <= 1e-9 * max(f.nbytes, 1.0)]
            if done:
                self.active = [f for f in self.active if f.rem > 1e-9 * max(f.nbytes, 1.0)]
                self.dirty = True
                for f in done:
                    f.on_done(self.now, f)
                continue
            if not self.timers and not self.active:
                return
            if self.dirty:
                if self.active:
                    self._rates()
                else:
                    self.thr = np.zeros(2 * self.n)
                    self.dirty = False
            t_fin = min((self.now + f.rem / f.rate for f in self.active if f.rate > 0), default=_INF)
            t_tim = self.timers[0][0] if self.timers else _INF
            t = min(t_fin, t_tim, self._next_exhaustion())
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
