"""The OSU micro-benchmarks' text output (``osu_latency``, ``osu_bcast``, ``osu_scatter``, ``osu_gather``, ...).

Each program prints a title (``# OSU MPI Latency Test v7.3``, ``# OSU MPI Broadcast Latency Test v7.3``), a
header line (``# Size          Latency (us)``; with ``-f`` also ``Min Latency(us)  Max Latency(us)  Iterations``)
and one line per message size. osu_latency's latency is half the round trip (one way); the collectives' is the
average over the ranks of each rank's average. Several programs' outputs may follow one another in one file; the
process count is not in the output (give it with ``np``: osu_reduce_scatter's size, the whole vector, becomes the
registry's ``m`` with it, :func:`~.rows.registry_m`). OSU 7 prints ``# Datatype: MPI_CHAR.`` before a table (a
reduction's MPI_CHAR runs as MPI_SIGNED_CHAR); an output without it is of an OSU before 7, whose reductions are
MPI_FLOAT.

>>> text = '''# OSU MPI Latency Test v7.3
... # Size          Latency (us)
... 0                       0.21
... 8                       0.23
... '''
>>> [(r.op, r.size, r.t_us) for r in parse_osu(text)[0]]
[('pingpong', 0, 0.21), ('pingpong', 8, 0.23)]
"""

from __future__ import annotations

import re

from ..errors import InputError
from ..ops import OPERATIONS
from .rows import OPS_OF, OutsideRow, registry_m

__all__ = ["parse_osu"]

_TITLE = re.compile(r"^#\s*OSU MPI(?:-\w+)?\s+(.*?)\s*(?:Test)?\s*(v[\d.]+)?\s*$")
_DATATYPE = re.compile(r"^#\s*Datatype:\s*(\S+?)\.?\s*$")
#: The reductions' datatype of an OSU before 7 (no ``# Datatype:`` line; its programs reduce floats).
OSU_OLD_REDUCTION = "MPI_FLOAT"


def _name(title: str) -> str:
    """The benchmark name (a key of OPS_OF) a title measures: ``Latency`` -> latency, ``Broadcast Latency`` ->
    broadcast; '' for what hnow does not model."""
    words = title.lower().split()
    for w in words:
        if w in OPS_OF and w != "latency":
            return w
    return "latency" if words[:1] == ["latency"] else ""


def _op(title: str) -> str:
    """hnow's name of what a title measures: ``Latency`` -> pingpong, ``Broadcast Latency`` -> bcast."""
    return OPS_OF.get(_name(title), "")


def _datatype(title: str, stated: str) -> str:
    """The datatype of a table's buffers: what its ``# Datatype:`` line says (MPI_CHAR a reduction runs as
    MPI_SIGNED_CHAR), else for a reduction OSU's before 7 (MPI_FLOAT), else ''."""
    op = _op(title)
    reduction = bool(op) and op != "pingpong" and OPERATIONS[op].reduction
    if stated:
        return "MPI_SIGNED_CHAR" if reduction and stated == "MPI_CHAR" else stated
    return OSU_OLD_REDUCTION if reduction else ""


def _columns(line: str) -> list[str]:
    """``# Size   Avg Latency(us)   Min Latency(us)`` -> ``['size', 'avg', 'min']`` (``Latency (us)`` -> avg)."""
    text = line.lstrip("#").replace("(us)", "").replace("Latency", " ")
    out = []
    for w in text.split():
        w = w.lower()
        out.append("avg" if w == "latency" else w)
    return out or ["size"]


def parse_osu(text: str, np: int | None = None) -> tuple[tuple[OutsideRow, ...], dict[str, str]]:
    """Every row of OSU output ``text`` (``np``: the process count it ran on, which the output does not say) and
    its header (``title``, ``version``); :class:`InputError` (with the line) for a row that is not numbers or when
    there is no table."""
    rows: list[OutsideRow] = []
    header: dict[str, str] = {}
    title, cols, dtype = "", [], ""
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := _DATATYPE.match(line):
            dtype = m.group(1)
        elif m := _TITLE.match(line):
            title, cols, dtype = m.group(1).strip(), [], ""
            header.setdefault("title", line.lstrip("# "))
            if m.group(2):
                header.setdefault("version", m.group(2))
        elif line.startswith("#") and "Size" in line and title:
            if "MB/s" in line or "Bandwidth" in line:  # a bandwidth table (osu_bw, osu_bibw): no latency to read
                cols = []
                continue
            cols = _columns(line.replace("Size", " size "))
            if "avg" not in cols:
                cols = ["size", "avg", *cols[2:]]
        elif line.startswith("#") or not line:
            continue
        elif cols:
            rows.append(_row(title, cols, line.split(), i, np, _datatype(title, dtype)))
    if not rows:
        raise InputError("OSU: no table found (expected '# OSU MPI ... Test' and a '# Size ...' header)")
    return tuple(rows), header


def _row(title: str, cols: list[str], values: list[str], line_no: int, np_: int | None, dtype: str) -> OutsideRow:
    try:
        v = dict(zip(cols, (float(x) for x in values), strict=False))
    except ValueError:
        raise InputError(f"OSU line {line_no}: {' '.join(values)!r} is not a row of numbers") from None
    if "avg" not in v:
        raise InputError(f"OSU line {line_no}: no latency on this row")
    iters = v.get("iterations")
    return OutsideRow(
        "osu",
        title,
        _op(title),
        np_,
        int(v["size"]),
        v["avg"],
        v.get("min"),
        v.get("max"),
        v["avg"],
        int(iters) if iters is not None else None,
        registry_m("osu", _name(title), int(v["size"]), np_, dtype),
        dtype,
    )
