"""The :class:`Profile`: everything the predictor needs (node types, the network, per-pair links, host terms), its
file (``hnowmodel.profile/1``, ``/2``, ``/3``: read, validated, written) and the paper's built-in
:func:`paper_profile`. Units: µs and bytes.

>>> float(paper_profile().ptp_us("fast", "slow", 0))
200.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import InputError, LayoutError, ProfileError
from ..io import read_json, write_json_atomic
from ..layout import Layout
from .reducecost import ReduceTerms
from .regimes import (
    _TYPE_COLS,
    Link,
    NodeType,
    Regime,  # noqa: F401  (the doctests of Profile.at and Profile.segments build with it)
    parse_links,
    parse_network,
    parse_types,
)
from .schema import MAX_UPTO_BYTES, PROFILE_SCHEMA, PROFILE_SCHEMA_V1, PROFILE_SCHEMA_V3, PROFILE_SCHEMAS, _mapping
from .terms import NetworkTerms, Nic, ShmCosts, parse_hosts

__all__ = ["Profile", "paper_profile"]


def _finite_or_null(v: Any) -> Any:
    """Provenance as strict JSON: a fit's infinite or undefined number (a line through 2 points has no confidence
    interval) becomes null.

    >>> _finite_or_null({"ci": float("inf"), "x": [1.0, float("nan")]})
    {'ci': None, 'x': [1.0, None]}
    """
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, Mapping):
        return {k: _finite_or_null(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite_or_null(x) for x in v]
    return v


@dataclass(frozen=True)
class Profile:
    """Everything the predictor needs: node types, the network, optional per-pair links.

    ``nodes`` is the layout seen at calibration (list of ``{"rank","host","type"}``), ``provenance`` says how the
    numbers were obtained (fit quality, confidence intervals), ``extensions`` holds optional extra measurements
    (e.g. queue costs from ``hnow bench``). Load with :meth:`load` / :meth:`from_dict`, save with :meth:`save`
    (``hnowmodel.profile/3`` when it has host terms, ``shm`` or ``nic``; else ``hnowmodel.profile/2``).

    Parameters are piecewise in the size: a consumer that works at one size ``m`` uses :meth:`at` (a regime-free
    profile with the lines in force at ``m``); a vectorised one groups its sizes with :meth:`segments`.
    """

    types: Mapping[str, NodeType]
    network: Link
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)
    nodes: tuple[Mapping[str, Any], ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    extensions: Mapping[str, Any] = field(default_factory=dict)
    #: The size (bytes) from which the MPI library sends by rendezvous (a send waits for the posted receive);
    #: None: every message is eager (the paper's model). File: ``"protocol": {"rendezvous_from_bytes": N}``.
    rendezvous_from_bytes: int | None = None
    #: Per node type: what a message between two ranks of one host costs (shared memory, not the NIC). File:
    #: ``"hosts": {"shm": ...}`` (``hnowmodel.profile/3``). Empty: the profile knows one rank per host only.
    shm: Mapping[str, ShmCosts] = field(default_factory=dict)
    #: Per node type: its host's NIC capacity, shared by all the host's ranks. Empty for a type: derived from the
    #: pairwise per-byte costs (:func:`hnowmodel.flow.capacities`). File: ``"hosts": {"nic": ...}``.
    nic: Mapping[str, Nic] = field(default_factory=dict)
    #: Whether a rendezvous message between two hosts flows while one the other way between the same two ranks does
    #: (one TCP connection carries both directions at once). False: one rendezvous message at a time per pair of
    #: ranks (Open MPI 5.0 over TCP with more ranks than cores: an exchange of 64 KiB or more took as long as the two
    #: messages one after another, ``experiments/ompi_exchange.py``, docs/open-mpi.md); set in the file, the
    #: calibration does not measure it. File: ``"protocol": {"rendezvous_duplex": false}``.
    rendezvous_duplex: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "types", MappingProxyType(dict(self.types)))
        object.__setattr__(self, "links", MappingProxyType(dict(self.links)))
        object.__setattr__(self, "shm", MappingProxyType(dict(self.shm)))
        object.__setattr__(self, "nic", MappingProxyType(dict(self.nic)))
        for t in (*self.shm, *self.nic):
            if t not in self.types:
                raise ProfileError(f"hosts: unknown node type {t!r} (profile has: {', '.join(self.types)})")

    # ---- regimes -----------------------------------------------------------------------------------------
    @property
    def breakpoints(self) -> tuple[int, ...]:
        """Every finite ``upto_bytes`` of any type, the network or a link, increasing and without repeats."""
        got: set[int] = set(self.network.breakpoints)
        for t in self.types.values():
            got.update(t.breakpoints)
        for lk in self.links.values():
            got.update(lk.breakpoints)
        for c in self.shm.values():
            got.update(c.breakpoints)
        return tuple(sorted(got))

    @property
    def is_piecewise(self) -> bool:
        """True when some parameter has more than one regime."""
        return bool(self.breakpoints)

    def at(self, m: float) -> Profile:
        """The regime-free profile whose lines are those in force at ``m`` bytes (``self`` if already regime-free).

        Evaluated at ``m`` itself it gives exactly the piecewise values; at other sizes it extrapolates those lines.

        >>> p = Profile({"f": NodeType.piecewise("f", [Regime(8192, 1, 0, 2, 0), Regime(None, 9, 0, 3, 0)])},
        ...             Link(0, 0))
        >>> p.at(8192).types["f"].Sc_us, p.at(8193).types["f"].Sc_us, p.at(8193).is_piecewise
        (1.0, 9.0, False)
        """
        if np.ndim(m) != 0:
            raise ProfileError(f"Profile.at takes one size in bytes, got {m!r}")
        if not self.is_piecewise:
            return self
        m = float(m)
        return Profile(
            {n: t.at(m) for n, t in self.types.items()},
            self.network.at(m),
            {k: lk.at(m) for k, lk in self.links.items()},
            self.nodes,
            self.provenance,
            self.extensions,
            self.rendezvous_from_bytes,
            {t: c.at(m) for t, c in self.shm.items()},
            self.nic,
            self.rendezvous_duplex,
        )

    def segments(self, sizes: Any) -> list[tuple[float, np.ndarray]]:
        """Group sizes (bytes) whose every S/R/C/X regime is the same: ``[(representative size, indices), ...]``.

        Groups come in increasing size order; ``indices`` index into ``sizes`` (increasing). Within a group,
        ``self.at(representative)`` gives the lines in force for every size of the group.

        >>> p = Profile({"f": NodeType.piecewise("f", [Regime(8192, 1, 0, 2, 0), Regime(None, 9, 0, 3, 0)])},
        ...             Link(0, 0))
        >>> [(r, i.tolist()) for r, i in p.segments([0, 9000, 8192, 100000])]
        [(0.0, [0, 2]), (9000.0, [1, 3])]
        """
        m = np.atleast_1d(np.asarray(sizes, dtype=float))
        if m.size == 0:
            return []
        bps = self.breakpoints
        if not bps:
            return [(float(m[0]), np.arange(m.size))]
        seg = np.searchsorted(np.asarray(bps, dtype=float), m, side="left")
        order = np.argsort(seg, kind="stable")
        starts = np.flatnonzero(np.r_[True, seg[order][1:] != seg[order][:-1]])
        groups = np.split(order, starts[1:])
        return [(float(m[g[0]]), g) for g in groups]

    # ---- model terms -------------------------------------------------------------------------------------
    @cached_property
    def network_terms(self) -> NetworkTerms:
        """``extensions["network"]`` as typed :class:`NetworkTerms` (every term None when the profile has none),
        parsed and validated on first use; :class:`ProfileError` names a bad key.

        >>> paper_profile().network_terms.burst_bytes is None
        True
        """
        ext = self.extensions if isinstance(self.extensions, Mapping) else {}
        return NetworkTerms.from_doc(ext.get("network"))

    @cached_property
    def reduce_terms(self) -> ReduceTerms:
        """``extensions["reduce"]`` as typed :class:`~hnowmodel.params.ReduceTerms` (no costs when the profile has
        none), parsed and validated on first use (:meth:`from_dict` validates it on load)."""
        ext = self.extensions if isinstance(self.extensions, Mapping) else {}
        return ReduceTerms.from_doc(ext.get("reduce"), self.types)

    @property
    def has_reduce_cost(self) -> bool:
        """Whether the profile says what combining two buffers costs each node type (γ, ``extensions.reduce``).

        >>> paper_profile().has_reduce_cost
        False
        """
        return bool(self.reduce_terms.costs)

    def reduce_us_per_byte_at(self, nbytes: int) -> dict[str, float]:
        """γ per node type at a buffer of ``nbytes`` bytes: µs per byte to combine two buffers of that size
        (``MPI_Reduce_local``, ``MPI_SUM`` on ``MPI_DOUBLE`` unless ``reduce_terms`` says otherwise), each type's
        regime in force at ``nbytes``; γ·nbytes is the whole combine (its constant included). Type name -> µs/byte.
        :class:`~hnowmodel.errors.InputError` (one line) when the profile has no reduction cost.

        >>> p = Profile.from_dict({**paper_profile().to_dict(), "extensions": {"reduce": {"types": {
        ...     "fast": {"Gc_us": 0.0, "Gm_us_per_byte": 2e-4}, "slow": {"Gc_us": 1.0, "Gm_us_per_byte": 5e-4}}}}})
        >>> p.reduce_us_per_byte_at(1000)
        {'fast': 0.0002, 'slow': 0.0015}
        >>> paper_profile().reduce_us_per_byte_at(1000)
        Traceback (most recent call last):
        ...
        hnowmodel.errors.InputError: the profile has no reduction cost (γ, µs per byte to combine two buffers): \
calibrate one on real MPI, which measures it per node type: hnow calibrate --np N --layout LAYOUT -o PROFILE
        """
        if isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, (int, np.integer, float, np.floating)):
            raise InputError(f"reduce_us_per_byte_at: nbytes must be a whole number of bytes >= 0, got {nbytes!r}")
        if not (math.isfinite(nbytes) and nbytes >= 0 and float(nbytes).is_integer()):
            raise InputError(f"reduce_us_per_byte_at: nbytes must be a whole number of bytes >= 0, got {nbytes!r}")
        costs = self.reduce_terms.costs
        if not costs:
            raise InputError(
                "the profile has no reduction cost (γ, µs per byte to combine two buffers): calibrate one on real "
                "MPI, which measures it per node type: hnow calibrate --np N --layout LAYOUT -o PROFILE"
            )
        return {t: costs[t].us_per_byte(int(nbytes)) for t in self.types}

    def with_reduce_terms(self, terms: ReduceTerms | None) -> Profile:
        """This profile with ``terms`` as its reduction costs (``extensions.reduce``; None removes them), validated
        against its node types."""
        ext = {k: v for k, v in (self.extensions or {}).items() if k != "reduce"}
        if terms is not None:
            ext["reduce"] = ReduceTerms.from_doc(terms.to_doc(), self.types).to_doc()
        return replace(self, extensions=ext)

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(self.types)

    def node_type(self, name: str) -> NodeType:
        """The NodeType called ``name``; :class:`ProfileError` naming the known types otherwise."""
        try:
            return self.types[name]
        except KeyError:
            raise ProfileError(f"unknown node type {name!r} (profile has: {', '.join(self.types)})") from None

    def link(self, src_type: str, dst_type: str) -> Link:
        """The transmission parameters from a node of ``src_type`` to one of ``dst_type``."""
        return self.links.get((src_type, dst_type), self.network)

    def shm_costs(self, type_name: str) -> ShmCosts:
        """The shared-memory costs between two ranks of one host of ``type_name``; :class:`ProfileError` when the
        profile has none (it was calibrated with one rank per host of that type)."""
        try:
            return self.shm[type_name]
        except KeyError:
            self.node_type(type_name)
            raise ProfileError(
                f"the profile has no shared-memory costs for node type {type_name!r} (a layout puts several of its "
                "ranks on one host): calibrate with 2 or more ranks per host of that type"
            ) from None

    def ptp_us(self, src_type: str, dst_type: str, m: Any, *, same_host: bool = False) -> Any:
        """One-way time ``S_src(m) + X(m) + R_dst(m)`` in µs (eq. 1-4), each term at its own regime; between two
        ranks of one host (``same_host``), the type's shared-memory costs instead (:class:`ShmCosts`)."""
        if same_host:
            if src_type != dst_type:
                raise ProfileError(f"ranks of types {src_type!r} and {dst_type!r} cannot share a host")
            return self.shm_costs(src_type).one_way_us(m)
        return (
            self.node_type(src_type).send_us(m)
            + self.link(src_type, dst_type).us(m)
            + self.node_type(dst_type).recv_us(m)
        )

    def arrays(self, layout: Sequence[str], m: float = 0.0) -> dict[str, np.ndarray]:
        """Per-rank coefficients in force at ``m`` bytes for a layout (one type name per rank).

        Keys: :data:`TYPE_KEYS`, :data:`COPY_KEYS` and ``type_index``.

        >>> paper_profile().arrays(["fast", "slow"])["Sc_us"].tolist()
        [60.0, 90.0]
        """
        prof = self.at(m)
        names = list(prof.types)
        idx = prof.type_index(layout)
        out = {"type_index": idx}
        for k in _TYPE_COLS:
            out[k] = np.array([getattr(prof.types[n], k) for n in names], dtype=float)[idx]
        return out

    def type_index(self, layout: Sequence[str]) -> np.ndarray:
        """Index (into ``types``) of each rank's type; :class:`LayoutError` names an unknown type.

        A numpy array of type names is matched without a Python loop over ranks (fast for 10**6 ranks).

        >>> paper_profile().type_index(["slow", "fast", "slow"]).tolist()
        [1, 0, 1]
        """
        names = list(self.types)
        if isinstance(layout, np.ndarray) and layout.dtype.kind in "US":
            idx = np.full(layout.shape[0], -1, dtype=np.int64)
            for i, name in enumerate(names):
                idx[layout == name] = i
            if (idx < 0).any():
                bad = str(layout[np.flatnonzero(idx < 0)[0]])
                raise LayoutError(f"layout names unknown node type {bad!r} (profile has: {', '.join(names)})")
            return idx
        index = {n: i for i, n in enumerate(names)}
        try:
            return np.fromiter(map(index.__getitem__, layout), dtype=np.int64, count=len(layout))
        except (KeyError, TypeError):
            bad = next((t for t in layout if t not in index), None)
            raise LayoutError(f"layout names unknown node type {bad!r} (profile has: {', '.join(names)})") from None

    def link_matrix(self, m: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``(Xc, Xm)`` in force at ``m`` bytes as (ntypes x ntypes) arrays indexed by type index (order of ``types``).

        >>> paper_profile().link_matrix()[0].tolist()
        [[16.0, 16.0], [16.0, 16.0]]
        """
        prof = self.at(m)
        names = list(prof.types)
        xc = np.full((len(names), len(names)), prof.network.Xc_us)
        xm = np.full((len(names), len(names)), prof.network.Xm_us_per_byte)
        for (a, b), lk in prof.links.items():
            i, j = names.index(a), names.index(b)
            xc[i, j], xm[i, j] = lk.Xc_us, lk.Xm_us_per_byte
        return xc, xm

    # ---- files -------------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: Any, where: str = "profile") -> Profile:
        """Validate a ``hnowmodel.profile/3`` (``/2`` with ``hosts``), ``/2`` or regime-free ``/1`` document;
        :class:`ProfileError` names the field.

        >>> Profile.from_dict({"schema": "hnowmodel.profile/4"})
        Traceback (most recent call last):
        ...
        hnowmodel.errors.ProfileError: profile.schema: unsupported 'hnowmodel.profile/4' (supported: \
'hnowmodel.profile/1', 'hnowmodel.profile/2', 'hnowmodel.profile/3')
        """
        doc = _mapping(doc, where)
        schema = doc.get("schema")
        if schema not in PROFILE_SCHEMAS:
            supported = ", ".join(repr(s) for s in PROFILE_SCHEMAS)
            raise ProfileError(f"{where}.schema: unsupported {schema!r} (supported: {supported})")
        piecewise = schema != PROFILE_SCHEMA_V1
        known = {"schema", "types", "network", "links", "nodes", "provenance", "extensions", "protocol"}
        if schema == PROFILE_SCHEMA_V3:
            known.add("hosts")
        unknown = sorted(set(doc) - known)
        if unknown:
            raise ProfileError(f"{where}: unknown key {unknown[0]!r}")
        if "types" not in doc:
            raise ProfileError(f"{where}.types: missing")
        if "network" not in doc:
            raise ProfileError(f"{where}.network: missing")
        types = parse_types(doc["types"], f"{where}.types", allow_regimes=piecewise)
        network = parse_network(doc["network"], f"{where}.network", allow_regimes=piecewise)
        links = parse_links(doc.get("links"), types, f"{where}.links", allow_regimes=piecewise)
        nodes = doc.get("nodes") or []
        if not isinstance(nodes, list):
            raise ProfileError(f"{where}.nodes: must be a list")
        for i, n in enumerate(nodes):
            n = _mapping(n, f"{where}.nodes[{i}]")
            if n.get("type") not in types:
                raise ProfileError(f"{where}.nodes[{i}].type: unknown node type {n.get('type')!r}")
        prov = _mapping(doc.get("provenance", {}), f"{where}.provenance")
        ext = _mapping(doc.get("extensions", {}), f"{where}.extensions")
        if "reduce" in ext:  # validated now, so that a bad γ names its file and field on load
            ReduceTerms.from_doc(ext["reduce"], types, f"{where}.extensions.reduce")
        rdv, duplex = None, True
        if "protocol" in doc:
            proto = _mapping(doc["protocol"], f"{where}.protocol")
            bad = sorted(set(proto) - {"rendezvous_from_bytes", "rendezvous_duplex"})
            if bad:
                raise ProfileError(
                    f"{where}.protocol: unknown key {bad[0]!r} (expected rendezvous_from_bytes, rendezvous_duplex)"
                )
            duplex = proto.get("rendezvous_duplex", True)
            if not isinstance(duplex, bool):
                raise ProfileError(f"{where}.protocol.rendezvous_duplex: must be true or false, got {duplex!r}")
            rdv = proto.get("rendezvous_from_bytes")
            if rdv is not None and (isinstance(rdv, bool) or not isinstance(rdv, int) or not 0 < rdv <= MAX_UPTO_BYTES):
                raise ProfileError(
                    f"{where}.protocol.rendezvous_from_bytes: must be a whole number of bytes > 0 or null, got {rdv!r}"
                )
        shm, nic = parse_hosts(doc["hosts"], types, f"{where}.hosts") if "hosts" in doc else ({}, {})
        return cls(types, network, links, tuple(nodes), dict(prov), dict(ext), rdv, shm, nic, duplex)

    def to_dict(self) -> dict[str, Any]:
        """The document for this profile: ``hnowmodel.profile/3`` with ``hosts`` when it has host terms, else
        ``hnowmodel.profile/2`` (every parameter set as ``{"regimes": [...]}``)."""
        doc: dict[str, Any] = {
            "schema": PROFILE_SCHEMA_V3 if self.shm or self.nic else PROFILE_SCHEMA,
            "types": {n: t.to_dict() for n, t in self.types.items()},
            "network": self.network.to_dict(),
        }
        if self.shm or self.nic:
            doc["hosts"] = {}
            if self.shm:
                doc["hosts"]["shm"] = {t: c.to_dict() for t, c in self.shm.items()}
            if self.nic:
                doc["hosts"]["nic"] = {t: n.to_dict() for t, n in self.nic.items()}
        if self.links:
            doc["links"] = [{"from": a, "to": b, **lk.to_dict()} for (a, b), lk in self.links.items()]
        if self.rendezvous_from_bytes is not None:
            doc["protocol"] = {"rendezvous_from_bytes": int(self.rendezvous_from_bytes)}
        if not self.rendezvous_duplex:
            doc.setdefault("protocol", {})["rendezvous_duplex"] = False
        if self.nodes:
            doc["nodes"] = [dict(n) for n in self.nodes]
        doc["provenance"] = _finite_or_null(dict(self.provenance))
        if self.extensions:
            doc["extensions"] = dict(self.extensions)
        return doc

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        """Load and validate a profile file (``/3``, ``/2`` or ``/1``); ``paper`` gives :func:`paper_profile`."""
        if str(path) == "paper":
            return paper_profile()
        return cls.from_dict(read_json(path, "profile"), where=f"profile {str(path)!r}")

    def save(self, path: str | Path, *, overwrite: bool = True) -> Path:
        """Write the profile (:meth:`to_dict`: ``/3`` with host terms, else ``/2``) atomically (temporary file, then
        rename); ``overwrite=False`` refuses an existing file (:class:`~hnowmodel.errors.InputError`)."""
        return write_json_atomic(path, self.to_dict(), overwrite=overwrite)

    @property
    def layout(self) -> tuple[str, ...]:
        """The calibration layout (type of each rank) if the profile records ``nodes``, else ``()``."""
        return tuple(n["type"] for n in sorted(self.nodes, key=lambda n: n.get("rank", 0)))

    @property
    def host_layout(self) -> Layout | None:
        """The calibration layout with its hosts (``nodes``' ``host`` names) when the profile has host terms
        (``shm``/``nic``: a calibration that told hosts apart), else with one host per rank, as profiles without
        host terms were calibrated (two ranks on one machine measured as a network); None without ``nodes``."""
        if not self.nodes:
            return None
        if not (self.shm or self.nic):
            return Layout(self.layout)
        nodes = sorted(self.nodes, key=lambda n: n.get("rank", 0))
        names = [str(n.get("host", f"rank{i}")) for i, n in enumerate(nodes)]
        hosts = [names.index(x) for x in names]
        return Layout([n["type"] for n in nodes], hosts, list(dict.fromkeys(names)))

    @property
    def host_types(self) -> dict[str, str]:
        """The node type of each host the calibration ran on, by host name (``nodes``' ``host``: the ranks' host
        name, or Slurm's node name), for mapping another placement on those hosts to node types
        (:func:`hnowmodel.layout.layout_from_hosts`). A host whose ranks had different types (ranks of one machine
        calibrated as separate nodes, an emulation) names no node type and is left out.

        >>> from dataclasses import replace
        >>> nodes = ({"rank": 0, "host": "a", "type": "fast"}, {"rank": 1, "host": "b", "type": "slow"},
        ...          {"rank": 2, "host": "c", "type": "fast"}, {"rank": 3, "host": "c", "type": "slow"})
        >>> replace(paper_profile(), nodes=nodes).host_types
        {'a': 'fast', 'b': 'slow'}
        """
        seen: dict[str, set[str]] = {}
        for n in self.nodes:
            if "host" in n:
                seen.setdefault(str(n["host"]), set()).add(str(n["type"]))
        return {h: next(iter(t)) for h, t in seen.items() if len(t) == 1}


_TABLE1 = {
    "fast": (60.0, 0.05, 110.0, 0.03),
    "slow": (90.0, 0.18, 140.0, 0.08),
}
# Section 2.2: Fast Ethernet, 100 Mbit/s = 12.5 bytes/µs, 8 µs per switch port, two ports per message.
_PAPER_NETWORK = Link(Xc_us=2 * 8.0, Xm_us_per_byte=1 / 12.5)


def paper_profile(convention: str = "table2") -> Profile:
    """The paper's testbed: Table 1 node types and X(m) = m/12.5 + 2*8 µs (section 2.2).

    ``convention="table2"`` (default) stores ``Rc = Table-1 Rc - Xc`` so one-way latencies equal Table 2
    (170/200/200/230 µs at 0 bytes); ``"as-printed"`` keeps Table 1's Rc (110/140), which adds Xc on top.
    """
    if convention not in ("table2", "as-printed"):
        raise ProfileError(f"paper profile convention {convention!r}: expected 'table2' or 'as-printed'")
    shift = _PAPER_NETWORK.Xc_us if convention == "table2" else 0.0
    types = {name: NodeType(name, sc, sm, rc - shift, rm) for name, (sc, sm, rc, rm) in _TABLE1.items()}
    prov = {
        "source": "Banikazemi et al., Communication Modeling of Heterogeneous Networks of Workstations, Table 1, 2.2",
        "convention": convention,
        "note": (
            "Table 1's Rc absorbs Xc (eq. 5, Table 2); stored as Rc = Table-1 Rc - Xc so T_ptp(0) = Table 2"
            if convention == "table2"
            else "Table 1 verbatim; Xc = 16 us is then counted on top of Rc"
        ),
    }
    return Profile(types, _PAPER_NETWORK, provenance=prov)
