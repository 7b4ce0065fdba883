"""What a calibration measures beyond S, R and X: the network terms (:class:`NetworkTerms`: token bucket, the first
send's busy time, queued bytes, the struct rendezvous size), the shared-memory costs between two ranks of one host
(:class:`ShmCosts`) and a host's NIC capacities (:class:`Nic`), with the parsing of a profile's ``hosts``. Units: µs,
bytes and bytes/µs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import ProfileError
from .regimes import Link, LinkRegime, NodeType, Regime
from .schema import _NUMBER, LINK_KEYS, TYPE_KEYS, _lines, _mapping

__all__ = ["NetworkTerms", "Windows", "ShmCosts", "Nic", "parse_hosts"]


@dataclass(frozen=True)
class Windows:
    """The TCP window terms of a profile (``profile.extensions.network``'s ``tcp_*`` keys, bytes and µs): the
    window a new or restarted connection starts with (``initial_bytes``: the route's ``initcwnd`` segments), a warm
    connection's window (``window_bytes``: the median ``cwnd`` the calibration read with ``ss -ti`` once its
    connections had carried its messages), where slow start ends (``ssthresh_bytes``, read the same way), the
    segment size (``mss_bytes``) and the idle restart's timeout floor (``restart_rto_min_us``: Linux's
    ``TCP_RTO_MIN``, 200 ms; None when the hosts do not restart idle connections)."""

    initial_bytes: float
    window_bytes: float
    ssthresh_bytes: float
    mss_bytes: float
    restart_rto_min_us: float | None = None


@dataclass(frozen=True)
class NetworkTerms:
    """The network terms of a profile calibrated on a network: ``profile.extensions["network"]``, parsed and
    validated once (:attr:`Profile.network_terms`). Every field is None when the profile does not state it (a
    stated 0 stays 0), so that a reader can tell an absent term from a measured zero; :attr:`burst` and
    :meth:`first_send_busy` give the model's values (absent terms count as 0).

    * ``burst_bytes``: the links' token-bucket burst (bytes): a link passes that many bytes at once after idling;
    * ``burst_send_us``, ``burst_send_us_per_byte``: how long a rank's first send after idling keeps it busy beyond
      ``S``, ``burst_send_us + burst_send_us_per_byte · min(bytes, burst_bytes)`` (µs);
    * ``queued_bytes``: how many bytes of each message a sender hands its link's queue at once (round-robin
      egress sharing);
    * ``struct_rendezvous_from_bytes``: from which size (bytes) a message sent as a struct datatype waits for the
      posted receive (``math.inf``: never, stored as null in the file);
    * ``tcp_initial_window_bytes``, ``tcp_window_bytes``, ``tcp_ssthresh_bytes``, ``tcp_mss_bytes``,
      ``tcp_restart_rto_min_us``: the TCP windows of hosts whose TCP hands whole windows to the link's queue
      (:class:`Windows`, :attr:`windows`); a calibration writes them only there.

    >>> t = NetworkTerms.from_doc({"burst_bytes": 1000, "struct_rendezvous_from_bytes": None})
    >>> t.burst_bytes, t.queued_bytes, t.struct_rendezvous_from_bytes, t.burst
    (1000.0, None, inf, 1000.0)
    >>> NetworkTerms.from_doc({"queued_bytes": -1})
    Traceback (most recent call last):
    ...
    hnowmodel.errors.ProfileError: profile.extensions.network.queued_bytes: must be a number of bytes >= 0, got -1
    """

    burst_bytes: float | None = None
    burst_send_us: float | None = None
    burst_send_us_per_byte: float | None = None
    queued_bytes: float | None = None
    struct_rendezvous_from_bytes: float | None = None
    tcp_initial_window_bytes: float | None = None
    tcp_window_bytes: float | None = None
    tcp_ssthresh_bytes: float | None = None
    tcp_mss_bytes: float | None = None
    tcp_restart_rto_min_us: float | None = None

    #: The unit of each term (what an error message says a bad value must be).
    UNITS = MappingProxyType(
        {
            "burst_bytes": "bytes",
            "burst_send_us": "µs",
            "burst_send_us_per_byte": "µs per byte",
            "queued_bytes": "bytes",
            "struct_rendezvous_from_bytes": "bytes",
            "tcp_initial_window_bytes": "bytes",
            "tcp_window_bytes": "bytes",
            "tcp_ssthresh_bytes": "bytes",
            "tcp_mss_bytes": "bytes",
            "tcp_restart_rto_min_us": "µs",
        }
    )

    @classmethod
    def from_doc(cls, net: Any, where: str = "profile.extensions.network") -> NetworkTerms:
        """Parse the ``extensions.network`` object (None or absent: every term None); :class:`ProfileError` names
        the key of a bad value. A null term is absent, except ``struct_rendezvous_from_bytes``, where null means
        never (``math.inf``). Keys the model does not read (notes, per-link fits) are left to their readers."""
        if net is None:
            return cls()
        if not isinstance(net, Mapping):
            raise ProfileError(f"{where}: must be an object")
        got: dict[str, float | None] = {}
        for key, unit in cls.UNITS.items():
            v = net.get(key)
            if v is None:
                got[key] = math.inf if key == "struct_rendezvous_from_bytes" and key in net else None
                continue
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, _NUMBER) or not math.isfinite(v) or v < 0:
                raise ProfileError(f"{where}.{key}: must be a number of {unit} >= 0, got {v!r}")
            got[key] = float(v)
        return cls(**got)

    @property
    def windows(self) -> Windows | None:
        """The TCP windows the flow engine's tandem keeps per connection, or None (the hosts' TCP keeps a few
        packets per connection in the link's queue: no ``tcp_window_bytes``). Absent terms beside it take Linux's
        defaults: a 10-segment initial window, slow start to the warm window, a 1448-byte segment, no restart.

        >>> w = NetworkTerms(tcp_window_bytes=65536.0).windows
        >>> w.initial_bytes, w.window_bytes, w.ssthresh_bytes, w.mss_bytes, w.restart_rto_min_us
        (14480.0, 65536.0, 65536.0, 1448.0, None)
        """
        if not self.tcp_window_bytes:
            return None
        mss = self.tcp_mss_bytes or 1448.0
        return Windows(
            initial_bytes=self.tcp_initial_window_bytes or 10 * mss,
            window_bytes=self.tcp_window_bytes,
            ssthresh_bytes=self.tcp_ssthresh_bytes or self.tcp_window_bytes,
            mss_bytes=mss,
            restart_rto_min_us=self.tcp_restart_rto_min_us,
        )

    @property
    def burst(self) -> float:
        """The token-bucket burst the model uses (bytes; 0 when absent)."""
        return self.burst_bytes or 0.0

    @property
    def queued(self) -> float:
        """The queued bytes the model uses (0 when absent)."""
        return self.queued_bytes or 0.0

    @property
    def struct_rendezvous_from(self) -> float:
        """From which size (bytes) a struct datatype waits for the posted receive: 0 (always) when the profile
        does not say (profiles calibrated before it was measured), ``math.inf`` when it says never."""
        v = self.struct_rendezvous_from_bytes
        return 0.0 if v is None else v

    def first_send_busy(self, b: float) -> float:
        """What a rank's first send of ``b`` bytes keeps it busy beyond ``S`` (µs): a constant for a send after
        idling, and the bytes its full egress bucket passes at once, which go through its own kernel in the call.

        >>> NetworkTerms(burst_bytes=100.0, burst_send_us=2.0, burst_send_us_per_byte=0.5).first_send_busy(40)
        22.0
        """
        return (self.burst_send_us or 0.0) + (self.burst_send_us_per_byte or 0.0) * min(self.burst, b)


@dataclass(frozen=True)
class ShmCosts:
    """What a message between two ranks of one host of a node type costs: it goes through shared memory, not the
    NIC. One-way time ``S(m) + X(m) + R(m)`` with ``node``'s send/receive overheads and ``link``'s transfer term,
    each piecewise in the size like the network's (``profile.hosts.shm`` in docs/file-formats.md).

    >>> c = ShmCosts(NodeType("f", 0.5, 0.0, 0.5, 0.0), Link(0.2, 1e-4))
    >>> float(c.one_way_us(1000))
    1.3
    """

    node: NodeType
    link: Link

    def one_way_us(self, m: Any) -> Any:
        """``S(m) + X(m) + R(m)`` in µs."""
        return self.node.send_us(m) + self.link.us(m) + self.node.recv_us(m)

    def at(self, m: float) -> ShmCosts:
        """The regime-free costs in force at ``m`` bytes."""
        return ShmCosts(self.node.at(m), self.link.at(m))

    @property
    def breakpoints(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.node.breakpoints) | set(self.link.breakpoints)))

    def to_dict(self) -> dict[str, Any]:
        """``{"regimes": [...]}``, each regime with S, R and X at once (split where either switches)."""
        bounds = [*self.breakpoints, None]
        out = []
        for ub in bounds:
            m = float(ub) if ub is not None else float(bounds[-2] + 1 if len(bounds) > 1 else 0)
            node, link = self.node.regime_at(m).to_dict(), self.link.regime_at(m).to_dict()
            out.append({**node, **link, "upto_bytes": ub})
        return {"regimes": out}


@dataclass(frozen=True)
class Nic:
    """A host's network interface: what it can send and receive at once, over all its ranks' flows (bytes/µs of
    payload, the framing already taken off; docs/model.md, "Hosts")."""

    egress_bytes_per_us: float
    ingress_bytes_per_us: float

    def __post_init__(self) -> None:
        for k in ("egress_bytes_per_us", "ingress_bytes_per_us"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, _NUMBER) or not math.isfinite(v) or not 0 < v <= 1e9:
                raise ProfileError(f"nic.{k}: must be a number of bytes/µs > 0 and at most 1e9, got {v!r}")
            object.__setattr__(self, k, float(v))

    def to_dict(self) -> dict[str, float]:
        return {"egress_bytes_per_us": self.egress_bytes_per_us, "ingress_bytes_per_us": self.ingress_bytes_per_us}


def parse_hosts(doc: Any, types: Mapping[str, NodeType], where: str = "hosts") -> tuple[dict, dict]:
    """Validate a profile's ``hosts`` object: ``{"shm": {TYPE: {"regimes": [{upto_bytes, Sc_us, Sm_us_per_byte,
    Rc_us, Rm_us_per_byte, Xc_us, Xm_us_per_byte}]}}, "nic": {TYPE: {egress_bytes_per_us, ingress_bytes_per_us}}}``
    (both optional) -> ``(shm, nic)`` dicts keyed by node type."""
    doc = _mapping(doc, where)
    bad = sorted(set(doc) - {"shm", "nic"})
    if bad:
        raise ProfileError(f"{where}: unknown key {bad[0]!r} (expected shm, nic)")
    shm: dict[str, ShmCosts] = {}
    for t, entry in _mapping(doc.get("shm", {}), f"{where}.shm").items():
        if t not in types:
            raise ProfileError(f"{where}.shm: unknown node type {t!r} (known: {', '.join(types)})")
        lines = _lines(entry, (*TYPE_KEYS, *LINK_KEYS), (), f"{where}.shm.{t}", True)
        node = NodeType.piecewise(t, [Regime(ln["upto_bytes"], *(ln[k] for k in TYPE_KEYS)) for ln in lines])
        link = Link.piecewise([LinkRegime(ln["upto_bytes"], *(ln[k] for k in LINK_KEYS)) for ln in lines])
        shm[t] = ShmCosts(node, link)
    nic: dict[str, Nic] = {}
    for t, entry in _mapping(doc.get("nic", {}), f"{where}.nic").items():
        if t not in types:
            raise ProfileError(f"{where}.nic: unknown node type {t!r} (known: {', '.join(types)})")
        entry = _mapping(entry, f"{where}.nic.{t}")
        keys = ("egress_bytes_per_us", "ingress_bytes_per_us")
        extra = sorted(set(entry) - set(keys))
        if extra or any(k not in entry for k in keys):
            raise ProfileError(f"{where}.nic.{t}: expected exactly the keys {', '.join(keys)}")
        try:
            nic[t] = Nic(entry[keys[0]], entry[keys[1]])
        except ProfileError as e:
            raise ProfileError(f"{where}.{e}") from None
    return shm, nic
