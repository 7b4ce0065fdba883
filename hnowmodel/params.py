"""Model parameters: node types, the network, per-type-pair links, and the profile file.

Units are microseconds and bytes everywhere; every field name carries its unit.

Convention (see ``docs/model.md``): a profile keeps the constant transmission cost ``Xc_us`` separate from the
receive overhead, so ``T_ptp(a->b, m) = S_a(m) + X_ab(m) + R_b(m)`` with ``S = Sc + Sm*m``, ``X = Xc + Xm*m``,
``R = Rc + Rm*m``. The paper's Table 1 folds ``Xc`` into ``Rc`` (eq. 5, Table 2: 60 + 110 = 170); the built-in
:func:`paper_profile` therefore stores ``Rc = Table-1 Rc - Xc`` so that one-way latencies equal Table 2, and
``paper_profile(convention="as-printed")`` gives Table 1 verbatim (which then counts ``Xc`` twice).

>>> p = paper_profile()
>>> float(p.ptp_us("fast", "slow", 0))
200.0
>>> p.types["slow"].Sc_us
90.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from .errors import LayoutError, ProfileError
from .io import read_json, write_json_atomic

__all__ = [
    "NodeType",
    "Link",
    "Profile",
    "paper_profile",
    "PROFILE_SCHEMA",
    "TYPE_KEYS",
    "LINK_KEYS",
    "parse_types",
    "parse_network",
    "parse_links",
]

PROFILE_SCHEMA = "hnowmodel.profile/1"
TYPE_KEYS = ("Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte")
LINK_KEYS = ("Xc_us", "Xm_us_per_byte")


def _affine(c: float, k: float, m: Any) -> Any:
    """``c + k*m``: a float for a scalar size, a numpy array for an array of sizes."""
    if np.ndim(m) == 0:
        return float(c + k * float(m))
    return c + k * np.asarray(m, dtype=float)


@dataclass(frozen=True)
class NodeType:
    """Send and receive overheads of one kind of node.

    ``send_us(m) = Sc_us + Sm_us_per_byte*m`` and ``recv_us(m) = Rc_us + Rm_us_per_byte*m`` (µs, m in bytes).

    >>> NodeType("fast", 60, 0.05, 94, 0.03).send_us(1000)
    110.0
    """

    name: str
    Sc_us: float
    Sm_us_per_byte: float
    Rc_us: float
    Rm_us_per_byte: float

    def send_us(self, m: Any) -> Any:
        """Send overhead S(m) in µs; ``m`` may be a scalar or an array of sizes in bytes."""
        return _affine(self.Sc_us, self.Sm_us_per_byte, m)

    def recv_us(self, m: Any) -> Any:
        """Receive overhead R(m) in µs."""
        return _affine(self.Rc_us, self.Rm_us_per_byte, m)

    def to_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in TYPE_KEYS}


@dataclass(frozen=True)
class Link:
    """Transmission cost of the network (or of one type pair): ``X(m) = Xc_us + Xm_us_per_byte*m``.

    >>> Link(16, 0.08).us(125)
    26.0
    """

    Xc_us: float
    Xm_us_per_byte: float

    def us(self, m: Any) -> Any:
        """Transmission time X(m) in µs."""
        return _affine(self.Xc_us, self.Xm_us_per_byte, m)

    def to_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in LINK_KEYS}


def _number(doc: Mapping, key: str, where: str) -> float:
    if key not in doc:
        raise ProfileError(f"{where}.{key}: missing")
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ProfileError(f"{where}.{key}: must be a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v):
        raise ProfileError(f"{where}.{key}: must be finite, got {v!r}")
    if v < 0:
        raise ProfileError(f"{where}.{key}: must be >= 0, got {v:g}")
    return v


def _mapping(v: Any, where: str) -> Mapping:
    if not isinstance(v, Mapping):
        raise ProfileError(f"{where}: must be a JSON object, got {type(v).__name__}")
    return v


def parse_types(doc: Any, where: str = "types") -> dict[str, NodeType]:
    """Validate a ``types`` object (name -> four parameters) and return NodeTypes; errors name the field."""
    doc = _mapping(doc, where)
    if not doc:
        raise ProfileError(f"{where}: needs at least one node type")
    out = {}
    for name, params in doc.items():
        if not isinstance(name, str) or not name or "," in name or "*" in name or "@" in name:
            raise ProfileError(f"{where}: bad type name {name!r} (non-empty, no ',', '*' or '@')")
        params = _mapping(params, f"{where}.{name}")
        unknown = sorted(set(params) - set(TYPE_KEYS))
        if unknown:
            raise ProfileError(f"{where}.{name}: unknown key {unknown[0]!r} (expected {', '.join(TYPE_KEYS)})")
        out[name] = NodeType(name, *(_number(params, k, f"{where}.{name}") for k in TYPE_KEYS))
    return out


def parse_network(doc: Any, where: str = "network") -> Link:
    """Validate a ``network`` object (``Xc_us``, ``Xm_us_per_byte``)."""
    doc = _mapping(doc, where)
    unknown = sorted(set(doc) - set(LINK_KEYS))
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r} (expected {', '.join(LINK_KEYS)})")
    return Link(*(_number(doc, k, where) for k in LINK_KEYS))


def parse_links(doc: Any, types: Mapping[str, NodeType], where: str = "links") -> dict[tuple[str, str], Link]:
    """Validate the optional ``links`` list of per-type-pair overrides."""
    if doc is None:
        return {}
    if not isinstance(doc, list):
        raise ProfileError(f"{where}: must be a list, got {type(doc).__name__}")
    out: dict[tuple[str, str], Link] = {}
    for i, item in enumerate(doc):
        w = f"{where}[{i}]"
        item = _mapping(item, w)
        pair = []
        for end in ("from", "to"):
            t = item.get(end)
            if t is None:
                raise ProfileError(f"{w}.{end}: missing")
            if t not in types:
                raise ProfileError(f"{w}.{end}: unknown node type {t!r} (known: {', '.join(types)})")
            pair.append(t)
        rest = {k: v for k, v in item.items() if k not in ("from", "to")}
        out[(pair[0], pair[1])] = parse_network(rest, w)
    return out


@dataclass(frozen=True)
class Profile:
    """Everything the predictor needs: node types, the network, optional per-pair links.

    ``nodes`` is the layout seen at calibration (list of ``{"rank","host","type"}``), ``provenance`` says how the
    numbers were obtained (fit quality, confidence intervals), ``extensions`` holds optional extra measurements
    (e.g. queue costs from ``hnow bench``). Load with :meth:`load` / :meth:`from_dict`, save with :meth:`save`.
    """

    types: Mapping[str, NodeType]
    network: Link
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)
    nodes: tuple[Mapping[str, Any], ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    extensions: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "types", MappingProxyType(dict(self.types)))
        object.__setattr__(self, "links", MappingProxyType(dict(self.links)))

    # ---- model terms -------------------------------------------------------------------------------------
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

    def ptp_us(self, src_type: str, dst_type: str, m: Any) -> Any:
        """One-way time ``S_src(m) + X(m) + R_dst(m)`` in µs (eq. 1-4)."""
        return (
            self.node_type(src_type).send_us(m)
            + self.link(src_type, dst_type).us(m)
            + self.node_type(dst_type).recv_us(m)
        )

    def arrays(self, layout: Sequence[str]) -> dict[str, np.ndarray]:
        """Per-rank parameter arrays for a layout (one type name per rank): keys as in TYPE_KEYS plus ``type_index``.

        >>> paper_profile().arrays(["fast", "slow"])["Sc_us"].tolist()
        [60.0, 90.0]
        """
        names = list(self.types)
        idx = self.type_index(layout)
        out = {"type_index": idx}
        for k in TYPE_KEYS:
            out[k] = np.array([getattr(self.types[n], k) for n in names], dtype=float)[idx]
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

    def link_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Xc, Xm)`` as (ntypes x ntypes) arrays indexed by type index (order of ``types``)."""
        names = list(self.types)
        xc = np.full((len(names), len(names)), self.network.Xc_us)
        xm = np.full((len(names), len(names)), self.network.Xm_us_per_byte)
        for (a, b), lk in self.links.items():
            i, j = names.index(a), names.index(b)
            xc[i, j], xm[i, j] = lk.Xc_us, lk.Xm_us_per_byte
        return xc, xm

    # ---- files -------------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: Any, where: str = "profile") -> Profile:
        """Validate a ``hnowmodel.profile/1`` document; :class:`ProfileError` names the bad field."""
        doc = _mapping(doc, where)
        schema = doc.get("schema")
        if schema != PROFILE_SCHEMA:
            raise ProfileError(f"{where}.schema: expected {PROFILE_SCHEMA!r}, got {schema!r}")
        known = {"schema", "types", "network", "links", "nodes", "provenance", "extensions"}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise ProfileError(f"{where}: unknown key {unknown[0]!r}")
        if "types" not in doc:
            raise ProfileError(f"{where}.types: missing")
        if "network" not in doc:
            raise ProfileError(f"{where}.network: missing")
        types = parse_types(doc["types"])
        network = parse_network(doc["network"])
        links = parse_links(doc.get("links"), types)
        nodes = doc.get("nodes") or []
        if not isinstance(nodes, list):
            raise ProfileError(f"{where}.nodes: must be a list")
        for i, n in enumerate(nodes):
            n = _mapping(n, f"{where}.nodes[{i}]")
            if n.get("type") not in types:
                raise ProfileError(f"{where}.nodes[{i}].type: unknown node type {n.get('type')!r}")
        prov = _mapping(doc.get("provenance", {}), f"{where}.provenance")
        ext = _mapping(doc.get("extensions", {}), f"{where}.extensions")
        return cls(types, network, links, tuple(nodes), dict(prov), dict(ext))

    def to_dict(self) -> dict[str, Any]:
        """The ``hnowmodel.profile/1`` document for this profile."""
        doc: dict[str, Any] = {
            "schema": PROFILE_SCHEMA,
            "types": {n: t.to_dict() for n, t in self.types.items()},
            "network": self.network.to_dict(),
        }
        if self.links:
            doc["links"] = [{"from": a, "to": b, **lk.to_dict()} for (a, b), lk in self.links.items()]
        if self.nodes:
            doc["nodes"] = [dict(n) for n in self.nodes]
        doc["provenance"] = dict(self.provenance)
        if self.extensions:
            doc["extensions"] = dict(self.extensions)
        return doc

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        """Load and validate a profile file; the name ``paper`` gives :func:`paper_profile`."""
        if str(path) == "paper":
            return paper_profile()
        return cls.from_dict(read_json(path, "profile"), where=f"profile {str(path)!r}")

    def save(self, path: str | Path) -> Path:
        """Write the profile atomically (temporary file, then rename)."""
        return write_json_atomic(path, self.to_dict())

    @property
    def layout(self) -> tuple[str, ...]:
        """The calibration layout (type of each rank) if the profile records ``nodes``, else ``()``."""
        return tuple(n["type"] for n in sorted(self.nodes, key=lambda n: n.get("rank", 0)))


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
    types = {
        name: NodeType(name, sc, sm, rc - shift, rm) for name, (sc, sm, rc, rm) in _TABLE1.items()
    }
    prov = {
        "source": "Banikazemi et al., Table 1 and section 2.2 (papers/003)",
        "convention": convention,
        "note": (
            "Table 1's Rc absorbs Xc (eq. 5, Table 2); stored as Rc = Table-1 Rc - Xc so T_ptp(0) = Table 2"
            if convention == "table2"
            else "Table 1 verbatim; Xc = 16 us is then counted on top of Rc"
        ),
    }
    return Profile(types, _PAPER_NETWORK, provenance=prov)
