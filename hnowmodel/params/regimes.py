"""Node types and links, piecewise in the message size: :class:`Regime` / :class:`LinkRegime` lines, the
:class:`NodeType` (send, receive and the root's copy) and :class:`Link` (transmission) built from them, and the
parsing of a profile's ``types``, ``network`` and ``links``. Units: µs and bytes.

>>> t = NodeType.piecewise("f", [Regime(8192, 1.0, 0.001, 2.0, 0.001), Regime(None, 10.0, 0.0001, 3.0, 0.0001)])
>>> t.send_us([8192, 8193]).tolist()
[9.192, 10.8193]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ProfileError
from .schema import COPY_KEYS, LINK_KEYS, TYPE_KEYS, _check_order, _lines, _mapping, _upto, _value

__all__ = ["Regime", "LinkRegime", "NodeType", "Link", "parse_types", "parse_network", "parse_links"]


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
