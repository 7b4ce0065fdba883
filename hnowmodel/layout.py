"""Layouts: the node type of each rank, as given on the command line or in a file.

Accepted forms (docs/file-formats.md, "Layout"): ``FFSS`` (first letter of each type name, case-insensitive),
``fast,fast,slow`` (``fast*4,slow*4`` repeats), or ``@file.json`` (a JSON list of type names, or an object with
``"ranks"`` or ``"nodes"`` as in testbed and profile files).

>>> parse_layout("FFSS", ["fast", "slow"])
('fast', 'fast', 'slow', 'slow')
>>> parse_layout("fast*2,slow", ["fast", "slow"])
('fast', 'fast', 'slow')
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import LayoutError
from .io import read_json

__all__ = ["parse_layout", "layout_string"]


def _check(names: Sequence[str], type_names: Sequence[str]) -> tuple[str, ...]:
    for i, t in enumerate(names):
        if t not in type_names:
            raise LayoutError(f"layout rank {i}: unknown node type {t!r} (known: {', '.join(type_names)})")
    if not names:
        raise LayoutError("layout is empty")
    return tuple(names)


def parse_layout(spec: str | Sequence[str], type_names: Sequence[str]) -> tuple[str, ...]:
    """Turn a layout spec into a tuple of type names, one per rank; :class:`LayoutError` names the bad part."""
    type_names = list(type_names)
    if not isinstance(spec, str):
        return _check(list(spec), type_names)
    spec = spec.strip()
    if spec.startswith("@"):
        doc = read_json(spec[1:], "layout file")
        if isinstance(doc, dict):
            if "ranks" in doc:
                doc = doc["ranks"]
            elif "nodes" in doc:
                doc = [n.get("type") for n in sorted(doc["nodes"], key=lambda n: n.get("rank", 0))]
            else:
                raise LayoutError(f"layout file {spec[1:]!r}: expected a list or an object with 'ranks' or 'nodes'")
        if not isinstance(doc, list) or not all(isinstance(t, str) for t in doc):
            raise LayoutError(f"layout file {spec[1:]!r}: expected a list of type names")
        return _check(doc, type_names)
    if "," in spec or "*" in spec or spec in type_names:
        out: list[str] = []
        for item in spec.split(","):
            item = item.strip()
            name, _, count = item.partition("*")
            try:
                k = int(count) if count else 1
            except ValueError:
                raise LayoutError(f"layout item {item!r}: repeat count must be an integer") from None
            if k < 0:
                raise LayoutError(f"layout item {item!r}: repeat count must be >= 0")
            if name not in type_names:
                raise LayoutError(f"layout item {item!r}: unknown node type {name!r} (known: {', '.join(type_names)})")
            out += [name] * k
        return _check(out, type_names)
    letters: dict[str, str] = {}
    for t in type_names:
        c = t[0].upper()
        if c in letters:
            raise LayoutError(
                f"layout {spec!r}: types {letters[c]!r} and {t!r} share the letter {c!r}; use names, e.g. {t},{t}"
            )
        letters[c] = t
    out = []
    for i, c in enumerate(spec):
        if c.upper() not in letters:
            known = ", ".join(f"{k}={v}" for k, v in letters.items())
            raise LayoutError(f"layout {spec!r}: letter {c!r} at rank {i} names no node type (known: {known})")
        out.append(letters[c.upper()])
    return _check(out, type_names)


def layout_string(layout: Sequence[str]) -> str:
    """Short form of a layout: first letters if they are unambiguous, else comma-joined names.

    >>> layout_string(["fast", "slow", "slow"])
    'FSS'
    """
    first = {t: t[0].upper() for t in set(layout)}
    if len(set(first.values())) == len(first):
        return "".join(first[t] for t in layout)
    return ",".join(layout)
