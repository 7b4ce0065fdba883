"""What each message of the flow model costs its sender, the wire and its receiver (the profile's regimes at the
message's own size), and the protocol facts: rendezvous and struct-datatype thresholds."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..params import NetworkTerms, Profile

__all__ = ["MessageCosts"]

_INF = math.inf


class MessageCosts:
    """S, R, C, Xc and the pair rate of each (type, bytes), cached (the profile's regimes at the message's own size)."""

    def __init__(self, profile: Profile, layout: Sequence[str]) -> None:
        self.profile = profile
        self.types = [profile.node_type(t) for t in layout]
        self.names = list(layout)
        self._cache: dict[tuple, float] = {}
        self.terms: NetworkTerms = profile.network_terms
        self.burst = self.terms.burst

    def first_send_busy(self, b: float) -> float:
        """What a rank's first send of ``b`` bytes keeps it busy beyond ``S`` (µs):
        :meth:`~hnowmodel.params.NetworkTerms.first_send_busy`."""
        return self.terms.first_send_busy(b)

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

    def rendezvous(self, b: float) -> bool:
        """Whether a ``b``-byte message goes by rendezvous (waits for the posted receive)."""
        thr = self.profile.rendezvous_from_bytes
        return thr is not None and b >= thr

    def struct_rendezvous_from(self) -> float:
        """From which size (bytes) a struct-datatype message waits for the posted receive
        (:attr:`~hnowmodel.params.NetworkTerms.struct_rendezvous_from`)."""
        return self.terms.struct_rendezvous_from
