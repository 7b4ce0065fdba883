"""Message-size lists as given on the command line, in bytes.

``0,1K,4KiB,1M`` (K/KiB = 1024, M/MiB = 1024**2), and ``A..B`` for a doubling range (``0..16K`` gives
0, 1, 2, 4, ..., 16384; ``1K..8K`` gives 1024, 2048, 4096, 8192).

>>> parse_sizes("0,1K,4KiB")
[0, 1024, 4096]
>>> parse_sizes("1K..4K")
[1024, 2048, 4096]
"""

from __future__ import annotations

import math
import re
from typing import Any

from .errors import InputError

__all__ = ["parse_sizes", "parse_size", "size_tuple", "format_size"]

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2}
_RE = re.compile(r"^\s*(-?\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str, what: str = "size") -> int:
    """One size in bytes; :class:`InputError` on negative or malformed values."""
    m = _RE.match(str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise InputError(f"{what} {text!r}: expected bytes like 0, 4096, 4K or 1M")
    v = int(m.group(1)) * _UNITS[unit]
    if v < 0:
        raise InputError(f"{what} {text!r}: must be >= 0 bytes")
    return v


def parse_sizes(text: str | int | list, what: str = "--sizes") -> list[int]:
    """A list of sizes in bytes, in the order given (duplicates removed)."""
    if isinstance(text, int):
        return [parse_size(str(text), what)]
    if isinstance(text, list):
        return [parse_size(str(t), what) for t in text]
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part:
            lo_s, hi_s = part.split("..", 1)
            lo, hi = parse_size(lo_s, what), parse_size(hi_s, what)
            if hi < lo:
                raise InputError(f"{what} {part!r}: range end is below its start")
            vals = [0] if lo == 0 else []
            v = max(lo, 1)
            while v <= hi:
                vals.append(v)
                v *= 2
            out += vals
        else:
            out.append(parse_size(part, what))
    if not out:
        raise InputError(f"{what} {text!r}: no sizes given")
    return list(dict.fromkeys(out))


def size_tuple(sizes: Any, flag: str = "--sizes") -> tuple[int, ...]:
    """Sizes in bytes as a library caller gives them (a number, a command-line list ``"0,4K"``, or a sequence of
    either) -> a tuple of whole byte counts in the order given; :class:`InputError` names ``flag``.

    >>> size_tuple([0, "4K", 1024.0])
    (0, 4096, 1024)
    """
    if isinstance(sizes, str):
        return tuple(parse_sizes(sizes, flag))
    try:
        vals = [sizes] if isinstance(sizes, (int, float)) else list(sizes)
    except TypeError:
        raise InputError(f"{flag}: expected sizes in bytes, got {sizes!r}") from None
    out: list[int] = []
    for v in vals:
        if isinstance(v, str):
            out += parse_sizes(v, flag)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or v != int(v):
            raise InputError(f"{flag}: {v!r} is not a whole number of bytes >= 0")
        out.append(int(v))
    if not out:
        raise InputError(f"{flag}: give at least one size")
    return tuple(out)


def format_size(m: int) -> str:
    """Short human form: ``4096`` -> ``'4K'``.

    >>> format_size(65536), format_size(1000)
    ('64K', '1000')
    """
    if m >= 1024**2 and m % 1024**2 == 0:
        return f"{m // 1024**2}M"
    if m >= 1024 and m % 1024 == 0:
        return f"{m // 1024}K"
    return str(m)
