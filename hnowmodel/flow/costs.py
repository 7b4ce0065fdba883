"""What each message of the flow model costs its sender, the wire and its receiver (the profile's regimes at the
message's own size; between two ranks of one host the type's shared-memory costs), and the protocol facts:
rendezvous and struct-datatype thresholds."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..layout import hosts_of
from ..params import NetworkTerms, Profile

__all__ = ["MessageCosts"]

_INF = math.inf


class MessageCosts:
    """S, R, C, Xc and the pair rate of each (type, bytes), cached (the profile's regimes at the message's own size).

    A message between two ranks of one host (``layout``'s hosts, :func:`~hnowmodel.layout.hosts_of`) costs the
    type's shared-memory ``S`` and ``R`` (:attr:`~hnowmodel.params.Profile.shm`) and takes a fixed
    :meth:`shm_transfer` instead of a flow through the NICs; pass the peer (``dst``/``src``) to get them."""

    def __init__(self, profile: Profile, layout: Sequence[str]) -> None:
        self.profile = profile
        self.types = [profile.node_type(t) for t in layout]
        self.names = list(layout)
        self.hosts = hosts_of(layout).tolist()
        self._cache: dict[tuple, float] = {}
        self.terms: NetworkTerms = profile.network_terms
        self.burst = self.terms.burst

    def first_send_busy(self, b: float) -> float:
        """What a rank's first send of ``b`` bytes keeps it busy beyond ``S`` (µs):
        :meth:`~hnowmodel.params.NetworkTerms.first_send_busy`."""
        return self.terms.first_send_busy(b)

    def posts(
        self, r: int, t: float, sizes: Sequence[float], dsts: Sequence[int] | None = None
    ) -> tuple[list[float], float]:
        """When rank ``r``, starting at ``t`` (µs), posts each of its messages of ``sizes`` bytes to ``dsts`` (None:
        all to other hosts) in order (each after its ``S``; the ones after its first message to another host also
        after that one's :meth:`first_send_busy`), and when it is done posting."""
        out = []
        first = True
        for i, b in enumerate(sizes):
            d = None if dsts is None else dsts[i]
            t += self.send(r, b, d)
            out.append(t)
            if first and not self.same_host(r, d):  # its NIC bucket's burst went through its own kernel in the call
                t += self.first_send_busy(b)
                first = False
        return out, t

    def same_host(self, s: int, r: int | None) -> bool:
        """Whether ranks ``s`` and ``r`` share a host (None: a peer on another host)."""
        return r is not None and s != r and self.hosts[s] == self.hosts[r]

    def shm_transfer(self, s: int, b: float) -> float:
        """The shared-memory transfer ``X(b)`` (µs) of a ``b``-byte message between two ranks of rank ``s``'s host."""
        return self._get(("Xshm", self.names[s], b), lambda: self.profile.shm_costs(self.names[s]).link.us(b))

    def _get(self, key: tuple, fn: Callable[[], float]) -> float:
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = float(fn())
        return v

    def send(self, r: int, b: float, dst: int | None = None) -> float:
        """Rank ``r``'s send overhead ``S`` (µs) for ``b`` bytes to ``dst`` (shared memory when on its host)."""
        if self.same_host(r, dst):
            return self._get(("Sshm", self.names[r], b), lambda: self.profile.shm_costs(self.names[r]).node.send_us(b))
        return self._get(("S", self.names[r], b), lambda: self.types[r].send_us(b))

    def recv(self, r: int, b: float, src: int | None = None) -> float:
        """Rank ``r``'s receive overhead ``R`` (µs) for ``b`` bytes from ``src`` (shared memory when on its host)."""
        if self.same_host(r, src):
            return self._get(("Rshm", self.names[r], b), lambda: self.profile.shm_costs(self.names[r]).node.recv_us(b))
        return self._get(("R", self.names[r], b), lambda: self.types[r].recv_us(b))

    def copy(self, r: int, b: float) -> float:
        return self._get(("C", self.names[r], b), lambda: self.types[r].copy_us(b))

    def latency(self, s: int, r: int, b: float) -> float:
        """``Xc`` (µs) from a message's last byte through the network to its delivery; 0 between two ranks of one
        host (their whole transfer is :meth:`shm_transfer`)."""
        if self.same_host(s, r):
            return 0.0
        return self._get(("Xc", self.names[s], self.names[r], b), lambda: self._link(s, r, b).Xc_us)

    def pair_rate(self, s: int, r: int, b: float) -> float:
        """The lone-flow rate of the pair (bytes/µs), ``1/Xm`` at ``b`` bytes (infinite when Xm is 0)."""

        def rate() -> float:
            xm = self._link(s, r, b).Xm_us_per_byte
            return 1.0 / xm if xm > 0 else _INF

        return self._get(("rate", self.names[s], self.names[r], b), rate)

    def _link(self, s: int, r: int, b: float):
        return self.profile.link(self.names[s], self.names[r]).regime_at(b)

    def rendezvous(self, b: float) -> bool:
        """Whether a ``b``-byte message goes by rendezvous (waits for the posted receive)."""
        thr = self.profile.rendezvous_from_bytes
        return thr is not None and b >= thr

    def struct_rendezvous_from(self) -> float:
        """From which size (bytes) a struct-datatype message waits for the posted receive
        (:attr:`~hnowmodel.params.NetworkTerms.struct_rendezvous_from`)."""
        return self.terms.struct_rendezvous_from
