"""The network as shared links: a flow-level simulation of bcast, scatter and gather over any tree.

The paper's model (:mod:`hnowmodel.predict`) keeps a sender busy ``S`` per message and sends one message after
another. Over TCP that is not what happens: ``MPI_Send`` of tens to hundreds of KiB returns as soon as the kernel's
socket buffers take the data, so a rank's messages to its children are **on the wire at the same time** and share
its outgoing link, and messages converging on one rank share its incoming link. This module models that the way
SimGrid's flow-level network model does:

* every rank has an **egress** and an **ingress** capacity (bytes/µs), derived from the profile's pairwise per-byte
  costs by :func:`capacities`;
* a message is a **flow** through its sender's egress and its receiver's ingress; concurrent flows share every link
  by **max-min fairness** (progressive filling), recomputed at every flow start and finish; a flow is also capped
  at its own pair's rate ``1/Xm`` (so a lone flow takes exactly the profile's ``Xm·bytes``);
* a sender **posts all its sends at once** once it holds the data: the k-th send starts after the first k send
  overheads ``S`` (in the tree's send order); a message is delivered ``Xc`` after its last byte left, and the
  receiver then pays ``R``;
* **eager vs rendezvous** from ``profile.rendezvous_from_bytes``: a rendezvous message flows only once its receiver
  has posted the matching receive. That matters for gather (``recv_order``): the tree executor posts one receive
  per child up front, so they all flow at once; a parent that posts its receives one after another (in arrival
  order, as ``MPI_ANY_SOURCE`` receives do, or in a fixed order such as MPICH's binomial gather, smallest subtree
  first) lets each flow only in its turn; in bcast and scatter a receiver has always posted its one receive already;
* a **token bucket** per link (Linux ``tbf``): every link starts with a full bucket of ``burst_bytes``
  (``profile.extensions["network"]["burst_bytes"]``, default 0); bytes pass a link with tokens at memory speed
  (instantly here) and use them up; a bucket refills at the link's capacity minus what the link carries, up to
  ``burst_bytes``. A lone message of ``b`` bytes thus takes ``(b - burst)·Xm`` instead of ``b·Xm``;
* what passes at once costs its **sender** time: a rank's first send finds its egress bucket full, and its own
  kernel pushes those packets through the network inside the call, so it posts its next send
  ``burst_send_us + burst_send_us_per_byte · min(b, burst_bytes)`` later (``profile.extensions["network"]``,
  default 0; measured by a calibration on a network as a send after idling minus ``S``: :func:`burst_send`).

Evaluated per size, event by event (a few hundred events for 100 ranks; max-min filling is vectorised with
numpy over the flows), it is fine for tens to a few hundred ranks; for thousands of ranks use the paper's
variants, which are vectorised over ranks.

>>> import hnowmodel as hm
>>> from hnowmodel.params import Link, NodeType, Profile
>>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))   # 100 bytes/µs on every link
>>> tree = hm.trees.sequential(3)                                     # the root sends to ranks 1 and 2 at once
>>> bcast(prof, ["f"] * 3, tree, [1000], per_rank=True).round(6).tolist()   # they share its egress: 2·m/c each
[[0.0, 20.0, 20.0]]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .errors import InputError, ProfileError
from .params import Profile
from .predict import as_sizes
from .trees import Tree, make_tree

__all__ = [
    "OPS",
    "RECV_ORDERS",
    "SHARINGS",
    "FlowRecord",
    "FlowRun",
    "burst_bytes",
    "queued_bytes",
    "burst_send",
    "capacities",
    "max_min_rates",
    "simulate",
    "bcast",
    "scatter",
    "gather",
]

OPS = ("bcast", "scatter", "gather")
#: How a gather's parent posts its receives: ``posted`` (one receive per child, all posted when the parent starts,
#: completed in arrival order: the tree executor and ``calibrate.treecoll`` on MPI, ``Irecv`` + ``Waitany``; a
#: rendezvous message flows as soon as it is sent), ``arrival`` (one receive at a time from any child, matching
#: whichever message or rendezvous request came first: ``MPI_ANY_SOURCE``, as the emulated testbed's transport
#: receives), ``tree`` (the tree's send order), ``smallest_first`` (ascending subtree size, ties in reverse send
#: order: MPICH's binomial gather).
RECV_ORDERS = ("posted", "arrival", "tree", "smallest_first")
#: How concurrent flows share a link: ``maxmin`` (every flow the same share, SimGrid's flow model), ``weighted``
#: (weighted max-min, each flow's share proportional to its own lone rate ``1/Xm``) or ``fifo`` (bcast and scatter:
#: a sender's messages leave its egress one after another in send order, each at the egress rate, and each
#: receiver's ingress drains its own: one FIFO queue per shaped link, as Linux ``tbf`` has; :func:`_downward_queued`)
#: or ``rr`` (bcast and scatter: a sender's egress serves its queued messages round-robin, packet by packet, an
#: equal share each whatever their receivers take, and each receiver's ingress drains its own queue: what a host
#: whose sockets may each hold only a few packets below TCP does, as the virtual cluster's hosts do; see
#: :func:`_downward_queued`).
SHARINGS = ("maxmin", "weighted", "fifo", "rr")

_INF = math.inf


# ---- inputs from the profile -----------------------------------------------------------------------------------
def _network_bytes(profile: Profile, key: str, unit: str = "bytes") -> float:
    """``profile.extensions["network"][key]``, a number >= 0 (of ``unit``); 0 when absent or null."""
    net = (profile.extensions or {}).get("network", {})
    if not isinstance(net, dict):
        raise ProfileError("profile.extensions.network: must be an object")
    v = net.get(key, 0)
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ProfileError(f"profile.extensions.network.{key}: must be a number of {unit} >= 0, got {v!r}")
    return float(v)


def burst_bytes(profile: Profile) -> float:
    """The links' token-bucket burst (bytes) from ``profile.extensions["network"]["burst_bytes"]``; 0 when absent.

    >>> from hnowmodel.params import paper_profile
    >>> burst_bytes(paper_profile())
    0.0
    """
    return _network_bytes(profile, "burst_bytes")


def queued_bytes(profile: Profile) -> float:
    """How many bytes of each message a sender hands its link's queue at once (payload bytes; the rest follows
    as the queue drains, round-robin with its other connections) from
    ``profile.extensions["network"]["queued_bytes"]``; 0 when absent. Used by the ``rr`` sharing.

    >>> from hnowmodel.params import paper_profile
    >>> queued_bytes(paper_profile())
    0.0
    """
    return _network_bytes(profile, "queued_bytes")


def burst_send(profile: Profile) -> tuple[float, float]:
    """How long a rank's first send after idling keeps it busy beyond ``S``: ``(us, us_per_byte)`` from
    ``profile.extensions["network"]`` (``burst_send_us``, ``burst_send_us_per_byte``), each 0 when absent; the
    busy time of a ``b``-byte first send is ``us + us_per_byte · min(b, burst_bytes)`` (µs).

    >>> from hnowmodel.params import paper_profile
    >>> burst_send(paper_profile())
    (0.0, 0.0)
    """
    return _network_bytes(profile, "burst_send_us", "µs"), _network_bytes(
        profile, "burst_send_us_per_byte", "µs per byte"
    )


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


# ---- results ---------------------------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class FlowRun:
    """One simulated collective at one size: ``done_us[i]`` is when rank i holds its data (bcast/scatter: its
    message, after ``R``; the root 0, or with ``root_copy`` when its sends are posted and its own block copied;
    gather: its whole subtree's data, leaves 0), ``completion_us`` the max over ranks (gather: the root's), and
    every message's :class:`FlowRecord` in the order the flows finished."""

    op: str
    size_bytes: float
    done_us: np.ndarray
    completion_us: float
    flows: tuple[FlowRecord, ...]


# ---- the event-driven fluid network ------------------------------------------------------------------------
class _Flow:
    __slots__ = ("src", "dst", "nbytes", "rem", "cap", "start", "rdv", "on_done", "rate")

    def __init__(self, src: int, dst: int, nbytes: float, cap: float, start: float, rdv: bool, on_done: Callable):
        self.src, self.dst, self.nbytes, self.rem, self.cap = src, dst, nbytes, nbytes, cap
        self.start, self.rdv, self.on_done, self.rate = start, rdv, on_done, 0.0


class _Sim:
    """Timers plus a fluid network of max-min shared links with token buckets (times in µs, bytes, bytes/µs).

    Links are indexed ``0..n-1`` (egress of rank i) and ``n..2n-1`` (ingress of rank i). A link whose bucket holds
    tokens passes bytes at memory speed (it constrains nothing, and a flow through two such links moves what both
    buckets hold at once); its tokens drain at ``throughput - capacity`` and the link is shaped again when they
    run out (an event). A bucket refills at ``capacity - throughput`` up to ``burst``.
    """

    def __init__(self, egress: np.ndarray, ingress: np.ndarray, burst: float, sharing: str = "maxmin") -> None:
        self.n = egress.size
        self.sharing = sharing
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
        """Start a flow of ``nbytes`` from ``src`` to ``dst`` at ``t``, capped at ``cap`` bytes/µs while both of
        its links are shaped; ``on_done(t_end, flow)`` when its last byte is through."""

        def start() -> None:
            self.active.append(_Flow(src, dst, float(nbytes), cap, self.now, rdv, on_done))
            self.dirty = True

        self.at(t, start)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = len(self.active)
        src = np.fromiter((f.src for f in self.active), dtype=np.int64, count=k)
        dst = np.fromiter((f.dst for f in self.active), dtype=np.int64, count=k)
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
            e, i = f.src, self.n + f.dst
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
        w = np.where(np.isfinite(cap), cap, 1.0) if self.sharing == "weighted" else None
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


# ---- per-message costs -----------------------------------------------------------------------------------------
class _Costs:
    """S, R, C, Xc and the pair rate of each (type, bytes), cached (the profile's regimes at the message's own size)."""

    def __init__(self, profile: Profile, layout: Sequence[str]) -> None:
        self.profile = profile
        self.types = [profile.node_type(t) for t in layout]
        self.names = list(layout)
        self._cache: dict[tuple, float] = {}
        self.burst, self._burst_send = burst_bytes(profile), burst_send(profile)

    def first_send_busy(self, b: float) -> float:
        """What a rank's first send of ``b`` bytes keeps it busy beyond ``S`` (µs): a constant for a send after
        idling, and the bytes its full egress bucket passes at once, which go through its own kernel in the call."""
        us, per_byte = self._burst_send
        return us + per_byte * min(self.burst, b)

    def posts(self, r: int, t: float, sizes: Sequence[float]) -> tuple[list[float], float]:
        """When rank ``r``, starting at ``t`` (µs), posts each of its messages of ``sizes`` bytes in order (each
        after its ``S``; the second and later also after the first's :meth:`first_send_busy`), and when it is done
        posting."""
        out = []
        for i, b in enumerate(sizes):
            t += self.send(r, b)
            out.append(t)
            if i == 0:  # its bucket's burst went through this rank's own kernel inside the call
                t += self.first_send_busy(b)
        return out, t

    def _get(self, key: tuple, fn: Callable[[], float]) -> float:
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = float(fn())
        return v

    def send(self, r: int, b: float) -> float:
        return self._get(("S", self.names[r], b), lambda: self.types[r].send_us(b))

    def recv(self, r: int, b: float) -> float:
        return self._get(("R", self.names[r], b), lambda: self.types[r].recv_us(b))

    def copy(self, r: int, b: float) -> float:
        return self._get(("C", self.names[r], b), lambda: self.types[r].copy_us(b))

    def latency(self, s: int, r: int, b: float) -> float:
        return self._get(("Xc", self.names[s], self.names[r], b), lambda: self._link(s, r, b).Xc_us)

    def pair_rate(self, s: int, r: int, b: float) -> float:
        """The lone-flow rate of the pair (bytes/µs), ``1/Xm`` at ``b`` bytes (infinite when Xm is 0)."""

        def rate() -> float:
            xm = self._link(s, r, b).Xm_us_per_byte
            return 1.0 / xm if xm > 0 else _INF

        return self._get(("rate", self.names[s], self.names[r], b), rate)

    def _link(self, s: int, r: int, b: float):
        return self.profile.link(self.names[s], self.names[r]).regime_at(b)


def _rendezvous(profile: Profile, b: float) -> bool:
    thr = profile.rendezvous_from_bytes
    return thr is not None and b >= thr


def _struct_rendezvous_from(profile: Profile) -> float:
    """From which size (bytes) a struct-datatype message waits for the posted receive: the network calibration's
    ``extensions.network.struct_rendezvous_from_bytes`` (null there: never); 0 (always) when the profile does not
    say (profiles calibrated before it was measured)."""
    net = profile.extensions.get("network") or {}
    if "struct_rendezvous_from_bytes" not in net:
        return 0.0
    thr = net["struct_rendezvous_from_bytes"]
    return math.inf if thr is None else float(thr)


# ---- the collectives ---------------------------------------------------------------------------------------
def _downward(
    sim: _Sim, cost: _Costs, tree: Tree, edge_bytes: np.ndarray, m: float, root_copy: bool, copy_first: bool = False
) -> np.ndarray:
    """bcast/scatter: each rank, once it holds its data, posts its sends to its children in send order (each after
    its ``S``, the second and later also after the first's :meth:`_Costs.first_send_busy`); the root's
    copy of its own block (``root_copy``) comes after its sends, or before them with ``copy_first`` (Open MPI)."""
    done = np.full(tree.n, np.nan)
    done[tree.root] = 0.0
    children = tree.children

    def holds(p: int, t: float) -> None:
        sizes = [float(edge_bytes[c]) for c in children[p]]
        posted, acc = cost.posts(p, t, sizes)
        for c, b, at in zip(children[p], sizes, posted, strict=True):
            sim.flow(at, p, c, b, cost.pair_rate(p, c, b), _rendezvous(cost.profile, b), arrived(p, c, b))
        if p == tree.root and root_copy:
            done[p] = acc if copy_first else acc + cost.copy(p, m)

    def arrived(p: int, c: int, b: float) -> Callable:
        def on_done(t_end: float, f: _Flow) -> None:
            t_del = t_end + cost.latency(p, c, b)
            sim.records.append(FlowRecord(p, c, b, float(f.start), float(t_end), float(t_del), f.rdv))
            done[c] = t_del + cost.recv(c, b)
            sim.at(done[c], lambda: holds(c, done[c]))

        return on_done

    start = cost.copy(tree.root, m) if root_copy and copy_first else 0.0
    sim.at(start, lambda: holds(tree.root, start))
    sim.run()
    return done


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


def _fifo(
    arrive: Sequence[float], size: Sequence[float], c: float, burst: float
) -> tuple[list[list[tuple[float, float]]], list[float]]:
    """One egress link as a FIFO (``tbf``): message k is queued whole at ``arrive[k]`` and leaves after the ones
    before it, its bucket's tokens at once, the rest at ``c`` bytes/µs. The same result as :func:`_round_robin`:
    each message's departure curve and when its first byte leaves.

    >>> _fifo([0, 0], [100, 300], 10.0, 0)
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


def _round_robin(
    arrive: Sequence[float], size: Sequence[float], c: float, burst: float, queued: float = 0.0
) -> tuple[list[list[tuple[float, float]]], list[float]]:
    """One egress link served round-robin (processor sharing): message k of ``size[k]`` bytes is queued at
    ``arrive[k]`` (µs, non-decreasing); every queued message leaves at an equal share of ``c`` bytes/µs. A full
    token bucket of ``burst`` bytes passes at once to the messages that find tokens (refilled at ``c`` while the
    link is idle). Returns each message's departure curve, ``(time, bytes left so far)`` points, linear between,
    and when its first byte leaves: a link serves whole packets in turn, and a message queued behind others
    waits for one round of them, the ``queued`` bytes each connection keeps in the link's queue (TCP's small
    queues; the fluid share alone would have it start at once).

    >>> _round_robin([0, 0], [100, 300], 10.0, 0)
    ([[(0.0, 0.0), (20.0, 100.0)], [(0.0, 0.0), (20.0, 100.0), (40.0, 300.0)]], [0.0, 0.0])
    >>> _round_robin([0, 0], [100, 300], 10.0, 0, queued=50)[1]   # the second waits for the first's 50 bytes
    [0.0, 5.0]
    """
    n = len(size)
    curves: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    first = [0.0] * n
    sent = [0.0] * n
    active: list[int] = []
    tokens, t, k = float(burst), 0.0, 0
    finite = math.isfinite(c)
    while k < n or active:
        if not active:  # idle until the next message: the bucket refills
            gap = max(0.0, float(arrive[k]) - t)
            tokens = min(float(burst), tokens + gap * c) if finite else float(burst)
            t = max(t, float(arrive[k]))
        while k < n and arrive[k] <= t:
            ahead = sum(min(queued, float(size[i]) - sent[i]) for i in active)
            first[k] = t + ahead / c if finite else t
            sent[k] = got = min(tokens, float(size[k]))
            tokens -= got
            curves[k].append((t, 0.0))
            if got:
                curves[k].append((t, got))
            if got < size[k]:
                active.append(k)
            k += 1
        if not active:
            continue
        if not finite:
            for i in active:
                sent[i] = float(size[i])
                curves[i].append((t, sent[i]))
            active = []
            continue
        share = c / len(active)
        step = min(float(size[i]) - sent[i] for i in active) / share
        if k < n:
            step = min(step, float(arrive[k]) - t)
        t += step
        for i in active:
            sent[i] = min(float(size[i]), sent[i] + share * step)
            curves[i].append((t, sent[i]))
        active = [i for i in active if sent[i] < float(size[i]) * (1 - 1e-12)]
    return curves, first


def _downward_queued(
    cost: _Costs,
    tree: Tree,
    edge_bytes: np.ndarray,
    m: float,
    root_copy: bool,
    egress: np.ndarray,
    burst: float,
    copy_first: bool,
    serve: Callable[..., tuple[list[list[tuple[float, float]]], list[float]]],
) -> tuple[np.ndarray, list[FlowRecord]]:
    """bcast/scatter with ``sharing="fifo"`` or ``"rr"``: a rank that holds its data queues its messages in its
    egress (the k-th after the first k send overheads ``S``, and the first send's :meth:`_Costs.first_send_busy`),
    which ``serve`` drains: :func:`_fifo` (whole messages
    in send order) or :func:`_round_robin` (an equal share each); a receiver's ingress, shaped at the pair's rate
    ``1/Xm``, passes its bucket's burst as it arrives and queues the rest (a greedy shaper: its output by ``t`` is at
    most ``D(τ) + burst + (t - τ)/Xm`` for every ``τ`` before), so its last byte leaves at the latest of the
    egress's end, the first byte's time + ``(b - burst)·Xm`` and ``τ + (b - D(τ) - burst)·Xm`` over the points
    ``(τ, D)`` of the departure curve. Every rank receives one message, so an ingress never mixes flows. Times from
    the root's start (µs); the root's copy of its own block (``root_copy``) comes after its sends, or before them
    with ``copy_first``."""
    n = tree.n
    done = np.full(n, np.nan)
    done[tree.root] = cost.copy(tree.root, m) if root_copy and copy_first else 0.0
    records: list[FlowRecord] = []
    order = [tree.root]
    for p in order:  # parents before children: a rank's hold time is known when its turn comes
        kids = [int(c) for c in tree.children[p]]
        sizes = [float(edge_bytes[c]) for c in kids]
        arrive, acc = cost.posts(p, float(done[p]), sizes)
        curves, first = serve(arrive, sizes, float(egress[p]), burst)
        for c, curve, t1 in zip(kids, curves, first, strict=True):
            b = float(edge_bytes[c])
            rate = cost.pair_rate(p, c, b)
            start, end = curve[0][0], curve[-1][0]
            last = end
            if math.isfinite(rate):
                last = max(
                    end, t1 + max(0.0, b - burst) / rate, *(tau + max(0.0, b - d - burst) / rate for tau, d in curve)
                )
            delivered = last + cost.latency(p, c, b)
            records.append(FlowRecord(p, c, b, start, last, delivered, False))
            done[c] = delivered + cost.recv(c, b)
            order.append(c)
        if p == tree.root and root_copy:
            done[p] = acc if copy_first else acc + cost.copy(p, m)
    records.sort(key=lambda r: r.end_us)
    return done, records


def _receive_orders(tree: Tree, recv_order: str) -> list[list[int]] | None:
    if recv_order in ("posted", "arrival"):
        return None
    kids = tree.children
    if recv_order == "tree":
        return [list(k) for k in kids]
    size, pos = tree.subtree_size, tree.childrank
    return [sorted(k, key=lambda c: (int(size[c]), -int(pos[c]))) for k in kids]


def _upward(
    sim: _Sim,
    cost: _Costs,
    tree: Tree,
    m: float,
    root_copy: bool,
    recv_order: str,
    relay_waits: bool = False,
    sync: bool = False,
) -> np.ndarray:
    """gather: a rank sends its subtree's data to its parent once it has received all of its children's;
    ``relay_waits``: a rank with children sends a struct datatype, which waits for the parent's posted receive
    from the profile's struct rendezvous size (:func:`_struct_rendezvous_from`)."""
    n, root = tree.n, tree.root
    relay_from = _struct_rendezvous_from(cost.profile) if relay_waits else math.inf
    ready = np.zeros(n)
    children = tree.children
    orders = _receive_orders(tree, recv_order)
    nbytes = tree.subtree_size.astype(float) * m
    # per parent: offered messages (child -> (offer time, seq, kind)), whether a receive is in progress, how many
    # receives are done, and from when it may post its first receive
    offered: list[dict[int, tuple[float, int, str]]] = [{} for _ in range(n)]
    busy = [False] * n
    got = [0] * n
    first_post = [0.0] * n
    if root_copy:
        first_post[root] = cost.copy(root, m)
    seq = [0]

    def send_up(j: int, t: float) -> None:
        p, b = int(tree.parent[j]), float(nbytes[j])
        t_post = t + cost.send(j, b)
        relay_struct = relay_waits and children[j] and b >= relay_from
        # flows only into the parent's posted receive (sync: once the parent has signalled that it is posted)
        waits = sync or _rendezvous(cost.profile, b) or relay_struct
        if waits and recv_order != "posted":
            sim.at(t_post, lambda: offer(p, j, "rdv", t_post))
        else:  # eager, or every receive already posted (from first_post[p]): the data flows now
            t_flow = max(t_post, first_post[p]) if waits else t_post

            def delivered(t_end: float, f: _Flow) -> None:
                t_del = t_end + cost.latency(j, p, b)
                sim.records.append(FlowRecord(j, p, b, float(f.start), float(t_end), float(t_del), bool(waits)))
                sim.at(t_del, lambda: offer(p, j, "eager", t_del))

            sim.flow(t_flow, j, p, b, cost.pair_rate(j, p, b), bool(waits), delivered)

    def offer(p: int, j: int, kind: str, t: float) -> None:
        offered[p][j] = (t, seq[0], kind)
        seq[0] += 1
        match(p)

    def match(p: int) -> None:
        if busy[p] or got[p] == len(children[p]):
            return
        if sim.now < first_post[p]:
            sim.at(first_post[p], lambda: match(p))
            return
        if orders is None:
            if not offered[p]:
                return
            j = min(offered[p], key=lambda c: offered[p][c][:2])
        else:
            j = orders[p][got[p]]
            if j not in offered[p]:
                return
        _, _, kind = offered[p].pop(j)
        busy[p] = True
        b = float(nbytes[j])
        if kind == "eager":
            t_done = sim.now + cost.recv(p, b)
            sim.at(t_done, lambda: complete(p, t_done))
        else:

            def through(t_end: float, f: _Flow) -> None:
                t_del = t_end + cost.latency(j, p, b)
                sim.records.append(FlowRecord(j, p, b, float(f.start), float(t_end), float(t_del), True))
                t_done = t_del + cost.recv(p, b)
                sim.at(t_done, lambda: complete(p, t_done))

            sim.flow(sim.now, j, p, b, cost.pair_rate(j, p, b), True, through)

    def complete(p: int, t: float) -> None:
        busy[p] = False
        got[p] += 1
        if got[p] == len(children[p]):
            ready[p] = max(t, first_post[p])
            if p != root:
                send_up(p, ready[p])
        else:
            match(p)

    def start() -> None:
        for j in range(n):
            if not children[j] and j != root:
                send_up(j, 0.0)
        if not children[root]:
            ready[root] = first_post[root]

    sim.at(0.0, start)
    sim.run()
    return ready


def simulate(
    op: str,
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    size: float,
    *,
    root: int = 0,
    root_copy: bool = False,
    recv_order: str = "posted",
    sharing: str = "maxmin",
    relay_waits: bool = False,
    copy_first: bool = False,
    sync: bool = False,
) -> FlowRun:
    """Simulate ``op`` (bcast, scatter or gather) of ``size`` bytes (per rank for scatter/gather) over ``tree``.

    Returns a :class:`FlowRun` (times in µs from the root's start; gather: from the common start). ``root_copy``
    adds the root's local copy of its own block (scatter: after posting its sends, or before them with
    ``copy_first`` as Open MPI does; gather: before its first receive), ``recv_order`` is how a gather's parents
    post their receives (:data:`RECV_ORDERS`). ``relay_waits`` (gather): a rank that forwards its children's data
    sends it only once its parent has posted the receive, at any size. MPICH's binomial gather does that: a relay
    sends its own block and the received ones as one struct datatype, which MPICH over UCX/TCP moves only into a
    posted receive (measured on the virtual cluster: the root's later children wait for its earlier receives), while
    a leaf's contiguous block flows when ready. ``sync`` (gather): every message, at any size, flows only once its
    parent has posted the receive for it, as Open MPI's linear_sync gather does (the root signals each rank in turn
    with an empty message; the signal's round trip is left out).

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(5, 0.01))
    >>> run = simulate("gather", prof, ["f"] * 3, "sequential", 1000)
    >>> run.completion_us, [(r.src, r.start_us, r.end_us) for r in run.flows]
    (25.0, [(1, 0.0, 20.0), (2, 0.0, 20.0)])
    """
    if op not in OPS:
        raise InputError(f"unknown flow-model operation {op!r} (choose from: {', '.join(OPS)})")
    if sharing not in SHARINGS:
        raise InputError(f"unknown link sharing {sharing!r} (choose from: {', '.join(SHARINGS)})")
    if recv_order not in RECV_ORDERS:
        raise InputError(f"unknown gather receive order {recv_order!r} (choose from: {', '.join(RECV_ORDERS)})")
    if isinstance(tree, str):
        tree = make_tree(tree, len(layout), root=root, layout=layout, profile=profile)
    if len(layout) != tree.n:
        raise InputError(f"layout has {len(layout)} ranks but the tree has {tree.n}")
    m = float(as_sizes(size)[0]) if np.ndim(size) == 0 else None
    if m is None:
        raise InputError(f"simulate takes one size in bytes, got {size!r}")
    per_edge = np.full(tree.n, m) if op == "bcast" else tree.subtree_size.astype(float) * m
    biggest = float(per_edge[tree.parent >= 0].max()) if tree.n > 1 else m
    egress, ingress = capacities(profile, layout, biggest)
    cost = _Costs(profile, layout)
    if sharing in ("fifo", "rr"):
        if op == "gather":
            raise InputError(
                f"{sharing} sharing models bcast and scatter (one message into each rank); use maxmin for gather"
            )
        serve = _fifo if sharing == "fifo" else partial(_round_robin, queued=queued_bytes(profile))
        done, records = _downward_queued(cost, tree, per_edge, m, root_copy, egress, cost.burst, copy_first, serve)
        done.flags.writeable = False
        return FlowRun(op, m, done, float(np.max(done)), tuple(records))
    sim = _Sim(egress, ingress, cost.burst, sharing)
    if op == "gather":
        done = _upward(sim, cost, tree, m, root_copy, recv_order, relay_waits, sync)
        completion = float(done[tree.root])
    else:
        done = _downward(sim, cost, tree, per_edge, m, root_copy, copy_first)
        completion = float(np.max(done))
    done.flags.writeable = False
    return FlowRun(op, m, done, completion, tuple(sim.records))


def _predict(
    op: str, profile: Profile, layout: Sequence[str], tree: Tree | str, sizes: Any, per_rank: bool, root: int, **kw: Any
) -> np.ndarray:
    m = as_sizes(sizes)
    if isinstance(tree, str):
        tree = make_tree(tree, len(layout), root=root, layout=layout, profile=profile)
    runs = [simulate(op, profile, layout, tree, float(mi), root=root, **kw) for mi in m]
    if per_rank:
        return np.array([r.done_us for r in runs]).reshape(m.size, tree.n)
    return np.array([r.completion_us for r in runs], dtype=float)


def bcast(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    *,
    per_rank: bool = False,
    root: int = 0,
    sharing: str = "maxmin",
) -> np.ndarray:
    """Broadcast completion time (µs per size) under the flow model; ``per_rank=True``: ``(len(sizes), n)``, when
    each rank holds the message (root: 0).

    >>> from hnowmodel.params import Link, NodeType, Profile
    >>> prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01))
    >>> bcast(prof, ["f"] * 3, "chain", [1000, 2000]).tolist()   # one message at a time: 2 · Xm · m
    [20.0, 40.0]
    """
    return _predict("bcast", profile, layout, tree, sizes, per_rank, root, sharing=sharing)


def scatter(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    *,
    per_rank: bool = False,
    root: int = 0,
    root_copy: bool = False,
    sharing: str = "maxmin",
    copy_first: bool = False,
) -> np.ndarray:
    """Scatter completion time (µs per size) under the flow model: the edge into a rank carries its subtree's
    blocks; ``root_copy`` adds the root's copy of its own block after it posted its sends (MPICH), or before its
    first send with ``copy_first`` (Open MPI)."""
    return _predict(
        "scatter",
        profile,
        layout,
        tree,
        sizes,
        per_rank,
        root,
        root_copy=root_copy,
        sharing=sharing,
        copy_first=copy_first,
    )


def gather(
    profile: Profile,
    layout: Sequence[str],
    tree: Tree | str,
    sizes: Any,
    *,
    per_rank: bool = False,
    root: int = 0,
    root_copy: bool = False,
    recv_order: str = "posted",
    sharing: str = "maxmin",
    relay_waits: bool = False,
    sync: bool = False,
) -> np.ndarray:
    """Gather completion time (µs per size) under the flow model; ``per_rank=True`` gives when each rank holds its
    whole subtree's data (leaves 0). ``root_copy``: the root copies its own block before its first receive
    (MPICH); ``recv_order``: :data:`RECV_ORDERS` (MPICH's binomial gather is ``smallest_first``); ``relay_waits``,
    ``sync``: see :func:`simulate`."""
    return _predict(
        "gather",
        profile,
        layout,
        tree,
        sizes,
        per_rank,
        root,
        root_copy=root_copy,
        recv_order=recv_order,
        sharing=sharing,
        relay_waits=relay_waits,
        sync=sync,
    )
