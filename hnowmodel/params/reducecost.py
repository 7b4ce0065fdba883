"""What combining two buffers costs a node type (a reduction's compute cost, γ): :class:`ReduceRegime` lines,
:class:`ReduceCost` per node type and :class:`ReduceTerms`, the profile's optional ``extensions.reduce`` entry,
parsed and validated. Units: µs, bytes and µs per byte.

Combining ``m`` bytes (``MPI_Reduce_local`` of one buffer into another: ``MPI_SUM`` on ``MPI_DOUBLE`` unless the
entry says otherwise) costs ``G(m) = Gc_us + Gm_us_per_byte · m`` µs on a node type, piecewise in ``m`` like the
profile's other parameters (a line per cache regime: in cache, out of cache). γ at ``m`` bytes is ``G(m) / m``, the
µs per byte that, times ``m``, gives ``G(m)`` (:meth:`ReduceCost.us_per_byte`).

>>> c = ReduceCost.piecewise([ReduceRegime(65536, 0.1, 2e-4), ReduceRegime(None, 1.0, 5e-4)])
>>> c.us(65536), round(c.us_per_byte(131072), 9)
(13.2072, 0.000507629)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import ProfileError
from .schema import REDUCE_KEYS, _check_order, _lines, _mapping, _upto, _value

__all__ = ["ReduceRegime", "ReduceCost", "ReduceTerms", "REDUCE_OP", "REDUCE_DATATYPE"]

#: The reduction operation and datatype a ``reduce`` entry times unless it says otherwise.
REDUCE_OP = "MPI_SUM"
REDUCE_DATATYPE = "MPI_DOUBLE"


@dataclass(frozen=True)
class ReduceRegime:
    """One line of a node type's combining cost, for sizes up to and including ``upto_bytes`` (None: every larger
    size): ``G(m) = Gc_us + Gm_us_per_byte · m`` µs to combine ``m`` bytes.

    >>> ReduceRegime(None, 0.5, 1e-3).us(1000)
    1.5
    """

    upto_bytes: int | None
    Gc_us: float
    Gm_us_per_byte: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "upto_bytes", _upto(self.upto_bytes, "reduce regime.upto_bytes"))
        for k in REDUCE_KEYS:
            object.__setattr__(self, k, _value(getattr(self, k), k, "reduce regime"))

    def us(self, m: float) -> float:
        """``G(m)`` in µs on this regime's line (``m`` in bytes)."""
        return float(self.Gc_us + self.Gm_us_per_byte * float(m))

    def to_dict(self) -> dict[str, Any]:
        return {"upto_bytes": self.upto_bytes, **{k: getattr(self, k) for k in REDUCE_KEYS}}


@dataclass(frozen=True)
class ReduceCost:
    """One node type's combining cost, piecewise in the size: its ordered :class:`ReduceRegime` lines (the last with
    ``upto_bytes=None``); a size ``m`` uses the first regime with ``m <= upto_bytes``.

    >>> ReduceCost.piecewise([ReduceRegime(None, 0.0, 2e-4)]).us_per_byte(4096)
    0.0002
    """

    regimes: tuple[ReduceRegime, ...]

    def __post_init__(self) -> None:
        regimes = tuple(self.regimes)
        if not regimes:
            raise ProfileError("reduce cost: needs at least one regime")
        for i, r in enumerate(regimes):
            if not isinstance(r, ReduceRegime):
                raise ProfileError(f"reduce cost.regimes[{i}]: must be a ReduceRegime, got {type(r).__name__}")
        _check_order([r.upto_bytes for r in regimes], "reduce cost.regimes")
        object.__setattr__(self, "regimes", regimes)
        object.__setattr__(self, "_bounds", np.array([r.upto_bytes for r in regimes[:-1]], dtype=float))

    @classmethod
    def piecewise(cls, regimes: Iterable[ReduceRegime]) -> ReduceCost:
        """A cost from its ordered regimes."""
        return cls(tuple(regimes))

    @property
    def breakpoints(self) -> tuple[int, ...]:
        """The finite ``upto_bytes`` bounds, increasing."""
        return tuple(r.upto_bytes for r in self.regimes[:-1])  # type: ignore[misc]

    def regime_at(self, m: float) -> ReduceRegime:
        """The regime in force at ``m`` bytes."""
        b = self._bounds  # type: ignore[attr-defined]
        return self.regimes[int(np.searchsorted(b, float(m), side="left")) if b.size else 0]

    def us(self, m: float) -> float:
        """``G(m)``: µs to combine ``m`` bytes (one buffer into another)."""
        return self.regime_at(m).us(m)

    def us_per_byte(self, m: float) -> float:
        """γ at ``m`` bytes: ``G(m) / m`` µs per byte (at 0 bytes, the slope ``Gm_us_per_byte`` of the first line)."""
        m = float(m)
        if m <= 0:
            return self.regimes[0].Gm_us_per_byte
        return self.us(m) / m

    def to_dict(self) -> dict[str, Any]:
        """``{"regimes": [{"upto_bytes", "Gc_us", "Gm_us_per_byte"}, ...]}``."""
        return {"regimes": [r.to_dict() for r in self.regimes]}


@dataclass(frozen=True)
class ReduceTerms:
    """A profile's reduction costs: ``extensions.reduce`` (docs/file-formats.md, "Reduction cost"), parsed once
    (:attr:`hnowmodel.params.Profile.reduce_terms`). ``costs`` maps node type -> :class:`ReduceCost` (empty: the
    profile has none); ``op`` and ``datatype`` say what was combined.

    >>> t = ReduceTerms.from_doc({"types": {"f": {"regimes": [{"upto_bytes": None, "Gc_us": 0, "Gm_us_per_byte":
    ...     1e-4}]}}}, ["f"])
    >>> t.op, t.datatype, t.costs["f"].us_per_byte(1000)
    ('MPI_SUM', 'MPI_DOUBLE', 0.0001)
    >>> ReduceTerms.from_doc({"types": {"f": {"Gc_us": 0, "Gm_us_per_byte": -1}}}, ["f"])
    Traceback (most recent call last):
    ...
    hnowmodel.errors.ProfileError: profile.extensions.reduce.types.f.Gm_us_per_byte: must be >= 0, got -1
    """

    costs: Mapping[str, ReduceCost]
    op: str = REDUCE_OP
    datatype: str = REDUCE_DATATYPE

    def __post_init__(self) -> None:
        object.__setattr__(self, "costs", MappingProxyType(dict(self.costs)))

    @classmethod
    def from_doc(cls, doc: Any, types: Iterable[str], where: str = "profile.extensions.reduce") -> ReduceTerms:
        """Parse ``{"op", "datatype", "types": {TYPE: {"regimes": [...]}}}`` (None: no costs); every node type of
        ``types`` needs its entry, and no other type may have one; :class:`ProfileError` names a bad field."""
        if doc is None:
            return cls({})
        doc = _mapping(doc, where)
        bad = sorted(set(doc) - {"op", "datatype", "types"})
        if bad:
            raise ProfileError(f"{where}: unknown key {bad[0]!r} (expected op, datatype, types)")
        names = dict.fromkeys(types)
        words = {}
        for key, default in (("op", REDUCE_OP), ("datatype", REDUCE_DATATYPE)):
            v = doc.get(key, default)
            if not isinstance(v, str) or not v:
                raise ProfileError(f"{where}.{key}: must be a non-empty string such as {default!r}, got {v!r}")
            words[key] = v
        per_type = _mapping(doc.get("types"), f"{where}.types") if "types" in doc else {}
        costs = {}
        for t, entry in per_type.items():
            if t not in names:
                raise ProfileError(f"{where}.types: unknown node type {t!r} (profile has: {', '.join(names)})")
            lines = _lines(entry, REDUCE_KEYS, (), f"{where}.types.{t}", True)
            costs[t] = ReduceCost.piecewise(ReduceRegime(**ln) for ln in lines)
        missing = [t for t in names if t not in costs]
        if missing:
            raise ProfileError(f"{where}.types: no entry for node type {missing[0]!r} (every node type needs one)")
        return cls(costs, **words)

    def to_doc(self) -> dict[str, Any]:
        """The ``extensions.reduce`` object."""
        return {"op": self.op, "datatype": self.datatype, "types": {t: c.to_dict() for t, c in self.costs.items()}}
