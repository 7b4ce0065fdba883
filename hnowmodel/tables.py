"""Aligned text tables of row dicts, for reports and the ``hnow`` command's human-readable output."""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["print_table", "table_text"]


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.2f}" if abs(v) < 1e6 else f"{v:.4g}"
    return str(v)


def print_table(
    rows: Sequence[dict], columns: Sequence[str] | None = None, file=None, title: str | None = None
) -> None:
    """Print rows (dicts) as an aligned text table; numeric columns are right-aligned.

    >>> print_table([{"size": 0, "time_us": 170.0}])
    size  time_us
       0   170.00
    """
    file = file or sys.stdout
    if title:
        print(title, file=file)
    if not rows:
        print("(no rows)", file=file)
        return
    columns = list(columns or rows[0].keys())
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) for c in columns]
    head = "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(columns, widths, numeric, strict=True))
    print(head.rstrip(), file=file)
    for row in cells:
        line = "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(row, widths, numeric, strict=True))
        print(line.rstrip(), file=file)


def table_text(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """:func:`print_table` into a string."""
    buf = io.StringIO()
    print_table(rows, columns, file=buf)
    return buf.getvalue().rstrip("\n")
