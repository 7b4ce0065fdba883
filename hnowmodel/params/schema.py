"""The profile document's vocabulary and its checks: schema names, parameter keys, limits, and the validation of
numbers, ``upto_bytes`` bounds and lines (one regime, or a regime-free parameter set) that every reader of a profile
shares. Units: µs and bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ProfileError

__all__ = [
    "PROFILE_SCHEMA",
    "PROFILE_SCHEMA_V1",
    "PROFILE_SCHEMA_V3",
    "PROFILE_SCHEMAS",
    "TYPE_KEYS",
    "COPY_KEYS",
    "LINK_KEYS",
    "REDUCE_KEYS",
    "MAX_CONST_US",
    "MAX_PER_BYTE_US",
    "MAX_UPTO_BYTES",
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
#: A reduction-cost regime's keys (``extensions.reduce``): combining m bytes costs ``Gc_us + Gm_us_per_byte*m``.
REDUCE_KEYS = ("Gc_us", "Gm_us_per_byte")
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
