"""Model parameters: node types, the network, per-type-pair links, and the profile file.

Units are microseconds and bytes everywhere; every field name carries its unit.

Convention (see ``docs/model.md``): a profile keeps the constant transmission cost ``Xc_us`` separate from the
receive overhead, so ``T_ptp(a->b, m) = S_a(m) + X_ab(m) + R_b(m)`` with ``S = Sc + Sm*m``, ``X = Xc + Xm*m``,
``R = Rc + Rm*m``. The paper's Table 1 folds ``Xc`` into ``Rc`` (eq. 5, Table 2: 60 + 110 = 170); the built-in
:func:`paper_profile` therefore stores ``Rc = Table-1 Rc - Xc`` so that one-way latencies equal Table 2, and
``paper_profile(convention="as-printed")`` gives Table 1 verbatim (which then counts ``Xc`` twice).

Regimes (``hnowmodel.profile/2``): each of S, R (per node type) and X (network, per-pair links) is piecewise-linear
in the message size. A parameter set is an ordered list of :class:`Regime` / :class:`LinkRegime` lines, each valid
for sizes up to and including its ``upto_bytes``; the last one has ``upto_bytes=None`` and covers every larger size.
A size ``m`` uses the first regime with ``m <= upto_bytes`` (the bound is **inclusive**). Every model computation
evaluates the parameters at the size in question (:meth:`NodeType.send_us`, :meth:`Link.us`, :meth:`Profile.at`,
:meth:`Profile.segments`); the flat attributes ``Sc_us``, ``Xc_us``, ... are the *first* regime's values.

>>> p = paper_profile()
>>> float(p.ptp_us("fast", "slow", 0))
200.0
>>> p.types["slow"].Sc_us
90.0
>>> t = NodeType.piecewise("f", [Regime(8192, 1.0, 0.001, 2.0, 0.001), Regime(None, 10.0, 0.0001, 3.0, 0.0001)])
>>> t.send_us([8192, 8193]).tolist()
[9.192, 10.8193]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from .errors import LayoutError, ProfileError
from .io import read_json, write_json_atomic
from .layout import Layout

__all__ = [
    "NodeType",
    "Link",
    "Regime",
    "LinkRegime",
    "Profile",
    "NetworkTerms",
    "ShmCosts",
    "Nic",
    "paper_profile",
    "PROFILE_SCHEMA",
    "PROFILE_SCHEMA_V1",
    "PROFILE_SCHEMA_V3",
    "PROFILE_SCHEMAS",
    "TYPE_KEYS",
    "COPY_KEYS",
    "LINK_KEYS",
    "MAX_CONST_US",
    "MAX_PER_BYTE_US",
    "MAX_UPTO_BYTES",
    "parse_types",
    "parse_network",
    "parse_links",
]

#: The schema :meth:`Profile.save` writes for a profile without host terms (every profile before hosts).
PROFILE_SCHEMA = "hnowmodel.profile/2"
#: The schema of a profile with host terms (``hosts``: shared-memory costs and NIC capacities per node type).
PROFILE_SCHEMA_V3 = "hnowmodel.profile/3"
#: The regime-free schema of earlier versions; still read (each parameter set is one regime).
PROFILE_SCHEMA_V1 = "hnowmodel.profile/1"
PROFILE_SCHEMAS = (PROFILE_SCHEMA_V1, PROFILE_SCHEMA, PROFILE_SCHEMA_V3)
TYPE_KEYS = ("Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte")
#: Optional per-type keys (default 0): the root's local copy of its own block in MPICH's binomial scatter/gather.
COPY_KEYS = ("Cc_us", "Cm_us_per_byte")
LINK_KEYS = ("Xc_us", "Xm_us_per_byte")
#: Largest constant term (µs) a profile may hold: 1000 s. Paper values are ~100 µs.
MAX_CONST_US = 1e9
#: Largest per-byte term (µs/byte) a profile may hold: 1 KB/s. Paper values are ~0.1 µs/byte.
MAX_PER_BYTE_US = 1e3
#: Largest finite ``upto_bytes`` (2**53: every size up to it is exact as a float).
MAX_UPTO_BYTES = 2**53

_NUMBER = (int, float, np.integer, np.floating)


# ---- validation helpers ----------------------------------------------------------------------------------------
def _value(v: Any, key: str, where: str) -> float:
    """A finite, non-negative, bounded coefficient; :class:`ProfileError` naming ``where.key`` otherwise."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, _NUMBER):
        raise ProfileError(f"{where}.{key}: must be a number, got {v!r}")
    try:
        v = float(v)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise ProfileError(f"{where}.{key}: must be finite, got {v!r}")
    if v < 0:
        raise ProfileError(f"{where}.{key}: must be >= 0, got {v:g}")
    per_byte = key.endswith("_per_byte")
    limit = MAX_PER_BYTE_US if per_byte else MAX_CONST_US
    if v > limit:
        unit = "us/byte" if per_byte else "us"
        raise ProfileError(f"{where}.{key}: {v:g} is above the limit of {limit:g} {unit}")
    return v


def _number(doc: Mapping, key: str, where: str) -> float:
    if key not in doc:
        raise ProfileError(f"{where}.{key}: missing")
    return _value(doc[key], key, where)


def _upto(v: Any, where: str) -> int | None:
    """``upto_bytes``: null or a whole number of bytes in 0..MAX_UPTO_BYTES."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, _NUMBER):
        raise ProfileError(f"{where}: must be a whole number of bytes or null, got {v!r}")
    if isinstance(v, (float, np.floating)) and not (math.isfinite(v) and float(v).is_integer()):
        raise ProfileError(f"{where}: must be a whole number of bytes or null, got {v!r}")
    v = int(v)
    if v < 0:
        raise ProfileError(f"{where}: must be >= 0, got {v}")
    if v > MAX_UPTO_BYTES:
        raise ProfileError(f"{where}: {v} is above the limit of 2**53 bytes")
    return v


def _check_order(uptos: Sequence[int | None], where: str) -> None:
    """Strictly increasing bounds, exactly one null, and it comes last."""
    prev: int | None = None
    for i, u in enumerate(uptos):
        last = i == len(uptos) - 1
        if u is None and not last:
            raise ProfileError(
                f"{where}[{i}].upto_bytes: only the last regime may be null (it covers every larger size)"
            )
        if u is not None and last:
            raise ProfileError(
                f"{where}[{i}].upto_bytes: the last regime must be null (it covers every larger size), got {u}"
            )
        if u is not None and prev is not None and u <= prev:
            raise ProfileError(f"{where}[{i}].upto_bytes: must be greater than the previous regime's {prev}, got {u}")
        prev = u


def _affine(c: float, k: float, m: Any) -> Any:
    """``c + k*m``: a float for a scalar size, a numpy array for an array of sizes."""
    if np.ndim(m) == 0:
        return float(c + k * float(m))
    return c + k * np.asarray(m, dtype=float)


def _piecewise(bounds: np.ndarray, c: np.ndarray, k: np.ndarray, m: Any) -> Any:
    """``c[i] + k[i]*m`` with i the first regime whose bound is >= m (``bounds``: the finite bounds, increasing)."""
    if bounds.size == 0:
        return _affine(float(c[0]), float(k[0]), m)
    if np.ndim(m) == 0:
        x = float(m)
        i = int(np.searchsorted(bounds, x, side="left"))
        return float(c[i] + k[i] * x)
    x = np.asarray(m, dtype=float)
    i = np.searchsorted(bounds, x, side="left")
    return c[i] + k[i] * x


def _regime_index(bounds: np.ndarray, m: float) -> int:
    return int(np.searchsorted(bounds, float(m), side="left")) if bounds.size else 0


# ---- regimes ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Regime:
    """One node type's lines for sizes up to and including ``upto_bytes`` (None: every larger size).

    ``S(m) = Sc_us + Sm_us_per_byte*m``, ``R(m) = Rc_us + Rm_us_per_byte*m`` and the root's local copy of its own
    block ``C(m) = Cc_us + Cm_us_per_byte*m`` (µs, m in bytes; C is optional, default 0).

    >>> Regime(None, 60, 0.05, 94, 0.03).send_us(1000)
    110.0
    """

    upto_bytes: int | None
    Sc_us: float
    Sm_us_per_byte: float
    Rc_us: float
    Rm_us_per_byte: float
    Cc_us: float = 0.0
    Cm_us_per_byte: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "upto_bytes", _upto(self.upto_bytes, "regime.upto_bytes"))
        for k in (*TYPE_KEYS, *COPY_KEYS):
            object.__setattr__(self, k, _value(getattr(self, k), k, "regime"))

    def send_us(self, m: Any) -> Any:
        """Send overhead S(m) in µs on this regime's line."""
        return _affine(self.Sc_us, self.Sm_us_per_byte, m)

    def recv_us(self, m: Any) -> Any:
        """Receive overhead R(m) in µs on this regime's line."""
        return _affine(self.Rc_us, self.Rm_us_per_byte, m)

    def copy_us(self, m: Any) -> Any:
        """The root's local copy of its own ``m``-byte block, C(m) in µs, on this regime's line."""
        return _affine(self.Cc_us, self.Cm_us_per_byte, m)

    def to_dict(self) -> dict[str, Any]:
        """``{"upto_bytes", Sc_us, Sm_us_per_byte, Rc_us, Rm_us_per_byte}`` (+ the copy keys when not 0)."""
        doc: dict[str, Any] = {"upto_bytes": self.upto_bytes, **{k: getattr(self, k) for k in TYPE_KEYS}}
        doc.update({k: getattr(self, k) for k in COPY_KEYS if getattr(self, k)})
        return doc


@dataclass(frozen=True)
class LinkRegime:
    """The transmission line ``X(m) = Xc_us + Xm_us_per_byte*m`` for sizes up to and including ``upto_bytes``.

    >>> LinkRegime(None, 16, 0.08).us(125)
    26.0
    """

    upto_bytes: int | None
    Xc_us: float
    Xm_us_per_byte: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "upto_bytes", _upto(self.upto_bytes, "regime.upto_bytes"))
        for k in LINK_KEYS:
            object.__setattr__(self, k, _value(getattr(self, k), k, "regime"))

    def us(self, m: Any) -> Any:
        """Transmission time X(m) in µs on this regime's line."""
        return _affine(self.Xc_us, self.Xm_us_per_byte, m)

    def to_dict(self) -> dict[str, Any]:
        return {"upto_bytes": self.upto_bytes, **{k: getattr(self, k) for k in LINK_KEYS}}


_TYPE_COLS = (*TYPE_KEYS, *COPY_KEYS)


@dataclass(frozen=True)
class NodeType:
    """Send and receive overheads (and the root's local copy) of one kind of node, piecewise in the size.

    ``NodeType(name, Sc_us, Sm_us_per_byte, Rc_us, Rm_us_per_byte)`` makes a one-regime type; a piecewise one is
    :meth:`piecewise`. The flat attributes (``Sc_us`` ...) are the **first** regime's values: every model computation
    goes through the size-aware :meth:`send_us`, :meth:`recv_us`, :meth:`copy_us` (or :meth:`at`).

    >>> NodeType("fast", 60, 0.05, 94, 0.03).send_us(1000)
    110.0
    """

    name: str
    Sc_us: float
    Sm_us_per_byte: float
    Rc_us: float
    Rm_us_per_byte: float
    Cc_us: float = 0.0
    Cm_us_per_byte: float = 0.0
    regimes: tuple[Regime, ...] = ()

    def __post_init__(self) -> None:
        where = f"node type {self.name!r}"
        flat = tuple(_value(getattr(self, k), k, where) for k in _TYPE_COLS)
        if not self.regimes:
            regimes: tuple[Regime, ...] = (Regime(None, *flat),)
        else:
            regimes = tuple(self.regimes)
            for i, r in enumerate(regimes):
                if not isinstance(r, Regime):
                    raise ProfileError(f"{where}.regimes[{i}]: must be a Regime, got {type(r).__name__}")
            _check_order([r.upto_bytes for r in regimes], f"{where}.regimes")
            first = tuple(getattr(regimes[0], k) for k in _TYPE_COLS)
            if flat != first:
                raise ProfileError(
                    f"{where}: the flat coefficients must equal the first regime's "
                    f"(build piecewise types with NodeType.piecewise)"
                )
        object.__setattr__(self, "regimes", regimes)
        for k, v in zip(_TYPE_COLS, (getattr(regimes[0], k) for k in _TYPE_COLS), strict=True):
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_bounds", np.array([r.upto_bytes for r in regimes[:-1]], dtype=float))
        object.__setattr__(self, "_table", np.array([[getattr(r, k) for k in _TYPE_COLS] for r in regimes]))

    @classmethod
    def piecewise(cls, name: str, regimes: Iterable[Regime]) -> NodeType:
        """A node type from its ordered regimes (the last with ``upto_bytes=None``)."""
        regimes = tuple(regimes)
        if not regimes:
            raise ProfileError(f"node type {name!r}: needs at least one regime")
        first = regimes[0]
        return cls(name, *(getattr(first, k) for k in _TYPE_COLS), regimes=regimes)

    @property
    def is_piecewise(self) -> bool:
        """True when the type has more than one regime."""
        return len(self.regimes) > 1

    @property
    def breakpoints(self) -> tuple[int, ...]:
        """The finite ``upto_bytes`` bounds, increasing."""
        return tuple(r.upto_bytes for r in self.regimes[:-1])  # type: ignore[misc]

    def regime_at(self, m: float) -> Regime:
        """The regime in force at ``m`` bytes (the first with ``m <= upto_bytes``)."""
        return self.regimes[_regime_index(self._bounds, m)]

    def at(self, m: float) -> NodeType:
        """A one-regime type whose lines are the ones in force at ``m`` bytes.

        >>> t = NodeType.piecewise("f", [Regime(100, 1, 0, 1, 0), Regime(None, 5, 0, 7, 0)])
        >>> t.at(100).Sc_us, t.at(101).Sc_us
        (1.0, 5.0)
        """
        if not self.is_piecewise:
            return self
        r = self.regime_at(m)
        return NodeType(self.name, *(getattr(r, k) for k in _TYPE_COLS))

    def _eval(self, col: int, m: Any) -> Any:
        t = self._table
        return _piecewise(self._bounds, t[:, col], t[:, col + 1], m)

    def send_us(self, m: Any) -> Any:
        """Send overhead S(m) in µs; ``m`` may be a scalar or an array of sizes in bytes (piecewise, vectorised)."""
        return self._eval(0, m)

    def recv_us(self, m: Any) -> Any:
        """Receive overhead R(m) in µs."""
        return self._eval(2, m)

    def copy_us(self, m: Any) -> Any:
        """The root's local copy of its own ``m``-byte block, C(m) in µs (0 unless the profile gives it)."""
        return self._eval(4, m)

    def to_dict(self) -> dict[str, Any]:
        """The ``hnowmodel.profile/2`` form: ``{"regimes": [...]}``."""
        return {"regimes": [r.to_dict() for r in self.regimes]}

    def to_flat_dict(self) -> dict[str, float]:
        """The regime-free form (profile/1, testbed/1): the four parameters (+ the copy keys when not 0).

        :class:`ProfileError` for a piecewise type, which has no such form.
        """
        if self.is_piecewise:
            raise ProfileError(f"node type {self.name!r} has {len(self.regimes)} regimes: it has no regime-free form")
        doc = self.regimes[0].to_dict()
        del doc["upto_bytes"]
        return doc


@dataclass(frozen=True)
class Link:
    """Transmission cost of the network (or of one type pair), piecewise in the size: ``X(m) = Xc_us + Xm*m``.

    ``Link(Xc_us, Xm_us_per_byte)`` is one regime; :meth:`piecewise` makes several. The flat attributes are the
    first regime's values; model computations use :meth:`us` / :meth:`at`.

    >>> Link(16, 0.08).us(125)
    26.0
    """

    Xc_us: float
    Xm_us_per_byte: float
    regimes: tuple[LinkRegime, ...] = ()

    def __post_init__(self) -> None:
        where = "link"
        flat = tuple(_value(getattr(self, k), k, where) for k in LINK_KEYS)
        if not self.regimes:
            regimes: tuple[LinkRegime, ...] = (LinkRegime(None, *flat),)
        else:
            regimes = tuple(self.regimes)
            for i, r in enumerate(regimes):
                if not isinstance(r, LinkRegime):
                    raise ProfileError(f"{where}.regimes[{i}]: must be a LinkRegime, got {type(r).__name__}")
            _check_order([r.upto_bytes for r in regimes], f"{where}.regimes")
            if flat != (regimes[0].Xc_us, regimes[0].Xm_us_per_byte):
                raise ProfileError(
                    f"{where}: the flat coefficients must equal the first regime's "
                    f"(build piecewise links with Link.piecewise)"
                )
        object.__setattr__(self, "regimes", regimes)
        object.__setattr__(self, "Xc_us", regimes[0].Xc_us)
        object.__setattr__(self, "Xm_us_per_byte", regimes[0].Xm_us_per_byte)
        object.__setattr__(self, "_bounds", np.array([r.upto_bytes for r in regimes[:-1]], dtype=float))
        object.__setattr__(self, "_table", np.array([[r.Xc_us, r.Xm_us_per_byte] for r in regimes]))

    @classmethod
    def piecewise(cls, regimes: Iterable[LinkRegime]) -> Link:
        """A link from its ordered regimes (the last with ``upto_bytes=None``)."""
        regimes = tuple(regimes)
        if not regimes:
            raise ProfileError("link: needs at least one regime")
        return cls(regimes[0].Xc_us, regimes[0].Xm_us_per_byte, regimes=regimes)

    @property
    def is_piecewise(self) -> bool:
        return len(self.regimes) > 1

    @property
    def breakpoints(self) -> tuple[int, ...]:
        """The finite ``upto_bytes`` bounds, increasing."""
        return tuple(r.upto_bytes for r in self.regimes[:-1])  # type: ignore[misc]

    def regime_at(self, m: float) -> LinkRegime:
        """The regime in force at ``m`` bytes."""
        return self.regimes[_regime_index(self._bounds, m)]

    def at(self, m: float) -> Link:
        """A one-regime link whose line is the one in force at ``m`` bytes."""
        if not self.is_piecewise:
            return self
        r = self.regime_at(m)
        return Link(r.Xc_us, r.Xm_us_per_byte)

    def us(self, m: Any) -> Any:
        """Transmission time X(m) in µs; ``m`` a scalar or an array of sizes in bytes (piecewise, vectorised)."""
        t = self._table
        return _piecewise(self._bounds, t[:, 0], t[:, 1], m)

    def to_dict(self) -> dict[str, Any]:
        """The ``hnowmodel.profile/2`` form: ``{"regimes": [...]}``."""
        return {"regimes": [r.to_dict() for r in self.regimes]}

    def to_flat_dict(self) -> dict[str, float]:
        """The regime-free form ``{"Xc_us", "Xm_us_per_byte"}``; :class:`ProfileError` for a piecewise link."""
        if self.is_piecewise:
            raise ProfileError(f"link has {len(self.regimes)} regimes: it has no regime-free form")
        return {k: getattr(self, k) for k in LINK_KEYS}


# ---- parsing ---------------------------------------------------------------------------------------------------
def _mapping(v: Any, where: str) -> Mapping:
    if not isinstance(v, Mapping):
        raise ProfileError(f"{where}: must be a JSON object, got {type(v).__name__}")
    return v


def _line(doc: Any, keys: Sequence[str], optional: Sequence[str], where: str, upto: bool) -> dict[str, Any]:
    """One validated line (a regime, or a regime-free parameter set): its keys and nothing else."""
    doc = _mapping(doc, where)
    allowed = (*(("upto_bytes",) if upto else ()), *keys, *optional)
    unknown = [k for k in doc if k not in allowed]
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r} (expected {', '.join(allowed)})")
    out: dict[str, Any] = {}
    if upto:
        if "upto_bytes" not in doc:
            raise ProfileError(f"{where}.upto_bytes: missing (a whole number of bytes, or null for the last regime)")
        out["upto_bytes"] = _upto(doc["upto_bytes"], f"{where}.upto_bytes")
    else:
        out["upto_bytes"] = None
    out.update({k: _number(doc, k, where) for k in keys})
    out.update({k: _number(doc, k, where) for k in optional if k in doc})
    return out


def _lines(doc: Any, keys: Sequence[str], optional: Sequence[str], where: str, allow_regimes: bool) -> list[dict]:
    """``{"regimes": [...]}`` or one regime-free line -> validated lines in order."""
    doc = _mapping(doc, where)
    if "regimes" not in doc:
        return [_line(doc, keys, optional, where, upto=False)]
    if not allow_regimes:
        raise ProfileError(f"{where}.regimes: piecewise regimes need schema {PROFILE_SCHEMA!r}")
    extra = sorted(k for k in doc if k != "regimes")
    if extra:
        raise ProfileError(f"{where}: unknown key {extra[0]!r} beside 'regimes' (a piecewise entry has only 'regimes')")
    regs = doc["regimes"]
    if not isinstance(regs, list) or not regs:
        raise ProfileError(f"{where}.regimes: must be a non-empty list of regimes")
    lines = [_line(r, keys, optional, f"{where}.regimes[{i}]", upto=True) for i, r in enumerate(regs)]
    _check_order([ln["upto_bytes"] for ln in lines], f"{where}.regimes")
    return lines


def parse_types(doc: Any, where: str = "types", *, allow_regimes: bool = True) -> dict[str, NodeType]:
    """Validate a ``types`` object and return NodeTypes; errors name the field.

    Each type is ``{"regimes": [{"upto_bytes", "Sc_us", "Sm_us_per_byte", "Rc_us", "Rm_us_per_byte"[, "Cc_us",
    "Cm_us_per_byte"]}, ...]}`` (profile/2) or the regime-free ``{"Sc_us", ...}`` (profile/1, testbed/1), which is
    one regime. ``allow_regimes=False`` refuses the piecewise form.
    """
    doc = _mapping(doc, where)
    if not doc:
        raise ProfileError(f"{where}: needs at least one node type")
    out = {}
    for name, params in doc.items():
        if not isinstance(name, str) or not name or "," in name or "*" in name or "@" in name:
            raise ProfileError(f"{where}: bad type name {name!r} (non-empty, no ',', '*' or '@')")
        lines = _lines(params, TYPE_KEYS, COPY_KEYS, f"{where}.{name}", allow_regimes)
        out[name] = NodeType.piecewise(name, [Regime(**ln) for ln in lines])
    return out


def parse_network(doc: Any, where: str = "network", *, allow_regimes: bool = True) -> Link:
    """Validate a ``network`` object: ``{"regimes": [{"upto_bytes", "Xc_us", "Xm_us_per_byte"}, ...]}`` or the
    regime-free ``{"Xc_us", "Xm_us_per_byte"}`` (one regime)."""
    lines = _lines(doc, LINK_KEYS, (), where, allow_regimes)
    return Link.piecewise([LinkRegime(**ln) for ln in lines])


def parse_links(
    doc: Any, types: Mapping[str, NodeType], where: str = "links", *, allow_regimes: bool = True
) -> dict[tuple[str, str], Link]:
    """Validate the optional ``links`` list of per-type-pair overrides (``from``, ``to`` + a network's shape)."""
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
        out[(pair[0], pair[1])] = parse_network(rest, w, allow_regimes=allow_regimes)
    return out


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
      posted receive (``math.inf``: never, stored as null in the file).

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

    #: The unit of each term (what an error message says a bad value must be).
    UNITS = MappingProxyType(
        {
            "burst_bytes": "bytes",
            "burst_send_us": "µs",
            "burst_send_us_per_byte": "µs per byte",
            "queued_bytes": "bytes",
            "struct_rendezvous_from_bytes": "bytes",
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
        rdv = None
        if "protocol" in doc:
            proto = _mapping(doc["protocol"], f"{where}.protocol")
            bad = sorted(set(proto) - {"rendezvous_from_bytes"})
            if bad:
                raise ProfileError(f"{where}.protocol: unknown key {bad[0]!r} (expected rendezvous_from_bytes)")
            rdv = proto.get("rendezvous_from_bytes")
            if rdv is not None and (isinstance(rdv, bool) or not isinstance(rdv, int) or not 0 < rdv <= MAX_UPTO_BYTES):
                raise ProfileError(
                    f"{where}.protocol.rendezvous_from_bytes: must be a whole number of bytes > 0 or null, got {rdv!r}"
                )
        shm, nic = parse_hosts(doc["hosts"], types, f"{where}.hosts") if "hosts" in doc else ({}, {})
        return cls(types, network, links, tuple(nodes), dict(prov), dict(ext), rdv, shm, nic)

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
